"""Oracle Direct NFS: IOPS, bytes, channels, servers, I/O latency, histograms,
I/O by function, latency per filer, the top processes.

Facts and traps: docs/oracle.md. This module is pure:
it builds the SQL texts from the columns the connected release has
(dnfsmon.oracle_facts names them per release) and turns result rows into
samples and points. The I/O happens in dnfsmon.oracle_db (a live database
through python-oracledb) or dnfsmon.simulator; both hand over the same
document as Python values (Raw.documents: no JSON round trip on the live
path), and a capture stores its JSON text as "oracle/results.json":

    {"kind": "live" | "simulated", "version": "19.0.0.0.0",
     "database": {"DBID": 1, "NAME": "ORCL", "DB_UNIQUE_NAME": "ORCL", "CDB": "NO"},
     "results": {"<query>": {"columns": ["INST_ID", ...], "rows": [[1, ...], ...]}},
     "errors": {"<query>": "ORA-00942: ... (grant SELECT ON SYS.GV_$X TO USER)"},
     "down": null | "ORA-01017: invalid username/password; logon denied",
     "warning": null | "ORA-28002: the password will expire within 7 days (...)"}

DB_TIME (every query reads SYS_EXTRACT_UTC(SYSTIMESTAMP) in the same round
trip as its counters) is seconds since the Unix epoch; STARTUP_TIME is an
ISO 8601 string.

How the traps are handled:
- V$DNFS_STATS counts per process: each process (INST_ID, PNUM) is diffed
  on its own, with SPID and SERIAL# from V$PROCESS as its identity, so a
  process replaced under the same PNUM re-baselines; only then are the
  deltas summed per instance. A process that started since the previous
  read (its PNUM was absent then, or held by another SPID/SERIAL#) is
  counted from zero, since its counters started at zero with it; a process
  whose start is not known is left out and counted in processes_left_out.
  An exiting process's last partial interval cannot be counted.
- Instance restarts: STARTUP_TIME is in every sample's identity.
- V$DNFS_CHANNELS counts "since the last select": each read's counts are
  an interval count, divided by the time since dnfsmon's previous read. Any
  other reader of the view in between (a DBA's script) takes counts away,
  so the per-second figures are a lower bound; the path shares are exact.
"""

from __future__ import annotations

import datetime
import heapq
import json
import math
import operator
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional, cast

from .. import oracle_facts, rates
from ..points import Point
from ..rates import Sample
from .base import Parsed, ParseError, Raw, Source

if TYPE_CHECKING:
    from ..config import Config, OracleSettings

NAME = "oracle"
RESULTS = "oracle/results.json"

IO_MEASUREMENT = "dnfsmon_dnfs_io"
CHANNEL_MEASUREMENT = "dnfsmon_dnfs_channel"
SERVER_MEASUREMENT = "dnfsmon_dnfs_server"
EVENT_MEASUREMENT = "dnfsmon_oracle_event"
HISTOGRAM_MEASUREMENT = "dnfsmon_oracle_latency_histogram"
COVERAGE_MEASUREMENT = "dnfsmon_dnfs_coverage"
FUNCTION_MEASUREMENT = "dnfsmon_oracle_io_function"
FILER_LATENCY_MEASUREMENT = "dnfsmon_dnfs_filer_latency"
TOP_PROCESS_MEASUREMENT = "dnfsmon_dnfs_top_process"
# Not published: each dNFS file's V$IOSTAT_FILE counters (diffed per file,
# then summed per filer into FILER_LATENCY_MEASUREMENT).
FILER_FILE_MEASUREMENT = "dnfsmon_dnfs_filer_file"
STATUS_MEASUREMENT = "dnfsmon_oracle_status"
# Not published: per instance, which process held each PNUM at a read (the
# state the next read needs to know which processes are new; see _io).
ROSTER_MEASUREMENT = "dnfsmon_dnfs_roster"
MEASUREMENTS = (
    IO_MEASUREMENT,
    CHANNEL_MEASUREMENT,
    SERVER_MEASUREMENT,
    EVENT_MEASUREMENT,
    HISTOGRAM_MEASUREMENT,
    COVERAGE_MEASUREMENT,
    FUNCTION_MEASUREMENT,
    FILER_LATENCY_MEASUREMENT,
    FILER_FILE_MEASUREMENT,
    TOP_PROCESS_MEASUREMENT,
    STATUS_MEASUREMENT,
    ROSTER_MEASUREMENT,
)

# The Oracle lists live in dnfsmon.oracle_facts (one source of truth).
IO_EVENTS = oracle_facts.IO_EVENTS
AGENT_EVENTS = oracle_facts.AGENT_EVENTS
HISTOGRAM_EVENTS = oracle_facts.HISTOGRAM_EVENTS
OTHER_OPS = oracle_facts.OTHER_OPS
STATS_COUNTERS = ("NFS_READ", "NFS_WRITE", "NFS_READBYTES", "NFS_WRITEBYTES", *OTHER_OPS)
# What a process's sample counts: the counters the published fields and the top processes use
# (io_fields, _top_processes), and OTHER_OPS_COUNTER, the row's OTHER_OPS summed as read. Each
# process is diffed over 7 counters, not 25 (4 instances x 2000 processes: bench/README.md); a
# sum of counters that only grow grows, and falls back to zero with them.
PROCESS_COUNTERS = ("NFS_READ", "NFS_WRITE", "NFS_READBYTES", "NFS_WRITEBYTES", "NFS_GETATTR", "NFS_COMMIT")
OTHER_OPS_COUNTER = "NFS_OTHER_OPS"
CHANNEL_COUNTS = ("SENDS", "RECVS", "PINGS", "RECO", "SPRECO", "DPRECO")
EVENT_COUNTERS = ("TOTAL_WAITS", "TIME_WAITED_MICRO", "TOTAL_WAITS_FG", "TIME_WAITED_MICRO_FG")
# V$IOSTAT_FILE's cumulative counts and times (milliseconds) per file.
FILE_COUNTERS = (
    "SMALL_READ_REQS",
    "SMALL_READ_SERVICETIME",
    "SMALL_SYNC_READ_REQS",
    "SMALL_SYNC_READ_LATENCY",
    "LARGE_READ_REQS",
    "LARGE_READ_SERVICETIME",
    "SMALL_WRITE_REQS",
    "SMALL_WRITE_SERVICETIME",
    "LARGE_WRITE_REQS",
    "LARGE_WRITE_SERVICETIME",
)
FUNCTION_COUNTERS = (
    "SMALL_READ_REQS",
    "SMALL_WRITE_REQS",
    "LARGE_READ_REQS",
    "LARGE_WRITE_REQS",
    "SMALL_READ_MEGABYTES",
    "SMALL_WRITE_MEGABYTES",
    "LARGE_READ_MEGABYTES",
    "LARGE_WRITE_MEGABYTES",
    "NUMBER_OF_WAITS",
    "WAIT_TIME",
)
# Every counter query reads the database clock in the same statement (one
# SYSTIMESTAMP per statement) and the instance whose clock that is.
DB_TIME = "SYS_EXTRACT_UTC(SYSTIMESTAMP) AS db_time, TO_NUMBER(SYS_CONTEXT('USERENV', 'INSTANCE')) AS clock_instance"
CLOCK_COLUMNS = ("DB_TIME", "CLOCK_INSTANCE")
# The instance the session is connected to (Oracle SQL Language Reference,
# SYS_CONTEXT, namespace USERENV, parameter INSTANCE: "the instance
# identification number of the current instance").
LOCAL_INSTANCE = "TO_NUMBER(SYS_CONTEXT('USERENV', 'INSTANCE'))"

# oracle.scope: "instance" reads only the instance the session is connected
# to (one agent per RAC node, each with a node-local connection: the
# default); "cluster" reads every instance through GV$ from one agent.
SCOPES = ("instance", "cluster")


@dataclass(frozen=True)
class Query:
    """One SQL text the agent sends: its result columns and the views it reads."""

    name: str
    sql: str
    # Result column names, upper case, in order (what cursor.description says).
    columns: tuple[str, ...]
    views: tuple[str, ...]
    # True when rows are limited to the connected instance (scope "instance").
    local: bool = False
    # True for what changes rarely (filers, files, coverage): read every
    # oracle.inventory_interval_s rather than every sample.
    inventory: bool = False


def _pick(available: set[str], wanted: Sequence[str]) -> list[str]:
    return [c for c in wanted if c in available]


