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
from collections.abc import Iterator, Mapping, Sequence
from fnmatch import fnmatchcase
from itertools import accumulate, chain, repeat
from types import MappingProxyType
from typing import TYPE_CHECKING, Callable, NamedTuple, Optional

from .. import rates
from ..points import Point, epoch_ns
from ..rates import DiffResult, Sample
from ..records import Record
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


class Mount(Record):
    """One NFS mount's block of /proc/self/mountstats, filled in as its lines are parsed
    (a plain class: see dnfsmon.records)."""

    __slots__ = (
        "age",
        "bytes",
        "device",
        "events",
        "fstype",
        "line_no",
        "mountpoint",
        "nfs_program_version",
        "op_counters",
        "op_names",
        "op_widths",
        "options",
        "options_read",
        "rpc_version",
        "statvers",
        "transports",
    )

    def __init__(self, device: str, mountpoint: str, fstype: str, statvers: str, line_no: int):
        self.device = device  # "server:/export", unescaped
        self.mountpoint = mountpoint
        self.fstype = fstype
        self.statvers = statvers
        self.line_no = line_no
        self.options: dict[str, str] = {}  # flag options map to ""
        # False when the block had no opts: line: the options are then unknown, not the defaults.
        self.options_read = False
        self.age: Optional[int] = None  # seconds since mount
        self.events: dict[str, int] = {}
        self.bytes: dict[str, int] = {}
        self.rpc_version = ""
        self.nfs_program_version = ""
        self.transports: list[tuple[str, dict[str, int]]] = []
        # The per-op lines in the kernel's order: each operation's name, how many of OP_FIELDS its
        # line has (8 or 9, as the kernel printed), and all their counters in one tuple, each
        # operation's in OP_FIELDS order after the last one's.
        self.op_names: list[str] = []
        self.op_widths: list[int] = []
        self.op_counters: tuple[int, ...] = ()

    @property
    def op_rows(self) -> list[tuple[int, ...]]:
        """Each operation's counters (made when asked)."""
        ends = list(accumulate(self.op_widths))
        return [self.op_counters[end - width : end] for end, width in zip(ends, self.op_widths)]

    @property
    def ops(self) -> dict[str, dict[str, int]]:
        """The per-op counters by operation and field name (made when asked)."""
        return {name: dict(zip(OP_FIELDS, row)) for name, row in zip(self.op_names, self.op_rows)}

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
    first: int, lines: list[str], path: str, problems: list[ParseError], wanted: MountFilter
) -> Optional[Mount]:
    """One device block; None for non-NFS mounts and mounts the filter leaves out. Raises
    ParseError for a malformed NFS block."""
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
    mount.op_names, mount.op_widths, mount.op_counters = _parse_ops(first + ops_from, lines[ops_from:], path)
    if mount.age is None:
        raise ParseError(path, f"NFS mount {mount.mountpoint} has no 'age:' line", first, lines[0])
    return mount


# A block's per-op lines: the operations' names, how many counters each has, all the counters in one tuple.
OpLines = tuple[list[str], list[int], tuple[int, ...]]


