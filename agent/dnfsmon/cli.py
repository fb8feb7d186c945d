"""Command line: dnfsmon collect | ship | capture | diff | show | metrics | check | init-config | sql."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import errno
import gc
import json
import logging
import os
import re
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Optional

from . import __version__, capture, diagnosis

# catalogue and summary (units, tables for people) are imported by the commands
# that print for people: a cron run of collect does not load them, nor the
# importlib.resources machinery the catalogue reads its CSV with.
from . import config as configuration
from .collect import collect, compute, diff_captures, read_targets, report, sources_of
from .errors import EnvironmentProblem
from .points import Point, to_line
from .state import LockHeld, RunLock
from .store import SHIP_LOCK, Store, StoreLocked
from .targets import targets_from

# Exit codes, also listed in docs/troubleshooting.md.
EXIT_OK = 0
EXIT_ERROR = 1  # unexpected error (a bug): the traceback is logged
EXIT_USAGE = 2  # bad arguments, config, capture or environment (a path, a permission, the disk)
EXIT_SOURCE_FAILED = 3  # the run completed, but at least one source failed (logged)
EXIT_SHIP_FAILED = 4  # points stored, but InfluxDB could not take them now (a later run sends them)
EXIT_LOCKED = 75  # another run holds the lock (EX_TEMPFAIL): nothing was touched
EXIT_FINDINGS_WARNING = 10  # dnfsmon doctor: warnings only
EXIT_FINDINGS_CRITICAL = 11  # dnfsmon doctor: at least one critical finding
EXIT_NOTHING_TO_JUDGE = 12  # dnfsmon doctor and top: no layer was measured, so no verdict
EXIT_CODES = {
    EXIT_OK: "success",
    EXIT_ERROR: "unexpected error (a bug; the traceback is logged)",
    EXIT_USAGE: "bad arguments, configuration, capture or environment (the message names the file or setting and the fix)",
    EXIT_SOURCE_FAILED: "completed, but at least one source failed (logged); other sources' points were stored",
    EXIT_SHIP_FAILED: "points are in the local store, but InfluxDB could not take them now; a later run sends them",
    EXIT_LOCKED: "another dnfsmon run holds the lock; nothing was touched",
    EXIT_FINDINGS_WARNING: "dnfsmon doctor: warning findings, none critical (docs/doctor.md)",
    EXIT_FINDINGS_CRITICAL: "dnfsmon doctor: at least one critical finding (docs/doctor.md)",
    EXIT_NOTHING_TO_JUDGE: "dnfsmon doctor, top --batch: nothing to judge: no database figures and no NFS or dNFS traffic",
}

# What each exit code means for the doctor's verdict (its --help and docs/doctor.md).
DOCTOR_EXIT_CODES = {
    EXIT_OK: "healthy: layers were measured and no rule fired",
    EXIT_SOURCE_FAILED: "no finding, but a source failed (logged): the verdict may be incomplete",
    EXIT_FINDINGS_WARNING: "warning findings only",
    EXIT_FINDINGS_CRITICAL: "at least one critical finding",
    EXIT_NOTHING_TO_JUDGE: "nothing to judge: no database figures and no NFS or dNFS traffic to a filer",
    EXIT_USAGE: "bad arguments, configuration or capture (one line names it)",
}

log = logging.getLogger("dnfsmon")

# init-config writes [agent] state_dir and [store] dir as DIR/state and
# DIR/store: the two paths every install must own (see example.toml).
DEFAULT_VAR_DIR = "/var/lib/dnfsmon"


def config_in_use(argv: Sequence[str]) -> str:
    """The config file a run with these arguments reads, for --help: -c wins, else the default if present."""
    for number, arg in enumerate(argv):
        if arg in ("-c", "--config") and number + 1 < len(argv):
            return argv[number + 1]
        if arg.startswith("--config="):
            return arg.split("=", 1)[1]
    if os.path.exists(configuration.DEFAULT_PATH):
        return configuration.DEFAULT_PATH
    return f"built-in defaults ({configuration.DEFAULT_PATH} does not exist)"


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    epilog = "exit codes:\n" + "\n".join(f"  {code:<3} {text}" for code, text in EXIT_CODES.items())
    # The options every command takes, accepted before or after the command's
    # name. In the sub-parsers their default is SUPPRESS, so a value given
    # before the command is not overwritten by the sub-parser's default.
    config_help = f"TOML config file (in use: {config_in_use(argv)})"
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-c", "--config", default=argparse.SUPPRESS, metavar="FILE", help=config_help)
    loudness = common.add_mutually_exclusive_group()
    loudness.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="log every sample and skip (debug)"
    )
    loudness.add_argument(
        "-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help="log warnings and errors only"
    )

    parser = argparse.ArgumentParser(
        prog="dnfsmon",
        description="Monitoring agent for Oracle Direct NFS and the host beneath it.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=epilog,
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"dnfsmon {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help: str, description: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=description, parents=[common])

    p = command(
        "collect",
        "one cron run: sample, diff, store",
        "Take samples, diff them against the previous ones and store the points.",
    )
    p.add_argument("--count", type=_positive_int, default=1, help="samples to take in this run (default: 1)")
    p.add_argument("--interval", type=_positive_float, default=10.0, help="seconds between samples (default: 10)")

    command(
        "ship",
        "send the stored points to InfluxDB",
        "Send every stored point not yet acknowledged to InfluxDB ([influxdb] in the config).",
    )

    p = command(
        "capture",
        "write every source's raw inputs to a directory",
        "Write every source's raw inputs and clocks to DIR (see docs/capture-format.md).",
    )
    p.add_argument("dir", help="directory to write (created if needed)")

    p = command(
        "diff",
        "compute all metrics between two captures",
        "Compute every metric between two captures, offline, with collect's code.",
    )
    p.add_argument("old", help="earlier capture directory")
    p.add_argument("new", help="later capture directory")
    p.add_argument("--format", choices=("table", "json", "lp"), default="table", help="output format (default: table)")

    p = command(
        "show",
        "summarise the points in the local store",
        "Print the latest point of every series in the local store as tables, with units.",
    )
    p.add_argument("--measurement", help="every field of this measurement only (e.g. dnfsmon_nic)")
    p.add_argument("--all", action="store_true", dest="everything", help="every field of every series")
    p.add_argument(
        "--wide", action="store_true", help="each unit beside its field, tables unsplit (wider than 120 columns)"
    )
    p.add_argument(
        "--format",
        choices=("table", "json"),
        default="table",
        help="json: the latest point of every series, with its age and units (default: table)",
    )

    p = command(
        "doctor",
        "name the layer to blame: latency ladder and findings",
        "Sample twice, INTERVAL seconds apart (or read two captures), join the layers, print the "
        "latency ladder and the findings (docs/doctor.md). Neither the collect state nor the store is touched; "
        "collect stores the same ladder and findings on every run.",
    )
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = "exit codes (docs/doctor.md):\n" + "\n".join(
        f"  {code:<3} {DOCTOR_EXIT_CODES[code]}" for code in DOCTOR_EXIT_CODES
    )
    p.add_argument("captures", nargs="*", metavar="CAPTURE", help="OLD NEW: two capture directories (offline)")
    p.add_argument(
        "--interval", type=_positive_float, default=10.0, help="seconds between the two live samples (default: 10)"
    )
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    p.add_argument(
        "--since",
        metavar="WHEN",
        help="what happened since WHEN, from the local store (no sampling): HH:MM, YYYY-MM-DD HH:MM, "
        "yesterday HH:MM, -2h ... in local time; prints each finding's start, end and worst value, and "
        "the latency ladder of the worst interval",
    )
    p.add_argument("--until", metavar="WHEN", help="with --since: the end of the window (default: now)")
    p.add_argument(
        "--dnfs-expected",
        choices=tuple(configuration.DNFS_EXPECTED),
        help="must the data files be read through dNFS? (default: [doctor] dnfs_expected of the config, auto)",
    )

    p = command(
        "top",
        "live full-screen view of dNFS, the paths, the NICs and the mounts",
        "Refresh a full-screen view every interval, computed with collect's code, "
        "without the agent's state or store (docs/top.md). Keys: i p n m f views, q quit.",
    )
    p.add_argument("--interval", type=_positive_float, default=5.0, help="seconds between refreshes (default: 5)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--batch", type=_positive_int, metavar="N", help="print N refreshes as plain text, then exit")
    group.add_argument("--once", action="store_const", const=1, dest="batch", help="the same as --batch 1")
    p.add_argument("--record", metavar="DIR", help="write each refresh's raw inputs to DIR/NNNN (capture format)")

    p = command(
        "sql",
        "print the directory of the SQL pack installed with the agent",
        "Print the directory of the SQL*Plus pack installed with the agent, for cd or SQLPATH: "
        'run it from a copy you can write to (it saves your settings there): cp -R "$(dnfsmon sql)/." '
        "~/dnfsmon-sql && cd ~/dnfsmon-sql && sqlplus USER@DB @dnfs_iops (sql/README.md).",
    )
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = sql_pack_listing()

    p = command("metrics", "print the metric catalogue", "Print every measurement, tag and field.")
    p.add_argument("--markdown", action="store_true", help="as the Markdown of docs/metrics.md")

    p = command(
        "check",
        "check config, directories, secrets, database and InfluxDB",
        "Check everything a run needs and print one line per item with what to do (see docs/troubleshooting.md).",
    )
    p.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="json: the items (status, what, detail, exit code) and the exit code, for scripts (default: text)",
    )

    p = command(
        "init-config",
        "write the example config file",
        "Write the documented example config (every option commented out with its default), mode 0640. Never overwrites.",
    )
    p.add_argument(
        "path",
        nargs="?",
        default=configuration.DEFAULT_PATH,
        help=f"file to write (default: {configuration.DEFAULT_PATH})",
    )
    p.add_argument(
        "--var-dir",
        default=DEFAULT_VAR_DIR,
        metavar="DIR",
        help=f"directory for state_dir (DIR/state) and the store (DIR/store), set in the file (default: {DEFAULT_VAR_DIR})",
    )

    p = command(
        "wire",
        "NFS service times from packet captures, split client/network/server",
        "Per NFS operation service times from a pcap/pcapng capture; with a client and a server "
        "capture, the same RPCs matched by XID and the time split between the server and the rest "
        "(see docs/wire.md).",
    )
    p.add_argument("captures", nargs="+", metavar="CAPTURE", help="CLIENT.pcap [SERVER.pcap]")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    p.add_argument(
        "--op",
        action="append",
        dest="operations",
        metavar="OP",
        help="only this NFS operation, e.g. READ (repeat for more; default: all)",
    )
    return parser


# The SQL pack, installed with the package as data (pyproject.toml [tool.setuptools.package-data]).
SQL_PACK_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sql")


def sql_pack_listing() -> str:
    """`dnfsmon sql --help`: what the pack holds, each script with the first line of its own header."""
    lines = [f"in {SQL_PACK_DIR}:"]
    for relative in sorted_scripts(SQL_PACK_DIR):
        lines.append(f"  {relative:<34} {script_summary(os.path.join(SQL_PACK_DIR, relative))}")
    lines.append("  README.md                          every script, its arguments and the SQL*Plus settings it needs")
    return "\n".join(lines)


def sorted_scripts(directory: str) -> list[str]:
    """The scripts a DBA runs, those whose header has a Usage field (not the helpers they call), then setup/."""
    names = []
    for subdirectory in ("", "setup"):
        try:
            listing = sorted(os.listdir(os.path.join(directory, subdirectory)))
        except OSError:
            return []  # a broken install: `dnfsmon sql` itself says so
        for name in listing:
            relative = os.path.join(subdirectory, name)
            if (
                name.endswith(".sql")
                and not name.startswith("_")
                and script_field(os.path.join(directory, relative), "Usage")
            ):
                names.append(relative)
    return names


def script_field(path: str, name: str) -> str:
    """A field of the script's header comment (Purpose:, Usage:), its continuation lines joined."""
    lines: list[str] = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("--"):
                break
            field, _, text = line[2:].partition(":")
            if lines and field.strip() and " " not in field.strip():  # the next field
                break
            if lines or field.strip() == name:
                lines.append((line[2:] if lines else text).strip())
    return " ".join(lines)


