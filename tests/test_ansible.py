"""Ansible: lint, syntax, and the real site.yml on an inventory like the example's, applied to this machine."""

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

import systemd_units

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
    assert (record / "users.ORCLCDB").read_text() == "C##DNFSMON OPEN\n"
    assert not (tmp_path / "work").exists()


@pytest.mark.slow
def test_oracle_user_role_sets_up_each_database_of_the_list_with_the_password_life(tmp_path):
    record = tmp_path / "sqlplus"
    record.mkdir()
    variables = oracle_user_variables(tmp_path, "DNFSMON")
    variables["dnfsmon_oracle_user_databases"] = [
        {"oracle_sid": "SALES"},
        {"oracle_sid": "HR", "oracle_home": "/opt/oracle/home21"},
    ]
    variables["dnfsmon_oracle_user_password_life"] = "90"
    rc, changed, output = playbook("apply_oracle_user.yml", variables, env={"FAKE_SQLPLUS_DIR": str(record)})
    assert rc == 0 and changed > 0, output
    calls = sqlplus_calls(record)
    environments = [(record / f"call-{n}.env").read_text() for n in range(len(calls))]
    sids = [re.search(r"^ORACLE_SID=(\S+)$", e, re.M).group(1) for e in environments]
    homes = [re.search(r"^ORACLE_HOME=(\S+)$", e, re.M).group(1) for e in environments]
    scripts = [args[3].rsplit("/", 1)[-1] for args, _, _ in calls]
    assert list(zip(sids, scripts)) == [
        ("SALES", "create_monitor_user.sql"),
        ("SALES", "set_monitor_password.sql"),
        ("HR", "create_monitor_user.sql"),
        ("HR", "set_monitor_password.sql"),
    ]
    assert homes == ["/opt/oracle/home", "/opt/oracle/home", "/opt/oracle/home21", "/opt/oracle/home21"]
    # The setup script's arguments: the user and the password life.
    assert [args[4:] for args, _, _ in calls if args[3].endswith("create_monitor_user.sql")] == [["DNFSMON", "90"]] * 2
    assert (record / "users.SALES").read_text() == (record / "users.HR").read_text() == "DNFSMON OPEN\n"
    variables["dnfsmon_oracle_user_password_life"] = "forever"
    rc, _, output = playbook("apply_oracle_user.yml", variables, env={"FAKE_SQLPLUS_DIR": str(record)})
    assert rc != 0 and "dnfsmon_oracle_user_password_life whole days" in output


@pytest.mark.slow
def test_agent_role_writes_one_oracle_table_and_password_file_per_database(tmp_path):
    """dnfsmon_agent_oracle_databases: an [[oracle]] table and an owner-only password file each, read back
    by the agent's own config loader; one database as before otherwise; both at once refused."""
    from dnfsmon import config as configuration

    me = pwd.getpwuid(os.getuid()).pw_name
    variables = {
        "dnfsmon_agent_user": me,
        "dnfsmon_agent_group": grp.getgrgid(os.getgid()).gr_name,
        "dnfsmon_agent_python": sys.executable,
        "dnfsmon_agent_config_dir": str(tmp_path / "etc"),
        "dnfsmon_agent_data_dir": str(tmp_path / "lib"),
        "dnfsmon_agent_logrotate_file": str(tmp_path / "logrotate"),
        "dnfsmon_agent_oracle_databases": [
            {"target": "SALES", "dsn": "db1:1521/SALES", "user": "C##DNFSMON", "password": "sales-pw"},
            {"target": "HR", "dsn": "db1:1521/HR", "user": "C##DNFSMON", "password": "hr-pw", "scope": "cluster"},
        ],
    }
    rc, changed, output = playbook("apply_agent.yml", variables, "--tags", "dnfsmon_agent_configure")
    assert rc == 0 and changed > 0, output
    assert "sales-pw" not in output and "hr-pw" not in output
    cfg = configuration.load(str(tmp_path / "etc" / "dnfsmon.toml"))
    assert [(d.target, d.dsn, d.scope) for d in cfg.databases] == [
        ("SALES", "db1:1521/SALES", "instance"),
        ("HR", "db1:1521/HR", "cluster"),
    ]
    for database, password in zip(cfg.databases, ("sales-pw", "hr-pw")):
        assert database.password_file == str(tmp_path / "etc" / f"oracle-{database.target}.password")
        assert open(database.password_file).read() == password + "\n"
        assert stat.S_IMODE(os.stat(database.password_file).st_mode) == 0o600
    both = dict(variables, dnfsmon_agent_config={"oracle": {"enabled": True, "dsn": "db1:1521/X"}})
    rc, _, output = playbook("apply_agent.yml", both, "--tags", "dnfsmon_agent_configure")
    assert rc != 0 and "not both" in output


