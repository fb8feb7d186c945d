"""What happened between two times: the doctor's results in the local store, as a timeline.

`collect` stores the ladder (dnfsmon_latency_ladder) and the findings
(dnfsmon_finding) of every interval it samples. `dnfsmon doctor --since
03:00 --until 04:00` reads them back from the local store, without Grafana:
each finding as an episode (the first and last interval it held in, and its
worst value), and the ladder of the interval whose Oracle reads were slowest.
"""

from __future__ import annotations

import datetime
import json
import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Optional

from ..points import Point
from . import FINDING_MEASUREMENT, LADDER_MEASUREMENT, rules
from .join import tag

# The forms --since and --until take, as the error message lists them.
TIME_FORMS = "HH:MM[:SS], YYYY-MM-DD [HH:MM[:SS]], today or yesterday HH:MM, now, or -30m, -2h, -1d (local time)"
RELATIVE = re.compile(r"^-(\d+(?:\.\d+)?)\s*(s|m|min|h|d)$")
UNIT_SECONDS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}
CLOCK = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?$")
# An episode of a finding ends when it is absent from an interval, or when no interval was
# stored for this many typical sample spacings (the agent stopped).
GAP_SPACINGS = 3.0


class BadTime(ValueError):
    """A --since or --until the doctor cannot read."""


@dataclass
class When:
    """A parsed time: the moment, and whether it was a bare clock time (its day is today's)."""

    moment: datetime.datetime
    bare_clock: bool = False


def parse_when(text: str, now: datetime.datetime) -> When:
    """One --since/--until value, in the host's local time zone unless it names its own.

    now: an aware datetime (datetime.datetime.now().astimezone()).
    """
    spelt = " ".join(text.strip().lower().split())
    if spelt == "now":
        return When(now)
    relative = RELATIVE.match(spelt)
    if relative:
        return When(now - datetime.timedelta(seconds=float(relative.group(1)) * UNIT_SECONDS[relative.group(2)]))
    day = now.date()
    for word, days_back in (("today ", 0), ("yesterday ", 1)):
        if spelt.startswith(word):
            return When(_at(day - datetime.timedelta(days=days_back), _clock(spelt[len(word) :], text)))
    if CLOCK.match(spelt):
        return When(_at(day, _clock(spelt, text)), bare_clock=True)
    try:
        moment = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        raise BadTime(f"{text!r} is not a time; use {TIME_FORMS}") from None
    # Without a zone, local time (astimezone takes a naive time as local, with its DST offset).
    return When(moment.astimezone())


def _clock(spelt: str, text: str) -> datetime.time:
    match = CLOCK.match(spelt)
    if not match:
        raise BadTime(f"{text!r} is not a time; use {TIME_FORMS}")
    hour, minute, second = int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)
    if hour > 23 or minute > 59 or second > 59:
        raise BadTime(f"{text!r} is not a time of day; use {TIME_FORMS}")
    return datetime.time(hour, minute, second)


def _at(day: datetime.date, clock: datetime.time) -> datetime.datetime:
    """The local moment of a clock time on a day, with that day's offset (DST included)."""
    return datetime.datetime.combine(day, clock).astimezone()


def window(since: str, until: Optional[str], now: datetime.datetime) -> tuple[datetime.datetime, datetime.datetime]:
    """[since, until] from what the user typed. Bare clock times mean the last such day: a
    --since still to come today means yesterday (at 01:00, "--since 23:00" is last night), and
    a bare --until before --since is on the next day (--since 23:00 --until 01:00)."""
    start = parse_when(since, now)
    end = parse_when(until, now) if until is not None else When(now)
    if start.bare_clock and start.moment > now:
        start.moment -= datetime.timedelta(days=1)
        if end.bare_clock:
            end.moment -= datetime.timedelta(days=1)
    if end.bare_clock and end.moment <= start.moment:
        end.moment += datetime.timedelta(days=1)
    if end.moment <= start.moment:
        raise BadTime(f"--until {until!r} is not after --since {since!r}")
    return start.moment, end.moment