def script_summary(path: str) -> str:
    """The first phrase of the script's Purpose (every script has one: tests/test_sql_pack.py)."""
    return re.split(r"(?<=\?) |\. | \(|: |; ", script_field(path, "Purpose"), maxsplit=1)[0].rstrip(".")


def cmd_sql() -> int:
    if not os.path.isfile(os.path.join(SQL_PACK_DIR, "dnfs_iops.sql")):
        raise EnvironmentProblem(f"{SQL_PACK_DIR} holds no SQL pack: reinstall dnfsmon from its wheel")
    print(SQL_PACK_DIR)
    return EXIT_OK


# Bounds of --count and --interval: a typo must not make a run sleep for years holding the lock.
MAX_COUNT = 10000
MAX_INTERVAL_S = 3600.0


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 0 < value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to {MAX_COUNT}, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value <= MAX_INTERVAL_S:
        raise argparse.ArgumentTypeError(
            f"must be a positive number of seconds, at most {MAX_INTERVAL_S:g}, got {text!r}"
        )
    return value


def load_config(path: Optional[str]) -> configuration.Config:
    if path is None:
        try:
            open(configuration.DEFAULT_PATH, "rb").close()
            path = configuration.DEFAULT_PATH
        except FileNotFoundError:
            pass
    return configuration.load(path)


