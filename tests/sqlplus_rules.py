"""SQL*Plus's documented script-entry rules, as a checker that walks a script the way SQL*Plus reads it.

No SQL*Plus or Oracle runs here, so the rules themselves are what the tests
check. `run()` reads a script line by line like SQL*Plus does (statement
entry, PL/SQL blocks, client commands, substitution variables, nested @@
scripts) and reports every place where SQL*Plus would not do what the script
means. Queries that set substitution variables (COLUMN ... NEW_VALUE) and
read only DUAL, V$INSTANCE, V$DATABASE or ALL_OBJECTS are executed in SQLite (transpiled
by sqlglot) against a one-row V$INSTANCE for the release, so the release
switches and the loop counter are computed by the scripts' own SQL, not by a
copy of it. The rule table with its sources is in sql/README.md; RULES below
is its single source (a test keeps the two equal).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import sqlite3
from typing import Optional

import sqlglot
from sqlglot import exp

import sqlcheck
from dnfsmon import oracle_facts

logging.getLogger("sqlglot").setLevel(logging.ERROR)  # "Unsupported TO_NUMBER": SQLite's CAST is what we want

# rule id -> what SQL*Plus does (the README's table adds the source of each).
RULES = {
    "blank-line": "a blank line inside a SQL statement ends its entry without running it (SQLBLANKLINES is OFF by default)",
    "unterminated": "a SQL statement ends with ; at the end of a line or / alone on a line; a PL/SQL block with / alone",
    "slash-reruns": "/ alone on a line runs the buffer again: after a statement ended with ; it runs it twice",
    "substitution-first-word": "a substitution variable cannot be the first word of a command",
    "undefined-variable": "a substitution variable not defined before use makes SQL*Plus prompt for it",
    "new-value-unsafe": "a NEW_VALUE variable set by a query that can fail or return no rows keeps its old value: define it first",
    "nesting": "@, @@ and START nest at most 20 scripts deep",
    "variable-type": "VARIABLE takes NUMBER, CHAR(n<=2000), VARCHAR2(n<=32767), CLOB and the other documented types",
    "bind-undeclared": "a bind variable must be declared with VARIABLE before a statement uses it",
    "whenever": "a script that changes the database sets WHENEVER SQLERROR EXIT before its first change",
    "set-unknown": "SET takes only the documented system variables",
    "termout-off": "with TERMOUT OFF a script's statements print nothing, their errors included",
    "store-set": "STORE SET saves SET system variables only: COLUMN settings and DEFINEs must be cleared by hand",
    "unknown-command": "a line starting with an unknown word is an unknown command (SP2-0734)",
    "ampersand-comment": "& in a comment inside a statement or block is substituted too",
    "column-clear": "COLUMN name CLEAR for a column never set prints an error (SP2-0046)",
    "secret-substituted": "a variable read with ACCEPT ... HIDE substituted into a line puts the secret in its text",
    "bind-stale": "bind variables keep their values for the session: a script reads only what it set in this run",
    "clear-columns": "CLEAR COLUMNS resets every column's settings, the DBA's own included: clear the pack's by name",
    "column-dba-name": "COLUMN for a V$ column name replaces, then clears, the DBA's own setting for it: alias it",
    "clob-free": "a CLOB bind's temporary LOB stays allocated until freed: free it before it is set again and by the end",
    "substitution-length": "a substitution variable's value is at most 240 characters",
    "name-length": "a variable name is at most 30 bytes (SQL*Plus 12.1 and before); an identifier 30 bytes before 12.2",
    "script-suffix": "@ and @@ append SET SUFFIX's extension to a name without one: name the .sql",
    "script-not-found": "@ or @@ of a file that does not exist prints SP2-0310 and goes on",
    "login-settings": "a statement runs as the session is set: DEFINE, SQLTERMINATOR, SQLCASE, PAUSE and titles as the pack needs",
    "substitution-rescan": "a value holding the DEFINE character: whether SQL*Plus substitutes it again is not documented",
    "xml-reverse-axis": "an XMLTABLE row is a copy of its node (no RETURNING SEQUENCE BY REF in 11.2): no parent, ancestor or preceding axis",
}

# SET system variables the pack may use, with SQL*Plus's defaults (SQL*Plus
# User's Guide and Reference, "SET System Variable Summary"). Abbreviations
# are listed as the guide writes them: the shortest accepted form first.
SET_DEFAULTS = {
    "autoprint": "off",
    "autotrace": "off",
    "concat": ".",
    "define": "&",
    "echo": "off",
    "feedback": "6",
    "heading": "on",
    "linesize": "80",
    "newpage": "1",
    "numformat": "",
    "pagesize": "14",
    "pause": "off",
    "serveroutput": "off",
    "sqlblanklines": "off",
    "sqlcase": "mixed",
    "sqlterminator": ";",
    "suffix": "sql",
    "tab": "on",
    "termout": "on",
    "timing": "off",
    "trimout": "on",
    "trimspool": "off",
    "underline": "-",
    "verify": "on",
}
SET_ABBREVIATIONS = {
    "autop": "autoprint",
    "autot": "autotrace",
    "con": "concat",
    "def": "define",
    "echo": "echo",
    "feed": "feedback",
    "hea": "heading",
    "lin": "linesize",
    "newp": "newpage",
    "numf": "numformat",
    "pages": "pagesize",
    "pau": "pause",
    "serveroutput": "serveroutput",
    "serverout": "serveroutput",
    "sqlbl": "sqlblanklines",
    "sqlc": "sqlcase",
    "sqlt": "sqlterminator",
    "suf": "suffix",
    "suffix": "suffix",
    "tab": "tab",
    "term": "termout",
    "timi": "timing",
    "trim": "trimout",
    "trims": "trimspool",
    "und": "underline",
    "ver": "verify",
}
CLIENT_COMMANDS = {
    # TTITLE/BTITLE OFF: the pack switches off a title a login.sql set (SQL*Plus User's Guide, TTITLE).
    "ttitle",
    "tti",
    "btitle",
    "bti",
    "accept",
    "acc",
    "clear",
    "cl",
    "column",
    "col",
    "define",
    "def",
    "exit",
    "quit",
    "prompt",
    "pro",
    "remark",
    "rem",
    "set",
    "store",
    "undefine",
    "undef",
    "variable",
    "var",
    "whenever",
    "password",
    "passw",
    "execute",
    "exec",
}
SQL_STARTS = {"select", "with", "insert", "update", "delete", "merge", "create", "alter", "drop", "grant", "revoke"}
BLOCK_STARTS = {"begin", "declare"}
WRITES = {"insert", "update", "delete", "merge", "create", "alter", "drop", "grant", "revoke"}
MAX_DEPTH = 20
# SQL*Plus User's Guide and Reference, Appendix A "SQL*Plus Limits" (10.2 B14357, 12.1 B71396,
# 23 F82042): "substitution variable value length: 240 characters"; "substitution variable name
# length: 30 bytes" up to 12.1 (128 bytes in 23). A pre-12.2 SQL*Plus may run the pack, so 30.
MAX_SUBSTITUTION_VALUE = 240
MAX_VARIABLE_NAME_BYTES = 30
# Oracle Database SQL Language Reference, "Database Object Naming Rules": names are 1 to 30 bytes
# before 12.2, 1 to 128 bytes from 12.2 (quoted or not).
MAX_IDENTIFIER_BYTES_BEFORE_12_2 = 30
# VARIABLE VARCHAR2(n): "The maximum that n can be is 32767 bytes" (User's Guide, VARIABLE, 12.2
# and 23); before 12.1 the VARCHAR2 limit outside PL/SQL is 4000 bytes (the 32767-byte limit came
# with 12.1's extended data types), so the pack keeps to 4000 there.
MAX_VARCHAR2_BIND = {(12, 1): 32767, (0,): 4000}
# Names a DBA's login.sql formats: the columns of the V$ views (the column
# facts shared with the agent, and the pack's own views). A COLUMN setting is
# per name, so the pack formats only aliases of its own (dnfs_...).
# Dictionary column names a DBA formats in login.sql besides the V$ ones:
# DBA_DATA_FILES and DBA_TEMP_FILES (FILE_NAME, TABLESPACE_NAME), DBA_OBJECTS
# (OWNER, OBJECT_NAME, OBJECT_TYPE), DBA_SEGMENTS (SEGMENT_NAME), DBA_USERS
# (USERNAME), and names of views the pack does not read that DBAs format:
# V$ACTIVE_SESSION_HISTORY.SAMPLE_TIME and V$RECOVERY_AREA_USAGE.FILE_TYPE
# (Oracle Database Reference, those views).
DICTIONARY_COLUMN_NAMES = {
    "SAMPLE_TIME",
    "FILE_TYPE",
    "FILE_NAME",
    "TABLESPACE_NAME",
    "OWNER",
    "OBJECT_NAME",
    "OBJECT_TYPE",
    "SEGMENT_NAME",
    "USERNAME",
}
VIEW_COLUMN_NAMES = (
    {"INST_ID"}
    | DICTIONARY_COLUMN_NAMES
    | {
        name
        for facts in [
            *oracle_facts.VIEWS.values(),
            *sqlcheck.PACK_VIEWS.values(),
            *sqlcheck.PACK_EXTRA_COLUMNS.values(),
        ]
        for name, _, _ in facts
    }
)
VARIABLE_TYPES = re.compile(
    r"(?i)^(number|binary_float|binary_double|clob|nclob|refcursor|char|nchar"
    r"|char\s*\(\s*(\d+)\s*(char|byte)?\s*\)|nchar\s*\(\s*(\d+)\s*\)"
    r"|varchar2\s*\(\s*(\d+)\s*(char|byte)?\s*\)|nvarchar2\s*\(\s*(\d+)\s*\))$"
)
# A substitution variable left in a statement's text (DEFINE was not & when it was read).
UNSUBSTITUTED = re.compile(r"&&?[A-Za-z_][A-Za-z0-9_#$]*")
LOB_TYPES = ("clob", "nclob")
# Tables a NEW_VALUE query may read for the checker to run it (SQLite).
# An XQuery step that looks up or back from a node: ancestor::, ancestor-or-self::, parent::, its
# abbreviation `..`, preceding:: and preceding-sibling:: (XQuery 1.0, 3.2.1.1 Axes; 3.2.4 Abbreviated Syntax).
REVERSE_AXIS = re.compile(r"\b(?:ancestor(?:-or-self)?|parent|preceding(?:-sibling)?)\s*::|\.\.")
XML_FUNCTION = re.compile(r"(?i)\b(xmltable|xmlquery)\s*\(")

EXECUTABLE_TABLES = {"DUAL", "V$INSTANCE", "V$DATABASE", "ALL_OBJECTS", "DBA_USERS"}


def _handler_spans(code: str) -> list[tuple[int, int]]:
    """(start, end) of each EXCEPTION section of a PL/SQL block: from EXCEPTION WHEN to its block's END.

    A nested block's handler ends at that block's END, so a set after it
    (in the enclosing block) is a set again. BEGIN and CASE open, END and
    END CASE close (END IF and END LOOP close neither).
    """
    spans = []
    for handler in re.finditer(r"(?i)\bexception\s+when\b", code):
        depth, end = 0, len(code)
        for word in re.finditer(r"(?i)\b(begin|case|end)\b(\s+(?:if|loop|case)\b)?", code[handler.end() :]):
            if word.group(2) and word.group(2).split()[0].lower() != "case":
                continue
            depth += -1 if word.group(1).lower() == "end" else 1
            if depth < 0:
                end = handler.end() + word.start()
                break
        spans.append((handler.start(), end))
    return spans


@dataclasses.dataclass(frozen=True)
class Finding:
    script: str
    line: int
    rule: str
    text: str

    def __str__(self) -> str:
        return f"{self.script}:{self.line}: {self.rule}: {self.text}"


@dataclasses.dataclass
class Database:
    """What the checker's SQLite answers: V$INSTANCE.VERSION, the SYS objects ALL_OBJECTS shows, DBA_USERS."""

    version: str = "19.0.0.0.0"
    sys_objects: tuple[str, ...] = ("DBMS_LOCK", "DBMS_SESSION", "GV_$EVENT_HISTOGRAM_MICRO")
    # V$DATABASE.OPEN_MODE: MOUNTED (a physical standby not open) or an open mode (Reference, V$DATABASE).
    open_mode: str = "READ WRITE"
    user: str = "DNFSMON"
    users: tuple[str, ...] = ("DNFSMON", "C##DNFSMON", "C##MONITOR")
    # SYS_CONTEXT('USERENV', ...) of the session (Oracle Database SQL Language Reference, SYS_CONTEXT).
    userenv: tuple[tuple[str, str], ...] = (
        ("DB_NAME", "ORCL"),
        ("INSTANCE", "1"),
        ("SID", "101"),
        ("SERVER_HOST", "db1"),
    )

    def connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(":memory:")
        userenv = dict(self.userenv)
        db.create_function("sys_context", 2, lambda space, name: userenv.get(name) if space == "USERENV" else None)
        db.create_function("regexp", 2, lambda pattern, text: text is not None and re.search(pattern, text) is not None)
        db.execute("create table dual (dummy text)")
        db.execute("insert into dual values ('X')")
        db.execute('create table "v$instance" (version text, instance_name text)')
        db.execute('insert into "v$instance" values (?, ?)', (self.version, "orcl"))
        db.execute('create table "v$database" (open_mode text)')
        db.execute('insert into "v$database" values (?)', (self.open_mode,))
        db.execute("create table all_objects (owner text, object_name text)")
        db.executemany("insert into all_objects values ('SYS', ?)", [(o,) for o in self.sys_objects])
        db.execute("create table dba_users (username text, account_status text)")
        db.executemany("insert into dba_users values (?, 'OPEN')", [(u,) for u in self.users])
        return db


