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
from .points import Point, to_line
from .state import LockHeld, RunLock
from .store import Store
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

    p = sub.add_parser(
        "wire",
        help="NFS service times from packet captures, split client/network/server",
        description="Per NFS operation service times from a pcap/pcapng capture; with a client and a server "
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


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
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


def format_points(points: Iterable[Point], header: str = "") -> str:
    """Points as text for people: one block per series, fields with units."""
    entries = catalogue.load()
    lines = [header] if header else []
    for point in points:
        tags = " ".join(f"{k}={v}" for k, v in point.tags)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(point.time_ns / 1e9))
        lines.append(f"{point.measurement} {tags}  @ {stamp}")
        for name, value in sorted(point.fields.items()):
            entry = entries.get((point.measurement, "field", name))
            lines.append(f"    {name:<24} {format_value(value, entry.unit if entry else '')}")
    return "\n".join(lines)


def cmd_show(cfg: configuration.Config, measurement: Optional[str], everything: bool) -> int:
    store = Store(cfg.store_dir, cfg.store_max_bytes)
    latest, total = summary.latest_per_series(p for p in store.points() if measurement in (None, p.measurement))
    if not latest:
        print(
            f"The local store {cfg.store_dir} holds no points{' of ' + measurement if measurement else ''} yet: "
            "run `dnfsmon collect` at least twice (the first sample of anything is a baseline)."
        )
        return EXIT_OK
    print(f"Local store {cfg.store_dir}: {total} points in {len(latest)} series; the latest of each:\n")
    if everything or measurement:
        print(format_points(p for _, p in sorted(latest.items(), key=lambda item: item[0])))
    else:
        print(summary.render(latest))
    if measurement is None:
        seen = {m for m, _ in latest}
        absent = sorted({(e.measurement, e.source) for e in catalogue.load().values() if e.measurement not in seen})
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


def ship_stored(cfg: configuration.Config) -> bool:
    """Ship the store to InfluxDB; False when InfluxDB failed (logged, points kept)."""
    from .influx import ShipError, ship  # influxdb-client is imported only when shipping

    assert cfg.influxdb is not None
    try:
        report = ship(Store(cfg.store_dir, cfg.store_max_bytes), cfg.influxdb)
    except ShipError as error:
        log.error("%s; the points stay in %s for the next run", error, cfg.store_dir)
        return False
    log.info("shipped %d points to %s (%d quarantined)", report.sent, cfg.influxdb.url, report.quarantined)
    return True


def setup_logging(level: str) -> None:
    logging.basicConfig(stream=sys.stderr, format="dnfsmon %(levelname)s: %(message)s", level=level.upper())


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "metrics":
        print(catalogue.format_table(catalogue.load()))
        return EXIT_OK
    if args.command == "wire":
        from .wire.command import run  # the capture decoder is loaded only for this command

        return run(args.captures, args.format, args.operations)
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
        os.makedirs(cfg.state_dir, mode=0o750, exist_ok=True)
        if args.command == "ship" and cfg.influxdb is None:
            print(
                f"dnfsmon: [influxdb] enabled = true is needed to ship (config: {cfg.path or 'built-in defaults'})",
                file=sys.stderr,
            )
            return EXIT_USAGE
        with RunLock(cfg.state_dir):
            any_failure = collect(cfg, args.count, args.interval) if args.command == "collect" else False
            if cfg.influxdb is not None and not ship_stored(cfg):
                return EXIT_SHIP_FAILED
        return EXIT_SOURCE_FAILED if any_failure else EXIT_OK
    except (configuration.ConfigError, capture.CaptureError) as error:
        print(f"dnfsmon: {error}", file=sys.stderr)
        return EXIT_USAGE
    except LockHeld as error:
        print(f"dnfsmon: {error}; this run exits without touching state", file=sys.stderr)
        return EXIT_LOCKED
    except KeyboardInterrupt:
        return 130
    except Exception:
        log.exception("unexpected error")
        return EXIT_ERROR