@pytest.mark.slow
def test_oracle_user_role_finishes_an_interrupted_first_run(tmp_path):
    """The user was created but PASSWORD failed: the role fails, and the next run sets the password."""
    record = tmp_path / "sqlplus"
    record.mkdir()
    variables = oracle_user_variables(tmp_path, "C##DNFSMON")
    env = {"FAKE_SQLPLUS_DIR": str(record), "FAKE_SQLPLUS_FAIL_PASSWORD": "1"}
    rc, _, output = playbook("apply_oracle_user.yml", variables, env=env)
    assert rc != 0 and "s3cret-pw" not in output
    assert "ORA-20006: C##DNFSMON is still EXPIRED & LOCKED" in output  # why, though the task's log is hidden
    assert (record / "users.ORCLCDB").read_text() == "C##DNFSMON EXPIRED & LOCKED\n"  # no login until PASSWORD
    rc, changed, output = playbook("apply_oracle_user.yml", variables, env={"FAKE_SQLPLUS_DIR": str(record)})
    assert rc == 0 and changed > 0, output
    assert (record / "users.ORCLCDB").read_text() == "C##DNFSMON OPEN\n"
    assert [args[3].rsplit("/", 1)[-1] for args, _, _ in sqlplus_calls(record)][-2:] == [
        "create_monitor_user.sql",
        "set_monitor_password.sql",
    ]
    assert not (tmp_path / "work").exists()


@pytest.mark.slow
def test_oracle_user_role_stops_when_the_existing_account_is_locked(tmp_path):
    """An existing user locked by failed logins keeps its password, but the agent cannot connect: not "ok"."""
    record = tmp_path / "sqlplus"
    record.mkdir()
    (record / "users.ORCLCDB").write_text("C##DNFSMON LOCKED(TIMED)\n")
    variables = oracle_user_variables(tmp_path, "C##DNFSMON")
    rc, _, output = playbook("apply_oracle_user.yml", variables, env={"FAKE_SQLPLUS_DIR": str(record)})
    assert rc != 0, output
    assert "ALTER USER C##DNFSMON ACCOUNT UNLOCK" in output
    assert [args[3].rsplit("/", 1)[-1] for args, _, _ in sqlplus_calls(record)] == ["create_monitor_user.sql"]
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


# --- site.yml as a user runs it: an inventory with a database host, Vault, no play gathering facts ---

EXAMPLE_INVENTORY = os.path.join(ANSIBLE, "inventory", "example")
DB_HOST = "db1.test"
GRAFANA_HOST = "grafana.test"
ORACLE_OS_USER = "dnfsmon_ora_t"  # stands in for the Oracle software owner, "oracle"
VAULT = {"vault_dnfsmon_oracle_password": "vault-oracle-pw", "vault_dnfsmon_influxdb_token": "vault-influx-token"}


def site(inventory, *flags, env=None):
    """`ansible-playbook -i INVENTORY site.yml`, from ansible/ as its README says (Vault's password from a file
    instead of --ask-vault-pass); (returncode, {host: changed}, {host: failed}, output)."""
    result = subprocess.run(
        [
            os.path.join(BIN, "ansible-playbook"),
            "-i",
            str(inventory / "hosts.yml"),
            "site.yml",
            "--vault-password-file",
            str(inventory.parent / "vault-password"),
            *flags,
        ],
        capture_output=True,
        text=True,
        cwd=ANSIBLE,
        env=dict(os.environ, ANSIBLE_NOCOLOR="1", **(env or {})),
        timeout=900,
    )
    recap = re.findall(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)", result.stdout, re.M)
    changed = {host: int(n) for host, n, _ in recap}
    failed = {host: int(n) for host, _, n in recap}
    return result.returncode, changed, failed, result.stdout + result.stderr


