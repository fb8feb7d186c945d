"""`dnfsmon check`: everything a run needs, one line per item with what to do.

Run it as the agent's user after installing or changing the config. It
reads and connects, and writes nothing: no directory is created, no point is
sent (the InfluxDB item posts an empty write, which InfluxDB answers without
storing anything). Exit codes (docs/troubleshooting.md):

    0  every item is ok (warnings allowed)
    2  the config, a directory or a secret is wrong
    3  the database cannot be read (unreachable, login refused, a grant missing)
    4  InfluxDB cannot take points (unreachable, no such database/bucket, token refused)

The lowest failing code wins, because the local items must be right first.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pwd
import ssl
import stat
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Callable, Optional

from . import config as configuration
from .config import Config, ConfigError, OracleSettings, read_secret
from .errors import EnvironmentProblem

OK, WARN, FAIL = "ok", "warn", "FAIL"
EXIT_LOCAL, EXIT_DATABASE, EXIT_INFLUXDB = 2, 3, 4


@dataclass
class Item:
    status: str  # OK, WARN or FAIL
    what: str  # the thing checked, with its path or setting
    detail: str = ""  # what was found and, unless ok, what to do
    exit_code: int = EXIT_LOCAL

    def line(self) -> str:
        return f"[{self.status:<4}] {self.what}" + (f": {self.detail}" if self.detail else "")


def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def check_directory(setting: str, path: str) -> list[Item]:
    """The directory exists (or can be created), belongs to this user, is writable and not world-writable,
    and holds nothing another user owns (a lock or state file left by a run as root)."""
    me = os.geteuid()
    who = user_name(me)
    what = f"{setting} {path}"
    try:
        info = os.stat(path)
    except FileNotFoundError:
        parent = os.path.dirname(os.path.abspath(path))
        while not os.path.exists(parent):  # collect creates the missing parents too
            parent = os.path.dirname(parent)
        if os.path.isdir(parent) and os.access(parent, os.W_OK | os.X_OK):
            return [Item(WARN, what, "does not exist yet; the first collect run creates it")]
        return [Item(FAIL, what, f"does not exist and {who} cannot create it: install -d -o {who} -m 750 {path}")]
    except OSError as error:
        return [Item(FAIL, what, f"{error.strerror}: check the path and its parents' permissions")]
    if not stat.S_ISDIR(info.st_mode):
        return [Item(FAIL, what, "is not a directory: move it away, or point the setting elsewhere")]
    if not os.access(path, os.W_OK | os.X_OK):
        owner = user_name(info.st_uid)
        return [Item(FAIL, what, f"owned by {owner}, not writable by {who}: chown -R {who} {path}")]
    if info.st_mode & 0o002:
        return [Item(FAIL, what, f"writable by every user (mode {info.st_mode & 0o777:04o}): chmod 750 {path}")]
    foreign = sorted(name for name in os.listdir(path) if os.lstat(os.path.join(path, name)).st_uid != me)
    if foreign:
        shown = ", ".join(foreign[:3]) + (" ..." if len(foreign) > 3 else "")
        return [Item(FAIL, what, f"holds files {who} does not own ({shown}; a run as root?): chown -R {who} {path}")]
    if info.st_uid != me:
        return [Item(WARN, what, f"owned by {user_name(info.st_uid)}, not {who}; writable, but chown {who} {path}")]
    return [Item(OK, what, f"owned by {who}, mode {info.st_mode & 0o777:04o}")]


def check_former_targets(cfg: Config) -> list[Item]:
    """State files of targets the config no longer names (a changed DSN, target or host name):
    dnfsmon never reads them again, so they are named here, to be removed by hand."""
    from .state import state_file_name
    from .targets import targets_from

    ids = {target.id for target in targets_from(cfg, keep_memory=False)}
    # A target's snapshot NAME.state.json, its journal NAME.state.journal; the simulator's memory file too.
    current = {state_file_name(i).removesuffix(".json") for i in ids | {f"{i}:memory" for i in ids}}
    try:
        names = sorted(os.listdir(cfg.state_dir))
    except OSError:
        return []  # the directory's own item says why
    former = [
        name
        for name in names
        if name.endswith((".state.json", ".state.journal"))
        and name.removesuffix(".json").removesuffix(".journal") not in current
    ]
    if not former:
        return []
    paths = " ".join(os.path.join(cfg.state_dir, name) for name in former)
    return [
        Item(
            WARN,
            f"[agent] state_dir {cfg.state_dir}",
            f"{len(former)} state file(s) of a target no longer configured (a former DSN, target or host name), "
            f"never read again: rm {paths}",
        )
    ]


def check_secret(what: str, path: str, env_var: str, required: bool) -> Item:
    """A secret file readable by its owner only and owned by this user; else the environment variable."""
    if path:
        label = f"{what} file {path}"
        try:
            info = os.lstat(path)
        except OSError as error:
            return Item(FAIL, label, f"{error.strerror}: create it (install -m 600 -o {user_name(os.geteuid())})")
        if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
            return Item(FAIL, label, "is not a regular file (a symlink or directory?): put the secret in a plain file")
        if info.st_uid != os.geteuid():
            return Item(FAIL, label, f"owned by {user_name(info.st_uid)}: chown {user_name(os.geteuid())} {path}")
        try:
            read_secret(path, None, what, http_header=what == "InfluxDB token")
        except (ConfigError, EnvironmentProblem) as error:
            return Item(FAIL, label, str(error).replace(f"{label} ", ""))
        return Item(OK, label, f"mode {info.st_mode & 0o777:04o}, owned by {user_name(info.st_uid)}")
    if env_var and os.environ.get(env_var):
        return Item(OK, what, f"from the environment variable {env_var}")
    if required:
        return Item(FAIL, what, f"none: set password_file (chmod 600) or the environment variable {env_var}")
    return Item(OK, what, "none set (InfluxDB without authentication)")


def check_database(
    cfg: Config, connect: Optional[Callable] = None, settings: Optional[OracleSettings] = None
) -> list[Item]:
    """Log in and list the views the user cannot see, each with the GRANT that fixes it.

    When the agent is holding after a logon refusal (oracle_db.LogonBackoff), a line
    says so first: why, what to fix, and what lets the agent try again. The check still
    tries one logon: it is how the DBA sees that the fix worked.
    """
    from .oracle_db import Database, backoff_file_id, credentials_of, describe, load_backoff
    from .state import StateFile

    settings = settings or cfg.oracle
    assert settings is not None
    what = f"database {settings.target or settings.dsn}"
    found = []
    target_id = f"oracle:{settings.target}"
    backoff = load_backoff(cfg.state_dir, target_id)
    if backoff.holds(time.time(), credentials_of(settings)):
        path = StateFile(cfg.state_dir, backoff_file_id(target_id)).path
        found.append(Item(WARN, f"{what} logon", f"the agent is waiting: {backoff.explain(path)}"))
    database = Database(settings)
    try:
        (connect or Database.connect)(database)
    except (ConfigError, EnvironmentProblem) as error:
        return [*found, Item(FAIL, what, str(error), EXIT_LOCAL)]
    except Exception as error:  # oracledb.Error and anything the driver raises: one line via describe()
        return [*found, Item(FAIL, what, describe(error, user=settings.user.upper()), EXIT_DATABASE)]
    try:
        if database.container:
            found.append(Item(FAIL, f"{what} container", database.container, EXIT_DATABASE))
        found += [Item(WARN, f"{what} view {view}", note) for view, note in database.notes.items()]
        if database.missing:
            return found + [
                Item(FAIL, f"{what} view {view}", reason, EXIT_DATABASE) for view, reason in database.missing.items()
            ]
        who = settings.user or "OS authentication"
        if settings.privilege == "sysdg":
            who += " AS SYSDG (the session runs as the user SYSDG)"
        connected = f"connected as {who}; every view dnfsmon reads is " + (
            "readable (see the warnings)" if database.notes else "visible"
        )
        return found if database.container else [*found, Item(OK, what, connected)]
    finally:
        database.close()


def check_influxdb(cfg: Config) -> list[Item]:
    """An empty write: InfluxDB checks the token and the database/bucket, and stores nothing.

    InfluxDB 1.8 answers 204 when both are right, 404 "database not found",
    401 for bad credentials (verified against 1.8.10 in tests/test_check.py).
    2.x/3.x answer 404 for an unknown bucket and 401 for a refused token
    (InfluxDB v2 API reference, POST /api/v2/write); an empty body may be
    answered 400 ("no points"), which also proves bucket and token good.
    """
    from .influx import token_of

    settings = cfg.influxdb
    assert settings is not None
    what = f"InfluxDB {settings.url} bucket {settings.bucket}"
    try:
        token = token_of(settings)
    except ConfigError as error:
        return [Item(FAIL, what, str(error), EXIT_LOCAL)]
    query = urllib.parse.urlencode({"bucket": settings.bucket, "org": settings.org, "precision": "ns"})
    request = urllib.request.Request(f"{settings.url.rstrip('/')}/api/v2/write?{query}", data=b"", method="POST")
    if token:
        request.add_header("Authorization", f"Token {token}")
    context = None
    if settings.url.startswith("https"):
        context = ssl.create_default_context(cafile=settings.ca_file or None)
        if not settings.verify_tls:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(request, timeout=settings.timeout_s, context=context) as response:
            status = response.status
    except urllib.error.HTTPError as error:
        status = error.code
    except (OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        return [Item(FAIL, what, f"unreachable ({reason}): is InfluxDB up and [influxdb] url right?", EXIT_INFLUXDB)]
    if status in (204, 400):
        return [Item(OK, what, "the token and the database/bucket are accepted")]
    if status == 404:
        fix = 'CREATE DATABASE "<name>" on 1.8, or create the bucket on 2.x/3.x, or fix [influxdb] bucket'
        return [Item(FAIL, what, f"no such database or bucket (HTTP 404): {fix}", EXIT_INFLUXDB)]
    if status in (401, 403):
        return [
            Item(FAIL, what, f"the token was refused (HTTP {status}): check token_file or token_env", EXIT_INFLUXDB)
        ]
    return [Item(FAIL, what, f"unexpected answer HTTP {status}: see InfluxDB's log", EXIT_INFLUXDB)]


def items(cfg: Config, connect: Optional[Callable] = None) -> list[Item]:
    found = [Item(OK, "config", cfg.path or f"built-in defaults ({configuration.DEFAULT_PATH} does not exist)")]
    found += check_directory("[agent] state_dir", cfg.state_dir)
    found += check_directory("[store] dir", cfg.store_dir)
    found += check_former_targets(cfg)
    passwords = {}
    for database in cfg.databases:
        if not database.external_auth:
            passwords[id(database)] = check_secret(
                "Oracle password", database.password_file, database.password_env, True
            )
            found.append(passwords[id(database)])
    if cfg.influxdb is not None:
        found.append(check_secret("InfluxDB token", cfg.influxdb.token_file, cfg.influxdb.token_env, False))
    for database in cfg.databases:  # each database its own lines
        password = passwords.get(id(database))
        if password is not None and password.status == FAIL:
            # One FAIL line per cause: the login would fail on the same password file.
            found.append(Item(WARN, f"database {database.target or database.dsn}", "not tried: fix the password first"))
        else:
            found += check_database(cfg, connect, database)
    if not cfg.databases and cfg.simulator is not None:
        found.append(Item(WARN, "database", "the simulator is on ([simulator] enabled): no real database is read"))
    elif not cfg.databases:
        found.append(Item(WARN, "database", "[oracle] is not enabled: only the host is monitored"))
    if cfg.influxdb is not None:
        found += check_influxdb(cfg)
    else:
        found.append(Item(WARN, "InfluxDB", "[influxdb] is not enabled: points stay in the local store"))
    return found


def exit_code(found: list[Item]) -> int:
    failed = [item.exit_code for item in found if item.status == FAIL]
    return min(failed) if failed else 0


def run(load: Callable[[], Config], connect: Optional[Callable] = None, output: str = "text") -> int:
    try:
        cfg = load()
    except ConfigError as error:
        found = [Item(FAIL, "config", str(error))]
    else:
        found = items(cfg, connect)
    code = exit_code(found)
    if output == "json":
        # An item's exit code means something only when it failed.
        rows = [
            dict(dataclasses.asdict(item), exit_code=item.exit_code if item.status == FAIL else 0) for item in found
        ]
        print(json.dumps({"exit_code": code, "items": rows}, indent=1))
        return code
    for item in found:
        print(item.line())
    print("all good" if code == 0 else "fix the FAIL lines above, then run dnfsmon check again")
    return code
