"""TCP connections to the NFS filers: the kernel's tcp_info per socket.

dNFS channels are ordinary TCP sockets owned by Oracle processes, and the
kernel NFS client's transports are TCP sockets too: tcp_info is the Linux
answer to Solaris' DTrace tcp:::send/receive probes (srtt,
cwnd, unacked bytes, retransmissions), and what `ss -ti` prints.

Read through netlink sock_diag (include/uapi/linux/inet_diag.h, the
INET_DIAG_INFO extension carrying struct tcp_info of
include/uapi/linux/tcp.h) with dnfsmon.netlink, a small standard-library
reader, rather than by parsing `ss` output (another tool's human display,
whose format changes between iproute2 releases). It replaced pyroute2, whose
import alone cost 0.2 to 0.3 s of CPU per run (bench/RESULTS.md).

The reader keeps established sockets whose remote port is an NFS port
(host.nfs_ports, 2049 by default; the kernel filters by port) and records
them as JSON - the capture format's file "netlink/inet_diag_tcp.json":
    {"sockets": [{"src": "10.0.0.1", "sport": 871, "dst": "10.0.0.5",
                  "dport": 2049, "cookie": 77, "tcp_info": {"tcpi_rtt": 350, ...}}],
     "interfaces": {"10.0.0.1": "eth1"}}
tcp_info field names are the kernel's. Each socket is diffed on its own
(its cookie is its identity: a reused address and port is a new socket),
then summed per filer address, port, local address and interface.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Sequence
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Callable, Optional

from .. import netlink, rates
from ..points import Point, epoch_ns
from ..rates import Sample
from .base import HostInputs, HostSource, Parsed, ParseError, Raw, boot_identity, read_host_files

if TYPE_CHECKING:
    from ..config import Config

NAME = "filer_tcp"
MEASUREMENT = "dnfsmon_filer_tcp"
MEASUREMENTS = (MEASUREMENT,)
SOCKETS = "netlink/inet_diag_tcp.json"

# Cumulative per-socket tcp_info counters (bytes_acked/received: kernel 4.1+,
# segs_out/in: 4.2+; absent on older kernels, and then so are their rates).
COUNTERS = ("tcpi_bytes_acked", "tcpi_bytes_received", "tcpi_segs_out", "tcpi_segs_in", "tcpi_total_retrans")
# Point-in-time tcp_info values (rtt, rttvar, min_rtt in microseconds).
GAUGES = (
    "tcpi_rtt",
    "tcpi_rttvar",
    "tcpi_min_rtt",
    "tcpi_snd_cwnd",
    "tcpi_snd_ssthresh",
    "tcpi_unacked",
    "tcpi_retransmits",
)
# TCP_INFINITE_SSTHRESH (include/net/tcp.h): slow start has not ended; no value.
INFINITE_SSTHRESH = 0x7FFFFFFF
# 1 << TCP_ESTABLISHED (include/net/tcp_states.h): established sockets only.
TCP_ESTABLISHED_STATES = 1 << 1


def normalise_address(address: str) -> str:
    """IPv4-mapped IPv6 (::ffff:10.0.0.5) is the IPv4 filer it names."""
    return address[7:] if address.lower().startswith("::ffff:") and "." in address else address


def read_sockets(nfs_ports: tuple[int, ...]) -> dict:
    """The live sockets to the filers and the local addresses' interfaces (netlink)."""
    found = [
        {**entry, "tcp_info": {k: v for k, v in entry["tcp_info"].items() if k in COUNTERS + GAUGES}}
        for family in (socket.AF_INET, socket.AF_INET6)
        for port in nfs_ports
        for entry in netlink.tcp_sockets(family, TCP_ESTABLISHED_STATES, port)
    ]
    interfaces = {entry["address"]: entry["interface"] for entry in netlink.addresses()}
    return {"sockets": found, "interfaces": interfaces}


def read(inputs: HostInputs) -> Raw:
    data = json.dumps(read_sockets(inputs.nfs_ports), sort_keys=True)
    raw = read_host_files(inputs, [])
    raw.files[SOCKETS] = data
    return raw


def _int(value: object) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def samples(
    raw: Raw, host: str, wanted: Callable[[str], bool] = lambda server: True
) -> tuple[list[Sample], list[ParseError]]:
    """A sample per socket to a filer `wanted` keeps (by its address as published)."""
    try:
        data = json.loads(raw.text(SOCKETS))
        sockets, interfaces = data["sockets"], data["interfaces"]
        if not isinstance(sockets, list) or not isinstance(interfaces, dict):
            raise TypeError("sockets must be a list and interfaces an object")
    except (ValueError, KeyError, TypeError) as error:
        raise ParseError(SOCKETS, f'expected {{"sockets": [...], "interfaces": {{...}}}}: {error}') from None
    result: list[Sample] = []
    problems: list[ParseError] = []
    for number, entry in enumerate(sockets, start=1):
        try:
            src, dst = normalise_address(str(entry["src"])), normalise_address(str(entry["dst"]))
            sport, dport, cookie = int(entry["sport"]), int(entry["dport"]), int(entry["cookie"])
            info = entry["tcp_info"]
            if not isinstance(info, dict):
                raise TypeError("tcp_info must be an object")
        except (KeyError, TypeError, ValueError, OverflowError) as error:
            problems.append(
                ParseError(SOCKETS, f"socket {number} lacks src, sport, dst, dport, cookie or tcp_info: {error}")
            )
            continue
        if not wanted(dst):
            continue
        counters = {k: v for k, v in ((k, _int(info.get(k))) for k in COUNTERS) if v is not None}
        gauges: dict[str, rates.Gauge] = {k: v for k, v in ((k, _int(info.get(k))) for k in GAUGES) if v is not None}
        gauges["interface"] = str(interfaces.get(entry["src"], interfaces.get(src, "")))
        key = (
            ("host", host),
            ("server", dst),
            ("server_port", str(dport)),
            ("local_address", src),
            ("local_port", str(sport)),
        )
        result.append(
            Sample(MEASUREMENT, key, raw.time, raw.wall_time, counters, gauges, (*boot_identity(raw), str(cookie)))
        )
    return result, problems


