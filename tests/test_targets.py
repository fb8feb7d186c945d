"""Targets: the host and the database each read, diffed and saved on their own."""

from __future__ import annotations

import json
import os
import subprocess

from configs import write_config
from dnfsmon.collect import collect_targets
from dnfsmon.config import load
from dnfsmon.state import RunLock, StateFile, state_file_name
from dnfsmon.store import Store
from dnfsmon.targets import HostTarget, Reading, SimulatedTarget, Target, targets_from
from runner import DNFSMON


def run(*args, rc):
    result = subprocess.run(DNFSMON + [str(a) for a in args], capture_output=True, text=True, timeout=120)
    assert result.returncode == rc, result.stderr
    return result


def stored(tmp_path):
    return list(Store(str(tmp_path / "store"), 10**9).points())


def simulator_config(tmp_path):
    """The host's tcp source and a one-instance simulated database SIMDB, on a fresh state directory."""
    return write_config(
        tmp_path, agent={"host": "testhost"}, host={"sources": ["tcp"]}, simulator={"enabled": True, "instances": 1}
    )


def test_capture_with_the_simulator_on_a_fresh_state_dir_reads_and_writes_no_state(tmp_path):
    # Used to exit 1 with a FileNotFoundError traceback: the simulator saved its
    # memory from inside its read, into a state directory nobody had created.
    config = simulator_config(tmp_path)
    result = run("--config", config, "capture", tmp_path / "a", rc=0)
    assert "Traceback" not in result.stderr and "captured 2 sources" in result.stdout
    manifest = json.loads((tmp_path / "a" / "capture.json").read_text())
    assert set(manifest["sources"]) == {"tcp", "oracle"}
    assert json.loads((tmp_path / "a" / "oracle" / "results.json").read_text())["kind"] == "simulated"
    assert not (tmp_path / "state").exists()  # a capture only reads
    run("--config", config, "capture", tmp_path / "b", rc=0)
    points = json.loads(run("diff", tmp_path / "a", tmp_path / "b", "--format", "json", rc=0).stdout)
    assert {"dnfsmon_tcp", "dnfsmon_dnfs_io", "dnfsmon_oracle_status"} <= {p["m"] for p in points}


def test_each_target_keeps_its_own_state_file(tmp_path):
    config = simulator_config(tmp_path)
    run("--config", config, "collect", rc=0)
    state = tmp_path / "state"
    files = {
        target_id: state / state_file_name(target_id)
        for target_id in ("host:testhost", "simulator:SIMDB", "simulator:SIMDB:memory")
    }
    assert sorted(p.name for p in state.glob("*.state.json")) == sorted(p.name for p in files.values())
    host = StateFile(str(state), "host:testhost").load()
    database = StateFile(str(state), "simulator:SIMDB").load()
    assert {s.measurement for s in host.values()} == {"dnfsmon_tcp"}
    assert "dnfsmon_dnfs_io" in {s.measurement for s in database.values()}
    assert "dnfsmon_tcp" not in {s.measurement for s in database.values()}
    # The simulator's memory (when V$DNFS_CHANNELS was last selected) is saved
    # with the state, and the next run's reader starts from it.
    memory = StateFile(str(state), "simulator:SIMDB:memory").load_json()
    assert set(memory) == {"1"}
    cfg = load(str(tmp_path / "dnfsmon.toml"))
    (_, simulated) = targets_from(cfg)
    assert isinstance(simulated, SimulatedTarget)
    assert simulated.memory.last_channel_select == {1: memory["1"]}


def test_the_host_is_read_first_and_the_database_after(tmp_path):
    config = simulator_config(tmp_path)
    run("--config", config, "collect", "--count", 2, "--interval", 0.2, rc=0)
    second = [p.measurement for p in stored(tmp_path) if p.measurement != "dnfsmon_agent"]
    # Sample 1 is a baseline for the rates (only the database's status); in
    # sample 2 every host point is stored before the first database point.
    assert second.index("dnfsmon_tcp") < second.index("dnfsmon_dnfs_io")
    assert second[-1] != "dnfsmon_tcp"


class ExplodingTarget(Target):
    """A reader with a bug: its read raises."""

    id = "exploding:db"
    sources = ("oracle",)

    def read(self) -> Reading:
        raise RuntimeError("reader bug")


class WitnessTarget(Target):
    """A database reader that records what the host had saved when it was read."""

    id = "witness:db"
    sources = ("oracle",)

    def __init__(self, host_state: StateFile):
        self.host_state = host_state
        self.host_samples_seen: list[int] = []
        self.remembered = 0

    def read(self) -> Reading:
        self.host_samples_seen.append(len(self.host_state.load()))
        return Reading(failures={"oracle": "ORA-12541: TNS:no listener"})

    def remember(self) -> None:
        self.remembered += 1


def host_only(tmp_path):
    """The host's tcp source, with the state directory made as `dnfsmon collect` does."""
    write_config(tmp_path, agent={"host": "testhost"}, host={"sources": ["tcp"]})
    cfg = load(str(tmp_path / "dnfsmon.toml"))
    os.makedirs(cfg.state_dir)
    return cfg


def test_a_failing_target_does_not_stop_the_others(tmp_path):
    cfg = host_only(tmp_path)
    (host,) = targets_from(cfg)
    assert isinstance(host, HostTarget) and host.id == "host:testhost"
    # The broken reader comes first: the host is still read, diffed and stored.
    with RunLock(cfg.state_dir):
        any_failure = collect_targets(cfg, [ExplodingTarget(), host], 2, 0.0)
    assert any_failure
    points = stored(tmp_path)
    assert [p.measurement for p in points].count("dnfsmon_tcp") == 1  # sample 2: a rate
    agents = [p for p in points if p.measurement == "dnfsmon_agent"]
    assert [(a.fields["sources_ok"], a.fields["sources_failed"]) for a in agents] == [(1, 1), (1, 1)]
    assert StateFile(cfg.state_dir, "host:testhost").load()
    assert StateFile(cfg.state_dir, "exploding:db").load() == {}


def test_the_host_is_saved_before_the_database_is_read(tmp_path):
    cfg = host_only(tmp_path)
    (host,) = targets_from(cfg)
    witness = WitnessTarget(StateFile(cfg.state_dir, host.id))
    with RunLock(cfg.state_dir):
        assert collect_targets(cfg, [host, witness], 2, 0.0)
    # Each database read found the host's sample of the same round already saved.
    assert witness.host_samples_seen == [1, 1] and witness.remembered == 2
