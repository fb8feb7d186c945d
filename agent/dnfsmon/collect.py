"""The agent's main job: read sources, diff against the previous sample, store points.

`compute` is pure (raw inputs + previous samples -> points + new samples); it
is what both `dnfsmon collect` (live files) and `dnfsmon diff` (captures)
run, so an offline diff shows exactly what collection would have published.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Optional

from . import rates
from .config import Config
from .files import remove_stale_temps
from .points import Point
from .rates import Sample
from .sources import ALL_SOURCES, HOST_SOURCES, oracle
from .sources.base import HostInputs, ParseError, Raw
from .state import StateFile
from .store import Store, StoreCounts

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    points: list[Point] = field(default_factory=list)
    # Previous samples updated with this run's: the next run's `previous`.
    samples: dict[str, Sample] = field(default_factory=dict)
    # Source name -> why it produced nothing this time.
    failures: dict[str, str] = field(default_factory=dict)
    problems: list[ParseError] = field(default_factory=list)
    skips: list[rates.Skip] = field(default_factory=list)
    sources_ok: int = 0


def compute(raws: Mapping[str, Raw], failures: Mapping[str, str], host: str, previous: Mapping[str, Sample]) -> Outcome:
    """Points from one reading of every source, given the previous samples."""
    outcome = Outcome(samples=dict(previous), failures=dict(failures))
    for name, raw in raws.items():
        source = ALL_SOURCES[name]
        try:
            parsed = source.parse(raw, host)
        except ParseError as error:
            outcome.failures[name] = str(error)
            continue
        # A source that reads another system says what it could not read, and
        # still publishes what it could (e.g. the database's status point).
        if parsed.failure:
            outcome.failures[name] = parsed.failure
        else:
            outcome.sources_ok += 1
        outcome.problems.extend(parsed.problems)
        result = rates.diff_all(previous, parsed.samples)
        outcome.skips.extend(result.skips)
        outcome.points.extend(source.publish(result, parsed.samples))
        # Keys gone from a measurement this read produced (an interface
        # removed) leave the state; measurements a failed source or query did
        # not produce keep their previous samples for the next read.
        produced = {s.measurement for s in parsed.samples}
        for key in [k for k, s in outcome.samples.items() if s.measurement in produced]:
            del outcome.samples[key]
        outcome.samples.update((s.state_key, s) for s in parsed.samples)
    return outcome


def read_live(config: Config) -> tuple:
    """(raws, failures) of every configured source, read from the live system."""
    inputs = HostInputs(proc=config.proc_root, sys=config.sys_root, nfs_ports=tuple(config.nfs_ports))
    raws: dict[str, Raw] = {}
    failures: dict[str, str] = {}
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


class DatabaseTarget:
    """The database a run reads: a live session (python-oracledb) or the simulator.

    Its samples live in a state file of their own (target "oracle:<name>" or
    "simulator:<db_name>"), apart from the host's.
    """

    def __init__(self, config: Config):
        self.config = config
        if config.oracle is not None:
            from .oracle_db import Database  # python-oracledb is imported only with [oracle]

            self.target = f"oracle:{config.oracle.target}"
            self.database = Database(config.oracle)
        else:
            from . import simulator

            assert config.simulator is not None
            s = config.simulator
            self.target = f"simulator:{s.db_name}"
            self.workload = simulator.Workload(
                release=s.release,
                db_name=s.db_name,
                instances=s.instances,
                read_iops=s.read_iops,
                write_iops=s.write_iops,
                processes=s.processes,
                process_lifetime_s=s.process_lifetime_s,
                path_imbalance=s.path_imbalance,
                latency_us=s.latency_us,
                client_slots=s.client_slots,
            )
            self.memory_file = StateFile(config.state_dir, f"{self.target}:memory")
            self.memory = simulator.Memory()

    def read(self) -> Raw:
        if self.config.oracle is not None:
            from .oracle_db import read_once

            return read_once(self.database, time.time())
        from . import simulator

        remembered = self.memory_file.load_json()
        self.memory.last_channel_select.update({int(k): float(v) for k, v in remembered.items()})
        raw = simulator.read(self.workload, time.time(), self.memory)
        self.memory_file.save_json({str(k): v for k, v in self.memory.last_channel_select.items()})
        return raw

    def close(self) -> None:
        if self.config.oracle is not None:
            self.database.close()


def read_all(config: Config, database: Optional[DatabaseTarget]) -> tuple:
    """(raws, failures) of the host sources and, when configured, the database."""
    raws, failures = read_live(config)
    if database is not None:
        raws[oracle.NAME] = database.read()
    return raws, failures


def agent_point(config: Config, outcomes: list[Outcome], counts: StoreCounts, seconds: float) -> Point:
    values = {
        "sources_ok": sum(o.sources_ok for o in outcomes),
        "sources_failed": sum(len(o.failures) for o in outcomes),
        "parse_problems": sum(len(o.problems) for o in outcomes),
        "intervals": sum(len(o.points) for o in outcomes),
        "skipped": sum(len(o.skips) for o in outcomes),
        "sample_seconds": seconds,
        "store_dropped_points": counts.dropped_points,
        "store_torn_records": counts.torn_records,
    }
    return Point("dnfsmon_agent", (("host", config.host),), values, time.time_ns())


def collect(config: Config, count: int, interval_s: float) -> bool:
    """Take `count` samples `interval_s` apart; True when any source failed.

    The caller holds the run lock (state.RunLock). One database session
    serves all the samples of a run.
    """
    store = Store(config.store_dir, config.store_max_bytes)
    for directory in (config.state_dir, config.store_dir):
        remove_stale_temps(directory)
    database = DatabaseTarget(config) if (config.oracle or config.simulator) else None
    targets = {"host": StateFile(config.state_dir, f"host:{config.host}")}
    if database is not None:
        targets[oracle.NAME] = StateFile(config.state_dir, database.target)
    previous = {name: state.load() for name, state in targets.items()}
    any_failure = False
    try:
        for number in range(1, count + 1):
            started = time.monotonic()
            raws, failures = read_all(config, database)
            host_raws = {k: v for k, v in raws.items() if k != oracle.NAME}
            outcomes = {"host": compute(host_raws, failures, config.host, previous["host"])}
            if database is not None:
                outcomes[oracle.NAME] = compute(
                    {oracle.NAME: raws[oracle.NAME]}, {}, config.host, previous[oracle.NAME]
                )
            for outcome in outcomes.values():
                report(outcome)
                store.append(outcome.points)
            counts = store.pending_counts()
            store.append([agent_point(config, list(outcomes.values()), counts, time.monotonic() - started)])
            store.acknowledge_counts(counts)
            # State last: a crash just before this line makes the next run diff
            # against the older sample: one point then covers a longer interval
            # that overlaps the point already stored - exact, never negative.
            for name, outcome in outcomes.items():
                targets[name].save(outcome.samples.values())
                previous[name] = outcome.samples
            failed = sum(len(o.failures) for o in outcomes.values())
            any_failure = any_failure or bool(failed)
            log.info(
                "sample %d/%d: %d points, %d series without a point, %d sources failed",
                number,
                count,
                sum(len(o.points) for o in outcomes.values()),
                sum(len(o.skips) for o in outcomes.values()),
                failed,
            )
            if number < count:
                time.sleep(max(0.0, interval_s - (time.monotonic() - started)))
    finally:
        if database is not None:
            database.close()
    return any_failure
