"""State between cron runs: the previous sample of every key, per target.

A target is one thing counters belong to: this host's kernel ("host:<name>"),
later each database. Its state file is named from a slug plus a hash of the
target id and records the id inside, so one target's samples are never
applied to another's (Telegraf's STATE_PERSISTENCE.md makes the same point).

Two files hold one target's state, so that what a sample writes is
proportional to what changed, not to how many keys there are (at 1000 NFS
mounts a state holds some 35 000 samples, 17 MB of JSON, and most of them
do not move between two samples):

- the snapshot, <name>.state.json: every sample, written atomically
  (files.write_atomically) with a random `generation`;
- the journal, <name>.state.journal: one record per save since that
  snapshot, appended and fsync()ed. A record holds what a reader needs to
  turn the previous state into this one: the keys that left, the samples
  that changed in full, and, for each measurement read, its new clock (time,
  wall time), the `started` of each of its other keys (a mount's start is
  estimated from its age at every reading and moves by fractions of a
  second: it is kept exactly, as runs of equal values in key order) and
  the counter and gauge values of those keys that changed, each key named
  by its place in that order (a series key is some 130 bytes, and a
  mount's age gauge moves at every reading).

Each record is framed like a store record (a CRC-32 of its JSON text, then
the text) and names the snapshot generation it follows. Loading replays the
records of the snapshot's generation in order and stops at the first one
that is torn or corrupt (a crash during an append): the state is then the
one before that record, which the next run diffs against - an interval that
overlaps points already stored, exact, never negative - and the next save
writes a fresh snapshot. A journal left from an older snapshot (a crash
between writing a snapshot and removing the journal) names another
generation and is ignored. A new snapshot is written when the journal would
pass twice the snapshot's size or MAX_JOURNAL_RECORDS records, which bounds
what a load replays.

A snapshot that cannot be used - unreadable JSON, another schema version,
another target's id, malformed samples, unreadable (another owner, a
directory in its place, nesting too deep) - is renamed aside to
<name>.bad-<unix time> with one warning, and the run re-baselines: no point
is computed from doubtful state. Files are opened without following
symlinks (files.open_in_directory).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Optional

from .errors import EnvironmentProblem
from .errors import LockHeld as LockHeld
from .files import (
    check_directory,
    flock_within,
    fsync_dir,
    move_aside,
    open_in_directory,
    read_in_directory,
    write_all,
    write_atomically,
)
from .rates import Members, Sample

log = logging.getLogger(__name__)

# Bump when the file's layout or a sample's meaning changes; older files are
# then set aside (re-baseline) rather than misread. A snapshot without a
# generation (written before the journal existed) is read as generation "".
SCHEMA_VERSION = 1
LOCK_NAME = "collect.lock"
# A snapshot replaces the journal before the journal passes this many records
# or JOURNAL_TO_SNAPSHOT times the snapshot's size: a load replays at most that.
MAX_JOURNAL_RECORDS = 32
JOURNAL_TO_SNAPSHOT = 2
# A state file is read whole: at 1000 NFS mounts a snapshot is some 17 MB (its journal at most
# twice that); one far larger was not written by dnfsmon and is set aside unread.
STATE_MAX_BYTES = 512 * 1024 * 1024


def state_file_name(target_id: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", target_id)[:60]
    digest = hashlib.sha256(target_id.encode()).hexdigest()[:12]
    return f"{slug}-{digest}.state.json"


class BadRecord(ValueError):
    """A journal record that cannot be applied (torn, corrupt, or not of this state)."""


def frame(text: str) -> bytes:
    """One journal line: the CRC-32 of the text (8 lowercase hex digits), a space, the text."""
    data = text.encode()
    return b"%08x %s\n" % (zlib.crc32(data), data)


def unframe(line: bytes) -> dict:
    """The JSON object of one journal line; BadRecord when torn or corrupt."""
    if not line.endswith(b"\n"):
        raise BadRecord("torn record (no newline)")
    crc, _, text = line[:-1].partition(b" ")
    if len(crc) != 8 or b"%08x" % zlib.crc32(text) != crc:
        raise BadRecord("checksum mismatch")
    try:
        record = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise BadRecord(f"not JSON ({error.__class__.__name__})") from None
    if not isinstance(record, dict):
        raise BadRecord("not a JSON object")
    return record


def runs(values: list) -> list[list]:
    """[[count, value], ...] of consecutive equal values: a mount's ops share their start."""
    found: list[list] = []
    for value in values:
        if found and found[-1][1] == value:
            found[-1][0] += 1
        else:
            found.append([1, value])
    return found