def example_groups():
    with open(os.path.join(EXAMPLE_INVENTORY, "hosts.yml"), encoding="utf-8") as f:
        return yaml.safe_load(f)["all"]["children"]


def rendered_files(output):
    """name -> content of each file a --check --diff run would create, from its diff (named by its template)."""
    files = {}
    for match in re.finditer(r"^\+\+\+ after: (\S+)\n@@ -0,0 \+1,?\d* @@\n((?:\+.*\n)+)", output, re.M):
        files[os.path.basename(match.group(1)).removesuffix(".j2")] = "".join(
            line[1:] + "\n" for line in match.group(2).splitlines()
        )
    return files


def remove_system_user(name):
    """Remove a user the tests made, and its group (left alone, the group makes useradd refuse)."""
    subprocess.run(["userdel", name], capture_output=True)
    subprocess.run(["groupdel", name], capture_output=True)


def fresh_system_user(name):
    """A system user of that name, made anew: one left by an interrupted run (SIGKILL, a reboot: no
    teardown ran) is removed first, or useradd would refuse and every later run fail."""
    remove_system_user(name)
    subprocess.run(["useradd", "--system", "--no-create-home", name], check=True, capture_output=True)


@pytest.mark.system
def test_a_user_left_by_an_interrupted_run_is_made_anew():
    """The fleet fixture failed on a leftover dnfsmon_ora_t or its group (useradd: already exists)."""
    remove_system_user(ORACLE_OS_USER)
    subprocess.run(["groupadd", "--system", ORACLE_OS_USER], check=True)  # a group left alone
    try:
        for _ in range(2):  # the leftover group alone, then a whole user left by the first pass
            fresh_system_user(ORACLE_OS_USER)
            assert pwd.getpwnam(ORACLE_OS_USER).pw_gid == grp.getgrnam(ORACLE_OS_USER).gr_gid
    finally:
        remove_system_user(ORACLE_OS_USER)
    with pytest.raises(KeyError):
        pwd.getpwnam(ORACLE_OS_USER)


