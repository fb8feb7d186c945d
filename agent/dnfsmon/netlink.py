"""A small netlink reader over the standard library: sock_diag and RTM_GETADDR.

What filer_tcp and routes need from the kernel, and nothing else: the TCP
sockets to given remote ports with their struct tcp_info, and every interface
address. Replaces pyroute2 in the agent, whose import alone cost 0.2 to 0.3 s
of CPU and some 160 modules on every run (bench/RESULTS.md has the figures).

The wire formats are the kernel's UAPI headers, cited at each struct:
- include/uapi/linux/netlink.h: struct nlmsghdr, NLMSG_DONE/ERROR, NLM_F_*,
  the 4-byte alignment of messages and attributes (NLMSG_ALIGN, NLA_ALIGN);
- include/uapi/linux/sock_diag.h: SOCK_DIAG_BY_FAMILY;
- include/uapi/linux/inet_diag.h: struct inet_diag_req_v2, inet_diag_sockid,
  inet_diag_msg, the INET_DIAG_INFO attribute;
- include/uapi/linux/tcp.h: struct tcp_info;
- include/uapi/linux/rtnetlink.h: RTM_GETADDR, struct rtattr;
- include/uapi/linux/if_addr.h: struct ifaddrmsg, IFA_ADDRESS.

Netlink headers, struct tcp_info and the cookie are in host byte order;
ports and addresses of inet_diag_sockid are in network order (__be16, __be32).

The decoders (decode_*) are pure functions of the reply bytes, so recorded
replies test them; the I/O is `request()`.
"""

from __future__ import annotations

import os
import socket
import struct
from typing import Callable, Optional

# include/uapi/linux/netlink.h
NETLINK_ROUTE = 0
NETLINK_SOCK_DIAG = 4
NLMSG_ERROR = 2
NLMSG_DONE = 3
NLM_F_REQUEST = 0x01
NLM_F_DUMP_INTR = 0x10  # the dump changed while it was read: inconsistent, read it again
NLM_F_DUMP = 0x300  # NLM_F_ROOT | NLM_F_MATCH
NLMSGHDR = struct.Struct("=IHHII")  # len, type, flags, seq, pid
RTATTR = struct.Struct("=HH")  # rta_len, rta_type (struct rtattr / struct nlattr)

# include/uapi/linux/sock_diag.h
SOCK_DIAG_BY_FAMILY = 20
# include/uapi/linux/inet_diag.h: struct inet_diag_req_v2 is family, protocol,
# ext, pad, states, then struct inet_diag_sockid: sport, dport (__be16), src[4],
# dst[4] (__be32), if, cookie[2] (__u32).
INET_DIAG_REQ_V2 = struct.Struct("=BBBxI")
INET_DIAG_SOCKID = struct.Struct("!HH16s16s")  # the network-order part of inet_diag_sockid
INET_DIAG_SOCKID_TAIL = struct.Struct("=IQ")  # idiag_if, idiag_cookie (two host-order __u32, low first)
# struct inet_diag_msg: family, state, timer, retrans, then the sockid (48
# bytes), then expires, rqueue, wqueue, uid, inode (__u32 each): 72 bytes.
INET_DIAG_MSG_HEAD = struct.Struct("=BBBB")
INET_DIAG_MSG_SIZE = 72
INET_DIAG_INFO = 2  # enum: INET_DIAG_NONE, INET_DIAG_MEMINFO, INET_DIAG_INFO
# struct tcp_info (include/uapi/linux/tcp.h): the fields dnfsmon reads, by byte
# offset and struct format. A field past the end of the kernel's struct (an
# older kernel's shorter tcp_info) is absent, not zero.
TCP_INFO_FIELDS = (
    ("tcpi_retransmits", 2, "B"),
    ("tcpi_unacked", 24, "I"),
    ("tcpi_rtt", 68, "I"),
    ("tcpi_rttvar", 72, "I"),
    ("tcpi_snd_ssthresh", 76, "I"),
    ("tcpi_snd_cwnd", 80, "I"),
    ("tcpi_total_retrans", 100, "I"),
    ("tcpi_bytes_acked", 120, "Q"),  # Linux 4.1+
    ("tcpi_bytes_received", 128, "Q"),  # Linux 4.1+
    ("tcpi_segs_out", 136, "I"),  # Linux 4.2+
    ("tcpi_segs_in", 140, "I"),  # Linux 4.2+
    ("tcpi_min_rtt", 148, "I"),  # Linux 4.6+
)

# include/uapi/linux/rtnetlink.h
RTM_NEWADDR = 20
RTM_GETADDR = 22
# include/uapi/linux/if_addr.h: struct ifaddrmsg is family, prefixlen, flags,
# scope (__u8 each), index (__u32); IFA_ADDRESS is its first attribute type.
IFADDRMSG = struct.Struct("=BBBBI")
IFA_ADDRESS = 1

# A dump that keeps changing under us (NLM_F_DUMP_INTR) is read again, at most this often.
DUMP_ATTEMPTS = 3
# Every read is bounded: the kernel answers a dump at once.
TIMEOUT_S = 5.0
RECEIVE_BYTES = 1 << 16


class NetlinkError(OSError):
    """The kernel refused a request, or its reply did not have the documented shape."""


def _align(length: int) -> int:
    """NLMSG_ALIGN / NLA_ALIGN: messages and attributes start on 4-byte boundaries."""
    return (length + 3) & ~3


def messages(data: bytes) -> list[tuple[int, int, bytes]]:
    """(type, flags, payload) of each message in one datagram of replies."""
    found = []
    offset = 0
    while offset + NLMSGHDR.size <= len(data):
        length, kind, flags, _seq, _pid = NLMSGHDR.unpack_from(data, offset)
        if length < NLMSGHDR.size or offset + length > len(data):
            raise NetlinkError(f"netlink message of length {length} at byte {offset} overruns the reply")
        found.append((kind, flags, data[offset + NLMSGHDR.size : offset + length]))
        offset += _align(length)
    return found


