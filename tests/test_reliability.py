"""Reliability: time bounds per run, no silent loss in the store, safe file opens, secrets.

Each test is named after the finding of the reliability review it guards
(M1-M10, L1-L7; D-numbers are the user review's). Every one ran against the
code before the fix and failed there.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import pwd
import re
import resource
import shutil
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as fuzz_settings
from hypothesis import strategies as st

from configs import write_config
from dnfsmon import capture, config
from dnfsmon.config import ConfigError, parse
from dnfsmon.errors import EnvironmentProblem
from dnfsmon.influx import REJECTED_REQUESTS_MAX, ShipError, ship
from dnfsmon.points import Point, from_line, to_line
from dnfsmon.state import RunLock, StateFile
from dnfsmon.store import Position, Store, StoreWriteError, encode_record
from fake_influx import FakeInflux
from runner import DNFSMON

# Only a hang guard: every bounded run here ends in a few seconds.
HANG_GUARD_S = 120


def points(n, start=0, measurement="m"):
    return [
        Point(measurement, (("host", "h"),), {"i": i, "f": i / 3}, 1_700_000_000_000_000_000 + i)
        for i in range(start, start + n)
    ]


def settings(url, **overrides):
    table = {"enabled": True, "url": url, "bucket": "db", "token_env": "DNFSMON_TEST_NO_TOKEN"}
    table.update(overrides)
    return parse({"influxdb": table}, None).influxdb


def run(*args, **kwargs):
    return subprocess.run([*DNFSMON, *map(str, args)], capture_output=True, text=True, timeout=HANG_GUARD_S, **kwargs)


@pytest.fixture
def fake():
    servers = []

    def start(mode, **kwargs):
        server = FakeInflux(mode, **kwargs)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def wait_for(condition, what):
    deadline = time.monotonic() + HANG_GUARD_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


# --- 1. A time budget per run ---------------------------------------------------------------


def test_m1_cron_schedule_with_a_stalled_influxdb_takes_every_host_sample(tmp_path, fake):
    """The README's cron line, compressed: 5 ticks of `collect --count 6`, InfluxDB accepting and never answering.

    Each tick starts while the previous one is still shipping (it is stuck on
    the stalled server, or waiting for the ship lock): that is the cron
    overlap that used to make every other tick exit 75 with no sample.
    """
    server = fake("stall")
    config = write_config(
        tmp_path,
        host={"sources": ["nic", "tcp"]},
        influxdb={"enabled": True, "url": server.url, "timeout_s": 2.0, "max_retries": 3, "retry_backoff_s": 0.1},
    )
    ticks = []
    for tick in range(5):
        log = open(tmp_path / f"tick{tick}.log", "w+")
        connections_before = server.connections
        process = subprocess.Popen(
            [*DNFSMON, "--config", str(config), "collect", "--count", "6", "--interval", "0.05"],
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        ticks.append((process, log))

        def shipping(process=process, log=log, before=connections_before):
            # Past sampling: connected to InfluxDB, found another ship under way, or done.
            text = open(log.name).read()
            return process.poll() is not None or server.connections > before or "ship.lock" in text

        wait_for(shipping, f"tick {tick} to reach its ship")
    results = []
    for process, log in ticks:
        process.wait(timeout=HANG_GUARD_S)
        results.append((process.returncode, open(log.name).read()))
    for code, text in results:
        assert code in (0, 4), text  # never 75: sampling never waits on a ship
        assert "6 samples:" in text
    stalled = [text for code, text in results if code == 4]
    assert stalled and all("did not answer within 2.0 s" in text for text in stalled)
    # One request per ship: the first timeout ends it (no retries on a stalled server).
    assert len(server.requests) <= len(ticks)
    samples = [p for p in Store(str(tmp_path / "store"), 10**8).points() if p.measurement == "dnfsmon_agent"]
    assert len(samples) == 30


def test_m2_a_trickling_reply_is_cut_at_timeout_s(tmp_path, fake):
    """A server sending one byte every 0.3 s used to hold a request for minutes; timeout_s bounds the whole reply."""
    server = fake("trickle", trickle_s=0.3)
    config = write_config(tmp_path, influxdb={"enabled": True, "url": server.url, "timeout_s": 1.5, "max_retries": 0})
    Store(str(tmp_path / "store"), 10**8).append(points(5))
    started = time.monotonic()
    result = run("--config", config, "ship")
    elapsed = time.monotonic() - started
    assert result.returncode == 4, result.stderr
    assert "did not answer within 1.5 s" in result.stderr
    assert elapsed < 20  # it used to run until the test gave up; measured about 2.5 s with start-up
    assert len(list(Store(str(tmp_path / "store"), 10**8).unshipped())) == 5  # kept for a later run


def test_m1_deadline_bounds_retries_and_backoff(tmp_path, fake):
    """Retries never wait past deadline_s: a backoff that would, stops the ship at once."""
    server = fake("respond", responses=[(503, {}, b"")])
    store = Store(str(tmp_path), 10**8)
    store.append(points(3))
    with pytest.raises(ShipError, match="would pass deadline_s"):
        ship(store, settings(server.url, max_retries=10, retry_backoff_s=30, deadline_s=5))
    assert len(server.requests) == 1


def test_l6_retry_after_is_honoured(tmp_path, fake):
    server = fake("respond", responses=[(429, {"Retry-After": "1"}, b""), (204, {}, b"")])
    store = Store(str(tmp_path), 10**8)
    store.append(points(3))
    report = ship(store, settings(server.url, max_retries=3, retry_backoff_s=0.01))
    assert report.sent == 3
    first, second = server.requests
    assert second - first >= 1.0  # what the server asked, not the 0.01 s backoff


def test_l6_retry_after_beyond_the_deadline_stops_the_ship(tmp_path, fake):
    server = fake("respond", responses=[(429, {"Retry-After": "120"}, b"")])
    store = Store(str(tmp_path), 10**8)
    store.append(points(3))
    with pytest.raises(ShipError, match="as Retry-After asks"):
        ship(store, settings(server.url, max_retries=3, deadline_s=10))
    assert len(server.requests) == 1
    assert len(list(store.unshipped())) == 3


def test_d9_missing_bucket_is_a_configuration_error(tmp_path, fake):
    server = fake("respond", responses=[(404, {}, b'{"error":"database not found: \\"nodb\\""}')])
    config = write_config(tmp_path, influxdb={"enabled": True, "url": server.url, "bucket": "nodb", "max_retries": 3})
    Store(str(tmp_path / "store"), 10**8).append(points(2))
    result = run("--config", config, "ship")
    assert result.returncode == 2, result.stderr
    assert "bucket 'nodb' not found" in result.stderr and "Traceback" not in result.stderr
    assert len(server.requests) == 1  # not retried: waiting does not create a database


def test_m9_a_storm_of_rejections_stops_after_a_bound_and_exits_non_zero(tmp_path, fake):
    server = fake("respond", responses=[(400, {}, b'{"error":"partial write: max-values-per-tag limit exceeded"}')])
    config = write_config(tmp_path, influxdb={"enabled": True, "url": server.url, "batch_size": 1000})
    store = Store(str(tmp_path / "store"), 10**8)
    store.append(points(2000))
    result = run("--config", config, "ship")
    assert result.returncode == 4, result.stderr
    assert "rejected" in result.stderr and "stopping" in result.stderr
    assert len(server.requests) == REJECTED_REQUESTS_MAX + 1  # it used to be 2n-1 = 3,999
    quarantined = len(store.quarantined())
    left = len(list(store.unshipped()))
    assert 0 < quarantined < 100 and quarantined + left == 2000  # nothing lost, nothing counted twice


def test_m9_quarantine_is_bounded(tmp_path):
    store = Store(str(tmp_path), max_bytes=4096)
    for point in points(3000):
        store.quarantine(point, "InfluxDB rejected it: HTTP 400: a reason of some length")
    sizes = [os.path.getsize(tmp_path / name) for name in ("quarantine.jsonl", "quarantine.jsonl.1")]
    assert all(size <= store.quarantine_max_bytes for size in sizes)
    assert store.quarantined()[-1][0] == points(1, start=2999)[0]  # the newest are kept
    # The counter counts every point set aside, those the rotation deleted too (the accounting test).
    assert store.counts().quarantined_points == 3000 > len(store.quarantined())


# --- 2. The store never loses silently ------------------------------------------------------


def test_m6_short_write_on_full_disk_is_counted(tmp_path, monkeypatch):
    """A short write (what a nearly full disk does) then ENOSPC: nothing torn is left, every point is counted."""
    store = Store(str(tmp_path), 10**8)
    store.append(points(10))
    ((_, segment),) = store.segments()
    size_before = os.path.getsize(segment)
    real_write = os.write
    calls = []

    def full_disk(fd, data):
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data[: len(data) // 3]))  # a short write
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full_disk)
    # One point of the batch cannot be line protocol: neither stored nor quarantined, it is counted too.
    unwritable = Point("m", (("host", "ends\\"),), {"i": -1}, 1)
    with pytest.raises(StoreWriteError) as error:
        store.append([*points(99, start=10), unwritable])
    monkeypatch.undo()
    assert isinstance(error.value, EnvironmentProblem) and error.value.exit_code == 2
    assert "100 points not written (No space left on device)" in str(error.value)
    assert len(calls) == 2  # the short write was continued, not ignored
    assert os.path.getsize(segment) == size_before  # the batch rolled back, no torn record
    assert store.counts().unwritten_points == 100 and store.quarantined() == []
    store.append(points(1, start=110))
    assert [p.fields["i"] for p in store.points()] == [*range(10), 110]


def test_a_point_that_cannot_be_line_protocol_nor_quarantined_is_counted_as_unwritten(tmp_path, monkeypatch, caplog):
    store = Store(str(tmp_path), 10**8)
    unwritable = Point("m", (("host", "ends\\"),), {"i": -1}, 1)

    def disk_full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store, "_quarantine_locked", disk_full)
    store.append([*points(3), unwritable])
    assert [p.fields["i"] for p in store.points()] == [0, 1, 2]
    assert store.counts().unwritten_points == 1
    assert "could not quarantine a point of m" in caplog.text


def test_m6_a_real_short_write_through_the_cli_exits_2_and_counts(tmp_path):
    """The kernel's own short write: RLIMIT_FSIZE makes write() stop at the limit, then fail with EFBIG."""
    config = write_config(tmp_path, host={"sources": ["nic", "tcp"]})
    assert run("--config", config, "collect").returncode == 0
    store = Store(str(tmp_path / "store"), 10**8)
    store.append(points(200))  # the segment is now the largest file the run writes
    ((_, segment),) = store.segments()
    size_before = os.path.getsize(segment)

    def limit_file_size():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of death
        resource.setrlimit(resource.RLIMIT_FSIZE, (size_before + 100, size_before + 100))

    result = run("--config", config, "collect", preexec_fn=limit_file_size)
    assert result.returncode == 2, result.stderr
    assert "points not written (File too large)" in result.stderr
    assert len(result.stderr.strip().splitlines()[-1]) < 300 and "Traceback" not in result.stderr
    assert os.path.getsize(segment) == size_before
    unwritten = int(result.stderr.split(" points not written")[0].split()[-1])
    assert Store(str(tmp_path / "store"), 10**8).counts().unwritten_points == unwritten > 0
    # The next run works and publishes the count.
    assert run("--config", config, "collect").returncode == 0
    agent = [p for p in Store(str(tmp_path / "store"), 10**8).points() if p.measurement == "dnfsmon_agent"][-1]
    assert agent.fields["store_unwritten_points"] == unwritten


