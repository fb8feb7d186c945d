"""dnfsmon against its peers, paired and repeated: `make bench` (or `--quick`).

Each comparison runs dnfsmon and its peer one after the other, PAIRS times
(alternating which goes first), on the same generated inputs
(bench/inputs.py: the committed real mountstats fixtures scaled to N mounts),
and reports the ratio dnfsmon / peer of each pair: min, median and max. Only
these ratios are comparable between runs: the machine may be loaded, and
every figure is CPU time (CLOCK_PROCESS_CPUTIME_ID in process, wait4's rusage
for whole processes), which load inflates less than wall time.

Peers, built or found at run time (nothing built is committed):
- prometheus/procfs's mountstats parser (Go), bench/procfs/, built with
  `go build` against the Go module proxy;
- nfs-utils' `mountstats iostat -f NEW -S OLD` (Debian nfs-common);
- `python3 -c pass`: the floor of any Python process;
- the collect_cost.py comparison (nicstat, python+psutil) as before.

Writes the figures into bench/RESULTS.md (between the figures markers; the
rest of that file is written by hand) and a scaling plot, bench/scaling.png.
"""

from __future__ import annotations

import argparse
import compileall
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import collect_cost  # noqa: E402
import inputs  # noqa: E402
import whole  # noqa: E402

RESULTS = os.path.join(HERE, "RESULTS.md")
PLOT = os.path.join(HERE, "scaling.png")
START, END = "<!-- figures:start -->", "<!-- figures:end -->"
GO = shutil.which("go") or "/usr/local/go/bin/go"
# In-process repeats per measurement: the median of these is one pair's figure.
REPEATS = 5


def byte_compile(agent: str) -> None:
    """Compile the agent's modules as pip does when it installs the wheel: without
    .pyc files (PYTHONDONTWRITEBYTECODE, a read-only checkout) every run would
    compile them again, some 0.15 s of CPU that no installed host pays."""
    if not compileall.compile_dir(agent, quiet=1):
        raise SystemExit(f"could not byte-compile {agent}")


def build_procfs(directory: str) -> str:
    binary = os.path.join(directory, "procfs-bench")
    subprocess.run([GO, "build", "-o", binary, "."], cwd=os.path.join(HERE, "procfs"), check=True)
    return binary


def cpu_of_worker(argv: list[str]) -> float:
    """Median CPU seconds of the repeats a worker (ours or procfs) printed as a JSON list."""
    result = subprocess.run(argv, capture_output=True, text=True, check=True)
    return statistics.median(json.loads(result.stdout.splitlines()[-1]))


def ours(*args: str) -> list[str]:
    return [sys.executable, os.path.join(HERE, "worker.py"), *args]


def process_cost(argv: list[str]) -> tuple[float, float]:
    cpu, rss = collect_cost.measure(argv, 1)
    return cpu, rss


