"""`dnfsmon show` from the store's latest.shown.lp: every number it prints is the one the
full read of latest.lp gives, and the newest point of each series as appended; an index
that is stale, damaged, of other tables or absent is never read."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from configs import write_config
from dnfsmon import cli, summary
from dnfsmon import store as store_module
from dnfsmon.commands import show as show_command
from dnfsmon.points import Point, series_key, to_line
from dnfsmon.store import Store

# Every point in these stores is older than this, so that ages print the same in every run.
NOW_NS = 1_750_000_000_000_000_000  # before the test runs: the store replaces points from the future
START_NS = NOW_NS - 3 * 86400 * 10**9
OPS = ("READ", "WRITE", "GETATTR", "ACCESS", "LOOKUP", "READDIR", "WRITE_SAME")
NFS_OP_FIELDS = ("ops_per_s", "kib_per_s", "avg_rtt_ms", "avg_exe_ms", "avg_queue_ms", "retrans_per_s", "kib_per_op")


def series_of(rng: random.Random) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
    """The series of a store: tabled measurements (a table of some series: dnfsmon_nfs_op), others
    counted only, names that need escaping, and text that looks like a shown row's tag."""
    mounts = [f"/u02/db{n}" for n in range(rng.randint(1, 12))] + ["/u02/a b,c=d", "/u02/,op=READ x"]
    # Some stores with no READ or WRITE series: the table is left out, its series counted.
    ops = OPS if rng.random() < 0.8 else OPS[2:]
    found = [("dnfsmon_nfs_op", (("mountpoint", mount), ("op", op))) for mount in mounts for op in rng.sample(ops, 4)]
    found += [("dnfsmon_nfs_mount", (("mountpoint", mount),)) for mount in mounts]
    found += [("dnfsmon_nic", (("interface", name),)) for name in ("eth0", "bond0 x", "ib0")]
    found += [("dnfsmon_tcp", ()), ("dnfsmon_tcp", (("host", "h"),)), ("dnfsmon_rpc", ())]
    found += [("dnfsmon_oracle_status", (("database", "DB1"),)), ("dnfsmon_oracle_status", (("database", "DB,2"),))]
    found += [("dnfsmon_oracle_latency_histogram", (("bucket", str(b)),)) for b in range(rng.randint(0, 5))]
    found += [("dnfsmon_nfs", (("x", "1"),)), ("dnfsmon_nfs op", (("x", "1"),))]  # other measurements, prefixes
    return found


def point_of(rng: random.Random, measurement: str, tags: tuple, time_ns: int) -> Point:
    if measurement == "dnfsmon_nfs_op":
        fields: dict = {name: rng.choice([0.0, rng.random() * 10 ** rng.randint(0, 6)]) for name in NFS_OP_FIELDS}
        if rng.random() < 0.1:
            fields["note"] = "text ,op=READ in a field"  # found by the row pattern, not a READ row
    elif measurement == "dnfsmon_oracle_status":
        fields = {"up": rng.random() < 0.5, "instances": rng.randint(0, 4), "error": 'ORA-1\nline "two", x=1'}
    else:
        fields = {"value": rng.randint(-5, 10**12), "util_pct": rng.random() * 100}
    return Point(measurement, tags, fields, time_ns)


def appends_of(seed: int, rounds: int) -> list[list[Point]]:
    """Appends of a random store: each round a random part of the series, some of them older
    than what the store holds (a late round), some series only in the first rounds."""
    rng = random.Random(seed)
    series = series_of(rng)
    appends = []
    for number in range(rounds):
        time_ns = START_NS + number * 10 * 10**9 - (rng.random() < 0.2) * 25 * 10**9
        chosen = [s for s in series if rng.random() < 0.7]
        appends.append([point_of(rng, measurement, tags, time_ns) for measurement, tags in chosen])
    return appends


def newest_per_series(appends: list[list[Point]]) -> list[Point]:
    """The truth, from the points appended: per series, the newest (the last appended of equal times)."""
    newest: dict[str, Point] = {}
    for batch in appends:
        for point in batch:
            key = series_key(to_line(point))
            if key not in newest or point.time_ns >= newest[key].time_ns:
                newest[key] = point
    return list(newest.values())


