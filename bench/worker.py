"""dnfsmon's side of the in-process comparisons of bench/run.py (procfs's is bench/procfs/).

    worker.py parse ROOT REPEATS      read and parse ROOT/1/mountstats
    worker.py diff OLD NEW REPEATS    read and parse both, diff, published fields
    worker.py oracle OLD NEW REPEATS  one Oracle sample as the live reader runs it: NEW's rows as the
                                      driver returns the combined statements, split into the
                                      results document, note its inventory, parse, diff against OLD's
                                      samples (read the same way before the clock starts), publish
    worker.py oracle-floor NEW REPEATS  the naive floor: sum every number in NEW's rows (decoded
                                      before the clock starts, as the source receives them)
    worker.py state-load DIR TARGET REPEATS   load the state file of TARGET in DIR to samples
    worker.py state-floor DIR TARGET REPEATS  the floor: read and JSON-decode the same file

The diff runs what collection (collect.compute) runs for this source, with the
garbage collector paused as there: the source's parse, then
rates.diff_all against the previous samples, then its publish step. Prints
one JSON list: the CPU seconds (CLOCK_PROCESS_CPUTIME_ID) of each repeat.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import time

from dnfsmon import config, oracle_db, oracle_facts, rates, state
from dnfsmon.cli import tune_gc
from dnfsmon.sources import mountstats, oracle
from dnfsmon.sources.base import Raw


def reading(root: str, clock: float) -> Raw:
    with open(os.path.join(root, "1", "mountstats")) as f:
        return Raw({mountstats.MOUNTSTATS: f.read()}, clock, 1732240000.0 + clock)


def every_operation() -> mountstats.MountstatsSource:
    """A new source (nothing remembered from a last reading) publishing every operation: the
    same work as procfs, which has no filter ([mountstats] operations = ["all"])."""
    return mountstats.MountstatsSource(["*"], [], ["all"])


def parse(root: str) -> int:
    # Each repeat parses as the first reading of a process, as procfs parses it each time.
    return len(mountstats.parse_mountstats(reading(root, 0.0).text(mountstats.MOUNTSTATS))[0])


def diff(old_root: str, new_root: str) -> int:
    # As `dnfsmon diff OLD NEW` runs: a new source parses OLD, then NEW.
    source = every_operation()
    previous = source.parse(reading(old_root, 7000.0), "bench").samples
    current = source.parse(reading(new_root, 7010.0), "bench").samples
    result = rates.diff_all({s.state_key: s for s in previous}, current)
    return len(source.publish(result, current))


class Session:
    """Stands in for a python-oracledb connection: answers each combined statement with the rows
    the driver would return for a results document (sources.oracle.wire.Combined: a NUMBER as an
    int when whole, a float otherwise; the times as their TO_CHAR text), made before the clock starts."""

    def __init__(self, document: dict, queries: list[oracle.Query]):
        self.answers = {}
        for combined in oracle.read_groups(queries, inventory=True):
            rows = []
            for query, layout in zip(combined.queries, combined.layouts):
                recorded = document["results"][query.name]
                for row in recorded["rows"]:
                    values = dict(zip(recorded["columns"], row), Q=query.name)
                    rows.append(tuple(fetched(column, values.get(column)) for column in layout))
            self.answers[combined.sql] = rows

    def cursor(self) -> Session:
        return self

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def execute(self, sql: str) -> None:
        self.rows = self.answers[sql]

    def fetchall(self) -> list:
        return list(self.rows)


def fetched(column: str, value: object) -> object:
    """What python-oracledb returns for a document's value in a combined statement."""
    if value is None:
        return None
    if column == "DB_TIME":  # TO_CHAR(timestamp, 'YYYY-MM-DD"T"HH24:MI:SS.FF6')
        moment = datetime.datetime.fromtimestamp(float(value), datetime.timezone.utc)  # type: ignore[arg-type]
        return moment.strftime(oracle.DB_TIME_FORMAT)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def live_session(path: str) -> tuple[oracle_db.Database, float]:
    """A Database connected to a Session answering with the results document at `path`, and its agent clock."""
    with open(path) as f:
        document = json.load(f)
    release = oracle_facts.release_of_version(document["version"])
    settings = config.parse(
        {"oracle": {"enabled": True, "dsn": "db:1521/BENCH", "user": "bench", "scope": "cluster"}}, None
    )
    database = oracle_db.Database(settings.oracle)  # type: ignore[arg-type]
    database.available = {
        view: set(oracle_facts.columns(view, release))
        for view in oracle_facts.VIEWS_READ
        if oracle_facts.columns(view, release)
    }
    clock = next(iter(document["results"].values()))["agent_clock"]
    database.clock = lambda: clock
    database.connection = Session(document, oracle.build_queries(database.available, "cluster"))
    return database, clock


