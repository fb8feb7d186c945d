"""Captures: every source's raw inputs at one moment, in a directory.

Format (documented in README.md, "Capture format", so captures can be written
by hand):

    DIR/capture.json
        {"format": 1,
         "host": "db1",
         "sources": {
            "nic": {"time": 1234.5, "wall_time": 1732240000.25,
                    "files": ["proc/net/dev", "sys/class/net/eth0/speed", ...]},
            "tcp": {"failed": "why it could not be read"}}}
    DIR/proc/net/dev, DIR/sys/class/net/eth0/speed, ...   (verbatim copies)

`time` is the source's clock in seconds (CLOCK_BOOTTIME for host sources:
only differences matter), `wall_time` seconds since the Unix epoch. A listed
file absent from DIR stands for one that could not be read (e.g. the speed
of a virtual interface).

With several databases ([[oracle]] tables) each has its own entry,
"oracle:<target>", whose files are under DIR/oracle:<target>/ (so that
each database's oracle/results.json is its own):

            "oracle:SALES": {"time": ..., "files": ["oracle/results.json"]},
            "oracle:HR": {"failed": "..."}
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
from collections.abc import Mapping
from typing import Optional

from .config import _host as host_problem
from .errors import CaptureError as CaptureError
from .sources import ALL_SOURCES, source_of
from .sources.base import Raw

FORMAT_VERSION = 1
MANIFEST = "capture.json"


def entry_directory(directory: str, name: str) -> str:
    """Where an entry's files are: DIR for a source's own entry, DIR/<entry> for one of several
    databases ("oracle:SALES"); CaptureError for an entry name that is not one directory's name."""
    if name == source_of(name):
        return directory
    if "/" in name or "\0" in name or name in (".", ".."):
        raise CaptureError(f"{directory}/{MANIFEST}: source {name!r} is not a name")
    return os.path.join(directory, name)


def _safe_join(directory: str, relative: str) -> str:
    if os.path.isabs(relative) or ".." in relative.split("/"):
        raise CaptureError(f"{directory}/{MANIFEST}: file path {relative!r} must be relative, without '..'")
    return os.path.join(directory, relative)


# What one capture's files may hold together. /proc/self/mountstats is most of it: some
# 3.2 KiB per NFS mount with its per-op lines (bench/inputs.py), so 8 MiB is about 2,500
# mounts, over twice the 1,000 the bench measures. Reading and diffing two captures costs
# some 15 bytes of memory per byte read: two of 8 MiB took 160 MB and 10 s on a 2-core
# machine, where two of 60 MB took 420 MB and 10.4 s (docs/capture-format.md). More is
# refused, never read.
MAX_CAPTURE_BYTES = 8 * 1024 * 1024


# capture.json lists the files and clocks of each source: some KiB, 1 MiB at 10 000 mounts.
MAX_MANIFEST_BYTES = 16 * 1024 * 1024
# A source's clocks: `time` any finite number (only differences matter); `wall_time` seconds
# since the epoch that a point's nanosecond timestamp can hold (a signed 64-bit integer, as
# InfluxDB's: up to the year 2262).
MAX_WALL_TIME_S = (2**63 - 1) / 1e9


def _read_captured(directory: str, relative: str, limit: int) -> Optional[bytes]:
    """One captured file's bytes; None when absent. Captures come from other hosts:
    a symlink (it could point at a local secret), a FIFO or device (it could
    block or never end) and a file past what is left of the capture's bound
    (`limit` bytes) are refused, never read."""
    path = _safe_join(directory, relative)
    if not relative or "\0" in relative:
        raise CaptureError(f"{directory}/{MANIFEST}: file path {relative!r} is not a file name")
    return _read_bounded(path, limit, f"more than a capture's files may hold together ({MAX_CAPTURE_BYTES >> 20} MiB)")


