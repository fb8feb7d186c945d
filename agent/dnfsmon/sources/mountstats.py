"""Kernel NFS client statistics per mount, from /proc/self/mountstats.

Sources of truth: the kernel's nfs_show_stats() (fs/nfs/super.c),
rpc_clnt_show_stats()/rpc_print_iostats() (net/sunrpc/stats.c) and the
transports' print_stats (net/sunrpc/xprtsock.c, xprtrdma/transport.c);
nfs-utils' tools/mountstats/mountstats.py for the arithmetic of its iostat
view, which tests/test_mountstats.py compares with ours. The format's
variants and traps are the kernel-variant cases in tests/test_mountstats.py.

Counters here are per mount namespace; bind mounts of one export show the
same counters under each mount point, and per-op counters really belong to
the server/export (the kernel shares the RPC client). With Direct NFS the
database's own I/O does not pass through these counters at all: rising
READ/WRITE counts on a datafile mount mean the kernel client is doing that
I/O (a silent dNFS fallback, or a non-dNFS process).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from itertools import chain
from typing import TYPE_CHECKING, Callable, Optional

from .. import rates
from ..points import Point
from ..rates import DiffResult, Sample
from .base import (
    HostInputs,
    HostSource,
    Parsed,
    ParseError,
    Raw,
    boot_identity,
    is_unsigned,
    read_host_files,
)

if TYPE_CHECKING:
    from ..config import Config

NAME = "mountstats"
MOUNT_MEASUREMENT = "dnfsmon_nfs_mount"
OP_MEASUREMENT = "dnfsmon_nfs_op"
MEASUREMENTS = (MOUNT_MEASUREMENT, OP_MEASUREMENT)
MOUNTSTATS = "proc/self/mountstats"

NFS_FSTYPES = ("nfs", "nfs4")

# "events:" counters in the order of enum nfs_stat_eventcounters
# (include/linux/nfs_iostat.h). nfs_show_stats() (fs/nfs/super.c) prints all of the
# enum: 27 since pnfsread/pnfswrite were added, 25 before; a kernel with more prints
# them after these (ignored). Any other count is a truncated line.
EVENT_COUNTERS = (
    "inoderevalidate",
    "dentryrevalidate",
    "datainvalidate",
    "attrinvalidate",
    "vfsopen",
    "vfslookup",
    "vfsaccess",
    "vfsupdatepage",
    "vfsreadpage",
    "vfsreadpages",
    "vfswritepage",
    "vfswritepages",
    "vfsgetdents",
    "vfssetattr",
    "vfsflush",
    "vfsfsync",
    "vfslock",
    "vfsrelease",
    "congestionwait",
    "setattrtrunc",
    "extendwrite",
    "sillyrename",
    "shortread",
    "shortwrite",
    "delay",
    "pnfsread",
    "pnfswrite",
)
EVENT_COUNTS = (25, 27)
# "bytes:" counters in the order of enum nfs_stat_bytecounters: nfs_show_stats()
# prints all 8 (__NFSIOS_BYTESMAX), on every kernel that has the line.
BYTE_COUNTERS = (
    "normalread",
    "normalwrite",
    "directread",
    "directwrite",
    "serverread",
    "serverwrite",
    "readpages",
    "writepages",
)
# Per-op fields (rpc_print_iostats). "errors" exists from RPC iostats 1.1
# (kernel 5.3); with 8 fields it is absent, not zero.
OP_FIELDS = ("ops", "trans", "timeouts", "bytes_sent", "bytes_recv", "queue_ms", "rtt_ms", "execute_ms", "errors")
OP_MIN_FIELDS = 8
# Transport fields per protocol (xs_tcp_print_stats, xs_udp_print_stats,
# xprt_rdma_print_stats). The last three of tcp/udp exist from 1.1; rdma
# prints RDMA-specific counters after the first ten, which are not read.
XPRT_FIELDS = {
    "tcp": (
        "port",
        "bind_count",
        "connect_count",
        "connect_time",
        "idle_time",
        "sends",
        "recvs",
        "bad_xids",
        "req_u",
        "bklog_u",
        "max_slots",
        "sending_u",
        "pending_u",
    ),
    "udp": (
        "port",
        "bind_count",
        "sends",
        "recvs",
        "bad_xids",
        "req_u",
        "bklog_u",
        "max_slots",
        "sending_u",
        "pending_u",
    ),
    "rdma": (
        "port",
        "bind_count",
        "connect_count",
        "connect_time",
        "idle_time",
        "sends",
        "recvs",
        "bad_xids",
        "req_u",
        "bklog_u",
    ),
}
XPRT_MIN_FIELDS = {"tcp": 10, "udp": 7, "rdma": 10}
# Transport counters summed over a mount's transports (several with nconnect).
XPRT_COUNTERS = (
    "bind_count",
    "connect_count",
    "connect_time",
    "sends",
    "recvs",
    "bad_xids",
    "req_u",
    "bklog_u",
    "sending_u",
    "pending_u",
)

# The counters' names in a mount's sample (prefixed: one namespace per line of the block).
EVENT_KEYS = tuple(f"ev_{name}" for name in EVENT_COUNTERS)
BYTE_KEYS = tuple(f"b_{name}" for name in BYTE_COUNTERS)
XPRT_KEYS = tuple(f"x_{name}" for name in XPRT_COUNTERS)

DEVICE_RE = re.compile(r"^device (\S+) mounted on (\S+) with fstype (\S+)(?: statvers=(\S+))?\s*$")
RPC_RE = re.compile(r"^RPC iostats version:\s*(\S+)\s+p/v:\s*(\d+)/(\d+)")


def unescape(path: str) -> str:
    """Undo the kernel's octal escapes in paths (seq_escape: space is \\040)."""
    if "\\" not in path:  # most paths have none: no regular expression to run
        return path
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)


