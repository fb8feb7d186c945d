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
from typing import Optional

from ..points import Point
from ..records import Record
from . import ladder
from .join import Path, number, of, path_name, tag

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
# The part of the round trip above the path's floor "explains" Oracle's
# latency when it is at least this share of it.
EXPLAINED_SHARE = 0.5
# The queueing delay a link can add, by M/M/1 (Kleinrock, Queueing Systems
# vol. 1, 3.2): the mean wait is rho / (1 - rho) service times of the unit
# that queues. Linux hands the qdisc and the NIC segments of up to 64 KiB
# (GSO/TSO, GSO_MAX_SIZE in include/linux/netdevice.h): at 10 Gbit/s one
# takes 52 us, so 62 % queues 86 us and 96 % 1.3 ms. Utilisation is capped
# just below 1, where the model (and the queue) has no bound.
QUEUE_UNIT_BYTES = 65536
QUEUE_MAX_UTIL_PCT = 99.0
# Bursts queue more than the model's random arrivals: a link whose expected
# queueing is at least this share of the RTT's excess over the floor is taken
# to explain it; at 62 % of 10 GbE the model gives 4 % of a 2 ms excess.
QUEUE_EXPLAINS_SHARE = 0.25
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
# The smoothed RTT is above the path's floor by at least this much before
# anything on the way (a queue, loss recovery) is blamed for it.
RTT_EXCESS_MIN_MS = 1.0
# A storage network's round-trip floor (tcpi_min_rtt) is tens to hundreds of
# microseconds in one site: a switch hop adds microseconds, light in fibre
# 1 ms per 100 km there and back. A floor of this much is distance (a DR site,
# a metro cluster, another zone) or a routed or firewalled hop.
FAR_PATH_MIN_RTT_MS = 1.0
# ... and it is worth a finding when it is this share of the I/O's latency
# (Oracle's single-block read, else the kernel NFS READ round trip).
FAR_PATH_SHARE = 0.5
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


class Finding(Record):
    """One rule's finding (a plain class: see dnfsmon.records)."""

    __slots__ = (
        "evidence",
        "explained_by",
        "explains",
        "id",
        "layer",
        "remedy",
        "scope",
        "severity",
        "simulated",
        "summary",
    )

    def __init__(
        self,
        id: str,
        layer: str,
        severity: str,
        summary: str,
        evidence: dict[str, float],
        remedy: str,
        simulated: bool = False,
        scope: Optional[dict[str, str]] = None,
        explains: Optional[list[tuple[str, str]]] = None,
        explained_by: str = "",
    ):
        self.id = id
        self.layer = layer
        self.severity = severity
        self.summary = summary
        self.evidence = evidence
        self.remedy = remedy
        # True when the evidence comes from the simulated database.
        self.simulated = simulated
        # What the finding is about, for linking causes and effects (diagnosis.causes):
        # "path", "interface", "mountpoint", "instance", "server" as they apply.
        self.scope: dict[str, str] = {} if scope is None else scope
        # Filled by diagnosis.causes: the ids of findings this one explains, each with the
        # evidence that links them, and the finding that explains this one.
        self.explains: list[tuple[str, str]] = [] if explains is None else explains
        self.explained_by = explained_by

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "layer": self.layer,
            "severity": self.severity,
            "summary": self.summary,
            "evidence": self.evidence,
            "remedy": self.remedy,
            "simulated": self.simulated,
            "likely_cause": bool(self.explains) and not self.explained_by,
            "explains": [{"id": finding_id, "link": link} for finding_id, link in self.explains],
            "explained_by": self.explained_by,
        }


class Context(Record):
    """What the rules read, and the findings they add (a plain class: see dnfsmon.records)."""

    __slots__ = ("dnfs_expected", "findings", "inventory_age_s", "ladder", "paths", "points", "simulated_database")

    def __init__(
        self,
        points: list[Point],
        paths: list[Path],
        ladder: dict[str, Optional[float]],
        simulated_database: bool = False,
        findings: Optional[list[Finding]] = None,
        dnfs_expected: Optional[bool] = None,
        inventory_age_s: Optional[float] = None,
    ):
        self.points = points
        self.paths = paths
        self.ladder = ladder
        self.simulated_database = simulated_database
        self.findings: list[Finding] = [] if findings is None else findings
        # [oracle] dnfs_expected: True or False when the config says, None to judge from the database.
        self.dnfs_expected = dnfs_expected
        # Seconds since the inventory (filers, coverage) in the points was read; None when read this interval.
        self.inventory_age_s = inventory_age_s

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
    # The busy READ/WRITE operations grouped by mount once: a host of 1000 mounts has some 30 000
    # operation points, and a scan of them per mount cost 20 s of CPU a sample.
    busy_ops: dict[str, list[Point]] = {}
    for p in ctx.of("dnfsmon_nfs_op"):
        if tag(p, "op") in ("READ", "WRITE") and _is(number(p, "ops_per_s"), MIN_OPS_PER_S):
            busy_ops.setdefault(tag(p, "mountpoint"), []).append(p)
    for mount in ctx.of("dnfsmon_nfs_mount"):
        ops = busy_ops.get(tag(mount, "mountpoint"), [])
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
                    scope={"mountpoint": tag(mount, "mountpoint")},
                )
            )
    return found