def _parse_ops(first: int, lines: list[str], path: str) -> OpLines:
    """The per-op lines of a block (rpc_print_iostats, net/sunrpc/stats.c): one line per
    NFS procedure, "NAME: n n n ..."; the names (without the colon) and each one's first
    len(OP_FIELDS) counters.

    They are most of a block (34 of some 45 lines with NFSv3), and are checked and converted
    together: every line split, the names taken out (every so many words when the lines have one
    length, as a kernel prints 8 counters, or 9 from RPC iostats 1.1, for every procedure; the
    kernel of the procfs capture prints 8 for some and 9 for others), the counters checked as
    ASCII digits at once and converted in one pass. Lines with more counters than dnfsmon reads
    (a later kernel's), or an operation printed twice, are converted line by line. A block
    failing a check is read again by _parse_ops_line_by_line, which says which line is wrong.
    """
    rows_words = [words for words in map(str.split, lines) if words]
    lengths = set(map(len, rows_words))
    if lengths and min(lengths) > OP_MIN_FIELDS and max(lengths) <= 1 + len(OP_FIELDS):
        if len(lengths) == 1:
            (length,) = lengths
            counters = list(chain.from_iterable(rows_words))
            names = counters[::length]
            del counters[::length]
            widths = [length - 1] * len(names)
        else:
            names = [words[0] for words in rows_words]
            counters = list(chain.from_iterable(words[1:] for words in rows_words))
            widths = [len(words) - 1 for words in rows_words]
        if all(map(str.endswith, names, repeat(":"))) and is_unsigned("".join(counters)):
            names = [name[:-1] for name in names]
            row = tuple(map(int, counters))
            if len(set(names)) == len(names):
                return names, widths, row
            ends = accumulate(widths)
            return _last_of_each(names, [row[end - width : end] for end, width in zip(ends, widths)])
    elif lengths and min(lengths) > OP_MIN_FIELDS:
        names = [words[0] for words in rows_words]
        if all(name.endswith(":") for name in names) and is_unsigned(
            "".join(chain.from_iterable(words[1:] for words in rows_words))
        ):
            # Counters after the last of OP_FIELDS (a later kernel's) are not read.
            end = 1 + len(OP_FIELDS)
            rows = [list(map(int, words[1:end])) for words in rows_words]
            return _last_of_each([name[:-1] for name in names], rows)
    return _parse_ops_line_by_line(first, lines, path)


def _last_of_each(names: list[str], rows: Sequence[Sequence[int]]) -> OpLines:
    """An operation printed twice (the Telegraf capture's LAYOUTRETURN) counts as its last line,
    in the place of its first."""
    if len(set(names)) != len(names):
        ops = dict(zip(names, rows))
        names, rows = list(ops), list(ops.values())
    return names, list(map(len, rows)), tuple(chain.from_iterable(rows))


def _parse_ops_line_by_line(first: int, lines: list[str], path: str) -> OpLines:
    """The per-op lines one at a time: for a block _parse_ops cannot take in one go."""
    names, rows = [], []
    for index, line in enumerate(lines):
        words = line.split()
        if not words:
            continue
        if len(words) <= OP_MIN_FIELDS or not words[0].endswith(":"):
            raise ParseError(
                path, f"per-op line needs a name and at least {OP_MIN_FIELDS} counters", first + index, line
            )
        names.append(words[0][:-1])
        rows.append(_ints(words[1:], path, first + index, line)[: len(OP_FIELDS)])
    return _last_of_each(names, rows)


MountFilter = Callable[[str], bool]


def every_mount(mountpoint: str) -> bool:
    return True


def blocks(text: str, problems: list[ParseError], path: str = MOUNTSTATS) -> Iterator[tuple[int, str]]:
    """Each "device" block of a mountstats file: the number of its first line and its text.
    Lines before the first block go to `problems`.

    The file is cut where a line starts with "device " (nfs_show_stats and show_vfsstat,
    fs/proc_namespace.c, begin every mount's block so), with the text's own split: one pass
    in C, where a look at each of some 45 lines a mount was most of the cost of finding them.
    """
    parts = text.split("\ndevice ")
    line_no = 1
    if not parts[0].startswith("device "):
        problems.extend(
            ParseError(path, "line outside any 'device' block", index + 1, line)
            for index, line in enumerate(parts[0].splitlines())
            if line.strip()
        )
    else:
        yield line_no, parts[0]
    line_no += parts[0].count("\n") + 1
    for part in parts[1:]:
        yield line_no, "device " + part
        line_no += part.count("\n") + 1


def parse_block(
    first: int, block: str, problems: list[ParseError], path: str = MOUNTSTATS, wanted: MountFilter = every_mount
) -> Optional[Mount]:
    """One block of `blocks`: its Mount, or None for a non-NFS mount or one `wanted` leaves out.
    A malformed NFS block goes to `problems` (None)."""
    try:
        return _parse_block(first, block.splitlines(), path, problems, wanted)
    except ParseError as error:
        problems.append(error)
        return None


def each_mount(
    text: str, problems: list[ParseError], path: str = MOUNTSTATS, wanted: MountFilter = every_mount
) -> Iterator[Mount]:
    """The NFS mounts of a mountstats file one at a time, in the file's order. A malformed block
    goes to `problems`, never the others. A mount point mounted over comes once per block; the last
    is the visible one. `wanted(mountpoint)` False: the block is skipped before its lines are read."""
    for first, block in blocks(text, problems, path):
        mount = parse_block(first, block, problems, path, wanted)
        if mount is not None:
            yield mount


