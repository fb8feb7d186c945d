"""State files between cron runs, and the run lock."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

import dnfsmon.state
from dnfsmon.rates import Sample
from dnfsmon.state import (
    JOURNAL_TO_SNAPSHOT,
    MAX_JOURNAL_RECORDS,
    SCHEMA_VERSION,
    LockHeld,
    RunLock,
    StateFile,
    frame,
)


def samples():
    return [Sample("m", (("k", str(i)),), 1.0 + i, 2.0, {"c": i}, {"g": "x"}, ("boot",)) for i in range(3)]


def test_round_trip_and_owner_only_mode(tmp_path):
    state = StateFile(str(tmp_path), "host:db1")
    state.save(samples())
    assert os.stat(state.path).st_mode & 0o777 == 0o600
    loaded = StateFile(str(tmp_path), "host:db1").load()
    assert loaded == {s.state_key: s for s in samples()}
    assert [p.name for p in tmp_path.iterdir()] == [os.path.basename(state.path)]  # no temp files left


def test_targets_have_separate_files(tmp_path):
    a, b = StateFile(str(tmp_path), "host:db1"), StateFile(str(tmp_path), "host:db2")
    a.save(samples())
    assert a.path != b.path
    assert b.load() == {}


@pytest.mark.parametrize(
    "case, content, reason",
    [
        ("corrupt", b'{"schema": 1, "tar', "unreadable"),
        ("empty", b"", "unreadable"),
        ("not_object", b"[1, 2]", "not a JSON object"),
        (
            "old_schema",
            json.dumps({"schema": SCHEMA_VERSION - 1, "target": "host:db1", "samples": []}).encode(),
            "schema 0",
        ),
        (
            "foreign",
            json.dumps({"schema": SCHEMA_VERSION, "target": "host:other", "samples": []}).encode(),
            "belongs to target 'host:other'",
        ),
        (
            "bad_sample",
            json.dumps({"schema": SCHEMA_VERSION, "target": "host:db1", "samples": [{"measurement": "m"}]}).encode(),
            "unreadable",
        ),
    ],
)
def test_unusable_state_is_set_aside_with_one_warning(tmp_path, caplog, case, content, reason):
    state = StateFile(str(tmp_path), "host:db1")
    with open(state.path, "wb") as f:
        f.write(content)
    assert state.load() == {}
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and reason in warnings[0].getMessage(), case
    assert not os.path.exists(state.path)
    aside = [p for p in tmp_path.iterdir() if ".bad-" in p.name]
    assert len(aside) == 1 and aside[0].read_bytes() == content
    # The next save and load work normally.
    state.save(samples())
    assert len(state.load()) == 3


def test_lock_is_exclusive_across_processes_and_released_by_death(tmp_path):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from dnfsmon.state import RunLock; import time; l = RunLock({str(tmp_path)!r}); l.acquire(); print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(LockHeld, match=f"pid {holder.pid}"):
            RunLock(str(tmp_path)).acquire()
    finally:
        holder.kill()
        holder.wait()
    with RunLock(str(tmp_path)):  # SIGKILL released it
        pass


# --- the journal: what a sample writes is proportional to what changed ---


def mount_like(mounts: int, moving: set[int], step: int, rng: random.Random, removed: frozenset = frozenset()):
    """Samples shaped like mountstats': per mount one mount sample and 30 op samples sharing its start.

    The start is estimated from the mount's age at each reading, so it moves by
    fractions of a second every time; only the mounts in `moving` count anything.
    """
    t = 1000.0 + 10.25 * step
    found = []
    for mount in range(mounts):
        if mount in removed:
            continue
        started = 17.0 + rng.choice([0.0, 0.25, -0.75])
        key = (("host", "h"), ("mountpoint", f"/u{mount:04d}"))
        busy = step if mount in moving else 0
        found.append(
            Sample("nfs_mount", key, t, t + 1.7e9, {"bytes": busy * 4096}, {"age_s": step * 10}, ("b",), started)
        )
        for op in range(30):
            counters = {"ops": busy * (op + 1), "rtt_ms": busy * 3}
            found.append(Sample("nfs_op", (*key, ("op", f"OP{op}")), t, t + 1.7e9, counters, None, ("b",), started))
    return found


def test_journal_replays_to_exactly_what_was_saved(tmp_path):
    rng = random.Random(7)
    writer = StateFile(str(tmp_path), "host:h")
    writer.save(mount_like(20, set(), 0, rng))
    held = {}
    for step in range(1, 25):
        moving = set(rng.sample(range(20), 3))
        removed = frozenset(rng.sample(range(20), 1)) if step % 7 == 0 else frozenset()
        samples = mount_like(20 + step % 3, moving, step, rng, removed)  # mounts come and go
        if step % 5 == 0:  # an unread measurement keeps its previous samples untouched
            samples = [s for s in samples if s.measurement == "nfs_op"] + [
                s for s in held.values() if s.measurement == "nfs_mount"
            ]
        # Oracle-like: two instances' samples in one measurement, each on its own clock.
        samples += [
            Sample("dnfs_io", (("inst", str(i)),), 500.0 + step + i / 3, 9.0 + step, {"reads": step * i}, {}, ("s",))
            for i in (1, 2, 2)
        ]
        writer.save(samples)
        held = {s.state_key: s for s in samples}
        loaded = StateFile(str(tmp_path), "host:h").load()
        assert loaded == held, step
        # As JSON too: equal is not enough where True == 1.
        assert [loaded[key].to_json() for key in sorted(held)] == [held[key].to_json() for key in sorted(held)]
    assert os.path.exists(writer.journal_path)  # the steps went to the journal, not all to snapshots


def test_a_sample_writes_in_proportion_to_what_moved(tmp_path):
    rng = random.Random(3)
    sizes = {}
    for label, moving in (("all", set(range(200))), ("a tenth", set(range(0, 200, 10)))):
        state = StateFile(str(tmp_path / label), "host:h")
        os.mkdir(tmp_path / label)
        state.save(mount_like(200, moving, 1, rng))
        snapshot = os.path.getsize(state.path)
        state.save(mount_like(200, moving, 2, rng))
        written = os.path.getsize(state.path) if not os.path.exists(state.journal_path) else 0
        written += os.path.getsize(state.journal_path) if os.path.exists(state.journal_path) else 0
        sizes[label] = (written, snapshot)
    assert sizes["a tenth"][0] < 0.2 * sizes["all"][0], sizes
    assert sizes["a tenth"][0] < 0.2 * sizes["a tenth"][1], sizes  # a tenth of the snapshot, not all of it


def test_an_idle_mount_whose_age_moved_costs_its_place_not_its_series_key(tmp_path):
    """Every mount's age gauge moves at every reading, idle or not: a record names each
    changed key by its place among the measurement's keys, never by its text."""
    rng = random.Random(5)
    state = StateFile(str(tmp_path), "host:h")
    state.save(mount_like(200, set(), 1, rng))
    later = mount_like(200, set(), 2, rng)
    state.save(later)  # no counter moved; every age_s did
    journal = open(state.journal_path, "rb").read()
    assert b"/u0" not in journal  # no mountpoint, so no series key, in the record
    assert len(journal) < 40 * 200, len(journal)  # before places: about 100 bytes per idle mount
    assert StateFile(str(tmp_path), "host:h").load() == {s.state_key: s for s in later}


