"""The SQL*Plus pack: SQL*Plus's documented rules, release switches, lint, column facts, grants, and its arithmetic.

No SQL*Plus or Oracle runs here. tests/sqlplus_rules.py reads each script as
SQL*Plus does and reports what SQL*Plus would not do as the script means (the
rule table with its sources is in sql/README.md); its NEW_VALUE queries run in
SQLite against a one-row V$INSTANCE per release. The arithmetic is proven the
same way as before: each print query (between "-- core:" markers) runs in
SQLite, transpiled by sqlglot, with its two snapshots replaced by recorded
simulator rows; the agent must give the same figures.
"""

from __future__ import annotations

import functools
import glob
import json
import os
import random
import re
import shutil
import sqlite3
import string
import subprocess
import sys

import pytest
import sqlglot
from sqlglot import exp

import sqlplus_rules
from dnfsmon import oracle_db, oracle_facts, simulator
from dnfsmon.collect import compute
from dnfsmon.sources import oracle
from sqlcheck import sorting_constructs, violations

ROOT = os.path.join(os.path.dirname(__file__), "..")
SQL = os.path.join(ROOT, "sql")
SCRIPTS = sorted(glob.glob(os.path.join(SQL, "*.sql")) + glob.glob(os.path.join(SQL, "setup", "*.sql")))
USER_SCRIPTS = [
    "dnfs_iops.sql",
    "dnfs_latency.sql",
    "dnfs_channels.sql",
    "dnfs_servers.sql",
    "dnfs_files.sql",
    "dnfs_check.sql",
]
# V$INSTANCE.VERSION as each release reports it.
VERSIONS = oracle_facts.VERSION_STRINGS
# SYS objects ALL_OBJECTS shows a user the setup script made (DBMS_SESSION: EXECUTE to PUBLIC by default).
ALL_GRANTED = (
    "DBMS_LOCK",
    "DBMS_SESSION",
    "GV_$EVENT_HISTOGRAM",
    "GV_$EVENT_HISTOGRAM_MICRO",
    "V_$DIAG_ALERT_EXT",
    "GV_$CONTAINERS",
)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def name(path):
    return os.path.relpath(path, SQL)


def run(script, *args, release="19c", granted=ALL_GRANTED, defines=None, open_mode="READ WRITE"):
    """The checker's run of `@script args` on `release` with the SYS objects `granted` visible (read-only result)."""
    return _run(script, args, release, tuple(granted), tuple(sorted((defines or {}).items())), open_mode)


@functools.cache
def _run(script, args, release, granted, defines, open_mode):
    database = sqlplus_rules.Database(version=VERSIONS[release], sys_objects=granted, open_mode=open_mode)
    return sqlplus_rules.start(SQL, script, *args, database=database, defines=dict(defines))


def io_events():
    """The agent's I/O wait events (oracle_facts.IO_EVENTS once it moves there)."""
    return tuple(getattr(oracle_facts, "IO_EVENTS", None) or oracle.IO_EVENTS)


# --- the rules, each caught in a minimal bad script ---

RULE_EXAMPLES = {
    "blank-line": "select 1\n\nfrom dual;\n",
    "unterminated": "select 1\nfrom dual\n",
    "slash-reruns": "select 1 from dual;\n/\n",
    "substitution-first-word": "define x = '--'\n&x.select 1 from dual;\n",
    "undefined-variable": "select '&never_defined' from dual;\n",
    "new-value-unsafe": "column v new_value x noprint\nselect version as v from v$instance i, gv$process p;\nprompt &x\n",
    "nesting": "@@bad\n",
    "variable-type": "variable v varchar2(40000)\n",
    "bind-undeclared": "select :nowhere from dual;\n",
    "whenever": "grant select on sys.v_$instance to someone;\n",
    "set-unknown": "set sqlblanklinez on\n",
    "termout-off": "set termout off\nselect 1 from dual;\n",
    "store-set": "store set saved.sql replace\ncolumn x format a10\n@saved.sql\n",
    "unknown-command": "cur as (\n",
    "ampersand-comment": "define a = 1\nselect 1\n-- see &a\nfrom dual;\n",
    "column-clear": "column never_set clear\n",
    "bind-stale": "variable t number\nbegin\n    if :t is null then\n        :t := 1;\n    end if;\nend;\n/\n",
    "clear-columns": "column x format a10\nclear columns\n",
    "column-dba-name": "column name heading 'Parameter' format a24\nselect name from v$parameter;\ncolumn name clear\n",
    "secret-substituted": "whenever sqlerror exit failure\naccept pw char prompt 'Password: ' hide\n"
    "begin\n    execute immediate 'alter user dnfsmon identified by \"&pw\"';\nend;\n/\n",
    "clob-free": "variable c clob\nbegin\n    select to_clob('x') into :c from dual;\nend;\n/\n",
    "substitution-length": "define x = '" + "a" * 241 + "'\n",
    "name-length": "variable dnfs_a_bind_name_of_thirty_one_b number\n",
    "script-suffix": "@@bad\n",
    "script-not-found": "@@nowhere.sql\n",
    "login-settings": "set sqlcase upper\nselect 'x' from dual;\n",
    "substitution-rescan": 'set define off\ndefine x = "&y"\nset define on\nprompt &x\n',
    "xml-reverse-axis": "select k from xmltable('/d/t/r' passing xmltype('<d/>')\n"
    "    columns k varchar2(1) path 'ancestor::t/@k');\n",
}


def test_every_rule_has_a_failing_example_and_a_line_in_the_readme():
    assert set(RULE_EXAMPLES) == set(sqlplus_rules.RULES)
    readme = read(os.path.join(SQL, "README.md"))
    table = re.findall(r"(?m)^\| `([a-z-]+)` \|", readme)
    assert sorted(table) == sorted(sqlplus_rules.RULES)


def test_no_xml_path_in_the_pack_looks_above_or_before_its_row():
    """dba-review F1: one XMLTABLE read both snapshots of a statement, each row's snapshot tag taken
    with the column PATH 'ancestor::t/@k'. Without RETURNING SEQUENCE BY REF (not in 11.2) each row is
    a copy of its node, so its ancestors are not there (SQL Language Reference, XMLTABLE; SQL*Plus
    User's Guide, SET XQUERY NODE BYVALUE): the tag read NULL and @dnfs_iops and @dnfs_latency printed
    nothing. Every file of the pack, whether a run reaches it or not, is read for such a path (the
    runs' statements are checked by the rule xml-reverse-axis too)."""
    found = []
    for name in sorted(os.listdir(SQL)):
        if name.endswith(".sql"):
            for function, path in sqlplus_rules._xml_paths(read(os.path.join(SQL, name))):
                if sqlplus_rules.REVERSE_AXIS.search(path):
                    found.append((name, function, path))
    assert found == []
    for path in ("ancestor::t/@k", "../@k", "parent::t/@k", "preceding-sibling::r", "ancestor-or-self::t"):
        assert sqlplus_rules.REVERSE_AXIS.search(path), path
    for path in ("/s/r", "@k", "n", "following-sibling::r", "child::r/@k", "descendant::r"):
        assert not sqlplus_rules.REVERSE_AXIS.search(path), path


@pytest.mark.parametrize("rule", sorted(RULE_EXAMPLES))
def test_the_checker_catches_each_rule(tmp_path, rule):
    (tmp_path / "bad.sql").write_text(RULE_EXAMPLES[rule])
    result = sqlplus_rules.start(str(tmp_path), "bad.sql")
    found = {f.rule for f in result.findings}
    if rule == "store-set":
        found |= {"store-set"} if sqlplus_rules.leftovers(result) else set()
    assert rule in found, [str(f) for f in result.findings]


def test_a_set_after_a_nested_blocks_handler_is_a_set_and_one_inside_a_handler_is_not(tmp_path):
    """create_monitor_user.sql catches ORA-65058 in a nested block: the sets after it still count."""
    body = (
        "variable t number\nvariable u number\nbegin\n    :u := null;\n    begin\n        null;\n    exception\n"
        "        when no_data_found then\n            :u := case when 1 = 1 then 1 end;\n    end;\n"
        "    :t := 1;\nend;\n/\nselect :t, :u from dual;\n"
    )
    (tmp_path / "x.sql").write_text(body)
    assert sqlplus_rules.start(str(tmp_path), "x.sql").findings == []
    (tmp_path / "y.sql").write_text(body.replace("    :u := null;\n", ""))
    found = [str(f) for f in sqlplus_rules.start(str(tmp_path), "y.sql").findings]
    assert found == ["y.sql:13: bind-stale: :u is read before this run sets it"], found


@pytest.mark.parametrize("column", ["file_name", "tablespace_name", "name", "member"])
def test_column_dba_name_covers_the_dictionary_names_dbas_format(tmp_path, column):
    """Review: dnfs_check.sql formatted and cleared FILE_NAME (DBA_DATA_FILES), a name DBAs format in login.sql."""
    (tmp_path / "x.sql").write_text(f"column {column} heading 'File' format a40\ncolumn {column} clear\n")
    found = {f.rule for f in sqlplus_rules.start(str(tmp_path), "x.sql").findings}
    assert found == {"column-dba-name"}


def test_new_value_with_no_rows_keeps_a_given_argument_and_defines_a_missing_one(tmp_path):
    """The optional-argument idiom: `@x 7` keeps &1 = 7; `@x` gets &1 defined and empty, never a prompt."""
    (tmp_path / "x.sql").write_text(
        'column 1 new_value 1 noprint\nselect null as "1" from dual where 1 = 0;\nprompt [&1]\n'
    )
    given = sqlplus_rules.start(str(tmp_path), "x.sql", "7")
    missing = sqlplus_rules.start(str(tmp_path), "x.sql")
    assert given.prompts == ["[7]"] and missing.prompts == ["[]"]
    assert given.findings == [] and missing.findings == []


def test_the_checker_finds_the_reviewed_failures_in_the_old_pack(tmp_path):
    """A1, A3, A5, A7 as shipped at 15dd30b: each finding is one the fixed pack no longer has."""
    old = {
        "step.sql": "with\nclock as (\n    select 1 as now_t from dual\n),\n\ncur as (\n    select 1 as n from dual\n)\n"
        "select now_t from clock;\n",
        "setup.sql": "column c new_value _dnfs_container noprint\n"
        "select case when sys_context('USERENV', 'CON_NAME') = 'CDB$ROOT' then 'container = all' end as c from dual;\n"
        "grant create session to dnfsmon &_dnfs_container;\n"
        "define _dnfs_pre18 = '--'\n&_dnfs_pre18.grant execute on sys.dbms_lock to dnfsmon;\n",
        "start.sql": "set termout off\ncolumn s new_value _dnfs_sleep noprint\n"
        "select 'dbms_session.sleep' as s from v$instance;\nset termout on\n",
    }
    for file, text in old.items():
        (tmp_path / file).write_text(text)
    rules = {f: {x.rule for x in sqlplus_rules.start(str(tmp_path), f).findings} for f in old}
    assert "blank-line" in rules["step.sql"] and "unknown-command" not in rules["step.sql"]
    assert {"substitution-first-word", "whenever", "new-value-unsafe"} <= rules["setup.sql"]
    assert {"termout-off", "new-value-unsafe"} <= rules["start.sql"]


# --- every script, every release, with and without the optional grants ---


SETUP_SCRIPTS = ["setup/create_monitor_user.sql", "setup/set_monitor_password.sql"]


@pytest.mark.slow
@pytest.mark.parametrize("release", list(oracle_facts.RELEASES))
@pytest.mark.parametrize("script", [*USER_SCRIPTS, *SETUP_SCRIPTS])
def test_every_script_passes_the_checker_for_every_release(script, release):
    arguments = ((), ("C##MONITOR",)) if script.startswith("setup/") else ((), ("5", "2"), ("ash",))
    for granted in (ALL_GRANTED, ()):
        for args in arguments:
            result = run(script, *args, release=release, granted=granted)
            assert [str(f) for f in result.findings] == [], (granted, args)
            assert sqlplus_rules.leftovers(result) == [], (granted, args)
    if script == "setup/create_monitor_user.sql":  # the password life, its second argument
        result = run(script, "C##MONITOR", "365", release=release)
        assert result.findings == [] and sqlplus_rules.leftovers(result) == []


@pytest.mark.parametrize("release", ["11.2.0.4", "19c"])
def test_a_second_run_in_the_same_session_starts_clean_and_leaves_the_dbas_columns(release):
    """Review: bind variables and COLUMN settings outlive a script in the SQL*Plus session.

    Bind variables keep their values from one script to the next, so a second
    @dnfs_iops would have diffed against the first run's last snapshot (and a
    Ctrl-C in the first would stop the second at once); dnfs_iops and
    dnfs_latency also share bind names. Each run now sets every bind before
    reading it. The DBA's own COLUMN settings (login.sql) survive: the pack
    clears its columns by name, never with CLEAR COLUMNS.
    """
    database = sqlplus_rules.Database(version=VERSIONS[release], sys_objects=ALL_GRANTED)
    session = sqlplus_rules.SqlPlus(SQL, database)
    # What a login.sql formats: V$ column names (those the pack reads among them).
    dba_columns = ("name", "value", "event", "inst_id", "filename", "message_text", "username", "sql_text")
    for script, args in (
        ("dnfs_iops.sql", ("5", "2")),
        ("dnfs_latency.sql", ("5", "2")),
        ("dnfs_iops.sql", ("5", "2")),
        ("dnfs_check.sql", ()),
        ("dnfs_channels.sql", ()),
        ("dnfs_iops.sql", ()),
    ):
        result = session.start(script, *args, dba_columns=dba_columns)
        assert [str(f) for f in result.findings] == [], script
        assert sqlplus_rules.leftovers(result) == [], script
        assert set(dba_columns) <= set(result.columns), script
    for path in SCRIPTS:
        assert not re.search(r"(?im)^\s*cl(ear)?\s+col", read(path)), name(path)


def switches(release, dbms_lock=True, dbms_session=True):
    """The Python model of _dnfs_start.sql's release switches.

    DBMS_SESSION.SLEEP exists from 18c (PL/SQL Packages and Types Reference,
    DBMS_SESSION.SLEEP); a user may call it only with EXECUTE on it, which a
    hardened database revokes from PUBLIC, and then DBMS_LOCK.SLEEP (every
    release) is the one left.
    """
    at = oracle_facts.release_tuple(release)
    micro = at >= oracle_facts.release_tuple("12.1.0.2")
    v18 = at >= oracle_facts.release_tuple("18c") and dbms_session
    if micro:
        reconnects = "spreco + dpreco"
    else:
        reconnects = "reco" if at < oracle_facts.release_tuple("12.1.0.1") else "to_number(null)"
    return {
        "_dnfs_sleep": "dbms_session.sleep" if v18 else "dbms_lock.sleep",
        "_dnfs_can_sleep": "1" if v18 or dbms_lock else "0",
        "_dnfs_nfsversion": "s.nfsversion" if at >= oracle_facts.release_tuple("12.1.0.1") else "'n/a'",
        "_dnfs_reconnects": reconnects,
        "_dnfs_hist_view": "gv$event_histogram_micro" if micro else "gv$event_histogram",
        "_dnfs_hist_bound": "wait_time_micro" if micro else "wait_time_milli * 1000",
    }


@pytest.mark.parametrize("release", list(oracle_facts.RELEASES))
def test_the_release_switch_query_gives_the_model(release):
    defaults = {"_dnfs_default_interval": "5", "_dnfs_default_count": "12", "_dnfs_loop_step": "dnfs_iops_step"}
    for dbms_lock in (True, False):
        for dbms_session in (True, False):
            granted = ("DBMS_LOCK",) * dbms_lock + ("DBMS_SESSION",) * dbms_session
            result = run("_dnfs_start.sql", release=release, granted=granted, defines=defaults)
            model = switches(release, dbms_lock, dbms_session)
            assert {k: result.defined[k] for k in model} == model, granted
            step = "dnfs_iops_step" if model["_dnfs_can_sleep"] == "1" else "_dnfs_noop"
            assert result.defined["_dnfs_step"] == step, granted


@pytest.mark.parametrize("release", ["18c", "19c", "23ai"])
def test_without_execute_on_dbms_session_the_loop_sleeps_with_dbms_lock_or_runs_nothing(release):
    """dba-review P6: with EXECUTE on DBMS_SESSION revoked from PUBLIC, every sleep raised PLS-00201
    and the loop ran on without sleeping (millisecond intervals). Now DBMS_LOCK.SLEEP is used when
    it may be executed, and otherwise nothing runs and one line names the grant."""
    locked = run("dnfs_iops.sql", "5", "3", release=release, granted=("DBMS_LOCK",))
    assert steps(locked) == 3 and locked.defined.get("_dnfs_sleep") is None  # undefined at the end
    sleeps = [s for f, _, s in locked.statements if f == "_dnfs_sleep.sql"]
    assert len(sleeps) == 3 and all("dbms_lock.sleep(5)" in s for s in sleeps), sleeps
    neither = run("dnfs_iops.sql", "5", "3", release=release, granted=())
    assert steps(neither) == 0
    said = [p for p in neither.prompts if "GRANT EXECUTE ON SYS.DBMS_SESSION TO DNFSMON" in p]
    assert len(said) == 1 and "nothing run" in said[0]
    assert steps(run("dnfs_iops.sql", "5", "3", release=release, granted=("DBMS_SESSION",))) == 3


def steps(result, step="dnfs_iops_step.sql"):
    return result.scripts.count(step)


def test_before_18c_without_dbms_lock_nothing_runs_and_the_grant_is_named():
    result = run("dnfs_iops.sql", release="12.2", granted=())
    assert steps(result) == 0
    assert any("GRANT EXECUTE ON SYS.DBMS_LOCK TO DNFSMON (nothing run)" in p for p in result.prompts)
    assert steps(run("dnfs_iops.sql", release="12.2", granted=("DBMS_LOCK",))) == 12


@pytest.mark.parametrize(
    ("args", "count", "message"),
    [
        ((), 12, None),
        (("10", "30"), 30, None),
        (("5", "70"), 60, "Count 70 capped at 60"),
        (("ash",), 0, 'Interval "ash" is not a whole number'),
        (("0",), 0, "Interval 0 is outside 1 to 3600"),
        (("4000",), 0, "Interval 4000 is outside 1 to 3600"),
        (("5", "0"), 0, "Count 0 is below 1"),
        (("5", "x"), 0, 'Count "x" is not a whole number'),
        (("0.5",), 0, 'Interval "0.5" is not a whole number'),
    ],
)
def test_arguments_are_validated_and_the_cap_is_stated(args, count, message):
    result = run("dnfs_iops.sql", *args)
    assert steps(result) == count
    said = [p.strip() for p in result.prompts if p.strip() and not p.startswith("dNFS NFS")]
    if message is None:
        assert said == []
    else:
        assert len(said) == 1 and message in said[0], said


def test_ctrl_c_during_a_sleep_ends_the_loop():
    """_dnfs_sleep.sql sets :dnfs_stop on ORA-01013; _dnfs_next.sql's own query then chooses _dnfs_noop."""
    sleep = read(os.path.join(SQL, "_dnfs_sleep.sql"))
    assert re.search(r"if sqlcode = -1013 then\s+:dnfs_stop := 1;", sleep)
    text = read(os.path.join(SQL, "_dnfs_next.sql"))
    query = text[text.index("select") :].rstrip().rstrip(";")
    for stop, expected in ((1, "_dnfs_noop"), (None, "dnfs_iops_step")):
        sql = query.replace("&_dnfs_remaining", "5").replace("&_dnfs_step", "dnfs_iops_step")
        sql = sql.replace(":dnfs_stop", "NULL" if stop is None else str(stop))
        sqlite = sqlglot.transpile(sql, read="oracle", write="sqlite")[0].replace(" FROM dual", "")
        assert sqlite3.connect(":memory:").execute(sqlite).fetchone() == (expected, 4)


