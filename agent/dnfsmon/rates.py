"""All counter-to-rate arithmetic in dnfsmon lives in this module.

Sources turn raw text into `Sample`s; `diff` pairs each sample with the
previous sample of the same natural key and returns an `Interval` (deltas
and the measured Δt) or the reason why that key has no interval this time.
Sources then compute their published fields from an `Interval` with the small
helpers at the end of this module, so every division happens here.

Rules (each is a trap a peer tool fell into; tests/test_rates.py holds a case for each):
- diff per natural key before any aggregation;
- a key seen for the first time is a baseline: no point, not even a zero;
- a declared identity change (instance restart, process replaced under the
  same number, reboot) or a moved start time (mount age going down) is a
  reset: that key re-baselines;
- a counter going backwards is a reset: the whole interval of that key is
  dropped, because every other counter of the key is then doubtful too;
- wrap-around arithmetic only for counters whose width the source declared,
  and only when the wrapped delta is less than half the counter's range;
- Δt <= 0 skips the interval;
- a value at or above IMPLAUSIBLE_COUNTER is kernel garbage (real kernels
  print per-op time counters near 2^64): that counter gets no delta, the
  key's other counters still do.
"""

from __future__ import annotations

from collections.abc import Hashable, ItemsView, Iterable, Iterator, Mapping, Sequence
from operator import itemgetter, sub
from types import MappingProxyType
from typing import Any, Callable, NamedTuple, Optional, TypeVar, Union, cast

from .points import FieldValue, Point, epoch_ns
from .records import Record

# Counters at or above 2^63 cannot come from a real workload: a 64-bit
# counter of bytes would need 292 years at 1 GB/s to get there. procfs's
# mountstats fixture has an ACCESS rtt of 18446743919241604546 (2^64 - 1.5e8).
IMPLAUSIBLE_COUNTER = 2**63

# A source may declare when its counters started (e.g. NFS mount time =
# sample time - mount `age`, where age is whole seconds). The start may move
# by rounding; more than this means the counters restarted (or, for a source
# that declares its clock offset as the start, that its clock stepped).
STARTED_TOLERANCE_S = 2.0

Gauge = Union[int, float, str, bool]
Key = tuple[tuple[str, str], ...]
# The counters, gauges or widths of a sample that has none: shared, so read-only.
_NOTHING: Mapping = MappingProxyType({})


