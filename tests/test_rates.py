"""The rate engine: named sequences (psutil TestWrapNumbers style) and properties."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from dnfsmon import rates
from dnfsmon.rates import Interval, Sample, Skip


def sample(t, identity=(), started=None, widths=None, **counters):
    return Sample(
        measurement="m",
        key=(("k", "1"),),
        time=t,
        wall_time=1_700_000_000 + t,
        counters=counters,
        identity=identity,
        started=started,
        widths=widths or {},
    )


def run(sequence):
    """Diff a sequence of samples of one key; a list of deltas dicts or skip reasons."""
    previous = None
    out = []
    for current in sequence:
        result = rates.diff(previous, current)
        out.append(result.deltas if isinstance(result, Interval) else result.reason)
        previous = current
    return out


def test_first_sample_is_baseline_only():
    result = rates.diff(None, sample(0, c=5))
    assert isinstance(result, Skip) and result.baseline
    assert "baseline" in result.reason


def test_steady_increase():
    assert run([sample(0, c=10), sample(5, c=60), sample(10, c=60)])[1:] == [{"c": 50}, {"c": 0}]


def test_rate_divides_by_measured_interval():
    result = rates.diff(sample(100.0, c=0), sample(102.5, c=10))
    assert result.dt == 2.5
    assert result.rate("c") == 4.0


def test_negative_delta_drops_the_whole_key_interval_then_rebaselines():
    out = run([sample(0, a=100, b=100), sample(1, a=150, b=20), sample(2, a=160, b=30)])
    assert "counter b went backwards 100 -> 20" in out[1]
    assert out[2] == {"a": 10, "b": 10}


def test_identity_change_resets_even_when_counters_grow():
    # A process replaced under the same PNUM whose new counters happen to be higher.
    out = run(
        [
            sample(0, identity=("spid1",), c=10),
            sample(1, identity=("spid2",), c=500),
            sample(2, identity=("spid2",), c=510),
        ]
    )
    assert "identity changed" in out[1]
    assert out[2] == {"c": 10}


def test_started_moving_beyond_tolerance_resets():
    # Mount remounted: its start (time - age) moves by more than the rounding slack.
    out = run([sample(100, started=10.0, c=5), sample(160, started=11.0, c=9), sample(220, started=150.0, c=1)])
    assert out[1] == {"c": 4}
    assert "restarted" in out[2]


def test_non_positive_interval_is_skipped():
    out = run([sample(10, c=1), sample(10, c=2)])
    assert "not positive" in out[1]
    out = run([sample(10, c=1), sample(9, c=2)])
    assert "not positive" in out[1]


def test_wrap_only_for_declared_width():
    w = {"c": 32}
    assert run([sample(0, widths=w, c=2**32 - 10), sample(1, widths=w, c=5)])[1] == {"c": 15}
    # Undeclared width: the same numbers are a reset.
    assert "went backwards" in run([sample(0, c=2**32 - 10), sample(1, c=5)])[1]


def test_value_beyond_declared_width_is_implausible():
    result = rates.diff(sample(0, widths={"c": 32}, c=1), sample(1, widths={"c": 32}, c=2**32 + 1))
    assert result.deltas == {} and "implausible" in result.dropped["c"]


def test_implausible_value_drops_that_counter_only():
    # procfs fixture: an ACCESS rtt of 18446743919241604546.
    out = rates.diff(sample(0, ops=10, rtt=18446743919241604546), sample(1, ops=20, rtt=18446743919241605000))
    assert out.deltas == {"ops": 10}
    assert "implausible value 18446743919241604546" in out.dropped["rtt"]


def test_counter_missing_on_one_side_has_no_delta():
    assert run([sample(0, a=1), sample(1, a=2, b=7)])[1] == {"a": 1}


def test_zero_counter_is_a_value_not_missing():
    # Glances treated a zero counter as "no previous value".
    assert run([sample(0, c=0), sample(1, c=0), sample(2, c=3)])[1:] == [{"c": 0}, {"c": 3}]


def test_diff_all_pairs_by_key_not_by_position():
    a0 = Sample("m", (("if", "a"),), 0, 0, {"c": 0})
    b0 = Sample("m", (("if", "b"),), 0, 0, {"c": 1000})
    a1 = Sample("m", (("if", "a"),), 1, 1, {"c": 5})
    b1 = Sample("m", (("if", "b"),), 1, 1, {"c": 1001})
    c1 = Sample("m", (("if", "c"),), 1, 1, {"c": 1})
    result = rates.diff_all({s.state_key: s for s in (a0, b0)}, [b1, c1, a1])
    assert {i.current.key[0][1]: i.deltas["c"] for i in result.intervals} == {"a": 5, "b": 1}
    assert [s.current.key for s in result.skips] == [(("if", "c"),)]


def test_helpers():
    assert rates.per_second(10, 4) == 2.5
    assert rates.mean_per_event(100, 4) == 25
    assert rates.mean_per_event(100, 0) is None
    assert rates.mean_per_event(None, 4) is None
    assert rates.percent(1, 4) == 25.0
    assert rates.percent(1, 0) is None


def test_sample_json_round_trip():
    s = Sample("m", (("a", "b"),), 1.5, 2.5, {"c": 2**62}, {"g": 1.5, "s": "x"}, ("id",), 3.0, {"c": 32})
    assert Sample.from_json(s.to_json()) == s


# --- properties ---

increments = st.lists(st.integers(min_value=0, max_value=10**12), min_size=1, max_size=30)
steps = st.lists(st.floats(min_value=1e-3, max_value=1e5, allow_nan=False), min_size=30, max_size=30)


@given(increments, steps)
def test_without_resets_sum_of_rate_times_dt_is_the_total_increase(incs, dts):
    t, value = 0.0, 7
    samples = [sample(t, c=value)]
    for inc, dt in zip(incs, dts):
        t += dt
        value += inc
        samples.append(sample(t, c=value))
    total = 0.0
    for prev, cur in zip(samples, samples[1:]):
        interval = rates.diff(prev, cur)
        total += interval.rate("c") * interval.dt
    assert total == pytest.approx(sum(incs), rel=1e-9, abs=1e-6)


@given(
    st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=2**64 + 5), st.floats(min_value=-5, max_value=50, allow_nan=False)
        ),
        min_size=2,
        max_size=40,
    ),
    st.sampled_from([None, 32, 64]),
)
def test_never_a_negative_rate(values_and_dts, width):
    widths = {"c": width} if width else {}
    t = 0.0
    previous = None
    for value, dt in values_and_dts:
        t += dt
        current = sample(t, widths=widths, c=value)
        result = rates.diff(previous, current)
        if isinstance(result, Interval):
            assert result.dt > 0
            for name in result.deltas:
                assert result.rate(name) >= 0
                assert result.deltas[name] < rates.IMPLAUSIBLE_COUNTER
        previous = current


def test_backwards_by_more_than_half_the_range_is_a_reset_even_with_width():
    w = {"c": 32}
    assert "went backwards" in run([sample(0, widths=w, c=1000), sample(1, widths=w, c=5)])[1]
    w = {"c": 64}
    assert "went backwards" in run([sample(0, widths=w, c=1), sample(1, widths=w, c=0)])[1]


def test_aggregate_sums_per_key_deltas_and_ignores_new_keys():
    def s(key, t, c, identity=()):
        return Sample("m", (("sock", key), ("srv", "a")), t, t, {"c": c, "d": c}, identity=identity)

    previous = {x.state_key: x for x in (s("1", 0, 100), s("2", 0, 1000), s("3", 0, 50))}
    # "2" was replaced (new identity), "4" is new: neither contributes.
    current = [s("1", 10, 150), s("2", 10, 5, identity=("new",)), s("3", 10, 80), s("4", 10, 10**6)]
    result = rates.diff_all(previous, current)
    groups = rates.aggregate(result.intervals, lambda i: dict(i.current.key)["srv"])
    assert groups["a"].deltas == {"c": 80, "d": 80}
    assert groups["a"].rate("c") == 8.0
    assert len(groups["a"].members) == 2


def test_aggregate_keeps_only_counters_every_member_has():
    a = rates.diff(sample(0, c=1, d=1), sample(1, c=2, d=2))
    b = rates.diff(sample(0, c=1), sample(1, c=3))
    (group,) = rates.aggregate([a, b], lambda i: "g").values()
    assert group.deltas == {"c": 3}


def test_aggregate_refuses_members_of_different_lengths():
    a = rates.diff(sample(0, c=1), sample(1, c=2))
    b = rates.diff(sample(0, c=1), sample(2, c=3))
    with pytest.raises(ValueError, match="differ in length"):
        rates.aggregate([a, b], lambda i: "g")


def test_64_bit_declared_width_still_rejects_values_from_2_63():
    result = rates.diff(sample(0, widths={"c": 64}, c=0), sample(1, widths={"c": 64}, c=2**63))
    assert result.deltas == {} and "implausible" in result.dropped["c"]


# --- rates.diff has two shortcuts (nothing moved; same counters, none wrapping) before its
# counter-by-counter loop. The rules, written once more here as the plainest loop, must give
# the same result whatever the counters: the shortcuts may only be faster, never different.


def reference_diff(previous: Sample, current: Sample):
    """The module docstring's rules for two samples of one identity and start, one counter at a time."""
    dt = current.time - previous.time
    deltas, dropped = {}, {}
    for name, now in current.counters.items():
        before = previous.counters.get(name)
        if before is None:
            continue
        width = current.widths.get(name)
        limit = min(2**width, rates.IMPLAUSIBLE_COUNTER) if width else rates.IMPLAUSIBLE_COUNTER
        if not (0 <= before < limit and 0 <= now < limit):
            dropped[name] = True
            continue
        delta = now - before
        if delta < 0 and width and delta + 2**width < min(2 ** (width - 1), rates.IMPLAUSIBLE_COUNTER):
            delta += 2**width
        if delta < 0:
            return "reset"
        deltas[name] = delta
    return dt, deltas, set(dropped)


