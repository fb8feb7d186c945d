"""`dnfsmon top`: a live terminal view of dNFS and the host beneath it.

Reads the config's targets itself every interval (the agent need not run),
keeps the previous samples in memory only - never the agent's state files,
lock or store - and computes each refresh with collect.compute, so every
figure is exactly what `dnfsmon collect` would publish for the same inputs
(docs/top.md). The first reading is a baseline: the first figures come one
interval later.

Layout: views are pure functions from one refresh's points to tables
(VIEWS); `screen_lines` lays them out for a size; the curses loop
(`run_screen`) and the plain-text mode (`run_batch`) only draw those lines.
Only the standard library's curses is used: it is on every host that has
Python, and a DBA's SSH session needs nothing more.
"""

from __future__ import annotations

import curses
import logging
import os
import signal
import sys
import termios
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Callable, Optional, Union

from . import capture, catalogue, diagnosis, rates
from .collect import compute
from .config import Config
from .errors import EnvironmentProblem
from .points import Point
from .rates import Sample
from .targets import Target, read_or_fail, targets_from

DEFAULT_INTERVAL_S = 5.0
# Oracle's single-block read: the latency a DBA means by "I/O latency"
# (Oracle Database Reference, "Descriptions of Wait Events").
SINGLE_BLOCK_READ = "db file sequential read"
P95 = 0.95
# Kernel NFS operations that carry data (mountstats names, NFSv3 and v4 alike).
DATA_OPS = ("READ", "WRITE")
# Exit statuses of the interactive view besides 0 (q): the shell's 128 + signal.
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT)
EXIT_TERMINAL_LOST = 129  # SIGHUP, or the terminal answered EIO

Cell = Union[str, float, int, None]
Row = dict[str, Cell]


# --- One refresh: read every target, compute with collect's code. ---


@dataclass
class Frame:
    """What one refresh computed."""

    # 0 for the baseline reading (no figures yet), then 1, 2, ...
    number: int
    points: list[Point] = field(default_factory=list)
    # Source name -> why it gave nothing (or not everything) this time.
    failures: dict[str, str] = field(default_factory=dict)
    # Malformed input lines the sources skipped (the rest was used).
    problems: list[str] = field(default_factory=list)
    # The doctor's ladder and findings over this refresh's points (docs/doctor.md).
    diagnosis: Optional[diagnosis.Diagnosis] = None
    # Seconds between this reading and the previous one (monotonic clock).
    interval_s: Optional[float] = None
    wall_time: float = 0.0


class Sampler:
    """The config's targets, read on demand; previous samples kept in memory only."""

    def __init__(self, config: Config, record_dir: Optional[str] = None):
        self.host = config.host
        self.dnfs_expected = config.dnfs_expected
        # keep_memory=False: the simulator's memory stays in this process too.
        self.targets: list[Target] = targets_from(config, keep_memory=False)
        self.previous: dict[str, dict[str, Sample]] = {target.id: {} for target in self.targets}
        self.record_dir = record_dir
        self.number = -1
        self.last_read: Optional[float] = None

    def read(self) -> Frame:
        """One reading of every target, computed against the previous one."""
        self.number += 1
        started = time.monotonic()
        frame = Frame(self.number, wall_time=time.time())
        if self.last_read is not None:
            frame.interval_s = started - self.last_read
        self.last_read = started
        raws, failures = {}, {}
        for target in self.targets:
            reading = read_or_fail(target)
            outcome = compute(reading.raws, reading.failures, self.host, self.previous[target.id], target.sources)
            self.previous[target.id] = outcome.samples
            raws.update(reading.raws)
            failures.update(reading.failures)
            frame.failures.update(outcome.failures)
            frame.problems.extend(str(problem) for problem in outcome.problems)
            frame.points.extend(outcome.points)
        if frame.number > 0:  # the baseline has no figures to judge
            latest = (s for samples in self.previous.values() for s in samples.values())
            frame.diagnosis = diagnosis.diagnose(frame.points, self.host, latest, self.dnfs_expected)
        if self.record_dir is not None:
            # The raw inputs of this refresh, as `dnfsmon capture` writes them:
            # `dnfsmon diff DIR/0002 DIR/0003` recomputes refresh 3 offline.
            capture.write(os.path.join(self.record_dir, f"{self.number:04d}"), self.host, raws, failures)
        return frame

    def close(self) -> None:
        for target in self.targets:
            target.close()


