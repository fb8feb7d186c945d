"""`dnfsmon check`: every item, good and bad, with its line and exit code.

InfluxDB items run against the real InfluxDB 1.8.10 the tests build. The
database items use python-oracledb for real where it can fail for real (a
closed port), and otherwise a connection that answers the discovery query
(ALL_TAB_COLUMNS) the way a database with or without the grants does.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from configs import write_config
from dnfsmon import check, oracle_db, oracle_facts
from dnfsmon.config import load
from runner import DNFSMON


def run_check(config):
    return subprocess.run([*DNFSMON, "check", "--config", str(config)], capture_output=True, text=True, timeout=120)


def lines_about(result, what):
    return [line for line in result.stdout.splitlines() if what in line]


def test_a_good_host_only_config_passes_with_advice(tmp_path):
    config = write_config(tmp_path)
    os.makedirs(tmp_path / "state", mode=0o750)
    os.makedirs(tmp_path / "store", mode=0o750)
    result = run_check(config)
    assert result.returncode == 0, result.stdout
    assert lines_about(result, "state_dir")[0].startswith("[ok  ]")
    assert lines_about(result, "[oracle] is not enabled")[0].startswith("[warn]")
    assert result.stdout.rstrip().endswith("all good")


def test_a_bad_config_is_one_fail_line_and_exit_2(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("[agent]\nstatedir = 'x'\n")
    result = run_check(path)
    assert result.returncode == 2
    assert (
        result.stdout.splitlines()[0].startswith("[FAIL] config: ") and "unknown key [agent] statedir" in result.stdout
    )


def test_directories_missing_not_a_directory_world_writable_and_foreign_files(tmp_path):
    [missing] = check.check_directory("[agent] state_dir", str(tmp_path / "a" / "b"))
    assert missing.status == check.WARN and "first collect run creates it" in missing.detail
    (tmp_path / "file").write_text("")
    [not_dir] = check.check_directory("[store] dir", str(tmp_path / "file"))
    assert not_dir.status == check.FAIL and "not a directory" in not_dir.detail
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    [everyone] = check.check_directory("[store] dir", str(open_dir))
    assert everyone.status == check.FAIL and "chmod 750" in everyone.detail
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o750)
    [good] = check.check_directory("[store] dir", str(mine))
    assert good.status == check.OK
    (mine / "collect.lock").write_text("")
    os.chown(mine / "collect.lock", 65534, 65534)  # left by another user (nobody)
    [foreign] = check.check_directory("[agent] state_dir", str(mine))
    assert foreign.status == check.FAIL and "collect.lock" in foreign.detail and "chown -R" in foreign.detail


def test_secrets_mode_owner_type_and_environment(tmp_path, monkeypatch):
    secret = tmp_path / "pw"
    secret.write_text("s3cret\n")
    secret.chmod(0o600)
    good = check.check_secret("Oracle password", str(secret), "", True)
    assert good.status == check.OK and "0600" in good.detail
    secret.chmod(0o644)
    loose = check.check_secret("Oracle password", str(secret), "", True)
    assert loose.status == check.FAIL and "chmod 600" in loose.detail
    secret.chmod(0o600)
    os.chown(secret, 65534, 65534)
    foreign = check.check_secret("Oracle password", str(secret), "", True)
    assert foreign.status == check.FAIL and "chown" in foreign.detail
    link = tmp_path / "link"
    link.symlink_to(secret)
    assert check.check_secret("Oracle password", str(link), "", True).status == check.FAIL
    assert check.check_secret("Oracle password", str(tmp_path / "none"), "", True).status == check.FAIL
    monkeypatch.setenv("DNFSMON_TEST_PW", "x")
    assert check.check_secret("Oracle password", "", "DNFSMON_TEST_PW", True).status == check.OK
    monkeypatch.delenv("DNFSMON_TEST_PW")
    assert check.check_secret("Oracle password", "", "DNFSMON_TEST_PW", True).status == check.FAIL
    assert check.check_secret("InfluxDB token", "", "DNFSMON_TEST_PW", False).status == check.OK
    for item in (good, loose, foreign):
        assert "s3cret" not in item.line()


class DiscoveryCursor:
    """Answers the discovery query as ALL_TAB_COLUMNS does: only the views granted to the user."""

    def __init__(self, visible):
        self.visible = visible

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def execute(self, sql):
        assert "all_tab_columns" in sql

    def fetchall(self):
        return [(view.replace("$", "_$", 1), column) for view, columns in self.visible.items() for column in columns]


class DiscoveryConnection:
    def __init__(self, visible):
        self.visible = visible

    def cursor(self):
        return DiscoveryCursor(self.visible)

    def close(self):
        pass


def oracle_config(tmp_path, **oracle):
    table = {"enabled": True, "dsn": "127.0.0.1:1/ORCL", "user": "dnfsmon", "password_env": "DNFSMON_TEST_PW"}
    table.update(oracle)
    return load(str(write_config(tmp_path, oracle=table)))


def connected_with(visible):
    def connect(database):
        database.connection = DiscoveryConnection(visible)
        database.discover()

    return connect


def every_view(release="19c"):
    return {v: set(c) for v in oracle_db.VIEWS if (c := oracle_facts.columns(v, release))}


def test_database_with_every_grant_is_ok(tmp_path):
    [item] = check.check_database(oracle_config(tmp_path), connected_with(every_view()))
    assert item.status == check.OK and "every view" in item.detail


def test_database_missing_a_grant_names_the_grant_and_exits_3(tmp_path):
    visible = every_view()
    del visible["GV$DNFS_CHANNELS"], visible["V$DNFS_CHANNELS"]
    items = check.check_database(oracle_config(tmp_path), connected_with(visible))
    assert [i.status for i in items] == [check.FAIL]
    assert "GRANT SELECT ON SYS.V_$DNFS_CHANNELS TO DNFSMON" in items[0].line()  # scope "instance": V$
    assert check.exit_code(items) == 3


def test_a_user_granted_only_the_gv_view_is_read_in_instance_scope_with_a_warning_naming_the_grant(tmp_path):
    visible = every_view()
    del visible["V$DNFS_CHANNELS"]
    items = check.check_database(oracle_config(tmp_path), connected_with(visible))
    assert [i.status for i in items] == [check.WARN, check.OK]
    assert "GRANT SELECT ON SYS.V_$DNFS_CHANNELS TO DNFSMON" in items[0].line()
    assert check.exit_code(items) == 0


def test_unreachable_database_is_a_fail_line_with_the_hint_and_exits_3(tmp_path, monkeypatch):
    monkeypatch.setenv("DNFSMON_TEST_PW", "secret-pw")
    config = oracle_config(tmp_path, call_timeout_s=5.0)
    [item] = check.check_database(config)  # python-oracledb for real, against a closed port
    assert item.status == check.FAIL and item.exit_code == 3
    assert "DPY-6005" in item.detail and "listener" in item.detail and "secret-pw" not in item.line()


def influx_config(tmp_path, url, bucket, token_file=""):
    influxdb = {"enabled": True, "url": url, "bucket": bucket, "timeout_s": 5.0}
    if token_file:
        influxdb["token_file"] = token_file
    return load(str(write_config(tmp_path, influxdb=influxdb)))


def test_influxdb_existing_database_missing_database_and_unreachable(influx, tmp_path):
    server, name = influx
    [good] = check.check_influxdb(influx_config(tmp_path, server.url, name))
    assert good.status == check.OK
    [missing] = check.check_influxdb(influx_config(tmp_path, server.url, "nosuchdb"))
    assert missing.status == check.FAIL and "HTTP 404" in missing.detail and missing.exit_code == 4
    [down] = check.check_influxdb(influx_config(tmp_path, "http://127.0.0.1:9", name))
    assert down.status == check.FAIL and "unreachable" in down.detail and down.exit_code == 4
    # Nothing was written by the checks.
    assert server.rows("SHOW MEASUREMENTS", name) == []


@pytest.mark.influx  # its own server, with authentication on
def test_influxdb_token_accepted_and_refused(influx_with_auth, tmp_path):
    tokens = {}
    for name, token in (("right", "admin:right"), ("wrong", "admin:wrong")):
        path = tmp_path / f"{name}.token"
        path.write_text(token + "\n")
        path.chmod(0o600)
        tokens[name] = str(path)
    import urllib.parse
    import urllib.request

    create = urllib.parse.urlencode({"q": 'CREATE DATABASE "authdb"'}).encode()
    urllib.request.urlopen(f"{influx_with_auth.url}/query?u=admin&p=right", data=create, timeout=30)
    [accepted] = check.check_influxdb(influx_config(tmp_path, influx_with_auth.url, "authdb", tokens["right"]))
    assert accepted.status == check.OK
    [refused] = check.check_influxdb(influx_config(tmp_path, influx_with_auth.url, "authdb", tokens["wrong"]))
    assert refused.status == check.FAIL and "refused" in refused.detail and refused.exit_code == 4
    assert "admin:wrong" not in refused.line()


def test_the_lowest_failing_code_wins():
    items = [check.Item(check.FAIL, "a", exit_code=4), check.Item(check.FAIL, "b", exit_code=3)]
    assert check.exit_code(items) == 3
    assert check.exit_code([check.Item(check.WARN, "c")]) == 0
