"""dnfsmon diff: every metric between two captures, offline, with collect's code."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterable, Iterator
from typing import Optional

from .. import config as configuration
from ..cli import EXIT_OK, EXIT_SOURCE_FAILED
from ..collect import diff_captures, report
from ..points import Point, to_line
from .output import format_points

log = logging.getLogger("dnfsmon")


def _lines_of(points: Iterable[Point], unwritable: list[str]) -> Iterator[str]:
    """Each point as a line of line protocol; those it cannot carry go to `unwritable`, named."""
    for point in points:
        try:
            yield f"{to_line(point)}\n"
        except ValueError as error:
            unwritable.append(f"a point of {point.measurement} {dict(point.tags)}: {error}")


def cmd_diff(old: str, new: str, output: str, config_path: Optional[str] = None) -> int:
    # The sources' filters of the config named with -c; the built-in defaults without one.
    cfg = configuration.load(config_path) if config_path else None
    baseline, outcome = diff_captures(old, new, cfg)
    report(baseline)
    report(outcome)
    if output == "json":
        print(json.dumps([p.to_json() for p in outcome.points], indent=1, sort_keys=True))
    elif output == "lp":
        unwritable: list[str] = []
        # writelines, not a print() per line, which cost as much as rendering them (33 400 at 1000 NFS mounts).
        sys.stdout.writelines(_lines_of(outcome.points, unwritable))
        if unwritable:
            # Only an input no kernel writes gives such a point (a 400-digit mtu): the source's input is bad.
            log.error("%d points not printed: %s", len(unwritable), "; ".join(unwritable[:3]))
            return EXIT_SOURCE_FAILED
    else:
        print(format_points(outcome.points) or "no points: see the log for why")
    return EXIT_SOURCE_FAILED if outcome.failures else EXIT_OK
