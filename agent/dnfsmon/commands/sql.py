"""dnfsmon sql: the directory of the SQL*Plus pack installed with the agent, and its --help listing."""

from __future__ import annotations

import os
import re

from ..errors import EnvironmentProblem

EXIT_OK = 0

# The SQL pack, installed with the package as data (pyproject.toml [tool.setuptools.package-data]).
SQL_PACK_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sql")


def sql_pack_listing() -> str:
    """`dnfsmon sql --help`: what the pack holds, each script with the first line of its own header."""
    lines = [f"in {SQL_PACK_DIR}:"]
    for relative in sorted_scripts(SQL_PACK_DIR):
        lines.append(f"  {relative:<34} {script_summary(os.path.join(SQL_PACK_DIR, relative))}")
    lines.append("  README.md                          every script, its arguments and the SQL*Plus settings it needs")
    return "\n".join(lines)


def sorted_scripts(directory: str) -> list[str]:
    """The scripts a DBA runs, those whose header has a Usage field (not the helpers they call), then setup/."""
    names = []
    for subdirectory in ("", "setup"):
        try:
            listing = sorted(os.listdir(os.path.join(directory, subdirectory)))
        except OSError:
            return []  # a broken install: `dnfsmon sql` itself says so
        for name in listing:
            relative = os.path.join(subdirectory, name)
            if (
                name.endswith(".sql")
                and not name.startswith("_")
                and script_field(os.path.join(directory, relative), "Usage")
            ):
                names.append(relative)
    return names


def script_field(path: str, name: str) -> str:
    """A field of the script's header comment (Purpose:, Usage:), its continuation lines joined."""
    lines: list[str] = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("--"):
                break
            field, _, text = line[2:].partition(":")
            if lines and field.strip() and " " not in field.strip():  # the next field
                break
            if lines or field.strip() == name:
                lines.append((line[2:] if lines else text).strip())
    return " ".join(lines)


def script_summary(path: str) -> str:
    """The first phrase of the script's Purpose (every script has one: tests/test_sql_pack.py)."""
    return re.split(r"(?<=\?) |\. | \(|: |; ", script_field(path, "Purpose"), maxsplit=1)[0].rstrip(".")


def cmd_sql() -> int:
    if not os.path.isfile(os.path.join(SQL_PACK_DIR, "dnfs_iops.sql")):
        raise EnvironmentProblem(f"{SQL_PACK_DIR} holds no SQL pack: reinstall dnfsmon from its wheel")
    print(SQL_PACK_DIR)
    return EXIT_OK
