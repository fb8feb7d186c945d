"""Link layer, IP and TCP headers of one captured frame: a pure function.

Link types (tcpdump.org "LINK-LAYER HEADER TYPES"): 1 Ethernet (with 802.1Q /
802.1ad tags), 113 Linux cooked capture SLL (16-byte header, protocol at offset
14), 276 SLL2 (20-byte header, protocol at offset 0), 101/228/229 raw IP, 0
BSD loopback (4-byte family in the writer's byte order).
IPv4: RFC 791 §3.1; IPv6: RFC 8200 §3-4 (extension headers skipped by their
length); TCP: RFC 9293 §3.1.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Optional, Union

LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276

ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
ETHERTYPE_VLAN = (0x8100, 0x88A8, 0x9100)
IPPROTO_TCP = 6
IPV6_EXTENSION_HEADERS = (0, 43, 60)  # hop-by-hop, routing, destination options: skipped by length
IPV6_FRAGMENT = 44

TCP_FIN = 0x01
TCP_SYN = 0x02
TCP_RST = 0x04
TCP_ACK = 0x10


@dataclass
class Segment:
    """One TCP segment: addresses as printable strings, payload as captured."""

    time_ns: int
    source: str
    source_port: int
    destination: str
    destination_port: int
    sequence: int
    flags: int
    payload: bytes  # the captured part of the payload (may be shorter than payload_length)
    payload_length: int  # the payload's length on the wire, from the IP header
    acknowledgement: int = 0  # the acknowledgment number (meaningful when flags has TCP_ACK)


# Why a frame is not a TCP segment we can use; counted by the caller.
NOT_IP = "not IPv4/IPv6"
NOT_TCP = "not TCP"
UNKNOWN_LINKTYPE = "unsupported link type"
FRAGMENT = "IP fragment"
TRUNCATED_HEADERS = "headers cut short by the snaplen"


def decode(time_ns: int, linktype: int, data: bytes) -> Union[Segment, str]:
    """The TCP segment in a frame, or the reason (a constant above) why there is none."""
    network: Optional[bytes]
    ethertype: int
    if linktype == LINKTYPE_ETHERNET:
        if len(data) < 14:
            return TRUNCATED_HEADERS
        offset = 12
        (ethertype,) = struct.unpack_from("!H", data, offset)
        while ethertype in ETHERTYPE_VLAN and len(data) >= offset + 6:
            offset += 4
            (ethertype,) = struct.unpack_from("!H", data, offset)
        network = data[offset + 2 :]
    elif linktype == LINKTYPE_LINUX_SLL:
        if len(data) < 16:
            return TRUNCATED_HEADERS
        (ethertype,) = struct.unpack_from("!H", data, 14)
        network = data[16:]
    elif linktype == LINKTYPE_LINUX_SLL2:
        if len(data) < 20:
            return TRUNCATED_HEADERS
        (ethertype,) = struct.unpack_from("!H", data, 0)
        network = data[20:]
    elif linktype in (LINKTYPE_RAW, LINKTYPE_IPV4, LINKTYPE_IPV6):
        if not data:
            return TRUNCATED_HEADERS
        version = data[0] >> 4
        ethertype = ETHERTYPE_IPV4 if version == 4 else ETHERTYPE_IPV6 if version == 6 else 0
        network = data
    elif linktype == LINKTYPE_NULL:
        if len(data) < 4:
            return TRUNCATED_HEADERS
        family = struct.unpack_from("<I", data)[0]
        if family > 0xFFFF:
            family = struct.unpack_from(">I", data)[0]
        # AF_INET is 2 everywhere; AF_INET6 is 24, 28 or 30 depending on the BSD.
        ethertype = ETHERTYPE_IPV4 if family == 2 else ETHERTYPE_IPV6 if family in (10, 24, 28, 30) else 0
        network = data[4:]
    else:
        return UNKNOWN_LINKTYPE
    if ethertype == ETHERTYPE_IPV4:
        return _ipv4(time_ns, network)
    if ethertype == ETHERTYPE_IPV6:
        return _ipv6(time_ns, network)
    return NOT_IP


def _ipv4(time_ns: int, packet: bytes) -> Union[Segment, str]:
    if len(packet) < 20 or packet[0] >> 4 != 4:
        return TRUNCATED_HEADERS if len(packet) < 20 else NOT_IP
    header_length = (packet[0] & 0x0F) * 4
    (total_length,) = struct.unpack_from("!H", packet, 2)
    (fragment,) = struct.unpack_from("!H", packet, 6)
    if packet[9] != IPPROTO_TCP:
        return NOT_TCP
    if fragment & 0x3FFF:  # more-fragments flag or a non-zero offset
        return FRAGMENT
    if header_length < 20 or total_length < header_length:
        return TRUNCATED_HEADERS
    source = ".".join(str(b) for b in packet[12:16])
    destination = ".".join(str(b) for b in packet[16:20])
    # Ethernet pads short frames: the IP total length says where the datagram ends.
    return _tcp(time_ns, source, destination, packet[header_length:total_length], total_length - header_length)


def _ipv6(time_ns: int, packet: bytes) -> Union[Segment, str]:
    if len(packet) < 40:
        return TRUNCATED_HEADERS
    if packet[0] >> 4 != 6:
        return NOT_IP
    (payload_length,) = struct.unpack_from("!H", packet, 4)
    next_header = packet[6]
    offset = 40
    remaining = payload_length
    while next_header in IPV6_EXTENSION_HEADERS:
        if len(packet) < offset + 2:
            return TRUNCATED_HEADERS
        length = (packet[offset + 1] + 1) * 8
        next_header = packet[offset]
        offset += length
        remaining -= length
    if next_header == IPV6_FRAGMENT:
        return FRAGMENT
    if next_header != IPPROTO_TCP:
        return NOT_TCP
    if remaining < 0:
        return TRUNCATED_HEADERS
    source = _ipv6_text(packet[8:24])
    destination = _ipv6_text(packet[24:40])
    return _tcp(time_ns, source, destination, packet[offset : offset + remaining], remaining)


def _ipv6_text(raw: bytes) -> str:
    groups = struct.unpack("!8H", raw)
    return ":".join(f"{g:x}" for g in groups)


def _tcp(time_ns: int, source: str, destination: str, segment: bytes, segment_length: int) -> Union[Segment, str]:
    if len(segment) < 20:
        return TRUNCATED_HEADERS
    source_port, destination_port, sequence, acknowledgement, offset_flags = struct.unpack_from("!HHIIH", segment)
    header_length = (offset_flags >> 12) * 4
    if header_length < 20 or len(segment) < header_length or segment_length < header_length:
        return TRUNCATED_HEADERS
    return Segment(
        time_ns,
        source,
        source_port,
        destination,
        destination_port,
        sequence,
        offset_flags & 0xFF,
        segment[header_length:],
        segment_length - header_length,
        acknowledgement,
    )
