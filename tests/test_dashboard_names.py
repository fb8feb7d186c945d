"""A database keeps one name on the dashboards when it cannot be reached (user review H2)."""

from __future__ import annotations

from dnfsmon import simulator
from dnfsmon.oracle_db import down_document, to_raw
from dnfsmon.sources import oracle

DSN = "127.0.0.1:1521/SIMDB"


def status_of(samples):
    (status,) = [s for s in samples if s.measurement == oracle.STATUS_MEASUREMENT]
    return status


def test_a_down_database_is_tagged_with_the_name_it_last_answered_with():
    up, _ = oracle.samples(simulator.read(simulator.Workload(db_name="SIMDB"), 1_700_000_600.0), "h1")
    known = oracle.last_known_name(up)
    assert known == "SIMDB"
    # What the live reader hands over when the connect fails: the configured target (here the DSN).
    down = to_raw(down_document("DPY-6005: cannot connect to database", DSN), 1_700_000_610.0)
    assert oracle.name_down_reading(down, known) == "SIMDB"
    status = status_of(oracle.samples(down, "h1")[0])
    assert dict(status.key)["database"] == "SIMDB" and status.gauges["reachable"] == 0


def test_without_a_known_name_the_configured_target_names_it():
    down = to_raw(down_document("DPY-6005: cannot connect to database", DSN), 1_700_000_610.0)
    assert oracle.name_down_reading(down, "") == ""
    assert dict(status_of(oracle.samples(down, "h1")[0]).key)["database"] == DSN


def test_the_known_name_follows_the_newest_answer():
    old, _ = oracle.samples(simulator.read(simulator.Workload(db_name="OLDNAME"), 1_700_000_600.0), "h1")
    new, _ = oracle.samples(simulator.read(simulator.Workload(db_name="SIMDB"), 1_700_000_700.0), "h1")
    assert oracle.last_known_name([*new, *old]) == "SIMDB"
    up = simulator.read(simulator.Workload(db_name="NEWNAME"), 1_700_000_800.0)
    assert oracle.name_down_reading(up, "SIMDB") == "NEWNAME"


def test_the_name_survives_a_run_that_only_saw_the_database_down():
    """The next run starts from the state of one in which every sample was down: the down status
    sample replaced the up one (same key), and still carries the name."""
    up, _ = oracle.samples(simulator.read(simulator.Workload(db_name="SIMDB"), 1_700_000_600.0), "h1")
    down = to_raw(down_document("DPY-6005: cannot connect to database", DSN), 1_700_000_610.0)
    oracle.name_down_reading(down, oracle.last_known_name(up))
    state = [status_of(oracle.samples(down, "h1")[0])]  # what the state holds after that run
    later = to_raw(down_document("DPY-6005: cannot connect to database", DSN), 1_700_000_670.0)
    oracle.name_down_reading(later, oracle.last_known_name(state))
    assert dict(status_of(oracle.samples(later, "h1")[0]).key)["database"] == "SIMDB"