def _unrun(encoded: object, measurement: str, keys: int) -> list[Optional[float]]:
    """The starts of a record's runs, for a measurement of `keys` keys: more is not this state's
    record (and a crafted run of 10^10 keys must not be expanded to find that out)."""
    if not isinstance(encoded, list):
        raise BadRecord("started is not a list of runs")
    values: list[Optional[float]] = []
    for item in encoded:
        count, value = item
        if type(count) is not int or count < 1:
            raise BadRecord(f"run of {count!r} keys")
        if len(values) + count > keys:
            raise BadRecord(f"{measurement}: more starts for {keys} keys than it has")
        values.extend([None if value is None else float(value)] * count)
    return values


def _patches(encoded: object, keys: list[str]) -> dict:
    """A record's changed values as {key: values}: written as [[place, values], ...], a place
    being an index into the measurement's refreshed keys (journal_record), or, by a version
    before places, as {key: values}. Whether each fits its sample is Replay.apply's check."""
    if isinstance(encoded, dict):
        return encoded
    if not isinstance(encoded, list):
        raise BadRecord("changed values are neither by place nor by key")
    found: dict = {}
    for item in encoded:
        if not isinstance(item, list) or len(item) != 2:
            raise BadRecord(f"{item!r:.80} is not [place, values]")
        place, values = item
        if type(place) is not int or not 0 <= place < len(keys):
            raise BadRecord(f"place {place!r:.40} outside the {len(keys)} refreshed keys")
        found[keys[place]] = values
    return found


def changed_values(before: Mapping, after: Mapping) -> dict:
    """The values of `after` that differ from `before` (in type too: True is not 1 in JSON); same names in both."""
    return {
        name: value for name, value in after.items() if type(value) is not type(before[name]) or value != before[name]
    }


def journal_record(
    generation: str, saved: dict[str, Sample], new: dict[str, Sample]
) -> tuple[Optional[dict], dict[str, Sample]]:
    """(the record that turns `saved` into `new`, or None when nothing changed; `new` in a reader's order).

    `saved` is what the files hold, in the order a reader rebuilds it. A key
    is carried as a refresh when it keeps its identity and the names of its
    counters, gauges and widths: the record holds the measurement's common
    clock (time and wall time), the key's `started`, and only those counter
    and gauge values that changed. A new key, or any other change, writes
    the sample in full.
    """
    removed = [key for key in saved if key not in new]
    written: dict[str, Sample] = {}
    moved: dict[str, list[Sample]] = {}  # measurement -> its samples that changed but kept their shape
    for key, sample in new.items():
        before = saved.get(key)
        if (
            before is None
            # A Members sample's values are its columns, not counters and gauges a record patches.
            or type(sample) is Members
            or sample.identity != before.identity
            or sample.widths != before.widths
            or sample.counters.keys() != before.counters.keys()
            or sample.gauges.keys() != before.gauges.keys()
        ):
            written[key] = sample
        elif sample != before:
            moved.setdefault(sample.measurement, []).append(sample)
    # Each measurement read gets one clock: the most common among its moved
    # samples (all of them for a host source; an Oracle instance's own clock
    # differs, and its samples are written in full).
    clocks = {
        measurement: Counter((s.time, s.wall_time) for s in samples).most_common(1)[0][0]
        for measurement, samples in moved.items()
    }
    refreshed: dict[str, list[str]] = {measurement: [] for measurement in clocks}
    for key, before in saved.items():
        keys = refreshed.get(before.measurement)
        if keys is None or key not in new or key in written:
            continue
        sample = new[key]
        if (sample.time, sample.wall_time) == clocks[before.measurement]:
            keys.append(key)
        else:
            written[key] = sample  # its clock is not the measurement's (or it did not move at all)
    if not (removed or written or clocks):
        return None, saved
    groups = {
        measurement: {
            "time": clocks[measurement][0],
            "wall_time": clocks[measurement][1],
            "started": runs([new[key].started for key in keys]),
            # A key by its place among the measurement's refreshed keys (the order of `started`), not
            # its text: a mount's age gauge moves at every reading, and its series key is some 130
            # bytes against 5 for the place (1000 idle mounts: 140 KB a record before, 20 KB now).
            # Counters are integers (a snapshot stores them so): equal dicts, compared in C, hold no change.
            "counters": [
                [place, changed_values(saved[key].counters, new[key].counters)]
                for place, key in enumerate(keys)
                if saved[key].counters != new[key].counters
            ],
            "gauges": [
                [place, values]
                for place, key in enumerate(keys)
                if (values := changed_values(saved[key].gauges, new[key].gauges))
            ],
        }
        for measurement, keys in refreshed.items()
    }
    record = {
        "generation": generation,
        "removed": removed,
        "groups": groups,
        "samples": [sample.to_json() for sample in written.values()],
    }
    # The reader's order: removed keys leave, refreshed keys keep their place, new keys come last.
    result = {key: new[key] for key in saved if key in new}
    result.update((key, sample) for key, sample in written.items() if key not in result)
    return record, result


