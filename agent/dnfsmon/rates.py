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
from typing import Callable, NamedTuple, Optional, TypeVar, Union

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


class DiffResult(NamedTuple):
    intervals: list[Interval]
    skips: list[Skip]


def diff_all(previous: Mapping[str, Sample], current: Iterable[Sample]) -> DiffResult:
    """Diff every current sample against the previous sample of its key."""
    result = DiffResult([], [])
    for sample in current:
        outcome = diff(previous.get(sample.state_key), sample)
        if isinstance(outcome, Interval):
            result.intervals.append(outcome)
        else:
            result.skips.append(outcome)
    return result


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
