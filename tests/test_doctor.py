"""dnfsmon doctor: the scenarios of tests/cases/doctor, run the way users run them.

Each case directory holds two captures (old, new), a README saying what the
case is and why its findings follow, and expected.json: the findings (id,
layer, severity and every evidence number), the latency ladder and the exit
code. The captures are written by make_cases.py beside them; a test checks
the committed captures are exactly what it writes.
"""

from __future__ import annotations

import filecmp
import json
import os
import re
import subprocess
import sys

import pytest

from configs import write_config
from dnfsmon import capture, catalogue, diagnosis, rates
from dnfsmon.collect import compute
from dnfsmon.diagnosis import rules
from dnfsmon.points import Point
from dnfsmon.store import Store
from runner import DNFSMON

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases", "doctor")
NAMES = sorted(n for n in os.listdir(CASES) if os.path.isdir(os.path.join(CASES, n)) and n != "__pycache__")
DOCS = os.path.join(HERE, "..", "docs", "doctor.md")


def doctor(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*DNFSMON, "doctor", *args], capture_output=True, text=True, timeout=120)


def run_with(config, *args: str) -> subprocess.CompletedProcess:
    """dnfsmon with a config file, as a user runs it."""
    return subprocess.run([*DNFSMON, "--config", str(config), *args], capture_output=True, text=True, timeout=120)


def expected(name: str) -> dict:
    with open(os.path.join(CASES, name, "expected.json"), encoding="utf-8") as f:
        return json.load(f)


def run_case(name: str, *args: str) -> subprocess.CompletedProcess:
    """The doctor on a case's two captures, with the case's own options (expected.json "args")."""
    case = os.path.join(CASES, name)
    return doctor(os.path.join(case, "old"), os.path.join(case, "new"), *expected(name).get("args", []), *args)


@pytest.mark.parametrize("name", NAMES)
def test_case_findings_evidence_ladder_and_exit_code(name):
    want = expected(name)
    result = run_case(name, "--format", "json")
    assert result.returncode == want["exit_code"], result.stderr
    got = json.loads(result.stdout)
    assert got["verdict"] == want["verdict"] and got["likely_causes"] == want["likely_causes"]
    assert [(f["id"], f["layer"], f["severity"], f["explained_by"]) for f in got["findings"]] == [
        (f["id"], f["layer"], f["severity"], f["explained_by"]) for f in want["findings"]
    ]
    for mine, theirs in zip(got["findings"], want["findings"]):
        assert mine["evidence"] == pytest.approx(theirs["evidence"], abs=1e-3), mine["id"]
        assert mine["summary"] and mine["remedy"]
    assert got["ladder"] == pytest.approx(want["ladder"], abs=1e-3)


def test_every_finding_id_fires_in_some_case_and_healthy_cases_fire_nothing():
    fired = {f["id"] for name in NAMES for f in expected(name)["findings"]}
    assert fired == set(rules.RULES)
    for name in ("healthy", "busy-but-healthy", "busy-healthy-2ms-filer"):
        assert expected(name)["findings"] == [] and expected(name)["exit_code"] == 0


# What each layer's documented behaviour makes true of a case, written from the
# scenario (README.md of each), not from the rules: the layers to blame (none for
# a healthy host), the layers that must not be blamed, the likely cause, and the
# exit code that follows from the worst severity.
#   far path: distance raises the minimum RTT; a filer cannot (its quick ACKs still
#     come back at wire speed), and a 20 % link queues microseconds;
#   busy-healthy: 62 % of 10 GbE queues ~0.1 ms, the 2 ms is the filer's ordinary time;
#   complete fallback: dNFS expected, every data file on OS_LIB;
#   imbalance-fills-nic: the 94 % path fills its link, whose queue raises that path's RTT.
LAYER_TRUTH = {
    "far-path": ({"network"}, {"filer", "client", "host"}, [], 10),
    "far-path-under-10-ms": ({"network"}, {"filer", "client", "host"}, [], 10),
    "busy-healthy-2ms-filer": (set(), {"network", "filer", "client", "host"}, [], 0),
    "complete-fallback": ({"client"}, {"network", "filer", "host"}, [], 11),
    "imbalance-fills-nic": ({"client", "network"}, {"filer", "host"}, ["dnfs-path-imbalance"], 10),
    "nothing-to-judge": (set(), {"network", "filer", "client", "host"}, [], 12),
}


