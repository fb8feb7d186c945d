"""The agent's command line as the tests run it: the one copy of how to start it."""

from __future__ import annotations

import subprocess
import sys
from typing import Any, Optional

# `python -m dnfsmon` with the interpreter running the tests (the .venv's, where dnfsmon is installed).
DNFSMON = [sys.executable, "-m", "dnfsmon"]


def run_dnfsmon(*args: Any, check_rc: Optional[int] = None, timeout: float = 120, **kwargs: Any):
    """`dnfsmon ARGS...` to completion, its output captured as text; asserts the exit status when check_rc is given."""
    result = subprocess.run([*DNFSMON, *map(str, args)], capture_output=True, text=True, timeout=timeout, **kwargs)
    if check_rc is not None:
        assert result.returncode == check_rc, result.stderr
    return result
