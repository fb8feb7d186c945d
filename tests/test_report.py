"""collect.report: what a sample could not do, logged once per reason; debug lines only when debug is on."""

from __future__ import annotations

import logging

from dnfsmon.collect import Outcome, report
from dnfsmon.rates import Sample, Skip, diff


def outcome_with_a_baseline_and_a_reset() -> Outcome:
    key = (("host", "h"), ("interface", "eth0"))
    first = Sample("dnfsmon_nic", key, 1.0, 1.0, {"rx_bytes": 5})
    later = Sample("dnfsmon_nic", key, 2.0, 2.0, {"rx_bytes": 1})
    baseline, reset = diff(None, first), diff(first, later)
    assert isinstance(baseline, Skip) and isinstance(reset, Skip)
    return Outcome(skips=[baseline, reset])


def test_baselines_are_logged_only_at_debug(caplog):
    outcome = outcome_with_a_baseline_and_a_reset()
    with caplog.at_level(logging.INFO, logger="dnfsmon"):
        report(outcome)
    assert [r.levelname for r in caplog.records] == ["INFO"]
    assert "went backwards" in caplog.records[0].getMessage()
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="dnfsmon"):
        report(outcome)
    assert [r.levelname for r in caplog.records] == ["DEBUG", "INFO"]
    assert (
        caplog.records[0].getMessage()
        == "dnfsmon_nic,host=h,interface=eth0: no point: first sample of this key (baseline)"
    )
