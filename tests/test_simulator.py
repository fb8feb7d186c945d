"""Oracle figures from simulator runs against the simulator's known truth."""

from __future__ import annotations

import json

import pytest

from dnfsmon import catalogue, simulator
from dnfsmon.collect import compute
from dnfsmon.sources import oracle

T0 = 1_795_000_000.0
COMMIT_AND_TEMP = ("log file sync", "direct path read temp", "direct path write temp")


def run(workload, samples, step=10.0, start=T0, top_processes=oracle.DEFAULT_TOP_PROCESSES):
    """[(t0, t1, points)] of consecutive samples, through the agent's own pipeline
    (the source with [oracle] top_processes)."""
    memory = simulator.Memory()
    previous, t_prev, out = {}, None, []
    raws = []
    for i in range(samples):
        t = start + i * step
        raw = simulator.read(workload, t, memory)
        raws.append(raw)
        outcome = compute({"oracle": raw}, {}, "h", previous, {"oracle": oracle.OracleSource(top_processes)})
        if t_prev is not None:
            out.append((t_prev, t, outcome.points))
        previous, t_prev = outcome.samples, t
    return out, raws


def io_points(points):
    return {dict(p.tags)["instance"]: p.fields for p in points if p.measurement == "dnfsmon_dnfs_io"}


CHURN = simulator.Workload(instances=2, processes=30, process_lifetime_s=600.0, restart_every_s=1800.0)


@pytest.fixture(scope="module")
def churn_run():
    return run(CHURN, 240)  # 40 minutes: several process generations and a restart per instance


@pytest.mark.slow
def test_every_interval_matches_the_observable_truth_through_churn_and_restarts(churn_run):
    intervals, _ = churn_run
    restarted = set()
    for t0, t1, points in intervals:
        io = io_points(points)
        for inst in (1, 2):
            truth = simulator.truth(CHURN, inst, t0, t1)
            name = f"simdb{inst}"
            if truth.restarted:
                restarted.add(inst)
                assert name not in io, "no point across a restart"
                continue
            ours = io[name]
            assert ours["read_iops"] == pytest.approx(truth.observable_read_iops, rel=0.005)
            assert ours["write_iops"] == pytest.approx(truth.observable_write_iops, rel=0.005)
            assert 0 <= ours["read_iops"] <= truth.read_iops * 1.005  # never a spike above the workload
    assert restarted == {1, 2}  # both instances restarted during the run


@pytest.mark.slow
def test_whole_run_matches_the_workload_within_half_a_percent():
    workload = simulator.Workload(instances=2)  # an hour's mean process life
    intervals, _ = run(workload, 180)
    for inst in (1, 2):
        ours = sum(io_points(points)[f"simdb{inst}"]["read_iops"] * (t1 - t0) for t0, t1, points in intervals)
        truth = sum(simulator.truth(workload, inst, t0, t1).read_iops * (t1 - t0) for t0, t1, _ in intervals)
        assert ours == pytest.approx(truth, rel=0.005)
        bytes_ours = sum(
            io_points(points)[f"simdb{inst}"]["read_mib_per_s"] * (t1 - t0) for t0, t1, points in intervals
        )
        bytes_truth = sum(simulator.truth(workload, inst, t0, t1).read_mib_per_s * (t1 - t0) for t0, t1, _ in intervals)
        assert bytes_ours == pytest.approx(bytes_truth, rel=0.005)


@pytest.mark.slow
def test_the_naive_sum_then_diff_fails_on_the_same_run(churn_run):
    """Glenn Fawcett's sampler: Σ NFS_READ over the view, then diff the sums."""
    intervals, raws = churn_run
    sums = []
    for raw in raws:
        stats = json.loads(raw.text(oracle.RESULTS))["results"]["dnfs_stats"]
        column = stats["columns"].index("NFS_READ")
        sums.append((raw.time, sum(row[column] for row in stats["rows"] if row[0] == 1)))
    naive_errors = []
    for (t0, s0), (t1, s1) in zip(sums, sums[1:]):
        truth = simulator.truth(CHURN, 1, t0, t1)
        naive_errors.append(((s1 - s0) / (t1 - t0)) / truth.read_iops - 1)
    assert min(naive_errors) < -0.5  # a busy process exits or the instance restarts: a big negative rate
    assert max(abs(e) for e in naive_errors) > 0.05
    for _t0, _t1, points in intervals:  # ours, on the same rows
        io = io_points(points).get("simdb1")
        if io:
            assert io["read_iops"] >= 0


