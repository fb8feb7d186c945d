"""Host pressure: CPU, run queue, memory, swapping, major faults and PSI.

When Oracle waits far longer than the round trip to the filer, the time may
be spent on the database host itself: processes waiting for a CPU, or for
pages swapped out. Everything is parsed here from the files' text, so a
capture replays exactly what the live host gave:

- the cpu line of /proc/stat (show_stat(), fs/proc/stat.c): user nice system
  idle iowait irq softirq steal [guest guest_nice] in USER_HZ ticks; the cpuN
  lines (online CPUs); procs_running / procs_blocked: the run queue and the
  tasks in uninterruptible sleep, right now;
- MemTotal and MemAvailable of /proc/meminfo (kB). Kernels before 3.14 have no
  MemAvailable: no available-memory fields then, not an estimate;
- pswpin, pswpout, pgmajfault of /proc/vmstat (mm/vmstat.c), in pages and
  faults, cumulative since boot;
- /proc/pressure/{cpu,memory,io} (PSI, kernel 4.20+,
  Documentation/accounting/psi.rst): "some"/"full" lines whose total= is the
  cumulative stall time in microseconds. Absent files mean the kernel has no
  PSI (or it is disabled with psi=0): no PSI fields, not zeros.

The CPU times are a sample of their own, apart from the other counters: the
kernel's Documentation/filesystems/proc.rst says iowait "will decrease in
certain conditions", and a counter going backwards drops its key's whole
interval (dnfsmon.rates). Kept apart, such a decrease costs that interval's
CPU percentages only; PSI, swapping, faults and the run queue still publish.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .. import rates
from ..points import Point, epoch_ns
from ..rates import DiffResult, Sample
from .base import (
    HostInputs,
    HostSource,
    Parsed,
    ParseError,
    Raw,
    boot_identity,
    is_unsigned,
    read_host_files,
)

if TYPE_CHECKING:
    from ..config import Config

NAME = "pressure"
MEASUREMENT = "dnfsmon_host_pressure"
MEASUREMENTS = (MEASUREMENT,)
STAT = "proc/stat"
MEMINFO = "proc/meminfo"
VMSTAT = "proc/vmstat"
PSI_RESOURCES = ("cpu", "memory", "io")
PSI_FILES = {resource: f"proc/pressure/{resource}" for resource in PSI_RESOURCES}
# The fields of the cpu line of /proc/stat that count CPU time, in the kernel's order
# (show_stat, fs/proc/stat.c). guest and guest_nice follow them and are already counted
# in user and nice (account_guest_time, kernel/sched/cputime.c): not read.
CPU_STATES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
# Kernels before 2.6.11 print no steal: the first seven are the least a cpu line has.
CPU_MIN_STATES = 7
# /proc/stat counts in USER_HZ ticks, 100 per second on every architecture Linux
# exports to user space this way (USER_HZ, include/asm-generic/param.h).
USER_HZ = 100
VMSTAT_COUNTERS = ("pswpin", "pswpout", "pgmajfault")
# The key tag of the CPU-time sample, which is not published (the point has the host tag only).
PART = "part"


def read(inputs: HostInputs) -> Raw:
    return read_host_files(inputs, [STAT, MEMINFO, VMSTAT, *PSI_FILES.values()])


def parse_stat(text: str, path: str = STAT) -> tuple[dict[str, int], dict[str, int]]:
    """(CPU times in ms by state, {cpus, procs_running, procs_blocked}) of /proc/stat.

    ParseError when the cpu line is missing or malformed: without it there are no CPU figures.
    """
    times: Optional[dict[str, int]] = None
    extras = {"cpus": 0}
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split()
        if not words:
            continue
        if words[0] == "cpu":
            values = words[1 : 1 + len(CPU_STATES)]
            if len(values) < CPU_MIN_STATES or not is_unsigned("".join(values)):
                raise ParseError(path, f"cpu line needs at least {CPU_MIN_STATES} unsigned tick counts", number, line)
            times = {state: int(value) * 1000 // USER_HZ for state, value in zip(CPU_STATES, values)}
        elif words[0].startswith("cpu") and words[0][3:].isdigit():
            extras["cpus"] += 1
        elif words[0] in ("procs_running", "procs_blocked") and len(words) == 2 and is_unsigned(words[1]):
            extras[words[0]] = int(words[1])
    if times is None:
        raise ParseError(path, "no 'cpu' line")
    return times, extras


def parse_meminfo(text: str) -> dict[str, int]:
    """MemTotal and MemAvailable of /proc/meminfo, in bytes (the file prints kB); absent when not printed."""
    found = {}
    for line in text.splitlines():
        words = line.split()
        if (
            len(words) == 3
            and words[0] in ("MemTotal:", "MemAvailable:")
            and words[2] == "kB"
            and is_unsigned(words[1])
        ):
            found[words[0][:-1]] = int(words[1]) * 1024
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
    """{"some": total_us, "full": total_us} of one /proc/pressure file.

    Lines of another kind are ignored, as procfs does: the kernel has added
    lines to these files before (/proc/pressure/irq has only "full"), and a new
    kind must not cost the two that are read. A "some" or "full" line without a
    total= is refused.
    """
    found = {}
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split()
        if not words or words[0] not in ("some", "full"):
            continue
        total = [w[len("total=") :] for w in words[1:] if w.startswith("total=")]
        if len(total) != 1 or not is_unsigned(total[0]):
            raise ParseError(path, "expected 'some|full avg10=.. avg60=.. avg300=.. total=N'", number, line)
        found[words[0]] = int(total[0])
    return found


def samples(raw: Raw, host: str) -> tuple[list[Sample], list[ParseError]]:
    """Two samples: the CPU times (key tag part=cpu), and everything else."""
    times, extras = parse_stat(raw.text(STAT))
    memory = parse_meminfo(raw.text(MEMINFO))
    counters = parse_vmstat(raw.files.get(VMSTAT) or "")
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
    gauges: dict[str, rates.Gauge] = dict(extras)
    if "MemTotal" in memory:
        gauges["mem_total_bytes"] = memory["MemTotal"]
    if "MemAvailable" in memory:
        gauges["mem_available_bytes"] = memory["MemAvailable"]
    identity = boot_identity(raw)
    key = (("host", host),)
    cpu_counters = {f"cpu_{state}_ms": value for state, value in times.items()}
    return [
        Sample(MEASUREMENT, key, raw.time, raw.wall_time, counters, gauges, identity),
        Sample(MEASUREMENT, (*key, (PART, "cpu")), raw.time, raw.wall_time, cpu_counters, None, identity),
    ], problems


def _number(value: Optional[rates.Gauge]) -> Optional[float]:
    return None if isinstance(value, (str, bool)) or value is None else float(value)


def cpu_fields(interval: rates.Interval) -> dict[str, rates.Gauge]:
    """The CPU percentages of the CPU-time sample's interval."""
    d = interval.deltas
    out: dict[str, Optional[rates.Gauge]] = {}
    if all(f"cpu_{state}_ms" in d for state in CPU_STATES[:CPU_MIN_STATES]):
        total = sum(d.get(f"cpu_{state}_ms", 0) for state in CPU_STATES)
        idle = d["cpu_idle_ms"] + d["cpu_iowait_ms"]
        out["cpu_busy_pct"] = rates.percent(total - idle, total)
        out["cpu_iowait_pct"] = rates.percent(d["cpu_iowait_ms"], total)
        out["cpu_steal_pct"] = rates.percent(d.get("cpu_steal_ms"), total)
    return {name: value for name, value in out.items() if value is not None}


