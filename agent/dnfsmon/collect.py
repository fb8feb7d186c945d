"""The agent's main job: read each target, diff against its previous samples, store points.

`compute` is pure (raw inputs + previous samples -> points + new samples); it
is what both `dnfsmon collect` (live files) and `dnfsmon diff` (captures)
run, so an offline diff shows exactly what collection would have published.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Optional

from . import diagnosis, rates
from .config import Config
from .errors import EnvironmentProblem
from .files import remove_stale_temps
from .points import FieldValue, Point, epoch_ns
from .rates import Sample
from .records import Record
from .sources import build_all
from .sources.base import ParseError, Raw, Source
from .state import StateFile
from .store import Store, StoreCounts
from .targets import Reading, Target, read_or_fail, targets_from

if TYPE_CHECKING:
    from .prometheus import Textfile

log = logging.getLogger(__name__)


class Outcome(Record):
    """What compute made of one reading, filled in source by source (a plain class: see dnfsmon.records)."""

    __slots__ = ("failures", "points", "problems", "samples", "seconds", "skips", "sources_ok")

    def __init__(
        self,
        samples: Optional[dict[str, Sample]] = None,
        failures: Optional[dict[str, str]] = None,
        skips: Optional[list[rates.Skip]] = None,
    ):
        self.points: list[Point] = []
        # Previous samples updated with this run's: the next run's `previous`.
        self.samples: dict[str, Sample] = {} if samples is None else samples
        # Source name -> why it produced nothing this time.
        self.failures: dict[str, str] = {} if failures is None else failures
        self.problems: list[ParseError] = []
        self.skips: list[rates.Skip] = [] if skips is None else skips
        self.sources_ok = 0
        # Source name -> seconds its parse, diff and publish took (dnfsmon_source.compute_seconds).
        self.seconds: dict[str, float] = {}


def compute(
    raws: Mapping[str, Raw],
    failures: Mapping[str, str],
    host: str,
    previous: Mapping[str, Sample],
    sources: Optional[Mapping[str, Source]] = None,
) -> Outcome:
    """Points from one reading of every source, given the previous samples.

    `sources`: the configured sources that read `raws` (a target's); None builds
    each with the built-in defaults (a capture replayed without a config).
    """
    if sources is None:
        sources = build_all(raws)
    outcome = Outcome(samples=dict(previous), failures=dict(failures))
    # The previous keys of each measurement, found in one pass (not one per source).
    keys_of: dict[str, list[str]] = {}
    for key, sample in previous.items():
        keys_of.setdefault(sample.measurement, []).append(key)
    for name, raw in raws.items():
        started = time.perf_counter()
        try:
            _compute_source(sources[name], raw, host, previous, keys_of, outcome)
        except ParseError as error:
            outcome.failures[name] = str(error)
        except Exception as error:  # a bug or an input no check foresaw: this source fails, not the run
            # The traceback is for a developer (at debug level); the line names the source and the error.
            log.debug("source %s raised", name, exc_info=True)
            outcome.failures[name] = (
                f"{error.__class__.__name__}: {error} (a bug, or input it does not handle: -v logs the traceback)"
            )
        outcome.seconds[name] = time.perf_counter() - started
    return outcome


def _compute_source(
    source: Source, raw: Raw, host: str, previous: Mapping[str, Sample], keys_of: dict[str, list[str]], outcome: Outcome
) -> None:
    """One source's part of compute: parse, diff and publish into `outcome`, which is changed only at the end.

    Anything raised before the end leaves `outcome` as it was: the source's
    previous samples stay for the next reading, and no point of it is stored.
    """
    parsed = source.parse(raw, host)
    result = rates.diff_all(previous, parsed.samples)
    points = source.publish(result, parsed.samples)
    events = event_points(result.skips, host)
    # A source that reads another system says what it could not read, and
    # still publishes what it could (e.g. the database's status point).
    if parsed.failure:
        outcome.failures[source.name] = parsed.failure
    else:
        outcome.sources_ok += 1
    outcome.problems.extend(parsed.problems)
    outcome.skips.extend(result.skips)
    outcome.points.extend(points)
    outcome.points.extend(events)
    # Keys gone from a measurement this read produced (an interface
    # removed) leave the state; measurements a failed source or query did
    # not produce keep their previous samples for the next read.
    produced = {s.measurement for s in parsed.samples}
    for measurement in produced.union(source.retired_measurements) if produced else ():
        for key in keys_of.pop(measurement, ()):
            outcome.samples.pop(key, None)
    outcome.samples.update((s.state_key, s) for s in parsed.samples)


def event_points(skips: Iterable[rates.Skip], host: str) -> list[Point]:
    """dnfsmon_event points for the re-baselines and counter resets of one reading.

    One point per measurement and kind: a reboot re-baselines every series of
    the host at once, which is one event on a graph, not hundreds. The
    dashboards draw these as annotations.
    """
    groups: dict[tuple[str, str], list[rates.Skip]] = {}
    for skip in skips:
        if skip.event:
            groups.setdefault((skip.current.measurement, skip.event), []).append(skip)
    points = []
    for (measurement, kind), found in sorted(groups.items()):
        first = found[0]
        tags = (("host", host), ("kind", kind), ("source_measurement", measurement))
        fields: dict[str, FieldValue] = {"series": len(found), "reason": f"{first.current.state_key}: {first.reason}"}
        points.append(Point("dnfsmon_event", tags, fields, epoch_ns(first.current.wall_time)))
    return points


def diff_captures(old_dir: str, new_dir: str, config: Optional[Config] = None) -> tuple[Outcome, Outcome]:
    """(baseline, outcome) of two captures: what collection would have published
    at the second, had the first been its previous sample.

    The sources are configured by `config` (its filters), the built-in defaults when None.
    """
    from . import capture  # here: collect itself never reads a capture

    _, old_raws, old_failures = capture.read(old_dir)
    host, new_raws, new_failures = capture.read(new_dir)
    sources = build_all(sorted({*old_raws, *new_raws}), config)
    baseline = compute(old_raws, old_failures, host, {}, sources)
    return baseline, compute(new_raws, new_failures, host, baseline.samples, sources)


def entry_name(name: str, target: Target, targets: Sequence[Target]) -> str:
    """The name of a target's source in a reading of every target (a capture's entry): the source's
    name, or "<source>:<target>" when another target has a source of that name (several databases,
    [[oracle]]: "oracle:SALES", "oracle:HR"). sources.source_of gives the source back."""
    if sum(name in other.sources for other in targets) == 1:
        return name
    return f"{name}:{target.id.split(':', 1)[-1]}"


def read_targets(targets: Sequence[Target]) -> Reading:
    """One reading of every target's sources together (what a capture holds), each database's
    under its own entry (entry_name)."""
    union = Reading()
    for target in targets:
        reading = read_or_fail(target)
        union.raws.update((entry_name(n, target, targets), raw) for n, raw in reading.raws.items())
        union.failures.update((entry_name(n, target, targets), why) for n, why in reading.failures.items())
    return union


def sources_of(targets: Sequence[Target]) -> dict[str, Source]:
    """Each target's configured sources by their entry in read_targets' reading."""
    return {entry_name(n, target, targets): source for target in targets for n, source in target.sources.items()}


# The malformed inputs of one sample logged one by one; the rest are counted in one line.
PROBLEMS_LOGGED = 20


def report(outcome: Outcome, failed_before: Optional[dict[str, int]] = None) -> None:
    """Log what a sample could not do; each reason once, with the input named.

    `failed_before` (a run's samples so far: source name -> samples it failed in) logs a
    source's failure only the first time in the run and counts the others: a database that
    is down fails every sample with a message that differs only in a connection id, and a
    line per sample made the log of one outage some 16 000 lines a day. The run's last line
    says in how many samples each source failed (run_summary).
    """
    for name, reason in sorted(outcome.failures.items()):
        if failed_before is not None:
            failed_before[name] = failed_before.get(name, 0) + 1
            if failed_before[name] > 1:
                continue
        log.error("source %s failed: %s", name, reason)
    # A hostile or broken input can hold a million malformed lines: the first ones say what
    # is wrong, a count says how much (a 60 MB capture once wrote 91 MB of warnings).
    for problem in outcome.problems[:PROBLEMS_LOGGED]:
        log.warning("skipped malformed input: %s", problem)
    if len(outcome.problems) > PROBLEMS_LOGGED:
        log.warning("skipped %d more malformed inputs (not listed)", len(outcome.problems) - PROBLEMS_LOGGED)
    # A first run at 1000 NFS mounts has some 35 000 baselines: their lines (and
    # state keys) are made only when debug is on, as the log would drop them.
    debug = log.isEnabledFor(logging.DEBUG)
    for skip in outcome.skips:
        if skip.baseline and not debug:
            continue
        (log.debug if skip.baseline else log.info)("%s: no point: %s", skip.current.state_key, skip.reason)


SOURCE_MEASUREMENT = "dnfsmon_source"


def source_points(host: str, reading: Reading, outcome: Outcome, timestamp_ns: int) -> list[Point]:
    """One dnfsmon_source point per source of a target: did it publish this sample, and what it cost.

    As node_exporter's node_scrape_collector_success and _duration_seconds: a
    source that fails every sample shows on a graph, not only in a log.
    """
    points = []
    for name in sorted({*reading.seconds, *outcome.seconds, *outcome.failures}):
        fields: dict[str, FieldValue] = {"ok": name not in outcome.failures}
        if name in reading.seconds:
            fields["read_seconds"] = reading.seconds[name]
        if name in outcome.seconds:
            fields["compute_seconds"] = outcome.seconds[name]
        points.append(Point(SOURCE_MEASUREMENT, (("host", host), ("source", name)), fields, timestamp_ns))
    return points


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
        "store_unwritten_points": counts.unwritten_points,
        "store_quarantined_points": counts.quarantined_points,
    }
    return Point("dnfsmon_agent", (("host", config.host),), values, time.time_ns())


def collect(config: Config, count: int, interval_s: float) -> bool:
    """Take `count` samples `interval_s` apart of every target; True when any source failed.

    The caller holds the run lock (state.RunLock). A target's reader serves
    all the samples of a run (one database session).
    """
    targets = targets_from(config)
    try:
        return collect_targets(config, targets, count, interval_s)
    finally:
        for target in targets:
            target.close()


def collect_targets(config: Config, targets: list[Target], count: int, interval_s: float) -> bool:
    """collect() over the given targets, in their order; True when any source failed."""
    store = Store(config.store_dir, config.store_max_bytes)
    remove_stale_temps(config.state_dir)  # the store cleans its own, under its lock
    states = {target.id: StateFile(config.state_dir, target.id) for target in targets}
    previous = {target.id: states[target.id].load() for target in targets}
    for target in targets:
        target.starting(previous[target.id])
    textfile: Optional[Textfile] = None
    if config.prometheus_textfile:
        # Here, not at the top: the exposition needs the catalogue (a CSV read through
        # importlib.resources), which a run without a textfile never loads.
        from . import prometheus

        textfile = prometheus.Textfile(config.prometheus_textfile)
    if textfile is not None:
        textfile.remove_stale_temps()
    textfile_problem: Optional[EnvironmentProblem] = None
    failed_samples: dict[str, int] = {}  # source name -> samples of this run it failed in
    run_points = run_baselines = 0
    for number in range(1, count + 1):
        started = time.monotonic()
        outcomes = []
        health: list[Point] = []  # the dnfsmon_source points of this sample
        # Target by target: each is read, diffed, stored and saved before the
        # next is read, so a slow or failing target never costs another's points.
        for target in targets:
            reading = read_or_fail(target)
            outcome = compute(reading.raws, reading.failures, config.host, previous[target.id], target.sources)
            report(outcome, failed_samples)
            target_health = source_points(config.host, reading, outcome, time.time_ns())
            # One append for the target's points and its sources' health: each append
            # is a locked write, an fsync and a rewrite of latest.lp.
            store.append([*outcome.points, *target_health])
            health.extend(target_health)
            # State after the points: a crash just before this line makes the
            # next run diff against the older sample: one point then covers a
            # longer interval that overlaps the point already stored - exact,
            # never negative.
            states[target.id].save(outcome.samples.values())
            target.remember()
            previous[target.id] = outcome.samples
            outcomes.append(outcome)
        # The ladder and the findings of this interval, from every target's points.
        interval_points = [p for o in outcomes for p in o.points]
        # The targets' samples carry the last inventory read into the intervals that skip it.
        latest = (s for o in outcomes for s in o.samples.values())
        found = diagnosis.diagnose(interval_points, config.host, latest, config.dnfs_expected)
        finding_points = diagnosis.to_points(found, time.time_ns())
        # The store's counters are totals: every agent point carries them (store.py).
        agent = agent_point(config, outcomes, store.counts(), time.monotonic() - started)
        store.append([*finding_points, agent])
        if textfile is not None:
            # After the store: a textfile that cannot be written costs no stored point, and the
            # run goes on sampling; it ends with the problem (exit 2) once every sample is stored.
            try:
                textfile.write([*interval_points, *health, *finding_points, agent])
            except EnvironmentProblem as problem:
                log.error("%s", problem)
                textfile_problem = problem
        failed = sum(len(o.failures) for o in outcomes)
        # Every point this sample put in the store: the log's count is what ship will send.
        run_points += len(interval_points) + len(health) + len(finding_points) + 1
        run_baselines += sum(1 for o in outcomes for skip in o.skips if skip.baseline)
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "sample %d/%d: %d points, %d series without a point, %d sources failed",
                number,
                count,
                sum(len(o.points) for o in outcomes),
                sum(len(o.skips) for o in outcomes),
                failed,
            )
        if number < count:
            time.sleep(max(0.0, interval_s - (time.monotonic() - started)))
    # One line per run at the default level: cron appends it to the log file.
    log.info(
        "%d samples: %d points stored%s%s",
        count,
        run_points,
        f", {run_baselines} series baselined (rates from the next sample)" if run_baselines else "",
        run_failures(failed_samples, count),
    )
    if textfile_problem is not None:
        raise textfile_problem
    return bool(failed_samples)


def run_failures(failed_samples: dict[str, int], count: int) -> str:
    """The end of a run's log line: the sources that failed, in how many of its samples each."""
    if not failed_samples:
        return ""
    each = ", ".join(f"{name} in {failed} of {count}" for name, failed in sorted(failed_samples.items()))
    return f"; sources failed ({each} samples; each first reason logged above)"
