"""The rows of issue 20's table beyond mountstats (bench/run.py runs them): the Oracle
path, `dnfsmon ship` against a real InfluxDB 1.8, `dnfsmon show` on a full store,
the state file at 1000 mounts, one cron run and peak RSS at 1000 mounts.

Each comparison is paired and repeated like the others; the rows whose target
is an absolute figure (CPU seconds, MiB) carry the peer for scale only and
their verdict is on dnfsmon's median.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from typing import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import inputs  # noqa: E402

# The sizes.
ORACLE_INSTANCES, ORACLE_PROCESSES = 4, 2000
SHIP_POINTS = 100_000
DEFAULT_STORE_BYTES = 268_435_456  # [store] max_bytes' default (example.toml)
CRON_SOURCES = ["nic", "tcp", "mountstats", "filer_tcp", "rpc"]  # the "5 host sources"
HOST = "bench"


def dnfsmon(config: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "dnfsmon", "--config", config, *args]


def write_config(path: str, text: str) -> str:
    with open(path, "w") as f:
        f.write(text)
    return path


def oracle_documents(directory: str) -> tuple[str, str]:
    """Two simulator readings 10 s apart of 4 instances x 2000 dNFS processes, as files."""
    from dnfsmon import simulator
    from dnfsmon.sources import oracle

    workload = simulator.Workload(instances=ORACLE_INSTANCES, processes=ORACLE_PROCESSES, scope="cluster")
    paths = []
    for number, t in enumerate((workload.epoch + 7200, workload.epoch + 7210)):
        path = os.path.join(directory, f"oracle-{number}.json")
        with open(path, "w") as f:
            f.write(simulator.read(workload, t).text(oracle.RESULTS))
        paths.append(path)
    return paths[0], paths[1]


def mountstats_points(count: int, directory: str) -> list:
    """The points one sample of `count` bench mounts (all active) publishes."""
    from dnfsmon import rates
    from dnfsmon.sources import mountstats
    from dnfsmon.sources.base import Raw

    old, new = inputs.make_pair(directory, count, 1.0)
    readings = []
    for root, clock in ((old, 7000.0), (new, 7010.0)):
        with open(os.path.join(root, "1", "mountstats")) as f:
            readings.append(Raw({mountstats.MOUNTSTATS: f.read()}, clock, 1732240000.0 + clock))
    source = mountstats.MountstatsSource(["*"], [], ["all"])  # every operation, as the peers publish
    previous = source.parse(readings[0], HOST).samples
    current = source.parse(readings[1], HOST).samples
    return source.publish(rates.diff_all({s.state_key: s for s in previous}, current), current)


def shifted(points: list, count: int, step_ns: int = 10_000_000_000) -> list:
    """`count` points: the sample's points again and again, each round step_ns later."""
    from dnfsmon.points import Point

    result = []
    round_number = 0
    while len(result) < count:
        offset = round_number * step_ns
        result.extend(Point(p.measurement, p.tags, p.fields, p.time_ns + offset) for p in points)
        round_number += 1
    return result[:count]


def fill_store(directory: str, points: list, max_bytes: int, until_bytes: int = 0) -> None:
    """A store holding `points`; with until_bytes, rounds of them (each 10 s later) until it holds that much
    (less than max_bytes: the store's bound keeps it below that, dropping the oldest)."""
    from dnfsmon.points import Point
    from dnfsmon.store import Store

    store = Store(directory, max_bytes)
    store.append(points)
    round_number = 1
    while until_bytes and sum(os.path.getsize(p) for _, p in store.segments()) < until_bytes:
        offset = round_number * 10_000_000_000
        store.append([Point(p.measurement, p.tags, p.fields, p.time_ns + offset) for p in points])
        round_number += 1


