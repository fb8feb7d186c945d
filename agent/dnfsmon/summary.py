"""`dnfsmon show`: the latest point of each series as tables a person can read.

Which fields each table shows is listed in tables.py; units come from the
catalogue. `dnfsmon show --all` prints every field of every series instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Optional, Union

from . import catalogue, tables
from .points import Point, from_line
from .store import Store
from .tables import ROWS_SHOWN, TABLES


class Latest:
    """The newest point of every series, by measurement, each decoded only when asked for.

    From the store's latest.lp each series is a line of line protocol: at
    1000 mounts that is 33 400 lines, of which the tables show some 2000
    (READ and WRITE of dnfsmon_nfs_op), so the rest are counted, never decoded.
    From its latest.shown.lp (of_tabled) it holds only the lines the tables
    may show, and the number of series of every measurement.
    """

    def __init__(
        self, by_measurement: Mapping[str, Sequence[Union[str, Point]]], series: Optional[dict[str, int]] = None
    ):
        self.by_measurement = by_measurement
        # Series per measurement; with `series` given, by_measurement holds the tabled ones only.
        self.complete = series is None
        self.series = {m: len(e) for m, e in by_measurement.items() if e} if series is None else series

    @classmethod
    def of_lines(cls, lines: Iterable[str]) -> Latest:
        return cls(tables.by_measurement(lines))

    @classmethod
    def of_tabled(cls, lines: Iterable[str], series: dict[str, int]) -> Latest:
        """The lines the tables may show (tables.tabled) and every measurement's number of series."""
        return cls(tables.by_measurement(lines), series)

    @classmethod
    def of_points(cls, points: Iterable[Point]) -> Latest:
        groups: dict[str, list[Union[str, Point]]] = {}
        for point in points:
            groups.setdefault(point.measurement, []).append(point)
        return cls(groups)

    def count(self) -> int:
        return sum(self.series.values())

    def only(self, measurement: str) -> Latest:
        assert self.complete, "holds the tabled series only"
        return Latest({m: e for m, e in self.by_measurement.items() if m == measurement})

    def points(self, measurement: str, where: Optional[tuple[str, Sequence[str]]] = None) -> list[Point]:
        """The measurement's points sorted by tags; with `where` (tag, values), those with one of the values."""
        entries = self.by_measurement.get(measurement, [])
        if where is not None:
            # One search first, so the other lines are never decoded.
            candidate = tables.rows_pattern(*where)
            entries = [e for e in entries if isinstance(e, Point) or candidate.search(e)]
        points = [e if isinstance(e, Point) else from_line(e) for e in entries]
        if where is not None:
            points = [p for p in points if dict(p.tags).get(where[0]) in where[1]]
        return sorted(points, key=lambda p: p.tags)

    def all_points(self) -> list[Point]:
        """Every point, by measurement and tags."""
        assert self.complete, "holds the tabled series only"
        return [p for m in sorted(self.by_measurement) for p in self.points(m)]


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.2f}"
    return str(value)


NUMBER = re.compile(r"^-?[\d,]+(\.\d+)?$")


# `dnfsmon show` fits a terminal this wide unless asked for --wide (a table too wide is
# split into parts that repeat its tag columns; the list of other measurements wraps).
WIDTH = 120
GAP = "  "


