"""Diagnosis: join the layers, build the latency ladder, name the layer to blame.

Pure functions over the points of one interval (the catalogued fields that
`collect` stores and `diff` prints): `diagnose(points)` gives the joined
paths, the ladder and the findings; `to_points` publishes the ladder
(dnfsmon_latency_ladder), the findings (dnfsmon_finding) and the verdict
(dnfsmon_verdict). The rules are in
rules.py, one function per finding id; docs/doctor.md describes them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Optional

from ..points import FieldValue, Point
from ..rates import Sample
from ..records import Record
from . import causes, join, ladder, rules
from .rules import CRITICAL as CRITICAL
from .rules import Context, Finding

LADDER_MEASUREMENT = "dnfsmon_latency_ladder"
FINDING_MEASUREMENT = "dnfsmon_finding"
VERDICT_MEASUREMENT = "dnfsmon_verdict"
SEVERITIES = causes.SEVERITIES
# Every measurement of the database's source starts with one of these (sources/oracle/names.py,
# MEASUREMENTS): where none is present the Oracle package is not imported (a host-only run).
DATABASE_PREFIXES = ("dnfsmon_dnfs", "dnfsmon_oracle")
# What a verdict can be.
FINDINGS = "findings"
HEALTHY = "healthy"
NOTHING_TO_JUDGE = "nothing to judge"


class Diagnosis(Record):
    """The doctor's verdict on one interval (a plain class: see dnfsmon.records; collect makes one a sample)."""

    __slots__ = ("findings", "host", "inventory_age_s", "ladder", "nothing_measured", "paths", "simulated_database")

    def __init__(
        self,
        host: str,
        paths: list[join.Path],
        ladder: dict[str, Optional[float]],
        findings: list[Finding],
        simulated_database: bool,
        inventory_age_s: Optional[float] = None,
        nothing_measured: str = "",
    ):
        self.host = host
        self.paths = paths
        self.ladder = ladder
        # Likely causes first, then by severity (causes.ordered).
        self.findings = findings
        self.simulated_database = simulated_database
        # Seconds between the inventory's read and the interval's end, when the
        # interval did not read it and the last read was carried (None: read now, or never).
        self.inventory_age_s = inventory_age_s
        # Why nothing could be judged, when nothing was measured (see verdict).
        self.nothing_measured = nothing_measured

    @property
    def verdict(self) -> str:
        """FINDINGS, HEALTHY (layers were measured and no rule fired) or NOTHING_TO_JUDGE."""
        if self.findings:
            return FINDINGS
        return NOTHING_TO_JUDGE if self.nothing_measured else HEALTHY

    def likely_causes(self) -> list[Finding]:
        return causes.likely_causes(self.findings)

    def explained_by(self, cause: Finding) -> list[str]:
        """The ids a likely cause explains, directly or through others, nearest first."""
        return causes.explained_through(cause, self.findings)

    def to_json(self) -> dict:
        return {
            "host": self.host,
            "simulated_database": self.simulated_database,
            "verdict": self.verdict,
            "nothing_measured": self.nothing_measured,
            "likely_causes": [f.id for f in self.likely_causes()],
            "inventory_age_s": self.inventory_age_s,
            "ladder": {name: value for name, value in self.ladder.items() if value is not None},
            "paths": [join.describe(p) for p in self.paths],
            "findings": [f.to_json() for f in self.findings],
        }


def carried_inventory(points: list[Point], samples: Iterable[Sample]) -> tuple[list[Point], Optional[float]]:
    """The inventory to diagnose with when this interval's points have none: the last read's,
    from the target's samples (collect keeps a measurement's samples until it is read again),
    as the points it published then, except a database's that could not be read this interval;
    and its age in seconds at the interval's end."""
    database_samples = [s for s in samples if s.measurement.startswith(DATABASE_PREFIXES)]
    if not database_samples:
        return [], None
    # Here, not at the top: a run without a database never loads the Oracle package.
    # The inventory (filers and exports, data file coverage) is read every [oracle]
    # inventory_interval_s, not every sample (sources/oracle/parsers.py, InventoryCadence).
    from ..sources import oracle

    if any(p.measurement in oracle.INVENTORY_MEASUREMENTS for p in points):
        return [], None
    # A database that could not be read this interval: what its files are opened through now is
    # unknown, and a fallback judged from the inventory read before the outage would report a state
    # nobody saw (the outage itself is what the interval shows). Its inventory is not carried.
    down = {
        dict(p.tags).get("database")
        for p in points
        if p.measurement == oracle.STATUS_MEASUREMENT and p.fields.get("reachable") == 0
    }
    kept = [
        s
        for s in database_samples
        if s.measurement in oracle.INVENTORY_MEASUREMENTS and dict(s.key).get("database") not in down
    ]
    if not kept:
        return [], None
    carried = [Point(s.measurement, s.key, dict(s.gauges), round(s.wall_time * 1e9)) for s in kept]
    end_ns = max((p.time_ns for p in points), default=max(p.time_ns for p in carried))
    return carried, max(0.0, (end_ns - max(p.time_ns for p in carried)) / 1e9)