def parse_mountstats(
    text: str, path: str = MOUNTSTATS, wanted: MountFilter = every_mount
) -> tuple[list[Mount], list[ParseError]]:
    """NFS mounts of a mountstats file, and its malformed blocks (each_mount)."""
    problems: list[ParseError] = []
    mounts: dict[str, Mount] = {}
    for mount in each_mount(text, problems, path, wanted):
        # A mount point mounted over keeps the last block, the visible one, in the place
        # of its first (as nfs-utils' mountstats does).
        mounts[mount.mountpoint] = mount
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


def mount_key(mount: Mount, host: str) -> rates.Key:
    """A mount's tags: the key of its sample and of its operations' (with "op")."""
    return (
        ("host", host),
        ("mountpoint", mount.mountpoint),
        ("server", mount.server),
        ("export", mount.export),
        ("nfs_version", mount.options.get("vers", mount.nfs_program_version)),
        ("proto", mount.options.get("proto", mount.transports[0][0] if mount.transports else "")),
    )


def mount_counters(mount: Mount) -> dict[str, int]:
    """The mount's own counters: events:, bytes:, the transports summed."""
    counters: dict[str, int] = dict(zip(EVENT_KEYS, mount.events.values()))
    counters.update(zip(BYTE_KEYS, mount.bytes.values()))
    for name, counter in zip(XPRT_COUNTERS, XPRT_KEYS):
        present = [t[name] for _, t in mount.transports if name in t]
        if present and len(present) == len(mount.transports):
            counters[counter] = sum(present)
    return counters


def mount_sample(raw: Raw, mount: Mount, key: rates.Key, identity: tuple) -> Sample:
    """The mount's own counters and gauges."""
    return Sample(
        MOUNT_MEASUREMENT,
        key,
        raw.time,
        raw.wall_time,
        mount_counters(mount),
        mount_gauges(mount),
        identity,
        started(raw, mount),
    )


def started(raw: Raw, mount: Mount) -> float:
    """When the mount's counters started: a drop of `age` (a remount) moves it and re-baselines its keys."""
    return raw.time - (mount.age or 0)


def samples(raw: Raw, host: str, operations: Optional[frozenset[str]] = None) -> tuple[list[Sample], list[ParseError]]:
    """Every key as a sample of its own: each mount, and each of its operations (those in
    `operations`; None: every one).

    The reference the source's samples are checked against (tests/test_mountstats.py): the
    source (MountstatsSource) keeps a mount's operations together in one sample, and
    publishes the same points from it.
    """
    mounts, problems = parse_mountstats(raw.text(MOUNTSTATS), MOUNTSTATS)
    identity = boot_identity(raw)
    result: list[Sample] = []
    for mount in mounts:
        key = mount_key(mount, host)
        result.append(mount_sample(raw, mount, key, identity))
        for op, values in mount.ops.items():
            if operations is None or op in operations:
                result.append(
                    Sample(
                        OP_MEASUREMENT,
                        (*key, ("op", op)),
                        raw.time,
                        raw.wall_time,
                        values,
                        None,
                        identity,
                        started(raw, mount),
                    )
                )
    return result, problems