class Replay:
    """A snapshot's samples with journal records applied in order.

    A refreshed key's clock and start are kept aside with dict updates, and
    its changed values merged into it once, in result(): a record costs
    Python work only for what changed, and each sample is built once.
    """

    def __init__(self, samples: dict[str, Sample]):
        self.samples = samples  # in the order a reader rebuilds it (journal_record's order)
        # Each measurement's keys, in that order (a dict as an ordered set).
        self.keys_of: dict[str, dict[str, None]] = {}
        for key, sample in samples.items():
            self.keys_of.setdefault(sample.measurement, {})[key] = None
        # Since each key's sample: its newest clock (time, wall time) and start, and the values that changed.
        self.clock: dict[str, tuple[float, float]] = {}
        self.started: dict[str, Optional[float]] = {}
        self.counters: dict[str, dict] = {}
        self.gauges: dict[str, dict] = {}

    def apply(self, record: dict) -> None:
        """Apply one record; BadRecord (and nothing changed) when it does not fit."""
        try:
            removed = set(record["removed"])
            groups = {
                str(m): (
                    float(g["time"]),
                    float(g["wall_time"]),
                    _unrun(g["started"], str(m), len(self.keys_of.get(str(m), ()))),
                    g["counters"],
                    g["gauges"],
                )
                for m, g in record["groups"].items()
            }
            written = {s.state_key: s for s in (Sample.from_json(item) for item in record["samples"])}
        except (KeyError, TypeError, ValueError, OverflowError, AttributeError, RecursionError) as error:
            raise BadRecord(f"malformed ({error.__class__.__name__}: {str(error)[:200]})") from None
        refreshed: dict[str, list[str]] = {}
        for measurement, (_, _, starts, counters, gauges) in groups.items():
            keys = self.keys_of.get(measurement, {})
            if removed or written:
                refreshed[measurement] = [k for k in keys if k not in removed and k not in written]
            else:
                refreshed[measurement] = list(keys)
            if len(refreshed[measurement]) != len(starts):
                raise BadRecord(f"{measurement}: {len(starts)} starts for {len(refreshed[measurement])} keys")
            counters, gauges = _patches(counters, refreshed[measurement]), _patches(gauges, refreshed[measurement])
            groups[measurement] = (*groups[measurement][:3], counters, gauges)
            for what, patches in (("counters", counters), ("gauges", gauges)):
                for key, patch in patches.items():
                    if (
                        not isinstance(patch, dict)
                        or key not in keys
                        or key in removed
                        or key in written
                        or not patch.keys() <= getattr(self.samples[key], what).keys()
                    ):
                        raise BadRecord(f"{measurement}: {what} of {key!r} do not fit its sample")
                    if what == "counters" and not all(type(value) is int for value in patch.values()):
                        raise BadRecord(f"{measurement}: a counter of {key!r} is not an integer")
        for key in removed | written.keys():
            for kept in (self.clock, self.started, self.counters, self.gauges):
                kept.pop(key, None)
        for key in removed:
            sample = self.samples.pop(key, None)
            if sample is not None:
                del self.keys_of[sample.measurement][key]
        for measurement, refreshed_keys in refreshed.items():
            when, wall_time, starts, counters, gauges = groups[measurement]
            self.clock.update(dict.fromkeys(refreshed_keys, (when, wall_time)))
            self.started.update(zip(refreshed_keys, starts))
            for key, patch in counters.items():
                self.counters.setdefault(key, {}).update(patch)
            for key, patch in gauges.items():
                self.gauges.setdefault(key, {}).update(patch)
        for key, sample in written.items():
            self.samples[key] = sample
            self.keys_of.setdefault(sample.measurement, {})[key] = None

    def result(self) -> dict[str, Sample]:
        """The samples after every record applied."""
        for key, (when, wall_time) in self.clock.items():
            before = self.samples[key]
            counters, gauges = self.counters.get(key), self.gauges.get(key)
            self.samples[key] = Sample(
                before.measurement,
                before.key,
                when,
                wall_time,
                {**before.counters, **counters} if counters else before.counters,
                {**before.gauges, **gauges} if gauges else before.gauges,
                before.identity,
                self.started[key],
                before.widths,
            )
        self.clock, self.started, self.counters, self.gauges = {}, {}, {}, {}
        return self.samples


