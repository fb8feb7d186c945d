"""The doctor's rules: each names one layer to blame, from published points.

Every rule is a pure function of a Context (the points of one interval, the
joined paths and the latency ladder) returning findings. Thresholds are
named constants with their reasoning; docs/doctor.md lists them. The ids are
an interface: alerting keys on them, so they never change meaning.

dNFS does not use the kernel's sunrpc RPC slot table: Oracle keeps its own
channels per process. Evidence from mountstats and /proc/net/rpc therefore
applies to kernel NFS mounts only, and evidence from GV$DNFS_* to dNFS only;
each rule says which it reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Optional

from ..points import Point
from .join import Path, number, of, tag

WARNING = "warning"
CRITICAL = "critical"

# A single-block read slower than this hurts: on NFS over a LAN with a
# cached or flash-backed filer, reads take 0.5-5 ms; 10 ms is a spinning
# disk's seek, the point where users notice.
ORACLE_SLOW_MS = 10.0
# Fewer kernel NFS operations per second than this are too few to judge an average by.
MIN_OPS_PER_S = 10.0
# Kernel NFS: time queued for a transport slot far above the round trip
# means the client, not the network or the filer, holds the RPCs back.
QUEUE_MIN_MS = 2.0
QUEUE_OVER_RTT = 3.0
# Mean RPCs waiting for a slot per RPC sent (mountstats bklog): at 1 and
# above every RPC finds another waiting before it.
BACKLOG_MIN = 1.0
# The round trip "explains" Oracle's latency when it is at least half of it.
EXPLAINED_SHARE = 0.5
# A NIC above this utilisation queues packets (M/M/1: the wait doubles
# the service time at 50 %); below it the wire is called idle.
NIC_BUSY_PCT = 50.0
# Above this a full-duplex link is saturated: queues grow without bound.
NIC_SATURATED_PCT = 90.0
# nicstat Sat events (errors, drops, fifo, carrier) per second that mean the NIC is overrun.
NIC_SATURATION_EVENTS_PER_S = 10.0
# Retransmissions: a healthy LAN retransmits well under 0.1 % of segments;
# 1 % cuts a TCP connection's throughput several times (Mathis et al. 1997).
RETRANS_NOISE_PCT = 0.1
RETRANS_PCT = 1.0
# Two consecutive unrecovered retransmissions (tcpi_retransmits) mean a connection is stalled now.
CONSECUTIVE_RETRANSMITS = 2
# A congestion window this small (segments) after a loss (ssthresh known) has collapsed.
CWND_COLLAPSED_SEGMENTS = 4
# The smoothed RTT is inflated by queueing when it is this many times the
# path's minimum and at least RTT_EXCESS_MIN_MS above it.
RTT_INFLATION = 4.0
RTT_EXCESS_MIN_MS = 1.0
# dNFS spreads a filer's I/O evenly over its paths; a difference in share
# larger than this many percentage points is an imbalance.
IMBALANCE_POINTS = 25.0
# Mount options: Oracle asks for rsize and wsize of 32768 or more for data
# files (Oracle Database Installation Guide for Linux, "Mount Options for
# Oracle files ... on NAS devices"); smaller splits each multiblock read.
MIN_TRANSFER_BYTES = 32768
# Host pressure: more runnable tasks per CPU than this wait for a CPU.
RUN_QUEUE_PER_CPU = 1.5
# Swapping pages in or out per second, or major faults per second, that slow processes down.
SWAP_PAGES_PER_S = 100.0
MAJOR_FAULTS_PER_S = 200.0
# PSI: share of time some task stalled for a CPU or for memory.
PSI_CPU_SOME_PCT = 20.0
PSI_MEMORY_SOME_PCT = 10.0
# Oracle's latency is "far above" the round trip at this factor.
HOST_OVER_RTT = 3.0


@dataclass
class Finding:
    id: str
    layer: str
    severity: str
    summary: str
    evidence: dict[str, float]
    remedy: str
    # True when the evidence comes from the simulated database.
    simulated: bool = False

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "layer": self.layer,
            "severity": self.severity,
            "summary": self.summary,
            "evidence": self.evidence,
            "remedy": self.remedy,
            "simulated": self.simulated,
        }


@dataclass
class Context:
    points: list[Point]
    paths: list[Path]
    ladder: dict[str, Optional[float]]
    simulated_database: bool = False
    findings: list[Finding] = field(default_factory=list)

    def of(self, measurement: str) -> list[Point]:
        return of(self.points, measurement)


def _evidence(**values: Optional[float]) -> dict[str, float]:
    return {name: round(value, 3) for name, value in values.items() if value is not None}


def _is(value: Optional[float], threshold: float) -> bool:
    """value >= threshold, False when unknown."""
    return value is not None and value >= threshold


def client_rpc_slots(ctx: Context) -> list[Finding]:
    """Kernel NFS mounts only: READ/WRITE queued far longer than their round trip, or a backlog."""
    found = []
    rpc_points = ctx.of("dnfsmon_rpc")
    rpc = rpc_points[0] if rpc_points else None
    for mount in ctx.of("dnfsmon_nfs_mount"):
        ops = [
            p
            for p in ctx.of("dnfsmon_nfs_op")
            if tag(p, "mountpoint") == tag(mount, "mountpoint")
            and tag(p, "op") in ("READ", "WRITE")
            and _is(number(p, "ops_per_s"), MIN_OPS_PER_S)
        ]
        if not ops:
            continue
        worst = max(ops, key=lambda p: number(p, "avg_queue_ms") or 0.0)
        queue, rtt = number(worst, "avg_queue_ms"), number(worst, "avg_rtt_ms")
        backlog = number(mount, "avg_backlog")
        queued = queue is not None and rtt is not None and queue >= max(QUEUE_MIN_MS, QUEUE_OVER_RTT * rtt)
        if queued or _is(backlog, BACKLOG_MIN):
            slots = number(rpc, "tcp_slot_table_entries")
            found.append(
                Finding(
                    "client-rpc-slots",
                    "client",
                    CRITICAL,
                    f"kernel NFS mount {tag(mount, 'mountpoint')}: {tag(worst, 'op')} waits {queue:.1f} ms for an RPC "
                    f"slot against a {rtt:.1f} ms round trip: the client holds the I/O back",
                    _evidence(
                        queue_ms=queue,
                        rtt_ms=rtt,
                        exe_ms=number(worst, "avg_exe_ms"),
                        ops_per_s=number(worst, "ops_per_s"),
                        avg_backlog=backlog,
                        max_slots=number(mount, "max_slots"),
                        tcp_slot_table_entries=slots,
                    ),
                    "raise sunrpc.tcp_slot_table_entries (e.g. 128, in /etc/modprobe.d/sunrpc.conf and sysctl) and "
                    "remount, or use nconnect to add transports; or move the data files to dNFS, which has no slot table",
                )
            )
    return found


def filer_latency(ctx: Context) -> list[Finding]:
    """dNFS and kernel NFS: Oracle slow, the round trip slow too, the wire idle: the filer answers late."""
    ld = ctx.ladder
    oracle, srtt, util, retrans = ld["oracle_read_avg_ms"], ld["tcp_srtt_ms"], ld["nic_util_pct"], ld["retrans_pct"]
    if oracle is None or srtt is None or oracle < ORACLE_SLOW_MS or srtt < EXPLAINED_SHARE * oracle:
        return []
    if _is(util, NIC_BUSY_PCT) or _is(retrans, RETRANS_NOISE_PCT):
        return []
    return [
        Finding(
            "filer-latency",
            "filer",
            CRITICAL,
            f"Oracle single-block reads take {oracle:.1f} ms and the TCP round trip to the filer {srtt:.1f} ms "
            "while the network is idle: the filer answers late",
            _evidence(
                oracle_read_avg_ms=oracle,
                tcp_srtt_ms=srtt,
                tcp_min_rtt_ms=ld["tcp_min_rtt_ms"],
                nic_util_pct=util,
                retrans_pct=retrans,
            ),
            "look at the filer: its NFS server threads (nfsd count), CPU and disk latency; compare with the "
            "filer's own per-operation latency",
            simulated=ctx.simulated_database,
        )
    ]


def network_latency(ctx: Context) -> list[Finding]:
    """dNFS and kernel NFS: TCP's smoothed RTT far above the path's minimum while the wire is busy or lossy."""
    found = []
    for path in ctx.paths:
        srtt, floor = number(path.tcp, "srtt_avg_ms"), number(path.tcp, "min_rtt_ms")
        if srtt is None or floor is None or srtt < RTT_INFLATION * floor or srtt - floor < RTT_EXCESS_MIN_MS:
            continue
        util, retrans = number(path.nic, "util_pct"), number(path.tcp, "retrans_pct")
        if not (_is(util, NIC_BUSY_PCT) or _is(retrans, RETRANS_NOISE_PCT)):
            continue
        found.append(
            Finding(
                "network-latency",
                "network",
                WARNING,
                f"path {path.local_address or '?'} -> {path.server} on {path.interface or '?'}: smoothed RTT "
                f"{srtt:.2f} ms against a {floor:.2f} ms minimum: packets queue on the way",
                _evidence(srtt_ms=srtt, min_rtt_ms=floor, nic_util_pct=util, retrans_pct=retrans),
                "find the queue: the NIC (see nic-saturation), the switch ports (drops, pause frames) or a "
                "routed hop; keep the filer traffic on a dedicated, unrouted network",
            )
        )
    return found


def nic_saturation(ctx: Context) -> list[Finding]:
    """dNFS and kernel NFS: an interface carrying the filer traffic near its line rate or overrun."""
    found = []
    seen = set()
    for path in ctx.paths:
        if path.nic is None or path.interface in seen:
            continue
        seen.add(path.interface)
        util, sat = number(path.nic, "util_pct"), number(path.nic, "saturation_per_s")
        if _is(util, NIC_SATURATED_PCT) or _is(sat, NIC_SATURATION_EVENTS_PER_S):
            found.append(
                Finding(
                    "nic-saturation",
                    "network",
                    WARNING,
                    f"interface {path.interface} carrying the filer traffic is {util or 0:.0f} % busy",
                    _evidence(
                        util_pct=util,
                        saturation_per_s=sat,
                        rx_kib_per_s=number(path.nic, "rx_kib_per_s"),
                        tx_kib_per_s=number(path.nic, "tx_kib_per_s"),
                        speed_mbit=number(path.nic, "speed_mbit"),
                    ),
                    "add paths on other interfaces (oranfstab PATH/LOCAL for dNFS, nconnect or more mounts for "
                    "kernel NFS) or a faster link; check the speed the link negotiated",
                )
            )
    return found


def tcp_retransmissions(ctx: Context) -> list[Finding]:
    """dNFS and kernel NFS: connections to the filer losing segments, stalled, or with a collapsed window."""
    found = []
    for path in ctx.paths:
        t = path.tcp
        pct, stalled = number(t, "retrans_pct"), number(t, "retransmits_max")
        cwnd, ssthresh = number(t, "cwnd_min_segments"), number(t, "ssthresh_min_segments")
        collapsed = cwnd is not None and ssthresh is not None and cwnd <= CWND_COLLAPSED_SEGMENTS
        if _is(pct, RETRANS_PCT) or _is(stalled, CONSECUTIVE_RETRANSMITS) or collapsed:
            found.append(
                Finding(
                    "tcp-retransmissions",
                    "network",
                    WARNING,
                    f"path {path.local_address or '?'} -> {path.server}: {pct or 0:.2f} % of segments retransmitted",
                    _evidence(
                        retrans_pct=pct,
                        retrans_segs_per_s=number(t, "retrans_segs_per_s"),
                        retransmits_max=stalled,
                        cwnd_min_segments=cwnd,
                        ssthresh_min_segments=ssthresh,
                    ),
                    "look for drops on the way: NIC and switch error counters, duplex or MTU mismatches, a "
                    "faulty cable or optic",
                )
            )
    return found


def dnfs_fallback(ctx: Context) -> list[Finding]:
    """dNFS: data files not opened through dNFS, or kernel NFS READ/WRITE on an export dNFS serves."""
    found = []
    in_use = bool(ctx.of("dnfsmon_dnfs_server")) or any(
        _is(number(p, "dnfs_files"), 1) for p in ctx.of("dnfsmon_dnfs_coverage")
    )
    if not in_use:
        return []  # a database without dNFS at all is on kernel NFS by choice
    for point in ctx.of("dnfsmon_dnfs_coverage"):
        pct = number(point, "dnfs_pct")
        if tag(point, "file_type") == "Data File" and pct is not None and pct < 100:
            found.append(
                Finding(
                    "dnfs-fallback",
                    "client",
                    CRITICAL,
                    f"instance {tag(point, 'instance')}: only {pct:.0f} % of data files are read through dNFS",
                    _evidence(files=number(point, "files"), dnfs_files=number(point, "dnfs_files"), dnfs_pct=pct),
                    "read the alert log for 'Direct NFS' messages; check oranfstab (server, path, export, mount) "
                    "and that the export is mounted as oranfstab says",
                    simulated=ctx.simulated_database,
                )
            )
    exports = {(tag(p, "export")) for p in ctx.of("dnfsmon_dnfs_server")}
    for op in ctx.of("dnfsmon_nfs_op"):
        if tag(op, "export") in exports and tag(op, "op") in ("READ", "WRITE"):
            ops = number(op, "ops_per_s")
            if _is(ops, MIN_OPS_PER_S):
                found.append(
                    Finding(
                        "dnfs-fallback",
                        "client",
                        CRITICAL,
                        f"kernel NFS {tag(op, 'op')} on {tag(op, 'mountpoint')}, an export dNFS serves: "
                        "I/O bypasses dNFS",
                        _evidence(kernel_ops_per_s=ops),
                        "find the processes doing it (they are not using dNFS): an instance without the dNFS "
                        "library enabled, or files not covered by oranfstab",
                        simulated=ctx.simulated_database,
                    )
                )
    return found


def _channels_by_filer(ctx: Context) -> dict[tuple[str, str], list[Point]]:
    groups: dict[tuple[str, str], list[Point]] = {}
    for point in ctx.of("dnfsmon_dnfs_channel"):
        groups.setdefault((tag(point, "instance"), tag(point, "server")), []).append(point)
    return groups


def dnfs_path_imbalance(ctx: Context) -> list[Finding]:
    """dNFS: a filer's paths carrying unequal shares of its sends."""
    found = []
    for (instance, server), channels in sorted(_channels_by_filer(ctx).items()):
        shares = [number(c, "share_pct") for c in channels if _is(number(c, "sends"), 1)]
        known = [s for s in shares if s is not None]
        if len(known) >= 2 and max(known) - min(known) >= IMBALANCE_POINTS:
            found.append(
                Finding(
                    "dnfs-path-imbalance",
                    "client",
                    WARNING,
                    f"instance {instance}, filer {server}: path shares from {min(known):.0f} % to {max(known):.0f} %",
                    _evidence(max_share_pct=max(known), min_share_pct=min(known), paths=len(known)),
                    "check oranfstab's PATH/LOCAL pairs and each path's link speed and errors; dNFS balances "
                    "over the paths it can use",
                    simulated=ctx.simulated_database,
                )
            )
    return found


