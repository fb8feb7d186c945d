"""The command line, end to end, as cron and users run it."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from configs import write_config
from dnfsmon.points import Point, to_line
from dnfsmon.sources import HOST_SOURCES
from dnfsmon.store import Store
from runner import DNFSMON, run_dnfsmon

CASES = os.path.join(os.path.dirname(__file__), "cases", "diff")
FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


run = run_dnfsmon


def host_config(tmp_path, **host):
    """A config for host "testhost"; keyword arguments go to [host]."""
    return write_config(tmp_path, agent={"host": "testhost"}, host=host)


def stored(tmp_path):
    return list(Store(str(tmp_path / "store"), 10**9).points())


@pytest.mark.parametrize("case", sorted(os.listdir(CASES)))
def test_diff_golden_cases(case, update_golden):
    directory = os.path.join(CASES, case)
    rc_file = os.path.join(directory, "expected.rc")  # a case whose source fails says so
    expected_rc = int(open(rc_file).read()) if os.path.exists(rc_file) else 0
    result = run(
        "diff", os.path.join(directory, "old"), os.path.join(directory, "new"), "--format", "lp", check_rc=expected_rc
    )
    expected = os.path.join(directory, "expected.lp")
    if update_golden:  # pytest --update-golden: the case's README must still describe what it now holds
        with open(expected, "w", encoding="utf-8") as f:
            f.write(result.stdout)
    with open(expected, encoding="utf-8") as f:
        assert result.stdout == f.read()


def test_diff_json_and_table_carry_the_same_points():
    old, new = os.path.join(CASES, "basic", "old"), os.path.join(CASES, "basic", "new")
    lp = run("diff", old, new, "--format", "lp", check_rc=0).stdout.splitlines()
    points = [Point.from_json(p) for p in json.loads(run("diff", old, new, "--format", "json", check_rc=0).stdout)]
    assert [to_line(p) for p in points] == lp
    table = run("diff", old, new, check_rc=0).stdout
    assert "rx_kib_per_s             10240.0 KiB/s" in table


def test_a_run_has_one_garbage_collector_policy_the_threshold_set_at_start():
    """cli.tune_gc is the one policy (bench/RESULTS.md): nothing pauses the collector on the way."""
    code = (
        "import gc, sys; from dnfsmon import cli, collect; seen = []; compute = collect.compute; "
        "collect.compute = lambda *a, **k: (seen.append((gc.isenabled(), gc.get_threshold()[0])), compute(*a, **k))[1]; "
        f"rc = cli.main(['diff', {os.path.join(CASES, 'basic', 'old')!r}, {os.path.join(CASES, 'basic', 'new')!r}, '--format', 'lp']); "
        "print(seen)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[(True, 50000), (True, 50000)]"


def test_diff_reset_case_logs_why_lo_has_no_point():
    result = run("diff", os.path.join(CASES, "reset", "old"), os.path.join(CASES, "reset", "new"), check_rc=0)
    assert "interface=lo: no point: counter rx_bytes went backwards 900000 -> 1000" in result.stderr


@pytest.mark.parametrize(
    "manifest, message",
    [
        (None, "capture.json: No such file"),
        ("{", "not valid JSON"),
        ('{"format": 2, "host": "h", "sources": {}}', '"format": 1'),
        ('{"format": 1, "host": "h", "sources": {"nfs": {}}}', "source 'nfs' is unknown"),
        ('{"format": 1, "host": "h", "sources": {"nic": {"time": 1}}}', 'needs numeric "time"'),
        (
            '{"format": 1, "host": "h", "sources": {"nic": {"time": 1, "wall_time": 1, "files": ["../etc/passwd"]}}}',
            "without '..'",
        ),
    ],
)
def test_bad_capture_is_a_usage_error_naming_the_file(tmp_path, manifest, message):
    bad = tmp_path / "bad"
    bad.mkdir()
    if manifest is not None:
        (bad / "capture.json").write_text(manifest)
    result = run("diff", bad, os.path.join(CASES, "basic", "new"), check_rc=2)
    assert message in result.stderr and str(bad) in result.stderr


def test_live_capture_then_diff(tmp_path):
    config = host_config(tmp_path)
    run("--config", config, "capture", tmp_path / "a", check_rc=0)
    time.sleep(0.2)
    run("--config", config, "capture", tmp_path / "b", check_rc=0)
    manifest = json.loads((tmp_path / "a" / "capture.json").read_text())
    assert set(manifest["sources"]) == set(HOST_SOURCES) and manifest["host"] == "testhost"
    assert (tmp_path / "a" / "proc" / "net" / "dev").read_text().startswith("Inter-|")
    points = json.loads(run("diff", tmp_path / "a", tmp_path / "b", "--format", "json", check_rc=0).stdout)
    interfaces = {dict(p["t"])["interface"] for p in points if p["m"] == "dnfsmon_nic"}
    assert "lo" in interfaces
    assert any(p["m"] == "dnfsmon_tcp" for p in points)


def test_two_cron_runs_in_a_row_give_rates_on_the_second(tmp_path):
    config = host_config(tmp_path)
    run("--config", config, "collect", check_rc=0)
    # Baseline only: no rate, no zero; the agent's own points say each source ran.
    first = [p for p in stored(tmp_path) if p.measurement != "dnfsmon_source"]
    assert [p.measurement for p in first] == ["dnfsmon_verdict", "dnfsmon_agent"]
    # Nothing measured yet, and the verdict says so rather than nothing at all.
    assert first[0].fields["nothing_to_judge"] == 1
    assert first[1].fields["intervals"] == 0 and first[1].fields["skipped"] > 0
    seen = len(stored(tmp_path))
    run("--config", config, "collect", check_rc=0)
    second = stored(tmp_path)[seen:]
    nic_points = [p for p in second if p.measurement == "dnfsmon_nic"]
    assert {dict(p.tags)["interface"] for p in nic_points} >= {"lo"}
    assert all(dict(p.tags)["host"] == "testhost" for p in second)
    assert any(p.measurement == "dnfsmon_tcp" for p in second)
    for point in nic_points:
        assert point.fields["rx_kib_per_s"] >= 0


def test_count_and_interval_take_samples_in_one_process(tmp_path):
    config = host_config(tmp_path)
    started = time.monotonic()
    result = run("--config", config, "collect", "--verbose", "--count", 3, "--interval", 0.5, check_rc=0)
    assert time.monotonic() - started >= 1.0
    assert "sample 3/3" in result.stderr
    agents = [p for p in stored(tmp_path) if p.measurement == "dnfsmon_agent"]
    assert [p.fields["intervals"] > 0 for p in agents] == [False, True, True]


def test_overlapping_run_exits_within_its_slot_without_touching_state_or_store(tmp_path):
    """As cron starts a run while the previous one still runs (holder frozen while we compare):
    it waits for the lock for its own slot (count x interval, here 1 s), then exits 75."""
    config = host_config(tmp_path)
    run("--config", config, "collect", check_rc=0)
    holder = subprocess.Popen(
        [*DNFSMON, "--config", str(config), "collect", "--verbose", "--count", "100", "--interval", "0.2"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert "sample 1/100" in holder.stderr.readline()
        holder.send_signal(signal.SIGSTOP)
        time.sleep(0.2)
        snapshot = {
            p: open(p, "rb").read()
            for p in sorted(map(str, (tmp_path / "state").iterdir()))
            # Read-only: a writable Store takes the store's lock, which the frozen holder may hold.
            + [s for _, s in Store(str(tmp_path / "store"), 10**9, read_only=True).segments()]
        }
        started = time.monotonic()
        result = run("--config", config, "collect", "--count", "1", "--interval", "1", check_rc=75)
        assert 1 <= time.monotonic() - started < 10
        assert f"another dnfsmon run (pid {holder.pid}) holds" in result.stderr
        after = {p: open(p, "rb").read() for p in snapshot}
        assert after == snapshot
        assert sorted(map(str, (tmp_path / "state").iterdir())) == sorted(p for p in snapshot if "/state/" in p)
    finally:
        holder.kill()
        holder.wait()


def test_a_broken_source_is_logged_and_the_others_still_store(tmp_path):
    proc = tmp_path / "fakeproc"
    (proc / "net").mkdir(parents=True)
    (proc / "net" / "dev").write_text("this is not /proc/net/dev\n")
    shutil.copy(os.path.join(FIXTURES, "proc", "net", "snmp"), proc / "net" / "snmp")
    config = host_config(tmp_path, proc_root=str(proc))
    result = run("--config", config, "collect", "--count", 2, "--interval", 0.2, check_rc=3)
    assert "source nic failed: proc/net/dev:1: missing the two-line '|' header" in result.stderr
    measurements = {p.measurement for p in stored(tmp_path)}
    # The fake proc has no mountstats: no NFS mounts.
    assert measurements == {"dnfsmon_tcp", "dnfsmon_agent", "dnfsmon_source", "dnfsmon_verdict"}
    agent = [p for p in stored(tmp_path) if p.measurement == "dnfsmon_agent"][-1]
    # nic (bad header), mountstats, routes (no proc/net/route) and pressure (no proc/stat) failed;
    # tcp, filer_tcp and rpc (no NFS client: nothing to read) ran.
    assert agent.fields["sources_failed"] == 4 and agent.fields["sources_ok"] == 3
    health = {dict(p.tags)["source"]: p.fields for p in stored(tmp_path)[-9:] if p.measurement == "dnfsmon_source"}
    assert {name for name, fields in health.items() if not fields["ok"]} == {"nic", "mountstats", "routes", "pressure"}
    assert set(health) == set(HOST_SOURCES)
    assert all(fields["read_seconds"] >= 0 and fields["compute_seconds"] >= 0 for fields in health.values())


def test_a_capture_with_a_renamed_oracle_column_fails_that_source_in_one_line(tmp_path):
    config = write_config(tmp_path, host={"sources": ["tcp"]}, simulator={"enabled": True})
    old, new = tmp_path / "old", tmp_path / "new"
    run("--config", config, "capture", old, check_rc=0)
    run("--config", config, "capture", new, check_rc=0)
    results = new / "oracle" / "results.json"
    document = json.loads(results.read_text())
    columns = document["results"]["dnfs_stats"]["columns"]
    columns[columns.index("PNUM")] = "RENAMED"
    results.write_text(json.dumps(document))
    result = run("diff", old, new, "--format", "lp", check_rc=3)
    assert "Traceback" not in result.stderr
    (line,) = [line for line in result.stderr.splitlines() if "oracle" in line]
    assert "source oracle failed: KeyError" in line and "PNUM" in line
    assert "dnfsmon_tcp," in result.stdout  # the capture's other source still published
    # A developer gets the traceback with -v.
    assert "Traceback" in run("-v", "diff", old, new, "--format", "lp", check_rc=3).stderr


def test_a_source_that_raises_in_publish_fails_alone_and_keeps_its_previous_samples():
    from dnfsmon import collect
    from dnfsmon.sources import base, build_all

    sources = build_all(["tcp", "nic"])
    tcp = sources["tcp"]

    class Broken(base.Source):
        name, measurements = tcp.name, tcp.measurements

        def parse(self, raw, host):
            return tcp.parse(raw, host)

        def publish(self, result, current):
            raise ZeroDivisionError("division by zero")

    raws = {name: source.read(base.HostInputs()) for name, source in sources.items()}  # type: ignore[attr-defined]
    first = collect.compute(raws, {}, "h", {}, sources)
    raws = {name: source.read(base.HostInputs()) for name, source in sources.items()}  # type: ignore[attr-defined]
    second = collect.compute(raws, {}, "h", first.samples, {**sources, "tcp": Broken()})
    assert set(second.failures) == {"tcp"} and second.failures["tcp"].startswith("ZeroDivisionError: division by zero")
    assert second.sources_ok == 1 and {p.measurement for p in second.points} == {"dnfsmon_nic"}
    tcp_keys = {k for k, s in first.samples.items() if s.measurement == "dnfsmon_tcp"}
    assert all(second.samples[k] is first.samples[k] for k in tcp_keys)  # the next reading diffs against these


def test_a_run_saves_a_snapshot_then_journal_records_that_the_next_run_loads(tmp_path):
    config = host_config(tmp_path)
    run("--config", config, "collect", "--count", 3, "--interval", 0.05, check_rc=0)
    # The first sample had no state: a snapshot. The two after it: one journal record each.
    (journal,) = (tmp_path / "state").glob("host_testhost-*.state.journal")
    assert len(journal.read_bytes().splitlines()) == 2
    result = run("--config", config, "collect", check_rc=0)
    assert "state" not in result.stderr  # no warning: the journal replayed whole
    assert stored(tmp_path)[-1].fields["intervals"] > 0  # rates against the journal's newest samples


@pytest.mark.slow
def test_sigkill_at_random_moments_never_breaks_the_next_run(tmp_path):
    config = host_config(tmp_path)
    # One completed run first: from here on a previous sample exists, so every kill
    # below lands after the baseline however slow the machine is (a killed run may
    # or may not have saved newer state; either way the next run has one to diff).
    run("--config", config, "collect", "--count", 1, check_rc=0)
    assert stored(tmp_path)[-1].fields["intervals"] == 0  # a baseline publishes no rates
    rng = random.Random(20261122)
    for _ in range(25):
        process = subprocess.Popen(
            [*DNFSMON, "--config", str(config), "collect", "--count", "5", "--interval", "0.02"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.05, 0.6))
        process.kill()
        process.wait()
    result = run("--config", config, "collect", check_rc=0)
    assert "Traceback" not in result.stderr and "unexpected" not in result.stderr
    assert "state file" not in result.stderr  # never corrupt: written atomically
    points = stored(tmp_path)
    assert points and points[-1].measurement == "dnfsmon_agent"
    # The run after the kills had a usable previous sample: it published rates.
    assert points[-1].fields["intervals"] > 0
    # Temp files a kill left between write and rename are removed by the next locked run.
    for directory in (tmp_path / "state", tmp_path / "store"):
        assert not [p.name for p in directory.iterdir() if p.name.startswith(".tmp-")]


def test_help_shows_defaults_and_exit_codes():
    assert "(default: 10)" in run("collect", "--help", check_rc=0).stdout
    top = run("--help", check_rc=0).stdout
    assert "75" in top and "another dnfsmon run holds the lock" in top


def test_bad_config_is_a_usage_error(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("[store]\nmax_bytes = 0\n")
    result = run("--config", path, "collect", check_rc=2)
    assert f"ERROR: {path}: [store] max_bytes = 0: must be a whole number from 4096 to" in result.stderr


def test_metrics_lists_the_catalogue():
    out = run("metrics", check_rc=0).stdout
    assert "dnfsmon_nic" in out and "util_pct" in out and "[percent]" in out


def test_show_prints_labelled_tables_and_says_what_is_missing(tmp_path):
    config = write_config(tmp_path, host={"sources": ["nic"]}, simulator={"enabled": True, "instances": 1})
    empty = run("--config", config, "show", check_rc=0).stdout
    assert "holds no points yet" in empty
    run("--config", config, "collect", "--count", 2, "--interval", 0.5, check_rc=0)
    out = run("--config", config, "show", check_rc=0).stdout
    assert "dNFS I/O per instance  (SIMULATED)" in out
    assert re.search(r"^age +database +instance +read_iops ", out, re.M) and "simdb1" in out
    assert "Network interfaces (nicstat)" in out
    # One series per event and bucket hit since startup (at most 8 x 23).
    histogram = re.search(r"dnfsmon_oracle_latency_histogram \((\d+) series\)", out)
    assert histogram and 8 * 10 <= int(histogram.group(1)) <= 8 * 23
    assert "dnfsmon_rpc                      source rpc" in out  # not configured: said, not hidden
    everything = run("--config", config, "show", "--measurement", "dnfsmon_dnfs_io", check_rc=0).stdout
    assert "read_mib_per_s" in everything and "MiB/s" in everything and "dnfsmon_nic" not in everything


def test_show_fits_120_columns_by_default_and_is_wide_on_request(tmp_path):
    """The demo's tables were up to 175 columns wide, its list of other measurements 335."""
    config = write_config(
        tmp_path, host={"sources": ["nic", "tcp"]}, simulator={"enabled": True, "instances": 2, "scope": "cluster"}
    )
    run("--config", config, "collect", "--count", 2, "--interval", 0.5, check_rc=0)
    out = run("--config", config, "show", check_rc=0).stdout
    assert max(len(line) for line in out.splitlines()[1:]) <= 120, out  # after the line naming the store's path
    # The units on a row of their own under the names; counts of what the name says have none.
    header, units = re.search(r"^(age +database +instance +read_iops .*)\n(.*)$", out, re.M).groups()
    assert units.split() == ["[ops/s]", "[ops/s]", "[MiB/s]", "[MiB/s]", "[KiB]", "[KiB]"]
    assert header.split()[-1] == "processes"
    wide = run("--config", config, "show", "--wide", check_rc=0).stdout
    assert "read_iops [ops/s]" in wide and max(len(line) for line in wide.splitlines()) > 120


