"""dnfsmon show: the latest point of every series in the local store, as tables or JSON."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Optional

from .. import catalogue, summary
from .. import config as configuration
from ..cli import EXIT_OK, EXIT_USAGE
from ..errors import EnvironmentProblem
from ..points import Point
from ..store import Store
from .output import format_points


def show_json(store_dir: str, points: list[Point], now_ns: int) -> str:
    """The latest point of every series for scripts: tags and fields by name, the time, the age, the units."""
    entries = catalogue.load()
    series = [
        {
            "measurement": p.measurement,
            "tags": dict(p.tags),
            "fields": dict(p.fields),
            "units": {
                f: entries[(p.measurement, "field", f)].unit for f in p.fields if (p.measurement, "field", f) in entries
            },
            "time_ns": p.time_ns,
            "age_s": round((now_ns - p.time_ns) / 1e9, 3),
        }
        for p in points
    ]
    return json.dumps({"store": store_dir, "series": series}, indent=1, sort_keys=True)


def cmd_show(
    cfg: configuration.Config, measurement: Optional[str], everything: bool, wide: bool = False, output: str = "table"
) -> int:
    """Read-only: creates, locks and writes nothing, so any user who can read the store can run it."""
    entries = catalogue.load()
    known = sorted({e.measurement for e in entries.values()})
    if measurement is not None and measurement not in known:
        print(
            f"dnfsmon: show --measurement {measurement}: no such measurement; known: {', '.join(known)}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if not os.path.isdir(cfg.store_dir):
        if output == "json":
            print(show_json(cfg.store_dir, [], time.time_ns()))
            return EXIT_OK
        print(
            f"The local store {cfg.store_dir} holds no points yet (it does not exist): run `dnfsmon collect` "
            f"(config: {cfg.path or 'built-in defaults'})."
        )
        return EXIT_OK
    store = Store(cfg.store_dir, cfg.store_max_bytes, read_only=True)
    try:
        # The tables read only what they draw; the other views print every series.
        latest = summary.latest_of(store, tabled_only=not (everything or measurement or output == "json"))
    except PermissionError as error:
        raise EnvironmentProblem(
            f"cannot read the store {cfg.store_dir} ({error.strerror}): run show as the agent's user or a member of its group"
        ) from None
    if measurement is not None:
        latest = latest.only(measurement)
    series = latest.count()
    if output == "json":
        print(show_json(cfg.store_dir, latest.all_points(), time.time_ns()))
        return EXIT_OK
    if not series:
        print(
            f"The local store {cfg.store_dir} holds no points{' of ' + measurement if measurement else ''} yet: "
            "run `dnfsmon collect` at least twice (the first sample of anything is a baseline)."
        )
        return EXIT_OK
    now_ns = time.time_ns()
    print(f"Local store {cfg.store_dir}: {series} series; the latest point of each, and its age:\n")
    if everything or measurement:
        print(format_points(latest.all_points(), now_ns=now_ns))
    else:
        print(summary.render(latest, now_ns, wide))
    if measurement is None:
        seen = set(latest.series)
        absent = sorted({(e.measurement, e.source) for e in entries.values() if e.measurement not in seen})
        if absent:
            print("\nNo points (nothing of this kind on this host, or the source is not configured):")
            for name, source in absent:
                print(f"    {name:<32} source {source}")
    return EXIT_OK