class Sample(Record):
    """One reading of one natural key of one source.

    Frozen: a sample is what was read, never changed afterwards. A plain class
    (dnfsmon.records): its __init__ is written out, its fields are slots, and absent counters, gauges
    and widths share one empty read-only mapping: a collection at 1000 NFS
    mounts holds some 70 000 samples (two readings), and a generated frozen
    __init__ with default factories and a __dict__ per sample cost about twice
    the time and 20 MiB more (bench/RESULTS.md).
    """

    __slots__ = (
        "_state_key",
        "counters",
        "gauges",
        "identity",
        "key",
        "measurement",
        "started",
        "time",
        "wall_time",
        "widths",
    )

    # Measurement the key belongs to, e.g. "dnfsmon_nic".
    measurement: str
    # Natural key as (tag, value) pairs; these become the point's tags.
    key: Key
    # Seconds on the source's own clock, used for Δt: CLOCK_BOOTTIME for host
    # sources, the database's SYSTIMESTAMP for Oracle.
    time: float
    # Seconds since the Unix epoch: the timestamp of the published point.
    wall_time: float
    # Monotonic counters, cumulative since `started` (default: none).
    counters: Mapping[str, int]
    # Point-in-time values, published as they are (never diffed; default: none).
    gauges: Mapping[str, Gauge]
    # Anything that changes when the counted thing is replaced: boot id,
    # instance startup time, process serial. Compared exactly (default: ()).
    identity: tuple[str, ...]
    # When the counters started, on the same clock as `time`, if known (default: None).
    started: Optional[float]
    # Bit width of counters that wrap (e.g. {"rx_bytes": 32}); others never do (default: none).
    widths: Mapping[str, int]

    def __init__(
        self,
        measurement: str,
        key: Key,
        time: float,
        wall_time: float,
        counters: Optional[Mapping[str, int]] = None,
        gauges: Optional[Mapping[str, Gauge]] = None,
        identity: tuple[str, ...] = (),
        started: Optional[float] = None,
        widths: Optional[Mapping[str, int]] = None,
        state_key: Optional[str] = None,
    ):
        """state_key: the sample's state_key when the caller has it already (a source that makes
        thousands of keys from a few shared parts); it must be the text the property makes."""
        # Frozen: attribute assignment raises, so the fields are set as the generated __init__ sets them.
        set_field = object.__setattr__
        set_field(self, "measurement", measurement)
        set_field(self, "key", key)
        set_field(self, "time", time)
        set_field(self, "wall_time", wall_time)
        set_field(self, "counters", _NOTHING if counters is None else counters)
        set_field(self, "gauges", _NOTHING if gauges is None else gauges)
        set_field(self, "identity", identity)
        set_field(self, "started", started)
        set_field(self, "widths", _NOTHING if widths is None else widths)
        if state_key is not None:
            set_field(self, "_state_key", state_key)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a Sample is read-only: cannot set {name}")

    __delattr__ = __setattr__  # type: ignore[assignment]

    @property
    def state_key(self) -> str:
        """Stable text key for the state file: measurement plus tags, "m,tag=value,tag=value"
        (made once, when first asked, unless given to __init__)."""
        try:
            return self._state_key  # type: ignore[attr-defined]
        except AttributeError:
            pass
        try:
            # "=".join over the (tag, value) pairs runs in C; the same text as the f-string below.
            text = ",".join([self.measurement, *map("=".join, self.key)])
        except TypeError:  # a value that is not a str (a source's mistake, still a valid key)
            text = self.measurement + "".join([f",{k}={v}" for k, v in self.key])
        object.__setattr__(self, "_state_key", text)
        return text

    def to_json(self) -> dict:
        return {
            "measurement": self.measurement,
            "key": [list(pair) for pair in self.key],
            "time": self.time,
            "wall_time": self.wall_time,
            "counters": dict(self.counters),
            "gauges": dict(self.gauges),
            "identity": list(self.identity),
            "started": self.started,
            "widths": dict(self.widths),
        }

    @classmethod
    def from_json(cls, data: dict) -> Sample:
        """Inverse of to_json; raises KeyError/TypeError/ValueError on bad data."""
        if "members" in data:
            return Members.members_from_json(data)
        counters = {str(k): int(v) for k, v in data["counters"].items()}
        widths = {str(k): int(v) for k, v in data.get("widths", {}).items()}
        started = data.get("started")
        return cls(
            measurement=str(data["measurement"]),
            key=tuple((str(k), str(v)) for k, v in data["key"]),
            time=float(data["time"]),
            wall_time=float(data["wall_time"]),
            counters=counters,
            gauges=dict(data.get("gauges", {})),
            identity=tuple(str(x) for x in data.get("identity", [])),
            started=None if started is None else float(started),
            widths=widths,
        )


class CounterVector(Mapping[str, int]):
    """A sample's counters as one tuple of values under one tuple of names, which every sample of
    one shape shares (a mount's operations: some 300 counters, most of them still at each reading).

    A read-only mapping like any sample's counters (the state saves it as one); `diff` takes two
    of one shape in one pass over the tuples, without a dict per sample or per interval.
    """

    __slots__ = ("names", "places", "row")

    def __init__(self, names: tuple[str, ...], places: Mapping[str, int], row: tuple[int, ...]):
        self.names = names  # the counters' names, in the row's order
        self.places = places  # name -> its place in the row (shared with `names`)
        self.row = row

    def __getitem__(self, name: str) -> int:
        return self.row[self.places[name]]

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, name: object) -> bool:
        return name in self.places

    def items(self) -> ItemsView[str, int]:
        return _VectorItems(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CounterVector) and other.names == self.names:
            return other.row == self.row
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # a mapping: equal to a dict of the same counters

    def __repr__(self) -> str:
        return f"CounterVector({dict(self.items())!r})"


class _VectorItems(ItemsView[str, int]):
    """The (name, value) pairs of a CounterVector, paired in C (dict(), state's changed_values)."""

    _mapping: CounterVector

    def __iter__(self) -> Iterator[tuple[str, int]]:
        return zip(self._mapping.names, self._mapping.row)


