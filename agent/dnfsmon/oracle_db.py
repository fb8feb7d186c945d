"""Reading a live Oracle database with python-oracledb: the oracle source's thin I/O.

One session per `dnfsmon collect` run (kept across its --count samples).
Thin mode by default (no Oracle Client libraries); thick mode where a site
needs OS authentication or a wallet. Every call is bounded by call_timeout_s.

At connect time the columns of every view dnfsmon reads are discovered in one
round trip from ALL_TAB_COLUMNS, which lists exactly the SYS.V_$/GV_$ views
the user may select; a view missing there is reported with the GRANT that
would fix it, and the queries that need it are left out. Each query then
reads the database clock in its own round trip (SYS_EXTRACT_UTC(SYSTIMESTAMP)),
so every counter has the time it was read at. A failing query is recorded
and the others still run.

`rows_of(cursor)` turns a cursor's result into the JSON-safe rows that
dnfsmon.sources.oracle parses; recorded rows in the tests go through it too.
"""

from __future__ import annotations

import datetime
import json
import logging
from typing import TYPE_CHECKING, Optional

from .config import OracleSettings, read_secret
from .sources.base import Raw
from .sources.oracle import RESULTS, build_queries

if TYPE_CHECKING:  # imported at run time only when [oracle] is enabled (in connect)
    import oracledb

log = logging.getLogger(__name__)

# Views dnfsmon reads, as granted (SYS.<name with V_$/GV_$>) and as queried.
VIEWS = (
    "GV$INSTANCE",
    "V$DATABASE",
    "GV$DNFS_STATS",
    "GV$PROCESS",
    "GV$DNFS_CHANNELS",
    "GV$DNFS_SERVERS",
    "GV$DNFS_FILES",
    "GV$SYSTEM_EVENT",
    "GV$EVENT_HISTOGRAM",
    "GV$EVENT_HISTOGRAM_MICRO",
    "GV$IOSTAT_FILE",
)


def grant_name(view: str) -> str:
    """The object a GRANT names for a V$/GV$ view: GV$DNFS_STATS -> SYS.GV_$DNFS_STATS."""
    return "SYS." + view.replace("$", "_$", 1)


def discovery_sql() -> str:
    names = ", ".join("'" + grant_name(v)[4:] + "'" for v in VIEWS)
    return f"SELECT table_name, column_name FROM all_tab_columns WHERE owner = 'SYS' AND table_name IN ({names})"


def _json_value(value: object) -> object:
    """Oracle values as JSON: DATE/TIMESTAMP (UTC) -> epoch seconds for DB_TIME, ISO text otherwise."""
    if isinstance(value, datetime.datetime):
        return value.isoformat(timespec="microseconds")
    if isinstance(value, (int, float, str)) or value is None:
        return value
    return str(value)  # Decimal and the like


def rows_of(cursor) -> dict[str, list]:
    """A fetched result as {"columns": [...], "rows": [[...], ...]}; DB_TIME as epoch seconds."""
    columns = [d[0].upper() for d in cursor.description]
    rows = []
    for row in cursor.fetchall():
        values = []
        for column, value in zip(columns, row):
            if column == "DB_TIME" and isinstance(value, datetime.datetime):
                value = value.replace(tzinfo=datetime.timezone.utc).timestamp()
            values.append(_json_value(value))
        rows.append(values)
    return {"columns": columns, "rows": rows}


def describe(error: Exception, views: tuple[str, ...] = (), user: str = "") -> str:
    """One clear line for an oracledb error: the code, the message, and what to do."""
    detail = error.args[0] if error.args else error
    code = getattr(detail, "full_code", "") or error.__class__.__name__
    message = str(getattr(detail, "message", detail)).strip().splitlines()[0]
    if not message.startswith(code):
        message = f"{code}: {message}"
    if code == "ORA-00942" and views:
        grants = ", ".join(f"GRANT SELECT ON {grant_name(v)} TO {user or '<user>'}" for v in views)
        return f"{message} (missing grant? {grants})"
    if code in ("ORA-01017", "ORA-01005", "ORA-28000"):
        return f"{message} (check user and password file; the account may be locked)"
    if code in ("DPY-6005", "DPY-6001", "ORA-12541", "ORA-12514", "ORA-12170"):
        return f"{message} (is the listener up and the DSN right?)"
    if code in ("DPY-4024", "ORA-03156"):
        return f"{message} (call timeout: raise oracle.call_timeout_s, or look at the database's load)"
    return message


