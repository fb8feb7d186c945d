"""The Oracle source: SQL against the column facts, recorded rows through the live code path,
edge cases, and every failure kind (with the host sources still producing points)."""

from __future__ import annotations

import datetime
import itertools
import json
import pathlib
import random
import re
import subprocess
import sys
import types

import pytest
import sqlglot
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from sqlglot import exp

import sqlcheck
from configs import write_config
from dnfsmon import oracle_db, oracle_facts, rates, simulator
from dnfsmon.collect import compute
from dnfsmon.config import parse
from dnfsmon.points import Point, to_line
from dnfsmon.sources import oracle
from dnfsmon.sources.base import Raw
from dnfsmon.state import StateFile
from runner import DNFSMON
from sqlcheck import sorting_constructs, violations


def facts_available(release):
    """What discovery would find on a database of this release with every grant."""
    found = {}
    for view in oracle_db.VIEWS:
        columns = oracle_facts.columns(view, release)
        if columns:
            found[view] = set(columns)
    return found


@pytest.mark.parametrize("release", list(oracle_facts.RELEASES))
def test_every_sql_text_matches_the_column_facts(release):
    queries = oracle.build_queries(facts_available(release))
    assert {q.name for q in queries} >= {
        "instances",
        "database",
        "dnfs_stats",
        "dnfs_channels",
        "dnfs_servers",
        "dnfs_files",
        "system_event",
        "event_histogram",
        "iostat_file",
        "iostat_function",
        "filer_files",
    }
    for query in queries:
        assert violations(query.sql, release) == [], (release, query.name)
    for scope in oracle.SCOPES:  # what is sent: the combined statements
        for combined in oracle.read_groups(oracle.build_queries(facts_available(release), scope), inventory=True):
            assert violations(combined.sql, release) == [], (release, scope, combined.name)
    assert violations(oracle_db.discovery_sql(), release) == []


def test_release_differences_reach_the_sql():
    old = {q.name: q for q in oracle.build_queries(facts_available("11.2.0.4"))}
    new = {q.name: q for q in oracle.build_queries(facts_available("19c"))}
    assert "v$event_histogram)" in old["event_histogram"].sql and "wait_time_milli" in old["event_histogram"].sql
    assert "v$event_histogram_micro)" in new["event_histogram"].sql
    cluster = {q.name: q for q in oracle.build_queries(facts_available("19c"), "cluster")}
    assert "FROM gv$event_histogram_micro WHERE" in cluster["event_histogram"].sql
    assert "RECO" in old["dnfs_channels"].columns
    assert "SPRECO" in new["dnfs_channels"].columns and "RECO" not in new["dnfs_channels"].columns
    assert "NFSVERSION" not in old["dnfs_servers"].columns and "NFSVERSION" in new["dnfs_servers"].columns


@pytest.mark.parametrize(
    "sql, release, problem",
    [
        ("SELECT inst_id, nfs_readbytez FROM gv$dnfs_stats", "19c", "NFS_READBYTEZ: no such column in 19c"),
        ("SELECT con_id FROM gv$dnfs_stats", "11.2.0.4", "CON_ID: no such column in 11.2.0.4"),
        ("SELECT wait_count FROM gv$event_histogram_micro", "12.1.0.1", "does not exist in 12.1.0.1"),
        ("SELECT reco FROM gv$dnfs_channels", "12.2", "RECO: no such column in 12.2"),
        ("SELECT s.pnum, spid FROM gv$dnfs_stats s, gv$process p", "19c", "unqualified column"),
    ],
)
def test_the_facts_check_catches_misspelt_and_too_new_columns(sql, release, problem):
    assert any(problem in v for v in violations(sql, release))


def test_release_of_version_strings():
    assert oracle_facts.release_of_version("11.2.0.4.0") == "11.2.0.4"
    assert oracle_facts.release_of_version("12.1.0.2.0") == "12.1.0.2"
    assert oracle_facts.release_of_version("19.0.0.0.0") == "19c"
    assert oracle_facts.release_of_version("23.4.0.24.05") == "23ai"
    with pytest.raises(ValueError, match=r"older than 11\.2\.0\.4"):
        oracle_facts.release_of_version("11.2.0.3.0")


# --- recorded rows through the live reader (a fake cursor replays them) ---


class OracleError(Exception):
    """Shaped like oracledb's errors: args[0] has full_code, message, is_session_dead."""

    def __init__(self, code, message, dead=False):
        detail = type("Detail", (), {"full_code": code, "message": f"{code}: {message}", "is_session_dead": dead})()
        super().__init__(detail)


class FakeCursor:
    def __init__(self, connection):
        self.connection = connection
        self.description = None
        self._rows = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def execute(self, sql):
        outcome = self.connection.answer(sql)
        if isinstance(outcome, Exception):
            raise outcome
        columns, rows = outcome
        self.description = [(c,) for c in columns]
        self._rows = [tuple(r) for r in rows]

    def fetchall(self):
        return list(self._rows)


def to_char(column, value):
    """What Oracle's TO_CHAR returns for a recorded value (the combined statements' formats)."""
    if value is None:
        return None
    if column == "DB_TIME":  # TO_CHAR(timestamp, 'YYYY-MM-DD"T"HH24:MI:SS.FF6')
        moment = datetime.datetime.fromtimestamp(value, datetime.timezone.utc)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# One branch of a combined statement, and one item of its select list, as the SQL text writes them.
BRANCH = re.compile(r"SELECT '(\w+)' AS q, (.*?) FROM \(")
SELECTED = re.compile(
    r"(?:CAST\(r\.([\w#]+) AS NUMBER\)|CAST\(NULL AS NUMBER\)|TO_CHAR\(r\.([\w#]+)(?:, '[^']*')?\)|NULL) AS (\w+)"
)


def driver_answer(sql, by_name):
    """(column names, rows) python-oracledb returns for a combined statement over recorded results,
    read from the statement's text alone: each branch's select list says which recorded column goes
    to which result column, and how it travels. A CAST(... AS NUMBER) is an unconstrained NUMBER,
    which the driver returns as an int when the value is whole and a float otherwise
    (python-oracledb User Guide, "Executing SQL", fetch data types); a TO_CHAR is the text Oracle
    writes (to_char); a NULL is None."""
    names, rows = None, []
    for branch in re.split(r" UNION ALL (?=SELECT ')", sql):
        found = BRANCH.match(branch)
        assert found, branch
        items = SELECTED.findall(found.group(2))
        assert ", ".join(m.group(0) for m in SELECTED.finditer(found.group(2))) == found.group(2), branch
        names = names or ["Q", *(alias.upper() for _, _, alias in items)]
        recorded = by_name[found.group(1)]
        for row in recorded["rows"]:
            values = dict(zip(recorded["columns"], row))
            answer = [found.group(1)]
            for number, text, _ in items:
                if number:
                    value = values[number.upper()]
                    answer.append(int(value) if isinstance(value, float) and value.is_integer() else value)
                elif text:
                    answer.append(to_char(text.upper(), values[text.upper()]))
                else:
                    answer.append(None)
            rows.append(tuple(answer))
    return names, rows


def query_rows(data, columns):
    """A read query's rows as lists of the values of `columns`, read by name as the parsers read
    them (the live reader's rows are the combined statement's), the clock in seconds."""
    at = [data["columns"].index(c) for c in columns]
    return [
        [oracle.clock_seconds(row[i]) if c == "DB_TIME" else row[i] for c, i in zip(columns, at)]
        for row in data["rows"]
    ]


def v_process_rows(stats):
    """V$PROCESS's rows (what a mounted database is asked for apart: queries.build_queries) of the
    processes a recording's V$DNFS_STATS rows name, as the open statement joined them (PID = PNUM),
    and two processes of each instance without dNFS I/O rows."""
    at = {c: stats["columns"].index(c) for c in ("INST_ID", "PNUM", "SPID", "SERIAL#", "PNAME", "PROGRAM")}
    rows = [[row[at[c]] for c in at] + [T0, 1] for row in stats["rows"]]
    for inst in sorted({row[at["INST_ID"]] for row in stats["rows"]}):
        rows += [
            [inst, pid, str(900 + pid), 1, "PMON" if pid == 2 else None, "oracle (no dNFS)", T0, 1] for pid in (2, 3)
        ]
    return {
        "columns": ["INST_ID", "PID", "SPID", "SERIAL#", "PNAME", "PROGRAM", "DB_TIME", "CLOCK_INSTANCE"],
        "rows": rows,
    }


class FakeConnection:
    """Answers dnfsmon's SQL from a recorded results document, as python-oracledb would."""

    def __init__(self, document, discovered, failing=None):
        self.by_name = dict(document["results"])
        if "processes" not in self.by_name and "dnfs_stats" in self.by_name:
            self.by_name["processes"] = v_process_rows(self.by_name["dnfs_stats"])
        self.discovered = discovered
        self.failing = failing or {}
        self.call_timeout = 0
        self.executed = []
        # What container_sql answers: (V$DATABASE.CDB, CON_NAME, a PDB file's V$DATAFILE.CON_ID or None).
        self.container = ("NO", "ORCL", 0)
        # What container_data_sql answers: the views (SYS names) the user sees the root's rows of,
        # or the error a user without SELECT on DBA_CONTAINER_DATA gets.
        self.root_only: list[str] | Exception = []
        self.warning = None
        # A mounted database: the data dictionary cannot be queried, only fixed tables and views.
        self.mounted = False
        self.version = "19.21.0.0.0"
        # (V$SESSION.MODULE, CLIENT_IDENTIFIER) as set when the first statement was sent.
        self.session_names: tuple = (None, None)

    def cursor(self):
        return FakeCursor(self)

    def statements(self):
        """Every statement the agent may send: each scope's combined statements and single queries."""
        for scope, mounted in itertools.product(oracle.SCOPES, (False, True)):
            queries = oracle.build_queries(self.discovered, scope, mounted)
            yield from oracle.read_groups(queries, inventory=True)
            yield from (oracle.combine(q.name, [q]) for q in queries)

    def answer(self, sql):
        self.executed.append(sql)
        if len(self.executed) == 1:  # python-oracledb sends module and client_identifier with the next round trip
            self.session_names = (getattr(self, "module", None), getattr(self, "client_identifier", None))
        if sql == oracle_db.SESSION_SQL:
            return [], []  # ALTER SESSION returns no rows
        if sql in (oracle_db.container_sql("V$DATAFILE"), oracle_db.container_sql("GV$DATAFILE")):
            return ["CDB", "CON_NAME", "PDB_CON_ID"], [self.container]
        if self.mounted and ("dba_container_data" in sql or "all_tab_columns" in sql):
            return OracleError(
                "ORA-01219", "database or pluggable database not open: queries allowed on fixed tables or views only"
            )
        if "dba_container_data" in sql:
            if isinstance(self.root_only, Exception):
                return self.root_only
            return ["VIEW_NAME"], [(name,) for name in sorted(self.root_only) if f"'{name}'" in sql]  # ORDER BY
        if "all_tab_columns" in sql:
            return ["TABLE_NAME", "COLUMN_NAME"], [
                (v.replace("$", "_$", 1), c) for v, cols in self.discovered.items() for c in cols
            ]
        combined = next(c for c in self.statements() if c.sql == sql)
        for query in combined.queries:  # Oracle fails the whole statement
            if query.name in self.failing:
                return self.failing[query.name]
        return driver_answer(sql, self.by_name)

    def close(self):
        pass


def settings(**overrides):
    table = {"enabled": True, "dsn": "db1:1521/ORCL", "user": "dnfsmon", "password_env": "DNFSMON_TEST_PW"}
    table.update(overrides)
    return parse({"oracle": table}, None).oracle


def live_read(document, release="19c", failing=None, drop_views=(), **options):
    """The live reader on recorded rows; its clock reads the recorded database time
    (the recording is replayed faster than it was made)."""
    discovered = {v: c for v, c in facts_available(release).items() if v not in drop_views}
    database = oracle_db.Database(settings(**options))
    database.clock = lambda: next(
        row[data["columns"].index("DB_TIME")]
        for data in document["results"].values()
        if "DB_TIME" in data["columns"]
        for row in data["rows"]
    )
    database.connection = FakeConnection(document, discovered, failing)
    database.discover()
    return oracle_db.to_raw(database.read(), 0.0), database.connection


def simulated_document(t, workload=None, memory=None):
    raw = simulator.read(workload or simulator.Workload(), t, memory)
    return json.loads(raw.text(oracle.RESULTS))


T0 = 1_795_000_000.0


def points_between(raw0, raw1, host="h"):
    first = compute({"oracle": raw0}, {}, host, {})
    return compute({"oracle": raw1}, {}, host, first.samples)


def process_samples(found):
    """Each process of a read's I/O samples (one rates.Members per instance) as its own Sample."""
    tables = [s for s in found if s.measurement == oracle.IO_MEASUREMENT]
    assert all(type(table) is rates.Members for table in tables)
    return [table.member(i) for table in tables for i in range(len(table.member_ids))]


def test_recorded_simulator_rows_give_the_same_points_through_the_live_reader():
    memory_direct, memory_live = simulator.Memory(), simulator.Memory()
    direct = points_between(
        simulator.read(simulator.Workload(), T0, memory_direct),
        simulator.read(simulator.Workload(), T0 + 10, memory_direct),
    )
    raw0, _ = live_read(simulated_document(T0, memory=memory_live))
    raw1, connection = live_read(simulated_document(T0 + 10, memory=memory_live))
    through_live = points_between(raw0, raw1)

    def strip(points):
        return sorted(
            (p.measurement, tuple(x for x in p.tags if x[0] != "simulated"), tuple(sorted(p.fields.items())))
            for p in points
            if p.measurement != "dnfsmon_oracle_status"
        )

    assert strip(direct.points) == strip(through_live.points)
    assert any(p.measurement == "dnfsmon_dnfs_io" for p in through_live.points)
    events = {dict(p.tags)["event"] for p in through_live.points if p.measurement == "dnfsmon_oracle_event"}
    assert events == set(oracle_facts.AGENT_EVENTS)  # 'log file sync' and the temp events included (review C9)
    functions = {dict(p.tags)["function"] for p in through_live.points if p.measurement == "dnfsmon_oracle_io_function"}
    assert functions == set(simulator.FUNCTIONS)  # GV$IOSTAT_FUNCTION in the counters' statement (review C7)
    filers = {dict(p.tags)["server"] for p in through_live.points if p.measurement == "dnfsmon_dnfs_filer_latency"}
    assert filers == {"filer1", "filer2"}  # GV$IOSTAT_FILE per file, joined to its filer (review C8)
    top = [dict(p.tags) for p in through_live.points if p.measurement == "dnfsmon_dnfs_top_process"]
    assert sorted((t["instance"], int(t["rank"])) for t in top) == [
        (i, r) for i in ("simdb1", "simdb2") for r in range(1, 11)
    ]
    assert all(
        "SYS_EXTRACT_UTC(SYSTIMESTAMP)" in sql
        for sql in connection.executed
        if "all_tab_columns" not in sql and "v$database" not in sql
    )


def test_dnfs_off_means_no_io_points_but_status_up():
    workload = simulator.Workload(dnfs_enabled=False)
    outcome = points_between(simulator.read(workload, T0), simulator.read(workload, T0 + 10))
    measurements = {p.measurement for p in outcome.points}
    assert "dnfsmon_dnfs_io" not in measurements and "dnfsmon_dnfs_channel" not in measurements
    status = next(p for p in outcome.points if p.measurement == "dnfsmon_oracle_status")
    assert status.fields["up"] is True
    coverage = [
        p
        for p in outcome.points
        if p.measurement == "dnfsmon_dnfs_coverage" and dict(p.tags)["file_type"] == "Data File"
    ]
    assert coverage and all(p.fields["dnfs_pct"] == 0.0 for p in coverage)


def test_null_byte_columns_give_iops_but_no_bytes():
    documents = [simulated_document(T0), simulated_document(T0 + 10)]
    for document in documents:
        stats = document["results"]["dnfs_stats"]
        for column in ("NFS_READBYTES", "NFS_WRITEBYTES"):
            index = stats["columns"].index(column)
            for row in stats["rows"]:
                row[index] = None
    raws = [live_read(d)[0] for d in documents]
    io = [p for p in points_between(*raws).points if p.measurement == "dnfsmon_dnfs_io"]
    assert io and all(
        "read_iops" in p.fields and "read_mib_per_s" not in p.fields and "avg_read_kib" not in p.fields for p in io
    )


def test_pnum_reused_by_a_new_process_is_a_new_baseline():
    documents = [simulated_document(T0), simulated_document(T0 + 10)]
    stats = documents[1]["results"]["dnfs_stats"]
    columns = stats["columns"]
    row = stats["rows"][0]
    # PNUM 20 of instance 1 is now a young process: new SPID, small counters.
    row[columns.index("SPID")] = "99999"
    row[columns.index("SERIAL#")] = 777
    for c in ("NFS_READ", "NFS_WRITE", "NFS_READBYTES", "NFS_WRITEBYTES"):
        row[columns.index(c)] = 5
    outcome = points_between(*[live_read(d)[0] for d in documents])
    assert any("identity changed" in s.reason and dict(s.current.key).get("pnum") == "20" for s in outcome.skips)
    io = {dict(p.tags)["instance"]: p for p in outcome.points if p.measurement == "dnfsmon_dnfs_io"}
    truth = simulator.truth(simulator.Workload(), 1, T0, T0 + 10)
    assert 0 < io["simdb1"].fields["read_iops"] <= truth.read_iops * 1.005
    # The new process started after the previous read (another SERIAL# held PNUM 20 then):
    # its 5 reads since it started are the interval's.
    assert io["simdb1"].fields["new_processes"] == 1 and io["simdb1"].fields["processes_left_out"] == 0


def test_each_instance_holds_which_process_held_each_pnum():
    """code-review 1.3: which process held each PNUM was one JSON text in a gauge, written at one read
    and decoded at the next. Each instance's I/O sample (rates.Members) holds it: a member per PNUM,
    held by (SPID, SERIAL#), as the rows have them."""
    document = simulated_document(T0)
    found, _ = oracle.samples(live_read(document)[0], "h")
    tables = {dict(s.key)["instance"]: s for s in found if s.measurement == oracle.IO_MEASUREMENT}
    stats = document["results"]["dnfs_stats"]
    position = {c: stats["columns"].index(c) for c in ("INST_ID", "PNUM", "SPID", "SERIAL#")}
    for number, instance in ((1, "simdb1"), (2, "simdb2")):
        expected = {
            str(r[position["PNUM"]]): (str(r[position["SPID"]]), str(r[position["SERIAL#"]]))
            for r in stats["rows"]
            if r[position["INST_ID"]] == number
        }
        table = tables[instance]
        assert dict(zip(table.member_ids, table.member_identities)) == expected
        assert len(expected) == simulator.Workload().processes