def link_queue_ms(nic: Optional[Point]) -> Optional[float]:
    """The mean queueing delay the interface's utilisation can add (QUEUE_UNIT_BYTES segments, M/M/1),
    None when its speed or utilisation is unknown."""
    util, speed = number(nic, "util_pct"), number(nic, "speed_mbit")
    if util is None or not speed:
        return None
    rho = min(util, QUEUE_MAX_UTIL_PCT) / 100
    unit_ms = QUEUE_UNIT_BYTES * 8 / (speed * 1000)  # bits / (bits per ms)
    return rho / (1 - rho) * unit_ms


def _largest(values: list[Optional[float]]) -> Optional[float]:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def filer_latency(ctx: Context) -> list[Finding]:
    """dNFS and kernel NFS: Oracle slow, and the round trip's part above the path's floor, which
    neither distance nor the link's queue explains, is most of it: the filer answers late.

    TCP samples its RTT from the ACK of a request, which the filer sends with
    its reply when the reply comes before its delayed-ACK timer: the smoothed
    RTT holds the filer's time. The minimum RTT does not (the kernel's filter
    keeps the quickest ACKs and skips those that may be delayed), so
    srtt - min RTT is the filer's time plus queueing on the way. Where Oracle
    reads through the kernel client, its READ round trip (request sent to
    reply received, net/sunrpc) replaces srtt.
    """
    ld = ctx.ladder
    oracle, floor, retrans = ld["oracle_read_avg_ms"], ld["tcp_min_rtt_ms"], ld["retrans_pct"]
    lanes = ladder.carrying(ctx.paths)
    kernel = bool(lanes) and not any(p.dnfs for p in lanes) and ld["nfs_rtt_ms"] is not None
    round_trip = ld["nfs_rtt_ms"] if kernel else ld["tcp_srtt_ms"]
    if oracle is None or round_trip is None or oracle < ORACLE_SLOW_MS:
        return []
    if _is(retrans, RETRANS_NOISE_PCT):
        return []  # loss recovery inflates the round trip: network-latency and tcp-retransmissions judge it
    above_floor = round_trip - (floor or 0.0)
    queue = _largest([link_queue_ms(p.nic) for p in lanes])
    filer = above_floor - (queue or 0.0)
    if filer < EXPLAINED_SHARE * oracle:
        return []
    what = "kernel NFS READ round trip" if kernel else "TCP round trip"
    return [
        Finding(
            "filer-latency",
            "filer",
            CRITICAL,
            f"Oracle single-block reads take {oracle:.1f} ms; the {what} to the filer is {round_trip:.1f} ms, "
            f"{above_floor:.1f} ms above the path's {floor or 0:.2f} ms floor, and the link's queue explains "
            f"{queue or 0:.2f} ms of it: the filer answers late",
            _evidence(
                oracle_read_avg_ms=oracle,
                round_trip_ms=round_trip,
                tcp_srtt_ms=ld["tcp_srtt_ms"],
                tcp_min_rtt_ms=floor,
                filer_ms=filer,
                link_queue_ms=queue,
                nic_util_pct=ld["nic_util_pct"],
                retrans_pct=retrans,
            ),
            "look at the filer: its NFS server threads (nfsd count), CPU and disk latency; compare with the "
            "filer's own per-operation latency",
            simulated=ctx.simulated_database,
        )
    ]


