"""A per-packet reference for `dnfsmon wire`'s timing points, from tshark's fields.

Independent of dnfsmon's code: tshark decodes the frames and finds the RPC
headers; this module does its own TCP bookkeeping from tshark's raw sequence
numbers and lengths (RFC 9293 §3.4) to know when each byte had arrived in
order, and applies the definitions of docs/wire.md:

- a message's first instant: when its record mark had arrived with every byte
  before it; its last instant: when its last byte had (the message complete);
- first_call_to_first_reply, last_call_to_first_reply (the server's own time),
  first_call_to_last_reply (the client's wait).

tshark runs with TCP desegmentation and sequence analysis off (nfs-lab notes:
with them on, an RPC whose header sits in a segment of its own, or a reply
first seen as a retransmission, is not dissected), and with the client's
ports decoded as RPC. Messages must start at a segment's start (one RPC in
flight per connection, as the lab's impaired workloads run): tshark gives no
field for an RPC's position inside a segment. The first call and the first
reply per XID and connection count. A SYN without ACK whose sequence number is
new starts a new connection on its 4-tuple.
"""

from __future__ import annotations

import bisect
import math
import subprocess
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Optional

FIELDS = (
    "frame.time_epoch",
    "ip.src",
    "tcp.srcport",
    "ip.dst",
    "tcp.dstport",
    "tcp.flags",
    "tcp.seq_raw",
    "tcp.len",
    "rpc.xid",
    "rpc.msgtyp",
    "rpc.fraglen",
    "nfs.procedure_v3",
)
SYN, ACK = 0x02, 0x10
NFS3_NAMES = {0: "NULL", 1: "GETATTR", 3: "LOOKUP", 4: "ACCESS", 6: "READ", 7: "WRITE", 19: "FSINFO", 21: "COMMIT"}