# --- Views: points -> tables. ---


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    width: int
    decimals: int = 1
    # Shown only when the terminal is wide enough (or in plain text).
    optional: bool = False
    # A long text keeps its end ("~" + tail): it tells mount points apart.
    keep_tail: bool = False


@dataclass
class Table:
    title: str
    columns: Sequence[Column]
    rows: list[Row]
    # Said instead of an empty table.
    empty: str = "none"


def tag(point: Point, name: str) -> str:
    return dict(point.tags).get(name, "")


def number(point: Optional[Point], name: str) -> Optional[float]:
    if point is None:
        return None
    value = point.fields.get(name)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def of(points: Sequence[Point], measurement: str) -> list[Point]:
    return [p for p in points if p.measurement == measurement]


def worst_first(rows: list[Row], *keys: str) -> list[Row]:
    """Rows sorted by the given keys, largest first; unknown values last."""

    def order(row: Row) -> tuple:
        return tuple((0, -value) if isinstance(value, (int, float)) else (1, 0) for value in (row.get(k) for k in keys))

    return sorted(rows, key=order)


def instances_table(points: Sequence[Point]) -> Table:
    """Per instance: dNFS I/O, single-block read latency and the paths' balance."""
    rows = []
    for io in of(points, "dnfsmon_dnfs_io"):
        instance = tag(io, "instance")
        same = [p for p in points if tag(p, "instance") == instance and tag(p, "database") == tag(io, "database")]
        event = next((p for p in of(same, "dnfsmon_oracle_event") if tag(p, "event") == SINGLE_BLOCK_READ), None)
        buckets = [
            (float(tag(p, "le_us")), number(p, "waits_per_s") or 0.0)
            for p in of(same, "dnfsmon_oracle_latency_histogram")
            if tag(p, "event") == SINGLE_BLOCK_READ
        ]
        p95_us = rates.histogram_quantile(buckets, P95)
        avg_us = number(event, "avg_latency_us")
        shares = [s for s in (number(p, "share_pct") for p in of(same, "dnfsmon_dnfs_channel")) if s is not None]
        rows.append(
            {
                "instance": instance,
                "database": tag(io, "database"),
                "read_iops": number(io, "read_iops"),
                "write_iops": number(io, "write_iops"),
                "read_mib_per_s": number(io, "read_mib_per_s"),
                "write_mib_per_s": number(io, "write_mib_per_s"),
                "sbr_avg_ms": None if avg_us is None else avg_us / 1000,
                "sbr_p95_ms": None if p95_us is None else p95_us / 1000,
                "paths": len(of(same, "dnfsmon_dnfs_channel")),
                "share": f"{min(shares):.0f}-{max(shares):.0f}%" if shares else None,
                "processes": number(io, "processes"),
            }
        )
    columns = (
        Column("instance", "INSTANCE", 12, keep_tail=True),
        Column("read_iops", "READ/s", 8, 0),
        Column("write_iops", "WRITE/s", 8, 0),
        Column("read_mib_per_s", "RD MiB/s", 9, 2),
        Column("write_mib_per_s", "WR MiB/s", 9, 2),
        Column("sbr_avg_ms", "1BLK ms", 8, 2),
        Column("sbr_p95_ms", "P95 ms", 7, 2),
        Column("paths", "PATHS", 5, 0),
        Column("share", "SHARE", 8),
        Column("database", "DATABASE", 10, optional=True),
        Column("processes", "PROCS", 6, 0, optional=True),
    )
    rows = worst_first(rows, "sbr_avg_ms", "read_iops")
    return Table("dNFS per instance (worst single-block read first)", columns, rows, "no database configured")


