"""Agent events (dnfsmon_event): re-baselines and counter resets, one point per measurement and kind."""

from __future__ import annotations

from dnfsmon import rates
from dnfsmon.collect import event_points
from dnfsmon.rates import Sample


def nic(interface, t, boot="boot-a", rx=0):
    return Sample("dnfsmon_nic", (("interface", interface),), t, 1_700_000_000 + t, {"rx_bytes": rx}, identity=(boot,))


def skips(previous, current):
    result = rates.diff_all({s.state_key: s for s in previous}, current)
    assert not result.intervals
    return result.skips


def test_a_reboot_is_one_re_baseline_event_for_all_the_series_it_touches():
    before = [nic("eth0", 0), nic("eth1", 0), nic("lo", 0)]
    after = [nic("eth0", 10, boot="boot-b"), nic("eth1", 10, boot="boot-b"), nic("lo", 10, boot="boot-b")]
    (point,) = event_points(skips(before, after), "db1")
    assert point.measurement == "dnfsmon_event"
    assert dict(point.tags) == {"host": "db1", "kind": "re-baseline", "source_measurement": "dnfsmon_nic"}
    assert point.fields["series"] == 3
    assert "identity changed" in point.fields["reason"] and point.fields["reason"].startswith(
        "dnfsmon_nic,interface=eth0"
    )
    assert point.time_ns == (1_700_000_000 + 10) * 10**9


def test_a_counter_going_backwards_is_a_counter_reset_event():
    (point,) = event_points(skips([nic("lo", 0, rx=900)], [nic("lo", 4, rx=10)]), "db1")
    assert dict(point.tags)["kind"] == "counter-reset" and point.fields["series"] == 1


def test_first_samples_and_non_positive_intervals_are_no_events():
    assert event_points(skips([], [nic("eth0", 0)]), "db1") == []
    assert event_points(skips([nic("eth0", 5)], [nic("eth0", 5)]), "db1") == []