def network_latency(ctx: Context) -> list[Finding]:
    """dNFS and kernel NFS, per path: a far path (its floor is most of every I/O), or a round trip
    above the floor that the link's queue or loss on the way explains."""
    found = []
    io_ms = ctx.ladder["oracle_read_avg_ms"]
    if io_ms is None:
        io_ms = ctx.ladder["nfs_rtt_ms"]
    for path in ctx.paths:
        srtt, floor = number(path.tcp, "srtt_avg_ms"), number(path.tcp, "min_rtt_ms")
        if srtt is None or floor is None:
            continue
        util, retrans = number(path.nic, "util_pct"), number(path.tcp, "retrans_pct")
        where = f"path {path.local_address or '?'} -> {path.server} on {path.interface or '?'}"
        scope = {"path": path_name(path), "interface": path.interface}
        if floor >= FAR_PATH_MIN_RTT_MS and (io_ms is None or floor >= FAR_PATH_SHARE * io_ms):
            share = "" if io_ms is None else f", {floor:.2f} of the {io_ms:.2f} ms each read takes"
            found.append(
                Finding(
                    "network-latency",
                    "network",
                    WARNING,
                    f"{where}: the round trip never goes below {floor:.2f} ms (minimum RTT; smoothed "
                    f"{srtt:.2f} ms): the path's distance is what every I/O waits for{share}, not the filer",
                    _evidence(srtt_ms=srtt, min_rtt_ms=floor, io_ms=io_ms, nic_util_pct=util, retrans_pct=retrans),
                    "the distance is the cause, and no filer or host tuning lowers it: put the storage in the "
                    "database's site (a DR or metro filer costs this on every read), or take routed and "
                    "firewalled hops off the storage path (traceroute from the LOCAL address)",
                    scope=scope,
                )
            )
            continue
        excess = srtt - floor
        if excess < RTT_EXCESS_MIN_MS:
            continue
        queue = link_queue_ms(path.nic)
        queueing = queue is not None and queue >= QUEUE_EXPLAINS_SHARE * excess
        if not (queueing or _is(retrans, RETRANS_NOISE_PCT)):
            continue  # the link cannot queue that long and nothing is lost: the excess is the filer's
        found.append(
            Finding(
                "network-latency",
                "network",
                WARNING,
                f"{where}: smoothed RTT {srtt:.2f} ms against a {floor:.2f} ms minimum: packets queue on the way"
                + (f" (a link {util:.0f} % busy queues about {queue:.2f} ms)" if queueing and util is not None else "")
                + (f" and {retrans:.2f} % are resent" if _is(retrans, RETRANS_NOISE_PCT) else ""),
                _evidence(srtt_ms=srtt, min_rtt_ms=floor, link_queue_ms=queue, nic_util_pct=util, retrans_pct=retrans),
                "find the queue: the NIC (see nic-saturation), the switch ports (drops, pause frames) or a "
                "routed hop; keep the filer traffic on a dedicated, unrouted network",
                scope=scope,
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
                    scope={"interface": path.interface, "util_pct": f"{util or 0:.0f}"},
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
                    scope={"path": path_name(path), "interface": path.interface},
                )
            )
    return found


def _kernel_data_traffic(ctx: Context) -> list[tuple[Point, str, float]]:
    """Kernel NFS mounts doing READ or WRITE (MIN_OPS_PER_S or more): (op point, "READ"/"WRITE", ops/s)."""
    found = []
    for op in ctx.of("dnfsmon_nfs_op"):
        ops = number(op, "ops_per_s")
        if tag(op, "op") in ("READ", "WRITE") and ops is not None and ops >= MIN_OPS_PER_S:
            found.append((op, tag(op, "op"), ops))
    return found


def _mounts_named(traffic: list[tuple[Point, str, float]]) -> str:
    """Where the kernel client carries data: "/u02/oradata1 (10.0.1.5:/vol/oradata1, 3000 READ/s)"."""
    per_mount: dict[tuple[str, str, str], list[str]] = {}
    for op, name, ops in traffic:
        key = (tag(op, "mountpoint"), tag(op, "server"), tag(op, "export"))
        per_mount.setdefault(key, []).append(f"{ops:.0f} {name}/s")
    return "; ".join(
        f"{mountpoint} ({server}:{export}, {', '.join(rates)})"
        for (mountpoint, server, export), rates in sorted(per_mount.items())
    )