def build_queries(available: Mapping[str, set[str]], scope: str = "instance") -> list[Query]:
    """SQL for the columns the database has ({"GV$DNFS_STATS": {"INST_ID", ...}, ...}).

    A view missing from `available` (not granted, or absent in the release)
    leaves its query out; required columns are used unconditionally so the
    facts test catches a release that lacks them.

    Scope "cluster" reads every instance through the GV$ views. Scope
    "instance" reads each view's V$ view (oracle_facts.INSTANCE_VIEWS: no
    parallel execution on the other instances, and no select of another
    instance's V$DNFS_CHANNELS counts), with the connected instance's number
    as its INST_ID, so the rest of each statement is the same in both
    scopes. Where only the GV$ view is granted (a user set up before V$ was
    granted), the GV$ view filtered on the instance is read instead, as
    before, until setup is run again (Database.discover says so).
    """
    local = scope == "instance"
    queries = []

    def has(view: str) -> set[str]:
        """The columns of a GV$ view as this scope reads them (a V$ view's, with INST_ID)."""
        instance_view = oracle_facts.base_view(view)
        if local and view.startswith("GV$") and instance_view in available:
            return {"INST_ID", *available[instance_view]}
        return set(available.get(view, ()))

    def source(view: str, columns: Sequence[str]) -> str:
        """What a statement reads a GV$ view from, with INST_ID and `columns` (upper case)."""
        listed = ", ".join(c.lower() for c in columns)
        if not local:
            return view.lower()
        instance_view = oracle_facts.base_view(view)
        if instance_view in available:
            return f"(SELECT {LOCAL_INSTANCE} AS inst_id, {listed} FROM {instance_view.lower()})"
        return f"(SELECT inst_id, {listed} FROM {view.lower()} WHERE inst_id = {LOCAL_INSTANCE})"

    def where(*conditions: str) -> str:
        return (" WHERE " + " AND ".join(conditions)) if conditions else ""

    def simple(name: str, view: str, columns: Sequence[str], *conditions: str, inventory: bool = False) -> Query:
        """SELECT columns (INST_ID first), the clock FROM view [WHERE ...]."""
        read = source(view, [c for c in columns if c != "INST_ID"])
        sql = f"SELECT {', '.join(c.lower() for c in columns)}, {DB_TIME} FROM {read}{where(*conditions)}"
        return Query(name, sql, (*columns, *CLOCK_COLUMNS), views(view), local, inventory)

    def events(names: Sequence[str]) -> str:
        return "event IN (" + ", ".join("'" + e + "'" for e in names) + ")"

    def views(*names: str) -> tuple[str, ...]:
        """The views a query reads, as the grants name them."""
        return tuple(
            oracle_facts.base_view(v) if local and oracle_facts.base_view(v) in available else v for v in names
        )

    if has("GV$INSTANCE"):
        queries.append(
            simple("instances", "GV$INSTANCE", ["INST_ID", "INSTANCE_NAME", "HOST_NAME", "VERSION", "STARTUP_TIME"])
        )
    if has("V$DATABASE"):
        role = _pick(has("V$DATABASE"), ["DATABASE_ROLE", "OPEN_MODE"])
        columns: Sequence[str] = ["DBID", "NAME", "DB_UNIQUE_NAME", *role, *_pick(has("V$DATABASE"), ["CDB"])]
        sql = f"SELECT {', '.join(c.lower() for c in columns)} FROM v$database"
        queries.append(Query("database", sql, tuple(columns), ("V$DATABASE",)))
    if has("GV$DNFS_STATS") and has("GV$PROCESS"):
        counters = _pick(has("GV$DNFS_STATS"), STATS_COUNTERS)
        container = _pick(has("GV$DNFS_STATS"), ["CON_ID"])
        process = source("GV$PROCESS", ["PID", "SPID", "SERIAL#", "PNAME", "PROGRAM"])
        sql = (
            "SELECT s.inst_id, s.pnum, p.spid, p.serial#, p.pname, p.program, "
            f"{', '.join('s.' + c.lower() for c in [*counters, *container])}, "
            f"{DB_TIME} FROM {source('GV$DNFS_STATS', ['PNUM', *counters, *container])} s "
            f"LEFT OUTER JOIN {process} p ON p.inst_id = s.inst_id AND p.pid = s.pnum"
        )
        columns = ("INST_ID", "PNUM", "SPID", "SERIAL#", "PNAME", "PROGRAM", *counters, *container, *CLOCK_COLUMNS)
        queries.append(Query("dnfs_stats", sql, columns, views("GV$DNFS_STATS", "GV$PROCESS"), local))
    if has("GV$DNFS_CHANNELS"):
        channel = has("GV$DNFS_CHANNELS")
        columns = ["INST_ID", "PNUM", "SVRNAME", "PATH", *_pick(channel, ["LOCAL"]), *_pick(channel, CHANNEL_COUNTS)]
        queries.append(simple("dnfs_channels", "GV$DNFS_CHANNELS", columns))
    if has("GV$DNFS_SERVERS"):
        version = _pick(has("GV$DNFS_SERVERS"), ["NFSVERSION"])
        columns = ["INST_ID", "ID", "SVRNAME", "DIRNAME", "NFSPORT", *version, "WTMAX", "RTMAX"]
        queries.append(simple("dnfs_servers", "GV$DNFS_SERVERS", columns, inventory=True))
    if has("GV$DNFS_FILES"):
        # One row per process and file in the view: count each file once.
        files = source("GV$DNFS_FILES", ["SVR_ID", "FILENAME", "FILESIZE"])
        sql = (
            f"SELECT inst_id, svr_id, COUNT(*) AS files, SUM(filesize) AS bytes, {DB_TIME} "
            f"FROM (SELECT DISTINCT inst_id, svr_id, filename, filesize FROM {files}) "
            "GROUP BY inst_id, svr_id"
        )
        columns = ("INST_ID", "SVR_ID", "FILES", "BYTES", *CLOCK_COLUMNS)
        queries.append(Query("dnfs_files", sql, columns, views("GV$DNFS_FILES"), local, inventory=True))
    if has("GV$SYSTEM_EVENT"):
        columns = ["INST_ID", "EVENT", "TOTAL_WAITS", "TIME_WAITED_MICRO", "TOTAL_WAITS_FG", "TIME_WAITED_MICRO_FG"]
        queries.append(simple("system_event", "GV$SYSTEM_EVENT", columns, events(AGENT_EVENTS)))
    if has("GV$EVENT_HISTOGRAM_MICRO"):
        columns = ["INST_ID", "EVENT", "WAIT_TIME_MICRO", "WAIT_COUNT"]
        queries.append(simple("event_histogram", "GV$EVENT_HISTOGRAM_MICRO", columns, events(HISTOGRAM_EVENTS)))
    elif has("GV$EVENT_HISTOGRAM"):
        columns = ["INST_ID", "EVENT", "WAIT_TIME_MILLI", "WAIT_COUNT"]
        queries.append(simple("event_histogram", "GV$EVENT_HISTOGRAM", columns, events(HISTOGRAM_EVENTS)))
    if "ACCESS_METHOD" in has("GV$IOSTAT_FILE"):
        # Per container in a CDB (V$IOSTAT_FILE.CON_ID: the file's container).
        container = [c.lower() for c in _pick(has("GV$IOSTAT_FILE"), ["CON_ID"])]
        group = ", ".join(["inst_id", "filetype_name", "access_method", *container])
        read = source("GV$IOSTAT_FILE", ["FILETYPE_NAME", "ACCESS_METHOD", *container])
        sql = f"SELECT {group}, COUNT(*) AS files, {DB_TIME} FROM {read} GROUP BY {group}"
        columns = (
            "INST_ID",
            "FILETYPE_NAME",
            "ACCESS_METHOD",
            *(c.upper() for c in container),
            "FILES",
            *CLOCK_COLUMNS,
        )
        queries.append(Query("iostat_file", sql, columns, views("GV$IOSTAT_FILE"), local, inventory=True))
    filer_views = ("GV$IOSTAT_FILE", "GV$DATAFILE", "GV$TEMPFILE", "GV$DNFS_FILES", "GV$DNFS_SERVERS")
    if all(has(view) for view in filer_views):
        # Latency per filer (review C8): V$IOSTAT_FILE has each file's counts
        # and times but no name; V$DATAFILE/V$TEMPFILE name the file, and
        # V$DNFS_FILES (a row per process and open file) names the filer
        # serving it. Inventory: V$DNFS_FILES is the costly view. In scope
        # "instance" every part reads the connected instance's V$ view.
        named = ["FILE#", "NAME"]
        names = (
            f"SELECT inst_id, file# AS file_no, 'Data File' AS filetype_name, name FROM {source('GV$DATAFILE', named)}"
            " UNION ALL SELECT inst_id, file# AS file_no, 'Temp File' AS filetype_name, name "
            f"FROM {source('GV$TEMPFILE', named)}"
        )
        sql = (
            f"SELECT f.inst_id, s.svrname, f.filetype_name, f.file_no, "
            f"{', '.join('f.' + c.lower() for c in FILE_COUNTERS)}, {DB_TIME} "
            f"FROM {source('GV$IOSTAT_FILE', ['FILE_NO', 'FILETYPE_NAME', *FILE_COUNTERS])} f "
            f"INNER JOIN ({names}) n ON n.inst_id = f.inst_id AND n.file_no = f.file_no "
            "AND n.filetype_name = f.filetype_name "
            f"INNER JOIN (SELECT DISTINCT inst_id, svr_id, filename FROM {source('GV$DNFS_FILES', ['SVR_ID', 'FILENAME'])}) d "
            "ON d.inst_id = f.inst_id AND d.filename = n.name "
            f"INNER JOIN {source('GV$DNFS_SERVERS', ['ID', 'SVRNAME'])} s ON s.inst_id = d.inst_id AND s.id = d.svr_id"
        )
        columns = ("INST_ID", "SVRNAME", "FILETYPE_NAME", "FILE_NO", *FILE_COUNTERS, *CLOCK_COLUMNS)
        queries.append(Query("filer_files", sql, columns, views(*filer_views), local, inventory=True))
    if has("GV$IOSTAT_FUNCTION"):
        # Cumulative per function since startup: a counter query, read every sample (review C7).
        container = _pick(has("GV$IOSTAT_FUNCTION"), ["CON_ID"])
        columns = ["INST_ID", "FUNCTION_NAME", *FUNCTION_COUNTERS, *container]
        queries.append(simple("iostat_function", "GV$IOSTAT_FUNCTION", columns))
    return queries


