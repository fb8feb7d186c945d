"""Config validation, the documented example, and secrets."""

from __future__ import annotations

import os
import re
import sys

import pytest

from dnfsmon import config
from dnfsmon.config import ConfigError
from dnfsmon.errors import EnvironmentProblem
from runner import run_dnfsmon

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

EXAMPLE = os.path.join(os.path.dirname(config.__file__), "example.toml")
README = os.path.join(os.path.dirname(__file__), "..", "docs", "configuration.md")


def example_defaults():
    """(section, key) -> value of every commented-out default in example.toml."""
    section, found = None, {}
    for line in open(EXAMPLE, encoding="utf-8"):
        header = re.match(r"^\[(\w+)\]", line)
        if header:
            section = header.group(1)
        option = re.match(r"^# (\w+) = (.*)$", line)
        if option:
            found[(section, option.group(1))] = tomllib.loads(f"v = {option.group(2)}")["v"]
    return found


def test_example_documents_every_option_with_its_real_default():
    documented = example_defaults()
    assert set(documented) == set(config.OPTIONS)
    for key, (default, _, _) in config.OPTIONS.items():
        assert documented[key] == default, key


def test_every_example_option_has_an_explanation_above_it():
    lines = open(EXAMPLE, encoding="utf-8").read().splitlines()
    for number, line in enumerate(lines):
        if re.match(r"^# \w+ = ", line):
            assert lines[number - 1].startswith("## "), f"example.toml:{number + 1} lacks a ## explanation"


def test_configuration_doc_shows_the_example_verbatim():
    assert open(EXAMPLE, encoding="utf-8").read().strip() in open(README, encoding="utf-8").read()


def test_example_with_defaults_uncommented_loads(tmp_path):
    text = re.sub(r"^# (\w+ = )", r"\1", open(EXAMPLE, encoding="utf-8").read(), flags=re.M)
    path = tmp_path / "dnfsmon.toml"
    path.write_text(text)
    cfg = config.load(str(path))
    assert cfg.state_dir == "/var/lib/dnfsmon/state"
    assert cfg.host_sources == ["nic", "tcp", "mountstats", "filer_tcp", "rpc", "routes", "pressure"]
    assert cfg.nfs_ports == [2049]
    assert cfg.host  # system host name