class Members(Sample):
    """The members of one key read together, each with the same counters: an Oracle instance's
    processes (a V$DNFS_STATS row each), thousands a read, most of them busy at once.

    One sample, with its members' counters and details kept as columns: diff_members takes two
    readings in one pass over the columns, and builds a member's own Sample (member()) only for
    a member that is not simply still there, still held by the same process, with every counter
    moved forward: new, replaced, gone backwards, a NULL, an implausible value. A member is a
    key of its own for every rule of this module (the published figures are those of a sample
    per member diffed by `diff`), so what such a member gets is what `diff` gives its Sample.

    The sample's own fields are the key's (its tags, clock, identity, start); `counters`,
    `gauges` and `widths` are empty. Member i's Sample has the key
    (*key, *member_tags[i], (member_tag, member_ids[i])), the identity
    identity + member_identities[i], counters the non-None values of each column at i, and
    gauges the non-None values of each detail at i.
    """

    __slots__ = ("columns", "details", "member_identities", "member_ids", "member_tag", "member_tags")

    # The tag naming a member in its Sample's key (an Oracle process: "pnum").
    member_tag: str
    # Each member's id (the value of member_tag), in the order read; unique within the sample.
    member_ids: tuple[str, ...]
    # The tags each member's key has between the sample's key and its id (a process's PDB).
    member_tags: tuple[Key, ...]
    # What replaces a member under the same id (a process's SPID and SERIAL#), compared exactly.
    member_identities: tuple[tuple[str, ...], ...]
    # Counter name -> each member's count in member_ids' order (None: the member has no such counter).
    columns: Mapping[str, tuple[Optional[int], ...]]
    # Gauge name -> each member's value (None: the member has no such gauge).
    details: Mapping[str, tuple[Optional[Gauge], ...]]

    def __init__(
        self,
        measurement: str,
        key: Key,
        time: float,
        wall_time: float,
        identity: tuple[str, ...],
        started: Optional[float],
        member_tag: str,
        member_ids: tuple[str, ...],
        member_tags: tuple[Key, ...],
        member_identities: tuple[tuple[str, ...], ...],
        columns: Mapping[str, tuple[Optional[int], ...]],
        details: Mapping[str, tuple[Optional[Gauge], ...]],
    ):
        super().__init__(measurement, key, time, wall_time, None, None, identity, started)
        set_field = object.__setattr__
        set_field(self, "member_tag", member_tag)
        set_field(self, "member_ids", member_ids)
        set_field(self, "member_tags", member_tags)
        set_field(self, "member_identities", member_identities)
        set_field(self, "columns", columns)
        set_field(self, "details", details)

    def member(self, i: int) -> Sample:
        """Member i as a Sample of its own (what a sample per member would have been)."""
        return Sample(
            self.measurement,
            (*self.key, *self.member_tags[i], (self.member_tag, self.member_ids[i])),
            self.time,
            self.wall_time,
            {name: values[i] for name, values in self.columns.items() if values[i] is not None},  # type: ignore[misc]
            {name: values[i] for name, values in self.details.items() if values[i] is not None},  # type: ignore[misc]
            self.identity + self.member_identities[i],
            self.started,
        )

    def to_json(self) -> dict:
        data = super().to_json()
        data["members"] = {
            "tag": self.member_tag,
            "ids": list(self.member_ids),
            "tags": [[list(pair) for pair in tags] for tags in self.member_tags],
            "identities": [list(identity) for identity in self.member_identities],
            "columns": {name: list(values) for name, values in self.columns.items()},
            "details": {name: list(values) for name, values in self.details.items()},
        }
        return data

    @classmethod
    def members_from_json(cls, data: dict) -> Members:
        """Inverse of to_json; raises KeyError/TypeError/ValueError on bad data."""
        members = data["members"]
        ids = tuple(str(member) for member in members["ids"])
        count = len(ids)

        def column(values: list, convert: Callable[[Any], Any]) -> tuple:
            if len(values) != count:
                raise ValueError(f"a column of {len(values)} values for {count} members")
            return tuple(None if value is None else convert(value) for value in values)

        started = data.get("started")
        return cls(
            measurement=str(data["measurement"]),
            key=tuple((str(k), str(v)) for k, v in data["key"]),
            time=float(data["time"]),
            wall_time=float(data["wall_time"]),
            identity=tuple(str(x) for x in data.get("identity", [])),
            started=None if started is None else float(started),
            member_tag=str(members["tag"]),
            member_ids=ids,
            member_tags=column(members["tags"], lambda tags: tuple((str(k), str(v)) for k, v in tags)),
            member_identities=column(members["identities"], lambda identity: tuple(str(x) for x in identity)),
            columns={str(name): column(values, int) for name, values in members["columns"].items()},
            details={str(name): column(values, _gauge) for name, values in members["details"].items()},
        )


def _gauge(value: object) -> Gauge:
    if not isinstance(value, (int, float, str, bool)):
        raise TypeError(f"a gauge must be a number, a text or a boolean, not {type(value).__name__}")
    return value


