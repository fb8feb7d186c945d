"""Calls paired with replies in one capture, and two captures matched call by call.

Pairing (one capture): a reply answers the call with the same XID on the same
connection (RFC 5531 §9: the XID is the client's; the reply carries it back).
The first call and the first reply per XID and connection count: a call seen
again (retransmitted) and a reply seen again (duplicate) are counted once and
reported as such. A connection is one TCP connection, not a 4-tuple: a client
that reconnects from the same port and resends an unanswered call with the
same XID (the Linux client does) starts a new one; the resend is timed, the
first attempt is counted as left out (RESENT_ON_NEW_CONNECTION), so the
reconnect's time is never taken for the server's.

Matching (two captures): a transaction of the client capture and one of the
server capture are the same RPC when XID, NFS version and operation agree (the
minor version is not compared: a capture cut short may not show it). Addresses and
ports are not compared, so a NAT or a load balancer between the capture points
does not matter. The two captures are read side by side in time order (each
relative to its own first call), so the tables of unmatched transactions stay
small; each is bounded by MATCH_WINDOW.

Timing points (see docs/wire.md): every transaction keeps, for its call and
for its reply, when the message's first bytes arrived in order ("first") and
when the whole message had (its "last" segment, streams.Message). Three
durations follow:
- first_call_to_first_reply: what `tshark -z rpc,srt` reports with TCP
  desegmentation off (on a clean capture);
- last_call_to_first_reply: from the moment the request was complete to the
  first reply bytes: the server's own time, used for the server side of the split;
- first_call_to_last_reply: from the first request bytes to the complete
  reply: what the caller waits, used for the client side of the split.
"""

from __future__ import annotations

import heapq
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Optional

from . import rpc
from .stats import Distribution
from .streams import Message

MAX_OUTSTANDING = 262144  # calls awaiting a reply, per capture
ANSWERED_MEMORY = 65536  # XIDs remembered after their reply, to recognise retransmissions
MATCH_WINDOW = 262144  # unmatched transactions held per side while matching two captures
# Matched RPCs needed before two captures are judged swapped: a handful can be
# paired wrongly (an XID answered twice at the server after a reconnect).
SWAP_EVIDENCE = 10

DURATIONS = ("first_call_to_first_reply", "last_call_to_first_reply", "first_call_to_last_reply")

# Unpaired or skipped, with the reason (keys of TraceStats.unpaired).
RETRANSMITTED_CALL = "retransmitted call (counted once)"
DUPLICATE_REPLY = "duplicate reply (counted once)"
REPLY_WITHOUT_CALL = "reply whose call is not in the capture"
CALL_WITHOUT_REPLY = "call whose reply is not in the capture"
CALL_EVICTED = "call dropped from the outstanding table (more than MAX_OUTSTANDING awaiting replies)"
CALL_HEADER_CUT = "call whose procedure was cut by the snaplen"
RESENT_ON_NEW_CONNECTION = "call left unanswered on a connection that was replaced (resent on the new one: timed there)"
COMPOUND_CUT = "NFSv4 COMPOUND whose operations were cut by the snaplen in call and reply (reported as COMPOUND)"
COMPOUND_FROM_REPLY = "NFSv4 COMPOUND named from its reply's operations (the call's were cut by the snaplen)"
# Paired, but left out of a duration (keys of TraceStats.left_out).
CALL_INCOMPLETE = "call never complete in the capture (bytes missing): left out of last_call_to_first_reply"
REPLY_INCOMPLETE = "reply never complete in the capture (bytes missing): left out of first_call_to_last_reply"


@dataclass
class Transaction:
    operation: str  # rpc.Call.label: "NFSv3 READ"
    version: int
    name: str  # the operation alone: "READ"
    minor_version: Optional[int]  # NFSv4's, when captured
    xid: int
    call_first_ns: int
    call_last_ns: Optional[int]
    reply_first_ns: int
    reply_last_ns: Optional[int]
    call_bytes: int
    reply_bytes: int
    ok: Optional[bool]  # RPC accepted and NFS status 0; None if the reply header was cut

    def durations(self) -> dict[str, Optional[int]]:
        return {
            "first_call_to_first_reply": self.reply_first_ns - self.call_first_ns,
            "last_call_to_first_reply": None if self.call_last_ns is None else self.reply_first_ns - self.call_last_ns,
            "first_call_to_last_reply": None if self.reply_last_ns is None else self.reply_last_ns - self.call_first_ns,
        }