@pytest.mark.parametrize("cursor", [{"segment": 1, "offset": 99999999}, {"segment": 6, "offset": 0}, "mid-record"])
def test_m8_cursor_beyond_the_data_is_reset_with_a_warning(tmp_path, caplog, cursor):
    store = Store(str(tmp_path), 10**8)
    store.append(points(5))
    if cursor == "mid-record":
        cursor = {"segment": 1, "offset": len(encode_record(points(1)[0])) + 7}
    (tmp_path / "cursor.json").write_text(json.dumps(cursor))
    assert [from_line(line.decode()).fields["i"] for _, line in store.unshipped()] == list(range(5))
    assert "ship cursor" in caplog.text and "restarts from the oldest stored point" in caplog.text


def test_m8_a_valid_cursor_is_kept(tmp_path, caplog):
    store = Store(str(tmp_path), 10**8)
    store.append(points(5))
    position, _ = list(store.unshipped())[2]
    store.acknowledge(position)
    assert [from_line(line.decode()).fields["i"] for _, line in store.unshipped()] == [3, 4]
    assert "ship cursor" not in caplog.text


def test_l4_corrupt_records_in_the_middle_are_counted_once(tmp_path):
    store = Store(str(tmp_path), 10**6, segment_bytes=4096)
    for batch in range(6):
        store.append(points(10, start=batch * 10))
    (_, oldest), *_ = store.segments()
    lines = open(oldest, "rb").read().split(b"\n")
    lines[2] = lines[2].replace(b"i=2i", b"i=9i")  # checksum no longer matches
    lines[4] = b"garbage"
    open(oldest, "wb").write(b"\n".join(lines))
    for _ in range(2):  # reading twice (a ship that failed, then one that worked) counts once
        pending = list(store.unshipped())
    assert len(pending) == 58
    store.acknowledge(pending[-1][0])
    assert store.counts().torn_records == 2
    list(store.unshipped())
    assert store.counts().torn_records == 2


def test_l5_two_processes_sharing_a_store_interleave_no_records(tmp_path):
    writer = (
        "import sys; from dnfsmon.store import Store; from dnfsmon.points import Point\n"
        "s = Store(sys.argv[1], 10**9)\n"
        "for b in range(150):\n"
        "    s.append([Point('m', (('w', sys.argv[2]),), {'i': b * 20 + i, 'pad': 'x' * 300}, b * 20 + i) for i in range(20)])\n"
    )
    writers = [
        subprocess.Popen([sys.executable, "-c", writer, str(tmp_path), name], stderr=subprocess.PIPE, text=True)
        for name in ("a", "b")
    ]
    errors = [w.communicate(timeout=HANG_GUARD_S)[1] for w in writers]
    assert all(w.returncode == 0 for w in writers), errors
    assert "torn" not in "".join(errors)
    stored = list(Store(str(tmp_path), 10**9).points())
    assert len(stored) == 6000
    for name in ("a", "b"):
        assert sorted(p.fields["i"] for p in stored if p.tags == (("w", name),)) == list(range(3000))


# --- 3. Files opened safely -----------------------------------------------------------------


