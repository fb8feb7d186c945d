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
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Mapping
from typing import Optional

from .sources import ALL_SOURCES
from .sources.base import Raw

FORMAT_VERSION = 1
MANIFEST = "capture.json"


class CaptureError(ValueError):
    pass


def _safe_join(directory: str, relative: str) -> str:
    if os.path.isabs(relative) or ".." in relative.split("/"):
        raise CaptureError(f"{directory}/{MANIFEST}: file path {relative!r} must be relative, without '..'")
    return os.path.join(directory, relative)


# The largest input file a capture may hold: /proc/self/mountstats of a host
# with thousands of mounts is a few MiB; anything far larger is not an input.
MAX_FILE_BYTES = 64 * 1024 * 1024


def _read_captured(directory: str, relative: str) -> Optional[str]:
    """One captured file's text; None when absent. Captures come from other hosts:
    a symlink (it could point at a local secret), a FIFO or device (it could
    block or never end) and an oversized file are refused, never read."""
    path = _safe_join(directory, relative)
    if not relative or "\0" in relative:
        raise CaptureError(f"{directory}/{MANIFEST}: file path {relative!r} is not a file name")
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
        if info.st_size > MAX_FILE_BYTES:
            raise CaptureError(f"{path}: {info.st_size} bytes, more than a captured input can be (64 MiB)")
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise CaptureError(f"{path}: more than a captured input can be (64 MiB)")
    return data.decode("utf-8", errors="replace")


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
            path = _safe_join(directory, relative)
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
    try:
        with open(manifest_path, encoding="utf-8") as f:
            manifest = json.load(f)
    except OSError as error:
        raise CaptureError(f"{manifest_path}: {error.strerror}") from None
    except ValueError as error:
        raise CaptureError(f"{manifest_path}: not valid JSON: {error}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_VERSION:
        raise CaptureError(f'{manifest_path}: expected an object with "format": {FORMAT_VERSION}')
    host = manifest.get("host")
    sources = manifest.get("sources")
    if not isinstance(host, str) or not host or not isinstance(sources, dict):
        raise CaptureError(f'{manifest_path}: needs "host" (a name) and "sources" (an object)')
    raws: dict[str, Raw] = {}
    failures: dict[str, str] = {}
    for name, entry in sources.items():
        where = f"{manifest_path}: source {name!r}"
        if name not in ALL_SOURCES:
            raise CaptureError(f"{where} is unknown; known: {', '.join(ALL_SOURCES)}")
        if not isinstance(entry, dict):
            raise CaptureError(f"{where} must be an object")
        if "failed" in entry:
            failures[name] = str(entry["failed"])
            continue
        try:
            time_s, wall_time = float(entry["time"]), float(entry["wall_time"])
            listed = [str(p) for p in entry["files"]]
        except (KeyError, TypeError, ValueError):
            raise CaptureError(f'{where} needs numeric "time" and "wall_time" and a "files" list') from None
        files: dict[str, Optional[str]] = {}
        for relative in listed:
            files[relative] = _read_captured(directory, relative)
        raws[name] = Raw(files=files, time=time_s, wall_time=wall_time)
    return host, raws, failures
