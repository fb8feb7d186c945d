"""Read SQL*Plus scripts as the database would see them, for linting and checks.

`render` turns SQL*Plus client commands (COLUMN, PROMPT, DEFINE, @@, SET,
...) into "-- sqlplus command" comment lines - keeping line numbers, so lint
findings point at the script's own lines - and replaces substitution variables (&name, &&name,
&1) with what the scripts' release switches give for a release.
`statements` then yields each SQL statement and each SELECT inside a PL/SQL
block. sqlfluff's `oracle` dialect parses the SQL but not the client
commands, hence the rendering.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from dnfsmon import oracle_facts

# SQL*Plus and SQLcl client commands (and the abbreviations the pack uses).
CLIENT_COMMANDS = {
    "@",
    "@@",
    "accept",
    "append",
    "break",
    "btitle",
    "clear",
    "col",
    "column",
    "compute",
    "connect",
    "define",
    "def",
    "describe",
    "desc",
    "disconnect",
    "exec",
    "execute",
    "exit",
    "host",
    "pause",
    "print",
    "prompt",
    "pro",
    "quit",
    "remark",
    "rem",
    "set",
    "show",
    "spool",
    "start",
    "store",
    "timing",
    "ttitle",
    "undefine",
    "var",
    "variable",
    "whenever",
}
SUBSTITUTION = re.compile(r"&&?(\w+)\.?")


def switches(release: str) -> dict[str, str]:
    """Values of the substitution variables in a session on `release` (see _dnfs_start.sql)."""
    at = oracle_facts.release_tuple(release)
    micro = at >= oracle_facts.release_tuple("12.1.0.2")
    v12 = at >= oracle_facts.release_tuple("12.1.0.1")
    return {
        "_dnfs_sleep": "dbms_session.sleep" if at >= oracle_facts.release_tuple("18c") else "dbms_lock.sleep",
        "_dnfs_hist_view": "gv$event_histogram_micro" if micro else "gv$event_histogram",
        "_dnfs_hist_bound": "wait_time_micro" if micro else "wait_time_milli * 1000",
        "_dnfs_nfsversion": "s.nfsversion" if v12 else "'n/a'",
        "_dnfs_user": "dnfsmon",
        "_dnfs_container": "container = all",
        "_dnfs_password": "pw",
        "_dnfs_pre18": "--" if at >= oracle_facts.release_tuple("18c") else "",
    }


def _first_word(line: str) -> str:
    stripped = line.strip()
    if stripped.startswith("@"):
        return "@@" if stripped.startswith("@@") else "@"
    return stripped.split(None, 1)[0].lower() if stripped else ""


def render(text: str, release: str = "19c") -> str:
    """The script with client commands blanked and substitution variables replaced."""
    values = switches(release)
    out = []
    in_statement = in_block = continuing = False
    for line in text.splitlines():
        word = _first_word(line)
        if continuing or (not in_statement and not in_block and word in CLIENT_COMMANDS):
            continuing = line.rstrip().endswith(" -")  # a client command continued on the next line
            out.append("-- sqlplus command")
            continue
        if not in_statement and not in_block:
            if word in ("begin", "declare"):
                in_block = True
            elif word in ("select", "with", "create", "grant", "alter", "drop", "insert", "update", "delete", "merge"):
                in_statement = True
        rendered = SUBSTITUTION.sub(lambda m: values.get(m.group(1), "5"), line)
        out.append(rendered)
        if in_block and line.strip() == "/":
            in_block = False
        elif in_statement and line.rstrip().endswith(";") and not line.lstrip().startswith("--"):
            in_statement = False
    return "\n".join(out) + "\n"


def statements(rendered: str) -> Iterator[tuple[int, str]]:
    """(first line number, SQL text) of every SQL statement, and every SELECT in a PL/SQL block."""
    lines = rendered.splitlines()
    i = 0
    while i < len(lines):
        word = _first_word(lines[i])
        if word in ("begin", "declare"):
            start = i
            while i < len(lines) and lines[i].strip() != "/":
                i += 1
            block = "\n".join(lines[start:i])
            for match in re.finditer(r"(?is)\b(?:with|select)\b.*?;", block):
                select = re.sub(r"(?is)\binto\s+:\w+(\s*,\s*:\w+)*", "", match.group(0)).rstrip().rstrip(";")
                yield start + 1 + block[: match.start()].count("\n"), select
        elif word in ("select", "with", "create", "grant"):
            start = i
            while not lines[i].rstrip().endswith(";") or lines[i].lstrip().startswith("--"):
                i += 1
            yield start + 1, "\n".join(lines[start : i + 1]).rstrip().rstrip(";")
        i += 1


def core_queries(text: str) -> dict[str, str]:
    """The queries between '-- core: <name>' and '-- core: end' markers, by name."""
    found = {}
    for match in re.finditer(r"(?s)-- core: ([^\n]+)\n(.*?)-- core: end", text):
        found[match.group(1).strip()] = match.group(2).strip().rstrip(";")
    return found