@dataclasses.dataclass
class Run:
    """What one run of a script did: findings, prompts printed, statements sent, scripts entered."""

    findings: list[Finding] = dataclasses.field(default_factory=list)
    prompts: list[str] = dataclasses.field(default_factory=list)
    statements: list[tuple[str, int, str]] = dataclasses.field(default_factory=list)
    scripts: list[str] = dataclasses.field(default_factory=list)
    defined: dict[str, str] = dataclasses.field(default_factory=dict)
    settings: dict[str, str] = dataclasses.field(default_factory=lambda: dict(SET_DEFAULTS))
    columns: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    binds: dict[str, str] = dataclasses.field(default_factory=dict)
    sqlerror_exit: bool = False
    stored: bool = False
    stored_files: list[str] = dataclasses.field(default_factory=list)
    # The SET system variables as STORE SET wrote them, put back by running its file.
    stored_settings: dict[str, str] = dataclasses.field(default_factory=dict)
    secrets: set[str] = dataclasses.field(default_factory=set)
    binds_set: set[str] = dataclasses.field(default_factory=set)  # assigned in the current run
    dba_columns: set[str] = dataclasses.field(default_factory=set)  # the DBA's own, set before the run
    password_changes: list[str] = dataclasses.field(default_factory=list)
    titles: set[str] = dataclasses.field(default_factory=set)  # TTITLE/BTITLE on
    lobs: set[str] = dataclasses.field(default_factory=set)  # CLOB binds holding a temporary LOB
    saved_this_run: bool = False  # STORE SET has run in the current run
    deepest: list[str] = dataclasses.field(default_factory=list)  # the longest chain of nested scripts entered