COUNTER_VALUES = st.one_of(
    st.integers(0, 50),
    st.integers(2**32 - 5, 2**32 + 5),
    st.integers(rates.IMPLAUSIBLE_COUNTER - 2, rates.IMPLAUSIBLE_COUNTER + 2),
    st.integers(-3, -1),
)


@given(
    before=st.dictionaries(st.sampled_from("abcd"), COUNTER_VALUES, max_size=4),
    after=st.dictionaries(st.sampled_from("abcd"), COUNTER_VALUES, max_size=4),
    same=st.booleans(),
    width=st.sampled_from([None, 32]),
)
def test_diff_shortcuts_agree_with_the_rules_counter_by_counter(before, after, same, width):
    current_counters = dict(before) if same else after
    widths = dict.fromkeys(current_counters, width) if width else {}
    previous = Sample("m", (("k", "1"),), 100.0, 100.0, before, None, ("boot",))
    current = Sample("m", (("k", "1"),), 110.0, 110.0, current_counters, None, ("boot",), widths=widths)
    got = rates.diff(previous, current)
    expected = reference_diff(previous, current)
    if expected == "reset":
        assert isinstance(got, Skip) and got.event == rates.COUNTER_RESET
    else:
        assert isinstance(got, Interval)
        assert (got.dt, got.deltas, set(got.dropped)) == expected