def decode_client_ports_as_rpc(capture: Path) -> list[str]:
    """`-d tcp.port==P,rpc` for every client port that talks to 2049 in CAPTURE.

    The lab's NFS client binds a random privileged port, and tshark picks a TCP
    payload's dissector by the lower port first: a client port below 2049 that
    another protocol registered (802, MODBUS over TLS, for one) turns the whole
    connection into that protocol and its RPCs vanish from tshark's figures.
    Decode As on the client's port is how a tshark user fixes that.
    """
    result = subprocess.run(
        ["tshark", "-n", "-r", str(capture), "-Y", "tcp.dstport==2049", "-T", "fields", "-e", "tcp.srcport"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    ports = sorted({int(port) for port in result.stdout.split()})
    return [argument for port in ports for argument in ("-d", f"tcp.port=={port},rpc")]


@dataclass
class _Direction:
    initial: Optional[int] = None  # sequence number of stream offset 0
    received: int = 0  # every byte before this offset has arrived
    held: dict[int, int] = field(default_factory=dict)  # start -> end of segments beyond `received`
    advanced_to: list[int] = field(default_factory=list)  # `received` after each advance ...
    advanced_at: list[int] = field(default_factory=list)  # ... and when (ns)
    out_of_order: int = 0  # segments that arrived beyond a gap

    def arrived(self, start: int, end: int, time_ns: int) -> None:
        if end <= self.received:
            return
        if start > self.received:
            self.held[start] = max(end, self.held.get(start, 0))
            self.out_of_order += 1
            return
        self.received = end
        for held_start in sorted(self.held):
            if held_start > self.received:
                break
            self.received = max(self.received, self.held.pop(held_start))
        self.advanced_to.append(self.received)
        self.advanced_at.append(time_ns)

    def in_order_ns(self, offset: int) -> Optional[int]:
        """When every byte before `offset` had arrived."""
        index = bisect.bisect_left(self.advanced_to, offset)
        return self.advanced_at[index] if index < len(self.advanced_at) else None


@dataclass
class _Message:
    direction: _Direction
    start: int
    end: int
    procedure: Optional[str]


@dataclass
class Rpc:
    operation: str
    xid: int
    call_first_ns: int
    call_last_ns: int
    reply_first_ns: int
    reply_last_ns: int

    @property
    def first_call_to_first_reply(self) -> int:
        return self.reply_first_ns - self.call_first_ns

    @property
    def last_call_to_first_reply(self) -> int:
        return self.reply_first_ns - self.call_last_ns

    @property
    def first_call_to_last_reply(self) -> int:
        return self.reply_last_ns - self.call_first_ns


def out_of_order(capture: Path) -> int:
    """Segments of the capture that arrived beyond a gap (after a loss between the capture points)."""
    return sum(direction.out_of_order for direction in _read(capture)[0].values())


def rpcs(capture: Path) -> list[Rpc]:
    """Every NFSv3 RPC of the capture with its four instants, from tshark's fields."""
    _, calls, replies = _read(capture)
    found = []
    for key, call in calls.items():
        reply = replies.get(key)
        if reply is None or call.procedure is None:
            continue
        instants = (
            call.direction.in_order_ns(call.start + 1),
            call.direction.in_order_ns(call.end),
            reply.direction.in_order_ns(reply.start + 1),
            reply.direction.in_order_ns(reply.end),
        )
        if None in instants:
            continue
        found.append(Rpc(f"NFSv3 {call.procedure}", key[2], *instants))  # type: ignore[arg-type]
    return found


def _read(capture: Path) -> tuple[dict[tuple, _Direction], dict[tuple, _Message], dict[tuple, _Message]]:
    """(directions, calls, replies) of the capture: TCP followed per connection, RPCs by (connection, client ends, XID)."""
    command = ["tshark", "-n", "-r", str(capture), *decode_client_ports_as_rpc(capture)]
    command += ["-o", "tcp.desegment_tcp_streams:FALSE", "-o", "tcp.analyze_sequence_numbers:FALSE"]
    command += ["-T", "fields", "-E", "occurrence=f", *(part for name in FIELDS for part in ("-e", name))]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    generation: dict[tuple, int] = {}
    directions: dict[tuple, _Direction] = {}
    calls: dict[tuple, _Message] = {}
    replies: dict[tuple, _Message] = {}
    for line in result.stdout.splitlines():
        time_s, source, sport, destination, dport, flags_hex, seq, length, xid, kind, fraglen, procedure = line.split(
            "\t"
        )
        time_ns = int(Decimal(time_s) * 1_000_000_000)
        flags, sequence, payload = int(flags_hex, 16), int(seq), int(length or 0)
        ends = (source, int(sport), destination, int(dport))
        pair = tuple(sorted([ends[:2], ends[2:]]))
        if flags & SYN and not flags & ACK:
            current = directions.get((generation.get(pair, 0), ends))
            if current is None or current.initial != (sequence + 1) % 2**32:
                generation[pair] = generation.get(pair, 0) + 1
        connection = generation.get(pair, 0)
        direction = directions.setdefault((connection, ends), _Direction())
        if flags & SYN:
            direction.initial = (sequence + 1) % 2**32
            continue
        if direction.initial is None or payload == 0:
            continue
        start = (sequence - direction.initial) % 2**32
        direction.arrived(start, start + payload, time_ns)
        if xid and kind in ("0", "1") and fraglen:
            key = (connection, ends if kind == "0" else (*ends[2:], *ends[:2]), int(xid, 16))
            table = calls if kind == "0" else replies
            name = NFS3_NAMES.get(int(procedure), f"PROC{procedure}") if procedure else None
            table.setdefault(key, _Message(direction, start, start + 4 + int(fraglen), name))
    return directions, calls, replies


def summary(values_ns: list[int]) -> dict[str, float]:
    """count, average, nearest-rank p50/p95 and maximum in ms, as `dnfsmon wire` reports them."""
    ordered = sorted(values_ns)

    def rank(fraction: float) -> float:
        return ordered[max(1, math.ceil(fraction * len(ordered))) - 1] / 1e6

    return {
        "count": len(ordered),
        "avg_ms": sum(ordered) / len(ordered) / 1e6,
        "p50_ms": rank(0.5),
        "p95_ms": rank(0.95),
        "max_ms": ordered[-1] / 1e6,
    }
