"""Sources: one module per source, each a pure parser with a thin reader.

Every source module provides:
- NAME: the source's name in config, captures and logs;
- MEASUREMENTS: the measurements of its samples (its keys in the state);
- read(inputs) -> Raw: the thin I/O part, reading the files it needs live;
- samples(raw, host) -> (samples, problems): the pure part, text to Samples;
and then one of:
- fields(interval) -> dict: the published fields of one key's interval,
  when each key is a published series (an interface, a mount);
- aggregate(result, samples) -> points: when keys are finer than the series
  published (TCP sockets summed per filer), diffed per key first and then
  summed with dnfsmon.rates.aggregate.
Either computes only with the helpers in dnfsmon.rates. A source that reads
another system may also provide failure(samples) -> reason or None: what it
could not read this time, while still publishing what it could.

A `Raw` is exactly what a capture directory stores (see README, "Capture
format"), so `dnfsmon diff` runs the same code on captured text as `collect`
runs on live files.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Optional

# Path (relative to the capture root) holding the kernel's boot id. Host
# sources put it in every sample's identity: a reboot resets all counters,
# and CLOCK_BOOTTIME (their clock) restarts with it.
BOOT_ID_PATH = "proc/sys/kernel/random/boot_id"


class ParseError(ValueError):
    """Input that does not have the documented shape.

    Names the file and, when there is one, the line (1-based) and its text,
    so a user can find the offending input at once.
    """

    def __init__(self, path: str, message: str, line_no: Optional[int] = None, line: Optional[str] = None):
        self.path = path
        self.message = message
        self.line_no = line_no
        self.line = line
        where = path if line_no is None else f"{path}:{line_no}"
        text = "" if line is None else f": {line.strip()!r}"
        super().__init__(f"{where}: {message}{text}")


def is_unsigned(text: str) -> bool:
    """True for ASCII digits only: str.isdigit() also accepts '¹' or '٣', which int() refuses."""
    return text.isascii() and text.isdigit()


@dataclass
class Raw:
    """The raw inputs of one source at one moment."""

    # Relative path ("proc/net/dev") -> file text; None when the file could
    # not be read (e.g. /sys/class/net/lo/speed answers EINVAL).
    files: dict[str, Optional[str]]
    # Seconds on the source's clock (CLOCK_BOOTTIME for host sources).
    time: float
    # Seconds since the Unix epoch when the files were read.
    wall_time: float

    def text(self, path: str) -> str:
        """The text of a file that must be present, or ParseError naming it."""
        value = self.files.get(path)
        if value is None:
            raise ParseError(path, "file missing or unreadable")
        return value


@dataclass(frozen=True)
class HostInputs:
    """What host sources read: where /proc and /sys are (configurable so tests
    use fixture trees) and which server ports are NFS filers."""

    proc: str = "/proc"
    sys: str = "/sys"
    nfs_ports: tuple[int, ...] = (2049,)

    def path(self, relative: str) -> str:
        top, _, rest = relative.partition("/")
        if top == "proc":
            return os.path.join(self.proc, rest)
        if top == "sys":
            return os.path.join(self.sys, rest)
        raise ValueError(f"path {relative!r} is neither under proc/ nor sys/")

    def read(self, relative: str) -> Optional[str]:
        """File text, or None when it does not exist or cannot be read."""
        try:
            with open(self.path(relative), encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return None

    def listdir(self, relative: str) -> list:
        try:
            return sorted(os.listdir(self.path(relative)))
        except OSError:
            return []


def host_clock() -> float:
    """Seconds since boot, counting suspend: immune to NTP steps of the wall clock."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def read_host_files(inputs: HostInputs, paths: Iterable[str]) -> Raw:
    """Read host files with the clocks taken right after, plus the boot id."""
    files = {p: inputs.read(p) for p in [*list(paths), BOOT_ID_PATH]}
    return Raw(files=files, time=host_clock(), wall_time=time.time())


def boot_identity(raw: Raw) -> tuple:
    """The identity every host sample carries: the boot id (empty if unknown)."""
    return ((raw.files.get(BOOT_ID_PATH) or "").strip(),)


# The registry of host sources, by name. Imported last: each source module
# imports the helpers above from this package.
from . import filer_tcp, mountstats, nic, oracle, rpc, tcp  # noqa: E402

HOST_SOURCES = {module.NAME: module for module in (nic, tcp, mountstats, filer_tcp, rpc)}
# Every source a capture may hold: the host's and the database's.
ALL_SOURCES = dict(HOST_SOURCES, **{oracle.NAME: oracle})