# --- A CounterVector (a mount's operations' counters as one tuple) is diffed in one pass over the
# tuples when both samples have one of the same names: the same result as the rules above, and as
# the same counters in dicts (which a state load gives back).

VECTOR_NAMES = ("a", "b", "c", "d")
VECTOR_PLACES = {name: place for place, name in enumerate(VECTOR_NAMES)}


def vector(values):
    return rates.CounterVector(VECTOR_NAMES, VECTOR_PLACES, tuple(values))


@given(
    before=st.lists(COUNTER_VALUES, min_size=4, max_size=4),
    after=st.lists(COUNTER_VALUES, min_size=4, max_size=4),
    same=st.booleans(),
    previous_as=st.sampled_from(["vector", "dict"]),
    current_as=st.sampled_from(["vector", "dict"]),
)
def test_counter_vectors_diff_as_the_rules_and_as_dicts_do(before, after, same, previous_as, current_as):
    values_now = list(before) if same else after

    def make(t, values, kind):
        counters = vector(values) if kind == "vector" else dict(zip(VECTOR_NAMES, values))
        return Sample("m", (("k", "1"),), t, t, counters, None, ("boot",))

    got = rates.diff(make(100.0, before, previous_as), make(110.0, values_now, current_as))
    as_dicts = rates.diff(make(100.0, before, "dict"), make(110.0, values_now, "dict"))
    expected = reference_diff(make(100.0, before, "dict"), make(110.0, values_now, "dict"))
    if expected == "reset":
        assert isinstance(got, Skip) and got.event == rates.COUNTER_RESET
        assert isinstance(as_dicts, Skip) and as_dicts.reason == got.reason
    else:
        assert isinstance(got, Interval)
        assert (got.dt, dict(got.deltas.items()), set(got.dropped)) == expected
        assert list(got.deltas.items()) == list(as_dicts.deltas.items())
        assert got.dropped == as_dicts.dropped


