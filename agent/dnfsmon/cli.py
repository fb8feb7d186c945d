"""Command line: dnfsmon collect | capture | diff | show | metrics."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Iterable, Sequence
from typing import Optional

from . import __version__, capture, catalogue, summary
from . import config as configuration
from .collect import collect, diff_captures, read_targets, report
from .errors import EnvironmentProblem
from .points import Point, to_line
from .state import LockHeld, RunLock
from .store import SHIP_LOCK, Store, StoreLocked
from .targets import targets_from

# Exit codes, also listed in README.md ("Exit codes").
EXIT_OK = 0
EXIT_ERROR = 1  # unexpected error (a bug): the traceback is logged
EXIT_USAGE = 2  # bad arguments, bad config, bad capture
EXIT_SOURCE_FAILED = 3  # the run completed, but at least one source failed (logged)
EXIT_SHIP_FAILED = 4  # points stored, but InfluxDB could not take them now (a later run sends them)
EXIT_LOCKED = 75  # another run holds the lock (EX_TEMPFAIL): nothing was touched
EXIT_CODES = {
    EXIT_OK: "success",
    EXIT_ERROR: "unexpected error (a bug; the traceback is logged)",
    EXIT_USAGE: "bad arguments, configuration or capture (the message names it)",
    EXIT_SOURCE_FAILED: "completed, but at least one source failed (logged); other sources' points were stored",
    EXIT_SHIP_FAILED: "points are in the local store, but InfluxDB could not take them now; a later run sends them",
    EXIT_LOCKED: "another dnfsmon run holds the lock; nothing was touched",
}

log = logging.getLogger("dnfsmon")


def build_parser() -> argparse.ArgumentParser:
    epilog = "exit codes:\n" + "\n".join(f"  {code:<3} {text}" for code, text in EXIT_CODES.items())
    parser = argparse.ArgumentParser(
        prog="dnfsmon",
        description="Monitoring agent for Oracle Direct NFS and the host beneath it.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=epilog,
    )
    parser.add_argument("--version", action="version", version=f"dnfsmon {__version__}")
    parser.add_argument(
        "-c",
        "--config",
        default=None,
        help=f"TOML config file (default: {configuration.DEFAULT_PATH} if it exists, else built-in defaults)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    defaults = argparse.ArgumentDefaultsHelpFormatter

    p = sub.add_parser(
        "collect",
        help="one cron run: sample, diff, store",
        formatter_class=defaults,
        description="Take samples, diff them against the previous ones and store the points.",
    )
    p.add_argument("--count", type=_positive_int, default=1, help="samples to take in this run")
    p.add_argument("--interval", type=_positive_float, default=10.0, help="seconds between samples")

    sub.add_parser(
        "ship",
        help="send the stored points to InfluxDB",
        description="Send every stored point not yet acknowledged to InfluxDB ([influxdb] in the config).",
    )

    p = sub.add_parser(
        "capture",
        help="write every source's raw inputs to a directory",
        description="Write every source's raw inputs and clocks to DIR (see README, Capture format).",
    )
    p.add_argument("dir", help="directory to write (created if needed)")

    p = sub.add_parser(
        "diff",
        help="compute all metrics between two captures",
        formatter_class=defaults,
        description="Compute every metric between two captures, offline, with collect's code.",
    )
    p.add_argument("old", help="earlier capture directory")
    p.add_argument("new", help="later capture directory")
    p.add_argument("--format", choices=("table", "json", "lp"), default="table", help="output format")

    p = sub.add_parser(
        "show",
        help="summarise the points in the local store",
        formatter_class=defaults,
        description="Print the latest point of every series in the local store as tables, with units.",
    )
    p.add_argument("--measurement", default=None, help="every field of this measurement only (e.g. dnfsmon_nic)")
    p.add_argument("--all", action="store_true", dest="everything", help="every field of every series")

    sub.add_parser("metrics", help="print the metric catalogue", description="Print every measurement, tag and field.")
    return parser


# Bounds of --count and --interval: a typo must not make a run sleep for years holding the lock.
MAX_COUNT = 10000
MAX_INTERVAL_S = 3600.0


def _positive_int(text: str) -> int:
    value = int(text)
    if not 0 < value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to {MAX_COUNT}, got {text}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not 0 < value <= MAX_INTERVAL_S:
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, at most {MAX_INTERVAL_S:g}, got {text}")
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
    entries = catalogue.load()
    lines = [header] if header else []
    for point in points:
        tags = " ".join(f"{k}={v}" for k, v in point.tags)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(point.time_ns / 1e9))
        age = f" ({summary.age(now_ns - point.time_ns)} ago)" if now_ns is not None else ""
        lines.append(f"{point.measurement} {tags}  @ {stamp}{age}")
        for name, value in sorted(point.fields.items()):
            entry = entries.get((point.measurement, "field", name))
            lines.append(f"    {name:<24} {format_value(value, entry.unit if entry else '')}")
    return "\n".join(lines)


def cmd_show(cfg: configuration.Config, measurement: Optional[str], everything: bool) -> int:
    """Read-only: creates, locks and writes nothing, so any user who can read the store can run it."""
    entries = catalogue.load()
    known = sorted({e.measurement for e in entries.values()})
    if measurement is not None and measurement not in known:
        print(
            f"dnfsmon: show --measurement {measurement}: no such measurement; known: {', '.join(known)}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if not os.path.isdir(cfg.store_dir):
        print(
            f"The local store {cfg.store_dir} holds no points yet (it does not exist): run `dnfsmon collect` "
            f"(config: {cfg.path or 'built-in defaults'})."
        )
        return EXIT_OK
    store = Store(cfg.store_dir, cfg.store_max_bytes, read_only=True)
    try:
        latest = summary.latest_of(store)
    except PermissionError as error:
        raise EnvironmentProblem(
            f"cannot read the store {cfg.store_dir} ({error.strerror}): run show as the agent's user or a member of its group"
        ) from None
    latest = {key: p for key, p in latest.items() if measurement in (None, p.measurement)}
    if not latest:
        print(
            f"The local store {cfg.store_dir} holds no points{' of ' + measurement if measurement else ''} yet: "
            "run `dnfsmon collect` at least twice (the first sample of anything is a baseline)."
        )
        return EXIT_OK
    now_ns = time.time_ns()
    print(f"Local store {cfg.store_dir}: {len(latest)} series; the latest point of each, and its age:\n")
    if everything or measurement:
        print(format_points((p for _, p in sorted(latest.items(), key=lambda item: item[0])), now_ns=now_ns))
    else:
        print(summary.render(latest, now_ns))
    if measurement is None:
        seen = {m for m, _ in latest}
        absent = sorted({(e.measurement, e.source) for e in entries.values() if e.measurement not in seen})
        if absent:
            print("\nNo points (nothing of this kind on this host, or the source is not configured):")
            for name, source in absent:
                print(f"    {name:<32} source {source}")
    return EXIT_OK


def cmd_diff(old: str, new: str, output: str) -> int:
    baseline, outcome = diff_captures(old, new)
    report(baseline)
    report(outcome)
    if output == "json":
        print(json.dumps([p.to_json() for p in outcome.points], indent=1, sort_keys=True))
    elif output == "lp":
        for point in outcome.points:
            print(to_line(point))
    else:
        print(format_points(outcome.points) or "no points: see the log for why")
    return EXIT_SOURCE_FAILED if outcome.failures else EXIT_OK


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


def ship_stored(cfg: configuration.Config, after_collect: bool) -> bool:
    """Ship the store to InfluxDB; False when InfluxDB failed (logged, points kept).

    Shipping holds the store's own ship.lock, not the run lock: a slow
    InfluxDB never delays the next run's samples. After a collect, a ship
    already under way (an earlier run's) is left to finish its work.
    """
    from .influx import ShipError, ship  # influxdb-client is imported only when shipping

    assert cfg.influxdb is not None
    store = Store(cfg.store_dir, cfg.store_max_bytes)
    try:
        with RunLock(cfg.store_dir, SHIP_LOCK):
            report = ship(store, cfg.influxdb)
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


def setup_logging(level: str) -> None:
    logging.basicConfig(stream=sys.stderr, format="dnfsmon %(levelname)s: %(message)s", level=level.upper())


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "metrics":
        print(catalogue.format_table(catalogue.load()))
        return EXIT_OK
    try:
        if args.command == "diff":
            setup_logging("info")
            return cmd_diff(args.old, args.new, args.format)
        cfg = load_config(args.config)
        setup_logging(cfg.log_level)
        if args.command == "show":
            return cmd_show(cfg, args.measurement, args.everything)
        if args.command == "capture":
            return cmd_capture(cfg, args.dir)
        if args.command == "ship" and cfg.influxdb is None:
            print(
                f"dnfsmon: [influxdb] enabled = true is needed to ship (config: {cfg.path or 'built-in defaults'})",
                file=sys.stderr,
            )
            return EXIT_USAGE
        any_failure = False
        if args.command == "collect":
            with RunLock(cfg.state_dir):
                any_failure = collect(cfg, args.count, args.interval)
        if cfg.influxdb is not None and not ship_stored(cfg, after_collect=args.command == "collect"):
            return EXIT_SHIP_FAILED
        return EXIT_SOURCE_FAILED if any_failure else EXIT_OK
    except (configuration.ConfigError, capture.CaptureError) as error:
        print(f"dnfsmon: {error}", file=sys.stderr)
        return EXIT_USAGE
    except EnvironmentProblem as error:
        print(f"dnfsmon: {error}", file=sys.stderr)
        return error.exit_code
    except (LockHeld, StoreLocked) as error:
        print(f"dnfsmon: {error}; this run exits without touching state", file=sys.stderr)
        return EXIT_LOCKED
    except KeyboardInterrupt:
        return 130
    except Exception:
        log.exception("unexpected error")
        return EXIT_ERROR
