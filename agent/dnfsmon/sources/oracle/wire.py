"""One round trip per sample: several queries as one statement, and its rows back as each
query's values (the I/O itself is in dnfsmon.oracle_db and dnfsmon.simulator)."""

from __future__ import annotations

import datetime
import itertools
import operator
from collections.abc import Sequence
from dataclasses import dataclass

from .queries import Query

# --- one round trip per sample ---

# Result columns that hold text; every other column is a NUMBER (or the clock).
TEXT_COLUMNS = frozenset(
    {
        "INSTANCE_NAME",
        "HOST_NAME",
        "VERSION",
        "STARTUP_TIME",
        "NAME",
        "DB_UNIQUE_NAME",
        "DATABASE_ROLE",
        "OPEN_MODE",
        "CDB",
        "SPID",
        "PNAME",
        "PROGRAM",
        "SVRNAME",
        "PATH",
        "LOCAL",
        "DIRNAME",
        "NFSVERSION",
        "EVENT",
        "FILETYPE_NAME",
        "ACCESS_METHOD",
        "FILENAME",  # read in MOUNT only (queries.build_queries: the files counted by the parser)
        "FUNCTION_NAME",
    }
)
# TO_CHAR formats of the two time columns (DB_TIME is a TIMESTAMP in UTC,
# STARTUP_TIME a DATE); DB_TIME_FORMAT is the same layout for Python.
ORACLE_FORMATS = {"DB_TIME": 'YYYY-MM-DD"T"HH24:MI:SS.FF6', "STARTUP_TIME": 'YYYY-MM-DD"T"HH24:MI:SS'}
DB_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%f"


def is_text(column: str) -> bool:
    """True for a column the statement returns as text: a text column, or a time in its format."""
    return column in TEXT_COLUMNS or column in ORACLE_FORMATS


@dataclass(frozen=True)
class Combined:
    """Several queries as one statement: one execute and one fetch (review D1/D2).

    A long-format UNION ALL. Each branch wraps one query and returns its
    name, then its NUMBER columns in the number slots (N1, N2, ...) and its
    text columns in the text slots (T1, T2, ...), each padded with NULLs to
    the widest query: a slot holds one datatype in every branch, as UNION ALL
    requires (SQL Language Reference, "The UNION [ALL], INTERSECT, MINUS
    Operators"). UNION ALL of CHAR literals of different lengths gives
    VARCHAR2, so the names come back unpadded.

    The numbers travel as NUMBERs, not as text: each is CAST to an
    unconstrained NUMBER, which python-oracledb returns as an int when the
    value is whole and a float otherwise (python-oracledb User Guide,
    "Executing SQL", the fetch data types' note on NUMBER) in its compiled
    decoder, thin and thick alike. Every digit is kept, and no NLS setting
    of the session can change a number on its way. The times are TO_CHAR
    text in Gregorian masks (oracle_db.SESSION_SQL), one SYSTIMESTAMP per
    statement: every query of the statement has the same clock reading,
    taken with its counters.
    """

    name: str
    sql: str
    queries: tuple[Query, ...]
    # Each query's name for every position of the statement's rows: its column there, or the
    # statement's own column name (Q, N1, T1, ...) where it has none.
    layouts: tuple[tuple[str, ...], ...]


def combine(name: str, queries: Sequence[Query]) -> Combined:
    numbers_width = max(sum(not is_text(c) for c in q.columns) for q in queries)
    texts_width = max(sum(is_text(c) for c in q.columns) for q in queries)
    # The statement's columns: the query's name, then the number slots, then the text slots.
    statement_columns = ["Q", *(f"N{n}" for n in range(1, numbers_width + 1))]
    statement_columns += [f"T{n}" for n in range(1, texts_width + 1)]
    branches = []
    layouts = []
    for query in queries:
        numbers: list[str] = []
        texts: list[str] = []
        layout = list(statement_columns)
        for column in query.columns:
            if column in ORACLE_FORMATS:
                texts.append(f"TO_CHAR(r.{column.lower()}, '{ORACLE_FORMATS[column]}')")
            elif is_text(column):
                texts.append(f"TO_CHAR(r.{column.lower()})")
            else:
                numbers.append(f"CAST(r.{column.lower()} AS NUMBER)")
            layout[numbers_width + len(texts) if is_text(column) else len(numbers)] = column
        numbers += ["CAST(NULL AS NUMBER)"] * (numbers_width - len(numbers))
        texts += ["NULL"] * (texts_width - len(texts))
        select = ", ".join(
            [f"{value} AS n{number}" for number, value in enumerate(numbers, start=1)]
            + [f"{value} AS t{number}" for number, value in enumerate(texts, start=1)]
        )
        branches.append(f"SELECT '{query.name}' AS q, {select} FROM ({query.sql}) r")
        layouts.append(tuple(layout))
    return Combined(name, " UNION ALL ".join(branches), tuple(queries), tuple(layouts))


def is_statement_column(name: str) -> bool:
    """True for a combined statement's own column (Q, N1, T1, ...), never a query's (split)."""
    return name == "Q" or (name[:1] in ("N", "T") and name[1:].isdigit())


def split(combined: Combined, rows: Sequence[Sequence[object]]) -> dict[str, dict]:
    """The long-format rows of a combined statement back as each query's {"columns", "rows"}.

    The driver has made the numbers already (Combined), so each query's rows
    are the statement's rows as the driver returned them, none copied: its
    "columns" name each position (Combined.layouts), the parsers read them by
    name, and the statement's own columns in between are never read. Each
    query's rows are taken a run at a time (UNION ALL returns a branch's rows
    together; rows of a query in several runs are gathered all the same). The
    clock stays its TO_CHAR text (rows.clock_seconds reads it).
    """
    found: dict[str, list[Sequence[object]]] = {q.name: [] for q in combined.queries}
    for name, run in itertools.groupby(rows, key=operator.itemgetter(0)):
        found[str(name).strip()].extend(run)
    return {
        query.name: {"columns": list(layout), "rows": found[query.name]}
        for query, layout in zip(combined.queries, combined.layouts)
    }


def time_of(text: str) -> float:
    """A DB_TIME text (UTC, DB_TIME_FORMAT) as seconds since the epoch; ValueError for other text."""
    moment = datetime.datetime.strptime(text.strip(), DB_TIME_FORMAT)
    return moment.replace(tzinfo=datetime.timezone.utc).timestamp()


def read_groups(queries: Sequence[Query], inventory: bool) -> list[Combined]:
    """The statements of one sample: the counters, and the inventory when it is due."""
    counters = [q for q in queries if not q.inventory]
    stock = [q for q in queries if q.inventory] if inventory else []
    return [combine(name, group) for name, group in (("counters", counters), ("inventory", stock)) if group]