def test_a_counter_vector_is_a_read_only_mapping_equal_to_its_dict():
    counters = vector([1, 2, 3, 4])
    plain = {"a": 1, "b": 2, "c": 3, "d": 4}
    # Both ways round: the state compares a loaded sample's dict with a new sample's vector.
    assert counters == plain and plain == counters
    assert counters != vector([1, 2, 3, 5]) and counters == vector([1, 2, 3, 4])
    assert list(counters) == list(VECTOR_NAMES) and counters["c"] == 3 and "d" in counters and "e" not in counters
    assert dict(counters) == dict(counters.items()) == {"a": 1, "b": 2, "c": 3, "d": 4}
    assert counters.keys() == {"a": 0, "b": 0, "c": 0, "d": 0}.keys()
    loaded = Sample.from_json(Sample("m", (("k", "1"),), 1.0, 1.0, counters).to_json())
    assert type(loaded.counters) is dict and loaded.counters == counters


class Tagged(Sample):
    """A Sample subclass adding one field, as mountstats' MountOps adds its layout."""

    __slots__ = ("tag",)

    def __init__(self, tag: str, *args, **kwargs):
        super().__init__(*args, **kwargs)
        object.__setattr__(self, "tag", tag)


def test_a_sample_subclass_is_compared_by_every_field_not_only_the_ones_it_adds():
    # A subclass's __slots__ names only what it adds: comparing by it alone made two samples of
    # one layout equal whatever their counters, and the state journal then kept the older one.
    a = Tagged("x", "m", (("host", "h"),), 1.0, 1.0, {"c": 1})
    assert a == Tagged("x", "m", (("host", "h"),), 1.0, 1.0, {"c": 1})
    assert a != Tagged("x", "m", (("host", "h"),), 1.0, 1.0, {"c": 2})
    assert a != Tagged("x", "m", (("host", "h"),), 2.0, 2.0, {"c": 1})
    assert a != Tagged("y", "m", (("host", "h"),), 1.0, 1.0, {"c": 1})
    assert "counters={'c': 1}" in repr(a) and "tag='x'" in repr(a)


# --- Members: an instance's processes as one sample, diffed a column at a time. The truth is the
# module's rules applied to a Sample per member (Members.member), which `diff` pairs by key: what
# a sample per process gave before the processes of an instance were one sample.

MEMBER_COUNTERS = ("reads", "writes")