class Interval(NamedTuple):
    """What happened to one key between two samples (read-only: dnfsmon.records)."""

    previous: Sample
    current: Sample
    # Measured length of the interval in seconds (> 0).
    dt: float
    # Counter increases over the interval, only for counters valid in both.
    deltas: Mapping[str, int]
    # Counters left out of `deltas`, with the reason (implausible values).
    dropped: dict[str, str]

    def rate(self, counter: str) -> Optional[float]:
        """Increase per second of one counter, None when it has no delta."""
        if counter not in self.deltas:
            return None
        return per_second(self.deltas[counter], self.dt)


class Skip(NamedTuple):
    """A key that has no interval this time, and why (for the log; read-only: dnfsmon.records)."""

    current: Sample
    reason: str
    # True for the expected first sample of a key (logged at debug only).
    baseline: bool = False
    # What happened, for the agent's events (EVENT_KINDS): "" for the first
    # sample of a key and for a non-positive interval, which are no events.
    event: str = ""


# Skips that are events a viewer wants marked on a graph (dnfsmon_event.kind):
# the series started again from a new baseline, or a counter went backwards.
REBASELINE = "re-baseline"
COUNTER_RESET = "counter-reset"
EVENT_KINDS = (REBASELINE, COUNTER_RESET)


def diff(previous: Optional[Sample], current: Sample) -> Union[Interval, Skip]:
    """Pair two samples of the same key; see the module docstring for rules."""
    if previous is None:
        return Skip(current, "first sample of this key (baseline)", baseline=True)
    if previous.identity != current.identity:
        return Skip(
            current,
            f"identity changed {list(previous.identity)} -> {list(current.identity)} (re-baseline)",
            baseline=True,
            event=REBASELINE,
        )
    if (previous.started is None) != (current.started is None) or (
        previous.started is not None
        and current.started is not None
        and abs(current.started - previous.started) > STARTED_TOLERANCE_S
    ):
        return Skip(
            current,
            f"counters restarted or the source clock stepped (start {previous.started} -> {current.started}; re-baseline)",
            baseline=True,
            event=REBASELINE,
        )
    dt = current.time - previous.time
    if not dt > 0:
        return Skip(current, f"interval of {dt:.6f} s is not positive")

    counters, before_counters = current.counters, previous.counters
    dropped: dict[str, str] = {}
    row_before = _row_of(before_counters, counters) if type(counters) is CounterVector and not current.widths else None
    if row_before is not None:
        # A vector (a mount's operations), none declared to wrap, and the previous sample's
        # counters of the same names in the same order (a vector, or the dict a state load
        # gives back): every delta in one pass over the tuples. When no value is implausible and
        # none went backwards, these are the deltas the loop below would find (tests/test_rates.py
        # checks it); otherwise the loop says which counter and why. Equal rows are all zeros,
        # found without a subtraction.
        row = counters.row  # type: ignore[attr-defined]
        names, places = counters.names, counters.places  # type: ignore[attr-defined]
        if not row or (min(row_before) >= 0 and max(row) < IMPLAUSIBLE_COUNTER):
            if row == row_before:
                return Interval(previous, current, dt, CounterVector(names, places, (0,) * len(row)), dropped)
            moved = tuple(map(sub, row, row_before))
            if min(moved) >= 0:
                return Interval(previous, current, dt, CounterVector(names, places, moved), dropped)
    widths = current.widths
    if counters and not widths and counters.keys() == before_counters.keys():
        # The same counters in both, none declared to wrap (a busy Oracle process, an
        # active mount): every delta in one pass. When no value is implausible and
        # none went backwards, these are the deltas the loop below would find;
        # otherwise the loop says which counter and why.
        deltas = {name: now - before_counters[name] for name, now in counters.items()}
        if (
            min(before_counters.values()) >= 0
            and max(counters.values()) < IMPLAUSIBLE_COUNTER
            and min(deltas.values()) >= 0
        ):
            return Interval(previous, current, dt, deltas, dropped)
    deltas = {}
    for name, now in counters.items():
        before = before_counters.get(name)
        if before is None:
            continue
        width = widths.get(name) if widths else None
        limit = min(2**width, IMPLAUSIBLE_COUNTER) if width else IMPLAUSIBLE_COUNTER
        if not (0 <= before < limit and 0 <= now < limit):
            dropped[name] = f"implausible value {before if not 0 <= before < limit else now}"
            continue
        delta = now - before
        # A declared-width counter that went backwards wrapped, unless the
        # wrapped delta would be half its range or more: then it was reset.
        if delta < 0 and width and delta + 2**width < min(2 ** (width - 1), IMPLAUSIBLE_COUNTER):
            delta += 2**width
        if delta < 0:
            return Skip(
                current,
                f"counter {name} went backwards {before} -> {now} (reset; interval dropped)",
                event=COUNTER_RESET,
            )
        deltas[name] = delta
    return Interval(previous, current, dt, deltas, dropped)


