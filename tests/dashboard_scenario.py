"""A week of one database host with known truth, taken by the agent's own collect and ship path.

The agent's `collect_targets` runs the scenario's runs (6 samples 10 s apart, as cron runs
it every minute) on a controlled clock, and `influx.ship` sends the store to a real
InfluxDB after each run. Its targets:

- the database: the agent's OracleTarget, whose reads (oracle_db.read_once) answer with
  the simulated two-instance RAC (dnfsmon.simulator), except during the outage, when the
  live reader itself (python-oracledb) tries a port nothing listens on;
- the host: recorded /proc/net/snmp readings whose counters grow at known rates
  (TCP segments and retransmissions), with a counter reset and a window in which the
  source cannot be read.

Nothing here reads the points back to decide what is true: the truth comes from the
schedule below and the simulator's model (simulator.truth), never from a query.
"""

from __future__ import annotations

import dataclasses
import os
import socket
from dataclasses import dataclass
from typing import Optional

from dnfsmon import collect, influx, oracle_db, simulator, targets
from dnfsmon.config import parse
from dnfsmon.sources import build_all, oracle, tcp
from dnfsmon.sources.base import BOOT_ID_PATH, Raw
from dnfsmon.store import Store

# The agent runs on the first instance's host (the simulator names them simhost1 and simhost2) and
# reads both instances (scope cluster): each instance's points carry its own host.
HOST = "simhost1"
DB = "SIMDB"
MINUTE, HOUR, DAY = 60, 3600, 86400
SAMPLES_PER_RUN, SAMPLE_INTERVAL_S = 6, 10.0

# Windows relative to the scenario's end N (seconds before N): (start, end). All lie in the
# last 3 hours, where cron runs the agent every minute. The points the store drops while
# InfluxDB is down are lost: that window ends more than 30 minutes (the longest interval a
# stat panel gets at 7 days) before the first moment the panels are checked at.
INFLUX_DOWN = (175 * MINUTE, 150 * MINUTE)  # nothing shipped: the store fills and drops the oldest
LOSSY = (140 * MINUTE, 130 * MINUTE)  # TCP retransmits 3 % instead of 0.2 %
SOURCE_FAILING = (120 * MINUTE, 110 * MINUTE)  # /proc/net/snmp cannot be read
INCIDENT = (100 * MINUTE, 80 * MINUTE)  # two data files on the kernel NFS client: dnfs-fallback, critical
DB_OUTAGE = (70 * MINUTE, 55 * MINUTE)  # nothing listens where the database was
AGENT_STOP = (45 * MINUTE, 30 * MINUTE)  # no run at all
TCP_RESET = 20 * MINUTE  # the host's TCP counters go back to zero (same boot)
DENSE = 3 * HOUR

OUT_SEGS_PER_S = 5000.0
RETRANS_PCT, LOSSY_RETRANS_PCT = 0.2, 3.0

# The store's cap during the scenario: a run's points fit many times, half an hour without
# shipping does not.
STORE_MAX_BYTES = 1 << 19


def inside(window: tuple[int, int], end: float, t: float) -> bool:
    return end - window[0] <= t < end - window[1]


def runs(end: int) -> list[tuple[int, int]]:
    """(start, samples) of each run cron starts: every minute, 6 samples, over the last 3 hours;
    before that every 15 minutes back to 24 h and every 2 hours back to 7 days, 2 samples each
    (a week of the simulator's samples at the dense rate would take the test an hour); none
    while the agent is stopped."""
    found = [(s, 2) for s in range(end - 7 * DAY, end - DAY, 2 * HOUR)]
    found += [(s, 2) for s in range(end - DAY, end - DENSE, 15 * MINUTE)]
    found += [(s, SAMPLES_PER_RUN) for s in range(end - DENSE, end, MINUTE)]
    return [(s, n) for s, n in found if not any(inside(AGENT_STOP, end, s + k * 10) for k in range(n))]


def run_starts(end: int) -> list[int]:
    return [s for s, _ in runs(end)]


def sample_times(end: int) -> list[int]:
    return [s + k * int(SAMPLE_INTERVAL_S) for s, n in runs(end) for k in range(n)]


def workload(end: int, t: float) -> simulator.Workload:
    # Few dNFS processes per instance: the figures are as exact with 6 as with 40, and each
    # sample costs the simulator a fraction of the time (a week of samples is written).
    base = simulator.Workload(
        db_name=DB, instances=2, processes=6, datafiles_per_server=4, epoch=end - 8 * DAY, restart_every_s=3 * DAY
    )
    if inside(INCIDENT, end, t):
        return dataclasses.replace(base, fallback_datafiles=2)
    return base


def tcp_counters(end: int, t: float) -> tuple[int, int]:
    """(OutSegs, RetransSegs) of the recorded host at t: exact integrals of the rates above,
    counted from zero again after the reset."""
    origin = end - TCP_RESET if t >= end - TCP_RESET else end - 8 * DAY
    out = OUT_SEGS_PER_S * (t - origin)
    lossy_start, lossy_end = end - LOSSY[0], end - LOSSY[1]
    lossy_s = max(0.0, min(t, lossy_end) - max(origin, lossy_start))
    retrans = OUT_SEGS_PER_S * ((t - origin - lossy_s) * RETRANS_PCT + lossy_s * LOSSY_RETRANS_PCT) / 100
    return int(out), int(retrans)


def retrans_pct_truth(end: int, t0: float, t1: float) -> float:
    """What dnfsmon_tcp.retrans_pct must be over (t0, t1] (no reset inside)."""
    (o0, r0), (o1, r1) = tcp_counters(end, t0), tcp_counters(end, t1)
    return (r1 - r0) / (o1 - o0) * 100


