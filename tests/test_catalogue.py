"""The metric catalogue, enforced both ways.

Every point the test cases produce is catalogued with the right type, and
every catalogued tag and field is produced by some case: the golden diff
cases (tests/cases/diff), the doctor's scenarios (tests/cases/doctor) and a
live collect on this machine.
"""

from __future__ import annotations

import os

import pytest

from dnfsmon import capture, catalogue
from dnfsmon.collect import collect, compute
from dnfsmon.config import parse
from dnfsmon.state import RunLock
from dnfsmon.store import Store

CASES = os.path.join(os.path.dirname(__file__), "cases", "diff")


def golden_points():
    points = []
    for case in sorted(os.listdir(CASES)):
        _, old_raws, old_failures = capture.read(os.path.join(CASES, case, "old"))
        host, raws, failures = capture.read(os.path.join(CASES, case, "new"))
        baseline = compute(old_raws, old_failures, host, {})
        points += compute(raws, failures, host, baseline.samples).points
    return points


@pytest.fixture(scope="module")
def produced(tmp_path_factory):
    directory = tmp_path_factory.mktemp("live")
    cfg = parse({"agent": {"state_dir": str(directory / "state")}, "store": {"dir": str(directory / "store")}}, None)
    os.makedirs(cfg.state_dir)
    with RunLock(cfg.state_dir):
        collect(cfg, count=2, interval_s=0.2)
    return (
        golden_points()
        + list(Store(cfg.store_dir, cfg.store_max_bytes).points())
        + simulated_points()
        + doctor_points()
    )


def doctor_points():
    """Every point of the doctor's scenarios (tests/cases/doctor), with the ladder and findings."""
    from dnfsmon import diagnosis

    top = os.path.join(os.path.dirname(__file__), "cases", "doctor")
    points = []
    for case in sorted(n for n in os.listdir(top) if os.path.isfile(os.path.join(top, n, "expected.json"))):
        _, old_raws, old_failures = capture.read(os.path.join(top, case, "old"))
        host, raws, failures = capture.read(os.path.join(top, case, "new"))
        outcome = compute(raws, failures, host, compute(old_raws, old_failures, host, {}).samples)
        points += outcome.points + diagnosis.to_points(diagnosis.diagnose(outcome.points, host), 1)
    return points


def simulated_points():
    """Two reads of the simulator (RAC, 11.2.0.4: RECO and the millisecond histogram; a CDB standby)."""
    from dnfsmon import simulator

    points = []
    # 11.2.0.4 (RAC, RECO, the millisecond histogram) and a 19c CDB (the pdb tag).
    # The second, an Active Data Guard standby: the role tag and the status's role and open mode.
    standby = simulator.Workload(pdbs=2, database_role="PHYSICAL STANDBY", open_mode="READ ONLY WITH APPLY")
    for workload in (simulator.Workload(release="11.2.0.4", mode="thick"), standby):
        memory = simulator.Memory()
        first = compute({"oracle": simulator.read(workload, 1_795_000_000.0, memory)}, {}, "h", {})
        second = compute({"oracle": simulator.read(workload, 1_795_000_010.0, memory)}, {}, "h", first.samples)
        points += second.points
    return points


def test_catalogue_file_is_well_formed():
    entries = catalogue.load()
    assert entries
    for (measurement, _kind, name), entry in entries.items():
        assert measurement.startswith("dnfsmon_")
        assert entry.kind == "tag" or entry.unit or entry.type in ("boolean", "string"), (
            f"{measurement}.{name} has no unit"
        )


def test_every_point_produced_is_catalogued(produced):
    entries = catalogue.load()
    problems = [v for point in produced for v in catalogue.violations(point, entries)]
    assert problems == []


def test_every_catalogued_entry_is_produced_by_some_case(produced):
    seen = set()
    for point in produced:
        seen.update((point.measurement, "tag", tag) for tag, _ in point.tags)
        seen.update((point.measurement, "field", name) for name in point.fields)
    missing = sorted(set(catalogue.load()) - seen)
    assert missing == []


def test_violations_are_reported():
    from dnfsmon.points import Point

    entries = catalogue.load()
    point = Point("dnfsmon_nic", (("host", "h"), ("colour", "red")), {"rx_kib_per_s": 1, "bogus": 1.0}, 0)
    assert catalogue.violations(point, entries) == [
        "dnfsmon_nic: tag 'colour' is not catalogued",
        "dnfsmon_nic: field 'rx_kib_per_s' is integer, catalogue says float",
        "dnfsmon_nic: field 'bogus' is not catalogued",
    ]