@pytest.fixture
def fleet():
    """The example inventory's groups and group_vars (copied verbatim), its secrets in a Vault-encrypted
    file as the example says, the hosts local: db1.test (agent and database) and grafana.test."""
    top = pathlib.Path(tempfile.mkdtemp(prefix="dnfsmon-site-", dir="/var/tmp"))
    os.chmod(top, 0o755)  # the service users must reach their directories below
    base = top / "dnfsmon"
    inventory = top / "inventory"
    fresh_system_user(ORACLE_OS_USER)
    try:
        base.mkdir()
        record = top / "sqlplus"  # what the stand-in sqlplus saw, written as the Oracle OS user
        record.mkdir()
        shutil.chown(record, ORACLE_OS_USER)
        # sudo (become_user) starts sqlplus with a clean environment: a wrapper tells the stand-in where to write.
        # The stand-in is copied out of the checkout, which the Oracle OS user may not be able to enter (a
        # clone made in `mktemp -d` is 0700), as the real sqlplus lives in an Oracle home it can read.
        stand_in = top / "fake_sqlplus"
        shutil.copy(os.path.join(HERE, "fake_sqlplus"), stand_in)
        stand_in.chmod(0o755)
        sqlplus = top / "sqlplus.sh"
        sqlplus.write_text(f'#!/bin/sh\nFAKE_SQLPLUS_DIR={record} exec {stand_in} "$@"\n')
        sqlplus.chmod(0o755)

        groups = example_groups()
        hosts = {name: (DB_HOST if name != "dnfsmon_grafana" else GRAFANA_HOST) for name in groups}
        children = {}
        for name, group in groups.items():
            (first_vars,) = list(group["hosts"].values())[:1]  # the example's first host of the group and its vars
            children[name] = {"hosts": {hosts[name]: first_vars}}
        shutil.copytree(os.path.join(EXAMPLE_INVENTORY, "group_vars"), inventory / "group_vars")
        (inventory / "host_vars").mkdir()
        (inventory / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": children}}))
        (top / "vault-password").write_text("test-vault-password\n")
        (inventory / "group_vars" / "all" / "vault.yml").write_text(yaml.safe_dump(VAULT))
        subprocess.run(
            [
                os.path.join(BIN, "ansible-vault"),
                "encrypt",
                "--vault-password-file",
                str(top / "vault-password"),
                str(inventory / "group_vars" / "all" / "vault.yml"),
            ],
            check=True,
            capture_output=True,
        )
        # The system's Python, as on a database host (this machine's PATH may lead discovery to another).
        local = {"ansible_connection": "local", "ansible_python_interpreter": "/usr/bin/python3"}
        db_vars = dict(
            local,
            dnfsmon_agent_user=USER,
            dnfsmon_agent_group=USER,
            dnfsmon_agent_python="/usr/bin/python3",
            dnfsmon_agent_install_dir=str(base / "opt"),
            dnfsmon_agent_config_dir=str(base / "etc"),
            dnfsmon_agent_data_dir=str(base / "lib"),
            dnfsmon_agent_log_dir=str(base / "log"),
            dnfsmon_agent_systemd_dir=str(base / "systemd"),
            dnfsmon_agent_cron_file=CRON_FILE,
            dnfsmon_agent_logrotate_file=str(base / "logrotate"),
            dnfsmon_agent_samples=1,
            dnfsmon_agent_jitter_max_s=1,
            # The example's config names a real database and InfluxDB; here the simulator stands in.
            dnfsmon_agent_config={
                "agent": {"host": "deployed", "log_level": "INFO"},
                "host": {"sources": ["nic", "tcp"]},
                "simulator": {"enabled": True, "instances": 1},
            },
            dnfsmon_oracle_user_os_user=ORACLE_OS_USER,
            dnfsmon_oracle_user_sqlplus=str(sqlplus),
            dnfsmon_oracle_user_oracle_home="/opt/oracle/home",
            dnfsmon_oracle_user_work_dir=str(top / "oracle-work"),
        )
        (inventory / "host_vars" / f"{DB_HOST}.yml").write_text(yaml.safe_dump(db_vars))
        grafana_vars = dict(
            local,
            dnfsmon_grafana_provisioning_dir=str(base / "grafana" / "provisioning"),
            dnfsmon_grafana_dashboards_dir=str(base / "grafana" / "dashboards"),
            dnfsmon_grafana_owner="root",
            dnfsmon_grafana_group="root",
            dnfsmon_grafana_service="",
        )
        (inventory / "host_vars" / f"{GRAFANA_HOST}.yml").write_text(yaml.safe_dump(grafana_vars))
        yield base, inventory, record
        site(inventory, "--limit", DB_HOST, "--tags", "dnfsmon_agent", "-e", "dnfsmon_agent_state=absent")
    finally:
        remove_system_user(ORACLE_OS_USER)
        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.system
def test_site_yml_on_an_inventory_with_a_database_host(fleet):
    base, inventory, record = fleet
    rc, changed, failed, output = site(inventory)
    assert rc == 0, output
    assert changed[DB_HOST] > 0 and changed[GRAFANA_HOST] > 0 and not any(failed.values()), output
    assert "Gathering Facts" not in output  # no play gathers facts
    # The control node's play reads the inventory's group_vars too: wheels for every Python listed there.
    assert all(f"(item={version})" in output for version in ["3.9", "3.11"]), output
    assert any(
        name.startswith(f"dnfsmon-{__version__}-") for name in os.listdir(os.path.join(ROOT, "build", "wheelhouse"))
    )
    for secret in VAULT.values():
        assert secret not in output

    # The Oracle user: the pack's scripts, run as the Oracle OS user (sudo), with the example's user name,
    # the database host's ORACLE_SID, and the password from Vault on PASSWORD's standard input only.
    password = VAULT["vault_dnfsmon_oracle_password"]
    calls = sqlplus_calls(record)
    assert [args[3].rsplit("/", 1)[-1] for args, _, _ in calls] == [
        "create_monitor_user.sql",
        "set_monitor_password.sql",
    ]
    assert [stdin for _, stdin, _ in calls] == ["", f"{password}\n{password}"]
    for n, (args, _, _) in enumerate(calls):
        assert args[:3] == ["-S", "-L", "/ as sysdba"] and args[4] == "C##DNFSMON"
        assert pwd.getpwuid(os.stat(record / f"call-{n}.args").st_uid).pw_name == ORACLE_OS_USER
        environment = (record / f"call-{n}.env").read_text()
        assert "ORACLE_SID=ORCLCDB\n" in environment and "ORACLE_HOME=/opt/oracle/home\n" in environment

    # The agent: its secrets from Vault in owner-only files, the config the role wrote.
    for name, secret in (
        ("influxdb.token", VAULT["vault_dnfsmon_influxdb_token"]),
        ("oracle.password", VAULT["vault_dnfsmon_oracle_password"]),
    ):
        info = os.stat(base / "etc" / name)
        assert stat.S_IMODE(info.st_mode) == 0o600 and pwd.getpwuid(info.st_uid).pw_name == USER
        assert (base / "etc" / name).read_text().strip() == secret
    written = tomllib.loads((base / "etc" / "dnfsmon.toml").read_text())
    assert written["agent"]["log_level"] == "info"  # "INFO" in the inventory, written as the agent spells it
    cfg = config.load(str(base / "etc" / "dnfsmon.toml"))
    assert cfg.state_dir == str(base / "lib" / "state") and cfg.store_dir == str(base / "lib" / "store")
    assert cfg.simulator is not None and cfg.host == "deployed"
    # Only the keys the role manages and the ones the user set: the rest keep the agent's defaults.
    assert {(section, key) for section, table in written.items() for key in table} == {
        ("agent", "state_dir"),
        ("agent", "host"),
        ("agent", "log_level"),
        ("store", "dir"),
        ("host", "sources"),
        ("simulator", "enabled"),
        ("simulator", "instances"),
        ("influxdb", "token_file"),
        ("oracle", "password_file"),
    }
    # Grafana: the repository's dashboards, provisioned from where the role put them, read-only in the UI.
    for name in os.listdir(os.path.join(ROOT, "grafana", "dashboards")):
        assert (base / "grafana" / "dashboards" / name).read_text() == open(
            os.path.join(ROOT, "grafana", "dashboards", name)
        ).read()
    provider = yaml.safe_load((base / "grafana" / "provisioning" / "dashboards" / "dnfsmon.yaml").read_text())
    assert provider["providers"][0]["options"]["path"] == str(base / "grafana" / "dashboards")
    assert provider["providers"][0]["allowUiUpdates"] is False
    # The alert rules beside them, as the repository has them, on the provisioned data source.
    rules = base / "grafana" / "provisioning" / "alerting" / "dnfsmon.json"
    assert rules.read_text() == open(os.path.join(ROOT, "grafana", "provisioning", "alerting", "dnfsmon.json")).read()
    datasource = yaml.safe_load(open(os.path.join(ROOT, "grafana", "provisioning", "datasources", "dnfsmon.yaml")))
    assert {
        d["datasourceUid"] for g in json.loads(rules.read_text())["groups"] for r in g["rules"] for d in r["data"]
    } == {
        datasource["datasources"][0]["uid"],
        "__expr__",
    }

    # A second run changes nothing (the Oracle user's grants are reconciled: unchanged), nor does a dry run.
    rc, changed, failed, output = site(inventory)
    assert rc == 0 and set(changed.values()) == {0}, output
    assert len(sqlplus_calls(record)) == 3  # the create script ran again; the password was kept
    rc, changed, failed, output = site(inventory, "--check")
    assert rc == 0 and set(changed.values()) == {0}, output

    # The deployed cron command, run by hand as the service user, twice: the second run stores rates.
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

    # The systemd schedule, as a dry run shows it (--check --diff): systemd does not run here, so the
    # timer cannot be applied for real; the role's units are checked against EL8's systemd 239 instead.
    rc, changed, failed, output = site(
        inventory,
        "--limit",
        DB_HOST,
        "--tags",
        "dnfsmon_agent_schedule",
        "--check",
        "--diff",
        "-e",
        "dnfsmon_agent_schedule=systemd",
    )
    assert rc == 0 and changed[DB_HOST] > 0, output
    units = rendered_files(output)
    assert sorted(units) == ["dnfsmon.service", "dnfsmon.timer"], output
    assert not os.path.exists(base / "systemd")  # a dry run writes nothing
    (base / "units").mkdir()
    for name, text in units.items():
        assert systemd_units.problems_on_el8(name, text) == []
        (base / "units" / name).write_text(text)
    service = dict(systemd_units.settings(units["dnfsmon.service"]))
    assert service["User"] == USER and service["ExecStart"] == command.split("; ", 1)[1].split(" >> ")[0]
    result = systemd_units.verify([str(base / "units" / "dnfsmon.timer"), str(base / "units" / "dnfsmon.service")])
    assert result.returncode == 0 and "dnfsmon" not in result.stderr, result.stderr
    shutil.rmtree(base / "units")

    # state: absent (the agent's tag, the database host only) leaves nothing behind.
    rc, changed, failed, output = site(
        inventory, "--limit", DB_HOST, "--tags", "dnfsmon_agent", "-e", "dnfsmon_agent_state=absent"
    )
    assert rc == 0 and changed[DB_HOST] > 0, output
    assert sorted(os.listdir(base)) == ["grafana"]
    assert not os.path.exists(f"/etc/cron.d/{CRON_FILE}")
    with pytest.raises(KeyError):
        pwd.getpwnam(USER)
    with pytest.raises(KeyError):
        grp.getgrnam(USER)


# A dnfsmon whose check finds a database error of two lines (ORA- errors of 23ai carry a help
# line) and an InfluxDB down, printed by the agent's own code in the format asked for.
CHECK_STAND_IN = """#!{python}
import sys
from dnfsmon import check
found = [
    check.Item(check.OK, "config", "{config}"),
    check.Item(check.FAIL, "database", "ORA-01017: invalid credential or not authorized; logon denied\\n"
               "Help: https://docs.oracle.com/error-help/db/ora-01017/", check.EXIT_DATABASE),
    check.Item(check.FAIL, "InfluxDB", "http://127.0.0.1:9 unreachable (Connection refused)", check.EXIT_INFLUXDB),
]
check.items = lambda cfg, connect=None: found
sys.exit(check.run(lambda: None, output="json" if sys.argv[-2:] == ["--format", "json"] else "text"))
"""


@pytest.mark.slow
def test_the_role_keeps_each_failed_item_of_dnfsmon_check_whole(tmp_path):
    """The role read check's text and kept the lines marked [FAIL]: the help line of an Oracle error
    was lost. It reads check --format json: each failed item, its detail whole."""
    (tmp_path / "bin").mkdir()
    stand_in = tmp_path / "bin" / "dnfsmon"
    stand_in.write_text(CHECK_STAND_IN.format(python=sys.executable, config=tmp_path / "dnfsmon.toml"))
    stand_in.chmod(0o755)
    variables = {
        "dnfsmon_agent_install_dir": str(tmp_path),
        "dnfsmon_agent_config_dir": str(tmp_path),
        "dnfsmon_agent_user": pwd.getpwuid(os.geteuid()).pw_name,
    }
    rc, _, output = playbook("agent_check.yml", variables)
    assert rc == 0, output
    (kept,) = re.findall(r'"msg": "KEPT (.*)"$', output, re.M)
    assert json.loads(json.loads(f'"{kept}"')) == [
        "[FAIL] database: ORA-01017: invalid credential or not authorized; logon denied\n"
        "Help: https://docs.oracle.com/error-help/db/ora-01017/",
        "[FAIL] InfluxDB: http://127.0.0.1:9 unreachable (Connection refused)",
    ]


BAD_HOST = "db2.test"  # a database host without the Oracle software owner or sqlplus
BAD_USER = "dnfsmon_t2"
BAD_CRON_FILE = "dnfsmon-test2"


def add_bad_database_host(base, inventory):
    """db2.test in the agents and the databases, as the example's db1: no Oracle OS user, no sqlplus, and an
    InfluxDB that refuses connections (so its `dnfsmon check` fails)."""
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())
    for group in ("dnfsmon_agents", "dnfsmon_databases"):
        hosts["all"]["children"][group]["hosts"][BAD_HOST] = None
    (inventory / "hosts.yml").write_text(yaml.safe_dump(hosts))
    db_vars = yaml.safe_load((inventory / "host_vars" / f"{DB_HOST}.yml").read_text())
    bad = base / "db2"
    db_vars.update(
        dnfsmon_agent_user=BAD_USER,
        dnfsmon_agent_group=BAD_USER,
        dnfsmon_agent_install_dir=str(bad / "opt"),
        dnfsmon_agent_config_dir=str(bad / "etc"),
        dnfsmon_agent_data_dir=str(bad / "lib"),
        dnfsmon_agent_log_dir=str(bad / "log"),
        dnfsmon_agent_systemd_dir=str(bad / "systemd"),
        dnfsmon_agent_cron_file=BAD_CRON_FILE,
        dnfsmon_agent_logrotate_file=str(bad / "logrotate"),
        dnfsmon_oracle_user_os_user="nosuchoracle_t",
        dnfsmon_oracle_user_sqlplus="/nonexistent/bin/sqlplus",
        dnfsmon_oracle_user_work_dir=str(bad / "oracle-work"),
    )
    db_vars["dnfsmon_agent_config"]["influxdb"] = {"enabled": True, "url": "http://127.0.0.1:9", "bucket": "dnfsmon"}
    (inventory / "host_vars" / f"{BAD_HOST}.yml").write_text(yaml.safe_dump(db_vars))