def attributes(data: bytes, offset: int) -> dict[int, bytes]:
    """The attributes (struct rtattr) from offset on: type -> payload; the last of a type wins."""
    found = {}
    while offset + RTATTR.size <= len(data):
        length, kind = RTATTR.unpack_from(data, offset)
        if length < RTATTR.size or offset + length > len(data):
            raise NetlinkError(f"netlink attribute of length {length} at byte {offset} overruns its message")
        found[kind & 0x3FFF] = data[offset + RTATTR.size : offset + length]  # without NLA_F_NESTED/BYTEORDER
        offset += _align(length)
    return found


def _address(family: int, raw: bytes) -> str:
    return socket.inet_ntop(family, raw[:4] if family == socket.AF_INET else raw)


def decode_tcp_info(data: bytes) -> dict[str, int]:
    """The fields of TCP_INFO_FIELDS that the kernel's struct tcp_info holds."""
    found = {}
    for name, offset, kind in TCP_INFO_FIELDS:
        if offset + struct.calcsize(kind) <= len(data):
            found[name] = struct.unpack_from("=" + kind, data, offset)[0]
    return found


def decode_inet_diag(payload: bytes) -> dict:
    """One socket of a sock_diag reply: addresses, ports, cookie and its tcp_info fields."""
    if len(payload) < INET_DIAG_MSG_SIZE:
        raise NetlinkError(f"inet_diag_msg of {len(payload)} bytes, expected {INET_DIAG_MSG_SIZE}")
    family = INET_DIAG_MSG_HEAD.unpack_from(payload, 0)[0]
    sport, dport, src, dst = INET_DIAG_SOCKID.unpack_from(payload, 4)
    _interface, cookie = INET_DIAG_SOCKID_TAIL.unpack_from(payload, 4 + INET_DIAG_SOCKID.size)
    info = attributes(payload, INET_DIAG_MSG_SIZE).get(INET_DIAG_INFO)
    return {
        "src": _address(family, src),
        "sport": sport,
        "dst": _address(family, dst),
        "dport": dport,
        "cookie": cookie,
        "tcp_info": {} if info is None else decode_tcp_info(info),
    }


def decode_address(payload: bytes) -> Optional[tuple[int, str, int]]:
    """(interface index, address, prefix length) of one RTM_NEWADDR message; None without IFA_ADDRESS."""
    if len(payload) < IFADDRMSG.size:
        raise NetlinkError(f"ifaddrmsg of {len(payload)} bytes, expected {IFADDRMSG.size}")
    family, prefix_len, _flags, _scope, index = IFADDRMSG.unpack_from(payload, 0)
    address = attributes(payload, IFADDRMSG.size).get(IFA_ADDRESS)
    if address is None or family not in (socket.AF_INET, socket.AF_INET6):
        return None
    return index, socket.inet_ntop(family, address), prefix_len


def request(protocol: int, kind: int, body: bytes, wanted: int, decode: Callable[[bytes], object]) -> list:
    """Send one dump request; decode every reply message of type `wanted` until NLMSG_DONE."""
    for _attempt in range(DUMP_ATTEMPTS):
        interrupted = False
        found = []
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, protocol) as sock:
            sock.settimeout(TIMEOUT_S)
            sock.bind((0, 0))
            header = NLMSGHDR.pack(NLMSGHDR.size + len(body), kind, NLM_F_REQUEST | NLM_F_DUMP, 1, 0)
            sock.send(header + body)
            done = False
            while not done:
                data = sock.recv(RECEIVE_BYTES)
                if not data:
                    raise NetlinkError("netlink socket closed before the end of the dump")
                for message_type, flags, payload in messages(data):
                    interrupted = interrupted or bool(flags & NLM_F_DUMP_INTR)
                    if message_type == NLMSG_DONE:
                        done = True
                        break
                    if message_type == NLMSG_ERROR:
                        # struct nlmsgerr: a negative errno, then the request's header.
                        errno = -struct.unpack_from("=i", payload, 0)[0]
                        if errno:
                            raise NetlinkError(errno, f"netlink request {kind}: {os.strerror(errno)}")
                        continue
                    if message_type == wanted:
                        found.append(decode(payload))
        if not interrupted:
            return found
    raise NetlinkError(f"netlink dump {kind} kept changing while read ({DUMP_ATTEMPTS} attempts)")


def tcp_sockets(family: int, states: int, remote_port: int) -> list[dict]:
    """Sockets of one family in `states` (a bit mask of TCP states) whose remote port is
    remote_port, with struct tcp_info (the kernel filters by idiag_dport)."""
    body = INET_DIAG_REQ_V2.pack(family, socket.IPPROTO_TCP, 1 << (INET_DIAG_INFO - 1), states)
    body += INET_DIAG_SOCKID.pack(0, remote_port, b"\0" * 16, b"\0" * 16) + INET_DIAG_SOCKID_TAIL.pack(0, 0)
    return request(NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY, body, SOCK_DIAG_BY_FAMILY, decode_inet_diag)


def addresses() -> list[dict]:
    """Every interface address: {"interface", "address", "prefix_len"} (IPv4 and IPv6)."""
    body = IFADDRMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0)
    found = request(NETLINK_ROUTE, RTM_GETADDR, body, RTM_NEWADDR, decode_address)
    names = dict(socket.if_nameindex())
    return [
        {"interface": names.get(index, ""), "address": address, "prefix_len": prefix_len}
        for index, address, prefix_len in (entry for entry in found if entry is not None)
    ]