@dataclass
class Episode:
    """One finding held over consecutive intervals."""

    id: str
    layer: str
    severity: str
    start_ns: int
    end_ns: int
    intervals: int = 0
    # The evidence value HEADLINES names, at its worst, and when; the summary of that interval.
    worst: Optional[float] = None
    worst_ns: int = 0
    summary: str = ""
    likely_cause: bool = False


@dataclass
class Timeline:
    since_ns: int
    until_ns: int
    # Times of the intervals the store holds a doctor's result for, oldest first.
    intervals: list[int] = field(default_factory=list)
    episodes: list[Episode] = field(default_factory=list)
    # The ladder of the interval whose Oracle reads were slowest (else of the worst value of
    # the first episode), and when.
    worst_ladder: dict[str, float] = field(default_factory=dict)
    worst_ladder_ns: int = 0
    worst_ladder_why: str = ""


def subject(finding: Point) -> str:
    """What one finding is about, so that the same finding in consecutive intervals is one
    episode: its id and its summary up to the first ': ', numbers masked (a path, an
    interface, a mount, an instance and filer)."""
    summary = str(finding.fields.get("summary", ""))
    return tag(finding, "id") + "|" + re.sub(r"\d+(?:\.\d+)?", "#", summary.split(": ")[0])


def _headline(finding: Point) -> Optional[float]:
    rule = rules.HEADLINES.get(tag(finding, "id"))
    if rule is None:
        return None
    try:
        evidence = json.loads(str(finding.fields.get("evidence", "{}")))
    except ValueError:
        return None
    value = evidence.get(rule[0])
    return float(value) if isinstance(value, (int, float)) else None


def _worse(value: Optional[float], than: Optional[float], finding_id: str) -> bool:
    if value is None:
        return False
    if than is None:
        return True
    rule = rules.HEADLINES.get(finding_id)
    return value > than if rule is None or rule[1] else value < than


def build(points: Iterable[Point], since_ns: int, until_ns: int) -> Timeline:
    """The timeline of the doctor's results stored between since_ns and until_ns (inclusive)."""
    found = Timeline(since_ns, until_ns)
    ladders: dict[int, Point] = {}
    findings: dict[int, list[Point]] = {}
    for point in points:
        if not since_ns <= point.time_ns <= until_ns:
            continue
        if point.measurement == LADDER_MEASUREMENT:
            ladders[point.time_ns] = point
        elif point.measurement == FINDING_MEASUREMENT:
            findings.setdefault(point.time_ns, []).append(point)
    found.intervals = sorted(set(ladders) | set(findings))
    gaps = [b - a for a, b in zip(found.intervals, found.intervals[1:])]
    longest = GAP_SPACINGS * statistics.median(gaps) if gaps else 0
    open_episodes: dict[str, Episode] = {}
    previous = None
    for moment in found.intervals:
        seen = set()
        for finding in findings.get(moment, []):
            key = subject(finding)
            seen.add(key)
            episode = open_episodes.get(key)
            if episode is None or (previous is not None and moment - previous > longest):
                episode = Episode(tag(finding, "id"), tag(finding, "layer"), tag(finding, "severity"), moment, moment)
                open_episodes[key] = episode
                found.episodes.append(episode)
            episode.end_ns, episode.intervals = moment, episode.intervals + 1
            episode.likely_cause = episode.likely_cause or finding.fields.get("likely_cause") is True
            value = _headline(finding)
            if not episode.summary or _worse(value, episode.worst, episode.id):
                episode.worst, episode.worst_ns, episode.summary = value, moment, str(finding.fields.get("summary"))
        for key in [k for k in open_episodes if k not in seen]:
            del open_episodes[key]  # absent from this interval: the episode ended
        previous = moment
    rank = {severity: number for number, severity in enumerate((rules.CRITICAL, rules.WARNING))}
    found.episodes.sort(key=lambda e: (e.start_ns, not e.likely_cause, rank.get(e.severity, 2)))
    slowest = [(p.fields.get("oracle_read_avg_ms"), t) for t, p in ladders.items()]
    slowest = [(v, t) for v, t in slowest if isinstance(v, (int, float))]
    if slowest:
        _, found.worst_ladder_ns = max(slowest)
        found.worst_ladder_why = "Oracle's single-block reads were slowest"
    elif found.episodes and found.episodes[0].worst_ns in ladders:
        found.worst_ladder_ns = found.episodes[0].worst_ns
        found.worst_ladder_why = f"{found.episodes[0].id} was at its worst"
    if found.worst_ladder_ns:
        fields = ladders[found.worst_ladder_ns].fields
        found.worst_ladder = {k: float(v) for k, v in fields.items() if isinstance(v, (int, float))}
    return found