def _victim(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("line1\nline2")
    os.chmod(victim, 0o600)
    return victim


@pytest.mark.parametrize(
    "planted",
    ["state/collect.lock", "store/seg-0000000000000001.lp", "store/seg-0000000000000001.jsonl", "store/store.lock"],
)
def test_m4_planted_symlinks_are_refused_not_followed(tmp_path, planted):
    config = write_config(tmp_path, host={"sources": ["tcp"]})
    (tmp_path / "state").mkdir(mode=0o750)
    (tmp_path / "store").mkdir(mode=0o750)
    victim = _victim(tmp_path)
    os.symlink(victim, tmp_path / planted)
    result = run("--config", config, "collect")
    assert result.returncode == 2, result.stderr
    assert f"{tmp_path / planted} is a symbolic link" in result.stderr
    assert "Traceback" not in result.stderr
    assert victim.read_text() == "line1\nline2"


def test_m4_planted_quarantine_symlink_is_refused(tmp_path):
    victim = _victim(tmp_path / "..")
    store = Store(str(tmp_path), 10**8)
    os.symlink(victim, tmp_path / "quarantine.jsonl")
    with pytest.raises(EnvironmentProblem, match="is a symbolic link"):
        store.quarantine(points(1)[0], "test")
    assert victim.read_text() == "line1\nline2"


def test_m5_a_run_in_directories_owned_by_another_user_is_refused(tmp_path):
    """A root run in the service user's directories would leave root-owned files that break that user's runs."""
    config = write_config(tmp_path, host={"sources": ["tcp"]})
    (tmp_path / "state").mkdir(mode=0o750)
    if os.geteuid() == 0:
        os.chown(tmp_path / "state", 65534, 65534)  # the service user's directory, root running
        owner = 65534
    else:
        os.rmdir(tmp_path / "state")
        os.symlink("/usr", tmp_path / "state")  # root's directory, the service user running
        owner = 0
    result = run("--config", config, "collect")
    assert result.returncode == 2, result.stderr
    name = pwd.getpwuid(owner).pw_name
    assert f"is owned by {name}, not by this user" in result.stderr
    if owner == 65534:
        # Root is told to run as the owner, by name; a chown to root would lock the owner's cron runs out.
        assert f"run dnfsmon as {name}, its owner: runuser -u {name} -- dnfsmon" in result.stderr
        assert "chown" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    if owner == 65534:
        assert os.listdir(tmp_path / "state") == []  # nothing created there


def test_m5_group_writable_directory_is_refused(tmp_path):
    (tmp_path / "store").mkdir()
    os.chmod(tmp_path / "store", 0o770)
    with pytest.raises(EnvironmentProblem, match="mode 0770: group or others could plant files"):
        Store(str(tmp_path / "store"), 10**8)


@pytest.mark.parametrize("kind", ["unreadable", "directory", "deeply nested"])
def test_m5_any_unusable_state_file_is_set_aside(tmp_path, caplog, kind):
    state = StateFile(str(tmp_path), "host:h")
    if kind == "directory":
        os.mkdir(state.path)
    elif kind == "deeply nested":
        open(state.path, "w").write("[" * 100000)
    else:
        open(state.path, "w").write("{}")
        os.chmod(state.path, 0o600)
        if os.geteuid() == 0:
            os.chown(state.path, 65534, 65534)  # root-owned files break other users' runs the same way
        else:
            os.chmod(state.path, 0)
    assert state.load() == {}
    assert "re-baselines" in caplog.text
    assert not os.path.exists(state.path)


def test_l3_lock_path_that_is_a_directory_is_an_environment_problem(tmp_path):
    os.mkdir(tmp_path / "collect.lock")
    with pytest.raises(EnvironmentProblem, match="not a regular file"):
        RunLock(str(tmp_path)).acquire()


def _secret(tmp_path, text="s3cret\n", mode=0o600):
    path = tmp_path / "token"
    path.write_text(text)
    os.chmod(path, mode)
    return path


def test_m10_symlinked_secret_file_is_refused(tmp_path):
    target = _secret(tmp_path)
    os.symlink(target, tmp_path / "link")
    with pytest.raises(EnvironmentProblem, match="is a symbolic link"):
        config.read_secret(str(tmp_path / "link"), None, "InfluxDB token")


def test_m10_fifo_as_secret_file_is_refused_without_hanging(tmp_path):
    os.mkfifo(tmp_path / "token", 0o600)
    with pytest.raises(EnvironmentProblem, match="not a regular file"):
        config.read_secret(str(tmp_path / "token"), None, "InfluxDB token")


def test_m10_secret_file_of_another_user_is_refused(tmp_path):
    path = _secret(tmp_path)
    if os.geteuid() == 0:
        os.chown(path, 65534, 65534)
        with pytest.raises(EnvironmentProblem, match="owned by uid 65534"):
            config.read_secret(str(path), None, "InfluxDB token")
    else:  # only root can read another user's 0600 file; the owner check is what stops root
        with pytest.raises(EnvironmentProblem, match="Permission denied"):
            config.read_secret("/etc/shadow", None, "InfluxDB token")


@pytest.mark.parametrize("setup", ["symlink", "fifo", "dev-zero", "huge", "directory"])
def test_l1_hostile_capture_files_are_refused(tmp_path, setup):
    directory = tmp_path / "cap"
    (directory / "proc" / "net").mkdir(parents=True)
    manifest = {"format": 1, "host": "h", "sources": {"nic": {"time": 1, "wall_time": 2, "files": ["proc/net/dev"]}}}
    (directory / "capture.json").write_text(json.dumps(manifest))
    target = directory / "proc" / "net" / "dev"
    secret = _secret(tmp_path, "root:$y$SECRETHASH\n")
    if setup == "symlink":
        os.symlink(secret, target)
    elif setup == "fifo":
        os.mkfifo(target)
    elif setup == "dev-zero":
        os.symlink("/dev/zero", target)
    elif setup == "directory":
        target.mkdir()
    else:
        with open(target, "wb") as f:
            f.truncate(capture.MAX_CAPTURE_BYTES + 1)  # sparse: no disk used
    with pytest.raises(capture.CaptureError) as error:
        capture.read(str(directory))
    assert str(target) in str(error.value) and "SECRETHASH" not in str(error.value)
    result = run("diff", directory, directory)
    assert result.returncode == 2 and "SECRETHASH" not in result.stderr


# --- 4. Secrets never printed; 5. config bounds ---------------------------------------------


def test_m3_token_with_a_line_break_is_refused_and_never_printed(tmp_path, fake):
    server = fake("respond")
    token = _secret(tmp_path, "admin:S3cretPassw0rd\nsecondline\n")
    config = write_config(tmp_path, influxdb={"enabled": True, "url": server.url, "token_file": str(token)})
    Store(str(tmp_path / "store"), 10**8).append(points(1))
    result = run("--config", config, "ship")
    assert result.returncode == 2
    assert "S3cret" not in result.stderr and "secondline" not in result.stderr
    assert f"{token} holds a line break" in result.stderr
    assert server.requests == []


def test_m3_token_in_the_environment_with_a_line_break_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("DNFSMON_TEST_TOKEN", "abc\ndef")
    with pytest.raises(EnvironmentProblem) as error:
        config.read_secret(None, "DNFSMON_TEST_TOKEN", "InfluxDB token")
    assert "DNFSMON_TEST_TOKEN" in str(error.value) and "abc" not in str(error.value)


def test_m3_surrounding_whitespace_is_stripped(tmp_path):
    assert config.read_secret(str(_secret(tmp_path, "  tok3n \r\n")), None, "InfluxDB token") == "tok3n"


@pytest.mark.parametrize(
    "section, key, value",
    [
        ("influxdb", "url", "http://admin:S3cr3t@influx:8086"),
        ("influxdb", "url", "https://S3cr3t@influx:8086"),
        ("oracle", "dsn", "dnfsmon/S3cr3t@db1:1521/ORCL"),
    ],
)
def test_l2_password_in_a_url_or_dsn_is_refused_without_echo(section, key, value):
    with pytest.raises(ConfigError) as error:
        parse({section: {key: value}}, None)
    assert f"[{section}] {key}" in str(error.value) and "password" in str(error.value)
    assert "S3cr3t" not in str(error.value)


def test_l2_a_short_valid_url_is_accepted():
    assert parse({"influxdb": {"enabled": True, "url": "http://a"}}, None).influxdb.url == "http://a"


@pytest.mark.parametrize(
    "section, key, value",
    [
        ("influxdb", "retry_backoff_s", 1e9),
        ("influxdb", "max_retries", 100000),
        ("influxdb", "timeout_s", float("inf")),
        ("influxdb", "timeout_s", 0.0005),
        ("influxdb", "deadline_s", 1e9),
        ("influxdb", "batch_size", 10**9),
        ("oracle", "call_timeout_s", 0.0005),
        ("simulator", "read_iops", float("inf")),
        ("simulator", "instances", 100000),
        ("store", "max_bytes", 1),
        ("agent", "host", "db1\\"),
        ("agent", "host", "db1\nx"),
    ],
)
def test_l2_absurd_values_are_refused_with_the_key_named(section, key, value):
    with pytest.raises(ConfigError, match=rf"\[{section}\] {key} = "):
        parse({section: {key: value}}, None)


@pytest.mark.parametrize("args", [["--interval", "inf"], ["--interval", "1e9"], ["--count", "100000000"]])
def test_l2_absurd_count_or_interval_is_a_usage_error(tmp_path, args):
    config = write_config(tmp_path, host={"sources": ["tcp"]})
    result = run("--config", config, "collect", *args)
    assert result.returncode == 2 and args[0] in result.stderr


# --- 7. dnfsmon show ------------------------------------------------------------------------


def test_show_is_read_only_and_needs_no_write_access(tmp_path):
    config = write_config(tmp_path, host={"sources": ["nic", "tcp"]})
    assert run("--config", config, "collect").returncode == 0
    assert run("--config", config, "collect").returncode == 0
    before = {name: os.stat(tmp_path / "store" / name).st_mtime_ns for name in os.listdir(tmp_path / "store")}
    os.chmod(tmp_path / "store", 0o550)  # show must not need to write
    try:
        result = run("--config", config, "show")
    finally:
        os.chmod(tmp_path / "store", 0o750)
    assert result.returncode == 0, result.stderr
    assert "age" in result.stdout and "Host TCP" in result.stdout
    after = {name: os.stat(tmp_path / "store" / name).st_mtime_ns for name in os.listdir(tmp_path / "store")}
    assert after == before  # no lock, no file created or touched


def test_show_on_a_store_that_does_not_exist_creates_nothing(tmp_path):
    config = write_config(tmp_path)
    result = run("--config", config, "show")
    assert result.returncode == 0 and "(it does not exist)" in result.stdout
    assert not (tmp_path / "store").exists() and not (tmp_path / "state").exists()


def test_show_reads_the_index_not_every_segment(tmp_path):
    """The latest point per series comes from latest.json: show's time does not grow with the store."""
    store = Store(str(tmp_path / "store"), 10**8)
    store.append(points(3, measurement="dnfsmon_tcp"))
    config = write_config(tmp_path)
    for _, path in store.segments():
        open(path, "wb").write(b"not read by show\n")
    result = run("--config", config, "show", "--measurement", "dnfsmon_tcp")
    assert result.returncode == 0, result.stderr
    assert "i " in result.stdout and " 2" in result.stdout  # the newest point, i = 2
    assert "ago)" in result.stdout


def test_d19_show_of_an_unknown_measurement_is_a_usage_error(tmp_path):
    config = write_config(tmp_path)
    result = run("--config", config, "show", "--measurement", "dnfsmon_typo")
    assert result.returncode == 2
    assert "no such measurement" in result.stderr and "dnfsmon_tcp" in result.stderr


def test_unshipped_position_order_is_store_order():
    assert Position(1, 500) < Position(2, 0) < Position(2, 10)


def test_l3_a_full_disk_when_saving_state_or_the_cursor_is_an_environment_problem(tmp_path, monkeypatch):
    import dnfsmon.files

    store = Store(str(tmp_path), 10**8)
    store.append(points(2))
    position, _ = list(store.unshipped())[-1]

    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(dnfsmon.files, "create_temp", no_space)
    with pytest.raises(EnvironmentProblem, match=r"cannot record what InfluxDB took \(No space left on device\)"):
        store.acknowledge(position)
    with pytest.raises(EnvironmentProblem, match=r"cannot save state file .* \(No space left on device\)"):
        StateFile(str(tmp_path), "host:h").save([])


class RecordingWriteServer:
    """An HTTP or HTTPS write endpoint that answers 204 and records each request (path, headers, body).

    close_after_reply: close the connection after each reply without saying so,
    as a server does with a kept-alive connection that sat idle."""

    def __init__(self, certificate=None, close_after_reply=False):
        import http.server
        import ssl
        import threading

        self.requests = []
        recorder = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                recorder.requests.append((self.path, dict(self.headers), body))
                self.send_response(204)
                self.end_headers()
                if close_after_reply:
                    self.close_connection = True

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        scheme = "http"
        if certificate is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*certificate)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://localhost:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def lines(self):
        import gzip

        found = []
        for _, headers, body in self.requests:
            if headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            found += body.decode().split("\n")
        return found

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def certificate(tmp_path):
    """A self-signed certificate for localhost (openssl), as (certificate file, key file)."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subject = ["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"]
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            *subject,
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return str(cert), str(key)


def test_ship_over_tls_verifies_the_server_against_ca_file(tmp_path, certificate):
    server = RecordingWriteServer(certificate)
    try:
        store = Store(str(tmp_path / "store"), 10**6)
        store.append(points(3))
        with pytest.raises(ShipError, match="CERTIFICATE_VERIFY_FAILED"):  # not in the system's trust store
            ship(store, settings(server.url, max_retries=0))
        assert server.requests == [] and len(list(store.unshipped())) == 3
        report = ship(store, settings(server.url, max_retries=0, ca_file=certificate[0]))
        assert report.sent == 3 and list(store.unshipped()) == []
        store.append(points(2, start=3))
        assert ship(store, settings(server.url, max_retries=0, verify_tls=False)).sent == 2
        assert server.lines() == [to_line(p) for p in points(5)]
    finally:
        server.stop()


def test_ship_sends_the_token_gzip_and_the_write_query(tmp_path, monkeypatch):
    monkeypatch.setenv("DNFSMON_TEST_TOKEN", "user:s3cret")
    server = RecordingWriteServer()
    try:
        store = Store(str(tmp_path / "store"), 10**6)
        store.append(points(5))
        report = ship(store, settings(server.url + "/influx/", token_env="DNFSMON_TEST_TOKEN", batch_size=2))
        assert report.sent == 5
        path, headers, _ = server.requests[0]
        assert path == "/influx/api/v2/write?org=-&bucket=db&precision=ns"
        assert headers["Authorization"] == "Token user:s3cret"
        assert headers["Content-Encoding"] == "gzip"
        assert server.lines() == [to_line(p) for p in points(5)]
    finally:
        server.stop()


def test_a_kept_alive_connection_the_server_closed_is_replaced_without_a_retry(tmp_path):
    server = RecordingWriteServer(close_after_reply=True)
    try:
        store = Store(str(tmp_path / "store"), 10**6)
        store.append(points(6))
        report = ship(store, settings(server.url, max_retries=0, batch_size=2))  # no retries allowed
        assert report.sent == 6 and list(store.unshipped()) == []
        assert server.lines() == [to_line(p) for p in points(6)]
    finally:
        server.stop()


def test_an_endless_reply_body_is_read_only_as_far_as_an_error_needs(tmp_path):
    """A broken endpoint answers 500 with a body that never ends: the ship reports HTTP 500 with
    the body's start at once, never reading the body into memory until its timeout."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def answer():
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 1000000000\r\n\r\n")
            chunk = b"x" * 65536
            try:
                for _ in range(16):  # 1 MB, then nothing more: the rest of the body never comes
                    connection.sendall(chunk)
            except OSError:  # the agent closed the connection after what it reads
                pass
            stop.wait(30)

    threading.Thread(target=answer, daemon=True).start()
    try:
        store = Store(str(tmp_path / "store"), 10**6)
        store.append(points(1))
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        started = time.monotonic()
        with pytest.raises(ShipError, match=r"write failed after 0 retries: HTTP 500: x{10}") as failed:
            ship(store, settings(url, max_retries=0, timeout_s=20))
        assert time.monotonic() - started < 10, failed.value
        assert len(list(store.unshipped())) == 1
    finally:
        stop.set()
        listener.close()


