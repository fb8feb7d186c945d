"""The agent's main job: read sources, diff against the previous sample, store points.

`compute` is pure (raw inputs + previous samples -> points + new samples); it
is what both `dnfsmon collect` (live files) and `dnfsmon diff` (captures)
run, so an offline diff shows exactly what collection would have published.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Dict, List, Mapping

from . import rates
from .config import Config
from .files import remove_stale_temps
from .points import Point
from .rates import Sample
from .sources import HOST_SOURCES, ParseError, Raw, HostInputs
from .state import StateFile
from .store import Store, StoreCounts

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    points: List[Point] = field(default_factory=list)
    # Previous samples updated with this run's: the next run's `previous`.
    samples: Dict[str, Sample] = field(default_factory=dict)
    # Source name -> why it produced nothing this time.
    failures: Dict[str, str] = field(default_factory=dict)
    problems: List[ParseError] = field(default_factory=list)
    skips: List[rates.Skip] = field(default_factory=list)
    sources_ok: int = 0


def to_point(interval: rates.Interval, values: Mapping[str, rates.Gauge]) -> Point:
    sample = interval.current
    return Point(sample.measurement, sample.key, dict(values), int(round(sample.wall_time * 1e9)))


def compute(raws: Mapping[str, Raw], failures: Mapping[str, str], host: str, previous: Mapping[str, Sample]) -> Outcome:
    """Points from one reading of every source, given the previous samples."""
    outcome = Outcome(samples=dict(previous), failures=dict(failures))
    for name, raw in raws.items():
        module = HOST_SOURCES[name]
        try:
            samples, problems = module.samples(raw, host)
        except ParseError as error:
            outcome.failures[name] = str(error)
            continue
        outcome.sources_ok += 1
        outcome.problems.extend(problems)
        result = rates.diff_all(previous, samples)
        outcome.skips.extend(result.skips)
        if hasattr(module, "aggregate"):
            outcome.points.extend(module.aggregate(result, samples))
        else:
            for interval in result.intervals:
                values = module.fields(interval)
                if values:
                    outcome.points.append(to_point(interval, values))
        # Keys of a source that read fine but are gone now (an interface
        # removed) leave the state; a failed source keeps its previous samples.
        for key in [k for k, s in outcome.samples.items() if s.measurement in module.MEASUREMENTS]:
            del outcome.samples[key]
        outcome.samples.update((s.state_key, s) for s in samples)
    return outcome


def read_live(config: Config) -> tuple:
    """(raws, failures) of every configured source, read from the live system."""
    inputs = HostInputs(proc=config.proc_root, sys=config.sys_root, nfs_ports=tuple(config.nfs_ports))
    raws: Dict[str, Raw] = {}
    failures: Dict[str, str] = {}
    for name in config.host_sources:
        try:
            raws[name] = HOST_SOURCES[name].read(inputs)
        except Exception as error:  # one broken source must not stop the others
            failures[name] = f"{error.__class__.__name__}: {error}"
    return raws, failures


def report(outcome: Outcome) -> None:
    """Log what a sample could not do; each reason once, with the input named."""
    for name, reason in sorted(outcome.failures.items()):
        log.error("source %s failed: %s", name, reason)
    for problem in outcome.problems:
        log.warning("skipped malformed input: %s", problem)
    for skip in outcome.skips:
        (log.debug if skip.baseline else log.info)("%s: no point: %s", skip.current.state_key, skip.reason)


def agent_point(config: Config, outcome: Outcome, counts: StoreCounts, seconds: float) -> Point:
    values = {
        "sources_ok": outcome.sources_ok,
        "sources_failed": len(outcome.failures),
        "parse_problems": len(outcome.problems),
        "intervals": len(outcome.points),
        "skipped": len(outcome.skips),
        "sample_seconds": seconds,
        "store_dropped_points": counts.dropped_points,
        "store_torn_records": counts.torn_records,
    }
    return Point("dnfsmon_agent", (("host", config.host),), values, time.time_ns())


def collect(config: Config, count: int, interval_s: float) -> bool:
    """Take `count` samples `interval_s` apart; True when any source failed.

    The caller holds the run lock (state.RunLock).
    """
    store = Store(config.store_dir, config.store_max_bytes)
    state = StateFile(config.state_dir, f"host:{config.host}")
    for directory in (config.state_dir, config.store_dir):
        remove_stale_temps(directory)
    previous = state.load()
    any_failure = False
    for number in range(1, count + 1):
        started = time.monotonic()
        raws, failures = read_live(config)
        outcome = compute(raws, failures, config.host, previous)
        report(outcome)
        store.append(outcome.points)
        counts = store.pending_counts()
        store.append([agent_point(config, outcome, counts, time.monotonic() - started)])
        store.acknowledge_counts(counts)
        # State last: a crash just before this line makes the next run diff
        # against the older sample: one point then covers a longer interval
        # that overlaps the point already stored - exact, never negative.
        state.save(outcome.samples.values())
        previous = outcome.samples
        any_failure = any_failure or bool(outcome.failures)
        log.info(
            "sample %d/%d: %d points, %d series without a point, %d sources failed",
            number, count, len(outcome.points), len(outcome.skips), len(outcome.failures),
        )
        if number < count:
            time.sleep(max(0.0, interval_s - (time.monotonic() - started)))
    return any_failure