def test_an_empty_gv_dnfs_stats_is_said_not_silent():
    result = run("dnfs_iops.sql", "5", "2")
    notes = [s for f, _, s in result.statements if f == "dnfs_iops_step.sql" and "No rows in GV$DNFS_STATS" in s]
    assert len(notes) == 2 and all(":dnfs_cur_n = 0" in s for s in notes)


# --- the pair-of-snapshots loop ---


def views_in(sql):
    tree = sqlglot.parse_one(_parsable(sql), read="oracle")
    ctes = {c.alias.upper() for c in tree.find_all(exp.CTE)}
    return {t.name.upper() for t in tree.find_all(exp.Table) if t.name and t.name.upper() not in ctes | {"DUAL"}}


def _parsable(sql):
    sql = sql.strip().rstrip("/").strip().rstrip(";")
    if sql.lower().startswith(("begin", "declare")):
        match = re.search(r"(?is)\b(with|select)\b.*?;", sql)
        sql = match.group(0).rstrip(";") if match else "select 1 from dual"
        sql = re.sub(r"(?is)\binto\s+:\w+(\s*,\s*:\w+)*", "", sql)
    sql = re.sub(r"(?i)xmlserialize\(\s*content\b", "to_clob(", sql)
    return re.sub(r"(?i)\)\s*as\s+clob\s*\)", "))", sql)


@pytest.mark.parametrize(
    ("script", "view_files"),
    [
        ("dnfs_iops.sql", {"GV$DNFS_STATS": {"dnfs_iops_snapshot.sql"}}),
        (
            "dnfs_latency.sql",
            {
                "GV$SYSTEM_EVENT": {"dnfs_latency_snapshot.sql"},
                # Each snapshot's STARTUP_TIME comes in its own statement, from the same moment.
                "GV$INSTANCE": {"dnfs_latency_snapshot.sql", "dnfs_latency_hist_snapshot.sql"},
                "GV$EVENT_HISTOGRAM_MICRO": {"dnfs_latency_hist_snapshot.sql"},
            },
        ),
    ],
)
def test_each_view_is_read_in_one_place_with_the_clock_and_printing_is_arithmetic(script, view_files):
    result = run(script, "5", "3")
    readers = {}
    for file, line, sql in result.statements:
        for view in views_in(sql) - {"V$INSTANCE", "V$DATABASE", "ALL_OBJECTS"}:  # the probes
            readers.setdefault(view, set()).add((file, line))
            assert "systimestamp" in sql.lower(), f"{file}:{line} reads {view} without the clock"
    assert {v: {f for f, _ in places} for v, places in readers.items() if v != "GV$PROCESS"} == view_files
    assert all(len(places) == len(view_files.get(v, {v})) for v, places in readers.items())
    for file, _, sql in result.statements:
        if "-- core:" in sql or (file.endswith("_step.sql") and sql.lstrip().lower().startswith("with")):
            assert views_in(sql) == set(), f"{file} reads a view while printing"


def test_intervals_are_contiguous():
    """Each step: new snapshot, print cur - prev, then prev := cur; the next interval starts where this one ended."""
    result = run("dnfs_iops.sql", "5", "3")
    order = []
    for file, _, sql in result.statements:
        if file == "dnfs_iops_snapshot.sql":
            order.append("snapshot")
        elif file == "dnfs_iops_accumulate.sql" and "xmlagg(" in sql:
            order.append("diff")
        elif file == "dnfs_iops_print.sql":
            order.append("print" if ":dnfs_iv_us" in sql else "run")
        elif file == "_dnfs_shift_lob.sql" and ":dnfs_prev := taken" in sql:
            order.append("shift")
        elif file == "_dnfs_shift_lob.sql" and ":dnfs_run := taken" in sql:
            order.append("totals")
    assert order == ["snapshot", "shift"] + ["snapshot", "diff", "totals", "print", "shift"] * 3 + ["run"]
    accumulate = read(os.path.join(SQL, "dnfs_iops_accumulate.sql"))
    assert "round((:dnfs_cur_t - :dnfs_prev_t) * 1000000) as microseconds" in accumulate
    for script in ("dnfs_iops_step.sql", "dnfs_iops_accumulate.sql", "dnfs_iops_print.sql"):
        text = read(os.path.join(SQL, script)).lower()
        assert "sysdate" not in text and "systimestamp" not in text, script


def test_a_missing_histogram_grant_leaves_the_events():
    result = run("dnfs_latency.sql", "5", "3", granted=("DBMS_LOCK",))
    assert steps(result, "dnfs_latency_step.sql") == 3 and steps(result, "dnfs_latency_hist_step.sql") == 0
    assert any("GRANT SELECT ON SYS.GV_$EVENT_HISTOGRAM_MICRO TO DNFSMON" in p for p in result.prompts)
    event_reads = [s for f, _, s in result.statements if f == "dnfs_latency_snapshot.sql"]
    assert len(event_reads) == 4 and all("gv$event_histogram" not in s for s in event_reads)


FIXED_VIEW = re.compile(r"^(G?V\$\w+|DUAL)$")


@pytest.mark.parametrize("script", USER_SCRIPTS)
def test_on_a_mounted_database_no_script_reads_a_dictionary_view(script):
    """Review F3: mounted, not open (a physical standby without Active Data Guard), only fixed tables
    and views answer; a dictionary view fails with ORA-01219 (Database Error Messages, ORA-01219). The
    probes read ALL_OBJECTS; now OPEN_MODE from V$DATABASE (a fixed view) replaces it by an empty
    stand-in, and the looping scripts, which sleep with a stored package, refuse with one line."""
    for release in ("11.2.0.4", "19c"):
        result = run(script, release=release, open_mode="MOUNTED")
        assert [str(f) for f in result.findings] == []
        read = {(f, v) for f, _, sql in result.statements for v in views_in(sql) if not FIXED_VIEW.match(v)}
        assert read == set(), read
        if script in ("dnfs_iops.sql", "dnfs_latency.sql"):
            assert steps(result, script.replace(".sql", "_step.sql")) == 0
            assert any("The database is mounted, not open" in p for p in result.prompts), result.prompts
        # The stand-in lists no object: no grant is asked for that the user may well have.
        assert not any("GRANT" in p for p in result.prompts), result.prompts
    # Open, the probes read ALL_OBJECTS as before.
    assert any("ALL_OBJECTS" in views_in(sql) for _, _, sql in run(script).statements)


LOOPING_SCRIPTS = ("dnfs_iops.sql", "dnfs_latency.sql")
ONE_SHOT_SCRIPTS = tuple(s for s in USER_SCRIPTS if s not in LOOPING_SCRIPTS)


@pytest.mark.parametrize("release", sorted(VERSIONS))
def test_nothing_a_looping_script_sends_a_mounted_database_sorts(release):
    """Review F3: before the database is open only in-memory sorts are supported (Database Error
    Messages, ORA-01220), and the refused loops still took a first snapshot (XMLAGG over GV$DNFS_STATS).
    As the agent's statements (tests/test_oracle.py), every statement a looping script sends a mounted
    database is parsed and holds no DISTINCT, GROUP BY, ORDER BY, aggregate (XMLAGG too), analytic
    function or set operator that removes duplicates; a PL/SQL block holds no query. Each refuses in one
    line that names the agent and reads no dNFS view."""
    for script in LOOPING_SCRIPTS:
        result = run(script, release=release, open_mode="MOUNTED")
        assert [str(f) for f in result.findings] == [], script
        for file, line, sql in result.statements:
            if re.match(r"(?i)\s*(begin|declare)\b", sql):
                assert not re.search(r"(?i)\bselect\b", sql), (script, file, line)
            else:
                query = sql.strip().rstrip("/").rstrip().rstrip(";")
                assert sorting_constructs(query) == [], (script, file, line, sql)
        refused = [p for p in result.prompts if "mounted, not open" in p]
        assert len(refused) == 1 and "dnfsmon agent" in refused[0], (script, result.prompts)
        # Nothing but the start's probes and the end: no dNFS view is read, and so no join of
        # GV$DNFS_STATS to GV$PROCESS (review W4) either.
        assert not any("DNFS" in v.upper() for _, _, sql in result.statements for v in views_in(sql)), script


@pytest.mark.parametrize("script", LOOPING_SCRIPTS)
def test_a_refused_loop_sends_no_pl_sql_block(script):
    """dba-review W1: a refused loop still ran the blocks that reset its binds and free their LOBs with
    DBMS_LOB. Mounted, a block calling a stored package fails, and under a login.sql's WHENEVER SQLERROR
    EXIT the session ends before _dnfs_end.sql restores the DBA's settings. Those blocks now run only
    when the loop does (its *_report.sql): a refused run (mounted, a refused argument, no sleep grant)
    sends no PL/SQL block and nothing naming DBMS_LOB; a run that loops still frees every snapshot."""
    refused_runs = [
        run(script, release="11.2.0.4", open_mode="MOUNTED"),
        run(script, release="19c", open_mode="MOUNTED"),
        run(script, "0", "5"),
        run(script, release="19c", granted=()),
    ]
    for result in refused_runs:
        assert [str(f) for f in result.findings] == [] and sqlplus_rules.leftovers(result) == []
        assert any("nothing run" in p for p in result.prompts), result.prompts
        sent = [(f, sql) for f, _, sql in result.statements]
        assert not any(re.match(r"(?i)\s*(begin|declare)\b", sql) for _, sql in sent), sent
        assert not any("dbms_lob" in sql.lower() for _, sql in sent), sent
    looped = run(script, "5", "2")
    assert [str(f) for f in looped.findings] == [] and sqlplus_rules.leftovers(looped) == []
    # Each CLOB bind freed at the start (what an earlier run left) and at the end.
    lobs = len(re.findall(r"(?m)^variable \w+ clob$", read(os.path.join(SQL, script))))
    frees = [f for f, _, sql in looped.statements if "dbms_lob.freetemporary" in sql.lower()]
    assert lobs >= 4 and frees.count("_dnfs_free_lob.sql") >= 2 * lobs


@pytest.mark.parametrize("release", ("11.2.0.4", "19c"))
def test_a_mounted_loop_names_an_open_instance_or_the_primary(release):
    """dba-review W2: the test is V$DATABASE.OPEN_MODE of the connected instance, so on RAC another
    instance may be open; the refusal named only the agent, which cannot read a mounted 11.2 database
    (SYSDG is 12.1 and later). The line names an open instance (RAC) or the primary, and the manual
    says what is not detected (a PDB left MOUNTED in an open CDB)."""
    for script in LOOPING_SCRIPTS:
        result = run(script, release=release, open_mode="MOUNTED")
        refused = [p for p in result.prompts if "mounted, not open" in p]
        assert len(refused) == 1, result.prompts
        assert "Connect to an open instance (RAC) or the primary" in refused[0], refused[0]
        assert "from 12.1 the dnfsmon agent" in refused[0], refused[0]
        assert len(refused[0]) <= sqlplus_rules.MAX_SUBSTITUTION_VALUE
    section = read(os.path.join(SQL, "README.md")).split("## On a mounted database", 1)[1].split("\n## ", 1)[0]
    section = re.sub(r"\s+", " ", section)
    assert "Not detected: a PDB left MOUNTED in an open CDB" in section and "ORA-01219" in section


@pytest.mark.parametrize("release", ("11.2.0.4", "19c"))
def test_the_one_shot_scripts_run_on_a_mounted_database(release):
    """dba-review F2: @dnfs_check, @dnfs_channels, @dnfs_servers and @dnfs_files refused in MOUNT,
    sending 11.2.0.4 DBAs to an agent that cannot read a mounted 11.2 database (SYSDG is 12.1 and later)
    and dropping a standby's dNFS check. Their sorts over GV$DNFS_FILES take processes x files rows (dba-review
    N2); one needing a temporary segment fails with ORA-01220 (Database Error Messages), and under WHENEVER
    SQLERROR EXIT SQL*Plus exits before the settings are put back (SQL*Plus User's Guide): the manual says so.
    Mounted, each reads the dNFS views it reads open, prints no refusal, and joins no dNFS view to
    GV$PROCESS; the manual says so, and that the loops refuse."""
    for script in ONE_SHOT_SCRIPTS:
        mounted = run(script, release=release, open_mode="MOUNTED")
        assert [str(f) for f in mounted.findings] == [], script
        assert not any("nothing run" in p for p in mounted.prompts), (script, mounted.prompts)
        dnfs_views = {v for _, _, sql in run(script, release=release).statements for v in views_in(sql) if "DNFS" in v}
        assert dnfs_views, script
        read_mounted = [views_in(sql) for _, _, sql in mounted.statements]
        assert dnfs_views == {v for views in read_mounted for v in views if "DNFS" in v}, script
        assert not any("GV$PROCESS" in views and any("DNFS" in v for v in views) for views in read_mounted)
    section = read(os.path.join(SQL, "README.md")).split("## On a mounted database", 1)[1].split("\n## ", 1)[0]
    section = re.sub(r"\s+", " ", section)
    assert "@dnfs_check, @dnfs_files, @dnfs_servers and @dnfs_channels run" in section
    assert "processes x files" in section and "fails with ORA-01220" in section
    assert "WHENEVER SQLERROR EXIT: then SQL*Plus exits there, before the pack puts your settings back" in section
    assert "What the probes and the loops send a mounted database" in section
    assert "they refuse with one line" in section


def test_the_one_shot_scripts_read_the_views_in_their_own_file():
    """dba-review W5: the one-shot scripts read the views through `@@&_dnfs_report_step..sql`, a script
    name that is a substitution variable, which SQLcl fails (oracle/oracle-db-tools issue 52) while
    sql/README.md listed only the loops as unsupported there. Their queries are in their own file
    again: every statement reading a dNFS view is sent from the script itself, and the one substituted
    @@ in a script called with @@ they reach is _dnfs_end.sql's, after their output (sql/README.md, SQLcl)."""
    for script in ONE_SHOT_SCRIPTS:
        result = run(script)
        reading = {f for f, _, sql in result.statements if any("DNFS" in v for v in views_in(sql))}
        assert reading == {script}, (script, reading)
        assert "_dnfs_report_step" not in read(os.path.join(SQL, script)), script
        assert nested_substituted_call(script), script
        assert not nested_substituted_call(script, skipping=("_dnfs_end.sql",)), script


def test_the_event_list_is_defined_once_and_is_the_agents():
    """dba-review P9: the pack read 8 events, the agent 11 ('log file sync' and temp I/O besides); the
    list is kept in two substitution variables, each within SQL*Plus's 240 characters."""
    result = run("_dnfs_start.sql", defines={"_dnfs_default_interval": "0", "_dnfs_default_count": "0"})
    values = [result.defined["_dnfs_io_events"], result.defined["_dnfs_other_events"]]
    assert all(len(v) <= sqlplus_rules.MAX_SUBSTITUTION_VALUE for v in values)
    assert len(", ".join(values)) > sqlplus_rules.MAX_SUBSTITUTION_VALUE  # why it is two
    events = re.findall(r"'([^']+)'", ", ".join(values))
    assert events == list(oracle_facts.AGENT_EVENTS)
    assert re.findall(r"'([^']+)'", values[0]) == list(io_events())
    reads = [s for f, _, s in run("dnfs_latency.sql", "5", "1").statements if f == "dnfs_latency_snapshot.sql"]
    assert reads and all(all(f"'{e}'" in s for e in oracle_facts.AGENT_EVENTS) for s in reads)
    for path in SCRIPTS:
        if path.endswith("_dnfs_start.sql"):
            continue
        assert "db file scattered read" not in read(path), name(path)  # no second copy


# --- lint, column facts, writes, grants ---