class OpLayout(NamedTuple):
    """Which counters of a mount's operations sample (MountOps) are which operation's.

    The counters are named "OP.FIELD" (READ.ops, READ.trans, ...), in the order the
    kernel printed the operations and OP_FIELDS. Every operation has len(OP_FIELDS)
    names here: a field its line does not have (errors on a kernel before 5.3) is a name
    absent from the counters.
    """

    names: tuple[str, ...]  # the counters' names, in the order of the operations' counters
    operations: tuple[tuple[str, tuple[str, ...]], ...]  # (operation, its counters' names in OP_FIELDS order)
    idle_rows: tuple[tuple[Optional[int], ...], ...]  # each operation's deltas when it did nothing
    places: Mapping[str, int]  # each name's place in `names` (a CounterVector's row)
    # Each operation's slice of the row, and the Nones that fill it to len(OP_FIELDS).
    spans: tuple[tuple[str, int, int, tuple[None, ...]], ...]

    @classmethod
    def of(cls, operations: Sequence[str], widths: Sequence[int]) -> OpLayout:
        names_of = [(op, tuple(f"{op}.{name}" for name in OP_FIELDS)) for op in operations]
        names = tuple(chain.from_iterable(names[:width] for (_, names), width in zip(names_of, widths)))
        starts = [sum(widths[:index]) for index in range(len(widths))]
        return cls(
            names,
            tuple(names_of),
            tuple((0,) * width + (None,) * (len(OP_FIELDS) - width) for width in widths),
            MappingProxyType({name: place for place, name in enumerate(names)}),
            tuple(
                (op, start, start + width, (None,) * (len(OP_FIELDS) - width))
                for op, start, width in zip(operations, starts, widths)
            ),
        )

    def counters(self, row: tuple[int, ...]) -> rates.CounterVector:
        """The operations' counters (each one's after the last one's, as `of` was given their widths) as one vector."""
        return rates.CounterVector(self.names, self.places, row)


class MountOps(Sample):
    """A mount's operations as one sample: their counters together, one CounterVector in the
    order of its OpLayout, diffed in one pass (rates.diff), published as a point per operation.

    An idle mount's counters are all equal to the last reading's, which rates.diff sees
    at once; with a sample per operation, each of some 30 per mount was a sample, an
    interval and a diff of its own. One counter of an operation going backwards drops
    the interval of every operation of the mount: the kernel keeps them together, in
    the RPC client's iostats (rpc_alloc_iostats, net/sunrpc/stats.c), which a remount
    replaces, and a count going backwards there makes the block doubtful as a whole.

    `layout` is the current reading's: the state saves the counters as any sample's,
    and a previous sample is only read for its counters.
    """

    __slots__ = ("layout",)
    layout: OpLayout

    def __init__(self, layout: OpLayout, *args: object, **kwargs: object):
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        object.__setattr__(self, "layout", layout)


# The deltas of an operation whose counters did not move, with 9 and 8 fields (no errors before kernel 5.3).
IDLE_ROWS = ((0,) * len(OP_FIELDS), (0,) * OP_MIN_FIELDS + (None,))


def op_figures(deltas: Sequence[Optional[int]], dt: float) -> dict[str, rates.Gauge]:
    """nfs-utils mountstats iostat's per-op figures from one operation's counter deltas, in
    OP_FIELDS order (None: that counter has no delta), over an interval of dt seconds."""
    ops, trans, timeouts, sent, recv, queue, rtt, execute, errors = deltas
    if ops is None:
        return {}
    wire = sent + recv if sent is not None and recv is not None else None
    retrans = trans - ops if trans is not None and trans >= ops else None
    out = {
        "ops_per_s": rates.per_second(ops, dt),
        "kib_per_s": None if wire is None else rates.per_second(wire, dt) / 1024,
        "sent_kib_per_s": None if sent is None else rates.per_second(sent, dt) / 1024,
        "recv_kib_per_s": None if recv is None else rates.per_second(recv, dt) / 1024,
        "kib_per_op": None if wire is None else rates.mean_per_event(wire / 1024, ops),
        "retrans_per_s": None if retrans is None else rates.per_second(retrans, dt),
        "retrans_pct": None if retrans is None else rates.percent(retrans, ops),
        "timeouts_per_s": None if timeouts is None else rates.per_second(timeouts, dt),
        "errors_per_s": None if errors is None else rates.per_second(errors, dt),
        "avg_queue_ms": rates.mean_per_event(queue, ops),
        "avg_rtt_ms": rates.mean_per_event(rtt, ops),
        "avg_exe_ms": rates.mean_per_event(execute, ops),
    }
    return {k: v for k, v in out.items() if v is not None}


def op_fields(interval: rates.Interval) -> dict[str, rates.Gauge]:
    """The per-op figures of one operation's own interval (a sample of `samples`)."""
    return op_figures([interval.deltas.get(name) for name in OP_FIELDS], interval.dt)


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


# A mount's age line ("\tage:\t%lu", nfs_show_stats): the one line of an idle mount's block that moves.
AGE_LINE_RE = re.compile(r"^[ \t]*age:[ \t]+([0-9]+)[ \t]*$", re.MULTILINE)