def test_a_record_written_by_series_key_before_places_still_replays(tmp_path):
    state, history = saved_steps(tmp_path, 3)
    keys_of: dict = {}
    for key, sample in sorted(history[0].items()):  # the snapshot's order, which places index
        keys_of.setdefault(sample.measurement, []).append(key)
    lines = open(state.journal_path, "rb").read().splitlines(keepends=True)
    for number, line in enumerate(lines):
        record = json.loads(line[9:])
        for measurement, group in record["groups"].items():
            for what in ("counters", "gauges"):
                group[what] = {keys_of[measurement][place]: values for place, values in group[what]}
        lines[number] = frame(json.dumps(record))
    open(state.journal_path, "wb").write(b"".join(lines))
    assert StateFile(str(tmp_path), "host:h").load() == history[3]


def saved_steps(tmp_path, steps: int):
    """A state saved `steps` times after its snapshot; the samples of each save."""
    rng = random.Random(11)
    state = StateFile(str(tmp_path), "host:h")
    history = [mount_like(10, set(), 0, rng)]
    state.save(history[0])
    for step in range(1, steps + 1):
        history.append(mount_like(10, {step % 10}, step, rng))
        state.save(history[-1])
    return state, [{s.state_key: s for s in samples} for samples in history]


def test_a_torn_last_record_gives_the_state_before_it_and_the_next_save_a_snapshot(tmp_path, caplog):
    state, history = saved_steps(tmp_path, 3)
    data = open(state.journal_path, "rb").read()
    open(state.journal_path, "wb").write(data[:-40])  # the crash cut the last append short
    reader = StateFile(str(tmp_path), "host:h")
    assert reader.load() == history[2]
    assert "record 3 at byte" in caplog.text and "torn record" in caplog.text
    reader.save(history[3].values())
    assert not os.path.exists(reader.journal_path)  # a fresh snapshot replaced the doubtful journal
    assert StateFile(str(tmp_path), "host:h").load() == history[3]


