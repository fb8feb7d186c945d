"""`dnfsmon show`: the latest point of each series as tables a person can read.

Which fields each table shows is listed here; units come from the
catalogue. `dnfsmon show --all` prints every field of every series instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from . import catalogue
from .points import Point
from .store import Store

# (title, measurement, tag columns, field columns)
TABLES: Sequence[tuple[str, str, Sequence[str], Sequence[str]]] = (
    (
        "Database status",
        "dnfsmon_oracle_status",
        ("database",),
        ("up", "instances", "failed_queries", "version", "error"),
    ),
    (
        "dNFS I/O per instance",
        "dnfsmon_dnfs_io",
        ("database", "instance"),
        ("read_iops", "write_iops", "read_mib_per_s", "write_mib_per_s", "avg_read_kib", "avg_write_kib", "processes"),
    ),
    (
        "I/O wait events",
        "dnfsmon_oracle_event",
        ("instance", "event"),
        ("waits_per_s", "avg_latency_us", "fg_avg_latency_us"),
    ),
    (
        "dNFS paths",
        "dnfsmon_dnfs_channel",
        ("instance", "server", "path", "local"),
        ("sends_per_s", "share_pct", "reconnects"),
    ),
    ("dNFS coverage", "dnfsmon_dnfs_coverage", ("instance", "file_type"), ("files", "dnfs_files", "dnfs_pct")),
    (
        "Network interfaces (nicstat)",
        "dnfsmon_nic",
        ("interface",),
        ("rx_kib_per_s", "tx_kib_per_s", "rx_packets_per_s", "tx_packets_per_s", "util_pct", "saturation_per_s"),
    ),
    ("Host TCP", "dnfsmon_tcp", (), ("out_segs_per_s", "retrans_segs_per_s", "retrans_pct", "established")),
    (
        "TCP to the filers",
        "dnfsmon_filer_tcp",
        ("server", "local_address", "interface"),
        ("connections", "tx_kib_per_s", "rx_kib_per_s", "srtt_avg_ms", "retrans_segs_per_s", "unacked_segments"),
    ),
    (
        "Kernel NFS client, READ and WRITE",
        "dnfsmon_nfs_op",
        ("mountpoint", "op"),
        ("ops_per_s", "kib_per_s", "avg_rtt_ms", "avg_exe_ms", "avg_queue_ms", "retrans_per_s"),
    ),
    ("Kernel NFS client RPC", "dnfsmon_rpc", (), ("calls_per_s", "retrans_pct", "tcp_slot_table_entries")),
    (
        "Agent",
        "dnfsmon_agent",
        (),
        ("sources_ok", "sources_failed", "intervals", "sample_seconds", "store_dropped_points"),
    ),
)
# Rows of the per-op table: the operations that carry data.
NFS_OPS_SHOWN = ("READ", "WRITE")


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.2f}"
    return str(value)


NUMBER = re.compile(r"^-?[\d,]+(\.\d+)?$")


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """Aligned columns: numbers to the right, text to the left."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if NUMBER.match(c) else c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    return [line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows]


def age(nanoseconds: int) -> str:
    """A point's age for people: 42s, 5m, 3h, 2d (negative: the clock moved back)."""
    seconds = nanoseconds / 1e9
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{sign}{int(seconds // size)}{unit}"
    return f"{sign}{int(seconds)}s"


def render(latest: dict[tuple, Point], now_ns: int) -> str:
    """Tables of the latest point per series, each with its age; measurements not tabled are counted at the end."""
    entries = catalogue.load()
    out: list[str] = []
    shown = set()
    for title, measurement, tags, fields in TABLES:
        points = sorted((p for (m, _), p in latest.items() if m == measurement), key=lambda p: p.tags)
        if measurement == "dnfsmon_nfs_op":
            points = [p for p in points if dict(p.tags).get("op") in NFS_OPS_SHOWN]
        if not points:
            continue
        shown.add(measurement)
        simulated = any(dict(p.tags).get("simulated") == "true" for p in points)
        headers = (
            ["age"]
            + list(tags)
            + [
                f"{f} [{entries[(measurement, 'field', f)].unit}]"
                if entries.get((measurement, "field", f)) and entries[(measurement, "field", f)].unit
                else f
                for f in fields
            ]
        )
        rows = [
            [age(now_ns - p.time_ns)]
            + [dict(p.tags).get(t, "") for t in tags]
            + [_cell(p.fields[f]) if f in p.fields else "-" for f in fields]
            for p in points
        ]
        out.append(f"{title}{'  (SIMULATED)' if simulated else ''}")
        out.extend(_table(headers, rows))
        out.append("")
    others: dict[str, int] = {}
    for (measurement, _), _point in latest.items():
        if measurement not in shown:
            others[measurement] = others.get(measurement, 0) + 1
    if others:
        out.append(
            "Also stored (dnfsmon show --all, or --measurement NAME): "
            + ", ".join(f"{m} ({n} series)" for m, n in sorted(others.items()))
        )
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


def latest_of(store: Store) -> dict[tuple, Point]:
    """The newest point of every series: from the store's latest.json index when it is
    usable (no segment read: instant on a full store), else by reading every segment."""
    index = store.latest_index()
    if index is not None:
        return {(p.measurement, p.tags): p for p in index.values()}
    latest, _ = latest_per_series(store.points())
    return latest
