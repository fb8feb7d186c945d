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
- Bounded: after an append, whole oldest segments are deleted until the
  store fits in max_bytes; the unshipped points deleted are counted in
  `dropped_points`.
- Counters (counts.json) are totals since the store was created, published
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
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import re
import time
import zlib
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple, NoReturn, Optional, Union

from .errors import EnvironmentProblem
from .files import check_directory, fsync_dir, open_in_directory, remove_stale_temps, write_all, write_atomically
from .points import Point, from_line, series_key, to_line

log = logging.getLogger(__name__)

SEGMENT_RE = re.compile(r"^seg-(\d{16})\.(lp|jsonl)$")
# Segments of line protocol records; ".jsonl" are JSON records (stores written before).
SEGMENT_SUFFIX = ".lp"
OLD_SEGMENT_SUFFIX = ".jsonl"
# Counters the store keeps for the agent's own report, in this file.
COUNTS_FILE = "counts.json"
CURSOR_FILE = "cursor.json"
QUARANTINE_FILE = "quarantine.jsonl"
LATEST_FILE = "latest.lp"
# The index of stores written before latest.lp: one JSON point per series.
OLD_LATEST_FILE = "latest.json"
STORE_LOCK = "store.lock"
SHIP_LOCK = "ship.lock"
# A store change takes milliseconds; a lock held longer than this is a stuck process.
STORE_LOCK_WAIT_S = 30.0
# The quarantine keeps at most twice this (the file and one rotation).
QUARANTINE_MIN_BYTES = 64 * 1024


class StoreWriteError(EnvironmentProblem):
    """An append could not be written (disk full, I/O error); its points are counted as unwritten."""


class StoreLocked(RuntimeError):
    """Another process holds the store's lock for longer than a store change takes."""


@dataclass
class StoreCounts:
    """Totals since the store was created (counters: never reset, never decrease)."""

    dropped_points: int = 0
    torn_records: int = 0
    unwritten_points: int = 0


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


