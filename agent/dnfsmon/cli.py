"""Command line: dnfsmon collect | ship | capture | diff | show | doctor | top | metrics | check | init-config | sql | wire.

This module parses the arguments, sets up logging and maps errors to exit
codes; each command's work is a module of its own under dnfsmon.commands,
imported only when that command runs. Imports were over half of a cron run's
CPU (bench/RESULTS.md): a collect loads neither show's tables, nor doctor's
printing, nor the HTTP stack of ship unless [influxdb] is enabled.
"""

from __future__ import annotations

import argparse
import errno
import gc
import logging
import os
import sys
from collections.abc import Sequence
from typing import Optional

from . import __version__
from . import config as configuration
from .errors import CaptureError, EnvironmentProblem, LockHeld, StoreLocked

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


# Every command, in the order of `dnfsmon --help`.
COMMANDS = (
    "collect",
    "ship",
    "capture",
    "diff",
    "show",
    "doctor",
    "top",
    "sql",
    "metrics",
    "check",
    "init-config",
    "wire",
)


def command_named(argv: Sequence[str]) -> Optional[str]:
    """The command argv names, as argparse will read it: the first word that is neither an
    option nor the value of -c/--config; None when that word is no command (or there is none)."""
    words = iter(argv)
    for word in words:
        if word in ("-c", "--config"):
            next(words, None)
        elif not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


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

    # Only the command named in argv gets its sub-parser: argparse makes a help formatter
    # for every option it adds and looks each message up with gettext, some 10 ms of a
    # cron run's CPU for eleven commands it does not run. Without a known command name
    # (dnfsmon --help, a typo) every command is built, for the listing and the error.
    named = command_named(argv)

    def wanted(name: str) -> bool:
        return named is None or name == named

    if wanted("collect"):
        p = command(
            "collect",
            "one cron run: sample, diff, store",
            "Take samples, diff them against the previous ones and store the points.",
        )
        p.add_argument("--count", type=_positive_int, default=1, help="samples to take in this run (default: 1)")
        p.add_argument("--interval", type=_positive_float, default=10.0, help="seconds between samples (default: 10)")

    if wanted("ship"):
        command(
            "ship",
            "send the stored points to InfluxDB",
            "Send every stored point not yet acknowledged to InfluxDB ([influxdb] in the config).",
        )

    if wanted("capture"):
        p = command(
            "capture",
            "write every source's raw inputs to a directory",
            "Write every source's raw inputs and clocks to DIR (see docs/capture-format.md).",
        )
        p.add_argument("dir", help="directory to write (created if needed)")

    if wanted("diff"):
        p = command(
            "diff",
            "compute all metrics between two captures",
            "Compute every metric between two captures, offline, with collect's code.",
        )
        p.add_argument("old", help="earlier capture directory")
        p.add_argument("new", help="later capture directory")
        p.add_argument(
            "--format", choices=("table", "json", "lp"), default="table", help="output format (default: table)"
        )

    if wanted("show"):
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

    if wanted("doctor"):
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

    if wanted("top"):
        p = command(
            "top",
            "live full-screen view of dNFS, the paths, the NICs and the mounts",
            "Refresh a full-screen view every interval, computed with collect's code, "
            "without the agent's state or store (docs/top.md). Keys: i p n m f views, q quit.",
        )
        p.add_argument("--interval", type=_positive_float, default=5.0, help="seconds between refreshes (default: 5)")
        group = p.add_mutually_exclusive_group()
        group.add_argument(
            "--batch", type=_positive_int, metavar="N", help="print N refreshes as plain text, then exit"
        )
        group.add_argument("--once", action="store_const", const=1, dest="batch", help="the same as --batch 1")
        p.add_argument("--record", metavar="DIR", help="write each refresh's raw inputs to DIR/NNNN (capture format)")

    if wanted("sql"):
        p = command(
            "sql",
            "print the directory of the SQL pack installed with the agent",
            "Print the directory of the SQL*Plus pack installed with the agent, for cd or SQLPATH: "
            'run it from a copy you can write to (it saves your settings there): cp -R "$(dnfsmon sql)/." '
            "~/dnfsmon-sql && cd ~/dnfsmon-sql && sqlplus USER@DB @dnfs_iops (sql/README.md).",
        )
        p.formatter_class = argparse.RawDescriptionHelpFormatter
        if named == "sql":
            # The listing reads the header of every script in the pack: only `dnfsmon sql --help`
            # shows it, so `dnfsmon --help` does not open some 30 files for it.
            from .commands.sql import sql_pack_listing

            p.epilog = sql_pack_listing()

    if wanted("metrics"):
        p = command("metrics", "print the metric catalogue", "Print every measurement, tag and field.")
        p.add_argument("--markdown", action="store_true", help="as the Markdown of docs/metrics.md")

    if wanted("check"):
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

    if wanted("init-config"):
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

    if wanted("wire"):
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