def paths_table(points: Sequence[Point]) -> Table:
    """Each network path to a filer: dNFS's use of it joined with TCP's view of it."""
    tcp = {(tag(p, "server"), tag(p, "local_address")): p for p in of(points, "dnfsmon_filer_tcp")}
    rows = []
    joined = set()
    for channel in of(points, "dnfsmon_dnfs_channel"):
        key = (tag(channel, "path"), tag(channel, "local"))
        joined.add(key)
        rows.append(_path_row(key, channel, tcp.get(key)))
    # Connections to filers that no dNFS channel names: the kernel NFS client's.
    rows.extend(_path_row(key, None, p) for key, p in tcp.items() if key not in joined)
    columns = (
        Column("filer", "FILER", 15),
        Column("local", "LOCAL", 15),
        Column("interface", "IF", 6),
        Column("instance", "INSTANCE", 8),
        Column("share_pct", "SHARE%", 6, 0),
        Column("reconnects", "RECO", 4, 0),
        Column("srtt_avg_ms", "RTT ms", 6, 2),
        Column("retrans_segs_per_s", "RETR/s", 6, 1),
        Column("retrans_pct", "RETR%", 5, 2),
        Column("server", "SERVER", 10, optional=True),
        Column("sends_per_s", "SENDS/s", 9, 0, optional=True),
        Column("connections", "CONNS", 5, 0, optional=True),
        Column("min_rtt_ms", "MINRTT", 7, 2, optional=True),
        Column("tx_kib_per_s", "TX KiB/s", 10, 1, optional=True),
        Column("rx_kib_per_s", "RX KiB/s", 10, 1, optional=True),
    )
    rows = worst_first(rows, "reconnects", "retrans_pct", "srtt_avg_ms")
    return Table("Paths to the filers: dNFS channels and their TCP (worst first)", columns, rows)


def _path_row(key: tuple[str, str], channel: Optional[Point], tcp: Optional[Point]) -> Row:
    return {
        "filer": key[0],
        "local": key[1],
        "interface": tag(tcp, "interface") if tcp else None,
        "instance": tag(channel, "instance") if channel else "kernel",
        "server": tag(channel, "server") if channel else None,
        "share_pct": number(channel, "share_pct"),
        "reconnects": number(channel, "reconnects"),
        "sends_per_s": number(channel, "sends_per_s"),
        "srtt_avg_ms": number(tcp, "srtt_avg_ms"),
        "min_rtt_ms": number(tcp, "min_rtt_ms"),
        "retrans_segs_per_s": number(tcp, "retrans_segs_per_s"),
        "retrans_pct": number(tcp, "retrans_pct"),
        "connections": number(tcp, "connections"),
        "tx_kib_per_s": number(tcp, "tx_kib_per_s"),
        "rx_kib_per_s": number(tcp, "rx_kib_per_s"),
    }


# The kernel's loopback device: drivers/net/loopback.c creates it as "lo" in every network namespace.
LOOPBACK = "lo"


def nics_table(points: Sequence[Point]) -> Table:
    """Network interfaces as nicstat shows them: throughput, %Util and Sat."""
    fields = (
        "rx_kib_per_s",
        "tx_kib_per_s",
        "util_pct",
        "saturation_per_s",
        "rx_packets_per_s",
        "tx_packets_per_s",
        "rx_errors_per_s",
        "rx_drops_per_s",
        "tx_drops_per_s",
        "speed_mbit",
        "mtu_bytes",
    )
    rows = [{"interface": tag(p, "interface"), **{f: number(p, f) for f in fields}} for p in of(points, "dnfsmon_nic")]
    columns = (
        Column("interface", "IF", 10),
        Column("rx_kib_per_s", "RX KiB/s", 11, 1),
        Column("tx_kib_per_s", "TX KiB/s", 11, 1),
        Column("util_pct", "%UTIL", 6, 1),
        Column("saturation_per_s", "SAT/s", 7, 1),
        Column("rx_packets_per_s", "RX PK/s", 9, 0),
        Column("tx_packets_per_s", "TX PK/s", 9, 0),
        Column("rx_errors_per_s", "RXERR/s", 8, 1, optional=True),
        Column("rx_drops_per_s", "RXDRP/s", 8, 1, optional=True),
        Column("tx_drops_per_s", "TXDRP/s", 8, 1, optional=True),
        Column("speed_mbit", "MBIT", 6, 0, optional=True),
        Column("mtu_bytes", "MTU", 5, 0, optional=True),
    )
    # The loopback carries no filer traffic, however busy: listed last, never ranked.
    ranked = worst_first(
        [r for r in rows if r["interface"] != LOOPBACK], "util_pct", "saturation_per_s", "rx_kib_per_s"
    )
    return Table(
        "Network interfaces (busiest first)", columns, ranked + [r for r in rows if r["interface"] == LOOPBACK]
    )