class Remembered(NamedTuple):
    """What a mount's block parsed to, but for its age: enough to make the mount's two samples
    again, at another reading, from the block's text with another age and nothing else changed."""

    age_at: int  # where the age line began in the block's text
    host: str
    mountpoint: str
    key: rates.Key
    tags: str  # the key's tags as in a state key ("host=...,mountpoint=...")
    counters: dict[str, int]  # the mount's sample's (shared read-only by the samples made from them)
    gauges: dict[str, rates.Gauge]  # the mount's gauges; age_s is the reading's own
    layout: OpLayout
    op_counters: rates.CounterVector  # the MountOps sample's (shared read-only)

    @classmethod
    def of(cls, mount: Mount, host: str, age_at: int, layout: OpLayout, op_counters: rates.CounterVector) -> Remembered:
        key = mount_key(mount, host)
        tags = ",".join(map("=".join, key))
        return cls(
            age_at, host, mount.mountpoint, key, tags, mount_counters(mount), mount_gauges(mount), layout, op_counters
        )

    def samples(self, raw: Raw, identity: tuple, age: int) -> list[Sample]:
        """The mount's sample and its operations' (MountOps) at `raw`'s reading, the mount `age` s old."""
        gauges = dict(self.gauges)
        gauges["age_s"] = age  # in its place: the points' fields keep their order
        started = raw.time - age  # as started() says
        return [
            Sample(
                MOUNT_MEASUREMENT,
                self.key,
                raw.time,
                raw.wall_time,
                self.counters,
                gauges,
                identity,
                started,
                state_key=f"{MOUNT_MEASUREMENT},{self.tags}",
            ),
            MountOps(
                self.layout,
                OP_MEASUREMENT,
                self.key,
                raw.time,
                raw.wall_time,
                self.op_counters,
                None,
                identity,
                started,
                state_key=f"{OP_MEASUREMENT},{self.tags}",
            ),
        ]


