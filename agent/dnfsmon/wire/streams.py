"""TCP byte streams put back in order and cut into ONC RPC messages, without needing the payload.

Two layers per direction of a connection:

1. In-order reassembly (RFC 9293 §3.4, §3.10.7.4): a segment is taken when every
   byte before it has arrived; one that starts beyond the bytes received so
   far (the one before it was lost and will be resent, or came late) is held
   until the gap fills. So a message is *complete* at the moment its last byte
   and every byte before it have arrived, which is when the receiving
   application can read it: a resent middle segment of a WRITE call makes the
   call complete when the resend arrives, not when its final byte first
   appeared. A gap that the capture will never fill (tcpdump dropped the
   segment: the peer's acknowledgment already covers it) is skipped, and the
   message it cuts is delivered without a completion time.

2. Record marking (RFC 5531 §11): RPC over TCP is a sequence of records, each
   fragment led by a 4-byte mark that gives its length. Knowing where a record
   starts and how long it is tells where the next one starts, so every header
   is found even when the snaplen cut the payload in between, and several
   messages in one segment are found. What cannot be recovered: a header whose
   own bytes were not captured (beyond the snaplen, or in a skipped gap); the
   direction then loses its place and resynchronises on the next segment that
   starts with a plausible RPC header (counted).

Per message, two instants are kept: `first_ns`, when its record mark arrived
in order, and `last_ns`, when the whole message had arrived in order.

Connections: a SYN (without ACK) on a 4-tuple starts a new connection even if
the ports were used before (a client reconnecting from the same port); each
connection of a 4-tuple has its own generation number in `Message.connection`.

Memory is bounded: headers keep at most rpc.HEADER_BYTES, each direction holds
at most PENDING_SEGMENTS out-of-order segments, and at most MAX_DIRECTIONS
directions are followed (the least recently active is dropped; both counted).
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Optional

from . import rpc
from .packets import TCP_ACK, TCP_SYN, Segment

# Out-of-order segments held per direction while waiting for a resent one. A
# lost segment is resent after one round trip (fast retransmit) or the
# retransmission timeout (at least 200 ms on Linux): meanwhile the sender may
# send up to a window, which for 8 outstanding 64 KiB WRITEs is about 360
# segments. Beyond this bound the gap is skipped (counted as GAP).
PENDING_SEGMENTS = 1024
MAX_DIRECTIONS = 65536
MODULO = 1 << 32

# Counted events (keys of StreamCounts.events).
LOST_SYNC = "lost the record boundary (a header was not captured); resynchronised later"
GAP = "bytes missing from the capture (acknowledged by the peer, or too many segments held): skipped"
DIRECTION_EVICTED = "connection direction dropped (more than MAX_DIRECTIONS followed at once)"

_Ends = tuple[str, int, str, int]  # (source, port, destination, port) of one direction


@dataclass
class Message:
    """One RPC message on one direction of one connection."""

    connection: tuple[str, int, str, int, int]  # (source, port, destination, port, generation) of this direction
    kind: int  # rpc.CALL or rpc.REPLY
    header: bytes  # the message's first bytes as captured (after the record mark)
    first_ns: int  # when its record mark arrived in order
    length: int  # the message's length in bytes (sum of its fragments), known once complete
    last_ns: Optional[int] = None  # when all of it had arrived in order; None if that was not captured
    bytes_missing: bool = False  # part of it was skipped (never captured): it has no completion time


@dataclass
class StreamCounts:
    segments: int = 0
    events: Counter[str] = field(default_factory=Counter)


class _Direction:
    def __init__(self, connection: tuple[str, int, str, int, int], base: Optional[int]):
        self.connection = connection
        self.base = base  # sequence number of stream offset 0
        self.last_offset = 0  # for unwrapping 32-bit sequence numbers
        # Reassembly: every byte before `received` has arrived (None until the first data).
        self.received: Optional[int] = 0 if base is not None else None
        self.held: dict[int, Segment] = {}  # out-of-order segments by stream offset
        # Record parsing over the in-order bytes.
        self.synced = base is not None  # after a SYN, offset 0 is a record boundary
        self.need = 0  # stream offset of the next byte the parser needs: a record mark or the rest of a header
        self.reading_header = False
        self.mark_at = 0  # offset of the record mark being read
        self.collected = bytearray()  # bytes from mark_at (mark included) while reading a header
        self.want = 4  # bytes wanted from mark_at
        self.mark_ns = 0
        self.in_message: Optional[Message] = None  # a message whose later fragments follow
        self.open: Optional[Message] = None  # a message whose marks are all read, not yet complete
        self.open_end = 0

    def offset(self, sequence: int) -> int:
        assert self.base is not None
        delta = (sequence - self.base - self.last_offset) % MODULO
        if delta >= MODULO // 2:
            delta -= MODULO
        return self.last_offset + delta


class StreamTracker:
    """Fed segments in capture order; calls `started(message)` when a message's header
    has been read and `deliver(message)` when it is complete (or never will be)."""

    def __init__(self, started: Callable[[Message], None], deliver: Callable[[Message], None], counts: StreamCounts):
        self.started = started
        self.deliver = deliver
        self.counts = counts
        self.directions: OrderedDict[_Ends, _Direction] = OrderedDict()
        # Connections seen on each pair of endpoints (either direction's 4-tuple, sorted).
        self.generation: Counter[tuple[tuple[str, int], tuple[str, int]]] = Counter()

    def add(self, segment: Segment) -> None:
        self.counts.segments += 1
        key = (segment.source, segment.source_port, segment.destination, segment.destination_port)
        endpoints = _endpoints(key)
        direction = self.directions.get(key)
        if segment.flags & TCP_SYN:
            base = (segment.sequence + 1) % MODULO
            if direction is not None and direction.base == base:
                return  # a retransmitted SYN
            if not segment.flags & TCP_ACK:
                # A new connection on these ports: what the old one left open ends here.
                self.generation[endpoints] += 1
                reverse = self.directions.pop(_reverse(key), None)
                if reverse is not None:
                    self._close(reverse)
            if direction is not None:
                self._close(direction)
            self.directions[key] = _Direction((*key, self.generation[endpoints]), base)
            self.directions.move_to_end(key)
            self._bound()
            return
        if direction is None:
            direction = _Direction((*key, self.generation[endpoints]), None)
            self.directions[key] = direction
            self._bound()
        else:
            self.directions.move_to_end(key)
        if segment.flags & TCP_ACK:
            self._acknowledged(_reverse(key), segment.acknowledgement)
        if segment.payload_length == 0:
            return
        if direction.base is None:
            direction.base = segment.sequence
        self._arrived(direction, segment)

    def finish(self) -> None:
        """End of the capture: read what is held beyond gaps, deliver what is still open."""
        for direction in self.directions.values():
            while direction.held:
                self._skip_to(direction, min(direction.held))
            self._close(direction)
        self.directions.clear()

    # --- reassembly -------------------------------------------------------------------------------------
    def _arrived(self, direction: _Direction, segment: Segment) -> None:
        start = direction.offset(segment.sequence)
        direction.last_offset = start
        end = start + segment.payload_length
        if direction.received is None:
            direction.received = start  # a capture started mid-connection: follow from here
        if end <= direction.received:
            return  # a TCP retransmission of bytes already received
        if start > direction.received:
            self._hold(direction, segment, start)
            return
        self._take(direction, segment, start, segment.time_ns)
        self._take_held(direction, segment.time_ns)

    def _hold(self, direction: _Direction, segment: Segment, start: int) -> None:
        """A segment beyond the bytes received so far: wait for the ones before it."""
        direction.held[start] = segment
        if len(direction.held) > PENDING_SEGMENTS:
            self._skip_to(direction, min(direction.held))

    def _take_held(self, direction: _Direction, time_ns: int) -> None:
        """Held segments that are now in order, taken at `time_ns`: the arrival that filled the gap."""
        while direction.held:
            start = min(direction.held)
            assert direction.received is not None
            if start > direction.received:
                return
            segment = direction.held.pop(start)
            if start + segment.payload_length > direction.received:
                self._take(direction, segment, start, time_ns)

    def _acknowledged(self, key: _Ends, acknowledgement: int) -> None:
        """The peer acknowledged up to `acknowledgement` on direction `key`: bytes it received.

        Bytes acknowledged but never seen in order were sent and received while
        the capture missed them (RFC 9293 §3.4: the acknowledgment is cumulative;
        a lost segment is not acknowledged until its resend arrives, and an
        end's capture sees the resend before the acknowledgment). They will
        never be captured: skip them rather than wait."""
        direction = self.directions.get(key)
        if direction is None or direction.base is None or direction.received is None:
            return
        acknowledged = direction.offset(acknowledgement)
        if direction.received < acknowledged <= direction.last_offset + MODULO // 4:
            self._skip_to(direction, acknowledged)

    def _skip_to(self, direction: _Direction, offset: int) -> None:
        """Give up the bytes up to `offset`: the capture does not have them."""
        assert direction.received is not None
        self.counts.events[GAP] += 1
        missing_from = direction.received
        direction.received = offset
        self._missing(direction, missing_from, offset)
        # The held segments from the gap on are now in order: each counts from its own arrival.
        while direction.held:
            start = min(direction.held)
            if start > direction.received:
                return
            segment = direction.held.pop(start)
            if start + segment.payload_length > direction.received:
                self._take(direction, segment, start, segment.time_ns)

    def _take(self, direction: _Direction, segment: Segment, start: int, time_ns: int) -> None:
        """The segment's new bytes arrived in order at `time_ns`: parse them."""
        assert direction.received is not None
        new_from = direction.received
        end = start + segment.payload_length
        direction.received = end
        # Unsynchronised: only a segment whose start is new bytes can start a record.
        if not direction.synced and (start < new_from or not self._resync(direction, segment, start)):
            return
        self._parse(direction, segment.payload, start, end, time_ns)

    # --- record marking ---------------------------------------------------------------------------------
    def _resync(self, direction: _Direction, segment: Segment, start: int) -> bool:
        """Take the segment's start as a record boundary if it looks like one."""
        payload = segment.payload
        if len(payload) < 16:
            return False
        length, _last = rpc.record_mark(payload[:4])
        if not rpc.plausible(payload[4:], length):
            return False
        direction.synced = True
        direction.need = start
        direction.reading_header = False
        return True

    def _parse(self, direction: _Direction, payload: bytes, start: int, end: int, time_ns: int) -> None:
        """Read every record mark and header in the bytes [start, end) (captured: `payload`) from need on."""
        captured_end = start + len(payload)
        while direction.synced:
            if direction.open is not None and direction.open_end <= end:
                self._complete(direction.open, time_ns)
                direction.open = None
            if direction.need >= end:
                return
            if not direction.reading_header:
                direction.reading_header = True
                direction.mark_at = direction.need
                direction.collected = bytearray()
                direction.want = 4
                direction.mark_ns = time_ns
            if direction.need >= captured_end:
                self._header_done(direction, complete=False)  # the snaplen cut it: these bytes are lost
                continue
            stop = min(captured_end, direction.mark_at + direction.want)
            direction.collected += payload[direction.need - start : stop - start]
            direction.need = stop
            if len(direction.collected) == 4 and direction.want == 4 and direction.in_message is None:
                length, _last = rpc.record_mark(bytes(direction.collected))
                direction.want = 4 + min(length, rpc.HEADER_BYTES)
            if len(direction.collected) >= direction.want:
                self._header_done(direction, complete=True)
            elif stop == end:
                return  # the header continues in the next segment

    def _complete(self, message: Message, time_ns: int) -> None:
        if not message.bytes_missing:
            message.last_ns = time_ns
        self.deliver(message)

    def _header_done(self, direction: _Direction, complete: bool) -> None:
        """The header's bytes are all read (complete) or the rest was not captured."""
        direction.reading_header = False
        collected = bytes(direction.collected)
        if len(collected) < 4:
            self._lose_sync(direction)
            return
        length, last = rpc.record_mark(collected[:4])
        message = direction.in_message
        if message is None:
            header = collected[4:]
            if len(header) >= 8 and not rpc.plausible(header, length) and (complete or len(header) >= 12):
                self._lose_sync(direction)
                return
            kind = rpc.message_type(header)
            if kind is None or length > rpc.MAX_RECORD:
                self._lose_sync(direction)
                return
            message = Message(direction.connection, kind, header, direction.mark_ns, 0)
            self.started(message)
        elif length > rpc.MAX_RECORD:
            self._lose_sync(direction)
            return
        message.length += length
        direction.need = direction.mark_at + 4 + length
        if last:
            direction.in_message = None
            direction.open = message
            direction.open_end = direction.need
        else:
            direction.in_message = message

    def _missing(self, direction: _Direction, start: int, end: int) -> None:
        """Bytes [start, end) will never be seen."""
        if not direction.synced:
            return
        if not direction.reading_header and direction.need >= end:
            # Inside a record's payload: the next boundary is still known, but
            # the message being received never completes in this capture.
            for message in (direction.open, direction.in_message):
                if message is not None:
                    message.bytes_missing = True
            return
        self._unsync(direction)  # counted as GAP by the caller

    def _lose_sync(self, direction: _Direction) -> None:
        self.counts.events[LOST_SYNC] += 1
        self._unsync(direction)

    def _unsync(self, direction: _Direction) -> None:
        """The next record boundary is unknown: wait for a segment that starts with a header."""
        direction.synced = False
        direction.reading_header = False
        self._abandon(direction)

    # --- bookkeeping ------------------------------------------------------------------------------------
    def _bound(self) -> None:
        while len(self.directions) > MAX_DIRECTIONS:
            _, oldest = self.directions.popitem(last=False)
            self._close(oldest)
            self.counts.events[DIRECTION_EVICTED] += 1

    def _close(self, direction: _Direction) -> None:
        """The direction ends (capture over, connection replaced): deliver what never completed."""
        self._abandon(direction)
        direction.held.clear()

    def _abandon(self, direction: _Direction) -> None:
        """Deliver the messages being received, without a completion time: they never complete."""
        for message in (direction.open, direction.in_message):
            if message is not None:
                message.bytes_missing = True
                self.deliver(message)
        direction.open = None
        direction.in_message = None


def _reverse(key: _Ends) -> _Ends:
    return (key[2], key[3], key[0], key[1])


def _endpoints(key: _Ends) -> tuple[tuple[str, int], tuple[str, int]]:
    ends = sorted(((key[0], key[1]), (key[2], key[3])))
    return ends[0], ends[1]
