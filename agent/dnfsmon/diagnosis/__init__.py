"""Diagnosis: join the layers, build the latency ladder, name the layer to blame.

Pure functions over the points of one interval (the catalogued fields that
`collect` stores and `diff` prints): `diagnose(points)` gives the joined
paths, the ladder and the findings; `to_points` publishes the ladder
(dnfsmon_latency_ladder) and the findings (dnfsmon_finding). The rules are in
rules.py, one function per finding id; docs/doctor.md describes them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional

from ..points import Point
from . import join, ladder, rules
from .rules import CRITICAL, Context, Finding

LADDER_MEASUREMENT = "dnfsmon_latency_ladder"
FINDING_MEASUREMENT = "dnfsmon_finding"
# Severities, most severe first.
SEVERITIES = (CRITICAL, rules.WARNING)


@dataclass
class Diagnosis:
    host: str
    paths: list[join.Path]
    ladder: dict[str, Optional[float]]
    findings: list[Finding]
    simulated_database: bool

    def to_json(self) -> dict:
        return {
            "host": self.host,
            "simulated_database": self.simulated_database,
            "ladder": {name: value for name, value in self.ladder.items() if value is not None},
            "paths": [join.describe(p) for p in self.paths],
            "findings": [f.to_json() for f in self.findings],
        }


def diagnose(points: list[Point], host: str) -> Diagnosis:
    simulated = any(
        join.tag(p, "simulated") == "true"
        for p in points
        if p.measurement.startswith(("dnfsmon_dnfs", "dnfsmon_oracle"))
    )
    paths = join.paths(points)
    steps = ladder.ladder(points, paths)
    context = Context(points, paths, steps, simulated)
    findings = [finding for rule in rules.RULES.values() for finding in rule(context)]
    return Diagnosis(host, paths, steps, findings, simulated)


def to_points(diagnosis: Diagnosis, time_ns: int) -> list[Point]:
    """The ladder and the findings as points; `simulated` tags what the simulator's data decided."""
    host = (("host", diagnosis.host),)
    out = []
    steps = {name: value for name, value in diagnosis.ladder.items() if value is not None}
    if steps:
        tags = host + ((("simulated", "true"),) if diagnosis.simulated_database else ())
        out.append(Point(LADDER_MEASUREMENT, tags, steps, time_ns))
    for finding in diagnosis.findings:
        tags = (*host, ("id", finding.id), ("layer", finding.layer), ("severity", finding.severity))
        if finding.simulated:
            tags += (("simulated", "true"),)
        fields = {
            "summary": finding.summary,
            "evidence": json.dumps(finding.evidence, sort_keys=True),
            "remedy": finding.remedy,
        }
        out.append(Point(FINDING_MEASUREMENT, tags, fields, time_ns))
    return out
