"""Write the doctor's scenarios: tests/cases/doctor/<condition>/{old,new}.

Run from the repository root after changing a case (the captures are
committed, and tests/test_doctor.py checks they are what this script writes):

    .venv/bin/python tests/cases/doctor/make_cases.py

Each case is a host (hand-written /proc and /sys text built from the figures
below, in the capture format of docs/doctor.md) and, where a database
matters, the simulator's answers (dnfsmon.simulator) at two instants 10 s
apart. The captures are written with dnfsmon's own capture writer.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from typing import Optional

from dnfsmon import capture, simulator
from dnfsmon.sources import filer_tcp, mountstats, nic, pressure, routes, rpc
from dnfsmon.sources.base import BOOT_ID_PATH, Raw

HERE = os.path.dirname(os.path.abspath(__file__))
HOST = "db1"
BOOT_ID = "5a1f3c2e-0d3b-4c1e-9a52-6a7d0c1b2e3f\n"
DT = 10.0  # seconds between the two captures
BOOT_TIME = 86_400.0  # CLOCK_BOOTTIME of the old capture
WALL_TIME = 1_795_000_000.0  # its wall clock (2026-11-19)
TICKS = 100  # USER_HZ: /proc/stat counts in 1/100 s


@dataclass
class Nic:
    speed_mbit: int = 10_000
    mtu: int = 9000
    util_pct: float = 5.0  # of the link, received direction (transmit is a tenth)
    saturation_per_s: float = 0.0  # rx drops per second


@dataclass
class Socket:
    src: str
    sport: int
    dst: str
    srtt_ms: float = 0.3
    min_rtt_ms: float = 0.1
    cwnd: int = 40
    ssthresh: Optional[int] = None  # None: still in initial slow start
    retransmits: int = 0  # consecutive unrecovered retransmissions now
    segs_out_per_s: int = 2000
    retrans_per_s: float = 0.0
    kib_per_s: int = 8000  # received from the filer


@dataclass
class Mount:
    device: str = "10.0.1.5:/vol/oradata1"
    mountpoint: str = "/u02/oradata1"
    options: str = "rw,vers=3,rsize=1048576,wsize=1048576,namlen=255,acregmin=0,acregmax=0,acdirmin=0,acdirmax=0,hard,proto=tcp,timeo=600,retrans=2,sec=sys,mountaddr=10.0.1.5"
    sport: int = 871
    read_ops_per_s: int = 0
    read_queue_ms: float = 0.05
    read_rtt_ms: float = 0.5
    backlog: float = 0.0  # mean RPCs waiting for a slot per RPC sent
    max_slots: int = 16


@dataclass
class Pressure:
    cpus: int = 8
    busy_pct: float = 20.0
    iowait_pct: float = 1.0
    procs_running: int = 2
    swap_pages_per_s: int = 0  # in and out each
    major_faults_per_s: int = 0
    psi_cpu_pct: float = 1.0
    psi_memory_pct: float = 0.0


@dataclass
class Case:
    name: str
    nics: dict[str, Nic] = field(default_factory=lambda: {"eth0": Nic(1000, 1500, 1.0), "eth1": Nic(), "eth2": Nic()})
    sockets: list[Socket] = field(
        default_factory=lambda: [Socket("10.0.1.1", 40001, "10.0.1.5"), Socket("10.0.2.1", 40002, "10.0.2.5")]
    )
    mounts: list[Mount] = field(default_factory=lambda: [Mount()])
    slot_table: int = 128
    pressure: Pressure = field(default_factory=Pressure)
    # The simulated database; None: no database on this host.
    workload: Optional[simulator.Workload] = None
    # Filer addresses whose dNFS channels carry nothing in the new capture (a path down).
    dead_paths: tuple[str, ...] = ()


# One filer with two paths, one per storage interface; constant load so the interval has one latency.
DNFS = simulator.Workload(
    instances=1,
    processes=8,
    read_iops=2000.0,
    write_iops=500.0,
    servers=(("filer1", ("10.0.1.5", "10.0.2.5")),),
    latency_us=500.0,
    load_phases=((3600.0, 1.0),),
)


def net_dev(case: Case, i: int) -> str:
    lines = [
        "Inter-|   Receive                                                |  Transmit",
        " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed",
    ]
    for name, n in sorted(case.nics.items()):
        rx = round(n.speed_mbit * 1e6 / 8 * n.util_pct / 100 * DT * i) + 10**9
        tx = rx // 10
        drops = round(n.saturation_per_s * DT * i)
        counters = [rx, rx // 8000, 0, drops, 0, 0, 0, 0, tx, tx // 8000, 0, 0, 0, 0, 0, 0]
        lines.append(f"{name:>6}: " + " ".join(str(c) for c in counters))
    return "\n".join(lines) + "\n"


def sockets_json(case: Case, i: int) -> str:
    found = []
    for number, s in enumerate(case.sockets, start=1):
        info = {
            "tcpi_rtt": round(s.srtt_ms * 1000),
            "tcpi_rttvar": round(s.srtt_ms * 250),
            "tcpi_min_rtt": round(s.min_rtt_ms * 1000),
            "tcpi_snd_cwnd": s.cwnd,
            "tcpi_snd_ssthresh": filer_tcp.INFINITE_SSTHRESH if s.ssthresh is None else s.ssthresh,
            "tcpi_unacked": 2,
            "tcpi_retransmits": s.retransmits,
            "tcpi_bytes_acked": 10**8 + round(s.kib_per_s * 1024 * DT * i) // 20,
            "tcpi_bytes_received": 10**9 + round(s.kib_per_s * 1024 * DT * i),
            "tcpi_segs_out": 10**6 + round(s.segs_out_per_s * DT * i),
            "tcpi_segs_in": 10**6 + round(s.segs_out_per_s * DT * i),
            "tcpi_total_retrans": 100 + round(s.retrans_per_s * DT * i),
        }
        found.append({"src": s.src, "sport": s.sport, "dst": s.dst, "dport": 2049, "cookie": number, "tcp_info": info})
    interfaces = {"192.168.0.10": "eth0", "10.0.1.1": "eth1", "10.0.2.1": "eth2"}
    return json.dumps({"sockets": found, "interfaces": interfaces}, indent=1, sort_keys=True) + "\n"


def mountstats_text(case: Case, i: int) -> str:
    out = []
    for m in case.mounts:
        ops = round(m.read_ops_per_s * DT * i) + 100_000
        queue = round(m.read_queue_ms * (ops - 100_000)) + 5_000
        rtt = round(m.read_rtt_ms * (ops - 100_000)) + 50_000
        exe = queue - 5_000 + rtt - 50_000 + 56_000
        sends = ops + 20_000
        backlog = round(m.backlog * (ops - 100_000)) + 1_000
        out += [
            f"device {m.device} mounted on {m.mountpoint} with fstype nfs statvers=1.1",
            f"\topts:\t{m.options}",
            f"\tage:\t{86000 + round(DT * i)}",
            "\tevents:\t" + " ".join(["0"] * 27),
            "\tbytes:\t" + " ".join(["0"] * 8),
            "\tRPC iostats version: 1.1  p/v: 100003/3 (nfs)",
            f"\txprt:\ttcp {m.sport} 1 1 0 0 {sends} {sends} 0 {sends * 2} {backlog} {m.max_slots} {sends} {sends}",
            "\tper-op statistics",
            "\t        NULL: 1 1 0 44 24 0 0 0 0",
            "\t     GETATTR: 20000 20000 0 2400000 2240000 40 8000 8400 0",
            f"\t        READ: {ops} {ops} 0 {ops * 120} {ops * 8312} {queue} {rtt} {exe} 0",
            "\t       WRITE: 0 0 0 0 0 0 0 0 0",
            "",
        ]
    return "\n".join(out) + "\n"


def stat_text(p: Pressure, i: int) -> str:
    # Per CPU per second: 100 ticks, split busy / iowait / idle (busy: 4/5 user, 1/5 system).
    elapsed = round(DT * TICKS * i)
    busy, iowait = round(elapsed * p.busy_pct / 100), round(elapsed * p.iowait_pct / 100)
    user, system = busy * 4 // 5, busy - busy * 4 // 5
    idle = elapsed - busy - iowait
    base = 10_000_000

    def cpu(name: str, n: int) -> str:
        return f"{name} {n * (base + user)} 0 {n * (base + system)} {n * (base * 4 + idle)} {n * (base // 10 + iowait)} 0 0 0 0 0"

    lines = [cpu("cpu ", p.cpus)] + [cpu(f"cpu{k}", 1) for k in range(p.cpus)]
    lines += ["intr 0", "ctxt 0", "btime 1794913600", "processes 100000"]
    lines += [f"procs_running {p.procs_running}", "procs_blocked 0", "softirq 0"]
    return "\n".join(lines) + "\n"


MEMINFO = (
    "MemTotal:       263842752 kB\nMemFree:         8000000 kB\nMemAvailable:   60000000 kB\n"
    "Buffers:          100000 kB\nCached:         50000000 kB\nSwapCached:        0 kB\n"
    "Active:         100000000 kB\nInactive:       20000000 kB\nShmem:          40000000 kB\n"
    "SwapTotal:      16777212 kB\nSwapFree:       16000000 kB\n"
)


def pressure_files(p: Pressure, i: int) -> dict[str, Optional[str]]:
    swap = 5_000 + round(p.swap_pages_per_s * DT * i)
    faults = 200_000 + round(p.major_faults_per_s * DT * i)
    psi_cpu = 10**9 + round(p.psi_cpu_pct / 100 * DT * 1e6 * i)
    psi_mem = 10**8 + round(p.psi_memory_pct / 100 * DT * 1e6 * i)

    def psi(total_some: int, total_full: Optional[int]) -> str:
        text = f"some avg10=0.00 avg60=0.00 avg300=0.00 total={total_some}\n"
        return text + ("" if total_full is None else f"full avg10=0.00 avg60=0.00 avg300=0.00 total={total_full}\n")

    return {
        pressure.STAT: stat_text(p, i),
        pressure.MEMINFO: MEMINFO,
        pressure.VMSTAT: f"nr_free_pages 2000000\npswpin {swap}\npswpout {swap}\npgmajfault {faults}\n",
        "proc/pressure/cpu": psi(psi_cpu, 0),
        "proc/pressure/memory": psi(psi_mem, psi_mem // 10),
        "proc/pressure/io": psi(10**7, 10**6),
    }


ROUTES = """Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eth0\t00000000\t0100A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0
eth0\t0000A8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0
eth1\t0001000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
eth2\t0002000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
"""
ADDRESSES = {
    "addresses": [
        {"interface": "lo", "address": "127.0.0.1", "prefix_len": 8},
        {"interface": "eth0", "address": "192.168.0.10", "prefix_len": 24},
        {"interface": "eth1", "address": "10.0.1.1", "prefix_len": 24},
        {"interface": "eth2", "address": "10.0.2.1", "prefix_len": 24},
    ]
}


def oracle_raw(case: Case, t: float, memory: simulator.Memory, last: bool) -> Raw:
    assert case.workload is not None
    raw = simulator.read(case.workload, t, memory)
    if last and case.dead_paths:
        document = json.loads(raw.text("oracle/results.json"))
        for row in document["results"]["dnfs_channels"]["rows"]:
            named = dict(zip(document["results"]["dnfs_channels"]["columns"], row))
            if named["PATH"] in case.dead_paths:
                for column in ("SENDS", "RECVS"):
                    row[document["results"]["dnfs_channels"]["columns"].index(column)] = 0
        return Raw({"oracle/results.json": json.dumps(document)}, raw.time, raw.wall_time)
    return raw


def raws(case: Case, i: int, memory: simulator.Memory, start: float = WALL_TIME) -> dict[str, Raw]:
    """Sample i (DT seconds apart) of a case whose sample 0 is at wall time `start`."""
    time, wall = BOOT_TIME + DT * i, start + DT * i

    def host(files: dict[str, Optional[str]]) -> Raw:
        return Raw(files={**files, BOOT_ID_PATH: BOOT_ID}, time=time, wall_time=wall)

    nic_files: dict[str, Optional[str]] = {nic.NET_DEV: net_dev(case, i)}
    for name, n in case.nics.items():
        paths = nic.sys_files(name)
        nic_files.update({paths["speed"]: f"{n.speed_mbit}\n", paths["duplex"]: "full\n", paths["mtu"]: f"{n.mtu}\n"})
    slots = {path: f"{value}\n" for path, value in zip(rpc.TUNABLES.values(), (case.slot_table, 65536, 16))}
    found = {
        nic.NAME: host(nic_files),
        filer_tcp.NAME: host({filer_tcp.SOCKETS: sockets_json(case, i)}),
        mountstats.NAME: host({mountstats.MOUNTSTATS: mountstats_text(case, i)}),
        rpc.NAME: host({rpc.RPC_NFS: f"net 0 0 0 0\nrpc {10**6 + 1000 * i} 0 0\n", **slots}),
        routes.NAME: host({routes.IPV4_ROUTES: ROUTES, routes.ADDRESSES: json.dumps(ADDRESSES, indent=1) + "\n"}),
        pressure.NAME: host(pressure_files(case.pressure, i)),
    }
    if case.workload is not None:
        found["oracle"] = oracle_raw(case, wall, memory, last=i == 1)
    return found


# Oracle's published average of 'db file sequential read' is the simulator's
# latency_us times about 1.08 (its waits fall in power-of-two buckets): the
# workload for a wanted average divides by that.
BUCKET_FACTOR = 1.08


def oracle_reads_ms(ms: float) -> float:
    """The simulator's latency_us that publishes Oracle single-block reads of about `ms`."""
    return round(ms * 1000 / BUCKET_FACTOR, 1)


