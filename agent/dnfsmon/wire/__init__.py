"""`dnfsmon wire`: NFS service times from packet captures, split between client, network and server.

Layers, each a pure function or a small state machine over the one below:
capfile (pcap/pcapng records) → packets (link, IP, TCP) → streams (RPC
records along TCP sequence numbers) → analysis (calls paired with replies,
two captures matched) → report (table and JSON). See docs/wire.md.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Optional

from ..errors import EnvironmentProblem
from . import packets
from .analysis import Pairer, TraceStats, Transaction
from .capfile import ReadCounts, read_frames
from .streams import StreamCounts, StreamTracker


@dataclass
class Trace:
    """Everything learnt from one capture file."""

    path: str
    stats: TraceStats = field(default_factory=TraceStats)
    read: ReadCounts = field(default_factory=ReadCounts)
    streams: StreamCounts = field(default_factory=StreamCounts)
    skipped_frames: Counter[str] = field(default_factory=Counter)
    first_ns: Optional[int] = None
    last_ns: Optional[int] = None


def transactions(trace: Trace, operations: Optional[set[str]]) -> Iterator[Transaction]:
    """Stream the capture at trace.path; yield each NFS transaction as its reply completes.

    trace's counters fill as the file is read; they are final once the iterator ends.
    """
    pairer = Pairer(trace.stats, operations)
    tracker = StreamTracker(pairer.started, pairer.delivered, trace.streams)
    try:
        with open(trace.path, "rb") as handle:
            for frame in read_frames(handle, trace.path, trace.read):
                if trace.first_ns is None:
                    trace.first_ns = frame.time_ns
                trace.last_ns = frame.time_ns
                segment = packets.decode(frame.time_ns, frame.linktype, frame.data)
                if isinstance(segment, str):
                    trace.skipped_frames[segment] += 1
                    continue
                tracker.add(segment)
                if pairer.completed:
                    yield from pairer.completed
                    pairer.completed.clear()
    except OSError as error:
        raise EnvironmentProblem(
            f"cannot read capture {trace.path}: {error.strerror}; give a readable pcap or pcapng file"
        ) from None
    tracker.finish()
    pairer.finish()
    yield from pairer.completed
    pairer.completed.clear()