@dataclass
class Mount:
    """One NFS mount's block of /proc/self/mountstats."""

    device: str  # "server:/export", unescaped
    mountpoint: str
    fstype: str
    statvers: str
    line_no: int
    options: dict[str, str] = field(default_factory=dict)  # flag options map to ""
    # False when the block had no opts: line: the options are then unknown, not the defaults.
    options_read: bool = False
    age: Optional[int] = None  # seconds since mount
    events: dict[str, int] = field(default_factory=dict)
    bytes: dict[str, int] = field(default_factory=dict)
    rpc_version: str = ""
    nfs_program_version: str = ""
    transports: list[tuple[str, dict[str, int]]] = field(default_factory=list)
    ops: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def server(self) -> str:
        return self.device.rpartition(":")[0] if ":" in self.device else ""

    @property
    def export(self) -> str:
        return self.device.rpartition(":")[2] if ":" in self.device else self.device


def _ints(words: list[str], path: str, number: int, line: str) -> list[int]:
    # The words joined are ASCII digits exactly when each word is (split() leaves
    # no empty word): one check per line instead of one per counter.
    if not is_unsigned("".join(words)):
        raise ParseError(path, "expected unsigned integers", number, line)
    return list(map(int, words))


def _version_ok(text: str) -> bool:
    """statvers/iostats version >= 1.0 (1.0, 1.1 and 1.2 are common)."""
    parts = text.split(".")
    return len(parts) == 2 and all(is_unsigned(p) for p in parts) and (int(parts[0]), int(parts[1])) >= (1, 0)