def test_a_corrupt_record_stops_the_replay_there(tmp_path, caplog):
    state, history = saved_steps(tmp_path, 4)
    lines = open(state.journal_path, "rb").read().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"ops"', b'"opz"')  # a flipped byte: the checksum no longer matches
    open(state.journal_path, "wb").write(b"".join(lines))
    assert StateFile(str(tmp_path), "host:h").load() == history[1]
    assert "record 2 at byte" in caplog.text and "checksum mismatch" in caplog.text


def test_a_record_that_does_not_fit_its_state_is_not_applied(tmp_path, caplog):
    state, history = saved_steps(tmp_path, 2)
    lines = open(state.journal_path, "rb").read().splitlines(keepends=True)
    record = json.loads(lines[0][9:])
    record["groups"]["nfs_op"]["started"][0][0] += 1  # one start more than the measurement has keys
    lines[0] = frame(json.dumps(record))
    open(state.journal_path, "wb").write(b"".join(lines))
    assert StateFile(str(tmp_path), "host:h").load() == history[0]
    assert "nfs_op: " in caplog.text and "starts for" in caplog.text


def test_a_journal_older_than_its_snapshot_is_ignored(tmp_path, caplog):
    state, history = saved_steps(tmp_path, 2)
    stale = open(state.journal_path, "rb").read()
    state.load()
    state._save_snapshot(history[2])  # a new snapshot; the crash came before the journal was removed
    open(state.journal_path, "wb").write(stale)
    reader = StateFile(str(tmp_path), "host:h")
    assert reader.load() == history[2]
    assert "WARNING" not in caplog.text  # not a fault: the snapshot holds every record of it
    reader.save(history[1].values())
    assert StateFile(str(tmp_path), "host:h").load() == history[1]


def test_the_journal_is_bounded_by_a_new_snapshot(tmp_path, monkeypatch):
    monkeypatch.setattr(dnfsmon.state, "JOURNAL_TO_SNAPSHOT", 1000)  # the record count alone bounds it here
    state = StateFile(str(tmp_path), "host:h")
    rng = random.Random(9)
    generations = set()
    for step in range(2 * MAX_JOURNAL_RECORDS + 5):
        samples = mount_like(10, {step % 10}, step, rng)
        state.save(samples)
        generations.add(json.loads(open(state.path, "rb").read())["generation"])
        records = len(open(state.journal_path, "rb").read().splitlines()) if os.path.exists(state.journal_path) else 0
        assert records <= MAX_JOURNAL_RECORDS
    assert len(generations) == 3  # the first snapshot and two that replaced a full journal
    assert StateFile(str(tmp_path), "host:h").load() == {s.state_key: s for s in samples}
    monkeypatch.undo()
    # Everything changing writes the sample in full: the journal gives way to a snapshot at twice its size.
    big = StateFile(str(tmp_path / "big"), "host:h")
    os.mkdir(tmp_path / "big")
    rng = random.Random(5)
    for step in range(6):
        big.save(mount_like(10, set(range(10)), step, rng))
        journal = os.path.getsize(big.journal_path) if os.path.exists(big.journal_path) else 0
        assert journal <= JOURNAL_TO_SNAPSHOT * os.path.getsize(big.path)


def test_a_state_written_before_the_journal_existed_carries_on(tmp_path):
    rng = random.Random(2)
    first, second = mount_like(5, set(), 1, rng), mount_like(5, {1}, 2, rng)
    state = StateFile(str(tmp_path), "host:h")
    document = {"schema": SCHEMA_VERSION, "target": "host:h", "samples": [s.to_json() for s in first]}
    open(state.path, "w").write(json.dumps(document))  # no generation: the previous release's file
    assert state.load() == {s.state_key: s for s in first}
    state.save(second)
    assert os.path.exists(state.journal_path)
    assert StateFile(str(tmp_path), "host:h").load() == {s.state_key: s for s in second}