def _row_of(counters: Mapping[str, int], like: CounterVector) -> Optional[tuple[int, ...]]:
    """`counters`' values as a row of `like`'s shape: the same names in the same order; else None."""
    if type(counters) is CounterVector:
        return counters.row if counters.names == like.names else None
    if type(counters) is dict and tuple(counters) == like.names:
        return tuple(counters.values())
    return None


def deltas_counting_new_from_zero(interval: Interval) -> dict[str, int]:
    """The interval's deltas, plus counters absent from the previous sample counted from zero.

    For a vector of counters whose members appear only once they are non-zero
    (Oracle's V$EVENT_HISTOGRAM lists only the buckets hit since startup):
    `diff` already checked the identity, so a member absent before was zero.
    """
    deltas = dict(interval.deltas)
    for name, now in interval.current.counters.items():
        if name not in interval.previous.counters and 0 <= now < IMPLAUSIBLE_COUNTER:
            deltas[name] = now
    return deltas


def interval_from_zero(current: Sample, since: float) -> Optional[Interval]:
    """The interval of a key known to have started after `since` (the previous reading's time).

    For counters that start at zero with the thing they count (an Oracle
    process's V$DNFS_STATS row): all of a new process's counts were made
    between the previous reading and this one. None when that interval is
    not positive. Implausible values give no delta, as in diff.
    """
    dt = current.time - since
    if not dt > 0:
        return None
    deltas = {name: now for name, now in current.counters.items() if 0 <= now < IMPLAUSIBLE_COUNTER}
    dropped = {name: f"implausible value {now}" for name, now in current.counters.items() if name not in deltas}
    zero = Sample(
        current.measurement, current.key, since, since, dict.fromkeys(current.counters, 0), {}, current.identity
    )
    return Interval(zero, current, dt, deltas, dropped)


class MembersInterval(NamedTuple):
    """The members of a Members sample that are simply still there between two readings of it:
    the same id, tags and identity, every counter read both times, plausible and not gone
    backwards. Its other members are among the DiffResult's intervals and skips, as `diff`
    gives them (read-only: dnfsmon.records)."""

    previous: Members
    current: Members
    # Measured length of the interval in seconds (> 0), the same for every member.
    dt: float
    # The places in `current` of these members, in the order read.
    moved: Sequence[int]
    # Counter name -> each of these members' increase, in `moved`'s order.
    deltas: Mapping[str, Sequence[int]]


class DiffResult(NamedTuple):
    intervals: list[Interval]
    skips: list[Skip]
    # The intervals of Members samples (their other members are among intervals and skips).
    tables: list[MembersInterval]


def diff_all(previous: Mapping[str, Sample], current: Iterable[Sample]) -> DiffResult:
    """Diff every current sample against the previous sample of its key."""
    result = DiffResult([], [], [])
    for sample in current:
        if type(sample) is Members:
            diff_members(previous.get(sample.state_key), sample, result)
            continue
        outcome = diff(previous.get(sample.state_key), sample)
        if isinstance(outcome, Interval):
            result.intervals.append(outcome)
        else:
            result.skips.append(outcome)
    return result


def _members_interval(previous: Optional[Sample], current: Members) -> Optional[float]:
    """The interval's length when the members of `current` may be diffed against those of
    `previous`: the same key read before, as Members, of the same instance (identity) and start,
    over a positive interval (diff's rules); else None."""
    if type(previous) is not Members or previous.identity != current.identity:
        return None
    if previous.member_tag != current.member_tag:
        return None
    if (previous.started is None) != (current.started is None) or (
        previous.started is not None
        and current.started is not None
        and abs(current.started - previous.started) > STARTED_TOLERANCE_S
    ):
        return None
    dt = current.time - previous.time
    return dt if dt > 0 else None


