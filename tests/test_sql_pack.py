"""The SQL*Plus pack: lint, column facts per release, read-only, grants, and its arithmetic.

The arithmetic is proven without a database: each script's core query (between
"-- core:" markers) is parsed as Oracle SQL, its CTEs that read the database
(clock, cur, prev) are replaced by tables holding recorded rows, and the rest -
the diffs, joins, sums and divisions the DBA sees - runs transpiled in SQLite.
The same rows go through the agent; both must give the same figures.
"""

from __future__ import annotations

import glob
import json
import os
import re
import sqlite3

import pytest
import sqlglot
from sqlfluff.core import FluffConfig, Linter
from sqlglot import exp

import sqlplus
from dnfsmon import oracle_db, oracle_facts, simulator
from dnfsmon.collect import compute
from dnfsmon.sources import oracle
from sqlcheck import violations

ROOT = os.path.join(os.path.dirname(__file__), "..")
SCRIPTS = sorted(glob.glob(os.path.join(ROOT, "sql", "*.sql")) + glob.glob(os.path.join(ROOT, "sql", "setup", "*.sql")))
USER_SCRIPTS = [
    "dnfs_iops.sql",
    "dnfs_latency.sql",
    "dnfs_channels.sql",
    "dnfs_servers.sql",
    "dnfs_files.sql",
    "dnfs_check.sql",
]


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def name(path):
    return os.path.relpath(path, os.path.join(ROOT, "sql"))


@pytest.fixture(scope="module")
def linter():
    return Linter(config=FluffConfig.from_path(ROOT))


@pytest.mark.slow
@pytest.mark.parametrize("release", list(oracle_facts.RELEASES))
@pytest.mark.parametrize("path", SCRIPTS, ids=name)
def test_sqlfluff_finds_nothing(linter, path, release):
    findings = linter.lint_string(sqlplus.render(read(path), release), fname=path).get_violations()
    assert [f"{name(path)}:{v.line_no}: {v.rule_code()} {v.desc()}" for v in findings] == []


def test_lint_would_catch_a_problem(linter):
    bad = "select s.pnum, p.spid\nfrom gv$dnfs_stats s, gv$process p\nwhere s.inst_id = p.inst_id;\n"
    assert linter.lint_string(bad).get_violations()


def test_client_commands_are_handled_not_ignored():
    rendered = sqlplus.render(read(os.path.join(ROOT, "sql", "dnfs_iops.sql")))
    assert rendered.count("\n") == read(os.path.join(ROOT, "sql", "dnfs_iops.sql")).count("\n")  # line numbers kept
    assert "column read_iops" not in rendered and "@@_dnfs_start" not in rendered
    statements = list(sqlplus.statements(sqlplus.render(read(os.path.join(ROOT, "sql", "dnfs_iops_step.sql")))))
    assert len(statements) == 1  # the core query; sleeping and counting down are in _dnfs_sleep.sql and _dnfs_next.sql
    assert len(list(sqlplus.statements(sqlplus.render(read(os.path.join(ROOT, "sql", "_dnfs_next.sql")))))) == 1


@pytest.mark.parametrize("release", list(oracle_facts.RELEASES))
def test_every_statement_matches_the_column_facts(release):
    checked = 0
    for path in SCRIPTS:
        for line, sql in sqlplus.statements(sqlplus.render(read(path), release)):
            if sql.lstrip().lower().startswith(("create", "grant")):
                continue
            assert violations(sql, release) == [], f"{name(path)}:{line} on {release}"
            checked += 1
    assert checked >= 18


def test_the_facts_check_sees_a_misspelt_column_in_a_script():
    text = read(os.path.join(ROOT, "sql", "dnfs_channels.sql")).replace("sum(recvs)", "sum(recieves)")
    ((_, sql),) = [s for s in sqlplus.statements(sqlplus.render(text)) if "gv$dnfs_channels" in s[1]]
    assert violations(sql, "19c") == ["GV$DNFS_CHANNELS.RECIEVES: no such column in 19c"]


WRITES = re.compile(r"(?im)^\s*(create|alter|drop|insert|update|delete|merge|truncate|grant|revoke)\b")


@pytest.mark.parametrize("path", [p for p in SCRIPTS if "setup" not in p], ids=name)
def test_scripts_create_and_change_nothing(path):
    rendered = sqlplus.render(read(path))
    assert not WRITES.search(rendered), name(path)
    assert "dbms_output" not in rendered.lower()  # rows are printed as each interval ends


