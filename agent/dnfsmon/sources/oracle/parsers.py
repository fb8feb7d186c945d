"""Each query's rows as samples, one parser per query, and the inventory's cadence."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Optional

from ... import oracle_facts, rates
from ...rates import Sample
from ..base import ParseError, Raw
from .names import (
    CHANNEL_COUNTS,
    CHANNEL_MEASUREMENT,
    COVERAGE_MEASUREMENT,
    EVENT_COUNTERS,
    EVENT_MEASUREMENT,
    FILE_COUNTERS,
    FILER_FILE_MEASUREMENT,
    FUNCTION_COUNTERS,
    FUNCTION_MEASUREMENT,
    HISTOGRAM_MEASUREMENT,
    IO_MEASUREMENT,
    OTHER_OPS,
    OTHER_OPS_COUNTER,
    PROCESS_COUNTERS,
    RESULTS,
    SERVER_MEASUREMENT,
    STATUS_MEASUREMENT,
)
from .queries import PATH_COUNT_COLUMN, PROCESS_CHANNEL_COLUMNS, PROCESS_COLUMNS
from .rows import (
    Context,
    Instance,
    Results,
    _column,
    _columns,
    _counters,
    _number,
    _pdb_tags,
    _pdb_tags_of,
    _sum_of_counters,
    _sum_of_every_counter,
    _values,
    group_channels,
    group_files,
    host_tag,
    load,
    reason_of,
)


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
    """dNFS I/O per process, as one rates.Members sample per instance: a member per V$DNFS_STATS
    row, named by its PNUM, held by the process its SPID and SERIAL# name (a PNUM reused by a new
    process is another member: see publish.new_process_intervals), in its PDB where the row has
    a CON_ID. Thousands of processes share an instance: the columns are taken a column at a
    time, and a process is a Sample of its own only where diff_members needs one."""
    result = context.results.get("dnfs_stats")
    timed = context.timed("dnfs_stats")
    if result is None or timed is None:
        return []
    _, t, started = timed
    # The rows of each instance, in the order read, with the instance's identity.
    placed_rows: dict[rates.Key, tuple[tuple[str, ...], list[Sequence]]] = {}
    place = context.place(result)
    for run in _runs_of_one_instance(result):
        placed = place(run[0])
        if placed is None:  # an instance that left between queries
            continue
        tags, identity = placed
        group = placed_rows.get(tags)
        if group is None:
            placed_rows[tags] = (identity, run)
        elif group[0] == identity:
            group[1].extend(run)
        else:  # one clock per statement (CLOCK_INSTANCE): never two identities for one instance
            context.problems.append(ParseError(RESULTS, f"dnfs_stats: rows of instance {dict(tags)} under two clocks"))
    if not placed_rows:
        return []
    pnum_at = result.index["PNUM"]  # a KeyError without it: a reading this source cannot use
    for tags, (identity, rows) in placed_rows.items():
        if len(set(map(operator.itemgetter(pnum_at), rows))) < len(rows):
            placed_rows[tags] = (identity, _first_row_of_each_pnum(rows, pnum_at, tags, context.problems))
    sends = _sends_per_process(context.results.get("dnfs_channels"))
    # A mounted database's V$PROCESS rows come apart from V$DNFS_STATS's (queries.build_queries).
    holders = None if "SPID" in result.index else _processes(context.results.get("processes"), context.problems)
    return [
        _process_table(result, sends, holders, tags, identity, rows, t, started)
        for tags, (identity, rows) in placed_rows.items()
    ]


def _runs_of_one_instance(result: Results) -> Iterable[list[Sequence]]:
    """The rows in runs that Context.place places alike: the same INST_ID and CLOCK_INSTANCE, each
    of one type (place tells 1 from True). A GV$ view returns an instance's rows together, so there
    are about as many runs as instances, and each is placed once rather than row by row."""
    columns = [operator.itemgetter(result.index[c]) for c in ("INST_ID", "CLOCK_INSTANCE") if c in result.index]
    for _, grouped in itertools.groupby(result.rows, key=_values(result, ("INST_ID", "CLOCK_INSTANCE"))):
        run = list(grouped)
        if any(len(set(map(type, map(column, run)))) > 1 for column in columns):
            yield from ([row] for row in run)  # equal values of other types (a damaged capture)
        else:
            yield run


def _first_row_of_each_pnum(
    rows: list[Sequence], pnum_at: int, tags: rates.Key, problems: list[ParseError]
) -> list[Sequence]:
    """An instance's rows with a PNUM read twice left out after the first, and said.

    A process is a member of its instance's sample by its PNUM (rates.Members: unique within the
    sample). V$DNFS_STATS has a row per process, PNUM its V$PROCESS.PID (Oracle Database
    Reference), which one instance gives one process at a time; the Reference names no key,
    though, so a reading with a PNUM twice is reported rather than paired by chance."""
    seen: set[object] = set()
    kept = []
    for row in rows:
        if row[pnum_at] in seen:
            problems.append(
                ParseError(
                    RESULTS,
                    f"dnfs_stats: PNUM {row[pnum_at]} of instance {dict(tags).get('instance')} read twice; the later row left out",
                )
            )
            continue
        seen.add(row[pnum_at])
        kept.append(row)
    return kept


# What a V$DNFS_STATS row without a V$PROCESS row has of it (the open statement's outer join gives NULLs).
NO_PROCESS = (None, None, None, None)


def _processes(
    processes: Optional[Results], problems: list[ParseError]
) -> dict[tuple[object, object], tuple[object, ...]]:
    """(INST_ID, PID) -> (SPID, SERIAL#, PNAME, PROGRAM) of a read's V$PROCESS rows, as the open
    database's statement joins them to V$DNFS_STATS (PNUM = PID); empty without them.

    A PID read twice for one instance would give the open statement's join two rows of the
    process, of which _io keeps the first and says so: here too the first row is kept, and said."""
    if processes is None or "PID" not in processes.index:
        return {}
    keys = zip(map(_column(processes, "INST_ID"), processes.rows), map(_column(processes, "PID"), processes.rows))
    values = zip(*(map(_column(processes, c), processes.rows) for c in PROCESS_COLUMNS[1:]))
    pairs = list(zip(keys, values))
    found = dict(reversed(pairs))  # the first row of each (INST_ID, PID)
    if len(found) < len(pairs):
        seen: set[tuple[object, object]] = set()
        for (inst_id, pid), _ in pairs:
            if (inst_id, pid) in seen:
                problems.append(
                    ParseError(RESULTS, f"processes: PID {pid} of INST_ID {inst_id} read twice; the later row left out")
                )
            seen.add((inst_id, pid))
    return found


def _process_table(
    result: Results,
    sends: Mapping[tuple[object, object], tuple[int, int]],
    processes: Optional[Mapping[tuple[object, object], tuple[object, ...]]],
    tags: rates.Key,
    identity: tuple[str, ...],
    rows: list[Sequence],
    t: float,
    started: Optional[float],
) -> rates.Members:
    """One instance's V$DNFS_STATS rows as a rates.Members sample (see _io). The rows are turned
    into columns once (zip, in C), and each column is read as a whole from there."""
    by_column = list(zip(*rows)) if rows else [()] * len(result.columns)
    nothing = (None,) * len(rows)

    def column(name: str) -> tuple:
        position = result.index.get(name)
        return nothing if position is None else by_column[position]

    pnums, inst_ids = column("PNUM"), column("INST_ID")
    # Each row's SPID, SERIAL#, PNAME and PROGRAM from V$PROCESS: joined in the statement, or
    # (`processes`, a mounted database) matched here on (INST_ID, PNUM = PID).
    if processes is None:
        spids, serials, pnames, programs = (column(c) for c in PROCESS_COLUMNS[1:])
    else:
        found = list(map(processes.get, zip(inst_ids, pnums), itertools.repeat(NO_PROCESS)))
        spids, serials, pnames, programs = zip(*found) if found else ((), (), (), ())
    # A process's PDB tag from its CON_ID, made once per value (by type too: True is not CON_ID 1).
    con_ids = column("CON_ID")
    containers = list(zip(map(type, con_ids), con_ids))
    pdb_tags = {container: _pdb_tags_of(container[1]) for container in set(containers)}
    # The process's sends and channel rows in this read (_sends_per_process): what
    # new_process_intervals checks a process counted from zero against (None: no row of it).
    channel = list(map(sends.get, zip(inst_ids, pnums)))
    details: dict[str, tuple[Optional[rates.Gauge], ...]] = {
        # What the process is (V$PROCESS.PNAME, PROGRAM), for the top processes.
        "pname": _texts(pnames),
        "program": _texts(programs),
    }
    if channel and None not in channel:  # every process has channel rows
        details["channel_sends"], details["channels"] = map(tuple, zip(*channel))
    elif any(channel):
        details["channel_sends"] = tuple(None if c is None else c[0] for c in channel)
        details["channels"] = tuple(None if c is None else c[1] for c in channel)
    return rates.Members(
        IO_MEASUREMENT,
        tags,
        t,
        t,
        identity,
        started,
        "pnum",
        tuple(map(str, pnums)),
        tuple(map(pdb_tags.__getitem__, containers)),
        _holders(spids, serials),
        _process_counters(result, column, rows),
        details,
    )


def _holders(spids: Sequence[object], serials: Sequence[object]) -> tuple[tuple[str, str], ...]:
    """Each process's (SPID, SERIAL#) as text; "?" where no V$PROCESS row was found (NULL) or the
    value is empty."""
    return tuple(
        (str(process or UNKNOWN_PROCESS), str(slot or UNKNOWN_PROCESS)) for process, slot in zip(spids, serials)
    )


def _texts(values: Sequence[object]) -> tuple[str, ...]:
    """Each value as text, "" for a NULL."""
    return tuple(str(value or "") for value in values)


def _process_counters(
    result: Results, column: Callable[[str], tuple], rows: Sequence[Sequence]
) -> dict[str, tuple[Optional[int], ...]]:
    """Counter name -> each row's count (None where the row has none: _counters leaves its value
    out), for PROCESS_COUNTERS and the sum of the other operations (OTHER_OPS_COUNTER): summed in
    the statement, or here for a capture made before it was. A counter no row has is left out."""
    summed_in_sql = OTHER_OPS_COUNTER in result.index
    names, counter_values = _columns(result, (*PROCESS_COUNTERS, *((OTHER_OPS_COUNTER,) if summed_in_sql else ())))
    columns = {name: column(name) for name in names}
    # Every value a plain counter as the reader hands them over (a plain int, not a bool, not
    # negative): the columns are the values as they are, which _counters would also keep.
    if not all(not values or (set(map(type, values)) == {int} and min(values) >= 0) for values in columns.values()):
        kept = [_counters(names, counter_values(row)) for row in rows]
        columns = {name: tuple(counters.get(name) for counters in kept) for name in names}
    if not summed_in_sql:
        _, other_values = _columns(result, OTHER_OPS)
        columns[OTHER_OPS_COUNTER] = tuple(_sum_of_every_counter(other_values(row)) for row in rows)
    return {name: values for name, values in columns.items() if any(value is not None for value in values)}


def _sends_per_process(channels: Optional[Results]) -> dict[tuple[object, object], tuple[int, int]]:
    """(INST_ID, PNUM as read) -> (SENDS summed over the process's channels, its channel rows) of a
    read (the channels query's process rows); empty without the channels query (not granted), a
    SENDS column, or with a sum that is not a counter (a damaged reading: no check rather than a
    wrong one). A row read twice: the later one counts."""
    if channels is None or not {"INST_ID", *PROCESS_CHANNEL_COLUMNS} <= channels.index.keys() or not channels.rows:
        return {}
    inst_id, pnum, sends, rows = (channels.index[c] for c in ("INST_ID", *PROCESS_CHANNEL_COLUMNS))
    process_rows = [row for row in channels.rows if row[rows] is not None]  # the others are a path's rows
    if not process_rows:
        return {}
    inst_ids, pnums, sent, counts = zip(*map(operator.itemgetter(inst_id, pnum, sends, rows), process_rows))
    if set(map(type, sent)) != {int} or min(sent) < 0:
        return {}
    return dict(zip(zip(inst_ids, pnums), zip(sent, counts)))


def _per_channel_rows_grouped(results: dict[str, Results], problems: list[ParseError]) -> None:
    """A recording made before the channels query summed in the statement (a row per process and
    channel) grouped as the statement groups them (group_channels), so one parser reads both."""
    channels = results.get("dnfs_channels")
    if channels is None or PATH_COUNT_COLUMN in channels.index or "PNUM" not in channels.index:
        return
    columns, rows = group_channels(channels.columns, channels.rows)
    data = {"columns": columns, "rows": rows, "agent_clock": channels.agent_clock}
    results["dnfs_channels"] = Results(channels.name, data, problems, recorded=False)


# [oracle] top_processes's default: the source's when no config says (the simulator, a capture
# replayed without a config).
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
    # The statement's path rows (queries._channels_query: a path's counts summed over its channel
    # rows, CHANNELS of them), grouped by the values that place them, then summed column by column
    # (a path has one row in a reading; several only in a damaged one).
    group_of = _values(result, ("INST_ID", "CLOCK_INSTANCE", "SVRNAME", "PATH", "LOCAL"))
    names, count_values = _columns(result, CHANNEL_COUNTS)
    groups: dict[tuple, list[tuple]] = {}
    last_row: dict[tuple, int] = {}
    channel_rows = result.index.get(PATH_COUNT_COLUMN)
    if result.rows and channel_rows is None:
        raise KeyError(PATH_COUNT_COLUMN)
    for number, row in enumerate(result.rows):
        if channel_rows is None or row[channel_rows] is None:
            continue  # a process's row
        group = group_of(row)
        rows = groups.get(group)
        if rows is None:
            rows = groups[group] = []
        rows.append((row[channel_rows], count_values(row)))
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
        counts["processes"] += sum(_number(channels) or 0 for channels, _ in rows)
        for name, values in zip(names, zip(*(values for _, values in rows))):
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
    files: dict[tuple, Mapping[str, object]] = {}
    if "dnfs_files" in context.results:
        rows = context.results["dnfs_files"].dicts()
        # A mounted database's plain rows (one per process and file: queries.build_queries) are
        # counted here as the open database's statement counts them.
        if rows and "FILES" not in rows[0]:
            files.update(group_files(rows))
        else:
            files.update(((r["INST_ID"], r["SVR_ID"]), r) for r in rows)
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


def _numbers(row: dict, columns: Sequence[str]) -> dict[str, int]:
    """The row's columns that hold a number (a NULL, or a column the release lacks, is left out)."""
    return {c: v for c, v in ((c, _number(row.get(c))) for c in columns) if v is not None}


def _events(context: Context) -> list[Sample]:
    """I/O, commit and temp wait events (instance-wide: V$SYSTEM_EVENT read from the root covers every container)."""
    found = []
    for t, row, tags, identity, started in context.located("system_event"):
        counters = _numbers(row, EVENT_COUNTERS)
        key = (*tags, ("event", str(row["EVENT"])))
        found.append(Sample(EVENT_MEASUREMENT, key, t, t, counters, {}, identity, started))
    return found


def _functions(context: Context) -> list[Sample]:
    """Disk I/O per database function (GV$IOSTAT_FUNCTION): who does the I/O, dNFS or not."""
    found = []
    for t, row, tags, identity, started in context.located("iostat_function"):
        counters = _numbers(row, FUNCTION_COUNTERS)
        key = (*tags, *_pdb_tags(row), ("function", str(row["FUNCTION_NAME"])))
        found.append(Sample(FUNCTION_MEASUREMENT, key, t, t, counters, {}, identity, started))
    return found


def _filer_files(context: Context) -> list[Sample]:
    """Each dNFS file's V$IOSTAT_FILE counters, keyed by its filer (inventory cadence)."""
    found = []
    for t, row, tags, identity, started in context.located("filer_files"):
        counters = _numbers(row, FILE_COUNTERS)
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
    return [
        Sample(HISTOGRAM_MEASUREMENT, key, located[key][0], located[key][0], counts, {}, *located[key][1:])
        for key, counts in buckets.items()
    ]


def _coverage(context: Context) -> list[Sample]:
    """Data files per file type (and container), and how many dNFS serves (V$IOSTAT_FILE.ACCESS_METHOD)."""
    per_type: dict[rates.Key, dict[str, int]] = {}
    located: dict[rates.Key, tuple[float, tuple[str, ...], Optional[float]]] = {}
    for t, row, tags, identity, started in context.located("iostat_file"):
        key = (*tags, *_pdb_tags(row), ("file_type", str(row["FILETYPE_NAME"])))
        counts = per_type.setdefault(key, {"files": 0, "dnfs_files": 0})
        # A mounted database's rows are one per file, with no FILES count (queries.build_queries).
        number = (_number(row.get("FILES")) or 0) if "FILES" in row else 1
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
    _per_channel_rows_grouped(results, problems)
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