def _parse_block(
    first: int, lines: list[str], path: str, problems: list[ParseError], cache: OpsCache, wanted: MountFilter
) -> Optional[Mount]:
    """One device block; None for non-NFS mounts and mounts the filter leaves out. Raises
    ParseError for a malformed NFS block.

    The text of its per-op lines and what they parse to are kept in `cache` for the next reading.
    """
    header = DEVICE_RE.match(lines[0])
    if not header:
        raise ParseError(path, "expected 'device D mounted on M with fstype T'", first, lines[0])
    device, mountpoint, fstype, statvers = header.groups()
    if fstype not in NFS_FSTYPES or not wanted(unescape(mountpoint)):
        return None
    if statvers is None or not _version_ok(statvers):
        raise ParseError(path, f"NFS mount needs statvers >= 1.0, found {statvers!r}", first, lines[0])
    mount = Mount(unescape(device), unescape(mountpoint), fstype, statvers, first)
    ops_from = len(lines)
    for index in range(1, len(lines)):
        line = lines[index]
        number = first + index
        words = line.split()
        if not words:
            continue
        tag = words[0]
        if tag == "opts:":
            mount.options_read = True
            # Some kernels (and the Telegraf capture) have spaces after commas.
            for option in "".join(words[1:]).split(","):
                key, _, value = option.partition("=")
                if key:
                    mount.options[key] = value
        elif tag == "age:":
            if len(words) != 2 or not is_unsigned(words[1]):
                raise ParseError(path, "age: needs one unsigned integer", number, line)
            mount.age = int(words[1])
        elif tag == "events:":
            values = _ints(words[1:], path, number, line)
            if len(values) not in EVENT_COUNTS and len(values) < len(EVENT_COUNTERS):
                raise ParseError(
                    path, f"events: has {len(values)} counters, the kernel prints 25 or 27 (a cut line?)", number, line
                )
            mount.events = dict(zip(EVENT_COUNTERS, values))
        elif tag == "bytes:":
            values = _ints(words[1:], path, number, line)
            if len(values) < len(BYTE_COUNTERS):
                raise ParseError(
                    path,
                    f"bytes: has {len(values)} counters, the kernel prints {len(BYTE_COUNTERS)} (a cut line?)",
                    number,
                    line,
                )
            mount.bytes = dict(zip(BYTE_COUNTERS, values))
        elif tag == "RPC":
            rpc = RPC_RE.match(line.strip())
            if not rpc or not _version_ok(rpc.group(1)):
                raise ParseError(path, "expected 'RPC iostats version: X.Y  p/v: P/V' with X.Y >= 1.0", number, line)
            mount.rpc_version, mount.nfs_program_version = rpc.group(1), rpc.group(3)
        elif tag == "xprt:":
            if len(words) < 2:
                raise ParseError(path, "xprt: needs a protocol", number, line)
            protocol = words[1]
            names = XPRT_FIELDS.get(protocol)
            if names is None:
                problems.append(ParseError(path, f"unknown transport {protocol!r} ignored", number, line))
                continue
            values = _ints(words[2:], path, number, line)
            if len(values) < XPRT_MIN_FIELDS[protocol]:
                raise ParseError(
                    path, f"xprt: {protocol} needs at least {XPRT_MIN_FIELDS[protocol]} counters", number, line
                )
            mount.transports.append((protocol, dict(zip(names, values))))
        elif tag == "per-op":
            ops_from = index + 1
            break
        # caps:, nfsv4:, sec:, impl_id:, fsc: and lines of future kernels carry
        # nothing dnfsmon publishes: accepted and ignored.
    op_lines = lines[ops_from:]
    # Without the blank lines that end a block, which the parse skips: the kernel prints one.
    op_text = "\n".join(op_lines).rstrip()
    ops = cache.last.get(op_text)
    if ops is None:
        ops = _parse_ops(first + ops_from, op_lines, path)
    cache.read[op_text] = ops
    mount.ops = ops
    if mount.age is None:
        raise ParseError(path, f"NFS mount {mount.mountpoint} has no 'age:' line", first, lines[0])
    return mount


def _parse_ops(first: int, lines: list[str], path: str) -> dict[str, dict[str, int]]:
    """The per-op lines of a block (rpc_print_iostats, net/sunrpc/stats.c): one line per
    NFS procedure, "NAME: n n n ...".

    They are most of a block (34 of some 45 lines with NFSv3), so the checks are made once
    per block, not once per line: every name ends with ":", every line has at least
    OP_MIN_FIELDS counters, and all the counters joined are ASCII digits. The number of
    counters may differ from line to line (the kernel of the procfs capture prints 8 for
    some procedures and 9 for others). A block that fails a check is read line by line,
    which says which line is wrong.
    """
    rows = [line.split() for line in lines]
    rows = [words for words in rows if words]
    names = [words[0] for words in rows]
    numbers = [words[1:] for words in rows]
    if (
        not rows
        or min(map(len, numbers)) < OP_MIN_FIELDS
        or not all(name.endswith(":") for name in names)
        or not is_unsigned("".join(chain.from_iterable(numbers)))
    ):
        return _parse_ops_line_by_line(first, lines, path)
    return {name[:-1]: dict(zip(OP_FIELDS, map(int, counters))) for name, counters in zip(names, numbers)}