def archived_agent(revision: str, directory: str) -> str:
    """The agent/ of an earlier revision, extracted (git archive) for --before; its path for PYTHONPATH."""
    target = os.path.join(directory, "before")
    os.makedirs(target)
    archive = subprocess.run(
        ["git", "-C", os.path.dirname(HERE), "archive", revision, "agent"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", target], input=archive, check=True)
    byte_compile(os.path.join(target, "agent"))
    return os.path.join(target, "agent")


class Before:
    """Runs a command with the earlier revision's agent first on the import path."""

    def __init__(self, agent: str):
        self.agent = agent

    def cpu_of_worker(self, argv: list[str]) -> float:
        environment = {**os.environ, "PYTHONPATH": self.agent, "PYTHONDONTWRITEBYTECODE": "1"}
        result = subprocess.run(argv, capture_output=True, text=True, check=True, env=environment)
        return statistics.median(json.loads(result.stdout.splitlines()[-1]))

    def process_cost(self, argv: list[str]) -> tuple[float, float]:
        saved = {name: os.environ.get(name) for name in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
        os.environ.update(PYTHONPATH=self.agent, PYTHONDONTWRITEBYTECODE="1")
        try:
            return process_cost(argv)
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


class Comparison:
    def __init__(
        self,
        name: str,
        peer: str,
        target: str,
        limit: Optional[float],
        unit: str = "ms",
        scale: float = 1000,
        absolute: Optional[float] = None,
    ):
        self.name, self.peer, self.target, self.limit = name, peer, target, limit
        # A target on dnfsmon's own median (in the unit shown) rather than on the ratio.
        self.absolute = absolute
        # Figures are seconds (shown as ms) unless said otherwise (peak RSS: MiB, scale 1).
        self.unit, self.scale = unit, scale
        self.ours: list[float] = []
        self.theirs: list[float] = []
        self.ratios: list[float] = []

    def run(self, pairs: int, measure_ours: Callable[[], float], measure_peer: Callable[[], float]) -> None:
        for pair in range(pairs):
            if pair % 2:
                theirs, mine = measure_peer(), measure_ours()
            else:
                mine, theirs = measure_ours(), measure_peer()
            self.ours.append(mine)
            self.theirs.append(theirs)
            self.ratios.append(mine / theirs)
        print(self.line(), flush=True)

    def verdict(self) -> str:
        if self.absolute is not None:
            return "met" if statistics.median(self.ours) * self.scale <= self.absolute else "MISSED"
        if self.limit is None:
            return "-"
        return "met" if statistics.median(self.ratios) <= self.limit else "MISSED"

    def line(self) -> str:
        r = self.ratios
        return (
            f"| {self.name} | {statistics.median(self.ours) * self.scale:.1f} {self.unit} | {self.peer} "
            f"{statistics.median(self.theirs) * self.scale:.1f} {self.unit} "
            f"| {min(r):.2f} / {statistics.median(r):.2f} / {max(r):.2f} "
            f"| {self.target} | {self.verdict()} |"
        )


def machine() -> str:
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load = os.getloadavg()
    return (
        f"{platform.node()}: {os.cpu_count()} CPUs ({cpu}), Linux {platform.release()}, "
        f"Python {platform.python_version()}, load average at the start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )


def write_results(text: str) -> None:
    with open(RESULTS) as f:
        page = f.read()
    head, _, rest = page.partition(START)
    _, _, tail = rest.partition(END)
    with open(RESULTS, "w") as f:
        f.write(f"{head}{START}\n{text}\n{END}{tail}")


def plot(scaling: dict[str, dict[int, float]]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot", file=sys.stderr)
        return
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for name, figures in scaling.items():
        counts = sorted(figures)
        axes.plot(counts, [figures[n] * 1000 for n in counts], marker="o", label=name)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("NFS mounts")
    axes.set_ylabel("CPU ms (median)")
    axes.set_title("mountstats work against mounts, CPU time")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(PLOT, dpi=100)
    print(f"wrote {PLOT}")


def run_whole(directory: str, pairs: int, comparisons: list[Comparison], quick: bool = False) -> list[str]:
    """The issue's rows beyond mountstats (bench/whole.py); returns lines for RESULTS.md."""
    from dnfsmon.points import to_line
    from dnfsmon.store import Store

    notes: list[str] = []

    # (a) The Oracle path: one sample of 4 instances x 2000 dNFS processes.
    old_document, new_document = whole.oracle_documents(directory)
    oracle = Comparison(
        f"Oracle path, {whole.ORACLE_INSTANCES} instances × {whole.ORACLE_PROCESSES} processes, one sample",
        "naive floor",
        "≤ 50 ms",
        None,
        absolute=50,
    )
    oracle.run(
        pairs,
        lambda: cpu_of_worker(ours("oracle", old_document, new_document, str(REPEATS))),
        lambda: cpu_of_worker(ours("oracle-floor", new_document, str(REPEATS))),
    )
    comparisons.append(oracle)

    # (b) `dnfsmon ship`, 100k points, against the same line protocol POSTed raw.
    sample_points = whole.mountstats_points(1000, os.path.join(directory, "points"))
    ship_points = whole.shifted(sample_points, whole.SHIP_POINTS)
    full_store = os.path.join(directory, "ship-store-full")
    whole.fill_store(full_store, ship_points, whole.DEFAULT_STORE_BYTES)
    lines = [to_line(p) for p in ship_points]
    batch_size = 5000  # [influxdb] batch_size's default
    batches = ["\n".join(lines[i : i + batch_size]).encode() for i in range(0, len(lines), batch_size)]
    influx = whole.Influx(directory)
    try:
        store = os.path.join(directory, "ship-store")
        config = whole.write_config(
            os.path.join(directory, "ship.toml"),
            f"[agent]\nhost = '{whole.HOST}'\nstate_dir = '{directory}/ship-state'\n"
            f"[store]\ndir = '{store}'\n[influxdb]\nenabled = true\nurl = '{influx.server.url}'\n"
            "bucket = 'bench'\ntoken_env = 'DNFSMON_BENCH_NO_TOKEN'\n"
            # The same bounds as the peer's: 60 s a request (whole.Influx.post) and no bound on the
            # whole ship. Under the defaults (10 s, 40 s) a loaded machine's InfluxDB, slower than
            # 2.5 k points/s, stops the ship at deadline_s with exit 4, as a cron run should; this row
            # measures the rate, not the cron run's bound.
            "timeout_s = 60\ndeadline_s = 3600\n",
        )

        def our_ship() -> float:
            whole.copy_tree(full_store, store)
            return whole.process_wall(whole.dnfsmon(config, "ship"))

        ship = Comparison(
            f"`dnfsmon ship`, {whole.SHIP_POINTS // 1000}k points to InfluxDB 1.8, wall time",
            "raw HTTP POST",
            "≥ 0.8× the raw rate (≤ 1.25× its time)",
            1.25,
        )
        ship.run(pairs, our_ship, lambda: whole.wall(lambda: influx.post(batches)))
        comparisons.append(ship)
        ours_rate = whole.SHIP_POINTS / statistics.median(ship.ours)
        raw_rate = whole.SHIP_POINTS / statistics.median(ship.theirs)
        notes.append(
            f"`dnfsmon ship`: {ours_rate / 1000:.0f} k points/s, the raw POST {raw_rate / 1000:.0f} k points/s "
            f"(medians; {statistics.median(ship.theirs) / statistics.median(ship.ours):.2f}× its rate). "
            "dnfsmon ships with its defaults (5000 points a request, gzip) but the peer's time bounds "
            "(timeout_s 60, deadline_s 3600); the peer sends the same requests uncompressed."
        )
    finally:
        influx.stop()

    # (c) `dnfsmon show` on a full default store (256 MiB of 1000-mount samples).
    show_store = os.path.join(directory, "show-store")
    whole.fill_store(
        show_store, sample_points, whole.DEFAULT_STORE_BYTES, until_bytes=whole.DEFAULT_STORE_BYTES * 9 // 10
    )
    show_config = whole.write_config(
        os.path.join(directory, "show.toml"),
        f"[agent]\nstate_dir = '{directory}/show-state'\n[store]\ndir = '{show_store}'\n",
    )
    stored = sum(os.path.getsize(p) for _, p in Store(show_store, whole.DEFAULT_STORE_BYTES).segments())
    show = Comparison(
        f"`dnfsmon show`, full default store ({stored / 2**20:.0f} MiB, {len(sample_points)} series), CPU",
        "`python -c pass`",
        "≤ 300 ms",
        None,
        absolute=300,
    )
    show.run(
        pairs,
        lambda: whole.process_cost(whole.dnfsmon(show_config, "show"))[0],
        lambda: whole.process_cost([sys.executable, "-c", "pass"])[0],
    )
    comparisons.append(show)
    shutil.rmtree(show_store)

    # (d) The state file per sample at 1000 mounts, and (f) peak RSS of that run.
    from dnfsmon.state import MAX_JOURNAL_RECORDS

    written: dict[str, float] = {}
    for label, fraction in (("all active", 1.0), ("10 % active", 0.1)):
        old, new = inputs.make_pair(os.path.join(directory, f"state-{fraction}"), 1000, fraction)
        state_dir = os.path.join(directory, f"state-{fraction}", "state")
        configs = {}
        for name, root in (("old", old), ("new", new)):
            configs[name] = whole.write_config(
                os.path.join(directory, f"state-{fraction}-{name}.toml"),
                f"[agent]\nhost = '{whole.HOST}'\nstate_dir = '{state_dir}'\n[store]\ndir = '{directory}/state-store'\n"
                f"[host]\nproc_root = '{root}/capture/proc'\nsources = ['mountstats']\n",
            )
        subprocess.run(whole.dnfsmon(configs["old"], "collect"), check=True, capture_output=True)
        baseline = os.path.join(directory, f"state-{fraction}", "baseline")
        whole.copy_tree(state_dir, baseline)
        subprocess.run(whole.dnfsmon(configs["new"], "collect"), check=True, capture_output=True)
        # A full run covers a whole journal cycle (the snapshot that ends it included); a quick run 12 samples.
        readings = 13 if quick else MAX_JOURNAL_RECORDS + 2
        written[label] = whole.state_bytes_per_sample(
            os.path.join(directory, f"state-written-{fraction}"), fraction, readings
        )
        if fraction == 1.0:
            load = Comparison(
                "state at 1000 mounts, a snapshot alone: load it to samples, CPU",
                "read + JSON-decode it",
                "",
                None,
            )
            load.run(
                pairs,
                lambda b=baseline: cpu_of_worker(ours("state-load", b, f"host:{whole.HOST}", str(REPEATS))),
                lambda b=baseline: cpu_of_worker(ours("state-floor", b, f"host:{whole.HOST}", str(REPEATS))),
            )
            comparisons.append(load)
            rss_ours: list[float] = []
            later = whole.LaterReading(new, whole.baseline_clock(baseline))
            # Checked once: the measured run makes the sample's points (no mount re-baselined).
            whole.copy_tree(baseline, state_dir)
            later.ready()
            checked = subprocess.run(whole.dnfsmon(configs["new"], "collect"), capture_output=True, text=True)
            if checked.returncode not in (0, 3) or "baselined" in checked.stderr:
                raise SystemExit(f"the 1000-mount sample after its baseline made no points: {checked.stderr}")

            def sample_at_1000(
                baseline: str = baseline, state_dir: str = state_dir, config: str = configs["new"]
            ) -> float:
                whole.copy_tree(baseline, state_dir)
                later.ready()  # noqa: B023 (run before the loop moves on)
                cpu, peak = whole.process_cost(whole.dnfsmon(config, "collect"))
                rss_ours.append(peak)  # noqa: B023 (run before the loop moves on)
                return cpu

            rss_peer: list[float] = []

            def floor() -> float:
                cpu, peak = whole.process_cost([sys.executable, "-c", "pass"])
                rss_peer.append(peak)  # noqa: B023 (run before the loop moves on)
                return cpu

            run_1000 = Comparison(
                "`dnfsmon collect`, 1000 mounts (mountstats), one sample, CPU", "`python -c pass`", "", None
            )
            run_1000.run(pairs, sample_at_1000, floor)
            comparisons.append(run_1000)
            memory = Comparison(
                "peak RSS at 1000 mounts (`dnfsmon collect`, one sample after a baseline)",
                "`python -c pass`",
                "≤ 60 MiB",
                None,
                unit="MiB",
                scale=1,
                absolute=60,
            )
            memory.ours, memory.theirs = rss_ours, rss_peer
            memory.ratios = [a / b for a, b in zip(rss_ours, rss_peer)]
            print(memory.line(), flush=True)
            comparisons.append(memory)
    state_bytes = Comparison(
        "state file written (and fsynced) per sample, 1000 mounts, 10 % active",
        "same, all active",
        "proportional to change (≤ 0.2×)",
        0.2,
        unit="MB",
        scale=1e-6,
    )
    # What a run's start loads in steady state: a snapshot and its journal (10 % active, after the sequence).
    steady = os.path.join(directory, "state-written-0.1", "state")
    with open(whole.state_file(steady)[: -len(".json")] + ".journal", "rb") as journal:
        records = len(journal.readlines())
    journal_load = Comparison(
        f"state at 1000 mounts, snapshot + {records} journal records (10 % active): load it to samples, CPU",
        "read + JSON-decode both",
        "",
        None,
    )
    journal_load.run(
        pairs,
        lambda: cpu_of_worker(ours("state-load", steady, f"host:{whole.HOST}", str(REPEATS))),
        lambda: cpu_of_worker(ours("state-floor", steady, f"host:{whole.HOST}", str(REPEATS))),
    )
    comparisons.append(journal_load)
    state_bytes.ours, state_bytes.theirs = [written["10 % active"]], [written["all active"]]
    state_bytes.ratios = [written["10 % active"] / written["all active"]]
    print(state_bytes.line(), flush=True)
    comparisons.append(state_bytes)
    notes.append(
        f"State file per sample at 1000 mounts: {written['all active'] / 1e6:.1f} MB all active, "
        f"{written['10 % active'] / 1e6:.1f} MB with 10 % of mounts active (one `dnfsmon collect` per reading after a baseline, over a whole journal cycle in a full run, 12 samples in a quick one: the journal's growth and every snapshot rewritten, averaged; measured once: the sizes do not vary)."
    )

    # (e) One cron run as the README installs it: 6 samples, 5 host sources, this host's /proc.
    cron_config = whole.write_config(
        os.path.join(directory, "cron.toml"),
        f"[agent]\nstate_dir = '{directory}/cron-state'\n[store]\ndir = '{directory}/cron-store'\n"
        f"[host]\nsources = {whole.CRON_SOURCES!r}\n",
    )
    cron_argv = whole.dnfsmon(cron_config, "collect", "--count", "6", "--interval", "1")
    whole.process_cost(cron_argv)  # the state a cron run finds: the previous run's
    cron_rss: list[float] = []
    pass_rss: list[float] = []

    def cron_run() -> float:
        cpu, peak = whole.process_cost(cron_argv)
        cron_rss.append(peak)
        return cpu

    def python_pass() -> float:
        cpu, peak = whole.process_cost([sys.executable, "-c", "pass"])
        pass_rss.append(peak)
        return cpu

    cron = Comparison(
        "one cron run: `collect --count 6`, 5 host sources (this host), CPU",
        "`python -c pass`",
        "≤ 120 ms",
        None,
        absolute=120,
    )
    cron.run(pairs, cron_run, python_pass)
    comparisons.append(cron)
    cron_memory = Comparison(
        "one cron run, peak RSS", "`python -c pass`", "≤ 30 MiB", None, unit="MiB", scale=1, absolute=30
    )
    cron_memory.ours, cron_memory.theirs = cron_rss, pass_rss
    cron_memory.ratios = [a / b for a, b in zip(cron_rss, pass_rss)]
    print(cron_memory.line(), flush=True)
    comparisons.append(cron_memory)
    notes.append(
        "The cron run samples 1 s apart instead of the README's 9.5 s: sleeping costs no CPU, and the bench "
        "would otherwise spend a minute a run waiting."
    )

    # (g) What the imports cost: `import dnfsmon.cli` (every command pays it), and each command's own
    # imports on top (its module under dnfsmon/commands/ and what that imports in its functions: bench/whole.py).
    def python_floor() -> float:
        return whole.process_cost([sys.executable, "-c", "pass"])[0]

    for command, modules in [("every command", []), *sorted(whole.command_imports().items())]:
        label = "`import dnfsmon.cli`" if not modules else f"`dnfsmon {command}`'s imports ({', '.join(modules)})"
        imports = Comparison(f"{label}, CPU", "`python -c pass`", "", None)
        imports.run(pairs, lambda m=modules: whole.process_cost(whole.import_argv(m))[0], python_floor)
        comparisons.append(imports)
    return notes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="3 pairs and mounts up to 100 only (a first look)")
    parser.add_argument("--pairs", type=int, default=5, help="paired runs per comparison (default 5)")
    parser.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md and the plot alone")
    parser.add_argument(
        "--before", metavar="REV", help="also compare with the agent of git revision REV (e.g. main), paired"
    )
    args = parser.parse_args()
    pairs = 3 if args.quick else args.pairs
    counts = [1, 10, 100] if args.quick else [1, 10, 100, 1000]
    largest = counts[-1]
    started = time.time()
    header = machine()
    print(header)
    comparisons: list[Comparison] = []
    scaling: dict[str, dict[int, float]] = {
        "dnfsmon parse": {},
        "procfs parse": {},
        "dnfsmon parse+diff+fields, all active": {},
        "procfs parse+diff, all active": {},
        "dnfsmon parse+diff+fields, 10% active": {},
    }
    table = (
        "| work | dnfsmon | peer (same run) | ratio min / median / max | target | verdict |\n|---|---|---|---|---|---|"
    )
    print(table)
    byte_compile(os.path.join(os.path.dirname(HERE), "agent"))
    with tempfile.TemporaryDirectory(prefix="dnfsmon-bench-") as directory:
        procfs = build_procfs(directory)
        for count in counts:
            all_old, all_new = inputs.make_pair(os.path.join(directory, f"{count}-all"), count, 1.0)
            few_old, few_new = inputs.make_pair(os.path.join(directory, f"{count}-few"), count, 0.1)
            at_target = count == 1000
            mounts = f"{count} mount" + ("" if count == 1 else "s")

            parse = Comparison(
                f"mountstats parse, {mounts}",
                "procfs",
                "≤ 2× procfs" if at_target else "",
                2 if at_target else None,
            )
            parse.run(
                pairs,
                lambda old=all_old: cpu_of_worker(ours("parse", old, str(REPEATS))),
                lambda old=all_old: cpu_of_worker([procfs, "parse", old, str(REPEATS)]),
            )
            comparisons.append(parse)
            scaling["dnfsmon parse"][count] = statistics.median(parse.ours)
            scaling["procfs parse"][count] = statistics.median(parse.theirs)

            for label, old, new, target, limit, curve in (
                ("all active", all_old, all_new, "≤ 3× procfs", 3.0, "all active"),
                ("10 % active", few_old, few_new, "≤ 1× procfs", 1.0, "10% active"),
            ):
                both = Comparison(
                    f"parse both + diff + fields, {mounts}, {label}",
                    "procfs",
                    target if at_target else "",
                    limit if at_target else None,
                )
                both.run(
                    pairs,
                    lambda old=old, new=new: cpu_of_worker(ours("diff", old, new, str(REPEATS))),
                    lambda old=old, new=new: cpu_of_worker([procfs, "diff", old, new, str(REPEATS)]),
                )
                comparisons.append(both)
                scaling[f"dnfsmon parse+diff+fields, {curve}"][count] = statistics.median(both.ours)
                if curve == "all active":
                    scaling["procfs parse+diff, all active"][count] = statistics.median(both.theirs)

        # Whole processes: what a user runs.
        old, new = inputs.make_pair(os.path.join(directory, f"{largest}-iostat"), largest, 1.0)
        iostat = Comparison(
            f"`dnfsmon diff` vs `mountstats iostat`, {largest} mounts, whole process",
            "nfs-utils",
            "≤ 0.5× (2× faster)",
            0.5 if largest == 1000 else None,
        )
        rss: list[float] = []

        def our_diff() -> float:
            cpu, peak = whole.process_cost(
                [sys.executable, "-m", "dnfsmon", "diff", f"{old}/capture", f"{new}/capture", "--format", "lp"]
            )
            rss.append(peak)
            return cpu

        iostat.run(
            pairs,
            our_diff,
            lambda: whole.process_cost(
                ["mountstats", "iostat", "-f", f"{new}/1/mountstats", "-S", f"{old}/1/mountstats"]
            )[0],
        )
        comparisons.append(iostat)

        floor = Comparison("`dnfsmon collect` (this host), one sample", "`python -c pass`", "", None)
        cost_commands = collect_cost.commands(directory)
        collect_rss: list[float] = []

        def one_collect() -> float:
            cpu, peak = whole.process_cost(cost_commands["dnfsmon collect"])
            collect_rss.append(peak)
            return cpu

        floor.run(pairs, one_collect, lambda: whole.process_cost([sys.executable, "-c", "pass"])[0])
        comparisons.append(floor)
        for name in ("nicstat", "python+psutil"):
            peer = Comparison("`dnfsmon collect` (this host), one sample", f"`{name}`", "", None)
            peer.run(
                pairs,
                lambda: whole.process_cost(cost_commands["dnfsmon collect"])[0],
                lambda n=name: whole.process_cost(cost_commands[n])[0],
            )
            comparisons.append(peer)

        notes = run_whole(directory, pairs, comparisons, args.quick)

        changes: list[Comparison] = []
        if args.before:
            before = Before(archived_agent(args.before, directory))
            old, new = inputs.make_pair(os.path.join(directory, f"{largest}-all"), largest, 1.0)
            few_old, few_new = inputs.make_pair(os.path.join(directory, f"{largest}-few"), largest, 0.1)
            label = f"`{args.before}`"
            for name, argv in (
                (f"parse, {largest} mounts", ours("parse", old, str(REPEATS))),
                (f"parse both + diff + fields, {largest} mounts, all active", ours("diff", old, new, str(REPEATS))),
                (
                    f"parse both + diff + fields, {largest} mounts, 10 % active",
                    ours("diff", few_old, few_new, str(REPEATS)),
                ),
            ):
                change = Comparison(name, label, "", None)
                change.run(pairs, lambda argv=argv: cpu_of_worker(argv), lambda argv=argv: before.cpu_of_worker(argv))
                changes.append(change)
            whole_argv = [sys.executable, "-m", "dnfsmon", "diff", f"{old}/capture", f"{new}/capture", "--format", "lp"]
            for name, argv in (
                (f"`dnfsmon diff`, {largest} mounts, whole process", whole_argv),
                ("`dnfsmon collect` (this host), one sample", cost_commands["dnfsmon collect"]),
            ):
                cpu = Comparison(name + ", CPU", label, "", None)
                rss_now: list[float] = []
                rss_before: list[float] = []

                def now(argv: list[str] = argv, into: list[float] = rss_now) -> float:
                    cpu_s, peak = whole.process_cost(argv)
                    into.append(peak)
                    return cpu_s

                def then(argv: list[str] = argv, into: list[float] = rss_before) -> float:
                    cpu_s, peak = before.whole.process_cost(argv)
                    into.append(peak)
                    return cpu_s

                cpu.run(pairs, now, then)
                changes.append(cpu)
                memory = Comparison(name + ", peak RSS", label, "", None, unit="MiB", scale=1)
                memory.ours, memory.theirs = rss_now, rss_before
                memory.ratios = [a / b for a, b in zip(rss_now, rss_before)]
                print(memory.line())
                changes.append(memory)

    lines = [
        f"Run of {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
        f"{'quick (3 pairs)' if args.quick else f'{pairs} pairs'}, {time.time() - started:.0f} s.",
        "",
        f"Machine: {header}.",
        "",
        "Absolute figures are CPU time on a shared, loaded machine (other work ran beside the bench); "
        "compare the ratios, measured in the same run. The agent's modules were byte-compiled first, as an "
        "installed wheel's are.",
        "",
        table,
        *[c.line() for c in comparisons],
        "",
        f"Peak RSS: `dnfsmon diff` at {largest} mounts {max(rss):.1f} MiB; "
        f"`dnfsmon collect` on this host {max(collect_rss):.1f} MiB.",
        "",
        *notes,
    ]
    if changes:
        lines += [
            "",
            f"This tree against `{args.before}` (its agent/ extracted with git archive), paired the same way:",
            "",
            "| work | now | before | ratio now / before, min / median / max | | |\n|---|---|---|---|---|---|",
            *[c.line() for c in changes],
        ]
    text = "\n".join(lines)
    print(
        f"Peak RSS: `dnfsmon diff` at {largest} mounts {max(rss):.1f} MiB; `dnfsmon collect` {max(collect_rss):.1f} MiB"
    )
    if not args.no_write:
        write_results(text)
        plot(scaling)
        print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