# --- Round 2 of the reliability review (docs/reliability.md names each finding's test) -------


@pytest.mark.parametrize("text", ["\ufefftok-BOM-123\n", "tok-\u20ac-123\n"], ids=["bom", "euro-sign"])
def test_r2_m3_a_token_no_http_header_can_carry_is_refused_in_one_line(tmp_path, fake, text):
    server = fake("respond")
    token = tmp_path / "token"
    token.write_bytes(text.encode("utf-8"))
    os.chmod(token, 0o600)
    config = write_config(tmp_path, influxdb={"enabled": True, "url": server.url, "token_file": str(token)})
    Store(str(tmp_path / "store"), 10**8).append(points(1))
    result = run("--config", config, "ship")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "tok-" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert str(token) in result.stderr and ("byte order mark" in result.stderr or "ASCII" in result.stderr)
    assert server.requests == []


def test_r2_m3_an_oracle_password_may_hold_any_character_but_no_byte_order_mark(tmp_path):
    # Oracle passwords may hold multibyte characters (Security Guide, "Password Complexity"); only the BOM is refused.
    assert config.read_secret(str(_secret(tmp_path, "p\u20acss\n")), None, "Oracle password") == "p\u20acss"
    with pytest.raises(EnvironmentProblem, match="byte order mark"):
        config.read_secret(str(_secret(tmp_path, "\ufeffpass\n")), None, "Oracle password")