def members_table(
    draw, time: float, identity: tuple[str, ...], started, ids: list[str], columns: dict
) -> rates.Members:
    count = len(ids)
    holder = st.sampled_from([("100", "1"), ("100", "1"), ("101", "1"), ("100", "2"), ("?", "1")])
    pdb = st.sampled_from([(), (), (("pdb", "3"),), (("pdb", "4"),)])
    return rates.Members(
        "io",
        (("host", "h"), ("instance", "i1")),
        time,
        time + 1e9,
        identity,
        started,
        "pnum",
        tuple(ids),
        tuple(draw(st.lists(pdb, min_size=count, max_size=count))),
        tuple(draw(st.lists(holder, min_size=count, max_size=count))),
        columns,
        {"pname": tuple(draw(st.lists(st.sampled_from(["", "DBW0", None]), min_size=count, max_size=count)))},
    )


# A count as read: mostly plain, sometimes NULL, negative (a damaged capture) or implausible.
COUNT = st.one_of(
    *[st.integers(min_value=0, max_value=60)] * 8,
    st.none(),
    st.integers(min_value=-3, max_value=-1),
    st.just(rates.IMPLAUSIBLE_COUNTER + 5),
)


@st.composite
def member_readings(draw):
    """Two readings of one instance's processes: ids that come, go and stay, holders and PDBs that
    change, NULL, negative and implausible counts, counts gone backwards, a counter more or fewer,
    a restart, a clock step or a clock that does not move; mostly the same instance a positive
    interval apart, so that the column-at-a-time path meets each of these."""
    pool = [str(n) for n in range(1, 9)]
    before_ids = draw(st.lists(st.sampled_from(pool), unique=True, max_size=8))
    after_ids = draw(
        st.one_of(
            st.just(list(before_ids)),
            st.permutations(before_ids),
            st.lists(st.sampled_from(pool), unique=True, max_size=8),
        )
    )
    names_before = draw(st.sampled_from([MEMBER_COUNTERS] * 4 + [MEMBER_COUNTERS[:1]]))
    names_after = draw(st.sampled_from([names_before] * 4 + [MEMBER_COUNTERS, MEMBER_COUNTERS[:1]]))
    startup = ("db", "2026-01-01T00:00:00")
    after_identity = draw(st.sampled_from([startup] * 4 + [("db", "2026-02-01T00:00:00")]))
    started = draw(st.sampled_from([None, 50.0]))
    after_started = draw(st.sampled_from([started] * 4 + [None, 50.5, 60.0]))
    dt = draw(st.sampled_from([10.0] * 4 + [0.0, -1.0]))
    before_columns = {
        name: tuple(draw(st.lists(COUNT, min_size=len(before_ids), max_size=len(before_ids)))) for name in names_before
    }
    previous = members_table(draw, 1000.0, startup, started, before_ids, before_columns)
    # Each member's counts now: mostly its counts before plus a step (back now and then), else any.
    step = st.one_of(*[st.integers(0, 5)] * 6, st.integers(-2, -1))
    after_columns = {}
    for name in names_after:
        values = []
        for member in after_ids:
            before = (
                before_columns.get(name, ())[before_ids.index(member)]
                if member in before_ids and name in before_columns
                else None
            )
            if before is not None and draw(st.sampled_from([True, True, True, False])):
                values.append(before + draw(step))
            else:
                values.append(draw(COUNT))
        after_columns[name] = tuple(values)
    current = members_table(draw, 1000.0 + dt, after_identity, after_started, after_ids, after_columns)
    if draw(st.booleans()):  # the same holders and PDBs as before, for the members still there
        where = {member: j for j, member in enumerate(before_ids)}
        current = rates.Members(
            "io",
            current.key,
            current.time,
            current.wall_time,
            current.identity,
            current.started,
            "pnum",
            current.member_ids,
            tuple(previous.member_tags[where[m]] if m in where else t for m, t in zip(after_ids, current.member_tags)),
            tuple(
                previous.member_identities[where[m]] if m in where else h
                for m, h in zip(after_ids, current.member_identities)
            ),
            current.columns,
            current.details,
        )
    return draw(st.sampled_from([previous] * 4 + [None])), current