def mounts_table(points: Sequence[Point]) -> Table:
    """Kernel NFS mounts, READ and WRITE: what the kernel client measures per operation."""
    backlog = {tag(p, "mountpoint"): number(p, "avg_backlog") for p in of(points, "dnfsmon_nfs_mount")}
    fields = ("ops_per_s", "kib_per_s", "avg_rtt_ms", "avg_exe_ms", "avg_queue_ms", "retrans_per_s")
    rows = [
        {
            "mountpoint": tag(p, "mountpoint"),
            "op": tag(p, "op"),
            "server": tag(p, "server"),
            "backlog": backlog.get(tag(p, "mountpoint")),
            **{f: number(p, f) for f in fields},
        }
        for p in of(points, "dnfsmon_nfs_op")
        if tag(p, "op") in DATA_OPS
    ]
    columns = (
        Column("mountpoint", "MOUNT", 18, keep_tail=True),
        Column("op", "OP", 5),
        Column("ops_per_s", "OPS/s", 8, 1),
        Column("kib_per_s", "KiB/s", 9, 1),
        Column("avg_exe_ms", "EXE ms", 7, 2),
        Column("avg_rtt_ms", "RTT ms", 7, 2),
        Column("avg_queue_ms", "QUE ms", 7, 2),
        Column("retrans_per_s", "RETR/s", 6, 1),
        Column("backlog", "BKLOG", 6, 2, optional=True),
        Column("server", "SERVER", 15, optional=True),
    )
    rows = worst_first(rows, "avg_exe_ms", "ops_per_s")
    return Table(
        "Kernel NFS mounts, READ and WRITE (slowest first)", columns, rows, "no kernel NFS mounts with traffic"
    )


def findings_table(found: Optional[diagnosis.Diagnosis]) -> Table:
    """The doctor's findings in its order (likely causes, then critical first): the layer to blame and what to do."""
    findings = found.findings if found else []
    rows: list[Row] = [
        {
            "severity": f.severity.upper(),
            "layer": f.layer,
            "id": f.id,
            "summary": f.summary
            + (" (simulated database)" if f.simulated else "")
            + (f" (explained by {f.explained_by})" if f.explained_by else ""),
            "remedy": f.remedy,
        }
        for f in findings
    ]
    columns = (
        Column("severity", "SEVERITY", 8),
        Column("layer", "LAYER", 7),
        Column("summary", "SUMMARY", 62),
        Column("id", "ID", 24, optional=True),
        Column("remedy", "REMEDY", 70, optional=True),
    )
    empty = "healthy: no rule fired"
    if found is not None and found.verdict == diagnosis.NOTHING_TO_JUDGE:
        empty = f"nothing to judge: {found.nothing_measured}"
    return Table("Findings of the doctor (likely cause, then critical first; docs/doctor.md)", columns, rows, empty)


def ladder_table(found: Optional[diagnosis.Diagnosis]) -> Table:
    """The latency ladder, top (what Oracle waits) to bottom (the wire), units from the catalogue."""
    entries = catalogue.load()
    rows: list[Row] = []
    for name, label in diagnosis.ladder.RUNGS.items():
        entry = entries.get((diagnosis.LADDER_MEASUREMENT, "field", name))
        rows.append(
            {"rung": label, "value": found.ladder.get(name) if found else None, "unit": entry.unit if entry else ""}
        )
    columns = (Column("rung", "RUNG", 44), Column("value", "VALUE", 9, 2), Column("unit", "UNIT", 7))
    return Table("Latency ladder: Oracle's single-block read, layer by layer", columns, rows)


