"""dnfsmon's side of the in-process comparisons of bench/run.py (procfs's is bench/procfs/).

    worker.py parse ROOT REPEATS      read and parse ROOT/1/mountstats
    worker.py diff OLD NEW REPEATS    read and parse both, diff, published fields

The diff runs what collection runs for this source: the source's parse, then
rates.diff_all against the previous samples, then its publish step. Prints
one JSON list: the CPU seconds (CLOCK_PROCESS_CPUTIME_ID) of each repeat.
"""

from __future__ import annotations

import json
import os
import sys
import time

from dnfsmon import rates
from dnfsmon.sources import mountstats
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


def main() -> None:
    mode, *paths, repeats = sys.argv[1:]
    seconds = []
    for _ in range(int(repeats)):
        start = time.process_time()
        if mode == "parse":
            parse(paths[0])
        else:
            diff(paths[0], paths[1])
        seconds.append(time.process_time() - start)
    print(json.dumps(seconds))


if __name__ == "__main__":
    main()