@pytest.mark.parametrize("name", sorted(LAYER_TRUTH))
def test_verdict_follows_the_layers_behaviour(name):
    blamed, innocent, causes, exit_code = LAYER_TRUTH[name]
    result = run_case(name, "--format", "json")
    got = json.loads(result.stdout)
    layers = {f["layer"] for f in got["findings"]}
    assert result.returncode == exit_code, result.stderr
    assert blamed <= layers and not layers & innocent, layers
    assert got["likely_causes"] == causes
    if causes:
        assert got["findings"][0]["id"] == causes[0] and got["findings"][0]["likely_cause"] is True


def test_far_path_names_the_distance_not_the_filer():
    for name in ("far-path", "far-path-under-10-ms"):
        result = run_case(name)
        verdict = result.stdout[result.stdout.index("Verdict:") :]
        assert "the round trip never goes below 8.80 ms" in verdict and "distance" in verdict
        assert "filer answers late" not in verdict and "healthy" not in verdict


def test_combined_faults_name_the_cause_first_with_the_linking_evidence():
    result = run_case("imbalance-fills-nic")
    verdict = result.stdout[result.stdout.index("Verdict:") :].splitlines()
    assert verdict[1] == (
        "  Likely cause: dnfs-path-imbalance [client], which explains nic-saturation, network-latency"
    )
    assert verdict[2].startswith("  WARNING dnfs-path-imbalance [client] LIKELY CAUSE")
    link = next(line for line in verdict if line.startswith("      explains nic-saturation:"))
    assert "94 % of filer filer1's sends (10.0.1.1 -> 10.0.1.5) runs through eth1, 92 % busy" in link
    saturation = verdict.index(next(line for line in verdict if " nic-saturation [network]" in line))
    assert verdict[saturation].startswith("  WARNING nic-saturation [network] (explained by dnfs-path-imbalance)")
    remedy = next(line for line in verdict[saturation:] if line.startswith("      remedy:"))
    assert remedy.startswith("      remedy: fix dnfs-path-imbalance first;")


def test_nothing_to_judge_says_so_with_its_own_exit_code():
    result = run_case("nothing-to-judge")
    assert result.returncode == 12
    assert "Verdict: nothing to judge: no database configured, and no NFS or dNFS traffic to a filer" in result.stdout
    assert "healthy" not in result.stdout


def test_complete_fallback_names_the_mount_and_filer_and_needs_dnfs_expected():
    result = run_case("complete-fallback")
    assert result.returncode == 11
    assert "10 of 10 data files (100 %) are not read through dNFS" in result.stdout
    assert "/u02/oradata1 (10.0.1.5:/vol/oradata1, 3000 READ/s)" in result.stdout
    # The database alone cannot tell a fallback from a database that never used dNFS.
    case = os.path.join(CASES, "complete-fallback")
    assert doctor(os.path.join(case, "old"), os.path.join(case, "new")).returncode == 0
    assert doctor(os.path.join(case, "old"), os.path.join(case, "new"), "--dnfs-expected", "no").returncode == 0


def test_every_case_has_a_readme_naming_its_findings():
    for name in NAMES:
        with open(os.path.join(CASES, name, "README.md"), encoding="utf-8") as f:
            text = f.read()
        for finding in expected(name)["findings"]:
            assert finding["id"] in text, name


