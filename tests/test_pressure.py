"""The host pressure source: /proc/stat, meminfo, vmstat and PSI, parsed from their text."""

from __future__ import annotations

import pytest

from dnfsmon import rates
from dnfsmon.sources import pressure
from dnfsmon.sources.base import HostInputs, ParseError, Raw


def stat(user: int, idle: int, iowait: int, steal: int, running: int) -> str:
    # /proc/stat in USER_HZ (100/s) ticks, as show_stat() (fs/proc/stat.c) prints it, two CPUs.
    cpu = f"{user} 0 {user // 4} {idle} {iowait} 0 0 {steal} 0 0"
    return (
        f"cpu  {cpu}\ncpu0 {cpu}\ncpu1 {cpu}\nintr 1 2\nctxt 100\nbtime 1700000000\n"
        f"processes 50\nprocs_running {running}\nprocs_blocked 1\nsoftirq 1 0\n"
    )


MEMINFO = (
    "MemTotal:       16000000 kB\nMemFree:         1000000 kB\nMemAvailable:    4000000 kB\nBuffers: 0 kB\n"
    "Cached: 0 kB\nShmem: 0 kB\nActive: 0 kB\nInactive: 0 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n"
)


def raw(t: float, user: int, idle: int, iowait: int, steal: int, swapped: int, faults: int, psi_us: int) -> Raw:
    files = {
        pressure.STAT: stat(user, idle, iowait, steal, running=6),
        pressure.MEMINFO: MEMINFO,
        pressure.VMSTAT: f"nr_free_pages 1\npswpin {swapped}\npswpout {2 * swapped}\npgmajfault {faults}\n",
        "proc/pressure/cpu": f"some avg10=1.00 avg60=1.00 avg300=1.00 total={psi_us}\n",
        "proc/pressure/memory": (
            f"some avg10=0.00 avg60=0.00 avg300=0.00 total={psi_us // 2}\n"
            f"full avg10=0.00 avg60=0.00 avg300=0.00 total={psi_us // 4}\n"
        ),
        "proc/pressure/io": None,  # a kernel without this file: no io fields
    }
    return Raw(files=files, time=t, wall_time=1_700_000_000 + t)


def test_fields_over_an_interval_are_exact():
    old = pressure.SOURCE.parse(raw(100.0, 1000, 5000, 100, 0, 10, 5, 1_000_000), "db1")
    new = pressure.SOURCE.parse(raw(110.0, 1400, 5400, 150, 50, 510, 2005, 3_000_000), "db1")
    assert new.problems == []
    result = rates.diff_all({s.state_key: s for s in old.samples}, new.samples)
    (point,) = pressure.SOURCE.publish(result, new.samples)
    assert point.tags == (("host", "db1"),)
    f = point.fields
    # Per CPU line: user +400, system +100, idle +400, iowait +50, steal +50 ticks: total 1000.
    assert f["cpu_busy_pct"] == pytest.approx(55.0)
    assert f["cpu_iowait_pct"] == pytest.approx(5.0)
    assert f["cpu_steal_pct"] == pytest.approx(5.0)
    assert (f["procs_running"], f["cpus"], f["run_queue_per_cpu"]) == (6, 2, 3.0)
    assert f["mem_available_bytes"] == 4_000_000 * 1024 and f["mem_available_pct"] == pytest.approx(25.0)
    assert f["swap_in_pages_per_s"] == 50.0 and f["swap_out_pages_per_s"] == 100.0
    assert f["major_faults_per_s"] == 200.0
    assert f["psi_cpu_some_pct"] == pytest.approx(20.0)
    assert f["psi_memory_some_pct"] == pytest.approx(10.0) and f["psi_memory_full_pct"] == pytest.approx(5.0)
    assert "psi_io_some_pct" not in f and "psi_cpu_full_pct" not in f


def test_the_captured_text_is_what_is_read():
    main, cpu = pressure.samples(raw(1.0, 1000, 5000, 100, 0, 0, 0, 0), "db1")[0]
    assert cpu.counters["cpu_user_ms"] == 10_000  # 1000 ticks at USER_HZ 100
    assert main.gauges["mem_total_bytes"] == 16_000_000 * 1024


@pytest.mark.parametrize(
    "text",
    ["", "intr 1 2\n", "cpu  1 2 3\n", "cpu  1 2 3 4 5 6 x 8\n", "cpu  1 2 3 4 5 6 -7 8\n"],
    ids=["empty", "no_cpu_line", "six_states", "not_a_number", "negative"],
)
def test_a_stat_file_without_a_usable_cpu_line_is_refused_naming_it(text):
    bad = raw(1.0, 1000, 5000, 100, 0, 0, 0, 0)
    bad.files[pressure.STAT] = text
    with pytest.raises(ParseError, match=r"^proc/stat"):
        pressure.samples(bad, "db1")


def test_a_malformed_psi_file_is_reported_and_the_rest_published():
    bad = raw(1.0, 1000, 5000, 100, 0, 0, 0, 0)
    bad.files["proc/pressure/cpu"] = "some avg10=1.00\n"
    found, problems = pressure.samples(bad, "db1")
    assert len(problems) == 1 and str(problems[0]).startswith("proc/pressure/cpu:1:")
    assert "psi_cpu_some_us" not in found[0].counters and "psi_memory_some_us" in found[0].counters


def test_live_read_on_this_machine():
    found, problems = pressure.samples(pressure.read(HostInputs()), "h")
    assert problems == [] and found[0].gauges["cpus"] >= 1 and found[1].counters["cpu_idle_ms"] > 0