class MountstatsSource(HostSource):
    """/proc/self/mountstats with the [mountstats] filters: per mount, a sample of its own
    counters and one of its operations' (MountOps)."""

    name = NAME
    measurements = MEASUREMENTS

    def __init__(self, include_mounts: Sequence[str], exclude_mounts: Sequence[str], operations: Sequence[str]):
        self.include_mounts = tuple(include_mounts)
        self.exclude_mounts = tuple(exclude_mounts)
        # ["all"]: every operation the kernel prints.
        self.operations: Optional[frozenset[str]] = None if list(operations) == ["all"] else frozenset(operations)
        # The layouts met in this run, by operations and their widths: the mounts of one
        # kernel share a few, and a layout's some 300 names are made once.
        self.layouts: dict[tuple[tuple[str, ...], tuple[int, ...]], OpLayout] = {}
        # What each block of the last reading parsed to, by its text without the age line
        # (Remembered). An idle mount prints its block again with only its age moved: it is
        # then not parsed at all.
        self.remembered: dict[str, Remembered] = {}

    def wanted(self, mountpoint: str) -> bool:
        """Shell-style globs (fnmatch) on the mount point: included and not excluded."""
        return any(fnmatchcase(mountpoint, g) for g in self.include_mounts) and not any(
            fnmatchcase(mountpoint, g) for g in self.exclude_mounts
        )

    def read(self, inputs: HostInputs) -> Raw:
        return read(inputs)

    def operations_of(self, mount: Mount) -> tuple[OpLayout, rates.CounterVector]:
        """The layout and counters of the mount's MountOps sample: its operations the filter keeps."""
        names, widths, row = mount.op_names, mount.op_widths, mount.op_counters
        if self.operations is not None:
            rows = mount.op_rows
            kept = [index for index, op in enumerate(names) if op in self.operations]
            names, widths = [names[i] for i in kept], [widths[i] for i in kept]
            row = tuple(chain.from_iterable(rows[i] for i in kept))
        shape = (tuple(names), tuple(widths))
        layout = self.layouts.get(shape)
        if layout is None:
            layout = self.layouts[shape] = OpLayout.of(*shape)
        return layout, layout.counters(row)

    def parse(self, raw: Raw, host: str) -> Parsed:
        identity = boot_identity(raw)
        problems: list[ParseError] = []
        found: list[Sample] = []
        place: dict[str, int] = {}  # mount point -> where its samples are in `found`
        remembered_now: dict[str, Remembered] = {}
        # Block by block: a Mount is dropped once its two samples are made (at 1000 mounts, every
        # Mount of the file at once was some 15 MB more at the peak).
        for first, block in blocks(raw.text(MOUNTSTATS), problems, MOUNTSTATS):
            age_line = AGE_LINE_RE.search(block)
            # Without the blank lines at its end, which carry nothing (and which the bench's later
            # readings have one more of).
            text = (block if age_line is None else block[: age_line.start()] + block[age_line.end() :]).rstrip()
            known = self.remembered.get(text)
            if known is not None and age_line is not None and known.age_at == age_line.start() and known.host == host:
                age = int(age_line.group(1))
                remembered_now[text] = known
            else:
                noted = len(problems)
                mount = parse_block(first, block, problems, MOUNTSTATS, self.wanted)
                if mount is None:
                    continue
                age = mount.age  # type: ignore[assignment]  # parse_block refuses a mount without one
                layout, op_counters = self.operations_of(mount)
                known = Remembered.of(mount, host, -1 if age_line is None else age_line.start(), layout, op_counters)
                # Taken as parsed when it comes again with only its age moved: a block that parsed
                # without a note, whose one age line is the line the parser read its age from.
                if (
                    age_line is not None
                    and len(problems) == noted
                    and "age:" not in text
                    and int(age_line.group(1)) == age
                ):
                    remembered_now[text] = known
            pair = known.samples(raw, identity, age)
            # A mount point mounted over keeps the last block's samples, in the place of its first
            # (as parse_mountstats keeps its Mount).
            if known.mountpoint in place:
                found[place[known.mountpoint] : place[known.mountpoint] + 2] = pair
            else:
                place[known.mountpoint] = len(found)
                found.extend(pair)
        self.remembered = remembered_now
        return Parsed(found, problems)

    def publish(self, result: DiffResult, current: list[Sample]) -> list[Point]:
        points = []
        timestamps: dict[float, int] = {}  # the samples of one reading share their wall time
        idle: dict[tuple[Optional[int], ...], Mapping[str, rates.Gauge]] = {}
        for interval in result.intervals:
            sample = interval.current
            if sample.wall_time not in timestamps:
                timestamps[sample.wall_time] = epoch_ns(sample.wall_time)
            time_ns = timestamps[sample.wall_time]
            if not isinstance(sample, MountOps):
                own = mount_fields(interval)
                if own:
                    points.append(Point(sample.measurement, sample.key, own, time_ns))
                continue
            deltas = interval.deltas
            layout = sample.layout
            # rates.diff gives a vector for two vectors of one layout that moved forward (the
            # common case), else the counters' deltas by name (after a state load, a counter dropped).
            vector = deltas.row if isinstance(deltas, rates.CounterVector) and deltas.names == layout.names else None
            if not interval.dropped and not any(deltas.values() if vector is None else vector):
                # An idle mount (most of them, at any moment): each operation's figures are an idle one's.
                for (op, _), row in zip(layout.operations, layout.idle_rows):
                    if row not in idle:
                        idle[row] = MappingProxyType(op_figures(row, interval.dt))
                    if idle[row]:
                        points.append(Point(OP_MEASUREMENT, (*sample.key, ("op", op)), idle[row], time_ns))
                continue
            for (op, names), (_, start, stop, missing) in zip(layout.operations, layout.spans):
                row = tuple(map(deltas.get, names)) if vector is None else vector[start:stop] + missing
                # An operation that did nothing (most of them, at any moment) has the figures of
                # every other idle one: made once, shared read-only by their points.
                if row in IDLE_ROWS:
                    if row not in idle:
                        idle[row] = MappingProxyType(op_figures(row, interval.dt))
                    values: Mapping[str, rates.Gauge] = idle[row]
                else:
                    values = op_figures(row, interval.dt)
                if values:
                    points.append(Point(OP_MEASUREMENT, (*sample.key, ("op", op)), values, time_ns))
        return points


def build(config: Config) -> MountstatsSource:
    """The source as [mountstats] configures it (the options and their defaults: dnfsmon.config)."""
    return MountstatsSource(**config.sources[NAME])