def flock_within(fd: int, seconds: float) -> bool:
    """Take an exclusive flock, waiting at most `seconds`; False when still held by another process."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as error:
            if error.errno not in (errno.EWOULDBLOCK, errno.EACCES):
                raise
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _stamp(line: str) -> int:
    """The timestamp of a line of line protocol: its last word (points.to_line)."""
    return int(line[line.rindex(" ") + 1 :])


def _latest_entry(line: str) -> str:
    """A line of latest.lp: a space and the line, or, for a line with a line break (in a
    string field value), J and the line as a JSON string; a line is written atomically
    with the whole file, so no checksum."""
    return f"J{json.dumps(line)}\n" if "\n" in line else f" {line}\n"


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
        if not read_only:
            check_directory(directory)
            with self.locked():  # every write in the store holds the lock: no temp is in use now
                remove_stale_temps(directory)

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
            # Never reuse a sequence number the cursor may still name.
            sequence = self.cursor().segment + 1
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
            with open(fd, "rb", closefd=False) as f:
                data = f.read()
            keep = data.rfind(b"\n") + 1
            os.ftruncate(fd, keep)
            os.fsync(fd)
        finally:
            os.close(fd)
        log.warning("store %s: cut a torn record of %d bytes left by an interrupted write", path, size - keep)
        self._add_counts(torn_records=1)

    def _enforce_bound(self) -> None:
        segments = self.segments()
        total = sum(os.path.getsize(p) for _, p in segments)
        cursor = self._valid_cursor(segments)
        dropped = bad = 0
        # Never delete the newest segment: it holds the points just written.
        for sequence, path in segments[:-1]:
            if total <= self.max_bytes:
                break
            size = os.path.getsize(path)
            start = cursor.offset if sequence == cursor.segment else 0
            if sequence >= cursor.segment:
                for _, record in self._read_segment(path, start, warn=False):
                    if record is None:
                        bad += 1
                    else:
                        dropped += 1
            os.unlink(path)
            total -= size
        if dropped or bad:
            fsync_dir(self.directory)
            log.warning(
                "store %s over %d bytes: dropped the %d oldest unshipped points",
                self.directory,
                self.max_bytes,
                dropped,
            )
            self._add_counts(dropped_points=dropped, torn_records=bad)

    def _update_latest(self, lines: Sequence[str]) -> None:
        """Keep latest.lp (newest line per series) for `dnfsmon show`; best effort.

        Lines are merged by their series key and timestamp, never decoded to
        points: at 1000 mounts an append brings 33 400 of them."""
        latest = self._latest_by_series()
        for line in lines:
            key = series_key(line)
            known = latest.get(key)
            if known is None or _stamp(line) >= _stamp(known):
                latest[key] = line
        document = "".join([_latest_entry(line) for _, line in sorted(latest.items())])
        try:
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

    def latest_lines(self) -> Optional[list[str]]:
        """latest.lp: the newest point of every series as a line of line protocol; None when missing or unusable."""
        try:
            with open(self._path(LATEST_FILE), "rb") as f:
                text = f.read().decode()
            # See _latest_entry: a space, or J and a JSON string.
            return [line[1:] if line[0] == " " else _json_string(line[1:]) for line in text.split("\n")[:-1]]
        except (OSError, ValueError, IndexError):
            return None

    def old_latest_index(self) -> Optional[dict[str, Point]]:
        """latest.json of a store written before latest.lp, as series key -> point; None when missing or unusable."""
        try:
            with open(self._path(OLD_LATEST_FILE), "rb") as f:
                document = json.load(f)
            return {key: Point.from_json(data) for key, data in document.items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
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
        with open(path, "rb") as f:
            f.seek(start)
            offset = start
            for line in f:
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
            if path.endswith(SEGMENT_SUFFIX):
                yield from self._unshipped_lines(sequence, path, start, newest)
                continue
            for offset, record in self._read_segment(path, start, newest=newest):
                if record is None:
                    self._bad_seen.add(Position(sequence, offset))
                else:
                    yield Position(sequence, offset), record

    def _unshipped_lines(self, sequence: int, path: str, start: int, newest: bool) -> Iterator[tuple[Position, bytes]]:
        """unshipped's reading of one segment of line protocol records: what _read_segment and
        decode_line_record do, with the common record checked here (a ship reads 100 000 of them)."""
        with open(path, "rb") as f:
            f.seek(start)
            offset = start
            for line in f:
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
        try:
            with open(self._path(CURSOR_FILE), encoding="utf-8") as f:
                data = json.load(f)
            return Position(int(data["segment"]), int(data["offset"]))
        except FileNotFoundError:
            return Position(0, 0)
        except (OSError, ValueError, KeyError, TypeError) as error:
            # Re-sending everything is safe (InfluxDB overwrites); skipping is not.
            log.warning("store cursor unreadable (%s): shipping restarts from the oldest stored point", error)
            return Position(0, 0)

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
                with open(paths[cursor.segment], "rb") as f:
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
        log.error("quarantined a point of %s (%s) in %s: %s", point.measurement, dict(point.tags), path, reason)

    def quarantined(self) -> list[tuple[Point, str]]:
        found = []
        for path in (self._path(QUARANTINE_FILE + ".1"), self._path(QUARANTINE_FILE)):
            try:
                with open(path, "rb") as f:
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

    def _add_counts(self, dropped_points: int = 0, torn_records: int = 0, unwritten_points: int = 0) -> None:
        counts = self.counts()
        counts.dropped_points += dropped_points
        counts.torn_records += torn_records
        counts.unwritten_points += unwritten_points
        write_atomically(self._path(COUNTS_FILE), json.dumps(counts.__dict__).encode())

    def counts(self) -> StoreCounts:
        """The store's totals since it was created."""
        try:
            with open(self._path(COUNTS_FILE), encoding="utf-8") as f:
                data = json.load(f)
            return StoreCounts(**{k: int(v) for k, v in data.items() if k in StoreCounts.__dataclass_fields__})
        except (OSError, ValueError, TypeError, AttributeError):
            return StoreCounts()
