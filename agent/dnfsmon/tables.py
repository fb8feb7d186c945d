"""What `dnfsmon show` tables: the one list of its tables and of the series each shows.

summary.py draws these tables; the store keeps the newest lines of these
series apart (store.LATEST_SHOWN_FILE), so that `show` reads those lines and
a count of the others instead of every series' line. Which fields each table
shows is listed here; units come from the catalogue.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Optional

from .points import measurement_head, measurement_of, name_text

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
# Tables showing some series of their measurement only: measurement -> (tag, values shown).
ROWS_SHOWN = {"dnfsmon_nfs_op": ("op", NFS_OPS_SHOWN)}
TABLED = frozenset(measurement for _, measurement, _, _ in TABLES)
# What the store's index of the tabled series was chosen by: an index chosen by other tables
# (written by another version of dnfsmon) is not read.
# As JSON holds it: [measurement] or [measurement, tag, [values]] of each table, by measurement.
SELECTION = [[m, *([ROWS_SHOWN[m][0], list(ROWS_SHOWN[m][1])] if m in ROWS_SHOWN else [])] for m in sorted(TABLED)]


def row_candidates(measurement: str) -> Optional[re.Pattern[str]]:
    """For a table that shows some of its measurement's series (ROWS_SHOWN): rows_pattern of
    those; None when the table shows every series."""
    rows = ROWS_SHOWN.get(measurement)
    return None if rows is None else rows_pattern(*rows)


def rows_pattern(tag: str, values: Sequence[str]) -> re.Pattern[str]:
    """A pattern every line of a series with one of `values` as its `tag` holds, searched in the
    line's text, so that the other lines need not be decoded.

    A line can hold the tag only if it holds ",tag=value" followed by a comma or a space, as
    points.to_line writes it. The pattern may find a line that does not have the tag (the
    text in a string field): the tags of the decoded point decide."""
    written = "|".join(re.escape(name_text(value)) for value in values)
    return re.compile(f",{re.escape(name_text(tag))}=(?:{written})[, ]")


def by_measurement(lines: Iterable[str]) -> dict[str, list[str]]:
    """Lines of line protocol grouped by measurement, each group in the lines' order."""
    groups: dict[str, list[str]] = {}
    # latest.lp is sorted by series key, so a measurement's lines mostly follow each other:
    # a line starting with the previous line's measurement and a comma or space has the same one.
    same: tuple[str, ...] = ()
    entries: list[str] = []
    for line in lines:
        if not line.startswith(same):
            head = measurement_head(line)
            same = (head + ",", head + " ")
            entries = groups.setdefault(measurement_of(line), [])
        entries.append(line)
    return groups


def tabled(groups: dict[str, list[str]]) -> list[str]:
    """Of lines grouped by measurement, those the tables may show: every line of a table that
    shows every series, and of the others the lines their row_candidates pattern finds."""
    shown: list[str] = []
    for measurement in sorted(TABLED & groups.keys()):
        pattern = row_candidates(measurement)
        lines = groups[measurement]
        shown += lines if pattern is None else [line for line in lines if pattern.search(line)]
    return shown