# --- one round trip per sample ---

# Result columns that hold text; every other column is a NUMBER (or the clock).
TEXT_COLUMNS = frozenset(
    {
        "INSTANCE_NAME",
        "HOST_NAME",
        "VERSION",
        "STARTUP_TIME",
        "NAME",
        "DB_UNIQUE_NAME",
        "DATABASE_ROLE",
        "OPEN_MODE",
        "CDB",
        "SPID",
        "PNAME",
        "PROGRAM",
        "SVRNAME",
        "PATH",
        "LOCAL",
        "DIRNAME",
        "NFSVERSION",
        "EVENT",
        "FILETYPE_NAME",
        "ACCESS_METHOD",
        "FUNCTION_NAME",
    }
)
# TO_CHAR formats of the two time columns (DB_TIME is a TIMESTAMP in UTC,
# STARTUP_TIME a DATE); DB_TIME_FORMAT is the same layout for Python.
ORACLE_FORMATS = {"DB_TIME": 'YYYY-MM-DD"T"HH24:MI:SS.FF6', "STARTUP_TIME": 'YYYY-MM-DD"T"HH24:MI:SS'}
DB_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%f"


@dataclass(frozen=True)
class Combined:
    """Several queries as one statement: one execute and one fetch (review D1/D2).

    A long-format UNION ALL: each branch wraps one query and returns its name
    and its columns as text (TO_CHAR keeps every digit of a NUMBER), padded
    with NULLs to the widest query. UNION ALL of CHAR literals of different
    lengths gives VARCHAR2 (SQL Language Reference, "The UNION [ALL],
    INTERSECT, MINUS Operators"), so the names come back unpadded. One
    SYSTIMESTAMP per statement: every query of the statement has the same
    clock reading, taken with its counters.
    """

    name: str
    sql: str
    queries: tuple[Query, ...]


def combine(name: str, queries: Sequence[Query]) -> Combined:
    width = max(len(q.columns) for q in queries)
    branches = []
    for query in queries:
        values = [
            f"TO_CHAR(r.{c.lower()}, '{ORACLE_FORMATS[c]}')" if c in ORACLE_FORMATS else f"TO_CHAR(r.{c.lower()})"
            for c in query.columns
        ]
        values += ["NULL"] * (width - len(values))
        select = ", ".join(f"{value} AS c{number}" for number, value in enumerate(values, start=1))
        branches.append(f"SELECT '{query.name}' AS q, {select} FROM ({query.sql}) r")
    return Combined(name, " UNION ALL ".join(branches), tuple(queries))


def split(combined: Combined, rows: Sequence[Sequence[object]]) -> dict[str, dict]:
    """The long-format rows of a combined statement back as each query's {"columns", "rows"}.

    Converted column by column (_from_texts): a sample at 4 instances x 2000
    processes brings some 650 000 values, and one call per value cost about
    twice all the source's own work (bench/README.md).
    """
    return _split(combined, rows)


def _split(combined: Combined, rows: Sequence[Sequence[object]]) -> dict[str, dict]:
    by_name = {q.name: q for q in combined.queries}
    texts: dict[str, list[Sequence[object]]] = {q.name: [] for q in combined.queries}
    names = map(str.strip, map(str, map(operator.itemgetter(0), rows)))
    for name, row in zip(names, rows):
        texts[by_name[name].name].append(row)
    results: dict[str, dict] = {}
    times: dict[str, float] = {}
    for query in combined.queries:
        width = len(query.columns)
        rows_of = texts[query.name]
        if not rows_of:
            values: list[list[object]] = []
        elif min(map(len, rows_of)) > width:
            by_column = list(zip(*rows_of))  # the statement's rows, column by column
            columns = [_from_texts(column, by_column[number], times) for number, column in enumerate(query.columns, 1)]
            values = list(map(list, zip(*columns)))
        else:  # a row narrower than its query (never from the statement combine() writes)
            values = [[_from_text(c, v, times) for c, v in zip(query.columns, row[1:])] for row in rows_of]
        results[query.name] = {"columns": list(query.columns), "rows": values}
    return results


# The characters of a TO_CHAR of a whole NUMBER (no decimal point, no exponent).
WHOLE_NUMBER_CHARACTERS = frozenset("-0123456789")


def _from_texts(column: str, values: Sequence[object], times: dict[str, float]) -> Sequence[object]:
    """_from_text of each value of one column. A column of whole numbers, the most common by far,
    is converted by int() in one C loop: for such text int() gives what _from_text gives."""
    if column in TEXT_COLUMNS:
        return values
    if column == "DB_TIME":  # the same text on every row
        converted = {text: _from_text(column, text, times) for text in set(values)}
        return list(map(converted.__getitem__, values))
    try:
        joined = "".join(cast("Sequence[str]", values))
    except TypeError:  # a NULL (None) among them
        joined = ""
    if joined and WHOLE_NUMBER_CHARACTERS.issuperset(joined):
        try:
            return list(map(int, cast("Sequence[str]", values)))
        except ValueError:  # a "-" inside a number, or an empty text
            pass
    return [_from_text(column, value, times) for value in values]


def _from_text(column: str, value: object, times: Optional[dict[str, float]] = None) -> object:
    """A TO_CHAR value as the JSON value the parsers read: DB_TIME as epoch seconds, numbers as numbers.

    times: DB_TIME texts already converted (one SYSTIMESTAMP per statement, on
    every row: strptime once, not per row).
    """
    if value is None or column in TEXT_COLUMNS:
        return value
    text = str(value).strip()
    if column == "DB_TIME":
        if times is not None and text in times:
            return times[text]
        moment = datetime.datetime.strptime(text, DB_TIME_FORMAT).replace(tzinfo=datetime.timezone.utc)
        if times is not None:
            times[text] = moment.timestamp()
        return moment.timestamp()
    if text.lstrip("-").isdigit():
        return int(text)
    return float(text)


def read_groups(queries: Sequence[Query], inventory: bool) -> list[Combined]:
    """The statements of one sample: the counters, and the inventory when it is due."""
    counters = [q for q in queries if not q.inventory]
    stock = [q for q in queries if q.inventory] if inventory else []
    return [combine(name, group) for name, group in (("counters", counters), ("inventory", stock)) if group]


INVENTORY_MEASUREMENTS = (SERVER_MEASUREMENT, COVERAGE_MEASUREMENT)


def inventory_due(previous: Iterable[Sample], now: float, interval_s: float) -> bool:
    """True when the newest inventory sample (filers, coverage) is older than interval_s (or missing)."""
    times = [s.wall_time for s in previous if s.measurement in INVENTORY_MEASUREMENTS]
    return not times or now - max(times) >= interval_s


class InventoryCadence:
    """When a database target reads its inventory next.

    Seeded from the target's stored samples (cron starts a new process every
    run), then advanced by each read that brought the inventory back.
    """

    def __init__(self, interval_s: float, stored: Iterable[Sample] = ()):
        self.interval_s = interval_s
        self.stored = [s for s in stored if s.measurement in INVENTORY_MEASUREMENTS]

    def due(self, now: float) -> bool:
        return inventory_due(self.stored, now, self.interval_s)

    def read(self, raw: Raw) -> None:
        """Note a read: when it holds inventory rows, the next is due interval_s later."""
        try:
            # Only the inventory's samples: the counters are parsed once, by the source.
            found, _ = samples(raw, "", inventory_only=True)
        except ParseError:
            return
        inventory = [s for s in found if s.measurement in INVENTORY_MEASUREMENTS]
        if inventory:
            self.stored = inventory


# --- parsing result rows ---


class Results:
    """The rows of one query, each a list of values in the order of `columns` (upper case).

    Rows stay lists, read by column index (`index`): a sample at 4 instances x
    2000 processes has some 40 000 rows, and a dict of every column per row
    cost more than all the rest of the parse (bench/README.md).
    """

    def __init__(self, name: str, data: Mapping, problems: list[ParseError], recorded: bool = True):
        """recorded: the rows come from a document's JSON text (a capture), which may be damaged, rather
        than from the reader's own values (oracle_db.split, the simulator), which are scalars by construction."""
        try:
            self.columns = [str(c).upper() for c in data["columns"]]
            rows = [row if type(row) is list else list(row) for row in data["rows"]]
        except (KeyError, TypeError) as error:
            raise ParseError(RESULTS, f'results of {name} need "columns" and "rows": {error}') from None
        self.name = name
        # Column name -> its position in a row (the last one of a name given twice).
        self.index = {column: position for position, column in enumerate(self.columns)}
        # The agent's CLOCK_BOOTTIME in the middle of this query's round trip,
        # when the reader recorded it (oracle_db does; older captures do not).
        clock = data.get("agent_clock")
        self.agent_clock = float(clock) if clock is not None and _finite(clock) else None
        width = len(self.columns)
        if not recorded and set(map(len, rows)) <= {width}:
            self.rows: list[list] = rows
            return
        self.rows = []
        for number, row in enumerate(rows, start=1):
            # Oracle returns scalars only; anything else is a damaged recording.
            if len(row) != width or not CONTAINERS.isdisjoint(map(type, row)):
                problems.append(
                    ParseError(RESULTS, f"row {number} of {name} does not fit its columns {self.columns}: {row}")
                )
                continue
            self.rows.append(row)

    def dicts(self) -> list[dict]:
        """The rows as dicts by column name (for the queries of a few rows)."""
        return [dict(zip(self.columns, row)) for row in self.rows]

    def time(self) -> Optional[float]:
        """The database clock of this query (seconds since the epoch), None without rows."""
        position = self.index.get("DB_TIME")
        if position is None:
            return None
        for row in self.rows:
            value = row[position]
            if _finite(value):
                return float(value)
        return None