@pytest.mark.parametrize("script", USER_SCRIPTS)
def test_header_block_and_settings_restored(script):
    text = read(os.path.join(ROOT, "sql", script))
    for field in ("File name:", "Purpose:", "Usage:", "Notes:"):
        assert f"-- {field}" in text, script
    assert "@@_dnfs_start" in text and text.rstrip().endswith("@@_dnfs_end")


def views_read(release):
    found = set()
    for path in SCRIPTS:
        if "setup" in path:
            continue
        for _, sql in sqlplus.statements(sqlplus.render(read(path), release)):
            tree = sqlglot.parse_one(
                re.sub(r"(?i)xmlserialize\(\s*content\b", "to_clob(", re.sub(r"(?i)\)\s*as\s+clob\s*\)", "))", sql)),
                read="oracle",
            )
            ctes = {c.alias.upper() for c in tree.find_all(exp.CTE)}
            found |= {
                t.name.upper() for t in tree.find_all(exp.Table) if t.name and t.name.upper() not in ctes | {"DUAL"}
            }
    return found


def test_setup_grants_exactly_what_the_pack_and_the_agent_read():
    granted = {
        m.replace("_$", "$", 1).upper()
        for m in re.findall(
            r"(?im)^grant select on sys\.(\w+\$\w+) to",
            read(os.path.join(ROOT, "sql", "setup", "create_monitor_user.sql")),
        )
    }
    needed = set(oracle_db.VIEWS)
    for release in oracle_facts.RELEASES:
        needed |= views_read(release)
    needed.discard("ALL_TAB_COLUMNS")  # a dictionary view every user can read
    assert granted == needed


# --- the arithmetic, in SQLite, against the agent ---