@pytest.mark.slow
@pytest.mark.system
def test_site_yml_with_one_bad_database_host_deploys_the_rest_and_says_what_failed(fleet):
    base, inventory, record = fleet
    add_bad_database_host(base, inventory)
    try:
        # A dry run already names what the bad host lacks, and what it cannot know.
        rc, _, failed, output = site(inventory, "--check")
        assert rc != 0 and failed == {"localhost": 0, DB_HOST: 0, BAD_HOST: 1, GRAFANA_HOST: 0}, output
        assert "no OS user nosuchoracle_t (dnfsmon_oracle_user_os_user" in output, output
        assert "dry run: the setup script was not run" in output
        assert "dnfsmon check runs at the end of a real run" in output

        rc, changed, failed, output = site(inventory)
        assert rc != 0 and failed == {"localhost": 0, DB_HOST: 0, BAD_HOST: 1, GRAFANA_HOST: 0}, output
        assert changed[DB_HOST] > 0 and changed[GRAFANA_HOST] > 0 and changed[BAD_HOST] > 0, output
        # The good database host got its Oracle user; the bad one got its agent, and the report names
        # what it lacks and each line its `dnfsmon check` failed.
        assert [args[3].rsplit("/", 1)[-1] for args, _, _ in sqlplus_calls(record)] == [
            "create_monitor_user.sql",
            "set_monitor_password.sql",
        ]
        assert os.path.exists(f"/etc/cron.d/{BAD_CRON_FILE}") and os.path.exists(
            base / "db2" / "opt" / "bin" / "dnfsmon"
        )
        report = output[output.index("TASK [Report what failed on this host]") :]
        assert f"fatal: [{BAD_HOST}]" in report and f"fatal: [{DB_HOST}]" not in report, report
        for text in (
            "no OS user nosuchoracle_t (dnfsmon_oracle_user_os_user names the Oracle software owner)",
            "no sqlplus at /nonexistent/bin/sqlplus (set dnfsmon_oracle_user_oracle_home or dnfsmon_oracle_user_sqlplus)",
            "[FAIL] InfluxDB",
        ):
            assert text in report, report
        for secret in VAULT.values():
            assert secret not in output
    finally:
        site(inventory, "--limit", BAD_HOST, "--tags", "dnfsmon_agent", "-e", "dnfsmon_agent_state=absent")


