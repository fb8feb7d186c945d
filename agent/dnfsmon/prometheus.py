"""dnfsmon's points in Prometheus's terms: names, units, HELP and TYPE from the catalogue.

Every name is derived from catalogue.csv (one source of truth), by the
Prometheus naming conventions (https://prometheus.io/docs/practices/naming/):

- a metric is `<measurement>_<field>`, the field renamed to end in the base
  unit: seconds, bytes, ratios (0-1, never percent); rates end in
  `_per_second`. The value is scaled by the same factor (KiB/s x 1024,
  ms x 0.001, percent x 0.01, ...). UNITS says, per catalogue unit, which part
  of the field name names the unit and what replaces it; COUNT_UNITS are counts
  of things ("connections", "processes"), which Prometheus names without a
  unit suffix. A unit in neither is an error (tests/test_prometheus.py), so a
  new unit cannot be published unnamed.
- `_total` only for counters: the fields whose catalogue description says
  "a counter, total since" (the store's drop counters). Every other field is
  a rate over dnfsmon's measured interval or a level: a gauge. dnfsmon
  publishes exact interval rates rather than raw counters for rate() to
  derive: they come from counters it diffs with its own clock (rates.py).
- booleans are 1 or 0; string fields are not published (a Prometheus sample
  is a number; docs/prometheus.md lists them).
- tags are labels, with one rename: the Oracle `instance` tag is
  `oracle_instance`, because `instance` is the label Prometheus gives every
  scraped target (https://prometheus.io/docs/concepts/jobs_instances/) and a
  scrape would otherwise rename ours to `exported_instance`.

`exposition` renders points in the text exposition format
(https://prometheus.io/docs/instrumenting/exposition_formats/, "Text-based
format"): per metric one `# HELP` and one `# TYPE` line, then its samples;
no timestamps (node_exporter's textfile collector refuses them). `write_textfile`
replaces the collector's file atomically. `converted` gives a point the same
names, units and labels for line protocol shipped to a store that names a
series `<measurement>_<field>` (VictoriaMetrics), so one PromQL serves both.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Optional

from . import catalogue, files
from .errors import EnvironmentProblem
from .points import FieldValue, Point

# Catalogue unit -> the choices of (unit words at the end of a field name, what replaces them, scale factor).
UNITS: dict[str, tuple[tuple[str, str, float], ...]] = {
    "s": (("s", "seconds", 1.0), ("seconds", "seconds", 1.0)),
    "ms": (("ms", "seconds", 1e-3),),
    "µs": (("us", "seconds", 1e-6),),
    "µs/s": (("us_per_s", "seconds_per_second", 1e-6),),
    "deciseconds": (("ds", "seconds", 0.1),),
    "bytes": (("bytes", "bytes", 1.0),),
    "KiB": (("kib", "bytes", 1024.0),),
    "KiB/s": (("kib_per_s", "bytes_per_second", 1024.0),),
    "MiB/s": (("mib_per_s", "bytes_per_second", 1024.0 * 1024.0),),
    "MB/s": (("mb_per_s", "bytes_per_second", 1e6),),
    # Prometheus's base unit for data is the byte, bits included (node_exporter: node_network_speed_bytes).
    "Mbit/s": (("mbit", "bytes_per_second", 1e6 / 8),),
    "percent": (("pct", "ratio", 0.01),),
    "ops/s": (("iops", "ops_per_second", 1.0), ("per_s", "per_second", 1.0)),
}
# Any other "<things>/s": the field ends in _per_s, published as _per_second.
RATE = (("per_s", "per_second", 1.0),)
# Counts of things, and numbers without a unit (booleans, ""): the name stays as it is.
COUNT_UNITS = frozenset(
    [
        "",
        "0/1",
        "CPUs",
        "RPCs",
        "bits",
        "connections",
        "files",
        "instances",
        "metric",
        "number",
        "points",
        "port",
        "problems",
        "processes",
        "queries",
        "reconnects",
        "records",
        "retransmits",
        "retries",
        "segments",
        "sends",
        "series",
        "slots",
        "sources",
        "tasks",
        "transports",
    ]
)
COUNTER_MARK = "a counter, total since"
LABEL_RENAMES = {"instance": "oracle_instance"}
_VALID_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")


@dataclass(frozen=True)
class Metric:
    name: str
    type: str  # "gauge" or "counter"
    help: str
    factor: float


def _renamed(field: str, unit: str) -> tuple[str, float]:
    """The field's Prometheus name (without the measurement) and the factor to its base unit."""
    if unit in COUNT_UNITS:
        return field, 1.0
    choices = UNITS.get(unit) or (RATE if unit.endswith("/s") else None)
    if choices is None:
        raise ValueError(f"unit {unit!r} has no Prometheus name: add it to UNITS or COUNT_UNITS")
    words = field.split("_")
    for old, new, factor in choices:
        old_words = old.split("_")
        # The last place the unit's words stand in the name: mostly its end (rx_kib_per_s), not always (kib_per_op).
        for end in range(len(words), len(old_words) - 1, -1):
            if words[end - len(old_words) : end] == old_words:
                return "_".join(words[: end - len(old_words)] + new.split("_") + words[end:]), factor
    raise ValueError(f"field {field!r} in {unit} does not name its unit ({', '.join(c[0] for c in choices)})")


