"""ONC RPC and NFS message headers: pure functions over the first bytes of a record.

Sources of truth:
- RFC 5531 (ONC RPC v2) §9 message protocol (rpc_msg, call_body, reply_body,
  opaque_auth) and §11 record marking: on TCP every fragment starts with a
  4-byte mark, the high bit set on the last fragment of a message, the low 31
  bits the fragment's length.
- RFC 4506 (XDR): 4-byte big-endian integers, opaque data padded to 4 bytes.
- RFC 1813 (NFSv3) §3.3: procedure numbers 0-21 of program 100003 version 3.
- RFC 7530 (NFSv4.0) §16.2 and RFC 8881 (NFSv4.1) §16.2, §18: version 4 has
  NULL (0) and COMPOUND (1); COMPOUND4args is tag, minorversion, argarray of
  (opcode, args); operation numbers in RFC 8881 §18 and RFC 7862 §15 (4.2).

Every parser works on whatever bytes were captured: when the snaplen cut the
header, it returns what it could read and says so.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Optional

NFS_PROGRAM = 100003
RPC_VERSION = 2
CALL = 0
REPLY = 1
MSG_ACCEPTED = 0
MSG_DENIED = 1
ACCEPT_SUCCESS = 0

LAST_FRAGMENT = 0x80000000
FRAGMENT_LENGTH = 0x7FFFFFFF
# The largest RPC record taken as real. NFS transfers are at most a few MiB
# (Linux's RPCSVC_MAXPAYLOAD is 4 MiB); a larger mark means we are not at a
# record boundary.
MAX_RECORD = 16 * 1024 * 1024
# Bytes of a record's start kept to decode its header: RPC header with an
# AUTH_SYS credential (at most 400 bytes of body, RFC 5531 Appendix A) and the
# first operations of a COMPOUND.
HEADER_BYTES = 768

# RFC 1813 §3.3.
NFS3_PROCEDURES = (
    "NULL",
    "GETATTR",
    "SETATTR",
    "LOOKUP",
    "ACCESS",
    "READLINK",
    "READ",
    "WRITE",
    "CREATE",
    "MKDIR",
    "SYMLINK",
    "MKNOD",
    "REMOVE",
    "RMDIR",
    "RENAME",
    "LINK",
    "READDIR",
    "READDIRPLUS",
    "FSSTAT",
    "FSINFO",
    "PATHCONF",
    "COMMIT",
)

# RFC 8881 §18 (3-58) and RFC 7862 §15 (59-75); 10044 is OP_ILLEGAL.
NFS4_OPERATIONS = {
    3: "ACCESS",
    4: "CLOSE",
    5: "COMMIT",
    6: "CREATE",
    7: "DELEGPURGE",
    8: "DELEGRETURN",
    9: "GETATTR",
    10: "GETFH",
    11: "LINK",
    12: "LOCK",
    13: "LOCKT",
    14: "LOCKU",
    15: "LOOKUP",
    16: "LOOKUPP",
    17: "NVERIFY",
    18: "OPEN",
    19: "OPENATTR",
    20: "OPEN_CONFIRM",
    21: "OPEN_DOWNGRADE",
    22: "PUTFH",
    23: "PUTPUBFH",
    24: "PUTROOTFH",
    25: "READ",
    26: "READDIR",
    27: "READLINK",
    28: "REMOVE",
    29: "RENAME",
    30: "RENEW",
    31: "RESTOREFH",
    32: "SAVEFH",
    33: "SECINFO",
    34: "SETATTR",
    35: "SETCLIENTID",
    36: "SETCLIENTID_CONFIRM",
    37: "VERIFY",
    38: "WRITE",
    39: "RELEASE_LOCKOWNER",
    40: "BACKCHANNEL_CTL",
    41: "BIND_CONN_TO_SESSION",
    42: "EXCHANGE_ID",
    43: "CREATE_SESSION",
    44: "DESTROY_SESSION",
    45: "FREE_STATEID",
    46: "GET_DIR_DELEGATION",
    47: "GETDEVICEINFO",
    48: "GETDEVICELIST",
    49: "LAYOUTCOMMIT",
    50: "LAYOUTGET",
    51: "LAYOUTRETURN",
    52: "SECINFO_NO_NAME",
    53: "SEQUENCE",
    54: "SET_SSV",
    55: "TEST_STATEID",
    56: "WANT_DELEGATION",
    57: "DESTROY_CLIENTID",
    58: "RECLAIM_COMPLETE",
    59: "ALLOCATE",
    60: "COPY",
    61: "COPY_NOTIFY",
    62: "DEALLOCATE",
    63: "IO_ADVISE",
    64: "LAYOUTERROR",
    65: "LAYOUTSTATS",
    66: "OFFLOAD_CANCEL",
    67: "OFFLOAD_STATUS",
    68: "READ_PLUS",
    69: "SEEK",
    70: "WRITE_SAME",
    71: "CLONE",
    72: "GETXATTR",
    73: "SETXATTR",
    74: "LISTXATTRS",
    75: "REMOVEXATTR",
    10044: "ILLEGAL",
}
OP_SEQUENCE = 53
OP_PUTFH = 22
# Operations that only set the scene for the compound's work (session slot,
# current file handle): a compound is named by the first operation after them.
# Their argument sizes: SEQUENCE4args is a 16-byte session id and four 4-byte
# fields (RFC 8881 §18.46.1); PUTFH carries one nfs_fh4 (opaque<128>); the others none.
NFS4_SETUP_OPERATIONS = {OP_SEQUENCE: 32, OP_PUTFH: -1, 23: 0, 24: 0, 31: 0, 32: 0}

# The name when the header bytes that would name the operation were not captured.
UNKNOWN_COMPOUND = "COMPOUND"


@dataclass
class Call:
    xid: int
    program: int
    version: int
    procedure: int
    operation: str  # NFSv3 procedure or NFSv4 compound's main operation; "" for other programs
    minor_version: Optional[int] = None  # NFSv4 COMPOUND's minorversion, when captured

    @property
    def label(self) -> str:
        """The operation as reports show it: "NFSv3 READ", "NFSv4.1 WRITE"."""
        version = f"{self.version}.{self.minor_version}" if self.minor_version is not None else str(self.version)
        return f"NFSv{version} {self.operation}"


@dataclass
class Reply:
    xid: int
    accepted: Optional[bool]  # None when the snaplen cut the reply header
    status: Optional[int]  # NFS status (nfsstat3 / nfsstat4), when captured


def record_mark(raw: bytes) -> tuple[int, bool]:
    """(fragment length, last fragment?) from the 4-byte record mark (RFC 5531 §11)."""
    (word,) = struct.unpack("!I", raw)
    return word & FRAGMENT_LENGTH, bool(word & LAST_FRAGMENT)


def message_type(data: bytes) -> Optional[int]:
    """CALL or REPLY from the first 8 bytes of a message; None if they are not plausible."""
    if len(data) < 8:
        return None
    kind = struct.unpack_from("!I", data, 4)[0]
    return kind if kind in (CALL, REPLY) else None


def plausible(data: bytes, length: int) -> bool:
    """Whether a message of `length` bytes starting with `data` looks like an RPC header."""
    if not 12 <= length <= MAX_RECORD or len(data) < 12:
        return False
    _xid, kind, word = struct.unpack_from("!III", data)
    if kind == CALL:
        return word == RPC_VERSION and length >= 40
    return kind == REPLY and word in (MSG_ACCEPTED, MSG_DENIED)


def parse_call(data: bytes) -> Optional[Call]:
    """The call header; None when the bytes that name the procedure were not captured."""
    if len(data) < 24:
        return None
    xid, _kind, _rpcvers, program, version, procedure = struct.unpack_from("!IIIIII", data)
    if program != NFS_PROGRAM:
        return Call(xid, program, version, procedure, "")
    if version in (2, 3):
        name = NFS3_PROCEDURES[procedure] if procedure < len(NFS3_PROCEDURES) else f"PROC{procedure}"
        return Call(xid, program, version, procedure, name)
    if version == 4:
        if procedure == 0:
            return Call(xid, program, version, procedure, "NULL")
        operation, minor = _compound_operation(data, 24)
        return Call(xid, program, version, procedure, operation, minor)
    return Call(xid, program, version, procedure, f"PROC{procedure}")


def _compound_operation(data: bytes, offset: int) -> tuple[str, Optional[int]]:
    """(main operation, minor version) of a COMPOUND call whose credential starts at `offset`."""
    reader = _Reader(data, offset)
    for _ in range(2):  # credential, verifier: opaque_auth (flavor, opaque body)
        reader.word()
        reader.skip_opaque()
    reader.skip_opaque()  # tag
    minor = reader.word()
    count = reader.word()
    if reader.short or count is None:
        return UNKNOWN_COMPOUND, minor
    last = UNKNOWN_COMPOUND
    for _ in range(min(count, 16)):
        opcode = reader.word()
        if reader.short or opcode is None:
            return UNKNOWN_COMPOUND, minor
        name = NFS4_OPERATIONS.get(opcode, f"OP{opcode}")
        size = NFS4_SETUP_OPERATIONS.get(opcode)
        if size is None:
            return name, minor
        last = name
        if size < 0:
            reader.skip_opaque()
        else:
            reader.skip(size)
    return last, minor


# The size of a successful result of each scene-setting operation after its
# status: SEQUENCE4resok is the 16-byte session id and five 4-byte fields
# (RFC 8881 §18.46.2); PUTFH, PUTPUBFH, PUTROOTFH, RESTOREFH, SAVEFH return a
# status alone (§18.19-18.22, §18.27, §18.28).
NFS4_SETUP_RESULTS = {OP_SEQUENCE: 36, OP_PUTFH: 0, 23: 0, 24: 0, 31: 0, 32: 0}


def compound_reply_operation(data: bytes) -> Optional[str]:
    """The main operation of a COMPOUND from its reply, or None when not captured.

    COMPOUND4res is status, tag, then one (opcode, result) per operation that
    ran, each result led by its status (RFC 8881 §16.2.2); the server stops at
    the first that fails. The name is the first operation after those that set
    the scene, as for the call; a compound that stopped before it is named by
    the last operation that ran (the one that failed)."""
    reader = _Reader(data, 8)
    if reader.word() != MSG_ACCEPTED:
        return None
    reader.word()  # verifier flavor
    reader.skip_opaque()
    if reader.word() != ACCEPT_SUCCESS:
        return None
    reader.word()  # the compound's status
    reader.skip_opaque()  # tag
    count = reader.word()
    if reader.short or not count:
        return None
    name = None
    for _ in range(min(count, 16)):
        opcode = reader.word()
        status = reader.word()
        if reader.short or opcode is None:
            return None  # the capture ends inside the list
        name = NFS4_OPERATIONS.get(opcode, f"OP{opcode}")
        size = NFS4_SETUP_RESULTS.get(opcode)
        if size is None or status != 0:
            return name
        reader.skip(size)
    return name


def parse_reply(data: bytes) -> Reply:
    """The reply header, as far as it was captured."""
    xid = struct.unpack_from("!I", data)[0]
    if len(data) < 12:
        return Reply(xid, None, None)
    reader = _Reader(data, 8)
    reply_stat = reader.word()
    if reply_stat == MSG_DENIED:
        return Reply(xid, False, None)
    reader.word()  # verifier flavor
    reader.skip_opaque()
    accept_stat = reader.word()
    if accept_stat is None:
        return Reply(xid, None, None)
    if accept_stat != ACCEPT_SUCCESS:
        return Reply(xid, False, None)
    return Reply(xid, True, reader.word())  # nfsstat3 / nfsstat4 leads every NFS result


class _Reader:
    """XDR words from captured bytes; `short` turns true when the capture ends first."""

    def __init__(self, data: bytes, offset: int):
        self.data = data
        self.offset = offset
        self.short = False

    def word(self) -> Optional[int]:
        if self.short or self.offset + 4 > len(self.data):
            self.short = True
            return None
        (value,) = struct.unpack_from("!I", self.data, self.offset)
        self.offset += 4
        return int(value)

    def skip(self, size: int) -> None:
        self.offset += size
        if self.offset > len(self.data):
            self.short = True

    def skip_opaque(self) -> None:
        length = self.word()
        if length is not None:
            self.skip(length + (-length % 4))