@dataclass
class OperationStats:
    durations: dict[str, Distribution] = field(default_factory=lambda: {name: Distribution() for name in DURATIONS})
    call_bytes: int = 0
    reply_bytes: int = 0
    errors: int = 0

    def add(self, transaction: Transaction) -> None:
        for name, value in transaction.durations().items():
            if value is not None:
                self.durations[name].add(value)
        self.call_bytes += transaction.call_bytes
        self.reply_bytes += transaction.reply_bytes
        if transaction.ok is False:
            self.errors += 1


@dataclass
class TraceStats:
    operations: dict[str, OperationStats] = field(default_factory=dict)
    unpaired: Counter[str] = field(default_factory=Counter)
    notes: Counter[str] = field(default_factory=Counter)  # counted, but with less detail than usual
    left_out: Counter[str] = field(default_factory=Counter)  # paired, but left out of a duration
    other_programs: Counter[int] = field(default_factory=Counter)

    def add(self, transaction: Transaction) -> None:
        self.operations.setdefault(transaction.operation, OperationStats()).add(transaction)
        if transaction.call_last_ns is None:
            self.left_out[CALL_INCOMPLETE] += 1
        if transaction.reply_last_ns is None:
            self.left_out[REPLY_INCOMPLETE] += 1


_PairKey = tuple[str, int, str, int, int, int]  # (client, port, server, port, generation, xid)


class Pairer:
    """Receives the stream tracker's messages; yields transactions through `completed`."""

    def __init__(self, stats: TraceStats, operations: Optional[set[str]]):
        self.stats = stats
        self.operations = operations
        self.outstanding: OrderedDict[_PairKey, tuple[rpc.Call, Message]] = OrderedDict()
        self.answered: OrderedDict[_PairKey, None] = OrderedDict()
        self.completed: list[Transaction] = []

    def started(self, message: Message) -> None:
        if message.kind != rpc.CALL:
            return
        call = rpc.parse_call(message.header)
        if call is None:
            self.stats.unpaired[CALL_HEADER_CUT] += 1
            return
        key = (*message.connection, call.xid)
        if key in self.outstanding or key in self.answered:
            self.stats.unpaired[RETRANSMITTED_CALL] += 1
            return
        source, port, destination, destination_port, generation = message.connection
        # The same XID unanswered on the previous connection of these ports: the client resent it.
        previous = (source, port, destination, destination_port, generation - 1, call.xid)
        if generation > 0 and previous in self.outstanding:
            del self.outstanding[previous]
            self.stats.unpaired[RESENT_ON_NEW_CONNECTION] += 1
        self.outstanding[key] = (call, message)
        if len(self.outstanding) > MAX_OUTSTANDING:
            self.outstanding.popitem(last=False)
            self.stats.unpaired[CALL_EVICTED] += 1

    def delivered(self, message: Message) -> None:
        if message.kind != rpc.REPLY or len(message.header) < 4:
            return
        reply = rpc.parse_reply(message.header)
        source, port, destination, destination_port, generation = message.connection
        key = (destination, destination_port, source, port, generation, reply.xid)
        entry = self.outstanding.pop(key, None)
        if entry is None:
            self.stats.unpaired[DUPLICATE_REPLY if key in self.answered else REPLY_WITHOUT_CALL] += 1
            return
        self.answered[key] = None
        if len(self.answered) > ANSWERED_MEMORY:
            self.answered.popitem(last=False)
        call, call_message = entry
        if call.program != rpc.NFS_PROGRAM:
            self.stats.other_programs[call.program] += 1
            return
        if call.operation == rpc.UNKNOWN_COMPOUND:
            # The reply lists the operations that ran (RFC 8881 §16.2.2): name it from there.
            named = rpc.compound_reply_operation(message.header)
            if named is None:
                self.stats.notes[COMPOUND_CUT] += 1
            else:
                call.operation = named
                self.stats.notes[COMPOUND_FROM_REPLY] += 1
        if self.operations is not None and call.operation not in self.operations:
            return
        ok = None if reply.accepted is None else bool(reply.accepted and reply.status in (0, None))
        transaction = Transaction(
            call.label,
            call.version,
            call.operation,
            call.minor_version,
            call.xid,
            call_message.first_ns,
            call_message.last_ns,
            message.first_ns,
            message.last_ns,
            call_message.length,
            message.length,
            ok,
        )
        self.stats.add(transaction)
        self.completed.append(transaction)

    def finish(self) -> None:
        for call, _ in self.outstanding.values():
            if call.program == rpc.NFS_PROGRAM:
                self.stats.unpaired[CALL_WITHOUT_REPLY] += 1
        self.outstanding.clear()


