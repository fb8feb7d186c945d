"""Reading a live Oracle database with python-oracledb: the oracle source's thin I/O.

One session per `dnfsmon collect` run (kept across its --count samples).
Thin mode by default (no Oracle Client libraries); thick mode where a site
needs OS authentication, a wallet, or a release-11 database.

Time bounds (docs/oracle.md, "Time bounds"): python-oracledb's
tcp_connect_timeout bounds only the TCP connect, and a listener (or a proxy
in front of a dead database) that accepts and never answers the TNS
handshake holds oracledb.connect() forever; call_timeout is set on a
connection only once it exists. So every step that talks to the database
(connect with discovery, then each sample's read) runs in a worker thread
with a hard deadline; a step past its deadline is abandoned with its
session, and the database is not asked again in that run: a hung database
costs one deadline per run, and the host sources' points are already stored.

At connect time the columns of every view dnfsmon reads are discovered in one
round trip from ALL_TAB_COLUMNS, which lists exactly the SYS.V_$/GV_$ views
the user may select; a view missing there is reported with the GRANT that
would fix it, and the queries that need it are left out. Each sample then
sends one statement for the counters (and one for the inventory when it is
due: sources.oracle.wire.combine), which reads the database clock
(SYS_EXTRACT_UTC(SYSTIMESTAMP)) with them. A failing query is recorded and
the others still run.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from .config import THIN_MODE_TOO_OLD, OracleSettings, read_secret
from .errors import EnvironmentProblem
from .oracle_facts import CLUSTER_VIEWS, VIEWS_READ, base_view, columns, grant_name, release_of_version
from .sources.base import Raw, host_clock
from .sources.oracle import RESULTS, Query, build_queries, clock_seconds, combine, read_groups, split
from .sources.oracle.wire import is_statement_column

log = logging.getLogger(__name__)

T = TypeVar("T")

# Added to a step's deadline so that the driver's own timeouts (which give the
# more precise error: DPY-6005, DPY-4024) fire first when they work at all.
DEADLINE_GRACE_S = 1.0
# A step is not started with less of the run's budget left than this: it could not succeed.
MIN_STEP_S = 1.0


class Hung(Exception):
    """A step with the database did not return within its deadline."""


def within(seconds: float, step: str, call: Callable[[], T]) -> T:
    """call() in a worker thread; Hung when it has not returned after `seconds`.

    The worker is a daemon thread: if it is abandoned (blocked in a socket
    read the driver does not bound), it dies with the process at the end of
    the run, and the session it holds is never used again.
    """
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as error:  # handed to the caller's thread below
            outcome["error"] = error

    worker = threading.Thread(target=run, name=f"dnfsmon-oracle-{step}", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise Hung(
            f"no answer from the database within {seconds:g} s ({step}); not asked again in this run "
            "(is the listener or a proxy in front of the database hung? raise oracle.call_timeout_s if it is only slow)"
        )
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]


# The views read and their GRANT names: one list, in dnfsmon.oracle_facts.
VIEWS = VIEWS_READ


# Where a DBA runs the setup scripts on the host: a copy of the installed pack (root's), since they
# save the DBA's SQL*Plus settings with STORE SET to a file in the current directory (sql/README.md).
PACK_COPY = 'cp -R "$(dnfsmon sql)/." ~/dnfsmon-sql && cd ~/dnfsmon-sql'

# Logon refusals: the database answered, and refused this user. Asking again cannot succeed until
# someone acts. After one of these the run makes no further logon, and the next runs hold
# (LogonBackoff). Each line: what to do, per code's Action in the Database Error Messages.
LOGON_REFUSALS = {
    "ORA-01017": "wrong user or password: correct [oracle] user or the password file; each attempt counts "
    "toward the profile's FAILED_LOGIN_ATTEMPTS",
    "ORA-01005": "no password was sent: put the password in [oracle] password_file",
    # python-oracledb raises ORA-01005 as DPY-4001 ("no credentials specified"; its errors.py,
    # ERR_ORACLE_ERROR_XREF), as it does when no password is given at all: the same fix.
    "DPY-4001": "no password was sent: put the password in [oracle] password_file",
    "ORA-01040": "the password holds a character the database refuses: set another with "
    "@setup/set_monitor_password in a copy of the SQL pack (" + PACK_COPY + ")",
    "ORA-01045": "{user} lacks CREATE SESSION: run @setup/create_monitor_user in the SQL pack "
    "(" + PACK_COPY + ") as a DBA",
    "ORA-28000": "the account is locked: on the primary, ALTER USER {user} ACCOUNT UNLOCK (after fixing the "
    "password if a wrong one locked it)",
    "ORA-28001": "the password has expired: set a new one with @setup/set_monitor_password in the SQL pack "
    "(" + PACK_COPY + "), and give {user} its profile with @setup/create_monitor_user (docs/oracle.md, "
    '"Password profile")',
    "ORA-28040": "no matching authentication protocol: the database's SQLNET.ALLOWED_LOGON_VERSION_SERVER refuses "
    'this client; see docs/oracle.md, "Connecting"',
}

# Refusals of the credentials themselves: each attempt counts toward the profile's
# FAILED_LOGIN_ATTEMPTS (DEFAULT profile: 10, then locked for PASSWORD_LOCK_TIME, 1 day, for every
# agent sharing the account), and the count is reset only by a successful logon (Security Guide,
# "Configuring Password Protection"; SQL Language Reference, CREATE PROFILE, FAILED_LOGIN_ATTEMPTS).
# A back-off only delays the lock (four RAC nodes retrying at 0, 5 and 15 min make 12 failures), so
# after one of these no logon is tried again until the credentials change (credentials_of) or the
# operator removes the hold. The other refusals come with a correct password (ORA-28000, 28001,
# 01045) or before the password is checked (ORA-28040): they add nothing to the count, and are
# tried again after a doubling wait.
WRONG_CREDENTIALS = ("ORA-01017", "ORA-01005", "DPY-4001", "ORA-01040")


PASSWORD_SOON = (
    "set a new password with @setup/set_monitor_password in a copy of the SQL pack (" + PACK_COPY + ") before it "
    'expires, and see docs/oracle.md, "Password profile"'
)

# A database that is not open: a mounted physical standby (not Active Data Guard) refuses a
# logon that is not SYSDBA/SYSDG with ORA-01033, as does an instance starting or stopping
# (Database Error Messages, ORA-01033); ORA-01219 answers a dictionary query in MOUNT; ORA-01035
# answers a user without RESTRICTED SESSION while the instance is in restricted mode (STARTUP
# RESTRICT, ALTER SYSTEM ENABLE RESTRICTED SESSION: Database Error Messages, ORA-01035). Not a
# refusal of the user: tried again each sample, at no cost to the account.
NOT_OPEN = {
    "ORA-01033": "the database is not open: database layer not readable in MOUNT (a mounted standby, or the "
    "instance is starting or stopping); host layers monitored. Active Data Guard (open read only) is read; "
    'a mounted standby of 12.1 and later is read with [oracle] privilege = "sysdg" (docs/oracle.md, "Standbys")',
    "ORA-01219": "the database is not open: database layer not readable in MOUNT; host layers monitored",
    # An instance started NOMOUNT (reachable through a static listener entry, which an administrative
    # logon such as SYSDG may use) has no control file open: V$DATABASE answers ORA-01507.
    "ORA-01507": "the instance is started NOMOUNT (no database mounted): database layer not readable; host "
    "layers monitored",
    "ORA-01035": "the instance is in restricted mode (only users with RESTRICTED SESSION log on): database layer "
    "not readable until ALTER SYSTEM DISABLE RESTRICTED SESSION; host layers monitored; tried again each sample",
}

# python-oracledb thin mode cannot answer the 10G password verifier (DPY-3015, "password verifier
# type 0x939 is not supported by python-oracledb in thin mode"): an account whose password was set
# while only the 10G verifier was made (11.2 with SEC_CASE_SENSITIVE_LOGON = FALSE, or an old
# SQLNET.ALLOWED_LOGON_VERSION_SERVER). python-oracledb's maintainers name the two ways out.
VERIFIER_10G = (
    'use thick mode ([oracle] mode = "thick"), or reset the password (@setup/set_monitor_password in the SQL '
    "pack: " + PACK_COPY + ") with SEC_CASE_SENSITIVE_LOGON = TRUE so that an 11G/12C verifier exists"
)


def error_code(error: Exception) -> str:
    """The ORA-/DPY- code of a driver error ("" for anything else)."""
    detail = error.args[0] if error.args else None
    return str(getattr(detail, "full_code", "") or "")


# In a CDB the agent must sit in the root with CONTAINER_DATA=ALL in effect: V$ and GV$ views are
# CONTAINER_DATA objects, and a user in the root without it sees only the root's rows (and
# those with CON_ID 0), a session in a PDB only that PDB's (Oracle Database Reference 12.1,
# "About Dynamic Performance Views"). Either gives partial IOPS and coverage with no error.
# The file list tells them apart without a grant on DBA_CONTAINER_DATA: V$DATAFILE comes
# from the control file, and every CDB has PDB$SEED's files (CON_ID 2: Reference,
# V$DATAFILE.CON_ID), so a root session that sees all containers sees a CON_ID of 2 or more.
# The file list is read from the view of the agent's scope (V$DATAFILE in scope "instance").
def container_sql(datafile_view: str) -> str:
    """V$DATABASE.CDB, the container's name and the CON_ID of one file of a PDB in the file list
    (NULL when the user sees none). ROWNUM = 1 rather than MAX: no aggregation, as a mounted
    database (read AS SYSDG) is sent no sort (queries.build_queries, ORA-01220)."""
    return (
        "SELECT d.cdb, SYS_CONTEXT('USERENV', 'CON_NAME') AS con_name, "
        f"(SELECT f.con_id FROM {datafile_view.lower()} f WHERE f.con_id >= 2 AND ROWNUM = 1) AS pdb_con_id "
        "FROM v$database d"
    )


# The file list answers for the file list's own view only: CONTAINER_DATA is set per view
# (ALTER USER ... SET CONTAINER_DATA = ALL FOR view), so a user may see every container in
# V$DATAFILE and the root's rows only in V$DNFS_STATS (dba-review A5). So each view the agent
# reads is looked up: a view created with CONTAINER_DATA (ALL_VIEWS.CONTAINER_DATA = 'Y', 12.1
# on) with neither the user's default attribute nor one for that view set to all containers
# (DBA_CONTAINER_DATA: DEFAULT_ATTR, OWNER, OBJECT_NAME, ALL_CONTAINERS; Oracle Database
# Reference 12.1 on) shows this user the root's rows only. A view that is not a CONTAINER_DATA
# object is not filtered by container (ORA-65058 when the attribute is set for it).
def container_data_sql(views: Sequence[str]) -> str:
    """The views among `views` (V$/GV$ names) whose rows this user sees for the root only."""
    names = ", ".join("'" + grant_name(v)[4:] + "'" for v in views)

    def mine(alias: str) -> str:
        return f"{alias}.username = SYS_CONTEXT('USERENV', 'SESSION_USER') AND {alias}.all_containers = 'Y'"

    return (
        "SELECT v.view_name FROM all_views v WHERE v.owner = 'SYS' AND v.container_data = 'Y' "
        f"AND v.view_name IN ({names}) "
        f"AND v.view_name NOT IN (SELECT c.object_name FROM dba_container_data c WHERE {mine('c')} "
        "AND c.owner = 'SYS' AND c.object_name IS NOT NULL) "
        f"AND NOT EXISTS (SELECT 1 FROM dba_container_data d WHERE {mine('d')} AND d.default_attr = 'Y') "
        "ORDER BY v.view_name"
    )


def container_problem(cdb: object, con_name: object, pdb_con_id: object, user: str) -> str:
    """Why the session does not see the whole CDB, with the fix; "" when it does (or no CDB)."""
    if cdb != "YES":
        return ""
    if con_name != "CDB$ROOT":
        return (
            f"connected to the container {con_name}, not the CDB root: dnfsmon reads the whole CDB from the "
            "root; point [oracle] dsn at the CDB's own service and use the common user (C##DNFSMON)"
        )
    if pdb_con_id is None or float(str(pdb_con_id)) < 2:
        return (
            f"{user} sees only the root's rows (CONTAINER_DATA is not ALL): run @setup/create_monitor_user "
            f"of a copy of the SQL pack ({PACK_COPY}) in the root, or ALTER USER {user} SET CONTAINER_DATA = ALL CONTAINER = CURRENT"
        )
    return ""


# Either histogram view will do (the microsecond one from 12.1.0.2).
HISTOGRAM_VIEWS = ("GV$EVENT_HISTOGRAM_MICRO", "GV$EVENT_HISTOGRAM")


def missing_views(found: Mapping[str, set[str]], scope: str, user: str) -> tuple[dict[str, str], dict[str, str]]:
    """({view: the GRANT that would let the agent read it}, {view: a note}) for a scope.

    Scope "cluster" reads the GV$ views, "instance" their V$ views
    (oracle_facts.INSTANCE_VIEWS). In scope "instance" a view whose GV$ view
    alone is granted (a user set up before V$ views were granted) is read
    from the GV$ view filtered on the instance: it works, and a note names
    the grant that makes it a V$ read.
    """
    missing: dict[str, str] = {}
    notes: dict[str, str] = {}

    def grant(view: str) -> str:
        return f"not visible to {user}: GRANT SELECT ON {grant_name(view)} TO {user}"

    def instance_view(view: str) -> str:
        return base_view(view) if scope == "instance" else view

    for view in CLUSTER_VIEWS:
        if view in HISTOGRAM_VIEWS:
            continue
        wanted = instance_view(view)
        if wanted in found:
            continue
        if view in found:
            notes[wanted] = (
                f"{wanted} not visible to {user}: {view} is read, filtered on this instance (parallel execution on "
                f"every instance); GRANT SELECT ON {grant_name(wanted)} TO {user}, or run the setup script again"
            )
        else:
            missing[wanted] = grant(wanted)
    histograms = [instance_view(v) for v in HISTOGRAM_VIEWS]
    if not (found.keys() & {*histograms, *HISTOGRAM_VIEWS}):
        missing[histograms[-1]] = grant(histograms[0])
    elif not (found.keys() & set(histograms)):
        notes[histograms[0]] = (
            f"{histograms[0]} not visible to {user}: the GV$ histogram is read, filtered on this instance; "
            f"GRANT SELECT ON {grant_name(histograms[0])} TO {user}, or run the setup script again"
        )
    return missing, notes


def discovery_sql() -> str:
    names = ", ".join("'" + grant_name(v)[4:] + "'" for v in VIEWS)
    return f"SELECT table_name, column_name FROM all_tab_columns WHERE owner = 'SYS' AND table_name IN ({names})"


def describe(error: Exception, views: tuple[str, ...] = (), user: str = "") -> str:
    """One clear line for an oracledb error: the code, the message, and what to do."""
    if isinstance(error, (Hung, EnvironmentProblem)):  # their message names the cause and the fix
        return str(error)
    # An exception holds the driver's error in args[0]; a warning (Connection.warning) is one.
    detail = error.args[0] if getattr(error, "args", None) else error
    code = getattr(detail, "full_code", "") or error.__class__.__name__
    message = str(getattr(detail, "message", detail)).strip().splitlines()[0]
    if not message.startswith(code):
        message = f"{code}: {message}"
    if code == "ORA-00942" and views:
        grants = ", ".join(f"GRANT SELECT ON {grant_name(v)} TO {user or '<user>'}" for v in views)
        return f"{message} (missing grant? {grants})"
    if code in LOGON_REFUSALS:
        return f"{message} ({LOGON_REFUSALS[code].format(user=user or '<user>')})"
    if code in ("DPY-6005", "DPY-6001", "ORA-12541", "ORA-12514", "ORA-12170"):
        return f"{message} (is the listener up and the DSN right?)"
    if code in NOT_OPEN:
        return f"{message} ({NOT_OPEN[code]})"
    if code == "DPY-3010":
        return f"{message} ({THIN_MODE_TOO_OLD})"
    if code == "DPY-3015":
        return f"{message} ({VERIFIER_10G})"
    if code in ("DPY-4024", "ORA-03156"):
        return f"{message} (call timeout: raise oracle.call_timeout_s, or look at the database's load)"
    return message


# Set once per session, after any logon trigger. The agent's TO_CHAR masks (sources.oracle.wire.
# ORACLE_FORMATS) are Gregorian, but datetime format elements such as YYYY follow the session's
# calendar (Oracle Database Reference, NLS_CALENDAR): a database or logon trigger set to
# 'Thai Buddha' would date every point 543 years ahead, and others could not be parsed at all.
# NLS_NUMERIC_CHARACTERS likewise keeps '.' the decimal character of any number shown as text
# (the combined statements send their numbers as NUMBERs, which no NLS setting changes on the way).
# Setting NLS parameters needs no privilege (SQL Language Reference, ALTER SESSION, Prerequisites).
SESSION_SQL = "ALTER SESSION SET NLS_CALENDAR = 'GREGORIAN' NLS_NUMERIC_CHARACTERS = '.,'"

# What the status point says of a mounted database read through SYSDG (Database.discover).
MOUNTED_NOTE = (
    "the database is mounted, not open: read with SYSDG, its views' columns from the release's facts "
    "(no data dictionary in MOUNT)"
)

# V$SESSION.MODULE and CLIENT_IDENTIFIER of the agent's session: SELECT ... FROM v$session WHERE
# module = 'dnfsmon' finds it (docs/oracle.md).
SESSION_MODULE = "dnfsmon"


class Database:
    """A session and the columns discovered in it."""

    def __init__(self, settings: OracleSettings):
        self.settings = settings
        self.connection: Any = None  # an oracledb.Connection once connected
        self.available: dict[str, set[str]] = {}
        self.missing: dict[str, str] = {}
        # The database is mounted, not open (discover): the queries avoid sorts (build_queries).
        self.mounted = False
        # Views read another way than the scope's own (missing_views): they work; what to grant.
        self.notes: dict[str, str] = {}
        # Why the database is not asked again in this run (a step hung, a logon was refused,
        # or failures used the run's budget), or "".
        self.given_up = ""
        # The code of this run's logon refusal (LOGON_REFUSALS), or "".
        self.refused = ""
        # Why this session does not see the whole CDB (container_problem), or "".
        self.container = ""
        # A warning the database gave at logon (ORA-28002: the password expires soon), or "".
        self.warning = ""
        # Seconds this run may still lose to steps that fail (a connect the driver times out,
        # a listener that answers late, a statement past call_timeout_s): one deadline per
        # run whatever the driver does, so a cron run stays inside its slot and keeps every
        # host sample (reliability review H1: a DPY-6005 after 10 s each sample made runs of
        # 61 s, and the next minute's run found the lock held).
        self.budget_s = self.deadline_s()
        # The agent's clock the database clock is checked against (tests replay
        # recorded rows with a clock of their own).
        self.clock: Callable[[], float] = host_clock

    def grantee(self) -> str:
        """The user the session runs as, whom a GRANT hint must name: a logon AS SYSDG runs as the
        user SYSDG, not as the user that logged on (Oracle Database Security Guide, "SYSDG
        Administrative Privilege for Oracle Data Guard Operations")."""
        return "SYSDG" if self.settings.privilege == "sysdg" else self.settings.user.upper()

    def deadline_s(self) -> float:
        """One step's deadline: the driver's timeout, plus a grace second for it to fire first."""
        return self.settings.call_timeout_s + DEADLINE_GRACE_S

    def connect(self) -> None:
        """Connect and discover, bounded as a whole by call_timeout_s (plus a grace second),
        or by what is left of the run's budget when that is less."""
        deadline = min(self.deadline_s(), self.budget_s)
        timeout = max(MIN_STEP_S, deadline - DEADLINE_GRACE_S)
        self.connection = within(deadline, "connect", lambda: self._connect(timeout))
        self.discover()
        self.check_container()

    def _connect(self, timeout_s: float):
        import oracledb

        s = self.settings
        if s.mode == "thick":
            oracledb.init_oracle_client(lib_dir=s.lib_dir or None, config_dir=s.config_dir or None)
        # SYSDG: the administrative privilege for Data Guard operations (Oracle Database Security
        # Guide, "SYSDG Administrative Privilege for Oracle Data Guard Operations"), which a mounted
        # database accepts where it refuses an ordinary logon (ORA-01033); python-oracledb's
        # connect(mode=AUTH_MODE_SYSDGD), its constant for SYSDG.
        privilege = {"mode": oracledb.AUTH_MODE_SYSDGD} if s.privilege == "sysdg" else {}
        if s.external_auth:
            connection = oracledb.connect(dsn=s.dsn, externalauth=True, **privilege)
        else:
            password = read_secret(s.password_file or None, s.password_env or None, "Oracle password")
            connection = oracledb.connect(
                user=s.user,
                password=password,
                dsn=s.dsn,
                config_dir=(s.config_dir or None) if s.mode == "thin" else None,
                tcp_connect_timeout=timeout_s,
                **privilege,
            )
        # Bounds every round trip from here on (python-oracledb: Connection.call_timeout, in ms).
        # In thick mode the attribute exists only with Oracle Client 18c or later (python-oracledb API
        # manual, Connection.call_timeout); older libraries are refused at connect with that advice.
        if s.mode == "thick" and oracledb.clientversion()[0] < 18:
            connection.close()
            raise RuntimeError(
                f"Oracle Client libraries {'.'.join(map(str, oracledb.clientversion()))} in [oracle] lib_dir are "
                "older than 18c: use Instant Client 19c (it connects to 11.2.0.4 too)"
            )
        connection.call_timeout = int(s.call_timeout_s * 1000)
        # A logon that worked with a warning: ORA-28002, the password is in its grace period and
        # expires in n days (Database Error Messages, ORA-28002). python-oracledb keeps it in
        # Connection.warning (python-oracledb API manual, Connection.warning).
        warning = getattr(connection, "warning", None)
        self.warning = f"{describe(warning)} ({PASSWORD_SOON})" if warning else ""
        # Name the session, so a DBA can pick dnfsmon out in V$SESSION and ASH (dba-review A6):
        # python-oracledb's Connection.module and Connection.client_identifier set V$SESSION.MODULE
        # and CLIENT_IDENTIFIER, and are sent with the next round trip (python-oracledb API manual,
        # Connection attributes): the ALTER SESSION below, before any query of the agent's.
        connection.module = SESSION_MODULE
        connection.client_identifier = SESSION_MODULE
        with connection.cursor() as cursor:
            cursor.execute(SESSION_SQL)
        return connection

    def discover(self) -> None:
        try:
            rows = within(self.settings.call_timeout_s + DEADLINE_GRACE_S, "discovery", self._discovery_rows)
        except Exception as error:
            if error_code(error) != "ORA-01219" or self.settings.privilege != "sysdg":
                raise
            self.available = self.columns_in_mount()
            self.missing, self.notes, self.mounted = {}, {"mount": MOUNTED_NOTE}, True
            return
        found: dict[str, set[str]] = {}
        for table, column in rows:
            view = table.replace("_$", "$", 1)
            found.setdefault(view, set()).add(column.upper())
        self.available, self.mounted = found, False
        self.missing, self.notes = missing_views(found, self.settings.scope, self.grantee() or "<user>")

    def queries(self) -> list[Query]:
        """The statements this database is read with (build_queries)."""
        return build_queries(self.available, self.settings.scope, self.mounted)

    def columns_in_mount(self) -> dict[str, set[str]]:
        """The columns of the views read, from the release's facts: a mounted database has no data
        dictionary to ask (ORA-01219: only fixed tables and views may be queried), but the dynamic
        performance views dnfsmon reads are fixed views, each with the columns of its release."""
        release = self.settings.release or release_of_version(str(self.connection.version))
        return {view: set(columns(view, release)) for view in VIEWS_READ if columns(view, release)}

    def check_container(self) -> None:
        """Set self.container when the session sees only part of a CDB, in any view it reads.

        The file list of the scope's view (container_sql), then each view read (container_data_sql)
        when the user may read DBA_CONTAINER_DATA; what could not be checked is a note, never silence.
        """
        self.container = ""
        self.notes.pop("container", None)
        if "CDB" not in self.available.get("V$DATABASE", ()):
            return  # before 12.1 (no CDB), or V$DATABASE not granted (named in missing)
        user = self.grantee() or "<user>"
        files = ("V$DATAFILE", "GV$DATAFILE") if self.settings.scope == "instance" else ("GV$DATAFILE", "V$DATAFILE")
        datafile = next((v for v in files if "CON_ID" in self.available.get(v, ())), "")
        if not datafile:
            self.notes["container"] = (
                f"whether {user} sees every container of a CDB is not checked: it cannot read {files[0]}; "
                f"GRANT SELECT ON {grant_name(files[0])} TO {user}"
            )
            return
        rows = within(self.deadline_s(), "container", lambda: self._rows(container_sql(datafile)))
        if not rows:
            return
        cdb, con_name, pdb_con_id = rows[0]
        self.container = container_problem(cdb, con_name, pdb_con_id, user)
        if self.container or cdb != "YES":
            return
        views = sorted({v for q in self.queries() for v in q.views})
        try:
            rows = within(self.deadline_s(), "container", lambda: self._rows(container_data_sql(views)))
        except Exception as error:
            if error_code(error) == "ORA-01219":  # mounted: DBA_CONTAINER_DATA is in the data dictionary
                self.notes["container"] = f"whether each view shows {user} every container is not checked in MOUNT"
                return
            if error_code(error) != "ORA-00942":
                raise
            self.notes["container"] = (
                f"{datafile} shows {user} every container, but whether each other view does is not checked "
                f"(CONTAINER_DATA is set per view): GRANT SELECT ON SYS.DBA_CONTAINER_DATA TO {user} to let "
                f"dnfsmon check it, or run @setup/create_monitor_user of the SQL pack, which sets and checks it"
            )
            return
        if rows:
            lacking = [f"SYS.{name}" for (name,) in rows]
            self.container = (
                f"{user} sees only the root's rows in {', '.join(lacking)} (CONTAINER_DATA is not ALL for "
                f"{'them' if len(lacking) > 1 else 'it'}, though {datafile} shows every container): run "
                f"@setup/create_monitor_user of a copy of the SQL pack ({PACK_COPY}) in the root, or ALTER USER {user} "
                f"SET CONTAINER_DATA = ALL FOR <view> CONTAINER = CURRENT for each"
            )

    def _rows(self, sql: str) -> list:
        with self.connection.cursor() as cursor:
            cursor.execute(sql)
            return cursor.fetchall()

    def _discovery_rows(self) -> list:
        with self.connection.cursor() as cursor:
            cursor.execute(discovery_sql())
            return cursor.fetchall()

    def read_bounded(self, inventory: bool = True) -> dict:
        """read(), abandoned past its deadline: call_timeout_s per round trip it may make, plus 1 s.

        The driver's call_timeout normally ends a slow round trip first; the
        deadline is the backstop for a server that trickles its answer.
        """
        queries = self.queries()
        round_trips = 2 + len(queries)  # the two statements, and one per query if one fails (below)
        deadline = self.settings.call_timeout_s * round_trips + DEADLINE_GRACE_S
        return within(deadline, "read", lambda: self.read(inventory))

    def read(self, inventory: bool = True) -> dict:
        """The results document of one sample (see dnfsmon.sources.oracle).

        One round trip for the counters, and one more for the inventory when
        it is due. When a statement fails with an ORA- error (a view revoked
        since discovery), its queries are sent one by one, so the failing one
        is named and the others still count.
        """
        results: dict[str, dict] = {}
        errors: dict[str, str] = dict(self.missing)
        if self.container:
            errors["container"] = self.container
        for combined in read_groups(self.queries(), inventory):
            if self.budget_s < MIN_STEP_S:
                errors[combined.name] = "not read: earlier statements timed out and used this run's time budget"
                continue
            started = time.monotonic()
            try:
                rows, clock = self._execute(combined.sql)
            except Exception as error:  # oracledb.Error and anything the driver raises
                if _session_dead(error):
                    raise
                code = describe(error)
                if not code.startswith("ORA-") or code.startswith("ORA-03156"):
                    # A timeout: asking again query by query would only cost more timeouts,
                    # and its time comes out of the run's budget.
                    self.budget_s -= time.monotonic() - started
                    errors[combined.name] = describe(error, user=self.grantee())
                    continue
                self._read_one_by_one(combined.queries, results, errors)
                continue
            for name, data in split(combined, rows).items():
                results[name] = dict(data, agent_clock=clock)
        version = ""
        instances = results.get("instances", {}).get("rows", [])
        if instances:
            version = str(dict(zip(results["instances"]["columns"], instances[0])).get("VERSION", ""))
        database = {}
        if results.get("database", {}).get("rows"):
            columns, row = results["database"]["columns"], results["database"]["rows"][0]
            # The query's own columns: the statement's (Q, N1, T1, ...) are not V$DATABASE's.
            database = {c: v for c, v in zip(columns, row) if not is_statement_column(c)}
        return {
            "kind": "live",
            "target": self.settings.target,
            "version": version,
            "database": database,
            "results": results,
            "errors": errors,
            "down": None,
            "warning": "; ".join(filter(None, (self.warning, *self.notes.values()))) or None,
        }

    def _execute(self, sql: str) -> tuple[list, float]:
        """(rows, the agent's clock in the middle of the round trip) of one statement."""
        with self.connection.cursor() as cursor:
            cursor.prefetchrows = cursor.arraysize = 5000  # every row in the execute's round trip
            before = self.clock()
            cursor.execute(sql)
            rows = cursor.fetchall()
            return rows, (before + self.clock()) / 2

    def _read_one_by_one(self, queries: tuple[Query, ...], results: dict[str, dict], errors: dict[str, str]) -> None:
        for query in queries:
            single = combine(query.name, [query])
            try:
                rows, clock = self._execute(single.sql)
            except Exception as error:
                if _session_dead(error):
                    raise
                errors[query.name] = describe(error, query.views, self.grantee())
                continue
            results[query.name] = dict(split(single, rows)[query.name], agent_clock=clock)

    def out_of_budget(self) -> str:
        return (
            f"not asked again in this run: its failures used the run's time budget, one deadline "
            f"({self.deadline_s():g} s: oracle.call_timeout_s + 1)"
        )

    def close(self) -> None:
        if self.connection is not None:
            try:
                self.connection.close()
            except Exception:
                pass
            self.connection = None


def _session_dead(error: Exception) -> bool:
    return bool(getattr(error.args[0] if error.args else None, "is_session_dead", False))


def down_document(reason: str, target: str = "") -> dict:
    """The results document of a sample that could not read the database (target: the configured name)."""
    return {
        "kind": "live",
        "target": target,
        "version": "",
        "database": {},
        "results": {},
        "errors": {},
        "down": reason,
    }


def to_raw(document: dict, clock: float) -> Raw:
    """Wrap a results document; the sample time is the database clock when there is one.

    The document is handed over as it is (Raw.documents): the source reads it
    without a JSON round trip, and a capture writes its JSON text.
    """
    times = [
        row[data["columns"].index("DB_TIME")]
        for data in document["results"].values()
        if "DB_TIME" in data["columns"]
        for row in data["rows"][:1]
    ]
    seconds = clock_seconds(times[0]) if times else None
    t = clock if seconds is None else seconds
    return Raw({}, t, t, documents={RESULTS: document})


def read_once(database: Database, clock: float, inventory: bool = True) -> Raw:
    """One sample from a session, connecting (again) when needed; never raises for database trouble.

    The rest of the run reports the database down at once, with the same
    reason, instead of asking again: after a step hung, after a logon
    refusal (LOGON_REFUSALS: another attempt could lock the account), and
    once failing steps have used the run's budget (Database.budget_s). A
    connect refused at once (listener down) costs nothing and is tried again
    the next sample.
    """
    if database.given_up:
        return to_raw(down_document(database.given_up, database.settings.target), clock)
    started = time.monotonic()
    try:
        if database.connection is None:
            database.connect()
        raw = to_raw(database.read_bounded(inventory), clock)
    except Exception as error:
        reason = describe(error, user=database.grantee())
        database.budget_s -= time.monotonic() - started
        if isinstance(error, Hung):
            database.given_up = reason
            database.connection = None  # abandoned with its worker: never closed from here, never used again
        else:
            database.close()
            if error_code(error) in LOGON_REFUSALS:
                database.refused = error_code(error)
                database.given_up = reason = f"{reason}; no further logon in this run"
            elif database.budget_s < MIN_STEP_S:
                database.given_up = reason = f"{reason}; {database.out_of_budget()}"
        return to_raw(down_document(reason, database.settings.target), clock)
    if database.budget_s < MIN_STEP_S:
        database.given_up = database.out_of_budget()
        database.close()
    return raw


# The back-off after a refusal that costs the account nothing (not WRONG_CREDENTIALS), across cron
# runs: the first wait, then doubling to the cap.
BACKOFF_FIRST_S = 300.0
BACKOFF_CAP_S = 4 * 3600.0
# The back-off file holds some hundreds of bytes (a reason line, the user, the DSN, a file's
# identity): a file far larger was not written by the agent, and is never read into memory.
BACKOFF_MAX_BYTES = 64 * 1024


@dataclass
class LogonBackoff:
    """When a refused target may log on again; kept in the state directory between runs.

    After wrong credentials (WRONG_CREDENTIALS) it holds with no end: only a
    changed password file (or user, or DSN), or the operator removing the
    state file, lets the agent try again. After a locked or expired account
    (fixed inside the database, where the agent cannot see it) it waits,
    doubling, and a changed password file also ends the wait at once.
    """

    refusals: int = 0
    # The refusal's line (describe()), and when it happened (seconds since the epoch).
    reason: str = ""
    refused_at: float = 0.0
    not_before: float = 0.0
    # What was tried: the user, the DSN and the password file's identity (never the password).
    credentials: str = ""
    # The refusal's ORA- code; one of WRONG_CREDENTIALS holds until the credentials change.
    code: str = ""

    @classmethod
    def from_json(cls, data: Mapping) -> LogonBackoff:
        try:
            return cls(
                int(data.get("refusals", 0)),
                str(data.get("reason", "")),
                float(data.get("refused_at", 0.0)),
                float(data.get("not_before", 0.0)),
                str(data.get("credentials", "")),
                # A hold written before the code was kept: its reason starts with the code (describe()).
                str(data.get("code") or str(data.get("reason", "")).split(":")[0]),
            )
        except (TypeError, ValueError):
            return cls()  # unusable: as if never refused

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @property
    def until_changed(self) -> bool:
        """True when only new credentials (or the operator) end the hold: no timed retry."""
        return self.code in WRONG_CREDENTIALS

    def refused(self, code: str, reason: str, now: float, credentials: str) -> None:
        self.refusals += 1
        self.code = code
        self.reason = reason
        self.refused_at = now
        self.not_before = now + min(BACKOFF_CAP_S, BACKOFF_FIRST_S * 2 ** (self.refusals - 1))
        self.credentials = credentials

    def holds(self, now: float, credentials: str) -> bool:
        """True while no logon may be tried: refused before, nothing changed, and the wrong
        credentials not replaced or the wait not over."""
        if self.refusals == 0 or credentials != self.credentials:
            return False
        return self.until_changed or now < self.not_before

    def explain(self, path: str) -> str:
        """The status point's error while it holds: why, what to fix, and when (or what makes) the
        next logon; `path` is the state file whose removal ends the hold."""
        refused = f"logon refused at {utc(self.refused_at)} ({self.reason})"
        if self.until_changed:
            return (
                f"{refused}; no logon until the password file, user or dsn changes: each attempt with these "
                "credentials counts toward FAILED_LOGIN_ATTEMPTS and only a successful logon resets it; "
                f"if the fix was made in the database instead, rm {path}"
            )
        wait = self.not_before - self.refused_at
        return (
            f"{refused}; no logon before {utc(self.not_before)} "
            f"(back-off {wait / 60:g} min after {self.refusals} refusal{'s' if self.refusals > 1 else ''}, "
            f"doubling to {BACKOFF_CAP_S / 3600:g} h; a changed password file is tried at the next run; "
            f"to try at the next run, rm {path})"
        )


def utc(epoch: float) -> str:
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def credentials_of(settings: OracleSettings) -> str:
    """What identifies the credentials a logon would try, without the secret: a changed password
    file (another inode, size or modification time) or user or DSN ends a back-off."""
    identity = f"{settings.user}@{settings.dsn}"
    if settings.password_file:
        try:
            info = os.stat(settings.password_file)
        except OSError:
            return f"{identity} file missing"
        identity += f" file {info.st_ino}:{info.st_size}:{info.st_mtime_ns}"
    return identity


def backoff_file_id(target_id: str) -> str:
    """The id of the state file holding a target's LogonBackoff (beside its samples' file)."""
    return f"{target_id}:logon"


def load_backoff(state_dir: str, target_id: str) -> LogonBackoff:
    """A target's back-off from the state directory, read only (`dnfsmon check` writes nothing);
    a missing, planted or damaged file reads as no refusal (the next save replaces it)."""
    from .files import read_in_directory
    from .state import StateFile

    path = StateFile(state_dir, backoff_file_id(target_id)).path
    try:
        document = json.loads(read_in_directory(path, BACKOFF_MAX_BYTES))
        return LogonBackoff.from_json(document["data"])
    except (OSError, ValueError, KeyError, TypeError, RecursionError, EnvironmentProblem):
        return LogonBackoff()
