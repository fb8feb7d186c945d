"""The latency ladder: one host's read latency, layer by layer, in milliseconds.

From the top: what Oracle waits for a single-block read ('db file
sequential read', GV$SYSTEM_EVENT and its histogram), what the kernel NFS
client measures per READ when Oracle reads through it (mountstats queue, RTT,
execute), what TCP measures on the connections that carry Oracle's I/O
(smoothed RTT and the path's minimum), and the state of the wire (NIC
utilisation of the carrying interfaces, retransmissions). The last rung is
the part of Oracle's latency the round trip does not explain: Oracle's
average minus the smoothed RTT - time spent on the database host, in the
client's queues, or at the filer beyond what TCP sees.
"""

from __future__ import annotations

from typing import Optional

from .. import rates
from ..points import Point
from .join import Path, number, of, tag, total

SINGLE_BLOCK_READ = "db file sequential read"
# The kernel NFS operations that carry Oracle's data (mountstats names, v3 and v4 alike).
DATA_OPS = ("READ",)
QUANTILE = 0.95
# The rungs, top (what Oracle sees) to bottom (the wire), with what `dnfsmon doctor` calls them.
RUNGS = {
    "oracle_read_avg_ms": "Oracle single-block read, average",
    "oracle_read_p95_ms": "Oracle single-block read, p95",
    "nfs_exe_ms": "kernel NFS READ, execute (queue + RTT)",
    "nfs_queue_ms": "kernel NFS READ, queued for a slot",
    "nfs_rtt_ms": "kernel NFS READ, round trip",
    "tcp_srtt_ms": "TCP smoothed RTT to the filer",
    "tcp_min_rtt_ms": "TCP minimum RTT (the path's floor)",
    "unexplained_ms": "Oracle minus TCP RTT (not the round trip)",
    "nic_util_pct": "NIC utilisation, busiest carrying interface",
    "retrans_pct": "TCP retransmissions",
}


def carrying(paths: list[Path]) -> list[Path]:
    """The paths that carry Oracle's I/O: those of dNFS when it is used, else those of kernel mounts."""
    dnfs = [p for p in paths if p.dnfs]
    return dnfs or [p for p in paths if p.kernel_nfs]


def ladder(points: list[Point], paths: list[Path]) -> dict[str, Optional[float]]:
    events = [p for p in of(points, "dnfsmon_oracle_event") if tag(p, "event") == SINGLE_BLOCK_READ]
    buckets = [
        (float(tag(p, "le_us")), number(p, "waits_per_s") or 0.0)
        for p in of(points, "dnfsmon_oracle_latency_histogram")
        if tag(p, "event") == SINGLE_BLOCK_READ
    ]
    oracle_avg_us = rates.weighted_mean((number(p, "avg_latency_us"), number(p, "waits_per_s")) for p in events)
    p95_us = rates.histogram_quantile(buckets, QUANTILE)
    ops = [p for p in of(points, "dnfsmon_nfs_op") if tag(p, "op") in DATA_OPS]

    def nfs(field: str) -> Optional[float]:
        return rates.weighted_mean((number(p, field), number(p, "ops_per_s")) for p in ops)

    lanes = carrying(paths)
    tcp = [p.tcp for p in lanes if p.tcp is not None]
    srtt = rates.weighted_mean((number(t, "srtt_avg_ms"), number(t, "connections")) for t in tcp)
    min_rtts = [v for v in (number(t, "min_rtt_ms") for t in tcp) if v is not None]
    utils = [v for v in (number(p.nic, "util_pct") for p in lanes) if v is not None]
    retrans = [number(t, "retrans_segs_per_s") for t in tcp]
    sent = [number(t, "segs_out_per_s") for t in tcp]
    oracle_avg_ms = None if oracle_avg_us is None else oracle_avg_us / 1000
    out = {
        "oracle_read_avg_ms": oracle_avg_ms,
        "oracle_read_p95_ms": None if p95_us is None else p95_us / 1000,
        "nfs_queue_ms": nfs("avg_queue_ms"),
        "nfs_rtt_ms": nfs("avg_rtt_ms"),
        "nfs_exe_ms": nfs("avg_exe_ms"),
        "tcp_srtt_ms": srtt,
        "tcp_min_rtt_ms": min(min_rtts) if min_rtts else None,
        "nic_util_pct": max(utils) if utils else None,
        "retrans_pct": rates.percent(total(retrans), total(sent)),
        "unexplained_ms": rates.difference(oracle_avg_ms, srtt),
    }
    return out