def fields(interval: rates.Interval) -> dict[str, rates.Gauge]:
    """Every published field but the CPU percentages, from the main sample's interval."""
    d, g = interval.deltas, interval.current.gauges
    out: dict[str, Optional[rates.Gauge]] = {}
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


def publish(result: DiffResult, current: list[Sample]) -> list[Point]:
    """One point per host: the main interval's fields and the CPU interval's, whichever exist."""
    values: dict[str, rates.Gauge] = {}
    stamped: Optional[Sample] = None
    for interval in result.intervals:
        if dict(interval.current.key).get(PART) == "cpu":
            values.update(cpu_fields(interval))
        else:
            values.update(fields(interval))
        stamped = interval.current
    if stamped is None or not values:
        return []
    tags = tuple(pair for pair in stamped.key if pair[0] != PART)
    return [Point(MEASUREMENT, tags, values, epoch_ns(stamped.wall_time))]


class PressureSource(HostSource):
    """CPU, memory, swapping and PSI; no option."""

    name = NAME
    measurements = MEASUREMENTS

    def read(self, inputs: HostInputs) -> Raw:
        return read(inputs)

    def parse(self, raw: Raw, host: str) -> Parsed:
        found, problems = samples(raw, host)
        return Parsed(found, problems)

    def publish(self, result: DiffResult, current: list[Sample]) -> list[Point]:
        return publish(result, current)


SOURCE = PressureSource()


def build(config: Config) -> PressureSource:
    """This source has no option: the one instance serves every run."""
    return SOURCE