class SqlPlus:
    """Reads scripts as SQL*Plus does; see RULES for what it reports."""

    def __init__(
        self,
        directory: str,
        database: Optional[Database] = None,
        login: Optional[dict[str, str]] = None,
        writable: bool = True,
    ) -> None:
        """`login`: what a login.sql set before the first script: SET system variables, and TTITLE/BTITLE "on".
        `writable`: whether STORE SET can write its file in the current directory (else it fails and
        writes nothing, and a later @ of that file is SP2-0310)."""
        self.directory = directory
        self.writable = writable
        self.database = database or Database()
        self.run_state = Run()
        self._store_ahead = False  # the script being read holds a STORE SET (see _session_settings)
        for name, value in (login or {}).items():
            if name in ("ttitle", "btitle"):
                self.run_state.titles.add(name)
            else:
                assert name in SET_DEFAULTS, name
                self.run_state.settings[name] = value.lower()

    def start(
        self,
        script: str,
        *args: str,
        defines: Optional[dict[str, str]] = None,
        dba_columns: tuple[str, ...] = (),
    ) -> Run:
        """`@script args...` at the SQL> prompt, from `directory`, after `define name = value` for `defines`.

        `dba_columns`: COLUMN settings the DBA made before (login.sql, say), which the script must leave alone.
        """
        self.run_state.defined.update(defines or {})
        for column in dba_columns:
            self.run_state.columns[column.lower()] = {"formatted": "by the DBA"}
            self.run_state.dba_columns.add(column.lower())
        self.run_state.binds_set = set()  # a new run: what earlier runs left in binds is stale
        self.run_state.saved_this_run = False
        for i, value in enumerate(args, 1):
            self.run_state.defined[str(i)] = value
        path = os.path.join(self.directory, script)
        self._script(path, 1)
        for bind in sorted(self.run_state.lobs):
            self._find(path, 0, "clob-free", f":{bind} still holds a temporary LOB when the run ends")
        return self.run_state

    # --- reading ---

    def _find(self, script: str, line: int, rule: str, text: str) -> None:
        self.run_state.findings.append(Finding(os.path.relpath(script, self.directory), line, rule, text))

    def _define_character(self) -> Optional[str]:
        """SET DEFINE: OFF substitutes nothing, ON is &, any other value is the character itself."""
        value = self.run_state.settings["define"]
        return None if value == "off" else "&" if value == "on" else value[:1]

    def _substitute(self, script: str, number: int, text: str) -> str:
        prefix = self._define_character()
        if prefix is None:
            return text
        concat = self.run_state.settings["concat"]
        concat = "." if concat == "on" else "" if concat == "off" else concat[:1]
        pattern = re.compile(re.escape(prefix) + "{1,2}([A-Za-z0-9_#$]+)" + (re.escape(concat) + "?" if concat else ""))

        def value(match: re.Match) -> str:
            name = match.group(1).lower()
            if name not in self.run_state.defined:
                self._find(script, number, "undefined-variable", f"&{name} is not defined: SQL*Plus prompts for it")
                return ""
            if name in self.run_state.secrets:
                # The substituted text is what SQL*Plus sends (shared pool,
                # V$SQL, audit trail) or prints (a failing line, VERIFY).
                self._find(script, number, "secret-substituted", f"&{name} was read with ACCEPT HIDE")
            found = self.run_state.defined[name]
            if prefix in found:
                # The guide says SET DEFINE sets the character that prefixes a
                # substitution variable and that SQL*Plus replaces each one with
                # its value; it does not say whether the text a value brings in
                # is scanned again. A script must not depend on either answer.
                self._find(script, number, "substitution-rescan", f"&{name}'s value {found!r} holds {prefix!r}")
            return found

        return pattern.sub(value, text)

    def _define(self, script: str, number: int, name: str, value: str) -> None:
        """A substitution variable set (DEFINE, ACCEPT, NEW_VALUE, an argument), within SQL*Plus's limits."""
        if len(value) > MAX_SUBSTITUTION_VALUE:
            self._find(script, number, "substitution-length", f"&{name} would be {len(value)} characters (at most 240)")
        self._name_length(script, number, name)
        self.run_state.defined[name] = value

    def _name_length(self, script: str, number: int, name: str) -> None:
        if len(name.encode()) > MAX_VARIABLE_NAME_BYTES:
            self._find(script, number, "name-length", f"{name}: {len(name.encode())} bytes (at most 30)")

    def _release(self) -> tuple[int, ...]:
        return tuple(int(part) for part in self.database.version.split(".")[:2])

    def _script(self, path: str, depth: int, caller: str = "", line: int = 0, chain: tuple[str, ...] = ()) -> None:
        if depth > MAX_DEPTH:
            self._find(path, 0, "nesting", f"nested {depth} deep (SP2-0309 past {MAX_DEPTH})")
            return
        if "." not in os.path.basename(path):
            # "If you omit ext, SQL*Plus assumes the default command-file extension" (@, SET SUFFIX).
            if caller:
                self._find(caller, line, "script-suffix", f"{os.path.basename(path)}: no .sql, SET SUFFIX decides")
            path += "." + self.run_state.settings["suffix"]
        if not os.path.exists(path):
            self._find(caller or path, line, "script-not-found", f"SP2-0310: unable to open {os.path.basename(path)}")
            return
        self.run_state.scripts.append(os.path.relpath(path, self.directory))
        chain = (*chain, os.path.relpath(path, self.directory))
        if len(chain) > len(self.run_state.deepest):
            self.run_state.deepest = list(chain)
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        self._store_ahead = any(line.strip().lower().startswith("store set") for line in lines)
        i = 0
        previous_ended_with_semicolon = False
        while i < len(lines):
            raw = lines[i]
            number = i + 1
            stripped = raw.strip()
            i += 1
            if not stripped or stripped.startswith("--"):
                continue
            first = stripped.split()[0].lower()
            if stripped == "/":
                if previous_ended_with_semicolon:
                    self._find(path, number, "slash-reruns", "/ after a statement ended with ; runs it again")
                continue
            previous_ended_with_semicolon = False
            if first.startswith("&"):
                self._find(path, number, "substitution-first-word", f"{first} is the command's first word")
                continue
            if first.startswith("@"):
                target = self._substitute(path, number, stripped.lstrip("@").split()[0])
                if target in self.run_state.stored_files:
                    # The file STORE SET wrote: SET commands only, which put back what it saved.
                    self.run_state.settings.update(self.run_state.stored_settings)
                    continue
                base = os.path.dirname(path) if stripped.startswith("@@") else self.directory
                ahead = self._store_ahead
                self._script(os.path.join(base, target), depth + 1, path, number, chain)
                self._store_ahead = ahead
                continue
            if first in CLIENT_COMMANDS:
                text = stripped
                while text.endswith(" -") and i < len(lines):  # continuation
                    text = text[:-2] + " " + lines[i].strip()
                    i += 1
                if self._command(path, number, self._substitute(path, number, text)) == "exit":
                    return
                continue
            if first in BLOCK_STARTS:
                end = self._until_slash(lines, i - 1)
                block = "\n".join(lines[i - 1 : end])
                self._comments_with_ampersand(path, number, block)
                self._statement(path, number, self._substitute(path, number, block), block=True, written=block)
                if end >= len(lines):
                    self._find(path, number, "unterminated", "PL/SQL block without / alone on a line")
                i = end + 1
                continue
            if first in SQL_STARTS:
                end, blank = self._until_terminator(lines, i - 1)
                if blank is not None and self.run_state.settings["sqlblanklines"] == "off":
                    self._find(path, blank + 1, "blank-line", "blank line inside a statement with SQLBLANKLINES OFF")
                if end >= len(lines):
                    self._find(path, number, "unterminated", "statement without ; or /")
                    return
                text = "\n".join(lines[i - 1 : end + 1])
                self._comments_with_ampersand(path, number, text)
                self._statement(path, number, self._substitute(path, number, text), block=False, written=text)
                previous_ended_with_semicolon = lines[end].strip() != "/"
                i = end + 1
                continue
            self._find(path, number, "unknown-command", f"SP2-0734: unknown command beginning {stripped[:20]!r}")

    @staticmethod
    def _until_slash(lines: list[str], start: int) -> int:
        end = start
        while end < len(lines) and lines[end].strip() != "/":
            end += 1
        return end

    @staticmethod
    def _until_terminator(lines: list[str], start: int) -> tuple[int, Optional[int]]:
        """Index of the line that ends the statement, and of the first blank line before it."""
        blank = None
        end = start
        while end < len(lines):
            line = lines[end]
            code = _code_part(line).rstrip()
            if line.strip() == "/" and end > start:
                return end, blank
            if code.endswith(";"):
                return end, blank
            if not line.strip() and blank is None:
                blank = end
            end += 1
        return end, blank

    def _comments_with_ampersand(self, path: str, number: int, text: str) -> None:
        for offset, line in enumerate(text.split("\n")):
            if "--" in line and "&" in line[line.index("--") :]:
                self._find(path, number + offset, "ampersand-comment", "& in a comment is substituted")

    # --- client commands ---

    def _command(self, path: str, number: int, text: str) -> str:
        words = text.split()
        first = words[0].lower()
        state = self.run_state
        if first in ("exit", "quit"):
            return "exit"
        if first in ("define", "def"):
            match = re.match(r'(?is)^\w+\s+(\w+)\s*=\s*(?:"(.*)"|\'(.*)\'|(\S*))\s*$', text)
            if match:
                value = next(v for v in match.groups()[1:] if v is not None)
                self._define(path, number, match.group(1).lower(), value)
        elif first in ("undefine", "undef"):
            for name in words[1:]:
                state.defined.pop(name.lower(), None)
        elif first in ("accept", "acc"):
            self._define(path, number, words[1].lower(), "<typed>")
            if "hide" in (w.lower() for w in words[2:]):
                state.secrets.add(words[1].lower())
        elif first in ("password", "passw"):
            # SQL*Plus asks for the new password twice, without echo, and
            # changes it itself (User's Guide, PASSWORD).
            state.password_changes.append(words[1].upper() if len(words) > 1 else "")
        elif first in ("column", "col"):
            name = words[1].lower()
            options = [w.lower() for w in words[2:]]
            if options == ["clear"]:
                if name not in state.columns:
                    self._find(path, number, "column-clear", f"SP2-0046: COLUMN '{name}' not defined")
                state.columns.pop(name, None)
            else:
                if name.upper() in VIEW_COLUMN_NAMES:
                    self._find(path, number, "column-dba-name", f"COLUMN {name}: a V$ column name the DBA may format")
                column = state.columns.setdefault(name, {})
                if "new_value" in options:
                    column["new_value"] = options[options.index("new_value") + 1]
                    self._name_length(path, number, column["new_value"])
                column["formatted"] = "yes"
        elif first in ("clear", "cl") and len(words) > 1 and words[1].lower().startswith("col"):
            self._find(path, number, "clear-columns", "CLEAR COLUMNS also resets the DBA's own COLUMN settings")
            state.columns.clear()
        elif first in ("variable", "var"):
            kind = " ".join(words[2:])
            match = VARIABLE_TYPES.match(kind)
            sizes = [int(g) for g in (match.groups() if match else ()) if g and g.isdigit()]
            varchar_limit = next(n for at, n in MAX_VARCHAR2_BIND.items() if self._release() >= at)
            too_big = sizes and (
                sizes[0] > 2000 if kind.lower().startswith(("char", "nchar")) else sizes[0] > varchar_limit
            )
            if not match or too_big:
                self._find(path, number, "variable-type", f"VARIABLE {words[1]} {kind}: not a documented type/size")
            self._name_length(path, number, words[1])
            state.binds[words[1].lower()] = kind
        elif first == "whenever":
            if len(words) >= 3 and words[1].lower() == "sqlerror":
                state.sqlerror_exit = words[2].lower() == "exit"
        elif first == "store":
            state.stored = True
            state.saved_this_run = True
            if self.writable:
                state.stored_files.append(words[2] if len(words) > 2 else "")
                state.stored_settings = dict(state.settings)
        elif first == "set":
            self._set(path, number, words[1:])
        elif first in ("ttitle", "tti", "btitle", "bti"):
            title = "ttitle" if first.startswith("t") else "btitle"
            if len(words) > 1 and words[1].lower() == "off":
                state.titles.discard(title)
            else:
                state.titles.add(title)
        elif first in ("prompt", "pro"):
            state.prompts.append(text.split(None, 1)[1] if len(words) > 1 else "")
        return ""

    def _set(self, path: str, number: int, words: list[str]) -> None:
        i = 0
        while i < len(words):
            name = words[i].lower()
            full = SET_ABBREVIATIONS.get(name, name if name in SET_DEFAULTS else "")
            if not full:
                self._find(path, number, "set-unknown", f"SET {name}: not a system variable the checker knows")
                return
            value = words[i + 1].strip("'\"").lower() if i + 1 < len(words) else ""
            if full == "autotrace" and value == "off":
                i += 2
                continue
            self.run_state.settings[full] = value
            i += 2

    # --- statements ---

    def _statement(self, path: str, number: int, text: str, block: bool, written: str) -> None:
        """`text` as sent (substituted); `written` as the script has it."""
        state = self.run_state
        state.statements.append((os.path.relpath(path, self.directory), number, text))
        if state.settings["termout"] == "off":
            self._find(path, number, "termout-off", "statement run with TERMOUT OFF: its errors are not shown")
        self._session_settings(path, number, text, written)
        code = _strip_literals(text)
        if self._release() < (12, 2):
            for identifier in re.findall(r'"[^"]*"|[A-Za-z][A-Za-z0-9_$#]*', code):
                if len(identifier.strip('"').encode()) > MAX_IDENTIFIER_BYTES_BEFORE_12_2:
                    self._find(path, number, "name-length", f"{identifier}: over 30 bytes before 12.2 (ORA-00972)")
        into = [m.span(1) for m in re.finditer(r"(?is)\binto\s+(:\w+(?:\s*,\s*:\w+)*)", code)]
        handlers = _handler_spans(code)
        for match in re.finditer(r"(?<![:\w]):([A-Za-z]\w*)", code):
            bind = match.group(1).lower()
            if bind not in state.binds:
                self._find(path, number, "bind-undeclared", f":{bind} is not declared with VARIABLE")
            # In text order: `:x := ...` and `INTO :x` set it; any other use reads it.
            # A set in an exception handler happens only on an error: not a set.
            in_handler = any(a <= match.start() < b for a, b in handlers)
            assigned = code[match.end() :].lstrip().startswith(":=")
            if state.binds.get(bind, "").lower() in LOB_TYPES and not in_handler:
                self._lob_use(path, number, bind, code, match, assigned or any(a <= match.start() < b for a, b in into))
            if assigned or any(a <= match.start() < b for a, b in into):
                if not in_handler:
                    state.binds_set.add(bind)
            elif bind not in state.binds_set and not _frees_a_leftover(code, match):
                self._find(path, number, "bind-stale", f":{bind} is read before this run sets it")
        for function, path_text in _xml_paths(text):
            if REVERSE_AXIS.search(path_text):
                self._find(
                    path,
                    number,
                    "xml-reverse-axis",
                    f"{function.upper()} path {path_text!r} looks above its row's node",
                )
        first = text.split()[0].lower()
        if first in WRITES and not state.sqlerror_exit:
            self._find(path, number, "whenever", f"{first} runs without WHENEVER SQLERROR EXIT: a failure goes on")
        if not block and first in ("select", "with"):
            self._new_values(path, number, text)

    def _session_settings(self, path: str, number: int, text: str, written: str) -> None:
        """What a login.sql may have changed that alters how a statement is read, run or shown.

        An `&name` the DEFINE setting leaves is one the script wrote (`written`): an & a
        substituted value brings into the text is the value's, data the script chose to send."""
        state = self.run_state
        settings = state.settings
        problems = []
        left = UNSUBSTITUTED.search(written) if self._define_character() != "&" else None
        if left:
            problems.append(f"SET DEFINE {settings['define'].upper()}: {left.group(0)} is sent as is")
        # SQLCASE converts the whole text, but only literals and quoted identifiers keep their case in Oracle.
        literals = re.findall(r"'(?:[^']|'')*'|\"[^\"]*\"", re.sub(r"--[^\n]*", "", text))
        if not settings["sqlcase"].startswith("mix") and any(q != q.upper() for q in literals):
            problems.append(f"SET SQLCASE {settings['sqlcase'].upper()} changes the statement's literals")
        # A / alone on a line runs the buffer whatever SQLTERMINATOR is; ; ends a statement only as it.
        ended_by_slash = text.rstrip().splitlines()[-1].strip() == "/"
        if settings["sqlterminator"] not in (";", "on") and not ended_by_slash:
            problems.append(f"SET SQLTERMINATOR {settings['sqlterminator']!r}: ; does not end the statement")
        # Before its STORE SET has saved the settings a script may not change them: the one statement
        # there (naming the settings file) pauses and shows the titles once, as the session is set.
        if state.saved_this_run or not self._store_ahead:
            if settings["pause"] != "off":
                problems.append("SET PAUSE ON waits for Enter before each page")
            problems += [f"{title.upper()} prints a title with each page" for title in sorted(state.titles)]
        for problem in problems:
            self._find(path, number, "login-settings", problem)

    def _lob_use(self, path: str, number: int, bind: str, code: str, match: re.Match, assigned: bool) -> None:
        """SQL*Plus User's Guide, VARIABLE: "To free resources used by CLOB and NCLOB bind variables, you
        may need to manually free temporary LOBs with: EXECUTE DBMS_LOB.FREETEMPORARY(:cv)". A SELECT
        INTO or an assignment gives the bind a new temporary LOB (PL/SQL copies a temporary LOB on
        assignment: LOB Developer's Guide, temporary LOBs); the one it held stays allocated until freed."""
        lobs = self.run_state.lobs
        before = code[: match.start()].lower()
        if re.search(r"dbms_lob\.freetemporary\(\s*$", before):
            lobs.discard(bind)
        elif re.search(r"dbms_lob\.createtemporary\(\s*$", before) or assigned:
            value = code[match.end() :].lstrip()
            is_null = assigned and re.match(r":=\s*null\s*;", value, re.IGNORECASE)
            if bind in lobs:
                done = "set to NULL" if is_null else "given a new temporary LOB"
                self._find(path, number, "clob-free", f":{bind} {done} without freeing the one it held")
            if is_null:
                lobs.discard(bind)
            else:
                lobs.add(bind)

    def _new_values(self, path: str, number: int, text: str) -> None:
        state = self.run_state
        targets = {c: o["new_value"] for c, o in state.columns.items() if "new_value" in o}
        if not targets:
            return
        try:
            tree = sqlglot.parse_one(text.rstrip().rstrip(";").rstrip("/"), read="oracle")
        except sqlglot.errors.ParseError:
            return
        if not isinstance(tree, exp.Select):
            return
        aliases = [s.alias_or_name.lower() for s in tree.selects]
        affected = [a for a in aliases if a in targets]
        if not affected:
            return
        ctes = {cte.alias.upper() for cte in tree.find_all(exp.CTE)}
        tables = {t.name.upper() for t in tree.find_all(exp.Table)} - ctes
        rows = self._execute(tree) if tables <= EXECUTABLE_TABLES else None
        if tables - {"DUAL"} or rows is None or "sys_context(" in text.lower():
            # A query that reads a view can fail (no grant, a column or function
            # the release lacks, a SYS_CONTEXT parameter it does not know) and
            # then sets nothing: its variables need a safe value before it.
            for alias in affected:
                if targets[alias] not in state.defined:
                    self._find(
                        path, number, "new-value-unsafe", f"{targets[alias]} is set only by a query that can fail"
                    )
        if rows is None:
            return
        if not rows:
            # No rows: a NEW_VALUE variable keeps its value, or becomes defined and empty.
            for alias in affected:
                state.defined.setdefault(targets[alias], "")
            return
        for alias, value in zip(aliases, rows[-1]):
            if alias in targets:
                self._define(path, number, targets[alias], _as_text(value))

    def _execute(self, tree: exp.Expression) -> Optional[list[tuple]]:
        tree = tree.copy()
        for literal in list(tree.find_all(exp.Literal)):
            if literal.is_string and literal.this == "":
                literal.replace(exp.Null())  # Oracle: '' is NULL
        for column in list(tree.find_all(exp.Column)):
            if column.name.upper() == "USER" and not column.table:
                column.replace(exp.Literal.string(self.database.user))  # Oracle's USER function
        for placeholder in list(tree.find_all(exp.Placeholder)):
            placeholder.replace(exp.Null())  # bind variables: NULL until PL/SQL sets them
        sql = tree.sql(dialect="sqlite")
        try:
            return self.database.connect().execute(sql).fetchall()
        except sqlite3.OperationalError:
            return None  # a function SQLite lacks (SYS_CONTEXT): treated as a query that can fail


