"""Oracle Direct NFS: IOPS, bytes, channels, servers, I/O latency, histograms.

Facts and traps: docs/oracle.md. This module is pure:
it builds the SQL texts from the columns the connected release has
(dnfsmon.oracle_facts names them per release) and turns result rows into
samples and points. The I/O happens in dnfsmon.oracle_db (a live database
through python-oracledb) or dnfsmon.simulator; both hand over the same JSON
document, which is also what a capture stores as "oracle/results.json":

    {"kind": "live" | "simulated", "version": "19.0.0.0.0",
     "database": {"DBID": 1, "NAME": "ORCL", "DB_UNIQUE_NAME": "ORCL", "CDB": "NO"},
     "results": {"<query>": {"columns": ["INST_ID", ...], "rows": [[1, ...], ...]}},
     "errors": {"<query>": "ORA-00942: ... (grant SELECT ON SYS.GV_$X TO USER)"},
     "down": null | "ORA-01017: invalid username/password; logon denied"}

DB_TIME (every query reads SYS_EXTRACT_UTC(SYSTIMESTAMP) in the same round
trip as its counters) is seconds since the Unix epoch; STARTUP_TIME is an
ISO 8601 string.

How the traps are handled:
- V$DNFS_STATS counts per process: each process (INST_ID, PNUM) is diffed
  on its own, with SPID and SERIAL# from V$PROCESS as its identity, so a
  process replaced under the same PNUM re-baselines; only then are the
  deltas summed per instance. An exiting process's last partial interval
  and a new process's first are not counted (never a negative or a spike).
- Instance restarts: STARTUP_TIME is in every sample's identity.
- V$DNFS_CHANNELS counts "since the last select": each read's counts are
  an interval count, divided by the time since dnfsmon's previous read. Any
  other reader of the view in between (a DBA's script) takes counts away,
  so the per-second figures are a lower bound; the path shares are exact.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Optional

from .. import oracle_facts, rates
from ..points import Point
from ..rates import Sample
from .base import Parsed, ParseError, Raw, Source

NAME = "oracle"
RESULTS = "oracle/results.json"

IO_MEASUREMENT = "dnfsmon_dnfs_io"
CHANNEL_MEASUREMENT = "dnfsmon_dnfs_channel"
SERVER_MEASUREMENT = "dnfsmon_dnfs_server"
EVENT_MEASUREMENT = "dnfsmon_oracle_event"
HISTOGRAM_MEASUREMENT = "dnfsmon_oracle_latency_histogram"
COVERAGE_MEASUREMENT = "dnfsmon_dnfs_coverage"
STATUS_MEASUREMENT = "dnfsmon_oracle_status"
MEASUREMENTS = (
    IO_MEASUREMENT,
    CHANNEL_MEASUREMENT,
    SERVER_MEASUREMENT,
    EVENT_MEASUREMENT,
    HISTOGRAM_MEASUREMENT,
    COVERAGE_MEASUREMENT,
    STATUS_MEASUREMENT,
)

# The Oracle lists live in dnfsmon.oracle_facts (one source of truth).
IO_EVENTS = oracle_facts.IO_EVENTS
OTHER_OPS = oracle_facts.OTHER_OPS
STATS_COUNTERS = ("NFS_READ", "NFS_WRITE", "NFS_READBYTES", "NFS_WRITEBYTES", *OTHER_OPS)
CHANNEL_COUNTS = ("SENDS", "RECVS", "PINGS", "RECO", "SPRECO", "DPRECO")
EVENT_COUNTERS = ("TOTAL_WAITS", "TIME_WAITED_MICRO", "TOTAL_WAITS_FG", "TIME_WAITED_MICRO_FG")
DB_TIME = "SYS_EXTRACT_UTC(SYSTIMESTAMP) AS db_time"


@dataclass(frozen=True)
class Query:
    """One SQL text the agent sends: its result columns and the views it reads."""

    name: str
    sql: str
    # Result column names, upper case, in order (what cursor.description says).
    columns: tuple[str, ...]
    views: tuple[str, ...]


def _pick(available: set[str], wanted: Sequence[str]) -> list[str]:
    return [c for c in wanted if c in available]


def _simple(name: str, view: str, columns: Sequence[str], where: str = "") -> Query:
    """SELECT columns, db_time FROM view [WHERE ...]."""
    sql = f"SELECT {', '.join(c.lower() for c in columns)}, {DB_TIME} FROM {view.lower()}{where}"
    return Query(name, sql, (*tuple(columns), "DB_TIME"), (view,))


def build_queries(available: Mapping[str, set[str]]) -> list[Query]:
    """SQL for the columns the database has ({"GV$DNFS_STATS": {"INST_ID", ...}, ...}).

    A view missing from `available` (not granted, or absent in the release)
    leaves its query out; required columns are used unconditionally so the
    facts test catches a release that lacks them.
    """
    queries = []

    def has(view: str) -> set[str]:
        return set(available.get(view, ()))

    events = " WHERE event IN (" + ", ".join("'" + e + "'" for e in IO_EVENTS) + ")"
    if has("GV$INSTANCE"):
        queries.append(
            _simple("instances", "GV$INSTANCE", ["INST_ID", "INSTANCE_NAME", "HOST_NAME", "VERSION", "STARTUP_TIME"])
        )
    if has("V$DATABASE"):
        columns = ["DBID", "NAME", "DB_UNIQUE_NAME", *_pick(has("V$DATABASE"), ["CDB"])]
        queries.append(
            Query(
                "database",
                f"SELECT {', '.join(c.lower() for c in columns)} FROM v$database",
                tuple(columns),
                ("V$DATABASE",),
            )
        )
    if has("GV$DNFS_STATS") and has("GV$PROCESS"):
        counters = _pick(has("GV$DNFS_STATS"), STATS_COUNTERS)
        queries.append(
            Query(
                "dnfs_stats",
                f"SELECT s.inst_id, s.pnum, p.spid, p.serial#, {', '.join('s.' + c.lower() for c in counters)}, {DB_TIME} "
                "FROM gv$dnfs_stats s LEFT OUTER JOIN gv$process p ON p.inst_id = s.inst_id AND p.pid = s.pnum",
                ("INST_ID", "PNUM", "SPID", "SERIAL#", *tuple(counters), "DB_TIME"),
                ("GV$DNFS_STATS", "GV$PROCESS"),
            )
        )
    if has("GV$DNFS_CHANNELS"):
        channel = has("GV$DNFS_CHANNELS")
        queries.append(
            _simple(
                "dnfs_channels",
                "GV$DNFS_CHANNELS",
                ["INST_ID", "PNUM", "SVRNAME", "PATH", *_pick(channel, ["LOCAL"]), *_pick(channel, CHANNEL_COUNTS)],
            )
        )
    if has("GV$DNFS_SERVERS"):
        queries.append(
            _simple(
                "dnfs_servers",
                "GV$DNFS_SERVERS",
                [
                    "INST_ID",
                    "ID",
                    "SVRNAME",
                    "DIRNAME",
                    "NFSPORT",
                    *_pick(has("GV$DNFS_SERVERS"), ["NFSVERSION"]),
                    "WTMAX",
                    "RTMAX",
                ],
            )
        )
    if has("GV$DNFS_FILES"):
        # One row per process and file in the view: count each file once.
        queries.append(
            Query(
                "dnfs_files",
                f"SELECT inst_id, svr_id, COUNT(*) AS files, SUM(filesize) AS bytes, {DB_TIME} "
                "FROM (SELECT DISTINCT inst_id, svr_id, filename, filesize FROM gv$dnfs_files) GROUP BY inst_id, svr_id",
                ("INST_ID", "SVR_ID", "FILES", "BYTES", "DB_TIME"),
                ("GV$DNFS_FILES",),
            )
        )
    if has("GV$SYSTEM_EVENT"):
        queries.append(
            _simple(
                "system_event",
                "GV$SYSTEM_EVENT",
                ["INST_ID", "EVENT", "TOTAL_WAITS", "TIME_WAITED_MICRO", "TOTAL_WAITS_FG", "TIME_WAITED_MICRO_FG"],
                events,
            )
        )
    if has("GV$EVENT_HISTOGRAM_MICRO"):
        queries.append(
            _simple(
                "event_histogram",
                "GV$EVENT_HISTOGRAM_MICRO",
                ["INST_ID", "EVENT", "WAIT_TIME_MICRO", "WAIT_COUNT"],
                events,
            )
        )
    elif has("GV$EVENT_HISTOGRAM"):
        queries.append(
            _simple(
                "event_histogram", "GV$EVENT_HISTOGRAM", ["INST_ID", "EVENT", "WAIT_TIME_MILLI", "WAIT_COUNT"], events
            )
        )
    if "ACCESS_METHOD" in has("GV$IOSTAT_FILE"):
        queries.append(
            Query(
                "iostat_file",
                f"SELECT inst_id, filetype_name, access_method, COUNT(*) AS files, {DB_TIME} "
                "FROM gv$iostat_file GROUP BY inst_id, filetype_name, access_method",
                ("INST_ID", "FILETYPE_NAME", "ACCESS_METHOD", "FILES", "DB_TIME"),
                ("GV$IOSTAT_FILE",),
            )
        )
    return queries


# --- parsing result rows ---


class Results:
    """The rows of one query as dicts by column name (upper case)."""

    def __init__(self, name: str, data: Mapping, problems: list[ParseError]):
        try:
            self.columns = [str(c).upper() for c in data["columns"]]
            rows = [list(row) for row in data["rows"]]
        except (KeyError, TypeError) as error:
            raise ParseError(RESULTS, f'results of {name} need "columns" and "rows": {error}') from None
        self.name = name
        self.rows = []
        for number, row in enumerate(rows, start=1):
            # Oracle returns scalars only; anything else is a damaged recording.
            if len(row) != len(self.columns) or any(isinstance(v, (list, dict)) for v in row):
                problems.append(
                    ParseError(RESULTS, f"row {number} of {name} does not fit its columns {self.columns}: {row}")
                )
                continue
            self.rows.append(dict(zip(self.columns, row)))

    def time(self) -> Optional[float]:
        """The database clock of this query (seconds since the epoch), None without rows."""
        for row in self.rows:
            value = row.get("DB_TIME")
            if isinstance(value, (int, float)):
                return float(value)
        return None


def _number(value: object) -> Optional[int]:
    """An Oracle NUMBER counter as an int; None for NULL, negative, infinite or not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or not math.isfinite(value):
        return None
    return int(value)