def verdict(found: Optional[diagnosis.Diagnosis]) -> Optional[Line]:
    """The doctor's current verdict in one line: the most severe finding and how many more."""
    if found is None:
        return None
    if found.verdict == diagnosis.NOTHING_TO_JUDGE:
        return (printable(f"Verdict: nothing to judge: {found.nothing_measured}"), NORMAL)
    if not found.findings:
        return ("Verdict: healthy, no rule fired", NORMAL)
    worst = findings_table(found).rows[0]
    more = len(found.findings) - 1
    cause = " (likely cause)" if found.likely_causes() else ""
    text = f"Verdict: {worst['severity']} {worst['id']} [{worst['layer']}]{cause}: {worst['summary']}"
    return (printable(text + (f" (+{more} more: key f)" if more else "")), ALERT)


@dataclass(frozen=True)
class View:
    key: str
    name: str
    # The main table first; the others fill the rest of a tall screen.
    tables: Callable[[Frame], list[Table]]


VIEWS: tuple[View, ...] = (
    View(
        "i",
        "instances",
        lambda f: [instances_table(f.points), nics_table(f.points), paths_table(f.points), mounts_table(f.points)],
    ),
    View("p", "paths", lambda f: [paths_table(f.points)]),
    View("n", "nics", lambda f: [nics_table(f.points)]),
    View("m", "mounts", lambda f: [mounts_table(f.points)]),
    View("f", "findings", lambda f: [findings_table(f.diagnosis), ladder_table(f.diagnosis)]),
)
VIEW_BY_KEY = {view.key: view for view in VIEWS}


# --- Layout: frame + view + size -> lines. ---

# Styles a line may carry; the screen maps them to attributes.
NORMAL, TITLE, HEADING, ALERT = "normal", "title", "heading", "alert"
Line = tuple[str, str]


def printable(text: str) -> str:
    """Text safe to show: a control character (an escape in a mount point) becomes '?'."""
    return "".join(c if c.isprintable() else "?" for c in text)


def cell_text(value: Cell, column: Column) -> str:
    if value is None:
        return "-"
    if isinstance(value, (int, float)):
        return f"{value:.{column.decimals}f}"
    return printable(value)


def fitting_columns(columns: Sequence[Column], width: Optional[int]) -> list[Column]:
    """The required columns, then optional ones while they fit (all of them when width is None)."""
    shown = [c for c in columns if not c.optional]
    used = sum(c.width + 1 for c in shown)
    for column in columns:
        if column.optional and (width is None or used + column.width + 1 <= width):
            shown.append(column)
            used += column.width + 1
    return [c for c in columns if c in shown]


def table_lines(table: Table, width: Optional[int], max_rows: Optional[int]) -> list[Line]:
    """A table's lines; width None (plain text) shows every column with its cells in full."""
    columns = fitting_columns(table.columns, width)
    rows = table.rows if max_rows is None else table.rows[:max_rows]
    cells = [[cell_text(row.get(c.key), c) for c in columns] for row in rows]
    widths = [c.width for c in columns]
    if width is None:
        widths = [max([w, len(c.title)] + [len(r[i]) for r in cells]) for i, (w, c) in enumerate(zip(widths, columns))]

    # Numbers to the right, names to the left.
    numeric = [not any(isinstance(row.get(c.key), str) for row in rows) for c in columns]

    def line(texts: list[str]) -> str:
        parts = []
        for text, column, room, right in zip(texts, columns, widths, numeric):
            if len(text) > room:
                text = "~" + text[-(room - 1) :] if column.keep_tail else text[:room]
            parts.append(text.rjust(room) if right else text.ljust(room))
        return " ".join(parts).rstrip()

    out: list[Line] = [(table.title, TITLE)]
    if not table.rows:
        return [*out, ("  " + table.empty, NORMAL)]
    out.append((line([c.title for c in columns]), HEADING))
    out.extend((line(texts), NORMAL) for texts in cells)
    hidden = len(table.rows) - len(rows)
    if hidden:
        out.append((f"  ... {hidden} more", NORMAL))
    return out