@pytest.mark.slow
@pytest.mark.system
def test_site_yml_names_the_setting_and_the_levels_for_an_unknown_log_level(fleet):
    _, inventory, _ = fleet
    wrong = json.dumps({"dnfsmon_agent_config": {"agent": {"log_level": "loud"}}})
    rc, _, failed, output = site(inventory, "--limit", DB_HOST, "--tags", "dnfsmon_agent_configure", "-e", wrong)
    assert rc != 0 and failed[DB_HOST] == 1
    assert 'dnfsmon_agent_config.agent.log_level = "loud": must be one of debug, info, warning, error' in output


def test_the_role_knows_the_agents_log_levels():
    with open(os.path.join(ANSIBLE, "roles", "dnfsmon_agent", "vars", "main.yml"), encoding="utf-8") as f:
        assert tuple(yaml.safe_load(f)["_dnfsmon_agent_log_levels"]) == config.LOG_LEVELS


def test_the_systemd_directive_list_agrees_with_systemds_news():
    """Each 'NEWS: CHANGES WITH N' claim of tests/fixtures/systemd/directives.csv, read in systemd's own NEWS."""
    sections = systemd_units.news_sections()
    claims = 0
    for directive, (since, source) in systemd_units.directives_since().items():
        if source.startswith("NEWS: "):
            assert source.startswith(f"NEWS: CHANGES WITH {since}"), directive
            for word in filter(None, re.split(r"[=:]", directive)):
                assert word in sections[since], f"{directive}: {word!r} is not in systemd {since}'s NEWS"
            claims += 1
    assert claims >= 10


