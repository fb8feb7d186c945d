"""One round trip per sample: several queries as one statement, and its text rows back
as each query's values (the I/O itself is in dnfsmon.oracle_db and dnfsmon.simulator)."""

from __future__ import annotations

import datetime
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional, cast

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


@dataclass(frozen=True)
class Combined:
    """Several queries as one statement: one execute and one fetch (review D1/D2).

    A long-format UNION ALL: each branch wraps one query and returns its name
    and its columns as text (TO_CHAR keeps every digit of a NUMBER), padded
    with NULLs to the widest query. UNION ALL of CHAR literals of different
    lengths gives VARCHAR2 (SQL Language Reference, "The UNION [ALL],
    INTERSECT, MINUS Operators"), so the names come back unpadded. One
    SYSTIMESTAMP per statement: every query of the statement has the same
    clock reading, taken with its counters.
    """

    name: str
    sql: str
    queries: tuple[Query, ...]


def combine(name: str, queries: Sequence[Query]) -> Combined:
    width = max(len(q.columns) for q in queries)
    branches = []
    for query in queries:
        values = [
            f"TO_CHAR(r.{c.lower()}, '{ORACLE_FORMATS[c]}')" if c in ORACLE_FORMATS else f"TO_CHAR(r.{c.lower()})"
            for c in query.columns
        ]
        values += ["NULL"] * (width - len(values))
        select = ", ".join(f"{value} AS c{number}" for number, value in enumerate(values, start=1))
        branches.append(f"SELECT '{query.name}' AS q, {select} FROM ({query.sql}) r")
    return Combined(name, " UNION ALL ".join(branches), tuple(queries))


def split(combined: Combined, rows: Sequence[Sequence[object]]) -> dict[str, dict]:
    """The long-format rows of a combined statement back as each query's {"columns", "rows"}.

    Converted column by column (_from_texts): a sample at 4 instances x 2000
    processes brings some 650 000 values, and one call per value cost about
    twice all the source's own work (bench/README.md).
    """
    return _split(combined, rows)


def _split(combined: Combined, rows: Sequence[Sequence[object]]) -> dict[str, dict]:
    by_name = {q.name: q for q in combined.queries}
    texts: dict[str, list[Sequence[object]]] = {q.name: [] for q in combined.queries}
    names = map(str.strip, map(str, map(operator.itemgetter(0), rows)))
    for name, row in zip(names, rows):
        texts[by_name[name].name].append(row)
    results: dict[str, dict] = {}
    times: dict[str, float] = {}
    for query in combined.queries:
        width = len(query.columns)
        rows_of = texts[query.name]
        if not rows_of:
            values: list[list[object]] = []
        elif min(map(len, rows_of)) > width:
            by_column = list(zip(*rows_of))  # the statement's rows, column by column
            columns = [_from_texts(column, by_column[number], times) for number, column in enumerate(query.columns, 1)]
            values = list(map(list, zip(*columns)))
        else:  # a row narrower than its query (never from the statement combine() writes)
            values = [[_from_text(c, v, times) for c, v in zip(query.columns, row[1:])] for row in rows_of]
        results[query.name] = {"columns": list(query.columns), "rows": values}
    return results


# The characters of a TO_CHAR of a whole NUMBER (no decimal point, no exponent).
WHOLE_NUMBER_CHARACTERS = frozenset("-0123456789")


def _from_texts(column: str, values: Sequence[object], times: dict[str, float]) -> Sequence[object]:
    """_from_text of each value of one column. A column of whole numbers, the most common by far,
    is converted by int() in one C loop: for such text int() gives what _from_text gives."""
    if column in TEXT_COLUMNS:
        return values
    if column == "DB_TIME":  # the same text on every row
        converted = {text: _from_text(column, text, times) for text in set(values)}
        return list(map(converted.__getitem__, values))
    try:
        joined = "".join(cast("Sequence[str]", values))
    except TypeError:  # a NULL (None) among them
        joined = ""
    if joined and WHOLE_NUMBER_CHARACTERS.issuperset(joined):
        try:
            return list(map(int, cast("Sequence[str]", values)))
        except ValueError:  # a "-" inside a number, or an empty text
            pass
    return [_from_text(column, value, times) for value in values]


def _from_text(column: str, value: object, times: Optional[dict[str, float]] = None) -> object:
    """A TO_CHAR value as the JSON value the parsers read: DB_TIME as epoch seconds, numbers as numbers.

    times: DB_TIME texts already converted (one SYSTIMESTAMP per statement, on
    every row: strptime once, not per row).
    """
    if value is None or column in TEXT_COLUMNS:
        return value
    text = str(value).strip()
    if column == "DB_TIME":
        if times is not None and text in times:
            return times[text]
        moment = datetime.datetime.strptime(text, DB_TIME_FORMAT).replace(tzinfo=datetime.timezone.utc)
        if times is not None:
            times[text] = moment.timestamp()
        return moment.timestamp()
    if text.lstrip("-").isdigit():
        return int(text)
    return float(text)


def read_groups(queries: Sequence[Query], inventory: bool) -> list[Combined]:
    """The statements of one sample: the counters, and the inventory when it is due."""
    counters = [q for q in queries if not q.inventory]
    stock = [q for q in queries if q.inventory] if inventory else []
    return [combine(name, group) for name, group in (("counters", counters), ("inventory", stock)) if group]