# The JSON values that are not scalars (what json.loads makes of arrays and objects).
CONTAINERS = frozenset({list, dict})


def _column(result: Results, name: str) -> Callable[[Sequence], object]:
    """row -> its value of column `name`; None for every row when the query has no such column."""
    position = result.index.get(name)
    if position is None:
        return lambda row: None
    return operator.itemgetter(position)


def _columns(result: Results, names: Sequence[str]) -> tuple[tuple[str, ...], Callable[[Sequence], tuple]]:
    """(the names the query has, row -> their values in that order): one C call per row."""
    present = tuple(name for name in names if name in result.index)
    positions = [result.index[name] for name in present]
    if len(positions) == 1:
        only = positions[0]
        return present, lambda row: (row[only],)
    if not positions:
        return present, lambda row: ()
    return present, operator.itemgetter(*positions)


def _values(result: Results, names: Sequence[str]) -> Callable[[Sequence], tuple]:
    """row -> its values of the columns `names`, None for a column the query does not have."""
    positions = [result.index.get(name) for name in names]
    if None not in positions:
        return operator.itemgetter(*positions)
    return lambda row: tuple(None if position is None else row[position] for position in positions)


def _sum_of_counters(values: Sequence[object]) -> Optional[int]:
    """The sum of the values that are counters (_number), None when none is; summed in C when all are plain ints."""
    if set(map(type, values)) == {int}:
        plain = cast("Sequence[int]", values)
        if min(plain) >= 0:
            return sum(plain)
    numbers = [number for number in map(_number, values) if number is not None]
    return sum(numbers) if numbers else None


def _sum_of_every_counter(values: Sequence[object]) -> Optional[int]:
    """The sum of the values when every one is a counter (_number), else None (and None for no values):
    a sum with a part missing would be published as a fall in its rate."""
    if not values:
        return None
    if set(map(type, values)) == {int}:
        plain = cast("Sequence[int]", values)
        if min(plain) >= 0:
            return sum(plain)
    numbers = [_number(value) for value in values]
    return None if None in numbers else sum(cast("list[int]", numbers))


def _counters(names: Sequence[str], values: Iterable[object]) -> dict[str, int]:
    """{name: value} of the values that are counters (_number); the common plain int is taken as it is."""
    counters = {}
    for name, value in zip(names, values):
        if type(value) is int and value >= 0:
            counters[name] = value
        else:
            number = _number(value)
            if number is not None:
                counters[name] = number
    return counters


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _number(value: object) -> Optional[int]:
    """An Oracle NUMBER counter as an int; None for NULL, negative, infinite or not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or not math.isfinite(value):
        return None
    return int(value)


@dataclass(frozen=True)
class Instance:
    name: str
    startup: str
    # The `host` tag of the instance's points: the host it runs on (B5 of
    # the review: never the agent's host for another node's instance).
    host: str


def host_tag(host_name: object, agent_host: str) -> str:
    """GV$INSTANCE.HOST_NAME as a host tag: the agent's own spelling when it is the agent's host.

    HOST_NAME is what the instance's OS reports (often fully qualified);
    the agent's host may be configured short. The same short name means the
    same host, so its points line up with that host's own points.
    """
    name = str(host_name or "").strip()
    if not name:
        return agent_host
    if name.split(".")[0].lower() == agent_host.split(".")[0].lower():
        return agent_host
    return name


def load(raw: Raw) -> dict:
    """The results document of a reading: as the reader handed it over, or decoded from a capture's text."""
    document = raw.document(RESULTS)
    if not isinstance(document, dict):
        raise ParseError(RESULTS, "not a results document (an object)")
    for member in ("results", "database", "errors"):
        if document.get(member) is not None and not isinstance(document[member], dict):
            raise ParseError(RESULTS, f'"{member}" must be an object')
    if not all(isinstance(v, dict) for v in (document.get("results") or {}).values()):
        raise ParseError(RESULTS, "every query's results must be an object")
    return document


def reason_of(document: Mapping) -> Optional[str]:
    """Why the database (or part of it) could not be read this time; None when all went well."""
    if document.get("down"):
        return str(document["down"])
    errors = document.get("errors") or {}
    return "; ".join(f"{name}: {message}" for name, message in sorted(errors.items())) or None


def failure(samples: list[Sample]) -> Optional[str]:
    """The reason the status sample of a read carries (the source interface's failure hook)."""
    for sample in samples:
        if sample.measurement == STATUS_MEASUREMENT and "error" in sample.gauges:
            return str(sample.gauges["error"])
    return None


Located = tuple[float, dict, rates.Key, tuple[str, ...], Optional[float]]
# The same with the row as its list of values (read through Results.index).
LocatedRow = tuple[float, list, rates.Key, tuple[str, ...], Optional[float]]


@dataclass
class Context:
    """One sample's parsed results and what every per-query parser needs."""

    results: dict[str, Results]
    instances: dict[object, Instance]
    # database (and simulated) tags, common to every point.
    database_tags: rates.Key
    dbid: str
    problems: list[ParseError]
    # ("role", V$DATABASE.DATABASE_ROLE) on the points about a standby's instances (role_tags).
    role_tags: rates.Key = ()

    def located(self, name: str) -> Iterator[Located]:
        """located_rows() with each row as a dict by column name: for the queries of a few rows."""
        columns = self.results[name].columns if name in self.results else []
        for t, row, tags, identity, started in self.located_rows(name):
            yield t, dict(zip(columns, row)), tags, identity, started

    def located_rows(self, name: str) -> Iterator[LocatedRow]:
        """(time, row, tags, identity, started) of each row of a query whose instance is known.

        Samples carry the database clock (UTC epoch seconds) both for the
        interval and as the point's timestamp. The identity holds the
        instance's startup and the instance whose clock was read (a
        reconnect to another RAC node changes the clock: re-baseline).
        `started` is the database clock minus the agent's CLOCK_BOOTTIME at
        the same moment: it moves when the database clock steps (NTP, a VM
        pause), and rates.diff then re-baselines instead of publishing a
        wrong rate (review B8).
        """
        timed = self.timed(name)
        if timed is None:
            return
        result, t, started = timed
        place = self.place(result)
        for row in result.rows:
            found = place(row)
            if found is not None:
                yield t, row, found[0], found[1], started

    def timed(self, name: str) -> Optional[tuple[Results, float, Optional[float]]]:
        """(results, time, started) of a query (see located_rows); None when it has no rows or no clock."""
        result = self.results.get(name)
        t = result.time() if result else None
        if result is None or t is None:
            return None
        return result, t, None if result.agent_clock is None else t - result.agent_clock

    def place(self, result: Results) -> Callable[[Sequence], Optional[tuple[rates.Key, tuple[str, ...]]]]:
        """row -> the (tags, identity) of its instance (see located_rows); None for an instance that left
        between queries. Each (instance, clock instance) pair's are made once: thousands of rows share them."""
        inst_id = _column(result, "INST_ID")
        clock_at = result.index.get("CLOCK_INSTANCE")
        where: dict[tuple, Optional[tuple[rates.Key, tuple[str, ...]]]] = {}

        def of(row: Sequence) -> Optional[tuple[rates.Key, tuple[str, ...]]]:
            clock = "" if clock_at is None else row[clock_at]
            pair = (inst_id(row), clock, type(clock))
            if pair not in where:
                instance = self.instances.get(pair[0])
                if instance is None:
                    where[pair] = None
                else:
                    tags = (("host", instance.host), *self.database_tags, *self.role_tags, ("instance", instance.name))
                    where[pair] = (tags, (self.dbid, instance.startup, str(clock)))
            return where[pair]

        return of


def _pdb_tags(row: Mapping) -> rates.Key:
    """("pdb", CON_ID) for a row of one container of a CDB; nothing for CON_ID 0 (the whole
    CDB, or a non-CDB) or a view without CON_ID (Reference, "CON_ID" column of V$ views)."""
    return _pdb_tags_of(row.get("CON_ID"))


def _pdb_tags_of(value: object) -> rates.Key:
    """_pdb_tags of a row's CON_ID value (None for a view without the column)."""
    con_id = _number(value)
    return (("pdb", str(con_id)),) if con_id else ()


