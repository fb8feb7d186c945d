"""Sources built from their configuration: the registry, the filters, what a run imports."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from configs import write_config
from dnfsmon import config
from dnfsmon.sources import HOST_SOURCES, build, build_all, mountstats, nic
from dnfsmon.sources.base import Raw

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


def mountstats_raw(t: float = 100.0) -> Raw:
    with open(os.path.join(FIXTURES, "mountstats", "telegraf-testdata.mountstats"), encoding="utf-8") as f:
        return Raw({mountstats.MOUNTSTATS: f.read()}, t, 1_700_000_000 + t)


def configured(**sections) -> config.Config:
    return config.parse(sections, None)


def test_every_host_source_is_built_from_the_defaults():
    sources = build_all(HOST_SOURCES)
    assert list(sources) == list(HOST_SOURCES)
    assert all(source.name == name for name, source in sources.items())


def test_default_operations_are_the_six_the_dashboards_and_doctor_need():
    found = build("mountstats").parse(mountstats_raw(), "h").samples
    ops = {op for s in found if isinstance(s, mountstats.MountOps) for op, _ in s.layout.operations}
    assert ops == {"READ", "WRITE", "COMMIT", "GETATTR", "ACCESS", "LOOKUP"}
    every = build("mountstats", configured(mountstats={"operations": ["all"]})).parse(mountstats_raw(), "h").samples
    assert sum(map(len, (s.counters for s in every))) > sum(map(len, (s.counters for s in found)))
    # The filter removes series, never changes one: each counter kept is the same in both.
    kept = {s.state_key: s for s in every}
    assert all(kept[s.state_key].counters[name] == value for s in found for name, value in s.counters.items())


@pytest.mark.parametrize(
    "include, exclude, expected",
    [
        (["*"], [], ["/A", "/B", "/C", "/D"]),
        (["/A", "/C"], [], ["/A", "/C"]),
        (["*"], ["/[BD]"], ["/A", "/C"]),
        (["/nothing*"], [], []),
    ],
)
def test_mount_globs_include_then_exclude(include, exclude, expected):
    source = build("mountstats", configured(mountstats={"include_mounts": include, "exclude_mounts": exclude}))
    found = source.parse(mountstats_raw(), "h").samples
    assert sorted({dict(s.key)["mountpoint"] for s in found}) == expected


def test_interface_globs_include_then_exclude():
    text = open(os.path.join(FIXTURES, "proc", "net", "dev"), encoding="utf-8").read()
    raw = Raw({nic.NET_DEV: text}, 1.0, 1.0)
    source = build("nic", configured(nic={"exclude_interfaces": ["lo", "ifb*"]}))
    assert {dict(s.key)["interface"] for s in source.parse(raw, "h").samples} == {"eth0"}


def test_filer_globs_include_then_exclude():
    import json

    from dnfsmon.sources import filer_tcp

    sockets = [
        {"src": "10.0.0.1", "sport": p, "dst": dst, "dport": 2049, "cookie": p, "tcp_info": {"bytes_acked": 1}}
        for p, dst in ((700, "10.1.0.5"), (701, "10.2.0.5"), (702, "10.1.0.6"))
    ]
    raw = Raw({filer_tcp.SOCKETS: json.dumps({"sockets": sockets, "interfaces": {}})}, 1.0, 1.0)
    source = build("filer_tcp", configured(filer_tcp={"include_filers": ["10.1.*"], "exclude_filers": ["*.6"]}))
    assert {dict(s.key)["server"] for s in source.parse(raw, "h").samples} == {"10.1.0.5"}
    assert len(build("filer_tcp").parse(raw, "h").samples) == 3


@pytest.mark.parametrize(
    "section, key, value",
    [
        ("mountstats", "operations", []),
        ("mountstats", "operations", "READ"),
        ("mountstats", "include_mounts", []),
        ("mountstats", "exclude_mounts", [""]),
        ("nic", "include_interfaces", [1]),
    ],
)
def test_a_bad_filter_is_refused_naming_the_key(section, key, value):
    with pytest.raises(config.ConfigError, match=rf"\[{section}\] {key}"):
        config.parse({section: {key: value}}, None)


def test_two_sources_of_one_kind_keep_their_own_memory():
    """The layouts a source met live in it: a second source starts with none, whatever the first saw."""
    first, second = build("mountstats"), build("mountstats")
    first.parse(mountstats_raw(100.0), "h")
    assert first.layouts and not second.layouts  # type: ignore[attr-defined]
    again = first.parse(mountstats_raw(110.0), "h").samples
    fresh = second.parse(mountstats_raw(110.0), "h").samples
    assert [(s.state_key, s.counters) for s in again] == [(s.state_key, s.counters) for s in fresh]


def modules_after_collect(config) -> set[str]:
    """The dnfsmon modules loaded by the end of a two-sample `collect`, run by cli.main in a
    process of its own (as cron runs it)."""
    code = (
        "import sys; from dnfsmon import cli; "
        f"rc = cli.main(['--config', {str(config)!r}, '-q', 'collect', '--count', '2', '--interval', '0.2']); "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('dnfsmon')))); sys.exit(rc)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return set(result.stdout.split())


def test_a_run_imports_only_the_sources_its_config_names(tmp_path):
    """Importing a source costs CPU in every cron run (the Oracle package alone about 10 ms):
    [host] sources = ["nic", "tcp"] and no database loads nic and tcp, no other source, no Oracle code."""
    cfg = write_config(tmp_path, host={"sources": ["nic", "tcp"]})
    loaded = modules_after_collect(cfg)
    assert {"dnfsmon.sources.nic", "dnfsmon.sources.tcp"} <= loaded
    unread = [f"dnfsmon.sources.{name}" for name in HOST_SOURCES if name not in ("nic", "tcp")]
    unread += ["dnfsmon.sources.oracle", "dnfsmon.oracle_facts", "dnfsmon.oracle_db", "dnfsmon.simulator"]
    assert [name for name in unread if name in loaded] == []


def test_a_run_with_a_database_imports_the_oracle_source(tmp_path):
    cfg = write_config(tmp_path, host={"sources": ["nic"]}, simulator={"enabled": True})
    loaded = modules_after_collect(cfg)
    assert {"dnfsmon.sources.oracle", "dnfsmon.sources.oracle.parsers", "dnfsmon.simulator"} <= loaded
    assert "dnfsmon.sources.tcp" not in loaded


def test_every_oracle_measurement_starts_with_a_database_prefix():
    """The diagnosis tells a database's points by prefix, without importing the Oracle package."""
    from dnfsmon.diagnosis import DATABASE_PREFIXES
    from dnfsmon.sources.oracle import names

    assert [m for m in names.MEASUREMENTS if not m.startswith(DATABASE_PREFIXES)] == []
