"""TCP byte streams cut into ONC RPC messages, without needing the payload.

RPC over TCP is a sequence of records, each fragment led by a 4-byte mark that
gives its length (RFC 5531 §11). Knowing where a record starts and how long it
is tells where the next one starts, so following TCP sequence numbers (RFC 9293
§3.4) finds every header even when the snaplen cut the payload in between, and
finds several messages in one segment. What cannot be recovered: a header whose
own bytes were not captured (beyond the snaplen, or a segment missing from the
capture); the direction then loses its place and resynchronises on the next
segment that starts with a plausible RPC header (counted).

Per message, two instants are kept: the first segment (the one holding the
record mark) and the last segment (the one holding the message's last byte).

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
from .packets import TCP_SYN, Segment

# Segments held while waiting for the one that holds the next record boundary.
# Reordering seen in captures spans a few segments; a boundary segment that was
# never captured (tcpdump dropped it) costs at most this many segments' RPCs
# before the direction gives up on it and resynchronises (counted as GAP).
PENDING_SEGMENTS = 8
MAX_DIRECTIONS = 65536
MODULO = 1 << 32

# Counted events (keys of StreamCounts.events).
LOST_SYNC = "lost the record boundary (a header was not captured); resynchronised later"
GAP = "segment missing from the capture at a record boundary"
DIRECTION_EVICTED = "connection direction dropped (more than MAX_DIRECTIONS followed at once)"


@dataclass
class Message:
    """One RPC message on one direction of one connection."""

    connection: tuple[str, int, str, int, int]  # (source, port, destination, port, generation) of this direction
    kind: int  # rpc.CALL or rpc.REPLY
    header: bytes  # the message's first bytes as captured (after the record mark)
    first_ns: int  # time of the segment holding the record mark
    length: int  # the message's length in bytes (sum of its fragments), known once complete
    last_ns: Optional[int] = None  # time of the segment holding its last byte; None if not captured


@dataclass
class StreamCounts:
    segments: int = 0
    events: Counter[str] = field(default_factory=Counter)


class _Direction:
    def __init__(self, connection: tuple[str, int, str, int, int]):
        self.connection = connection
        self.base: Optional[int] = None  # sequence number of stream offset 0
        self.last_offset = 0  # for unwrapping 32-bit sequence numbers
        self.synced = False
        self.need = 0  # stream offset of the next byte we must see: a record mark or the rest of a header
        self.mark_at = 0  # offset of the record mark being read
        self.collected = bytearray()  # bytes from mark_at (mark included) while reading a header
        self.want = 4  # bytes wanted from mark_at
        self.mark_ns = 0
        self.reading_header = False
        self.in_message: Optional[Message] = None  # a message whose later fragments follow
        self.open: Optional[Message] = None  # a message whose last byte has not been seen
        self.open_end = 0
        self.pending: dict[int, Segment] = {}

    def offset(self, sequence: int) -> int:
        assert self.base is not None
        delta = (sequence - self.base - self.last_offset) % MODULO
        if delta >= MODULO // 2:
            delta -= MODULO
        return self.last_offset + delta


class StreamTracker:
    """Fed segments in capture order; calls `started(message)` when a message's header
    has been read and `deliver(message)` when its last byte was seen (or never will be)."""

    def __init__(self, started: Callable[[Message], None], deliver: Callable[[Message], None], counts: StreamCounts):
        self.started = started
        self.deliver = deliver
        self.counts = counts
        self.directions: OrderedDict[tuple[str, int, str, int], _Direction] = OrderedDict()
        self.generation: Counter[tuple[str, int, str, int]] = Counter()

    def add(self, segment: Segment) -> None:
        self.counts.segments += 1
        key = (segment.source, segment.source_port, segment.destination, segment.destination_port)
        direction = self.directions.get(key)
        if segment.flags & TCP_SYN:
            if direction is not None and direction.base == (segment.sequence + 1) % MODULO:
                return  # a retransmitted SYN
            if direction is not None:
                self._close(direction)
            self.generation[key] += 1
            direction = _Direction((*key, self.generation[key]))
            direction.base = (segment.sequence + 1) % MODULO
            direction.synced = True
            self.directions[key] = direction
            self._bound()
            return
        if direction is None:
            direction = _Direction((*key, self.generation[key]))
            self.directions[key] = direction
            self._bound()
        else:
            self.directions.move_to_end(key)
        if segment.payload_length == 0:
            return
        if direction.base is None:
            direction.base = segment.sequence
        self._segment(direction, segment)

    def finish(self) -> None:
        """End of the capture: deliver what is still open."""
        for direction in self.directions.values():
            self._close(direction)
        self.directions.clear()

    def _bound(self) -> None:
        while len(self.directions) > MAX_DIRECTIONS:
            _, oldest = self.directions.popitem(last=False)
            self._close(oldest)
            self.counts.events[DIRECTION_EVICTED] += 1

    def _close(self, direction: _Direction) -> None:
        if direction.open is not None:
            self.deliver(direction.open)
            direction.open = None
        if direction.in_message is not None:
            self.deliver(direction.in_message)
            direction.in_message = None
        direction.pending.clear()

    def _segment(self, direction: _Direction, segment: Segment) -> None:
        start = direction.offset(segment.sequence)
        direction.last_offset = start
        end = start + segment.payload_length
        self._mark_last_byte(direction, start, end, segment.time_ns)
        if not direction.synced and not self._resync(direction, segment, start):
            return
        if end <= direction.need:
            return  # bytes already passed: in-record payload or a TCP retransmission
        if start > direction.need:
            self._hold(direction, segment, start)
            return
        self._consume(direction, segment, start)
        self._drain(direction)

    def _mark_last_byte(self, direction: _Direction, start: int, end: int, time_ns: int) -> None:
        if direction.open is not None and start < direction.open_end <= end:
            direction.open.last_ns = time_ns
            self.deliver(direction.open)
            direction.open = None

    def _hold(self, direction: _Direction, segment: Segment, start: int) -> None:
        """A segment beyond the next needed byte: out of order, or the needed one was not captured."""
        direction.pending[start] = segment
        if len(direction.pending) <= PENDING_SEGMENTS:
            return
        # The needed segment is not coming: give up this boundary and resynchronise
        # on the earliest held segment that starts with a plausible header.
        self.counts.events[GAP] += 1
        held = sorted(direction.pending.items())
        direction.pending.clear()
        direction.synced = False
        direction.reading_header = False
        if direction.in_message is not None:
            self.deliver(direction.in_message)
            direction.in_message = None
        for offset, waiting in held:
            if direction.synced or self._resync(direction, waiting, offset):
                self._segment_at(direction, waiting, offset)

    def _segment_at(self, direction: _Direction, segment: Segment, start: int) -> None:
        end = start + segment.payload_length
        self._mark_last_byte(direction, start, end, segment.time_ns)
        if end <= direction.need:
            return
        if start > direction.need:
            direction.pending[start] = segment
            return
        self._consume(direction, segment, start)

    def _drain(self, direction: _Direction) -> None:
        while direction.pending and direction.synced:
            ready = [offset for offset in direction.pending if offset <= direction.need]
            if not ready:
                return
            for offset in sorted(ready):
                segment = direction.pending.pop(offset)
                if offset + segment.payload_length > direction.need and direction.synced:
                    self._consume(direction, segment, offset)

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

    def _consume(self, direction: _Direction, segment: Segment, start: int) -> None:
        """Read every header and record mark this segment holds from direction.need on."""
        captured_end = start + len(segment.payload)
        end = start + segment.payload_length
        while direction.synced and start <= direction.need < end:
            if not direction.reading_header:
                direction.reading_header = True
                direction.mark_at = direction.need
                direction.collected = bytearray()
                direction.want = 4
                direction.mark_ns = segment.time_ns
                if direction.open is not None and direction.open_end <= direction.need:
                    self.deliver(direction.open)  # its last segment was not captured
                    direction.open = None
            if direction.need >= captured_end:
                self._header_done(direction, complete=False)  # the snaplen cut it: these bytes are lost
            else:
                stop = min(captured_end, direction.mark_at + direction.want)
                direction.collected += segment.payload[direction.need - start : stop - start]
                direction.need = stop
                if len(direction.collected) == 4 and direction.want == 4 and direction.in_message is None:
                    length, _last = rpc.record_mark(bytes(direction.collected))
                    direction.want = 4 + min(length, rpc.HEADER_BYTES)
                if len(direction.collected) >= direction.want:
                    self._header_done(direction, complete=True)
                elif stop == end:
                    return  # the header continues in the next segment
            if direction.open is not None and direction.open_end <= end:
                direction.open.last_ns = segment.time_ns  # the message ends in this segment
                self.deliver(direction.open)
                direction.open = None

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

    def _lose_sync(self, direction: _Direction) -> None:
        self.counts.events[LOST_SYNC] += 1
        direction.synced = False
        direction.pending.clear()
        if direction.in_message is not None:
            self.deliver(direction.in_message)
            direction.in_message = None