@dataclass
class Instance:
    name: str
    startup: str
    host_name: str


def load(raw: Raw) -> dict:
    try:
        document = json.loads(raw.text(RESULTS))
    except ValueError as error:
        raise ParseError(RESULTS, f"not JSON: {error}") from None
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


def samples(raw: Raw, host: str) -> tuple[list[Sample], list[ParseError]]:
    document = load(raw)
    simulated = document.get("kind") == "simulated"
    base_tags: tuple[tuple[str, str], ...] = (("host", host),)
    database = document.get("database") or {}
    db_name = str(database.get("DB_UNIQUE_NAME") or database.get("NAME") or "")
    base_tags += (("database", db_name),)
    if simulated:
        base_tags += (("simulated", "true"),)
    dbid = str(database.get("DBID", ""))
    problems: list[ParseError] = []
    results = {name: Results(name, data, problems) for name, data in (document.get("results") or {}).items()}

    instances: dict[object, Instance] = {}
    if "instances" in results:
        for row in results["instances"].rows:
            instances[row["INST_ID"]] = Instance(
                str(row["INSTANCE_NAME"]), str(row["STARTUP_TIME"]), str(row.get("HOST_NAME", ""))
            )

    status_gauges: dict[str, rates.Gauge] = {
        "up": not document.get("down"),
        "instances": len(instances),
        "failed_queries": len(document.get("errors") or {}),
    }
    if document.get("version"):
        status_gauges["version"] = str(document["version"])
        try:
            status_gauges["release"] = oracle_facts.release_of_version(str(document["version"]))
        except ValueError as error:
            problems.append(ParseError(RESULTS, str(error)))
    reason = reason_of(document)
    if reason:
        status_gauges["error"] = reason
    found: list[Sample] = [Sample(STATUS_MEASUREMENT, base_tags, raw.time, raw.wall_time, {}, status_gauges)]

    def instance_of(row: Mapping) -> Optional[tuple[tuple[tuple[str, str], ...], tuple[str, ...]]]:
        """(tags, identity) of a row's instance; None for an instance that left between queries."""
        instance = instances.get(row.get("INST_ID"))
        if instance is None:
            return None
        return (*base_tags, ("instance", instance.name)), (dbid, instance.startup)

    def located(name: str):
        """(time, row, tags, identity) of each row of a query whose instance is known.

        Samples carry the database clock (UTC epoch seconds) both for the
        interval and as the point's timestamp.
        """
        result = results.get(name)
        t = result.time() if result else None
        if t is None:
            return
        for row in result.rows:
            where = instance_of(row)
            if where is not None:
                yield (t, row, *where)

    # dNFS I/O per process.
    for t, row, tags, identity in located("dnfs_stats"):
        counters = {c: v for c, v in ((c, _number(row.get(c))) for c in STATS_COUNTERS) if v is not None}
        process = (str(row.get("SPID") or "?"), str(row.get("SERIAL#") or "?"))
        found.append(
            Sample(IO_MEASUREMENT, (*tags, ("pnum", str(row["PNUM"]))), t, t, counters, {}, identity + process)
        )

    # Channels: interval counts since the last select, summed per path; the
    # paths' shares of their filer's sends.
    paths: dict[tuple, dict[str, int]] = {}
    located_paths: dict[tuple, tuple[float, tuple]] = {}
    for t, row, tags, identity in located("dnfs_channels"):
        key = (
            *tags,
            ("server", str(row["SVRNAME"])),
            ("path", str(row["PATH"])),
            ("local", str(row.get("LOCAL") or "")),
        )
        counts = paths.setdefault(key, {"processes": 0})
        counts["processes"] += 1
        for name in CHANNEL_COUNTS:
            value = _number(row.get(name))
            if value is not None:
                counts[name] = counts.get(name, 0) + value
        located_paths[key] = (t, identity)
    server_sends: dict[tuple, int] = {}
    for key, counts in paths.items():
        server_sends[key[:-2]] = server_sends.get(key[:-2], 0) + counts.get("SENDS", 0)
    for key, counts in paths.items():
        gauges: dict[str, rates.Gauge] = {f"interval_{k.lower()}": v for k, v in counts.items() if k != "processes"}
        gauges["processes"] = counts["processes"]
        share = rates.percent(counts.get("SENDS", 0), server_sends[key[:-2]])
        if share is not None:
            gauges["share_pct"] = share
        t, identity = located_paths[key]
        found.append(Sample(CHANNEL_MEASUREMENT, key, t, t, {}, gauges, identity))

    # Servers with their open files.
    files = {(r["INST_ID"], r["SVR_ID"]): r for r in results["dnfs_files"].rows} if "dnfs_files" in results else {}
    for t, row, tags, identity in located("dnfs_servers"):
        server_gauges = {
            "wtmax_bytes": _number(row.get("WTMAX")),
            "rtmax_bytes": _number(row.get("RTMAX")),
            "nfs_port": _number(row.get("NFSPORT")),
        }
        if row.get("NFSVERSION"):
            server_gauges["nfs_version"] = str(row["NFSVERSION"])
        opened = files.get((row["INST_ID"], row["ID"]), {})
        server_gauges["open_files"] = _number(opened.get("FILES")) or 0
        server_gauges["open_file_bytes"] = _number(opened.get("BYTES")) or 0
        key = (*tags, ("server", str(row["SVRNAME"])), ("export", str(row["DIRNAME"])))
        found.append(
            Sample(
                SERVER_MEASUREMENT, key, t, t, {}, {k: v for k, v in server_gauges.items() if v is not None}, identity
            )
        )

    # Wait events.
    for t, row, tags, identity in located("system_event"):
        counters = {c: v for c, v in ((c, _number(row.get(c))) for c in EVENT_COUNTERS) if v is not None}
        found.append(Sample(EVENT_MEASUREMENT, (*tags, ("event", str(row["EVENT"]))), t, t, counters, {}, identity))

    # Latency histogram buckets (upper bounds in microseconds).
    for t, row, tags, identity in located("event_histogram"):
        if "WAIT_TIME_MICRO" in row:
            bound = _number(row["WAIT_TIME_MICRO"])
        else:
            milli = _number(row.get("WAIT_TIME_MILLI"))
            bound = None if milli is None else milli * 1000
        count = _number(row.get("WAIT_COUNT"))
        if bound is None or count is None:
            problems.append(ParseError(RESULTS, f"event_histogram row without a bucket bound or count: {row}"))
            continue
        key = (*tags, ("event", str(row["EVENT"])), ("le_us", str(bound)))
        found.append(Sample(HISTOGRAM_MEASUREMENT, key, t, t, {"WAIT_COUNT": count}, {}, identity))

    # dNFS coverage per file type.
    per_type: dict[tuple, dict[str, int]] = {}
    located_types: dict[tuple, tuple[float, tuple]] = {}
    for t, row, tags, identity in located("iostat_file"):
        key = (*tags, ("file_type", str(row["FILETYPE_NAME"])))
        counts = per_type.setdefault(key, {"files": 0, "dnfs_files": 0})
        number = _number(row.get("FILES")) or 0
        counts["files"] += number
        if row.get("ACCESS_METHOD") == "DNFS_LIB":
            counts["dnfs_files"] += number
        located_types[key] = (t, identity)
    for key, counts in per_type.items():
        coverage: dict[str, rates.Gauge] = dict(counts)
        pct = rates.percent(counts["dnfs_files"], counts["files"])
        if pct is not None:
            coverage["dnfs_pct"] = pct
        t, identity = located_types[key]
        found.append(Sample(COVERAGE_MEASUREMENT, key, t, t, {}, coverage, identity))
    return found, problems


