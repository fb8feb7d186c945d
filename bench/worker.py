"""dnfsmon's side of the in-process comparisons of bench/run.py (procfs's is bench/procfs/).

    worker.py parse ROOT REPEATS      read and parse ROOT/1/mountstats
    worker.py diff OLD NEW REPEATS    read and parse both, diff, published fields
    worker.py oracle OLD NEW REPEATS  one Oracle sample: parse NEW (a results document), diff
                                      against OLD's samples (parsed before the clock starts), publish
    worker.py oracle-floor NEW REPEATS  the naive floor: decode NEW, sum every number in its rows
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

from dnfsmon import rates, state
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
    """A results document as the live reader leaves it (oracle_db.to_raw), written by bench/run.py."""
    with open(path) as f:
        text = f.read()
    clock = next(iter(json.loads(text)["results"].values()))["agent_clock"]
    return Raw({oracle.RESULTS: text}, clock, clock)


def oracle_sample(previous: dict[str, rates.Sample], new: Raw) -> int:
    current = oracle.SOURCE.parse(new, "bench").samples
    result = rates.diff_all(previous, current)
    return len(oracle.SOURCE.publish(result, current))


def oracle_floor(new: Raw) -> float:
    """What any reader must do at least: decode the document and touch every number once."""
    total = 0.0
    for result in json.loads(new.text(oracle.RESULTS))["results"].values():
        for row in result["rows"]:
            for value in row:
                if isinstance(value, (int, float)):
                    total += value
    return total


def state_floor(directory: str, target: str) -> int:
    """Read and JSON-decode the snapshot and every journal line (after its checksum): what a load cannot avoid."""
    path = os.path.join(directory, state.state_file_name(target))
    with open(path, "rb") as f:
        decoded = len(json.loads(f.read()))
    try:
        with open(path[: -len(".json")] + ".journal", "rb") as f:
            decoded += sum(len(json.loads(line[9:])) for line in f)
    except FileNotFoundError:
        pass
    return decoded


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