def test_the_journal_is_owner_only_and_never_followed_through_a_symlink(tmp_path, caplog):
    state, history = saved_steps(tmp_path, 1)
    assert os.stat(state.journal_path).st_mode & 0o777 == 0o600
    os.unlink(state.journal_path)
    target = tmp_path / "elsewhere"
    target.write_bytes(b"")
    os.symlink(target, state.journal_path)
    reader = StateFile(str(tmp_path), "host:h")
    assert reader.load() == history[0]  # the snapshot alone: the planted link is set aside
    assert "symbolic link" in caplog.text and not os.path.islink(state.journal_path)
    reader.save(history[1].values())
    assert target.read_bytes() == b"" and StateFile(str(tmp_path), "host:h").load() == history[1]


def test_a_snapshot_counter_of_infinity_is_set_aside_not_a_crash(tmp_path, caplog):
    state = StateFile(str(tmp_path), "host:h")
    state.save(samples())
    document = json.loads(open(state.path).read())
    document["samples"][0]["counters"]["c"] = float("inf")  # json writes it as Infinity
    open(state.path, "w").write(json.dumps(document))
    assert StateFile(str(tmp_path), "host:h").load() == {}
    assert caplog.text.count("re-baselines") == 1 and "OverflowError" in caplog.text
    assert not os.path.exists(state.path)


def test_a_record_with_a_valid_checksum_and_ten_billion_starts_is_refused_unexpanded(tmp_path, caplog):
    state, history = saved_steps(tmp_path, 2)
    lines = open(state.journal_path, "rb").read().splitlines(keepends=True)
    record = json.loads(lines[0][9:])
    record["groups"]["nfs_op"]["started"] = [[10**10, 1.0]]
    lines[0] = frame(json.dumps(record))
    open(state.journal_path, "wb").write(b"".join(lines))
    assert StateFile(str(tmp_path), "host:h").load() == history[0]
    assert caplog.text.count("the state from before it is used") == 1 and "more starts for" in caplog.text


def test_a_mounts_operations_that_moved_are_saved_and_loaded_as_they_were_read(tmp_path):
    """The next run diffs against what the state loads: a mount's operations (one MountOps sample,
    a Sample subclass) that moved must come back with this reading's counters and clock."""
    from dnfsmon.sources import mountstats
    from dnfsmon.sources.base import Raw

    case = os.path.join(os.path.dirname(__file__), "cases", "doctor", "healthy")
    readings = []
    for reading in ("old", "new"):
        with open(os.path.join(case, reading, "proc", "self", "mountstats")) as f:
            readings.append(f.read())
    source = mountstats.MountstatsSource(["*"], [], ["all"])
    first = source.parse(Raw({mountstats.MOUNTSTATS: readings[0]}, 100.0, 1_700_000_100.0), "h").samples
    second = source.parse(Raw({mountstats.MOUNTSTATS: readings[1]}, 110.0, 1_700_000_110.0), "h").samples
    operations = [s for s in second if isinstance(s, mountstats.MountOps)]
    assert operations
    state = StateFile(str(tmp_path), "host:ops")
    state.save(first)
    state.save(second)
    loaded = StateFile(str(tmp_path), "host:ops").load()
    for sample in operations:
        again = loaded[sample.state_key]
        assert (again.time, again.wall_time) == (110.0, 1_700_000_110.0)
        assert dict(again.counters) == dict(sample.counters)


def test_an_instances_processes_are_saved_and_loaded_as_read_and_give_the_points_kept_in_memory(tmp_path):
    """An instance's processes are one sample (rates.Members): saved in a snapshot, then in journal
    records as processes come and go, they load back equal to the samples read; and a cron run
    that diffs against what it loads publishes what a run keeping them in memory publishes."""
    from dnfsmon import simulator
    from dnfsmon.collect import compute
    from dnfsmon.rates import Members

    workload = simulator.Workload(pdbs=2, process_lifetime_s=25.0)
    memory = simulator.Memory()
    state = StateFile(str(tmp_path), "oracle:simdb")
    kept: dict = {}
    for k in range(6):
        raw = simulator.read(workload, workload.epoch + 7200 + 10 * k, memory)
        in_memory = compute({"oracle": raw}, {}, "h", kept)
        loaded = StateFile(str(tmp_path), "oracle:simdb").load()
        from_state = compute({"oracle": raw}, {}, "h", loaded)
        assert sorted(map(repr, from_state.points)) == sorted(map(repr, in_memory.points))
        if k > 0:
            assert loaded == kept and any(type(s) is Members for s in loaded.values())
            assert any(p.measurement == "dnfsmon_dnfs_io" for p in in_memory.points)
        state.save(in_memory.samples.values())
        kept = in_memory.samples
