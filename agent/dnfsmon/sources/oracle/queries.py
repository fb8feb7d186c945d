"""The SQL texts the agent sends, built from the columns the connected release has
(dnfsmon.oracle_facts names them per release)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ... import oracle_facts
from .names import (
    AGENT_EVENTS,
    CHANNEL_COUNTS,
    FILE_COUNTERS,
    FUNCTION_COUNTERS,
    HISTOGRAM_EVENTS,
    OTHER_OPS,
    OTHER_OPS_COUNTER,
    PROCESS_COUNTERS,
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


def build_queries(available: Mapping[str, set[str]], scope: str = "instance", mounted: bool = False) -> list[Query]:
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

    `mounted`: the database is mounted, not open (a standby read AS SYSDG). The channels are then
    read as the view's plain rows, one per process and channel, with no sort: before the database
    is open only in-memory sorts are supported, and a sort that spills fails with ORA-01220
    (Database Error Messages, ORA-01220: "A query issued against a fixed table or view required a
    temporary segment for sorting before the database was open"), so the analytic functions of
    the open database's statement could fail on a large instance. The parser sums those rows as
    the statement would (rows.group_channels). The same holds for the inventory's DISTINCT and
    GROUP BY: V$DNFS_FILES and V$IOSTAT_FILE are read as plain rows and counted by the parser
    (rows.group_files; V$IOSTAT_FILE in parsers._coverage), and the per-filer file latency is not read.
    Nor is anything joined: V$DNFS_STATS and V$PROCESS are read apart ("processes") and matched by
    the parser (parsers._io), as the open statement's outer join matches them.
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
        counters: Sequence[str] = _pick(has("GV$DNFS_STATS"), PROCESS_COUNTERS)
        other = _pick(has("GV$DNFS_STATS"), OTHER_OPS)
        container = _pick(has("GV$DNFS_STATS"), ["CON_ID"])
        process = source("GV$PROCESS", PROCESS_COLUMNS)
        # The other operations as one sum, computed in the statement: every one of them is read from
        # the view, but a sample brings 7 counters per process back rather than 25 (4 instances x 2000
        # processes: bench/RESULTS.md). NUMBER arithmetic is exact, and a NULL operation makes the sum
        # NULL (SQL Language Reference, "Nulls"), as a sum with a part missing must not be published.
        summed = " + ".join("s." + c.lower() for c in other) or "NULL"
        stats_columns = list(dict.fromkeys(["PNUM", *counters, *other, *container]))
        if mounted:
            # Mounted: each view read as its plain rows, matched by the parser on (INST_ID, PNUM = PID)
            # (parsers._io), not joined. A join's hash table is a work area that may spill to temp
            # (Database Performance Tuning Guide, "Tuning the Program Global Area": work areas of sorts
            # and hash joins), and before the database is open a spill of a sort fails (ORA-01220); a
            # hash join's is not documented either way. V$ views are not read consistent ("About
            # Dynamic Performance Views"), joined or not: the two reads are as near as one statement's
            # two fixed-table scans were.
            sql = (
                f"SELECT s.inst_id, s.pnum, {', '.join('s.' + c.lower() for c in [*counters, *container])}, "
                f"({summed}) AS nfs_other_ops, {DB_TIME} FROM {source('GV$DNFS_STATS', stats_columns)} s"
            )
            columns = ("INST_ID", "PNUM", *counters, *container, OTHER_OPS_COUNTER, *CLOCK_COLUMNS)
            queries.append(Query("dnfs_stats", sql, columns, views("GV$DNFS_STATS"), local))
            queries.append(simple("processes", "GV$PROCESS", ["INST_ID", *PROCESS_COLUMNS]))
        else:
            sql = (
                "SELECT s.inst_id, s.pnum, p.spid, p.serial#, p.pname, p.program, "
                f"{', '.join('s.' + c.lower() for c in [*counters, *container])}, ({summed}) AS nfs_other_ops, "
                f"{DB_TIME} FROM {source('GV$DNFS_STATS', stats_columns)} s "
                f"LEFT OUTER JOIN {process} p ON p.inst_id = s.inst_id AND p.pid = s.pnum"
            )
            columns = (
                "INST_ID",
                "PNUM",
                "SPID",
                "SERIAL#",
                "PNAME",
                "PROGRAM",
                *counters,
                *container,
                OTHER_OPS_COUNTER,
                *CLOCK_COLUMNS,
            )
            queries.append(Query("dnfs_stats", sql, columns, views("GV$DNFS_STATS", "GV$PROCESS"), local))
    if has("GV$DNFS_CHANNELS") and mounted:
        channel = has("GV$DNFS_CHANNELS")
        columns = ["INST_ID", "PNUM", "SVRNAME", "PATH", *_pick(channel, ["LOCAL", *CHANNEL_COUNTS])]
        queries.append(simple("dnfs_channels", "GV$DNFS_CHANNELS", columns))
    elif has("GV$DNFS_CHANNELS"):
        queries.append(_channels_query(has("GV$DNFS_CHANNELS"), source, views, local))
    if has("GV$DNFS_SERVERS"):
        version = _pick(has("GV$DNFS_SERVERS"), ["NFSVERSION"])
        columns = ["INST_ID", "ID", "SVRNAME", "DIRNAME", "NFSPORT", *version, "WTMAX", "RTMAX"]
        queries.append(simple("dnfs_servers", "GV$DNFS_SERVERS", columns, inventory=True))
    if has("GV$DNFS_FILES") and mounted:
        # Mounted: the view's plain rows, one per process and file; the parser counts each file once
        # per filer (rows.group_files), as the open database's DISTINCT and GROUP BY do, whose sort
        # may not spill to disk before the database is open (ORA-01220).
        columns = ["INST_ID", "SVR_ID", "FILENAME", "FILESIZE"]
        queries.append(simple("dnfs_files", "GV$DNFS_FILES", columns, inventory=True))
    elif has("GV$DNFS_FILES"):
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
    if "ACCESS_METHOD" in has("GV$IOSTAT_FILE") and mounted:
        # Mounted: a row per file, counted by the parser (parsers._coverage): no GROUP BY sort.
        columns = ["INST_ID", "FILETYPE_NAME", "ACCESS_METHOD", *_pick(has("GV$IOSTAT_FILE"), ["CON_ID"])]
        queries.append(simple("iostat_file", "GV$IOSTAT_FILE", columns, inventory=True))
    elif "ACCESS_METHOD" in has("GV$IOSTAT_FILE"):
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
    # Mounted: not read. It names each file's filer through a DISTINCT over V$DNFS_FILES and three
    # joins, a sort and workareas that may not spill to disk before the database is open (ORA-01220);
    # the per-filer latency is left out there (docs/oracle.md, "Standbys").
    if all(has(view) for view in filer_views) and not mounted:
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


# The channels query's result columns: per process (where PROCESS_CHANNELS is not NULL) and per path
# (where CHANNELS is not NULL); the counts of a path row are its sums over every process's channel.
PROCESS_CHANNEL_COLUMNS = ("PNUM", "PROCESS_SENDS", "PROCESS_CHANNELS")
# What a process's V$PROCESS row gives its V$DNFS_STATS row (PID: the PNUM it is read under).
PROCESS_COLUMNS = ("PID", "SPID", "SERIAL#", "PNAME", "PROGRAM")
PATH_COUNT_COLUMN = "CHANNELS"


def _channels_query(channel: set[str], source: Callable, views: Callable, local: bool) -> Query:
    """V$DNFS_CHANNELS summed two ways in one read: per path (the channel points) and per process
    (its sends and channel rows, what sent_what_it_counted checks a new process against).

    The view has a row per process and channel, whose counts are "since the last select" (Oracle
    Database Reference, V$DNFS_CHANNELS): a second read in the statement would find them near zero,
    so the view must be read exactly once. The statement has one query block that reads the view,
    and both sums are analytic functions over its rows (SQL Language Reference, "Analytic
    Functions": computed after the FROM, WHERE and GROUP BY of the query block, over its result
    set); the outer query keeps the first row of each process and of each path (ROW_NUMBER), and
    blanks the other grouping's columns on it (CASE), so some 32 000 channel rows at 4 instances x
    2 000 processes come back as about 8 000. GROUP BY GROUPING SETS would say the same more
    briefly, but grouping sets are "equivalent to a UNION ALL of differently grouped rows" (Data
    Warehousing Guide, "SQL for Aggregation in Data Warehouses"), which the optimizer may compute
    through a temporary table or as such a UNION ALL, whose second branch reads the view again;
    analytic functions over one query block do not. They also write nothing but their sorts (in the
    PGA, or temp as any sort), which a read-only standby allows; a mounted one supports in-memory
    sorts only (build_queries sends it no sort). An analytic
    SUM ignores NULLs and is NULL when every value is (SQL Language Reference, "Aggregate
    Functions"); NULLs in PARTITION BY fall in one partition, as in GROUP BY. Release 11.2 has all
    of it (analytic functions since 8i).
    """
    local_column = _pick(channel, ["LOCAL"])
    counts = _pick(channel, CHANNEL_COUNTS)
    path = ", ".join(c.lower() for c in ["INST_ID", "SVRNAME", "PATH", *local_column])
    read = source("GV$DNFS_CHANNELS", ["PNUM", "SVRNAME", "PATH", *local_column, *counts])
    sums = "".join(f", SUM({c.lower()}) OVER (PARTITION BY {path}) AS path_{c.lower()}" for c in counts)
    # A process's sends, from the columns discovered like every other count: NULL where the view
    # has no SENDS (no new-process check then, as group_channels does for a recording without it).
    sends = "SUM(sends) OVER (PARTITION BY inst_id, pnum)" if "SENDS" in counts else "NULL"
    inner = (
        "SELECT inst_id, pnum, svrname, path"
        + "".join(", " + c.lower() for c in local_column)
        + f", {sends} AS process_sends"
        ", COUNT(*) OVER (PARTITION BY inst_id, pnum) AS process_channels"
        f"{sums}, COUNT(*) OVER (PARTITION BY {path}) AS path_channels"
        ", ROW_NUMBER() OVER (PARTITION BY inst_id, pnum ORDER BY svrname, path) AS process_row"
        f", ROW_NUMBER() OVER (PARTITION BY {path} ORDER BY pnum) AS path_row"
        f" FROM {read}"
    )

    def on_process_row(column: str, alias: str) -> str:
        return f"CASE WHEN c.process_row = 1 THEN c.{column} END AS {alias}"

    def on_path_row(column: str, alias: str) -> str:
        return f"CASE WHEN c.path_row = 1 THEN c.{column} END AS {alias}"

    selected = [
        "c.inst_id",
        on_process_row("pnum", "pnum"),
        on_process_row("process_sends", "process_sends"),
        on_process_row("process_channels", "process_channels"),
        *(on_path_row(c.lower(), c.lower()) for c in ["SVRNAME", "PATH", *local_column]),
        *(on_path_row("path_" + c.lower(), c.lower()) for c in counts),
        on_path_row("path_channels", PATH_COUNT_COLUMN.lower()),
    ]
    # One condition, not "process_row = 1 OR path_row = 1": the optimizer may expand an OR into
    # UNION ALL branches, each reading the view again; NO_EXPAND forbids that expansion (SQL
    # Language Reference, "Hints", NO_EXPAND), and LEAST leaves it no OR to expand in any case.
    sql = (
        f"SELECT /*+ NO_EXPAND */ {', '.join(selected)}, {DB_TIME} "
        f"FROM ({inner}) c WHERE LEAST(c.process_row, c.path_row) = 1"
    )
    columns = (
        "INST_ID",
        *PROCESS_CHANNEL_COLUMNS,
        "SVRNAME",
        "PATH",
        *local_column,
        *counts,
        PATH_COUNT_COLUMN,
        *CLOCK_COLUMNS,
    )
    return Query("dnfs_channels", sql, columns, views("GV$DNFS_CHANNELS"), local)
