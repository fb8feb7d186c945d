"""Host pressure: CPU, run queue, memory, swapping, major faults and PSI.

When Oracle waits far longer than the round trip to the filer, the time may
be spent on the database host itself: processes waiting for a CPU, or for
pages swapped out. psutil (the agent's host-metrics library) parses the CPU
times of /proc/stat and the memory figures of /proc/meminfo, including its
estimate of available memory on kernels older than 3.14 that lack
MemAvailable. psutil reads /proc under psutil.PROCFS_PATH, so the same code
runs on captured text: `samples` writes the captured files to a private
temporary directory and points PROCFS_PATH there for the duration of the
call. Its import costs about 0.04 s of CPU and 4 MiB (measured with
time.process_time and ru_maxrss around `import psutil`, psutil 7.2,
Python 3.11).

What psutil does not expose is parsed here from the same files:
- procs_running / procs_blocked of /proc/stat (show_stat(), fs/proc/stat.c):
  the run queue and the tasks in uninterruptible sleep, right now;
- pswpin, pswpout, pgmajfault of /proc/vmstat (mm/vmstat.c), in pages and
  faults, cumulative since boot (psutil turns pswpin into bytes with the page
  size of the machine running it, which is wrong for a replayed capture);
- /proc/pressure/{cpu,memory,io} (PSI, kernel 4.20+,
  Documentation/accounting/psi.rst): "some"/"full" lines whose total= is the
  cumulative stall time in microseconds. Absent files mean the kernel has no
  PSI (or it is disabled with psi=0): no PSI fields, not zeros.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Optional

from .. import rates
from ..rates import Sample
from .base import (
    HostInputs,
    ParseError,
    Raw,
    boot_identity,
    is_unsigned,
    per_key_host_source,
    read_host_files,
)

NAME = "pressure"
MEASUREMENT = "dnfsmon_host_pressure"
MEASUREMENTS = (MEASUREMENT,)
STAT = "proc/stat"
MEMINFO = "proc/meminfo"
VMSTAT = "proc/vmstat"
PSI_RESOURCES = ("cpu", "memory", "io")
PSI_FILES = {resource: f"proc/pressure/{resource}" for resource in PSI_RESOURCES}
# The files psutil reads for cpu_times() and virtual_memory() (psutil/_pslinux.py).
PSUTIL_FILES = (STAT, MEMINFO)
# psutil's cpu_times() fields that count CPU time (guest time is already in user and nice).
CPU_STATES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
VMSTAT_COUNTERS = ("pswpin", "pswpout", "pgmajfault")


def read(inputs: HostInputs) -> Raw:
    return read_host_files(inputs, [STAT, MEMINFO, VMSTAT, *PSI_FILES.values()])


@contextmanager
def procfs(files: Mapping[str, Optional[str]]) -> Iterator[Any]:
    """psutil reading the given proc/ files (captured text) instead of the live /proc."""
    import psutil  # imported only when this source runs

    directory = tempfile.mkdtemp(prefix="dnfsmon-procfs-")  # mode 0700: private to this run
    saved = psutil.PROCFS_PATH
    try:
        for relative, text in files.items():
            if text is None or not relative.startswith("proc/"):
                continue
            path = os.path.join(directory, relative[len("proc/") :])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "x", encoding="utf-8") as f:
                f.write(text)
        psutil.PROCFS_PATH = directory
        yield psutil
    finally:
        psutil.PROCFS_PATH = saved
        shutil.rmtree(directory, ignore_errors=True)


def parse_stat_extras(text: str) -> dict[str, int]:
    """procs_running, procs_blocked and the number of CPUs (cpuN lines) of /proc/stat."""
    found = {"cpus": 0}
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0].startswith("cpu") and words[0][3:].isdigit():
            found["cpus"] += 1
        elif words[0] in ("procs_running", "procs_blocked") and len(words) == 2 and is_unsigned(words[1]):
            found[words[0]] = int(words[1])
    return found


def parse_vmstat(text: str) -> dict[str, int]:
    """The VMSTAT_COUNTERS of /proc/vmstat ("name value" lines)."""
    found = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) == 2 and words[0] in VMSTAT_COUNTERS and is_unsigned(words[1]):
            found[words[0]] = int(words[1])
    return found


def parse_psi(text: str, path: str) -> dict[str, int]:
    """{"some": total_us, "full": total_us} of one /proc/pressure file."""
    found = {}
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split()
        if not words:
            continue
        total = [w[len("total=") :] for w in words[1:] if w.startswith("total=")]
        if words[0] not in ("some", "full") or len(total) != 1 or not is_unsigned(total[0]):
            raise ParseError(path, "expected 'some|full avg10=.. avg60=.. avg300=.. total=N'", number, line)
        found[words[0]] = int(total[0])
    return found


def samples(raw: Raw, host: str) -> tuple[list[Sample], list[ParseError]]:
    stat, meminfo = raw.text(STAT), raw.text(MEMINFO)
    with procfs({STAT: stat, MEMINFO: meminfo}) as psutil:
        try:
            cpu = psutil.cpu_times()
            memory = psutil.virtual_memory()
        except (OSError, ValueError, IndexError) as error:
            raise ParseError(STAT, f"psutil could not read /proc/stat and /proc/meminfo: {error}") from None
    # Integer milliseconds: counters are integers, and /proc/stat counts in 10 ms ticks.
    counters = {f"cpu_{state}_ms": round(getattr(cpu, state, 0.0) * 1000) for state in CPU_STATES}
    counters.update(parse_vmstat(raw.files.get(VMSTAT) or ""))
    problems: list[ParseError] = []
    for resource, path in PSI_FILES.items():
        text = raw.files.get(path)
        if text is None:
            continue
        try:
            for kind, total in parse_psi(text, path).items():
                counters[f"psi_{resource}_{kind}_us"] = total
        except ParseError as error:
            problems.append(error)
    gauges: dict[str, rates.Gauge] = dict(parse_stat_extras(stat))
    gauges["mem_total_bytes"] = int(memory.total)
    gauges["mem_available_bytes"] = int(memory.available)
    sample = Sample(MEASUREMENT, (("host", host),), raw.time, raw.wall_time, counters, gauges, boot_identity(raw))
    return [sample], problems


def _number(value: Optional[rates.Gauge]) -> Optional[float]:
    return None if isinstance(value, (str, bool)) or value is None else float(value)


def fields(interval: rates.Interval) -> dict[str, rates.Gauge]:
    d, g = interval.deltas, interval.current.gauges
    out: dict[str, Optional[rates.Gauge]] = {}
    if all(f"cpu_{state}_ms" in d for state in CPU_STATES):
        total = sum(d[f"cpu_{state}_ms"] for state in CPU_STATES)
        idle = d["cpu_idle_ms"] + d["cpu_iowait_ms"]
        out["cpu_busy_pct"] = rates.percent(total - idle, total)
        out["cpu_iowait_pct"] = rates.percent(d["cpu_iowait_ms"], total)
        out["cpu_steal_pct"] = rates.percent(d["cpu_steal_ms"], total)
    for name in ("procs_running", "procs_blocked", "cpus"):
        if name in g:
            out[name] = g[name]
    out["run_queue_per_cpu"] = rates.ratio(_number(g.get("procs_running")), _number(g.get("cpus")))
    out["mem_available_bytes"] = g.get("mem_available_bytes")
    out["mem_available_pct"] = rates.percent(_number(g.get("mem_available_bytes")), _number(g.get("mem_total_bytes")))
    out["swap_in_pages_per_s"] = interval.rate("pswpin")
    out["swap_out_pages_per_s"] = interval.rate("pswpout")
    out["major_faults_per_s"] = interval.rate("pgmajfault")
    for resource in PSI_RESOURCES:
        # System-wide "full" CPU pressure is always 0 (psi.rst): not published.
        for kind in ("some",) if resource == "cpu" else ("some", "full"):
            stalled = d.get(f"psi_{resource}_{kind}_us")
            out[f"psi_{resource}_{kind}_pct"] = (
                rates.percent(stalled, interval.dt * 1e6) if stalled is not None else None
            )
    return {name: value for name, value in out.items() if value is not None}


SOURCE = per_key_host_source(NAME, MEASUREMENTS, read, samples, fields)