def header_lines(frame: Optional[Frame], host: str, interval_s: float, view: View, keys: bool) -> list[Line]:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(frame.wall_time if frame else time.time()))
    measured = f", last {frame.interval_s:.3f} s" if frame and frame.interval_s is not None else ""
    number = frame.number if frame else 0
    lines: list[Line] = [(f"dnfsmon top - {host} - {when} - refresh {number}, every {interval_s:g} s{measured}", TITLE)]
    points = frame.points if frame else []
    lines.append((database_summary(points), NORMAL))
    lines.append((layers_summary(points), NORMAL))
    found = verdict(frame.diagnosis if frame else None)
    if found:
        lines.append(found)
    for name, reason in sorted((frame.failures if frame else {}).items()):
        lines.append((printable(f"source {name} failed: {reason}"), ALERT))
    if frame and frame.problems:
        count = len(frame.problems)
        lines.append((printable(f"{count} malformed input part(s) skipped, first: {frame.problems[0]}"), ALERT))
    if keys:
        names = "  ".join(f"{v.key}:{v.name.upper() if v is view else v.name}" for v in VIEWS)
        lines.append((f"keys: {names}  q:quit", HEADING))
    return lines


def database_summary(points: Sequence[Point]) -> str:
    statuses = of(points, "dnfsmon_oracle_status")
    if not statuses:
        return "Oracle: not configured ([oracle] or [simulator] in the config)"
    parts = []
    for status in statuses:
        simulated = " SIMULATED" if tag(status, "simulated") == "true" else ""
        if status.fields.get("up"):
            instances = number(status, "instances")
            text = f"{tag(status, 'database')}{simulated} up, {instances:.0f} instance(s), {status.fields.get('version', '')}"
        else:
            text = f"database{simulated} DOWN: {status.fields.get('error', '')}"
        parts.append(text)
    return printable("Oracle: " + "; ".join(parts))


def layers_summary(points: Sequence[Point]) -> str:
    """One line with each host layer's worst figure: which layer is it?"""
    parts = []
    nics = [row for row in nics_table(points).rows if row["interface"] != LOOPBACK]  # busiest first
    if nics:
        nic = nics[0]
        util = "speed unknown" if nic["util_pct"] is None else f"{nic['util_pct']:.1f}%"
        parts.append(f"NIC {nic['interface']} {util}, Sat {nic['saturation_per_s'] or 0:.1f}/s")
    tcp = of(points, "dnfsmon_filer_tcp")
    rtts = [v for v in (number(p, "srtt_max_ms") for p in tcp) if v is not None]
    if rtts:
        retrans = sum(number(p, "retrans_segs_per_s") or 0.0 for p in tcp)
        parts.append(f"filer TCP RTT max {max(rtts):.2f} ms, {retrans:.1f} retrans/s")
    else:
        parts.append("no TCP to the filers")
    ops = mounts_table(points).rows  # slowest first
    if ops and ops[0]["avg_exe_ms"] is not None:
        parts.append(f"NFS {ops[0]['op']} exe {ops[0]['avg_exe_ms']:.2f} ms")
    return printable("Host: " + " | ".join(parts))


def screen_lines(
    frame: Optional[Frame], host: str, interval_s: float, view: View, width: int, height: int
) -> list[Line]:
    """Everything on a screen of this size: header, then the view's tables while they fit."""
    lines = header_lines(frame, host, interval_s, view, keys=True)
    if frame is None or frame.number == 0:
        lines.append((f"reading the baseline; the first figures come after {interval_s:g} s", NORMAL))
        return [(text[:width], style) for text, style in lines[:height]]
    tables = view.tables(frame)
    needs = [needs_of(table) for table in tables]
    main = min(needs[0], height - len(lines))
    for table, room in zip(tables, [main, *share_lines(needs[1:], height - len(lines) - main)]):
        if room < min(needs_of(table), 4):  # not even one row: leave it out rather than show only its title
            continue
        lines.append(("", NORMAL))
        # Rows that fit; when some do not, the last line says how many more.
        max_rows = len(table.rows) if len(table.rows) <= room - 3 else room - 4
        lines.extend(table_lines(table, width, max(max_rows, 1)))
    return [(text[:width], style) for text, style in lines[:height]]