# Why a transaction of one capture has no partner in the other (keys of MatchStats.unmatched).
NO_PARTNER = "no call with this XID and operation in the other capture"
_MatchKey = tuple[int, int, str]  # (xid, NFS version, operation)
WINDOW_EVICTED = "no partner within the matching window (MATCH_WINDOW transactions)"
XID_REUSED = "XID and operation seen twice in one capture (ambiguous)"


@dataclass
class MatchedOperation:
    client: Distribution = field(default_factory=Distribution)  # client capture: first_call_to_last_reply
    server: Distribution = field(default_factory=Distribution)  # server capture: last_call_to_first_reply
    difference: Distribution = field(default_factory=Distribution)  # client − server, per RPC
    client_first: Distribution = field(default_factory=Distribution)  # first_call_to_first_reply, client capture
    server_first: Distribution = field(default_factory=Distribution)  # first_call_to_first_reply, server capture
    difference_first: Distribution = field(default_factory=Distribution)


@dataclass
class MatchStats:
    operations: dict[str, MatchedOperation] = field(default_factory=dict)
    unmatched: dict[str, Counter[str]] = field(default_factory=lambda: {"client": Counter(), "server": Counter()})
    incomplete: int = 0  # matched, but a last segment was not captured: only the first-segment split counts it
    # Matched RPCs whose client-capture time (first call to first reply) is shorter than the
    # server capture's: impossible when the client capture is the client's (see swapped()).
    client_shorter: int = 0

    def matched(self) -> int:
        return sum(entry.client_first.count for entry in self.operations.values())

    def swapped(self) -> bool:
        """Whether the two captures were given the wrong way round.

        On the client's capture an RPC starts when the call leaves and ends when
        the reply arrives; on the server's it starts when the call arrives and
        ends when the reply leaves: the server's interval lies inside the
        client's, so the client's is never the shorter, whatever the clocks
        (durations are taken within one capture). A few RPCs may differ by the
        capture timestamps' own jitter; most of them the other way round, over
        at least SWAP_EVIDENCE RPCs, means the captures were swapped."""
        return self.client_shorter * 2 > self.matched() >= SWAP_EVIDENCE


def match(client: Iterable[Transaction], server: Iterable[Transaction]) -> MatchStats:
    """Match two streams of transactions, each in capture order."""
    result = MatchStats()
    waiting: dict[str, OrderedDict[_MatchKey, Transaction]] = {"client": OrderedDict(), "server": OrderedDict()}
    for side, transaction in _side_by_side(client, server):
        other = "server" if side == "client" else "client"
        key = (transaction.xid, transaction.version, transaction.name)
        partner = waiting[other].pop(key, None)
        if partner is None:
            if key in waiting[side]:
                result.unmatched[side][XID_REUSED] += 1
                continue
            waiting[side][key] = transaction
            if len(waiting[side]) > MATCH_WINDOW:
                waiting[side].popitem(last=False)
                result.unmatched[side][WINDOW_EVICTED] += 1
            continue
        at_client, at_server = (transaction, partner) if side == "client" else (partner, transaction)
        _add_match(result, at_client, at_server)
    for side, table in waiting.items():
        result.unmatched[side][NO_PARTNER] += len(table)
    return result


def _add_match(result: MatchStats, at_client: Transaction, at_server: Transaction) -> None:
    # The label with the minor version, from whichever capture shows it.
    label = at_server.operation if at_client.minor_version is None else at_client.operation
    entry = result.operations.setdefault(label, MatchedOperation())
    client_first = at_client.reply_first_ns - at_client.call_first_ns
    server_first = at_server.reply_first_ns - at_server.call_first_ns
    if client_first < server_first:
        result.client_shorter += 1
    entry.client_first.add(client_first)
    entry.server_first.add(server_first)
    entry.difference_first.add(client_first - server_first)
    client_wait = at_client.durations()["first_call_to_last_reply"]
    server_busy = at_server.durations()["last_call_to_first_reply"]
    if client_wait is None or server_busy is None:
        result.incomplete += 1
        return
    entry.client.add(client_wait)
    entry.server.add(server_busy)
    entry.difference.add(client_wait - server_busy)


def _side_by_side(client: Iterable[Transaction], server: Iterable[Transaction]) -> Iterator[tuple[str, Transaction]]:
    """Both streams merged by time since each capture's first transaction."""
    merged = heapq.merge(_relative("client", client), _relative("server", server), key=lambda item: item[0])
    for _, side, transaction in merged:
        yield side, transaction


def _relative(side: str, transactions: Iterable[Transaction]) -> Iterator[tuple[int, str, Transaction]]:
    start: Optional[int] = None
    for transaction in transactions:
        if start is None:
            start = transaction.call_first_ns
        yield transaction.call_first_ns - start, side, transaction
