"""The embedded local store: append-only, durable, bounded, crash-safe.

It is both the default output (no InfluxDB configured: `dnfsmon show` reads
it) and the buffer that makes shipping lossless (`dnfsmon ship` sends from it
and deletes only what InfluxDB acknowledged).

Layout: a directory of segment files named seg-<16-digit sequence>.jsonl,
written in sequence order. Each record is one line:

    <crc32 of the JSON text, 8 lowercase hex digits> <JSON text of one Point>\n

- Durable: a batch of records is written with one write() and fsync()ed
  before `append` returns; a new segment's directory entry is fsync()ed too.
- Crash-safe: SIGKILL or power loss can leave a torn last line (no newline)
  or garbage (e.g. zero-filled blocks). Readers skip any line whose CRC does
  not match and count it; a writer that finds a torn tail cuts it off (those
  bytes never formed a complete record) before appending.
- Bounded: after an append, whole oldest segments are deleted until the
  store fits in max_bytes; the unshipped points deleted are counted and
  reported by the agent as dnfsmon_agent.store_dropped_points.
- Shipping: cursor.json holds the position (segment, byte offset) up to
  which InfluxDB acknowledged every point; it is written atomically after
  each acknowledgement, and segments wholly before it are deleted. A crash
  between an acknowledgement and the cursor write re-sends those points:
  InfluxDB stores a point again under the same series and timestamp, so the
  re-send overwrites, never duplicates.
- Quarantine: points InfluxDB rejects as malformed (or that cannot be
  written as line protocol) go to quarantine.jsonl, same record format plus
  the reason, and are logged; they are never retried blindly.
"""

from __future__ import annotations

import json
import logging
import os
import re
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Optional

from .files import fsync_dir, write_atomically
from .points import Point

log = logging.getLogger(__name__)

SEGMENT_RE = re.compile(r"^seg-(\d{16})\.jsonl$")
# Counters the store keeps for the agent's own report, in this file.
COUNTS_FILE = "counts.json"
CURSOR_FILE = "cursor.json"
QUARANTINE_FILE = "quarantine.jsonl"


@dataclass
class StoreCounts:
    dropped_points: int = 0
    torn_records: int = 0


@dataclass(frozen=True)
class Position:
    """Just after one record: the segment's sequence number and byte offset."""

    segment: int
    offset: int


def encode_record(point: Point, extra: Optional[dict] = None) -> bytes:
    data = point.to_json()
    if extra:
        data.update(extra)
    text = json.dumps(data, separators=(",", ":"), sort_keys=True)
    return f"{zlib.crc32(text.encode()):08x} {text}\n".encode()


def decode_record(line: bytes) -> Point:
    """The Point of one record line; ValueError when torn or corrupt."""
    if not line.endswith(b"\n"):
        raise ValueError("torn record (no newline)")
    crc, _, text = line[:-1].partition(b" ")
    if len(crc) != 8 or f"{zlib.crc32(text):08x}".encode() != crc:
        raise ValueError("checksum mismatch")
    return Point.from_json(json.loads(text))