def needs_of(table: Table) -> int:
    """Lines a table takes in full: a blank line, its title, its heading and rows, or the line saying it is empty."""
    return 3 + len(table.rows) if table.rows else 3


def share_lines(needs: Sequence[int], room: int) -> list[int]:
    """Lines for each table: those needing less than a fair share get what they need, the rest share what is left."""
    given = [0] * len(needs)
    waiting = list(range(len(needs)))
    while waiting:
        share = room // len(waiting)
        small = [i for i in waiting if needs[i] <= share]
        if not small:
            for i in waiting:
                given[i] = share
            break
        for i in small:
            given[i] = needs[i]
            room -= needs[i]
            waiting.remove(i)
    return given


def text_block(frame: Frame, host: str, interval_s: float) -> str:
    """One refresh as plain text (--batch, --once): every view's tables, every row and column."""
    lines = header_lines(frame, host, interval_s, VIEWS[0], keys=False)
    for table in _all_tables(frame):
        lines.append(("", NORMAL))
        lines.extend(table_lines(table, None, None))
    return "\n".join(text for text, _ in lines) + "\n"


def _all_tables(frame: Frame) -> Iterator[Table]:
    seen = set()
    for view in VIEWS:
        for table in view.tables(frame):
            if table.title not in seen:
                seen.add(table.title)
                yield table


# --- Running: plain text, or the full screen. ---


def run_batch(sampler: Sampler, interval_s: float, count: int) -> tuple[list[str], Optional[diagnosis.Diagnosis]]:
    """Print `count` refreshes as plain text; the sources that failed in any of them, and the
    last refresh's diagnosis (its verdict is the exit status, as the doctor's)."""
    started = time.monotonic()
    sampler.read()  # the baseline
    failed: dict[str, None] = {}
    last: Optional[diagnosis.Diagnosis] = None
    for number in range(1, count + 1):
        time.sleep(max(0.0, started + number * interval_s - time.monotonic()))
        frame = sampler.read()
        failed.update(dict.fromkeys(frame.failures))
        last = frame.diagnosis
        try:
            sys.stdout.write(("\n" if number > 1 else "") + text_block(frame, sampler.host, interval_s))
            sys.stdout.flush()
        except BrokenPipeError:  # `dnfsmon top --batch 100 | head`: the reader has seen enough
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the interpreter's final flush must not fail
            break
    return list(failed), last


class TerminalLost(BaseException):
    """The terminal went away (SIGHUP, or EIO on the tty).

    A BaseException, like KeyboardInterrupt: the readers' `except Exception`
    (one broken source must not stop the others) must not swallow it.
    """


def _hang_up(signum: int, frame: Optional[FrameType]) -> None:
    raise TerminalLost(signum)


def _terminal_alive(fd: int) -> bool:
    try:
        termios.tcgetattr(fd)
    except (termios.error, OSError):
        return False
    return True


