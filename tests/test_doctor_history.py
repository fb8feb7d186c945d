"""`dnfsmon doctor --since --until`: what happened at 3 a.m., from the local store.

The scenario: a single-instance database on dNFS whose filer saturates from
03:10 to 03:25 (simulator `filer_capacity` 2.6: a load surge to 2.48x its
usual load brings the filer to 95 % of its capacity, 98.5 % for ten seconds
at 03:18, and its service time grows as 1 / (1 - utilisation)). collect's pipeline (compute, diagnose, store) runs on
a sample every 10 s from 02:55 to 03:45, as cron would have stored them. The
truth is the scenario's: the window of the surge, and Oracle's latency per
interval from the simulator's own model (simulator.truth), computed without
the doctor's rules.
"""

from __future__ import annotations

import calendar
import dataclasses
import datetime
import json
import os
import subprocess
import sys
import time

import pytest

from configs import write_config
from dnfsmon import diagnosis, simulator
from dnfsmon.collect import compute
from dnfsmon.diagnosis import rules, timeline
from dnfsmon.points import Point
from dnfsmon.store import Store
from runner import DNFSMON

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "cases", "doctor"))
import make_cases  # noqa: E402 - the doctor cases' capture writer

DAY = calendar.timegm((2026, 11, 19, 0, 0, 0))  # midnight UTC; the test runs the doctor with TZ=UTC
SURGE = (DAY + 3 * 3600 + 600, DAY + 3 * 3600 + 1500)  # 03:10 to 03:25
PEAK = (DAY + 3 * 3600 + 1080, DAY + 3 * 3600 + 1090)  # 03:18:00 to 03:18:10, the worst of it
FIRST, LAST = DAY + 2 * 3600 + 55 * 60, DAY + 3 * 3600 + 45 * 60  # samples from 02:55 to 03:45
FLOOR_MS = 0.1  # the path's floor: one site
# The database: constant load but for the surge; the filer saturates at 2.6x.
WORKLOAD = dataclasses.replace(
    make_cases.DNFS,
    epoch=DAY,
    load_phases=(
        (SURGE[0] - DAY, 1.0),
        (PEAK[0] - SURGE[0], 2.48),
        (PEAK[1] - PEAK[0], 2.56),
        (SURGE[1] - PEAK[1], 2.48),
        (DAY + 86400 - SURGE[1], 1.0),
    ),
    filer_capacity=2.6,
)
READ = "db file sequential read"


def srtt_ms(t: float) -> float:
    """The TCP smoothed RTT read at t: the floor plus 0.9 of the read's time (the filer's
    service time: the filer acknowledges each request with its reply; the rest is the host).
    RFC 6298 smooths with a gain of 1/8 per RTT sample: at thousands of reads a second it
    holds the last milliseconds' samples, so a reading at t reflects the load just before t."""
    model = simulator.Model(WORKLOAD)
    return FLOOR_MS + 0.9 * model.mean_latency_us(READ, model.multiplier(t - 0.001)) / 1000


def write_store(directory: str) -> None:
    """What collect stores over the scenario: each sample computed against the previous one,
    the ladder and findings of each interval, with the sample's time."""
    store = Store(directory, 10**9)
    memory = simulator.Memory()
    previous: dict = {}
    for i in range(int((LAST - FIRST) / make_cases.DT) + 1):
        t = FIRST + i * make_cases.DT
        case = make_cases.Case(
            "surge",
            sockets=[
                dataclasses.replace(s, srtt_ms=srtt_ms(t), min_rtt_ms=FLOOR_MS) for s in make_cases.Case("x").sockets
            ],
            workload=WORKLOAD,
        )
        raws = make_cases.raws(case, i, memory, start=FIRST)
        outcome = compute(raws, {}, make_cases.HOST, previous)
        previous = outcome.samples
        found = diagnosis.diagnose(outcome.points, make_cases.HOST, previous.values())
        store.append(outcome.points + diagnosis.to_points(found, round(t * 1e9)))


@pytest.fixture(scope="module")
def incident(tmp_path_factory):
    top = tmp_path_factory.mktemp("history")
    write_store(str(top / "store"))
    return write_config(top)


def history(config, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, TZ="UTC")
    return subprocess.run(
        [*DNFSMON, "--config", str(config), "doctor", *args], capture_output=True, text=True, timeout=120, env=env
    )


def truth_latency_ms(t0: float, t1: float) -> float:
    return simulator.truth(WORKLOAD, 1, t0, t1).event_avg_latency_us[READ] / 1000