class Store:
    def __init__(self, directory: str, max_bytes: int, segment_bytes: int = 1 << 20):
        self.directory = directory
        self.max_bytes = max_bytes
        self.segment_bytes = min(segment_bytes, max(max_bytes // 4, 4096))
        os.makedirs(directory, mode=0o750, exist_ok=True)

    def segments(self) -> list[tuple[int, str]]:
        """(sequence, path) of every segment, oldest first."""
        found = []
        for name in os.listdir(self.directory):
            match = SEGMENT_RE.match(name)
            if match:
                found.append((int(match.group(1)), os.path.join(self.directory, name)))
        return sorted(found)

    # --- writing ---

    def append(self, points: Sequence[Point]) -> None:
        """Write points durably, then enforce the size bound."""
        if not points:
            return
        data = b"".join(encode_record(p) for p in points)
        path = self._active_segment(len(data))
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        self._enforce_bound()

    def _active_segment(self, incoming: int) -> str:
        segments = self.segments()
        if segments:
            _, path = segments[-1]
            self._cut_torn_tail(path)
            size = os.path.getsize(path)
            if size == 0 or size + incoming <= self.segment_bytes:
                return path
            sequence = segments[-1][0] + 1
        else:
            # Never reuse a sequence number the cursor may still name.
            sequence = self.cursor().segment + 1
        path = os.path.join(self.directory, f"seg-{sequence:016d}.jsonl")
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o640))
        fsync_dir(self.directory)
        return path

    def _cut_torn_tail(self, path: str) -> None:
        with open(path, "rb+") as f:
            data = f.read()
            if not data or data.endswith(b"\n"):
                return
            keep = data.rfind(b"\n") + 1
            f.truncate(keep)
            f.flush()
            os.fsync(f.fileno())
        log.warning("store %s: cut a torn record of %d bytes left by an interrupted write", path, len(data) - keep)
        self._add_counts(torn_records=1)

    def _enforce_bound(self) -> None:
        segments = self.segments()
        total = sum(os.path.getsize(p) for _, p in segments)
        cursor = self.cursor()
        dropped = 0
        # Never delete the newest segment: it holds the points just written.
        for sequence, path in segments[:-1]:
            if total <= self.max_bytes:
                break
            size = os.path.getsize(path)
            start = cursor.offset if sequence == cursor.segment else 0
            if sequence >= cursor.segment:
                dropped += sum(1 for _ in self._read_segment(path, start, count_torn=False))
            os.unlink(path)
            total -= size
        if dropped:
            fsync_dir(self.directory)
            log.warning(
                "store %s over %d bytes: dropped the %d oldest unshipped points",
                self.directory,
                self.max_bytes,
                dropped,
            )
            self._add_counts(dropped_points=dropped)

    # --- reading ---

    def _read_segment(self, path: str, start: int = 0, count_torn: bool = True) -> Iterator[tuple[int, Point]]:
        """(offset just after the record, point) of each good record from `start`."""
        with open(path, "rb") as f:
            f.seek(start)
            offset = start
            for line in f:
                offset += len(line)
                try:
                    yield offset, decode_record(line)
                except (ValueError, KeyError, TypeError) as error:
                    if count_torn:
                        log.warning("store %s at byte %d: skipped a bad record (%s)", path, offset - len(line), error)

    def points(self) -> Iterator[Point]:
        """Every stored point, shipped or not, oldest first; bad records skipped with a warning."""
        for _, path in self.segments():
            try:
                for _, point in self._read_segment(path):
                    yield point
            except FileNotFoundError:
                continue  # deleted meanwhile by the bound or a ship

    def unshipped(self) -> Iterator[tuple[Position, Point]]:
        """Points after the ship cursor, oldest first, each with the position just after it."""
        cursor = self.cursor()
        for sequence, path in self.segments():
            if sequence < cursor.segment:
                continue
            start = cursor.offset if sequence == cursor.segment else 0
            for offset, point in self._read_segment(path, start):
                yield Position(sequence, offset), point

    # --- shipping ---

    def cursor(self) -> Position:
        try:
            with open(os.path.join(self.directory, CURSOR_FILE), encoding="utf-8") as f:
                data = json.load(f)
            return Position(int(data["segment"]), int(data["offset"]))
        except FileNotFoundError:
            return Position(0, 0)
        except (OSError, ValueError, KeyError, TypeError) as error:
            # Re-sending everything is safe (InfluxDB overwrites); skipping is not.
            log.warning("store cursor unreadable (%s): shipping restarts from the oldest stored point", error)
            return Position(0, 0)

    def acknowledge(self, position: Position) -> None:
        """Everything up to `position` reached InfluxDB: move the cursor, delete shipped segments."""
        write_atomically(os.path.join(self.directory, CURSOR_FILE), json.dumps(position.__dict__).encode())
        segments = self.segments()
        for sequence, path in segments[:-1]:
            if sequence < position.segment or (
                sequence == position.segment and position.offset >= os.path.getsize(path)
            ):
                os.unlink(path)

    def quarantine(self, point: Point, reason: str) -> None:
        """Set aside a point InfluxDB will not take, with the reason; durable."""
        path = os.path.join(self.directory, QUARANTINE_FILE)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
        try:
            os.write(fd, encode_record(point, {"quarantined_because": reason}))
            os.fsync(fd)
        finally:
            os.close(fd)
        log.error("quarantined a point of %s (%s) in %s: %s", point.measurement, dict(point.tags), path, reason)

    def quarantined(self) -> list[tuple[Point, str]]:
        path = os.path.join(self.directory, QUARANTINE_FILE)
        found = []
        try:
            with open(path, "rb") as f:
                for line in f:
                    try:
                        point = decode_record(line)
                    except (ValueError, KeyError, TypeError):
                        continue
                    found.append((point, json.loads(line[9:])["quarantined_because"]))
        except FileNotFoundError:
            pass
        return found

    # --- the store's own counters, reported by the agent ---

    def _counts_path(self) -> str:
        return os.path.join(self.directory, COUNTS_FILE)

    def _add_counts(self, dropped_points: int = 0, torn_records: int = 0) -> None:
        counts = self.pending_counts()
        counts.dropped_points += dropped_points
        counts.torn_records += torn_records
        self._write_counts(counts)

    def _write_counts(self, counts: StoreCounts) -> None:
        write_atomically(self._counts_path(), json.dumps(counts.__dict__).encode())

    def pending_counts(self) -> StoreCounts:
        """Drops and torn records not yet reported."""
        try:
            with open(self._counts_path(), encoding="utf-8") as f:
                return StoreCounts(**{k: int(v) for k, v in json.load(f).items()})
        except (OSError, ValueError, TypeError):
            return StoreCounts()

    def acknowledge_counts(self, reported: StoreCounts) -> None:
        """Subtract what a stored report point now carries (call after appending it)."""
        if reported.dropped_points or reported.torn_records:
            counts = self.pending_counts()
            counts.dropped_points = max(0, counts.dropped_points - reported.dropped_points)
            counts.torn_records = max(0, counts.torn_records - reported.torn_records)
            self._write_counts(counts)
