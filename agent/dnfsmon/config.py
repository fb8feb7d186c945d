"""Configuration: one TOML file, validated at start-up.

The documented example is example.toml beside this module (shown in the
README); tests keep it in step with OPTIONS below. Every error names the file,
the key and the offending value. Relative paths are relative to the config
file's directory, so a cron job's working directory does not matter.
"""

from __future__ import annotations

import math
import os
import re
import sys
from typing import Any, Callable, NamedTuple, Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.9/3.10 hosts
    import tomli as tomllib

from .errors import EnvironmentProblem
from .files import read_secret_file
from .sources import HOST_SOURCES

DEFAULT_PATH = "/etc/dnfsmon/dnfsmon.toml"
# The documented example, installed with the package (`dnfsmon init-config` writes it).
EXAMPLE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "example.toml")
LOG_LEVELS = ("debug", "info", "warning", "error")


class ConfigError(ValueError):
    pass


def _string(value: Any) -> Optional[str]:
    return None if isinstance(value, str) else "must be a string"


def _path(value: Any) -> Optional[str]:
    return None if isinstance(value, str) and value else "must be a non-empty path"


def _positive_int(value: Any) -> Optional[str]:
    ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
    return None if ok else "must be a positive integer"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _int_between(low: int, high: int, why: str = "") -> Callable[[Any], Optional[str]]:
    """A whole number in [low, high]; the bounds keep a typo from hanging or crashing a run."""

    def check(value: Any) -> Optional[str]:
        ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
        return None if ok else f"must be a whole number from {low} to {high}{why}"

    return check


def _number_between(low: float, high: float, why: str = "") -> Callable[[Any], Optional[str]]:
    """A finite number in [low, high]."""

    def check(value: Any) -> Optional[str]:
        ok = _is_number(value) and low <= value <= high
        return None if ok else f"must be a number from {low:g} to {high:g}{why}"

    return check


# Host names become a tag on every point: line protocol cannot carry a control
# character, and a trailing backslash would escape the separator after it.
def _host(value: Any) -> Optional[str]:
    if not isinstance(value, str):
        return "must be a string"
    if any(ord(c) < 32 or ord(c) == 127 for c in value) or value.endswith("\\") or len(value) > 255:
        return "must be a host name (no control characters, no trailing backslash, at most 255 characters)"
    return None


def _dsn(value: Any) -> Optional[str]:
    """No password in a DSN: Oracle repeats the DSN in its errors, which are logged and shipped."""
    if not isinstance(value, str):
        return "must be a string"
    if re.match(r"^[^@()]*/[^@()]*@", value):
        return "must not hold a password (user/password@...): use password_file or password_env"
    return None


def _log_level(value: Any) -> Optional[str]:
    # Any case is accepted (INFO, Info, info), as Python's logging names levels
    # in capitals and users copy them; parse() stores the lower-case form.
    ok = isinstance(value, str) and value.lower() in LOG_LEVELS
    return None if ok else f"must be one of {', '.join(LOG_LEVELS)} (in any case)"