def _table(header_rows: list[list[str]], rows: list[list[str]]) -> list[str]:
    """Aligned columns under one or more header rows: numbers to the right, text to the left."""
    widths = [max(len(r[i]) for r in header_rows + rows) for i in range(len(header_rows[0]))]

    def line(cells: list[str]) -> str:
        return GAP.join(c.rjust(w) if NUMBER.match(c) else c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    return [line(h) for h in header_rows] + [line(["-" * w for w in widths])] + [line(r) for r in rows]


def _parts(keys: int, columns: list[list[str]], width: int) -> list[list[int]]:
    """Column indexes of each part of a table: the first `keys` columns in every part, the others
    in order, as many per part as fit in `width` (at least one)."""

    def size(column: list[str]) -> int:
        return max(len(cell) for cell in column) + len(GAP)

    head = list(range(keys))
    used = sum(size(columns[i]) for i in head)
    parts: list[list[int]] = [list(head)]
    for i in range(keys, len(columns)):
        if len(parts[-1]) > keys and used + size(columns[i]) > width + len(GAP):
            parts.append(list(head))
            used = sum(size(columns[k]) for k in head)
        parts[-1].append(i)
        used += size(columns[i])
    return parts


def age(nanoseconds: int) -> str:
    """A point's age for people: 42s, 5m, 3h, 2d; "2d ahead" when its time is after now
    (the wall clock stepped back since it was stored)."""
    seconds = nanoseconds / 1e9
    ahead = " ahead" if seconds < 0 else ""
    seconds = abs(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}{ahead}"
    return f"{int(seconds)}s{ahead}"


def _wrapped(words: list[str], width: int) -> list[str]:
    """The words joined by spaces into lines of at most `width` (a longer word alone), never splitting one."""
    lines = [words[0]]
    for word in words[1:]:
        if len(lines[-1]) + 1 + len(word) > width:
            lines.append(word)
        else:
            lines[-1] += " " + word
    return lines


def render(latest: Latest, now_ns: int, wide: bool = False) -> str:
    """Tables of the latest point per series, each with its age; measurements not tabled are counted at the end.

    By default every line fits WIDTH columns: units on a header row of their own, and a table
    still too wide in parts; wide: each unit beside its field's name, every table in one piece."""
    entries = catalogue.load()
    out: list[str] = []
    shown = set()
    for title, measurement, tags, fields in TABLES:
        points = latest.points(measurement, ROWS_SHOWN.get(measurement))
        if not points:
            continue
        shown.add(measurement)
        simulated = any(dict(p.tags).get("simulated") == "true" for p in points)
        keys = ["age", *tags]
        units = [
            entries[(measurement, "field", f)].unit if (measurement, "field", f) in entries else "" for f in fields
        ]
        rows = [
            [age(now_ns - p.time_ns)]
            + [dict(p.tags).get(t, "") for t in tags]
            + [_cell(p.fields[f]) if f in p.fields else "-" for f in fields]
            for p in points
        ]
        heading = f"{title}{'  (SIMULATED)' if simulated else ''}"
        if wide:
            names = [f"{f} [{u}]" if u else f for f, u in zip(fields, units)]
            out += [heading, *_table([keys + names], rows), ""]
            continue
        # A count of what its name says (processes [processes]) needs no unit row of its own.
        unit_row = [f"[{u}]" if u and u != f else "" for f, u in zip(fields, units)]
        header_rows = [keys + list(fields), [""] * len(keys) + unit_row]
        columns = [[h[i] for h in header_rows] + [r[i] for r in rows] for i in range(len(keys) + len(fields))]
        for n, part in enumerate(_parts(len(keys), columns, WIDTH)):
            out.append(heading if n == 0 else f"{title} (continued)")
            out += _table([[h[i] for i in part] for h in header_rows], [[r[i] for i in part] for r in rows])
            out.append("")
    others = {m: n for m, n in latest.series.items() if m not in shown}
    if others:
        words = ["Also stored (dnfsmon show --all, or --measurement NAME):"]
        words += [f"{m} ({n} series)," for m, n in sorted(others.items())]
        words[-1] = words[-1].rstrip(",")
        out += _wrapped(words, 10**9 if wide else WIDTH)
    return "\n".join(out)


def latest_per_series(points: Iterable[Point]) -> tuple[dict[tuple, Point], int]:
    """The newest point of every (measurement, tags) series, and how many points there were."""
    latest: dict[tuple, Point] = {}
    total = 0
    for point in points:
        total += 1
        key = (point.measurement, point.tags)
        if key not in latest or point.time_ns >= latest[key].time_ns:
            latest[key] = point
    return latest, total


def latest_of(store: Store, tabled_only: bool = False) -> Latest:
    """The newest point of every series: from the store's latest.lp index when it is usable
    (no segment read, only the points shown decoded: fast on a full store), else from
    latest.json of a store written before it, else by reading every segment.

    tabled_only (what `render` draws): from latest.shown.lp when it is usable, the lines of
    the series the tables show and a count of the others, a seventh of latest.lp at 1000 mounts."""
    if tabled_only:
        shown = store.latest_shown()
        if shown is not None:
            return Latest.of_tabled(shown.lines, shown.series)
    lines = store.latest_lines()
    if lines is not None:
        return Latest.of_lines(lines)
    index = store.old_latest_index()
    if index is not None:
        return Latest.of_points(index.values())
    latest, _ = latest_per_series(store.points())
    return Latest.of_points(latest.values())