@pytest.mark.slow
def test_sqlfluff_lint_sql_passes_from_the_repository_root():
    sqlfluff = os.path.join(os.path.dirname(sys.executable), "sqlfluff")
    done = subprocess.run([sqlfluff, "lint", "sql"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]


@pytest.mark.slow
def test_the_lint_configuration_still_sees_the_sql(tmp_path):
    """The templater blanks client commands only: a bad query in a script is still found."""
    shutil.copy(os.path.join(ROOT, ".sqlfluff"), tmp_path / ".sqlfluff")
    (tmp_path / "sql").mkdir()
    (tmp_path / "sql" / "bad.sql").write_text(
        "column x heading 'X'\nprompt hello\nselect s.pnum, p.spid\nfrom gv$dnfs_stats s, gv$process p\n"
        "where s.inst_id = p.inst_id;\n"
    )
    sqlfluff = os.path.join(os.path.dirname(sys.executable), "sqlfluff")
    done = subprocess.run([sqlfluff, "lint", "sql"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "L:   3" in done.stdout, done.stdout
    assert "L:   1 " not in done.stdout and "L:   2 " not in done.stdout, done.stdout  # client lines blanked


@functools.cache
def statements_for(release):
    found = []
    for script in [*USER_SCRIPTS, *SETUP_SCRIPTS]:
        for granted in (ALL_GRANTED, ()):
            arguments = () if script.startswith("setup/") else ("5", "2")
            for file, line, sql in run(script, *arguments, release=release, granted=granted).statements:
                found.append((file, line, sql))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("release", list(oracle_facts.RELEASES))
def test_every_statement_matches_the_column_facts(release):
    checked = 0
    for file, line, sql in set(statements_for(release)):
        if file.startswith("setup/"):
            continue  # its SQL is dynamic (run with EXECUTE IMMEDIATE) or reads the DBA_ views
        tree_sql = _parsable(sql)
        if "dual" in tree_sql.lower() and not (views_in(sql) - {"ALL_OBJECTS"}):
            continue
        if views_in(sql) & {"ALL_OBJECTS"}:
            continue
        assert violations(tree_sql, release) == [], f"{file}:{line} on {release}"
        checked += 1
    assert checked >= 12


def test_the_facts_check_sees_a_misspelt_column_in_a_script():
    text = read(os.path.join(SQL, "dnfs_channels.sql")).replace("sum(recvs)", "sum(recieves)")
    query = text[text.index("select\n    c.inst_id") : text.index("order by c.inst_id")].replace(
        "&_dnfs_reconnects", "spreco + dpreco"
    )
    assert violations(query, "19c") == ["GV$DNFS_CHANNELS.RECIEVES: no such column in 19c"]


WRITES = re.compile(r"(?im)^\s*(create|alter|drop|insert|update|delete|merge|truncate|grant|revoke)\b")


@pytest.mark.parametrize("path", [p for p in SCRIPTS if "setup" not in p], ids=name)
def test_scripts_create_and_change_nothing(path):
    text = read(path)
    assert not WRITES.search(text), name(path)
    assert "execute immediate" not in text.lower()
    assert "dbms_output" not in text.lower()  # rows are printed as each interval ends


@pytest.mark.parametrize("script", USER_SCRIPTS)
def test_header_block_and_settings_restored(script):
    text = read(os.path.join(SQL, script))
    for field in ("File name:", "Purpose:", "Usage:", "Notes:"):
        assert f"-- {field}" in text, script
    assert "@@_dnfs_start.sql" in text and text.rstrip().endswith("@@_dnfs_end.sql")


def granted_by_setup():
    text = read(os.path.join(SQL, "setup", "create_monitor_user.sql"))
    names = re.findall(r"'((?:G?V_\$|DBA_)\w+)'", text)
    return {n.replace("_$", "$", 1).upper() for n in names}


@pytest.mark.slow
def test_setup_grants_exactly_what_the_pack_and_the_agent_read():
    needed = set(oracle_db.VIEWS)
    for release in oracle_facts.RELEASES:
        for _, _, sql in statements_for(release):
            if not sql.lstrip().lower().startswith(("declare",)):
                needed |= views_in(sql)
    needed -= {"ALL_TAB_COLUMNS", "ALL_OBJECTS", "DBA_USERS", "DBA_TAB_PRIVS", "DBA_SYS_PRIVS"}
    needed |= read_by_the_container_check()
    assert granted_by_setup() == needed


def test_docs_oracle_md_lists_each_grant_of_the_setup_in_its_table():
    """docs/oracle.md lists the setup's grants per release in a table (not only this test's name):
    every object the setup script grants SELECT on is in it, and DBMS_LOCK."""
    text = read(os.path.join(ROOT, "docs", "oracle.md"))
    table = "\n".join(
        line for line in text.split("What `@setup/create_monitor_user` grants")[1].splitlines() if line.startswith("|")
    )
    for granted in granted_by_setup():
        if "$" not in granted:  # DBA_CONTAINER_DATA
            assert f"SYS.{granted}" in table, granted
            continue
        prefix, base = granted.split("$", 1)
        assert f"SYS.{prefix}_${base}" in table or (f"`{base}`" in table and f"SYS.{prefix}_$`" in table), granted
    assert "SYS.DBMS_LOCK" in table and "CONTAINER_DATA = ALL FOR" in table


@pytest.mark.parametrize(("define", "left"), [("&", "&"), ("off", "^"), ("^", "^")])
def test_a_store_set_that_cannot_write_its_file_leaves_the_dbas_ampersand_where_it_can_and_the_readme_says_so(
    define, left
):
    """STORE SET in a directory that is not writable saves nothing; the end's @ of its file then prints
    SP2-0310 ("script-not-found"). The end used to set DEFINE to ^ to read the file's name in every
    session, so a failed restore always left ^. Where the name was substituted at the start the DBA's
    DEFINE was & (the default): the end now runs the file with & (_dnfs_end_amp.sql), and a failed
    restore leaves that &. Where it was OFF or another character the DBA's own is unknowable
    (SQL*Plus has no command that reads a SET value into a variable: STORE, SHOW), so ^ is left, as
    the README says, with the recovery. A written file still puts every DEFINE back."""
    for writable in (True, False):
        database = sqlplus_rules.Database(version=VERSIONS["19c"], sys_objects=ALL_GRANTED)
        result = sqlplus_rules.SqlPlus(SQL, database, {"define": define}, writable).start("dnfs_servers.sql")
        missing = [f for f in result.findings if f.rule == "script-not-found"]
        if writable:
            assert not missing and result.settings["define"] == define
        else:
            assert len(missing) == 1 and "settings" in missing[0].text, missing
            assert result.settings["define"] == left
        assert sqlplus_rules.leftovers(result) == []
    readme = " ".join(read(os.path.join(SQL, "README.md")).split())
    assert "not writable" in readme and "`set define on`" in readme and "SP2-0310" in readme
    assert "your DEFINE stays `&`" in readme


def test_the_login_settings_rule_flags_an_ampersand_the_script_wrote_not_one_a_value_brought(tmp_path):
    """Under DEFINE ^ (or OFF) an `&name` the script wrote is sent as is: the rule catches it. An & that
    a value substituted with ^ brings into a literal is data the script chose to send (the end's test
    of whether the settings file's name was substituted): not flagged."""
    (tmp_path / "x.sql").write_text(
        "define v = \"&w\"\nset define '^'\nselect '^v' from dual;\nselect '&w' from dual;\n"
    )
    database = sqlplus_rules.Database(version=VERSIONS["19c"], sys_objects=ALL_GRANTED)
    result = sqlplus_rules.SqlPlus(str(tmp_path), database, {"define": "off"}).start("x.sql")
    flagged = [f for f in result.findings if f.rule == "login-settings"]
    assert [f.line for f in flagged] == [4], [str(f) for f in result.findings]


def test_the_readme_says_what_execute_on_dbms_lock_grants_besides_sleep():
    """dba-review P6 (the fallback): before 18c the setup grants EXECUTE on DBMS_LOCK for SLEEP, and a
    package grant gives every procedure: REQUEST (user locks an application may wait on) and
    ALLOCATE_UNIQUE (a row in DBMS_LOCK_ALLOCATED, and a COMMIT). The README says so, where the grant
    is described, and the setup grants it only before 18c."""
    text = read(os.path.join(SQL, "README.md"))
    section = text[text.index("## The monitoring user") :]
    section = section[: section.index("\n## ")]
    note = section[section.index("**What EXECUTE on DBMS_LOCK gives besides SLEEP.**") :]
    note = " ".join(note[: note.index("\n\n")].split())
    for words in ("REQUEST", "ALLOCATE_UNIQUE", "DBMS_LOCK_ALLOCATED", "commits", '"Security Model"', "From 18c"):
        assert words in note, words
    setup = read(os.path.join(SQL, "setup", "create_monitor_user.sql"))
    grant = setup.index("execute immediate 'grant execute on sys.dbms_lock to '")
    assert setup.rindex("if dbms_db_version.version < 18 then", 0, grant) > setup.rindex("end if;", 0, grant)


def read_by_the_container_check():
    """What the agent's container check reads beyond its views (ALL_ views need no grant)."""
    sent = (oracle_db.container_sql("V$DATAFILE"), oracle_db.container_data_sql(["GV$DNFS_STATS"]))
    return {name for sql in sent for name in views_in(sql) if not name.startswith("ALL_")}


def test_a_fresh_setup_grants_what_the_container_check_reads_and_reads_it_back():
    """A CDB user made by the setup lacked SELECT on DBA_CONTAINER_DATA, so `dnfsmon check` could
    only warn that it had not checked each view's CONTAINER_DATA: the setup grants it in a CDB (from
    12.1, where the view exists: dynamic SQL) and reads the grant back, with no CONTAINER_DATA readback
    for it (a DBA_ view shows the container it is read in; it is no CONTAINER_DATA object)."""
    checked = read_by_the_container_check()
    assert "DBA_CONTAINER_DATA" in checked and checked <= granted_by_setup()
    text = read(os.path.join(SQL, "setup", "create_monitor_user.sql"))
    grant = re.search(
        r"(?s)if is_cdb then\s+(?:--[^\n]*\s+)*execute immediate 'grant select on sys\.dba_container_data to '"
        r" \|\| user_name \|\| scope;\s+needed\.extend;\s+needed\(needed\.count\) := 'DBA_CONTAINER_DATA';",
        text,
    )
    assert grant and grant.start() > text.index("set container_data = all for sys.")  # after that loop
    assert grant.start() < text.index("-- Read everything back from the dictionary")
    assert "elsif is_cdb and needed(i) not in ('DBMS_LOCK', 'DBA_CONTAINER_DATA') then" in text


def test_setup_is_release_switched_and_checks_before_it_says_done():
    text = read(os.path.join(SQL, "setup", "create_monitor_user.sql"))
    assert text.index("whenever sqlerror exit failure") < text.index("create user")
    # CON_NAME and V$DATABASE.CDB (12.1+) only in dynamic SQL run from 12 on.
    static = re.sub(r"execute immediate '[^;]*;", "", re.sub(r"--[^\n]*", "", text))
    assert "con_name" not in static.lower() and "v$database" not in static.lower()
    assert re.search(r"if dbms_db_version.version >= 12 then\s+execute immediate 'select cdb, sys_context", text)
    assert "set container_data = all for sys.' || needed(i)" in text and "container = current" in text
    assert text.index("raise_application_error(-20003") < text.index("prompt DNFSMON_RESULT=")
    assert "identified by" not in re.sub(r"execute immediate [^;]*;", "", text).lower()  # only inside PL/SQL
    for release in oracle_facts.RELEASES:
        result = run("setup/create_monitor_user.sql", release=release)
        assert result.findings == [] and result.prompts[-2].startswith("DNFSMON_RESULT=")
        assert result.prompts[-1].startswith("DNFSMON_PASSWORD=")


def test_no_password_is_read_by_the_create_script_or_put_in_any_sql_text():
    """Review: the password was substituted into a PL/SQL block (shared pool, V$SQL, audit trail, echo).

    Now the create script reads nothing from standard input: a new user gets a
    random password made in the database, expired, and set_monitor_password.sql
    sets the real one with SQL*Plus's PASSWORD command, which asks for it itself.
    """
    create = read(os.path.join(SQL, "setup", "create_monitor_user.sql"))
    assert not re.search(r"(?im)^\s*acc(ept)?\b", create)  # nothing read: Ansible's stdin is not consumed
    assert "dbms_random.string" in create and "password expire" in create
    assert "DNFSMON_PASSWORD=" in create
    for release in oracle_facts.RELEASES:
        created = run("setup/create_monitor_user.sql", "C##MONITOR", release=release)
        assert created.password_changes == [] and created.secrets == set()
        setting = run("setup/set_monitor_password.sql", "C##MONITOR", release=release)
        assert setting.findings == [] and setting.password_changes == ["C##MONITOR"]
        assert setting.prompts[-1].startswith("DNFSMON_PASSWORD=set")
    text = read(os.path.join(SQL, "setup", "set_monitor_password.sql"))
    # PASSWORD's own failures may not reach WHENEVER SQLERROR: the account is read back after it.
    assert (
        text.index("\npassword &_dnfs_user\n")
        < text.index("account_status", text.index("\npassword &_dnfs_user\n"))
        < text.index("prompt DNFSMON_PASSWORD=set")
    )
    assert "identified by" not in text.lower()


# dbms_random.string('u'|'l', 1) and trunc(dbms_random.value(0, 10)) as Python makes them.
RANDOM_TERMS = {
    "dbms_random.string('u', 1)": lambda rng: rng.choice(string.ascii_uppercase),
    "dbms_random.string('l', 1)": lambda rng: rng.choice(string.ascii_lowercase),
    "trunc(dbms_random.value(0, 10))": lambda rng: str(rng.randrange(10)),
}


def random_first_password(text, rng):
    """The setup script's random first password, made by its own PL/SQL statements read term by term."""
    password = ""
    steps = re.findall(
        r"(?s)(?:for i in 1 \.\. (\d+) loop\s+)?first_password := first_password \|\| (.*?);(\s+end loop;)?", text
    )
    assert steps, "no first_password construction found"
    for count, expression, _ in steps:
        for _ in range(int(count or 1)):
            for term in (t.strip() for t in expression.split("||")):
                literal = re.fullmatch(r"'([^']*)'", term)
                password += literal.group(1) if literal else RANDOM_TERMS[term](rng)
    return password


def test_the_random_first_password_never_has_two_letters_in_a_row_and_meets_the_verify_functions():
    """Review: 17 letters in a row could spell the database name or "oracle", which the verify functions refuse.

    Oracle Database Security Guide, password complexity verification
    (utlpwdmg.sql): verify_function_11G and ora12c_verify_function refuse a
    password containing the database name or "oracle"; the strong and STIG
    functions ask for 2 upper, 2 lower, 2 digits, 2 special (9 or more) and
    15 characters or more; 11.2 allows 30 bytes.
    """
    text = read(os.path.join(SQL, "setup", "create_monitor_user.sql"))
    rng = random.Random(20261123)
    for _ in range(2000):
        password = random_first_password(text, rng)
        assert 15 <= len(password.encode()) <= 30, password
        assert not re.search(r"[A-Za-z]{2}", password), password  # no word, no name, no "oracle"
        assert len(re.findall(r"[A-Z]", password)) >= 2 and len(re.findall(r"[a-z]", password)) >= 2, password
        assert len(re.findall(r"[0-9]", password)) >= 2 and len(re.findall(r"[#_]", password)) >= 2, password
        assert '"' not in password  # it is a quoted identifier in CREATE USER


# Oracle Database Reference, DBA_USERS.ACCOUNT_STATUS: every documented value,
# and whether a new password is needed (the expired password is the only one).
ACCOUNT_STATUSES = {
    "OPEN": "kept",
    "EXPIRED": "needed",
    "EXPIRED(GRACE)": "kept",  # logs in with ORA-28002 as a warning
    "LOCKED(TIMED)": "kept",
    "LOCKED": "kept",
    "EXPIRED & LOCKED(TIMED)": "needed",
    "EXPIRED(GRACE) & LOCKED(TIMED)": "kept",
    "EXPIRED & LOCKED": "needed",  # a new user of create_monitor_user.sql
    "EXPIRED(GRACE) & LOCKED": "kept",
}


def password_state_expression():
    """create_monitor_user.sql's decision on DBA_USERS.ACCOUNT_STATUS, as SQL with one ? bind."""
    text = read(os.path.join(SQL, "setup", "create_monitor_user.sql"))
    expression = re.search(r"(?s):dnfs_password := (case .*? end);", text).group(1)
    return re.sub(r"\baccount\b", "?", expression)


@pytest.mark.parametrize(("status", "state"), sorted(ACCOUNT_STATUSES.items()))
def test_the_password_is_needed_for_every_expired_status_and_kept_in_grace(status, state):
    """Review: only 'EXPIRED' was needed; a new user (EXPIRED & LOCKED) or a timed lock hid an unset password."""
    db = sqlite3.connect(":memory:")
    assert db.execute(f"select {password_state_expression()}", (status, status)).fetchone() == (state,)


SET_PASSWORD = os.path.join(SQL, "setup", "set_monitor_password.sql")


def test_a_new_user_stays_locked_until_its_password_is_set_read_back_and_open():
    """Review: the expired random password still logs in ("The user can log in with the expired password").

    The user is created locked; set_monitor_password.sql unlocks it only after
    PASSWORD's read-back, and then requires OPEN (not LOCKED(TIMED)); from 12.2
    PASSWORD_CHANGE_DATE must move for an account that was not expired.
    """
    create = read(os.path.join(SQL, "setup", "create_monitor_user.sql"))
    assert re.search(r"execute immediate 'create user .*password expire account lock'", create)
    text = read(SET_PASSWORD)
    order = [
        "execute immediate change_date_query into changed using :dnfs_user;\n        :dnfs_changed_before",
        # before 12.2 (no PASSWORD_CHANGE_DATE) an account that is not expired is expired first
        "elsif :dnfs_status_before not like 'EXPIRED%' then",
        "' password expire'",
        "\npassword &_dnfs_user\n",
        "if :dnfs_status like 'EXPIRED%' then",
        "raise_application_error(\n                -20007",
        "' account unlock'",
        "if :dnfs_status not in ('OPEN', 'OPEN & IN ROLLOVER') then",
        "prompt DNFSMON_PASSWORD=set",
    ]
    assert [text.index(s) for s in order] == sorted(text.index(s) for s in order)
    # PASSWORD_CHANGE_DATE is 12.2+: only in dynamic SQL, run behind the release switch.
    switch = "dbms_db_version.version > 12 or (dbms_db_version.version = 12 and dbms_db_version.release >= 2)"
    assert text.count(switch) == 2 and text.count("execute immediate change_date_query") == 2
    static = re.sub(r"'(?:[^']|'')*'", "''", re.sub(r"--[^\n]*", "", text))
    assert "password_change_date" not in static.lower()


def test_the_column_facts_know_password_change_date_is_12_2_and_later():
    text = read(SET_PASSWORD)
    literal = re.search(r"change_date_query constant varchar2\(\d+\) := ((?:'(?:[^']|'')*'\s*(?:\|\|\s*)?)+);", text)
    query = "".join(re.findall(r"'((?:[^']|'')*)'", literal.group(1))).replace("''", "'")
    query = query.replace(":1", ":user_name")  # sqlglot reads named binds only
    assert violations(query, "12.1.0.2") == ["DBA_USERS.PASSWORD_CHANGE_DATE: no such column in 12.1.0.2"]
    for release in ("12.2", "19c", "23ai"):
        assert violations(query, release) == [], release


def container_data_check():
    """The setup script's read-back of CONTAINER_DATA (a PL/SQL string literal), as SQL with ? binds."""
    text = read(os.path.join(SQL, "setup", "create_monitor_user.sql"))
    literal = re.search(r"container_data_check constant varchar2\(\d+\) := ((?:'(?:[^']|'')*'\s*(?:\|\|\s*)?)+);", text)
    parts = re.findall(r"'((?:[^']|'')*)'", literal.group(1))
    return re.sub(r":\d", "?", "".join(parts).replace("''", "'"))


@pytest.mark.parametrize(
    ("rows", "found"),
    [
        # ALTER USER ... SET CONTAINER_DATA = ALL FOR SYS.GV_$DNFS_STATS CONTAINER = CURRENT
        ([("C##DNFSMON", "N", "SYS", "GV_$DNFS_STATS", "Y", None)], 1),
        # the user's default attribute (SET CONTAINER_DATA = ALL without FOR) covers every view
        ([("C##DNFSMON", "Y", None, None, "Y", None)], 1),
        # only some containers: the root would still see a part of the rows
        ([("C##DNFSMON", "N", "SYS", "GV_$DNFS_STATS", "N", "PDB1")], 0),
        # another view, another user, nothing at all
        ([("C##DNFSMON", "N", "SYS", "GV_$PROCESS", "Y", None), ("C##OTHER", "Y", None, None, "Y", None)], 0),
        ([], 0),
    ],
)
def test_setup_reads_container_data_back_before_it_says_done(rows, found):
    """Review: CONTAINER_DATA was set but never read back; the script now counts it in DBA_CONTAINER_DATA."""
    db = sqlite3.connect(":memory:")
    db.execute(
        "create table dba_container_data (username, default_attr, owner, object_name, all_containers, container_name)"
    )
    db.executemany("insert into dba_container_data values (?, ?, ?, ?, ?, ?)", rows)
    assert db.execute(container_data_check(), ("C##DNFSMON", "GV_$DNFS_STATS")).fetchone() == (found,)
    text = read(os.path.join(SQL, "setup", "create_monitor_user.sql"))
    check = text.index("execute immediate container_data_check into after_grants using user_name, needed(i)")
    assert text.index("set container_data = all for sys.") < check < text.index("raise_application_error(-20003")
    assert "CONTAINER_DATA=ALL(' || needed(i)" in text  # named in the failure line
    static = re.sub(r"'(?:[^']|'')*'", "''", re.sub(r"--[^\n]*", "", text))
    assert "dba_container_data" not in static.lower()  # 12.1+: only in dynamic SQL, which 11.2 never parses


def test_a_view_refused_for_container_data_is_not_needed_and_does_not_fail_the_setup():
    """dba-review S1: ALTER USER ... SET CONTAINER_DATA ... FOR a view that is no CONTAINER_DATA object
    raises ORA-65058 (Database Error Messages), and the script then failed with -20003 in every CDB
    of that release. Such a view is not filtered by container, so nothing is missing: ORA-65058 is
    caught for that statement only (any other error still stops the script), and the readback
    skips the view's CONTAINER_DATA check instead of naming it as missing.
    """
    text = read(os.path.join(SQL, "setup", "create_monitor_user.sql"))
    assert "pragma exception_init(not_container_data, -65058);" in text
    block = re.search(
        r"(?s)begin\s+execute immediate 'alter user ' \|\| user_name \|\| ' set container_data = all for sys\.'"
        r" \|\| needed\(i\)\s+\|\| ' container = current';\s+exception\s+when (\w+) then(.*?)end;",
        text,
    )
    assert block and block.group(1) == "not_container_data"  # not WHEN OTHERS: other errors still stop it
    assert "refused := refused || ' ' || needed(i) || ' ';" in block.group(2)
    readback = re.search(r"(?s)if instr\(refused, ' ' \|\| needed\(i\) \|\| ' '\) > 0 then(.*?)elsif is_cdb", text)
    assert readback and "missing" not in re.sub(r"--.*", "", readback.group(1))


def test_setting_only_container_data_reports_updated_not_unchanged():
    """Review: a run that only set CONTAINER_DATA (no new grant) said DNFSMON_RESULT=unchanged."""
    text = read(os.path.join(SQL, "setup", "create_monitor_user.sql"))
    literal = re.search(r"container_data_count constant varchar2\(\d+\) := ((?:'(?:[^']|'')*'\s*(?:\|\|\s*)?)+);", text)
    count = re.sub(r":\d", "?", "".join(re.findall(r"'((?:[^']|'')*)'", literal.group(1))).replace("''", "'"))
    db = sqlite3.connect(":memory:")
    db.execute("create table dba_container_data (username, default_attr, owner, object_name, all_containers)")
    db.executemany(
        "insert into dba_container_data values (?, 'N', 'SYS', ?, ?)",
        [("C##DNFSMON", "GV_$DNFS_STATS", "Y"), ("C##DNFSMON", "GV_$PROCESS", "N"), ("C##OTHER", "GV_$PROCESS", "Y")],
    )
    assert db.execute(count, ("C##DNFSMON",)).fetchone() == (1,)
    outcome = re.search(r"(?s)outcome := (case.*?end);", text).group(1)
    names = ["existed", "after_grants", "before_grants", "after_container_data", "before_container_data"]
    names.append("profile_changed")  # a PL/SQL boolean: 0 or 1 here
    sql = "select " + re.sub(r"\b(" + "|".join(names) + r")\b", lambda m: ":" + m.group(1), outcome)
    cases = [
        ((0, 20, 0, 0, 0, 1), "created"),
        ((1, 20, 20, 19, 0, 0), "updated"),  # CONTAINER_DATA only
        ((1, 21, 20, 19, 19, 0), "updated"),
        ((1, 20, 20, 19, 19, 1), "updated"),  # the profile or its password life only
        ((1, 20, 20, 19, 19, 0), "unchanged"),
        ((1, 20, 20, 0, 0, 0), "unchanged"),  # not a CDB: both counts stay 0
    ]
    for values, expected in cases:
        assert db.execute(sql, dict(zip(names, values))).fetchone() == (expected,), values
    before = text.index("execute immediate container_data_count into before_container_data")
    after = text.index("execute immediate container_data_count into after_container_data")
    assert before < text.index("set container_data = all for sys.") < after < text.index("outcome := case")


@pytest.mark.parametrize(
    ("prefix", "user", "refused"),
    [
        ("C##", "C##DNFSMON", False),
        ("C##", "DNFSMON", True),
        ("CX_", "CX_DNFSMON", False),  # COMMON_USER_PREFIX set by the DBA
        ("CX_", "C##DNFSMON", True),
        (None, "DNFSMON", False),  # an empty prefix (NULL in Oracle) refuses no name
    ],
)
def test_the_common_user_check_uses_common_user_prefix(prefix, user, refused):
    """Review: the C## check ignored COMMON_USER_PREFIX, which a DBA may have changed."""
    text = read(os.path.join(SQL, "setup", "create_monitor_user.sql"))
    condition = re.search(r"if is_cdb and (substr\(user_name.*?) then", text).group(1)
    sql = "select coalesce(" + condition.replace("user_name", ":user").replace("common_prefix", ":prefix") + ", 0)"
    sql = sqlglot.transpile(sql, read="oracle", write="sqlite")[0]
    assert bool(sqlite3.connect(":memory:").execute(sql, {"user": user, "prefix": prefix}).fetchone()[0]) is refused
    read_prefix = re.search(
        r"(?s)if dbms_db_version.version >= 12 then.*?"
        r"execute immediate 'select value from v\$parameter where name = ''common_user_prefix'''\s+into prefix;"
        r"\s+exception\s+when no_data_found then\s+prefix := 'C##';",
        text,
    )
    assert read_prefix and "then :dnfs_prefix || 'DNFSMON' else 'DNFSMON' end" in text


def test_setup_gives_the_user_a_profile_whose_password_life_the_dba_chooses():
    """dba-review A2: under the DEFAULT profile the password expired after 180 days and monitoring stopped."""
    text = read(os.path.join(SQL, "setup", "create_monitor_user.sql"))
    # Created only where absent, with FAILED_LOGIN_ATTEMPTS (and every other limit) left to DEFAULT;
    # a second run sets the password life given again; the user is moved to it; all in the CDB's scope.
    assert re.search(
        r"if profile_life is null then\s+execute immediate 'create profile ' \|\| profile_name \|\| "
        r"' limit password_life_time ' \|\| target_life\s+\|\| ' failed_login_attempts default' \|\| scope;",
        text,
    )
    assert "'alter profile ' || profile_name || ' limit password_life_time ' || target_life || scope" in text
    assert "'alter user ' || user_name || ' profile ' || profile_name || scope" in text
    assert "failed_login_attempts unlimited" not in text.lower()
    # A common user takes a common profile: named with COMMON_USER_PREFIX in a CDB (CREATE PROFILE).
    assert "case when :dnfs_cdb = 'YES' then :dnfs_prefix || 'DNFSMON_PROFILE' else 'DNFSMON_PROFILE' end" in text
    # Read back from the dictionary before the result line.
    assert text.index("and p.limit = nvl(target_life, profile_life)") < text.index("prompt DNFSMON_RESULT=")
    assert "profile &_dnfs_user_profile (PASSWORD_LIFE_TIME &_dnfs_user_life)." in text
    assert "where p.profile = user_profile and p.resource_name = 'PASSWORD_LIFE_TIME';" in text
    for release in oracle_facts.RELEASES:
        chosen = run("setup/create_monitor_user.sql", "C##MONITOR", "365", release=release)
        assert chosen.findings == [] and sqlplus_rules.leftovers(chosen) == []
        # The user's profile and its limit as the dictionary has them (bind variables the block set,
        # NULL in the checker, which runs no PL/SQL).
        assert chosen.prompts[-2].startswith("DNFSMON_RESULT="), chosen.prompts
        assert chosen.prompts[-3].startswith("DNFSMON_PROFILE="), chosen.prompts
        default = run("setup/create_monitor_user.sql", release=release)
        assert default.findings == [] and sqlplus_rules.leftovers(default) == []
    readme = read(os.path.join(SQL, "README.md"))
    assert "@setup/create_monitor_user [user] [password_life]" in readme and "DNFSMON_PROFILE" in readme


def profile_decision(name):
    """One of create_monitor_user.sql's profile decisions (`name := <expression>;`), as SQLite SQL with named binds."""
    text = read(os.path.join(SQL, "setup", "create_monitor_user.sql"))
    expression = re.search(rf"(?s)\n\s+{name} := (.*?);\n", text).group(1)
    for variable in ("password_life", "profile_life", "existed", "user_profile"):
        expression = re.sub(rf"\b{variable}\b", ":" + variable, expression)
    return sqlglot.transpile("select " + expression, read="oracle", write="sqlite")[0]


@pytest.mark.parametrize(
    ("given", "profile_life", "target"),
    [
        (None, None, "UNLIMITED"),  # first run: the profile is created UNLIMITED
        (None, "180", None),  # a rerun without a life keeps the limit a DBA set (was: reset to UNLIMITED)
        (None, "UNLIMITED", None),
        ("365", "180", "365"),  # a life given is set
        ("365", None, "365"),
        ("DEFAULT", "UNLIMITED", "DEFAULT"),
    ],
)
def test_a_rerun_without_a_password_life_keeps_the_profiles_limit(given, profile_life, target):
    """dba-review (issue 27, F2): each rerun, and each Ansible run, set PASSWORD_LIFE_TIME back to UNLIMITED.

    The argument defaulted to UNLIMITED, so a DBA's ALTER PROFILE ... PASSWORD_LIFE_TIME 90 was undone.
    Now the limit to set (NULL: none, keep DBA_PROFILES.LIMIT) comes from the argument, or UNLIMITED for a
    new profile only (SQL Language Reference, CREATE PROFILE and ALTER PROFILE).
    """
    text = read(os.path.join(SQL, "setup", "create_monitor_user.sql"))
    assert "upper('&2') as password_life" in text  # no default life in the argument
    assert "elsif profile_life != target_life then" in text  # NULL target: no ALTER PROFILE
    database = sqlite3.connect(":memory:")
    sql = profile_decision("target_life")
    assert database.execute(sql, {"password_life": given, "profile_life": profile_life}).fetchone()[0] == target


@pytest.mark.parametrize(
    ("existed", "user_profile", "moved"),
    [
        (0, "DEFAULT", True),  # a new user
        (1, "DEFAULT", True),  # an existing user on DEFAULT (the 180-day limit that stops monitoring)
        (1, "SITE_MONITORING", False),  # a profile the site assigned stays (was: moved back)
        (1, "DNFSMON_PROFILE", False),
    ],
)
def test_a_rerun_leaves_a_site_assigned_profile_and_says_what_changed(existed, user_profile, moved):
    """dba-review (issue 27, F2): a rerun moved a user from the profile its site gave it back to DNFSMON_PROFILE."""
    text = read(os.path.join(SQL, "setup", "create_monitor_user.sql"))
    assert "if user_profile != profile_name and move_user then" in text
    database = sqlite3.connect(":memory:")
    sql = profile_decision("move_user")
    decided = bool(database.execute(sql, {"existed": existed, "user_profile": user_profile}).fetchone()[0])
    assert (decided and user_profile != "DNFSMON_PROFILE") is moved
    # What changed is printed before the result line: created, the old and new limit, moved, or kept.
    for said in ("' created with PASSWORD_LIFE_TIME '", "' -> '", "' moved from '", "' keeps its profile '"):
        assert said in text, said
    assert text.index("prompt DNFSMON_PROFILE=&_dnfs_profile_note") < text.index("prompt DNFSMON_RESULT=")


@pytest.mark.parametrize(
    ("life", "accepted"),
    [
        ("UNLIMITED", True),
        ("DEFAULT", True),
        ("365", True),
        ("9999", True),
        ("0", False),
        ("10000", False),
        ("1/24", False),
        ("365 failed_login_attempts 1", False),
        ("", False),
    ],
)
def test_the_password_life_is_days_unlimited_or_default_and_nothing_else_reaches_the_ddl(life, accepted):
    text = read(os.path.join(SQL, "setup", "create_monitor_user.sql"))
    condition = re.search(r"if not (\(password_life in .*?\)) then", text).group(1)
    sql = "select " + condition.replace("password_life", ":life")
    sql = sqlglot.transpile(sql, read="oracle", write="sqlite")[0]
    database = sqlite3.connect(":memory:")
    database.create_function("REGEXP", 2, lambda pattern, value: re.search(pattern, value) is not None)
    assert bool(database.execute(sql, {"life": life}).fetchone()[0]) is accepted


def nested_substituted_call(script, called_with_at_at=False, skipping=()):
    """Does `script` reach an @@ whose script name is a substitution variable, in a script itself called with @@?

    The substitution character is & or, where the pack has SET DEFINE ^ (_dnfs_end.sql), ^."""
    text = read(os.path.join(SQL, script))
    for target in re.findall(r"(?im)^\s*@@(\S+)", text):
        if target in skipping:
            continue
        if "&" in target or "^" in target:
            if called_with_at_at:
                return True
            # The part that reads the views: the script's own _dnfs_report when _dnfs_start.sql lets it run.
            report = re.search(r"(?m)^define _dnfs_report = (\w+)$", text)
            if (
                target == "&_dnfs_report_step..sql"
                and report
                and nested_substituted_call(f"{report.group(1)}.sql", True, skipping)
            ):
                return True
            continue
        target = target if target.endswith(".sql") else target + ".sql"
        if os.path.exists(os.path.join(SQL, target)) and nested_substituted_call(target, True, skipping):
            return True
    return False


def test_the_readme_says_sqlcl_is_unsupported_for_each_script_its_open_bug_stops():
    """dba-review P2: SQLcl fails an @@ with a substitution variable in a script called with @@ (oracle-db-tools#52)."""
    readme = read(os.path.join(SQL, "README.md"))
    assert "in SQL*Plus or SQLcl" not in readme
    section = readme.split("\n## SQLcl\n", 1)[1].split("\n## ", 1)[0]
    assert "oracle/oracle-db-tools issue 52" in section
    affected = [script for script in USER_SCRIPTS if nested_substituted_call(script)]
    assert "dnfs_iops.sql" in affected and "dnfs_latency.sql" in affected
    unsupported = section.split("SQLcl is not supported for ", 1)[1].split(". ", 1)[0]
    assert sorted(re.findall(r"`(\w+\.sql)`", unsupported)) == sorted(affected)


# --- the arithmetic, in SQLite, against the agent ---


def core_queries(text):
    """The queries between '-- core: <name>' and '-- core: end' markers, by name."""
    return {
        m.group(1).strip(): m.group(2).strip().rstrip(";")
        for m in re.finditer(r"(?s)-- core: ([^\n]+)\n(.*?)-- core: end", text)
    }


def run_core(script, core, tables, binds, defines=None):
    """Run a script's print query with its two snapshots (cur, prev) replaced by `tables`.

    `defines`: the substitution variables the caller of `script` sets, replaced as SQL*Plus would.
    """
    sql = core_queries(read(os.path.join(SQL, script)))[core]
    for name, value in (defines or {}).items():
        sql = re.sub(rf"&{name}\b", value, sql)
    tree = sqlglot.parse_one(sql, read="oracle")
    with_ = tree.args.get("with_") or tree.args["with"]
    with_.set("expressions", [cte for cte in with_.expressions if cte.alias not in tables])
    for placeholder in list(tree.find_all(exp.Placeholder)):
        value = binds[placeholder.name]
        placeholder.replace(exp.Literal.string(value) if isinstance(value, str) else exp.Literal.number(value))
    connection = sqlite3.connect(":memory:")
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
BINDS = {"dnfs_prev_t": T0, "dnfs_cur_t": T1, "dnfs_cur_clock": "12:00:10"}
HIST_BINDS = {"dnfs_hist_prev_t": T0, "dnfs_hist_cur_t": T1}


def documents(workload):
    memory = simulator.Memory()
    raws = [simulator.read(workload, t, memory) for t in (T0, T1)]
    return raws, [json.loads(r.text(oracle.RESULTS)) for r in raws]


def agent_points(raws):
    first = compute({"oracle": raws[0]}, {}, "h", {})
    return compute({"oracle": raws[1]}, {}, "h", first.samples).points


def rows_of(document, query, columns):
    result = document["results"][query]
    index = [result["columns"].index(c) for c in columns]
    return [[row[i] for i in index] for row in result["rows"]]


def as_snapshot(row):
    """A GV$DNFS_STATS row as dnfs_iops_snapshot.sql stores it: nvl(spid, '?'), nvl(serial#, -1)."""
    return [*row[:6], "?" if row[6] is None else row[6], -1 if row[7] is None else row[7]]


def iops_rows(workload=None, churn=True, unknown=False):
    workload = workload or simulator.Workload(instances=2, processes=10, process_lifetime_s=30.0)
    raws, docs = documents(workload)
    if unknown:
        # A process of instance 2 that lives through the interval was missing
        # from GV$PROCESS at the first read (the outer join gave no SPID and
        # no SERIAL#): nothing tells whether it is the same process.
        c = docs[0]["results"]["dnfs_stats"]["columns"]
        identity = [c.index("INST_ID"), c.index("PNUM"), c.index("SPID"), c.index("SERIAL#")]
        now = {tuple(r[i] for i in identity) for r in docs[1]["results"]["dnfs_stats"]["rows"]}
        row = next(
            r
            for r in docs[0]["results"]["dnfs_stats"]["rows"]
            if r[0] == 2 and tuple(r[i] for i in identity) in now and r[c.index("NFS_READ")] > 0
        )
        row[c.index("SPID")] = row[c.index("SERIAL#")] = None
        raws[0] = oracle_db.to_raw(docs[0], T0)
    if churn:
        # A PNUM of instance 1 now belongs to a process that started inside the
        # interval; its predecessor's counters were lower than its own: only the
        # identity (SPID, SERIAL#) can tell that it counts from zero.
        c = docs[0]["results"]["dnfs_stats"]["columns"]
        identity = [c.index("INST_ID"), c.index("PNUM"), c.index("SPID"), c.index("SERIAL#")]
        now = {tuple(r[i] for i in identity): r for r in docs[1]["results"]["dnfs_stats"]["rows"]}
        row = next(
            r
            for r in docs[0]["results"]["dnfs_stats"]["rows"]
            if r[0] == 1 and tuple(r[i] for i in identity) not in now and r[c.index("NFS_WRITE")] > 0
        )
        successor = next(v for k, v in now.items() if k[:2] == (1, row[1]))
        for counter in ("NFS_READ", "NFS_WRITE", "NFS_READBYTES", "NFS_WRITEBYTES"):
            row[c.index(counter)] = successor[c.index(counter)] - 1
        raws[0] = oracle_db.to_raw(docs[0], T0)
    totals = iops_accumulate(stats_snapshot(docs[1]), stats_snapshot(docs[0]), [], BINDS)
    return workload, raws, iops_print(totals, round((T1 - T0) * 1_000_000), INTERVAL_IOPS_DEFINES)


IOPS_ACCUMULATE = "per instance, the interval that just ended and the run so far"
# dnfs_iops's columns and the agent's dnfsmon_dnfs_io fields they must equal.
IOPS_FIELDS = (
    ("read_iops", "read_iops"),
    ("write_iops", "write_iops"),
    ("total_iops", "total_iops"),
    ("read_mbps", "read_mib_per_s"),
    ("write_mbps", "write_mib_per_s"),
)
IOPS_PRINT = "NFS calls per instance and in total"
IOPS_TOTALS = ["inst_id", "reads", "writes", "read_bytes", "write_bytes", "microseconds"]
# What dnfs_iops_step.sql defines before it runs dnfs_iops_print.sql (the interval), and what
# dnfs_iops.sql defines after the loop (the whole run).
INTERVAL_IOPS_DEFINES = {"_dnfs_kind": "'interval'", "_dnfs_from_us": "dnfs_iv_us", "_dnfs_label": ":dnfs_cur_clock"}
RUN_IOPS_DEFINES = {"_dnfs_kind": "'run'", "_dnfs_from_us": "dnfs_run_us", "_dnfs_label": "'run'"}


def stats_snapshot(document):
    """A simulator document's GV$DNFS_STATS rows as dnfs_iops_snapshot.sql stores them (cur/prev columns)."""
    columns = ["INST_ID", "PNUM", "NFS_READ", "NFS_WRITE", "NFS_READBYTES", "NFS_WRITEBYTES", "SPID", "SERIAL#"]
    return [as_snapshot(r) for r in rows_of(document, "dnfs_stats", columns)]


def iops_accumulate(cur, prev, run_so_far, binds):
    """dnfs_iops_accumulate.sql's query in SQLite: rows of kind 'interval' (the interval's totals per
    instance) and 'run' (the run's so far), as :dnfs_run_next holds them."""
    names = ["inst_id", "pnum", "nfs_read", "nfs_write", "nfs_readbytes", "nfs_writebytes", "spid", "serial"]
    tables = {"cur": (names, cur), "prev": (names, prev), "run": (["kind", *IOPS_TOTALS], run_so_far)}
    rows = run_core("dnfs_iops_accumulate.sql", IOPS_ACCUMULATE, tables, binds)
    return [[row[c] for c in ["kind", *IOPS_TOTALS]] for row in rows]


def iops_print(totals, microseconds, defines, clock="12:00:10"):
    """dnfs_iops_print.sql's query in SQLite over the accumulated rows, as the XML bind hands them over."""
    binds = {defines["_dnfs_from_us"]: microseconds, "dnfs_cur_clock": clock}
    return run_core("dnfs_iops_print.sql", IOPS_PRINT, {"totals": (["kind", *IOPS_TOTALS], totals)}, binds, defines)


def test_dnfs_iops_gives_the_agents_figures_with_churn_and_pnum_reuse():
    workload, raws, rows = iops_rows()
    pack = {row["dnfs_inst_id"]: row for row in rows if row["dnfs_inst_id"] is not None}
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
        assert row["read_iops"] < truth.read_iops  # the exited processes' last share is lost, never invented


def test_dnfs_iops_prints_a_rac_total_line_the_sum_of_the_agents_instances():
    """dba-review P7: next to Drouvot's db_io_dnfs_metrics the pack had no RAC total. After the instance
    lines of an interval comes one line for the instances together (Inst blank, Time 'total'): rates
    are the agent's per-instance rates summed (one interval for all), KiB per call the summed bytes over
    the summed calls; a single instance gets no such line."""
    _, raws, rows = iops_rows()
    agent = [p.fields for p in agent_points(raws) if p.measurement == "dnfsmon_dnfs_io"]
    assert [row["dnfs_inst_id"] for row in rows] == [1, 2, None]
    total = rows[-1]
    assert total["dnfs_sample_time"] == "total"
    for pack_name, agent_name in IOPS_FIELDS:
        assert total[pack_name] == pytest.approx(sum(f[agent_name] for f in agent), rel=1e-12), pack_name
    read_kib = sum(f["read_mib_per_s"] for f in agent) * 1024 / sum(f["read_iops"] for f in agent)
    assert total["avg_read_kb"] == pytest.approx(read_kib, rel=1e-12)
    workload = simulator.Workload(instances=1, processes=10, process_lifetime_s=30.0)
    _, _, single = iops_rows(workload, churn=False)
    assert [row["dnfs_inst_id"] for row in single] == [1]


def test_dnfs_iops_leaves_out_a_process_missing_from_gv_process_in_one_snapshot_as_the_agent_does():
    """Review: the snapshot stores '?' and -1 for a process GV$PROCESS lacked, so "is not null" was always true.

    Such a process was counted from zero (its whole lifetime in one
    interval). The agent leaves it out (UNKNOWN_PROCESS); so does the pack.
    """
    _, raws, rows = iops_rows(churn=False, unknown=True)
    pack = {row["dnfs_inst_id"]: row for row in rows if row["dnfs_inst_id"] is not None}
    agent = {dict(p.tags)["instance"]: p.fields for p in agent_points(raws) if p.measurement == "dnfsmon_dnfs_io"}
    for inst, row in pack.items():
        mine = agent[f"simdb{int(inst)}"]
        assert row["read_iops"] == pytest.approx(mine["read_iops"], rel=1e-12), inst
        assert row["write_iops"] == pytest.approx(mine["write_iops"], rel=1e-12), inst
        assert row["read_mbps"] == pytest.approx(mine["read_mib_per_s"], rel=1e-12), inst
    _, _, known = iops_rows(churn=False)
    assert {r["dnfs_inst_id"]: r["read_iops"] for r in known}[2] > pack[2]["read_iops"]  # left out, not invented


def iops_run(workload, times, drop_first=None, hand_over=lambda rows: rows):
    """@dnfs_iops over the simulator's snapshots at `times`, as SQL*Plus chains it, in SQLite.

    Each interval: dnfs_iops_accumulate.sql (its run totals handed to the next interval, as the XML
    bind would), then after the last one dnfs_iops_print.sql over the run's totals and the seconds
    the step added up. `drop_first`: an instance left out of the first snapshot (it joined later).
    `hand_over`: what the XML bind does to the rows between two intervals (nothing, by default).
    Returns the simulator's raws, documents, the run lines and the run's seconds.
    """
    memory = simulator.Memory()
    raws = [simulator.read(workload, t, memory) for t in times]
    docs = [json.loads(r.text(oracle.RESULTS)) for r in raws]
    snapshots = [stats_snapshot(d) for d in docs]
    if drop_first is not None:
        snapshots[0] = [r for r in snapshots[0] if r[0] != drop_first]
    run_so_far: list = []
    run_us = 0
    for prev, cur, t0, t1 in zip(snapshots, snapshots[1:], times, times[1:]):
        binds = {"dnfs_prev_t": t0, "dnfs_cur_t": t1, "dnfs_cur_clock": "12:00:00"}
        run_so_far = hand_over(iops_accumulate(cur, prev, run_so_far, binds))
        run_us = run_us + round((t1 - t0) * 1_000_000)  # :dnfs_run_next_us := nvl(:dnfs_run_us, 0) + :dnfs_iv_us
    return raws, docs, iops_print(run_so_far, run_us, RUN_IOPS_DEFINES), run_us / 1_000_000


def agent_intervals(raws):
    """The agent's dnfsmon_dnfs_io fields per interval: [{instance: fields}, ...]."""
    samples: dict = {}
    intervals = []
    for raw in raws:
        computed = compute({"oracle": raw}, {}, "h", samples)
        samples = computed.samples
        intervals.append(
            {dict(p.tags)["instance"]: p.fields for p in computed.points if p.measurement == "dnfsmon_dnfs_io"}
        )
    return intervals[1:]


def test_dnfs_iops_ends_with_the_whole_runs_average_per_instance_and_a_rac_total():
    """dba-review P7: like @dnfs_latency, @dnfs_iops ends with the whole run's average per instance and
    on RAC their total. V$DNFS_STATS counts per process and processes exit during the run (lifetimes
    around 12 s over a 45 s run here), so the last snapshot's sum minus the first's is wrong: the run is
    the intervals' per-process diffs added up. Truth: the agent's per-interval rates times their
    seconds, over the run's seconds, and the simulator's I/O the processes did and kept."""
    workload = simulator.Workload(instances=2, processes=10, process_lifetime_s=12.0)
    times = (T0, T0 + 10.0, T0 + 25.0, T0 + 45.0)
    raws, docs, run_lines, run_s = iops_run(workload, times)
    spans = [b - a for a, b in zip(times, times[1:])]
    assert run_s == sum(spans)
    intervals = agent_intervals(raws)
    assert [r["dnfs_inst_id"] for r in run_lines] == [1, 2, None]
    assert [r["dnfs_sample_time"] for r in run_lines] == ["run", "run", "total"]
    totals: dict = {}
    for row in run_lines[:2]:
        instance = f"simdb{int(row['dnfs_inst_id'])}"
        for pack_name, agent_name in IOPS_FIELDS:
            done = sum(i[instance][agent_name] * s for i, s in zip(intervals, spans))
            assert row[pack_name] == pytest.approx(done / run_s, rel=1e-9), (instance, pack_name)
            totals[pack_name] = totals.get(pack_name, 0.0) + done / run_s
        reads = sum(i[instance]["read_iops"] * s for i, s in zip(intervals, spans))
        read_bytes = sum(i[instance]["read_mib_per_s"] * 1048576 * s for i, s in zip(intervals, spans))
        assert row["avg_read_kb"] == pytest.approx(read_bytes / 1024 / reads, rel=1e-9)
        observable = sum(
            simulator.truth(workload, int(row["dnfs_inst_id"]), a, b).observable_read_iops * (b - a)
            for a, b in zip(times, times[1:])
        )
        assert row["read_iops"] == pytest.approx(observable / run_s, rel=0.005)
        # The shortcut the run must not take: processes that exited took their counts with them.
        columns = ["INST_ID", "NFS_READ"]
        first, last = (
            sum(r[1] for r in rows_of(d, "dnfs_stats", columns) if r[0] == row["dnfs_inst_id"])
            for d in (docs[0], docs[-1])
        )
        assert abs((last - first) / run_s - row["read_iops"]) > 0.05 * row["read_iops"]
    for pack_name, total in totals.items():
        assert run_lines[2][pack_name] == pytest.approx(total, rel=1e-9), pack_name
    single = simulator.Workload(instances=1, processes=10, process_lifetime_s=12.0)
    assert [r["dnfs_inst_id"] for r in iops_run(single, times)[2]] == [1]


def test_an_instance_seen_in_part_of_the_run_shows_its_seconds_and_stays_out_of_the_run_total():
    """An instance absent from the first snapshot (it joined the cluster, or started, during the run)
    has no diff for the first interval: its run line is over the seconds it was measured, says them as
    its Time, and the run's total leaves it out (a total over unequal seconds would mean nothing)."""
    workload = simulator.Workload(instances=2, processes=10, process_lifetime_s=12.0)
    times = (T0, T0 + 10.0, T0 + 25.0)
    raws, _, run_lines, _ = iops_run(workload, times, drop_first=2)
    intervals = agent_intervals(raws)
    assert [r["dnfs_inst_id"] for r in run_lines] == [1, 2]  # no total: one instance over the whole run
    assert run_lines[0]["dnfs_sample_time"] == "run"
    assert run_lines[1]["dnfs_sample_time"].startswith("15")  # TO_CHAR(ROUND(15)) || ' s' in Oracle
    assert run_lines[1]["dnfs_sample_time"].endswith(" s")
    assert run_lines[1]["read_iops"] == pytest.approx(intervals[1]["simdb2"]["read_iops"], rel=1e-9)


@pytest.mark.parametrize(("count", "runs"), [(("5", "3"), 1), (("0",), 0)])
def test_dnfs_iops_prints_the_run_after_its_last_interval_from_the_added_up_intervals(count, runs):
    """As SQL*Plus runs it: each step diffs and adds to the run's totals (dnfs_iops_accumulate.sql,
    freed and shifted like a snapshot), then after the last step dnfs_iops_print.sql once more, fed
    :dnfs_run's rows of kind 'run' over :dnfs_run_us and labelled 'run'; a refused run sends no
    query at all (review F3: it took a first snapshot and printed an empty run)."""
    result = run("dnfs_iops.sql", *count)
    assert [str(f) for f in result.findings] == [] and sqlplus_rules.leftovers(result) == []
    sent = [(f, s) for f, _, s in result.statements if f == "dnfs_iops_print.sql"]
    if not runs:
        assert sent == [] and not any(f == "dnfs_iops_snapshot.sql" for f, _, _ in result.statements)
        return
    whole = [s for _, s in sent if "kind = 'run'" in s]
    assert len(whole) == 1 and "else 'run'" in whole[0] and ":dnfs_run_us" in whole[0]
    assert len(sent) == steps(result) + 1
    last_step = max((i for i, (f, _, _) in enumerate(result.statements) if f == "dnfs_iops_accumulate.sql"), default=-1)
    printed = (i for i, (f, _, s) in enumerate(result.statements) if f == "dnfs_iops_print.sql" and "'run'" in s)
    assert next(printed) > last_step
    assert steps(result) == (3 if runs else 0)
    notes = [s for f, _, s in result.statements if f == "dnfs_iops_report.sql" and "Average over the whole run" in s]
    assert len(notes) == 1 and "where :dnfs_run_us > 0" in notes[0]


def test_a_failed_snapshot_or_accumulation_keeps_the_previous_one_and_the_runs_totals():
    """Review W2: _dnfs_shift_lob.sql freed the previous snapshot's (or the run's totals') temporary LOB
    before it knew a new one existed, so a snapshot or an accumulation whose query failed (NULL) lost
    the run's totals. Now, as SQL*Plus sends it in every shift of both loops: the copy is made first,
    the previous LOB is freed only after it, all of it only when the new one is not NULL, and the time
    moves with it. And the run's seconds grow only by an interval that gave rows."""
    shifted = {
        "dnfs_iops.sql": {"dnfs_prev": "dnfs_prev_t", "dnfs_run": "dnfs_run_us"},
        "dnfs_latency.sql": {"dnfs_ev_prev": "dnfs_prev_t", "dnfs_ev_first": "dnfs_first_t"},
    }
    for script, binds in shifted.items():
        result = run(script, "5", "2")
        assert [str(f) for f in result.findings] == [] and sqlplus_rules.leftovers(result) == []
        shifts = [sql.lower() for f, _, sql in result.statements if f == "_dnfs_shift_lob.sql"]
        for prev, taken_at in binds.items():
            block = next(sql for sql in shifts if f"dbms_lob.freetemporary(:{prev})" in sql)
            guard = block.index(" is not null then")
            copied = block.index("dbms_lob.copy(taken")
            freed = block.index(f"dbms_lob.freetemporary(:{prev})")
            assert guard < copied < freed < block.index(f":{prev} := taken") < block.index(f":{taken_at} :=")
            assert block.rindex("end if;") > block.index(f":{taken_at} :=")
    accumulate = [s for f, _, s in run("dnfs_iops.sql", "5", "2").statements if f == "dnfs_iops_accumulate.sql"]
    assert any(
        re.search(r":dnfs_run_next_us := nvl\(:dnfs_run_us, 0\) \+ case when interval_rows > 0", s) for s in accumulate
    )


def through_xml_text(rows, decimal_character=","):
    """Rows as an XMLTABLE would read them back after XMLATTRIBUTES wrote them, under a session whose
    NLS_NUMERIC_CHARACTERS is ',.' (German, French): the Reference says neither how a NUMBER is
    rendered into XML text under such a setting nor that the round trip is exact, so a value whose
    text would carry a decimal separator is taken to come back as that text, which an XML Schema
    number (the '.' of xs:decimal) cannot read. A whole number has no separator and comes back as is."""
    handed_over = []
    for row in rows:
        values = []
        for value in row:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(f"{repr(value).replace('.', decimal_character)}: a fractional number in XML text")
            values.append(value)
        handed_over.append(values)
    return handed_over


def test_dnfs_iops_hands_no_fractional_number_through_its_xml_and_compares_whole_microseconds():
    """Review W1: :dnfs_run kept each instance's fractional seconds (SYSTIMESTAMP's difference) as XML
    text, read them back with XMLTABLE and compared them for equality with a NUMBER bind (the run
    total's "measured over all the seconds"). Nothing documents that text under NLS_NUMERIC_CHARACTERS
    ',.', nor an exact round trip. Now the XML holds whole microseconds and the comparisons are of
    integers; the figures a DBA reads are those of the exact seconds, as before."""
    workload = simulator.Workload(instances=2, processes=10, process_lifetime_s=12.0)
    # The clock's fractions, as the snapshots take them: whole microseconds that a double also holds
    # exactly (multiples of 1/64 s), so the harness's floats add no error of their own.
    times = (T0 + 0.015625, T0 + 10.640625, T0 + 25.203125, T0 + 45.984375)
    raws, _, run_lines, _ = iops_run(workload, times, hand_over=through_xml_text)
    assert [r["dnfs_sample_time"] for r in run_lines] == ["run", "run", "total"]
    intervals = agent_intervals(raws)
    spans = [b - a for a, b in zip(times, times[1:])]
    for row in run_lines[:2]:
        instance = f"simdb{int(row['dnfs_inst_id'])}"
        for pack_name, agent_name in IOPS_FIELDS:
            done = sum(i[instance][agent_name] * s for i, s in zip(intervals, spans))
            assert row[pack_name] == pytest.approx(done / sum(spans), rel=1e-9), (instance, pack_name)
    # The static side: the only value the pack computes into its XML is a ROUND to a whole number.
    accumulate = read(os.path.join(SQL, "dnfs_iops_accumulate.sql"))
    assert re.search(r"round\(\(:dnfs_cur_t - :dnfs_prev_t\) \* 1000000\) as microseconds", accumulate)
    assert ":dnfs_cur_t - :dnfs_prev_t as seconds" not in accumulate


# Expressions that give a NUMBER. Concatenated with ||, a NUMBER is converted implicitly, with the
# session's NLS_NUMERIC_CHARACTERS (SQL Language Reference, "Implicit Data Conversion"; TO_CHAR
# (number): without a format model the decimal character is the session's), while COLUMN FORMAT
# masks and a model's '.' print a period (Format Models: "." returns a decimal point).
NUMERIC_EXPRESSIONS = (exp.Round, exp.Div, exp.Mul, exp.Add, exp.Sub, exp.Sum, exp.Avg, exp.Count)


def test_no_number_is_concatenated_without_a_format_model():
    """dba-review W3: 'Average over the whole run: ' || round(:dnfs_run_us / 1e6, 1) || ' s' printed
    "60,5 s" in a session with NLS_NUMERIC_CHARACTERS ',.', next to columns printed with '.'. Every
    statement each user script sends is parsed: no || takes a numeric expression but through TO_CHAR
    with a model, and both run notes use TO_CHAR(x, 'FM9999990.0')."""
    found = []
    for script in USER_SCRIPTS:
        args = ("5", "2") if script in LOOPING_SCRIPTS else ()
        for file, line, sql in run(script, *args).statements:
            tree = sqlglot.parse_one(_parsable(sql), read="oracle")
            for pipe in tree.find_all(exp.DPipe):
                found += [
                    (file, line) for side in (pipe.this, pipe.expression) if isinstance(side, NUMERIC_EXPRESSIONS)
                ]
    assert found == []
    for script, note in (
        ("dnfs_iops_report.sql", ":dnfs_run_us / 1000000"),
        ("dnfs_latency_report.sql", ":dnfs_cur_t - :dnfs_first_t"),
    ):
        assert f"to_char(round({note}, 1), 'FM9999990.0') || ' s'" in read(os.path.join(SQL, script)), script


def test_the_pack_states_the_new_process_assumption_as_one_and_what_reading_the_channels_does():
    """dba-review P1: "a new process counts from zero, as its counters started at zero with it" was stated as fact.

    The Oracle Database Reference (V$DNFS_STATS) gives one row per process
    and says nothing of a reused slot's counters, and the pack has no check
    (reading V$DNFS_CHANNELS each interval would reset every other reader's
    counts, "since the last select": V$DNFS_CHANNELS). So the manual and the
    scripts say it is an assumption the pack does not check, and that
    @dnfs_channels and @dnfs_check make the agent's check leave new processes out.
    """
    readme = " ".join(read(os.path.join(SQL, "README.md")).split())
    assert "as its counters started at zero with it" not in readme
    intervals = readme[readme.index("- **Intervals.**") : readme.index("- **Histogram.**")]
    assert "assumption" in intervals and "The pack does not check it" in intervals
    assert "new_processes_doubtful" in intervals
    channels = readme[readme.index('- **GV$DNFS_CHANNELS counts are "since the last select by anyone".**') :]
    channels = channels[: channels.index("## Run control")]
    assert "leaves such a process out as doubtful" in channels
    for script in ("dnfs_iops.sql", "dnfs_iops_accumulate.sql"):
        text = " ".join(line.lstrip("- ").strip() for line in read(os.path.join(SQL, script)).splitlines())
        assert "not check" in text and "counts from zero" in text, script
    # The pack's step still reads no view: the check the agent makes is not made here.
    for script in ("dnfs_iops_step.sql", "dnfs_iops_accumulate.sql"):
        assert "dnfs_channels" not in read(os.path.join(SQL, script)).lower()


LATENCY_PRINT = "events between two snapshots, per instance and in total"
# What dnfs_latency_step.sql defines before it runs dnfs_latency_print.sql (the
# interval), and what dnfs_latency.sql defines after the loop (the whole run).
INTERVAL_DEFINES = {"_dnfs_from": "dnfs_ev_prev", "_dnfs_from_t": "dnfs_prev_t", "_dnfs_label": ":dnfs_cur_clock"}
RUN_DEFINES = {"_dnfs_from": "dnfs_ev_first", "_dnfs_from_t": "dnfs_first_t", "_dnfs_label": "'run'"}


EVENT_COLUMNS = ["INST_ID", "EVENT", "TOTAL_WAITS", "TIME_WAITED_MICRO", "TOTAL_WAITS_FG", "TIME_WAITED_MICRO_FG"]
EVENT_NAMES = [*(c.lower() for c in EVENT_COLUMNS), "startup"]


def event_snapshot(document):
    """The agent's events in GV$SYSTEM_EVENT as dnfs_latency_snapshot.sql stores them: each row with
    its instance's STARTUP_TIME from GV$INSTANCE (the cur/prev columns of the print query)."""
    startup = dict(rows_of(document, "instances", ["INST_ID", "STARTUP_TIME"]))
    rows = rows_of(document, "system_event", EVENT_COLUMNS)
    return [[*r, startup[r[0]]] for r in rows if r[1] in oracle_facts.AGENT_EVENTS]


def latency_rows(first_hit=True):
    workload = simulator.Workload(instances=1, release="19c")
    raws, docs = documents(workload)
    tables = {"cur": (EVENT_NAMES, event_snapshot(docs[1])), "prev": (EVENT_NAMES, event_snapshot(docs[0]))}
    events = run_core("dnfs_latency_print.sql", LATENCY_PRINT, tables, BINDS, INTERVAL_DEFINES)
    prev, cur = hist_snapshot(docs[0]), hist_snapshot(docs[1])
    # The view lists only buckets hit since startup: the previous snapshot
    # lacks one that has waits now (as if it were hit for the first time).
    new_bucket = next(c for p, c in zip(prev, cur) if c[2] > p[2]) if first_hit else [None, None, None]
    tables = {"cur": (HIST_NAMES, cur), "prev": (HIST_NAMES, [p for p in prev if p[1] != new_bucket[1]])}
    buckets = run_core(
        "dnfs_latency_hist_step.sql", "histogram of 'db file sequential read' in the interval", tables, HIST_BINDS
    )
    for row in buckets:
        row["bucket"] = str(int(float(row["bucket"])))  # TO_CHAR of a whole number
    return raws, events, buckets, new_bucket


def test_dnfs_latency_events_and_histogram_give_the_agents_figures():
    raws, events, buckets, new_bucket = latency_rows()
    points = agent_points(raws)
    agent = {dict(p.tags)["event"]: p.fields for p in points if p.measurement == "dnfsmon_oracle_event"}
    assert len(events) == len(oracle_facts.AGENT_EVENTS)
    for row in events:
        mine = agent[row["dnfs_event"]]
        assert row["waits_per_s"] == pytest.approx(mine["waits_per_s"], rel=1e-12)
        assert row["avg_ms"] * 1000 == pytest.approx(mine["avg_latency_us"], rel=1e-12)
    agent_buckets = {
        dict(p.tags)["le_us"]: p.fields["waits_per_s"]
        for p in points
        if p.measurement == "dnfsmon_oracle_latency_histogram" and dict(p.tags)["event"] == "db file sequential read"
    }
    by_bound = {row["bucket"]: row for row in buckets}
    for bound, rate in agent_buckets.items():
        if bound != str(int(new_bucket[1])) and rate > 0:
            assert by_bound[bound]["bucket_waits_per_s"] == pytest.approx(rate, rel=1e-12)
    # The bucket the previous snapshot lacked counts from 0, not dropped.
    assert by_bound[str(int(new_bucket[1]))]["bucket_waits_per_s"] == pytest.approx(new_bucket[2] / (T1 - T0))
    assert sum(row["pct"] for row in buckets) == pytest.approx(100.0)


def test_dnfs_latency_ends_with_the_whole_runs_average_per_instance_and_a_rac_total():
    """dba-review P7: a DBA expects, after a run, each event's average over the whole run, and on RAC
    the instances together; @dnfs_latency printed only each interval.

    Truth from the agent: three snapshots of a two-instance simulator, diffed by the agent into two
    intervals of different lengths. Over the run, waits/s is the waits of both intervals over their
    seconds, and ms/wait their waited time over their waits (the agent's average × its waits); the
    total line sums the instances. The run lines come from the same print query as the interval lines,
    fed the first snapshot; each interval gets its total line too."""
    workload = simulator.Workload(instances=2, release="19c")
    times = (T0, T0 + 10.0, T0 + 25.0)
    memory = simulator.Memory()
    raws = [simulator.read(workload, t, memory) for t in times]
    docs = [json.loads(r.text(oracle.RESULTS)) for r in raws]
    names, events = EVENT_NAMES, event_snapshot
    tables = {"cur": (names, events(docs[2])), "prev": (names, events(docs[0]))}
    binds = {"dnfs_first_t": times[0], "dnfs_cur_t": times[2]}
    run = run_core("dnfs_latency_print.sql", LATENCY_PRINT, tables, binds, RUN_DEFINES)
    samples: dict = {}
    agent = []  # per interval: {(instance, event): (waits/s, µs per wait)}
    for raw in raws:
        computed = compute({"oracle": raw}, {}, "h", samples)
        samples = computed.samples
        agent.append(
            {
                (dict(p.tags)["instance"], dict(p.tags)["event"]): (p.fields["waits_per_s"], p.fields["avg_latency_us"])
                for p in computed.points
                if p.measurement == "dnfsmon_oracle_event"
            }
        )
    spans = (times[1] - times[0], times[2] - times[1])
    intervals = agent[1:]
    assert len(run) == 3 * len(oracle_facts.AGENT_EVENTS)  # two instances and their total, per event
    totals: dict = {}
    for row in run:
        event = row["dnfs_event"]
        if row["dnfs_inst_id"] is None:
            assert row["dnfs_sample_time"] == "total"
            continue
        assert row["dnfs_sample_time"] == "run"
        key = (f"simdb{int(row['dnfs_inst_id'])}", event)
        waits = [i[key][0] * s for i, s in zip(intervals, spans)]
        waited_us = [i[key][0] * s * i[key][1] for i, s in zip(intervals, spans)]
        assert row["waits_per_s"] == pytest.approx(sum(waits) / sum(spans), rel=1e-9), key
        if sum(waits):
            assert row["avg_ms"] == pytest.approx(sum(waited_us) / sum(waits) / 1000, rel=1e-9), key
        total = totals.setdefault(event, [0.0, 0.0])
        total[0] += sum(waits)
        total[1] += sum(waited_us)
    for row in (r for r in run if r["dnfs_inst_id"] is None):
        waits, waited_us = totals[row["dnfs_event"]]
        assert row["waits_per_s"] == pytest.approx(waits / sum(spans), rel=1e-9)
        if waits:
            assert row["avg_ms"] == pytest.approx(waited_us / waits / 1000, rel=1e-9)
    # Each interval prints its own total line too; one instance gets none.
    binds = {"dnfs_prev_t": times[1], "dnfs_cur_t": times[2], "dnfs_cur_clock": "12:00:25"}
    tables = {"cur": (names, events(docs[2])), "prev": (names, events(docs[1]))}
    interval = run_core("dnfs_latency_print.sql", LATENCY_PRINT, tables, binds, INTERVAL_DEFINES)
    assert sorted({r["dnfs_sample_time"] for r in interval}) == ["12:00:25", "total"]
    one = [r for r in events(docs[2]) if r[0] == 1], [r for r in events(docs[1]) if r[0] == 1]
    single = run_core(
        "dnfs_latency_print.sql",
        LATENCY_PRINT,
        {"cur": (names, one[0]), "prev": (names, one[1])},
        binds,
        INTERVAL_DEFINES,
    )
    assert {r["dnfs_sample_time"] for r in single} == {"12:00:25"}


LATENCY_RESTARTS = "instances restarted between the two snapshots"


def test_an_instance_restarted_during_the_run_is_left_out_of_its_lines_and_totals_and_said():
    """Item: STARTUP_TIME in @dnfs_latency's snapshots. An instance restarted counts again from zero; the
    pack told a restart only by TOTAL_WAITS going down, so an instance that waited more after its restart
    than before it (instance 2 here: 5 s of waits at the first snapshot, restarted at 500 s, 60 s of
    waits at the last) got a whole-run line of the difference of two unrelated counts, and was added to
    the RAC total. With each row's STARTUP_TIME (GV$INSTANCE) in the snapshot, such an instance has no
    line for that interval or the run, is out of the total, and one line names it and its STARTUP_TIME.
    Truth: the simulator's restart times, and for instance 1 the agent's intervals added up."""
    workload = simulator.Workload(instances=2, release="19c", restart_every_s=1000.0)
    times = (workload.epoch + 5.0, workload.epoch + 300.0, workload.epoch + 560.0)
    memory = simulator.Memory()
    raws = [simulator.read(workload, t, memory) for t in times]
    docs = [json.loads(r.text(oracle.RESULTS)) for r in raws]
    snapshots = [event_snapshot(d) for d in docs]
    restarted = {
        i
        for i in (1, 2)
        if simulator.Model(workload).startup(i, times[0]) != simulator.Model(workload).startup(i, times[2])
    }
    assert restarted == {2}
    # The case the old guard missed: instance 2's counts went up across its restart.
    waits = {(r[0], r[1]): r[2] for r in snapshots[0]}
    assert all(r[2] > waits[(r[0], r[1])] for r in snapshots[2] if r[0] == 2 and r[2])
    tables = {"cur": (EVENT_NAMES, snapshots[2]), "prev": (EVENT_NAMES, snapshots[0])}
    binds = {"dnfs_first_t": times[0], "dnfs_cur_t": times[2]}
    run_lines = run_core("dnfs_latency_print.sql", LATENCY_PRINT, tables, binds, RUN_DEFINES)
    assert {r["dnfs_inst_id"] for r in run_lines} == {1}  # no instance 2, and no total of one instance
    notes = run_core("dnfs_latency_print.sql", LATENCY_RESTARTS, tables, binds, RUN_DEFINES)
    startup_2 = dict(rows_of(docs[2], "instances", ["INST_ID", "STARTUP_TIME"]))[2]
    # SQLite holds the instance number as a REAL (run_core), Oracle as NUMBER 2, which concatenates as '2'.
    assert [n["dnfs_restart_note"].replace("instance 2.0 ", "instance 2 ") for n in notes] == [
        f"run instance 2 restarted (STARTUP_TIME {startup_2}): left out, its counts started again from zero"
    ]
    spans = (times[1] - times[0], times[2] - times[1])
    samples: dict = {}
    agent = []
    for raw in raws:
        computed = compute({"oracle": raw}, {}, "h", samples)
        samples = computed.samples
        agent.append(
            {
                dict(p.tags)["event"]: p.fields["waits_per_s"]
                for p in computed.points
                if p.measurement == "dnfsmon_oracle_event" and dict(p.tags)["instance"] == "simdb1"
            }
        )
    for row in run_lines:
        done = sum(a[row["dnfs_event"]] * s for a, s in zip(agent[1:], spans))
        assert row["waits_per_s"] == pytest.approx(done / sum(spans), rel=1e-9), row["dnfs_event"]
    # The interval with the restart: instance 1's lines only, and the same note with the interval's time.
    tables = {"cur": (EVENT_NAMES, snapshots[2]), "prev": (EVENT_NAMES, snapshots[1])}
    binds = {"dnfs_prev_t": times[1], "dnfs_cur_t": times[2], "dnfs_cur_clock": "22:22:40"}
    interval = run_core("dnfs_latency_print.sql", LATENCY_PRINT, tables, binds, INTERVAL_DEFINES)
    assert {r["dnfs_inst_id"] for r in interval} == {1}
    notes = run_core("dnfs_latency_print.sql", LATENCY_RESTARTS, tables, binds, INTERVAL_DEFINES)
    assert [n["dnfs_restart_note"].split(" instance ")[0] for n in notes] == ["22:22:40"]
    # An interval with no restart has no note, and both instances.
    tables = {"cur": (EVENT_NAMES, snapshots[1]), "prev": (EVENT_NAMES, snapshots[0])}
    binds = {"dnfs_prev_t": times[0], "dnfs_cur_t": times[1], "dnfs_cur_clock": "22:18:20"}
    assert run_core("dnfs_latency_print.sql", LATENCY_RESTARTS, tables, binds, INTERVAL_DEFINES) == []
    assert {
        r["dnfs_inst_id"] for r in run_core("dnfs_latency_print.sql", LATENCY_PRINT, tables, binds, INTERVAL_DEFINES)
    } == {1, 2, None}


HIST_STEP = "histogram of 'db file sequential read' in the interval"
HIST_RESTARTS = "instances restarted between the two histogram snapshots"
HIST_NAMES = ["inst_id", "bound_us", "wait_count", "startup"]


def hist_snapshot(document):
    """The 'db file sequential read' buckets as dnfs_latency_hist_snapshot.sql stores them: each with its
    instance's STARTUP_TIME from GV$INSTANCE."""
    startup = dict(rows_of(document, "instances", ["INST_ID", "STARTUP_TIME"]))
    rows = rows_of(document, "event_histogram", ["INST_ID", "WAIT_TIME_MICRO", "WAIT_COUNT", "EVENT"])
    return [[i, u, c, startup[i]] for i, u, c, e in rows if e == "db file sequential read"]


def test_an_instance_restarted_inside_a_histogram_interval_is_left_out_and_said():
    """Review F2: the histogram told a restart only by a bucket's count going down, so after a restart a
    bucket that grew past its count before the restart printed (count since restart - count before), and
    % waits mixed such buckets with real ones. With each bucket's STARTUP_TIME (GV$INSTANCE) in the
    snapshot, as the events snapshot has it, the restarted instance has no bucket line for the interval
    and one line names it. Truth: the simulator's restart times; for instance 1 the agent's buckets."""
    workload = simulator.Workload(instances=2, release="19c", restart_every_s=1000.0)
    # One interval from 5 s to 560 s (instance 2 restarts at 500 s), and one from 5 s to 300 s without.
    times = (workload.epoch + 5.0, workload.epoch + 300.0, workload.epoch + 560.0)
    memory = simulator.Memory()
    raws = [simulator.read(workload, t, memory) for t in times]
    docs = [json.loads(r.text(oracle.RESULTS)) for r in raws]
    snapshots = [hist_snapshot(d) for d in docs]
    model = simulator.Model(workload)
    assert [i for i in (1, 2) if model.startup(i, times[0]) != model.startup(i, times[2])] == [2]
    # The case the old guard missed: a bucket of instance 2 grew past its count before the restart.
    before = {(r[0], r[1]): r[2] for r in snapshots[0]}
    assert any(r[2] > before.get((r[0], r[1]), 0) for r in snapshots[2] if r[0] == 2)
    tables = {"cur": (HIST_NAMES, snapshots[2]), "prev": (HIST_NAMES, snapshots[0])}
    binds = {"dnfs_hist_prev_t": times[0], "dnfs_hist_cur_t": times[2], "dnfs_cur_clock": "22:22:40"}
    buckets = run_core("dnfs_latency_hist_step.sql", HIST_STEP, tables, binds)
    assert buckets and {r["dnfs_inst_id"] for r in buckets} == {1}
    assert sum(r["pct"] for r in buckets) == pytest.approx(100.0)
    first = compute({"oracle": raws[0]}, {}, "h", {})
    points = compute({"oracle": raws[2]}, {}, "h", first.samples).points
    agent = {
        dict(p.tags)["le_us"]: p.fields["waits_per_s"]
        for p in points
        if p.measurement == "dnfsmon_oracle_latency_histogram"
        and dict(p.tags)["event"] == "db file sequential read"
        and dict(p.tags)["instance"] == "simdb1"
    }
    for row in buckets:
        assert row["bucket_waits_per_s"] == pytest.approx(agent[str(int(float(row["bucket"])))], rel=1e-9)
    notes = run_core("dnfs_latency_hist_step.sql", HIST_RESTARTS, tables, binds)
    startup_2 = dict(rows_of(docs[2], "instances", ["INST_ID", "STARTUP_TIME"]))[2]
    assert [n["dnfs_restart_note"].replace("instance 2.0 ", "instance 2 ") for n in notes] == [
        f"22:22:40 instance 2 restarted (STARTUP_TIME {startup_2}): left out of the histogram,"
        " its counts started again from zero"
    ]
    # An interval with no restart: no note, both instances.
    tables = {"cur": (HIST_NAMES, snapshots[1]), "prev": (HIST_NAMES, snapshots[0])}
    binds = {"dnfs_hist_prev_t": times[0], "dnfs_hist_cur_t": times[1], "dnfs_cur_clock": "22:18:20"}
    assert run_core("dnfs_latency_hist_step.sql", HIST_RESTARTS, tables, binds) == []
    assert {r["dnfs_inst_id"] for r in run_core("dnfs_latency_hist_step.sql", HIST_STEP, tables, binds)} == {1, 2}


def test_the_histogram_snapshot_reads_startup_time_with_the_buckets():
    """Each histogram snapshot reads GV$INSTANCE.STARTUP_TIME in its one statement with the histogram
    view (joined on INST_ID), as the events snapshot does, on every release the pack supports."""
    for release in ("11.2.0.4", "19c", "23ai"):
        result = run("dnfs_latency.sql", "5", "2", release=release)
        assert result.findings == [], [str(f) for f in result.findings]
        reads = [s for f, _, s in result.statements if f == "dnfs_latency_hist_snapshot.sql"]
        assert reads and all("gv$instance i on h.inst_id = i.inst_id" in s and "startup_time" in s for s in reads)


def test_the_events_snapshot_reads_startup_time_with_the_events():
    """Each events snapshot reads GV$INSTANCE.STARTUP_TIME in its one statement with GV$SYSTEM_EVENT
    (joined on INST_ID), so both come from the same moment, on every release the pack supports."""
    for release in ("11.2.0.4", "19c", "23ai"):
        result = run("dnfs_latency.sql", "5", "2", release=release)
        assert result.findings == [], [str(f) for f in result.findings]
        reads = [s for f, _, s in result.statements if f == "dnfs_latency_snapshot.sql"]
        assert reads and all("gv$instance i on e.inst_id = i.inst_id" in s and "startup_time" in s for s in reads)


@pytest.mark.parametrize(("count", "runs"), [(("5", "3"), 1), (("0",), 0)])
def test_dnfs_latency_prints_the_run_after_its_last_interval_from_its_first_snapshot(count, runs):
    """As SQL*Plus runs it: after the last step, dnfs_latency_print.sql once more, fed :dnfs_ev_first
    (a copy of the first snapshot, freed at the end) and labelled 'run'; a refused run prints no run
    line: it sends no query at all (review F3)."""
    result = run("dnfs_latency.sql", *count)
    assert [str(f) for f in result.findings] == [] and sqlplus_rules.leftovers(result) == []
    sent = [(f, s) for f, _, s in result.statements if f == "dnfs_latency_print.sql"]
    if not runs:
        assert sent == [] and not any(f == "dnfs_latency_snapshot.sql" for f, _, _ in result.statements)
        return
    whole = [s for _, s in sent if "xmltype(:dnfs_ev_first)" in s and "as label" in s]
    assert len(whole) == 1 and "'run' as label" in whole[0]
    assert ":dnfs_cur_t > :dnfs_first_t" in whole[0]
    # Each print is the lines and the restart note: once per interval and once for the run.
    assert len(sent) == 2 * (steps(result, "dnfs_latency_step.sql") + 1)
    assert len([s for _, s in sent if "as dnfs_restart_note" in s]) == len(sent) // 2
    last_snapshot = max(i for i, (f, _, _) in enumerate(result.statements) if f == "dnfs_latency_snapshot.sql")
    assert next(i for i, (_, _, s) in enumerate(result.statements) if "xmltype(:dnfs_ev_first)" in s) > last_snapshot
    assert steps(result, "dnfs_latency_step.sql") == (3 if runs else 0)


# --- dnfs_check over recorded rows ---


def as_run(script, sql, release="19c", granted=ALL_GRANTED, open_mode="READ WRITE"):
    """The statement `sql` of `script` as the checker's run sent it: its substitution variables replaced.

    A `*_report.sql` is run by its user script (dnfs_iops_report.sql by dnfs_iops.sql)."""
    text = read(os.path.join(SQL, script))
    line = text[: text.index(sql)].count("\n") + 1
    entry = re.sub(r"_report\.sql$", ".sql", script)
    statements = run(entry, release=release, granted=granted, open_mode=open_mode).statements
    sent = [s for f, n, s in statements if (f, n) == (script, line)]
    assert sent, (script, line)
    return sent[0].rstrip().rstrip(";")


def run_query(script, core, tables, release="19c", granted=ALL_GRANTED, open_mode="READ WRITE"):
    """Run a script's query marked '-- core: <name>', as sent on `release`, in SQLite over `tables` named as the views."""
    sql = as_run(script, core_queries(read(os.path.join(SQL, script)))[core], release, granted, open_mode)
    connection = sqlite3.connect(":memory:")
    connection.execute("create table dual (dummy)")
    connection.execute("insert into dual values ('X')")
    for table, (columns, rows) in tables.items():
        connection.execute(f'create table "{table}" ({", ".join(f"{chr(34)}{c}{chr(34)}" for c in columns)})')
        connection.executemany(f'insert into "{table}" values ({", ".join("?" for _ in columns)})', rows)
    # Quoted identifiers: SQLite reads GROUP# and THREAD# only quoted; it matches them without case.
    cursor = connection.execute(sqlglot.transpile(sql, read="oracle", write="sqlite", identify=True)[0])
    names = [d[0].lower() for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def rac_with_standby_logs():
    """Two RAC instances (threads 1 and 2) of a Data Guard primary: each sees every thread's logs and the standby logs.

    GV$LOGFILE lists every member the control file knows (both threads' online
    logs and the standby logs); GV$LOG only the online groups with their
    THREAD#; each instance's processes open only their own thread's online
    logs (and the data, temp and control files).
    """
    instances = [(1, 1), (2, 2)]  # (INST_ID, THREAD#)
    logs = [(1, 1), (2, 1), (3, 2), (4, 2)]  # (GROUP#, THREAD#)
    standby = [11, 12]
    data = ["/oradata/system01.dbf", "/oradata/users01.dbf"]
    temp = ["/oradata/temp01.dbf"]
    control = ["/oradata/control01.ctl"]
    member = "/oradata/redo{:02d}.log".format
    logfile, log, opened = [], [], []
    for inst, thread in instances:
        for group, log_thread in logs:
            logfile.append((inst, group, "ONLINE", member(group)))
            log.append((inst, group, log_thread))
            if log_thread == thread:
                opened.append((inst, member(group)))
        logfile += [(inst, group, "STANDBY", member(group)) for group in standby]
        opened += [(inst, name) for name in data + temp + control]
    per_instance = [(inst, name) for inst, _ in instances for name in data]
    return {
        "v$database": (["database_role"], [("PRIMARY",)]),
        "gv$instance": (["inst_id", "thread#"], instances),
        "gv$datafile": (["inst_id", "name", "con_id"], [(inst, name, 0) for inst, name in per_instance]),
        "gv$tempfile": (["inst_id", "name", "con_id"], [(inst, name, 0) for inst, _ in instances for name in temp]),
        "gv$containers": (["inst_id", "con_id", "open_mode"], [(inst, 0, "READ WRITE") for inst, _ in instances]),
        "gv$controlfile": (["inst_id", "name"], [(inst, name) for inst, _ in instances for name in control]),
        "gv$logfile": (["inst_id", "group#", "type", "member"], logfile),
        "gv$log": (["inst_id", "group#", "thread#"], log),
        "gv$dnfs_files": (["inst_id", "filename"], opened),
        "gv$dnfs_servers": (["inst_id", "svrname"], [(inst, "filer1") for inst, _ in instances]),
        "gv$dnfs_channels": (
            ["inst_id", "svrname", "path"],
            [(inst, "filer1", path) for inst, _ in instances for path in ("10.0.1.1", "10.0.2.1")],
        ),
    }


def test_dnfs_check_counts_only_the_instances_own_online_logs_on_rac_and_data_guard():
    """Review: GV$LOGFILE lists other threads' and standby logs, which no process of the instance opens."""
    tables = rac_with_standby_logs()
    assert run_query("dnfs_check.sql", "files not open through dNFS", tables) == []
    verdicts = run_query("dnfs_check.sql", "verdict per instance", tables)
    assert [(v["dnfs_inst_id"], v["verdict"].split(":")[0]) for v in verdicts] == [(1, "IN USE"), (2, "IN USE")]
    assert all("all 6 database files open through dNFS" in v["verdict"] for v in verdicts)  # 2 data, temp, ctl, 2 logs
    # An own-thread online log not open through dNFS is still caught.
    name = "/oradata/redo01.log"
    tables["gv$dnfs_files"] = (["inst_id", "filename"], [r for r in tables["gv$dnfs_files"][1] if r != (1, name)])
    listed = run_query("dnfs_check.sql", "files not open through dNFS", tables)
    assert [(r["dnfs_inst_id"], r["dnfs_file_type"], r["dnfs_file_name"]) for r in listed] == [(1, "Redo log", name)]
    verdicts = run_query("dnfs_check.sql", "verdict per instance", tables)
    assert verdicts[0]["verdict"].startswith("PARTLY: 1 of 6") and verdicts[1]["verdict"].startswith("IN USE")


def physical_standby():
    """The same RAC database as a physical (Active Data Guard) standby.

    Its online logs are defined but unused; RFS writes the standby logs, one
    group per primary thread at a time (Data Guard Concepts and
    Administration, redo transport: standby redo logs). So the processes have
    opened the data, temp and control files and the standby log being written.
    """
    tables = rac_with_standby_logs()
    tables["v$database"] = (["database_role"], [("PHYSICAL STANDBY",)])
    opened = [r for r in tables["gv$dnfs_files"][1] if "redo" not in r[1]]
    tables["gv$dnfs_files"] = (["inst_id", "filename"], [*opened, (1, "/oradata/redo11.log")])
    return tables


@pytest.mark.parametrize("role", ["PHYSICAL STANDBY", "FAR SYNC"])
def test_dnfs_check_on_a_standby_role_leaves_redo_out_and_says_so(role):
    """Review: on a standby the own-thread online logs are unused, so every standby read "PARTLY".

    The roles that write their online logs are named (PRIMARY, LOGICAL and
    SNAPSHOT STANDBY), so a far sync instance (12.1+) is not taken for a primary.
    """
    tables = physical_standby()
    tables["v$database"] = (["database_role"], [(role,)])
    assert run_query("dnfs_check.sql", "files not open through dNFS", tables) == []
    verdicts = run_query("dnfs_check.sql", "verdict per instance", tables)
    assert [v["verdict"].split(":")[0] for v in verdicts] == ["IN USE", "IN USE"]
    for v in verdicts:
        assert v["verdict"].startswith(f"IN USE: all 4 database files ({role.lower()}: redo logs not counted"), v
    # A data file not open through dNFS is still caught on the standby.
    tables["gv$dnfs_files"] = (
        ["inst_id", "filename"],
        [r for r in tables["gv$dnfs_files"][1] if r != (2, "/oradata/users01.dbf")],
    )
    listed = run_query("dnfs_check.sql", "files not open through dNFS", tables)
    assert [(r["dnfs_inst_id"], r["dnfs_file_type"]) for r in listed] == [(2, "Data file")]
    verdicts = run_query("dnfs_check.sql", "verdict per instance", tables)
    assert verdicts[1]["verdict"].startswith(f"PARTLY: 1 of 4 database files ({role.lower()}")
    # The primary's verdict carries no note, and still counts its own online logs.
    primary = run_query("dnfs_check.sql", "verdict per instance", rac_with_standby_logs())
    assert all(v["verdict"].startswith("IN USE: all 6 database files open through dNFS") for v in primary)


def mounted_standby(redo_apply=True):
    """The physical standby mounted, not open: no process has a temp file open, and the data files only under Redo Apply.

    A temp file cannot be used before the database is open (ORA-01220:
    temporary tablespace usage not allowed before database is open), so
    GV$DNFS_FILES never lists one; the data files are opened by the recovery
    processes, so they are listed only while Redo Apply runs (Data Guard
    Concepts and Administration, applying redo to a physical standby).
    """
    tables = physical_standby()
    temp = {name for _, name, _ in tables["gv$tempfile"][1]}
    data = {name for _, name, _ in tables["gv$datafile"][1]}
    left_out = temp if redo_apply else temp | data
    opened = [r for r in tables["gv$dnfs_files"][1] if r[1] not in left_out]
    tables["gv$dnfs_files"] = (["inst_id", "filename"], opened)
    return tables


def test_dnfs_check_on_a_mounted_database_leaves_temp_files_out_and_cannot_tell_without_redo_apply():
    """dba-review N1: mounted, the unopened temp files made every standby "PARTLY"; without Redo Apply
    no data file is open, which says nothing about dNFS."""
    mounted = {"open_mode": "MOUNTED"}
    tables = mounted_standby()
    assert run_query("dnfs_check.sql", "files not open through dNFS", tables, **mounted) == []
    verdicts = [v["verdict"] for v in run_query("dnfs_check.sql", "verdict per instance", tables, **mounted)]
    assert not any("PARTLY" in v for v in verdicts), verdicts
    for v in verdicts:  # 2 data files and the control file; no temp file, no redo log
        assert v.startswith("IN USE: all 3 database files (physical standby: redo logs not counted"), v
        assert v.endswith("; mounted: temp files not counted, data files are open only while Redo Apply runs"), v
    # A data file not open through dNFS while Redo Apply runs is still caught.
    tables["gv$dnfs_files"] = (
        ["inst_id", "filename"],
        [r for r in tables["gv$dnfs_files"][1] if r != (2, "/oradata/users01.dbf")],
    )
    verdicts = [v["verdict"] for v in run_query("dnfs_check.sql", "verdict per instance", tables, **mounted)]
    assert verdicts[0].startswith("IN USE") and verdicts[1].startswith("PARTLY: 1 of 3 database files"), verdicts
    # No Redo Apply: no process has a data file open, on either instance.
    tables = mounted_standby(redo_apply=False)
    verdicts = [v["verdict"] for v in run_query("dnfs_check.sql", "verdict per instance", tables, **mounted)]
    assert (
        verdicts
        == [
            "CANNOT TELL: mounted, and no process has a data file open (they are open only while Redo Apply runs;"
            " temp files are not counted mounted)"
        ]
        * 2
    )
    # Open, the same files give the old verdicts: the temp file is counted and missing from GV$DNFS_FILES.
    verdicts = [v["verdict"] for v in run_query("dnfs_check.sql", "verdict per instance", mounted_standby())]
    assert all(v.startswith("PARTLY: 1 of 4 database files") and "mounted" not in v for v in verdicts), verdicts


def test_dnfs_check_sorts_files_not_processes_times_files():
    """dba-review N2: GV$DNFS_FILES has a row per process per file (about 70 x 3000 on a recovering
    standby), and mounted only in-memory sorts work (ORA-01220). dnfs_check reads it only in an
    EXISTS per file: no SELECT whose FROM is GV$DNFS_FILES removes duplicates, groups or aggregates."""
    sent = [sql for f, _, sql in run("dnfs_check.sql", open_mode="MOUNTED").statements if f == "dnfs_check.sql"]
    reading = [sql for sql in sent if "GV$DNFS_FILES" in views_in(sql)]
    assert len(reading) == 2, reading  # the list and the verdict
    for sql in reading:
        tree = sqlglot.parse_one(sql.rstrip().rstrip(";"), read="oracle")
        for select in tree.find_all(exp.Select):
            sources = [select.args.get("from_"), *(select.args.get("joins") or [])]
            tables = {t.name.lower() for s in sources if s for t in s.find_all(exp.Table)}
            if "gv$dnfs_files" in tables:
                assert not select.args.get("distinct") and not select.args.get("group"), select.sql()
                assert not list(select.find_all(exp.AggFunc)), select.sql()


# --- the manual's sample output comes from these queries ---


def column_formats(script):
    """COLUMN name HEADING '...' FORMAT f of a script, in order."""
    return {
        m.group(1): (m.group(2), m.group(3))
        for m in re.finditer(r"(?m)^column (\w+) heading '([^']*)' format (\S+)", read(os.path.join(SQL, script)))
    }


def sqlplus_table(rows, columns, formats):
    """Rows laid out as SQL*Plus lays them out with these COLUMN formats (COLSEP ' ', default justification).

    SQL*Plus User's Guide and Reference, COLUMN FORMAT: a NUMBER column is as
    wide as its format plus one (the sign), or its heading if longer, and right
    justified; a CHAR column (An) is n wide, heading truncated, left justified.
    """
    cells, widths, numeric = [], [], []
    for column in columns:
        heading, fmt = formats[column]
        if fmt.lower().startswith("a"):
            width = int(fmt[1:])
            numeric.append(False)
        else:
            width = max(len(fmt) + 1, len(heading))
            numeric.append(True)
        widths.append(width)
    lines = [
        " ".join(
            (h.rjust(w) if n else h[:w].ljust(w)) for h, w, n in zip((formats[c][0] for c in columns), widths, numeric)
        ),
        " ".join("-" * w for w in widths),
    ]
    for row in rows:
        for column, width, is_number in zip(columns, widths, numeric):
            value = row[column]
            fmt = formats[column][1]
            if value is None:
                text = ""
            elif is_number:
                decimals = len(fmt.split(".")[1]) if "." in fmt else 0
                text = f"{value:.{decimals}f}"
            else:
                text = str(value)
            cells.append(text.rjust(width) if is_number else text.ljust(width))
        lines.append(" ".join(cells).rstrip())
        cells = []
    return [line.rstrip() for line in lines]


def test_the_manuals_sample_output_comes_from_the_scripts_queries():
    _, _, rows = iops_rows(churn=False)
    iops = sqlplus_table(
        rows,
        [
            "dnfs_inst_id",
            "dnfs_sample_time",
            "read_iops",
            "write_iops",
            "total_iops",
            "read_mbps",
            "write_mbps",
            "avg_read_kb",
            "avg_write_kb",
        ],
        column_formats("dnfs_iops_report.sql"),
    )
    _, events, buckets, _ = latency_rows(first_hit=False)
    latency = sqlplus_table(
        events,
        ["dnfs_inst_id", "dnfs_event", "dnfs_sample_time", "waits_per_s", "avg_ms", "fg_avg_ms"],
        column_formats("dnfs_latency_report.sql"),
    )
    histogram = sqlplus_table(
        buckets, ["dnfs_inst_id", "bucket", "bucket_waits_per_s", "pct"], column_formats("dnfs_latency_report.sql")
    )
    manual = read(os.path.join(SQL, "README.md"))
    for block in (iops, latency, histogram):
        assert "\n".join(block) in manual, "\n" + "\n".join(block)


def test_the_loop_resets_what_a_login_sql_may_change_before_any_substitution():
    """dba-review P3: a login.sql with SET DEFINE OFF made @@&_dnfs_step open a file named
    '&_dnfs_step.sql' (SP2-0310, 60 times); SQLCASE UPPER, PAUSE ON and a TTITLE broke it too.
    _dnfs_start resets them right after STORE SET (which restores them at the end), before the
    first line that holds an '&'."""
    lines = read(os.path.join(SQL, "_dnfs_start.sql")).splitlines()
    code = [(n, line.lower()) for n, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("--")]
    reset = next(n for n, line in code if line.startswith("set define '&'"))
    for setting in ("concat '.'", "sqlterminator ';'", "pause off", "sqlcase mixed"):
        assert setting in lines[reset].lower()
    assert any(line == "ttitle off" for _, line in code) and any(line == "btitle off" for _, line in code)
    store = next(n for n, line in code if line.startswith("store set"))
    # The settings file's two lines work whatever DEFINE is (test_the_define_setting_comes_back_...).
    settings_file = ("store set &_dnfs_settings replace", 'define _dnfs_settings_used = "&_dnfs_settings"')
    first_ampersand = next(n for n, line in code if "&" in line and n != reset and line not in settings_file)
    assert store < reset < first_ampersand


# SET system variables (and titles) a DBA's login.sql may set, as SQL*Plus's own
# examples and common login.sql files do; each changes how a script is read or run.
LOGIN_SESSIONS = {
    "define off": {"define": "off"},
    "define ^": {"define": "^"},
    "suffix txt": {"suffix": "txt"},
    "concat off": {"concat": "off"},
    "sqlcase upper": {"sqlcase": "upper"},
    "pause on": {"pause": "on"},
    "sqlterminator #": {"sqlterminator": "#"},
    "titles": {"ttitle": "on", "btitle": "on"},
    "all of them": {
        "define": "off",
        "suffix": "txt",
        "concat": "off",
        "sqlcase": "upper",
        "pause": "on",
        "sqlterminator": "#",
        "ttitle": "on",
        "btitle": "on",
    },
}


@pytest.mark.parametrize("login", sorted(LOGIN_SESSIONS))
@pytest.mark.parametrize("script", [*USER_SCRIPTS, *SETUP_SCRIPTS])
def test_every_script_runs_from_a_session_a_login_sql_changed(script, login):
    """dba-review P3 and the SUFFIX rule, from a session not at the defaults.

    The checker starts from what the login.sql set and reads every line as
    SQL*Plus would with it: an @@ without .sql takes SET SUFFIX's extension
    (SP2-0310 under SUFFIX txt), DEFINE OFF leaves &names unsubstituted,
    SQLCASE/PAUSE/SQLTERMINATOR/titles change each statement. The user types
    the .sql, as the README says for a changed SUFFIX.
    """
    arguments = ("C##MONITOR",) if script.startswith("setup/") else () if script != "dnfs_iops.sql" else ("5", "2")
    database = sqlplus_rules.Database(version=VERSIONS["19c"], sys_objects=ALL_GRANTED)
    result = sqlplus_rules.start(SQL, script, *arguments, database=database, login=LOGIN_SESSIONS[login])
    assert [str(f) for f in result.findings] == []
    assert sqlplus_rules.leftovers(result) == []
    if script in ("dnfs_iops.sql", "dnfs_latency.sql"):
        assert steps(result, script.replace(".sql", "_step.sql")) >= 2


# Sessions not at the defaults, as a DBA's login.sql leaves them (SQL*Plus User's Guide
# and Reference, "SET System Variable Summary": DEFINE, FEEDBACK, PAUSE, SQLCASE,
# SUFFIX, VERIFY; TTITLE and BTITLE, which STORE SET does not save, stay as the
# script leaves them: off). SQLFORMAT is SQLcl's and SQL*Plus refuses it.
SETUP_SESSIONS = {
    "define ^": {"verify": "on", "feedback": "off", "pause": "on", "sqlcase": "upper", "define": "^"},
    "define off": {"define": "off", "suffix": "txt", "sqlterminator": "#", "concat": "off", "feedback": "1"},
    "defaults but feedback": {"feedback": "3", "verify": "off"},
}


@pytest.mark.parametrize("login", sorted(SETUP_SESSIONS))
@pytest.mark.parametrize("script", SETUP_SCRIPTS)
def test_the_setup_scripts_put_back_the_dbas_settings(script, login):
    """dba-review S2: the setup scripts left VERIFY OFF and forced FEEDBACK ON instead of restoring.

    They save the SET system variables with STORE SET and run its file at the end
    (SQL*Plus User's Guide and Reference, STORE), as the pack's other scripts do,
    and from any DEFINE the DBA had (the file runs with DEFINE ^: substitution-rescan).
    """
    session = SETUP_SESSIONS[login]
    database = session_database("101")
    before = sqlplus_rules.SqlPlus(SQL, database, session).run_state.settings
    result = sqlplus_rules.start(SQL, script, "C##MONITOR", database=database, login=session)
    assert [str(f) for f in result.findings] == [] and sqlplus_rules.leftovers(result) == []
    assert result.settings == before
    text = read(os.path.join(SQL, script))
    assert "set feedback on" not in text.lower()
    assert text.rstrip().endswith("@^_dnfs_settings_used\nundefine _dnfs_settings _dnfs_settings_used")


@pytest.mark.parametrize("script", SETUP_SCRIPTS)
def test_two_sessions_running_a_setup_script_save_their_settings_to_files_of_their_own(script):
    """Review (E3, W6): the setup scripts saved to one dnfs_saved_settings.sql of the current directory, so a second
    session running one (or the pack) there at the same time overwrote the first's saved settings. They now
    name the file for the database, instance, session and host, by the same lines as _dnfs_start.sql."""
    files = {}
    for sid, feedback in (("101", "1"), ("102", "2")):
        session = sqlplus_rules.SqlPlus(SQL, session_database(sid), {"feedback": feedback, "pause": "on"})
        result = session.start(script, "C##MONITOR")
        assert [str(f) for f in result.findings] == [] and sqlplus_rules.leftovers(result) == []
        [files[sid]] = result.stored_files
        assert result.settings["feedback"] == feedback and result.settings["pause"] == "on"
    assert files == {
        "101": "dnfs_saved_settings_orcl_1_101_db1.sql",
        "102": "dnfs_saved_settings_orcl_1_102_db1.sql",
    }


def settings_lines(text):
    """From the sqlfluff note before the naming query to the line that keeps the name used."""
    start = text.index("-- (sqlfluff's oracle dialect does not take a / alone")
    end = text.index('define _dnfs_settings_used = "&_dnfs_settings"\n')
    return text[start:end]


def test_the_setup_scripts_name_their_settings_file_with_the_packs_own_lines():
    """The setup scripts stand alone (the Ansible role copies them alone), so they carry a copy of
    _dnfs_start.sql's naming lines: this keeps the copies equal, one rule for every settings file."""
    lines = settings_lines(read(os.path.join(SQL, "_dnfs_start.sql")))
    assert "store set &_dnfs_settings replace" in lines
    for script in SETUP_SCRIPTS:
        assert settings_lines(read(os.path.join(SQL, script))) == lines, script


def test_the_checker_sees_what_a_login_sql_changes(tmp_path):
    """A script that runs at the defaults fails in the sessions the pack must survive."""
    (tmp_path / "helper.sql").write_text("prompt helper\n")
    (tmp_path / "x.sql").write_text("define n = 1\n@@helper\nselect '&n', 'an event' from dual;\n")
    assert {f.rule for f in sqlplus_rules.start(str(tmp_path), "x.sql").findings} == {"script-suffix"}
    assert sqlplus_rules.start(str(tmp_path), "x.sql").scripts == ["x.sql", "helper.sql"]
    expected = {
        "suffix txt": {"script-suffix", "script-not-found"},
        "define off": {"script-suffix", "login-settings"},
        "sqlcase upper": {"script-suffix", "login-settings"},
        "titles": {"script-suffix", "login-settings"},
    }
    for login, rules in expected.items():
        found = sqlplus_rules.start(str(tmp_path), "x.sql", login=LOGIN_SESSIONS[login]).findings
        assert {f.rule for f in found} == rules, (login, [str(f) for f in found])


def session_database(sid, db_name="ORCL", instance="1", host="db1"):
    userenv = (("DB_NAME", db_name), ("INSTANCE", instance), ("SID", sid), ("SERVER_HOST", host))
    return sqlplus_rules.Database(version=VERSIONS["19c"], sys_objects=ALL_GRANTED, userenv=userenv)


def test_two_sessions_in_one_directory_save_their_settings_to_files_of_their_own():
    """E3/review: every session's STORE SET wrote dnfs_saved_settings.sql of the current directory, so a
    second DBA (or a second window) starting the pack there overwrote the first's saved settings, and
    the first got the second's back at its end. The file is now named for the database, instance,
    session and host (SYS_CONTEXT('USERENV', ...)): sessions that can run at once differ in one of them."""
    files = {}
    for label, database in {
        "first": session_database("101"),
        "second window": session_database("102"),
        "other instance": session_database("101", instance="2", host="db2"),
        "other database": session_database("101", db_name="TEST"),
    }.items():
        session = sqlplus_rules.SqlPlus(SQL, database, {"pause": "off", "feedback": "1"})
        result = session.start("dnfs_iops.sql", "5", "2")
        assert [str(f) for f in result.findings] == [] and sqlplus_rules.leftovers(result) == []
        [files[label]] = result.stored_files
        # The file it runs at the end is the one it wrote (no other STORE SET file is run).
        assert result.settings["feedback"] == "1"
    assert files["first"] == "dnfs_saved_settings_orcl_1_101_db1.sql"
    assert len(set(files.values())) == len(files), files
    # The name is read before anything is changed: the query is the first statement, then STORE SET.
    start = read(os.path.join(SQL, "_dnfs_start.sql"))
    code = [line for line in start.splitlines() if line.strip() and not line.lstrip().startswith("--")]
    first_set = next(i for i, line in enumerate(code) if line.lower().startswith(("set ", "ttitle", "btitle")))
    store = next(i for i, line in enumerate(code) if line.lower().startswith("store set"))
    assert code[store] == "store set &_dnfs_settings replace" and store < first_set
    assert sum(1 for line in code[:store] if line.lstrip().lower().startswith("select")) == 1


@pytest.mark.parametrize("define", ["&", "off", "^"])
def test_the_define_setting_comes_back_as_it_was_whatever_it_was(define):
    """The file name is substituted with &, so where & does not substitute (DEFINE OFF or another
    character) STORE SET writes the name as written and the end runs that same file. W5 (DBA review):
    this rested on SQL*Plus substituting a line once, which the guide does not say; the end now reads
    the name with DEFINE ^, which no name holds, and the checker's substitution-rescan rule fails any
    line whose value holds the DEFINE character (the old _dnfs_end.sql failed it under DEFINE OFF)."""
    database = session_database("101")
    session = sqlplus_rules.SqlPlus(SQL, database, {"define": define})
    for script in ("dnfs_iops.sql", "dnfs_check.sql"):
        result = session.start(script, *(("5", "2") if script == "dnfs_iops.sql" else ()))
        assert [str(f) for f in result.findings] == [], define
        assert result.settings["define"] == define
        stored = result.stored_files[-1]
        assert stored == ("dnfs_saved_settings_orcl_1_101_db1.sql" if define == "&" else "&_dnfs_settings")


def test_the_login_settings_rule_reads_what_each_setting_changes(tmp_path):
    """SQLCASE UPPER changes only what keeps its case in Oracle (literals, quoted identifiers); a / alone
    on a line runs the buffer whatever SQLTERMINATOR is; before a script's STORE SET has saved the
    session's settings, its one query pauses and shows the titles as the session is set."""
    cases = {
        "select 'A', \"B\" from dual\n/\n": {"sqlcase": set(), "sqlterminator": set()},
        "select 'a' from dual\n/\n": {"sqlcase": {"login-settings"}, "sqlterminator": set()},
        "select 'A' from dual;\n": {"sqlcase": set(), "sqlterminator": {"login-settings"}},
    }
    for text, expected in cases.items():
        (tmp_path / "x.sql").write_text(text)
        for setting, rules in expected.items():
            value = "upper" if setting == "sqlcase" else "#"
            found = sqlplus_rules.start(str(tmp_path), "x.sql", login={setting: value}).findings
            assert {f.rule for f in found} == rules, (text, setting)
    (tmp_path / "saved.sql").write_text("select 'A' from dual\n/\nstore set s.sql replace\nselect 'A' from dual\n/\n")
    (tmp_path / "unsaved.sql").write_text("select 'A' from dual\n/\n")
    for login in ({"pause": "on"}, {"ttitle": "on"}):
        found = sqlplus_rules.start(str(tmp_path), "saved.sql", login=login).findings
        assert [(f.line, f.rule) for f in found] == [(4, "login-settings")], login
        found = sqlplus_rules.start(str(tmp_path), "unsaved.sql", login=login).findings
        assert [(f.line, f.rule) for f in found] == [(1, "login-settings")], login


@pytest.mark.parametrize("release", ["11.2.0.4", "19c"])
def test_the_looping_scripts_free_every_clob_bind(release):
    """dba-review P4: each interval's XMLSERIALIZE snapshot (about 100 bytes x processes x instances) was
    copied and never freed: up to 60 temporary LOBs per bind per run, held in TEMP until the session ends."""
    database = sqlplus_rules.Database(version=VERSIONS[release], sys_objects=ALL_GRANTED)
    session = sqlplus_rules.SqlPlus(SQL, database)
    for script in ("dnfs_iops.sql", "dnfs_latency.sql", "dnfs_iops.sql"):
        result = session.start(script, "5", "4")
        assert [str(f) for f in result.findings if f.rule == "clob-free"] == [], script
        assert result.lobs == set(), script
    # Every CLOB the pack declares is freed with DBMS_LOB.FREETEMPORARY, in a block that does nothing
    # else that can fail (a failed block may leave its binds as they were: a freed locator kept).
    declared = {b for b, kind in result.binds.items() if kind.lower() == "clob"}
    frees = [s for _, _, s in result.statements if "dbms_lob.freetemporary(:" in s]
    assert declared == {re.search(r"freetemporary\(:(\w+)\)", s).group(1) for s in frees}
    # Nothing after the free can fail but the assignment that replaces the LOB (the shift copies first:
    # a copy that fails leaves the previous LOB as it was).
    after = [s[s.index("dbms_lob.freetemporary(:") :] for s in frees]
    assert all("select" not in s and "dbms_lob.copy" not in s for s in after)


def test_one_block_shifts_every_snapshot_its_binds_named_by_substitution():
    """Three *_shift.sql files each held the same free-and-copy block for their own binds: one
    block now (_dnfs_shift_lob.sql), its binds named by substitution variables as
    _dnfs_free_lob.sql's is, run for each of the five snapshots with the binds of that snapshot."""
    copying = sorted(
        f for f in os.listdir(SQL) if f.endswith(".sql") and "dbms_lob.copy(" in read(os.path.join(SQL, f))
    )
    assert copying == ["_dnfs_shift_lob.sql"]
    shifted = []
    for script in ("dnfs_iops.sql", "dnfs_latency.sql"):
        result = run(script, "5", "2")
        assert result.findings == [], [str(f) for f in result.findings]
        for file, _, sql in result.statements:
            if file == "_dnfs_shift_lob.sql":
                copied = re.search(r"dbms_lob\.copy\(taken, :(\w+),", sql).group(1)
                into = re.search(r":(\w+) := taken;", sql).group(1)
                times = re.search(r":(\w+) := :(\w+);", sql)
                shifted.append((copied, into, times.group(2), times.group(1)))
    pairs = {
        ("dnfs_cur", "dnfs_prev", "dnfs_cur_t", "dnfs_prev_t"),
        ("dnfs_ev_cur", "dnfs_ev_prev", "dnfs_cur_t", "dnfs_prev_t"),
        ("dnfs_hist_cur", "dnfs_hist_prev", "dnfs_hist_cur_t", "dnfs_hist_prev_t"),
    }
    first = ("dnfs_ev_cur", "dnfs_ev_first", "dnfs_cur_t", "dnfs_first_t")  # dnfs_latency's whole run (P7)
    run_totals = ("dnfs_run_next", "dnfs_run", "dnfs_run_next_us", "dnfs_run_us")  # dnfs_iops's whole run (P7)
    assert set(shifted) == pairs | {first, run_totals}
    # A snapshot and its shift per interval, and one at the start: 3 for each bind pair; the first
    # events snapshot is copied once more, for the whole run's lines; dnfs_iops's run totals once
    # per interval.
    assert sorted(shifted) == sorted([*list(pairs) * 3, first, run_totals, run_totals])


def test_the_readme_names_the_deepest_chain_of_nested_scripts():
    """The nesting rule's line in sql/README.md names the pack's deepest chain; it had gone stale (5, when
    freeing and then shifting a CLOB each added a level): it is the one the checker walks."""
    deepest = max((run(script, "5", "2").deepest for script in USER_SCRIPTS), key=len)
    assert len(deepest) < sqlplus_rules.MAX_DEPTH
    line = next(line for line in read(os.path.join(SQL, "README.md")).splitlines() if line.startswith("| `nesting`"))
    names = ", ".join(os.path.splitext(os.path.basename(s))[0] for s in deepest)
    assert f"The pack's deepest chain is {len(deepest)} ({names})" in line


def rac_cdb_with_pdb_affinity():
    """A 2-instance RAC CDB whose PDB2 is open on instance 1 only (PDB-to-instance affinity).

    GV$DATAFILE and GV$TEMPFILE list every container's files on every
    instance (the control file knows them all); GV$CONTAINERS gives each
    instance's open mode per container (Oracle Database Reference,
    V$CONTAINERS: MOUNTED, READ WRITE, READ ONLY, MIGRATE); the processes of
    an instance open only the files of the containers open there.
    """
    tables = rac_with_standby_logs()
    files = {1: ["/oradata/system01.dbf"], 2: ["/oradata/seed/system01.dbf"], 3: ["/oradata/pdb1/users01.dbf"]}
    files[4] = ["/oradata/pdb2/users01.dbf", "/oradata/pdb2/data01.dbf"]
    temp = {1: "/oradata/temp01.dbf", 3: "/oradata/pdb1/temp01.dbf", 4: "/oradata/pdb2/temp01.dbf"}
    modes = {1: "READ WRITE", 2: "READ ONLY", 3: "READ WRITE"}
    open_on = {1: {**modes, 4: "READ WRITE"}, 2: {**modes, 4: "MOUNTED"}}
    datafile, tempfile, containers, opened = [], [], [], []
    for inst in (1, 2):
        for con, names in files.items():
            datafile += [(inst, name, con) for name in names]
            if open_on[inst][con] != "MOUNTED":
                opened += [(inst, name) for name in names]
        for con, name in temp.items():
            tempfile.append((inst, name, con))
            if open_on[inst][con] != "MOUNTED":
                opened.append((inst, name))
        containers += [(inst, con, mode) for con, mode in open_on[inst].items()]
        opened += [(i, n) for i, n in tables["gv$dnfs_files"][1] if i == inst and ("redo" in n or "control" in n)]
    tables["gv$datafile"] = (["inst_id", "name", "con_id"], datafile)
    tables["gv$tempfile"] = (["inst_id", "name", "con_id"], tempfile)
    tables["gv$containers"] = (["inst_id", "con_id", "open_mode"], containers)
    tables["gv$dnfs_files"] = (["inst_id", "filename"], opened)
    return tables


def test_dnfs_check_leaves_out_the_files_of_a_pdb_not_open_on_the_instance():
    """dba-review P5: a PDB open on one RAC instance only made the other instance's verdict PARTLY."""
    tables = rac_cdb_with_pdb_affinity()
    assert run_query("dnfs_check.sql", "files not open through dNFS", tables) == []
    verdicts = [v["verdict"] for v in run_query("dnfs_check.sql", "verdict per instance", tables)]
    assert verdicts[0].startswith("IN USE: all 11 database files open through dNFS"), verdicts[0]
    assert not verdicts[0].endswith("not open here")
    # Instance 2: 11 files (5 data, 3 temp, 2 own redo logs, 1 control) less PDB2's 2 data files and its temp file, counted apart.
    assert verdicts[1].startswith("IN USE: all 8 database files open through dNFS"), verdicts[1]
    assert verdicts[1].endswith("; 3 files of PDBs not open here"), verdicts[1]
    # A file of a PDB open on the instance and not open through dNFS is still caught.
    name = "/oradata/pdb1/users01.dbf"
    tables["gv$dnfs_files"] = (["inst_id", "filename"], [r for r in tables["gv$dnfs_files"][1] if r != (2, name)])
    listed = run_query("dnfs_check.sql", "files not open through dNFS", tables)
    assert [(r["dnfs_inst_id"], r["dnfs_file_name"]) for r in listed] == [(2, name)]
    verdict = run_query("dnfs_check.sql", "verdict per instance", tables)[1]["verdict"]
    assert verdict.startswith("PARTLY: 1 of 8 database files") and verdict.endswith("3 files of PDBs not open here")


def test_dnfs_check_without_the_containers_grant_counts_every_file_and_says_so():
    """Before 12.1 there is no GV$CONTAINERS; without its grant the old counting stays, with one line naming it."""
    tables = rac_cdb_with_pdb_affinity()
    granted = tuple(g for g in ALL_GRANTED if g != "GV_$CONTAINERS")
    verdicts = run_query("dnfs_check.sql", "verdict per instance", tables, granted=granted)
    assert verdicts[1]["verdict"].startswith("PARTLY: 3 of 11"), verdicts[1]
    said = [p for p in run("dnfs_check.sql", granted=granted).prompts if "GV_$CONTAINERS" in p]
    assert said == [
        "PDBs not open on an instance are counted too: GRANT SELECT ON SYS.GV_$CONTAINERS TO DNFSMON"
        " (CONTAINER=ALL in a CDB)."
    ]
    old = as_run(
        "dnfs_check.sql",
        core_queries(read(os.path.join(SQL, "dnfs_check.sql")))["verdict per instance"],
        release="11.2.0.4",
    )
    assert "con_id" not in old.replace("0 as con_id", "").replace("c.con_id", "").replace("f.con_id", "")


def test_the_header_prints_only_when_the_loop_runs():
    """dba-review P7: a refused run printed the header ("every 0 s, 5 times") after its one line."""
    refused = run("dnfs_iops.sql", "0", "5")
    assert [p for p in refused.prompts if "every" in p] == []
    assert [p for p in run("dnfs_iops.sql", release="12.2", granted=()).prompts if "every" in p] == []
    assert [p for p in run("dnfs_check.sql").prompts if " every " in p and " s, " in p] == []
    ran = run("dnfs_iops.sql", "5", "2")
    assert [p for p in ran.prompts if "every" in p] == [
        "dNFS NFS READ/WRITE calls per instance, every 5 s, 2 times (database clock; processes diffed one by one)"
    ]
    latency = [p for p in run("dnfs_latency.sql", "10", "3").prompts if "every" in p]
    assert len(latency) == 1 and latency[0].startswith("I/O wait events per instance, every 10 s, 3 times (")


def test_a_refused_argument_names_the_stale_argument_case():
    """dba-review P8: &1 left by an earlier `@ash ...` gave a refusal for an argument the user never typed."""
    said = [p.strip() for p in run("dnfs_iops.sql", "ash").prompts if p.strip()]
    assert len(said) == 1 and said[0].endswith("(left from an earlier script? undefine 1 2).")
    said = [p.strip() for p in run("dnfs_iops.sql", "5", "x").prompts if p.strip()]
    assert len(said) == 1 and said[0].endswith("(left from an earlier script? undefine 1 2).")
    assert "undefine 1 2" in read(os.path.join(SQL, "README.md"))


def test_the_pack_formats_no_column_name_a_dba_formats_and_says_binary_units():
    """dba-review P10 and P11: COLUMN sample_time (V$ACTIVE_SESSION_HISTORY) and file_type
    (V$RECOVERY_AREA_USAGE) wiped a DBA's login.sql formats; 'GB' and 'MB' headings were GiB and MiB."""
    assert {"SAMPLE_TIME", "FILE_TYPE"} <= sqlplus_rules.VIEW_COLUMN_NAMES
    for script in ("dnfs_iops.sql", "dnfs_latency.sql", "dnfs_check.sql"):
        result = run(script, "5", "2") if script != "dnfs_check.sql" else run(script)
        assert [str(f) for f in result.findings if f.rule == "column-dba-name"] == [], script
    for path in SCRIPTS:
        for heading in re.findall(r"(?im)^\s*col(?:umn)?\s+\w+\s+heading\s+'([^']*)'", read(path)):
            assert not re.search(r"\b[KMGT]B\b", heading), (name(path), heading)  # KiB, MiB, GiB: 2^10, 2^20, 2^30


def test_the_limits_that_depend_on_the_release(tmp_path):
    """VARIABLE VARCHAR2(n): 32767 bytes from 12.1, 4000 before; identifiers: 30 bytes before 12.2."""
    (tmp_path / "bind.sql").write_text("variable v varchar2(8000)\n")
    (tmp_path / "alias.sql").write_text("select 1 as a_column_alias_of_thirty_one_bytes from dual;\n")
    for release, bind, alias in (("11.2.0.4", 1, 1), ("12.1.0.2", 0, 1), ("12.2", 0, 0), ("23ai", 0, 0)):
        database = sqlplus_rules.Database(version=VERSIONS[release])
        found = sqlplus_rules.start(str(tmp_path), "bind.sql", database=database).findings
        assert [f.rule for f in found] == ["variable-type"] * bind, release
        found = sqlplus_rules.start(str(tmp_path), "alias.sql", database=database).findings
        assert [f.rule for f in found] == ["name-length"] * alias, release


def test_the_readme_says_how_to_clear_the_settings_files_the_pack_cannot_delete():
    """DBA review (W4): each session leaves its STORE SET file, and the pack runs no HOST command to
    delete it (SQL*Plus User's Guide, HOST: a site may disable it with PRODUCT_USER_PROFILE). The
    README names a command whose pattern matches the file a session writes."""
    import fnmatch
    import re

    text = " ".join(read(os.path.join(SQL, "README.md")).split())
    [pattern] = re.findall(r"`rm ~/dnfsmon-sql/(dnfs_saved_settings_[^`\s]*)`", text)
    assert fnmatch.fnmatch("dnfs_saved_settings_orcl_1_101_db1.sql", pattern)
    assert not fnmatch.fnmatch("dnfs_iops.sql", pattern)
    start = read(os.path.join(SQL, "_dnfs_start.sql"))
    assert "'DNFS_SAVED_SETTINGS_' || sys_context('USERENV', 'DB_NAME')" in start
    assert not any(
        re.match(r"\s*(host|!|\$)", line, re.IGNORECASE)
        for name in os.listdir(SQL)
        if name.endswith(".sql")
        for line in read(os.path.join(SQL, name)).splitlines()
    )