def _parse_ops_line_by_line(first: int, lines: list[str], path: str) -> dict[str, dict[str, int]]:
    """The per-op lines one at a time: for a block _parse_ops cannot take in one go."""
    ops = {}
    for index, line in enumerate(lines):
        words = line.split()
        if not words:
            continue
        if len(words) <= OP_MIN_FIELDS or not words[0].endswith(":"):
            raise ParseError(
                path, f"per-op line needs a name and at least {OP_MIN_FIELDS} counters", first + index, line
            )
        ops[words[0][:-1]] = dict(zip(OP_FIELDS, _ints(words[1:], path, first + index, line)))
    return ops


class OpsCache:
    """The per-op lines of each NFS block of the last mountstats text a source parsed, by
    their text, and what they parsed to.

    A mount whose ops did nothing since (most of a database host's mounts at any
    moment) prints the same per-op lines again, which are then not parsed again:
    in a run that reads mountstats several times (`collect --count 6` from cron,
    `top`), most blocks of a reading after the first. Only the last reading's are
    kept. The parsed counters are then shared by the samples of both readings:
    nothing changes them once parsed (a sample's counters are what was read,
    rates.Sample). One cache per MountstatsSource: a new source parses every block
    in full.
    """

    def __init__(self) -> None:
        self.last: dict[str, dict[str, dict[str, int]]] = {}
        self.read: dict[str, dict[str, dict[str, int]]] = {}

    def start(self) -> None:
        self.read = {}

    def finish(self) -> None:
        self.last, self.read = self.read, {}


MountFilter = Callable[[str], bool]


def every_mount(mountpoint: str) -> bool:
    return True


def parse_mountstats(
    text: str, path: str = MOUNTSTATS, cache: Optional[OpsCache] = None, wanted: MountFilter = every_mount
) -> tuple[list[Mount], list[ParseError]]:
    """NFS mounts of a mountstats file; a malformed block is reported and skipped, never the others.

    `wanted(mountpoint)` False: the block is skipped before its lines are read.
    """
    cache = OpsCache() if cache is None else cache
    cache.start()
    lines = text.splitlines()
    starts = [index for index, line in enumerate(lines) if line.startswith("device ")]
    problems: list[ParseError] = [
        ParseError(path, "line outside any 'device' block", index + 1, line)
        for index, line in enumerate(lines[: starts[0] if starts else len(lines)])
        if line.strip()
    ]
    mounts: dict[str, Mount] = {}
    for start, end in zip(starts, [*starts[1:], len(lines)]):
        try:
            mount = _parse_block(start + 1, lines[start:end], path, problems, cache, wanted)
        except ParseError as error:
            problems.append(error)
            continue
        if mount is not None:
            # A mount point mounted over keeps the last block, the visible one
            # (as nfs-utils' mountstats does).
            mounts[mount.mountpoint] = mount
    cache.finish()
    return list(mounts.values()), problems


def read(inputs: HostInputs) -> Raw:
    return read_host_files(inputs, [MOUNTSTATS])


def _int_option(options: dict[str, str], name: str) -> Optional[int]:
    value = options.get(name, "")
    return int(value) if is_unsigned(value) else None


