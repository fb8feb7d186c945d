"""The results document and its rows: what every per-query parser reads."""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Callable, Optional, cast

from ... import rates
from ...rates import Sample
from ..base import ParseError, Raw
from .names import CHANNEL_COUNTS, RESULTS, STATUS_MEASUREMENT
from .queries import CLOCK_COLUMNS, PATH_COUNT_COLUMN, PROCESS_CHANNEL_COLUMNS
from .wire import is_statement_column, time_of

# --- parsing result rows ---


class Results:
    """The rows of one query, each a list (or the reader's tuple) of values in the order of
    `columns` (upper case).

    Rows stay as they came, read by column index (`index`): a sample at 4
    instances x 2000 processes has some 16 000 rows, and a dict of every
    column per row cost more than all the rest of the parse (bench/README.md).
    The reader's rows are the combined statement's, so a row may hold
    columns of the statement that are not the query's (wire.split): never read.
    """

    def __init__(self, name: str, data: Mapping, problems: list[ParseError], recorded: bool = True):
        """recorded: the rows come from a document's JSON text (a capture), which may be damaged, rather
        than from the reader's own values (oracle_db.split, the simulator), which are scalars by construction."""
        try:
            self.columns = [str(c).upper() for c in data["columns"]]
            rows = list(data["rows"])
            if not set(map(type, rows)) <= {list, tuple}:  # a damaged recording
                rows = [row if type(row) in (list, tuple) else list(row) for row in rows]
        except (KeyError, TypeError) as error:
            raise ParseError(RESULTS, f'results of {name} need "columns" and "rows": {error}') from None
        self.name = name
        # Column name -> its position in a row (the last one of a name given twice).
        self.index = {column: position for position, column in enumerate(self.columns)}
        # The query's own columns (all but a combined statement's own: wire.split), for as_dict.
        self.own_columns = [column for column in self.columns if not is_statement_column(column)]
        self._own_values = _columns(self, self.own_columns)[1]
        # The agent's CLOCK_BOOTTIME in the middle of this query's round trip,
        # when the reader recorded it (oracle_db does; older captures do not).
        clock = data.get("agent_clock")
        self.agent_clock = float(clock) if clock is not None and _finite(clock) else None
        width = len(self.columns)
        if not recorded and set(map(len, rows)) <= {width}:
            self.rows: list[Sequence] = rows
            return
        self.rows = []
        for number, row in enumerate(rows, start=1):
            # Oracle returns scalars only; anything else is a damaged recording.
            if len(row) != width or not CONTAINERS.isdisjoint(map(type, row)):
                problems.append(
                    ParseError(RESULTS, f"row {number} of {name} does not fit its columns {self.columns}: {row}")
                )
                continue
            self.rows.append(row)

    def dicts(self) -> list[dict]:
        """The rows as dicts by column name (for the queries of a few rows)."""
        return list(map(self.as_dict, self.rows))

    def as_dict(self, row: Sequence) -> dict:
        """A row as a dict of the query's own columns by name."""
        return dict(zip(self.own_columns, self._own_values(row)))

    def time(self) -> Optional[float]:
        """The database clock of this query (seconds since the epoch), None without rows."""
        position = self.index.get("DB_TIME")
        if position is None:
            return None
        for row in self.rows:
            seconds = clock_seconds(row[position])
            if seconds is not None:
                return seconds
        return None


def clock_seconds(value: object) -> Optional[float]:
    """A DB_TIME value as seconds since the epoch: the live reader's TO_CHAR text (wire.Combined),
    or a number (the simulator's documents, and captures made before the reader kept the text);
    None for anything else."""
    if isinstance(value, str):
        try:
            return time_of(value)
        except ValueError:
            return None
    return float(cast(float, value)) if _finite(value) else None


# The JSON values that are not scalars (what json.loads makes of arrays and objects).
CONTAINERS = frozenset({list, dict})


def _column(result: Results, name: str) -> Callable[[Sequence], object]:
    """row -> its value of column `name`; None for every row when the query has no such column."""
    position = result.index.get(name)
    if position is None:
        return lambda row: None
    return operator.itemgetter(position)


def _columns(result: Results, names: Sequence[str]) -> tuple[tuple[str, ...], Callable[[Sequence], tuple]]:
    """(the names the query has, row -> their values in that order): one C call per row."""
    present = tuple(name for name in names if name in result.index)
    positions = [result.index[name] for name in present]
    if len(positions) == 1:
        only = positions[0]
        return present, lambda row: (row[only],)
    if not positions:
        return present, lambda row: ()
    return present, operator.itemgetter(*positions)


def _values(result: Results, names: Sequence[str]) -> Callable[[Sequence], tuple]:
    """row -> its values of the columns `names`, None for a column the query does not have."""
    positions = [result.index.get(name) for name in names]
    if None not in positions:
        return operator.itemgetter(*positions)
    return lambda row: tuple(None if position is None else row[position] for position in positions)