class StateFile:
    def __init__(self, directory: str, target_id: str):
        self.directory = directory
        self.target_id = target_id
        self.path = os.path.join(directory, state_file_name(target_id))
        self.journal_path = self.path[: -len(".json")] + ".journal"
        # What the files hold, in the order a load rebuilds it; None until a
        # load or save, and then the next save writes a snapshot.
        self._saved: Optional[dict[str, Sample]] = None
        self._generation = ""
        self._snapshot_bytes = 0
        self._journal_bytes = 0
        self._journal_records = 0

    def _read(self, path: str) -> Optional[bytes]:
        """A file's bytes; None when absent or unusable (then set aside)."""
        try:
            return read_in_directory(path, STATE_MAX_BYTES)
        except FileNotFoundError:
            return None
        except EnvironmentProblem as problem:
            self._set_aside(path, f"unusable ({problem})")
            return None
        except OSError as error:
            self._set_aside(path, f"unreadable ({error.strerror})")
            return None

    def load(self) -> dict[str, Sample]:
        """Previous samples by state key; empty (re-baseline) when there are none usable."""
        self._saved = None
        raw = self._read(self.path)
        if raw is None:
            return {}
        problem = None
        try:
            data = json.loads(raw)
            if not isinstance(data, dict):
                problem = "not a JSON object"
            elif data.get("schema") != SCHEMA_VERSION:
                problem = f"schema {data.get('schema')!r}, this dnfsmon writes {SCHEMA_VERSION}"
            elif data.get("target") != self.target_id:
                problem = f"belongs to target {data.get('target')!r}, not {self.target_id!r}"
            else:
                samples = [Sample.from_json(item) for item in data["samples"]]
                generation = str(data.get("generation", ""))
        # OverflowError: a counter of Infinity (int() of it); bit rot never writes one, an edit can.
        except (ValueError, KeyError, TypeError, OverflowError, AttributeError, RecursionError) as error:
            problem = f"unreadable ({error.__class__.__name__}: {str(error)[:200]})"
        if problem is not None:
            self._set_aside(self.path, problem)
            return {}
        self._generation = generation
        self._snapshot_bytes = len(raw)
        replay = Replay({s.state_key: s for s in samples})
        complete = self._replay(replay)
        state = replay.result()
        # A journal that could not be replayed whole is replaced by the next save's snapshot.
        self._saved = state if complete else None
        return dict(state)

    def _replay(self, replay: Replay) -> bool:
        """Apply this snapshot's journal records; False when one could not be applied."""
        raw = self._read(self.journal_path)
        self._journal_bytes = self._journal_records = 0
        if raw is None:
            return True
        offset = 0
        for number, line in enumerate(raw.splitlines(keepends=True), start=1):
            try:
                record = unframe(line)
                if record.get("generation") != self._generation:
                    # Left by a crash before the last snapshot replaced it: that snapshot holds it all.
                    return False
                replay.apply(record)
            except BadRecord as error:
                log.warning(
                    "state journal %s, record %d at byte %d: %s; the state from before it is used "
                    "(the next interval is longer, never wrong)",
                    self.journal_path,
                    number,
                    offset,
                    error,
                )
                return False
            offset += len(line)
            self._journal_records = number
        self._journal_bytes = offset
        return True

    def _set_aside(self, path: str, problem: str) -> None:
        aside = move_aside(path, f"state file {path} {problem}")
        log.warning("state file %s %s: moved to %s; this run re-baselines", path, problem, aside)

    def load_json(self) -> dict:
        """A small JSON object kept for the target (e.g. the simulator's memory); {} when unusable."""
        samples_or_data = self._load_document()
        return samples_or_data if isinstance(samples_or_data, dict) else {}

    def save_json(self, data: dict) -> None:
        document = {"schema": SCHEMA_VERSION, "target": self.target_id, "data": data}
        self._write(json.dumps(document).encode())

    def _load_document(self) -> Optional[dict]:
        raw = self._read(self.path)
        if raw is None:
            return None
        try:
            document = json.loads(raw)
        except (ValueError, RecursionError):
            self._set_aside(self.path, "unreadable JSON")
            return None
        if (
            not isinstance(document, dict)
            or document.get("schema") != SCHEMA_VERSION
            or document.get("target") != self.target_id
        ):
            self._set_aside(self.path, "not this target's, or another schema")
            return None
        return document.get("data")

    def save(self, samples: Iterable[Sample]) -> None:
        """Make `samples` the state: a journal record of what changed, or a new snapshot."""
        new = {s.state_key: s for s in samples}
        if self._saved is None:
            self._save_snapshot(new)
            return
        record, result = journal_record(self._generation, self._saved, new)
        if record is None:
            return  # nothing changed since the last save: the files hold it already
        line = frame(json.dumps(record, separators=(",", ":")))
        if (
            self._journal_records >= MAX_JOURNAL_RECORDS
            or self._journal_bytes + len(line) > JOURNAL_TO_SNAPSHOT * self._snapshot_bytes
        ):
            self._save_snapshot(new)
            return
        self._append(line)
        self._saved = result
        self._journal_bytes += len(line)
        self._journal_records += 1

    def _save_snapshot(self, new: dict[str, Sample]) -> None:
        generation = os.urandom(8).hex()  # secrets.token_hex(8) is this, without importing secrets and hmac
        ordered = {key: new[key] for key in sorted(new)}
        data = {
            "schema": SCHEMA_VERSION,
            "target": self.target_id,
            "generation": generation,
            "samples": [s.to_json() for s in ordered.values()],
        }
        encoded = json.dumps(data, separators=(",", ":")).encode()
        self._saved = None  # until both files agree again
        self._write(encoded)
        try:
            os.unlink(self.journal_path)  # its records name the older generation: ignored if left
        except FileNotFoundError:
            pass
        except OSError as error:
            raise EnvironmentProblem(
                f"cannot remove state journal {self.journal_path} ({error.strerror}): make the directory "
                "writable by the agent's user"
            ) from None
        self._saved = ordered
        self._generation = generation
        self._snapshot_bytes = len(encoded)
        self._journal_bytes = self._journal_records = 0

    def _append(self, line: bytes) -> None:
        created = self._journal_bytes == 0
        try:
            fd = open_in_directory(self.journal_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                if created:
                    os.ftruncate(fd, 0)  # what is there is not this generation's (a crash left it)
                write_all(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
            if created:
                fsync_dir(self.directory)
        except OSError as error:
            # A partial record is torn: the next load stops before it, and the next save writes a snapshot.
            self._saved = None
            raise EnvironmentProblem(
                f"cannot save state journal {self.journal_path} ({error.strerror}): free space on its file "
                "system or make the directory writable by the agent's user"
            ) from None

    def _write(self, data: bytes) -> None:
        try:
            write_atomically(self.path, data, mode=0o600)
        except OSError as error:
            # The points are stored already; the next run diffs against the older sample.
            raise EnvironmentProblem(
                f"cannot save state file {self.path} ({error.strerror}): free space on its file system "
                "or make the directory writable by the agent's user"
            ) from None


class RunLock:
    """An exclusive, non-blocking flock on <directory>/<name> (collect.lock in state_dir).

    The kernel releases a flock when its process dies, even by SIGKILL, so a
    crashed run never leaves a stale lock behind. The directory is checked
    (owner, mode) and the lock file opened without following a symlink.
    """

    def __init__(self, directory: str, name: str = LOCK_NAME):
        self.directory = directory
        self.path = os.path.join(directory, name)
        self.fd: Optional[int] = None

    def acquire(self, wait_s: float = 0.0) -> None:
        """Take the lock, waiting up to `wait_s` seconds for the run that holds it; LockHeld after that."""
        check_directory(self.directory)
        fd = open_in_directory(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            taken = flock_within(fd, wait_s)
        except OSError as error:
            os.close(fd)
            raise EnvironmentProblem(f"cannot lock {self.path}: {error.strerror}") from None
        if not taken:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            waited = f" (waited {wait_s:g} s)" if wait_s else ""
            raise LockHeld(f"another dnfsmon run (pid {holder}) holds {self.path}{waited}")
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError as error:
            # The pid is for people only (the flock is the lock), but a file system that cannot
            # take 8 bytes cannot take this run's points or cursor either: say where.
            os.close(fd)
            raise EnvironmentProblem(
                f"cannot write {self.path} ({error.strerror}): free space on its file system "
                "(or make it writable by the agent's user); this run wrote nothing more"
            ) from None
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
