"""dnfsmon doctor: the latency ladder and the findings of two samples (or two captures),
and `doctor --since`, the stored findings as a timeline."""

from __future__ import annotations

import datetime
import json
import os
import sys
import time
from collections.abc import Iterable
from typing import Optional

from .. import capture, diagnosis
from .. import config as configuration
from ..cli import (
    EXIT_FINDINGS_CRITICAL,
    EXIT_FINDINGS_WARNING,
    EXIT_NOTHING_TO_JUDGE,
    EXIT_OK,
    EXIT_SOURCE_FAILED,
    EXIT_USAGE,
    load_config,
    setup_logging,
)
from ..collect import compute, read_targets, report, sources_of
from ..errors import EnvironmentProblem
from ..store import Store
from ..targets import targets_from
from .output import format_value


def doctor_exit_code(found: Optional[diagnosis.Diagnosis], failures: Iterable[str]) -> int:
    """Findings first (critical 11, warning 10), then a failed source (3: the verdict may be
    incomplete, and may be why nothing was measured), then nothing to judge (12), else 0."""
    severities = {f.severity for f in found.findings} if found else set()
    if diagnosis.CRITICAL in severities:
        return EXIT_FINDINGS_CRITICAL
    if severities:
        return EXIT_FINDINGS_WARNING
    if list(failures):
        return EXIT_SOURCE_FAILED
    if found is None or found.verdict == diagnosis.NOTHING_TO_JUDGE:
        return EXIT_NOTHING_TO_JUDGE
    return EXIT_OK


def verdict_lines(found: diagnosis.Diagnosis) -> list[str]:
    """The verdict as the doctor prints it: the likely cause first, then each finding."""
    if found.verdict == diagnosis.NOTHING_TO_JUDGE:
        return [f"Verdict: nothing to judge: {found.nothing_measured}."]
    if found.verdict == diagnosis.HEALTHY:
        return ["Verdict: healthy, no rule fired."]
    lines = [f"Verdict: {len(found.findings)} finding(s), likely causes first, then by severity:"]
    for cause in found.likely_causes():
        explained = ", ".join(found.explained_by(cause))
        lines.append(f"  Likely cause: {cause.id} [{cause.layer}], which explains {explained}")
    for f in found.findings:
        simulated = " (simulated database)" if f.simulated else ""
        role = " LIKELY CAUSE" if f.explains and not f.explained_by else ""
        role += f" (explained by {f.explained_by})" if f.explained_by else ""
        lines.append(f"  {f.severity.upper()} {f.id} [{f.layer}]{role}{simulated}: {f.summary}")
        lines.append("      evidence: " + " ".join(f"{k}={v:g}" for k, v in f.evidence.items()))
        for effect, why in f.explains:
            lines.append(f"      explains {effect}: {why}")
        if f.explained_by:
            lines.append(f"      remedy: fix {f.explained_by} first; then, if it remains: {f.remedy}")
        else:
            lines.append(f"      remedy: {f.remedy}")
    return lines


def format_diagnosis(found: diagnosis.Diagnosis) -> str:
    from .. import catalogue  # for the units of the printed ladder only

    entries = catalogue.load()
    database = " (database figures simulated)" if found.simulated_database else ""
    lines = [f"Latency ladder of {found.host}{database}:"]
    for name, label in diagnosis.ladder.RUNGS.items():
        value = found.ladder.get(name)
        entry = entries.get((diagnosis.LADDER_MEASUREMENT, "field", name))
        text = "-" if value is None else format_value(value, entry.unit if entry else "")
        lines.append(f"    {label:<44} {text}")
    lines.append("Paths to the filers:")
    for path in found.paths:
        d = diagnosis.join.describe(path)
        figures = ", ".join(
            f"{label} {d[key]:.4g}"
            for key, label in (
                ("tcp_connections", "connections"),
                ("tcp_srtt_ms", "srtt ms"),
                ("nic_util_pct", "NIC %"),
                ("share_of_interface_pct", "% of the NIC's traffic"),
            )
            if d[key] is not None
        )
        lines.append(
            f"    {d['local_address'] or '?'} -> {d['server']} on {d['interface'] or '?'}"
            f" [{', '.join(d['users']) or 'unused'}]" + (f" {figures}" if figures else "")
        )
    if not found.paths:
        lines.append("    none seen")
    if found.inventory_age_s is not None:
        lines.append(
            f"Inventory (filers, data file coverage) from the database's last read, {found.inventory_age_s:.0f} s "
            "before this interval's end ([oracle] inventory_interval_s)"
        )
    lines.extend(verdict_lines(found))
    return "\n".join(lines)