def _sum_of_counters(values: Sequence[object]) -> Optional[int]:
    """The sum of the values that are counters (_number), None when none is; summed in C when all are plain ints."""
    if set(map(type, values)) == {int}:
        plain = cast("Sequence[int]", values)
        if min(plain) >= 0:
            return sum(plain)
    numbers = [number for number in map(_number, values) if number is not None]
    return sum(numbers) if numbers else None


def _sum_of_every_counter(values: Sequence[object]) -> Optional[int]:
    """The sum of the values when every one is a counter (_number), else None (and None for no values):
    a sum with a part missing would be published as a fall in its rate."""
    if not values:
        return None
    if set(map(type, values)) == {int}:
        plain = cast("Sequence[int]", values)
        if min(plain) >= 0:
            return sum(plain)
    numbers = [_number(value) for value in values]
    return None if None in numbers else sum(cast("list[int]", numbers))


def _counters(names: Sequence[str], values: Iterable[object]) -> dict[str, int]:
    """{name: value} of the values that are counters (_number); the common plain int is taken as it is."""
    counters = {}
    for name, value in zip(names, values):
        if type(value) is int and value >= 0:
            counters[name] = value
        else:
            number = _number(value)
            if number is not None:
                counters[name] = number
    return counters


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _number(value: object) -> Optional[int]:
    """An Oracle NUMBER counter as an int; None for NULL, negative, infinite or not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or not math.isfinite(value):
        return None
    return int(value)


@dataclass(frozen=True)
class Instance:
    name: str
    startup: str
    # The `host` tag of the instance's points: the host it runs on (B5 of
    # the review: never the agent's host for another node's instance).
    host: str


def host_tag(host_name: object, agent_host: str) -> str:
    """GV$INSTANCE.HOST_NAME as a host tag: the agent's own spelling when it is the agent's host.

    HOST_NAME is what the instance's OS reports (often fully qualified);
    the agent's host may be configured short. The same short name means the
    same host, so its points line up with that host's own points.
    """
    name = str(host_name or "").strip()
    if not name:
        return agent_host
    if name.split(".")[0].lower() == agent_host.split(".")[0].lower():
        return agent_host
    return name


def load(raw: Raw) -> dict:
    """The results document of a reading: as the reader handed it over, or decoded from a capture's text."""
    document = raw.document(RESULTS)
    if not isinstance(document, dict):
        raise ParseError(RESULTS, "not a results document (an object)")
    for member in ("results", "database", "errors"):
        if document.get(member) is not None and not isinstance(document[member], dict):
            raise ParseError(RESULTS, f'"{member}" must be an object')
    if not all(isinstance(v, dict) for v in (document.get("results") or {}).values()):
        raise ParseError(RESULTS, "every query's results must be an object")
    return document


def reason_of(document: Mapping) -> Optional[str]:
    """Why the database (or part of it) could not be read this time; None when all went well."""
    if document.get("down"):
        return str(document["down"])
    errors = document.get("errors") or {}
    return "; ".join(f"{name}: {message}" for name, message in sorted(errors.items())) or None


def failure(samples: list[Sample]) -> Optional[str]:
    """The reason the status sample of a read carries (the source interface's failure hook)."""
    for sample in samples:
        if sample.measurement == STATUS_MEASUREMENT and "error" in sample.gauges:
            return str(sample.gauges["error"])
    return None


Located = tuple[float, dict, rates.Key, tuple[str, ...], Optional[float]]
# The same with the row as its list of values (read through Results.index).
LocatedRow = tuple[float, Sequence, rates.Key, tuple[str, ...], Optional[float]]


@dataclass
class Context:
    """One sample's parsed results and what every per-query parser needs."""

    results: dict[str, Results]
    instances: dict[object, Instance]
    # database (and simulated) tags, common to every point.
    database_tags: rates.Key
    dbid: str
    problems: list[ParseError]
    # ("role", V$DATABASE.DATABASE_ROLE) on the points about a standby's instances (role_tags).
    role_tags: rates.Key = ()

    def located(self, name: str) -> Iterator[Located]:
        """located_rows() with each row as a dict by column name: for the queries of a few rows."""
        for t, row, tags, identity, started in self.located_rows(name):
            yield t, self.results[name].as_dict(row), tags, identity, started

    def located_rows(self, name: str) -> Iterator[LocatedRow]:
        """(time, row, tags, identity, started) of each row of a query whose instance is known.

        Samples carry the database clock (UTC epoch seconds) both for the
        interval and as the point's timestamp. The identity holds the
        instance's startup and the instance whose clock was read (a
        reconnect to another RAC node changes the clock: re-baseline).
        `started` is the database clock minus the agent's CLOCK_BOOTTIME at
        the same moment: it moves when the database clock steps (NTP, a VM
        pause), and rates.diff then re-baselines instead of publishing a
        wrong rate (review B8).
        """
        timed = self.timed(name)
        if timed is None:
            return
        result, t, started = timed
        place = self.place(result)
        for row in result.rows:
            found = place(row)
            if found is not None:
                yield t, row, found[0], found[1], started

    def timed(self, name: str) -> Optional[tuple[Results, float, Optional[float]]]:
        """(results, time, started) of a query (see located_rows); None when it has no rows or no clock."""
        result = self.results.get(name)
        t = result.time() if result else None
        if result is None or t is None:
            return None
        return result, t, None if result.agent_clock is None else t - result.agent_clock

    def place(self, result: Results) -> Callable[[Sequence], Optional[tuple[rates.Key, tuple[str, ...]]]]:
        """row -> the (tags, identity) of its instance (see located_rows); None for an instance that left
        between queries. Each (instance, clock instance) pair's are made once: thousands of rows share them."""
        inst_id = _column(result, "INST_ID")
        clock_at = result.index.get("CLOCK_INSTANCE")
        where: dict[tuple, Optional[tuple[rates.Key, tuple[str, ...]]]] = {}

        def of(row: Sequence) -> Optional[tuple[rates.Key, tuple[str, ...]]]:
            clock = "" if clock_at is None else row[clock_at]
            pair = (inst_id(row), clock, type(clock))
            if pair not in where:
                instance = self.instances.get(pair[0])
                if instance is None:
                    where[pair] = None
                else:
                    tags = (("host", instance.host), *self.database_tags, *self.role_tags, ("instance", instance.name))
                    where[pair] = (tags, (self.dbid, instance.startup, str(clock)))
            return where[pair]

        return of


