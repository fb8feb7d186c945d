"""`make demo`, the first command of the README's Quick start, as a new user runs it.

It runs in a copy of the checkout (its `rm -rf demo-data` must not touch this
one) with this checkout's .venv, which make is told not to rebuild. What a
reader must see: the simulated two-instance RAC, labelled, and, at the end,
the doctor naming a layer with its evidence and remedy on a bundled case,
labelled as a replay; and the README shows that same ending.
"""

from __future__ import annotations

import json
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


def _interface_rates_of_the_case(case):
    """KiB/s received per interface between the case's two captures, from its /proc/net/dev and
    capture.json's clock: what the replayed host must show (computed here, not by the agent)."""
    received, clock = {}, {}
    for side in ("old", "new"):
        with open(os.path.join(case, side, "capture.json"), encoding="utf-8") as f:
            clock[side] = json.load(f)["sources"]["nic"]["time"]
        with open(os.path.join(case, side, "proc", "net", "dev"), encoding="utf-8") as f:
            for line in f.readlines()[2:]:  # two heading lines (Linux net/core/net-procfs.c)
                name, counters = line.split(":", 1)
                received.setdefault(name.strip(), {})[side] = int(counters.split()[0])
    seconds = clock["new"] - clock["old"]
    return {name: (both["new"] - both["old"]) / seconds / 1024 for name, both in received.items()}


@pytest.mark.slow
def test_make_demo_live_host_carries_the_replayed_traffic_and_the_doctor_names_a_layer(demo_output):
    """The live part showed NICs at 0.00 and a verdict of "healthy" on a machine without NFS: its host
    now replays a bundled case, whose rates the NIC table shows and whose layer the doctor names."""
    case = os.path.join(REPO, "tests", "cases", "doctor", "linux-client-16-slots")
    nics = demo_output.split("Network interfaces (nicstat)\n", 1)[1].split("\n\n", 1)[0]
    shown = {
        m.group(1): float(m.group(2).replace(",", "")) for m in re.finditer(r"^\S+\s+(eth\d)\s+([\d,.]+)", nics, re.M)
    }
    expected = _interface_rates_of_the_case(case)
    assert set(shown) == {name for name in expected if name.startswith("eth")}, nics
    # One reading holds every interface at one moment of the replay: their ratios are the case's.
    # The replay rewrites its files every 0.1 s, and a reading on a busy machine can lag its moment
    # by more: over a 5 s interval the rates themselves are the case's within some percent.
    for name, rate in shown.items():
        assert rate / shown["eth0"] == pytest.approx(expected[name] / expected["eth0"], rel=0.005), (name, nics)
        assert rate == pytest.approx(expected[name], rel=0.25), (name, nics)
    live = demo_output.split("== 2/3 ", 1)[1].split("== 3/3 ", 1)[0]
    verdict = live[live.index("Verdict: ") :]
    assert re.search(r"^  CRITICAL client-rpc-slots \[client\]", verdict, re.M), verdict
    assert "READ waits 48.5 ms for an RPC slot against a 1.5 ms round trip" in verdict
    assert "remedy: " in verdict