def dnfs_path_down(ctx: Context) -> list[Finding]:
    """dNFS: a configured path with no sends while its siblings carry traffic, or reconnecting."""
    found = []
    for (instance, server), channels in sorted(_channels_by_filer(ctx).items()):
        busy = sum(number(c, "sends") or 0 for c in channels)
        for channel in channels:
            sends, reconnects = number(channel, "sends") or 0, number(channel, "reconnects") or 0
            if (sends == 0 and busy > 0) or reconnects > 0:
                found.append(
                    Finding(
                        "dnfs-path-down",
                        "network",
                        CRITICAL,
                        f"instance {instance}, filer {server}: path {tag(channel, 'local') or '?'} -> "
                        f"{tag(channel, 'path')} "
                        + ("reconnects" if reconnects else "carries nothing while the others do"),
                        _evidence(sends=sends, filer_sends=busy, reconnects=reconnects),
                        "check the link and addresses of that path (ip link, ping from LOCAL to PATH) and the "
                        "alert log; dNFS retries a failed path periodically",
                        simulated=ctx.simulated_database,
                    )
                )
    return found


def mtu_mismatch(ctx: Context) -> list[Finding]:
    """dNFS and kernel NFS: interfaces carrying dNFS, or paths to one filer, with different MTUs."""
    groups: dict[str, list[Path]] = {"dNFS": [p for p in ctx.paths if p.dnfs]}
    for path in ctx.paths:
        groups.setdefault(f"filer {path.server}", []).append(path)
    found = []
    reported = set()
    for name, members in groups.items():
        mtus = {p.interface: number(p.nic, "mtu_bytes") for p in members if p.nic is not None}
        known = {i: m for i, m in mtus.items() if m is not None}
        if len(set(known.values())) < 2 or frozenset(known.items()) in reported:
            continue
        reported.add(frozenset(known.items()))
        found.append(
            Finding(
                "mtu-mismatch",
                "network",
                WARNING,
                f"interfaces carrying {name} differ in MTU: "
                + ", ".join(f"{i} {int(m)}" for i, m in sorted(known.items())),
                _evidence(mtu_min=min(known.values()), mtu_max=max(known.values()), interfaces=len(known)),
                "set one MTU on every interface, switch port and filer port of the storage network (9000 for "
                "jumbo frames end to end, else 1500)",
            )
        )
    return found