# --- points ---


def _instance_tags(sample: Sample) -> tuple[tuple[str, str], ...]:
    return tuple(pair for pair in sample.key if pair[0] != "pnum")


def io_fields(summed: rates.Aggregate, processes: int) -> dict[str, rates.Gauge]:
    d = summed.deltas
    read_bytes, write_bytes = summed.rate("NFS_READBYTES"), summed.rate("NFS_WRITEBYTES")
    other = [name for name in OTHER_OPS if name in d]
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
        "other_ops_per_s": rates.per_second(sum(d[name] for name in other), summed.dt) if other else None,
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
    """Per-key figures of every measurement but dnfsmon_dnfs_io (summed in aggregate)."""
    sample, d, g = interval.current, interval.deltas, interval.current.gauges
    if sample.measurement == CHANNEL_MEASUREMENT:
        out: dict[str, Optional[rates.Gauge]] = {
            "sends_per_s": None if "interval_sends" not in g else rates.per_second(g["interval_sends"], interval.dt),
            "recvs_per_s": None if "interval_recvs" not in g else rates.per_second(g["interval_recvs"], interval.dt),
            "pings_per_s": None if "interval_pings" not in g else rates.per_second(g["interval_pings"], interval.dt),
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
    elif sample.measurement == HISTOGRAM_MEASUREMENT:
        out = {"waits_per_s": interval.rate("WAIT_COUNT")}
    else:  # servers, coverage: inventory gauges
        out = dict(g)
    return {k: v for k, v in out.items() if v is not None}


def aggregate(result: rates.DiffResult, current: list[Sample]) -> list[Point]:
    points: list[Point] = []
    for sample in current:
        if sample.measurement == STATUS_MEASUREMENT:  # a state, published every time, not a rate
            points.append(Point(STATUS_MEASUREMENT, sample.key, dict(sample.gauges), round(sample.wall_time * 1e9)))
    io = [i for i in result.intervals if i.current.measurement == IO_MEASUREMENT]
    processes: dict[tuple, int] = {}
    for sample in current:
        if sample.measurement == IO_MEASUREMENT:
            processes[_instance_tags(sample)] = processes.get(_instance_tags(sample), 0) + 1
    for tags, summed in rates.aggregate(io, lambda i: _instance_tags(i.current)).items():
        values = io_fields(summed, processes.get(tags, 0))
        points.append(Point(IO_MEASUREMENT, tags, values, round(summed.members[0].current.wall_time * 1e9)))
    for interval in result.intervals:
        if interval.current.measurement not in (IO_MEASUREMENT, STATUS_MEASUREMENT):
            values = fields(interval)
            if values:
                points.append(
                    Point(
                        interval.current.measurement,
                        interval.current.key,
                        values,
                        round(interval.current.wall_time * 1e9),
                    )
                )
    return points


def parse(raw: Raw, host: str) -> Parsed:
    """The contract's parse step (dnfsmon.sources.base): the samples, their problems
    and what could not be read this time (the status sample carries it)."""
    found, problems = samples(raw, host)
    return Parsed(found, problems, failure(found))


SOURCE = Source(name=NAME, measurements=MEASUREMENTS, parse=parse, publish=aggregate)