def test_committed_captures_are_what_the_generator_writes(tmp_path):
    result = subprocess.run(
        [sys.executable, os.path.join(CASES, "make_cases.py"), str(tmp_path)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    for name in NAMES:
        for when in ("old", "new"):
            compared = filecmp.dircmp(os.path.join(tmp_path, name, when), os.path.join(CASES, name, when))
            stack = [compared]
            while stack:
                d = stack.pop()
                assert not d.left_only and not d.right_only, (name, when, d.left_only, d.right_only)
                _, mismatch, errors = filecmp.cmpfiles(d.left, d.right, d.common_files, shallow=False)
                assert mismatch == [] and errors == [], (name, when, mismatch)
                stack.extend(d.subdirs.values())


def test_text_output_shows_the_ladder_and_the_verdict():
    case = os.path.join(CASES, "linux-client-16-slots")
    result = doctor(os.path.join(case, "old"), os.path.join(case, "new"))
    assert result.returncode == 11
    assert "Oracle single-block read, average            49.989 ms" in result.stdout
    assert "kernel NFS READ, queued for a slot           48.500 ms" in result.stdout
    assert "CRITICAL client-rpc-slots [client] (simulated database)" not in result.stdout  # host evidence
    assert "CRITICAL client-rpc-slots [client]: kernel NFS mount /u02/oradata1" in result.stdout
    healthy = os.path.join(CASES, "healthy")
    result = doctor(os.path.join(healthy, "old"), os.path.join(healthy, "new"))
    assert result.returncode == 0 and "Verdict: healthy, no rule fired." in result.stdout


def test_usage_errors_exit_2_with_one_line():
    result = doctor(os.path.join(CASES, "healthy", "old"))
    assert result.returncode == 2
    assert result.stderr.strip() == "dnfsmon: doctor takes two capture directories (OLD NEW) or none (live)"
    result = doctor("/nonexistent/old", "/nonexistent/new")
    assert (
        result.returncode == 2 and result.stderr.count("\n") == 1 and "/nonexistent/old/capture.json" in result.stderr
    )


def test_live_doctor_on_the_simulator(tmp_path):
    config = write_config(tmp_path, simulator={"enabled": True})
    result = run_with(config, "doctor", "--interval", "0.5", "--format", "json")
    assert result.returncode in (0, 10, 11), result.stderr
    got = json.loads(result.stdout)
    assert got["simulated_database"] is True
    assert got["ladder"]["oracle_read_avg_ms"] > 0
    assert not os.path.exists(tmp_path / "store")  # the doctor stores nothing


def test_live_doctor_sees_a_fallback_although_the_second_read_skips_the_inventory(tmp_path):
    # The simulated database opens 2 of its 20 data files through the kernel client. The doctor's
    # first read brings the inventory (coverage); the second skips it (inventory_interval_s).
    config = write_config(tmp_path, simulator={"enabled": True, "fallback_datafiles": 2})
    result = run_with(config, "doctor", "--interval", "0.5", "--format", "json")
    assert result.returncode == 11, result.stderr
    got = json.loads(result.stdout)
    fallbacks = [f for f in got["findings"] if f["id"] == "dnfs-fallback"]
    assert {f["evidence"]["dnfs_files"] for f in fallbacks} == {18}
    assert 0 < got["inventory_age_s"] < 60  # carried from the first read, its age shown
    assert "inventory_age_s" in fallbacks[0]["evidence"]


def test_a_database_outage_does_not_judge_a_fallback_from_the_inventory_read_before_it():
    # The last inventory, read while 2 of 8 data files were on the kernel client; then the
    # database cannot be read. Whether the files are still there is unknown during the outage:
    # the doctor says the database could not be read, not a fallback it cannot see.
    coverage = rates.Sample(
        "dnfsmon_dnfs_coverage",
        (("host", "db1"), ("database", "SIMDB"), ("instance", "simdb1"), ("file_type", "Data File")),
        100.0,
        100.0,
        gauges={"files": 8, "dnfs_files": 6, "dnfs_pct": 75.0},
    )
    down = Point(
        "dnfsmon_oracle_status", (("host", "db1"), ("database", "SIMDB")), {"reachable": 0, "up": False}, 10**12
    )
    found = diagnosis.diagnose([down], "db1", [coverage])
    assert [f.id for f in found.findings] == [] and found.verdict == diagnosis.NOTHING_TO_JUDGE
    assert "the database could not be read" in found.nothing_measured
    # While the database answers, the same carried inventory still judges the interval.
    up = Point("dnfsmon_oracle_status", (("host", "db1"), ("database", "SIMDB")), {"reachable": 1, "up": True}, 10**12)
    found = diagnosis.diagnose([up], "db1", [coverage])
    assert [f.id for f in found.findings] == ["dnfs-fallback"] and found.inventory_age_s is not None


def test_every_collect_interval_diagnoses_with_the_latest_inventory(tmp_path):
    config = write_config(tmp_path, simulator={"enabled": True, "fallback_datafiles": 2})
    result = run_with(config, "collect", "--count", "3", "--interval", "0.2")
    assert result.returncode in (0, 3), result.stderr
    points = list(Store(str(tmp_path / "store"), 10**9).points())
    ladders = sorted({p.time_ns for p in points if p.measurement == diagnosis.LADDER_MEASUREMENT})
    fallback_times = sorted(
        {
            p.time_ns
            for p in points
            if p.measurement == diagnosis.FINDING_MEASUREMENT and dict(p.tags)["id"] == "dnfs-fallback"
        }
    )
    assert len(ladders) == 2 and ladders[-1] in fallback_times  # the intervals without an inventory read too
    assert len(fallback_times) == 3


def test_collect_stores_the_ladder_and_findings_of_every_interval(tmp_path):
    # The simulated database with one path carrying twice its share: a finding to store.
    config = write_config(tmp_path, simulator={"enabled": True, "path_imbalance": 1.0})
    result = run_with(config, "collect", "--count", "2", "--interval", "0.2")
    assert result.returncode in (0, 3), result.stderr
    points = list(Store(str(tmp_path / "store"), 10**9).points())
    ladders = [p for p in points if p.measurement == diagnosis.LADDER_MEASUREMENT]
    assert len(ladders) == 1 and dict(ladders[0].tags)["simulated"] == "true"
    assert ladders[0].fields["oracle_read_avg_ms"] > 0
    findings = [dict(p.tags) for p in points if p.measurement == diagnosis.FINDING_MEASUREMENT]
    assert {f["id"] for f in findings} == {"dnfs-path-imbalance"}
    assert all(f["simulated"] == "true" for f in findings)


def diagnosis_points(name: str) -> list:
    _, old_raws, old_failures = capture.read(os.path.join(CASES, name, "old"))
    host, raws, failures = capture.read(os.path.join(CASES, name, "new"))
    baseline = compute(old_raws, old_failures, host, {})
    outcome = compute(raws, failures, host, baseline.samples)
    return diagnosis.to_points(diagnosis.diagnose(outcome.points, host), 1)


def test_ladder_and_findings_are_catalogued_points():
    entries = catalogue.load()
    points = [p for name in NAMES for p in diagnosis_points(name)]
    assert {p.measurement for p in points} == {
        diagnosis.LADDER_MEASUREMENT,
        diagnosis.FINDING_MEASUREMENT,
        diagnosis.VERDICT_MEASUREMENT,
    }
    assert [v for p in points for v in catalogue.violations(p, entries)] == []
    finding = next(p for p in diagnosis_points("filer-16-threads") if p.measurement == diagnosis.FINDING_MEASUREMENT)
    assert dict(finding.tags) == {
        "host": "db1",
        "id": "filer-latency",
        "layer": "filer",
        "severity": "critical",
        "simulated": "true",
    }
    assert json.loads(str(finding.fields["evidence"]))["tcp_srtt_ms"] == 44.0


def test_every_interval_publishes_its_verdict_nothing_to_judge_included():
    """A host with nothing measured writes no ladder and no finding: without a verdict point a
    dashboard or an alert cannot tell it from a healthy one (doctor's exit 12 as a point)."""
    for name in NAMES:
        (verdict,) = [p for p in diagnosis_points(name) if p.measurement == diagnosis.VERDICT_MEASUREMENT]
        findings = [p for p in diagnosis_points(name) if p.measurement == diagnosis.FINDING_MEASUREMENT]
        assert verdict.fields["findings"] == len(findings), name
        assert verdict.fields["nothing_to_judge"] == (1 if name == "nothing-to-judge" else 0), name
        reason = verdict.fields["nothing_measured"]
        assert (reason == "") == (name != "nothing-to-judge"), name
    (verdict,) = [p for p in diagnosis_points("nothing-to-judge") if p.measurement == diagnosis.VERDICT_MEASUREMENT]
    assert str(verdict.fields["nothing_measured"]).startswith("no database configured, and no NFS or dNFS traffic")


def test_docs_name_every_finding_threshold_and_exit_code():
    with open(DOCS, encoding="utf-8") as f:
        text = f.read()
    for finding_id in rules.RULES:
        assert f"`{finding_id}`" in text
    with open(rules.__file__, encoding="utf-8") as f:
        constants = re.findall(r"^([A-Z][A-Z_]+) = [0-9]", f.read(), re.MULTILINE)
    assert constants
    for name in constants:
        assert f"`{name}`" in text, name
    for code in ("10", "11", "12"):
        assert f"| {code} |" in text


def test_rates_helpers_of_the_ladder():
    # Oracle buckets [bound/2, bound): 90 waits below 1 ms, 10 in [1, 2) ms: p95 is half way into the second.
    assert rates.histogram_quantile([(1000.0, 90.0), (2000.0, 10.0), (4000.0, 0.0)], 0.95) == 1500.0
    assert rates.histogram_quantile([(1000.0, 0.0)], 0.95) is None
    assert rates.difference(5.0, 2.0) == 3.0 and rates.difference(1.0, 2.0) is None
    assert rates.difference(None, 1.0) is None
    assert rates.weighted_mean([(1.0, 3.0), (5.0, 1.0), (None, 9.0), (7.0, 0.0)]) == 2.0
    assert rates.weighted_mean([]) is None
    assert rates.ratio(3, 2) == 1.5 and rates.ratio(3, 0) is None


def test_paths_join_dnfs_channels_tcp_and_kernel_mounts_to_their_interface():
    case = os.path.join(CASES, "healthy")
    got = json.loads(doctor(os.path.join(case, "old"), os.path.join(case, "new"), "--format", "json").stdout)
    by_server = {p["server"]: p for p in got["paths"]}
    assert by_server["10.0.1.5"]["interface"] == "eth1" and by_server["10.0.2.5"]["interface"] == "eth2"
    assert by_server["10.0.1.5"]["users"] == ["dnfs:simdb1", "nfs:/u02/oradata1"]
    assert by_server["10.0.2.5"]["users"] == ["dnfs:simdb1"]
    # TCP 8000 KiB/s received + 400 acknowledged, of eth1's 5 % of 10 Gbit/s received
    # (61035.156 KiB/s) + a tenth of that sent: 8400 / 67138.672 = 12.511 %.
    assert by_server["10.0.1.5"]["share_of_interface_pct"] == pytest.approx(12.511, abs=1e-3)
    assert by_server["10.0.1.5"]["mtu_bytes"] == 9000


def test_doctor_help_top_and_docs_give_the_same_exit_codes():
    from dnfsmon import cli, top
    from dnfsmon.commands.doctor import doctor_exit_code

    result = subprocess.run([*DNFSMON, "doctor", "--help"], capture_output=True, text=True, timeout=60)
    with open(DOCS, encoding="utf-8") as f:
        text = f.read()
    for code, meaning in cli.DOCTOR_EXIT_CODES.items():
        assert f"  {code:<3} {meaning}" in result.stdout
        assert f"| {code} | {meaning}" in text, code
    # top --once/--batch exit with the doctor's code of their last refresh, and say the same.
    _, old_raws, old_failures = capture.read(os.path.join(CASES, "nothing-to-judge", "old"))
    host, raws, failures = capture.read(os.path.join(CASES, "nothing-to-judge", "new"))
    outcome = compute(raws, failures, host, compute(old_raws, old_failures, host, {}).samples)
    found = diagnosis.diagnose(outcome.points, host)
    assert doctor_exit_code(found, []) == 12 and doctor_exit_code(found, ["nic"]) == 3
    line = top.verdict(found)
    assert line is not None and line[0].startswith("Verdict: nothing to judge: no database configured")


def test_the_rules_work_grows_with_the_points_not_with_mounts_times_points(monkeypatch):
    """A host of many kernel NFS mounts, each READ queued far over its round trip: every mount is
    named once, and the rules look at each point a bounded number of times. A scan of every
    operation point per mount made a 1000-mount sample's diagnosis cost 20 s of CPU."""
    mounts = 300
    points = []
    for number in range(mounts):
        mount = (("host", "h"), ("mountpoint", f"/u{number:03d}"), ("server", "filer1"))
        points.append(Point("dnfsmon_nfs_mount", mount, {"avg_backlog": 0.0, "max_slots": 65}, 10**18))
        for op in ("READ", "WRITE", "GETATTR", "ACCESS", "LOOKUP", "COMMIT"):
            busy = op == "READ"
            fields = {"ops_per_s": 500.0 if busy else 0.0, "avg_queue_ms": 40.0 if busy else 0.0, "avg_rtt_ms": 1.0}
            points.append(Point("dnfsmon_nfs_op", (*mount, ("op", op)), fields, 10**18))
    calls = 0
    real_tag = rules.tag

    def counted(point, name):
        nonlocal calls
        calls += 1
        return real_tag(point, name)

    monkeypatch.setattr(rules, "tag", counted)
    found = diagnosis.diagnose(points, "h").findings
    slots = [f for f in found if f.id == "client-rpc-slots"]
    assert sorted(f.scope["mountpoint"] for f in slots) == [f"/u{n:03d}" for n in range(mounts)]
    assert calls <= 10 * len(points), (calls, len(points))