def _status(document: Mapping, context: Context, raw: Raw, agent_host: str) -> list[Sample]:
    """The database's state, published every sample (the agent's host: its view of the database)."""
    gauges: dict[str, rates.Gauge] = {
        "up": not document.get("down"),
        # The same as an integer: Grafana's stat panel reduces numbers, not booleans.
        "reachable": 0 if document.get("down") else 1,
        "instances": len(context.instances),
        "failed_queries": len(document.get("errors") or {}),
    }
    if document.get("version"):
        gauges["version"] = str(document["version"])
        try:
            gauges["release"] = oracle_facts.release_of_version(str(document["version"]))
        except ValueError as error:
            context.problems.append(ParseError(RESULTS, str(error)))
    reason = reason_of(document)
    if reason:
        gauges["error"] = reason
    if document.get("warning"):
        gauges["warning"] = str(document["warning"])
    database = document.get("database") or {}
    for column, field in (("DATABASE_ROLE", "database_role"), ("OPEN_MODE", "open_mode")):
        if database.get(column):
            gauges[field] = str(database[column])
    key = (("host", agent_host), *context.database_tags)
    return [Sample(STATUS_MEASUREMENT, key, raw.time, raw.wall_time, {}, gauges)]


UNKNOWN_PROCESS = "?"


def _io(context: Context) -> list[Sample]:
    """dNFS I/O per process, identified by SPID and SERIAL# (a PNUM reused by a new process re-baselines),
    and per instance the roster of processes this read saw (which process held each PNUM)."""
    found: list[Sample] = []
    rosters: dict[rates.Key, tuple[float, tuple[str, ...], Optional[float], dict[str, str]]] = {}
    result = context.results.get("dnfs_stats")
    if result is None:
        return found
    # One row per process: its values read by column index (Results), the counters in one call.
    names, counter_values = _columns(result, PROCESS_COUNTERS)
    _, other_values = _columns(result, OTHER_OPS)
    spid, serial, pname, program = (_column(result, c) for c in ("SPID", "SERIAL#", "PNAME", "PROGRAM"))
    con_id = _column(result, "CON_ID")
    pdb_tags: dict[tuple[type, object], rates.Key] = {}  # per CON_ID value as read: a few containers
    pnum_at = result.index.get("PNUM")
    sends = _sends_per_process(context.results.get("dnfs_channels"))
    inst_id = _column(result, "INST_ID")
    for t, row, tags, identity, started in context.located_rows("dnfs_stats"):
        if pnum_at is None:
            raise KeyError("PNUM")
        pnum = str(row[pnum_at])
        # (SPID, SERIAL#) from V$PROCESS; "?" where the outer join found none.
        process = (str(spid(row) or UNKNOWN_PROCESS), str(serial(row) or UNKNOWN_PROCESS))
        container = con_id(row)
        pdb = pdb_tags.get((type(container), container))
        if pdb is None:
            pdb = pdb_tags[(type(container), container)] = _pdb_tags_of(container)
        key = (*tags, *pdb, ("pnum", pnum))
        # What the process is (V$PROCESS.PNAME, PROGRAM), for the top processes.
        what: dict[str, rates.Gauge] = {"pname": str(pname(row) or ""), "program": str(program(row) or "")}
        channel = sends.get((inst_id(row), row[pnum_at])) if sends else None
        if channel is not None:
            # The process's sends and channel rows in this read: what new_process_intervals
            # checks a process counted from zero against.
            what["channel_sends"], what["channels"] = channel
        counters = _counters(names, counter_values(row))
        other = _sum_of_every_counter(other_values(row))
        if other is not None:
            counters[OTHER_OPS_COUNTER] = other
        found.append(Sample(IO_MEASUREMENT, key, t, t, counters, what, identity + process, started))
        roster = rosters.get(tags)
        if roster is None:
            roster = rosters[tags] = (t, identity, started, {})
        roster[3][pnum] = "/".join(process)
    for tags, (t, identity, started, processes) in rosters.items():
        gauges: dict[str, rates.Gauge] = {"processes": json.dumps(processes, sort_keys=True)}
        found.append(Sample(ROSTER_MEASUREMENT, tags, t, t, {}, gauges, identity, started))
    return found


def _sends_per_process(channels: Optional[Results]) -> dict[tuple[object, object], list[int]]:
    """(INST_ID, PNUM as read) -> [SENDS summed over the process's channels, its channel rows] of a
    read; empty without the channels query (not granted), a SENDS column, or with a SENDS value that
    is not a counter (a damaged reading: no check rather than a wrong one)."""
    if channels is None or not {"INST_ID", "PNUM", "SENDS"} <= channels.index.keys() or not channels.rows:
        return {}
    keys = list(
        zip(
            map(operator.itemgetter(channels.index["INST_ID"]), channels.rows),
            map(operator.itemgetter(channels.index["PNUM"]), channels.rows),
        )
    )
    sends = list(map(operator.itemgetter(channels.index["SENDS"]), channels.rows))
    if set(map(type, sends)) != {int} or min(sends) < 0:
        return {}
    found: dict[tuple[object, object], list[int]] = {key: [0, rows] for key, rows in Counter(keys).items()}
    for key, count in zip(keys, sends):
        found[key][0] += count
    return found


# [oracle] top_processes's default: the source's when no config says (the simulator, a capture
# replayed without a config).
DEFAULT_TOP_PROCESSES = 10


def _roster(interval: rates.Interval) -> dict[str, str]:
    """PNUM -> "SPID/SERIAL#" of the previous read of a roster interval."""
    try:
        processes = json.loads(str(interval.previous.gauges.get("processes", "{}")))
    except ValueError:
        return {}
    return processes if isinstance(processes, dict) else {}


def new_process_intervals(
    result: rates.DiffResult,
) -> tuple[list[rates.Interval], list[rates.Skip], list[rates.Skip]]:
    """(intervals of the processes known to have started since the previous read, the other processes
    without one, those of them left out by sent_what_it_counted).

    V$DNFS_STATS has one row per Oracle process (Oracle Database Reference,
    V$DNFS_STATS: PNUM "Oracle process number", the V$PROCESS.PID of the
    process), whose counters are taken to start at zero with the process:
    not documented, so each such count is checked against the process's
    channel sends (sent_what_it_counted). A process
    is known to have started after the previous read of its instance when
    that read (same instance startup, same clock) had no row with its PNUM,
    or had one held by another, known process (another SPID or SERIAL#;
    V$PROCESS.SERIAL# is the serial number of the process slot's holder).
    Its whole counts are then the interval's. Any other process without an
    interval (its previous holder unknown, a counter gone backwards) is left
    out, and counted as such.
    """
    rosters = {i.current.key: i for i in result.intervals if i.current.measurement == ROSTER_MEASUREMENT}
    known: list[rates.Interval] = []
    left_out: list[rates.Skip] = []
    # Left out because their counts from zero are more than their channels sent (sent_what_it_counted).
    doubtful: list[rates.Skip] = []
    for skip in result.skips:
        sample = skip.current
        if sample.measurement != IO_MEASUREMENT:
            continue
        tags = dict(sample.key)
        roster = rosters.get(tuple(pair for pair in sample.key if pair[0] not in ("pdb", "pnum")))
        if roster is None:
            continue  # the instance re-baselined as a whole: nothing is published for it
        before = _roster(roster).get(tags["pnum"])
        now = "/".join(sample.identity[-2:])
        replaced = (
            before is not None
            and str(before) != now
            and UNKNOWN_PROCESS not in (*str(before).split("/"), *sample.identity[-2:])
        )
        interval = None
        if (before is None or replaced) and skip.event != rates.COUNTER_RESET:
            interval = rates.interval_from_zero(sample, roster.previous.time)
        if interval is not None and not sent_what_it_counted(interval):
            doubtful.append(skip)
            interval = None
        if interval is None:
            left_out.append(skip)
        else:
            known.append(interval)
    return known, left_out, doubtful


# Slack in sent_what_it_counted for the two views being read one after the other (V$ views are
# not read consistent: Oracle Database Reference, "About Dynamic Performance Views").
SENDS_SLACK = 0.01


def sent_what_it_counted(interval: rates.Interval) -> bool:
    """False when a process counted from zero counted more NFS reads and writes than its channels
    sent in the same interval: its counters did not start at zero with it (dba-review P1).

    That a new process's V$DNFS_STATS counters start at zero is not documented (the Reference
    describes PNUM only as the process number). V$DNFS_CHANNELS counts SENDS per process and
    channel "since the last select" (Oracle Database Reference, V$DNFS_CHANNELS), which the agent
    made at the previous read: for a process that started since, they are everything it sent.
    Each NFS READ or WRITE call is at least one send, so its counts from zero cannot exceed its
    sends, whatever the counters' reset rules; a count carried over from the slot's previous
    holder does. One send per channel row, and SENDS_SLACK, allow for rounding and for the two
    views being read one after the other. True when the channels were not read (no check).
    """
    gauges = interval.current.gauges
    sends, channels = gauges.get("channel_sends"), gauges.get("channels")
    if not isinstance(sends, int) or not isinstance(channels, int):
        return True
    calls = interval.deltas.get("NFS_READ", 0) + interval.deltas.get("NFS_WRITE", 0)
    return calls <= sends * (1 + SENDS_SLACK) + channels


