"""Ansible: lint, syntax, the agent role applied for real to this machine, the other roles as far as it allows."""

from __future__ import annotations

import grp
import json
import os
import pathlib
import pwd
import re
import shutil
import stat
import subprocess
import sys
import tempfile

import pytest
import yaml

try:
    import tomllib
except ImportError:  # Python 3.9/3.10
    import tomli as tomllib

from dnfsmon import __version__, config
from dnfsmon.store import Store

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
ANSIBLE = os.path.join(ROOT, "ansible")
HERE = os.path.join(ROOT, "tests", "ansible")
BIN = os.path.dirname(sys.executable)
USER = "dnfsmon_t"
CRON_FILE = "dnfsmon-test"


def playbook(name, extra_vars, *flags, env=None):
    """Run a playbook; (returncode, changed count, output)."""
    environment = dict(
        os.environ,
        ANSIBLE_ROLES_PATH=os.path.join(ANSIBLE, "roles"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCALHOST_WARNING="false",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
        **(env or {}),
    )
    extra_vars = dict(extra_vars, ansible_python_interpreter=sys.executable)
    result = subprocess.run(
        [os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", name, "-e", json.dumps(extra_vars), *flags],
        capture_output=True,
        text=True,
        cwd=ANSIBLE if name == "site.yml" else HERE,
        env=environment,
        timeout=900,
    )
    recap = re.search(r"localhost\s+: ok=\d+\s+changed=(\d+)", result.stdout)
    return result.returncode, int(recap.group(1)) if recap else -1, result.stdout + result.stderr


@pytest.mark.slow
def test_ansible_lint_production_profile_passes():
    result = subprocess.run(
        [os.path.join(BIN, "ansible-lint"), "--profile", "production", "--nocolor"],
        capture_output=True,
        text=True,
        cwd=ANSIBLE,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "path",
    [os.path.join(ANSIBLE, "site.yml")]
    + [os.path.join(HERE, p) for p in sorted(os.listdir(HERE)) if p.endswith(".yml")],
    ids=os.path.basename,
)
def test_syntax_check(path):
    result = subprocess.run(
        [os.path.join(BIN, "ansible-playbook"), "--syntax-check", "-i", "localhost,", path],
        capture_output=True,
        text=True,
        env=dict(os.environ, ANSIBLE_ROLES_PATH=os.path.join(ANSIBLE, "roles")),
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def role_defaults(role):
    with open(os.path.join(ANSIBLE, "roles", role, "defaults", "main.yml"), encoding="utf-8") as f:
        return yaml.safe_load(f)


@pytest.mark.parametrize("role", ["dnfsmon_agent", "dnfsmon_oracle_user", "dnfsmon_grafana"])
def test_argument_specs_mirror_every_default(role):
    with open(os.path.join(ANSIBLE, "roles", role, "meta", "argument_specs.yml"), encoding="utf-8") as f:
        options = yaml.safe_load(f)["argument_specs"]["main"]["options"]
    defaults = role_defaults(role)
    assert set(options) == set(defaults), role
    for name, spec in options.items():
        assert spec.get("description"), name
        if "default" in spec:
            assert spec["default"] == defaults[name], name
    readme = open(os.path.join(ANSIBLE, "roles", role, "README.md"), encoding="utf-8").read()
    for name in defaults:
        assert f"`{name}" in readme or f"`{name.rsplit('_', 1)[0]}" in readme, f"{role} README lacks {name}"


# --- the agent role, applied for real ---


@pytest.fixture(scope="module")
def wheelhouse():
    """site.yml's first play builds the wheelhouse from this repository, as on a control node."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    rc, _, output = playbook("site.yml", {"dnfsmon_wheelhouse_python_versions": [version]})
    assert rc == 0, output
    path = os.path.join(ROOT, "build", "wheelhouse")
    assert any(name.startswith(f"dnfsmon-{__version__}-") for name in os.listdir(path))
    return path


@pytest.fixture
def deployment(wheelhouse):
    # Not under pytest's tmp_path: its parents are 0700 and the service user must reach its directories.
    top = pathlib.Path(tempfile.mkdtemp(prefix="dnfsmon-ansible-", dir="/var/tmp"))
    os.chmod(top, 0o755)
    base = top / "dnfsmon"
    base.mkdir()
    variables = {
        "dnfsmon_agent_user": USER,
        "dnfsmon_agent_group": USER,
        "dnfsmon_agent_python": "/usr/bin/python3",
        "dnfsmon_agent_install_dir": str(base / "opt"),
        "dnfsmon_agent_config_dir": str(base / "etc"),
        "dnfsmon_agent_data_dir": str(base / "lib"),
        "dnfsmon_agent_log_dir": str(base / "log"),
        "dnfsmon_agent_cron_file": CRON_FILE,
        "dnfsmon_agent_logrotate_file": str(base / "logrotate"),
        "dnfsmon_agent_wheelhouse": wheelhouse,
        "dnfsmon_agent_samples": 1,
        "dnfsmon_agent_jitter_max_s": 1,
        "dnfsmon_agent_influxdb_token": "influx-secret-token",
        "dnfsmon_agent_oracle_password": "oracle-secret-pw",
        "dnfsmon_agent_config": {
            "agent": {"host": "deployed"},
            "host": {"sources": ["nic", "tcp"]},
            "simulator": {"enabled": True, "instances": 1},
        },
    }
    yield base, variables
    playbook("apply_agent.yml", dict(variables, dnfsmon_agent_state="absent"))
    shutil.rmtree(top, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.system
def test_agent_role_applied_to_this_machine(deployment):
    base, variables = deployment
    rc, changed, output = playbook("apply_agent.yml", variables)
    assert rc == 0 and changed > 0, output
    assert "influx-secret-token" not in output and "oracle-secret-pw" not in output
    rc, changed, output = playbook("apply_agent.yml", variables)
    assert rc == 0 and changed == 0, output  # idempotent
    rc, changed, output = playbook("apply_agent.yml", variables, "--check")
    assert rc == 0 and changed == 0, output

    # Secrets: owner-only files of the service user, named in the config.
    for name, secret in (("influxdb.token", "influx-secret-token"), ("oracle.password", "oracle-secret-pw")):
        info = os.stat(base / "etc" / name)
        assert stat.S_IMODE(info.st_mode) == 0o600 and pwd.getpwuid(info.st_uid).pw_name == USER
        assert (base / "etc" / name).read_text().strip() == secret
    cfg = config.load(str(base / "etc" / "dnfsmon.toml"))
    assert cfg.state_dir == str(base / "lib" / "state") and cfg.store_dir == str(base / "lib" / "store")
    assert cfg.simulator is not None and cfg.host == "deployed"
    assert "influx-secret-token" not in (base / "etc" / "dnfsmon.toml").read_text()
    # Only the keys the role manages and the ones the user set: the rest keep the agent's defaults.
    written = tomllib.loads((base / "etc" / "dnfsmon.toml").read_text())
    assert {(section, key) for section, table in written.items() for key in table} == {
        ("agent", "state_dir"),
        ("agent", "host"),
        ("store", "dir"),
        ("host", "sources"),
        ("simulator", "enabled"),
        ("simulator", "instances"),
        ("influxdb", "token_file"),
        ("oracle", "password_file"),
    }

    # The deployed cron command, run by hand as the service user.
    line = next(entry for entry in open(f"/etc/cron.d/{CRON_FILE}") if entry.startswith("* * * * * "))
    schedule_user, command = re.match(r"^\* \* \* \* \* (\S+) (.*)$", line.strip()).groups()
    assert schedule_user == USER and "--count 1" in command and command.startswith("sleep ")
    for _ in range(2):
        result = subprocess.run(
            ["runuser", "-u", USER, "--", "sh", "-c", command], capture_output=True, text=True, timeout=180
        )
        assert result.returncode == 0, result.stderr
    log = (base / "log" / "collect.log").read_text()
    assert log.count("INFO: 1 samples: ") == 2 and "Traceback" not in log  # one line per run
    points = list(Store(str(base / "lib" / "store"), 10**9, read_only=True).points())  # as root: read, never take over
    assert any(p.measurement == "dnfsmon_dnfs_io" and dict(p.tags).get("simulated") == "true" for p in points)
    assert (base / "logrotate").read_text().count("collect.log") == 1

    # state: absent leaves nothing behind.
    rc, changed, output = playbook("apply_agent.yml", dict(variables, dnfsmon_agent_state="absent"))
    assert rc == 0 and changed > 0, output
    assert sorted(os.listdir(base)) == []
    assert not os.path.exists(f"/etc/cron.d/{CRON_FILE}")
    with pytest.raises(KeyError):
        pwd.getpwnam(USER)
    with pytest.raises(KeyError):
        grp.getgrnam(USER)


def test_agent_role_names_the_python_package_when_the_targets_python_is_too_old(tmp_path):
    """OL8's python3 is 3.6: the role says which version it found and what to install."""
    old_python = tmp_path / "python3"
    old_python.write_text("#!/bin/sh\necho 3.6\n")
    old_python.chmod(0o755)
    rc, _, output = playbook("apply_agent.yml", {"dnfsmon_agent_python": str(old_python)})
    assert rc != 0
    assert f"dnfsmon_agent_python={old_python} is Python 3.6" in output and "dnf install python3.11" in output


# --- the Oracle user role, against a stand-in sqlplus ---


def oracle_user_variables(tmp_path, name):
    return {
        "dnfsmon_oracle_user_name": name,
        "dnfsmon_oracle_user_password": "s3cret-pw",
        "dnfsmon_oracle_user_os_user": pwd.getpwuid(os.getuid()).pw_name,
        "dnfsmon_oracle_user_sqlplus": os.path.join(HERE, "fake_sqlplus"),
        "dnfsmon_oracle_user_work_dir": str(tmp_path / "work"),
        "dnfsmon_oracle_user_setup_script": os.path.join(ROOT, "sql", "setup", "create_monitor_user.sql"),
        "dnfsmon_oracle_user_oracle_home": "/opt/oracle/home",
        "dnfsmon_oracle_user_oracle_sid": "ORCLCDB",
    }


SETUP = os.path.join(ROOT, "sql", "setup")


def sqlplus_calls(record):
    """What the stand-in sqlplus was given, call by call: (arguments, standard input, script text)."""
    calls = []
    for n in range(len([p for p in record.iterdir() if p.name.endswith(".args")])):
        args = (record / f"call-{n}.args").read_text().rstrip("\n").split("\n")
        calls.append((args, (record / f"call-{n}.stdin").read_text(), (record / f"script-{n}.sql").read_text()))
    return calls


@pytest.mark.slow
def test_oracle_user_role_runs_the_pack_script_every_time_and_sets_a_new_password_with_password(tmp_path):
    record = tmp_path / "sqlplus"
    record.mkdir()
    variables = oracle_user_variables(tmp_path, "C##DNFSMON")
    env = {"FAKE_SQLPLUS_DIR": str(record)}
    rc, changed, output = playbook("apply_oracle_user.yml", variables, env=env)
    assert rc == 0 and changed > 0, output
    # The second run reconciles the grants of the existing user: the script runs, nothing changed,
    # and the password it already has is kept (PASSWORD is not run again).
    rc, changed, output = playbook("apply_oracle_user.yml", variables, env=env)
    assert rc == 0 and changed == 0, output
    assert "s3cret-pw" not in output
    calls = sqlplus_calls(record)
    assert [args[3].rsplit("/", 1)[-1] for args, _, _ in calls] == [
        "create_monitor_user.sql",
        "set_monitor_password.sql",
        "create_monitor_user.sql",
    ]
    create_text = open(os.path.join(SETUP, "create_monitor_user.sql")).read()
    password_text = open(os.path.join(SETUP, "set_monitor_password.sql")).read()
    for args, stdin, script in calls:
        assert args[:3] == ["-S", "-L", "/ as sysdba"] and args[4] == "C##DNFSMON"
        assert "s3cret-pw" not in "\n".join(args)
        if args[3].endswith("create_monitor_user.sql"):
            assert stdin == "" and script == create_text  # the create script is given no password
        else:
            assert stdin == "s3cret-pw\ns3cret-pw" and script == password_text  # PASSWORD's two answers
    assert "ORACLE_SID=ORCLCDB" in (record / "call-0.env").read_text()
    assert (record / "users").read_text() == "C##DNFSMON OPEN\n"
    assert not (tmp_path / "work").exists()


@pytest.mark.slow
def test_oracle_user_role_finishes_an_interrupted_first_run(tmp_path):
    """The user was created but PASSWORD failed: the role fails, and the next run sets the password."""
    record = tmp_path / "sqlplus"
    record.mkdir()
    variables = oracle_user_variables(tmp_path, "C##DNFSMON")
    env = {"FAKE_SQLPLUS_DIR": str(record), "FAKE_SQLPLUS_FAIL_PASSWORD": "1"}
    rc, _, output = playbook("apply_oracle_user.yml", variables, env=env)
    assert rc != 0 and "s3cret-pw" not in output
    assert (record / "users").read_text() == "C##DNFSMON EXPIRED\n"
    rc, changed, output = playbook("apply_oracle_user.yml", variables, env={"FAKE_SQLPLUS_DIR": str(record)})
    assert rc == 0 and changed > 0, output
    assert (record / "users").read_text() == "C##DNFSMON OPEN\n"
    assert [args[3].rsplit("/", 1)[-1] for args, _, _ in sqlplus_calls(record)][-2:] == [
        "create_monitor_user.sql",
        "set_monitor_password.sql",
    ]
    assert not (tmp_path / "work").exists()


@pytest.mark.slow
def test_oracle_user_role_leaves_the_name_to_the_script_by_default_and_fails_with_it(tmp_path):
    record = tmp_path / "sqlplus"
    record.mkdir()
    variables = oracle_user_variables(tmp_path, "")
    rc, changed, output = playbook("apply_oracle_user.yml", variables, env={"FAKE_SQLPLUS_DIR": str(record)})
    assert rc == 0 and changed > 0, output
    calls = sqlplus_calls(record)
    assert len(calls[0][0]) == 4  # no user name: the script chooses C##DNFSMON in a CDB, DNFSMON otherwise
    assert calls[1][0][4] == "DNFSMON"  # the password is set for the user the script named
    env = {"FAKE_SQLPLUS_DIR": str(record), "FAKE_SQLPLUS_FAIL": "1"}
    rc, changed, output = playbook("apply_oracle_user.yml", variables, env=env)
    assert rc != 0 and "s3cret-pw" not in output
    assert not (tmp_path / "work").exists()


# --- the Grafana role, to local directories ---


@pytest.mark.slow
@pytest.mark.system
def test_grafana_role_installs_the_repository_files(tmp_path):
    variables = {
        "dnfsmon_grafana_provisioning_dir": str(tmp_path / "provisioning"),
        "dnfsmon_grafana_dashboards_dir": str(tmp_path / "dashboards"),
        "dnfsmon_grafana_owner": "root",
        "dnfsmon_grafana_group": "root",
        "dnfsmon_grafana_service": "",
        "dnfsmon_grafana_source_dir": os.path.join(ROOT, "grafana"),
    }
    rc, changed, output = playbook("apply_grafana.yml", variables)
    assert rc == 0 and changed > 0, output
    rc, changed, output = playbook("apply_grafana.yml", variables)
    assert rc == 0 and changed == 0, output
    for name in os.listdir(os.path.join(ROOT, "grafana", "dashboards")):
        assert (tmp_path / "dashboards" / name).read_text() == open(
            os.path.join(ROOT, "grafana", "dashboards", name)
        ).read()
    provider = yaml.safe_load((tmp_path / "provisioning" / "dashboards" / "dnfsmon.yaml").read_text())
    assert provider["providers"][0]["options"]["path"] == str(tmp_path / "dashboards")
    assert provider["providers"][0]["allowUiUpdates"] is False
    shutil.rmtree(tmp_path / "provisioning")