def format_value(value: object, unit: str) -> str:
    if isinstance(value, float):
        text = f"{value:.3f}" if abs(value) < 1000 else f"{value:.1f}"
    else:
        text = str(value).lower() if isinstance(value, bool) else str(value)
    return f"{text} {unit}".rstrip() if unit and not isinstance(value, bool) else text


def format_points(points: Iterable[Point], header: str = "", now_ns: Optional[int] = None) -> str:
    """Points as text for people: one block per series, fields with units (and the age, given now)."""
    from . import catalogue, summary

    entries = catalogue.load()
    lines = [header] if header else []
    for point in points:
        tags = " ".join(f"{k}={v}" for k, v in point.tags)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(point.time_ns / 1e9))
        age = ""
        if now_ns is not None:
            age = f" ({summary.age(now_ns - point.time_ns)}{' ago' if now_ns >= point.time_ns else ' of this clock'})"
        lines.append(f"{point.measurement} {tags}  @ {stamp}{age}")
        for name, value in sorted(point.fields.items()):
            entry = entries.get((point.measurement, "field", name))
            lines.append(f"    {name:<24} {format_value(value, entry.unit if entry else '')}")
    return "\n".join(lines)


def show_json(store_dir: str, points: list[Point], now_ns: int) -> str:
    """The latest point of every series for scripts: tags and fields by name, the time, the age, the units."""
    from . import catalogue

    entries = catalogue.load()
    series = [
        {
            "measurement": p.measurement,
            "tags": dict(p.tags),
            "fields": dict(p.fields),
            "units": {
                f: entries[(p.measurement, "field", f)].unit for f in p.fields if (p.measurement, "field", f) in entries
            },
            "time_ns": p.time_ns,
            "age_s": round((now_ns - p.time_ns) / 1e9, 3),
        }
        for p in points
    ]
    return json.dumps({"store": store_dir, "series": series}, indent=1, sort_keys=True)


