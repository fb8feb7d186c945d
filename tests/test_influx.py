"""Line protocol and shipping, against a real InfluxDB 1.8.10 server."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import time

import pytest

from configs import write_config
from dnfsmon import capture, catalogue
from dnfsmon.collect import compute
from dnfsmon.config import parse
from dnfsmon.influx import ShipError, ship
from dnfsmon.points import Point, from_line, to_line
from dnfsmon.store import Store, StoreWriteError, encode_json_record
from runner import DNFSMON

CASES = os.path.join(os.path.dirname(__file__), "cases", "diff")


def settings(url, database, **overrides):
    table = {
        "enabled": True,
        "url": url,
        "bucket": database,
        "max_retries": 0,
        "retry_backoff_s": 0.01,
        "token_env": "DNFSMON_TEST_NO_TOKEN",
    }
    table.update(overrides)
    return parse({"influxdb": table}, None).influxdb


@pytest.mark.parametrize(
    "point, line",
    [
        (
            Point(
                "dnfsmon_nic",
                (("host", "db1"), ("interface", "eth0")),
                {"rx_kib_per_s": 1.5, "mtu_bytes": 9000, "full_duplex": True},
                1732240010000000000,
            ),
            "dnfsmon_nic,host=db1,interface=eth0 full_duplex=true,mtu_bytes=9000i,rx_kib_per_s=1.5 1732240010000000000",
        ),
        (
            Point("m", (("mountpoint", "/u02/ora data,1=x"),), {"v": 1.0}, 1),
            r"m,mountpoint=/u02/ora\ data\,1\=x v=1.0 1",
        ),
        (
            Point("m", (("export", r"C:\share"), ("empty", "")), {"s": 'say "hi" \\ bye'}, 2),
            r'm,export=C:\share s="say \"hi\" \\ bye" 2',
        ),
        (Point("m x,y", (("k=1", "v"),), {"f k": -0.25}, 3), r"m\ x\,y,k\=1=v f\ k=-0.25 3"),
        (
            Point("m", (("server", "[fd00::1]"),), {"big": 2**62, "tiny": 1e-07}, 4),
            "m,server=[fd00::1] big=4611686018427387904i,tiny=1e-07 4",
        ),
    ],
)
def test_line_protocol_golden(point, line):
    assert to_line(point) == line


@pytest.mark.parametrize(
    "point, message",
    [
        (Point("m", (("p", "ends\\"),), {"v": 1}, 1), "backslash at the end"),
        (Point("m", (("p", "a\\,b"),), {"v": 1}, 1), "backslash at the end or before"),
        (Point("m", (("p", "line\nbreak"),), {"v": 1}, 1), "newline"),
        (Point("m", (), {"v": float("nan")}, 1), "cannot carry nan"),
        (Point("m", (), {}, 1), "no fields"),
    ],
)
def test_unwritable_points_are_refused_with_the_reason(point, message):
    with pytest.raises(ValueError, match=message):
        to_line(point)
    with pytest.raises(ValueError, match=message):  # a refused tag is never remembered as written
        to_line(point)


def test_a_tag_is_written_the_same_each_time_it_is_met():
    first = Point("m", (("export", "a b"), ("empty", ""), ("op", "READ")), {"v": 1}, 1)
    second = Point("m", (("export", "a b"), ("empty", ""), ("op", "WRITE")), {"v": 2}, 2)
    assert [to_line(first), to_line(first), to_line(second)] == [
        r"m,export=a\ b,op=READ v=1i 1",
        r"m,export=a\ b,op=READ v=1i 1",
        r"m,export=a\ b,op=WRITE v=2i 2",
    ]


def golden_points():
    points = []
    for case in sorted(os.listdir(CASES)):
        _, old_raws, old_failures = capture.read(os.path.join(CASES, case, "old"))
        host, raws, failures = capture.read(os.path.join(CASES, case, "new"))
        points += compute(raws, failures, host, compute(old_raws, old_failures, host, {}).samples).points
    return points


def test_write_and_query_back_values_types_and_tags_exactly_as_catalogued(influx, tmp_path):
    server, db = influx
    store = Store(str(tmp_path / "store"), 10**8)
    points = golden_points()
    store.append(points)
    report = ship(store, settings(server.url, db))
    assert (report.sent, report.quarantined) == (len(points), 0)
    entries = catalogue.load()
    for measurement in sorted({p.measurement for p in points}):
        types = {row["fieldKey"]: row["fieldType"] for row in server.rows(f'SHOW FIELD KEYS FROM "{measurement}"', db)}
        expected = {
            name: entry.type
            for (m, kind, name), entry in entries.items()
            if m == measurement and kind == "field" and name in types
        }
        assert types == expected, measurement
        tag_keys = {row["tagKey"] for row in server.rows(f'SHOW TAG KEYS FROM "{measurement}"', db)}
        catalogued = {name for (m, kind, name) in entries if m == measurement and kind == "tag"}
        # Every tag the golden points carry is catalogued; `pdb` is set only on a CDB's rows,
        # `role` only on a standby's (a primary's series keep their key).
        assert catalogued - {"pdb", "role"} <= tag_keys <= catalogued, measurement
    for point in points:
        where = " AND ".join(f""""{k}" = '{v}'""" for k, v in point.tags if v)
        (row,) = server.rows(f'SELECT * FROM "{point.measurement}" WHERE {where} AND time = {point.time_ns}', db)
        for name, value in point.fields.items():
            assert row[name] == value, (point.measurement, name)
        for key, value in point.tags:
            assert row[key] == (value or None)  # empty tags are left out of line protocol


def test_awkward_tag_values_round_trip(influx, tmp_path):
    server, db = influx
    awkward = ["/mnt/with space", "/u02/a,b=c", r"\\filer\share", "[fd00::1]", "x" * 200, "ünïcødé/ørå", "tab\there"]
    store = Store(str(tmp_path / "store"), 10**8)
    store.append([Point("m", (("mountpoint", value),), {"n": i}, 1000 + i) for i, value in enumerate(awkward)])
    assert ship(store, settings(server.url, db)).sent == len(awkward)
    assert sorted(row["mountpoint"] for row in server.rows('SELECT * FROM "m"', db)) == sorted(awkward)


def stored_series(store):
    return {(p.measurement, p.tags, p.time_ns): dict(p.fields) for p in store.points()}


def influx_series(server, db, measurements):
    found = {}
    for measurement in measurements:
        for row in server.rows(f'SELECT * FROM "{measurement}"', db):
            found[(measurement, row["time"])] = found.get((measurement, row["time"]), 0) + 1
    return found


@pytest.mark.influx
def test_server_down_for_several_collect_runs_then_up(tmp_path):
    from influxdb_server import InfluxServer

    server = InfluxServer(str(tmp_path / "influx"))  # not started: down
    config = write_config(
        tmp_path,
        influxdb={"enabled": True, "url": server.url, "bucket": "dnfsmon", "max_retries": 1, "retry_backoff_s": 0.05},
        agent={"host": "outage"},
    )
    for _ in range(3):
        result = subprocess.run(
            [*DNFSMON, "--config", str(config), "collect"], capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 4, result.stderr
        assert "the points stay in" in result.stderr
    store = Store(str(tmp_path / "store"), 10**9)
    expected = list(store.points())
    assert len(expected) > 10
    server.start()
    try:
        server.create_database("dnfsmon")
        result = subprocess.run(
            [*DNFSMON, "--config", str(config), "ship"], capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stderr
        arrived = influx_series(server, "dnfsmon", {p.measurement for p in expected})
        # Every point exactly once: InfluxDB holds one row per (series, time); compare counts per measurement.
        for measurement in {p.measurement for p in expected}:
            mine = sum(1 for p in expected if p.measurement == measurement)
            theirs = sum(n for (m, _), n in arrived.items() if m == measurement)
            assert theirs == mine, measurement
        assert list(store.unshipped()) == []
        # Shipping again sends nothing more.
        again = subprocess.run([*DNFSMON, "--config", str(config), "ship"], capture_output=True, text=True, timeout=120)
        assert again.returncode == 0 and "shipped 0 points" in again.stderr
    finally:
        server.stop()


@pytest.mark.influx
def test_server_killed_in_the_middle_of_shipping_loses_and_doubles_nothing(tmp_path):
    from influxdb_server import InfluxServer

    server = InfluxServer(str(tmp_path / "influx")).start()
    server.create_database("dnfsmon")
    store = Store(str(tmp_path / "store"), 10**9)
    rng = random.Random(7)
    points = [
        Point(
            "dnfsmon_nic",
            (("host", f"h{i % 7}"), ("interface", "eth0")),
            {"rx_kib_per_s": rng.random() * 1000},
            1_700_000_000_000_000_000 + i * 1000,
        )
        for i in range(60_000)
    ]
    for start in range(0, len(points), 5000):
        store.append(points[start : start + 5000])
    config = write_config(
        tmp_path,
        influxdb={
            "enabled": True,
            "url": server.url,
            "bucket": "dnfsmon",
            "batch_size": 500,
            "max_retries": 0,
            "retry_backoff_s": 0.01,
            "gzip": False,
        },
    )
    try:
        shipping = subprocess.Popen(
            [*DNFSMON, "--config", str(config), "ship"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        # Kill the server once shipping is under way (cursor moved at least once).
        deadline = time.monotonic() + 60
        while store.cursor().offset == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        server.kill()
        _, stderr = shipping.communicate(timeout=120)
        assert shipping.returncode == 4, stderr
        remaining = sum(1 for _ in store.unshipped())
        assert 0 < remaining < len(points), "the kill did not land mid-shipping"
        server.start()
        result = subprocess.run(
            [*DNFSMON, "--config", str(config), "ship"], capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, result.stderr
        rows = server.rows('SELECT * FROM "dnfsmon_nic"', "dnfsmon")
        assert len(rows) == len(points)  # nothing lost, nothing doubled
        by_key = {(row["host"], row["time"]): row["rx_kib_per_s"] for row in rows}
        assert by_key == {(dict(p.tags)["host"], p.time_ns): p.fields["rx_kib_per_s"] for p in points}
    finally:
        server.stop()


def test_malformed_points_are_quarantined_and_the_rest_arrive(influx, tmp_path):
    server, db = influx
    store = Store(str(tmp_path / "store"), 10**8)
    good = [Point("m", (("host", "a"),), {"x": i}, 100 + i) for i in range(10)]
    conflict = Point("m", (("host", "a"),), {"x": "a string where InfluxDB holds integers"}, 200)
    unwritable = Point("m", (("host", "ends\\"),), {"x": 1}, 300)
    store.append([*good[:5], conflict, *good[5:8], unwritable, *good[8:]])
    ship(store, settings(server.url, db, batch_size=4))  # the first batch fixes x as integer
    report_rows = server.rows('SELECT * FROM "m"', db)
    assert sorted(row["x"] for row in report_rows) == list(range(10))
    quarantined = store.quarantined()
    # The unwritable point is quarantined when stored (it could never be sent), the conflict when InfluxDB rejects it.
    assert [p for p, _ in quarantined] == [unwritable, conflict]
    assert "cannot be written as line protocol" in quarantined[0][1]
    assert "InfluxDB rejected it: HTTP 400" in quarantined[1][1] and "field type conflict" in quarantined[1][1]
    assert list(store.unshipped()) == []
    assert store.counts().quarantined_points == 2  # published as dnfsmon_agent.store_quarantined_points


def test_a_store_of_the_old_format_ships_after_the_upgrade(influx, tmp_path):
    """A store of JSON records (segments .jsonl), as written before line protocol records, ships whole after an in-place upgrade."""
    server, db = influx
    directory = tmp_path / "store"
    directory.mkdir(mode=0o750)
    old = [Point("m", (("host", "old"),), {"x": i}, 100 + i) for i in range(6)]
    unwritable = Point("m", (("host", "ends\\"),), {"x": 1}, 300)
    conflict = Point("m", (("host", "old"),), {"x": "a string where InfluxDB holds integers"}, 400)
    for sequence, batch in enumerate([[*old[:3], unwritable], [conflict, *old[3:]]], start=1):
        with open(directory / f"seg-{sequence:016d}.jsonl", "wb") as f:
            f.write(b"".join(encode_json_record(p) for p in batch))
    store = Store(str(directory), 10**8)
    multi_line = Point("m", (("host", "new"),), {"x": 7, "error": 'ORA-03113: end-of-file\nsecond "line"'}, 500)
    store.append([Point("m", (("host", "new"),), {"x": 6}, 106), multi_line])
    report = ship(store, settings(server.url, db, batch_size=3))
    assert (report.sent, report.quarantined) == (8, 2)
    rows = server.rows('SELECT * FROM "m"', db)
    assert sorted((row["host"], row["x"]) for row in rows) == [("new", 6), ("new", 7)] + [("old", i) for i in range(6)]
    assert [row["error"] for row in rows if row["error"]] == [multi_line.fields["error"]]
    assert [(p, reason.split(":")[0]) for p, reason in store.quarantined()] == [
        (unwritable, "cannot be written as line protocol"),
        (conflict, "InfluxDB rejected it"),
    ]
    assert list(store.unshipped()) == []
    assert [name for name in os.listdir(directory) if name.startswith("seg-")] == ["seg-0000000000000003.lp"]


def test_m7_drops_during_an_outage_are_reported_exactly(influx, tmp_path):
    """Every dropped point is counted, even when the points carrying the count are dropped too.

    The counter is a total kept in the store, so the last agent point that
    reaches InfluxDB carries all of it (it used to report 84 of 397 drops).
    """
    server, db = influx
    config = write_config(
        tmp_path,
        influxdb={"enabled": False},
        agent={"host": "small"},
        store={"max_bytes": 20000},
        host={"sources": ["nic", "tcp"]},
    )
    appended = 0
    for run in range(6):  # an outage: runs keep storing, the bound keeps dropping
        result = subprocess.run(
            [*DNFSMON, "--config", str(config), "collect"], capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, result.stderr
        appended += int(re.search(r"1 samples: (\d+) points stored", result.stderr).group(1))
        store = Store(str(tmp_path / "store"), 20000)
        store.append([Point("filler", (("host", "small"),), {"i": i}, 1000 + run * 1000 + i) for i in range(250)])
        appended += 250
    result = subprocess.run([*DNFSMON, "--config", str(config), "collect"], capture_output=True, text=True, timeout=60)
    appended += int(re.search(r"1 samples: (\d+) points stored", result.stderr).group(1))
    dropped = Store(str(tmp_path / "store"), 20000).counts().dropped_points
    report = ship(Store(str(tmp_path / "store"), 20000), settings(server.url, db, batch_size=100000))
    assert report.sent == appended - dropped  # nothing lost uncounted
    reported = server.rows('SELECT last("store_dropped_points") FROM "dnfsmon_agent"', db)
    assert reported[0]["last"] == dropped > 250


def test_a_collect_run_that_does_not_ship_never_imports_the_shipping_module(tmp_path):
    config = write_config(tmp_path)
    probe = (
        "import sys; from dnfsmon.cli import main; rc = main(['--config', sys.argv[1], 'collect']); "
        "print(rc, 'dnfsmon.influx' in sys.modules or 'http.client' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", probe, str(config)], capture_output=True, text=True, timeout=60)
    assert result.stdout.split() == ["0", "False"], result.stderr


def test_world_readable_token_file_stops_shipping_with_a_usage_error(tmp_path):
    token = tmp_path / "token"
    token.write_text("secret-token-value\n")
    os.chmod(token, 0o644)
    config = write_config(tmp_path, influxdb={"enabled": True, "token_file": str(token)})
    result = subprocess.run([*DNFSMON, "--config", str(config), "ship"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "mode 0644" in result.stderr and "secret-token-value" not in result.stderr


def test_unreachable_server_raises_ship_error_and_keeps_points(tmp_path):
    from influxdb_server import free_port

    store = Store(str(tmp_path / "store"), 10**8)
    store.append([Point("m", (), {"v": 1}, 1)])
    with pytest.raises(ShipError, match="after 1 retries"):
        ship(store, settings(f"http://127.0.0.1:{free_port()}", "db", max_retries=1))
    assert len(list(store.unshipped())) == 1


@pytest.mark.parametrize("compress", [True, False])
def test_requests_are_gzipped_at_a_fast_level_and_arrive(influx, tmp_path, monkeypatch, compress):
    """gzip level 9 (influxdb-client's) was most of a big ship's CPU; the server takes level 1 the same.

    1100 points in batches of 1000: each batch's body is compressed once."""
    import zlib

    server, db = influx
    levels = []
    real_compressobj = zlib.compressobj

    def recording_compressobj(level, *args):
        levels.append((level, *args))
        return real_compressobj(level, *args)

    monkeypatch.setattr(zlib, "compressobj", recording_compressobj)
    store = Store(str(tmp_path / "store"), 10**8)
    points = [Point("m", (("host", "a"),), {"x": i, "s": f"text {i} " * 20}, 100 + i) for i in range(1100)]
    store.append(points)
    report = ship(store, settings(server.url, db, batch_size=1000, gzip=compress))
    assert report.sent == 1100
    rows = server.rows('SELECT * FROM "m"', db)
    assert sorted((row["x"], row["s"]) for row in rows) == [(i, f"text {i} " * 20) for i in range(1100)]
    assert levels == ([(1, zlib.DEFLATED, 31)] * 2 if compress else [])


def test_ship_with_a_token_to_a_server_with_authentication(influx_with_auth, tmp_path, monkeypatch):
    """1.8 takes the v2 token "user:password" as "Authorization: Token ..."; a wrong one stops the ship unechoed."""
    import urllib.parse
    import urllib.request

    create = urllib.parse.urlencode({"q": 'CREATE DATABASE "shipauth"'}).encode()
    urllib.request.urlopen(f"{influx_with_auth.url}/query?u=admin&p=right", data=create, timeout=30)
    store = Store(str(tmp_path / "store"), 10**8)
    store.append([Point("m", (("host", "a"),), {"x": i}, 100 + i) for i in range(3)])
    monkeypatch.setenv("DNFSMON_TEST_TOKEN", "admin:wrong")
    with pytest.raises(ShipError, match="refused the credentials") as refused:
        ship(store, settings(influx_with_auth.url, "shipauth", token_env="DNFSMON_TEST_TOKEN"))
    assert "wrong" not in str(refused.value) and len(list(store.unshipped())) == 3
    monkeypatch.setenv("DNFSMON_TEST_TOKEN", "admin:right")
    assert ship(store, settings(influx_with_auth.url, "shipauth", token_env="DNFSMON_TEST_TOKEN")).sent == 3
    query = urllib.parse.urlencode({"q": 'SELECT * FROM "m"', "db": "shipauth", "u": "admin", "p": "right"})
    with urllib.request.urlopen(f"{influx_with_auth.url}/query?{query}", timeout=30) as response:
        assert len(json.loads(response.read())["results"][0]["series"][0]["values"]) == 3


SHIP_CHILD = """
import sys
from dnfsmon.config import parse
from dnfsmon.influx import ShipError, ship
from dnfsmon.state import RunLock
from dnfsmon.store import SHIP_LOCK, Store
table = {"enabled": True, "url": sys.argv[2], "bucket": sys.argv[3], "max_retries": 0, "batch_size": 7,
         "token_env": "DNFSMON_TEST_NO_TOKEN"}
print("ready", flush=True)  # imports done: a kill from here on lands in the ship's own work
try:
    with RunLock(sys.argv[1], SHIP_LOCK):  # as dnfsmon ship holds it
        ship(Store(sys.argv[1], int(sys.argv[4])), parse({"influxdb": table}, None).influxdb)
except ShipError:
    pass
"""

# A collect's appends: batches of numbered points, each batch's last number printed once append returned.
APPEND_CHILD = """
import sys
from dnfsmon.points import Point
from dnfsmon.store import Store
store = Store(sys.argv[1], int(sys.argv[2]))
start, end = int(sys.argv[3]), int(sys.argv[4])
print("ready", flush=True)
for first in range(start, end, 10):
    ids = range(first, min(first + 10, end))
    store.append([Point("acct", (("host", "h"),), {"i": i}, 1_700_000_000_000_000_000 + i) for i in ids])
    print(ids[-1], flush=True)
"""


@pytest.mark.slow
@pytest.mark.influx
def test_every_point_generated_ends_exactly_once_under_injected_faults(influx, tmp_path, caplog):
    """The accounting identity: every point generated ends in exactly one of InfluxDB, the store
    (unshipped), the quarantine, or a counter (dropped, unwritten), whatever happens between.
    30 faults of each kind, in one run: a ship killed by SIGKILL at a random moment, a ship that
    runs while appends drop points (the size bound deleting what it reads and sends; half of
    them killed at a random moment too), a collect killed at a random moment of its appends (in
    the size bound's deletion among them), a disk that refuses an append (the kernel's own short
    write, RLIMIT_FSIZE), a stalled InfluxDB, an erroring one (HTTP 500), and a FIFO planted at
    cursor.json or latest.lp. Exact, no tolerance. The counters a dashboard reads
    (dnfsmon_agent.store_*) agree with the log's lines."""
    import logging
    import resource
    import signal as signals

    from fake_influx import FakeInflux

    server, db = influx
    directory = str(tmp_path / "store")
    max_bytes = 8 * 1024  # small: an outage drops points, which must be counted too
    store = Store(directory, max_bytes)
    rng = random.Random(29)
    generated: set[int] = set()
    unwritten_ids: set[int] = set()
    quarantined_ids: set[int] = set()
    next_id = 0
    stall, failing = FakeInflux("stall"), FakeInflux("respond", responses=[(500, {}, b"down")])
    caplog.set_level(logging.INFO)

    def append_some():
        nonlocal next_id
        batch = []
        for _ in range(rng.randint(5, 40)):
            host = "bad\\" if rng.random() < 0.03 else "h"  # a tag no line protocol can end with: quarantined
            batch.append(Point("acct", (("host", host),), {"i": next_id}, 1_700_000_000_000_000_000 + next_id))
            generated.add(next_id)
            if host != "h":
                quarantined_ids.add(next_id)
            next_id += 1
        return batch

    def append(batch, limit=None):
        if limit is not None:
            signals.signal(signals.SIGXFSZ, signals.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
        try:
            store.append(batch)
        except StoreWriteError as error:
            logging.getLogger("dnfsmon").error("%s", error)  # what the command line logs
            unwritten_ids.update(p.fields["i"] for p in batch)
            quarantined_ids.difference_update(p.fields["i"] for p in batch)
        finally:
            if limit is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    faults = ["full-disk", "stalled", "erroring", "planted", "sigkill", "overlap", "killed-append"] * 30
    children_log = []  # what the processes the test starts log (stderr)
    rng.shuffle(faults)
    kills = 0
    ships_took = [0.3]  # seconds a whole ship took, from its imports done to its end
    try:
        for fault in faults:
            append(append_some())
            if fault in ("sigkill", "overlap"):
                to_end = fault == "overlap" and rng.random() < 0.5  # this ship runs to its end
                # A kill lands at a random moment of the ship's work, after its imports: within
                # the time a whole ship took here (ships_took), so that it lands on a fast
                # machine too; a ship that ended first is started again, up to 5 times.
                for _ in range(5):
                    child = subprocess.Popen(
                        [sys.executable, "-c", SHIP_CHILD, directory, server.url, db, str(max_bytes)],
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        text=True,
                    )
                    child.stdout.readline()  # "ready"
                    started = time.monotonic()
                    kill_at = started + (120 if to_end else rng.uniform(0.0, min(ships_took)))
                    # A collect appending while the ship runs (overlap): the size bound deletes the
                    # oldest segments, those the ship is reading and sending among them.
                    while child.poll() is None and time.monotonic() < kill_at:
                        if fault == "overlap":
                            append(append_some())
                        time.sleep(rng.uniform(0.0, 0.01))
                    landed = child.poll() is None
                    if not landed:
                        ships_took.append(time.monotonic() - started)
                    child.kill()
                    children_log.append(child.communicate()[1])
                    if to_end or landed:
                        kills += landed  # killed while running, at a random moment
                        break
            elif fault == "killed-append":
                # A collect killed at a random moment of its appends: the points of every append
                # that returned are the store's; of the one cut short, those found in the store.
                count = 400
                child = subprocess.Popen(
                    [sys.executable, "-c", APPEND_CHILD, directory, str(max_bytes), str(next_id), str(next_id + count)],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                # Killed after a random number of its 40 appends returned, a random moment into
                # the next one (or between two): counted in appends, not seconds, so the kill
                # lands inside the run on a machine of any speed.
                printed_lines = [child.stdout.readline()]  # "ready"
                for _ in range(rng.randint(0, count // 10 - 2)):
                    printed_lines.append(child.stdout.readline())
                time.sleep(rng.uniform(0.0, 0.01))
                if child.poll() is None:
                    kills += 1
                child.kill()
                rest, logged = child.communicate()
                printed = "".join(printed_lines[1:]) + rest
                children_log.append(logged)
                returned = [int(line) for line in printed.split()]
                confirmed_end = returned[-1] + 1 if returned else next_id
                generated.update(range(next_id, confirmed_end))
                stored = {p.fields["i"] for p in store.points(["acct"])}
                generated.update(i for i in range(confirmed_end, next_id + count) if i in stored)
                next_id += count
            elif fault == "full-disk":
                segments = store.segments()
                largest = max(
                    [os.path.getsize(p) for _, p in segments]
                    + [os.path.getsize(os.path.join(directory, "counts.json"))]
                )
                append(append_some(), limit=largest + rng.randint(0, 200))
            elif fault in ("stalled", "erroring"):
                endpoint = stall if fault == "stalled" else failing
                with pytest.raises(ShipError):
                    ship(store, settings(endpoint.url, db, timeout_s=0.2, deadline_s=1))
            else:
                name = rng.choice(["cursor.json", "latest.lp"])
                path = os.path.join(directory, name)
                if os.path.lexists(path):
                    os.unlink(path)
                os.mkfifo(path, 0o600)
                append(append_some())
                ship(store, settings(server.url, db))
        ship(store, settings(server.url, db, deadline_s=60))
    finally:
        stall.stop()
        failing.stop()
    in_influx = {row["i"] for row in server.rows('SELECT "i" FROM "acct"', db)}
    unshipped = {from_line(line.decode()).fields["i"] for _, line in store.unshipped()}
    quarantined = {point.fields["i"] for point, _ in store.quarantined()}
    counts = store.counts()
    assert unshipped == set()
    # A point of a tag no line protocol can carry is quarantined, or, when the disk refused the
    # quarantine too, counted as unwritten ("could not quarantine", below).
    assert quarantined <= quarantined_ids and not quarantined & in_influx and not quarantined_ids & in_influx
    assert unwritten_ids.isdisjoint(in_influx | quarantined)
    missing = generated - in_influx - quarantined
    # The quarantine's files keep its newest points (twice its bound): those its rotation deleted
    # are in no place, and counted in quarantined_points, a total of every point set aside.
    rotated_away = counts.quarantined_points - len(quarantined)
    # Exactly once: what is in no place is in a counter, and no counter holds more.
    assert len(missing) == counts.dropped_points + counts.unwritten_points + rotated_away
    assert counts.unwritten_points >= len(unwritten_ids) and unwritten_ids <= missing
    could_not_quarantine = caplog.text.count("could not quarantine a point of acct")
    assert rotated_away >= 0 and len(missing & quarantined_ids) == rotated_away + could_not_quarantine
    # The counters agree with the log (this process's and its children's). A deletion of the size
    # bound is named by its last segment: a run killed just after its line has it logged again by
    # the run that finishes it, under the same name.
    log_text = caplog.text + "".join(children_log)
    logged_unwritten = sum(int(m.group(1)) for m in re.finditer(r"(\d+) points not written", log_text))
    logged_unwritten += log_text.count("could not quarantine a point of acct")
    pattern = r"dropped the (\d+) oldest unshipped points \(segments to (\d+)"
    logged_dropped = sum({segment: int(points) for points, segment in re.findall(pattern, log_text)}.values())
    assert logged_unwritten == counts.unwritten_points and logged_dropped == counts.dropped_points
    assert caplog.text.count("quarantined a point of acct") == counts.quarantined_points
    assert len(generated) > 500 and counts.dropped_points > 0 and kills >= 60