def _clock_text(time_ns: int, day: bool) -> str:
    moment = datetime.datetime.fromtimestamp(time_ns / 1e9).astimezone()
    return moment.strftime("%Y-%m-%d %H:%M:%S" if day else "%H:%M:%S")


def render(found: Timeline, store_dir: str, rungs: dict[str, str], units: dict[str, str]) -> str:
    """The timeline as text for people: episodes, then the ladder at the worst interval."""
    many_days = _clock_text(found.since_ns, True)[:10] != _clock_text(found.until_ns, True)[:10]
    zone = datetime.datetime.fromtimestamp(found.since_ns / 1e9).astimezone().strftime("%Z %z")
    lines = [
        f"Doctor's results in the local store {store_dir}, {_clock_text(found.since_ns, True)} to "
        f"{_clock_text(found.until_ns, True)} ({zone}): {len(found.intervals)} intervals judged"
        + (
            f", from {_clock_text(found.intervals[0], many_days)} to {_clock_text(found.intervals[-1], many_days)}"
            if found.intervals
            else ""
        )
    ]
    if not found.intervals:
        lines.append(
            "Nothing stored in that window: was `dnfsmon collect` running then? (`dnfsmon show` gives the newest points)"
        )
        return "\n".join(lines)
    if not found.episodes:
        lines.append("No finding in that window: every interval judged was healthy.")
    else:
        lines.append(f"Findings ({len(found.episodes)}), in the order they started:")
        lines.append(f"  {'start':<8}  {'end':<8}  {'severity':<8}  {'id':<20}  {'worst':<28}  at the worst")
        for e in found.episodes:
            rule = rules.HEADLINES.get(e.id)
            worst = "-" if e.worst is None or rule is None else f"{rule[0]} {e.worst:g}"
            cause = " (likely cause)" if e.likely_cause else ""
            lines.append(
                f"  {_clock_text(e.start_ns, many_days):<8}  {_clock_text(e.end_ns, many_days):<8}  "
                f"{e.severity.upper():<8}  {e.id:<20}  {worst:<28}  {_clock_text(e.worst_ns, many_days)}{cause}: {e.summary}"
            )
    if found.worst_ladder:
        lines.append(
            f"Latency ladder at {_clock_text(found.worst_ladder_ns, many_days)}, the interval where "
            f"{found.worst_ladder_why}:"
        )
        for name, label in rungs.items():
            value = found.worst_ladder.get(name)
            lines.append(
                f"    {label:<44} {'-' if value is None else f'{value:.3f} {units.get(name, str())}'.rstrip()}"
            )
    return "\n".join(lines)


def _iso(time_ns: int) -> str:
    return datetime.datetime.fromtimestamp(time_ns / 1e9).astimezone().isoformat(timespec="seconds")


def to_json(found: Timeline) -> dict:
    """The timeline for scripts (`--format json`): local times in ISO 8601 with their offset."""
    return {
        "since": _iso(found.since_ns),
        "until": _iso(found.until_ns),
        "intervals": len(found.intervals),
        "episodes": [
            {
                "id": e.id,
                "layer": e.layer,
                "severity": e.severity,
                "start": _iso(e.start_ns),
                "end": _iso(e.end_ns),
                "intervals": e.intervals,
                "worst_field": (rules.HEADLINES.get(e.id) or (None,))[0],
                "worst": e.worst,
                "worst_at": _iso(e.worst_ns),
                "summary": e.summary,
                "likely_cause": e.likely_cause,
            }
            for e in found.episodes
        ],
        "worst_ladder": found.worst_ladder,
        "worst_ladder_at": _iso(found.worst_ladder_ns) if found.worst_ladder_ns else None,
        "worst_ladder_why": found.worst_ladder_why,
    }