def test_a_state_from_before_the_process_table_rebaselines_each_instance_once_and_is_dropped():
    """A state file written by a dnfsmon that kept a sample per process and a roster per instance
    (dnfsmon_dnfs_roster, "SPID/SERIAL#" per PNUM): the first read after the upgrade publishes no
    I/O (each instance re-baselines once, never counting a process from zero against a roster it
    cannot read), stores no sample of the old kinds, and the next read publishes as usual."""
    documents = [simulated_document(t) for t in (T0, T0 + 10, T0 + 20)]
    raws = [live_read(d)[0] for d in documents]
    first = compute({"oracle": raws[0]}, {}, "h", {})
    older: dict = {}
    for key, sample in first.samples.items():
        if sample.measurement != oracle.IO_MEASUREMENT:
            older[key] = sample
            continue
        for i in range(len(sample.member_ids)):
            process = sample.member(i)
            older[process.state_key] = process
        roster = {pnum: "/".join(holder) for pnum, holder in zip(sample.member_ids, sample.member_identities)}
        old = rates.Sample(
            "dnfsmon_dnfs_roster", sample.key, sample.time, sample.wall_time, {}, roster, sample.identity
        )
        older[old.state_key] = old
    upgraded = compute({"oracle": raws[1]}, {}, "h", older)
    assert not [p for p in upgraded.points if p.measurement in ("dnfsmon_dnfs_io", "dnfsmon_dnfs_top_process")]
    assert {s.measurement for s in upgraded.samples.values()} == {s.measurement for s in first.samples.values()}
    assert all(type(s) is rates.Members for s in upgraded.samples.values() if s.measurement == "dnfsmon_dnfs_io")
    assert len(upgraded.samples) == len(first.samples)
    after = compute({"oracle": raws[2]}, {}, "h", upgraded.samples)
    io = [p.fields for p in after.points if p.measurement == "dnfsmon_dnfs_io"]
    assert len(io) == 2 and all(fields["read_iops"] > 0 for fields in io)


def io_reads(document, instance=1):
    """{PNUM: NFS_READ} of one instance's V$DNFS_STATS rows in a results document."""
    stats = document["results"]["dnfs_stats"]
    columns = stats["columns"]
    return {
        row[columns.index("PNUM")]: row[columns.index("NFS_READ")]
        for row in stats["rows"]
        if row[columns.index("INST_ID")] == instance
    }


def test_a_process_absent_from_the_previous_read_is_counted_from_zero():
    """Its counters started at zero after the previous read: all of them are the interval's (issue 15)."""
    workload = simulator.Workload(instances=1, processes=5)
    memory = simulator.Memory()
    documents = [simulated_document(t, workload, memory) for t in (T0, T0 + 10)]
    stats = documents[0]["results"]["dnfs_stats"]
    stats["rows"] = [r for r in stats["rows"] if r[stats["columns"].index("PNUM")] != 22]  # not there yet
    # What a process that started after the first read would have sent since: its counts.
    channels = documents[1]["results"]["dnfs_channels"]
    rows_22 = [r for r in channels["rows"] if r[channels["columns"].index("PNUM")] == 22]
    calls = [
        r[documents[1]["results"]["dnfs_stats"]["columns"].index(c)]
        for r in documents[1]["results"]["dnfs_stats"]["rows"]
        if r[documents[1]["results"]["dnfs_stats"]["columns"].index("PNUM")] == 22
        for c in ("NFS_READ", "NFS_WRITE")
    ]
    # The statement returns a process's sends summed over its channels (its PROCESS_SENDS).
    (row_22,) = rows_22
    row_22[channels["columns"].index("PROCESS_SENDS")] = sum(calls)
    before, after = io_reads(documents[0]), io_reads(documents[1])
    expected = (sum(after[p] - before[p] for p in before) + after[22]) / 10
    outcome = points_between(*[live_read(d)[0] for d in documents])
    (io,) = [p.fields for p in outcome.points if p.measurement == "dnfsmon_dnfs_io"]
    assert io["read_iops"] == pytest.approx(expected, rel=1e-12) and after[22] > 0
    assert io["new_processes"] == 1 and io["processes_left_out"] == 0
    # The same process with the sends it made in the interval only: it counted more calls than it
    # sent, so its counts did not start after the first read; left out, not a spike (dba-review P1).
    row_22[channels["columns"].index("PROCESS_SENDS")] = row_22[channels["columns"].index("PROCESS_CHANNELS")]
    outcome = points_between(*[live_read(d)[0] for d in documents])
    (io,) = [p.fields for p in outcome.points if p.measurement == "dnfsmon_dnfs_io"]
    assert io["read_iops"] == pytest.approx(sum(after[p] - before[p] for p in before) / 10, rel=1e-12)
    assert io["new_processes"] == 0 and io["processes_left_out"] == 1 and io["new_processes_doubtful"] == 1


@pytest.mark.parametrize("top", [3, 0])
def test_oracle_top_processes_is_an_option_of_the_source_built_from_the_config(top):
    """[oracle] top_processes is the source's option (code-review 1.3): not written into the results
    document, nor kept in a sample's gauges; it bounds the top process points."""
    memory = simulator.Memory()
    raws = [live_read(simulated_document(t, memory=memory), top_processes=top)[0] for t in (T0, T0 + 10)]
    assert not any("top_processes" in oracle.load(raw) for raw in raws)
    table = {"enabled": True, "dsn": "db1:1521/ORCL", "user": "dnfsmon", "password_env": "X", "top_processes": top}
    source = oracle.build(parse({"oracle": table}, None))
    assert source.top_processes == top
    first = compute({"oracle": raws[0]}, {}, "h", {}, {"oracle": source})
    assert not any("top_processes" in sample.gauges for sample in first.samples.values())
    points = compute({"oracle": raws[1]}, {}, "h", first.samples, {"oracle": source}).points
    ranks = sorted(
        (dict(p.tags)["instance"], int(dict(p.tags)["rank"])) for p in points if "top_process" in p.measurement
    )
    assert ranks == [(i, r) for i in ("simdb1", "simdb2") for r in range(1, top + 1)]
    from dnfsmon.config import ConfigError

    with pytest.raises(ConfigError, match=r"\[oracle\] top_processes"):
        settings(top_processes=101)


def test_a_process_whose_predecessor_is_unknown_is_left_out_and_counted_as_such():
    """The previous read's outer join found no V$PROCESS row for the PNUM (a process exiting or
    starting as the two views were scanned): when the new one started is not known."""
    workload = simulator.Workload(instances=1, processes=5)
    memory = simulator.Memory()
    documents = [simulated_document(t, workload, memory) for t in (T0, T0 + 10)]
    stats = documents[0]["results"]["dnfs_stats"]
    columns = stats["columns"]
    row = next(r for r in stats["rows"] if r[columns.index("PNUM")] == 22)
    row[columns.index("SPID")] = row[columns.index("SERIAL#")] = None
    before, after = io_reads(documents[0]), io_reads(documents[1])
    expected = sum(after[p] - before[p] for p in before if p != 22) / 10
    outcome = points_between(*[live_read(d)[0] for d in documents])
    (io,) = [p.fields for p in outcome.points if p.measurement == "dnfsmon_dnfs_io"]
    assert io["read_iops"] == pytest.approx(expected, rel=1e-12)
    assert io["new_processes"] == 0 and io["processes_left_out"] == 1


def test_instance_restart_mid_run_rebaselines_that_instance_only():
    documents = [simulated_document(T0), simulated_document(T0 + 10)]
    instances = documents[1]["results"]["instances"]
    instances["rows"][0][instances["columns"].index("STARTUP_TIME")] = "2026-11-22T02:00:00"
    outcome = points_between(*[live_read(d)[0] for d in documents])
    io = {dict(p.tags)["instance"] for p in outcome.points if p.measurement == "dnfsmon_dnfs_io"}
    assert io == {"simdb2"}


def test_a_rac_instance_missing_from_one_read():
    documents = [simulated_document(T0), simulated_document(T0 + 10)]
    instances = documents[1]["results"]["instances"]
    instances["rows"] = [r for r in instances["rows"] if r[0] != 2]
    outcome = points_between(*[live_read(d)[0] for d in documents])
    assert {dict(p.tags)["instance"] for p in outcome.points if p.measurement == "dnfsmon_dnfs_io"} == {"simdb1"}
    status = next(p for p in outcome.points if p.measurement == "dnfsmon_oracle_status")
    assert status.fields["instances"] == 1


# --- failures: one clear line each; the status point says why; nothing else stops ---


def test_missing_grant_names_the_exact_view_and_the_other_queries_still_run():
    raw, connection = live_read(simulated_document(T0), drop_views=("GV$IOSTAT_FILE", "V$IOSTAT_FILE"))
    reason = oracle.failure(oracle.samples(raw, "h")[0])
    assert "GRANT SELECT ON SYS.V_$IOSTAT_FILE TO DNFSMON" in reason
    assert not any("iostat_file" in sql for sql in connection.executed)
    samples, _ = oracle.samples(raw, "h")
    assert any(s.measurement == "dnfsmon_dnfs_io" for s in samples)


def test_query_failing_with_ora_00942_names_the_grants_of_its_views():
    failing = {"dnfs_stats": OracleError("ORA-00942", "table or view does not exist")}
    raw, _ = live_read(simulated_document(T0), failing=failing)
    reason = oracle.failure(oracle.samples(raw, "h")[0])
    assert reason.startswith(
        "dnfs_stats: ORA-00942: table or view does not exist (missing grant? GRANT SELECT ON SYS.V_$DNFS_STATS TO DNFSMON, GRANT SELECT ON SYS.V_$PROCESS TO DNFSMON)"
    )


def test_a_call_timeout_fails_the_counters_statement_without_a_cascade_of_retries():
    failing = {"event_histogram": OracleError("DPY-4024", "call timeout of 10000 ms exceeded")}
    raw, connection = live_read(simulated_document(T0), failing=failing)
    assert (
        "counters: DPY-4024: call timeout of 10000 ms exceeded (call timeout: raise oracle.call_timeout_s"
        in oracle.failure(oracle.samples(raw, "h")[0])
    )
    # Discovery, the counters' statement (timed out: not retried query by query), the inventory's.
    assert len(connection.executed) == 3
    assert "dnfs_servers" in json.loads(raw.text(oracle.RESULTS))["results"]


@pytest.mark.parametrize(
    "error, expected",
    [
        (
            OracleError("ORA-01017", "invalid username/password; logon denied"),
            "ORA-01017: invalid username/password; logon denied (wrong user or password: correct [oracle] user or the password file",
        ),
        (
            OracleError("DPY-6005", "cannot connect to database"),
            "DPY-6005: cannot connect to database (is the listener up and the DSN right?)",
        ),
        (OracleError("ORA-12514", "TNS:listener does not currently know of service requested"), "ORA-12514"),
        (OracleError("ORA-01034", "ORACLE not available"), "ORA-01034: ORACLE not available"),
    ],
)
def test_connect_failures_become_a_down_status_with_the_code(monkeypatch, error, expected):
    monkeypatch.setenv("DNFSMON_TEST_PW", "pw-that-must-not-leak")
    database = oracle_db.Database(settings())

    def refuse():
        raise error

    monkeypatch.setattr(database, "connect", refuse)
    raw = oracle_db.read_once(database, 123.0)
    assert oracle.failure(oracle.samples(raw, "h")[0]).startswith(expected)
    (status,), _ = oracle.samples(raw, "h")
    assert status.gauges["up"] is False and expected in status.gauges["error"]
    assert "pw-that-must-not-leak" not in raw.text(oracle.RESULTS)


def test_world_readable_password_file_is_refused_without_leaking_it(tmp_path):
    secret = tmp_path / "pw"
    secret.write_text("hunter2\n")
    secret.chmod(0o644)
    database = oracle_db.Database(settings(password_file=str(secret)))
    raw = oracle_db.read_once(database, 1.0)
    assert "mode 0644" in oracle.failure(oracle.samples(raw, "h")[0]) and "hunter2" not in raw.text(oracle.RESULTS)


def test_listener_down_for_real_keeps_host_points_and_records_why(tmp_path):
    from influxdb_server import free_port

    (tmp_path / "pw").write_text("secret-pw\n")
    (tmp_path / "pw").chmod(0o600)
    config = write_config(
        tmp_path,
        agent={"host": "dbhost"},
        host={"sources": ["nic", "tcp"]},
        oracle={
            "enabled": True,
            "dsn": f"127.0.0.1:{free_port()}/ORCL",
            "user": "dnfsmon",
            "password_file": "pw",
            "call_timeout_s": 3,
        },
    )
    for _ in range(2):
        result = subprocess.run(
            [*DNFSMON, "--config", str(config), "collect"], capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 3, result.stderr
    assert "source oracle failed: DPY-6005: cannot connect to database" in result.stderr
    assert "is the listener up" in result.stderr and "secret-pw" not in result.stderr
    from dnfsmon.store import Store

    points = list(Store(str(tmp_path / "store"), 10**9).points())
    status = [p for p in points if p.measurement == "dnfsmon_oracle_status"]
    assert len(status) == 2 and all(p.fields["up"] is False and "DPY-6005" in p.fields["error"] for p in status)
    assert any(p.measurement == "dnfsmon_nic" for p in points)  # the host sources still ran


def test_results_document_errors_are_parse_errors_naming_the_file():
    from dnfsmon.sources.base import ParseError

    with pytest.raises(ParseError, match=r"oracle/results\.json"):
        oracle.samples(Raw({oracle.RESULTS: "[1, 2"}, 0.0, 0.0), "h")
    with pytest.raises(ParseError, match='need "columns" and "rows"'):
        oracle.samples(Raw({oracle.RESULTS: json.dumps({"results": {"instances": {"rows": []}}})}, 0.0, 0.0), "h")


def test_readme_grants_exactly_the_views_the_agent_reads():
    import os
    import re

    readme = open(os.path.join(os.path.dirname(__file__), "..", "README.md"), encoding="utf-8").read()
    granted = set(re.findall(r"GRANT SELECT ON (SYS\.\w+\$\w+) TO c##dnfsmon", readme))
    assert granted == {oracle_db.grant_name(v) for v in oracle_db.VIEWS}


cell = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=6)
    | st.lists(st.integers(), max_size=2)
    | st.dictionaries(st.text(max_size=2), st.integers(), max_size=2)
)


@pytest.mark.slow
@hsettings(max_examples=200, deadline=None)
@given(st.data())
def test_mutated_recorded_rows_give_only_documented_errors(data):
    """Recorded simulator rows with cells replaced by anything JSON can hold."""
    document = simulated_document(T0, simulator.Workload(instances=1, processes=3))
    names = sorted(document["results"])
    for _ in range(data.draw(st.integers(min_value=1, max_value=10))):
        result = document["results"][data.draw(st.sampled_from(names))]
        if result["rows"]:
            row = result["rows"][data.draw(st.integers(min_value=0, max_value=len(result["rows"]) - 1))]
            row[data.draw(st.integers(min_value=0, max_value=len(row) - 1))] = data.draw(cell)
    text = json.dumps(document)
    from dnfsmon.sources.base import ParseError

    try:
        _samples, _problems = oracle.samples(Raw({oracle.RESULTS: text}, T0, T0), "h")
    except ParseError:
        return
    first = compute({"oracle": simulator.read(simulator.Workload(instances=1, processes=3), T0 - 10)}, {}, "h", {})
    compute({"oracle": Raw({oracle.RESULTS: text}, T0, T0)}, {}, "h", first.samples)


@pytest.mark.parametrize(
    "document", [{"results": []}, {"database": "x"}, {"errors": [1]}, {"results": {"q": [1]}}, [], "text"]
)
def test_malformed_documents_are_parse_errors(document):
    from dnfsmon.sources.base import ParseError

    with pytest.raises(ParseError, match=r"oracle/results\.json"):
        oracle.samples(Raw({oracle.RESULTS: json.dumps(document)}, 0.0, 0.0), "h")


def test_status_names_the_release_and_refuses_an_unsupported_one():
    document = simulated_document(T0)
    (status, *_), problems = oracle.samples(Raw({oracle.RESULTS: json.dumps(document)}, T0, T0), "h")
    assert status.gauges["release"] == "19c" and problems == []
    document["version"] = "11.2.0.3.0"
    (status, *_), problems = oracle.samples(Raw({oracle.RESULTS: json.dumps(document)}, T0, T0), "h")
    assert "release" not in status.gauges
    assert "Oracle 11.2.0.3.0 is older than 11.2.0.4" in str(problems[0])


# --- a hung database: real sockets, the real python-oracledb thin client ---


@pytest.mark.parametrize("behaviour", ["silent", "trickle"])
def test_a_hung_listener_costs_one_bounded_wait_per_run_and_every_host_sample(tmp_path, behaviour):
    """The reliability review's H1: before, `collect` hung for ever here, holding the lock."""
    import time

    from dnfsmon.store import Store
    from fake_tns import FakeListener

    listener = FakeListener(behaviour)
    (tmp_path / "pw").write_text("secret-pw\n")
    (tmp_path / "pw").chmod(0o600)
    config = write_config(
        tmp_path,
        agent={"host": "dbhost"},
        host={"sources": ["nic"]},
        oracle={
            "enabled": True,
            "target": "ORCL",
            "dsn": f"127.0.0.1:{listener.port}/ORCL",
            "user": "dnfsmon",
            "password_file": "pw",
            "call_timeout_s": 1,
        },
    )
    started = time.monotonic()
    try:
        result = subprocess.run(
            [*DNFSMON, "--config", str(config), "collect", "--count", "3", "--interval", "2"],
            capture_output=True,
            text=True,
            timeout=120,  # the bug this guards against is an endless hang
        )
    finally:
        listener.close()
    elapsed = time.monotonic() - started
    assert result.returncode == 3, result.stderr
    assert "no answer from the database within 2 s (connect); not asked again in this run" in result.stderr
    assert "secret-pw" not in result.stderr
    # One connection attempt for the whole run: the later samples do not wait again.
    assert listener.accepted == 1
    # Documented bound: count x interval plus one deadline (call_timeout_s + 1 s); generous
    # slack for a loaded machine, far below "for ever".
    assert elapsed < 3 * 2 + 2 + 30
    points = list(Store(str(tmp_path / "store"), 10**9).points())
    agent = [p for p in points if p.measurement == "dnfsmon_agent"]
    assert len(agent) == 3  # every sample of the run was taken
    assert len({p.time_ns for p in points if p.measurement == "dnfsmon_nic"}) == 2  # samples 2 and 3 (1 = baseline)
    status = [p for p in points if p.measurement == "dnfsmon_oracle_status"]
    assert len(status) == 3 and all(p.fields["up"] is False and "no answer" in p.fields["error"] for p in status)