def test_processes_that_start_inside_an_interval_are_counted_from_zero():
    """Short-lived processes: every interval matches the I/O of the processes alive at its end,
    the new ones included (counted from their start), and nothing is left out."""
    workload = simulator.Workload(instances=1, processes=10, process_lifetime_s=40.0)
    intervals, _ = run(workload, 13)
    new = 0
    for t0, t1, points in intervals:
        io = io_points(points)["simdb1"]
        truth = simulator.truth(workload, 1, t0, t1)
        assert io["read_iops"] == pytest.approx(truth.observable_read_iops, rel=0.005)
        assert io["read_iops"] <= truth.read_iops * 1.005
        assert io["processes_left_out"] == 0
        new += io["new_processes"]
    assert new >= 20  # about one new process per slot every 40 s


def test_a_slot_that_kept_its_counters_never_makes_a_spike_and_is_counted_as_doubtful():
    """dba-review P1: were a new process's V$DNFS_STATS counters its slot's (not reset), counting them
    from zero would add every predecessor's I/O to one interval. Checked against the process's own
    channel sends, such a process is left out and counted; with counters that do start at zero (the
    test above) none is."""
    kept = simulator.Workload(instances=1, processes=10, process_lifetime_s=40.0, slot_keeps_counters=True)
    intervals, _ = run(kept, 13)
    doubtful = 0
    for t0, t1, points in intervals:
        io = io_points(points)["simdb1"]
        truth = simulator.truth(kept, 1, t0, t1)
        assert io["read_iops"] <= truth.read_iops * 1.005
        assert io["new_processes"] == 0
        doubtful += io["new_processes_doubtful"]
        assert io["processes_left_out"] >= io["new_processes_doubtful"]
    assert doubtful >= 20
    reset = simulator.Workload(instances=1, processes=10, process_lifetime_s=40.0)
    for _, _, points in run(reset, 13)[0]:
        assert io_points(points)["simdb1"]["new_processes_doubtful"] == 0


def test_event_latency_and_histogram_match_the_truth():
    workload = simulator.Workload(instances=1)
    intervals, _ = run(workload, 4, step=60.0)
    for t0, t1, points in intervals:
        truth = simulator.truth(workload, 1, t0, t1)
        events = {dict(p.tags)["event"]: p.fields for p in points if p.measurement == "dnfsmon_oracle_event"}
        for event in ("db file sequential read", "db file scattered read", "log file parallel write", *COMMIT_AND_TEMP):
            assert events[event]["avg_latency_us"] == pytest.approx(truth.event_avg_latency_us[event], rel=0.005), event
        # Commit latency has its histogram too; the temp events their latency only.
        commits = [
            p.fields["waits_per_s"]
            for p in points
            if p.measurement == "dnfsmon_oracle_latency_histogram" and dict(p.tags)["event"] == "log file sync"
        ]
        assert sum(commits) == pytest.approx(events["log file sync"]["waits_per_s"], rel=0.005)
        assert events["log file sync"]["waits_per_s"] == pytest.approx(0.2 * truth.write_iops, rel=0.005)
        assert not [
            p
            for p in points
            if p.measurement == "dnfsmon_oracle_latency_histogram" and dict(p.tags)["event"] in COMMIT_AND_TEMP[1:]
        ]
        buckets = [
            p
            for p in points
            if p.measurement == "dnfsmon_oracle_latency_histogram"
            and dict(p.tags)["event"] == "db file sequential read"
        ]
        assert sum(p.fields["waits_per_s"] for p in buckets) == pytest.approx(
            events["db file sequential read"]["waits_per_s"], rel=0.005
        )
        bounds = sorted(int(dict(p.tags)["le_us"]) for p in buckets)
        assert set(bounds) <= {2**b for b in range(simulator.HISTOGRAM_BUCKETS)} and len(bounds) >= 5
        # Most single-block reads of a 500 µs mean fall in the 256-1024 µs buckets.
        busiest = max(buckets, key=lambda p: p.fields["waits_per_s"])
        assert dict(busiest.tags)["le_us"] in ("512", "1024")