SNMP = (
    "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab "
    "InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n"
    "Tcp: 1 200 120000 -1 10 20 0 0 4 {insegs} {out} {retrans} 0 0 0\n"
)


class Clock:
    """The clock collect and the targets read: time moves only when collect sleeps."""

    def __init__(self, t: float):
        self.t = t

    def time(self) -> float:
        return self.t

    def time_ns(self) -> int:
        return round(self.t * 1e9)

    def monotonic(self) -> float:
        return self.t

    def perf_counter(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


class RecordedHost(targets.Target):
    """The host's /proc/net/snmp as recorded at each sample (the readings a capture holds)."""

    def __init__(self, clock: Clock, end: int):
        self.id = f"host:{HOST}"
        self.sources = build_all([tcp.NAME])
        self.clock, self.end = clock, end

    def read(self) -> targets.Reading:
        t = self.clock.t
        if inside(SOURCE_FAILING, self.end, t):
            return targets.Reading(failures={tcp.NAME: "FileNotFoundError: [Errno 2] No such file: proc/net/snmp"})
        out, retrans = tcp_counters(self.end, t)
        files: dict[str, Optional[str]] = {
            tcp.NET_SNMP: SNMP.format(insegs=out, out=out, retrans=retrans),
            BOOT_ID_PATH: "5c1a8e0e-0000-4000-8000-000000000001\n",
        }
        return targets.Reading(raws={tcp.NAME: Raw(files, t, t)})


def database_reader(clock: Clock, end: int, memory: simulator.Memory):
    """oracle_db.read_once for the scenario: the simulator while the database is up, the live
    reader itself (which cannot connect) during the outage. The target stays the agent's own
    OracleTarget: one target, one state, and the name it keeps is the agent's."""
    live = oracle_db.read_once

    def read_once(database, now: float, inventory: bool = True) -> Raw:
        t = clock.t
        if inside(DB_OUTAGE, end, t):
            return live(database, now, inventory)
        return simulator.read(workload(end, t), t, memory, inventory)

    return read_once


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Scenario:
    end: int
    samples: list[int]
    # Per run: (run end time, the store's dropped-points counter after it).
    dropped: list[tuple[float, int]]


def run(
    directory: str, url: str, bucket: str, end: int, monkeypatch, limit: int = 0, naming: str = "influxdb"
) -> Scenario:
    """Take the scenario's runs with the agent's collect, shipping after each run as cron's does
    (with [influxdb] naming = `naming`: "prometheus" for a store that answers PromQL)."""
    monkeypatch.setenv("DNFSMON_TEST_ORACLE_PASSWORD", "not-used")
    for part in ("state", "store"):
        os.makedirs(os.path.join(directory, part), mode=0o700, exist_ok=True)
    config = parse(
        {
            "agent": {"host": HOST, "state_dir": f"{directory}/state"},
            "store": {"dir": f"{directory}/store", "max_bytes": STORE_MAX_BYTES},
            "oracle": {
                "enabled": True,
                "dsn": f"127.0.0.1:{closed_port()}/{DB}",
                "user": "dnfsmon",
                "password_env": "DNFSMON_TEST_ORACLE_PASSWORD",
                "scope": "cluster",
                "call_timeout_s": 2,
                # Coverage (V$IOSTAT_FILE) every sample, so the incident's finding holds in each.
                "inventory_interval_s": 10,
            },
            "influxdb": {
                "enabled": True,
                "url": url,
                "bucket": bucket,
                "token_env": "DNFSMON_TEST_NO_TOKEN",
                "naming": naming,
            },
        },
        None,
    )
    clock = Clock(0.0)
    monkeypatch.setattr(collect, "time", clock)
    monkeypatch.setattr(targets, "time", clock)
    dropped = []
    memory = simulator.Memory()  # what the simulated database remembers between runs
    monkeypatch.setattr(oracle_db, "read_once", database_reader(clock, end, memory))
    for start, count in runs(end)[-limit:] if limit else runs(end):
        clock.t = float(start)
        chosen = [RecordedHost(clock, end), targets.OracleTarget(config.oracle)]
        try:
            collect.collect_targets(config, chosen, count, SAMPLE_INTERVAL_S)
        finally:
            for target in chosen:
                target.close()
        store = Store(config.store_dir, config.store_max_bytes)
        dropped.append((clock.t, store.counts().dropped_points))
        if not inside(INFLUX_DOWN, end, clock.t):
            influx.ship(store, config.influxdb)
    return Scenario(end, sample_times(end), dropped)


def status_truth(end: int, t: float) -> int:
    """reachable as the agent must record it at sample time t."""
    return 0 if inside(DB_OUTAGE, end, t) else 1


def findings_truth(end: int, t: float) -> set[str]:
    """The finding ids that must hold at a sample at t: the incident's, and nothing else."""
    return {"dnfs-fallback"} if inside(INCIDENT, end, t) else set()


def dnfs_ops_truth(end: int, inst: int, t0: float, t1: float) -> Optional[float]:
    """total_iops the agent must record for one instance over (t0, t1]; None when it records
    none: the instance restarted inside the interval (a re-baseline)."""
    w = workload(end, t1)
    model = simulator.Model(w)
    if model.startup(inst, t1) > t0:
        return None
    truth = simulator.truth(w, inst, t0, t1)
    return truth.observable_read_iops + truth.observable_write_iops


__all__ = ["oracle"]
