"""`make demo`, the first command of the README's Quick start, as a new user runs it.

It runs in a copy of the checkout (its `rm -rf demo-data` must not touch this
one) with this checkout's .venv, which make is told not to rebuild. What a
reader must see: the simulated two-instance RAC, labelled, and, at the end,
the doctor naming a layer with its evidence and remedy on a bundled case,
labelled as a replay; and the README shows that same ending.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.dirname(os.path.dirname(sys.executable))


@pytest.fixture(scope="module")
def demo_output(tmp_path_factory):
    copy = tmp_path_factory.mktemp("demo") / "dnfsmon"
    shutil.copytree(
        REPO, copy, symlinks=True, ignore=shutil.ignore_patterns(".git", ".venv", "demo-data", "build", "*.egg-info")
    )
    os.symlink(VENV, copy / ".venv")
    result = subprocess.run(
        ["make", "-o", ".venv/.installed-agent", "demo"],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=300,
        # As from a user's shell: under `make test` the outer make's MAKELEVEL would make this
        # one print "make[1]: Leaving directory ..." after the demo's last line.
        env={
            **{k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")},
            "PATH": f"{VENV}/bin:/usr/bin:/bin",
        },
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.mark.slow
def test_make_demo_shows_the_simulated_rac_and_ends_with_a_layer_its_evidence_and_remedy(demo_output):
    io_table = demo_output.split("dNFS I/O per instance  (SIMULATED)\n", 1)[1].split("\n\n", 1)[0]
    assert re.search(r"^\S+\s+SIMDB\s+simdb1\s", io_table, re.M) and re.search(
        r"^\S+\s+SIMDB\s+simdb2\s", io_table, re.M
    )
    last = demo_output.rstrip("\n").split("\n-- replay: ")[-1]
    assert last.startswith("tests/cases/doctor/"), last
    finding, evidence, remedy = last.splitlines()[-3:]
    assert re.match(r"^  (CRITICAL|WARNING) [\w-]+ \[\w+\]: ", finding), finding
    assert evidence.strip().startswith("evidence: ") and remedy.strip().startswith("remedy: ")


@pytest.mark.slow
def test_the_readme_shows_the_demos_last_verdict(demo_output):
    readme = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
    last = demo_output.rstrip("\n").split("\n-- replay: ")[-1]
    verdict = last[last.index("Verdict: ") :]
    assert verdict in readme