def test_io_by_function_matches_the_truth():
    """GV$IOSTAT_FUNCTION as rates: requests and waits per function (review C7)."""
    workload = simulator.Workload(instances=1)
    intervals, _ = run(workload, 3, step=60.0)
    for t0, t1, points in intervals:
        truth = simulator.truth(workload, 1, t0, t1)
        functions = {
            dict(p.tags)["function"]: p.fields for p in points if p.measurement == "dnfsmon_oracle_io_function"
        }
        assert set(functions) == set(simulator.FUNCTIONS)
        cache = functions["Buffer Cache Reads"]
        assert cache["small_read_reqs_per_s"] == pytest.approx(
            truth.function_reqs_per_s["Buffer Cache Reads"], rel=0.005
        )
        assert cache["avg_wait_ms"] == pytest.approx(truth.function_avg_wait_ms["Buffer Cache Reads"], rel=0.01)
        assert cache["small_read_mb_per_s"] == pytest.approx(cache["small_read_reqs_per_s"] * 8192 / 2**20, rel=0.01)
        direct = functions["Direct Reads"]
        assert direct["large_read_reqs_per_s"] == pytest.approx(truth.function_reqs_per_s["Direct Reads"], rel=0.005)
        assert functions["DBWR"]["small_write_reqs_per_s"] == pytest.approx(
            truth.function_reqs_per_s["DBWR"], rel=0.005
        )
        assert "avg_wait_ms" not in functions["DBWR"]  # no synchronous waits: no average, not 0
        assert functions["RMAN"]["large_read_reqs_per_s"] == 0.0


def test_latency_per_filer_shows_the_slow_filer():
    """GV$IOSTAT_FILE diffed per file, summed per filer through GV$DNFS_FILES (review C8)."""
    workload = simulator.Workload(instances=1, filer_latency_factors=(1.0, 3.0))
    intervals, _ = run(workload, 3, step=60.0)
    for t0, t1, points in intervals:
        truth = simulator.truth(workload, 1, t0, t1)
        filers = {dict(p.tags)["server"]: p.fields for p in points if p.measurement == "dnfsmon_dnfs_filer_latency"}
        assert set(filers) == {"filer1", "filer2"}
        for server, fields in filers.items():
            assert fields["small_read_avg_ms"] == pytest.approx(truth.filer_small_read_avg_ms[server], rel=0.005)
            assert fields["small_read_reqs_per_s"] == pytest.approx(truth.filer_small_reads_per_s[server], rel=0.005)
            assert fields["files"] == 10 and fields["interval_s"] == t1 - t0
        assert filers["filer2"]["small_read_avg_ms"] == pytest.approx(
            3 * filers["filer1"]["small_read_avg_ms"], rel=0.01
        )


def top_processes(points):
    return {
        int(dict(p.tags)["rank"]): (dict(p.tags)["process"], p.fields)
        for p in points
        if p.measurement == "dnfsmon_dnfs_top_process"
    }


def test_the_top_processes_are_the_busiest_with_their_own_rates():
    """Top N by dNFS operations in the interval, per instance, tagged by rank and process name (review C6)."""
    workload = simulator.Workload(instances=1, processes=12)
    model = simulator.Model(workload)
    intervals, _ = run(workload, 3, top_processes=3)
    busiest = sorted(range(12), key=lambda slot: -model.weights[1][slot])[:3]
    for t0, t1, points in intervals:
        top = top_processes(points)
        assert sorted(top) == [1, 2, 3]
        assert [fields["pnum"] for _, fields in (top[r] for r in (1, 2, 3))] == [20 + slot for slot in busiest]
        for rank, slot in enumerate(busiest, start=1):
            name, fields = top[rank]
            expected = workload.read_iops * model.weights[1][slot] * model.load(t0, t1) / (t1 - t0)
            assert fields["read_iops"] == pytest.approx(expected, rel=0.005)
            assert name == (simulator.BACKGROUND_PROCESSES[slot] if slot < 5 else "foreground")
            assert fields["program"].startswith("oracle@simhost1 (")
        assert top[1][1]["ops_per_s"] >= top[2][1]["ops_per_s"] >= top[3][1]["ops_per_s"]
    none = run(simulator.Workload(instances=1, processes=12), 2, top_processes=0)[0]
    assert not top_processes(none[0][2])


