"""Each command imports only what it runs.

Imports were over half of a cron run's CPU (bench/RESULTS.md): a collect that
loaded the HTTP stack, the tables of `show` or the introspection modules that
`dataclasses` pulls in paid for them every minute on every host. These tests
run each command as cron or a user runs it, in a process of its own, and name
the modules it must not load: they assert what is imported, never how long it
takes (the bench measures that).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from configs import write_config

CASES = os.path.join(os.path.dirname(__file__), "cases", "diff")

# Loaded by `dataclasses` (inspect, then ast and dis): code introspection, which no command's
# work needs. logging imports traceback (and through linecache, tokenize) itself: not listed.
INTROSPECTION = {"dataclasses", "inspect", "ast", "dis"}
# What shipping to InfluxDB needs, and only shipping.
HTTP_STACK = {"dnfsmon.influx", "dnfsmon.commands.ship", "http.client", "ssl", "gzip", "email", "urllib.request"}
# The other commands' modules, and what they alone use.
FOR_PEOPLE = {"dnfsmon.catalogue", "dnfsmon.summary", "dnfsmon.commands.show", "dnfsmon.commands.doctor", "csv"}
# Only a configured database loads these.
ORACLE = {"dnfsmon.sources.oracle", "dnfsmon.oracle_db", "dnfsmon.simulator", "oracledb"}
# Modules a run once loaded for one call each (a temporary file name, a random token, a URL check),
# now imported by the function that needs them (datetime stays: tomllib imports it).
ONE_CALL = {"tempfile", "random", "secrets", "urllib.parse", "hmac", "base64"}


def modules_after(*argv: str) -> set[str]:
    """The modules loaded by the end of `dnfsmon ARGV`, run by cli.main in a process of its own."""
    code = (
        "import json, sys; from dnfsmon import cli; rc = cli.main(sys.argv[1:]); "
        "sys.stdout.write('\\n' + json.dumps(sorted(sys.modules))); sys.exit(rc)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    assert result.returncode in (0, 3), result.stderr
    return set(json.loads(result.stdout.splitlines()[-1]))


def test_a_host_only_collect_loads_neither_the_http_stack_nor_introspection_nor_other_commands(tmp_path):
    """The cron run as the README installs it, with the five host sources of the bench's cron row
    and no [influxdb]: two samples, so that rates and the diagnosis run too."""
    cfg = write_config(tmp_path, host={"sources": ["nic", "tcp", "mountstats", "filer_tcp", "rpc"]})
    loaded = modules_after("--config", str(cfg), "-q", "collect", "--count", "2", "--interval", "0.2")
    assert {"dnfsmon.collect", "dnfsmon.diagnosis"} <= loaded  # it did run
    for unwanted in (INTROSPECTION, HTTP_STACK, FOR_PEOPLE, ORACLE, ONE_CALL):
        assert not unwanted & loaded, sorted(unwanted & loaded)
    assert "dnfsmon.capture" not in loaded  # only diff, doctor and capture read or write captures


def test_show_loads_no_sampling_no_diagnosis_and_no_http_stack(tmp_path):
    cfg = write_config(tmp_path)
    modules_after("--config", str(cfg), "-q", "collect")  # a store to show
    loaded = modules_after("--config", str(cfg), "show")
    assert {"dnfsmon.summary", "dnfsmon.catalogue"} <= loaded
    sampling = {"dnfsmon.collect", "dnfsmon.diagnosis", "dnfsmon.state", "dnfsmon.targets", "dnfsmon.sources.base"}
    for unwanted in (sampling, HTTP_STACK, INTROSPECTION, ORACLE):
        assert not unwanted & loaded, sorted(unwanted & loaded)


def test_diff_as_line_protocol_loads_no_store_tables_nor_http_stack():
    old, new = os.path.join(CASES, "basic", "old"), os.path.join(CASES, "basic", "new")
    loaded = modules_after("diff", old, new, "--format", "lp")
    assert "dnfsmon.capture" in loaded
    for unwanted in (HTTP_STACK, FOR_PEOPLE, INTROSPECTION, {"dnfsmon.commands.collect"}):
        assert not unwanted & loaded, sorted(unwanted & loaded)


def test_sql_and_init_config_load_no_agent_machinery(tmp_path):
    """Commands that print a path or write a file load no source, store or state."""
    machinery = {"dnfsmon.collect", "dnfsmon.store", "dnfsmon.state", "dnfsmon.sources.base", "dnfsmon.rates"}
    for argv in (["sql"], ["init-config", str(tmp_path / "dnfsmon.toml"), "--var-dir", str(tmp_path)]):
        loaded = modules_after(*argv)
        assert not machinery & loaded, (argv, sorted(machinery & loaded))


ARGVS = [
    ["collect"],
    ["-c", "x.toml", "-q", "collect", "--count", "6", "--interval", "9.5"],
    ["--config=x.toml", "ship", "-v"],
    ["capture", "dir"],
    ["diff", "a", "b", "--format", "lp"],
    ["show", "--measurement", "dnfsmon_nic", "--wide"],
    ["doctor", "--since=-2h", "--format", "json"],
    ["doctor", "old", "new", "--dnfs-expected", "yes"],
    ["top", "--once", "--record", "r"],
    ["sql"],
    ["metrics", "--markdown"],
    ["check", "--format", "json"],
    ["init-config", "p.toml", "--var-dir", "/v"],
    ["wire", "c.pcap", "--op", "READ"],
    ["-c", "collect", "show"],  # a config file named like a command
]


def test_the_parser_built_for_one_command_reads_its_arguments_as_the_whole_parser_does():
    """cli.build_parser builds only the sub-parser of the command argv names; with every
    command built (no command named) the same words give the same namespace."""
    import argparse

    from dnfsmon import cli

    subparsers = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert tuple(subparsers.choices) == cli.COMMANDS  # a command missing from COMMANDS would always build all
    for argv in ARGVS:
        assert cli.build_parser(argv).parse_args(argv) == cli.build_parser().parse_args(argv), argv
    assert cli.command_named(["-c", "collect", "show"]) == "show"
    assert cli.command_named(["--help"]) is None and cli.command_named(["colect"]) is None