def diff_members(previous: Optional[Sample], current: Members, result: DiffResult) -> None:
    """Diff each member of `current` against the same member of `previous`, as `diff` would diff a
    sample per member, into `result`: the members simply still there as one MembersInterval, the
    others as `diff` gives their Samples.

    Without an interval of the whole (the first reading, an instance restart, a stepped clock, a
    counter more or less than before, dt <= 0), every member is diffed as its own Sample, which
    is what `diff` says of each then. Otherwise a member is diffed as its own Sample only when it
    is not the same member as before (a new id, another holder, other tags), or when one of its
    counters is missing, implausible or went backwards either time; the rest are subtracted a
    column at a time.
    """
    dt = _members_interval(previous, current)
    count = len(current.member_ids)
    if dt is None:
        before: dict[str, Sample] = {}
        if type(previous) is Members:
            members = (previous.member(j) for j in range(len(previous.member_ids)))
            before = {sample.state_key: sample for sample in members}
        for i in range(count):
            sample = current.member(i)
            _add(result, diff(before.get(sample.state_key), sample))
        return
    assert type(previous) is Members  # _members_interval checked it
    ids, identities, tags = current.member_ids, current.member_identities, current.member_tags
    slow: list[tuple[int, Optional[int]]] = []  # (place now, place before or None)
    moved: list[int]
    before_places: list[int]
    if previous.columns.keys() != current.columns.keys():
        # A counter more or fewer than before (an upgrade): each member as `diff` takes it.
        where = dict(zip(previous.member_ids, range(len(previous.member_ids))))
        for i, member in enumerate(ids):
            j = where.get(member)
            slow.append((i, j if j is not None and previous.member_tags[j] == tags[i] else None))
        moved, before_places = [], []
    elif previous.member_ids == ids and previous.member_identities == identities and previous.member_tags == tags:
        moved = list(range(count))
        before_places = moved
    else:
        where = dict(zip(previous.member_ids, range(len(previous.member_ids))))
        moved, before_places = [], []
        held, tagged = previous.member_identities, previous.member_tags
        for i, member in enumerate(ids):
            j = where.get(member)
            if j is not None and held[j] == identities[i] and tagged[j] == tags[i]:
                moved.append(i)
                before_places.append(j)
            else:
                # Another key, or the same key held by another process: `diff` says which.
                slow.append((i, j if j is not None and tagged[j] == tags[i] else None))
    deltas, doubtful = _column_deltas(previous, current, moved, before_places) if moved else ({}, set())
    if doubtful:
        kept = [(i, j) for i, j in zip(moved, before_places) if i not in doubtful]
        slow.extend((i, j) for i, j in zip(moved, before_places) if i in doubtful)
        moved, before_places = [i for i, _ in kept], [j for _, j in kept]
        deltas, _ = _column_deltas(previous, current, moved, before_places)
    result.tables.append(MembersInterval(previous, current, dt, moved, deltas))
    for i, j in sorted(slow):
        _add(result, diff(None if j is None else previous.member(j), current.member(i)))


def _add(result: DiffResult, outcome: Union[Interval, Skip]) -> None:
    if isinstance(outcome, Interval):
        result.intervals.append(outcome)
    else:
        result.skips.append(outcome)


def _column_deltas(
    previous: Members, current: Members, moved: Sequence[int], before_places: Sequence[int]
) -> tuple[dict[str, Sequence[int]], set[int]]:
    """(counter name -> the increase of each member of `moved` over its place before, the members of
    `moved` that `diff` would not simply subtract: a counter missing, implausible or gone backwards).

    Each column is gathered, checked and subtracted in C; only a column that fails a check is
    walked member by member, to find which."""
    deltas: dict[str, Sequence[int]] = {}
    doubtful: set[int] = set()
    now_of, before_of = _picker(moved), _picker(before_places)
    for name, values in current.columns.items():
        now, before = now_of(values), before_of(previous.columns[name])
        if not now:
            deltas[name] = []
            continue
        whole_now, whole_before = cast("Sequence[int]", now), cast("Sequence[int]", before)
        try:
            if min(whole_before) >= 0 and max(whole_now) < IMPLAUSIBLE_COUNTER:
                increases = list(map(sub, whole_now, whole_before))
                if min(increases) >= 0:  # so every value is at least 0 and below the bound
                    deltas[name] = increases
                    continue
        except TypeError:  # a None (a NULL) among them, which no number compares with: found below
            pass
        doubtful.update(
            i
            for i, value, value_before in zip(moved, now, before)
            if value is None or value_before is None or not 0 <= value_before <= value < IMPLAUSIBLE_COUNTER
        )
    return deltas, doubtful


def _picker(places: Sequence[int]) -> Callable[[Sequence], Sequence]:
    """values -> the values at `places`, in that order, gathered in one C call."""
    if len(places) == 1:
        only = places[0]
        return lambda values: (values[only],)
    if not places:
        return lambda values: ()
    return itemgetter(*places)