def test_the_oracle_lists_have_one_source_of_truth():
    # The op names are the view's own columns; the agent reads every one of them.
    op_columns = [c for c in oracle_facts.columns("V$DNFS_STATS", "19c") if c.startswith("NFS_") and "BYTES" not in c]
    assert list(oracle_facts.NFS_OPS) == op_columns
    stats = next(q for q in oracle.build_queries(facts_available("19c")) if q.name == "dnfs_stats")
    # NFS_READ and NFS_WRITE as read; every other operation summed in the statement (NFS_OTHER_OPS).
    assert {"NFS_READ", "NFS_WRITE", oracle.OTHER_OPS_COUNTER} <= set(stats.columns)
    assert all(
        re.search(rf"\bs\.{op.lower()}\b", stats.sql.split(" AS nfs_other_ops")[0]) for op in oracle_facts.OTHER_OPS
    )
    # Every event the agent asks for is one the simulator models, and the other way round.
    assert set(simulator.EVENTS) == set(oracle_facts.AGENT_EVENTS)
    assert set(oracle_facts.IO_EVENTS) <= set(oracle_facts.HISTOGRAM_EVENTS) <= set(oracle_facts.AGENT_EVENTS)
    queries = {q.name: q for q in oracle.build_queries(facts_available("19c"))}
    events = {
        name: set(re.findall(r"'([a-z][a-z ]+)'", queries[name].sql)) for name in ("system_event", "event_histogram")
    }
    assert events == {
        "system_event": set(oracle_facts.AGENT_EVENTS),
        "event_histogram": set(oracle_facts.HISTOGRAM_EVENTS),
    }
    # The views the agent may query are exactly the views read (and so granted).
    queried = {
        v for scope in oracle.SCOPES for q in oracle.build_queries(facts_available("19c"), scope) for v in q.views
    }
    assert queried | {"GV$EVENT_HISTOGRAM", "V$EVENT_HISTOGRAM"} == set(oracle_facts.VIEWS_READ)
    # Each release's version string maps back to that release.
    assert all(oracle_facts.release_of_version(v) == r for r, v in oracle_facts.VERSION_STRINGS.items())
    assert list(oracle_facts.VERSION_STRINGS) == list(oracle_facts.RELEASES)


# --- histograms, releases, RAC, CDB, clock, the status point ---


def test_the_first_waits_in_a_bucket_never_seen_before_are_counted():
    """V$EVENT_HISTOGRAM lists only buckets hit since startup: a new slow bucket counts from zero."""
    documents = [simulated_document(T0, simulator.Workload(instances=1)), None]
    documents[1] = simulated_document(T0 + 10, simulator.Workload(instances=1))
    histogram = documents[1]["results"]["event_histogram"]
    columns = histogram["columns"]
    template = next(r for r in histogram["rows"] if r[columns.index("EVENT")] == "db file sequential read")
    outliers = list(template)
    outliers[columns.index("WAIT_TIME_MICRO")] = 2**27  # 134 ms: a filer failover's stall
    outliers[columns.index("WAIT_COUNT")] = 7
    histogram["rows"].append(outliers)
    assert not any(
        r[columns.index("WAIT_TIME_MICRO")] == 2**27 for r in documents[0]["results"]["event_histogram"]["rows"]
    )
    points = points_between(*[live_read(d)[0] for d in documents]).points
    slow = [
        p
        for p in points
        if p.measurement == "dnfsmon_oracle_latency_histogram"
        and dict(p.tags)["event"] == "db file sequential read"
        and dict(p.tags)["le_us"] == str(2**27)
    ]
    assert len(slow) == 1 and slow[0].fields["waits_per_s"] == pytest.approx(0.7)


def test_the_first_waits_of_an_event_with_no_bucket_yet_are_counted():
    """An event no session has waited on since startup has no row in V$EVENT_HISTOGRAM (the view
    lists the buckets hit): its first waits, in buckets all new, count from zero at the next read."""
    documents = [simulated_document(T0, simulator.Workload(instances=1)), None]
    documents[1] = simulated_document(T0 + 10, simulator.Workload(instances=1))
    histogram = documents[0]["results"]["event_histogram"]
    columns = histogram["columns"]
    event = columns.index("EVENT")
    histogram["rows"] = [r for r in histogram["rows"] if r[event] != "log file sync"]
    newer = {
        r[columns.index("WAIT_TIME_MICRO")]: r[columns.index("WAIT_COUNT")]
        for r in documents[1]["results"]["event_histogram"]["rows"]
        if r[event] == "log file sync"
    }
    points = points_between(*[live_read(d)[0] for d in documents]).points
    got = {
        int(dict(p.tags)["le_us"]): p.fields["waits_per_s"]
        for p in points
        if p.measurement == "dnfsmon_oracle_latency_histogram" and dict(p.tags)["event"] == "log file sync"
    }
    assert newer and got == pytest.approx({bound: count / 10 for bound, count in newer.items()})
    # A read right at startup, before any wait: no histogram row at all, every bucket counted next.
    histogram["rows"] = []
    points = points_between(*[live_read(d)[0] for d in documents]).points
    got = {
        int(dict(p.tags)["le_us"]): p.fields["waits_per_s"]
        for p in points
        if p.measurement == "dnfsmon_oracle_latency_histogram" and dict(p.tags)["event"] == "log file sync"
    }
    assert got == pytest.approx({bound: count / 10 for bound, count in newer.items()})


def test_a_restart_rebaselines_the_histogram_new_buckets_included():
    documents = [simulated_document(T0, simulator.Workload(instances=1)), None]
    documents[1] = simulated_document(T0 + 10, simulator.Workload(instances=1))
    instances = documents[1]["results"]["instances"]
    instances["rows"][0][instances["columns"].index("STARTUP_TIME")] = "2026-11-22T02:00:00"
    points = points_between(*[live_read(d)[0] for d in documents]).points
    assert not [p for p in points if p.measurement == "dnfsmon_oracle_latency_histogram"]


def test_release_11_in_thin_mode_is_refused_at_config_validation():
    from dnfsmon.config import ConfigError

    with pytest.raises(
        ConfigError, match=r"\[oracle\] release = .11\.2\.0\.4.: python-oracledb thin mode cannot connect"
    ):
        settings(release="11.2.0.4")
    with pytest.raises(ConfigError, match=r'set mode = "thick"'):
        parse({"simulator": {"enabled": True, "release": "11.2.0.4"}}, None)
    assert settings(release="11.2.0.4", mode="thick").mode == "thick"


def test_dpy_3015_a_10g_password_verifier_says_to_use_thick_mode_or_reset_the_password():
    """dba-review: thin mode cannot answer a 10G-only verifier (11.2.0.4 with case-insensitive
    passwords); the driver's own error, as python-oracledb raises it, gets the two ways out."""
    import importlib

    import oracledb

    driver_errors = importlib.import_module("oracledb.errors")  # the package does not export it
    with pytest.raises(oracledb.NotSupportedError) as raised:  # raised the way the thin client's logon does
        driver_errors._raise_err(driver_errors.ERR_UNSUPPORTED_VERIFIER_TYPE, verifier_type=0x939)
    line = oracle_db.describe(raised.value)
    assert line.startswith("DPY-3015: password verifier type 0x939 is not supported by python-oracledb in thin mode")
    assert 'mode = "thick"' in line and "so that an 11G/12C verifier exists" in line


def test_dpy_3010_from_the_driver_says_to_use_thick_mode():
    """The simulated 11.2.0.4 database, read in thin mode (as if the release were not configured)."""
    raw = simulator.read(simulator.Workload(release="11.2.0.4", mode="thin"), T0)
    (status,), _ = oracle.samples(raw, "h")
    assert status.gauges["up"] is False
    assert status.gauges["error"].startswith("DPY-3010: connections to this database server version")
    assert 'set mode = "thick"' in status.gauges["error"]
    assert dict(status.key)["database"] == "SIMDB"
    thick = points_between(
        simulator.read(simulator.Workload(release="11.2.0.4", mode="thick"), T0),
        simulator.read(simulator.Workload(release="11.2.0.4", mode="thick"), T0 + 10),
    )
    assert any(p.measurement == "dnfsmon_dnfs_io" for p in thick.points)


def io_by_instance(points):
    return {dict(p.tags)["instance"]: dict(p.tags)["host"] for p in points if p.measurement == "dnfsmon_dnfs_io"}


@pytest.mark.parametrize("connected", [1, 2])
def test_rac_instance_scope_reads_only_the_connected_instance_through_the_live_reader(connected):
    workload = simulator.Workload(instances=2, scope="instance", connected_instance=connected)
    memory = simulator.Memory()
    raws = []
    for t in (T0, T0 + 10):
        raw, connection = live_read(simulated_document(t, workload, memory), scope="instance")
        raws.append(raw)
    assert not any("gv$" in sql for sql in connection.executed)  # the connected instance's V$ views
    points = points_between(*raws, host=f"simhost{connected}.example.com").points
    # The instance's host, spelt as the agent spells its own host.
    assert io_by_instance(points) == {f"simdb{connected}": f"simhost{connected}.example.com"}


def channel_sends_per_s(points):
    return sum(p.fields["sends_per_s"] for p in points if p.measurement == "dnfsmon_dnfs_channel")


def test_rac_agents_in_instance_scope_read_each_instance_s_channel_counts_once_per_interval():
    """One agent per node (scope "instance"), their samples interleaved: node 1's per-path sends/s are the
    I/O its processes did, as the model's truth gives it, not the part a node-2 read left (dba-review A4)."""
    workloads = {n: simulator.Workload(instances=2, scope="instance", connected_instance=n) for n in (1, 2)}
    memory = simulator.Memory()  # one database: its V$DNFS_CHANNELS counts are shared by both agents
    raws = {1: [], 2: []}
    for t in (T0, T0 + 5, T0 + 10, T0 + 15):
        node = 1 if (t - T0) % 10 == 0 else 2
        raw, _ = live_read(simulated_document(t, workloads[node], memory), scope="instance")
        raws[node].append(raw)
    for node in (1, 2):
        points = points_between(*raws[node], host=f"simhost{node}").points
        t0 = T0 + (0 if node == 1 else 5)
        truth = simulator.truth(workloads[node], node, t0, t0 + 10)
        assert channel_sends_per_s(points) == pytest.approx(
            truth.observable_read_iops + truth.observable_write_iops, rel=0.01
        ), node


def test_instance_scope_reads_v_views_and_falls_back_to_gv_only_where_v_is_not_granted():
    workload = simulator.Workload(instances=2, scope="instance", connected_instance=2)
    document = simulated_document(T0, workload)
    raw, connection = live_read(document, scope="instance")
    sent = [sql for sql in connection.executed if "all_tab_columns" not in sql and sql != oracle_db.SESSION_SQL]
    assert sent and not any("gv$" in sql for sql in sent)
    assert oracle.load(raw)["warning"] is None
    # A user set up before the V$ views were granted: V$DNFS_CHANNELS missing, GV$ granted.
    raw, connection = live_read(document, scope="instance", drop_views=("V$DNFS_CHANNELS",))
    channels = [sql for sql in connection.executed if "dnfs_channels" in sql and "UNION ALL" in sql]
    assert channels and all(
        "FROM gv$dnfs_channels WHERE inst_id = TO_NUMBER(SYS_CONTEXT('USERENV', 'INSTANCE'))" in sql for sql in channels
    )
    assert "GRANT SELECT ON SYS.V_$DNFS_CHANNELS TO DNFSMON" in oracle.load(raw)["warning"]
    assert oracle.load(raw)["errors"] == {} and oracle.load(raw)["results"]["dnfs_channels"]["rows"]
    # Neither granted: the GRANT of the scope's own view.
    raw, _ = live_read(document, scope="instance", drop_views=("V$DNFS_CHANNELS", "GV$DNFS_CHANNELS"))
    assert oracle.load(raw)["errors"] == {
        "V$DNFS_CHANNELS": "not visible to DNFSMON: GRANT SELECT ON SYS.V_$DNFS_CHANNELS TO DNFSMON"
    }
    # Scope "cluster" needs the GV$ view, whatever V$ grants there are.
    raw, _ = live_read(document, scope="cluster", drop_views=("GV$DNFS_CHANNELS",))
    assert "GV$DNFS_CHANNELS" in oracle.load(raw)["errors"]


def test_rac_no_instance_is_published_twice_in_either_scope():
    published = []
    for connected in (1, 2):  # one agent per node, scope "instance" (the default)
        workload = simulator.Workload(instances=2, scope="instance", connected_instance=connected)
        memory = simulator.Memory()
        raws = [simulator.read(workload, t, memory) for t in (T0, T0 + 10)]
        published += list(io_by_instance(points_between(*raws, host=f"simhost{connected}").points).items())
    assert sorted(published) == [("simdb1", "simhost1"), ("simdb2", "simhost2")]
    # One agent for the whole cluster, on node 1: each instance once, with its own host.
    workload = simulator.Workload(instances=2, scope="cluster")
    memory = simulator.Memory()
    raws = [simulator.read(workload, t, memory) for t in (T0, T0 + 10)]
    cluster = points_between(*raws, host="simhost1").points
    assert io_by_instance(cluster) == {"simdb1": "simhost1", "simdb2": "simhost2"}
    assert len([p for p in cluster if p.measurement == "dnfsmon_dnfs_io"]) == 2
    status = [p for p in cluster if p.measurement == "dnfsmon_oracle_status"]
    assert len(status) == 1 and dict(status[0].tags)["host"] == "simhost1"


@pytest.mark.parametrize("release", ["11.2.0.4", "19c"])
def test_a_standby_s_points_carry_its_role_and_the_status_its_role_and_open_mode(release):
    """Active Data Guard: the physical standby's I/O (redo apply) is told apart from the primary's by
    V$DATABASE.DATABASE_ROLE on every point about its instances; the status point names the role and
    OPEN_MODE as fields, its key the same as when the database is down."""
    mode = "thick" if release.startswith("11.") else "thin"  # python-oracledb: 11.2 needs thick mode
    standby = simulator.Workload(
        instances=1, release=release, mode=mode, database_role="PHYSICAL STANDBY", open_mode="READ ONLY WITH APPLY"
    )
    memory = simulator.Memory()
    options = {"mode": mode}
    raws = [live_read(simulated_document(t, standby, memory), release, **options)[0] for t in (T0, T0 + 10)]
    points = points_between(*raws).points
    about_instances = [p for p in points if "instance" in dict(p.tags)]
    assert {p.measurement for p in about_instances} >= {
        "dnfsmon_dnfs_io",
        "dnfsmon_dnfs_channel",
        "dnfsmon_oracle_event",
    }
    assert all(dict(p.tags)["role"] == "PHYSICAL STANDBY" for p in about_instances)
    (status,) = [p for p in points if p.measurement == "dnfsmon_oracle_status"]
    assert "role" not in dict(status.tags)
    assert (status.fields["database_role"], status.fields["open_mode"]) == ("PHYSICAL STANDBY", "READ ONLY WITH APPLY")
    # A primary's points are as they were: no role tag.
    primary = points_between(*[live_read(simulated_document(t))[0] for t in (T0, T0 + 10)]).points
    assert not any("role" in dict(p.tags) for p in primary)
    assert {p.fields["database_role"] for p in primary if p.measurement == "dnfsmon_oracle_status"} == {"PRIMARY"}


def test_cdb_figures_per_pdb_add_up_to_the_instance():
    workload = simulator.Workload(instances=1, pdbs=2, processes=20)
    memory = simulator.Memory()
    raws = [live_read(simulated_document(t, workload, memory))[0] for t in (T0, T0 + 10)]
    points = points_between(*raws).points
    io = {dict(p.tags).get("pdb"): p.fields for p in points if p.measurement == "dnfsmon_dnfs_io"}
    assert set(io) == {"1", "3", "4"}  # root (background processes) and the two PDBs
    truth = simulator.truth(workload, 1, T0, T0 + 10)
    assert sum(f["read_iops"] for f in io.values()) == pytest.approx(truth.observable_read_iops, rel=0.005)
    coverage = {
        (dict(p.tags).get("pdb"), dict(p.tags)["file_type"]): p.fields
        for p in points
        if p.measurement == "dnfsmon_dnfs_coverage"
    }
    assert coverage[("3", "Data File")]["files"] + coverage[("4", "Data File")]["files"] == 20
    functions = {
        (dict(p.tags).get("pdb"), dict(p.tags)["function"]): p.fields
        for p in points
        if p.measurement == "dnfsmon_oracle_io_function"
    }
    assert {pdb for pdb, _ in functions} == {"1", "3", "4"}
    cache = sum(f["small_read_reqs_per_s"] for (_, name), f in functions.items() if name == "Buffer Cache Reads")
    assert cache == pytest.approx(truth.function_reqs_per_s["Buffer Cache Reads"], rel=0.005)
    # Wait events are instance-wide (V$SYSTEM_EVENT from the root): no pdb tag.
    assert all("pdb" not in dict(p.tags) for p in points if p.measurement == "dnfsmon_oracle_event")


def test_a_database_clock_step_gives_no_point_for_that_interval():
    workload = simulator.Workload(instances=1)
    memory = simulator.Memory()
    documents = [simulated_document(t, workload, memory) for t in (T0, T0 + 10, T0 + 20)]
    # NTP steps the database host's clock 30 s forward between the 2nd and 3rd reads:
    # its clock says 40 s passed, the agent's monotonic clock 10 s.
    for data in documents[2]["results"].values():
        if "DB_TIME" in data["columns"]:
            index = data["columns"].index("DB_TIME")
            for row in data["rows"]:
                row[index] += 30
            data["agent_clock"] = T0 + 20
    raws = [oracle_db.to_raw(d, 0.0) for d in documents]
    first = compute({"oracle": raws[0]}, {}, "h", {})
    second = compute({"oracle": raws[1]}, {}, "h", first.samples)
    third = compute({"oracle": raws[2]}, {}, "h", second.samples)
    assert any(p.measurement == "dnfsmon_dnfs_io" for p in second.points)
    rated = {"dnfsmon_dnfs_io", "dnfsmon_oracle_event", "dnfsmon_dnfs_channel", "dnfsmon_oracle_latency_histogram"}
    assert not [p for p in third.points if p.measurement in rated]
    assert any("clock stepped" in s.reason for s in third.skips)


def test_a_reconnect_to_another_instance_rebaselines_its_clock():
    workload = simulator.Workload(instances=2, scope="cluster")
    memory = simulator.Memory()
    before = simulator.read(workload, T0, memory)
    after = simulator.read(simulator.Workload(instances=2, scope="cluster", connected_instance=2), T0 + 10, memory)
    outcome = points_between(before, after)
    assert not [p for p in outcome.points if p.measurement == "dnfsmon_dnfs_io"]
    assert any("identity changed" in s.reason for s in outcome.skips)


def test_the_status_point_names_the_configured_target_when_the_database_cannot_be_asked(monkeypatch):
    database = oracle_db.Database(settings(target="ORCL-PROD"))

    def refuse():
        raise OracleError("ORA-12541", "TNS:no listener")

    monkeypatch.setattr(database, "connect", refuse)
    (status,), _ = oracle.samples(oracle_db.read_once(database, 1.0), "h")
    assert dict(status.key) == {"host": "h", "database": "ORCL-PROD"}