class CronFormatter(logging.Formatter):
    """One format for every message: ISO 8601 local time with its zone, so lines appended
    to a log file by cron can be matched with an incident (2026-01-31T03:00:01+01:00)."""

    def formatTime(self, record: logging.LogRecord, datefmt: Optional[str] = None) -> str:
        import datetime  # loaded anyway by every command that reads a config (tomllib imports it)

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
    # Each command's module is imported here, when it runs (see the module's docstring).
    try:
        if args.command == "metrics":
            from . import catalogue

            entries = catalogue.load()
            print(catalogue.format_markdown(entries) if args.markdown else catalogue.format_table(entries))
            return EXIT_OK
        if args.command == "sql":
            from .commands.sql import cmd_sql

            return cmd_sql()
        if args.command == "init-config":
            from .commands.init_config import cmd_init_config

            return cmd_init_config(args.path, args.var_dir)
        if args.command == "wire":
            from .wire.command import run  # the capture decoder is loaded only for this command

            return run(args.captures, args.format, args.operations)
        if args.command == "diff":
            from .commands.diff import cmd_diff

            return cmd_diff(args.old, args.new, args.format, getattr(args, "config", None))
        if args.command == "doctor":
            from .commands import doctor

            if args.since is not None or args.until is not None:
                return doctor.cmd_doctor_history(
                    getattr(args, "config", None), args.captures, args.since, args.until, args.format
                )
            return doctor.cmd_doctor(
                getattr(args, "config", None), args.captures, args.interval, args.format, args.dnfs_expected
            )
        if args.command == "check":
            from . import check

            return check.run(lambda: load_config(getattr(args, "config", None)), output=args.format)
        cfg = load_config(getattr(args, "config", None))
        setup_logging(log_level(args, cfg.log_level))
        if args.command == "show":
            from .commands.show import cmd_show

            return cmd_show(cfg, args.measurement, args.everything, args.wide, args.format)
        if args.command == "capture":
            from .commands.capture import cmd_capture

            return cmd_capture(cfg, args.dir)
        if args.command == "top":
            from .commands.top import cmd_top

            return cmd_top(cfg, args.interval, args.batch, args.record)
        if args.command == "ship" and cfg.influxdb is None:
            log.error("[influxdb] enabled = true is needed to ship (config: %s)", cfg.path or "built-in defaults")
            return EXIT_USAGE
        any_failure = False
        slot_end = None
        if args.command == "collect":
            from .commands.collect import cmd_collect

            any_failure, slot_end = cmd_collect(cfg, args.count, args.interval)
        # Shipping after the run lock is released: sampling never waits on shipping.
        if cfg.influxdb is not None:
            from .commands.ship import ship_stored

            if not ship_stored(cfg, args.command == "collect", slot_end):
                return EXIT_SHIP_FAILED
        return EXIT_SOURCE_FAILED if any_failure else EXIT_OK
    except (configuration.ConfigError, CaptureError) as error:
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