def test_a_new_process_can_be_a_top_process():
    workload = simulator.Workload(instances=1, processes=4, process_lifetime_s=20.0)
    intervals, _ = run(workload, 6, top_processes=4)
    new = [
        fields for _, _, points in intervals for _, fields in top_processes(points).values() if fields["new_process"]
    ]
    assert new and all(fields["ops_per_s"] > 0 for fields in new)


def test_millisecond_histogram_before_12_1_0_2():
    workload = simulator.Workload(instances=1, release="11.2.0.4", mode="thick")
    intervals, _ = run(workload, 2, step=60.0)
    buckets = [
        p
        for p in intervals[0][2]
        if p.measurement == "dnfsmon_oracle_latency_histogram" and dict(p.tags)["event"] == "db file sequential read"
    ]
    assert sorted(int(dict(p.tags)["le_us"]) for p in buckets)[:3] == [1000, 2000, 4000]


def test_client_slot_limit_makes_latency_climb_with_load():
    # 5000 IOPS x 0.5 ms = 2.5 outstanding at 1x load: under 4 slots. At 2.5x: 6.25 > 4, latency x 1.5625.
    workload = simulator.Workload(instances=1, client_slots=4, load_phases=((600.0, 1.0), (600.0, 2.5)))
    low = run(workload, 3, step=60.0, start=workload.epoch + 1200 * 1000 + 60)[0]
    high = run(workload, 3, step=60.0, start=workload.epoch + 1200 * 1000 + 660)[0]

    def sequential(intervals):
        return [
            next(
                p.fields["avg_latency_us"]
                for p in points
                if p.measurement == "dnfsmon_oracle_event" and dict(p.tags)["event"] == "db file sequential read"
            )
            for _, _, points in intervals
        ]

    for low_latency, high_latency in zip(sequential(low), sequential(high)):
        assert high_latency / low_latency == pytest.approx(1.5625, rel=0.01)
    unlimited = simulator.Workload(instances=1, load_phases=((600.0, 1.0), (600.0, 2.5)))
    high_unlimited = run(unlimited, 3, step=60.0, start=workload.epoch + 1200 * 1000 + 660)[0]
    assert sequential(high_unlimited)[0] == pytest.approx(sequential(low)[0], rel=0.01)


def test_channel_balance_shows_the_path_imbalance():
    workload = simulator.Workload(instances=1, path_imbalance=1.0)  # first path 2/3, second 1/3
    intervals, _ = run(workload, 3, step=10.0)
    for _, _, points in intervals:
        shares = {
            dict(p.tags)["path"]: p.fields["share_pct"]
            for p in points
            if p.measurement == "dnfsmon_dnfs_channel" and dict(p.tags)["server"] == "filer1"
        }
        assert shares["10.0.1.5"] == pytest.approx(200 / 3, abs=0.05)
        assert shares["10.0.2.5"] == pytest.approx(100 / 3, abs=0.05)
        sends = sum(p.fields["sends_per_s"] for p in points if p.measurement == "dnfsmon_dnfs_channel")
        io = io_points(points)["simdb1"]
        assert sends == pytest.approx(io["total_iops"], rel=0.01)  # every I/O is a send on some path


@pytest.mark.parametrize("release", ["11.2.0.4", "12.1.0.1", "12.1.0.2", "12.2", "18c", "21c", "23ai"])
def test_every_release_gives_catalogued_points(release):
    workload = simulator.Workload(instances=1, processes=5, release=release, mode="thick")
    intervals, _ = run(workload, 2)
    entries = catalogue.load()
    points = intervals[0][2]
    assert {p.measurement for p in points} >= {
        "dnfsmon_dnfs_io",
        "dnfsmon_oracle_event",
        "dnfsmon_dnfs_channel",
        "dnfsmon_oracle_status",
    }
    assert [v for p in points for v in catalogue.violations(p, entries)] == []
    assert all(dict(p.tags).get("simulated") == "true" for p in points)


def test_the_same_instant_gives_the_same_rows_in_any_process():
    a = simulator.read(simulator.Workload(), T0 + 12345.6)
    b = simulator.read(simulator.Workload(), T0 + 12345.6)
    assert a.files == b.files