def _pdb_tags(row: Mapping) -> rates.Key:
    """("pdb", CON_ID) for a row of one container of a CDB; nothing for CON_ID 0 (the whole
    CDB, or a non-CDB) or a view without CON_ID (Reference, "CON_ID" column of V$ views)."""
    return _pdb_tags_of(row.get("CON_ID"))


def _pdb_tags_of(value: object) -> rates.Key:
    """_pdb_tags of a row's CON_ID value (None for a view without the column)."""
    con_id = _number(value)
    return (("pdb", str(con_id)),) if con_id else ()


def group_channels(columns: Sequence[str], rows: Iterable[Sequence]) -> tuple[list[str], list[list]]:
    """Rows of V$DNFS_CHANNELS, one per process and channel (`columns`: INST_ID, PNUM, SVRNAME, PATH,
    LOCAL where the release has it, its counts, the clock), as the channels query
    (queries._channels_query) returns them: a row per process with its sends summed and its channel
    rows counted, a row per path with its counts summed and its channel rows counted.

    The statement may put a process and a path on one row; here each has its own, which the parser
    reads the same. For a recording made before the statement summed (the per-channel rows), and
    for the simulator, which models the view. A path's counts are summed as the parser summed
    them before (_sum_of_counters: a value that is not a counter is left out); a process's sends
    are None when one of them is not a counter (no P1 check rather than a wrong one)."""
    index = {column: position for position, column in enumerate(columns)}
    local = ["LOCAL"] if "LOCAL" in index else []
    counts = [c for c in CHANNEL_COUNTS if c in index]
    clock = [c for c in CLOCK_COLUMNS if c in index]
    grouped = ["INST_ID", *PROCESS_CHANNEL_COLUMNS, "SVRNAME", "PATH", *local, *counts, PATH_COUNT_COLUMN, *clock]
    processes: dict[tuple, list] = {}
    paths: dict[tuple, list] = {}
    for row in rows:
        inst_id = row[index["INST_ID"]]
        processes.setdefault((inst_id, row[index["PNUM"]]), []).append(row)
        paths.setdefault((inst_id, *(row[index[c]] for c in ["SVRNAME", "PATH", *local])), []).append(row)
    found = []
    blank_path = [None] * (3 + len(local) + len(counts))
    for (inst_id, pnum), members in processes.items():
        sends = [member[index["SENDS"]] if "SENDS" in index else None for member in members]
        counters = [value for value in sends if type(value) is int and value >= 0]
        process = [pnum, sum(counters) if len(counters) == len(sends) else None, len(members)]
        found.append([inst_id, *process, *blank_path, *(members[0][index[c]] for c in clock)])
    for (inst_id, *place), members in paths.items():
        sums = [_sum_of_counters([member[index[c]] for member in members]) for c in counts]
        found.append([inst_id, None, None, None, *place, *sums, len(members), *(members[0][index[c]] for c in clock)])
    return grouped, found


def group_files(rows: Iterable[Mapping]) -> dict[tuple, dict[str, int]]:
    """V$DNFS_FILES rows, one per process and open file (INST_ID, SVR_ID, FILENAME, FILESIZE), as the
    open database's dnfs_files statement counts them (queries.build_queries: SELECT DISTINCT inst_id,
    svr_id, filename, filesize, then COUNT(*) and SUM(filesize) per instance and filer): each file
    once per filer, whichever processes hold it. A FILESIZE that is not a number adds nothing (the
    statement's SUM ignores NULLs)."""
    distinct = {(r["INST_ID"], r["SVR_ID"], r["FILENAME"], r["FILESIZE"]) for r in rows}
    found: dict[tuple, dict[str, int]] = {}
    for inst_id, svr_id, _, size in distinct:
        counts = found.setdefault((inst_id, svr_id), {"FILES": 0, "BYTES": 0})
        counts["FILES"] += 1
        counts["BYTES"] += _number(size) or 0
    return found
