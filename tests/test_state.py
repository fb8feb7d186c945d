"""State files between cron runs, and the run lock."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dnfsmon.rates import Sample
from dnfsmon.state import SCHEMA_VERSION, LockHeld, RunLock, StateFile


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