def test_r2_l6_a_hardlinked_secret_file_is_refused(tmp_path):
    elsewhere = _secret(tmp_path, "ROOT-ONLY-SECRET\n")
    os.link(elsewhere, tmp_path / "linked-token")
    with pytest.raises(EnvironmentProblem, match="2 hard links") as error:
        config.read_secret(str(tmp_path / "linked-token"), None, "InfluxDB token")
    assert "ROOT-ONLY" not in str(error.value)


def _mount_tmpfs(directory, size):
    """A small tmpfs at `directory` (root mounts it): a real file system that really fills up."""
    directory.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0750", "tmpfs", str(directory)], check=True)


def _fill(directory):
    """Fill the file system of `directory` to its last byte; the filler's path."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 4096, 512, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError as error:
                assert error.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler


def _unwritten_in_log(stderr):
    return sum(
        int(line.split(" points not written")[0].split()[-1])
        for line in stderr.splitlines()
        if "points not written" in line
    )


@pytest.mark.system
def test_r2_m2_points_not_written_on_a_really_full_disk_are_counted_and_published(tmp_path):
    """A 1 MiB tmpfs holds state and store; filled to the last byte, every point a run could not
    write is in counts.json (no new block needed to record it) and in the next published agent point."""
    if os.geteuid() != 0:
        raise RuntimeError("this test mounts a tmpfs: run the tests as root (make test does, in CI)")
    fs = tmp_path / "fs"
    _mount_tmpfs(fs, "1m")
    try:
        config = write_config(
            tmp_path,
            agent={"state_dir": str(fs / "state")},
            store={"dir": str(fs / "store")},
            host={"sources": ["nic", "tcp"]},
        )
        assert run("--config", config, "collect").returncode == 0
        filler = _fill(fs)
        logged = 0
        codes = []
        for _ in range(4):
            result = run("--config", config, "collect", "--count", "2", "--interval", "0.1")
            codes.append(result.returncode)
            assert "Traceback" not in result.stderr
            logged += _unwritten_in_log(result.stderr)
        assert 2 in codes and logged > 0, codes
        # Read while the disk is still full: the count is on disk already.
        assert Store(str(fs / "store"), 10**8).counts().unwritten_points == logged
        # L5: a ship on the full disk names the file it could not write, and the fix.
        (tmp_path / "shipping").mkdir()
        shipping = write_config(
            tmp_path / "shipping",
            agent={"state_dir": str(fs / "state")},
            store={"dir": str(fs / "store")},
            influxdb={"enabled": True, "url": "http://127.0.0.1:9"},
        )
        result = run("--config", shipping, "ship")
        assert result.returncode == 2, result.stderr
        assert f"{fs / 'store'}" in result.stderr and "free space" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        filler.unlink()
        assert run("--config", config, "collect").returncode == 0
        agent = [p for p in Store(str(fs / "store"), 10**8).points() if p.measurement == "dnfsmon_agent"][-1]
        assert agent.fields["store_unwritten_points"] == logged
    finally:
        subprocess.run(["umount", "-l", str(fs)], check=False)


def _run_bounded(*args, timeout=30):
    """A run that must not hang: a FIFO it waited on would reach the timeout (subprocess.TimeoutExpired)."""
    return subprocess.run([*DNFSMON, *map(str, args)], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("name", ["cursor.json", "counts.json", "latest.lp", "latest.shown.lp"])
@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_r2_l1_a_fifo_or_link_planted_in_the_store_never_hangs_nor_feeds_a_run(tmp_path, fake, name, kind):
    server = fake("respond")
    assert _run_bounded("--config", write_config(tmp_path, host={"sources": ["tcp", "nic"]}), "collect").returncode == 0
    config = write_config(tmp_path, host={"sources": ["tcp", "nic"]}, influxdb={"enabled": True, "url": server.url})
    ((sequence, segment),) = Store(str(tmp_path / "store"), 10**8).segments()
    planted = tmp_path / "store" / name
    planted.unlink(missing_ok=True)
    # What a link could feed: a cursor past every stored point (a ship would send nothing), counts to publish.
    victim = tmp_path / "victim"
    victim.write_text(json.dumps({"segment": sequence, "offset": os.path.getsize(segment), "dropped_points": 123456}))
    if kind == "fifo":
        os.mkfifo(planted, 0o600)
    else:
        os.symlink(victim, planted)
    for command in ("ship", "collect", "show"):
        result = _run_bounded("--config", config, command)
        assert result.returncode == 0, (command, result.stderr)
        assert "Traceback" not in result.stderr
        if command == "ship":
            assert server.requests, "the stored points were not sent"
    assert json.loads(victim.read_text())["dropped_points"] == 123456
    store = Store(str(tmp_path / "store"), 10**8)
    assert store.counts().dropped_points == 0 and list(store.unshipped()) == []


@pytest.mark.parametrize("name", ["counts.json", "counts.copy.json"])
@pytest.mark.parametrize("kind", ["fifo", "symlink", "gone"])
def test_a_file_planted_at_counts_json_loses_no_count(tmp_path, name, kind):
    """A FIFO planted at counts.json was moved aside and the counters started again from 0 (the
    published store_dropped_points fell from 7 to 0); its copy keeps them."""
    (tmp_path / "store").mkdir(mode=0o750)
    (tmp_path / "store" / "counts.json").write_text('{"dropped_points": 7, "torn_records": 2}')  # a store before
    config = write_config(tmp_path, host={"sources": ["tcp"]})
    assert _run_bounded("--config", config, "collect").returncode == 0
    planted = tmp_path / "store" / name
    planted.unlink()
    if kind == "fifo":
        os.mkfifo(planted, 0o600)
    elif kind == "symlink":
        os.symlink(tmp_path / "config.toml", planted)
    result = _run_bounded("--config", config, "collect")
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("WARNING") == (kind != "gone"), result.stderr  # the planted file moved aside
    agent = [p for p in Store(str(tmp_path / "store"), 10**8).points() if p.measurement == "dnfsmon_agent"][-1]
    assert (agent.fields["store_dropped_points"], agent.fields["store_torn_records"]) == (7, 2)
    assert os.path.getsize(planted) == 512  # made again from the other, with its two slots


def test_r2_l3_a_cursor_of_infinity_or_a_17_digit_segment_is_ignored_with_one_warning(tmp_path, caplog):
    store = Store(str(tmp_path), 10**8)
    for text in (
        '{"segment": Infinity, "offset": 0}',
        '{"segment": 9999999999999999, "offset": 0}',
        '{"segment": 1, "offset": -5}',
    ):
        (tmp_path / "cursor.json").write_text(text)
        caplog.clear()
        assert store.cursor() == Position(0, 0)
        assert caplog.text.count("store cursor unreadable") == 1
    # With an empty store the next segment is named after the cursor's: it must stay one that is listed.
    (tmp_path / "cursor.json").write_text('{"segment": 9999999999999999, "offset": 0}')
    store.append(points(3))
    assert [p.fields["i"] for p in store.points()] == [0, 1, 2]
    assert [offset for offset, _ in store.unshipped()] != []


@pytest.mark.parametrize(
    "text", ['{"dropped_points": Infinity}', '{"dropped_points": -7}', '{"torn_records": 1.5}', "[" * 100]
)
def test_r2_l3_counts_that_no_store_writes_are_never_published(tmp_path, caplog, text):
    (tmp_path / "store").mkdir(mode=0o750)
    (tmp_path / "store" / "counts.json").write_text(text)
    config = write_config(tmp_path, host={"sources": ["tcp"]})
    result = run("--config", config, "collect")
    assert result.returncode == 0, result.stderr
    assert "counts.json holds no usable counts" in result.stderr
    agent = [p for p in Store(str(tmp_path / "store"), 10**8).points() if p.measurement == "dnfsmon_agent"][-1]
    assert all(agent.fields[name] == 0 for name in agent.fields if name.startswith("store_"))


def test_r2_m1_a_root_run_never_writes_through_a_directory_link_another_user_can_replace(tmp_path):
    """The README's layout: the service user owns VAR and replaces state and store with links to
    directories root owns. Before: a root collect exited 0, wrote its lock, state and segments there
    and deleted the .tmp-* and latest.json files it found."""
    var = tmp_path / "var"
    var.mkdir(mode=0o755)
    rooted = {}
    for name in ("state", "store"):
        rooted[name] = tmp_path / f"root-{name}"
        rooted[name].mkdir(mode=0o750)
        (rooted[name] / ".tmp-precious").write_text("keep")
        (rooted[name] / "latest.json").write_text("keep")
        os.symlink(rooted[name], var / name)
    if os.geteuid() == 0:
        os.chown(var, 65534, 65534)  # the service user's directory, root running
        changer = "uid 65534"
    else:
        os.chmod(var, 0o777)  # the same hole without root: anyone may replace the links
        changer = "mode 0777"
    config = write_config(
        tmp_path, agent={"state_dir": str(var / "state")}, store={"dir": str(var / "store")}, host={"sources": ["tcp"]}
    )
    result = run("--config", config, "collect")
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert f"{var / 'state'} is a symbolic link in {var}" in result.stderr and changer in result.stderr
    for name in ("state", "store"):
        assert sorted(os.listdir(rooted[name])) == [".tmp-precious", "latest.json"]


def test_r2_m1_a_directory_link_only_root_or_this_user_can_change_is_followed(tmp_path):
    (tmp_path / "real-store").mkdir(mode=0o750)
    os.symlink(tmp_path / "real-store", tmp_path / "store")  # in tmp_path, this user's own 0700 directory
    config = write_config(tmp_path, host={"sources": ["tcp"]})
    assert run("--config", config, "collect").returncode == 0
    assert any(name.startswith("seg-") for name in os.listdir(tmp_path / "real-store"))


def _hold_run_lock(directory, seconds):
    """Another run holding collect.lock for `seconds` (a child process: flocks are per open file)."""
    code = (
        "import sys, time; from dnfsmon.state import RunLock; "
        f"lock = RunLock({str(directory)!r}); lock.acquire(); print('held', flush=True); time.sleep({seconds})"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_r2_l7_a_run_waits_for_the_lock_of_a_run_about_to_finish_instead_of_losing_its_slot(tmp_path):
    config = write_config(tmp_path, host={"sources": ["tcp"]})
    (tmp_path / "state").mkdir(mode=0o750)
    holder = _hold_run_lock(tmp_path / "state", 1.0)
    try:
        result = run("--config", config, "collect", "--count", "3", "--interval", "1.5")
    finally:
        holder.wait()
    assert result.returncode == 0, result.stderr
    # The lock came within the first interval: every sample of the slot is still due.
    agents = [p for p in Store(str(tmp_path / "store"), 10**8).points() if p.measurement == "dnfsmon_agent"]
    assert len(agents) == 3


def test_r2_l7_a_run_stuck_past_the_slot_still_gives_exit_75_within_the_slot(tmp_path):
    config = write_config(tmp_path, host={"sources": ["tcp"]})
    (tmp_path / "state").mkdir(mode=0o750)
    holder = _hold_run_lock(tmp_path / "state", 60)
    try:
        started = time.monotonic()
        result = run("--config", config, "collect", "--count", "2", "--interval", "0.5")
        elapsed = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == 75, result.stderr
    assert 1.0 <= elapsed < 30
    assert not (tmp_path / "store").exists() or not Store(str(tmp_path / "store"), 10**8).segments()


def test_r2_l4_after_the_clock_steps_back_show_gives_the_newest_point_and_no_negative_age(tmp_path):
    config = write_config(tmp_path)
    store = Store(str(tmp_path / "store"), 10**8)
    now = time.time_ns()
    ten_years = 10 * 365 * 86400 * 10**9
    step = Point("dnfsmon_agent", (("host", "h"),), {"sources_ok": 1}, now + ten_years)  # stored before the step
    store.append([step])
    store.append([Point("dnfsmon_agent", (("host", "h"),), {"sources_ok": 2}, now)])  # the clock stepped back
    result = run("--config", config, "show", "--measurement", "dnfsmon_agent")
    assert result.returncode == 0, result.stderr
    assert "-3649d" not in result.stdout and " ago)" in result.stdout and "ahead" not in result.stdout
    assert "sources_ok               2" in result.stdout


# --- L2: dnfsmon diff on hostile captures ---------------------------------------------------

DIFF_CASE = os.path.join(os.path.dirname(__file__), "cases", "diff", "basic")


def _hostile_pair(tmp_path, change_manifest=None):
    """A copy of a real capture pair (tests/cases/diff/basic) whose new manifest `change_manifest` edits."""
    import shutil

    old, new = tmp_path / "old", tmp_path / "new"
    shutil.copytree(os.path.join(DIFF_CASE, "old"), old)
    shutil.copytree(os.path.join(DIFF_CASE, "new"), new)
    if change_manifest is not None:
        manifest = json.loads((new / "capture.json").read_text())
        change_manifest(manifest)
        (new / "capture.json").write_text(json.dumps(manifest))
    return old, new


def _diff_exit(old, new, *extra):
    from dnfsmon import cli

    return cli.main(["diff", str(old), str(new), *extra])


def _set_all_sources(key, value):
    def change(manifest):
        for entry in manifest["sources"].values():
            if "failed" not in entry:
                entry[key] = value

    return change


@pytest.mark.parametrize(
    "hostile",
    ["nested", "fifo", "host-newline", "host-backslash", "wall-inf", "wall-1e300", "time-nan"],
)
def test_r2_l2_a_hostile_capture_is_one_line_and_exit_2(tmp_path, capsys, hostile):
    changes = {
        "host-newline": lambda m: m.update(host="db1\nevil,tag=x"),
        "host-backslash": lambda m: m.update(host="db1\\"),
        "wall-inf": _set_all_sources("wall_time", float("inf")),
        "wall-1e300": _set_all_sources("wall_time", 1e300),
        "time-nan": _set_all_sources("time", float("nan")),
    }
    old, new = _hostile_pair(tmp_path, changes.get(hostile))
    if hostile == "nested":
        (new / "capture.json").write_text("[" * 100_000 + "]" * 100_000)
    elif hostile == "fifo":
        (new / "capture.json").unlink()
        os.mkfifo(new / "capture.json")  # nobody writes it: an open() without O_NONBLOCK waits forever

    def hung(*_):
        raise AssertionError("dnfsmon diff hung")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(30)  # a hang fails the test instead of holding the run
    try:
        code = _diff_exit(old, new, "--format", "lp")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and str(new / "capture.json") in err


def test_r2_l2_an_integer_beyond_64_bits_is_never_written_as_line_protocol(tmp_path, capsys, caplog):
    """Line protocol's integers are signed 64-bit (InfluxDB docs, "Line protocol", Integer: "Signed
    64-bit integers"); InfluxDB refuses the line of a larger one. A capture whose mtu holds 400 digits
    (the review's mutations put such numbers into mtu_bytes and tcp_slot_table_entries) was printed
    by `diff --format lp` as is, exit 0. Now the point is left out with one line, exit 3 (a
    source's input it cannot use), the rest printed; `collect` quarantines it when appended (counted)."""
    old, new = _hostile_pair(tmp_path)
    (new / "sys" / "class" / "net" / "eth0" / "mtu").write_text("9" * 400 + "\n")
    code = _diff_exit(old, new, "--format", "lp")
    out, err = capsys.readouterr()
    assert code == 3 and "Traceback" not in err
    assert not re.search(r"=-?\d{20,}i", out) and "dnfsmon_nic," in out  # the other points printed
    (line,) = [line for line in err.splitlines() if "64-bit" in line]
    assert "dnfsmon_nic" in line and "1329 bits" in line
    store = Store(str(tmp_path / "store"), 10**6)
    store.append([Point("m", (("host", "h"),), {"big": 2**63}, 1), Point("m", (("host", "h"),), {"ok": 2**63 - 1}, 2)])
    assert [from_line(line.decode()).fields for _, line in store.unshipped()] == [{"ok": 2**63 - 1}]
    assert store.counts().quarantined_points == 1


def _nfs_capture_of(directory, mounts):
    """The bundled NFS case's pair with its one mount repeated as `mounts` mounts (3 KiB each)."""
    source = os.path.join(os.path.dirname(__file__), "cases", "diff", "nfs")
    shutil.copytree(source, directory)
    for side in ("old", "new"):
        path = directory / side / "proc" / "self" / "mountstats"
        block = path.read_text()
        path.write_text("".join(block.replace("/u02/oradata", f"/u02/m{i}") for i in range(mounts)))
    return directory / "old", directory / "new"


def test_a_capture_past_its_bound_is_one_line_and_exit_2_in_bounded_memory(tmp_path):
    """Reliability L2: a 60 MB capture (60,000 mounts) was read whole: 10.4 s and 420 MB for
    `dnfsmon diff`. Past 8 MiB a capture is refused unread, one line naming the file, exit 2."""
    old, new = _nfs_capture_of(tmp_path / "big", 60_000)
    assert os.path.getsize(old / "proc" / "self" / "mountstats") > 55e6
    # The peak memory of dnfsmon alone: Linux counts a child's peak from its parent's at fork
    # (here pytest's), so a small interpreter starts it and reports what wait4 says of it.
    starter = (
        "import os, sys; pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ, "
        "file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)]); "
        "_, status, usage = os.wait4(pid, 0); print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)"
    )
    result = subprocess.run(
        [sys.executable, "-c", starter, *DNFSMON, "diff", old, new, "--format", "lp"], capture_output=True, text=True
    )
    code, peak_kib = map(int, result.stdout.split())
    assert code == 2, result.stderr
    err = result.stderr
    assert len(err.strip().splitlines()) == 1 and f"{old}/proc/self/mountstats" in err and "8 MiB" in err, err
    assert peak_kib < 100 * 1024  # the interpreter and the agent's modules, nothing of the capture


def test_a_capture_under_its_bound_per_file_but_over_it_together_is_refused(tmp_path):
    old, _ = _nfs_capture_of(tmp_path / "pair", 1)
    half = b"x" * (capture.MAX_CAPTURE_BYTES // 2 + 1)
    (old / "proc" / "self" / "mountstats").write_bytes(half)
    (old / "proc" / "sys" / "kernel" / "random" / "boot_id").write_bytes(half)
    with pytest.raises(capture.CaptureError, match="more than a capture's files may hold together"):
        capture.read(str(old))
    # At the bound exactly, read.
    (old / "proc" / "self" / "mountstats").write_bytes(half[:-2])
    assert capture.read(str(old))[1]["mountstats"].time == 7000.0


def test_r2_l2_a_huge_capture_writes_a_bounded_number_of_warnings(tmp_path, capsys):
    """A /proc/net/snmp of a million malformed lines: the log names the first problems and counts the rest."""
    old, new = _hostile_pair(tmp_path)
    junk = "".join(f"Junk{i}: not a number\n" for i in range(200_000))
    for directory in (old, new):
        path = directory / "proc" / "net" / "dev"
        path.write_text(path.read_text() + junk)
    code = _diff_exit(old, new)
    err = capsys.readouterr().err
    assert code in (0, 3), err
    assert len(err) < 20_000, f"{len(err)} bytes of warnings"
    assert "more malformed inputs (not listed)" in err


def _mutate(data: bytes, draw) -> bytes:
    """One of the mutations the review used: flip, cut, repeat or splice bytes."""
    kind = draw(st.sampled_from(["flip", "cut", "repeat", "insert"]))
    if not data:
        return draw(st.binary(max_size=64))
    at = draw(st.integers(0, len(data) - 1))
    if kind == "flip":
        return data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1 :]
    if kind == "cut":
        return data[:at]
    if kind == "repeat":
        return data[:at] + data[at:] * draw(st.integers(2, 4))
    return (
        data[:at]
        + draw(st.sampled_from([b"inf", b"1e400", b"-", b"\n", b"[", b"{", b"99999999999999999999999", b"\0"]))
        + data[at:]
    )


@pytest.mark.slow
@fuzz_settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_r2_l2_random_mutations_of_a_capture_exit_0_2_or_3_never_1(tmp_path_factory, data):
    tmp_path = tmp_path_factory.mktemp("fuzz")
    old, new = _hostile_pair(tmp_path)
    files = sorted(p for p in new.rglob("*") if p.is_file())
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(files))
        path.write_bytes(_mutate(path.read_bytes(), data.draw))
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = _diff_exit(old, new, "--format", "lp")
    assert code in (0, 2, 3), err.getvalue()[-3000:]
    assert "Traceback" not in err.getvalue()


# --- L1: every open of the agent's files goes through files.py ------------------------------

AGENT = os.path.join(os.path.dirname(__file__), "..", "agent", "dnfsmon")
# Opens outside files.py that never touch the agent's directories, each with why it is safe.
OPENS_ALLOWED = {
    ("capture.py", "write"): "writes a capture into the directory the user names on the command line",
    ("catalogue.py", "load"): "the package's own catalogue.csv",
    ("commands/sql.py", "script_field"): "the header of the package's own SQL scripts (dnfsmon sql --help)",
    ("commands/init_config.py", "example_config"): "the package's own example.toml",
    ("cli.py", "load_config"): "the config file the admin names with -c (or the default path)",
    ("config.py", "load"): "the config file the admin names with -c (or the default path)",
    ("cli.py", "main"): "/dev/null in place of a closed stdout",
    ("top.py", "run_batch"): "/dev/null in place of a closed stdout",
    ("sources/base.py", "read"): "kernel files under /proc and /sys, where no user can plant a file",
    ("commands/collect.py", "process_age_s"): "/proc/self/stat, the kernel's own file for this process",
    ("wire/__init__.py", "transactions"): "packet captures the user names on the command line",
}
OPEN_CALLS = {"open", "read_text", "read_bytes", "write_text", "write_bytes"}


def _opens_outside_files_py():
    """(module, enclosing function, call) of every file open in the agent outside files.py."""
    import ast
    import pathlib

    root = pathlib.Path(AGENT)
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "files.py":
            continue
        tree = ast.parse(path.read_text())
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name not in OPEN_CALLS:
                continue
            text = ast.unparse(node)
            if text.startswith("os.open(") and "O_NOFOLLOW" in text:
                continue  # the flags themselves refuse a link; fstat follows in the same function
            scope = parents.get(node)
            while scope is not None and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                scope = parents.get(scope)
            found.append((path.relative_to(root).as_posix(), scope.name if scope else "<module>", text))
    return found


def test_r2_l1_no_file_of_the_agent_is_opened_outside_files_py():
    """store, state, collect, ship read and write only through files.py (O_NOFOLLOW | O_NONBLOCK, fstat
    S_ISREG and owner, a bound on bytes read); any other open must be listed above with why it is safe."""
    found = _opens_outside_files_py()
    unsafe = [(module, scope, call) for module, scope, call in found if (module, scope) not in OPENS_ALLOWED]
    assert unsafe == [], "open through files.py, or list it in OPENS_ALLOWED with the reason"
    assert {(module, scope) for module, scope, _ in found} == set(OPENS_ALLOWED), "a listed open is gone: unlist it"


def test_r2_l1_every_read_of_the_agent_files_is_bounded():
    """A file opened through files.py for reading is read through read_in_directory (a bound,
    checked by size first) or open_for_reading (segments and the quarantine, line by line),
    never by an fd of open_in_directory opened for reading and read whole: the Oracle logon
    hold was (a 2 GiB file there was a MemoryError every run)."""
    import ast
    import pathlib

    unbounded = []
    for path in sorted(pathlib.Path(AGENT).rglob("*.py")):
        if path.name == "files.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == (
                "open_in_directory"
            ):
                flags = ast.unparse(node.args[1]) if len(node.args) > 1 else ""
                if "O_WRONLY" not in flags and "O_RDWR" not in flags:
                    unbounded.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert unbounded == [], "read through files.read_in_directory (bounded) or files.open_for_reading"