@pytest.mark.parametrize(
    "text, message",
    [
        ("[store]\nmax_bytes = -1\n", "[store] max_bytes = -1: must be a whole number from 4096 to"),
        ("[store]\nmax_bytes = true\n", "[store] max_bytes = True: must be a whole number from 4096 to"),
        ("[agent]\nlog_level = 'loud'\n", "[agent] log_level = 'loud': must be one of debug, info, warning, error"),
        ("[host]\nsources = ['nic', 'nfs']\n", "[host] sources = ['nic', 'nfs']: unknown source 'nfs'"),
        ("[host]\nproc_rot = '/proc'\n", "unknown key [host] proc_rot"),
        (
            "[host]\nnfs_ports = [2049, 70000]\n",
            "[host] nfs_ports = [2049, 70000]: must be a non-empty list of TCP port numbers",
        ),
        ("[host]\nnfs_ports = []\n", "[host] nfs_ports = []: must be a non-empty list"),
        ("[influx]\nurl = 'x'\n", "unknown section [influx]"),
        ("[agent\n", "not valid TOML"),
    ],
)
def test_validation_names_the_key_and_value(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as error:
        config.load(str(path))
    assert message in str(error.value)
    assert str(path) in str(error.value)


@pytest.mark.parametrize("spelling", ["info", "INFO", "Info", "Warning"])
def test_log_level_is_accepted_in_any_case_and_stored_lower_case(tmp_path, spelling):
    path = tmp_path / "c.toml"
    path.write_text(f"[agent]\nlog_level = '{spelling}'\n")
    assert config.load(str(path)).log_level == spelling.lower()


@pytest.mark.parametrize("level", ["'verbose'", "''", "3"])
def test_an_unknown_log_level_is_one_line_naming_the_setting_and_the_levels_exit_2(tmp_path, level):
    path = tmp_path / "c.toml"
    path.write_text(f"[agent]\nstate_dir = 'state'\nlog_level = {level}\n[store]\ndir = 'store'\n")
    result = run_dnfsmon("--config", path, "collect")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert (
        f"[agent] log_level = {tomllib.loads('v = ' + level)['v']!r}: must be one of debug, info, warning, error"
        in (result.stderr)
    )
    assert not (tmp_path / "state").exists()  # nothing touched


def test_a_capitalised_log_level_sets_the_level_of_a_run(tmp_path):
    """WARNING, as Python's logging spells it: the run's INFO summary line is not printed."""
    path = tmp_path / "c.toml"
    path.write_text(
        "[agent]\nstate_dir = 'state'\nlog_level = 'WARNING'\n[store]\ndir = 'store'\n[host]\nsources = ['tcp']\n"
    )
    quiet = run_dnfsmon("--config", path, "collect")
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    path.write_text(path.read_text().replace("'WARNING'", "'Info'"))
    told = run_dnfsmon("--config", path, "collect")
    assert told.returncode == 0 and " INFO: " in told.stderr, told.stderr


def test_relative_paths_are_relative_to_the_config_file(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("[agent]\nstate_dir = 'st'\n[store]\ndir = '/abs/store'\n")
    cfg = config.load(str(path))
    assert cfg.state_dir == str(tmp_path / "st")
    assert cfg.store_dir == "/abs/store"


def test_missing_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match=r"nope\.toml does not exist"):
        config.load(str(tmp_path / "nope.toml"))


def test_secret_from_owner_only_file(tmp_path):
    path = tmp_path / "token"
    path.write_text("s3cret\n")
    os.chmod(path, 0o600)
    assert config.read_secret(str(path), "X_UNUSED", "InfluxDB token") == "s3cret"


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644])
def test_group_or_world_readable_secret_file_is_refused(tmp_path, mode):
    path = tmp_path / "token"
    path.write_text("s3cret\n")
    os.chmod(path, mode)
    with pytest.raises(EnvironmentProblem) as error:
        config.read_secret(str(path), None, "InfluxDB token")
    assert f"mode {mode:04o}" in str(error.value) and str(path) in str(error.value)
    assert "s3cret" not in str(error.value)


def test_secret_from_environment_and_missing_secret(monkeypatch):
    monkeypatch.setenv("DNFSMON_TEST_SECRET", "from-env")
    assert config.read_secret(None, "DNFSMON_TEST_SECRET", "Oracle password") == "from-env"
    monkeypatch.delenv("DNFSMON_TEST_SECRET")
    with pytest.raises(ConfigError, match=r"no Oracle password.*DNFSMON_TEST_SECRET"):
        config.read_secret(None, "DNFSMON_TEST_SECRET", "Oracle password")


def test_influxdb_section_is_off_by_default_and_verifies_tls_when_on(tmp_path):
    assert config.parse({}, None).influxdb is None
    on = config.parse(
        {"influxdb": {"enabled": True, "bucket": "telegraf/autogen", "token_file": "tok"}}, str(tmp_path / "c.toml")
    ).influxdb
    assert on.verify_tls is True and on.gzip is True and on.bucket == "telegraf/autogen"
    assert on.token_file == str(tmp_path / "tok")  # relative to the config file
    assert on.ca_file == ""  # empty paths stay empty


@pytest.mark.parametrize(
    "table, message",
    [
        (
            {"enabled": True, "url": "localhost:8086"},
            "[influxdb] url = 'localhost:8086': must be an http:// or https:// URL",
        ),
        ({"enabled": True, "bucket": ""}, "[influxdb] bucket = '': must name a bucket"),
        ({"enabled": "yes"}, "[influxdb] enabled = 'yes': must be true or false"),
        ({"timeout_s": 0}, "[influxdb] timeout_s = 0: must be a number from 0.01 to 300"),
        ({"max_retries": -1}, "[influxdb] max_retries = -1: must be a whole number"),
    ],
)
def test_influxdb_validation(table, message):
    with pytest.raises(ConfigError) as error:
        config.parse({"influxdb": table}, None)
    assert message in str(error.value)
