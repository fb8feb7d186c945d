"""The metric catalogue: every measurement, tag and field dnfsmon publishes.

catalogue.csv is the one source of truth (measurement, name, kind, type,
unit, description, source). Tests enforce it both ways: every point emitted
is catalogued with the right type, and every catalogued field is produced by
some test case. Never change a shipped field's type or meaning: add a field.
"""

from __future__ import annotations

import csv
import io
from importlib import resources
from typing import NamedTuple

from .points import Point

KINDS = ("tag", "field")
TYPES = ("string", "integer", "float", "boolean")


class Entry(NamedTuple):
    """One row of catalogue.csv (a NamedTuple, not a dataclass: see dnfsmon.records)."""

    measurement: str
    name: str
    kind: str  # "tag" or "field"
    type: str  # one of TYPES
    unit: str
    description: str
    source: str


def load() -> dict[tuple[str, str, str], Entry]:
    """Entries by (measurement, kind, name); raises ValueError on a bad row."""
    text = resources.files("dnfsmon").joinpath("catalogue.csv").read_text(encoding="utf-8")
    entries: dict[tuple[str, str, str], Entry] = {}
    for number, row in enumerate(csv.DictReader(io.StringIO(text)), start=2):
        entry = Entry(**row)
        where = f"catalogue.csv:{number}"
        if entry.kind not in KINDS or entry.type not in TYPES or not entry.description:
            raise ValueError(f"{where}: bad kind, type or empty description in {row}")
        if entry.kind == "tag" and entry.type != "string":
            raise ValueError(f"{where}: tags are strings")
        key = (entry.measurement, entry.kind, entry.name)
        if key in entries:
            raise ValueError(f"{where}: duplicate entry {key}")
        entries[key] = entry
    return entries


def value_type(value: object) -> str:
    """The catalogue type of a Python field value."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    raise TypeError(f"unsupported field value {value!r}")


def violations(point: Point, entries: dict[tuple[str, str, str], Entry]) -> list[str]:
    """What in a point the catalogue does not allow (empty when it is fine)."""
    found = []
    for tag, _ in point.tags:
        if (point.measurement, "tag", tag) not in entries:
            found.append(f"{point.measurement}: tag {tag!r} is not catalogued")
    for name, value in point.fields.items():
        entry = entries.get((point.measurement, "field", name))
        if entry is None:
            found.append(f"{point.measurement}: field {name!r} is not catalogued")
        elif value_type(value) != entry.type:
            found.append(f"{point.measurement}: field {name!r} is {value_type(value)}, catalogue says {entry.type}")
    return found


def format_table(entries: dict[tuple[str, str, str], Entry]) -> str:
    """The catalogue as the text `dnfsmon metrics` prints."""
    lines = []
    for entry in sorted(entries.values(), key=lambda e: (e.measurement, e.kind != "tag", e.name)):
        unit = f" [{entry.unit}]" if entry.unit else ""
        lines.append(
            f"{entry.measurement:<14} {entry.kind:<5} {entry.name:<22} {entry.type:<7}{unit}  {entry.description}"
        )
    return "\n".join(lines)


def format_markdown(entries: dict[tuple[str, str, str], Entry]) -> str:
    """The catalogue as docs/metrics.md (`dnfsmon metrics --markdown`; a test keeps the file current)."""
    lines = [
        "# Metrics",
        "",
        "Generated from `agent/dnfsmon/catalogue.csv` by `dnfsmon metrics --markdown`; do not edit by hand.",
        "Every measurement a source publishes, its tags and its fields, with the unit and meaning of each.",
    ]
    measurement = ""
    for entry in sorted(entries.values(), key=lambda e: (e.measurement, e.kind != "tag", e.name)):
        if entry.measurement != measurement:
            measurement = entry.measurement
            lines += ["", f"## {measurement}", "", f"Source: `{entry.source}`.", ""]
            lines += ["| name | kind | type | unit | meaning |", "|---|---|---|---|---|"]
        description = entry.description.replace("|", "\\|")
        lines.append(f"| `{entry.name}` | {entry.kind} | {entry.type} | {entry.unit} | {description} |")
    return "\n".join(lines)