def mount_gauges(mount: Mount) -> dict[str, rates.Gauge]:
    """Mount options and transport facts published with every mount point.

    hard, noac and nconnect are read from what the kernel leaves out as much as
    from what it prints (nfs_show_mount_options prints "soft" but never "hard",
    nconnect only above 1): without an opts: line they are unknown, not published.
    """
    o = mount.options
    gauges: dict[str, Optional[rates.Gauge]] = {
        "age_s": mount.age,
        "rsize_bytes": _int_option(o, "rsize"),
        "wsize_bytes": _int_option(o, "wsize"),
        "timeo_ds": _int_option(o, "timeo"),
        "retrans_option": _int_option(o, "retrans"),
        "acregmin_s": _int_option(o, "acregmin"),
        "acregmax_s": _int_option(o, "acregmax"),
        "acdirmin_s": _int_option(o, "acdirmin"),
        "acdirmax_s": _int_option(o, "acdirmax"),
        "transports": len(mount.transports),
    }
    if mount.options_read:
        gauges["nconnect"] = _int_option(o, "nconnect") or 1
        gauges["hard"] = "soft" not in o and "softerr" not in o
        # The kernel prints the noac flag; actimeo=0 shows as the ac* options at 0.
        gauges["noac"] = "noac" in o
    if mount.transports and all("max_slots" in t for _, t in mount.transports):
        gauges["max_slots"] = sum(t["max_slots"] for _, t in mount.transports)
    return {k: v for k, v in gauges.items() if v is not None}


def samples(
    raw: Raw,
    host: str,
    cache: Optional[OpsCache] = None,
    wanted: MountFilter = every_mount,
    operations: Optional[frozenset[str]] = None,
) -> tuple[list[Sample], list[ParseError]]:
    """A sample per mount and one per operation of it (those in `operations`; None: every one)."""
    mounts, problems = parse_mountstats(raw.text(MOUNTSTATS), MOUNTSTATS, cache, wanted)
    identity = boot_identity(raw)
    result: list[Sample] = []
    op_tags: dict[str, tuple[str, str]] = {}
    for mount in mounts:
        key = (
            ("host", host),
            ("mountpoint", mount.mountpoint),
            ("server", mount.server),
            ("export", mount.export),
            ("nfs_version", mount.options.get("vers", mount.nfs_program_version)),
            ("proto", mount.options.get("proto", mount.transports[0][0] if mount.transports else "")),
        )
        # The counters started when the export was mounted: a drop of `age`
        # (a remount) moves this start and re-baselines every key below.
        started = raw.time - (mount.age or 0)
        counters: dict[str, int] = dict(zip(EVENT_KEYS, mount.events.values()))
        counters.update(zip(BYTE_KEYS, mount.bytes.values()))
        for name, counter in zip(XPRT_COUNTERS, XPRT_KEYS):
            present = [t[name] for _, t in mount.transports if name in t]
            if present and len(present) == len(mount.transports):
                counters[counter] = sum(present)
        # The keys' state_key text (Sample.state_key) made here from the mount's part, shared by its ops.
        tags = ",".join(map("=".join, key))
        result.append(
            Sample(
                MOUNT_MEASUREMENT,
                key,
                raw.time,
                raw.wall_time,
                counters,
                mount_gauges(mount),
                identity,
                started,
                state_key=f"{MOUNT_MEASUREMENT},{tags}",
            )
        )
        op_prefix = f"{OP_MEASUREMENT},{tags},op="
        # Each op's counters are the parsed dict itself (the last reading's too when its lines did not
        # change, OpsCache): nothing changes it.
        for op, values in mount.ops.items():
            if operations is not None and op not in operations:
                continue
            if op not in op_tags:
                op_tags[op] = ("op", op)  # one tag pair per op name, shared by every mount
            result.append(
                Sample(
                    OP_MEASUREMENT,
                    (*key, op_tags[op]),
                    raw.time,
                    raw.wall_time,
                    values,
                    None,
                    identity,
                    started,
                    state_key=op_prefix + op,
                )
            )
    return result, problems