def test_r2_l1_the_docs_list_every_file_the_agent_keeps():
    from dnfsmon import state, store

    with open(os.path.join(os.path.dirname(__file__), "..", "docs", "reliability.md"), encoding="utf-8") as f:
        section = f.read().split("### Every file in the agent's directories")[1].split("\n## ")[0]
    names = {
        value
        for module in (store, state)
        for key, value in vars(module).items()
        if isinstance(value, str) and (key.endswith("_FILE") or key.endswith("_LOCK") or key == "LOCK_NAME")
    }
    names |= {"seg-<sequence>.lp", ".state.json", ".state.journal", "quarantine.jsonl.1", ".bad-<time>"}
    missing = sorted(name for name in names if f"`{name}" not in section and name not in section)
    assert missing == []


BACKOFF_READER = """
import resource, sys
from dnfsmon.oracle_db import LogonBackoff, load_backoff
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # 1 GiB: a read of the whole file cannot fit
print(load_backoff(sys.argv[1], "t") == LogonBackoff())
"""


def test_r2_l1_the_logon_back_off_file_is_read_with_a_bound_and_never_crashes_a_run(tmp_path):
    """`collect` and `check` read the Oracle logon back-off from the state directory through
    files.py but read it whole: a file far bigger than the agent writes was read into memory
    (MemoryError: exit 1 every run), and nesting too deep to parse was a RecursionError
    (exit 1). Now: a bound (BACKOFF_MAX_BYTES) checked by size before reading, and either is
    read as no refusal (the next save replaces the file)."""
    from dnfsmon.oracle_db import LogonBackoff, backoff_file_id, load_backoff

    path = StateFile(str(tmp_path), backoff_file_id("t")).path
    with open(path, "w") as f:
        f.write("[" * 100_000 + "]" * 100_000)
    assert load_backoff(str(tmp_path), "t") == LogonBackoff()
    os.truncate(path, 2 << 30)  # 2 GiB, sparse: no disk used
    result = subprocess.run([sys.executable, "-c", BACKOFF_READER, str(tmp_path)], capture_output=True, text=True)
    assert (result.returncode, result.stdout) == (0, "True\n"), result.stderr[-2000:]