def test_one_round_trip_per_sample_and_the_inventory_on_its_cadence():
    """Round trips counted through the fake cursor; figures unchanged (review D1/D2)."""
    document = simulated_document(T0)
    database = oracle_db.Database(settings())
    database.clock = lambda: T0
    database.connection = FakeConnection(document, facts_available("19c"))
    database.discover()
    executed = database.connection.executed
    before = len(executed)
    counters_only = database.read(inventory=False)
    assert len(executed) - before == 1
    assert set(counters_only["results"]) == {
        "instances",
        "database",
        "dnfs_stats",
        "dnfs_channels",
        "system_event",
        "event_histogram",
        "iostat_function",
    }
    before = len(executed)
    everything = database.read(inventory=True)
    assert len(executed) - before == 2
    assert {"dnfs_servers", "dnfs_files", "iostat_file", "filer_files"} <= set(everything["results"])
    # V$DATABASE's row as the document's "database": its columns, none of the statement's own.
    recorded_database = document["results"]["database"]
    assert everything["database"] == dict(zip(recorded_database["columns"], recorded_database["rows"][0]))
    # The rows come back exactly as recorded (numbers as numbers, every digit kept), read by name.
    for name, data in everything["results"].items():
        assert query_rows(data, document["results"][name]["columns"]) == document["results"][name]["rows"], name


def test_a_live_read_written_as_a_capture_reads_back_to_the_same_points():
    """A capture writes the live reader's document as JSON text (the statement's rows, the clock's
    text: docs/capture-format.md) and `dnfsmon diff` reads it back from that text: the points of
    two such captures are those of the two reads handed over as they were."""
    memory = simulator.Memory()
    raws = [live_read(simulated_document(t, memory=memory))[0] for t in (T0, T0 + 10)]
    captured = [Raw({oracle.RESULTS: raw.text(oracle.RESULTS)}, raw.time, raw.wall_time) for raw in raws]
    assert oracle.RESULTS not in captured[0].documents and '"Q"' in captured[0].text(oracle.RESULTS)
    direct, replayed = points_between(*raws), points_between(*captured)
    assert len(direct.points) > 20
    assert sorted(map(to_line, replayed.points)) == sorted(map(to_line, direct.points))


def test_the_inventory_is_read_every_inventory_interval_and_the_counters_every_sample():
    workload = simulator.Workload(instances=1)
    memory = simulator.Memory()
    previous, inventory_reads, io_points = {}, [], 0
    for step in range(64):  # 10 s apart: 630 s
        t = T0 + 10 * step
        due = oracle.inventory_due(previous.values(), t, 600.0)
        if due:
            inventory_reads.append(step)
        outcome = compute({"oracle": simulator.read(workload, t, memory, inventory=due)}, {}, "h", previous)
        previous = outcome.samples
        io_points += sum(1 for p in outcome.points if p.measurement == "dnfsmon_dnfs_io")
        servers = [p for p in outcome.points if p.measurement == "dnfsmon_dnfs_server"]
        assert bool(servers) == due  # a server point from each inventory read, the first included
    assert inventory_reads == [0, 60]
    assert io_points == 63


