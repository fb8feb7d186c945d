"""dnfsmon's side of the in-process comparisons of bench/run.py (procfs's is bench/procfs/).

    worker.py parse ROOT REPEATS      read and parse ROOT/1/mountstats
    worker.py diff OLD NEW REPEATS    read and parse both, diff, published fields
    worker.py oracle OLD NEW REPEATS  one Oracle sample: parse NEW (a results document, handed over
                                      decoded as the live reader does), note its inventory, diff
                                      against OLD's samples (parsed before the clock starts), publish
    worker.py oracle-floor NEW REPEATS  the naive floor: sum every number in NEW's rows (decoded
                                      before the clock starts, as the live reader hands them over)
    worker.py state-load DIR TARGET REPEATS   load the state file of TARGET in DIR to samples
    worker.py state-floor DIR TARGET REPEATS  the floor: read and JSON-decode the same file

The diff runs what collection runs for this source: the source's parse, then
rates.diff_all against the previous samples, then its publish step. Prints
one JSON list: the CPU seconds (CLOCK_PROCESS_CPUTIME_ID) of each repeat.
"""

from __future__ import annotations

import json
import os
import sys
import time

from dnfsmon import oracle_db, rates, state
from dnfsmon.sources import mountstats, oracle
from dnfsmon.sources.base import Raw


def reading(root: str, clock: float) -> Raw:
    with open(os.path.join(root, "1", "mountstats")) as f:
        return Raw({mountstats.MOUNTSTATS: f.read()}, clock, 1732240000.0 + clock)


def parse(root: str) -> int:
    return len(mountstats.parse_mountstats(reading(root, 0.0).text(mountstats.MOUNTSTATS))[0])


def diff(old_root: str, new_root: str) -> int:
    previous = mountstats.SOURCE.parse(reading(old_root, 7000.0), "bench").samples
    current = mountstats.SOURCE.parse(reading(new_root, 7010.0), "bench").samples
    result = rates.diff_all({s.state_key: s for s in previous}, current)
    return len(mountstats.SOURCE.publish(result, current))


def oracle_raw(path: str) -> Raw:
    """A results document written by bench/run.py, as the live reader hands it over: decoded, not as
    JSON text (oracle_db.to_raw). Decoding it here is no part of what is timed: the live path has no
    JSON (a capture's `dnfsmon diff` decodes its text once more)."""
    with open(path) as f:
        document = json.load(f)
    return oracle_db.to_raw(document, next(iter(document["results"].values()))["agent_clock"])


def oracle_sample(previous: dict[str, rates.Sample], new: Raw) -> int:
    """What a live target's read and collect run for one sample, after the database answered:
    the inventory cadence notes the read (targets.OracleTarget.read), then parse, diff, publish."""
    oracle.InventoryCadence(600).read(new)
    current = oracle.SOURCE.parse(new, "bench").samples
    result = rates.diff_all(previous, current)
    return len(oracle.SOURCE.publish(result, current))


def oracle_floor(new: Raw) -> float:
    """What any reader must do at least: touch every number of the rows once."""
    total = 0.0
    for result in oracle.load(new)["results"].values():
        for row in result["rows"]:
            for value in row:
                if isinstance(value, (int, float)):
                    total += value
    return total


def state_floor(directory: str, target: str) -> int:
    with open(os.path.join(directory, state.state_file_name(target)), "rb") as f:
        return len(json.loads(f.read()))


def main() -> None:
    mode, *paths, repeats = sys.argv[1:]
    previous: dict[str, rates.Sample] = {}
    if mode == "oracle":
        previous = {s.state_key: s for s in oracle.SOURCE.parse(oracle_raw(paths[0]), "bench").samples}
    elif mode == "oracle-floor":
        paths = ["", *paths]
    if mode in ("oracle", "oracle-floor"):
        new = oracle_raw(paths[1])
    seconds = []
    for _ in range(int(repeats)):
        start = time.process_time()
        if mode == "parse":
            parse(paths[0])
        elif mode == "diff":
            diff(paths[0], paths[1])
        elif mode == "oracle":
            oracle_sample(previous, new)
        elif mode == "oracle-floor":
            oracle_floor(new)
        elif mode == "state-load":
            state.StateFile(paths[0], paths[1]).load()
        elif mode == "state-floor":
            state_floor(paths[0], paths[1])
        else:
            raise SystemExit(f"unknown mode {mode}")
        seconds.append(time.process_time() - start)
    print(json.dumps(seconds))


if __name__ == "__main__":
    main()