def cmd_doctor(
    config_path: Optional[str], captures: list[str], interval_s: float, output: str, dnfs_expected: Optional[str]
) -> int:
    if len(captures) not in (0, 2):
        print("dnfsmon: doctor takes two capture directories (OLD NEW) or none (live)", file=sys.stderr)
        return EXIT_USAGE
    # --dnfs-expected, else the config's [doctor] dnfs_expected (offline: only a config named with -c).
    expected = None if dnfs_expected is None else configuration.DNFS_EXPECTED[dnfs_expected]
    sources = None  # the sources' defaults for captures; the config's for a live reading
    if captures:
        setup_logging("warning")
        if dnfs_expected is None and config_path is not None:
            expected = load_config(config_path).dnfs_expected
        _, old_raws, old_failures = capture.read(captures[0])
        host, raws, failures = capture.read(captures[1])
    else:
        cfg = load_config(config_path)
        setup_logging("warning")
        host = cfg.host
        if dnfs_expected is None:
            expected = cfg.dnfs_expected
        # Like a capture, the doctor only reads: no target remembers anything (no state written).
        targets = targets_from(cfg)
        sources = sources_of(targets)
        try:
            old = read_targets(targets)
            time.sleep(interval_s)
            new = read_targets(targets)
        finally:
            for target in targets:
                target.close()
        old_raws, old_failures, raws, failures = old.raws, old.failures, new.raws, new.failures
    baseline = compute(old_raws, old_failures, host, {}, sources)
    outcome = compute(raws, failures, host, baseline.samples, sources)
    report(outcome)
    found = diagnosis.diagnose(outcome.points, host, outcome.samples.values(), expected)
    if output == "json":
        print(json.dumps(found.to_json(), indent=1, sort_keys=True))
    else:
        print(format_diagnosis(found))
    return doctor_exit_code(found, outcome.failures)


def cmd_doctor_history(
    config_path: Optional[str], captures: list[str], since: Optional[str], until: Optional[str], output: str
) -> int:
    """dnfsmon doctor --since WHEN [--until WHEN]: the stored findings as a timeline (read only)."""
    from .. import catalogue
    from ..diagnosis import timeline

    if captures or since is None:
        print(
            "dnfsmon: doctor --since reads the local store: give --since WHEN (and --until), no captures",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        start, end = timeline.window(since, until, datetime.datetime.now().astimezone())
    except timeline.BadTime as error:
        print(f"dnfsmon: doctor: {error}", file=sys.stderr)
        return EXIT_USAGE
    cfg = load_config(config_path)
    setup_logging("warning")
    if not os.path.isdir(cfg.store_dir):
        raise EnvironmentProblem(
            f"the local store {cfg.store_dir} does not exist (config: {cfg.path or 'built-in defaults'}): "
            "collect has not run on this host, or -c names another config"
        )
    store = Store(cfg.store_dir, cfg.store_max_bytes, read_only=True)
    wanted = (diagnosis.LADDER_MEASUREMENT, diagnosis.FINDING_MEASUREMENT)
    try:
        found = timeline.build(store.points(wanted), int(start.timestamp() * 1e9), int(end.timestamp() * 1e9))
    except PermissionError as error:
        raise EnvironmentProblem(
            f"cannot read the store {cfg.store_dir} ({error.strerror}): run as the agent's user or a member of its group"
        ) from None
    if output == "json":
        print(json.dumps(timeline.to_json(found), indent=1, sort_keys=True))
    else:
        entries = catalogue.load()
        units = {
            name: entry.unit
            for name in diagnosis.ladder.RUNGS
            if (entry := entries.get((diagnosis.LADDER_MEASUREMENT, "field", name))) is not None
        }
        print(timeline.render(found, cfg.store_dir, diagnosis.ladder.RUNGS, units))
    severities = {e.severity for e in found.episodes}
    if diagnosis.CRITICAL in severities:
        return EXIT_FINDINGS_CRITICAL
    if severities:
        return EXIT_FINDINGS_WARNING
    return EXIT_OK if found.intervals else EXIT_NOTHING_TO_JUDGE