def group_of(sample: Sample) -> tuple[tuple[str, str], ...]:
    """The published series of a socket: its key without the local port, plus the interface."""
    tags = tuple(pair for pair in sample.key if pair[0] != "local_port")
    return (*tags, ("interface", str(sample.gauges.get("interface", ""))))


def aggregate(result: rates.DiffResult, current: list[Sample]) -> list[Point]:
    groups = rates.aggregate(result.intervals, lambda interval: group_of(interval.current))
    by_group: dict[tuple, list[Sample]] = {}
    for sample in current:
        by_group.setdefault(group_of(sample), []).append(sample)
    points = []
    for tags, summed in groups.items():
        sockets = by_group[tags]

        def values(name: str, sockets: list[Sample] = sockets) -> list[int]:
            return [s.gauges[name] for s in sockets if name in s.gauges]  # type: ignore[misc]

        rtt, rttvar, min_rtt, cwnd = (
            values("tcpi_rtt"),
            values("tcpi_rttvar"),
            values("tcpi_min_rtt"),
            values("tcpi_snd_cwnd"),
        )
        ssthresh = [v for v in values("tcpi_snd_ssthresh") if v < INFINITE_SSTHRESH]
        acked, received = summed.rate("tcpi_bytes_acked"), summed.rate("tcpi_bytes_received")
        fields: dict[str, Optional[rates.Gauge]] = {
            "connections": len(sockets),
            "tx_kib_per_s": None if acked is None else acked / 1024,
            "rx_kib_per_s": None if received is None else received / 1024,
            "segs_out_per_s": summed.rate("tcpi_segs_out"),
            "segs_in_per_s": summed.rate("tcpi_segs_in"),
            "retrans_segs_per_s": summed.rate("tcpi_total_retrans"),
            "retrans_pct": rates.percent(summed.deltas.get("tcpi_total_retrans"), summed.deltas.get("tcpi_segs_out")),
            "srtt_avg_ms": None if not rtt else rates.mean(rtt) / 1000,
            "srtt_max_ms": None if not rtt else max(rtt) / 1000,
            "rttvar_avg_ms": None if not rttvar else rates.mean(rttvar) / 1000,
            "min_rtt_ms": None if not min_rtt else min(min_rtt) / 1000,
            "cwnd_avg_segments": None if not cwnd else rates.mean(cwnd),
            "cwnd_min_segments": None if not cwnd else min(cwnd),
            "ssthresh_min_segments": None if not ssthresh else min(ssthresh),
            "unacked_segments": sum(values("tcpi_unacked")) if values("tcpi_unacked") else None,
            "retransmits_max": max(values("tcpi_retransmits")) if values("tcpi_retransmits") else None,
        }
        wall_time = summed.members[0].current.wall_time
        points.append(Point(MEASUREMENT, tags, {k: v for k, v in fields.items() if v is not None}, epoch_ns(wall_time)))
    return points


def parse(raw: Raw, host: str) -> Parsed:
    """The contract's parse step (dnfsmon.sources.base): samples() and its problems."""
    found, problems = samples(raw, host)
    return Parsed(found, problems)


class FilerTcpSource(HostSource):
    """tcp_info of the connections to the filers, with the [filer_tcp] filer filters
    ([host] nfs_ports, which says which connections are NFS, is the target's)."""

    name = NAME
    measurements = MEASUREMENTS

    def __init__(self, include_filers: Sequence[str] = ("*",), exclude_filers: Sequence[str] = ()):
        self.include_filers = tuple(include_filers)
        self.exclude_filers = tuple(exclude_filers)

    def wanted(self, server: str) -> bool:
        """Shell-style globs (fnmatch) on the filer's address as published: included and not excluded."""
        return any(fnmatchcase(server, g) for g in self.include_filers) and not any(
            fnmatchcase(server, g) for g in self.exclude_filers
        )

    def read(self, inputs: HostInputs) -> Raw:
        return read(inputs)

    def parse(self, raw: Raw, host: str) -> Parsed:
        found, problems = samples(raw, host, self.wanted)
        return Parsed(found, problems)

    def publish(self, result: rates.DiffResult, current: list[Sample]) -> list[Point]:
        return aggregate(result, current)


# Every filer: the tests' and the doctor's cases' source.
SOURCE = FilerTcpSource()


def build(config: Config) -> FilerTcpSource:
    """The source as [filer_tcp] configures it (the options and their defaults: dnfsmon.config)."""
    return FilerTcpSource(**config.sources[NAME])
