"""Check SQL texts against the Oracle column facts (dnfsmon.oracle_facts), per release.

Parses with sqlglot (Oracle dialect), resolves every column to the view it
reads (through table aliases; an unqualified column belongs to the only base
view of its statement) and reports columns or views a release does not have.
Shared by the agent's SQL tests and the SQL pack's.
"""

from __future__ import annotations

from typing import List

import sqlglot
from sqlglot import exp

from dnfsmon import oracle_facts

# Names Oracle resolves without a table: functions without parentheses, pseudo-columns.
PSEUDO_COLUMNS = {"SYSTIMESTAMP", "SYSDATE", "ROWNUM", "ROWID", "LEVEL", "USER", "CURRENT_TIMESTAMP"}


def violations(sql: str, release: str) -> List[str]:
    """What in `sql` the release lacks; empty when every view and column exists in it."""
    tree = sqlglot.parse_one(sql, read="oracle")
    problems: List[str] = []
    aliases = {}
    base_views = set()
    for table in tree.find_all(exp.Table):
        view = table.name.upper()
        if view == "DUAL":
            continue
        base_views.add(view)
        aliases[(table.alias or table.name).upper()] = view
        if oracle_facts.base_view(view) not in oracle_facts.VIEWS:
            problems.append(f"{view}: not a view in the column facts")
        elif not oracle_facts.columns(view, release):
            problems.append(f"{view}: does not exist in {release}")
    select_aliases = {a.alias.upper() for a in tree.find_all(exp.Alias)}
    for column in tree.find_all(exp.Column):
        name = column.name.upper()
        if name in PSEUDO_COLUMNS or (not column.table and name in select_aliases):
            continue
        if column.table:
            view = aliases.get(column.table.upper())
        elif len(base_views) == 1:
            view = next(iter(base_views))
        else:
            problems.append(f"{name}: unqualified column in a statement reading {sorted(base_views)}")
            continue
        if view is None:
            problems.append(f"{column.table}.{name}: unknown table alias")
        elif oracle_facts.base_view(view) in oracle_facts.VIEWS and name not in oracle_facts.columns(view, release):
            problems.append(f"{view}.{name}: no such column in {release}")
    return problems
