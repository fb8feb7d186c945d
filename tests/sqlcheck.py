"""Check SQL texts against the Oracle column facts (dnfsmon.oracle_facts), per release.

Parses with sqlglot (Oracle dialect) and walks its scopes: a column
qualified by an alias of a V$/GV$ view, or unqualified in a scope whose only
source is such a view, must exist in that view in the release; every view
named must exist in it. Columns of CTEs, subqueries and XMLTABLE are the
statement's own and are not checked. Shared by the agent's SQL tests and the
SQL pack's.
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from dnfsmon import oracle_facts

# Views only the SQL pack reads (dnfs_check.sql, dnfs_iops), with the same
# shape as oracle_facts.VIEWS: (column, first release, last release or None).
# Oracle Database Reference: V$CONTROLFILE (CON_ID from 12.1); V$LOGFILE
# (TYPE is ONLINE or STANDBY); V$LOG (the online groups, THREAD#);
# V$DIAG_ALERT_EXT (documented from 12.2). V$DATAFILE and V$TEMPFILE are the
# agent's too (oracle_facts.VIEWS).
PACK_VIEWS: dict[str, list[oracle_facts.Column]] = {
    "V$LOGFILE": [
        ("GROUP#", "11.2.0.4", None),
        ("TYPE", "11.2.0.4", None),
        ("MEMBER", "11.2.0.4", None),
        ("CON_ID", "12.1.0.1", None),
    ],
    "V$LOG": [("GROUP#", "11.2.0.4", None), ("THREAD#", "11.2.0.4", None), ("CON_ID", "12.1.0.1", None)],
    "V$CONTROLFILE": [("NAME", "11.2.0.4", None), ("CON_ID", "12.1.0.1", None)],
    "V$DIAG_ALERT_EXT": [("ORIGINATING_TIMESTAMP", "12.2", None), ("MESSAGE_TEXT", "12.2", None)],
    # Oracle Database Reference, V$CONTAINERS (12.1+): one row per container of the
    # instance; OPEN_MODE is MOUNTED, READ WRITE, READ ONLY or MIGRATE.
    "V$CONTAINERS": [("CON_ID", "12.1.0.1", None), ("NAME", "12.1.0.1", None), ("OPEN_MODE", "12.1.0.1", None)],
    # Read by setup/set_monitor_password.sql. Oracle Database Reference,
    # DBA_USERS: PASSWORD_CHANGE_DATE is documented from 12.2.
    "DBA_USERS": [
        ("USERNAME", "11.2.0.4", None),
        ("ACCOUNT_STATUS", "11.2.0.4", None),
        ("PASSWORD_CHANGE_DATE", "12.2", None),
    ],
}
# Columns only the pack reads from views the agent reads too (added to
# oracle_facts' list): V$INSTANCE.THREAD#, the redo thread the instance
# writes; V$DATABASE.DATABASE_ROLE, primary or standby.
PACK_EXTRA_COLUMNS: dict[str, list[oracle_facts.Column]] = {
    "V$INSTANCE": [("THREAD#", "11.2.0.4", None)],
}


def _in_release(facts: list[oracle_facts.Column], release: str) -> list[str]:
    return [name for name, first, last in facts if oracle_facts.in_release(first, last, release)]


def view_columns(view: str, release: str) -> list[str]:
    """oracle_facts.columns, for the agent's views and the pack's own."""
    base = oracle_facts.base_view(view)
    if base not in PACK_VIEWS:
        return oracle_facts.columns(view, release) + _in_release(PACK_EXTRA_COLUMNS.get(base, []), release)
    found = _in_release(PACK_VIEWS[base], release)
    return ["INST_ID", *found] if view.upper().startswith("GV$") and found else found


def known(view: str) -> bool:
    return oracle_facts.base_view(view) in oracle_facts.VIEWS or oracle_facts.base_view(view) in PACK_VIEWS


# Names Oracle resolves without a table: functions without parentheses, pseudo-columns.
PSEUDO_COLUMNS = {"SYSTIMESTAMP", "SYSDATE", "ROWNUM", "ROWID", "LEVEL", "USER", "CURRENT_TIMESTAMP"}


def _view(source: object) -> str:
    """The V$/GV$ (or dictionary) view a scope source is, or '' for anything else."""
    if isinstance(source, exp.Table) and source.name and source.name.upper() != "DUAL":
        return source.name.upper()
    return ""


def _parsable(sql: str) -> str:
    """sqlglot lacks XMLSERIALIZE(CONTENT x AS CLOB): read it as TO_CLOB(x), same columns."""
    sql = re.sub(r"(?i)xmlserialize\(\s*content\b", "to_clob(", sql)
    return re.sub(r"(?i)\)\s*as\s+clob\s*\)", "))", sql)


def violations(sql: str, release: str) -> list[str]:
    """What in `sql` the release lacks; empty when every view and column exists in it."""
    tree = sqlglot.parse_one(_parsable(sql), read="oracle")
    problems: list[str] = []
    ctes = {cte.alias.upper() for cte in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        view = _view(table)
        if not view or view in ctes:
            continue
        if not known(view):
            problems.append(f"{view}: not a view in the column facts")
        elif not view_columns(view, release):
            problems.append(f"{view}: does not exist in {release}")
    select_aliases = {a.alias.upper() for a in tree.find_all(exp.Alias)}
    for scope in traverse_scope(tree):
        views = {alias: _view(source) for alias, source in scope.sources.items()}
        for column in scope.columns:
            name = column.name.upper()
            if name in PSEUDO_COLUMNS:
                continue
            if column.table:
                view = views.get(column.table)
                # A correlated subquery names a table of an enclosing query (SQL Language
                # Reference, "Using Subqueries": a correlated subquery references a column of a
                # table in the parent statement).
                outer = scope.parent
                while view is None and outer is not None:
                    view = {alias: _view(source) for alias, source in outer.sources.items()}.get(column.table)
                    outer = outer.parent
                if view is None:
                    problems.append(f"{column.table}.{name}: unknown table alias")
                    continue
            else:
                if name in select_aliases:
                    continue
                real = [v for v in views.values() if v]
                if len(views) > 1 and len(real) > 1:
                    problems.append(f"{name}: unqualified column in a statement reading {sorted(real)}")
                    continue
                view = real[0] if len(views) == 1 and real else ""
            if view and known(view) and name not in view_columns(view, release):
                problems.append(f"{view}.{name}: no such column in {release}")
    return problems


# Constructs that may sort or aggregate in a workarea, which before the database is open may not
# spill to a temporary segment (Database Error Messages, ORA-01220: "A query issued against a fixed
# table or view required a temporary segment for sorting before the database was open. Only
# in-memory sorts are supported before the database is open."). UNION ALL does not sort; UNION,
# INTERSECT and MINUS remove duplicates (SQL Language Reference, "The UNION [ALL], INTERSECT, MINUS
# Operators"). XMLAGG is an aggregate function too (SQL Language Reference, XMLAGG), which sqlglot
# reads as a function of unknown name.
SORTING = (exp.Distinct, exp.Group, exp.Order, exp.Window, exp.AggFunc, exp.Intersect, exp.Except)


def sorting_constructs(sql: str) -> list[str]:
    """The constructs of `sql` that need a sort or an aggregation workarea, as sqlglot parses it (Oracle)."""
    tree = sqlglot.parse_one(_parsable(sql), read="oracle")
    found = [type(node).__name__ for node in tree.find_all(*SORTING)]
    found += ["Union (distinct)" for node in tree.find_all(exp.Union) if node.args.get("distinct")]
    found += ["XMLAGG" for node in tree.find_all(exp.Anonymous) if node.name.upper() == "XMLAGG"]
    return found