def op_fields(interval: rates.Interval) -> dict[str, rates.Gauge]:
    """nfs-utils mountstats iostat's per-op figures, over the measured interval."""
    d = interval.deltas
    ops = d.get("ops")
    if ops is None:
        return {}
    wire = d["bytes_sent"] + d["bytes_recv"] if "bytes_sent" in d and "bytes_recv" in d else None
    retrans = d["trans"] - ops if "trans" in d and d["trans"] >= ops else None
    out = {
        "ops_per_s": interval.rate("ops"),
        "kib_per_s": None if wire is None else rates.per_second(wire, interval.dt) / 1024,
        "sent_kib_per_s": None if "bytes_sent" not in d else rates.per_second(d["bytes_sent"], interval.dt) / 1024,
        "recv_kib_per_s": None if "bytes_recv" not in d else rates.per_second(d["bytes_recv"], interval.dt) / 1024,
        "kib_per_op": None if wire is None else rates.mean_per_event(wire / 1024, ops),
        "retrans_per_s": None if retrans is None else rates.per_second(retrans, interval.dt),
        "retrans_pct": None if retrans is None else rates.percent(retrans, ops),
        "timeouts_per_s": interval.rate("timeouts"),
        "errors_per_s": interval.rate("errors"),
        "avg_queue_ms": rates.mean_per_event(d.get("queue_ms"), ops),
        "avg_rtt_ms": rates.mean_per_event(d.get("rtt_ms"), ops),
        "avg_exe_ms": rates.mean_per_event(d.get("execute_ms"), ops),
    }
    return {k: v for k, v in out.items() if v is not None}


def mount_fields(interval: rates.Interval) -> dict[str, rates.Gauge]:
    d = interval.deltas
    sends = d.get("x_sends")
    out: dict[str, Optional[rates.Gauge]] = {}
    for name, counter in zip(EVENT_COUNTERS, EVENT_KEYS):
        out[f"{name}_per_s"] = interval.rate(counter)
    for name, counter in zip(BYTE_COUNTERS, BYTE_KEYS):
        per_s = interval.rate(counter)
        if name.endswith("pages"):
            out[f"{name}_per_s"] = per_s
        else:
            out[f"{name}_kib_per_s"] = None if per_s is None else per_s / 1024
    out.update(
        {
            "rpc_sends_per_s": interval.rate("x_sends"),
            "rpc_recvs_per_s": interval.rate("x_recvs"),
            "bad_xids_per_s": interval.rate("x_bad_xids"),
            "connects_per_s": interval.rate("x_connect_count"),
            # Averages per RPC sent (xprt_transmit adds the queue lengths on each send).
            "avg_backlog": rates.mean_per_event(d.get("x_bklog_u"), sends),
            "avg_outstanding_rpcs": rates.mean_per_event(d.get("x_req_u"), sends),
            "avg_sending_queue": rates.mean_per_event(d.get("x_sending_u"), sends),
            "avg_pending_queue": rates.mean_per_event(d.get("x_pending_u"), sends),
        }
    )
    out.update(interval.current.gauges)
    return {k: v for k, v in out.items() if v is not None}


def fields(interval: rates.Interval) -> dict[str, rates.Gauge]:
    if interval.current.measurement == OP_MEASUREMENT:
        return op_fields(interval)
    return mount_fields(interval)


class MountstatsSource(HostSource):
    """/proc/self/mountstats with the [mountstats] filters; its OpsCache lives as long as it does."""

    name = NAME
    measurements = MEASUREMENTS

    def __init__(self, include_mounts: Sequence[str], exclude_mounts: Sequence[str], operations: Sequence[str]):
        self.include_mounts = tuple(include_mounts)
        self.exclude_mounts = tuple(exclude_mounts)
        # ["all"]: every operation the kernel prints.
        self.operations: Optional[frozenset[str]] = None if list(operations) == ["all"] else frozenset(operations)
        self.cache = OpsCache()

    def wanted(self, mountpoint: str) -> bool:
        """Shell-style globs (fnmatch) on the mount point: included and not excluded."""
        return any(fnmatchcase(mountpoint, g) for g in self.include_mounts) and not any(
            fnmatchcase(mountpoint, g) for g in self.exclude_mounts
        )

    def read(self, inputs: HostInputs) -> Raw:
        return read(inputs)

    def parse(self, raw: Raw, host: str) -> Parsed:
        found, problems = samples(raw, host, self.cache, self.wanted, self.operations)
        return Parsed(found, problems)

    def publish(self, result: DiffResult, current: list[Sample]) -> list[Point]:
        return rates.per_key_points(result, fields)


def build(config: Config) -> MountstatsSource:
    """The source as [mountstats] configures it (the options and their defaults: dnfsmon.config)."""
    return MountstatsSource(**config.sources[NAME])
