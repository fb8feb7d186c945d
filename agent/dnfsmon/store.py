"""The embedded local store: append-only, durable, bounded, crash-safe.

It is both the default output (no InfluxDB configured: `dnfsmon show` reads
it) and the buffer that makes shipping lossless (`dnfsmon ship` sends from it
and deletes only what InfluxDB acknowledged).

Layout: a directory of segment files named seg-<16-digit sequence>.lp,
written in sequence order. Each record is one line holding one point as
InfluxDB line protocol (points.to_line), so shipping posts the records as
they are, without decoding them:

    <crc32 of TEXT, 8 lowercase hex digits> <TEXT>\n

TEXT is the point's line of line protocol. A line protocol line can hold a
line break only inside a string field value (InfluxDB's parser accepts it
within the quotes: models/points.go, scanLine), which a record must not: such
a line is stored as a JSON string instead, marked by "J" in place of the
space: <crc32 of the JSON text>J<JSON string>\n (e.g. a multi-line Oracle
error in dnfsmon_oracle_status). A point that cannot be written as line
protocol at all (points.to_line) is quarantined when it is appended: it
could never be shipped.

Stores written before line protocol records (JSON records) hold segments
named seg-<sequence>.jsonl whose records are JSON points:

    <crc32 of the JSON text, 8 lowercase hex digits> <JSON text of one Point>\n

They are read and shipped as they are (each record decoded and written as
line protocol when it is sent), in sequence order with the new segments;
appends after the upgrade start a new .lp segment. Nothing is migrated or
lost: the old segments go as they are shipped or bounded away.

- Durable: a batch of records is written (every byte: a short write is
  continued) and fsync()ed before `append` returns; a new segment's
  directory entry is fsync()ed too.
- Never silent: a write that fails (ENOSPC, EIO, EFBIG) truncates the
  segment back to its size before the batch, counts the batch's points in
  `unwritten_points` and raises StoreWriteError (an EnvironmentProblem).
- Crash-safe: SIGKILL or power loss can leave a torn last line (no newline)
  or garbage (e.g. zero-filled blocks). Readers skip any line whose CRC does
  not match; a writer that finds a torn tail cuts it off (those bytes never
  formed a complete record) before appending. Both are counted once in
  `torn_records`: the cut tail when it is cut, a bad record in the middle of
  a segment when the ship cursor passes it or the size bound deletes it.
  A reader reads no byte past the size a segment had when it opened it: a
  ship (which reads without the lock) never joins a torn tail it holds to
  the record an append wrote in its place (_lines_as_opened).
- Bounded: after an append, whole oldest segments are deleted until the
  store fits in max_bytes; the unshipped points deleted are counted in
  `dropped_points` before they are deleted, with the deletion recorded
  beside the counts (Drop), so that a run killed in the middle leaves it to
  the next change to finish, uncounted again.
- Counters (counts.json, and its copy counts.copy.json) are totals since the store was created, published
  with every sample as dnfsmon_agent.store_*: losing any one report point
  (itself dropped in an outage) loses no count.
- One writer at a time: store.lock (flock) is held around every change, so
  two configs sharing a store never interleave or cut each other's records;
  ship.lock is held by the one process shipping the store.
- Shipping: cursor.json holds the position (segment, byte offset) up to
  which InfluxDB acknowledged every point; it is written atomically after
  each acknowledgement, and segments wholly before it are deleted. A crash
  between an acknowledgement and the cursor write re-sends those points:
  InfluxDB stores a point again under the same series and timestamp, so the
  re-send overwrites, never duplicates. A cursor beyond the data (a store
  restored or edited by hand) is detected and reset to the oldest point with
  a warning.
- Sent mark: before a ship sends a batch it records, under store.lock, the
  position up to which it has sent (sent.json; it only moves forward). The
  size bound never deletes a segment between the cursor and that mark: a
  batch InfluxDB may hold stays until a ship re-sends it and moves the cursor
  past it, however the ship ended (acknowledged, failed, timed out, killed).
  And the ship sends only the records whose segments still exist when it
  records the mark: one the bound deleted after the ship read it was counted
  as dropped. So the bound and the ship never both own a point, and a point
  counted as dropped was never sent (docs/reliability.md, the accounting
  identity). The store may exceed max_bytes by those segments.
- Quarantine: points InfluxDB rejects as malformed (or that cannot be
  written as line protocol) go to quarantine.jsonl, same record format plus
  the reason, and are logged; they are never retried blindly. The file is
  bounded: past its limit it is rotated to quarantine.jsonl.1 (the older
  rotation is deleted), so at most twice the limit is kept.
- latest.lp: the newest point of every series, one line of line protocol
  each, rewritten after each append (merging lines, no point decoded), so
  `dnfsmon show` answers without reading every segment and decodes only the
  points it prints. A store written before it has latest.json (one JSON
  point per series): the first append merges it into latest.lp and removes
  it; until then `dnfsmon show` reads it.
- latest.shown.lp: what `dnfsmon show` draws of latest.lp (the lines of the
  series its tables show, tables.py, and the number of series of every
  measurement), rewritten just after latest.lp, so that `show` reads a
  twelfth of it at 1000 mounts:

      <crc32 of the rest, 8 hex digits> <JSON header>\n<entries as in latest.lp>

  It is removed before latest.lp is rewritten, and its header names the
  latest.lp it was taken from (inode, size, modification time: each rewrite
  is a new file), the tables that chose the lines and the series per
  measurement. When it is absent (a run killed between the two writes),
  names another latest.lp (an older version's append, a restored store, a
  power loss), was chosen by other tables, or fails its checksum, `show`
  reads latest.lp instead. Not fsync()ed: a power loss that loses or tears
  it leaves one of those.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import time
import zlib
from collections.abc import Collection, Iterator, Sequence
from typing import BinaryIO, NamedTuple, NoReturn, Optional, Union

from . import records, tables
from .errors import EnvironmentProblem
from .errors import StoreLocked as StoreLocked
from .files import (
    check_directory,
    flock_within,
    fsync_dir,
    move_aside,
    open_for_reading,
    open_in_directory,
    read_in_directory,
    remove_stale_temps,
    write_all,
    write_atomically,
)
from .points import Point, from_line, series_key, to_line

log = logging.getLogger(__name__)

SEGMENT_RE = re.compile(r"^seg-(\d{16})\.(lp|jsonl)$")
# Segments of line protocol records; ".jsonl" are JSON records (stores written before).
SEGMENT_SUFFIX = ".lp"
OLD_SEGMENT_SUFFIX = ".jsonl"
# Counters the store keeps for the agent's own report, in this file.
COUNTS_FILE = "counts.json"
# A second copy of counts.json, written with it: a file planted or lost in place of one (a FIFO
# at counts.json is moved aside, never read) leaves the counts in the other.
COUNTS_COPY_FILE = "counts.copy.json"
CURSOR_FILE = "cursor.json"
# The position up to which a ship has sent, or begun to send, records: InfluxDB may hold any of
# them, so the size bound never deletes their segments before the cursor passes it (see claim).
SENT_FILE = "sent.json"
QUARANTINE_FILE = "quarantine.jsonl"
LATEST_FILE = "latest.lp"
# What `dnfsmon show` draws of latest.lp (see the module docstring).
LATEST_SHOWN_FILE = "latest.shown.lp"
# The index of stores written before latest.lp: one JSON point per series.
OLD_LATEST_FILE = "latest.json"
STORE_LOCK = "store.lock"
SHIP_LOCK = "ship.lock"
# A store change takes milliseconds; a lock held longer than this is a stuck process.
STORE_LOCK_WAIT_S = 30.0
# The quarantine keeps at most twice this (the file and one rotation).
QUARANTINE_MIN_BYTES = 64 * 1024
# A segment's sequence number has 16 digits (SEGMENT_RE): a cursor naming a larger one is not ours.
SEGMENT_SEQUENCE_LIMIT = 10**16 - 1
# What the agent writes in cursor.json is some 40 bytes: a bigger file is not its own.
CURSOR_MAX_BYTES = 4096
# counts.json: two slots of this size, each a checksum and the counters as JSON padded with
# spaces; a change rewrites the older slot in place (see _write_counts).
COUNTS_SLOT_BYTES = 256
# latest.lp holds one line per series; far past the store's own bound it is not the agent's.
LATEST_MIN_LIMIT = 64 * 1024 * 1024


class StoreWriteError(EnvironmentProblem):
    """An append could not be written (disk full, I/O error); its points are counted as unwritten."""


class StoreCounts(records.Record):
    """Totals since the store was created (counters: never reset, never decrease; a plain class: dnfsmon.records)."""

    # The order of counts.json's keys.
    FIELDS = ("dropped_points", "torn_records", "unwritten_points", "quarantined_points")
    __slots__ = FIELDS

    def __init__(
        self, dropped_points: int = 0, torn_records: int = 0, unwritten_points: int = 0, quarantined_points: int = 0
    ):
        self.dropped_points = dropped_points
        self.torn_records = torn_records
        self.unwritten_points = unwritten_points
        self.quarantined_points = quarantined_points


class Drop(NamedTuple):
    """A deletion by the size bound, counted before its segments are deleted (in counts.json's
    slot with the counts): every segment up to `through` but those from the cursor's to
    `kept_to` (a batch a ship sent), holding `points` counted as dropped. A run killed before it
    deleted them all leaves the rest to the next change under the store's lock, which deletes
    them without counting them again (Store._finish_drop)."""

    through: int
    kept_to: int
    points: int


class LatestShown(NamedTuple):
    """latest.shown.lp: what `dnfsmon show` draws of latest.lp."""

    # The newest line of each series the tables may show (tables.tabled), by measurement.
    lines: list[str]
    # The number of series of each measurement in latest.lp, every series counted.
    series: dict[str, int]


class Position(NamedTuple):
    """Just after one record: the segment's sequence number and byte offset (ordered as a tuple).

    A named tuple, not a dataclass: a ship makes one per record (100 000 in a
    big ship), and a tuple is several times cheaper to make."""

    segment: int
    offset: int


def encode_line_record(line: str) -> bytes:
    """The record of one line of line protocol (see the module docstring)."""
    if "\n" in line:
        text = json.dumps(line).encode()
        return b"%08xJ%s\n" % (zlib.crc32(text), text)
    data = line.encode()
    return b"%08x %s\n" % (zlib.crc32(data), data)


def encode_record(point: Point) -> bytes:
    """The record of one point; ValueError when it cannot be written as line protocol."""
    return encode_line_record(to_line(point))


def decode_line_record(record: bytes) -> bytes:
    """The line protocol of one record (UTF-8, no newline); ValueError when torn or corrupt."""
    if not record.endswith(b"\n"):
        raise ValueError("torn record (no newline)")
    kind, text = record[8:9], record[9:-1]
    if kind not in (b" ", b"J") or f"{zlib.crc32(text):08x}".encode() != record[:8]:
        raise ValueError("checksum mismatch")
    if kind == b"J":
        try:
            line = json.loads(text)
        except ValueError:
            raise ValueError("not a JSON string") from None
        if not isinstance(line, str):
            raise ValueError("not a JSON string")
        return line.encode()
    return text


def encode_json_record(point: Point, extra: Optional[dict] = None) -> bytes:
    """A record of the JSON format: segments .jsonl of stores written before, and the quarantine."""
    data = point.to_json()
    if extra:
        data.update(extra)
    text = json.dumps(data, separators=(",", ":"), sort_keys=True)
    return f"{zlib.crc32(text.encode()):08x} {text}\n".encode()


def decode_json_record(line: bytes) -> Point:
    """The Point of one JSON record line; ValueError when torn or corrupt."""
    if not line.endswith(b"\n"):
        raise ValueError("torn record (no newline)")
    crc, _, text = line[:-1].partition(b" ")
    if len(crc) != 8 or f"{zlib.crc32(text):08x}".encode() != crc:
        raise ValueError("checksum mismatch")
    try:
        return Point.from_json(json.loads(text))
    except (KeyError, TypeError, AttributeError, RecursionError) as error:
        raise ValueError(f"not a point ({error.__class__.__name__})") from None


def _stamp(line: str) -> int:
    """The timestamp of a line of line protocol: its last word (points.to_line)."""
    return int(line[line.rindex(" ") + 1 :])


def _latest_entry(line: str) -> str:
    """A line of latest.lp: a space and the line, or, for a line with a line break (in a
    string field value), J and the line as a JSON string; a line is written atomically
    with the whole file, so no checksum."""
    return f"J{json.dumps(line)}\n" if "\n" in line else f" {line}\n"


def _file_identity(status: os.stat_result) -> list[int]:
    """A file as latest.shown.lp names it: a file replaced by rename is a new inode; its size and
    modification time tell a file changed in place."""
    return [status.st_ino, status.st_size, status.st_mtime_ns]


def _latest_entries(data: bytes) -> list[str]:
    """The lines of latest.lp's entries (_latest_entry); ValueError or IndexError when they are not."""
    return [line[1:] if line[0] == " " else _json_string(line[1:]) for line in data.decode().split("\n")[:-1]]