def _channels(context: Context) -> list[Sample]:
    """Channels: interval counts since the last select, summed per path; each path's share of its filer's sends."""
    paths: dict[rates.Key, dict[str, int]] = {}
    located_paths: dict[rates.Key, tuple[float, tuple[str, ...], Optional[float]]] = {}
    timed = context.timed("dnfs_channels")
    if timed is None:
        return []
    result, t, started = timed
    for column in ("SVRNAME", "PATH"):
        if result.rows and column not in result.index:
            raise KeyError(column)
    # A row per process and channel (tens of thousands): rows are first grouped by the values
    # that place them (one C call per row), then each group's counts are summed column by column.
    group_of = _values(result, ("INST_ID", "CLOCK_INSTANCE", "SVRNAME", "PATH", "LOCAL"))
    names, count_values = _columns(result, CHANNEL_COUNTS)
    groups: dict[tuple, list[tuple]] = {}
    last_row: dict[tuple, int] = {}
    for number, row in enumerate(result.rows):
        group = group_of(row)
        rows = groups.get(group)
        if rows is None:
            rows = groups[group] = []
        rows.append(count_values(row))
        last_row[group] = number
    place = context.place(result)
    # Where a path was read is where its latest row was (a path's groups differ only in damaged readings).
    latest: dict[rates.Key, int] = {}
    for group, rows in groups.items():
        placed = place(result.rows[last_row[group]])
        if placed is None:  # an instance that left between queries
            continue
        tags, identity = placed
        _, _, server, path, local = group
        key = (*tags, ("server", str(server)), ("path", str(path)), ("local", str(local or "")))
        counts = paths.setdefault(key, {"processes": 0})
        counts["processes"] += len(rows)
        for name, values in zip(names, zip(*rows)):
            total = _sum_of_counters(values)
            if total is not None:
                counts[name] = counts.get(name, 0) + total
        if last_row[group] > latest.get(key, -1):
            latest[key] = last_row[group]
            located_paths[key] = (t, identity, started)
    server_sends: dict[rates.Key, int] = {}
    for key, counts in paths.items():
        server_sends[key[:-2]] = server_sends.get(key[:-2], 0) + counts.get("SENDS", 0)
    found = []
    for key, counts in paths.items():
        gauges: dict[str, rates.Gauge] = {f"interval_{k.lower()}": v for k, v in counts.items() if k != "processes"}
        gauges["processes"] = counts["processes"]
        share = rates.percent(counts.get("SENDS", 0), server_sends[key[:-2]])
        if share is not None:
            gauges["share_pct"] = share
        t, identity, started = located_paths[key]
        found.append(Sample(CHANNEL_MEASUREMENT, key, t, t, {}, gauges, identity, started))
    return found


def _servers(context: Context) -> list[Sample]:
    """Filers and exports the instances use, with their open files (inventory)."""
    files = {}
    if "dnfs_files" in context.results:
        files = {(r["INST_ID"], r["SVR_ID"]): r for r in context.results["dnfs_files"].dicts()}
    found = []
    for t, row, tags, identity, started in context.located("dnfs_servers"):
        gauges: dict[str, Optional[rates.Gauge]] = {
            "wtmax_bytes": _number(row.get("WTMAX")),
            "rtmax_bytes": _number(row.get("RTMAX")),
            "nfs_port": _number(row.get("NFSPORT")),
        }
        if row.get("NFSVERSION"):
            gauges["nfs_version"] = str(row["NFSVERSION"])
        opened = files.get((row["INST_ID"], row["ID"]), {})
        gauges["open_files"] = _number(opened.get("FILES")) or 0
        gauges["open_file_bytes"] = _number(opened.get("BYTES")) or 0
        key = (*tags, ("server", str(row["SVRNAME"])), ("export", str(row["DIRNAME"])))
        present = {k: v for k, v in gauges.items() if v is not None}
        found.append(Sample(SERVER_MEASUREMENT, key, t, t, {}, present, identity, started))
    return found


def _events(context: Context) -> list[Sample]:
    """I/O, commit and temp wait events (instance-wide: V$SYSTEM_EVENT read from the root covers every container)."""
    found = []
    for t, row, tags, identity, started in context.located("system_event"):
        counters = {c: v for c, v in ((c, _number(row.get(c))) for c in EVENT_COUNTERS) if v is not None}
        key = (*tags, ("event", str(row["EVENT"])))
        found.append(Sample(EVENT_MEASUREMENT, key, t, t, counters, {}, identity, started))
    return found


def _functions(context: Context) -> list[Sample]:
    """Disk I/O per database function (GV$IOSTAT_FUNCTION): who does the I/O, dNFS or not."""
    found = []
    for t, row, tags, identity, started in context.located("iostat_function"):
        counters = {c: v for c, v in ((c, _number(row.get(c))) for c in FUNCTION_COUNTERS) if v is not None}
        key = (*tags, *_pdb_tags(row), ("function", str(row["FUNCTION_NAME"])))
        found.append(Sample(FUNCTION_MEASUREMENT, key, t, t, counters, {}, identity, started))
    return found


def _filer_files(context: Context) -> list[Sample]:
    """Each dNFS file's V$IOSTAT_FILE counters, keyed by its filer (inventory cadence)."""
    found = []
    for t, row, tags, identity, started in context.located("filer_files"):
        counters = {c: v for c, v in ((c, _number(row.get(c))) for c in FILE_COUNTERS) if v is not None}
        key = (
            *tags,
            ("server", str(row["SVRNAME"])),
            ("file_type", str(row["FILETYPE_NAME"])),
            ("file_no", str(row["FILE_NO"])),
        )
        found.append(Sample(FILER_FILE_MEASUREMENT, key, t, t, counters, {}, identity, started))
    return found


def filer_fields(summed: rates.Aggregate) -> dict[str, rates.Gauge]:
    """Per filer: requests per second and the average service time of each kind of request."""
    d = summed.deltas
    out: dict[str, Optional[rates.Gauge]] = {
        "small_read_reqs_per_s": summed.rate("SMALL_READ_REQS"),
        "small_read_avg_ms": rates.mean_per_event(d.get("SMALL_READ_SERVICETIME"), d.get("SMALL_READ_REQS")),
        "small_sync_read_avg_ms": rates.mean_per_event(d.get("SMALL_SYNC_READ_LATENCY"), d.get("SMALL_SYNC_READ_REQS")),
        "large_read_reqs_per_s": summed.rate("LARGE_READ_REQS"),
        "large_read_avg_ms": rates.mean_per_event(d.get("LARGE_READ_SERVICETIME"), d.get("LARGE_READ_REQS")),
        "small_write_reqs_per_s": summed.rate("SMALL_WRITE_REQS"),
        "small_write_avg_ms": rates.mean_per_event(d.get("SMALL_WRITE_SERVICETIME"), d.get("SMALL_WRITE_REQS")),
        "large_write_reqs_per_s": summed.rate("LARGE_WRITE_REQS"),
        "large_write_avg_ms": rates.mean_per_event(d.get("LARGE_WRITE_SERVICETIME"), d.get("LARGE_WRITE_REQS")),
        "files": len(summed.members),
        "interval_s": summed.dt,
    }
    return {k: v for k, v in out.items() if v is not None}


def _histogram(context: Context) -> list[Sample]:
    """One sample per (instance, event): its buckets as counters named by their upper bound in µs.

    V$EVENT_HISTOGRAM(_MICRO) lists only the buckets hit since startup, so a
    bucket absent from the previous sample of the same identity was zero
    then: aggregate() counts it from zero (the first outliers in a new, slow
    bucket are exactly what one wants to see; review B2).
    """
    buckets: dict[rates.Key, dict[str, int]] = {}
    located: dict[rates.Key, tuple[float, tuple[str, ...], Optional[float]]] = {}
    for t, row, tags, identity, started in context.located("event_histogram"):
        if "WAIT_TIME_MICRO" in row:
            bound = _number(row["WAIT_TIME_MICRO"])
        else:
            milli = _number(row.get("WAIT_TIME_MILLI"))
            bound = None if milli is None else milli * 1000
        count = _number(row.get("WAIT_COUNT"))
        if bound is None or count is None:
            context.problems.append(ParseError(RESULTS, f"event_histogram row without a bucket bound or count: {row}"))
            continue
        key = (*tags, ("event", str(row["EVENT"])))
        buckets.setdefault(key, {})[str(bound)] = count
        located[key] = (t, identity, started)
    # An event of an instance with no bucket yet (no wait since startup): an empty sample, so that
    # the buckets of its first waits count from zero at the next read instead of starting a baseline.
    for key, where in _histogram_instances(context).items():
        for event in HISTOGRAM_EVENTS:
            buckets.setdefault((*key, ("event", event)), {})
            located.setdefault((*key, ("event", event)), where)
    return [
        Sample(HISTOGRAM_MEASUREMENT, key, located[key][0], located[key][0], counts, {}, *located[key][1:])
        for key, counts in buckets.items()
    ]