def _host_sources(value: Any) -> Optional[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return "must be a list of source names"
    unknown = [v for v in value if v not in HOST_SOURCES]
    if unknown:
        return f"unknown source {unknown[0]!r}; known: {', '.join(HOST_SOURCES)}"
    return None


def _names(what: str, allow_empty: bool) -> Callable[[Any], Optional[str]]:
    """A list of non-empty strings (globs or names); empty only where that means "none"."""

    def check(value: Any) -> Optional[str]:
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            return f"must be a list of {what}"
        if not value and not allow_empty:
            return f'must name at least one of {what} ("*" or "all" for every one)'
        return None

    return check


def _bool(value: Any) -> Optional[str]:
    return None if isinstance(value, bool) else "must be true or false"


def _positive_number(value: Any) -> Optional[str]:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
    return None if ok else "must be a positive number"


def _non_negative_int(value: Any) -> Optional[str]:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return None if ok else "must be a whole number, 0 or more"


def _url(value: Any) -> Optional[str]:
    if not isinstance(value, str):
        return "must be an http:// or https:// URL"
    import urllib.parse  # here: only a config with [influxdb] has a URL to check (ipaddress comes with it)

    parts = urllib.parse.urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return "must be an http:// or https:// URL"
    if "@" in parts.netloc:
        # A URL is printed in every ship error; the credentials belong in token_file.
        return "must not hold a user or password (user:pw@host): use token_file or token_env"
    return None


def _choice(*choices: str) -> Callable[[Any], Optional[str]]:
    def check(value: Any) -> Optional[str]:
        return None if value in choices else f"must be one of {', '.join(choices)}"

    return check


def _release(value: Any) -> Optional[str]:
    from .oracle_facts import RELEASES

    return None if value in RELEASES else f"must be one of {', '.join(RELEASES)}"


def _optional_release(value: Any) -> Optional[str]:
    return None if value == "" else _release(value)


def _fraction(value: Any) -> Optional[str]:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 10
    return None if ok else "must be a number from 0 (even) up to 10"


def _ports(value: Any) -> Optional[str]:
    ok = (
        isinstance(value, list)
        and value
        and all(isinstance(v, int) and not isinstance(v, bool) and 0 < v < 65536 for v in value)
    )
    return None if ok else "must be a non-empty list of TCP port numbers"


# What to do about a release-11 database (config validation and DPY-3010 say the same).
THIN_MODE_TOO_OLD = (
    'python-oracledb thin mode cannot connect to Oracle Database 11.2; set mode = "thick" '
    "with Oracle Client libraries of release 18c or 19c (Instant Client 19c is the usual choice) (they still connect to 11.2)"
)


# (section, key) -> (default, validator, is_path). The default None for
# agent.host means "the system host name".
OPTIONS: dict[tuple[str, str], tuple[Any, Callable[[Any], Optional[str]], bool]] = {
    ("agent", "host"): ("", _host, False),
    ("agent", "state_dir"): ("/var/lib/dnfsmon/state", _path, True),
    ("agent", "log_level"): ("info", _log_level, False),
    ("store", "dir"): ("/var/lib/dnfsmon/store", _path, True),
    ("store", "max_bytes"): (268435456, _int_between(4096, 1 << 40), False),
    ("host", "proc_root"): ("/proc", _path, True),
    ("host", "sys_root"): ("/sys", _path, True),
    ("host", "sources"): (list(HOST_SOURCES), _host_sources, False),
    ("host", "nfs_ports"): ([2049], _ports, False),
    # Filters of the host sources (docs/configuration.md, "Filters"): shell-style globs (fnmatch).
    ("mountstats", "include_mounts"): (["*"], _names("mount point globs", False), False),
    ("mountstats", "exclude_mounts"): ([], _names("mount point globs", True), False),
    # READ and WRITE, which the dashboards and the doctor read by name (grafana/generate.py,
    # dnfsmon/diagnosis), and the four an Oracle mount sends most of its other RPCs as: COMMIT
    # after unstable WRITEs; GETATTR, ACCESS and LOOKUP, which actimeo=0 (what RAC needs) sends
    # on every open and stat. ["all"]: every operation the kernel prints.
    ("mountstats", "operations"): (
        ["READ", "WRITE", "COMMIT", "GETATTR", "ACCESS", "LOOKUP"],
        _names("NFS operation names", False),
        False,
    ),
    ("nic", "include_interfaces"): (["*"], _names("interface globs", False), False),
    ("nic", "exclude_interfaces"): ([], _names("interface globs", True), False),
    ("filer_tcp", "include_filers"): (["*"], _names("filer address globs", False), False),
    ("filer_tcp", "exclude_filers"): ([], _names("filer address globs", True), False),
    ("influxdb", "enabled"): (False, _bool, False),
    ("influxdb", "url"): ("http://localhost:8086", _url, False),
    ("influxdb", "org"): ("-", _string, False),
    ("influxdb", "bucket"): ("dnfsmon", _string, False),
    ("influxdb", "token_file"): ("", _string, True),
    ("influxdb", "token_env"): ("DNFSMON_INFLUXDB_TOKEN", _string, False),
    ("influxdb", "timeout_s"): (10.0, _number_between(0.01, 300), False),
    ("influxdb", "verify_tls"): (True, _bool, False),
    ("influxdb", "ca_file"): ("", _string, True),
    ("influxdb", "batch_size"): (5000, _int_between(1, 100000), False),
    ("influxdb", "gzip"): (True, _bool, False),
    ("influxdb", "max_retries"): (3, _int_between(0, 10), False),
    ("influxdb", "retry_backoff_s"): (1.0, _number_between(0.01, 60), False),
    ("influxdb", "deadline_s"): (40.0, _number_between(1, 3600), False),
    ("influxdb", "naming"): ("influxdb", _choice("influxdb", "prometheus"), False),
    ("prometheus", "textfile"): ("", _string, True),
    ("oracle", "enabled"): (False, _bool, False),
    ("oracle", "target"): ("", _string, False),
    ("oracle", "dsn"): ("", _dsn, False),
    ("oracle", "user"): ("", _string, False),
    ("oracle", "password_file"): ("", _string, True),
    ("oracle", "password_env"): ("DNFSMON_ORACLE_PASSWORD", _string, False),
    ("oracle", "mode"): ("thin", _choice("thin", "thick"), False),
    ("oracle", "external_auth"): (False, _bool, False),
    ("oracle", "lib_dir"): ("", _string, True),
    ("oracle", "config_dir"): ("", _string, True),
    ("oracle", "call_timeout_s"): (10.0, _number_between(0.01, 300), False),
    ("oracle", "scope"): ("instance", _choice("instance", "cluster"), False),
    ("oracle", "release"): ("", _optional_release, False),
    ("oracle", "inventory_interval_s"): (600.0, _number_between(10, 86400), False),
    ("oracle", "top_processes"): (10, _int_between(0, 100), False),
    ("oracle", "privilege"): ("none", _choice("none", "sysdg"), False),
    ("simulator", "enabled"): (False, _bool, False),
    ("simulator", "release"): ("19c", _release, False),
    ("simulator", "mode"): ("thin", _choice("thin", "thick"), False),
    ("simulator", "scope"): ("instance", _choice("instance", "cluster"), False),
    ("simulator", "db_name"): ("SIMDB", _string, False),
    ("simulator", "instances"): (2, _int_between(1, 64), False),
    ("simulator", "read_iops"): (4000.0, _number_between(0.001, 1e7), False),
    ("simulator", "write_iops"): (1000.0, _number_between(0.001, 1e7), False),
    ("simulator", "processes"): (40, _int_between(1, 10000), False),
    ("simulator", "process_lifetime_s"): (3600.0, _number_between(1, 1e7), False),
    ("simulator", "path_imbalance"): (0.0, _fraction, False),
    ("simulator", "latency_us"): (500.0, _number_between(0.001, 1e7), False),
    ("simulator", "client_slots"): (0, _int_between(0, 65536), False),
    ("simulator", "dnfs_enabled"): (True, _bool, False),
    ("simulator", "fallback_datafiles"): (0, _int_between(0, 20), False),
    ("doctor", "dnfs_expected"): ("auto", _choice("auto", "yes", "no"), False),
}


# [doctor] dnfs_expected as the doctor takes it.
DNFS_EXPECTED: dict[str, Optional[bool]] = {"auto": None, "yes": True, "no": False}


# The sections that configure one source each (Config.sources).
SOURCE_SECTIONS = ("mountstats", "nic", "filer_tcp")


# Keys whose rejected value is not echoed in the error (it may hold a password).
MAY_HOLD_A_PASSWORD = {("influxdb", "url"), ("oracle", "dsn")}


# The settings are NamedTuples, not dataclasses: `import dataclasses` loads inspect (with ast,
# dis and tokenize) and each decorated class compiles generated methods at import, a cost
# every cron run paid (bench/RESULTS.md). A NamedTuple is as read-only, typed and compared
# by value; replace() is its _replace().


class InfluxSettings(NamedTuple):
    """Where and how to ship (see example.toml [influxdb]); the token is read at ship time."""

    url: str
    org: str
    bucket: str
    token_file: str
    token_env: str
    timeout_s: float
    verify_tls: bool
    ca_file: str
    batch_size: int
    gzip: bool
    max_retries: int
    retry_backoff_s: float
    # Wall-clock bound of one ship (every request, retry and wait included).
    deadline_s: float
    # "influxdb": the catalogue's names; "prometheus": prometheus.py's names, units and labels,
    # for a server that names a series <measurement>_<field> (VictoriaMetrics).
    naming: str


class OracleSettings(NamedTuple):
    """How to reach the database (see example.toml [oracle]); the password is read at connect time."""

    target: str
    dsn: str
    user: str
    password_file: str
    password_env: str
    mode: str
    external_auth: bool
    lib_dir: str
    config_dir: str
    call_timeout_s: float
    # "instance": the connected instance only (one agent per RAC node); "cluster": every instance.
    scope: str
    # The database's release when the site states it ("" = learn it at connect time).
    release: str
    # Seconds between two reads of the inventory (filers, files, coverage).
    inventory_interval_s: float
    # How many processes dnfsmon_dnfs_top_process publishes per instance (0: none).
    top_processes: int
    # "sysdg": log on with the SYSDG administrative privilege, so that a mounted standby's
    # database layer is read (docs/oracle.md, "Standbys"); "none": an ordinary session.
    privilege: str


class SimulatorSettings(NamedTuple):
    """The simulated database's workload (see example.toml [simulator] and dnfsmon.simulator)."""

    release: str
    mode: str
    scope: str
    db_name: str
    instances: int
    read_iops: float
    write_iops: float
    processes: int
    process_lifetime_s: float
    path_imbalance: float
    latency_us: float
    client_slots: int
    dnfs_enabled: bool
    fallback_datafiles: int


class Config(NamedTuple):
    path: Optional[str]
    host: str
    state_dir: str
    log_level: str
    store_dir: str
    store_max_bytes: int
    proc_root: str
    sys_root: str
    host_sources: list[str]
    nfs_ports: list[int]
    # None unless [influxdb] enabled = true.
    influxdb: Optional[InfluxSettings]
    # The Prometheus textfile-collector file rewritten after every sample; "" for none.
    prometheus_textfile: str
    # None unless [oracle] enabled = true.
    oracle: Optional[OracleSettings]
    # None unless [simulator] enabled = true.
    simulator: Optional[SimulatorSettings]
    # Every enabled database: one [oracle] table, or several [[oracle]] tables (one
    # target each, with its own state, status, time budget and failures); oracle is the first.
    databases: list[OracleSettings] = []  # noqa: RUF012 (read-only, as every field)
    # [doctor] dnfs_expected: True ("yes"), False ("no"), None ("auto": judged from the database).
    dnfs_expected: Optional[bool] = None
    # Options of the sources' own sections ([mountstats], [nic]), defaults included, by section:
    # each source is built from its section (dnfsmon.sources.build).
    sources: dict[str, dict[str, Any]] = {}  # noqa: RUF012 (read-only, as every field)


def _unchanged(value: Any) -> Any:
    return value


# (section, key) -> the canonical form of a valid value, for options that
# accept several spellings of one value.
NORMALISE: dict[tuple[str, str], Callable[[Any], Any]] = {
    ("agent", "log_level"): str.lower,
}


def parse(data: dict[str, Any], path: Optional[str]) -> Config:
    """Validate a parsed TOML document; ConfigError names the key and value.

    Several databases are several [[oracle]] tables (an array of tables), each
    validated exactly as a single [oracle] table is.
    """
    where = path or "built-in defaults"
    if isinstance(data.get("oracle"), list):
        config = parse({name: table for name, table in data.items() if name != "oracle"}, path)
        databases = _databases(data["oracle"], path, where)
        if databases and config.simulator:
            raise ConfigError(f"{where}: [oracle] and [simulator] are both enabled; enable one database source")
        return config._replace(oracle=databases[0] if databases else None, databases=databases)
    base = os.path.dirname(os.path.abspath(path)) if path else os.getcwd()
    values: dict[tuple[str, str], Any] = {}
    for section, table in data.items():
        if not isinstance(table, dict) or section not in {s for s, _ in OPTIONS}:
            raise ConfigError(
                f"{where}: unknown section [{section}]; known: {', '.join(sorted({s for s, _ in OPTIONS}))}"
            )
        for key, value in table.items():
            if (section, key) not in OPTIONS:
                known = ", ".join(k for s, k in OPTIONS if s == section)
                raise ConfigError(f"{where}: unknown key [{section}] {key}; known: {known}")
            problem = OPTIONS[(section, key)][1](value)
            if problem:
                # Never echo a value that may hold a password.
                secret = (section, key) in MAY_HOLD_A_PASSWORD and "@" in str(value)
                shown = "(value not shown: it may hold a password)" if secret else repr(value)
                raise ConfigError(f"{where}: [{section}] {key} = {shown}: {problem}")
            values[(section, key)] = NORMALISE.get((section, key), _unchanged)(value)

    def get(section: str, key: str) -> Any:
        default, _, is_path = OPTIONS[(section, key)]
        value = values.get((section, key), default)
        return os.path.join(base, value) if is_path and value else value

    influxdb = None
    if get("influxdb", "enabled"):
        influxdb = InfluxSettings(
            **{key: get("influxdb", key) for section, key in OPTIONS if section == "influxdb" and key != "enabled"}
        )
        if not influxdb.bucket:
            raise ConfigError(
                f"{where}: [influxdb] bucket = '': must name a bucket (1.8: database or database/retention_policy)"
            )

    def options_of(name: str) -> dict[str, Any]:
        return {key: get(name, key) for s_name, key in OPTIONS if s_name == name and key != "enabled"}

    oracle = None
    if get("oracle", "enabled"):
        oracle = OracleSettings(**options_of("oracle"))
        if not oracle.dsn:
            raise ConfigError(f"{where}: [oracle] dsn = '': name the database (host:port/service or a TNS alias)")
        if not oracle.external_auth and not oracle.user:
            raise ConfigError(f"{where}: [oracle] user = '': name the monitoring user (or set external_auth = true)")
        if oracle.external_auth and oracle.mode != "thick":
            raise ConfigError(
                f'{where}: [oracle] external_auth = true needs mode = "thick" (OS authentication needs Oracle Client libraries)'
            )
        if not oracle.target:
            oracle = OracleSettings(**dict(options_of("oracle"), target=oracle.dsn))
        _refuse_thin_on_release_11(where, "oracle", oracle.release, oracle.mode)
        if oracle.privilege == "sysdg" and oracle.release.startswith("11."):
            # SYSDG is one of the administrative privileges 12.1 added (Oracle Database Security
            # Guide, "Administrative Privileges"); SYSDBA, the only other way into a mounted
            # database, is far more than a monitor should hold.
            raise ConfigError(
                f"{where}: [oracle] privilege = 'sysdg' needs release 12.1 or later (release = {oracle.release!r}): "
                'set privilege = "none"; a mounted 11.2.0.4 standby is monitored in its host layers only'
            )
    simulator = SimulatorSettings(**options_of("simulator")) if get("simulator", "enabled") else None
    if simulator:
        _refuse_thin_on_release_11(where, "simulator", simulator.release, simulator.mode)
    if oracle and simulator:
        raise ConfigError(f"{where}: [oracle] and [simulator] are both enabled; enable one database source")

    return Config(
        path=path,
        # The kernel's node name, which socket.gethostname() returns too (gethostname(2)), without socket.
        host=get("agent", "host") or os.uname().nodename,
        state_dir=get("agent", "state_dir"),
        log_level=get("agent", "log_level"),
        store_dir=get("store", "dir"),
        store_max_bytes=get("store", "max_bytes"),
        proc_root=get("host", "proc_root"),
        sys_root=get("host", "sys_root"),
        host_sources=list(get("host", "sources")),
        nfs_ports=list(get("host", "nfs_ports")),
        influxdb=influxdb,
        prometheus_textfile=get("prometheus", "textfile"),
        oracle=oracle,
        databases=[oracle] if oracle else [],
        simulator=simulator,
        dnfs_expected=DNFS_EXPECTED[get("doctor", "dnfs_expected")],
        sources={name: options_of(name) for name in SOURCE_SECTIONS},
    )


def _databases(tables: list, path: Optional[str], where: str) -> list[OracleSettings]:
    """The enabled databases of [[oracle]] tables, each validated as a single [oracle] table."""
    databases: list[OracleSettings] = []
    for number, table in enumerate(tables, start=1):
        if not isinstance(table, dict):
            raise ConfigError(f"{where}: [[oracle]] number {number} is not a table")
        try:
            settings = parse({"oracle": table}, path).oracle
        except ConfigError as error:
            raise ConfigError(f"{error} (in [[oracle]] number {number})") from None
        if settings is None:
            continue  # enabled = false
        if any(d.target == settings.target for d in databases):
            raise ConfigError(
                f"{where}: [[oracle]] number {number}: target = {settings.target!r} is used twice; give each "
                "database its own target (it names its state file and its status point)"
            )
        databases.append(settings)
    return databases


def _refuse_thin_on_release_11(where: str, section: str, release: str, mode: str) -> None:
    """python-oracledb thin mode connects to Oracle Database 12.1 and later only
    (python-oracledb documentation, "Troubleshooting", DPY-3010)."""
    if release.startswith("11.") and mode == "thin":
        raise ConfigError(f"{where}: [{section}] release = {release!r}: {THIN_MODE_TOO_OLD}")


def load(path: Optional[str]) -> Config:
    """Load and validate a config file; None means built-in defaults."""
    if path is None:
        return parse({}, None)
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except OSError as error:
        raise ConfigError(f"config file {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"config file {path}: not valid TOML: {error}") from None
    return parse(data, path)


def read_secret(path: Optional[str], env_var: Optional[str], what: str, http_header: bool = False) -> str:
    """A secret from an owner-only file, else from an environment variable.

    Secrets never come from argv (visible in ps) and are never logged. The
    file is checked by files.read_secret_file (regular, not a symlink, owned
    by this user or root, mode 0600/0400). Surrounding whitespace is stripped;
    a control character left inside (a second line) is refused without
    echoing the secret: it would otherwise reach an HTTP header and the text
    of the error that header raises. So is a UTF-8 byte order mark (Windows
    Notepad writes one), and, for a secret sent in an HTTP header, any
    character outside Latin-1, which http.client cannot encode there.
    """
    if path:
        secret = _clean_secret(read_secret_file(path, what), f"{what} file {path}", http_header)
        if not secret:
            raise ConfigError(f"{what} file {path} is empty")
        return secret
    if env_var and os.environ.get(env_var, "").strip():
        return _clean_secret(os.environ[env_var], f"{what} in the environment variable {env_var}", http_header)
    raise ConfigError(f"no {what}: set a file readable by its owner only, or the environment variable {env_var}")


def _clean_secret(text: str, where: str, http_header: bool = False) -> str:
    if text.startswith("\ufeff"):
        raise EnvironmentProblem(
            f"{where} starts with a UTF-8 byte order mark (as Windows Notepad saves): save it as plain text without one"
        )
    secret = text.strip()
    if http_header:
        # http.client encodes header values as Latin-1 (RFC 9110 5.5 allows no more); a token is ASCII.
        beyond = [i for i, c in enumerate(secret) if ord(c) > 255]
        if beyond:
            raise EnvironmentProblem(
                f"{where} holds a character an HTTP header cannot carry (at character {beyond[0] + 1}); "
                "an InfluxDB token is ASCII: copy it again from InfluxDB"
            )
    bad = [i for i, c in enumerate(secret) if ord(c) < 32 or ord(c) == 127]
    if bad:
        raise EnvironmentProblem(
            f"{where} holds a line break or control character (at character {bad[0] + 1}); "
            "it must be one line: the secret alone"
        )
    return secret