@pytest.mark.slow  # a whole simulator run: 301 samples
def test_timeline_matches_the_scenario(incident):
    result = history(incident, "--since", "2026-11-19 03:00", "--until", "2026-11-19 03:40")
    assert result.returncode == 11, result.stderr  # a critical finding held in the window
    lines = result.stdout.splitlines()
    episodes = [line.split() for line in lines if line.startswith("  03:")]
    # One episode, the filer's, from the first interval inside the surge to the last.
    assert [(e[0], e[1], e[2], e[3]) for e in episodes] == [("03:10:10", "03:25:00", "CRITICAL", "filer-latency")]
    # Its worst value is Oracle's slowest interval by the simulator's own model.
    intervals = [(t - make_cases.DT, t) for t in range(int(SURGE[0]) + 10, int(SURGE[1]) + 1, 10)]
    worst_t0, worst_t1 = max(intervals, key=lambda i: truth_latency_ms(*i))
    assert episodes[0][4] == "oracle_read_avg_ms"
    assert float(episodes[0][5]) == pytest.approx(truth_latency_ms(worst_t0, worst_t1), rel=1e-3)
    # The ladder at the worst interval: Oracle's read and the round trip of the scenario then.
    ladder_at = next(line for line in lines if line.startswith("Latency ladder at "))
    assert ladder_at.startswith(f"Latency ladder at {datetime.datetime.utcfromtimestamp(worst_t1):%H:%M:%S}")
    rung = {line[4:48].strip(): line[48:].split()[0] for line in lines[lines.index(ladder_at) + 1 :]}
    assert float(rung["Oracle single-block read, average"]) == pytest.approx(
        truth_latency_ms(worst_t0, worst_t1), rel=1e-3
    )
    assert float(rung["TCP smoothed RTT to the filer"]) == pytest.approx(srtt_ms(worst_t1), abs=1e-3)
    assert float(rung["TCP minimum RTT (the path's floor)"]) == FLOOR_MS


@pytest.mark.slow  # a whole simulator run: 301 samples
def test_quiet_hours_are_healthy_and_an_empty_window_says_so(incident):
    result = history(incident, "--since", "2026-11-19 03:26", "--until", "2026-11-19 03:40")
    assert result.returncode == 0, result.stderr
    assert "No finding in that window: every interval judged was healthy." in result.stdout
    result = history(incident, "--since", "2026-11-19 05:00", "--until", "2026-11-19 06:00")
    assert result.returncode == 12 and "Nothing stored in that window" in result.stdout


@pytest.mark.slow  # a whole simulator run: 301 samples
def test_json_timeline(incident):
    result = history(incident, "--since", "2026-11-19 03:00", "--until", "2026-11-19 03:40", "--format", "json")
    got = json.loads(result.stdout)
    assert [(e["id"], e["start"], e["end"]) for e in got["episodes"]] == [
        ("filer-latency", "2026-11-19T03:10:10+00:00", "2026-11-19T03:25:00+00:00")
    ]
    assert got["intervals"] == 241  # 03:00:00 to 03:40:00, both ends included, every 10 s


NOW = datetime.datetime(2026, 11, 25, 9, 30, tzinfo=datetime.timezone.utc)


@pytest.mark.parametrize(
    "since, until, start, end",
    [
        ("03:00", "04:00", "2026-11-25 03:00", "2026-11-25 04:00"),
        ("23:00", "01:00", "2026-11-24 23:00", "2026-11-25 01:00"),  # --since still to come today: last night
        ("yesterday 03:00", None, "2026-11-24 03:00", "2026-11-25 09:30"),
        ("-2h", "now", "2026-11-25 07:30", "2026-11-25 09:30"),
        ("2026-11-20 03:00", "2026-11-20T04:15:30", "2026-11-20 03:00", "2026-11-20 04:15:30"),
        ("2026-11-20", "2026-11-21", "2026-11-20 00:00", "2026-11-21 00:00"),
    ],
)
def test_times_a_dba_types(monkeypatch, since, until, start, end):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        got = timeline.window(since, until, NOW)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert [f"{m:%Y-%m-%d %H:%M:%S}".removesuffix(":00") for m in got] == [start, end]


def test_a_relative_time_as_docs_doctor_md_types_it(tmp_path):
    """`dnfsmon doctor --since -2h` verbatim (docs/doctor.md): a value that starts with a minus is
    the option's value, not another option; on an empty store, nothing to judge in the window."""
    config = write_config(tmp_path)
    Store(str(tmp_path / "store"), 10**9)  # collect has run, and stored nothing in the window
    for args in (["--since", "-2h"], ["--since", "-3h", "--until", "-1h"]):
        result = history(config, *args)
        assert result.returncode == 12 and "expected one argument" not in result.stderr, result.stderr


@pytest.mark.parametrize("since, until", [("3am", None), ("25:00", None), ("04:00", "2026-01-01")])
def test_bad_times_are_one_line_and_exit_2(tmp_path, since, until):
    args = ["--since", since] + (["--until", until] if until else [])
    result = history(write_config(tmp_path), *args)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "HH:MM" in result.stderr or "is not after" in result.stderr


def test_every_finding_has_its_headline_and_the_store_reads_only_what_is_asked(tmp_path):
    assert set(rules.HEADLINES) == set(rules.RULES)
    store = Store(str(tmp_path / "store"), 10**9)
    points = [Point(m, (("host", "h"),), {"v": 1.0}, 1) for m in ("dnfsmon_nic", "dnfsmon_finding", "dnfsmon_findingx")]
    store.append(points)
    assert [p.measurement for p in store.points(["dnfsmon_finding"])] == ["dnfsmon_finding"]
    assert len(list(store.points())) == 3
