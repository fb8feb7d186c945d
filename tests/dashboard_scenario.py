"""A week of one database host with known truth, taken by the agent's own collect and ship path.

The agent's `collect_targets` runs the scenario's runs (6 samples 10 s apart, as cron runs
it every minute) on a controlled clock, and `influx.ship` sends the store to a real
InfluxDB after each run. Its targets:

- the database: the agent's OracleTarget, whose reads (oracle_db.read_once) answer with
  the simulated two-instance RAC (dnfsmon.simulator), except during the outage, when the
  live reader itself (python-oracledb) tries a port nothing listens on;
- the host: recorded readings whose counters grow at known rates: /proc/net/snmp (TCP
  segments and retransmissions, with a counter reset and a window in which it cannot be
  read), /proc/net/dev and /sys/class/net (two storage NICs, one busy for a while), the
  tcp_info of the dNFS connections to the filers (netlink; open while the database is),
  and /proc/stat, /proc/meminfo, /proc/vmstat and /proc/pressure (CPU, swapping, PSI).

Nothing here reads the points back to decide what is true: the truth comes from the
schedule below and the simulator's model (simulator.truth), never from a query.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import socket
from dataclasses import dataclass
from typing import Optional

from dnfsmon import collect, influx, oracle_db, simulator, targets
from dnfsmon.config import parse
from dnfsmon.oracle_facts import AGENT_EVENTS
from dnfsmon.sources import build_all, filer_tcp, mountstats, nic, oracle, pressure, rpc, tcp
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
HOST_BUSY = (25 * MINUTE, 15 * MINUTE)  # a batch: ens3 receives 3 times as much, the CPUs are busier
DENSE = 3 * HOUR

OUT_SEGS_PER_S = 5000.0
RETRANS_PCT, LOSSY_RETRANS_PCT = 0.2, 3.0

# The store's cap during the scenario: a run's points (about 300 KB with every host source)
# fit several times, half an hour without shipping does not.
STORE_MAX_BYTES = 1 << 21


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


def boot(end: int) -> int:
    return end - 8 * DAY


def integral(end: int, t: float, rate: float, busy_rate: Optional[float] = None) -> int:
    """A counter of the recorded host at t: `rate` per second since boot, `busy_rate` inside
    HOST_BUSY (the kernel's counters are integers: the value at t, truncated)."""
    total = rate * (t - boot(end))
    if busy_rate is not None:
        busy_start, busy_end = end - HOST_BUSY[0], end - HOST_BUSY[1]
        total += (busy_rate - rate) * max(0.0, min(t, busy_end) - busy_start)
    return int(total)


# --- NICs: the storage network, one interface per dNFS path (the simulator's local addresses) ---
NICS = {"ens3": "10.0.1.1", "ens4": "10.0.2.1"}
NIC_SPEED_MBIT, NIC_MTU = 10_000, 9000
# Bytes per second received and sent (ens3 receives BUSY_RX_FACTOR times as much in HOST_BUSY).
NIC_RX_BYTES_PER_S = {"ens3": 250e6, "ens4": 200e6}
NIC_TX_BYTES_PER_S = {"ens3": 40e6, "ens4": 30e6}
BUSY_RX_FACTOR = 3.0
NIC_PACKET_BYTES = 8000  # packets count one per 8000 bytes
NIC_RX_DROPS_PER_S = {"ens3": 0.5, "ens4": 0.0}


def nic_counters(end: int, interface: str, t: float) -> dict[str, int]:
    """The /proc/net/dev counters of an interface at t."""
    rx = NIC_RX_BYTES_PER_S[interface]
    busy_rx = rx * BUSY_RX_FACTOR if interface == "ens3" else None
    rx_bytes, tx_bytes = integral(end, t, rx, busy_rx), integral(end, t, NIC_TX_BYTES_PER_S[interface])
    return {
        "rx_bytes": rx_bytes,
        "rx_packets": rx_bytes // NIC_PACKET_BYTES,
        "rx_drop": integral(end, t, NIC_RX_DROPS_PER_S[interface]),
        "tx_bytes": tx_bytes,
        "tx_packets": tx_bytes // NIC_PACKET_BYTES,
    }


def net_dev(end: int, t: float) -> str:
    """/proc/net/dev as the kernel prints it (dev_seq_printf_stats), lo and the two NICs."""
    lines = [
        "Inter-|   Receive                                                |  Transmit",
        " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed",
        "    lo: 1000 10 0 0 0 0 0 0 1000 10 0 0 0 0 0 0",
    ]
    for interface in NICS:
        c = nic_counters(end, interface, t)
        receive = f"{c['rx_bytes']} {c['rx_packets']} 0 {c['rx_drop']} 0 0 0 0"
        lines.append(f"  {interface}: {receive} {c['tx_bytes']} {c['tx_packets']} 0 0 0 0 0 0")
    return "\n".join(lines) + "\n"


def nic_truth(end: int, interface: str, t0: float, t1: float) -> dict[str, float]:
    """The fields dnfsmon_nic must carry for (t0, t1]: rates of the counters above; %Util as
    nicstat defines it for a full-duplex link (the busier direction over the link speed)."""
    c0, c1 = nic_counters(end, interface, t0), nic_counters(end, interface, t1)
    dt = t1 - t0
    rx, tx = (c1["rx_bytes"] - c0["rx_bytes"]) / dt, (c1["tx_bytes"] - c0["tx_bytes"]) / dt
    return {
        "rx_kib_per_s": rx / 1024,
        "tx_kib_per_s": tx / 1024,
        "util_pct": max(rx, tx) * 8 / (NIC_SPEED_MBIT * 1e6) * 100,
        "saturation_per_s": (c1["rx_drop"] - c0["rx_drop"]) / dt,
    }


# --- the dNFS connections to the filers: one per path of the simulated database ---
# (local address, filer address) -> smoothed RTT in µs (tcpi_rtt).
FILER_PATHS = {
    ("10.0.1.1", "10.0.1.5"): 300,
    ("10.0.1.1", "10.0.1.6"): 350,
    ("10.0.2.1", "10.0.2.5"): 450,
    ("10.0.2.1", "10.0.2.6"): 500,
}
FILER_SEGS_OUT_PER_S = 2000.0
FILER_RETRANS_PCT = 0.3  # below what doctor calls lossy: no finding


def filer_sockets(end: int, t: float) -> str:
    """The netlink reading of the filer connections (filer_tcp.SOCKETS): none while the database
    is down (dNFS connections close with their processes), new ones (new cookies) after it."""
    sockets = []
    generation = 1 if t >= end - DB_OUTAGE[1] else 0
    if not inside(DB_OUTAGE, end, t):
        for number, ((local, server), rtt) in enumerate(FILER_PATHS.items()):
            segs = integral(end, t, FILER_SEGS_OUT_PER_S)
            info = {
                "tcpi_bytes_acked": segs * 8000,
                "tcpi_bytes_received": segs * 8000,
                "tcpi_segs_out": segs,
                "tcpi_segs_in": segs,
                "tcpi_total_retrans": integral(end, t, FILER_SEGS_OUT_PER_S * FILER_RETRANS_PCT / 100),
                "tcpi_rtt": rtt,
                "tcpi_rttvar": rtt // 4,
                "tcpi_min_rtt": rtt // 2,
                "tcpi_snd_cwnd": 100,
                "tcpi_snd_ssthresh": 80,
                "tcpi_unacked": 0,
                "tcpi_retransmits": 0,
            }
            sockets.append(
                {
                    "src": local,
                    "sport": 40000 + number,
                    "dst": server,
                    "dport": 2049,
                    "cookie": 1000 * generation + number,
                    "tcp_info": info,
                }
            )
    interfaces = {address: interface for interface, address in NICS.items()}
    return json.dumps({"sockets": sockets, "interfaces": interfaces}, sort_keys=True)


def filer_truth(end: int, local: str, server: str, t0: float, t1: float) -> dict[str, float]:
    """dnfsmon_filer_tcp of one path (one connection) for (t0, t1] (both inside one connection)."""
    dt = t1 - t0
    retrans = integral(end, t1, FILER_SEGS_OUT_PER_S * FILER_RETRANS_PCT / 100) - integral(
        end, t0, FILER_SEGS_OUT_PER_S * FILER_RETRANS_PCT / 100
    )
    rtt_ms = FILER_PATHS[(local, server)] / 1000
    return {"srtt_avg_ms": rtt_ms, "srtt_max_ms": rtt_ms, "retrans_segs_per_s": retrans / dt}


def filer_connected(end: int, t0: float, t1: float) -> bool:
    """One connection at both samples: up at both, and no outage between them."""
    return not any(inside(DB_OUTAGE, end, t) for t in (t0, t1)) and not (t0 < end - DB_OUTAGE[1] <= t1)


# --- CPU, memory, swapping and PSI ---
CPUS, USER_HZ = 8, 100
# Shares of all CPUs' time (busy: inside HOST_BUSY).
CPU_USER, BUSY_CPU_USER, CPU_SYSTEM, CPU_IOWAIT = 0.20, 0.50, 0.05, 0.03
PROCS_RUNNING, BUSY_PROCS_RUNNING = 4, 10
SWAP_IN_PAGES_PER_S, SWAP_OUT_PAGES_PER_S = 5.0, 2.0
PSI_US_PER_S = {"cpu_some": 20_000, "memory_some": 10_000, "memory_full": 5_000, "io_some": 30_000, "io_full": 10_000}
MEM_TOTAL_KB, MEM_AVAILABLE_KB = 64 * 1024 * 1024, 16 * 1024 * 1024


def cpu_ticks(end: int, t: float) -> dict[str, int]:
    total = integral(end, t, CPUS * USER_HZ)
    ticks = {
        "user": integral(end, t, CPU_USER * CPUS * USER_HZ, BUSY_CPU_USER * CPUS * USER_HZ),
        "system": integral(end, t, CPU_SYSTEM * CPUS * USER_HZ),
        "iowait": integral(end, t, CPU_IOWAIT * CPUS * USER_HZ),
    }
    return {**ticks, "idle": total - sum(ticks.values())}


def host_files(end: int, t: float) -> dict[str, str]:
    """/proc/stat (show_stat), /proc/meminfo, /proc/vmstat and /proc/pressure/* at t."""
    c = cpu_ticks(end, t)
    running = BUSY_PROCS_RUNNING if inside(HOST_BUSY, end, t) else PROCS_RUNNING
    stat = f"cpu  {c['user']} 0 {c['system']} {c['idle']} {c['iowait']} 0 0 0 0 0\n"
    stat += "".join(f"cpu{n} 0 0 0 0 0 0 0 0 0 0\n" for n in range(CPUS))
    stat += f"procs_running {running}\nprocs_blocked 0\n"
    vmstat = (
        f"pgmajfault {integral(end, t, 1.0)}\npswpin {integral(end, t, SWAP_IN_PAGES_PER_S)}\n"
        f"pswpout {integral(end, t, SWAP_OUT_PAGES_PER_S)}\n"
    )
    files = {
        pressure.STAT: stat,
        pressure.MEMINFO: f"MemTotal: {MEM_TOTAL_KB} kB\nMemAvailable: {MEM_AVAILABLE_KB} kB\n",
        pressure.VMSTAT: vmstat,
    }
    for resource, path in pressure.PSI_FILES.items():
        lines = []
        for kind in ("some", "full"):
            total = integral(end, t, PSI_US_PER_S.get(f"{resource}_{kind}", 0))
            lines.append(f"{kind} avg10=0.00 avg60=0.00 avg300=0.00 total={total}")
        files[path] = "\n".join(lines) + "\n"
    return files


def pressure_truth(end: int, t0: float, t1: float) -> dict[str, float]:
    """dnfsmon_host_pressure for (t0, t1]: CPU shares of the ticks above (busy = not idle and not
    iowait, as proc(5) splits the cpu line), procs_running / CPUs at t1, swap pages per second."""
    c0, c1 = cpu_ticks(end, t0), cpu_ticks(end, t1)
    d = {k: c1[k] - c0[k] for k in c0}
    total = sum(d.values())
    running = BUSY_PROCS_RUNNING if inside(HOST_BUSY, end, t1) else PROCS_RUNNING
    dt = t1 - t0

    def rate(per_s: float) -> float:
        return (integral(end, t1, per_s) - integral(end, t0, per_s)) / dt

    return {
        "cpu_busy_pct": (d["user"] + d["system"]) / total * 100,
        "cpu_iowait_pct": d["iowait"] / total * 100,
        "cpu_steal_pct": 0.0,
        "run_queue_per_cpu": running / CPUS,
        "swap_in_pages_per_s": rate(SWAP_IN_PAGES_PER_S),
        "swap_out_pages_per_s": rate(SWAP_OUT_PAGES_PER_S),
    }


# --- the kernel NFS client: the archived redo logs' mount, on a filer dNFS does not serve ---
# The archiver writes there (and reads back a little) while the database is up; nothing while it
# is down. Not a data file export: no dnfs-fallback, and no path to a filer for the doctor.
ARCHIVE = {"device": "10.0.3.7:/vol/arch", "mountpoint": "/u03/arch", "server": "10.0.3.7", "export": "/vol/arch"}
MOUNTED_AT = HOUR  # seconds after boot: mounted all week
# Per operation: ops per second, retransmissions per op, and ms of queue, RTT and execution per op.
NFS_OPS = {
    "READ": {"ops": 5.0, "retrans": 0.0, "queue_ms": 0.05, "rtt_ms": 1.5, "execute_ms": 1.6, "bytes": 262144},
    "WRITE": {"ops": 40.0, "retrans": 0.01, "queue_ms": 0.1, "rtt_ms": 2.0, "execute_ms": 2.5, "bytes": 1048576},
}
NFS_BACKLOG = 0.2  # RPCs waiting for a slot, on average at each send (xprt bklog_u / sends)
SLOT_TABLE_ENTRIES = 128


def nfs_rate(end: int, t: float, per_s: float) -> int:
    """A kernel NFS counter: `per_s` while the database is up, nothing during the outage."""
    total = per_s * (t - boot(end))
    outage_start, outage_end = end - DB_OUTAGE[0], end - DB_OUTAGE[1]
    total -= per_s * max(0.0, min(t, outage_end) - outage_start)
    return int(total)


def nfs_op_counters(end: int, op: str, t: float) -> dict[str, int]:
    spec = NFS_OPS[op]
    ops = nfs_rate(end, t, spec["ops"])
    return {
        "ops": ops,
        "trans": ops + nfs_rate(end, t, spec["ops"] * spec["retrans"]),
        "bytes_sent": nfs_rate(end, t, spec["ops"] * (spec["bytes"] if op == "WRITE" else 200)),
        "bytes_recv": nfs_rate(end, t, spec["ops"] * (spec["bytes"] if op == "READ" else 200)),
        **{name: nfs_rate(end, t, spec["ops"] * spec[name]) for name in ("queue_ms", "rtt_ms", "execute_ms")},
    }


def mountstats_text(end: int, t: float) -> str:
    """/proc/self/mountstats as nfs_show_stats and rpc_clnt_show_stats print it (statvers 1.1)."""
    sends = rpc_sends(end, t)
    lines = [
        "device rootfs mounted on / with fstype rootfs",
        f"device {ARCHIVE['device']} mounted on {ARCHIVE['mountpoint']} with fstype nfs statvers=1.1",
        "\topts:\trw,vers=3,rsize=1048576,wsize=1048576,namlen=255,acregmin=3,acregmax=60,acdirmin=30,"
        f"acdirmax=60,hard,proto=tcp,timeo=600,retrans=2,sec=sys,mountaddr={ARCHIVE['server']},mountvers=3,"
        f"mountport=635,mountproto=udp,local_lock=none",
        f"\tage:\t{int(t - boot(end) - MOUNTED_AT)}",
        "\tcaps:\tcaps=0x3fef,wtmult=512,dtsize=32768,bsize=0,namlen=255",
        "\tsec:\tflavor=1,pseudoflavor=1",
        "\tevents:\t" + " ".join(["0"] * 27),
        "\tbytes:\t0 0 0 0 0 0 0 0",
        "\tRPC iostats version: 1.1  p/v: 100003/3 (nfs)",
        f"\txprt:\ttcp 900 1 1 0 0 {sends} {sends} 0 {sends} {int(NFS_BACKLOG * sends)} 128 {sends} 0",
        "\tper-op statistics",
        "\t        NULL: 0 0 0 0 0 0 0 0 0",
    ]
    for op in NFS_OPS:
        c = nfs_op_counters(end, op, t)
        values = " ".join(str(c[name]) for name in ("ops", "trans")) + " 0 "
        values += " ".join(str(c[name]) for name in ("bytes_sent", "bytes_recv", "queue_ms", "rtt_ms", "execute_ms"))
        lines.append(f"\t{op:>12}: {values} 0")
    for op in ("COMMIT", "GETATTR", "ACCESS", "LOOKUP"):
        lines.append(f"\t{op:>12}: 0 0 0 0 0 0 0 0 0")
    return "\n".join(lines) + "\n\n"


def nfs_op_truth(end: int, op: str, t0: float, t1: float) -> dict[str, float]:
    """dnfsmon_nfs_op of one operation for (t0, t1]: per second, and per operation (mountstats.c)."""
    c0, c1 = nfs_op_counters(end, op, t0), nfs_op_counters(end, op, t1)
    d = {k: c1[k] - c0[k] for k in c0}
    out = {"retrans_per_s": (d["trans"] - d["ops"]) / (t1 - t0)}
    if d["ops"]:
        out["avg_queue_ms"] = d["queue_ms"] / d["ops"]
        out["avg_rtt_ms"] = d["rtt_ms"] / d["ops"]
        out["avg_exe_ms"] = d["execute_ms"] / d["ops"]
    return out


def rpc_sends(end: int, t: float) -> int:
    """RPCs the mount's transport sent: every transmission of every operation."""
    return sum(nfs_op_counters(end, op, t)["trans"] for op in NFS_OPS)


def nfs_mount_truth(end: int, t0: float, t1: float) -> dict[str, float]:
    """dnfsmon_nfs_mount for (t0, t1]: the backlog each send found (xprt bklog_u / sends)."""
    s0, s1 = rpc_sends(end, t0), rpc_sends(end, t1)
    backlog = int(NFS_BACKLOG * s1) - int(NFS_BACKLOG * s0)
    return {} if s1 == s0 else {"avg_backlog": backlog / (s1 - s0)}


RPC_NFS = "net 0 0 0 0\nrpc {calls} {retrans} 0\nproc3 22 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"


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


BOOT_ID = "5c1a8e0e-0000-4000-8000-000000000001\n"


class RecordedHost(targets.Target):
    """The host's files as recorded at each sample (the readings a capture holds)."""

    def __init__(self, clock: Clock, end: int):
        self.id = f"host:{HOST}"
        self.sources = build_all([tcp.NAME, nic.NAME, filer_tcp.NAME, pressure.NAME, mountstats.NAME, rpc.NAME])
        self.clock, self.end = clock, end

    def read(self) -> targets.Reading:
        t, end = self.clock.t, self.end

        def raw(files: dict[str, str]) -> Raw:
            recorded: dict[str, Optional[str]] = {**files, BOOT_ID_PATH: BOOT_ID}
            return Raw(recorded, t, t)

        sys_files = {
            path: value
            for interface in NICS
            for path, value in zip(nic.sys_files(interface).values(), (f"{NIC_SPEED_MBIT}\n", "full\n", f"{NIC_MTU}\n"))
        }
        raws = {
            nic.NAME: raw({nic.NET_DEV: net_dev(end, t), **sys_files}),
            filer_tcp.NAME: raw({filer_tcp.SOCKETS: filer_sockets(end, t)}),
            pressure.NAME: raw(host_files(end, t)),
            mountstats.NAME: raw({mountstats.MOUNTSTATS: mountstats_text(end, t)}),
            rpc.NAME: raw(
                {
                    rpc.RPC_NFS: RPC_NFS.format(calls=nfs_rate(end, t, 45.0), retrans=nfs_rate(end, t, 0.4)),
                    rpc.TUNABLES["tcp_slot_table_entries"]: f"{SLOT_TABLE_ENTRIES}\n",
                }
            ),
        }
        if inside(SOURCE_FAILING, end, t):
            return targets.Reading(
                raws=raws, failures={tcp.NAME: "FileNotFoundError: [Errno 2] No such file: proc/net/snmp"}
            )
        out, retrans = tcp_counters(end, t)
        raws[tcp.NAME] = raw({tcp.NET_SNMP: SNMP.format(insegs=out, out=out, retrans=retrans)})
        return targets.Reading(raws=raws)


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


def nothing_to_judge_truth(end: int, before: Optional[float], t: float) -> bool:
    """No layer measured in the interval (before, t] (dnfsmon doctor's "nothing to judge",
    docs/doctor.md): the database cannot be read at t, and the kernel NFS mount had no traffic
    since `before` (it stops with the database; its READs would be a rung of the ladder)."""
    return before is not None and inside(DB_OUTAGE, end, t) and before >= end - DB_OUTAGE[0]


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


# --- the database's figures: the simulator's views at each sample, and the Reference's formulas ---
# The views are the simulator's closed-form counters (simulator.Model, what GV$... return at t);
# each figure below is the Oracle Database Reference's definition of the column diffed over the
# interval, never the agent's code.

DB_TAGS = {"database": DB, "simulated": "true"}
# The measurement of a truth point, kept among its tags (not a tag InfluxDB holds).
MEASUREMENT = "_measurement"
HISTOGRAM = "dnfsmon_oracle_latency_histogram"
SEQUENTIAL_READ = "db file sequential read"


def instance_tags(inst: int) -> dict[str, str]:
    """GV$INSTANCE.INSTANCE_NAME and HOST_NAME of the simulated instance (simhost1 is the agent's)."""
    return {**DB_TAGS, "host": f"simhost{inst}", "instance": f"{DB.lower()}{inst}"}


class DatabaseViews:
    """The simulated views' counters at a sample time, memoised (each is an integral of the model)."""

    def __init__(self, end: int):
        self.end = end
        self.model = simulator.Model(workload(end, end))  # the counters do not depend on the incident
        self._events: dict[tuple[int, str, float], tuple[list[int], int]] = {}

    def event(self, inst: int, event: str, t: float) -> tuple[list[int], int]:
        """GV$EVENT_HISTOGRAM_MICRO's WAIT_COUNT per bucket (2^b µs) and GV$SYSTEM_EVENT's
        TIME_WAITED_MICRO; TOTAL_WAITS is the buckets' sum (19c: microsecond buckets)."""
        key = (inst, event, t)
        if key not in self._events:
            self._events[key] = self.model.event_counts(inst, event, t, 1.0)
        return self._events[key]

    def restarted(self, inst: int, t0: float, t1: float) -> bool:
        return self.model.startup(inst, t1) != self.model.startup(inst, t0)


def dnfs_io_truth(views: DatabaseViews, inst: int, t0: float, t1: float) -> dict[str, float]:
    """dnfsmon_dnfs_io of one instance over (t0, t1]: GV$DNFS_STATS per process identity (PNUM,
    SPID, SERIAL#), a process born inside the interval counted from zero (its counters start with
    it), summed, per second."""
    model, dt = views.model, t1 - t0
    reads = writes = read_bytes = write_bytes = moved = 0
    for slot in range(model.w.processes):
        now = model.process_counts(inst, slot, t1)
        same = model.process(inst, slot, t0) == model.process(inst, slot, t1)
        before = model.process_counts(inst, slot, t0) if same else dict.fromkeys(now, 0)
        delta = {k: now[k] - before[k] for k in now}
        reads, writes = reads + delta["NFS_READ"], writes + delta["NFS_WRITE"]
        read_bytes, write_bytes = read_bytes + delta["NFS_READBYTES"], write_bytes + delta["NFS_WRITEBYTES"]
        moved += any(delta.values())
    fields = {
        "read_iops": reads / dt,
        "write_iops": writes / dt,
        "total_iops": (reads + writes) / dt,
        "read_mib_per_s": read_bytes / dt / 2**20,
        "write_mib_per_s": write_bytes / dt / 2**20,
        "processes": moved,
    }
    if reads:
        fields["avg_read_kib"] = read_bytes / reads / 1024
    if writes:
        fields["avg_write_kib"] = write_bytes / writes / 1024
    return fields


def channel_sends(views: DatabaseViews, inst: int, since: float, t: float) -> dict[tuple[str, str, str], int]:
    """GV$DNFS_CHANNELS.SENDS per (filer, path, local address), all processes: counted since the
    previous select of the view (Reference, V$DNFS_CHANNELS), which the agent's own read was."""
    model, w = views.model, views.model.w
    since = max(since, model.startup(inst, t))
    found: dict[tuple[str, str, str], int] = {}
    for slot in range(w.processes):
        _, begin = model.process(inst, slot, t)
        ops = (w.read_iops + w.write_iops) * model.weights[inst][slot] * model.load(max(since, begin), t)
        for server, paths in w.servers:
            for position, path in enumerate(paths):
                key = (server, path, w.local_addresses[position % len(w.local_addresses)])
                share = model.path_shares[server][position] / len(w.servers)
                found[key] = found.get(key, 0) + math.floor(ops * share)
    return found


def p95_us(counts: list[int]) -> Optional[float]:
    """The 95th percentile of waits bucketed by power-of-two upper bounds (bucket b holds waits in
    [2^(b-1), 2^b) µs: Reference, V$EVENT_HISTOGRAM_MICRO), linearly inside its bucket."""
    total = sum(counts)
    if not total:
        return None
    target, below = 0.95 * total, 0
    for b, count in enumerate(counts):
        if count and below + count >= target:
            upper = 2.0**b
            lower = upper / 2 if b else 0.0
            return lower + (upper - lower) * (target - below) / count
        below += count
    return None


def database_points(end: int, samples: list[int]):
    """(time, tags, fields) of every point the database's panels read, for each sample at which
    the database answered, diffed against the previous one at which it answered (the agent's
    state across runs and outages); none for an instance restarted in between (a re-baseline)."""
    views, found = DatabaseViews(end), []
    up = [t for t in samples if status_truth(end, t) == 1]
    # The latency ladder's Oracle rungs per sample: (the instances' mean single-block read, p95).
    ladder: dict[int, tuple[float, Optional[float]]] = {}
    w = views.model.w
    for t0, t1 in zip(up, up[1:]):
        dt = t1 - t0
        ladder_waits = ladder_micros = 0
        ladder_buckets = [0] * simulator.HISTOGRAM_BUCKETS
        for inst in range(1, w.instances + 1):
            tags = instance_tags(inst)
            files = w.datafiles_per_server * len(w.servers)
            fallback = workload(end, t1).fallback_datafiles
            coverage = {"files": files, "dnfs_pct": (files - fallback) / files * 100}
            found.append((t1, {**tags, MEASUREMENT: "dnfsmon_dnfs_coverage", "file_type": "Data File"}, coverage))
            if views.restarted(inst, t0, t1):
                continue
            found.append((t1, {**tags, MEASUREMENT: "dnfsmon_dnfs_io"}, dnfs_io_truth(views, inst, t0, t1)))
            sends = channel_sends(views, inst, t0, t1)
            for (server, path, local), count in sends.items():
                filer = sum(c for (s, _, _), c in sends.items() if s == server)
                fields = {"sends_per_s": count / dt}
                if filer:
                    fields["share_pct"] = count / filer * 100
                path_tags = {"server": server, "path": path, "local": local}
                found.append((t1, {**tags, MEASUREMENT: "dnfsmon_dnfs_channel", **path_tags}, fields))
            for event in AGENT_EVENTS:
                (b0, m0), (b1, m1) = views.event(inst, event, t0), views.event(inst, event, t1)
                waits, micros = sum(b1) - sum(b0), m1 - m0
                fields = {"waits_per_s": waits / dt}
                if waits:
                    fields["avg_latency_us"] = micros / waits
                found.append((t1, {**tags, MEASUREMENT: "dnfsmon_oracle_event", "event": event}, fields))
                if event == SEQUENTIAL_READ:
                    ladder_waits, ladder_micros = ladder_waits + waits, ladder_micros + micros
                    for b, (c0, c1) in enumerate(zip(b0, b1)):
                        ladder_buckets[b] += c1 - c0
                        if c1:  # the view lists a bucket once a wait fell in it
                            tags_b = {**tags, MEASUREMENT: HISTOGRAM, "event": event, "le_us": str(2**b)}
                            found.append((t1, tags_b, {"waits_per_s": (c1 - c0) / dt}))
        if ladder_waits:
            ladder[t1] = (ladder_micros / ladder_waits / 1000, p95_us(ladder_buckets))
    return found, ladder


__all__ = ["oracle"]