# Imbalance x puts (1 + x) / (2 + x) of a filer's sends on its first of two
# paths (dnfsmon.simulator.Model): 94 % for x = 0.88 / 0.06.
IMBALANCE_94_6 = 0.88 / 0.06
# The combined case's load: 14,000 reads and 1,000 writes of 8 KiB per second.
COMBINED_IOPS = (14_000.0, 1_000.0)


def link_util_pct(share: float, speed_mbit: int) -> float:
    """The utilisation a path's share of the combined case's dNFS bytes gives its link."""
    bits_per_s = sum(COMBINED_IOPS) * 8192 * 8 * share
    return round(bits_per_s / (speed_mbit * 1e6) * 100, 1)


def cases() -> list[Case]:
    healthy = Case("healthy", workload=DNFS)
    two_paths = healthy.sockets
    # A filer 880 km of fibre away (or behind a firewall hop): every round trip
    # takes at least 8.8 ms; the filer adds 0.2 ms above that floor.
    far = [dataclasses.replace(s, srtt_ms=9.0, min_rtt_ms=8.8) for s in two_paths]
    far_nics = {"eth0": Nic(1000, 1500, 1.0), "eth1": Nic(util_pct=20.0), "eth2": Nic(util_pct=20.0)}
    share = 1 + IMBALANCE_94_6
    return [
        Case(
            "far-path",
            nics=far_nics,
            sockets=far,
            workload=dataclasses.replace(DNFS, latency_us=oracle_reads_ms(10.4)),
        ),
        Case(
            "far-path-under-10-ms",
            nics=far_nics,
            sockets=far,
            workload=dataclasses.replace(DNFS, latency_us=oracle_reads_ms(9.6)),
        ),
        Case(
            "busy-healthy-2ms-filer",
            # 62 % of 10 GbE queues tens of microseconds: srtt = 0.1 floor + 2.0 filer + 0.1.
            nics={"eth0": Nic(1000, 1500, 1.0), "eth1": Nic(util_pct=62.0), "eth2": Nic(util_pct=62.0)},
            sockets=[dataclasses.replace(s, srtt_ms=2.2, min_rtt_ms=0.1, segs_out_per_s=20000) for s in two_paths],
            workload=dataclasses.replace(DNFS, read_iops=20000.0, write_iops=5000.0, latency_us=oracle_reads_ms(2.6)),
        ),
        Case(
            "complete-fallback",
            # dNFS expected, yet every file is on the kernel client: no dNFS row anywhere.
            sockets=[Socket("10.0.1.1", 871, "10.0.1.5", srtt_ms=0.6, min_rtt_ms=0.1, segs_out_per_s=6000)],
            mounts=[Mount(read_ops_per_s=3000, read_queue_ms=0.05, read_rtt_ms=0.5)],
            workload=dataclasses.replace(DNFS, dnfs_enabled=False, read_iops=3000.0, latency_us=oracle_reads_ms(0.8)),
        ),
        Case(
            "imbalance-fills-nic",
            # 94 / 6 over two 1 GbE paths: the first path's link is nearly full and queues.
            nics={
                "eth0": Nic(1000, 1500, 1.0),
                "eth1": Nic(1000, util_pct=link_util_pct((1 + IMBALANCE_94_6) / (2 + IMBALANCE_94_6), 1000)),
                "eth2": Nic(1000, util_pct=link_util_pct(1 / (2 + IMBALANCE_94_6), 1000)),
            },
            sockets=[dataclasses.replace(two_paths[0], srtt_ms=3.0), two_paths[1]],
            workload=dataclasses.replace(
                DNFS,
                read_iops=COMBINED_IOPS[0],
                write_iops=COMBINED_IOPS[1],
                path_imbalance=share - 1,
                latency_us=oracle_reads_ms(3.3),
            ),
        ),
        Case("nothing-to-judge", sockets=[], mounts=[]),
        healthy,
        Case(
            "busy-but-healthy",
            nics={"eth0": Nic(1000, 1500, 1.0), "eth1": Nic(util_pct=70.0), "eth2": Nic(util_pct=68.0)},
            sockets=[dataclasses.replace(s, srtt_ms=0.35, segs_out_per_s=20000, retrans_per_s=10.0) for s in two_paths],
            pressure=Pressure(busy_pct=85.0, procs_running=10, psi_cpu_pct=8.0),
            workload=dataclasses.replace(DNFS, read_iops=20000.0, write_iops=5000.0, latency_us=1200.0),
        ),
        Case(
            "linux-client-16-slots",
            # Oracle on the kernel NFS client (no dNFS): 16 slots allow 16 / 50 ms = 320 reads/s.
            sockets=[Socket("10.0.1.1", 871, "10.0.1.5", srtt_ms=1.5, min_rtt_ms=0.1)],
            mounts=[Mount(read_ops_per_s=320, read_queue_ms=48.5, read_rtt_ms=1.5, backlog=15.5)],
            slot_table=16,
            workload=dataclasses.replace(
                DNFS, dnfs_enabled=False, read_iops=320.0, write_iops=0.0, latency_us=46_200.0
            ),
        ),
        Case(
            "filer-16-threads",
            sockets=[dataclasses.replace(s, srtt_ms=44.0, min_rtt_ms=0.1) for s in two_paths],
            workload=dataclasses.replace(DNFS, latency_us=43_500.0),
        ),
        Case(
            "queueing-on-the-path",
            nics={"eth0": Nic(1000, 1500, 1.0), "eth1": Nic(util_pct=40.0), "eth2": Nic(util_pct=40.0)},
            sockets=[dataclasses.replace(s, srtt_ms=6.0, min_rtt_ms=0.2, retrans_per_s=10.0) for s in two_paths],
            workload=dataclasses.replace(DNFS, latency_us=8_000.0),
        ),
        Case(
            "nic-saturated",
            nics={"eth0": Nic(1000, 1500, 1.0), "eth1": Nic(util_pct=96.0), "eth2": Nic(util_pct=20.0)},
            sockets=[dataclasses.replace(two_paths[0], srtt_ms=3.0), two_paths[1]],
            workload=dataclasses.replace(DNFS, latency_us=4_000.0),
        ),
        Case(
            "lossy-link",
            sockets=[
                dataclasses.replace(two_paths[0], srtt_ms=0.4, retrans_per_s=60.0, retransmits=2, cwnd=2, ssthresh=4),
                two_paths[1],
            ],
            workload=dataclasses.replace(DNFS, latency_us=4_000.0),
        ),
        Case(
            "dnfs-fallback",
            mounts=[Mount(read_ops_per_s=200)],
            workload=dataclasses.replace(DNFS, fallback_datafiles=2),
        ),
        Case("dnfs-path-imbalance", workload=dataclasses.replace(DNFS, path_imbalance=1.0)),
        Case("dnfs-path-down", sockets=two_paths[:1], workload=DNFS, dead_paths=("10.0.2.5",)),
        Case(
            "mtu-mismatch",
            nics={"eth0": Nic(1000, 1500, 1.0), "eth1": Nic(), "eth2": Nic(mtu=1500)},
            workload=DNFS,
        ),
        Case(
            "nfs-mount-options",
            mounts=[
                Mount(
                    options="rw,vers=3,rsize=8192,wsize=8192,namlen=255,acregmin=3,acregmax=60,acdirmin=30,"
                    "acdirmax=60,soft,proto=tcp,timeo=600,retrans=2,sec=sys,mountaddr=10.0.1.5"
                )
            ],
            workload=dataclasses.replace(DNFS, instances=2),
        ),
        Case(
            "host-pressure",
            pressure=Pressure(
                busy_pct=98.0, procs_running=32, swap_pages_per_s=300, major_faults_per_s=500, psi_memory_pct=25.0
            ),
            sockets=[dataclasses.replace(s, srtt_ms=0.4) for s in two_paths],
            workload=dataclasses.replace(DNFS, latency_us=15_000.0),
        ),
    ]


def write(case: Case, top: str) -> None:
    directory = os.path.join(top, case.name)
    memory = simulator.Memory()
    for i, when in enumerate(("old", "new")):
        target = os.path.join(directory, when)
        shutil.rmtree(target, ignore_errors=True)
        capture.write(target, HOST, raws(case, i, memory), {})


def main(argv: list[str]) -> int:
    top = argv[1] if len(argv) > 1 else HERE
    for case in cases():
        write(case, top)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