def _histogram_instances(context: Context) -> dict[rates.Key, tuple[float, tuple[str, ...], Optional[float]]]:
    """The instances the histogram query read, by their tags: (time, identity, started). Those whose
    V$SYSTEM_EVENT rows came back with it (the same scope), at the histogram query's own clock."""
    timed = context.timed("event_histogram")
    if timed is None:
        return {}
    result, t, started = timed
    place, template, at = context.place(result), list(result.rows[0]), result.index["INST_ID"]
    found = {}
    for inst_id in {row.get("INST_ID") for _, row, _, _, _ in context.located("system_event")}:
        template[at] = inst_id
        where = place(template)
        if where is not None:
            found[where[0]] = (t, where[1], started)
    return found


def _coverage(context: Context) -> list[Sample]:
    """Data files per file type (and container), and how many dNFS serves (V$IOSTAT_FILE.ACCESS_METHOD)."""
    per_type: dict[rates.Key, dict[str, int]] = {}
    located: dict[rates.Key, tuple[float, tuple[str, ...], Optional[float]]] = {}
    for t, row, tags, identity, started in context.located("iostat_file"):
        key = (*tags, *_pdb_tags(row), ("file_type", str(row["FILETYPE_NAME"])))
        counts = per_type.setdefault(key, {"files": 0, "dnfs_files": 0})
        number = _number(row.get("FILES")) or 0
        counts["files"] += number
        if row.get("ACCESS_METHOD") == "DNFS_LIB":
            counts["dnfs_files"] += number
        located[key] = (t, identity, started)
    found = []
    for key, counts in per_type.items():
        gauges: dict[str, rates.Gauge] = dict(counts)
        pct = rates.percent(counts["dnfs_files"], counts["files"])
        if pct is not None:
            gauges["dnfs_pct"] = pct
        t, identity, started = located[key]
        found.append(Sample(COVERAGE_MEASUREMENT, key, t, t, {}, gauges, identity, started))
    return found


# Every query's parser, in the order their samples are listed.
PARSERS = (_io, _channels, _servers, _filer_files, _events, _functions, _histogram, _coverage)
# The queries the inventory's samples are made of (_servers, _coverage), and the instances they name.
INVENTORY_QUERIES = ("instances", "dnfs_servers", "dnfs_files", "iostat_file")


def last_known_name(previous: Iterable[Sample]) -> str:
    """The database tag of the newest status sample: the DB_UNIQUE_NAME the database last answered
    with, which a sample that could not reach it carries on (it replaces the up sample in the state:
    same key); the configured target only if the database never answered."""
    status = [s for s in previous if s.measurement == STATUS_MEASUREMENT]
    if not status:
        return ""
    return dict(max(status, key=lambda s: s.time).key).get("database", "")


def name_down_reading(raw: Raw, known_name: str) -> str:
    """Give a reading that could not ask the database the name it last answered with; the name to keep."""
    document = raw.documents.get(RESULTS)
    if not isinstance(document, dict):
        return known_name
    database = document.get("database") or {}
    if document.get("down") or not database:
        if known_name:
            document["known_name"] = known_name
        return known_name
    return str(database.get("DB_UNIQUE_NAME") or database.get("NAME") or known_name)


def role_tags(database: Mapping) -> rates.Key:
    """("role", DATABASE_ROLE) for a database that is not the primary (Reference, V$DATABASE:
    PHYSICAL STANDBY, LOGICAL STANDBY, SNAPSHOT STANDBY, FAR SYNC), so that a standby's I/O (redo
    apply on a physical standby) is told apart from the primary's on every point about its
    instances; none for a primary (its series are as they were) or a reader that did not say. The
    status point carries the role as a field: its key stays the same when the database is down."""
    role = str(database.get("DATABASE_ROLE") or "").strip()
    return (("role", role),) if role and role != "PRIMARY" else ()


def samples(raw: Raw, host: str, inventory_only: bool = False) -> tuple[list[Sample], list[ParseError]]:
    """The samples of one read: each query's rows through its own parser.

    inventory_only: the status and the inventory's samples only (what
    InventoryCadence needs), without the cost of the counters' rows.
    """
    document = load(raw)
    database = document.get("database") or {}
    # When the database could not be asked, the name it last answered with (kept in the
    # target's state, see name_down_reading) or else the configured target names it: the
    # status point always has a `database` tag, the same one as when it is up (the
    # dashboards and alert rules select on it; a second name would hide the outage).
    db_name = str(
        database.get("DB_UNIQUE_NAME")
        or database.get("NAME")
        or document.get("known_name")
        or document.get("target")
        or ""
    )
    database_tags: rates.Key = (("database", db_name),)
    if document.get("kind") == "simulated":
        database_tags += (("simulated", "true"),)
    problems: list[ParseError] = []
    # A document the reader handed over holds its own values; one decoded from a capture's text may be damaged.
    recorded = RESULTS not in raw.documents
    results = {
        name: Results(name, data, problems, recorded)
        for name, data in (document.get("results") or {}).items()
        if not inventory_only or name in INVENTORY_QUERIES
    }
    instances: dict[object, Instance] = {}
    if "instances" in results:
        for row in results["instances"].dicts():
            instances[row["INST_ID"]] = Instance(
                str(row["INSTANCE_NAME"]), str(row["STARTUP_TIME"]), host_tag(row.get("HOST_NAME"), host)
            )
    context = Context(
        results,
        instances,
        database_tags,
        str(database.get("DBID", "")),
        problems,
        role_tags(database),
    )
    found = _status(document, context, raw, host)
    parsers = (_servers, _coverage) if inventory_only else PARSERS
    for parse in parsers:
        found.extend(parse(context))
    return found, problems


# --- points ---


def _instance_tags(sample: Sample) -> tuple[tuple[str, str], ...]:
    """The key of a process's sample without its pnum (which _io puts last)."""
    key = sample.key
    if key and key[-1][0] == "pnum":
        return key[:-1]
    return tuple(pair for pair in key if pair[0] != "pnum")


def _place_of_process(sample: Sample) -> tuple[rates.Key, str]:
    """(the tags of its instance, without pdb: _io puts it just before the pnum; its pnum)."""
    tags = _instance_tags(sample)
    if tags and tags[-1][0] == "pdb":
        tags = tags[:-1]
    key = sample.key
    return tags, key[-1][1] if key and key[-1][0] == "pnum" else dict(key)["pnum"]


def io_fields(summed: rates.Aggregate, processes: int) -> dict[str, rates.Gauge]:
    d = summed.deltas
    read_bytes, write_bytes = summed.rate("NFS_READBYTES"), summed.rate("NFS_WRITEBYTES")
    out: dict[str, Optional[rates.Gauge]] = {
        "read_iops": summed.rate("NFS_READ"),
        "write_iops": summed.rate("NFS_WRITE"),
        "total_iops": None
        if "NFS_READ" not in d or "NFS_WRITE" not in d
        else rates.per_second(d["NFS_READ"] + d["NFS_WRITE"], summed.dt),
        "read_mib_per_s": None if read_bytes is None else read_bytes / 1048576,
        "write_mib_per_s": None if write_bytes is None else write_bytes / 1048576,
        "avg_read_kib": None
        if "NFS_READBYTES" not in d
        else rates.mean_per_event(d["NFS_READBYTES"] / 1024, d.get("NFS_READ")),
        "avg_write_kib": None
        if "NFS_WRITEBYTES" not in d
        else rates.mean_per_event(d["NFS_WRITEBYTES"] / 1024, d.get("NFS_WRITE")),
        "other_ops_per_s": summed.rate(OTHER_OPS_COUNTER),
        "getattr_per_s": summed.rate("NFS_GETATTR"),
        "commit_per_s": summed.rate("NFS_COMMIT"),
        "processes": processes,
    }
    return {k: v for k, v in out.items() if v is not None}


RECONNECT_COUNTS = ("interval_reco", "interval_spreco", "interval_dpreco")


def _reconnects(gauges: Mapping[str, rates.Gauge]) -> Optional[int]:
    """Reconnections in the interval: RECO (11.2.0.4) or SPRECO + DPRECO (12.1.0.2+)."""
    present = [int(gauges[k]) for k in RECONNECT_COUNTS if k in gauges]
    return sum(present) if present else None