class Influx:
    """A real InfluxDB 1.8 (tests/influxdb_server.py: built from the Go module proxy, cached)."""

    def __init__(self, directory: str):
        from influxdb_server import InfluxServer

        self.server = InfluxServer(os.path.join(directory, "influxdb")).start()
        self.server.create_database("bench")

    def post(self, batches: list[bytes]) -> None:
        """The raw peer: the same line protocol POSTed as it is, one request per batch."""
        for body in batches:
            request = urllib.request.Request(
                f"{self.server.url}/api/v2/write?bucket=bench&org=-&precision=ns",
                data=body,
                method="POST",
                headers={"Content-Type": "text/plain; charset=utf-8"},
            )
            with urllib.request.urlopen(request, timeout=60) as response:
                response.read()

    def stop(self) -> None:
        self.server.stop()


def wall(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def process_wall(argv: list[str]) -> float:
    """Wall seconds of one run of argv; a failed run raises with its exit code and its last log line."""
    start = time.perf_counter()
    finished = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall_s = time.perf_counter() - start
    if finished.returncode != 0:
        last_line = (finished.stderr.strip().splitlines() or ["(no log line)"])[-1]
        raise RuntimeError(f"{' '.join(argv)} exited {finished.returncode}: {last_line}")
    return wall_s


# Runs argv from a small Python process and prints its CPU seconds and peak RSS.
_MEASURE = """
import os, sys
pid = os.fork()
if pid == 0:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)
"""


def process_cost(argv: list[str]) -> tuple[float, float]:
    """CPU seconds and peak RSS (MiB) of one run of argv.

    Started from a small intermediate process, not forked from the bench: a
    child's peak RSS starts at the high-water mark of the process it was
    forked from (Linux carries it across exec), and by these rows the bench
    process holds hundreds of MiB of points."""
    result = subprocess.run([sys.executable, "-c", _MEASURE, *argv], capture_output=True, text=True, check=True)
    code, cpu, rss = result.stdout.split()
    if int(code) not in (0, 3):
        raise SystemExit(f"{argv} failed with status {code}")
    return float(cpu), float(rss)


def state_bytes_per_sample(directory: str, active_fraction: float, readings: int = 13) -> float:
    """Bytes of state one `dnfsmon collect` writes per sample at 1000 mounts, amortized over a sequence.

    Each run reads the next of `readings` readings (the same mounts active in
    each, every mount's age moving) through [host] proc_root. What a run
    wrote is read from the state directory: the journal's growth, or, when
    a new snapshot replaced it (its generation changed), the snapshot's size
    plus the journal started after it. The first run only baselines.
    """
    paths = inputs.make_sequence(os.path.join(directory, "sequence"), 1000, active_fraction, readings)
    proc = os.path.join(directory, "proc")
    shutil.copytree(os.path.join(paths[0], "capture", "proc"), proc)
    state_dir = os.path.join(directory, "state")
    config = write_config(
        os.path.join(directory, "sequence.toml"),
        f"[agent]\nhost = '{HOST}'\nstate_dir = '{state_dir}'\n[store]\ndir = '{directory}/store'\n"
        f"[host]\nproc_root = '{proc}'\nsources = ['mountstats']\n",
    )
    written = 0
    for number, path in enumerate(paths):
        shutil.copyfile(os.path.join(path, "capture", "proc", "self", "mountstats"), f"{proc}/self/mountstats")
        before = _state_files(state_dir) if number else None
        subprocess.run(dnfsmon(config, "collect"), check=True, capture_output=True)
        after = _state_files(state_dir)
        if before is not None:
            snapshot_rewritten = after[0] != before[0]
            written += (after[1] + after[2]) if snapshot_rewritten else (after[2] - before[2])
    shutil.rmtree(os.path.join(directory, "store"), ignore_errors=True)
    return written / (len(paths) - 1)


def _state_files(state_dir: str) -> tuple[str, int, int]:
    """(snapshot generation, snapshot bytes, journal bytes) of the one mountstats target's state."""
    snapshot = state_file(state_dir)
    with open(snapshot, "rb") as f:
        generation = json.loads(f.read()).get("generation", "")
    journal = snapshot[: -len(".json")] + ".journal"
    journal_bytes = os.path.getsize(journal) if os.path.exists(journal) else 0
    return generation, os.path.getsize(snapshot), journal_bytes


def state_file(state_dir: str) -> str:
    names = [n for n in os.listdir(state_dir) if n.endswith(".state.json") and "memory" not in n]
    assert len(names) == 1, names
    return os.path.join(state_dir, names[0])


def copy_tree(source: str, target: str) -> None:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)


