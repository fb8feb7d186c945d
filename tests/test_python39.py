"""The agent runs on Python 3.9+ (enterprise Linux DB hosts); CI has only 3.11.

vermin, a maintained minimum-version detector, checks every module of the
package statically, annotations included.
"""

from __future__ import annotations

import os
import subprocess
import sys

VERMIN = os.path.join(os.path.dirname(sys.executable), "vermin")
AGENT = os.path.join(os.path.dirname(__file__), "..", "agent", "dnfsmon")


def test_agent_needs_at_most_python_3_9():
    result = subprocess.run(
        [
            VERMIN,
            "--target=3.9-",
            "--violations",
            "--eval-annotations",
            "--backport",
            "dataclasses",
            "--no-tips",
            "--no-parse-comments",
            AGENT,
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_vermin_would_catch_a_3_10_construct(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(x):\n    match x:\n        case 1:\n            return 2\n")
    result = subprocess.run(
        [VERMIN, "--target=3.9-", "--violations", "--no-tips", str(bad)], capture_output=True, text=True
    )
    assert result.returncode != 0