def nfs_mount_options(ctx: Context) -> list[Finding]:
    """Kernel NFS mounts: small rsize/wsize, soft, udp; attribute caching on RAC data file mounts."""
    dnfs_exports = {tag(p, "export") for p in ctx.of("dnfsmon_dnfs_server")}
    status = ctx.of("dnfsmon_oracle_status")
    rac = any(_is(number(p, "instances"), 2) for p in status)
    found = []
    for mount in ctx.of("dnfsmon_nfs_mount"):
        rsize, wsize = number(mount, "rsize_bytes"), number(mount, "wsize_bytes")
        hard, noac = mount.fields.get("hard"), mount.fields.get("noac")
        udp = tag(mount, "proto") == "udp"
        acregmax = number(mount, "acregmax_s")
        problems = []
        if rsize is not None and rsize < MIN_TRANSFER_BYTES:
            problems.append(f"rsize={int(rsize)}")
        if wsize is not None and wsize < MIN_TRANSFER_BYTES:
            problems.append(f"wsize={int(wsize)}")
        if hard is False:
            problems.append("soft")
        if udp:
            problems.append("proto=udp")
        # Oracle on RAC needs actimeo=0 (or noac) on data file mounts so every node sees
        # the others' file size changes (Oracle Grid Infrastructure Installation Guide, NFS mount options).
        datafiles = tag(mount, "export") in dnfs_exports
        if rac and datafiles and noac is not True and acregmax:
            problems.append(f"actimeo not 0 (acregmax={int(acregmax)})")
        if problems:
            found.append(
                Finding(
                    "nfs-mount-options",
                    "client",
                    WARNING,
                    f"NFS mount {tag(mount, 'mountpoint')}: " + ", ".join(problems),
                    _evidence(
                        rsize_bytes=rsize,
                        wsize_bytes=wsize,
                        hard=None if hard is None else float(bool(hard)),
                        udp=float(udp),
                        acregmax_s=acregmax,
                    ),
                    "remount with Oracle's options for data files: rw,bg,hard,nointr,tcp,vers=3 (or 4.1),"
                    "rsize=1048576,wsize=1048576,timeo=600 and actimeo=0 on RAC",
                )
            )
    return found