@pytest.mark.slow
@pytest.mark.system
def test_site_yml_names_the_python_package_when_the_targets_python_is_too_old(fleet, tmp_path):
    """OL8's python3 is 3.6: the role says which version it found and what to install."""
    _, inventory, _ = fleet
    old_python = tmp_path / "python3"
    old_python.write_text("#!/bin/sh\necho 3.6\n")
    old_python.chmod(0o755)
    rc, _, failed, output = site(
        inventory, "--limit", DB_HOST, "--tags", "dnfsmon_agent_install", "-e", f"dnfsmon_agent_python={old_python}"
    )
    assert rc != 0 and failed[DB_HOST] == 1
    assert f"dnfsmon_agent_python={old_python} is Python 3.6" in output and "dnf install python3.11" in output


def test_the_readme_the_role_and_contrib_share_one_layout():
    """One install layout: the command, the config and the secret files' names (review finding: two layouts)."""
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    service = dict(systemd_units.settings(open(os.path.join(ROOT, "contrib", "dnfsmon.service")).read()))
    with open(os.path.join(ANSIBLE, "roles", "dnfsmon_agent", "vars", "main.yml"), encoding="utf-8") as f:
        role = yaml.safe_load(f)
    defaults = role_defaults("dnfsmon_agent")
    command = "/opt/dnfsmon/bin/dnfsmon --config /etc/dnfsmon/dnfsmon.toml collect"
    assert service["ExecStart"].startswith(command)
    assert "$PREFIX/bin/dnfsmon --config $ETC/dnfsmon.toml collect" in readme
    assert "PREFIX=${PREFIX:-/opt/dnfsmon}" in readme and "ETC=${ETC:-/etc/dnfsmon}" in readme
    rendered = role["_dnfsmon_agent_collect"].replace(
        "{{ dnfsmon_agent_install_dir }}", defaults["dnfsmon_agent_install_dir"]
    )
    rendered = rendered.replace("{{ dnfsmon_agent_config_dir }}", defaults["dnfsmon_agent_config_dir"])
    assert rendered.startswith(command), rendered
    for secret in ("oracle.password", "influxdb.token"):
        assert f"/etc/dnfsmon/{secret}" in readme
        managed = {**role["_dnfsmon_agent_managed"], **role["_dnfsmon_agent_managed_oracle"]}
        assert any(secret in str(value) for value in managed.values())
    troubleshooting = open(os.path.join(ROOT, "docs", "troubleshooting.md"), encoding="utf-8").read()
    assert "/opt/dnfsmon/bin/dnfsmon check" in troubleshooting and "venv/bin" not in troubleshooting