class Aggregate(NamedTuple):
    """Intervals of several keys summed into one published series (read-only: dnfsmon.records)."""

    # The common interval length of the members.
    dt: float
    # Sums of each counter's deltas, for counters every member has a delta of
    # (a sum missing a member would understate the series).
    deltas: Mapping[str, int]
    members: list[Interval]

    def rate(self, counter: str) -> Optional[float]:
        if counter not in self.deltas:
            return None
        return per_second(self.deltas[counter], self.dt)


# Members of one aggregate come from one reading of one source, so their
# interval lengths agree; allow for float rounding only.
AGGREGATE_DT_TOLERANCE_S = 1e-6

# The key a caller groups intervals by (a tuple of tags); aggregate() gives it back as it came.
GroupKey = TypeVar("GroupKey", bound=Hashable)


def aggregate(intervals: Iterable[Interval], group_of: Callable[[Interval], GroupKey]) -> dict[GroupKey, Aggregate]:
    """Sum per-key deltas into groups: diff per key first, then aggregate.

    Keys that are new this time (baselines) or were reset are not among the
    intervals, so they add nothing - never a negative or a since-start count.
    """
    groups: dict[GroupKey, list[Interval]] = {}
    for interval in intervals:
        groups.setdefault(group_of(interval), []).append(interval)
    result: dict[GroupKey, Aggregate] = {}
    for group, members in groups.items():
        dts = [m.dt for m in members]
        if max(dts) - min(dts) > AGGREGATE_DT_TOLERANCE_S:
            raise ValueError(f"intervals of group {group} differ in length: {min(dts)} s to {max(dts)} s")
        member_deltas = [m.deltas for m in members]
        names = set(member_deltas[0]).intersection(*member_deltas[1:])
        # Each counter's deltas summed in member order (map and itemgetter run in C).
        deltas = {name: sum(map(itemgetter(name), member_deltas)) for name in sorted(names)}
        result[group] = Aggregate(dts[0], deltas, members)
    return result


class MembersAggregate(NamedTuple):
    """The members of one group summed (aggregate_members; read-only: dnfsmon.records)."""

    dt: float
    # Sums of each counter's deltas, for counters every member has a delta of (as Aggregate's).
    deltas: Mapping[str, int]
    # How many members were summed, and how many of them had a counter move.
    members: int
    active: int
    # The wall time of the reading the members were read in (the published point's).
    wall_time: float

    def rate(self, counter: str) -> Optional[float]:
        if counter not in self.deltas:
            return None
        return per_second(self.deltas[counter], self.dt)


def aggregate_members(tables: Iterable[MembersInterval], intervals: Iterable[Interval]) -> dict[Key, MembersAggregate]:
    """Sum the members of Members samples per group: a member's group is its key without its id
    (an Oracle process's instance and PDB). `tables` are the members simply still there;
    `intervals` the others that have one (diffed on their own, or counted from zero), each with
    its member id last in its key. As `aggregate` sums a group's intervals, and the order of
    first appearance: the tables' members first."""
    names_of: dict[Key, set[str]] = {}
    sums: dict[Key, dict[str, int]] = {}
    counts: dict[Key, list] = {}  # group -> [dt, members, active, wall time]

    def add(group: Key, dt: float, deltas: Mapping[str, int], members: int, active: int, wall_time: float) -> None:
        count = counts.get(group)
        if count is None:
            counts[group] = [dt, members, active, wall_time]
            names_of[group] = set(deltas)
            sums[group] = dict(deltas)
            return
        if abs(count[0] - dt) > AGGREGATE_DT_TOLERANCE_S:
            raise ValueError(f"intervals of group {group} differ in length: {count[0]} s and {dt} s")
        count[1] += members
        count[2] += active
        names_of[group] &= deltas.keys()
        total = sums[group]
        for name in names_of[group]:
            total[name] += deltas[name]

    for table in tables:
        current = table.current
        member_tags = current.member_tags
        places: dict[Key, list[int]] = {}  # group's tags after the key -> places in table.moved
        if len(set(member_tags)) == 1:
            places[member_tags[0]] = list(range(len(table.moved)))
        else:
            for place, i in enumerate(table.moved):
                places.setdefault(member_tags[i], []).append(place)
        for tags, members in places.items():
            if not members:
                continue
            if len(members) == len(table.moved):  # every member (places are unique, in order)
                columns = dict(table.deltas)
            else:
                columns = {name: list(map(deltas.__getitem__, members)) for name, deltas in table.deltas.items()}
            active = sum(map(any, zip(*columns.values()))) if columns else 0
            summed = {name: sum(c) for name, c in columns.items()}
            add((*current.key, *tags), table.dt, summed, len(members), active, current.wall_time)
    for interval in intervals:
        deltas = interval.deltas
        active = 1 if any(deltas.values()) else 0
        add(interval.current.key[:-1], interval.dt, deltas, 1, active, interval.current.wall_time)
    return {
        group: MembersAggregate(
            count[0], {name: sums[group][name] for name in sorted(names_of[group])}, count[1], count[2], count[3]
        )
        for group, count in counts.items()
    }