def host_pressure(ctx: Context) -> list[Finding]:
    """dNFS and kernel NFS: Oracle far slower than the round trip while the host runs out of CPU or memory."""
    oracle, srtt = ctx.ladder["oracle_read_avg_ms"], ctx.ladder["tcp_srtt_ms"]
    if oracle is None or srtt is None or oracle < max(ORACLE_SLOW_MS, HOST_OVER_RTT * srtt):
        return []
    found = []
    for point in ctx.of("dnfsmon_host_pressure"):
        runq = number(point, "run_queue_per_cpu")
        swap_in, swap_out = number(point, "swap_in_pages_per_s"), number(point, "swap_out_pages_per_s")
        swapping = None if swap_in is None and swap_out is None else (swap_in or 0) + (swap_out or 0)
        faults = number(point, "major_faults_per_s")
        psi_cpu, psi_mem = number(point, "psi_cpu_some_pct"), number(point, "psi_memory_some_pct")
        if not (
            _is(runq, RUN_QUEUE_PER_CPU)
            or _is(swapping, SWAP_PAGES_PER_S)
            or _is(faults, MAJOR_FAULTS_PER_S)
            or _is(psi_cpu, PSI_CPU_SOME_PCT)
            or _is(psi_mem, PSI_MEMORY_SOME_PCT)
        ):
            continue
        found.append(
            Finding(
                "host-pressure",
                "host",
                CRITICAL,
                f"Oracle single-block reads take {oracle:.1f} ms against a {srtt:.1f} ms round trip while the "
                "database host is short of CPU or memory",
                _evidence(
                    oracle_read_avg_ms=oracle,
                    tcp_srtt_ms=srtt,
                    run_queue_per_cpu=runq,
                    swap_pages_per_s=swapping,
                    major_faults_per_s=faults,
                    psi_cpu_some_pct=psi_cpu,
                    psi_memory_some_pct=psi_mem,
                ),
                "find what uses the CPU or memory (top, vmstat 1); size the SGA and PGA to the host's memory, "
                "use HugePages for the SGA",
                simulated=ctx.simulated_database,
            )
        )
    return found


# Every rule, in the order findings are printed. The ids are documented in docs/doctor.md.
RULES: dict[str, Callable[[Context], list[Finding]]] = {
    "client-rpc-slots": client_rpc_slots,
    "filer-latency": filer_latency,
    "network-latency": network_latency,
    "nic-saturation": nic_saturation,
    "tcp-retransmissions": tcp_retransmissions,
    "dnfs-fallback": dnfs_fallback,
    "dnfs-path-imbalance": dnfs_path_imbalance,
    "dnfs-path-down": dnfs_path_down,
    "mtu-mismatch": mtu_mismatch,
    "nfs-mount-options": nfs_mount_options,
    "host-pressure": host_pressure,
}