def dnfs_fallback(ctx: Context) -> list[Finding]:
    """dNFS: data files not opened through dNFS, or kernel NFS READ/WRITE on an export dNFS serves.

    Whether dNFS is expected: [oracle] dnfs_expected (ctx.dnfs_expected) when
    set, else when the database shows dNFS at work (a GV$DNFS_SERVERS row or a
    data file whose ACCESS_METHOD is DNFS_LIB). A database whose every file
    fell back shows neither, so only the setting makes that a finding.
    """
    found = []
    in_use = bool(ctx.of("dnfsmon_dnfs_server")) or any(
        _is(number(p, "dnfs_files"), 1) for p in ctx.of("dnfsmon_dnfs_coverage")
    )
    expected = in_use if ctx.dnfs_expected is None else ctx.dnfs_expected
    if not expected:
        return []  # a database without dNFS at all is on kernel NFS by choice
    exports = {tag(p, "export") for p in ctx.of("dnfsmon_dnfs_server")}
    traffic = _kernel_data_traffic(ctx)
    # Without a filer dNFS serves, every kernel READ/WRITE may carry the fallen-back files.
    carriers = [t for t in traffic if tag(t[0], "export") in exports] if exports else traffic
    age = ctx.inventory_age_s
    for point in ctx.of("dnfsmon_dnfs_coverage"):
        pct = number(point, "dnfs_pct")
        if tag(point, "file_type") == "Data File" and pct is not None and pct < 100:
            files, dnfs_files = number(point, "files") or 0, number(point, "dnfs_files") or 0
            where = _mounts_named(carriers) if carriers else "no kernel NFS mount with READ or WRITE traffic seen"
            found.append(
                Finding(
                    "dnfs-fallback",
                    "client",
                    CRITICAL,
                    f"instance {tag(point, 'instance')}: {files - dnfs_files:.0f} of {files:.0f} data files "
                    f"({100 - pct:.0f} %) are not read through dNFS"
                    + (" (none is: dNFS serves no filer)" if not exports and dnfs_files == 0 else "")
                    + f"; the kernel NFS client carries them: {where}",
                    _evidence(
                        files=files,
                        dnfs_files=dnfs_files,
                        dnfs_pct=pct,
                        kernel_ops_per_s=sum(ops for _, _, ops in carriers) if carriers else None,
                        inventory_age_s=age,
                    ),
                    "read the alert log for 'Direct NFS' messages; check oranfstab (server, path, export, mount) "
                    "and that the export is mounted as oranfstab says",
                    simulated=ctx.simulated_database,
                    scope={
                        "instance": tag(point, "instance"),
                        "mountpoints": ",".join(sorted({tag(op, "mountpoint") for op, _, _ in carriers})),
                    },
                )
            )
    if not exports:
        return found  # the coverage finding names the mounts; no export to single out
    for op, name, ops in carriers:
        found.append(
            Finding(
                "dnfs-fallback",
                "client",
                CRITICAL,
                f"kernel NFS {name} on {tag(op, 'mountpoint')} ({tag(op, 'server')}:{tag(op, 'export')}), "
                "an export dNFS serves: I/O bypasses dNFS",
                _evidence(kernel_ops_per_s=ops, inventory_age_s=age),
                "find the processes doing it (they are not using dNFS): an instance without the dNFS "
                "library enabled, or files not covered by oranfstab",
                simulated=ctx.simulated_database,
                scope={"mountpoint": tag(op, "mountpoint"), "mountpoints": tag(op, "mountpoint")},
            )
        )
    return found


def _channels_by_filer(ctx: Context) -> dict[tuple[str, str], list[Point]]:
    groups: dict[tuple[str, str], list[Point]] = {}
    for point in ctx.of("dnfsmon_dnfs_channel"):
        groups.setdefault((tag(point, "instance"), tag(point, "server")), []).append(point)
    return groups


def _interface_of(ctx: Context, channel: Point) -> str:
    """The interface of a dNFS channel's path (its LOCAL address and filer address, joined)."""
    for path in ctx.paths:
        if channel in path.channels:
            return path.interface
    return ""


def dnfs_path_imbalance(ctx: Context) -> list[Finding]:
    """dNFS: a filer's paths carrying unequal shares of its sends."""
    found = []
    for (instance, server), channels in sorted(_channels_by_filer(ctx).items()):
        carrying = [c for c in channels if _is(number(c, "sends"), 1) and number(c, "share_pct") is not None]
        known = [number(c, "share_pct") or 0.0 for c in carrying]
        if len(known) >= 2 and max(known) - min(known) >= IMBALANCE_POINTS:
            busiest = max(carrying, key=lambda c: number(c, "share_pct") or 0.0)
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
                    scope={
                        "instance": instance,
                        "server": server,
                        "path": f"{tag(busiest, 'local') or '?'} -> {tag(busiest, 'path')}",
                        "interface": _interface_of(ctx, busiest),
                        "share_pct": f"{max(known):.0f}",
                    },
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
                        scope={
                            "instance": instance,
                            "server": server,
                            "path": f"{tag(channel, 'local') or '?'} -> {tag(channel, 'path')}",
                            "interface": _interface_of(ctx, channel),
                        },
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
                scope={"interfaces": ",".join(sorted(known))},
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


# The evidence value that says how bad each finding is, and whether higher is worse: the
# "worst" of a finding's episode in `dnfsmon doctor --since` (None: no single figure).
HEADLINES: dict[str, Optional[tuple[str, bool]]] = {
    "client-rpc-slots": ("queue_ms", True),
    "filer-latency": ("oracle_read_avg_ms", True),
    "network-latency": ("srtt_ms", True),
    "nic-saturation": ("util_pct", True),
    "tcp-retransmissions": ("retrans_pct", True),
    "dnfs-fallback": ("kernel_ops_per_s", True),
    "dnfs-path-imbalance": ("max_share_pct", True),
    "dnfs-path-down": ("filer_sends", True),
    "mtu-mismatch": None,
    "nfs-mount-options": None,
    "host-pressure": ("oracle_read_avg_ms", True),
}

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