def run_core(script, core, tables, binds):
    """Run a script's core query with its database-reading CTEs replaced by `tables`."""
    text = sqlplus.render(read(os.path.join(ROOT, "sql", script)))
    sql = sqlplus.core_queries(text)[core]
    tree = sqlglot.parse_one(sql, read="oracle")
    with_ = tree.args.get("with_") or tree.args["with"]
    with_.set("expressions", [cte for cte in with_.expressions if cte.alias not in tables])
    for placeholder in list(tree.find_all(exp.Placeholder)):
        placeholder.replace(exp.Literal.number(binds[placeholder.name]))
    for function in list(tree.find_all(exp.Anonymous, exp.ToChar, exp.TimeToStr)):
        if "sysdate" in function.sql().lower():
            function.replace(exp.Literal.string("12:00:00"))
    connection = sqlite3.connect(":memory:")
    connection.create_function("to_char", 1, str)
    for table, (columns, rows) in tables.items():
        connection.execute(f"create table {table} ({', '.join(columns)})")
        connection.executemany(
            f"insert into {table} values ({', '.join('?' for _ in columns)})",
            [[float(v) if isinstance(v, int) else v for v in row] for row in rows],
        )
    cursor = connection.execute(tree.sql(dialect="sqlite"))
    names = [d[0].lower() for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


T0, T1 = 1_795_000_000.0, 1_795_000_010.0


def documents(workload):
    memory = simulator.Memory()
    raws = [simulator.read(workload, t, memory) for t in (T0, T1)]
    return raws, [json.loads(r.files[oracle.RESULTS]) for r in raws]


def agent_points(raws):
    first = compute({"oracle": raws[0]}, {}, "h", {})
    return compute({"oracle": raws[1]}, {}, "h", first.samples).points


def rows_of(document, query, columns):
    result = document["results"][query]
    index = [result["columns"].index(c) for c in columns]
    return [[row[i] for i in index] for row in result["rows"]]


def test_dnfs_iops_gives_the_agents_figures_with_churn_and_pnum_reuse():
    workload = simulator.Workload(
        instances=2, processes=10, process_lifetime_s=30.0
    )  # processes come and go within the interval
    raws, docs = documents(workload)
    # PNUM 20 of instance 1 now belongs to a new process whose counters happen
    # to be higher than its predecessor's: only the identity (SPID, SERIAL#) can tell.
    stats = docs[1]["results"]["dnfs_stats"]
    row = next(r for r in stats["rows"] if r[0] == 1 and r[1] == 20)
    c = stats["columns"]
    row[c.index("SPID")], row[c.index("SERIAL#")] = "424242", 4242
    for counter in ("NFS_READ", "NFS_WRITE", "NFS_READBYTES", "NFS_WRITEBYTES"):
        row[c.index(counter)] += 10**7
    raws[1] = oracle_db.to_raw(docs[1], T1)
    columns = ["INST_ID", "PNUM", "NFS_READ", "NFS_WRITE", "NFS_READBYTES", "NFS_WRITEBYTES", "SPID", "SERIAL#"]
    names = ["inst_id", "pnum", "nfs_read", "nfs_write", "nfs_readbytes", "nfs_writebytes", "spid", "serial"]
    tables = {
        "cur": (names, rows_of(docs[1], "dnfs_stats", columns)),
        "prev": (names, rows_of(docs[0], "dnfs_stats", columns)),
        "clock": (["now_t"], [[T1]]),
    }
    pack = {
        row["inst_id"]: row
        for row in run_core(
            "dnfs_iops_step.sql", "the interval that just ended, per instance", tables, {"dnfs_prev_t": T0}
        )
    }
    agent = {dict(p.tags)["instance"]: p.fields for p in agent_points(raws) if p.measurement == "dnfsmon_dnfs_io"}
    assert len(pack) == 2
    for inst, row in pack.items():
        mine = agent[f"simdb{int(inst)}"]
        assert row["read_iops"] == pytest.approx(mine["read_iops"], rel=1e-12)
        assert row["write_iops"] == pytest.approx(mine["write_iops"], rel=1e-12)
        assert row["total_iops"] == pytest.approx(mine["total_iops"], rel=1e-12)
        assert row["read_mbps"] == pytest.approx(mine["read_mib_per_s"], rel=1e-12)
        assert row["avg_read_kb"] == pytest.approx(mine["avg_read_kib"], rel=1e-12)
        truth = simulator.truth(workload, int(inst), T0, T1)
        assert row["read_iops"] == pytest.approx(truth.observable_read_iops, rel=0.005)
        assert row["read_iops"] < truth.read_iops  # the churned processes' share is left out, never invented


def test_dnfs_latency_events_and_histogram_give_the_agents_figures():
    workload = simulator.Workload(instances=1, release="19c")
    raws, docs = documents(workload)
    columns = ["INST_ID", "EVENT", "TOTAL_WAITS", "TIME_WAITED_MICRO", "TOTAL_WAITS_FG", "TIME_WAITED_MICRO_FG"]
    names = [c.lower() for c in columns]
    tables = {
        "cur": (names, rows_of(docs[1], "system_event", columns)),
        "prev": (names, rows_of(docs[0], "system_event", columns)),
        "clock": (["now_t"], [[T1]]),
    }
    events = run_core("dnfs_latency_step.sql", "events in the interval that just ended", tables, {"dnfs_prev_t": T0})
    points = agent_points(raws)
    agent = {dict(p.tags)["event"]: p.fields for p in points if p.measurement == "dnfsmon_oracle_event"}
    assert len(events) == len(oracle.IO_EVENTS)
    for row in events:
        mine = agent[row["event"]]
        assert row["waits_per_s"] == pytest.approx(mine["waits_per_s"], rel=1e-12)
        assert row["avg_ms"] * 1000 == pytest.approx(mine["avg_latency_us"], rel=1e-12)
    hist = ["INST_ID", "WAIT_COUNT", "WAIT_TIME_MICRO"]

    def only_sequential(doc):
        rows = zip(rows_of(doc, "event_histogram", hist), rows_of(doc, "event_histogram", ["EVENT"]))
        return [r for r, e in rows if e[0] == "db file sequential read"]

    tables = {
        "cur": (["inst_id", "wait_count", "bound_us"], only_sequential(docs[1])),
        "prev": (["inst_id", "bound_us", "wait_count"], [[r[0], r[2], r[1]] for r in only_sequential(docs[0])]),
        "clock": (["now_t"], [[T1]]),
    }
    buckets = run_core(
        "dnfs_latency_step.sql", "histogram of 'db file sequential read' in the interval", tables, {"dnfs_prev_t": T0}
    )
    agent_buckets = {
        dict(p.tags)["le_us"]: p.fields["waits_per_s"]
        for p in points
        if p.measurement == "dnfsmon_oracle_latency_histogram" and dict(p.tags)["event"] == "db file sequential read"
    }
    assert buckets and all(
        row["bucket_waits_per_s"] == pytest.approx(agent_buckets[str(int(float(row["bucket"])))], rel=1e-12)
        for row in buckets
    )
    assert sum(row["pct"] for row in buckets) == pytest.approx(100.0)