class Screen:
    """curses, set up and always restored; colour only when the terminal has it and NO_COLOR is unset."""

    def __init__(self) -> None:
        # The terminal's own size (TIOCGWINSZ), not LINES/COLUMNS: ncurses
        # prefers those when they are set (use_env(3X)), and an exported value
        # goes stale as soon as the window is resized.
        for name in ("LINES", "COLUMNS"):
            os.environ.pop(name, None)
        try:
            self.window = curses.initscr()
        except curses.error as error:
            term = os.environ.get("TERM", "")
            raise EnvironmentProblem(
                f"dnfsmon top cannot drive the terminal TERM={term!r} ({error}): set TERM to a known type "
                "(e.g. TERM=xterm or TERM=vt100), or use --once or --batch N for plain text"
            ) from None
        try:
            curses.noecho()
            curses.cbreak()
            self.window.keypad(True)
            try:
                curses.curs_set(0)
            except curses.error:  # vt100 cannot hide the cursor
                pass
            self.styles = {
                NORMAL: curses.A_NORMAL,
                TITLE: curses.A_BOLD,
                HEADING: curses.A_REVERSE,
                ALERT: curses.A_BOLD,
            }
            # https://no-color.org: any non-empty NO_COLOR means no colour.
            if curses.has_colors() and not os.environ.get("NO_COLOR"):
                curses.start_color()
                curses.init_pair(1, curses.COLOR_CYAN, curses.COLOR_BLACK)
                curses.init_pair(2, curses.COLOR_RED, curses.COLOR_BLACK)
                self.styles[TITLE] = curses.color_pair(1) | curses.A_BOLD
                self.styles[ALERT] = curses.color_pair(2) | curses.A_BOLD
        except BaseException:
            self.restore()
            raise

    def size(self) -> tuple[int, int]:
        height, width = self.window.getmaxyx()
        return width, height

    def draw(self, lines: list[Line]) -> None:
        self.window.erase()
        width, height = self.size()
        for y, (text, style) in enumerate(lines[:height]):
            try:
                self.window.addstr(y, 0, text[:width], self.styles[style])
            except curses.error:  # writing the bottom-right cell moves the cursor off screen; the text is there
                pass
        try:
            self.window.refresh()
        except curses.error:
            raise TerminalLost("the terminal refused output") from None

    def key(self, timeout_s: float) -> Optional[int]:
        self.window.timeout(max(0, min(int(timeout_s * 1000), 1000)))
        code = self.window.getch()
        return None if code == -1 else code

    @staticmethod
    def restore() -> None:
        try:
            curses.endwin()
        except curses.error:  # the terminal is gone: nothing left to restore
            pass


def run_screen(sampler: Sampler, interval_s: float) -> int:
    """The interactive view until q, Ctrl-C or a lost terminal; returns the exit status."""
    fd = sys.stdin.fileno()
    if not (os.isatty(fd) and sys.stdout.isatty()):
        raise EnvironmentProblem("dnfsmon top needs a terminal: use --once or --batch N for plain text")
    handlers = {s: signal.signal(s, _hang_up) for s in (signal.SIGHUP, signal.SIGTERM)}
    # Log lines would scribble over the screen: keep them until the screen is gone.
    root = logging.getLogger()
    saved_handlers = root.handlers[:]
    kept = _KeptRecords()
    root.handlers = [kept]
    screen: Optional[Screen] = None
    try:
        screen = Screen()
        view = VIEWS[0]
        frame = sampler.read()
        due = time.monotonic() + interval_s
        while True:
            width, height = screen.size()
            screen.draw(screen_lines(frame, sampler.host, interval_s, view, width, height))
            while True:
                left = due - time.monotonic()
                if left <= 0:
                    frame = sampler.read()
                    # Keep to the grid; after a slow read, start again from now.
                    due = max(due + interval_s, time.monotonic() + 0.1)
                    break
                code = screen.key(left)
                if code is None:
                    if not _terminal_alive(fd):
                        raise TerminalLost("EIO on the terminal")
                    continue
                char = chr(code).lower() if 0 <= code < 256 else ""
                if char == "q":
                    return 0
                if char in VIEW_BY_KEY:
                    view = VIEW_BY_KEY[char]
                break  # redraw: a view key, a resize (KEY_RESIZE) or anything else
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except TerminalLost as lost:
        # The shell's convention: 128 + the signal (SIGHUP 129, SIGTERM 143); EIO counts as a hang-up.
        return 128 + lost.args[0] if isinstance(lost.args[0], int) else EXIT_TERMINAL_LOST
    finally:
        if screen is not None:
            screen.restore()
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        root.handlers = saved_handlers
        for record in kept.records:
            root.handle(record)


class _KeptRecords(logging.Handler):
    """Holds log records while the screen is up (the last 100)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records = [*self.records[-99:], record]