class Database:
    """A session and the columns discovered in it."""

    def __init__(self, settings: OracleSettings):
        self.settings = settings
        self.connection: Optional[oracledb.Connection] = None
        self.available: dict[str, set[str]] = {}
        self.missing: dict[str, str] = {}

    def connect(self) -> None:
        import oracledb

        s = self.settings
        if s.mode == "thick":
            oracledb.init_oracle_client(lib_dir=s.lib_dir or None, config_dir=s.config_dir or None)
        if s.external_auth:
            connection = oracledb.connect(dsn=s.dsn, externalauth=True)
        else:
            password = read_secret(s.password_file or None, s.password_env or None, "Oracle password")
            connection = oracledb.connect(
                user=s.user,
                password=password,
                dsn=s.dsn,
                config_dir=(s.config_dir or None) if s.mode == "thin" else None,
                tcp_connect_timeout=s.call_timeout_s,
            )
        connection.call_timeout = int(s.call_timeout_s * 1000)
        self.connection = connection
        self.discover()

    def discover(self) -> None:
        assert self.connection is not None, "connect() first"
        with self.connection.cursor() as cursor:
            cursor.execute(discovery_sql())
            found: dict[str, set[str]] = {}
            for table, column in cursor.fetchall():
                view = table.replace("_$", "$", 1)
                found.setdefault(view, set()).add(column.upper())
        self.available = found
        user = self.settings.user.upper() or "<user>"
        optional = {"GV$EVENT_HISTOGRAM_MICRO", "GV$EVENT_HISTOGRAM"}  # either one will do
        self.missing = {
            v: f"not visible to {user}: GRANT SELECT ON {grant_name(v)} TO {user}"
            for v in VIEWS
            if v not in found and v not in optional
        }
        if not (found.keys() & optional):
            self.missing["GV$EVENT_HISTOGRAM"] = (
                f"not visible to {user}: GRANT SELECT ON {grant_name('GV$EVENT_HISTOGRAM_MICRO')} TO {user}"
            )

    def read(self) -> dict:
        """The results document of one sample (see dnfsmon.sources.oracle)."""
        results: dict[str, dict] = {}
        errors: dict[str, str] = dict(self.missing)
        assert self.connection is not None, "connect() first"
        for query in build_queries(self.available):
            try:
                with self.connection.cursor() as cursor:
                    cursor.prefetchrows = cursor.arraysize = 1000
                    cursor.execute(query.sql)
                    results[query.name] = rows_of(cursor)
            except Exception as error:  # oracledb.Error and anything the driver raises
                errors[query.name] = describe(error, query.views, self.settings.user.upper())
                if getattr(error.args[0] if error.args else None, "is_session_dead", False):
                    raise
        version = ""
        instances = results.get("instances", {}).get("rows", [])
        if instances:
            version = str(dict(zip(results["instances"]["columns"], instances[0])).get("VERSION", ""))
        database = {}
        if results.get("database", {}).get("rows"):
            database = dict(zip(results["database"]["columns"], results["database"]["rows"][0]))
        return {
            "kind": "live",
            "version": version,
            "database": database,
            "results": results,
            "errors": errors,
            "down": None,
        }

    def close(self) -> None:
        if self.connection is not None:
            try:
                self.connection.close()
            except Exception:
                pass
            self.connection = None


def down_document(reason: str) -> dict:
    return {"kind": "live", "version": "", "database": {}, "results": {}, "errors": {}, "down": reason}


def to_raw(document: dict, clock: float) -> Raw:
    """Wrap a results document; the sample time is the database clock when there is one."""
    times = [
        row[data["columns"].index("DB_TIME")]
        for data in document["results"].values()
        if "DB_TIME" in data["columns"]
        for row in data["rows"][:1]
    ]
    t = float(times[0]) if times else clock
    return Raw({RESULTS: json.dumps(document)}, t, t)


def read_once(database: Database, clock: float) -> Raw:
    """One sample from a session, connecting (again) when needed; never raises for database trouble."""
    try:
        if database.connection is None:
            database.connect()
        return to_raw(database.read(), clock)
    except Exception as error:
        database.close()
        reason = describe(error, user=database.settings.user.upper())
        return to_raw(down_document(reason), clock)