def test_show_and_check_as_json(tmp_path):
    config = write_config(tmp_path, host={"sources": ["nic"]}, simulator={"enabled": True, "instances": 1})
    empty = json.loads(run("--config", config, "show", "--format", "json", check_rc=0).stdout)
    assert empty["series"] == []
    run("--config", config, "collect", "--count", 2, "--interval", 0.5, check_rc=0)
    shown = json.loads(run("--config", config, "show", "--format", "json", check_rc=0).stdout)
    [io] = [s for s in shown["series"] if s["measurement"] == "dnfsmon_dnfs_io"]
    assert io["tags"]["instance"] == "simdb1" and io["units"]["read_iops"] == "ops/s" and io["fields"]["read_iops"] > 0
    assert 0 <= io["age_s"] < 60
    one = json.loads(
        run("--config", config, "show", "--format", "json", "--measurement", "dnfsmon_nic", check_rc=0).stdout
    )
    assert {s["measurement"] for s in one["series"]} == {"dnfsmon_nic"}

    checked = run("--config", config, "check", "--format", "json", check_rc=0)
    report = json.loads(checked.stdout)
    assert report["exit_code"] == 0 and {i["status"] for i in report["items"]} <= {"ok", "warn"}
    assert all(i["exit_code"] == 0 for i in report["items"])
    (tmp_path / "bad").mkdir()
    bad = write_config(tmp_path / "bad", influxdb={"enabled": True, "url": "http://127.0.0.1:9", "bucket": "b"})
    checked = run("--config", bad, "check", "--format", "json", check_rc=4)
    report = json.loads(checked.stdout)
    [failed] = [i for i in report["items"] if i["status"] == "FAIL"]
    assert report["exit_code"] == 4 and failed["exit_code"] == 4 and failed["what"].startswith("InfluxDB")