def oracle_raw(path: str) -> Raw:
    """A results document written by bench/run.py, as the live reader hands it over: decoded, not as
    JSON text (oracle_db.to_raw). Decoding it here is no part of what is timed: the live path has no
    JSON (a capture's `dnfsmon diff` decodes its text once more)."""
    with open(path) as f:
        document = json.load(f)
    return oracle_db.to_raw(document, next(iter(document["results"].values()))["agent_clock"])


def oracle_sample(previous: dict[str, rates.Sample], database: oracle_db.Database, clock: float) -> int:
    """What a live target's read and collect run for one sample, once the database has answered: the
    reader's split of the rows into the results document (oracle_db.read_once), the inventory cadence's
    look at it (targets.OracleTarget.read), then the source's parse, rates.diff_all, its publish step."""
    new = oracle_db.read_once(database, clock)
    oracle.InventoryCadence(600).read(new)
    current = oracle.SOURCE.parse(new, "bench").samples
    result = rates.diff_all(previous, current)
    return len(oracle.SOURCE.publish(result, current))


def oracle_floor(new: Raw) -> float:
    """What any reader must do at least: touch every number of the rows once."""
    total = 0.0
    for result in oracle.load(new)["results"].values():
        for row in result["rows"]:
            for value in row:
                if isinstance(value, (int, float)):
                    total += value
    return total


def state_floor(directory: str, target: str) -> int:
    """Read and JSON-decode the snapshot and every journal line (after its checksum): what a load cannot avoid."""
    path = os.path.join(directory, state.state_file_name(target))
    with open(path, "rb") as f:
        decoded = len(json.loads(f.read()))
    try:
        with open(path[: -len(".json")] + ".journal", "rb") as f:
            decoded += sum(len(json.loads(line[9:])) for line in f)
    except FileNotFoundError:
        pass
    return decoded


def main() -> None:
    mode, *paths, repeats = sys.argv[1:]
    tune_gc()  # the agent's one garbage-collector policy, as `dnfsmon` sets it at start
    previous: dict[str, rates.Sample] = {}
    if mode == "oracle":
        old_database, old_clock = live_session(paths[0])
        old_raw = oracle_db.read_once(old_database, old_clock)
        previous = {s.state_key: s for s in oracle.SOURCE.parse(old_raw, "bench").samples}
        database, clock = live_session(paths[1])
    elif mode == "oracle-floor":
        new = oracle_raw(paths[0])
    seconds = []
    for _ in range(int(repeats)):
        start = time.process_time()
        if mode == "parse":
            parse(paths[0])
        elif mode == "diff":
            diff(paths[0], paths[1])
        elif mode == "oracle":
            oracle_sample(previous, database, clock)
        elif mode == "oracle-floor":
            oracle_floor(new)
        elif mode == "state-load":
            state.StateFile(paths[0], paths[1]).load()
        elif mode == "state-floor":
            state_floor(paths[0], paths[1])
        else:
            raise SystemExit(f"unknown mode {mode}")
        seconds.append(time.process_time() - start)
    print(json.dumps(seconds))


if __name__ == "__main__":
    main()