def _frees_a_leftover(code: str, match: re.Match) -> bool:
    """A CLOB bind read only to free the temporary LOB an earlier run left in it (the VARIABLE page's advice)."""
    before = code[: match.start()].lower()
    after = code[match.end() :].lower()
    return bool(
        re.search(r"dbms_lob\.(istemporary|freetemporary)\(\s*$", before)
        or re.match(r"\s+is\s+not\s+null\s+and\s+dbms_lob\.istemporary\(", after)
    )


def _xml_paths(text: str) -> list[tuple[str, str]]:
    """(function, literal) for every string literal inside an XMLTABLE or XMLQUERY call: its XQuery
    and its columns' PATHs. SQL Language Reference, XMLTABLE: without RETURNING SEQUENCE BY REF
    (12.1 and later; not in 11.2) each row is a copy of the node the XQuery targets, so what sits
    above or before that node (its parent, ancestors, preceding nodes) is not in the copy; SQL*Plus
    User's Guide, SET XQUERY NODE: BYVALUE copies the node, and its parent and sibling axes are then
    undefined. The pack runs on 11.2.0.4, so no such path may appear at all."""
    found = []
    code = re.sub(r"--[^\n]*", "", text)
    for call in XML_FUNCTION.finditer(code):
        depth, position = 1, call.end()
        while position < len(code) and depth:
            char = code[position]
            if char == "'":
                end = position + 1
                while end < len(code) and not (code[end] == "'" and code[end + 1 : end + 2] != "'"):
                    end += 2 if code[end : end + 2] == "''" else 1
                found.append((call.group(1).lower(), code[position + 1 : end]))
                position = end
            elif char == "(":
                depth += 1
            elif char == ")":
                depth -= 1
            position += 1
    return found


