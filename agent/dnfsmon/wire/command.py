"""The `dnfsmon wire` command: arguments checked, report printed, problems on one line."""

from __future__ import annotations

import sys
from typing import Optional

from ..errors import EnvironmentProblem
from .report import analyse, to_json, to_text

EXIT_OK = 0


def run(captures: list[str], output: str, operations: Optional[list[str]]) -> int:
    if len(captures) > 2:
        print(
            f"dnfsmon wire: give one capture, or a client and a server capture ({len(captures)} given)",
            file=sys.stderr,
        )
        return EnvironmentProblem.exit_code
    wanted = {name.upper() for name in operations} if operations else None
    try:
        report = analyse(captures, wanted)
    except EnvironmentProblem as problem:
        print(f"dnfsmon wire: {problem}", file=sys.stderr)
        return problem.exit_code
    print(to_json(report) if output == "json" else to_text(report), end="" if output == "text" else "\n")
    return EXIT_OK