def cmd_show(
    cfg: configuration.Config, measurement: Optional[str], everything: bool, wide: bool = False, output: str = "table"
) -> int:
    """Read-only: creates, locks and writes nothing, so any user who can read the store can run it."""
    from . import catalogue, summary

    entries = catalogue.load()
    known = sorted({e.measurement for e in entries.values()})
    if measurement is not None and measurement not in known:
        print(
            f"dnfsmon: show --measurement {measurement}: no such measurement; known: {', '.join(known)}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if not os.path.isdir(cfg.store_dir):
        if output == "json":
            print(show_json(cfg.store_dir, [], time.time_ns()))
            return EXIT_OK
        print(
            f"The local store {cfg.store_dir} holds no points yet (it does not exist): run `dnfsmon collect` "
            f"(config: {cfg.path or 'built-in defaults'})."
        )
        return EXIT_OK
    store = Store(cfg.store_dir, cfg.store_max_bytes, read_only=True)
    try:
        # The tables read only what they draw; the other views print every series.
        latest = summary.latest_of(store, tabled_only=not (everything or measurement or output == "json"))
    except PermissionError as error:
        raise EnvironmentProblem(
            f"cannot read the store {cfg.store_dir} ({error.strerror}): run show as the agent's user or a member of its group"
        ) from None
    if measurement is not None:
        latest = latest.only(measurement)
    series = latest.count()
    if output == "json":
        print(show_json(cfg.store_dir, latest.all_points(), time.time_ns()))
        return EXIT_OK
    if not series:
        print(
            f"The local store {cfg.store_dir} holds no points{' of ' + measurement if measurement else ''} yet: "
            "run `dnfsmon collect` at least twice (the first sample of anything is a baseline)."
        )
        return EXIT_OK
    now_ns = time.time_ns()
    print(f"Local store {cfg.store_dir}: {series} series; the latest point of each, and its age:\n")
    if everything or measurement:
        print(format_points(latest.all_points(), now_ns=now_ns))
    else:
        print(summary.render(latest, now_ns, wide))
    if measurement is None:
        seen = set(latest.series)
        absent = sorted({(e.measurement, e.source) for e in entries.values() if e.measurement not in seen})
        if absent:
            print("\nNo points (nothing of this kind on this host, or the source is not configured):")
            for name, source in absent:
                print(f"    {name:<32} source {source}")
    return EXIT_OK


def _lines_of(points: Iterable[Point], unwritable: list[str]) -> Iterator[str]:
    """Each point as a line of line protocol; those it cannot carry go to `unwritable`, named."""
    for point in points:
        try:
            yield f"{to_line(point)}\n"
        except ValueError as error:
            unwritable.append(f"a point of {point.measurement} {dict(point.tags)}: {error}")


def cmd_diff(old: str, new: str, output: str, config_path: Optional[str] = None) -> int:
    # The sources' filters of the config named with -c; the built-in defaults without one.
    cfg = configuration.load(config_path) if config_path else None
    baseline, outcome = diff_captures(old, new, cfg)
    report(baseline)
    report(outcome)
    if output == "json":
        print(json.dumps([p.to_json() for p in outcome.points], indent=1, sort_keys=True))
    elif output == "lp":
        unwritable: list[str] = []
        # writelines, not a print() per line, which cost as much as rendering them (33 400 at 1000 NFS mounts).
        sys.stdout.writelines(_lines_of(outcome.points, unwritable))
        if unwritable:
            # Only an input no kernel writes gives such a point (a 400-digit mtu): the source's input is bad.
            log.error("%d points not printed: %s", len(unwritable), "; ".join(unwritable[:3]))
            return EXIT_SOURCE_FAILED
    else:
        print(format_points(outcome.points) or "no points: see the log for why")
    return EXIT_SOURCE_FAILED if outcome.failures else EXIT_OK


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
    from . import catalogue

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
    from . import catalogue
    from .diagnosis import timeline

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


def cmd_capture(cfg: configuration.Config, directory: str) -> int:
    # A capture only reads: it writes no state (the run lock is not taken).
    targets = targets_from(cfg)
    try:
        reading = read_targets(targets)
    finally:
        for target in targets:
            target.close()
    capture.write(directory, cfg.host, reading.raws, reading.failures)
    for name, reason in sorted(reading.failures.items()):
        log.error("source %s failed: %s", name, reason)
    print(f"captured {len(reading.raws)} sources to {directory}")
    return EXIT_SOURCE_FAILED if reading.failures else EXIT_OK


def cmd_top(cfg: configuration.Config, interval_s: float, batch: Optional[int], record_dir: Optional[str]) -> int:
    from . import top  # curses is imported only for top

    sampler = top.Sampler(cfg, record_dir)
    try:
        if batch is not None:
            failures, last = top.run_batch(sampler, interval_s, batch)
            return doctor_exit_code(last, failures)
        return top.run_screen(sampler, interval_s)
    finally:
        sampler.close()


# cron and dnfsmon.timer start one collect a minute: a run is one slot of that schedule
# (or as many whole minutes as its sampling spans), and ends SLOT_MARGIN_S before the next
# run starts. docs/reliability.md ("Time") has the arithmetic.
SCHEDULE_SLOT_S = 60.0
# For the interpreter's exit after the ship (about a second on a loaded host).
SLOT_MARGIN_S = 3.0


def process_age_s() -> float:
    """Seconds since this process started, imports included (a second on a loaded host): proc(5)
    /proc/self/stat field 22, starttime, in clock ticks since boot, against CLOCK_BOOTTIME."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            after_name = f.read().rsplit(")", 1)[1].split()  # field 3 (state) onwards: the name may hold spaces
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - int(after_name[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, IndexError, ValueError):
        return 0.0


def run_slot_end(started: float, count: int, interval_s: float) -> float:
    """The monotonic time by which a collect run started at `started` must have ended."""
    minutes = int((count - 1) * interval_s // SCHEDULE_SLOT_S) + 1
    return started + minutes * SCHEDULE_SLOT_S - SLOT_MARGIN_S


def ship_stored(cfg: configuration.Config, after_collect: bool, until: Optional[float] = None) -> bool:
    """Ship the store to InfluxDB; False when InfluxDB failed (logged, points kept).

    Shipping holds the store's own ship.lock, not the run lock: a slow
    InfluxDB never delays the next run's samples. After a collect, a ship
    already under way (an earlier run's) is left to finish its work, and
    this one stops at `until` (the end of the run's slot), so that a
    systemd timer, which skips a start while the last run is still active,
    never loses a run's samples to a slow InfluxDB.
    """
    from .influx import ShipError, ship  # only when shipping: http.client, ssl and gzip are not a collect's to load

    assert cfg.influxdb is not None
    settings = cfg.influxdb
    if until is not None:
        remaining = until - time.monotonic()
        if remaining < 1.0:
            log.info("no time left in this run's slot to ship: the points wait in %s for the next run", cfg.store_dir)
            return True
        settings = dataclasses.replace(settings, deadline_s=min(settings.deadline_s, remaining))
    store = Store(cfg.store_dir, cfg.store_max_bytes)
    try:
        with RunLock(cfg.store_dir, SHIP_LOCK):
            report = ship(store, settings)
    except LockHeld as error:
        if not after_collect:
            raise
        log.info("%s: it ships this run's points too", error)
        return True
    except ShipError as error:
        log.error("%s; the points stay in %s for the next run", error, cfg.store_dir)
        return False
    log.info(
        "shipped %d points to %s (%d quarantined)%s",
        report.sent,
        cfg.influxdb.url,
        report.quarantined,
        "; deadline_s reached, a later run sends the rest" if report.unfinished else "",
    )
    return True


def take_run_lock(lock: RunLock, count: int, interval_s: float) -> int:
    """Take the run lock within this run's slot (count x interval); the samples still due in it.

    The run before may overrun its slot by a moment (a slow read): waiting for it
    costs the samples whose time has passed, not the whole run, as exiting 75 at
    once did. A run that holds the lock past this slot too (stuck) still gives
    LockHeld, so runs never pile up behind it. Samples are due every interval
    from this run's start: after waiting w seconds, floor(w / interval) are past.
    """
    started = time.monotonic()
    try:
        lock.acquire(wait_s=count * interval_s)
    except OSError as error:  # flock on a FIFO or the like names no file: name the lock
        error.filename = error.filename or lock.path
        raise
    waited = time.monotonic() - started
    due = count - int(waited // interval_s)
    if due < count:
        log.warning(
            "waited %.1f s for the run before to release %s: %d of %d samples left in this run's slot",
            waited,
            lock.path,
            due,
            count,
        )
    if due < 1:
        lock.release()
        raise LockHeld(f"{lock.path} was held for this run's whole slot")
    return due


class CronFormatter(logging.Formatter):
    """One format for every message: ISO 8601 local time with its zone, so lines appended
    to a log file by cron can be matched with an incident (2026-01-31T03:00:01+01:00)."""

    def formatTime(self, record: logging.LogRecord, datefmt: Optional[str] = None) -> str:
        moment = datetime.datetime.fromtimestamp(record.created).astimezone()
        return moment.isoformat(timespec="seconds")


def setup_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(CronFormatter("%(asctime)s dnfsmon[%(process)d] %(levelname)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)  # libraries' warnings only: their debug lines are not ours to show
    log.setLevel(level.upper())


def log_level(args: argparse.Namespace, configured: str) -> str:
    if getattr(args, "verbose", False):
        return "debug"
    if getattr(args, "quiet", False):
        return "warning"
    return configured


# What to do about an OSError on one of the user's paths, by errno.
OS_ERROR_FIXES = {
    errno.EACCES: "run dnfsmon as the user that owns it, or give that user access (chown/chmod)",
    errno.EPERM: "run dnfsmon as the user that owns it, or give that user access (chown/chmod)",
    errno.ENOSPC: "free space on that file system, or point the setting at another one; this run stored nothing more",
    errno.EDQUOT: "the user's disk quota is used up: raise it or free space",
    errno.EROFS: "the file system is read-only: remount it read-write, or point the setting at a writable directory",
    errno.EISDIR: "a directory stands where dnfsmon keeps a file: remove it (nothing of dnfsmon's is in it)",
    errno.ENOTDIR: "a file stands where dnfsmon needs a directory: move it away",
    errno.ENOENT: "create it (install -d -o USER -m 750 DIR), or fix the setting",
    errno.EINVAL: "it is not a regular file (a FIFO or device?): remove it; dnfsmon recreates it",
    errno.ELOOP: "it is a symbolic link, which dnfsmon does not follow there: replace it with the real file",
}


def describe_os_error(error: OSError, cfg: Optional[configuration.Config]) -> str:
    """One line for an OSError on the user's paths: the path, the setting that names it, the fix."""
    path = error.filename or ""
    setting = ""
    if cfg is not None and path:
        where = os.path.abspath(str(path))
        for name, directory in (("[store] dir", cfg.store_dir), ("[agent] state_dir", cfg.state_dir)):
            if where == os.path.abspath(directory) or where.startswith(os.path.abspath(directory) + os.sep):
                setting = f" ({name} in {cfg.path or 'the built-in defaults'})"
                break
    fix = OS_ERROR_FIXES.get(error.errno or 0, "check the path and its file system")
    subject = f"{path}{setting}: " if path else ""
    return f"{subject}{error.strerror or error}: {fix}"


def example_config(var_dir: str) -> bytes:
    """example.toml with the two directories set (uncommented) to var_dir/state and var_dir/store."""
    with open(configuration.EXAMPLE_PATH, encoding="utf-8") as f:
        text = f.read()
    for commented, key, leaf in (("# state_dir = ", "state_dir", "state"), ("# dir = ", "dir", "store")):
        start = text.index(commented)  # the first such line: [agent] state_dir, then [store] dir
        end = text.index("\n", start)
        text = text[:start] + f"{key} = {json.dumps(os.path.join(var_dir, leaf))}" + text[end:]
    return text.encode("utf-8")


def cmd_init_config(path: str, var_dir: str) -> int:
    """Write the example config; refuse to overwrite, never follow a symlink planted at `path`."""
    text = example_config(var_dir)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o640)
    except FileExistsError:
        raise EnvironmentProblem(f"{path} exists; dnfsmon init-config never overwrites (move it away first)") from None
    except FileNotFoundError:
        directory = os.path.dirname(os.path.abspath(path))
        raise EnvironmentProblem(
            f"{directory} does not exist: create it first (install -d -m 755 {directory})"
        ) from None
    with os.fdopen(fd, "wb") as f:
        os.fchmod(f.fileno(), 0o640)  # whatever the umask
        f.write(text)
    print(f"wrote {path} (mode 0640): edit it, then run dnfsmon check")
    return EXIT_OK


# The cyclic garbage collector's first threshold for a run (CPython's default is 700).
GC_FIRST_THRESHOLD = 50_000


def tune_gc() -> None:
    """The agent's one garbage-collector policy, set once for the whole process.

    A run is short and keeps nearly everything it makes (samples, intervals,
    points, none in a cycle) to its end: the collector's passes over them every
    700 allocations free nothing and cost 10 to 20 % of a run at 1000 NFS mounts
    (bench/RESULTS.md). It runs less often; the few cycles a run makes are still
    collected. (A pause around compute on top of this, and gc.freeze() after the
    imports, were measured too: within the noise of the bench, so neither stays.)"""
    _, second, third = gc.get_threshold()
    gc.set_threshold(max(GC_FIRST_THRESHOLD, gc.get_threshold()[0]), second, third)


# Options whose value may start with a minus (`--since -2h`, docs/doctor.md).
TIME_OPTIONS = ("--since", "--until")


def joined_times(argv: list[str]) -> list[str]:
    """`--since -2h` as `--since=-2h`: argparse takes a word that starts with a minus and is not a
    plain negative number for an option, and would say --since expected one argument."""
    out: list[str] = []
    for word in argv:
        if out and out[-1] in TIME_OPTIONS and word.startswith("-") and word[1:2].isdigit():
            out[-1] = f"{out[-1]}={word}"
        else:
            out.append(word)
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    tune_gc()
    argv = joined_times(list(sys.argv[1:] if argv is None else argv))
    args = build_parser(argv).parse_args(argv)
    setup_logging(log_level(args, "info"))
    cfg: Optional[configuration.Config] = None
    try:
        if args.command == "metrics":
            from . import catalogue

            entries = catalogue.load()
            print(catalogue.format_markdown(entries) if args.markdown else catalogue.format_table(entries))
            return EXIT_OK
        if args.command == "sql":
            return cmd_sql()
        if args.command == "init-config":
            return cmd_init_config(args.path, args.var_dir)
        if args.command == "wire":
            from .wire.command import run  # the capture decoder is loaded only for this command

            return run(args.captures, args.format, args.operations)
        if args.command == "diff":
            return cmd_diff(args.old, args.new, args.format, getattr(args, "config", None))
        if args.command == "doctor":
            if args.since is not None or args.until is not None:
                return cmd_doctor_history(
                    getattr(args, "config", None), args.captures, args.since, args.until, args.format
                )
            return cmd_doctor(
                getattr(args, "config", None), args.captures, args.interval, args.format, args.dnfs_expected
            )
        if args.command == "check":
            from . import check

            return check.run(lambda: load_config(getattr(args, "config", None)), output=args.format)
        cfg = load_config(getattr(args, "config", None))
        setup_logging(log_level(args, cfg.log_level))
        if args.command == "show":
            return cmd_show(cfg, args.measurement, args.everything, args.wide, args.format)
        if args.command == "capture":
            return cmd_capture(cfg, args.dir)
        if args.command == "top":
            return cmd_top(cfg, args.interval, args.batch, args.record)
        if args.command == "ship" and cfg.influxdb is None:
            log.error("[influxdb] enabled = true is needed to ship (config: %s)", cfg.path or "built-in defaults")
            return EXIT_USAGE
        any_failure = False
        slot_end = None
        if args.command == "collect":
            slot_end = run_slot_end(time.monotonic() - process_age_s(), args.count, args.interval)
            lock = RunLock(cfg.state_dir)
            count = take_run_lock(lock, args.count, args.interval)
            try:
                any_failure = collect(cfg, count, args.interval)
            finally:
                lock.release()
        # Shipping after the run lock is released: sampling never waits on shipping.
        if cfg.influxdb is not None and not ship_stored(cfg, args.command == "collect", slot_end):
            return EXIT_SHIP_FAILED
        return EXIT_SOURCE_FAILED if any_failure else EXIT_OK
    except (configuration.ConfigError, capture.CaptureError) as error:
        log.error("%s", error)
        return EXIT_USAGE
    except EnvironmentProblem as problem:
        log.error("%s", problem)
        return problem.exit_code
    except (LockHeld, StoreLocked) as error:
        log.error("%s; this run exits without touching state", error)
        return EXIT_LOCKED
    except BrokenPipeError:
        # The reader stopped reading (`dnfsmon metrics | head`): not an error.
        # Point stdout at /dev/null so the interpreter's final flush stays quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except OSError as error:
        log.error("%s", describe_os_error(error, cfg))
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except Exception:
        log.exception("unexpected error (a bug: please report it with this traceback)")
        return EXIT_ERROR