def tables_of(latest: summary.Latest) -> str:
    return summary.render(latest, NOW_NS)


def show(config, capsys, monkeypatch, *args: str) -> str:
    """`dnfsmon show` run in this process (so that the store's reads can be counted), at NOW_NS."""
    monkeypatch.setattr(show_command.time, "time_ns", lambda: NOW_NS)
    assert cli.main(["--config", str(config), "show", *args]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("seed", range(6))
def test_show_from_the_index_prints_what_the_full_read_and_the_appended_points_give(tmp_path, seed):
    appends = appends_of(seed, rounds=1 + seed % 4)
    store = Store(str(tmp_path), max_bytes=10**8)
    for batch in appends:
        store.append(batch)
    assert store.latest_shown() is not None
    from_index = tables_of(summary.latest_of(store, tabled_only=True))
    assert from_index == tables_of(summary.latest_of(store))
    assert from_index == tables_of(summary.Latest.of_points(newest_per_series(appends)))
    data_rows = [p for p in newest_per_series(appends) if dict(p.tags).get("op") in ("READ", "WRITE")]
    assert ("Kernel NFS client, READ and WRITE" in from_index) == bool(data_rows)


def damage_flip_a_byte(directory: str) -> None:
    path = os.path.join(directory, store_module.LATEST_SHOWN_FILE)
    data = bytearray(open(path, "rb").read())
    data[len(data) // 2] ^= 0x20
    open(path, "wb").write(bytes(data))


def damage_tear(directory: str) -> None:
    """What a power loss can leave of a file written without fsync: its first blocks."""
    path = os.path.join(directory, store_module.LATEST_SHOWN_FILE)
    os.truncate(path, os.path.getsize(path) // 2)


def older_version_rewrote_latest(directory: str) -> None:
    """An append by an earlier dnfsmon (a downgrade): latest.lp rewritten, latest.shown.lp left as it was."""
    path = os.path.join(directory, store_module.LATEST_FILE)
    data = open(path, "rb").read()
    lines = data.split(b"\n")[:-1]
    os.unlink(path)
    open(path, "wb").write(b"\n".join(lines[1:]) + b"\n")  # one series fewer: what show must then say


def latest_changed_in_place(directory: str) -> None:
    path = os.path.join(directory, store_module.LATEST_FILE)
    with open(path, "ab") as f:
        f.write(f" dnfsmon_nic,interface=added rx_kib_per_s=1.5 {START_NS}\n".encode())


def written_before_the_index(directory: str) -> None:
    """A store the previous version wrote: latest.lp and no latest.shown.lp."""
    os.unlink(os.path.join(directory, store_module.LATEST_SHOWN_FILE))


DAMAGES = [damage_flip_a_byte, damage_tear, older_version_rewrote_latest, latest_changed_in_place]


def full_read(config, directory, capsys, monkeypatch) -> str:
    """show's output from latest.lp alone: with no latest.shown.lp in the store."""
    path = os.path.join(directory, store_module.LATEST_SHOWN_FILE)
    if os.path.exists(path):
        os.unlink(path)
    return show(config, capsys, monkeypatch)


@pytest.mark.parametrize("damage", [*DAMAGES, written_before_the_index], ids=lambda damage: damage.__name__)
def test_an_index_that_is_damaged_stale_or_absent_is_not_read_and_show_prints_the_full_read(
    tmp_path, capsys, monkeypatch, damage
):
    config = write_config(tmp_path)
    directory = str(tmp_path / "store")
    store = Store(directory, max_bytes=10**8)
    for batch in appends_of(7, rounds=3):
        store.append(batch)
    before = show(config, capsys, monkeypatch)
    damage(directory)
    assert Store(directory, max_bytes=10**8, read_only=True).latest_shown() is None
    after = show(config, capsys, monkeypatch)
    assert after == full_read(config, directory, capsys, monkeypatch)
    if damage is latest_changed_in_place:
        assert "added" in after and "added" not in before
    elif damage is older_version_rewrote_latest:
        assert after != before  # one series fewer in latest.lp: show says what it holds now
    else:
        assert after == before  # latest.lp unchanged: the same output, read from it


def test_a_run_killed_between_latest_lp_and_its_index_leaves_show_the_full_read(tmp_path, capsys, monkeypatch):
    """The index of the latest.lp an append replaces is removed first; and were it left (a power
    loss that kept the new latest.lp and not the removal), it names the file replaced."""
    config = write_config(tmp_path)
    directory = str(tmp_path / "store")
    appends = appends_of(8, rounds=3)
    store = Store(directory, max_bytes=10**8)
    for batch in appends[:2]:
        store.append(batch)
    index = os.path.join(directory, store_module.LATEST_SHOWN_FILE)
    before = open(index, "rb").read()
    with monkeypatch.context() as killed:
        killed.setattr(Store, "_write_latest_shown", lambda self, ordered: None)  # the kill, just before it
        store.append(appends[2])
    assert not os.path.exists(index) and store.latest_shown() is None
    after = show(config, capsys, monkeypatch)
    assert tables_of(summary.latest_of(store)) == tables_of(summary.Latest.of_points(newest_per_series(appends)))
    open(index, "wb").write(before)
    assert store.latest_shown() is None
    assert show(config, capsys, monkeypatch) == after == full_read(config, directory, capsys, monkeypatch)


def test_an_index_chosen_by_other_tables_is_not_read(tmp_path, monkeypatch):
    """Another version of dnfsmon may table other series: its index lacks some of ours."""
    store = Store(str(tmp_path), max_bytes=10**8)
    with monkeypatch.context() as other_version:
        other_version.setattr(store_module.tables, "SELECTION", [["dnfsmon_tcp"]])
        store.append(appends_of(9, rounds=1)[0])
        assert store.latest_shown() is not None
    assert store.latest_shown() is None


def test_a_store_of_the_old_format_is_shown_from_latest_json_then_from_the_index(tmp_path, capsys, monkeypatch):
    from test_store import write_old_format_store

    config = write_config(tmp_path)
    directory = tmp_path / "store"
    directory.mkdir(mode=0o750)
    appends = appends_of(10, rounds=3)
    write_old_format_store(str(directory), appends[:2])
    old = show(config, capsys, monkeypatch)
    assert Store(str(directory), max_bytes=10**8, read_only=True).latest_shown() is None
    Store(str(directory), max_bytes=10**8).append(appends[2])
    store = Store(str(directory), max_bytes=10**8, read_only=True)
    assert store.latest_shown() is not None
    new = show(config, capsys, monkeypatch)
    assert new == full_read(config, str(directory), capsys, monkeypatch) and new != old
    assert tables_of(summary.latest_of(store)) == tables_of(summary.Latest.of_points(newest_per_series(appends)))


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_a_fifo_or_link_planted_at_the_index_is_never_read(tmp_path, kind):
    """A FIFO would hang a reader that opened it; a link could feed it another store's index."""
    config = write_config(tmp_path)
    directory = tmp_path / "store"
    store = Store(str(directory), max_bytes=10**8)
    for batch in appends_of(13, rounds=2):
        store.append(batch)
    index = directory / store_module.LATEST_SHOWN_FILE
    other = tmp_path / "other"
    os.rename(index, other)
    if kind == "fifo":
        os.mkfifo(index, 0o600)
    else:
        os.symlink(other, index)
    assert store.latest_shown() is None
    result = subprocess.run(
        [sys.executable, "-m", "dnfsmon", "--config", str(config), "show"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "Kernel NFS client RPC" in result.stdout


APPENDER = """
import sys
sys.path.insert(0, sys.argv[2])
from test_show import appends_of
from dnfsmon.store import Store
store = Store(sys.argv[1], max_bytes=10**8)
print("ready", flush=True)
number = 0
while True:
    for batch in appends_of(number % 5, rounds=2):
        store.append(batch)
    number += 1
"""


@pytest.mark.slow
def test_appends_killed_at_random_moments_never_leave_an_index_that_show_reads_wrongly(tmp_path):
    """SIGKILL anywhere in an append (latest.lp written, its index not yet, or half written):
    latest.shown.lp is read only when it gives the tables the full read of latest.lp gives."""
    rng = random.Random(11)
    directory = str(tmp_path / "store")
    read_from_the_index = 0
    for _ in range(12):
        process = subprocess.Popen(
            [sys.executable, "-c", APPENDER, directory, os.path.dirname(__file__)], stdout=subprocess.PIPE
        )
        assert process.stdout is not None and process.stdout.readline() == b"ready\n"
        time.sleep(rng.random() * 0.3)
        process.send_signal(signal.SIGKILL)
        process.wait()
        store = Store(directory, max_bytes=10**8, read_only=True)
        shown = store.latest_shown()
        if shown is not None:
            read_from_the_index += 1
            assert tables_of(summary.latest_of(store, tabled_only=True)) == tables_of(summary.latest_of(store))
    assert read_from_the_index > 0  # the kills also fell between appends


# The bench's store at 1000 mounts: every NFS operation of each mount (21 625 series, READ and
# WRITE among them) and a dnfsmon_nfs_mount series per mount, 22 625 series.
BENCH_MOUNTS = 1000
BENCH_OPS = ("READ", "WRITE", *(f"OP{n}" for n in range(20)))
BENCH_FIELDS = (*NFS_OP_FIELDS, "recv_kib_per_s", "sent_kib_per_s", "retrans_pct", "timeouts_per_s")


def bench_like_points() -> list[Point]:
    rng = random.Random(12)
    found = []
    for mount in range(BENCH_MOUNTS):
        tags = (("export", f"/export/db{mount:04d}"), ("host", "bench"), ("mountpoint", f"/u02/oradata/db{mount:04d}"))
        for op in BENCH_OPS[: 21 + (mount < 625)]:
            fields = {name: rng.random() * 10 ** rng.randint(0, 4) for name in BENCH_FIELDS}
            found.append(Point("dnfsmon_nfs_op", (*tags, ("op", op), ("server", "filer0")), fields, START_NS))
        found.append(Point("dnfsmon_nfs_mount", tags, {"age_s": rng.random() * 1e6}, START_NS))
    return found


def test_show_reads_the_lines_it_draws_not_every_series_line(tmp_path, capsys, monkeypatch):
    """At the bench's 22 625 series show read all of latest.lp, 9.6 MB here, and split it into
    lines, though it draws 2 000 of them (READ and WRITE) and counts the others. Now it reads
    latest.shown.lp: those lines and a count per measurement. Counted at the store's reads."""
    points = bench_like_points()
    assert len(points) == 22_625
    config = write_config(tmp_path)
    Store(str(tmp_path / "store"), max_bytes=10**9).append(points)
    read: list[int] = []
    read_in_directory, open_for_reading = store_module.read_in_directory, store_module.open_for_reading

    def counted_read(path, limit, any_owner=False):
        data = read_in_directory(path, limit, any_owner)
        read.append(len(data))
        return data

    def counted_open(path, any_owner=False):
        f = open_for_reading(path, any_owner)
        read.append(os.fstat(f.fileno()).st_size)  # a segment, read line by line: counted whole
        return f

    monkeypatch.setattr(store_module, "read_in_directory", counted_read)
    monkeypatch.setattr(store_module, "open_for_reading", counted_open)
    out = show(config, capsys, monkeypatch)
    drawn = [
        to_line(p) for p in points if dict(p.tags)["op" if p.measurement == "dnfsmon_nfs_op" else "host"] in OPS[:2]
    ]
    assert len(drawn) == 2 * BENCH_MOUNTS and len(out.splitlines()) > 2 * BENCH_MOUNTS
    assert "dnfsmon_nfs_mount (1000 series)" in out and "22625 series" in out
    latest_bytes = os.path.getsize(tmp_path / "store" / store_module.LATEST_FILE)
    assert sum(read) <= 1.05 * sum(len(line) + 1 for line in drawn) + 4096, (sum(read), latest_bytes)