def _json_string(text: str) -> str:
    value = json.loads(text)
    if not isinstance(value, str):
        raise ValueError("not a JSON string")
    return value


# A stored record as read: line protocol (segments .lp), or a Point (segments .jsonl of the old format).
Record = Union[bytes, Point]


class Store:
    def __init__(self, directory: str, max_bytes: int, segment_bytes: int = 1 << 20, read_only: bool = False):
        """The store in `directory`. Read-only: creates, locks and writes nothing (`dnfsmon show`)."""
        self.directory = directory
        self.max_bytes = max_bytes
        self.segment_bytes = min(segment_bytes, max(max_bytes // 4, 4096))
        self.quarantine_max_bytes = max(QUARANTINE_MIN_BYTES, max_bytes // 16)
        self.read_only = read_only
        # Positions of bad records met by `unshipped`, counted when the cursor passes them.
        self._bad_seen: set[Position] = set()
        # Counts this process could not write to counts.json (see _add_counts).
        self._unsaved_counts = StoreCounts()
        if not read_only:
            check_directory(directory)
            with self.locked():  # every write in the store holds the lock: no temp is in use now
                remove_stale_temps(directory)
                self._prepare_counts()

    def segments(self) -> list[tuple[int, str]]:
        """(sequence, path) of every segment, oldest first."""
        found = []
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            if self.read_only:
                return []
            raise
        for name in names:
            match = SEGMENT_RE.match(name)
            if match:
                found.append((int(match.group(1)), os.path.join(self.directory, name)))
        return sorted(found)

    def _path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold store.lock: one process changes the store at a time."""
        assert not self.read_only, "a read-only store never changes"
        path = self._path(STORE_LOCK)
        fd = open_in_directory(path, os.O_RDWR | os.O_CREAT, 0o640)
        try:
            if not flock_within(fd, STORE_LOCK_WAIT_S):
                raise StoreLocked(f"another process has held {path} for over {STORE_LOCK_WAIT_S:.0f} s")
            yield
        finally:
            os.close(fd)  # releases the flock

    # --- writing ---

    def append(self, points: Sequence[Point]) -> None:
        """Write points durably, then enforce the size bound.

        StoreWriteError when the disk refuses them: the segment is left as it
        was before, and the points are counted as unwritten.
        """
        if not points:
            return
        lines: list[str] = []
        refused: list[tuple[Point, str]] = []
        for point in points:
            try:
                lines.append(to_line(point))
            except ValueError as error:
                refused.append((point, f"cannot be written as line protocol: {error}"))
        data = b"".join([encode_line_record(line) for line in lines])
        with self.locked():
            if data:
                # A failed write counts every point of the append as unwritten, the refused ones too.
                self._write_batch(data, len(points))
            for point, reason in refused:
                try:
                    self._quarantine_locked(point, reason)
                except OSError as error:
                    # Never silent: a point neither stored nor quarantined is counted as unwritten.
                    log.error(
                        "store %s: could not quarantine a point of %s (%s)", self.directory, point.measurement, error
                    )
                    with contextlib.suppress(OSError):
                        self._add_counts(unwritten_points=1)
            if data:
                self._enforce_bound()
                self._update_latest(lines)

    def _write_batch(self, data: bytes, count: int) -> None:
        """append's write of its records, the store's lock held: every byte and fsync, or none
        (StoreWriteError, `count` points counted as unwritten)."""
        try:
            path = self._active_segment(len(data))
            fd = open_in_directory(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        except OSError as error:
            self._unwritten(count, error, "")
        try:
            size_before = os.fstat(fd).st_size
            try:
                write_all(fd, data)
                os.fsync(fd)
            except OSError as error:
                try:  # leave no partial record behind: the batch is all or nothing
                    os.ftruncate(fd, size_before)
                    os.fsync(fd)
                except OSError:
                    pass  # the next append cuts the torn tail
                self._unwritten(count, error, path)
        finally:
            os.close(fd)

    def _unwritten(self, count: int, error: OSError, path: str) -> NoReturn:
        try:
            self._add_counts(unwritten_points=count)
        except OSError:
            pass  # the disk is full: the log line below still has the exact number
        raise StoreWriteError(
            f"store {path or self.directory}: {count} points not written ({error.strerror or error}); "
            f"free space on its file system (or lower [store] max_bytes); the next run's points cover the gap"
        ) from None

    def _active_segment(self, incoming: int) -> str:
        segments = self.segments()
        if segments:
            _, path = segments[-1]
            self._cut_torn_tail(path)
            size = os.path.getsize(path)
            # A segment of the old format is never appended to: records of one format per segment.
            if path.endswith(SEGMENT_SUFFIX) and (size == 0 or size + incoming <= self.segment_bytes):
                return path
            sequence = segments[-1][0] + 1
        else:
            # Never reuse a sequence number the cursor or the sent mark may still name.
            sequence = max(self.cursor(), self.sent_mark() or Position(0, 0)).segment + 1
        if sequence > SEGMENT_SEQUENCE_LIMIT:
            raise EnvironmentProblem(
                f"store {self.directory}: segment {segments[-1][1]} has the last sequence number a segment "
                "can have (16 digits; not written by dnfsmon): move it away"
            )
        path = self._path(f"seg-{sequence:016d}{SEGMENT_SUFFIX}")
        os.close(open_in_directory(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
        fsync_dir(self.directory)
        return path

    def _cut_torn_tail(self, path: str) -> None:
        fd = open_in_directory(path, os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
            if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
                return
            keep = end = size
            while end > 0:  # back to the last newline, a block at a time
                start = max(0, end - 65536)
                newline = os.pread(fd, end - start, start).rfind(b"\n")
                keep = start + newline + 1
                if newline >= 0:
                    break
                end = start
            os.ftruncate(fd, keep)
            os.fsync(fd)
        finally:
            os.close(fd)
        log.warning("store %s: cut a torn record of %d bytes left by an interrupted write", path, size - keep)
        self._add_counts(torn_records=1)

    def _enforce_bound(self) -> None:
        segments = self._finish_drop(self.segments())
        total = sum(os.path.getsize(p) for _, p in segments)
        cursor = self._valid_cursor(segments)
        protected = self._sent_beyond(cursor, segments)
        dropped = bad = 0
        doomed: list[tuple[int, str]] = []
        # Never delete the newest segment: it holds the points just written.
        for sequence, path in segments[:-1]:
            if total <= self.max_bytes:
                break
            if cursor.segment <= sequence <= protected:
                continue  # a ship sent some of its points: InfluxDB may hold them (claim)
            start = cursor.offset if sequence == cursor.segment else 0
            if sequence >= cursor.segment:
                for _, record in self._read_segment(path, start, warn=False):
                    if record is None:
                        bad += 1
                    else:
                        dropped += 1
            doomed.append((sequence, path))
            total -= os.path.getsize(path)
        if not doomed:
            return
        if dropped or bad:
            # Counted first, with the segments about to go: a run killed from here on leaves the
            # rest of this deletion to the next change, never a point deleted uncounted.
            self._add_counts(dropped_points=dropped, torn_records=bad, drop=Drop(doomed[-1][0], protected, dropped))
        for _, path in doomed:
            os.unlink(path)
        fsync_dir(self.directory)
        if dropped or bad:
            # Named by its last segment: a run killed after this line and before the next write
            # has it logged again by the run that finishes the deletion (_finish_drop).
            log.warning(
                "store %s over %d bytes: dropped the %d oldest unshipped points (segments to %d)",
                self.directory,
                self.max_bytes,
                dropped,
                doomed[-1][0],
            )
            self._add_counts(drop=None)

    def _finish_drop(self, segments: list[tuple[int, str]]) -> list[tuple[int, str]]:
        """Finish a deletion of the size bound a killed run counted and left undone (Drop); the
        segments left. The store's lock held."""
        drop = self._read_counts()[2]
        if drop is None:
            return segments
        cursor = self.cursor()
        left = []
        for sequence, path in segments:
            if sequence <= drop.through and not cursor.segment <= sequence <= drop.kept_to:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
            else:
                left.append((sequence, path))
        fsync_dir(self.directory)
        log.warning(
            "store %s over %d bytes: dropped the %d oldest unshipped points (segments to %d; counted by a run "
            "killed while it deleted them)",
            self.directory,
            self.max_bytes,
            drop.points,
            drop.through,
        )
        self._add_counts(drop=None)
        return left

    def _sent_beyond(self, cursor: Position, segments: list[tuple[int, str]]) -> int:
        """The last segment holding records a ship sent past the cursor (sent.json), or -1.

        A mark beyond the newest segment is not a ship's (a restored or edited store): protecting
        up to it would keep every segment for good."""
        mark = self.sent_mark()
        if mark is None or mark <= cursor or not segments or mark.segment > segments[-1][0]:
            return -1
        return mark.segment

    def claim(self, positions: Sequence[Position]) -> list[bool]:
        """Before a ship sends records (each given by the position just after it): which of them
        are still the ship's to send, and from now on InfluxDB may hold those.

        Under the store's lock, so that the size bound and the ship agree on who owns a point: a
        record whose segment the bound deleted since the ship read it was counted as dropped, and
        is not sent (False); for the others the sent mark moves past them, and the bound keeps
        their segments until the cursor passes the mark. EnvironmentProblem when the mark cannot
        be written (nothing is sent then)."""
        with self.locked():
            existing = {sequence for sequence, _ in self._finish_drop(self.segments())}
            still = [position.segment in existing for position in positions]
            # Bad records in a deleted segment were counted by the bound (torn_records).
            self._bad_seen = {p for p in self._bad_seen if p.segment in existing}
            kept = [position for position, ours in zip(positions, still) if ours]
            if not kept:
                return still
            mark = self.sent_mark()
            if mark is None or mark < kept[-1]:
                try:
                    # Not fsync()ed: a ship sends a batch after each claim, and two disk flushes a
                    # batch cost 4 % of its rate (measured). The mark survives a killed process; a
                    # power loss may lose it, and the bound may then count one sent batch as dropped.
                    write_atomically(self._path(SENT_FILE), json.dumps(kept[-1]._asdict()).encode(), durable=False)
                except OSError as error:
                    raise EnvironmentProblem(
                        f"store {self.directory}: cannot record what is sent to InfluxDB ({error.strerror}); free "
                        "space there: until then no point is sent, they wait in the store"
                    ) from None
            return still

    def _update_latest(self, lines: Sequence[str]) -> None:
        """Keep latest.lp (newest line per series) for `dnfsmon show`; best effort.

        Lines are merged by their series key and timestamp, never decoded to
        points: at 1000 mounts an append brings 33 400 of them."""
        latest = self._latest_by_series()
        # A point held with a time after now was stored before the wall clock stepped back:
        # the new point replaces it, or `show` would give it as the latest (with an age
        # "ahead") until the clock caught up - ten years after a step from the future.
        now_ns = time.time_ns()
        for line in lines:
            key = series_key(line)
            known = latest.get(key)
            if known is None or _stamp(line) >= _stamp(known) or _stamp(known) > now_ns:
                latest[key] = line
        ordered = [line for _, line in sorted(latest.items())]
        document = "".join([_latest_entry(line) for line in ordered])
        try:
            # The index of the latest.lp about to be replaced goes first: a run killed before it
            # writes the new one leaves none (it would name a file gone, whose inode may be reused).
            with contextlib.suppress(OSError):
                os.unlink(self._path(LATEST_SHOWN_FILE))
            write_atomically(self._path(LATEST_FILE), document.encode())
            if os.path.lexists(self._path(OLD_LATEST_FILE)):
                os.unlink(self._path(OLD_LATEST_FILE))  # merged into latest.lp above
        except OSError as error:
            log.warning(
                "store %s: could not update %s (%s); `dnfsmon show` reads the segments",
                self.directory,
                LATEST_FILE,
                error.strerror,
            )
            return
        self._write_latest_shown(ordered)

    def _write_latest_shown(self, ordered: list[str]) -> None:
        """Write latest.shown.lp from the lines of the latest.lp just written; best effort.

        The store's lock is held, so the latest.lp it names is the one written from `ordered`."""
        path = self._path(LATEST_SHOWN_FILE)
        try:
            groups = tables.by_measurement(ordered)
            header = {
                "latest": _file_identity(os.lstat(self._path(LATEST_FILE))),
                "tables": tables.SELECTION,
                "series": {measurement: len(lines) for measurement, lines in groups.items()},
            }
            text = "".join(
                [json.dumps(header, separators=(",", ":")), "\n", *map(_latest_entry, tables.tabled(groups))]
            )
            data = text.encode()
            # Not durable: see the module docstring; a latest.shown.lp that does not name the
            # latest.lp there, or fails its checksum, is never read.
            write_atomically(path, b"%08x %s" % (zlib.crc32(data), data), durable=False)
        except OSError as error:
            log.warning(
                "store %s: could not update %s (%s); `dnfsmon show` reads %s",
                self.directory,
                LATEST_SHOWN_FILE,
                error.strerror,
                LATEST_FILE,
            )

    def _latest_by_series(self) -> dict[str, str]:
        """latest.lp as series key -> line; or latest.json of a store written before, as lines; or nothing."""
        lines = self.latest_lines()
        if lines is None:
            lines = []
            for point in (self.old_latest_index() or {}).values():
                try:
                    lines.append(to_line(point))
                except ValueError:
                    continue  # never shippable; the segments hold it for `dnfsmon show` until bounded away
        return {series_key(line): line for line in lines}

    def _latest_limit(self) -> int:
        return max(LATEST_MIN_LIMIT, 2 * self.max_bytes)

    def latest_lines(self) -> Optional[list[str]]:
        """latest.lp: the newest point of every series as a line of line protocol; None when missing or unusable
        (a link, FIFO or device planted there is never read; the next append replaces it)."""
        try:
            return _latest_entries(read_in_directory(self._path(LATEST_FILE), self._latest_limit(), self.read_only))
        except (OSError, EnvironmentProblem, ValueError, IndexError, RecursionError):
            return None

    def latest_shown(self) -> Optional[LatestShown]:
        """latest.shown.lp, when it was taken from latest.lp as it is now by the tables of this
        version and is whole; None otherwise (`dnfsmon show` then reads latest.lp)."""
        try:
            # Read before latest.lp's identity is taken: an append that rewrites both meanwhile
            # leaves latest.lp another file than the one this names.
            data = read_in_directory(self._path(LATEST_SHOWN_FILE), self._latest_limit(), self.read_only)
            current = _file_identity(os.lstat(self._path(LATEST_FILE)))
        except (OSError, EnvironmentProblem):
            return None
        if data[8:9] != b" " or b"%08x" % zlib.crc32(data[9:]) != data[:8]:
            return None
        header, _, entries = data[9:].partition(b"\n")
        try:
            document = json.loads(header, parse_constant=_refuse_constant)
            if document["latest"] != current or document["tables"] != tables.SELECTION:
                return None
            series = document["series"]
            lines = _latest_entries(entries)
        except (ValueError, KeyError, TypeError, IndexError, RecursionError):
            return None
        if not isinstance(series, dict) or not all(type(count) is int and count > 0 for count in series.values()):
            return None
        return LatestShown(lines, series)

    def old_latest_index(self) -> Optional[dict[str, Point]]:
        """latest.json of a store written before latest.lp, as series key -> point; None when missing or unusable."""
        try:
            document = json.loads(read_in_directory(self._path(OLD_LATEST_FILE), self._latest_limit(), self.read_only))
            return {key: Point.from_json(data) for key, data in document.items()}
        except (OSError, EnvironmentProblem, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            return None

    # --- reading ---

    def _read_segment(
        self, path: str, start: int = 0, warn: bool = True, newest: bool = False
    ) -> Iterator[tuple[int, Optional[Record]]]:
        """(offset just after the record, record or None when bad) of each record from `start`.

        A record is its line protocol (bytes) in a segment of line protocol
        records, a Point in a segment of the old JSON format.
        The newest segment's last line without a newline is not yielded: it
        may be a write in progress; the next writer cuts it and counts it.
        """
        decode = decode_json_record if path.endswith(OLD_SEGMENT_SUFFIX) else decode_line_record
        with open_for_reading(path, self.read_only) as f:
            offset = start
            for line in _lines_as_opened(f, start):
                if newest and not line.endswith(b"\n"):
                    return
                offset += len(line)
                try:
                    record: Optional[Record] = decode(line)
                except ValueError as error:
                    record = None
                    if warn:
                        log.warning("store %s at byte %d: skipped a bad record (%s)", path, offset - len(line), error)
                yield offset, record

    def points(self, measurements: Optional[Collection[str]] = None) -> Iterator[Point]:
        """Every stored point (of `measurements` only, when given), shipped or not, oldest first;
        bad records skipped with a warning. Records of other measurements are not decoded."""
        segments = self.segments()
        # A line of line protocol starts with its measurement and a comma (tags) or a space.
        prefixes = () if measurements is None else tuple(f"{m}{c}".encode() for m in measurements for c in ", ")
        for sequence, path in segments:
            try:
                for offset, record in self._read_segment(path, newest=sequence == segments[-1][0]):
                    if record is None:
                        continue
                    if prefixes and (
                        record.measurement not in measurements  # type: ignore[operator]
                        if isinstance(record, Point)
                        else not record.startswith(prefixes)
                    ):
                        continue
                    try:
                        yield record if isinstance(record, Point) else from_line(record.decode())
                    except ValueError as error:  # UnicodeDecodeError included
                        log.warning("store %s before byte %d: skipped a bad record (%s)", path, offset, error)
            except FileNotFoundError:
                continue  # deleted meanwhile by the bound or a ship

    def unshipped(self) -> Iterator[tuple[Position, Record]]:
        """Records after the ship cursor, oldest first, each with the position just after it.

        Line protocol as bytes, ready to send; a Point from a segment of the old format."""
        segments = self.segments()
        cursor = self._valid_cursor(segments, warn=True)
        for sequence, path in segments:
            if sequence < cursor.segment:
                continue
            start = cursor.offset if sequence == cursor.segment else 0
            newest = sequence == segments[-1][0]
            try:
                if path.endswith(SEGMENT_SUFFIX):
                    yield from self._unshipped_lines(sequence, path, start, newest)
                    continue
                for offset, record in self._read_segment(path, start, newest=newest):
                    if record is None:
                        self._bad_seen.add(Position(sequence, offset))
                    else:
                        yield Position(sequence, offset), record
            except FileNotFoundError:
                continue  # deleted by the size bound since it was listed: its points were counted as dropped

    def _unshipped_lines(self, sequence: int, path: str, start: int, newest: bool) -> Iterator[tuple[Position, bytes]]:
        """unshipped's reading of one segment of line protocol records: what _read_segment and
        decode_line_record do, with the common record checked here (a ship reads 100 000 of them)."""
        with open_for_reading(path, self.read_only) as f:
            offset = start
            for line in _lines_as_opened(f, start):
                offset += len(line)
                # The common record: a space after the checksum, a newline at the end, the checksum right.
                if line[8:9] == b" " and line[-1:] == b"\n" and b"%08x" % zlib.crc32(line[9:-1]) == line[:8]:
                    yield Position(sequence, offset), line[9:-1]
                    continue
                if newest and not line.endswith(b"\n"):
                    return  # a write in progress, or a torn tail the next writer cuts and counts
                try:
                    record = decode_line_record(line)
                except ValueError as error:
                    log.warning("store %s at byte %d: skipped a bad record (%s)", path, offset - len(line), error)
                    self._bad_seen.add(Position(sequence, offset))
                    continue
                yield Position(sequence, offset), record

    # --- shipping ---

    def cursor(self) -> Position:
        """Where the ship stands; the oldest point when there is no cursor or it is unusable (a warning)."""
        position = self._read_position(CURSOR_FILE, "cursor", "shipping restarts from the oldest stored point")
        return Position(0, 0) if position is None else position

    def sent_mark(self) -> Optional[Position]:
        """The position up to which a ship has sent records (sent.json); None when there is none or
        it is unusable (a warning: the bound then protects nothing beyond the cursor)."""
        return self._read_position(SENT_FILE, "sent mark", "the size bound protects no batch a ship sent")

    def _read_position(self, name: str, label: str, otherwise: str) -> Optional[Position]:
        data = self._read_own_file(name, CURSOR_MAX_BYTES)
        if data is None:
            return None
        try:
            document = json.loads(data, parse_constant=_refuse_constant)
            position = Position(document["segment"], document["offset"])
            if not all(type(value) is int and value >= 0 for value in position):
                raise ValueError(f"not two whole numbers of 0 or more: {position}")
            if position.segment >= SEGMENT_SEQUENCE_LIMIT:
                # The next segment's name would need 17 digits, which SEGMENT_RE never lists.
                raise ValueError(f"segment {position.segment} leaves no 16-digit segment number after it")
            return position
        except (ValueError, KeyError, TypeError, RecursionError) as error:
            # Re-sending everything is safe (InfluxDB overwrites); skipping is not.
            log.warning("store %s unreadable (%s): %s", label, str(error)[:200], otherwise)
            return None

    def _read_own_file(self, name: str, limit: int) -> Optional[bytes]:
        """A small file the store keeps (cursor, counters); None when absent. One that is not the
        store's own (a link, FIFO or device planted there, another owner's, too big) is moved
        aside with one warning and never read: the run goes on as if it were absent."""
        path = self._path(name)
        try:
            return read_in_directory(path, limit, self.read_only)
        except FileNotFoundError:
            return None
        except (EnvironmentProblem, OSError) as problem:
            if self.read_only:
                log.warning("store %s: %s; ignored", self.directory, problem)
                return None
            aside = move_aside(path, str(problem))
            log.warning("store %s: %s: moved to %s; the store goes on without it", self.directory, problem, aside)
            return None

    def _valid_cursor(self, segments: list[tuple[int, str]], warn: bool = False) -> Position:
        """The cursor, or the oldest point when it points beyond the data (restored or edited store)."""
        cursor = self.cursor()
        if not segments or cursor == Position(0, 0):
            return cursor
        problem = None
        paths = dict(segments)
        if cursor.segment > segments[-1][0]:
            problem = f"names segment {cursor.segment}, beyond the newest ({segments[-1][0]})"
        elif cursor.segment in paths and cursor.offset > 0:
            try:
                with open_for_reading(paths[cursor.segment], self.read_only) as f:
                    size = os.fstat(f.fileno()).st_size
                    if cursor.offset > size:
                        problem = f"offset {cursor.offset} is beyond segment {cursor.segment}'s {size} bytes"
                    else:
                        f.seek(cursor.offset - 1)
                        if f.read(1) != b"\n":
                            problem = f"offset {cursor.offset} is not at a record boundary"
            except FileNotFoundError:
                pass
        if problem is None:
            return cursor
        if warn:
            log.warning(
                "store %s: the ship cursor %s: shipping restarts from the oldest stored point "
                "(InfluxDB overwrites what it already has)",
                self.directory,
                problem,
            )
        return Position(0, 0)

    def acknowledge(self, position: Position) -> None:
        """Everything up to `position` reached InfluxDB: move the cursor, delete shipped segments."""
        with self.locked():
            try:
                write_atomically(self._path(CURSOR_FILE), json.dumps(position._asdict()).encode())
            except OSError as error:
                raise EnvironmentProblem(
                    f"store {self.directory}: cannot record what InfluxDB took ({error.strerror}); free space "
                    "there: until then those points are sent again (InfluxDB overwrites them, no duplicates)"
                ) from None
            passed = {p for p in self._bad_seen if p <= position}
            if passed:
                self._bad_seen -= passed
                self._add_counts(torn_records=len(passed))
            segments = self.segments()
            for sequence, path in segments[:-1]:
                if sequence < position.segment or (
                    sequence == position.segment and position.offset >= os.path.getsize(path)
                ):
                    os.unlink(path)

    def quarantine(self, point: Point, reason: str) -> None:
        """Set aside a point InfluxDB will not take, with the reason; durable and bounded."""
        with self.locked():
            self._quarantine_locked(point, reason)

    def _quarantine_locked(self, point: Point, reason: str) -> None:
        """quarantine, the store's lock held. The quarantine keeps JSON records: a point that cannot
        be written as line protocol is quarantined too."""
        path = self._path(QUARANTINE_FILE)
        record = encode_json_record(point, {"quarantined_because": reason})
        fd = open_in_directory(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            if os.fstat(fd).st_size + len(record) > self.quarantine_max_bytes:
                os.replace(path, path + ".1")
                os.close(fd)
                fd = open_in_directory(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL)
            write_all(fd, record)
            os.fsync(fd)
        finally:
            os.close(fd)
        self._add_counts(quarantined_points=1)
        log.error("quarantined a point of %s (%s) in %s: %s", point.measurement, dict(point.tags), path, reason)

    def quarantined(self) -> list[tuple[Point, str]]:
        found = []
        for path in (self._path(QUARANTINE_FILE + ".1"), self._path(QUARANTINE_FILE)):
            try:
                with open_for_reading(path, self.read_only) as f:
                    for line in f:
                        try:
                            point = decode_json_record(line)
                        except ValueError:
                            continue
                        found.append((point, json.loads(line[9:])["quarantined_because"]))
            except FileNotFoundError:
                pass
        return found

    # --- the store's own counters, reported by the agent ---
    #
    # counts.json is two slots of COUNTS_SLOT_BYTES, each "<crc32> <JSON>" padded with spaces.
    # A change rewrites the older slot in place (pwrite, fsync): blocks the file holds already,
    # so a full disk does not stop it (a new temp file would need a free block), and a crash in
    # the middle of a write tears only that slot, never the other. counts.copy.json is the same
    # file written the same way just after: a file planted in place of one of them (a FIFO, a
    # link: moved aside, never read) or lost leaves the counts in the other. The reader takes
    # the valid slot with the higher serial number of the four.

    def _add_counts(
        self,
        dropped_points: int = 0,
        torn_records: int = 0,
        unwritten_points: int = 0,
        quarantined_points: int = 0,
        drop: Union[Drop, str, None] = "kept",
    ) -> None:
        """Add to the totals; the store's lock held. What cannot be written (the file missing on a
        full disk, an I/O error) is kept in this process, published with its points (counts())
        and written with the next change. `drop`: the size bound's deletion under way (Drop),
        None once it is done; the slot's own is kept otherwise."""
        unsaved = self._unsaved_counts
        unsaved.dropped_points += dropped_points
        unsaved.torn_records += torn_records
        unsaved.unwritten_points += unwritten_points
        unsaved.quarantined_points += quarantined_points
        saved, serial, saved_drop = self._read_counts()
        total = _sum_counts(saved, unsaved)
        try:
            self._write_counts(total, serial + 1, saved_drop if isinstance(drop, str) else drop)
        except OSError as error:
            log.warning(
                "store %s: could not write %s (%s); the counts are kept by this run and written by its next change",
                self.directory,
                COUNTS_FILE,
                error.strerror or error,
            )
            return
        self._unsaved_counts = StoreCounts()

    def _prepare_counts(self) -> None:
        """Give counts.json and its copy their two slots while there is space (the store's lock
        held), so that a full disk later never stops a count from being written; a store written
        before gets them from its one JSON object, or from the copy that is left."""
        unprepared = []
        for name in (COUNTS_FILE, COUNTS_COPY_FILE):
            try:
                if os.lstat(self._path(name)).st_size == 2 * COUNTS_SLOT_BYTES:
                    continue
            except FileNotFoundError:
                pass
            unprepared.append(name)
        if not unprepared:
            return
        counts, serial, drop = self._read_counts()
        for name in unprepared:
            try:
                write_atomically(self._path(name), _counts_slot(counts, serial, drop) * 2)
            except OSError as error:
                log.warning(
                    "store %s: could not create %s (%s): the counts are written once there is space",
                    self.directory,
                    name,
                    error.strerror or error,
                )

    def _write_counts(self, counts: StoreCounts, serial: int, drop: Optional[Drop]) -> None:
        """Rewrite the older slot of counts.json and of its copy; OSError when neither took it."""
        failure: Optional[OSError] = None
        written = False
        for name in (COUNTS_FILE, COUNTS_COPY_FILE):
            try:
                self._write_counts_slot(self._path(name), _counts_slot(counts, serial, drop), serial)
                written = True
            except OSError as error:
                failure = error
        if not written and failure is not None:
            raise failure

    def _write_counts_slot(self, path: str, slot: bytes, serial: int) -> None:
        try:
            fd = open_in_directory(path, os.O_WRONLY)
        except FileNotFoundError:
            write_atomically(path, slot * 2)
            return
        try:
            if os.fstat(fd).st_size != 2 * COUNTS_SLOT_BYTES:
                os.close(fd)
                fd = -1
                write_atomically(path, slot * 2)
                return
            if os.pwrite(fd, slot, (serial % 2) * COUNTS_SLOT_BYTES) != len(slot):
                raise OSError(errno.EIO, "short write of a counts slot")
            os.fsync(fd)
        finally:
            if fd >= 0:
                os.close(fd)

    def _read_counts(self) -> tuple[StoreCounts, int, Optional[Drop]]:
        """(the totals in counts.json or its copy, whichever slot is newest, their serial number,
        the size bound's deletion it records as under way); zeros when neither holds usable
        counts (a warning)."""
        found = []
        read_any = False
        for name in (COUNTS_FILE, COUNTS_COPY_FILE):
            data = self._read_own_file(name, 2 * COUNTS_SLOT_BYTES)
            if data is None:
                continue
            read_any = True
            if data.startswith(b"{"):  # one JSON object: a store written before the slots
                found.append(_counts_of(data))
            else:
                found.extend(
                    _counts_of(data[start : start + COUNTS_SLOT_BYTES], with_serial=True)
                    for start in range(0, len(data), COUNTS_SLOT_BYTES)
                )
        if not read_any:
            return StoreCounts(), 0, None
        usable = [(counts, serial, drop) for counts, serial, drop in found if counts is not None]
        if not usable:
            log.warning(
                "store %s: %s holds no usable counts (edited or corrupt): they start again from 0",
                self.directory,
                COUNTS_FILE,
            )
            return StoreCounts(), 0, None
        counts, serial, drop = max(usable, key=lambda slot: slot[1])
        assert counts is not None
        return counts, serial, drop

    def counts(self) -> StoreCounts:
        """The store's totals since it was created (with those this process could not write yet)."""
        return _sum_counts(self._read_counts()[0], self._unsaved_counts)


def _lines_as_opened(f: BinaryIO, start: int) -> Iterator[bytes]:
    """The lines of an open segment from byte `start`, none past the size it had when opened.

    A ship reads the newest segment without the store's lock, through a read buffer. SIGKILL
    stops a write at a page boundary (Linux, mm/filemap.c, generic_perform_write: "if
    (fatal_signal_pending(current))"), which leaves a torn tail; the buffer may hold it when the
    next append cuts it and writes a new record in its place. Read on past that size, the torn
    bytes held would be joined to the end of the new record: a line that fails its checksum, the
    new record's point skipped as bad and counted only as a torn record (in no place and no
    counter). Bounded at the size seen first, the torn bytes stay a last line without a newline,
    which a reader of the newest segment leaves to the next ship; a record written after the
    open is read by the next ship too."""
    end = os.fstat(f.fileno()).st_size
    f.seek(start)
    offset = start
    for line in f:
        room = end - offset
        if len(line) >= room:
            if room > 0:
                yield line[:room]
            return
        offset += len(line)
        yield line


def _refuse_constant(name: str) -> None:
    """json.loads' parse_constant: NaN and Infinity are never in what the store writes."""
    raise ValueError(f"{name} is not a number the store writes")


def _sum_counts(one: StoreCounts, other: StoreCounts) -> StoreCounts:
    return StoreCounts(**{name: getattr(one, name) + getattr(other, name) for name in StoreCounts.FIELDS})


def _counts_slot(counts: StoreCounts, serial: int, drop: Optional[Drop] = None) -> bytes:
    """One slot of counts.json: the checksum of the text, a space, the text padded with spaces, a newline."""
    document = {
        **{name: getattr(counts, name) for name in StoreCounts.FIELDS},
        "serial": serial,
        **({} if drop is None else {"drop": list(drop)}),
    }
    text = json.dumps(document, separators=(",", ":")).encode()
    text = text.ljust(COUNTS_SLOT_BYTES - 10)
    if len(text) > COUNTS_SLOT_BYTES - 10:
        raise ValueError(f"counts too large for a slot: {text[:80]!r}")
    return b"%08x %s\n" % (zlib.crc32(text), text)


def _counts_of(data: bytes, with_serial: bool = False) -> tuple[Optional[StoreCounts], int, Optional[Drop]]:
    """(the counts of a slot, or of the JSON object of a store written before, None when unusable;
    serial; the size bound's deletion under way)."""
    try:
        if with_serial:
            if len(data) != COUNTS_SLOT_BYTES or b"%08x" % zlib.crc32(data[9:-1]) != data[:8]:
                return None, 0, None
            data = data[9:-1]
        document = json.loads(data, parse_constant=_refuse_constant)
        serial = document.pop("serial", 0) if with_serial else 0
        values = {name: document.get(name, 0) for name in StoreCounts.FIELDS}
        drop = document.get("drop") if with_serial else None
        if drop is not None:
            drop = Drop(*drop)
    except (ValueError, TypeError, AttributeError, RecursionError):
        return None, 0, None
    # Counters only grow from 0: a negative, fractional or huge value was not written by a store.
    numbers = (*values.values(), serial, *(drop or ()))
    if not all(type(v) is int and -1 <= v < 2**63 for v in numbers):
        return None, 0, None
    if min(*values.values(), serial) < 0 or (drop is not None and min(drop.through, drop.points) < 0):
        return None, 0, None
    return StoreCounts(**values), serial, drop
