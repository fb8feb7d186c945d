"""Durable file writes shared by the state files and the store."""

from __future__ import annotations

import os
import tempfile


def fsync_dir(path: str) -> None:
    """Make a directory's entries (new, renamed, deleted files) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


TEMP_PREFIX = ".tmp-"


def remove_stale_temps(directory: str) -> None:
    """Delete temp files a killed writer left behind; call only while holding the run lock."""
    for name in os.listdir(directory):
        if name.startswith(TEMP_PREFIX):
            try:
                os.unlink(os.path.join(directory, name))
            except FileNotFoundError:
                pass


def write_atomically(path: str, data: bytes, mode: int = 0o640) -> None:
    """Replace `path` with `data` so readers see the old or the new file, never a mix.

    Temp file in the same directory (rename is atomic only within one file
    system), fsync the file, rename over the target, fsync the directory.
    """
    directory = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=directory)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    fsync_dir(directory)