def outcome_of(outcome) -> tuple:
    if isinstance(outcome, Interval):
        return ("interval", outcome.dt, dict(outcome.deltas), outcome.dropped)
    return ("skip", outcome.reason, outcome.baseline, outcome.event)


def two_members(time: float, holders=(("100", "1"), ("7", "1")), identity=("db",), started=None, reads=(5, 9)):
    return rates.Members(
        "io",
        (("instance", "i1"),),
        time,
        time,
        identity,
        started,
        "pnum",
        ("1", "2"),
        ((), ()),
        holders,
        {"reads": reads},
        {},
    )


@hsettings(max_examples=400, deadline=None)
@given(member_readings())
# Besides the drawn readings, one of each kind the column-at-a-time path must hand to `diff`.
@example((two_members(100.0), two_members(110.0, holders=(("101", "1"), ("7", "1")))))  # a PNUM's new holder
@example((two_members(100.0), two_members(100.0)))  # a clock that did not move
@example((two_members(100.0, started=50.0), two_members(110.0, started=53.0)))  # a clock that stepped
@example((two_members(100.0), two_members(110.0, identity=("db2",))))  # an instance restart
@example((two_members(100.0), two_members(110.0, reads=(4, 10))))  # a count gone backwards
def test_members_are_diffed_as_a_sample_per_member_would_be(readings):
    previous, current = readings
    # The truth: each member's own Sample, paired by key with the previous reading's members.
    before = {}
    if previous is not None:
        before = {s.state_key: s for s in (previous.member(j) for j in range(len(previous.member_ids)))}
    expected = {}
    for i in range(len(current.member_ids)):
        sample = current.member(i)
        expected[sample.state_key] = outcome_of(rates.diff(before.get(sample.state_key), sample))
    result = rates.diff_all({} if previous is None else {previous.state_key: previous}, [current])
    found = {}
    for table in result.tables:
        for place, i in enumerate(table.moved):
            deltas = {name: values[place] for name, values in table.deltas.items()}
            found[table.current.member(i).state_key] = ("interval", table.dt, deltas, {})
    for outcome in [*result.intervals, *result.skips]:
        key = outcome.current.state_key
        assert key not in found
        found[key] = outcome_of(outcome)
    assert found == expected
    # The members simply still there are diffed a column at a time, never as Samples of their own.
    if result.tables:
        assert len(result.intervals) + len(result.skips) + sum(len(t.moved) for t in result.tables) == len(
            current.member_ids
        )


def test_members_that_stayed_are_subtracted_without_a_sample_each(monkeypatch):
    """The common case, every process still there with every count moved forward: no member gets a
    Sample or an Interval of its own (the cost a sample per process had at 8 000 processes)."""
    ids = tuple(str(n) for n in range(500))
    holders = tuple((str(n), "1") for n in range(500))
    tags = ((),) * 500

    def reading(t, step):
        columns = {name: tuple(n * 10 + step * (n % 3) for n in range(500)) for name in MEMBER_COUNTERS}
        return rates.Members("io", (("instance", "i1"),), t, t, ("db",), None, "pnum", ids, tags, holders, columns, {})

    built = []
    monkeypatch.setattr(rates.Members, "member", lambda self, i: built.append(i))
    result = rates.diff_all({}, [])
    previous, current = reading(100.0, 0), reading(110.0, 1)
    result = rates.diff_all({previous.state_key: previous}, [current])
    assert built == [] and not result.intervals and not result.skips
    [table] = result.tables
    assert table.deltas["reads"] == [n % 3 for n in range(500)] and table.dt == 10.0
    summed = rates.aggregate_members(result.tables, [])
    assert summed[(("instance", "i1"),)].deltas == {
        "reads": sum(n % 3 for n in range(500)),
        "writes": sum(n % 3 for n in range(500)),
    }
    assert summed[(("instance", "i1"),)].active == sum(1 for n in range(500) if n % 3)
