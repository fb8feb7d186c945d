"""Samples diffed into points: I/O summed per instance over its processes, new processes
counted from zero, the top processes, channels, events, histograms, latency per filer."""

from __future__ import annotations

import heapq
import itertools
import operator
from collections import Counter
from collections.abc import Mapping
from typing import NamedTuple, Optional

from ... import rates
from ...points import Point
from ...rates import Sample
from .names import (
    CHANNEL_MEASUREMENT,
    EVENT_MEASUREMENT,
    FILER_FILE_MEASUREMENT,
    FILER_LATENCY_MEASUREMENT,
    FUNCTION_MEASUREMENT,
    HISTOGRAM_MEASUREMENT,
    IO_MEASUREMENT,
    OTHER_OPS_COUNTER,
    STATUS_MEASUREMENT,
    TOP_PROCESS_MEASUREMENT,
)
from .parsers import INVENTORY_MEASUREMENTS, UNKNOWN_PROCESS, filer_fields

DEFAULT_TOP_PROCESSES = 10


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
    that read (same instance startup, same clock: the instance's
    rates.MembersInterval) had no row with its PNUM, or had one held by
    another, known process (another SPID or SERIAL#; V$PROCESS.SERIAL# is the
    serial number of the process slot's holder). Its whole counts are then
    the interval's. Any other process without an interval (its previous
    holder unknown, a counter gone backwards) is left out, and counted as such.
    """
    tables = {table.current.key: table for table in result.tables if table.current.measurement == IO_MEASUREMENT}
    holders_of: dict[rates.Key, dict[str, tuple[str, ...]]] = {}
    known: list[rates.Interval] = []
    left_out: list[rates.Skip] = []
    # Left out because their counts from zero are more than their channels sent (sent_what_it_counted).
    doubtful: list[rates.Skip] = []
    for skip in result.skips:
        sample = skip.current
        if sample.measurement != IO_MEASUREMENT:
            continue
        instance, pnum = _place_of_process(sample)
        table = tables.get(instance)
        if table is None:
            continue  # the instance re-baselined as a whole: nothing is published for it
        holders = holders_of.get(instance)
        if holders is None:
            previous = table.previous
            holders = holders_of[instance] = dict(zip(previous.member_ids, previous.member_identities))
        before = holders.get(pnum)
        now = sample.identity[-2:]
        replaced = before is not None and before != now and UNKNOWN_PROCESS not in (*before, *now)
        interval = None
        if (before is None or replaced) and skip.event != rates.COUNTER_RESET:
            interval = rates.interval_from_zero(sample, table.previous.time)
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


def io_fields(summed: rates.MembersAggregate, processes: int) -> dict[str, rates.Gauge]:
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


class _Busy(NamedTuple):
    """A process of an instance with dNFS operations (OPERATIONS) in the interval: as moved member
    `place` of a table (interval None), or with an interval of its own."""

    ops: int
    pnum: str
    table: Optional[rates.MembersInterval]
    place: int
    interval: Optional[rates.Interval]


def _busy_processes(
    tables: list[rates.MembersInterval], io: list[rates.Interval], limit: int
) -> dict[rates.Key, list[_Busy]]:
    """Instance tags -> its processes with dNFS operations in the interval that may rank in its
    top `limit`: each diffed on its own, and of a table's members those with at least the
    `limit`-th most operations of that table (one that ranks among the instance's first `limit`
    ranks among its table's first `limit` too, so none is left out; the rest are never made).

    A process without a delta of each (a NULL in its row, or the first interval after an upgrade
    from per-operation counters) would be ranked too low: it sits this one out."""
    by_instance: dict[rates.Key, list[_Busy]] = {}
    for table in tables:
        try:
            columns = [table.deltas[name] for name in OPERATIONS]
        except KeyError:
            continue
        ids = table.current.member_ids
        busy = by_instance.setdefault(table.current.key, [])
        operations_of = list(map(sum, zip(*columns)))
        if limit < 1 or not operations_of:
            continue
        least = max(1, heapq.nlargest(limit, operations_of)[-1])
        for place in itertools.compress(range(len(operations_of)), map(least.__le__, operations_of)):
            busy.append(_Busy(operations_of[place], ids[table.moved[place]], table, place, None))
    operations = operator.itemgetter(*OPERATIONS)
    for interval in io:
        try:
            ops = sum(operations(interval.deltas))
        except KeyError:
            continue
        if ops > 0:
            tags, pnum = _place_of_process(interval.current)
            by_instance.setdefault(tags, []).append(_Busy(ops, pnum, None, 0, interval))
    return by_instance


def _top_processes(
    tables: list[rates.MembersInterval], io: list[rates.Interval], new_ids: set[int], limit: int
) -> list[Point]:
    """The busiest processes of each instance by dNFS operations in the interval (review C6).

    Ranked 1..limit per instance ([oracle] top_processes); series are (instance, rank, process
    name), so their number stays within N x the process names that reach the top, however many
    processes come and go. A process counted from zero (new in the interval) takes part.
    """
    points = []
    for tags, busy in _busy_processes(tables, io, limit).items():
        # The first `limit` of the order sorted() would give (heapq.nsmallest: the same, without sorting all).
        ranked = heapq.nsmallest(limit, busy, key=lambda b: (-b.ops, int(b.pnum) if b.pnum.isdigit() else -1, b.pnum))
        for rank, process in enumerate(ranked, start=1):
            if process.interval is not None:
                interval = process.interval
                deltas, dt, sample = interval.deltas, interval.dt, interval.current
                new_process = id(interval) in new_ids
            else:
                assert process.table is not None
                table, place = process.table, process.place
                deltas = {name: values[place] for name, values in table.deltas.items()}
                dt, sample, new_process = table.dt, table.current.member(table.moved[place]), False
            values: dict[str, Optional[rates.Gauge]] = {
                "ops_per_s": rates.per_second(process.ops, dt),
                "read_iops": None if "NFS_READ" not in deltas else rates.per_second(deltas["NFS_READ"], dt),
                "write_iops": None if "NFS_WRITE" not in deltas else rates.per_second(deltas["NFS_WRITE"], dt),
                "read_mib_per_s": None
                if "NFS_READBYTES" not in deltas
                else rates.per_second(deltas["NFS_READBYTES"] / 1048576, dt),
                "write_mib_per_s": None
                if "NFS_WRITEBYTES" not in deltas
                else rates.per_second(deltas["NFS_WRITEBYTES"] / 1048576, dt),
                "pnum": int(process.pnum) if process.pnum.isdigit() else None,
                "spid": sample.identity[-2],
                "program": str(sample.gauges.get("program", "")) or None,
                "new_process": new_process,
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
    FILER_FILE_MEASUREMENT,
    STATUS_MEASUREMENT,
    *INVENTORY_MEASUREMENTS,
)


def new_event_intervals(result: rates.DiffResult) -> list[rates.Interval]:
    """The intervals, counted from zero, of wait events that first appear in V$SYSTEM_EVENT or
    V$EVENT_HISTOGRAM(_MICRO) since the previous read of their instance (dba-review A6).

    Both views' counts are totals since the instance started (Oracle Database Reference,
    V$SYSTEM_EVENT, V$EVENT_HISTOGRAM_MICRO), and an event nobody has waited for has no row yet:
    an event absent from the previous read of the same instance startup and clock (an event of
    that instance has an interval, so that read had the query's rows) had waited nothing then.
    Its whole counts are the interval's, as a new histogram bucket's are
    (deltas_counting_new_from_zero). An instance's histogram may have had no row at all then
    (read right at startup): its events' V$SYSTEM_EVENT interval tells the previous read. Without
    such a read (the first of the instance, a restart) nothing is counted.
    """
    previous_read: dict[tuple[str, rates.Key], rates.Interval] = {}
    for interval in result.intervals:
        measurement = interval.current.measurement
        if measurement in (EVENT_MEASUREMENT, HISTOGRAM_MEASUREMENT):
            previous_read[(measurement, interval.current.key[:-1])] = interval
    found = []
    for skip in result.skips:
        sample = skip.current
        # A key without a previous sample (not an identity change, which is a restart or a new clock).
        if sample.measurement not in (EVENT_MEASUREMENT, HISTOGRAM_MEASUREMENT) or skip.event or not skip.baseline:
            continue
        # The same query's previous read first; a histogram without one, the events' read beside it.
        sibling = previous_read.get((sample.measurement, sample.key[:-1])) or previous_read.get(
            (EVENT_MEASUREMENT, sample.key[:-1])
        )
        if sibling is None or sibling.current.identity != sample.identity:
            continue
        counted = rates.interval_from_zero(sample, sibling.previous.time)
        if counted is not None:
            found.append(counted)
    return found


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
    tables = [table for table in result.tables if table.current.measurement == IO_MEASUREMENT]
    io = [i for i in result.intervals if i.current.measurement == IO_MEASUREMENT] + new
    counted_from_zero = Counter(_instance_tags(interval.current) for interval in new)
    not_counted = Counter(_instance_tags(skip.current) for skip in left_out)
    not_believed = Counter(_instance_tags(skip.current) for skip in doubtful)
    for tags, processes in rates.aggregate_members(tables, io).items():
        # Processes that did dNFS I/O in the interval (V$DNFS_STATS has a row,
        # mostly zeros, for every process; review B6).
        values = io_fields(processes, processes.active)
        values["new_processes"] = counted_from_zero[tags]
        values["processes_left_out"] = not_counted[tags]
        values["new_processes_doubtful"] = not_believed[tags]
        points.append(Point(IO_MEASUREMENT, tags, values, round(processes.wall_time * 1e9)))
    points.extend(_top_processes(tables, io, new_ids, top_processes))
    files = [i for i in result.intervals if i.current.measurement == FILER_FILE_MEASUREMENT]
    per_filer = rates.aggregate(files, lambda i: tuple(pair for pair in i.current.key if pair[0] not in FILE_TAGS))
    for tags, summed in per_filer.items():
        wall_ns = round(summed.members[0].current.wall_time * 1e9)
        points.append(Point(FILER_LATENCY_MEASUREMENT, tags, filer_fields(summed), wall_ns))
    for interval in [*result.intervals, *new_event_intervals(result)]:
        measurement = interval.current.measurement
        if measurement == HISTOGRAM_MEASUREMENT:
            points.extend(_histogram_points(interval))
        elif measurement not in NOT_PER_INTERVAL:
            values = fields(interval)
            if values:
                points.append(Point(measurement, interval.current.key, values, round(interval.current.wall_time * 1e9)))
    return points