def metrics(entries: Optional[dict[tuple[str, str, str], catalogue.Entry]] = None) -> dict[tuple[str, str], Metric]:
    """(measurement, field) -> its Prometheus metric, for every numeric field of the catalogue."""
    found = {}
    for entry in (entries or catalogue.load()).values():
        if entry.kind != "field" or entry.type == "string":
            continue
        name, factor = _renamed(entry.name, entry.unit)
        counter = COUNTER_MARK in entry.description
        full = f"{entry.measurement}_{name}{'_total' if counter else ''}"
        unit = f", {entry.unit}" if entry.unit else ""
        scaled = f"; here x {factor:g}" if factor != 1.0 else ""
        text = f"{entry.description} (dnfsmon {entry.measurement} {entry.name}{unit}{scaled})"
        found[(entry.measurement, entry.name)] = Metric(full, "counter" if counter else "gauge", text, factor)
    return found


def label(tag: str) -> str:
    return LABEL_RENAMES.get(tag, tag)


def _number(value: FieldValue, factor: float) -> Optional[float]:
    if isinstance(value, str):
        return None
    number = float(value) * factor if factor != 1.0 else value
    return None if isinstance(number, float) and not math.isfinite(number) else float(number)


def converted(point: Point, known: dict[tuple[str, str], Metric]) -> Optional[Point]:
    """The point with Prometheus field names, base units and labels (for line protocol); None when nothing is numeric."""
    fields: dict[str, FieldValue] = {}
    prefix = len(point.measurement) + 1
    for name, value in point.fields.items():
        metric = known.get((point.measurement, name))
        number = None if metric is None else _number(value, metric.factor)
        if metric is not None and number is not None:
            fields[metric.name[prefix:]] = number
    if not fields:
        return None
    return Point(point.measurement, tuple((label(k), v) for k, v in point.tags), fields, point.time_ns)


def _escape_label_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _format_value(value: float) -> str:
    return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)


def exposition(points: Iterable[Point], known: dict[tuple[str, str], Metric]) -> str:
    """The points as the Prometheus text format; a series met twice keeps its last value."""
    samples: dict[str, dict[str, float]] = {}  # metric name -> labels text -> value
    families: dict[str, Metric] = {}
    for point in points:
        labels = ",".join(f'{label(k)}="{_escape_label_value(v)}"' for k, v in point.tags if v)
        for name, value in point.fields.items():
            metric = known.get((point.measurement, name))
            number = None if metric is None else _number(value, metric.factor)
            if metric is None or number is None:
                continue
            families[metric.name] = metric
            samples.setdefault(metric.name, {})[labels] = number
    out = []
    for name in sorted(samples):
        metric = families[name]
        out.append(f"# HELP {name} {metric.help.replace(chr(92), chr(92) * 2).replace(chr(10), ' ')}")
        out.append(f"# TYPE {name} {metric.type}")
        for labels, value in samples[name].items():
            out.append(f"{name}{{{labels}}} {_format_value(value)}" if labels else f"{name} {_format_value(value)}")
    return "\n".join(out) + "\n" if out else ""


class Textfile:
    """The file node_exporter's textfile collector serves, replaced whole after every sample."""

    def __init__(self, path: str):
        self.path = path
        self.known = metrics()
        # Our own temp names, so a killed run's leftover is ours to remove and no other writer's.
        self.temp_prefix = f".{os.path.basename(path)}.tmp-"

    def write(self, points: Iterable[Point]) -> None:
        """Replace the file with these points; EnvironmentProblem naming the path and the fix when it cannot."""
        data = exposition(points, self.known).encode()
        directory = os.path.dirname(os.path.abspath(self.path))
        try:
            # 0644: node_exporter runs as a user of its own and must read it (no secret is in a point).
            files.write_atomically(self.path, data, mode=0o644, prefix=self.temp_prefix)
        except OSError as error:
            raise EnvironmentProblem(
                f"[prometheus] textfile {self.path}: {error.strerror}: the agent's user must be able to create "
                f"files in {directory} (e.g. install -d -m 755 -o <agent user> {directory})"
            ) from None

    def remove_stale_temps(self) -> None:
        directory = os.path.dirname(os.path.abspath(self.path))
        try:
            names = os.listdir(directory)
        except OSError:
            return
        for name in names:
            if name.startswith(self.temp_prefix):
                try:
                    os.unlink(os.path.join(directory, name))
                except OSError:
                    pass


def valid_name(name: str) -> bool:
    return _VALID_NAME.match(name) is not None
