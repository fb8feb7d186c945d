"""Points as text for people, shared by show, diff and doctor (units from the catalogue)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Optional

from ..points import Point


def format_value(value: object, unit: str) -> str:
    if isinstance(value, float):
        text = f"{value:.3f}" if abs(value) < 1000 else f"{value:.1f}"
    else:
        text = str(value).lower() if isinstance(value, bool) else str(value)
    return f"{text} {unit}".rstrip() if unit and not isinstance(value, bool) else text


def format_points(points: Iterable[Point], header: str = "", now_ns: Optional[int] = None) -> str:
    """Points as text for people: one block per series, fields with units (and the age, given now)."""
    from .. import catalogue, summary  # here: diff --format lp and json need no units

    entries = catalogue.load()
    lines = [header] if header else []
    for point in points:
        tags = " ".join(f"{k}={v}" for k, v in point.tags)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(point.time_ns / 1e9))
        age = ""
        if now_ns is not None:
            age = f" ({summary.age(now_ns - point.time_ns)}{' ago' if now_ns >= point.time_ns else ' of this clock'})"
        lines.append(f"{point.measurement} {tags}  @ {stamp}{age}")
        for name, value in sorted(point.fields.items()):
            entry = entries.get((point.measurement, "field", name))
            lines.append(f"    {name:<24} {format_value(value, entry.unit if entry else '')}")
    return "\n".join(lines)