# --- user review M12: the log of a failure ------------------------------------------------------


def test_user_m12_a_run_whose_sources_and_influxdb_fail_logs_each_problem_once(tmp_path, fake):
    """A source that fails every sample (a database down: the same message but for a connection id)
    is one ERROR line per run, and the run's last line says in how many samples it failed; the
    InfluxDB retries of a failing ship are no lines of their own, the ship's one error names them."""
    (tmp_path / "proc").mkdir()  # no file a host source reads: every one fails every sample
    server = fake("respond", responses=[(503, {}, b"")])
    config = write_config(
        tmp_path,
        agent={"state_dir": "state", "log_level": "info"},
        host={"proc_root": str(tmp_path / "proc"), "sources": ["nic", "tcp"]},
        influxdb={"enabled": True, "url": server.url, "max_retries": 3, "retry_backoff_s": 0.05},
    )
    result = run("--config", config, "collect", "--count", "4", "--interval", "0.05")
    assert result.returncode == 4, result.stderr
    lines = result.stderr.splitlines()
    assert [line.split(": ", 1)[1] for line in lines if "source " in line and "ERROR" in line] == [
        "source nic failed: proc/net/dev: file missing or unreadable",
        "source tcp failed: proc/net/snmp: file missing or unreadable",
    ]
    assert "4 samples:" in lines[-2] and "nic in 4 of 4, tcp in 4 of 4 samples" in lines[-2], lines
    assert len(server.requests) == 4  # the first try and 3 retries, as before
    assert "after 3 retries" in lines[-1]
    assert len(lines) == 4, lines  # was 12: one ERROR per source per sample, one WARNING per retry


