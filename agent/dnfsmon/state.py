"""State between cron runs: the previous sample of every key, one file per target.

A target is one thing counters belong to: this host's kernel ("host:<name>"),
later each database. Its state file is named from a slug plus a hash of the
target id and records the id inside, so one target's samples are never
applied to another's (Telegraf's STATE_PERSISTENCE.md makes the same point).

Files are written atomically (files.write_atomically). A file that cannot be
used - unreadable JSON, another schema version, another target's id,
malformed samples, unreadable (another owner, a directory in its place,
nesting too deep) - is renamed aside to <name>.bad-<unix time> with one
warning, and the run re-baselines: no point is computed from doubtful state.
Files are opened without following symlinks (files.open_in_directory).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Iterable
from typing import Optional

from .errors import EnvironmentProblem
from .files import check_directory, open_in_directory, write_atomically
from .rates import Sample

log = logging.getLogger(__name__)

# Bump when the file's layout or a sample's meaning changes; older files are
# then set aside (re-baseline) rather than misread.
SCHEMA_VERSION = 1
LOCK_NAME = "collect.lock"


def state_file_name(target_id: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", target_id)[:60]
    digest = hashlib.sha256(target_id.encode()).hexdigest()[:12]
    return f"{slug}-{digest}.state.json"


class StateFile:
    def __init__(self, directory: str, target_id: str):
        self.directory = directory
        self.target_id = target_id
        self.path = os.path.join(directory, state_file_name(target_id))

    def _read(self) -> Optional[bytes]:
        """The file's bytes; None when absent or unusable (then set aside)."""
        try:
            fd = open_in_directory(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        except EnvironmentProblem as problem:
            self._set_aside(f"unusable ({problem})")
            return None
        try:
            with os.fdopen(fd, "rb") as f:
                return f.read()
        except OSError as error:
            self._set_aside(f"unreadable ({error.strerror})")
            return None

    def load(self) -> dict[str, Sample]:
        """Previous samples by state key; empty (re-baseline) when there are none usable."""
        raw = self._read()
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
                return {s.state_key: s for s in samples}
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as error:
            problem = f"unreadable ({error.__class__.__name__}: {str(error)[:200]})"
        self._set_aside(problem)
        return {}

    def _set_aside(self, problem: str) -> None:
        aside = f"{self.path}.bad-{int(time.time())}"
        try:
            os.replace(self.path, aside)  # renames a symlink or directory itself, never its target
        except OSError as error:
            raise EnvironmentProblem(
                f"state file {self.path} {problem}, and it cannot be moved aside ({error.strerror}); remove it"
            ) from None
        log.warning("state file %s %s: moved to %s; this run re-baselines", self.path, problem, aside)

    def load_json(self) -> dict:
        """A small JSON object kept for the target (e.g. the simulator's memory); {} when unusable."""
        samples_or_data = self._load_document()
        return samples_or_data if isinstance(samples_or_data, dict) else {}

    def save_json(self, data: dict) -> None:
        document = {"schema": SCHEMA_VERSION, "target": self.target_id, "data": data}
        self._write(json.dumps(document).encode())

    def _load_document(self) -> Optional[dict]:
        raw = self._read()
        if raw is None:
            return None
        try:
            document = json.loads(raw)
        except (ValueError, RecursionError):
            self._set_aside("unreadable JSON")
            return None
        if (
            not isinstance(document, dict)
            or document.get("schema") != SCHEMA_VERSION
            or document.get("target") != self.target_id
        ):
            self._set_aside("not this target's, or another schema")
            return None
        return document.get("data")

    def save(self, samples: Iterable[Sample]) -> None:
        data = {
            "schema": SCHEMA_VERSION,
            "target": self.target_id,
            "samples": [s.to_json() for s in sorted(samples, key=lambda s: s.state_key)],
        }
        self._write(json.dumps(data, separators=(",", ":")).encode())

    def _write(self, data: bytes) -> None:
        try:
            write_atomically(self.path, data, mode=0o600)
        except OSError as error:
            # The points are stored already; the next run diffs against the older sample.
            raise EnvironmentProblem(
                f"cannot save state file {self.path} ({error.strerror}): free space on its file system "
                "or make the directory writable by the agent's user"
            ) from None


class LockHeld(RuntimeError):
    """Another dnfsmon run holds the lock."""


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

    def acquire(self) -> None:
        check_directory(self.directory)
        fd = open_in_directory(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            if error.errno in (errno.EWOULDBLOCK, errno.EACCES):
                raise LockHeld(f"another dnfsmon run (pid {holder}) holds {self.path}") from None
            raise EnvironmentProblem(f"cannot lock {self.path}: {error.strerror}") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
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