NO_TRAFFIC = "no NFS or dNFS traffic to a filer (no dNFS channel, kernel NFS mount or NFS connection)"


def nothing_measured(points: list[Point], steps: dict[str, Optional[float]], paths: list[join.Path]) -> str:
    """Why no layer could be judged, or "" when one was measured.

    Measured means a rung of the ladder has a value (Oracle's reads, the kernel
    client's READs, a round trip on a path that carries them) or a path to a
    filer is seen; without any, "healthy" would be a guess.
    """
    if any(value is not None for value in steps.values()) or paths:
        return ""
    if not any(p.measurement.startswith(DATABASE_PREFIXES) for p in points):
        return f"no database configured, and {NO_TRAFFIC}"
    from ..sources import oracle  # here: only where a database was read (see carried_inventory)

    status = join.of(points, oracle.STATUS_MEASUREMENT)
    if not status:
        database = "no database configured"
    elif any(join.number(p, "reachable") == 0 for p in status):
        database = "the database could not be read"
    else:
        database = "the database did no single-block reads"
    return f"{database}, and {NO_TRAFFIC}"


def diagnose(
    points: list[Point], host: str, samples: Iterable[Sample] = (), dnfs_expected: Optional[bool] = None
) -> Diagnosis:
    """The diagnosis of one interval's points.

    samples: the targets' samples after this interval (compute's Outcome.samples),
    whose inventory stands in for an interval that did not read it.
    dnfs_expected: [oracle] dnfs_expected (None: judge from the database).
    """
    carried, age = carried_inventory(points, samples)
    points = points + carried
    simulated = any(join.tag(p, "simulated") == "true" for p in points if p.measurement.startswith(DATABASE_PREFIXES))
    paths = join.paths(points)
    steps = ladder.ladder(points, paths)
    context = Context(points, paths, steps, simulated, dnfs_expected=dnfs_expected, inventory_age_s=age)
    findings = [finding for rule in rules.RULES.values() for finding in rule(context)]
    causes.link(findings)
    return Diagnosis(
        host, paths, steps, causes.ordered(findings), simulated, age, nothing_measured(points, steps, paths)
    )


def to_points(diagnosis: Diagnosis, time_ns: int) -> list[Point]:
    """The verdict, the ladder and the findings as points; `simulated` tags what the simulator's
    data decided. The verdict point is written every interval: "nothing to judge" leaves no
    ladder and no finding, and only this point tells it from a healthy interval."""
    host = (("host", diagnosis.host),)
    verdict: dict[str, FieldValue] = {
        "findings": len(diagnosis.findings),
        "nothing_to_judge": int(diagnosis.verdict == NOTHING_TO_JUDGE),
        "nothing_measured": diagnosis.nothing_measured,
    }
    out = [Point(VERDICT_MEASUREMENT, host, verdict, time_ns)]
    steps = {name: value for name, value in diagnosis.ladder.items() if value is not None}
    if steps:
        tags = host + ((("simulated", "true"),) if diagnosis.simulated_database else ())
        out.append(Point(LADDER_MEASUREMENT, tags, steps, time_ns))
    for finding in diagnosis.findings:
        tags = (*host, ("id", finding.id), ("layer", finding.layer), ("severity", finding.severity))
        if finding.simulated:
            tags += (("simulated", "true"),)
        fields: dict[str, FieldValue] = {
            "summary": finding.summary,
            "evidence": json.dumps(finding.evidence, sort_keys=True),
            "remedy": finding.remedy,
            "likely_cause": bool(finding.explains) and not finding.explained_by,
            "explained_by": finding.explained_by,
        }
        out.append(Point(FINDING_MEASUREMENT, tags, fields, time_ns))
    return out