def _read_bounded(path: str, limit: int, bound: str) -> Optional[bytes]:
    """A capture file's bytes (None when absent): a regular file, not a link, at most `limit`
    bytes (`bound` says which in the message)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise CaptureError(f"{path}: a symbolic link; a capture holds copies of files, never links") from None
        raise CaptureError(f"{path}: {error.strerror}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise CaptureError(f"{path}: not a regular file (a directory, FIFO or device)")
    with os.fdopen(fd, "rb") as f:
        if info.st_size > limit:
            raise CaptureError(f"{path}: {info.st_size} bytes, {bound}: not read")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise CaptureError(f"{path}: {bound}: not read")
    return data


def write(directory: str, host: str, raws: Mapping[str, Raw], failures: Mapping[str, str]) -> None:
    os.makedirs(directory, exist_ok=True)
    sources: dict[str, dict] = {name: {"failed": reason} for name, reason in failures.items()}
    for name, raw in raws.items():
        for relative in raw.paths():
            # A document the reader held in memory is written as its JSON text:
            # the same bytes it had when readers handed over text.
            text = raw.text_or_none(relative)
            if text is None:
                continue
            path = _safe_join(entry_directory(directory, name), relative)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        sources[name] = {"time": raw.time, "wall_time": raw.wall_time, "files": raw.paths()}
    manifest = {"format": FORMAT_VERSION, "host": host, "sources": sources}
    with open(os.path.join(directory, MANIFEST), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")


def read(directory: str) -> tuple[str, dict[str, Raw], dict[str, str]]:
    """(host, raws, failures) of a capture; CaptureError names what is wrong."""
    manifest_path = os.path.join(directory, MANIFEST)
    data = _read_bounded(
        manifest_path, MAX_MANIFEST_BYTES, f"more than a manifest can be ({MAX_MANIFEST_BYTES >> 20} MiB)"
    )
    if data is None:
        raise CaptureError(f"{manifest_path}: No such file or directory")
    try:
        manifest = json.loads(data)
    except ValueError as error:  # UnicodeDecodeError included
        raise CaptureError(f"{manifest_path}: not valid JSON: {str(error)[:200]}") from None
    except RecursionError:
        raise CaptureError(f"{manifest_path}: not a capture manifest (JSON nested too deep)") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_VERSION:
        raise CaptureError(f'{manifest_path}: expected an object with "format": {FORMAT_VERSION}')
    host = manifest.get("host")
    sources = manifest.get("sources")
    if not isinstance(host, str) or not host or not isinstance(sources, dict):
        raise CaptureError(f'{manifest_path}: needs "host" (a name) and "sources" (an object)')
    # The host is a tag of every point: the config's rule for [agent] host applies.
    problem = host_problem(host)
    if problem:
        raise CaptureError(f'{manifest_path}: "host" {problem}')
    raws: dict[str, Raw] = {}
    failures: dict[str, str] = {}
    left = MAX_CAPTURE_BYTES  # what the capture's files may still hold
    for name, entry in sources.items():
        where = f"{manifest_path}: source {name!r}"
        if source_of(name) not in ALL_SOURCES:
            raise CaptureError(f"{where} is unknown; known: {', '.join(ALL_SOURCES)}")
        if not isinstance(entry, dict):
            raise CaptureError(f"{where} must be an object")
        if "failed" in entry:
            failures[name] = str(entry["failed"])
            continue
        try:
            time_s, wall_time = float(entry["time"]), float(entry["wall_time"])
            listed = [str(p) for p in entry["files"]]
        except (KeyError, TypeError, ValueError, OverflowError):
            raise CaptureError(f'{where} needs numeric "time" and "wall_time" and a "files" list') from None
        if not math.isfinite(time_s) or not 0 <= wall_time <= MAX_WALL_TIME_S:
            raise CaptureError(
                f'{where}: "time" must be a finite number and "wall_time" seconds since 1970 before 2262 '
                f"(a point's timestamp), not {time_s!r} and {wall_time!r}"
            )
        files: dict[str, Optional[str]] = {}
        for relative in listed:
            data = _read_captured(entry_directory(directory, name), relative, left)
            if data is not None:
                left -= len(data)
            files[relative] = None if data is None else data.decode("utf-8", errors="replace")
        raws[name] = Raw(files=files, time=time_s, wall_time=wall_time)
    return host, raws, failures