def fields(interval: rates.Interval) -> dict[str, rates.Gauge]:
    """Per-key figures of the channels and events (I/O is summed, histograms split, states published as read)."""
    sample, d, g = interval.current, interval.deltas, interval.current.gauges
    if sample.measurement == CHANNEL_MEASUREMENT:
        out: dict[str, Optional[rates.Gauge]] = {
            "sends_per_s": None
            if "interval_sends" not in g
            else rates.per_second(float(g["interval_sends"]), interval.dt),
            "recvs_per_s": None
            if "interval_recvs" not in g
            else rates.per_second(float(g["interval_recvs"]), interval.dt),
            "pings_per_s": None
            if "interval_pings" not in g
            else rates.per_second(float(g["interval_pings"]), interval.dt),
            "reconnects": _reconnects(g),
            "sends": g.get("interval_sends"),
            "share_pct": g.get("share_pct"),
            "processes": g.get("processes"),
        }
    elif sample.measurement == EVENT_MEASUREMENT:
        out = {
            "waits_per_s": interval.rate("TOTAL_WAITS"),
            "avg_latency_us": rates.mean_per_event(d.get("TIME_WAITED_MICRO"), d.get("TOTAL_WAITS")),
            "fg_waits_per_s": interval.rate("TOTAL_WAITS_FG"),
            "fg_avg_latency_us": rates.mean_per_event(d.get("TIME_WAITED_MICRO_FG"), d.get("TOTAL_WAITS_FG")),
            "wait_time_us_per_s": interval.rate("TIME_WAITED_MICRO"),
        }
    elif sample.measurement == FUNCTION_MEASUREMENT:
        out = {
            "small_read_reqs_per_s": interval.rate("SMALL_READ_REQS"),
            "small_write_reqs_per_s": interval.rate("SMALL_WRITE_REQS"),
            "large_read_reqs_per_s": interval.rate("LARGE_READ_REQS"),
            "large_write_reqs_per_s": interval.rate("LARGE_WRITE_REQS"),
            "small_read_mb_per_s": interval.rate("SMALL_READ_MEGABYTES"),
            "small_write_mb_per_s": interval.rate("SMALL_WRITE_MEGABYTES"),
            "large_read_mb_per_s": interval.rate("LARGE_READ_MEGABYTES"),
            "large_write_mb_per_s": interval.rate("LARGE_WRITE_MEGABYTES"),
            "waits_per_s": interval.rate("NUMBER_OF_WAITS"),
            "avg_wait_ms": rates.mean_per_event(d.get("WAIT_TIME"), d.get("NUMBER_OF_WAITS")),
        }
    else:
        raise ValueError(f"{sample.measurement} is not published per interval")
    return {k: v for k, v in out.items() if v is not None}


def _histogram_points(interval: rates.Interval) -> list[Point]:
    """One point per bucket of an (instance, event) histogram; new buckets count from zero."""
    deltas = rates.deltas_counting_new_from_zero(interval)
    wall_ns = round(interval.current.wall_time * 1e9)
    return [
        Point(
            HISTOGRAM_MEASUREMENT,
            (*interval.current.key, ("le_us", bound)),
            {"waits_per_s": rates.per_second(delta, interval.dt)},
            wall_ns,
        )
        for bound, delta in sorted(deltas.items(), key=lambda item: int(item[0]))
    ]


def process_name(pname: str) -> str:
    """The `process` tag of a top process: V$PROCESS.PNAME (DBW0, LGWR, P000, ...), which only
    background and parallel server processes have; "foreground" for the others (server processes
    of sessions: RMAN channels, Data Pump workers' sessions, users)."""
    return pname or "foreground"


# The dNFS operations a top process is ranked by (bytes are not operations).
OPERATIONS = ("NFS_READ", "NFS_WRITE", OTHER_OPS_COUNTER)


def _top_processes(io: list[rates.Interval], new_ids: set[int], limit: int) -> list[Point]:
    """The busiest processes of each instance by dNFS operations in the interval (review C6).

    Ranked 1..limit per instance ([oracle] top_processes); series are (instance, rank, process
    name), so their number stays within N x the process names that reach the top, however many
    processes come and go. A process counted from zero (new in the interval) takes part.
    """
    by_instance: dict[rates.Key, list[tuple[int, str, rates.Interval]]] = {}
    for interval in io:
        # A process without a delta of each (a NULL in its row, or the first interval after
        # an upgrade from per-operation counters) would be ranked too low: it sits this one out.
        if not all(name in interval.deltas for name in OPERATIONS):
            continue
        ops = sum(map(interval.deltas.__getitem__, OPERATIONS))
        if ops > 0:
            tags, pnum = _place_of_process(interval.current)
            by_instance.setdefault(tags, []).append((ops, pnum, interval))
    points = []
    for tags, busy in by_instance.items():
        # The first `limit` of the order sorted() would give (heapq.nsmallest: the same, without sorting all).
        ranked = heapq.nsmallest(limit, busy, key=lambda b: (-b[0], int(b[1]) if b[1].isdigit() else -1, b[1]))
        for rank, (ops, pnum, interval) in enumerate(ranked, start=1):
            sample = interval.current
            values: dict[str, Optional[rates.Gauge]] = {
                "ops_per_s": rates.per_second(ops, interval.dt),
                "read_iops": interval.rate("NFS_READ"),
                "write_iops": interval.rate("NFS_WRITE"),
                "read_mib_per_s": None
                if "NFS_READBYTES" not in interval.deltas
                else rates.per_second(interval.deltas["NFS_READBYTES"] / 1048576, interval.dt),
                "write_mib_per_s": None
                if "NFS_WRITEBYTES" not in interval.deltas
                else rates.per_second(interval.deltas["NFS_WRITEBYTES"] / 1048576, interval.dt),
                "pnum": int(pnum) if pnum.isdigit() else None,
                "spid": sample.identity[-2],
                "program": str(sample.gauges.get("program", "")) or None,
                "new_process": id(interval) in new_ids,
            }
            key = (*tags, ("rank", str(rank)), ("process", process_name(str(sample.gauges.get("pname", "")))))
            present = {k: v for k, v in values.items() if v is not None}
            points.append(Point(TOP_PROCESS_MEASUREMENT, key, present, round(sample.wall_time * 1e9)))
    return points


# The tags of a file's sample that its filer's point does not carry.
FILE_TAGS = ("file_type", "file_no")
# Measurements whose points are not one per key and interval (summed, states, or not published).
NOT_PER_INTERVAL = (
    IO_MEASUREMENT,
    ROSTER_MEASUREMENT,
    FILER_FILE_MEASUREMENT,
    STATUS_MEASUREMENT,
    *INVENTORY_MEASUREMENTS,
)


def aggregate(
    result: rates.DiffResult, current: list[Sample], top_processes: int = DEFAULT_TOP_PROCESSES
) -> list[Point]:
    points: list[Point] = []
    for sample in current:
        # States, not rates: published from every read that has them (the
        # inventory's from its first read on, every inventory_interval_s).
        if sample.measurement in (STATUS_MEASUREMENT, *INVENTORY_MEASUREMENTS):
            points.append(Point(sample.measurement, sample.key, dict(sample.gauges), round(sample.wall_time * 1e9)))
    new, left_out, doubtful = new_process_intervals(result)
    new_ids = {id(interval) for interval in new}
    io = [i for i in result.intervals if i.current.measurement == IO_MEASUREMENT] + new
    for tags, summed in rates.aggregate(io, lambda i: _instance_tags(i.current)).items():
        # Processes that did dNFS I/O in the interval (V$DNFS_STATS has a row,
        # mostly zeros, for every process; review B6).
        active = sum(1 for member in summed.members if any(member.deltas.values()))
        values = io_fields(summed, active)
        values["new_processes"] = sum(1 for member in summed.members if id(member) in new_ids)
        values["processes_left_out"] = sum(1 for skip in left_out if _instance_tags(skip.current) == tags)
        values["new_processes_doubtful"] = sum(1 for skip in doubtful if _instance_tags(skip.current) == tags)
        points.append(Point(IO_MEASUREMENT, tags, values, round(summed.members[0].current.wall_time * 1e9)))
    points.extend(_top_processes(io, new_ids, top_processes))
    files = [i for i in result.intervals if i.current.measurement == FILER_FILE_MEASUREMENT]
    per_filer = rates.aggregate(files, lambda i: tuple(pair for pair in i.current.key if pair[0] not in FILE_TAGS))
    for tags, summed in per_filer.items():
        wall_ns = round(summed.members[0].current.wall_time * 1e9)
        points.append(Point(FILER_LATENCY_MEASUREMENT, tags, filer_fields(summed), wall_ns))
    for interval in result.intervals:
        measurement = interval.current.measurement
        if measurement == HISTOGRAM_MEASUREMENT:
            points.extend(_histogram_points(interval))
        elif measurement not in NOT_PER_INTERVAL:
            values = fields(interval)
            if values:
                points.append(Point(measurement, interval.current.key, values, round(interval.current.wall_time * 1e9)))
    return points


def parse(raw: Raw, host: str) -> Parsed:
    """The contract's parse step (dnfsmon.sources.base): the samples, their problems
    and what could not be read this time (the status sample carries it)."""
    found, problems = samples(raw, host)
    return Parsed(found, problems, failure(found))


def publish(result: rates.DiffResult, current: list[Sample], top_processes: int = DEFAULT_TOP_PROCESSES) -> list[Point]:
    """The contract's publish step: aggregate()."""
    return aggregate(result, current, top_processes)


class OracleSource(Source):
    """The database's source, with its options from [oracle] (top_processes: how many of each
    instance's busiest processes are published). The defaults apply to the simulator's target
    and to a capture replayed without a config."""

    name = NAME
    measurements = MEASUREMENTS

    def __init__(self, top_processes: int = DEFAULT_TOP_PROCESSES):
        self.top_processes = top_processes

    def parse(self, raw: Raw, host: str) -> Parsed:
        return parse(raw, host)

    def publish(self, result: rates.DiffResult, current: list[Sample]) -> list[Point]:
        return publish(result, current, self.top_processes)


# The source with the defaults (tests, the bench, a capture replayed without a config).
SOURCE = OracleSource()


def build(config: Config) -> OracleSource:
    """The source as [oracle] configures it (the defaults for the simulator, or no [oracle])."""
    return of_settings(config.oracle)


def of_settings(settings: Optional[OracleSettings]) -> OracleSource:
    """The source as one database's options configure it (None: the defaults)."""
    return OracleSource() if settings is None else OracleSource(settings.top_processes)
