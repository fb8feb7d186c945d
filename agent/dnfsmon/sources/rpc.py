"""The kernel NFS client's RPC counters and the sunrpc slot tunables.

/proc/net/rpc/nfs (rpc_proc_show() in net/sunrpc/stats.c), what `nfsstat -c`
prints:
    net <packets> <udp> <tcp> <tcpconn>
    rpc <calls> <retransmissions> <authrefreshes>
    proc3 22 <per-op counts...>        (and proc4 ...)
The net and rpc counters are `unsigned int` in struct rpc_stat: 32 bits wide
on every architecture, so they wrap, and are declared so to the rate engine.

/proc/sys/sunrpc/tcp_slot_table_entries and tcp_max_slot_table_entries cap
the RPCs a kernel NFS transport has in flight. A client capped at 16 keeps
Oracle's latency far above the filer's, and raising the cap to 128 fixes it;
compare with dnfsmon_nfs_mount.avg_backlog (RPCs waiting for a slot).

Both files exist only while the kernel's NFS client (sunrpc) is loaded:
without them this source has nothing to measure, which is not a failure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .. import rates
from ..rates import Sample
from .base import (
    HostInputs,
    HostSource,
    ParseError,
    Raw,
    boot_identity,
    is_unsigned,
    per_key_host_source,
    read_host_files,
)

if TYPE_CHECKING:
    from ..config import Config

NAME = "rpc"
MEASUREMENT = "dnfsmon_rpc"
MEASUREMENTS = (MEASUREMENT,)
RPC_NFS = "proc/net/rpc/nfs"
TUNABLES = {
    "tcp_slot_table_entries": "proc/sys/sunrpc/tcp_slot_table_entries",
    "tcp_max_slot_table_entries": "proc/sys/sunrpc/tcp_max_slot_table_entries",
    "udp_slot_table_entries": "proc/sys/sunrpc/udp_slot_table_entries",
}
LINE_COUNTERS = {
    "net": ("net_packets", "net_udp", "net_tcp", "net_tcpconn"),
    "rpc": ("rpc_calls", "rpc_retrans", "rpc_authrefresh"),
}
COUNTER_WIDTH_BITS = 32  # unsigned int in struct rpc_stat


def parse_rpc_nfs(text: str, path: str = RPC_NFS) -> dict[str, int]:
    """The net and rpc counters by name; ParseError names a malformed line."""
    counters: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split()
        if not words or words[0] not in LINE_COUNTERS:
            continue  # proc2/proc3/proc4 per-op lines: mountstats has them per mount
        names = LINE_COUNTERS[words[0]]
        if len(words) - 1 < len(names) or not all(is_unsigned(w) for w in words[1:]):
            raise ParseError(path, f"'{words[0]}' needs {len(names)} unsigned counters", number, line)
        counters.update(zip(names, map(int, words[1:])))
    if "rpc_calls" not in counters:
        raise ParseError(path, "no 'rpc' line")
    return counters


def read(inputs: HostInputs) -> Raw:
    return read_host_files(inputs, [RPC_NFS, *list(TUNABLES.values())])


def samples(raw: Raw, host: str) -> tuple[list[Sample], list[ParseError]]:
    text = raw.files.get(RPC_NFS)
    if text is None:
        return [], []  # no kernel NFS client loaded
    counters = parse_rpc_nfs(text)
    gauges: dict[str, rates.Gauge] = {}
    for name, path in TUNABLES.items():
        value = (raw.files.get(path) or "").strip()
        if is_unsigned(value):
            gauges[name] = int(value)
    widths = dict.fromkeys(counters, COUNTER_WIDTH_BITS)
    return [
        Sample(
            MEASUREMENT, (("host", host),), raw.time, raw.wall_time, counters, gauges, boot_identity(raw), None, widths
        )
    ], []


def fields(interval: rates.Interval) -> dict[str, rates.Gauge]:
    d = interval.deltas
    out: dict[str, Optional[rates.Gauge]] = {
        "calls_per_s": interval.rate("rpc_calls"),
        "retrans_per_s": interval.rate("rpc_retrans"),
        "retrans_pct": rates.percent(d.get("rpc_retrans"), d.get("rpc_calls")),
        "authrefresh_per_s": interval.rate("rpc_authrefresh"),
    }
    out.update(interval.current.gauges)
    return {k: v for k, v in out.items() if v is not None}


SOURCE = per_key_host_source(NAME, MEASUREMENTS, read, samples, fields)


def build(config: Config) -> HostSource:
    """This source has no option: the one instance serves every run."""
    return SOURCE