def command_imports() -> dict[str, list[str]]:
    """The modules each command imports beyond `import dnfsmon.cli` (every command's floor): its
    module under dnfsmon/commands/ (which cli.main imports only for that command) and the relative
    imports inside that module's functions, read from the files so the list cannot drift from the code."""
    package = os.path.join(ROOT, "agent", "dnfsmon")
    commands: dict[str, list[str]] = {}
    for name in sorted(os.listdir(os.path.join(package, "commands"))):
        if not name.endswith(".py") or name.startswith("_") or name == "output.py":
            continue
        module = name[: -len(".py")]
        with open(os.path.join(package, "commands", name)) as f:
            tree = ast.parse(f.read())
        modules = {f"dnfsmon.commands.{module}"}
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef):
                continue
            for inner in ast.walk(node):
                if not (isinstance(inner, ast.ImportFrom) and inner.level in (1, 2)):
                    continue
                parent = ["dnfsmon", *(["commands"] if inner.level == 1 else [])]
                parent += inner.module.split(".") if inner.module else []
                for alias in inner.names:  # a submodule (from ..diagnosis import timeline), else a name of parent
                    submodule = os.path.join(package, *parent[1:], alias.name)
                    is_module = os.path.exists(submodule + ".py") or os.path.isdir(submodule)
                    modules.add(".".join([*parent, alias.name] if is_module else parent))
        commands[module.replace("_", "-")] = sorted(modules)
    return commands


def import_argv(modules: list[str]) -> list[str]:
    """A Python process that imports dnfsmon.cli and `modules`, and nothing else."""
    return [sys.executable, "-c", "; ".join(f"import {m}" for m in ["dnfsmon.cli", *modules])]


class LaterReading:
    """A reading of DIR/capture/proc (bench/inputs.py) made INTERVAL_S after a baseline, in the mounts' own clock.

    A live `collect` takes its clock from the host (CLOCK_BOOTTIME) and a mount's start is that
    clock less its `age:`. The bench runs the reading minutes after its baseline while the
    files' ages moved inputs.INTERVAL_S, so every mount's start would move and the sample
    re-baseline every key instead of making its points (rates.STARTED_TOLERANCE_S). Before each
    run, `ready()` writes the reading again with every age moved by the host time that passed
    beyond the interval: the baseline's files and this reading are then INTERVAL_S apart in
    the files' own clock, whenever the run comes."""

    def __init__(self, directory: str, baseline_clock: float):
        self.path = os.path.join(directory, "capture", "proc", "self", "mountstats")
        with open(self.path) as f:
            self.text = f.read()
        self.baseline_clock = baseline_clock

    def ready(self) -> None:
        late = time.clock_gettime(time.CLOCK_BOOTTIME) - self.baseline_clock - inputs.INTERVAL_S
        with open(self.path, "w") as f:
            f.write(ages_moved(self.text, round(late)))


def baseline_clock(state_dir: str) -> float:
    """The host clock of the reading a baseline `collect` saved (its samples' time)."""
    from dnfsmon.state import StateFile

    samples = StateFile(state_dir, f"host:{HOST}").load()
    return next(iter(samples.values())).time


def ages_moved(text: str, step: int) -> str:
    """mountstats text with every mount's `age:` moved by `step` seconds."""
    lines = text.split("\n")
    for number, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped.startswith("age:"):
            indent = line[: len(line) - len(stripped)]
            lines[number] = f"{indent}age:\t{int(stripped.split()[1]) + step}"
    return "\n".join(lines)
