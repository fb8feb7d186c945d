"""Series per host: how many InfluxDB series one host's sample publishes, with the
default filters and with every operation ([mountstats] operations = ["all"]).

    .venv/bin/python bench/series.py [MOUNTS ...]     (default: 1 20 100)

The NFS mounts are the bench's (bench/inputs.py: the committed real mountstats
blocks repeated, NFSv3 and NFSv4); every other host source is this machine's,
read live twice a second apart. A series is a measurement and its tag set
(what InfluxDB counts); dnfsmon_source and dnfsmon_agent, one per source and
one per host, are added by collect and counted here too. docs/configuration.md
("Filters") quotes this script's output.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bench import inputs

from dnfsmon import collect, config
from dnfsmon.sources import HOST_SOURCES, build_all
from dnfsmon.sources.base import HostInputs


def series(points) -> set:
    return {(p.measurement, p.tags) for p in points}


def host_series(mounts: int, operations: list[str]) -> tuple[int, int]:
    """(series of the mountstats source, series of the other host sources plus the agent's own)."""
    settings = config.parse({"mountstats": {"operations": operations}}, None)
    with tempfile.TemporaryDirectory() as directory:
        old, new = inputs.make_pair(directory, mounts, 1.0)
        outcome = collect.diff_captures(os.path.join(old, "capture"), os.path.join(new, "capture"), settings)[1]
    nfs = len(series(outcome.points))
    others = [name for name in HOST_SOURCES if name != "mountstats"]
    sources = build_all(others, settings)
    first = {name: s.read(HostInputs()) for name, s in sources.items()}  # type: ignore[attr-defined]
    time.sleep(1)
    second = {name: s.read(HostInputs()) for name, s in sources.items()}  # type: ignore[attr-defined]
    baseline = collect.compute(first, {}, "h", {}, sources)
    live = collect.compute(second, {}, "h", baseline.samples, sources)
    # One dnfsmon_source per host source, one dnfsmon_agent per host.
    return nfs, len(series(live.points)) + len(HOST_SOURCES) + 1


def main() -> None:
    counts = [int(a) for a in sys.argv[1:]] or [1, 20, 100]
    default = config.parse({}, None).sources["mountstats"]["operations"]
    print("mounts | operations | mountstats series | per mount | other host series | total per host")
    print("---|---|---|---|---|---")
    for mounts in counts:
        for label, operations in (("default", default), ("all", ["all"])):
            nfs, others = host_series(mounts, operations)
            print(f"{mounts} | {label} | {nfs} | {nfs / mounts:.1f} | {others} | {nfs + others}")


if __name__ == "__main__":
    main()
