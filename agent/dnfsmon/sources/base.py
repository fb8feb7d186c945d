"""The contract every source keeps, and the types sources share.

A source is one module in this package (nic, tcp, mountstats, ...), named as
the source, that defines a subclass of Source (HostSource for a source the
host target reads) and `build(config) -> Source`, which makes the source as
its config section configures it. The registry (dnfsmon.sources) builds each
configured source once per run and imports nothing else: a source's options,
filters and what it keeps from one reading to the next (a cache) live in its
instance, never in its module. A source provides:

- name: its name in config, captures and logs;
- measurements: the measurements of its samples (its keys in the state);
- parse(raw, host) -> Parsed: text to samples, a function of the reading
  and the source's configuration (a cache may make it faster, never
  different). Malformed parts go to `problems` (the rest is still used);
  input that cannot be read at all raises ParseError naming the file;
  `failure` says what a source reading another system could not read this
  time, while its samples still publish what it could. Any other exception
  is a bug: collect logs it as that source's failure, and the run goes on;
- publish(result, current) -> points: the published fields from the diffed
  samples, computed only with the helpers in dnfsmon.rates. Most sources
  publish one point per key: `rates.per_key_points(result, fields)`, with
  fields(interval) giving one key's published fields. A source whose keys are
  finer than its series (TCP sockets summed per filer) diffs per key first
  and then sums with `rates.aggregate`;
- for a host source (a HostSource): read(inputs) -> Raw, the thin I/O part,
  reading the files it needs from /proc and /sys; usually
  `read_host_files(inputs, [paths])`. A source of another system (the
  database) is read by its target instead (dnfsmon.targets).

A host source with no option, of the usual shape (samples(raw, host) ->
(samples, problems), one point per key from fields(interval)), is made by
`per_key_host_source`, and its build() returns that one instance.

Every field a source publishes has a row in dnfsmon/catalogue.csv (the tests
check both ways), and the source needs a golden case under tests/cases/diff.

A `Raw` is exactly what a capture directory stores (see dnfsmon.capture), so
`dnfsmon diff` runs the same code on captured text as `collect` runs on
live files; a document a reader holds decoded (`Raw.documents`) is stored as
its JSON text, and read back from it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from typing import Callable, NamedTuple, Optional

from .. import rates
from ..points import Point
from ..rates import DiffResult, Sample
from ..records import Record

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


class Raw(Record):
    """The raw inputs of one source at one moment (a plain class: see dnfsmon.records)."""

    __slots__ = ("documents", "files", "time", "wall_time")

    def __init__(
        self,
        files: dict[str, Optional[str]],
        time: float,
        wall_time: float,
        documents: Optional[dict[str, object]] = None,
    ):
        # Relative path ("proc/net/dev") -> file text; None when the file could
        # not be read (e.g. /sys/class/net/lo/speed answers EINVAL).
        self.files = files
        # Seconds on the source's clock (CLOCK_BOOTTIME for host sources).
        self.time = time
        # Seconds since the Unix epoch when the files were read.
        self.wall_time = wall_time
        # Relative path -> a JSON document a reader built in memory (the Oracle
        # results document): the source takes the value as it is, and its text,
        # json.dumps(value), is made only when something asks for it (a capture
        # writes it). Encoding and decoding the document again cost several times
        # the Oracle source's own work (bench/README.md). The reader hands the value
        # over and keeps no reference to it: it is never changed afterwards.
        self.documents: dict[str, object] = {} if documents is None else documents

    def paths(self) -> list[str]:
        """Every file of this reading, held as text or as a document, in sorted order."""
        return sorted({*self.files, *self.documents})

    def text_or_none(self, path: str) -> Optional[str]:
        """The text of a file (a held document encoded as JSON), None when it could not be read."""
        if path in self.documents:
            return json.dumps(self.documents[path])
        return self.files.get(path)

    def text(self, path: str) -> str:
        """The text of a file that must be present, or ParseError naming it."""
        value = self.text_or_none(path)
        if value is None:
            raise ParseError(path, "file missing or unreadable")
        return value

    def document(self, path: str) -> object:
        """The JSON value of a file: the document a reader handed over, or its text decoded (a capture).

        ParseError naming the file when it is missing or not JSON.
        """
        if path in self.documents:
            return self.documents[path]
        try:
            return json.loads(self.text(path))
        except ValueError as error:
            raise ParseError(path, f"not JSON: {error}") from None


class HostInputs(NamedTuple):
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


class Parsed(NamedTuple):
    """What a source made of one reading."""

    samples: list[Sample]
    # Malformed parts that were skipped; the rest of the reading was used.
    problems: list[ParseError] = []  # noqa: RUF012 (read-only, as every field of a NamedTuple)
    # Why part of the source could not be read this time (e.g. the database
    # is down, or a view needs a grant); None when everything was read.
    failure: Optional[str] = None


class Source:
    """One source configured for one run (see the module docstring).

    An instance holds what the source was configured with (its filters) and
    what it keeps from one reading to the next within a run (caches). It is
    built by the registry (dnfsmon.sources.build) from the config, once per
    run, and serves every reading of that run.
    """

    name: str = ""
    measurements: tuple[str, ...] = ()
    # Measurements an older dnfsmon kept in the state for this source and this one no longer
    # makes: their samples leave the state when the source's next samples are stored.
    retired_measurements: tuple[str, ...] = ()

    def parse(self, raw: Raw, host: str) -> Parsed:
        """The pure part: text to samples (see the module docstring)."""
        raise NotImplementedError

    def publish(self, result: DiffResult, current: list[Sample]) -> list[Point]:
        """The published points of the diffed samples (see the module docstring)."""
        raise NotImplementedError


class HostSource(Source):
    """A source the host target reads from /proc and /sys itself."""

    def read(self, inputs: HostInputs) -> Raw:
        """The thin I/O part: the files this source needs, read now."""
        raise NotImplementedError


class PerKeyHostSource(HostSource):
    """The usual host source, with no option: parse is samples() with its problems; publish is one
    point per key, fields() of its interval (`rates.per_key_points`)."""

    def __init__(
        self,
        name: str,
        measurements: tuple[str, ...],
        read: Callable[[HostInputs], Raw],
        samples: Callable[[Raw, str], tuple[list[Sample], list[ParseError]]],
        fields: Callable[[rates.Interval], dict[str, rates.Gauge]],
    ):
        self.name, self.measurements = name, measurements
        self._read, self._samples, self._fields = read, samples, fields

    def read(self, inputs: HostInputs) -> Raw:
        return self._read(inputs)

    def parse(self, raw: Raw, host: str) -> Parsed:
        found, problems = self._samples(raw, host)
        return Parsed(found, problems)

    def publish(self, result: DiffResult, current: list[Sample]) -> list[Point]:
        return rates.per_key_points(result, self._fields)


def per_key_host_source(
    name: str,
    measurements: tuple[str, ...],
    read: Callable[[HostInputs], Raw],
    samples: Callable[[Raw, str], tuple[list[Sample], list[ParseError]]],
    fields: Callable[[rates.Interval], dict[str, rates.Gauge]],
) -> PerKeyHostSource:
    """A PerKeyHostSource (the shape of nic, tcp, rpc and routes)."""
    return PerKeyHostSource(name, measurements, read, samples, fields)