def _as_text(value: object) -> str:
    """A NEW_VALUE variable's text: numbers as SQL*Plus prints them without a format (no trailing .0)."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _strip_literals(text: str) -> str:
    """The text with string literals emptied ('' inside one is a quote) and -- comments removed, in one pass.

    One pass, because an apostrophe in a comment ("the user's") must not open a
    literal, and -- inside a literal is not a comment.
    """
    out: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("--", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
        elif text[i] == "'":
            i += 1
            while i < len(text) and not (text[i] == "'" and not text.startswith("''", i)):
                i += 2 if text.startswith("''", i) else 1
            out.append("''")
            i += 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _code_part(line: str) -> str:
    """The line without a trailing -- comment (outside quotes)."""
    quoted = False
    for i, ch in enumerate(line):
        if ch == "'":
            quoted = not quoted
        elif not quoted and line.startswith("--", i):
            return line[:i]
    return line


def start(
    directory: str,
    script: str,
    *args: str,
    database: Optional[Database] = None,
    defines: Optional[dict[str, str]] = None,
    login: Optional[dict[str, str]] = None,
    writable: bool = True,
) -> Run:
    """Run `@script args` from `directory` through the checker, in a session a login.sql set up as `login` says
    (`writable`: whether STORE SET can write its file there)."""
    return SqlPlus(directory, database, login, writable).start(script, *args, defines=defines)


def leftovers(run: Run) -> list[str]:
    """What STORE SET does not restore and the script left behind: COLUMN settings and _dnfs variables."""
    left = [f"column {c}" for c in run.columns if c not in run.dba_columns]
    left += [f"define {d}" for d in run.defined if d.startswith("_dnfs") or d.isdigit()]
    return left