def per_key_points(result: DiffResult, fields: Callable[[Interval], Mapping[str, FieldValue]]) -> list[Point]:
    """One point per key with an interval: the publish step of a source whose
    keys are its published series (an interface, a mount). `fields` gives the
    published fields of one interval; a key with no fields has no point."""
    points = []
    timestamps: dict[float, int] = {}  # the samples of one reading share their wall time
    for interval in result.intervals:
        values = fields(interval)
        if values:
            sample = interval.current
            wall_time = sample.wall_time
            if wall_time not in timestamps:
                timestamps[wall_time] = epoch_ns(wall_time)
            points.append(Point(sample.measurement, sample.key, dict(values), timestamps[wall_time]))
    return points


# --- Derived figures. Every published division goes through one of these. ---


def per_second(delta: float, dt: float) -> float:
    """Increase per second over a measured interval (dt > 0 by construction)."""
    return delta / dt


def mean_per_event(total_delta: Optional[float], events_delta: Optional[float]) -> Optional[float]:
    """Average of a summed quantity per event, e.g. ms per op or bytes per packet.

    None (publish nothing) when there were no events: an average over zero
    events is undefined, not zero.
    """
    if total_delta is None or not events_delta:
        return None
    return total_delta / events_delta


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean of point-in-time values (callers pass a non-empty list)."""
    return sum(values) / len(values)


def percent(part: Optional[float], whole: Optional[float]) -> Optional[float]:
    """100 * part / whole; None when whole is zero or unknown."""
    if part is None or not whole:
        return None
    return 100.0 * part / whole


def ratio(part: Optional[float], whole: Optional[float]) -> Optional[float]:
    """part / whole of two point-in-time values (e.g. runnable tasks per CPU); None when whole is 0 or unknown."""
    if part is None or not whole:
        return None
    return part / whole


def histogram_quantile(buckets: Iterable[tuple[float, float]], quantile: float) -> Optional[float]:
    """The quantile (0 < q < 1) of a histogram of (upper bound, count per second) buckets.

    Oracle's wait histograms count waits shorter than each bucket's bound and at
    least half of it (GV$EVENT_HISTOGRAM: "less than WAIT_TIME_MILLI, at least
    half of it"), so a bucket covers [bound/2, bound). The result interpolates
    linearly inside the bucket where the cumulative count crosses the quantile,
    as Prometheus' histogram_quantile does; None without any count. Buckets of the same
    bound (one per RAC instance) are one bucket: their counts are added before interpolating.
    """
    merged: dict[float, float] = {}
    for bound, count in buckets:
        merged[bound] = merged.get(bound, 0.0) + count
    ordered = sorted((bound, count) for bound, count in merged.items() if count > 0)
    total = sum(count for _, count in ordered)
    if not ordered or total <= 0:
        return None
    wanted = quantile * total
    below = 0.0
    for bound, count in ordered:
        if below + count >= wanted:
            return bound / 2 + (bound - bound / 2) * (wanted - below) / count
        below += count
    return ordered[-1][0]


def difference(minuend: Optional[float], subtrahend: Optional[float]) -> Optional[float]:
    """minuend - subtrahend when both are known and the result is not negative, else None.

    For "the part of a latency another one does not explain": a negative
    result means the two were not measured over the same operations, so no
    number is published rather than a doubtful one.
    """
    if minuend is None or subtrahend is None or minuend < subtrahend:
        return None
    return minuend - subtrahend


def weighted_mean(pairs: Iterable[tuple[Optional[float], Optional[float]]]) -> Optional[float]:
    """Σ value*weight / Σ weight over (value, weight) pairs with both known; None without weight.

    E.g. the average latency of several instances from each one's average and
    its waits per second: the average over all their waits.
    """
    known = [(value, weight) for value, weight in pairs if value is not None and weight]
    total = sum(weight for _, weight in known)
    if not total:
        return None
    return sum(value * weight for value, weight in known) / total