# --- reliability L8: a ship and a size-bound drop that overlap ---------------------------------


@pytest.mark.parametrize("influxdb", ["takes every batch", "fails the first", "times out on the first"])
def test_r2_l8_a_ship_and_a_drop_that_overlap_count_every_point_once(tmp_path, monkeypatch, influxdb):
    """While a ship sends its first batch, a collect appends and the size bound deletes the oldest
    segments: the batch's own, and others the ship has listed (or is reading) but not yet sent.
    Before, the batch's points were counted as dropped although InfluxDB took them (the review:
    24 % over). Now each point is in exactly one of InfluxDB and the drop counter: the bound keeps
    a batch a ship has sent until the cursor passes it (whether InfluxDB took it or not: a timed-out
    request may still be applied), and the ship sends nothing the bound has counted."""
    from dnfsmon import influx
    from dnfsmon.store import SHIP_LOCK

    def store():
        return Store(str(tmp_path), 4096, segment_bytes=1024)

    store().append(points(200))
    received: list[int] = []
    first = {"batch": True}

    def write(self, lines, payload=None):
        batch = [from_line(line.decode()).fields["i"] for line in lines]
        if first["batch"]:
            first["batch"] = False
            for start in range(200, 400, 20):  # a collect's appends while this batch is on its way
                store().append(points(20, start=start))
            if influxdb == "fails the first":
                raise ShipError("InfluxDB write failed (HTTP 503)")
            if influxdb == "times out on the first":
                received.extend(batch)  # InfluxDB applied it, but its answer never came
                raise ShipError("InfluxDB did not answer within timeout_s")
        received.extend(batch)
        return None

    monkeypatch.setattr(influx.Writer, "write", write)
    with RunLock(str(tmp_path), SHIP_LOCK):
        try:
            ship(store(), settings("http://127.0.0.1:9", batch_size=50))
        except ShipError:
            assert influxdb != "takes every batch"
        ship(store(), settings("http://127.0.0.1:9", batch_size=50))  # the rest, InfluxDB well
    assert list(store().unshipped()) == []
    dropped = store().counts().dropped_points
    assert dropped > 0  # the bound did delete unshipped points
    # Exactly once: every point generated is in InfluxDB or counted as dropped, never both.
    assert len(set(received)) + dropped == 400, (len(set(received)), dropped)
    assert set(received) <= set(range(400))


KILLED_IN_THE_BOUND = """
import os, signal, sys
from dnfsmon import store
from dnfsmon.points import Point
unlink = os.unlink
def unlink_then_die(path, *args, **kwargs):  # SIGKILL just after the size bound's first deletion
    unlink(path, *args, **kwargs)
    if os.path.basename(path).startswith("seg-"):
        os.kill(os.getpid(), signal.SIGKILL)
os.unlink = unlink_then_die
points = [Point("m", (("host", "h"),), {"i": i, "f": i / 3}, 1_700_000_000_000_000_000 + i) for i in range(60, 200)]
store.Store(sys.argv[1], 4096, segment_bytes=1024).append(points)
"""


def test_r2_l8_a_run_killed_while_the_size_bound_deletes_loses_no_count(tmp_path, caplog):
    """SIGKILL just after the size bound deleted its first segment. Before, the bound deleted
    first and counted after: the deleted points were in no place and no counter. Now it counts
    first, with the deletion recorded beside the counts, and the next change finishes it
    without counting again; its log line is written by the run that finishes it."""
    import logging

    caplog.set_level(logging.INFO)
    Store(str(tmp_path), 4096, segment_bytes=1024).append(points(60))
    child = subprocess.run([sys.executable, "-c", KILLED_IN_THE_BOUND, str(tmp_path)], timeout=HANG_GUARD_S)
    assert child.returncode == -signal.SIGKILL
    store = Store(str(tmp_path), 4096, segment_bytes=1024)
    store.append(points(1, start=200))  # the next run
    stored = {point.fields["i"] for point in store.points()}
    dropped = store.counts().dropped_points
    assert dropped > 0 and stored | set(range(201)) == set(range(201))
    assert len(stored) + dropped == 201, (len(stored), dropped)
    assert "counted by a run killed while it deleted them" in caplog.text
    pattern = r"dropped the (\d+) oldest unshipped points \(segments to (\d+)"
    assert sum({segment: int(n) for n, segment in re.findall(pattern, caplog.text)}.values()) == dropped