def test_an_environment_problem_of_a_source_is_one_line_without_a_class_name_and_one_check_failure(tmp_path):
    """The log said `source oracle failed: EnvironmentProblem: ...`, and check printed two FAIL lines for it."""
    password = tmp_path / "oracle.password"
    password.write_text("secret-pw\n")
    password.chmod(0o644)
    oracle = {"enabled": True, "dsn": "127.0.0.1:9/X", "user": "u", "password_file": str(password)}
    config = write_config(tmp_path, host={"sources": ["nic"]}, oracle=oracle)
    result = run("--config", config, "collect", "--count", 1, check_rc=3)
    assert f"source oracle failed: Oracle password file {password} has mode 0644" in result.stderr, result.stderr
    assert "EnvironmentProblem" not in result.stderr and "secret-pw" not in result.stderr
    checked = run("--config", config, "check", check_rc=2).stdout
    failures = [line for line in checked.splitlines() if line.startswith("[FAIL]")]
    assert failures == [
        f"[FAIL] Oracle password file {password}: has mode 0644; it must be readable by its owner only (chmod 600)"
    ]
    assert "[warn] database 127.0.0.1:9/X: not tried: fix the password first" in checked


def test_check_names_the_state_files_of_a_target_no_longer_configured(tmp_path):
    """The state of a former database (a changed DSN or name) stayed behind, unread and unmentioned."""
    config = write_config(tmp_path, host={"sources": ["nic"]}, simulator={"enabled": True, "db_name": "OLDDB"})
    run("--config", config, "collect", "--count", 1, check_rc=0)
    before = run("--config", config, "check", check_rc=0).stdout
    assert "no longer configured" not in before
    config = write_config(tmp_path, host={"sources": ["nic"]}, simulator={"enabled": True, "db_name": "NEWDB"})
    run("--config", config, "collect", "--count", 1, check_rc=0)
    after = run("--config", config, "check", check_rc=0).stdout
    [line] = [line for line in after.splitlines() if "no longer configured" in line]
    former = sorted(n for n in os.listdir(tmp_path / "state") if "OLDDB" in n)
    assert len(former) >= 2 and line.startswith("[warn] [agent] state_dir")
    assert line.endswith("rm " + " ".join(str(tmp_path / "state" / n) for n in former)), line
    assert "NEWDB" not in line