def test_the_inventory_cadence_holds_across_cron_runs(tmp_path):
    """Two cron-style runs a few seconds apart: the inventory is read once, by the first."""
    from dnfsmon.store import Store

    config = write_config(
        tmp_path, host={"sources": ["nic"]}, simulator={"enabled": True, "instances": 1, "scope": "instance"}
    )
    for _ in range(2):
        result = subprocess.run(
            [*DNFSMON, "--config", str(config), "collect", "--count", "2", "--interval", "0.5"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
    points = list(Store(str(tmp_path / "store"), 10**9).points())
    servers = [p for p in points if p.measurement == "dnfsmon_dnfs_server"]
    assert len(servers) == 2  # the two filers, from the first sample of the first run only
    assert len({p.time_ns for p in points if p.measurement == "dnfsmon_dnfs_io"}) == 3  # every later sample


def test_live_document_is_handed_over_decoded_and_captured_as_its_json_text(tmp_path):
    """The reader hands the source its document without a JSON round trip (Raw.documents), and a
    capture still writes the JSON text readers used to hand over, byte for byte: `dnfsmon diff` of
    the capture gives the live figures."""
    from dnfsmon import capture

    workload = simulator.Workload()
    raws = [simulator.read(workload, T0 + dt) for dt in (0.0, 10.0)]
    document = raws[1].documents[oracle.RESULTS]
    assert oracle.RESULTS not in raws[1].files and oracle.load(raws[1]) is document
    live = compute({"oracle": raws[1]}, {}, "h", compute({"oracle": raws[0]}, {}, "h", {}).samples)
    for number, raw in enumerate(raws):
        capture.write(str(tmp_path / str(number)), "h", {"oracle": raw}, {})
    assert (tmp_path / "1" / oracle.RESULTS).read_text() == json.dumps(document)
    manifest = json.loads((tmp_path / "1" / "capture.json").read_text())
    assert manifest["sources"]["oracle"]["files"] == [oracle.RESULTS]
    captured = [capture.read(str(tmp_path / str(number)))[1]["oracle"] for number in (0, 1)]
    replayed = compute({"oracle": captured[1]}, {}, "h", compute({"oracle": captured[0]}, {}, "h", {}).samples)
    assert replayed.points == live.points and replayed.points


def test_inventory_only_parse_gives_the_inventory_samples_of_the_full_parse():
    """InventoryCadence parses a read's inventory queries only; its samples are the full parse's."""
    raw = simulator.read(simulator.Workload(), T0)
    inventory = [s for s in oracle.samples(raw, "")[0] if s.measurement in oracle.INVENTORY_MEASUREMENTS]
    assert inventory and oracle.samples(raw, "", inventory_only=True)[0][1:] == inventory


def test_rows_are_checked_value_by_value_only_when_decoded_from_a_capture():
    """A capture's text may be damaged: a row holding a non-scalar is reported and left out. The reader's
    own document (oracle_db.split, the simulator) holds scalars by construction and gives the same samples."""
    raw = simulator.read(simulator.Workload(instances=1, processes=3), T0)
    text = raw.text(oracle.RESULTS)
    assert oracle.samples(raw, "h") == oracle.samples(Raw({oracle.RESULTS: text}, raw.time, raw.wall_time), "h")
    damaged = json.loads(text)
    damaged["results"]["dnfs_stats"]["rows"][0][1] = [7]
    found, problems = oracle.samples(Raw({oracle.RESULTS: json.dumps(damaged)}, raw.time, raw.wall_time), "h")
    assert [str(p) for p in problems] == [
        f"{oracle.RESULTS}: row 1 of dnfs_stats does not fit its columns "
        f"{damaged['results']['dnfs_stats']['columns']}: {damaged['results']['dnfs_stats']['rows'][0]}"
    ]
    processes = process_samples(found)
    assert len(processes) == len(damaged["results"]["dnfs_stats"]["rows"]) - 1


def test_a_process_counts_its_other_operations_as_one_sum():
    """A process's other NFS operations (oracle_facts.OTHER_OPS) are summed in the statement, as one
    column (oracle.OTHER_OPS_COUNTER), rather than each sent as text and summed per row here (bench:
    4 x 2000 processes); other_ops_per_s is that sum's rate. An operation's NULL makes the sum NULL
    (SQL Language Reference, "Nulls": an arithmetic expression with a null is null), so its instance
    publishes no other_ops_per_s rather than a sum with a part missing; its reads still count.
    The simulator's processes do GETATTR and COMMIT calls only: the sum's truth is theirs."""
    workload = simulator.Workload(instances=1, processes=5)
    memory = simulator.Memory()
    documents = [simulated_document(t, workload, memory) for t in (T0, T0 + 10)]
    model = simulator.Model(workload)

    def others(t):
        """PNUM -> the model's GETATTR + COMMIT calls of the process at time t."""
        counts = [model.process_counts(1, slot, t) for slot in range(workload.processes)]
        return {20 + slot: c["NFS_GETATTR"] + c["NFS_COMMIT"] for slot, c in enumerate(counts)}

    stats = documents[1]["results"]["dnfs_stats"]
    columns = stats["columns"]
    assert not set(oracle_facts.OTHER_OPS) - {"NFS_GETATTR", "NFS_COMMIT"} & set(columns)
    found, _ = oracle.samples(live_read(documents[1])[0], "h")
    process = process_samples(found)[0]
    assert set(process.counters) == {*oracle.PROCESS_COUNTERS, oracle.OTHER_OPS_COUNTER}
    assert process.counters[oracle.OTHER_OPS_COUNTER] == others(T0 + 10)[int(dict(process.key)["pnum"])] > 0
    outcome = points_between(*[live_read(d)[0] for d in documents])
    (io,) = [p.fields for p in outcome.points if p.measurement == "dnfsmon_dnfs_io"]
    after, before = others(T0 + 10), others(T0)
    assert io["other_ops_per_s"] == pytest.approx(sum(after[p] - before[p] for p in before) / 10, rel=1e-12)
    stats["rows"][0][columns.index(oracle.OTHER_OPS_COUNTER)] = None
    outcome = points_between(*[live_read(d)[0] for d in documents])
    (io,) = [p.fields for p in outcome.points if p.measurement == "dnfsmon_dnfs_io"]
    assert "other_ops_per_s" not in io and io["read_iops"] > 0


def test_a_capture_with_each_other_operation_as_a_column_still_sums_them():
    """A capture recorded before the statement summed the other operations has one column per
    operation: the parser sums them as it used to, so `dnfsmon diff` of such captures is unchanged."""
    workload = simulator.Workload(instances=1, processes=5)
    documents = [simulated_document(t, workload) for t in (T0, T0 + 10)]
    live = points_between(*[live_read(d)[0] for d in documents]).points
    [summed] = [p.fields for p in live if p.measurement == "dnfsmon_dnfs_io"]
    for document in documents:
        stats = document["results"]["dnfs_stats"]
        at = stats["columns"].index(oracle.OTHER_OPS_COUNTER)
        # NFS_GETATTR and NFS_COMMIT are columns already: the other operations, at zero.
        added = [op for op in oracle_facts.OTHER_OPS if op not in stats["columns"]]
        stats["columns"] = [c for c in stats["columns"] if c != oracle.OTHER_OPS_COUNTER] + added
        stats["rows"] = [[*row[:at], *row[at + 1 :], *[0] * len(added)] for row in stats["rows"]]
    recorded = points_between(*[oracle_db.to_raw(d, 0.0) for d in documents]).points
    [per_column] = [p.fields for p in recorded if p.measurement == "dnfsmon_dnfs_io"]
    assert per_column["other_ops_per_s"] == summed["other_ops_per_s"] > 0


def without_other_ops(table):
    """The columns of an instance's I/O sample without the other operations' sum."""
    return {name: list(values) for name, values in table.columns.items() if name != oracle.OTHER_OPS_COUNTER}


def test_a_process_whose_other_operations_have_no_delta_is_not_ranked():
    """A top process's ops_per_s counts its other operations: where they have no delta (a NULL
    in its row, or the previous sample from a release that kept them per operation) the process
    is left out of that interval's ranking rather than ranked with a part of its work missing."""
    workload = simulator.Workload(instances=1, processes=5)
    memory = simulator.Memory()
    documents = [simulated_document(t, workload, memory) for t in (T0, T0 + 10)]
    stats = documents[1]["results"]["dnfs_stats"]
    columns = stats["columns"]

    def ranked(outcome):
        return {p.fields["pnum"] for p in outcome.points if p.measurement == oracle.TOP_PROCESS_MEASUREMENT}

    everyone = ranked(points_between(*[live_read(d)[0] for d in documents]))
    nulled = stats["rows"][0][columns.index("PNUM")]
    assert nulled in everyone
    stats["rows"][0][columns.index(oracle.OTHER_OPS_COUNTER)] = None
    assert ranked(points_between(*[live_read(d)[0] for d in documents])) == everyone - {nulled}
    # The state an older release left: each process's other operations as separate counters.
    first = compute({"oracle": live_read(documents[0])[0]}, {}, "h", {})
    older = {
        key: rates.Members.from_json(
            {**s.to_json(), "members": {**s.to_json()["members"], "columns": without_other_ops(s)}}
        )
        if type(s) is rates.Members
        else s
        for key, s in first.samples.items()
    }
    upgraded = compute({"oracle": live_read(documents[1])[0]}, {}, "h", older)
    assert ranked(upgraded) == set()
    (io,) = [p.fields for p in upgraded.points if p.measurement == oracle.IO_MEASUREMENT]
    assert "other_ops_per_s" not in io and io["read_iops"] > 0


def test_a_session_is_set_to_the_gregorian_calendar_before_any_query(monkeypatch):
    """The database time is read as TO_CHAR text with Gregorian masks: the session's calendar is
    set right after connecting (and after any logon trigger), before discovery or a read."""
    connection = FakeConnection(simulated_document(T0), facts_available("19c"))
    fake = types.SimpleNamespace(connect=lambda **kwargs: connection, clientversion=lambda: (19, 0))
    monkeypatch.setitem(sys.modules, "oracledb", fake)
    monkeypatch.setenv("DNFSMON_TEST_PW", "x")
    database = oracle_db.Database(settings())
    database.connect()
    assert connection.executed[0] == oracle_db.SESSION_SQL and "all_tab_columns" in connection.executed[1]
    assert connection.call_timeout > 0 and not database.missing
    assert "NLS_CALENDAR = 'GREGORIAN'" in oracle_db.SESSION_SQL


def test_split_gives_each_query_the_values_the_driver_returned_in_its_columns():
    """split() hands each query its columns' values as the driver returned them (numbers as the
    NUMBERs were fetched: an int stays exact past 2**53, a fraction stays a float, a NULL None), and
    the clock's text as epoch seconds; a query's rows returned in several runs are all kept, in order."""
    stats = oracle.Query("dnfs_stats", "", ("INST_ID", "SPID", "NFS_READ", "NFS_READBYTES", "DB_TIME"), ())
    other = oracle.Query("system_event", "", ("INST_ID", "EVENT", "TIME_WAITED_MICRO"), ())
    combined = oracle.combine("counters", [stats, other])
    moment = "2026-11-24T22:40:25.123456"
    epoch = datetime.datetime(2026, 11, 24, 22, 40, 25, 123456, datetime.timezone.utc).timestamp()
    recorded = {
        "dnfs_stats": {
            "columns": list(stats.columns),
            "rows": [[1, "4711", 12, 2**63 + 5, epoch], [2, None, None, 1.5, epoch], [3, "9", 0, 7, epoch]],
        },
        "system_event": {
            "columns": list(other.columns),
            "rows": [[1, "db file sequential read", 0.25], [2, "log file sync", 10**40]],
        },
    }
    _, rows = driver_answer(combined.sql, recorded)
    assert [type(v) for v in rows[0]].count(str) == 3  # the name, SPID and the clock's text
    assert moment in rows[0]
    # UNION ALL names no order of its branches' rows: one query's rows before and after the other's.
    rows = [rows[1], rows[3], rows[0], rows[4], rows[2]]
    result = oracle.split(combined, rows)

    def read(name):  # each row's values of the query's columns, by name, with the clock in seconds
        columns, wanted = result[name]["columns"], recorded[name]["columns"]
        picked = [[row[columns.index(c)] for c in wanted] for row in result[name]["rows"]]
        return [[oracle.clock_seconds(v) if c == "DB_TIME" else v for c, v in zip(wanted, row)] for row in picked]

    assert read("dnfs_stats") == [recorded["dnfs_stats"]["rows"][i] for i in (1, 0, 2)]
    assert read("system_event") == recorded["system_event"]["rows"]
    assert read("dnfs_stats")[1][3] == 2**63 + 5 and type(read("dnfs_stats")[0][3]) is float
    # Each query's columns name every position of the statement's rows (its name, the slots it does not use).
    assert result["system_event"]["columns"][0] == "Q" and len(set(result["system_event"]["columns"])) == len(rows[0])


# Result columns the agent's own SQL computes (sources/oracle/queries.py), not read from a view,
# with the datatype of the expression (SQL Language Reference, "Functions": COUNT and SUM of NUMBERs
# return NUMBER, TO_NUMBER a NUMBER, SYSTIMESTAMP a TIMESTAMP WITH TIME ZONE that SYS_EXTRACT_UTC
# makes a TIMESTAMP).
AGENT_EXPRESSIONS = {
    "DB_TIME": "TIMESTAMP",  # SYS_EXTRACT_UTC(SYSTIMESTAMP)
    "CLOCK_INSTANCE": "NUMBER",  # TO_NUMBER(SYS_CONTEXT('USERENV', 'INSTANCE'))
    "INST_ID": "NUMBER",  # scope "instance" reading a V$ view: the same TO_NUMBER (a GV$ view has its own)
    "NFS_OTHER_OPS": "NUMBER",  # a sum of V$DNFS_STATS NUMBER columns
    "PROCESS_SENDS": "NUMBER",  # SUM(sends) OVER (...)
    "PROCESS_CHANNELS": "NUMBER",  # COUNT(*) OVER (...)
    "CHANNELS": "NUMBER",  # COUNT(*) OVER (...)
    "FILES": "NUMBER",  # COUNT(*)
    "BYTES": "NUMBER",  # SUM(filesize)
}


def source_datatype(query, column, release):
    """The datatype of a query's result column: the Reference's, in the views the query reads, or
    that of the agent's own expression when no view it reads has the column."""
    found = {
        oracle_facts.datatype(view, column, release)
        for view in query.views
        if column in oracle_facts.columns(view, release)
    }
    assert len(found) <= 1, (release, query.name, column, found)  # one name, one datatype in a query's views
    if found:
        return found.pop()
    assert column in AGENT_EXPRESSIONS, (release, query.name, column)  # from no view read, nor computed
    assert re.search(rf"\bAS {column.lower()}\b", query.sql), (release, query.name, column)
    return AGENT_EXPRESSIONS[column]


@pytest.mark.parametrize("release", list(oracle_facts.RELEASES))
def test_the_combined_statements_send_each_column_as_the_reference_types_it(release):
    """Each column travels as its datatype in the Oracle Database Reference for the release
    (oracle_facts.NOT_NUMBER), in the views its query reads: a NUMBER as an unconstrained NUMBER,
    which the driver turns into an int in its compiled decoder (none as TO_CHAR text the agent would
    then convert value by value: some 240 000 a sample at 4 instances x 2000 processes, which cost
    more than the whole parse: bench/RESULTS.md); any other type through TO_CHAR, a DATE or a
    TIMESTAMP with its format (wire.ORACLE_FORMATS). Which columns are text is decided by name
    (wire.TEXT_COLUMNS): a text column cast to NUMBER would fail every combined statement with
    ORA-01722, or pass unnoticed while its values are digits (V$IOSTAT_FILE.FILETYPE_ID is a
    VARCHAR2 in 11.2 and a NUMBER from 12.1 on)."""
    for scope, mounted in itertools.product(oracle.SCOPES, (False, True)):
        queries = oracle.build_queries(facts_available(release), scope, mounted)
        for combined in [*oracle.read_groups(queries, inventory=True), *(oracle.combine(q.name, [q]) for q in queries)]:
            for branch in re.split(r" UNION ALL (?=SELECT ')", combined.sql):
                query = next(q for q in combined.queries if branch.startswith(f"SELECT '{q.name}' AS q,"))
                for column in query.columns:
                    lower, kind = column.lower(), source_datatype(query, column, release)
                    where = (release, scope, mounted, query.name, column, kind)
                    if kind == "NUMBER":
                        assert f"CAST(r.{lower} AS NUMBER) AS n" in branch and f"TO_CHAR(r.{lower}" not in branch, where
                    elif kind in ("DATE", "TIMESTAMP"):
                        assert f"TO_CHAR(r.{lower}, '{oracle.wire.ORACLE_FORMATS[column]}')" in branch, where
                    else:
                        assert f"TO_CHAR(r.{lower})" in branch and f"CAST(r.{lower} " not in branch, where


def test_the_datatype_facts_name_columns_of_the_views_the_agent_reads():
    """Every column the datatype facts list exists in the releases they give, for every view the
    agent reads, and every name wire.TEXT_COLUMNS sends as text is text in one of them (none left
    over). V$IOSTAT_FILE.FILETYPE_ID changed type: VARCHAR2(25) in the 11.2 Reference, NUMBER in 12.1's."""
    assert set(oracle_facts.NOT_NUMBER) == {oracle_facts.base_view(v) for v in oracle_facts.VIEWS_READ}
    text = set()
    for view, facts in oracle_facts.NOT_NUMBER.items():
        for column, kind, first, last in facts:
            assert kind != "NUMBER" and column in {c for c, *_ in oracle_facts.VIEWS[view]}, (view, column)
            for release in oracle_facts.RELEASES:
                if oracle_facts.in_release(first, last, release):
                    assert column in oracle_facts.columns(view, release), (view, column, release)
                    text.add(column)
    assert set(oracle.wire.TEXT_COLUMNS) <= text
    assert oracle_facts.datatype("GV$IOSTAT_FILE", "FILETYPE_ID", "11.2.0.4") == "VARCHAR2"
    later = list(oracle_facts.RELEASES)[1:]
    assert {oracle_facts.datatype("V$IOSTAT_FILE", "FILETYPE_ID", r) for r in later} == {"NUMBER"}
    assert oracle_facts.datatype("GV$IOSTAT_FILE", "INST_ID", "19c") == "NUMBER"
    with pytest.raises(KeyError):
        oracle_facts.datatype("V$DNFS_SERVERS", "NFSVERSION", "11.2.0.4")  # not in 11.2


def io_samples(document):
    raw = Raw({}, T0, T0, documents={oracle.RESULTS: document})
    return process_samples(oracle.samples(raw, "h")[0])


def test_an_instance_s_process_rows_are_placed_as_row_by_row_placing_would_place_them():
    """_io places an instance's V$DNFS_STATS rows a run at a time (rows of one INST_ID and
    CLOCK_INSTANCE together), not row by row. The outcome is what placing each row gives: rows of
    an instance in two runs are all its processes, and a CLOCK_INSTANCE equal in value but of
    another type (True for 1, in a damaged capture) is another clock, which Context.place tells
    apart: that row is reported and left out, not placed with its run."""
    document = simulated_document(T0, simulator.Workload(instances=2, processes=6))
    stats = document["results"]["dnfs_stats"]
    inst_id, clock = stats["columns"].index("INST_ID"), stats["columns"].index("CLOCK_INSTANCE")
    reference = sorted(s.state_key for s in io_samples(document))
    # An instance-2 row moved between instance 1's: instance 1 comes in two runs.
    rows = stats["rows"]
    second = next(n for n, row in enumerate(rows) if row[inst_id] == 2)
    rows.insert(1, rows.pop(second))
    assert [row[inst_id] for row in rows[:3]] == [1, 2, 1]
    assert sorted(s.state_key for s in io_samples(document)) == reference
    # Instance 1's third row read under a clock that is True, not 1.
    assert rows[2][clock] == 1 and rows[2][inst_id] == 1
    rows[2][clock] = True
    raw = Raw({}, T0, T0, documents={oracle.RESULTS: document})
    found, problems = oracle.samples(raw, "h")
    assert any("under two clocks" in str(p) for p in problems)
    assert len(process_samples(found)) == len(reference) - 1


def test_process_counters_are_taken_row_by_row_only_when_a_column_holds_other_than_counters(monkeypatch):
    """A reading whose counter columns are all plain counters gives each process its row's values
    without a check per value; one value that is not a counter (negative, NULL, a float) sends the
    reading through _counters row by row, which leaves out that value alone (as before)."""
    document = simulated_document(T0, simulator.Workload(pdbs=2))
    reference = {s.state_key: dict(s.counters) for s in io_samples(document)}
    checked = []
    per_row = oracle.parsers._counters
    monkeypatch.setattr(oracle.parsers, "_counters", lambda *a: checked.append(a) or per_row(*a))
    assert {s.state_key: dict(s.counters) for s in io_samples(document)} == reference
    assert checked == []
    stats = document["results"]["dnfs_stats"]
    read_at, write_at = stats["columns"].index("NFS_READ"), stats["columns"].index("NFS_WRITE")
    stats["rows"][0][read_at], stats["rows"][1][write_at], stats["rows"][2][read_at] = -1, None, 7.0
    damaged = {s.state_key: dict(s.counters) for s in io_samples(document)}
    # Row by row for the instance whose columns hold them only (the three rows are instance 1's).
    inst_id = stats["columns"].index("INST_ID")
    assert {row[inst_id] for row in stats["rows"][:3]} == {1}
    assert len(checked) == sum(1 for row in stats["rows"] if row[inst_id] == 1) < len(stats["rows"])
    first, second, third = (next(k for k in reference if k.endswith(f",pnum={row[1]}")) for row in stats["rows"][:3])
    assert damaged[first] == {k: v for k, v in reference[first].items() if k != "NFS_READ"}
    assert damaged[second] == {k: v for k, v in reference[second].items() if k != "NFS_WRITE"}
    assert damaged[third] == {**reference[third], "NFS_READ": 7}
    assert {k: v for k, v in damaged.items() if k not in (first, second, third)} == {
        k: v for k, v in reference.items() if k not in (first, second, third)
    }


def test_a_process_sample_carries_the_state_key_its_key_makes():
    """A process's own Sample (rates.Members.member) has the key a sample per process had, in a CDB
    (pdb tags) and a standby (role tags) too: its state key is the text Sample.state_key makes."""
    workload = simulator.Workload(pdbs=2, database_role="PHYSICAL STANDBY", open_mode="READ ONLY WITH APPLY")
    found = io_samples(simulated_document(T0, workload))
    assert (
        len(found) == 80
        and any(("pdb", "3") in s.key for s in found)
        and all(("role", "PHYSICAL STANDBY") in s.key for s in found)
    )
    for sample in found:
        assert sample.state_key == rates.Sample(sample.measurement, sample.key, 0.0, 0.0).state_key


# --- logon refusals and the run's time budget: a fake listener the real thin client talks to ---


def listener_config(tmp_path, dsn, **oracle_options):
    (tmp_path / "pw").write_text("secret-pw\n")
    (tmp_path / "pw").chmod(0o600)
    options = {"enabled": True, "target": "ORCL", "dsn": dsn, "user": "dnfsmon", "password_file": "pw"}
    return write_config(
        tmp_path, agent={"host": "dbhost"}, host={"sources": ["nic"]}, oracle={**options, **oracle_options}
    )


def collect_run(config, count, interval, timeout=150):
    return subprocess.run(
        [*DNFSMON, "--config", str(config), "collect", "--count", str(count), "--interval", str(interval)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def stored(tmp_path, measurement):
    from dnfsmon.store import Store

    return [p for p in Store(str(tmp_path / "store"), 10**9).points() if p.measurement == measurement]


@pytest.mark.slow
@pytest.mark.parametrize("code", [28000, 28001, 1045])
def test_a_refused_logon_is_not_tried_again_in_the_run_nor_in_the_next_runs_until_the_back_off_ends(tmp_path, code):
    """dba-review A1: after ORA-01017 the agent logged on again every sample (6 a cron run), which
    locks the DEFAULT profile's account (10 failures) within two minutes."""
    from fake_tns import FakeListener

    listener = FakeListener("refuse", error_code=code)
    try:
        config = listener_config(tmp_path, listener.dsn)
        first = collect_run(config, 6, 0.2)
        assert first.returncode == 3, first.stderr
        assert listener.accepted == 1  # one logon attempt in the whole run
        statuses = stored(tmp_path, "dnfsmon_oracle_status")
        assert len(statuses) == 6 and all(f"ORA-{code:05d}" in p.fields["error"] for p in statuses)
        assert "no further logon in this run" in statuses[-1].fields["error"]
        assert oracle_db.LOGON_REFUSALS[f"ORA-{code:05d}"].split(":")[0].format(user="DNFSMON") in first.stderr
        # The next cron run waits: no logon at all, and the status says why, until when, and what to do.
        second = collect_run(config, 3, 0.2)
        assert second.returncode == 3 and listener.accepted == 1
        later = stored(tmp_path, "dnfsmon_oracle_status")[6:]
        assert len(later) == 3
        assert all("logon refused at" in p.fields["error"] and "no logon before" in p.fields["error"] for p in later)
        assert all(f"ORA-{code:05d}" in p.fields["error"] and "back-off 5 min" in p.fields["error"] for p in later)
        assert len(stored(tmp_path, "dnfsmon_agent")) == 9  # every host sample taken
        assert "secret-pw" not in first.stderr + second.stderr
        # A new password file is the fix for a wrong password: the next run tries it at once (once).
        (tmp_path / "pw").unlink()
        (tmp_path / "pw").write_text("new-pw\n")
        (tmp_path / "pw").chmod(0o600)
        third = collect_run(config, 3, 0.2)
        assert third.returncode == 3 and listener.accepted == 2
        assert "back-off 10 min after 2 refusals" in stored(tmp_path, "dnfsmon_oracle_status")[-1].fields["error"]
    finally:
        listener.close()


def logon_hold_file(tmp_path):
    """Where the agent keeps target ORCL's logon hold (listener_config's state directory)."""
    return pathlib.Path(StateFile(str(tmp_path / "state"), "oracle:ORCL:logon").path)


def age_the_hold(tmp_path, hours):
    """Move the stored refusal `hours` into the past, as if the runs in between had happened."""
    path = logon_hold_file(tmp_path)
    document = json.loads(path.read_text())
    for key in ("refused_at", "not_before"):
        document["data"][key] -= hours * 3600
    path.write_text(json.dumps(document))
    return path


@pytest.mark.slow
@pytest.mark.parametrize(
    "code, shown",
    # python-oracledb raises ORA-01005 as DPY-4001 (its errors.py, ERR_ORACLE_ERROR_XREF).
    [(1017, "ORA-01017"), (1005, "DPY-4001"), (1040, "ORA-01040")],
)
def test_wrong_credentials_are_never_tried_again_until_they_change_or_the_hold_is_removed(tmp_path, code, shown):
    """dba-review of the back-off: each wrong-password logon counts toward FAILED_LOGIN_ATTEMPTS and
    only a successful logon resets the count (Security Guide, "Configuring Password Protection"),
    so a doubling back-off only delayed the lock: four RAC nodes' agents retrying at 0, 5 and 15 min
    made 12 failures. After wrong credentials no timed retry at all."""
    from fake_tns import FakeListener

    listener = FakeListener("refuse", error_code=code)
    try:
        config = listener_config(tmp_path, listener.dsn)
        assert collect_run(config, 3, 0.2).returncode == 3 and listener.accepted == 1
        # A day later (past any back-off's cap), the same credentials are still not tried.
        state_file = age_the_hold(tmp_path, 24)
        later = collect_run(config, 2, 0.2)
        assert later.returncode == 3 and listener.accepted == 1, later.stderr
        held = stored(tmp_path, "dnfsmon_oracle_status")[-1].fields["error"]
        assert shown in held and "no logon until the password file, user or dsn changes" in held
        assert "FAILED_LOGIN_ATTEMPTS" in held and f"rm {state_file}" in held
        # `dnfsmon check` says the same (and tries its one logon: the operator's own act).
        check = subprocess.run([*DNFSMON, "--config", str(config), "check"], capture_output=True, text=True, timeout=60)
        assert "no logon until the password file, user or dsn changes" in check.stdout and listener.accepted == 2
        # A new password file is tried at the next run, once; wrong again, it holds again.
        (tmp_path / "pw").unlink()
        (tmp_path / "pw").write_text("new-pw\n")
        (tmp_path / "pw").chmod(0o600)
        assert collect_run(config, 3, 0.2).returncode == 3 and listener.accepted == 3
        age_the_hold(tmp_path, 24)
        assert collect_run(config, 2, 0.2).returncode == 3 and listener.accepted == 3
        # The operator removes the hold (the fix was made in the database): tried at the next run.
        state_file.unlink()
        assert collect_run(config, 2, 0.2).returncode == 3 and listener.accepted == 4
    finally:
        listener.close()


def test_the_logon_back_off_doubles_to_its_cap_and_ends_after_a_logon():
    backoff = oracle_db.LogonBackoff()
    waits = []
    for n in range(10):
        backoff.refused("ORA-28000", "ORA-28000: x", 1000.0 * n, "u@d")
        waits.append(backoff.not_before - backoff.refused_at)
        assert backoff.holds(1000.0 * n + waits[-1] - 1, "u@d")
        assert not backoff.holds(1000.0 * n + waits[-1], "u@d")
        assert not backoff.holds(1000.0 * n, "u@d file 2:7:9")  # another password file: tried at once
    assert waits == [300, 600, 1200, 2400, 4800, 9600, 14400, 14400, 14400, 14400]
    assert oracle_db.LogonBackoff.from_json(backoff.to_json()) == backoff
    assert oracle_db.LogonBackoff.from_json({"refusals": "x"}) == oracle_db.LogonBackoff()
    wrong = oracle_db.LogonBackoff()
    wrong.refused("ORA-01017", "ORA-01017: x", 1000.0, "u@d")
    assert wrong.holds(1000.0 + 365 * 86400, "u@d") and not wrong.holds(1000.0, "u@d file 2:7:9")
    assert oracle_db.LogonBackoff.from_json(wrong.to_json()) == wrong
    older = {k: v for k, v in wrong.to_json().items() if k != "code"}  # written before the code was kept
    assert oracle_db.LogonBackoff.from_json(older).holds(1000.0 + 365 * 86400, "u@d")


@pytest.mark.slow
@pytest.mark.parametrize("behaviour", ["backlog", "slow"])
def test_a_connect_that_times_out_costs_one_deadline_per_run_and_no_host_sample(tmp_path, behaviour):
    """reliability review H1: SYNs dropped (a full listen queue here) or a listener that answers
    only after 10 s gave DPY-6005 at call_timeout_s each sample, and a cron run of 6 samples
    9.5 s apart lasted 61-64 s: the next minute's run found the lock held and lost its samples.
    Run as cron runs it, with the default call_timeout_s (10 s)."""
    import time

    from fake_tns import FakeListener

    listener = FakeListener(behaviour, delay_s=10.5)
    try:
        config = listener_config(tmp_path, listener.dsn)
        started = time.monotonic()
        result = collect_run(config, 6, 9.5)
        elapsed = time.monotonic() - started
    finally:
        listener.close()
    assert result.returncode == 3, result.stderr
    assert elapsed < 60, elapsed  # inside its minute: the next run finds the lock free
    assert len(stored(tmp_path, "dnfsmon_agent")) == 6  # every host sample
    assert len({p.time_ns for p in stored(tmp_path, "dnfsmon_nic")}) == 5  # samples 2-6 (1 = baseline)
    statuses = stored(tmp_path, "dnfsmon_oracle_status")
    assert len(statuses) == 6 and not any(p.fields["up"] for p in statuses)
    assert "not asked again in this run" in statuses[-1].fields["error"]
    if behaviour == "slow":
        assert listener.accepted == 1  # the first connect used the run's budget


@pytest.mark.slow
def test_check_says_the_agent_is_backing_off_and_why_then_tries_one_logon(tmp_path):
    from fake_tns import FakeListener

    listener = FakeListener("refuse", error_code=28000)
    try:
        config = listener_config(tmp_path, listener.dsn)
        assert collect_run(config, 2, 0.2).returncode == 3
        result = subprocess.run(
            [*DNFSMON, "--config", str(config), "check"], capture_output=True, text=True, timeout=60
        )
    finally:
        listener.close()
    assert result.returncode == 3, result.stdout
    lines = result.stdout.splitlines()
    waiting = next(line for line in lines if line.startswith("[warn] database ORCL logon"))
    assert "the agent is waiting: logon refused at" in waiting and "no logon before" in waiting
    assert "ALTER USER DNFSMON ACCOUNT UNLOCK" in waiting and "to try at the next run, rm " in waiting
    failed = next(line for line in lines if line.startswith("[FAIL] database ORCL:"))
    assert "ORA-28000" in failed and "ACCOUNT UNLOCK" in failed
    assert listener.accepted == 2  # the run's one logon, and the check's


def connected(monkeypatch, connection):
    """Database.connect() through a fake python-oracledb module handing out `connection`."""
    fake = types.SimpleNamespace(connect=lambda **kwargs: connection, clientversion=lambda: (19, 0))
    monkeypatch.setitem(sys.modules, "oracledb", fake)
    monkeypatch.setenv("DNFSMON_TEST_PW", "x")
    database = oracle_db.Database(settings())
    raw = oracle_db.read_once(database, T0)
    (status, *_), _ = oracle.samples(raw, "h")
    return database, status


@pytest.mark.parametrize(
    "container, problem",
    [
        (("YES", "CDB$ROOT", 3), ""),
        (("YES", "CDB$ROOT", 1), "DNFSMON sees only the root's rows (CONTAINER_DATA is not ALL)"),
        (("YES", "CDB$ROOT", None), "ALTER USER DNFSMON SET CONTAINER_DATA = ALL CONTAINER = CURRENT"),
        (("YES", "SALESPDB", 3), "connected to the container SALESPDB, not the CDB root"),
        (("NO", None, 0), ""),
    ],
)
def test_a_session_that_does_not_see_the_whole_cdb_is_reported_at_connect(monkeypatch, container, problem):
    """dba-review A5: a PDB service, or a user without CONTAINER_DATA, gave partial IOPS and no error."""
    connection = FakeConnection(simulated_document(T0), facts_available("19c"))
    connection.container = container
    database, status = connected(monkeypatch, connection)
    assert oracle_db.container_sql("V$DATAFILE") in connection.executed  # scope "instance" reads V$ views
    assert problem in database.container and bool(database.container) == bool(problem)
    if problem:
        assert problem in status.gauges["error"] and status.gauges["up"] is True  # what it could read is kept
    else:
        assert "error" not in status.gauges


def test_a_view_without_container_data_fails_the_check_though_the_file_list_sees_every_container(tmp_path, monkeypatch):
    """dba-review A5 (F3): CONTAINER_DATA is set per view; only V$DATAFILE was probed.

    A user with CONTAINER_DATA=ALL for V$DATAFILE alone passed the check, and V$DNFS_STATS gave the
    root's processes only: IOPS low with no error. Each view read is now looked up in ALL_VIEWS and
    DBA_CONTAINER_DATA (Oracle Database Reference), and the check fails naming the views and the fix.
    """
    from dnfsmon import check

    connection = FakeConnection(simulated_document(T0), facts_available("19c"))
    connection.container = ("YES", "CDB$ROOT", 3)  # the file list sees PDB$SEED and the PDBs
    connection.root_only = ["V_$DNFS_STATS", "V_$DNFS_CHANNELS"]
    database, status = connected(monkeypatch, connection)
    sent = next(sql for sql in connection.executed if "dba_container_data" in sql)
    for view in oracle.build_queries(database.available, "instance"):
        for name in view.views:
            assert "'" + oracle_facts.grant_name(name)[4:] + "'" in sent  # every view the agent reads
    assert "SYS.V_$DNFS_CHANNELS, SYS.V_$DNFS_STATS" in database.container
    assert "SET CONTAINER_DATA = ALL FOR <view> CONTAINER = CURRENT" in database.container
    assert database.container in status.gauges["error"]
    config = parse(
        {
            "oracle": {"enabled": True, "dsn": "db1/CDB", "user": "dnfsmon", "password_env": "DNFSMON_TEST_PW"},
            "agent": {"state_dir": str(tmp_path)},
        },
        None,
    )
    found = check.check_database(config)
    assert [i.status for i in found] == [check.FAIL] and found[0].exit_code == 3, [i.line() for i in found]
    assert "SYS.V_$DNFS_STATS" in found[0].line() and "create_monitor_user" in found[0].line()
    for release in ("12.1.0.2", "19c"):
        assert violations(sent, release) == []


def test_the_container_check_says_what_it_could_not_check(monkeypatch):
    """F3: without V$DATAFILE (or DBA_CONTAINER_DATA) the check was skipped with nothing said."""
    connection = FakeConnection(simulated_document(T0), {**facts_available("19c")})
    connection.container = ("YES", "CDB$ROOT", 3)
    connection.root_only = OracleError("ORA-00942", "table or view does not exist")
    database, status = connected(monkeypatch, connection)
    assert database.container == "" and "GRANT SELECT ON SYS.DBA_CONTAINER_DATA" in database.notes["container"]
    assert "GRANT SELECT ON SYS.DBA_CONTAINER_DATA" in status.gauges["warning"]
    no_files = {v: c for v, c in facts_available("19c").items() if v not in ("V$DATAFILE", "GV$DATAFILE")}
    connection = FakeConnection(simulated_document(T0), no_files)
    database, status = connected(monkeypatch, connection)
    assert "not checked" in database.notes["container"] and "SYS.V_$DATAFILE" in database.notes["container"]
    # Only the V$ views granted (scope "instance"): the file list is read from V$DATAFILE, not skipped.
    only_v = {v: c for v, c in facts_available("19c").items() if not v.startswith("GV$")}
    connection = FakeConnection(simulated_document(T0), only_v)
    connection.container = ("YES", "CDB$ROOT", 1)
    database, _ = connected(monkeypatch, connection)
    assert oracle_db.container_sql("V$DATAFILE") in connection.executed and "root's rows" in database.container


def test_the_container_check_is_not_sent_before_12_1():
    for view in ("V$DATAFILE", "GV$DATAFILE"):
        assert violations(oracle_db.container_sql(view), "19c") == []
    database = oracle_db.Database(settings())
    database.available = facts_available("11.2.0.4")
    database.check_container()  # no connection: it would fail if it sent anything
    assert database.container == ""


def test_check_fails_on_a_session_in_a_pdb_with_the_fix(tmp_path, monkeypatch):
    from dnfsmon import check

    connection = FakeConnection(simulated_document(T0), facts_available("19c"))
    connection.container = ("YES", "SALESPDB", 3)
    monkeypatch.setitem(sys.modules, "oracledb", types.SimpleNamespace(connect=lambda **kwargs: connection))
    monkeypatch.setattr(sys.modules["oracledb"], "clientversion", lambda: (19, 0), raising=False)
    monkeypatch.setenv("DNFSMON_TEST_PW", "x")
    config = parse(
        {
            "oracle": {"enabled": True, "dsn": "db1/SALES", "user": "dnfsmon", "password_env": "DNFSMON_TEST_PW"},
            "agent": {"state_dir": str(tmp_path)},
        },
        None,
    )
    found = check.check_database(config)
    assert [i.status for i in found] == [check.FAIL] and found[0].exit_code == 3
    assert "connected to the container SALESPDB" in found[0].line() and "CDB's own service" in found[0].line()


def test_an_event_first_waited_for_between_two_reads_counts_from_zero():
    """dba-review A6: an event with its first row in V$SYSTEM_EVENT (nobody had waited for it since
    the instance started) lost its first interval as a baseline; its counts are that interval's.
    Recorded rows through the live reader: 'log file sync' has no row on instance 1 at the first
    read, and 50 waits (of 2 ms each) at the second, 10 s later."""
    first, second = simulated_document(T0), simulated_document(T0 + 10)
    columns = first["results"]["system_event"]["columns"]
    event, inst_id = columns.index("EVENT"), columns.index("INST_ID")

    def is_new(row):
        return (row[event], row[inst_id]) == ("log file sync", 1)

    first["results"]["system_event"]["rows"] = [r for r in first["results"]["system_event"]["rows"] if not is_new(r)]
    for row in filter(is_new, second["results"]["system_event"]["rows"]):
        for column, value in (("TOTAL_WAITS", 50), ("TIME_WAITED_MICRO", 100_000)):
            row[columns.index(column)] = value
        for column, value in (("TOTAL_WAITS_FG", 40), ("TIME_WAITED_MICRO_FG", 80_000)):
            row[columns.index(column)] = value
    points = points_between(live_read(first)[0], live_read(second)[0]).points
    events = {
        dict(p.tags)["event"]: p.fields
        for p in points
        if p.measurement == "dnfsmon_oracle_event" and dict(p.tags)["instance"] == "simdb1"
    }
    assert events["log file sync"] == {
        "waits_per_s": 5.0,
        "avg_latency_us": 2000.0,
        "fg_waits_per_s": 4.0,
        "fg_avg_latency_us": 2000.0,
        "wait_time_us_per_s": 10_000.0,
    }
    assert set(events) == set(oracle_facts.AGENT_EVENTS)
    # The instance's first read: every event is new, none has a previous read to count from.
    alone = compute({"oracle": live_read(second)[0]}, {}, "h", {}).points
    assert not [p for p in alone if p.measurement == "dnfsmon_oracle_event"]


def test_the_session_is_named_dnfsmon_in_v_session_before_its_first_statement(monkeypatch):
    """dba-review A6: no MODULE or CLIENT_IDENTIFIER was set, so a DBA could not pick dnfsmon out in
    V$SESSION or ASH. Both are set before the first round trip that carries them."""
    connection = FakeConnection(simulated_document(T0), facts_available("19c"))
    connected(monkeypatch, connection)
    assert connection.executed[0] == oracle_db.SESSION_SQL
    assert connection.session_names == ("dnfsmon", "dnfsmon")


def test_a_mounted_standby_is_read_through_sysdg_with_the_columns_of_its_release(monkeypatch):
    """A mounted physical standby refuses every ordinary logon (ORA-01033) and has no data dictionary
    to discover columns in (ORA-01219). With [oracle] privilege = "sysdg" the agent logs on with the
    SYSDG administrative privilege, takes the views' columns from the release's facts, and reads the
    database layer: redo apply's dNFS I/O. Recorded rows through the live reader."""
    document = simulated_document(T0)
    document["results"]["database"]["rows"] = [
        [*row[:3], "PHYSICAL STANDBY", "MOUNTED", *row[5:]] for row in document["results"]["database"]["rows"]
    ]
    as_mounted_recording(document, simulator.Workload())
    connection = FakeConnection(document, facts_available("19c"))
    connection.mounted = True
    connection.container = ("YES", "CDB$ROOT", 3)
    logons = []

    def connect(**kwargs):
        logons.append(kwargs)
        return connection

    fake = types.SimpleNamespace(connect=connect, clientversion=lambda: (19, 0), AUTH_MODE_SYSDGD=32768)
    monkeypatch.setitem(sys.modules, "oracledb", fake)
    monkeypatch.setenv("DNFSMON_TEST_PW", "x")
    database = oracle_db.Database(settings(privilege="sysdg"))
    raw = oracle_db.read_once(database, T0)
    [logon] = logons
    assert logon["mode"] == 32768 and logon["user"] == "dnfsmon"
    assert database.available == facts_available("19c") and not database.missing
    found, problems = oracle.samples(raw, "h")
    status = next(s for s in found if s.measurement == oracle.STATUS_MEASUREMENT)
    assert "error" not in status.gauges and status.gauges["open_mode"] == "MOUNTED"
    assert oracle_db.MOUNTED_NOTE in status.gauges["warning"] and "not checked in MOUNT" in status.gauges["warning"]
    io = [s for s in found if s.measurement == oracle.IO_MEASUREMENT]
    assert io and all(dict(s.key)["role"] == "PHYSICAL STANDBY" for s in io) and not problems
    # No sort in MOUNT (ORA-01220): the channels are read as the view's plain rows.
    assert database.mounted and not any(" over (" in sql.lower() for sql in connection.executed)
    assert any(s.measurement == "dnfsmon_dnfs_channel" for s in found)
    # Without the privilege, a mounted database's ORA-01219 at discovery is what it was: the database
    # layer is not read, and the status says why and what to set.
    assert 'privilege = "sysdg"' in oracle_db.describe(
        OracleError("ORA-01033", "ORACLE initialization or shutdown in progress")
    )


def test_privilege_is_none_or_sysdg():
    from dnfsmon.config import ConfigError

    assert settings().privilege == "none" and settings(privilege="sysdg").privilege == "sysdg"
    with pytest.raises(ConfigError, match=r"\[oracle\] privilege = 'sysdba': must be one of none, sysdg"):
        settings(privilege="sysdba")


def test_sysdg_is_refused_for_a_release_before_12_1():
    """DBA review: SYSDG is one of the administrative privileges 12.1 added (Oracle Database Security
    Guide 12.1, "Administrative Privileges"; ODPI-C: DPI_MODE_AUTH_SYSDGD "requires Oracle Client
    12.1 or higher"). An 11.2.0.4 standby in MOUNT stays host-only; the config says so at load."""
    from dnfsmon.config import ConfigError

    with pytest.raises(ConfigError, match=r"privilege = 'sysdg'.*12\.1.*11\.2\.0\.4.*host layers"):
        settings(privilege="sysdg", release="11.2.0.4", mode="thick")
    assert settings(privilege="sysdg", release="12.1.0.2").privilege == "sysdg"
    assert "12.1 and later" in oracle_db.describe(OracleError("ORA-01033", "ORACLE initialization or shutdown"))


def test_a_sysdg_session_names_sysdg_in_its_grant_hints():
    """DBA review: a logon AS SYSDG runs as the user SYSDG, not as the configured user (Oracle Database
    Security Guide, "SYSDG Administrative Privilege for Oracle Data Guard Operations": the session's
    user is SYSDG), so SESSION_USER and every GRANT hint must name SYSDG."""
    assert oracle_db.Database(settings(privilege="sysdg")).grantee() == "SYSDG"
    assert oracle_db.Database(settings()).grantee() == "DNFSMON"


def test_an_instance_in_nomount_is_reported_with_the_host_still_monitored():
    """DBA review: SYSDG may log on to an instance started NOMOUNT (a static listener entry); its
    V$DATABASE then answers ORA-01507 "database not mounted" (Database Error Messages, ORA-01507)."""
    text = oracle_db.describe(OracleError("ORA-01507", "database not mounted"))
    assert "NOMOUNT" in text and "host layers monitored" in text


def test_a_logon_in_the_password_grace_period_is_a_warning_on_the_status_point(monkeypatch):
    """dba-review A2: ORA-28002 was not surfaced; the monitoring stopped when the password expired."""
    connection = FakeConnection(simulated_document(T0), facts_available("19c"))
    connection.warning = types.SimpleNamespace(
        full_code="ORA-28002", message="ORA-28002: the password will expire within 7 days"
    )
    _, status = connected(monkeypatch, connection)
    assert status.gauges["up"] is True and "error" not in status.gauges
    assert status.gauges["warning"].startswith("ORA-28002: the password will expire within 7 days (set a new password")


@pytest.mark.slow
@pytest.mark.parametrize(
    "code, meaning",
    [(1033, "database layer not readable in MOUNT"), (1035, "the instance is in restricted mode")],
)
def test_a_mounted_database_is_reported_and_the_host_still_monitored(tmp_path, code, meaning):
    """dba-review A3: a mounted physical standby answers ORA-01033, and nothing said what it meant;
    an instance in restricted mode (ORA-01035) said nothing either."""
    from fake_tns import FakeListener

    listener = FakeListener("refuse", error_code=code)
    try:
        result = collect_run(listener_config(tmp_path, listener.dsn), 2, 0.2)
    finally:
        listener.close()
    assert result.returncode == 3
    [*_, status] = stored(tmp_path, "dnfsmon_oracle_status")
    assert meaning in status.fields["error"] and "host layers monitored" in status.fields["error"]
    assert not (logon_hold_file(tmp_path)).exists()
    assert listener.accepted == 2  # not a refusal of the user: asked again, nothing to lock
    assert len(stored(tmp_path, "dnfsmon_agent")) == 2


@pytest.mark.slow
def test_several_databases_are_each_a_target_with_their_own_failures_and_back_off(tmp_path):
    """Consolidated hosts run several databases: [[oracle]] tables, one target each. One database
    unreachable and another refusing the logon cost neither each other's points nor the host's."""
    from fake_tns import FakeListener

    silent, refusing = FakeListener("backlog"), FakeListener("refuse", error_code=28000)
    (tmp_path / "pw").write_text("secret-pw\n")
    (tmp_path / "pw").chmod(0o600)
    config = write_config(tmp_path, agent={"host": "dbhost"}, host={"sources": ["nic"]})
    with open(config, "a") as f:
        for target, dsn in (("SALES", silent.dsn), ("HR", refusing.dsn)):
            f.write(f'[[oracle]]\nenabled = true\ntarget = "{target}"\ndsn = "{dsn}"\nuser = "dnfsmon"\n')
            f.write('password_file = "pw"\ncall_timeout_s = 2\n')
    try:
        result = collect_run(config, 3, 0.2)
        again = collect_run(config, 2, 0.2)
    finally:
        silent.close()
        refusing.close()
    assert result.returncode == 3 and again.returncode == 3, result.stderr
    statuses = stored(tmp_path, "dnfsmon_oracle_status")
    by_database = {}
    for point in statuses:
        by_database.setdefault(dict(point.tags)["database"], []).append(point.fields["error"])
    assert sorted(by_database) == ["HR", "SALES"] and all(len(v) == 5 for v in by_database.values())
    assert all("ORA-28000" in e for e in by_database["HR"]) and not any("ORA-28000" in e for e in by_database["SALES"])
    assert "no logon before" in by_database["HR"][-1]  # HR's back-off, kept across the runs
    assert "not asked again in this run" in by_database["SALES"][2]  # SALES's own budget
    assert refusing.accepted == 1  # one logon for HR in two runs
    assert len(stored(tmp_path, "dnfsmon_agent")) == 5  # every host sample


def test_capture_and_doctor_read_every_configured_database(tmp_path):
    """A capture holds each [[oracle]] database under its own entry, and the doctor reads them all
    (both used to keep the first database only)."""
    from dnfsmon import capture
    from fake_tns import FakeListener

    locked, expired = FakeListener("refuse", error_code=28000), FakeListener("refuse", error_code=28001)
    (tmp_path / "pw").write_text("secret-pw\n")
    (tmp_path / "pw").chmod(0o600)
    config = write_config(tmp_path, agent={"host": "dbhost"}, host={"sources": ["nic"]})
    with open(config, "a") as f:
        for target, dsn in (("SALES", locked.dsn), ("HR", expired.dsn)):
            f.write(f'[[oracle]]\nenabled = true\ntarget = "{target}"\ndsn = "{dsn}"\nuser = "dnfsmon"\n')
            f.write('password_file = "pw"\ncall_timeout_s = 2\n')
    directory = tmp_path / "capture"
    try:
        captured = subprocess.run(
            [*DNFSMON, "--config", str(config), "capture", str(directory)], capture_output=True, text=True, timeout=60
        )
    finally:
        locked.close()
        expired.close()
    assert captured.returncode == 0, captured.stderr
    host, raws, failures = capture.read(str(directory))
    assert sorted(raws) == ["nic", "oracle:HR", "oracle:SALES"] and not failures
    downs = {name: oracle.load(raw)["down"] for name, raw in raws.items() if name != "nic"}
    assert "ORA-28000" in downs["oracle:SALES"] and "ORA-28001" in downs["oracle:HR"]
    # The doctor on two captures: both databases' status points, each with its own reason.
    outcome = compute(raws, failures, host, compute(raws, failures, host, {}).samples)
    errors = {
        dict(p.tags)["database"]: p.fields["error"] for p in outcome.points if p.measurement == "dnfsmon_oracle_status"
    }
    assert sorted(errors) == ["HR", "SALES"] and "ORA-28001" in errors["HR"] and "ORA-28000" in errors["SALES"]
    doctor = subprocess.run(
        [*DNFSMON, "doctor", str(directory), str(directory), "--output", "json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert doctor.returncode != 1 and "oracle:HR" not in doctor.stderr, doctor.stderr


def test_diff_with_a_config_gives_each_database_its_own_sections_options(tmp_path):
    """`dnfsmon diff -c` of a capture of two [[oracle]] databases: each database's entry is built
    from its own section ([oracle] top_processes 1 for SALES, 3 for HR), not the first section's."""
    from dnfsmon import capture

    for name, t in (("old", 1_700_000_000.0), ("new", 1_700_000_010.0)):
        raws = {
            f"oracle:{target}": simulator.read(simulator.Workload(db_name=target, instances=1, processes=12), t)
            for target in ("SALES", "HR")
        }
        capture.write(str(tmp_path / name), "dbhost", raws, {})
    config = write_config(tmp_path, agent={"host": "dbhost"})
    with open(config, "a") as f:
        for target, top in (("SALES", 1), ("HR", 3)):
            f.write(f'[[oracle]]\nenabled = true\ntarget = "{target}"\ndsn = "db/{target}"\nuser = "dnfsmon"\n')
            f.write(f'password_env = "DNFSMON_UNUSED"\ntop_processes = {top}\n')
    result = subprocess.run(
        [*DNFSMON, "diff", "-c", str(config), str(tmp_path / "old"), str(tmp_path / "new"), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    ranked: dict[str, int] = {}
    for point in map(Point.from_json, json.loads(result.stdout)):
        if point.measurement == oracle.TOP_PROCESS_MEASUREMENT:
            database = dict(point.tags)["database"]
            ranked[database] = ranked.get(database, 0) + 1
    assert ranked == {"SALES": 1, "HR": 3}


def test_oracle_tables_validate_each_database_and_a_single_table_is_unchanged():
    from dnfsmon.config import ConfigError

    one = {"enabled": True, "dsn": "db1/ORCL", "user": "dnfsmon", "password_env": "X"}
    single = parse({"oracle": one}, None)
    assert single.databases == [single.oracle] and single.oracle.target == "db1/ORCL"
    several = parse({"oracle": [one, dict(one, dsn="db2/HR"), dict(one, dsn="db3/OFF", enabled=False)]}, None)
    assert [d.target for d in several.databases] == ["db1/ORCL", "db2/HR"] and several.oracle == several.databases[0]
    with pytest.raises(ConfigError, match=r"target = 'db1/ORCL' is used twice"):
        parse({"oracle": [one, one]}, None)
    with pytest.raises(ConfigError, match=r"\[oracle\] user = ''.*\(in \[\[oracle\]\] number 2\)"):
        parse({"oracle": [one, dict(one, user="", dsn="x/Y")]}, None)
    with pytest.raises(ConfigError, match="both enabled"):
        parse({"oracle": [one], "simulator": {"enabled": True}}, None)


def test_every_message_that_names_a_setup_script_says_where_it_is_on_the_host():
    """On a database host the pack is where `dnfsmon sql` says, not in a checkout's sql/setup/."""
    messages = [*oracle_db.LOGON_REFUSALS.values(), oracle_db.PASSWORD_SOON, oracle_db.VERIFIER_10G]
    messages.append(oracle_db.container_problem("YES", "CDB$ROOT", 1, "C##DNFSMON"))  # root rows only
    naming = [m for m in messages if "monitor_user" in m or "monitor_password" in m]
    assert len(naming) == 6
    # The README's first pack line, up to sqlplus: a copy the DBA may write to. The setup scripts save the
    # settings with STORE SET to a file in the current directory, which fails in the root-owned installed
    # directory that `cd "$(dnfsmon sql)"` alone led to (tests/test_install.py runs the line as a user).
    readme = (pathlib.Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    line = next(line for line in readme.splitlines() if "sqlplus user@db @dnfs_iops" in line)
    copy = line.split(" && sqlplus")[0]
    assert copy.startswith('cp -R "$(dnfsmon sql)/." ~/dnfsmon-sql && cd '), copy
    for message in naming:
        assert "sql/setup/" not in message and 'cd "$(dnfsmon sql)")' not in message and "@setup/" in message, message
        assert copy in message, message


# --- what a user the setup script made may read ---

SETUP_SCRIPT = pathlib.Path(__file__).parent.parent / "sql" / "setup" / "create_monitor_user.sql"


def setup_grants(release, cdb):
    """What sql/setup/create_monitor_user.sql grants on `release`, read from its text: the fixed
    list, the release-dependent views where the release has them, DBA_CONTAINER_DATA in a CDB,
    EXECUTE on DBMS_LOCK before 18c (as the script's IF says). SYS names (V_$X) as V$ names."""
    text = SETUP_SCRIPT.read_text(encoding="utf-8")
    fixed = re.search(r"(?s)needed sys\.odcivarchar2list := sys\.odcivarchar2list\((.*?)\);", text).group(1)
    optional = re.search(r"(?s)and object_name in \((.*?)\)", text).group(1)
    granted = {n.replace("_$", "$", 1) for n in re.findall(r"'(\w+\$\w+)'", fixed)}
    for name in re.findall(r"'(\w+\$\w+)'", optional):
        view = name.replace("_$", "$", 1)
        if sqlcheck.view_columns(view, release):  # the release has the view (its documented columns)
            granted.add(view)
    if cdb:
        granted.add("DBA_CONTAINER_DATA")
    if oracle_facts.release_tuple(release) < (18,):
        granted.add("DBMS_LOCK")
    return granted


def objects_named(sql):
    """Every table, view and package a statement names (sqlglot), CTEs and DUAL left out."""
    if sql == oracle_db.SESSION_SQL:
        return set()
    tree = sqlglot.parse_one(sql, read="oracle")
    ctes = {c.alias.upper() for c in tree.find_all(exp.CTE)}
    named = {t.name.upper() for t in tree.find_all(exp.Table) if t.name}
    packages = {m.upper() for m in re.findall(r"(?i)\b(dbms_\w+|utl_\w+)\.", sql)}
    return (named - ctes - {"DUAL"}) | packages


@pytest.mark.parametrize("scope", oracle.SCOPES)
@pytest.mark.parametrize("release", list(oracle_facts.RELEASES))
def test_a_freshly_set_up_user_can_run_check_and_a_sample(release, scope):
    """`dnfsmon check` and a live sample, as a user sql/setup/create_monitor_user.sql made sees them.

    Every statement the agent sends on connect (session settings, the container check, discovery)
    and in a sample (each combined statement) is recorded through the live reader on simulated rows,
    in a CDB from 12.1 and a non-CDB before. Each view or package a statement names must be one the
    setup grants on that release, or need no grant: ALL_ views show what the user may already access
    (Oracle Database Reference, "About Static Data Dictionary Views": ALL_ views, granted to PUBLIC),
    and SYS_CONTEXT('USERENV', ...) is a built-in function. The setup grants directly to the user,
    never through a role: "Within a definer's rights subprogram, all roles are disabled"
    (Object-Relational Developer's Guide 23, "Roles with Invoker's Rights Subprograms"; Security
    Guide 19c, "How Procedure Privileges Affect Definer's Rights"), so a grant through a role would
    work at the prompt and fail in a stored wrapper a site may put around the queries."""
    cdb = oracle_facts.release_tuple(release) >= (12, 1)
    document = simulated_document(T0)
    discovered = facts_available(release)
    database = oracle_db.Database(settings(scope=scope))
    database.clock = lambda: T0
    connection = FakeConnection(document, discovered)
    if cdb:
        connection.container = ("YES", "CDB$ROOT", 3)
        connection.root_only = []
    database.connection = connection
    database.discover()
    database.check_container()
    assert database.missing == {} and database.container == ""
    database.read()
    assert any("dba_container_data" in s for s in connection.executed) == cdb
    assert any("all_tab_columns" in s for s in connection.executed)
    granted = setup_grants(release, cdb)
    needed = set().union(*(objects_named(sql) for sql in connection.executed))
    not_granted = {name for name in needed if not name.startswith("ALL_") and name not in granted}
    assert not_granted == set(), (release, scope, sorted(not_granted))
    assert len(needed) >= 8  # the statements were read, not skipped


def test_the_setup_script_grants_only_directly_to_the_user():
    """Every GRANT of the setup script names the user being set up, never a role (see above), and the
    readback counts the user's own DBA_TAB_PRIVS and DBA_SYS_PRIVS rows, where a role's grants are not."""
    text = SETUP_SCRIPT.read_text(encoding="utf-8")
    grants = re.findall(r"(?i)'grant ([^;]*?) to ' \|\| (\w+)", text)
    assert len(grants) == len(re.findall(r"(?i)'grant ", text)) >= 4
    assert {grantee for _, grantee in grants} == {"user_name"}
    assert "create role" not in text.lower() and "granted_role" not in text.lower()
    assert "from dba_tab_privs" in text.lower() and "where grantee = user_name" in text.lower()


def test_the_grant_check_sees_a_view_the_setup_does_not_grant():
    """The check fails when the agent reads a view no grant covers (here DBA_HIST_SYSTEM_EVENT)."""
    statement = "SELECT event FROM dba_hist_system_event UNION ALL SELECT event FROM gv$system_event"
    assert objects_named(statement) - setup_grants("19c", True) == {"DBA_HIST_SYSTEM_EVENT"}
    assert "DBMS_SESSION" in {m.upper() for m in re.findall(r"(?i)\b(dbms_\w+|utl_\w+)\.", "x dbms_session.sleep(1)")}


# --- the channels summed in the statement (one read of V$DNFS_CHANNELS) ---


def channels_query(release="19c", scope="cluster"):
    return next(q for q in oracle.build_queries(facts_available(release), scope) if q.name == "dnfs_channels")


def run_channels_statement(query, view_rows, view_columns):
    """The channels statement as the agent sends it, run by SQLite on `view_rows` as GV$DNFS_CHANNELS
    (sqlglot writes the SQLite text; the clock columns, which SQLite has no functions for, become
    the literals 1 and 2)."""
    import sqlite3

    import sqlglot

    from dnfsmon.sources.oracle import queries

    sql = query.sql.replace(queries.DB_TIME, "1 AS db_time, 2 AS clock_instance")
    database = sqlite3.connect(":memory:")
    database.execute(f'CREATE TABLE "gv$dnfs_channels" ({", ".join(c.lower() for c in view_columns)})')
    marks = ", ".join("?" * len(view_columns))
    database.executemany(f'INSERT INTO "gv$dnfs_channels" VALUES ({marks})', view_rows)
    return [list(row) for row in database.execute(sqlglot.transpile(sql, read="oracle", write="sqlite")[0])]


def process_and_path_entries(columns, rows):
    """The statement's rows as ({(INST_ID, PNUM): (sends, channels)}, {(INST_ID, place...): (counts..., channels)})."""
    index = {c: n for n, c in enumerate(columns)}
    place = [c for c in ("SVRNAME", "PATH", "LOCAL") if c in index]
    counts = [c for c in ("SENDS", "RECVS", "PINGS", "RECO", "SPRECO", "DPRECO", "CHANNELS") if c in index]
    processes, paths = {}, {}
    for row in rows:
        if row[index["PROCESS_CHANNELS"]] is not None:
            key = (row[index["INST_ID"]], row[index["PNUM"]])
            assert key not in processes
            processes[key] = (row[index["PROCESS_SENDS"]], row[index["PROCESS_CHANNELS"]])
        if row[index["CHANNELS"]] is not None:
            key = (row[index["INST_ID"]], *(row[index[c]] for c in place))
            assert key not in paths
            paths[key] = tuple(row[index[c]] for c in counts)
    return processes, paths


# Per-channel rows of the view: a process with two channels on one path, a path with a NULL LOCAL,
# two instances sharing a PNUM, a process on one path only.
VIEW_ROWS = [
    (1, 20, "filer1", "10.0.0.1", "10.0.1.1", 5, 6, 1, 0, 0),
    (1, 20, "filer1", "10.0.0.1", "10.0.1.1", 7, 7, 1, 0, 1),
    (1, 20, "filer1", "10.0.0.2", None, 11, 11, 0, 1, 0),
    (1, 21, "filer1", "10.0.0.2", None, 3, 2, 2, 0, 0),
    (2, 20, "filer1", "10.0.0.1", "10.0.1.9", 100, 90, 1, 0, 0),
    (1, 22, "filer2", "10.0.0.1", "10.0.1.1", 0, 0, 0, 0, 0),
]
VIEW_COLUMNS = ("INST_ID", "PNUM", "SVRNAME", "PATH", "LOCAL", "SENDS", "RECVS", "PINGS", "SPRECO", "DPRECO")


@pytest.mark.parametrize("release", ["11.2.0.4", "19c"])
def test_the_channels_statement_sums_per_path_and_per_process_as_the_per_channel_rows_add_up(release):
    """The channels statement (SQLite running its text) and group_channels, which groups a recording
    of per-channel rows and makes the simulator's rows, give the same sums; by hand as well."""
    from dnfsmon.sources.oracle.rows import group_channels

    query = channels_query(release)
    view_columns = [c for c in VIEW_COLUMNS if c in query.columns or c in ("PNUM", "SENDS")]
    if "RECO" in query.columns:  # 11.2.0.4 has RECO where 12.1.0.2 and later have SPRECO and DPRECO
        view_columns = [*view_columns, "RECO"]
    view_rows = [
        tuple(row[VIEW_COLUMNS.index(c)] if c in VIEW_COLUMNS else row[8] + row[9] for c in view_columns)
        for row in VIEW_ROWS
    ]
    by_sql = process_and_path_entries(query.columns, run_channels_statement(query, view_rows, view_columns))
    columns, rows = group_channels([*view_columns, "DB_TIME", "CLOCK_INSTANCE"], [[*r, 1, 2] for r in view_rows])
    assert tuple(columns) == query.columns
    assert process_and_path_entries(columns, rows) == by_sql
    processes, paths = by_sql
    assert processes == {(1, 20): (23, 3), (1, 21): (3, 1), (2, 20): (100, 1), (1, 22): (0, 1)}
    assert (
        paths[(1, "filer1", "10.0.0.1", "10.0.1.1")][0] == 12 and paths[(1, "filer1", "10.0.0.1", "10.0.1.1")][-1] == 2
    )
    assert paths[(1, "filer1", "10.0.0.2", None)][:3] == (14, 13, 2) and len(paths) == 4
    # Fewer rows than the view's: a row per process, the paths on them.
    assert len(rows) == len(processes) + len(paths) and len(run_channels_statement(query, view_rows, view_columns)) == 5


def test_the_channels_statement_of_a_release_without_sends_has_null_process_sends():
    """The process's SENDS comes from the discovered columns like every other count: a view without
    SENDS gives NULL sends per process (no new-process check) and the other sums, as group_channels
    gives for a recording without it, rather than a statement that fails with ORA-00904."""
    from dnfsmon.sources.oracle.rows import group_channels

    available = facts_available("19c")
    available["GV$DNFS_CHANNELS"] = available["GV$DNFS_CHANNELS"] - {"SENDS"}
    query = next(q for q in oracle.build_queries(available, "cluster") if q.name == "dnfs_channels")
    assert "SENDS" not in query.columns and "sum(sends)" not in query.sql.lower()
    view_columns = [c for c in VIEW_COLUMNS if c != "SENDS"]
    view_rows = [tuple(v for c, v in zip(VIEW_COLUMNS, row) if c != "SENDS") for row in VIEW_ROWS]
    processes, paths = process_and_path_entries(query.columns, run_channels_statement(query, view_rows, view_columns))
    assert processes == {(1, 20): (None, 3), (1, 21): (None, 1), (2, 20): (None, 1), (1, 22): (None, 1)}
    assert paths[(1, "filer1", "10.0.0.2", None)][:2] == (13, 2) and len(paths) == 4
    columns, rows = group_channels([*view_columns, "DB_TIME", "CLOCK_INSTANCE"], [[*r, 1, 2] for r in view_rows])
    assert tuple(columns) == query.columns and process_and_path_entries(columns, rows) == (processes, paths)


@pytest.mark.parametrize("scope", ["cluster", "instance"])
def test_the_channels_statement_reads_the_view_once(scope):
    """V$DNFS_CHANNELS counts "since the last select" (Reference, V$DNFS_CHANNELS): a second read in
    the statement would take the counts the first did not. One FROM of the view, no GROUPING SETS
    (which the optimizer may evaluate as a UNION ALL of GROUP BYs) and no WITH (a temporary table)."""
    sql = channels_query(scope=scope).sql.lower()
    assert sql.count("dnfs_channels") == 1
    assert "grouping" not in sql and "with " not in sql and "union" not in sql
    # No OR for OR-expansion to turn into UNION ALL branches that each read the view again, and the
    # outer block's NO_EXPAND hint forbids the expansion (SQL Language Reference, "Hints", NO_EXPAND).
    assert sql.startswith("select /*+ no_expand */ ") and " or " not in sql
    assert sql.endswith(" where least(c.process_row, c.path_row) = 1")


def two_simulated_reads_and_the_view_s_rows():
    """Two simulated reads 10 s apart (2 instances x 6 processes) and the simulated view's
    per-channel rows over the second interval, PNUM 22 new in it: (documents, view columns, rows)."""
    workload = simulator.Workload(instances=2, processes=6)
    memory = simulator.Memory()
    documents = [simulated_document(t, workload, memory) for t in (T0, T0 + 10)]
    since = simulator.Memory()
    since.last_channel_select.update({1: T0, 2: T0})
    view_columns = ("INST_ID", "PNUM", "SVRNAME", "PATH", "LOCAL", "SENDS", "RECVS", "PINGS", "SPRECO", "DPRECO")
    modelled = simulator._rows(simulator.Model(workload), "dnfs_channels", T0 + 10, since, [1, 2])
    return documents, view_columns, [tuple(row[c] for c in view_columns) for row in modelled]


def test_a_mounted_database_s_channels_statement_has_no_sort_and_publishes_what_the_open_one_does():
    """Before the database is open only in-memory sorts are supported: a sort that spills fails with
    ORA-01220 (Database Error Messages). A mounted database (a standby read AS SYSDG) is sent the
    view's plain rows, no analytic function and no ORDER BY, and the parser sums them
    (rows.group_channels) into the points the open database's statement gives for the same rows."""
    for scope in oracle.SCOPES:
        mounted = next(
            q for q in oracle.build_queries(facts_available("19c"), scope, mounted=True) if q.name == "dnfs_channels"
        )
        sql = mounted.sql.lower()
        assert sql.count("dnfs_channels") == 1
        assert not any(word in sql for word in ("over (", "over(", "order by", "row_number", "sum(", "count(", "group"))
    documents, view_columns, view_rows = two_simulated_reads_and_the_view_s_rows()
    published = []
    mounted = next(
        q for q in oracle.build_queries(facts_available("19c"), "cluster", True) if q.name == "dnfs_channels"
    )
    for query in (channels_query(), mounted):
        document = json.loads(json.dumps(documents[1]))
        document["results"]["dnfs_channels"] = {
            "columns": list(query.columns),
            "rows": [[*row[:-2], T0 + 10, 1] for row in run_channels_statement(query, view_rows, view_columns)],
            "agent_clock": T0 + 10,
        }
        outcome = points_between(oracle_db.to_raw(documents[0], T0), oracle_db.to_raw(document, T0 + 10))
        published.append(sorted((p.measurement, p.tags, p.fields) for p in outcome.points))
    assert any(entry[0] == "dnfsmon_dnfs_channel" for entry in published[0])
    assert published[0] == published[1]


def test_a_recording_of_per_channel_rows_publishes_what_the_statement_s_rows_publish():
    """A capture made before the statement summed the channels (a row per process and channel) gives
    the same channel points and the same new-process check as the statement's rows of the same
    channels (SQLite running the statement)."""
    documents, view_columns, view_rows = two_simulated_reads_and_the_view_s_rows()
    stats = documents[0]["results"]["dnfs_stats"]
    stats["rows"] = [r for r in stats["rows"] if r[stats["columns"].index("PNUM")] != 22]
    query = channels_query()
    summed = json.loads(json.dumps(documents[1]))
    summed["results"]["dnfs_channels"]["rows"] = [
        [*row[:-2], T0 + 10, 1] for row in run_channels_statement(query, view_rows, view_columns)
    ]
    per_channel = json.loads(json.dumps(documents[1]))
    per_channel["results"]["dnfs_channels"] = {
        "columns": [*view_columns, "DB_TIME", "CLOCK_INSTANCE"],
        "rows": [[*row, T0 + 10, 1] for row in view_rows],
        "agent_clock": T0 + 10,
    }
    first = oracle_db.to_raw(documents[0], T0)
    outcomes = [points_between(first, oracle_db.to_raw(document, T0 + 10)) for document in (summed, per_channel)]
    published = [
        sorted(
            (p.measurement, p.tags, p.fields)
            for p in outcome.points
            if "channel" in p.measurement or "io" in p.measurement
        )
        for outcome in outcomes
    ]
    assert published[0] == published[1]
    (io,) = [p.fields for p in outcomes[0].points if p.measurement == "dnfsmon_dnfs_io"][:1]
    channels = [p for p in outcomes[0].points if p.measurement == "dnfsmon_dnfs_channel"]
    assert channels and io["new_processes"] + io["processes_left_out"] >= 1


def test_the_top_processes_are_the_first_of_the_whole_ranking_with_ties_at_the_cut():
    """The top processes are ranked among the few with at least the N-th most operations
    (publish._busy_processes), not among all: the ranks must be the first N of the whole order,
    worked out here from the two readings' rows alone: most reads more first, then the lower
    PNUM; none without reads. The N-th place falls inside a tie of ten processes."""
    workload = simulator.Workload(instances=1, processes=40)
    memory = simulator.Memory()
    documents = [simulated_document(t, workload, memory) for t in (T0, T0 + 10)]
    before, after = (d["results"]["dnfs_stats"] for d in documents)
    at = {c: before["columns"].index(c) for c in ("PNUM", "NFS_READ", "DB_TIME")}
    # The second reading: the first one's processes, each with a chosen number of reads more.
    increases = [9, 7, 1] + [3] * 10 + [0] * (len(before["rows"]) - 13)
    random.Random(7).shuffle(increases)
    rows = [list(row) for row in before["rows"]]
    for row, increase in zip(rows, increases):
        row[at["NFS_READ"]] += increase
        row[at["DB_TIME"]] = after["rows"][0][at["DB_TIME"]]
    after["rows"] = rows
    moved = sorted((-increase, row[at["PNUM"]]) for row, increase in zip(rows, increases) if increase)
    expected = [str(pnum) for _, pnum in moved[: oracle.DEFAULT_TOP_PROCESSES]]
    assert oracle.DEFAULT_TOP_PROCESSES < 13 and -moved[oracle.DEFAULT_TOP_PROCESSES - 1][0] == 3
    raws = [Raw({}, T0, T0, documents={oracle.RESULTS: d}) for d in documents]
    points = [p for p in points_between(*raws).points if p.measurement == oracle.TOP_PROCESS_MEASUREMENT]
    ranked = sorted(points, key=lambda p: int(dict(p.tags)["rank"]))
    assert [str(p.fields["pnum"]) for p in ranked] == expected


def test_a_process_without_a_delta_of_each_operation_sits_out_of_the_top_processes():
    """A NULL in a process's NFS_WRITE (in both reads: no delta of it) would rank it too low: it is
    left out of the ranking, and the next busiest takes its rank."""
    workload = simulator.Workload(instances=1, processes=30)
    memory = simulator.Memory()
    documents = [simulated_document(T0 + step, workload, memory) for step in (0, 10)]
    raws = [Raw({}, T0, T0, documents={oracle.RESULTS: d}) for d in documents]
    ranked = [p for p in points_between(*raws).points if p.measurement == oracle.TOP_PROCESS_MEASUREMENT]
    busiest = next(p.fields["pnum"] for p in ranked if dict(p.tags)["rank"] == "1")
    for document in documents:
        stats = document["results"]["dnfs_stats"]
        pnum_at, write_at = stats["columns"].index("PNUM"), stats["columns"].index("NFS_WRITE")
        next(row for row in stats["rows"] if row[pnum_at] == busiest)[write_at] = None
    raws = [Raw({}, T0, T0, documents={oracle.RESULTS: d}) for d in documents]
    without = [p for p in points_between(*raws).points if p.measurement == oracle.TOP_PROCESS_MEASUREMENT]
    assert busiest not in {p.fields["pnum"] for p in without}
    assert [p.fields["pnum"] for p in without] == [p.fields["pnum"] for p in ranked if p.fields["pnum"] != busiest] + [
        without[-1].fields["pnum"]
    ]


def test_the_checker_of_sorts_sees_each_construct():
    for sql, construct in (
        ("SELECT DISTINCT a FROM v$x", "Distinct"),
        ("SELECT a, COUNT(*) FROM v$x GROUP BY a", "Group"),
        ("SELECT a FROM v$x ORDER BY a", "Order"),
        ("SELECT ROW_NUMBER() OVER (PARTITION BY a ORDER BY b) FROM v$x", "Window"),
        ("SELECT (SELECT MAX(f.con_id) FROM v$datafile f) FROM v$database d", "Max"),
        ("SELECT a FROM v$x UNION SELECT a FROM v$y", "Union (distinct)"),
    ):
        assert construct in sorting_constructs(sql), sql
    assert sorting_constructs("SELECT a FROM v$x UNION ALL SELECT a FROM v$y") == []


@pytest.mark.parametrize("release", sorted(oracle_facts.VERSION_STRINGS))
def test_nothing_the_agent_sends_a_mounted_database_sorts(release):
    """Item: a mounted database (a physical standby without Active Data Guard, read AS SYSDG) answers
    only in-memory sorts: a DISTINCT, GROUP BY, ORDER BY, analytic or aggregate whose workarea spills
    fails with ORA-01220. Every statement the agent sends it, single and combined, in each scope and
    release, holds none of them; the inventory's counts are made by the parser."""
    available = facts_available(release)
    for scope in oracle.SCOPES:
        queries = oracle.build_queries(available, scope, mounted=True)
        assert {q.name for q in queries} >= {"dnfs_stats", "dnfs_files", "system_event"}
        statements = [q.sql for q in queries]
        statements += [c.sql for c in oracle.read_groups(queries, inventory=True)]
        for sql in statements:
            assert sorting_constructs(sql) == [], sql
            # Nor a join, whose hash table is a work area too (dba-review W4): V$PROCESS is read apart.
            assert not list(sqlglot.parse_one(sqlcheck._parsable(sql), read="oracle").find_all(exp.Join)), sql
    if release.startswith("11."):
        return  # no SYSDG before 12.1: a mounted 11.2.0.4 standby is not read (config refuses it)
    # As the live reader sends them, from logon to the inventory: the container check too.
    sent = mounted_read(release)[1]
    checked = [s for s in sent if s != oracle_db.SESSION_SQL]
    assert any("v$database" in s.lower() for s in checked) and any("dnfs_files" in s.lower() for s in checked)
    for sql in checked:
        if "all_tab_columns" in sql.lower() or "dba_container_data" in sql.lower():
            continue  # refused in MOUNT (ORA-01219) before any row source runs: the reader handles that
        assert sorting_constructs(sql) == [], sql


def as_mounted_recording(document, workload):
    """`document`'s rows as a mounted database is asked for them: the views' own rows, one per process
    and channel (V$DNFS_CHANNELS), one per process and open file (V$DNFS_FILES: each file held by two
    processes) and one per file (V$IOSTAT_FILE), in place of the open database's sums."""
    instances = list(range(1, workload.instances + 1))
    view_columns = ("INST_ID", "PNUM", "SVRNAME", "PATH", "LOCAL", "SENDS", "RECVS", "PINGS", "SPRECO", "DPRECO")
    modelled = simulator._rows(simulator.Model(workload), "dnfs_channels", T0, simulator.Memory(), instances)
    document["results"]["dnfs_channels"] = {
        "columns": [*view_columns, "DB_TIME", "CLOCK_INSTANCE"],
        "rows": [[*(row[c] for c in view_columns), T0, 1] for row in modelled],
    }
    files = document["results"]["dnfs_files"]
    plain = []
    for row in files["rows"]:
        r = dict(zip(files["columns"], row))
        for n in range(r["FILES"]):
            for pnum in (20, 21):
                size = r["BYTES"] // r["FILES"]
                plain.append([r["INST_ID"], r["SVR_ID"], f"/oradata/{r['SVR_ID']}/f{n}.dbf", size, pnum, T0, 1])
    document["results"]["dnfs_files"] = {
        "columns": ["INST_ID", "SVR_ID", "FILENAME", "FILESIZE", "PNUM", "DB_TIME", "CLOCK_INSTANCE"],
        "rows": plain,
    }
    iostat = document["results"]["iostat_file"]
    columns = [c for c in iostat["columns"] if c != "FILES"]
    document["results"]["iostat_file"] = {
        "columns": columns,
        "rows": [
            [value for c, value in zip(iostat["columns"], row) if c != "FILES"]
            for row in iostat["rows"]
            for _ in range(row[iostat["columns"].index("FILES")])
        ],
    }
    return document


def mounted_read(release="19c", document=None):
    """A mounted 2-instance standby read through the live reader with [oracle] privilege = "sysdg":
    (the samples, the statements sent)."""
    workload = simulator.Workload(instances=2, release=release)
    document = as_mounted_recording(document or simulated_document(T0, workload), workload)
    document["results"]["database"]["rows"] = [
        [*row[:3], "PHYSICAL STANDBY", "MOUNTED", *row[5:]] for row in document["results"]["database"]["rows"]
    ]
    connection = FakeConnection(document, facts_available(release))
    connection.mounted = True
    connection.container = ("YES", "CDB$ROOT", 3)
    fake = types.SimpleNamespace(
        connect=lambda **kwargs: connection, clientversion=lambda: (19, 0), AUTH_MODE_SYSDGD=32768
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, "oracledb", fake)
        patch.setenv("DNFSMON_TEST_PW", "x")
        raw = oracle_db.read_once(oracle_db.Database(settings(privilege="sysdg", scope="cluster")), T0)
    found, problems = oracle.samples(raw, "h")
    assert not problems, problems
    return found, connection.executed


def test_a_mounted_database_s_processes_are_matched_by_the_parser_as_the_open_statement_joins_them():
    """dba-review W4: a mounted database is sent V$DNFS_STATS and V$PROCESS apart, no join (whose hash
    table is a work area, as a sort's is). The parser matches them on (INST_ID, PNUM = PID), as the
    open statement's LEFT OUTER JOIN does: the same processes, holders, names and counters, and "?"
    for a process V$PROCESS has no row of. Truth: the open statement run in SQLite over the same rows."""
    import sqlite3

    workload = simulator.Workload(instances=2)
    document = simulated_document(T0, workload)
    stats = document["results"]["dnfs_stats"]
    process_rows = v_process_rows(stats)
    # One process left V$PROCESS between the two scans: the join finds no row of it.
    gone = (stats["rows"][3][stats["columns"].index("INST_ID")], stats["rows"][3][stats["columns"].index("PNUM")])
    process_rows["rows"] = [r for r in process_rows["rows"] if (r[0], r[1]) != gone]
    open_query, mounted_queries = (
        [
            q
            for q in oracle.build_queries(facts_available("19c"), "cluster", mounted)
            if q.name in ("dnfs_stats", "processes")
        ]
        for mounted in (False, True)
    )
    [open_query] = open_query
    assert {q.name for q in mounted_queries} == {"dnfs_stats", "processes"}
    database = sqlite3.connect(":memory:")
    database.execute("CREATE TABLE stats (inst_id, pnum)")
    at = [stats["columns"].index(c) for c in ("INST_ID", "PNUM")]
    database.executemany("INSERT INTO stats VALUES (?, ?)", [[row[i] for i in at] for row in stats["rows"]])
    database.execute("CREATE TABLE process (inst_id, pid, spid, serial_, pname, program)")
    database.executemany("INSERT INTO process VALUES (?, ?, ?, ?, ?, ?)", [r[:6] for r in process_rows["rows"]])
    # The open statement's join, as SQLite runs it (its clock left out).
    joined = database.execute(
        "SELECT s.inst_id, s.pnum, p.spid, p.serial_, p.pname, p.program FROM stats s "
        "LEFT OUTER JOIN process p ON p.inst_id = s.inst_id AND p.pid = s.pnum"
    ).fetchall()
    truth = {
        (inst, pnum): (str(spid or "?"), str(serial or "?"), pname or "", program or "")
        for inst, pnum, spid, serial, pname, program in joined
    }
    assert truth[gone] == ("?", "?", "", "")
    mounted = json.loads(json.dumps(document))
    mounted["results"]["dnfs_stats"] = {
        "columns": [c for c in stats["columns"] if c not in ("SPID", "SERIAL#", "PNAME", "PROGRAM")],
        "rows": [
            [v for c, v in zip(stats["columns"], row) if c not in ("SPID", "SERIAL#", "PNAME", "PROGRAM")]
            for row in stats["rows"]
        ],
    }
    mounted["results"]["processes"] = process_rows
    assert mounted["results"]["dnfs_stats"]["columns"] == list(
        next(q for q in mounted_queries if q.name == "dnfs_stats").columns
    )
    found, problems = oracle.samples(oracle_db.to_raw(mounted, T0), "h")
    assert not problems
    tables = [s for s in found if s.measurement == oracle.IO_MEASUREMENT]
    inst_of = {"simdb1": 1, "simdb2": 2}
    matched = {
        (inst_of[dict(t.key)["instance"]], int(pnum)): (*holder, pname, program)
        for t in tables
        for pnum, holder, pname, program in zip(
            t.member_ids, t.member_identities, t.details["pname"], t.details["program"]
        )
    }
    assert matched == truth
    # And the counters are the open read's.
    open_tables = [
        s for s in oracle.samples(oracle_db.to_raw(document, T0), "h")[0] if s.measurement == oracle.IO_MEASUREMENT
    ]
    assert [t.columns for t in tables] == [t.columns for t in open_tables]


def test_a_mounted_database_s_inventory_counted_by_the_parser_publishes_what_the_open_statements_count():
    """The mounted inventory reads V$DNFS_FILES (a row per process and open file) and V$IOSTAT_FILE
    (a row per file) as plain rows; the parser counts them. Truth: the open database's own statements
    (DISTINCT, COUNT, SUM, GROUP BY) run in SQLite over the same view rows must give the same filer
    and coverage samples. Three processes hold each file, one file is on two filers' rows."""
    workload = simulator.Workload(instances=2)
    open_document = simulated_document(T0, workload)
    files_rows = [
        (inst, svr, f"/oradata/{svr}/f{n}.dbf", (n + 1) * 2**30, pnum)
        for inst in (1, 2)
        for svr in (1, 2)
        for n in range(4 + svr)
        for pnum in (10, 11, 12)
    ]
    iostat_rows = [
        (inst, kind, method, 0)
        for inst in (1, 2)
        for kind, method, count in (
            ("Data File", "DNFS_LIB", 7),
            ("Data File", "OS_LIB", 2),
            ("Temp File", "DNFS_LIB", 1),
        )
        for _ in range(count)
    ]
    import sqlite3

    from dnfsmon.sources.oracle import queries as statements

    database = sqlite3.connect(":memory:")
    for view, columns, rows in (
        ("gv$dnfs_files", ["inst_id", "svr_id", "filename", "filesize", "pnum"], files_rows),
        ("gv$iostat_file", ["inst_id", "filetype_name", "access_method", "con_id"], iostat_rows),
    ):
        database.execute(f'CREATE TABLE "{view}" ({", ".join(columns)})')
        database.executemany(f'INSERT INTO "{view}" VALUES ({", ".join("?" * len(columns))})', rows)
    available = facts_available("19c")
    opened = {q.name: q for q in oracle.build_queries(available, "cluster")}
    mounted = {q.name: q for q in oracle.build_queries(available, "cluster", mounted=True)}
    documents = []
    for queries in (opened, mounted):
        document = json.loads(json.dumps(open_document))
        for name in ("dnfs_files", "iostat_file"):
            query = queries[name]
            sql = query.sql.replace(statements.DB_TIME, f"{T0} AS db_time, 1 AS clock_instance")
            rows = [list(r) for r in database.execute(sqlglot.transpile(sql, read="oracle", write="sqlite")[0])]
            document["results"][name] = {"columns": list(query.columns), "rows": rows}
        document["results"].pop("filer_files", None)
        documents.append(document)
    published = []
    for document in documents:
        found, problems = oracle.samples(oracle_db.to_raw(document, T0), "h")
        assert not problems
        published.append(
            sorted(
                (s.measurement, s.key, sorted(s.gauges.items()))
                for s in found
                if s.measurement in ("dnfsmon_dnfs_server", "dnfsmon_dnfs_coverage")
            )
        )
    assert published[0] and published[0] == published[1]
    servers = [dict(g) for m, _, g in published[1] if m == "dnfsmon_dnfs_server"]
    assert sorted(s["open_files"] for s in servers) == [5, 5, 6, 6]  # each file once, not once per process


def test_a_pnum_read_twice_for_an_instance_is_reported_and_its_later_row_left_out():
    """dba-review W4 (this round): an instance's processes are paired by PNUM, which the Reference
    gives one process of an instance at a time but names no key of V$DNFS_STATS. A reading with a
    PNUM twice (here under another CON_ID) keeps the first row, says so, and pairs the others."""
    workload = simulator.Workload(instances=1, processes=5, pdbs=2)
    documents = [simulated_document(t, workload) for t in (T0, T0 + 10)]
    stats = documents[1]["results"]["dnfs_stats"]
    columns = stats["columns"]
    twice = list(stats["rows"][1])
    twice[columns.index("CON_ID")] = 4
    stats["rows"].append(twice)
    found, problems = oracle.samples(oracle_db.to_raw(documents[1], T0 + 10), "h")
    [table] = [s for s in found if s.measurement == oracle.IO_MEASUREMENT]
    assert len(table.member_ids) == len(set(table.member_ids)) == workload.processes
    pnum = twice[columns.index("PNUM")]
    assert [str(p) for p in problems] == [
        f"{oracle.RESULTS}: dnfs_stats: PNUM {pnum} of instance simdb1 read twice; the later row left out"
    ]
    outcome = points_between(*[oracle_db.to_raw(d, t) for d, t in zip(documents, (T0, T0 + 10))])
    [io] = [p.fields for p in outcome.points if p.measurement == oracle.IO_MEASUREMENT and ("pdb", "4") not in p.tags]
    assert io["processes_left_out"] == 0


def test_a_pid_read_twice_on_a_mounted_database_keeps_the_first_row_as_the_open_join_does():
    """Mounted, V$PROCESS is read apart and matched by the parser: a PID listed twice for one
    instance keeps its first row and is said, as the open statement's join (two rows of the
    process, the later left out by _io) does; never the last row, silently."""
    workload = simulator.Workload(instances=1, processes=5)
    document = simulated_document(T0, workload)
    stats = document["results"]["dnfs_stats"]
    processes = v_process_rows(stats)
    first = processes["rows"][2]
    later = [first[0], first[1], "77777", 9, None, "oracle (a later row)", T0, 1]
    processes["rows"].append(later)
    drop = ("SPID", "SERIAL#", "PNAME", "PROGRAM")
    document["results"]["dnfs_stats"] = {
        "columns": [c for c in stats["columns"] if c not in drop],
        "rows": [[v for c, v in zip(stats["columns"], row) if c not in drop] for row in stats["rows"]],
    }
    document["results"]["processes"] = processes
    found, problems = oracle.samples(oracle_db.to_raw(document, T0), "h")
    [table] = [s for s in found if s.measurement == oracle.IO_MEASUREMENT]
    holder = dict(zip(table.member_ids, table.member_identities))[str(first[1])]
    assert holder == (str(first[2]), str(first[3]))
    assert [str(p) for p in problems] == [
        f"{oracle.RESULTS}: processes: PID {first[1]} of INST_ID {first[0]} read twice; the later row left out"
    ]
