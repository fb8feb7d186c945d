"""Capture files, streamed: pcap and pcapng records as (time, link type, bytes).

A pure reader over a binary file object; nothing is read ahead beyond one
record, so a multi-GB capture costs the memory of its largest record.

Formats, as written by tcpdump, tshark/dumpcap and snoop converters:
- pcap: draft-ietf-opsawg-pcap ("PCAP Capture File Format"), §4 file header,
  §5 packet record. Magic 0xA1B2C3D4 (µs timestamps) or 0xA1B23C4D (ns), in
  either byte order; the link type is the low 16 bits of the LinkType field
  (the high bits carry the FCS length, §4).
- pcapng: draft-ietf-opsawg-pcapng ("PCAP Next Generation Dump File Format"),
  §4.1 Section Header Block (byte order from its magic 0x1A2B3C4D), §4.2
  Interface Description Block (link type, snaplen; option if_tsresol §4.2 code 9
  and if_tsoffset code 14), §4.3 Enhanced Packet Block, §4.4 Simple Packet
  Block, §4.5 Name Resolution and other blocks are skipped by their length.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from ..errors import EnvironmentProblem

PCAP_MAGIC_MICRO = 0xA1B2C3D4
PCAP_MAGIC_NANO = 0xA1B23C4D
PCAPNG_SHB = 0x0A0D0D0A
PCAPNG_BYTE_ORDER_MAGIC = 0x1A2B3C4D
PCAPNG_IDB = 1
PCAPNG_OBSOLETE_PACKET = 2
PCAPNG_SPB = 3
PCAPNG_EPB = 6
IF_TSRESOL = 9
IF_TSOFFSET = 14

# The largest record accepted. tcpdump's maximum snaplen is 262144 (MAXIMUM_SNAPLEN
# in libpcap's pcap-int.h); a larger length is a corrupt or hostile file, and
# refusing it keeps memory bounded whatever the file says.
MAX_RECORD_BYTES = 262144
# A pcapng block may carry options besides the packet: allow some room.
MAX_BLOCK_BYTES = MAX_RECORD_BYTES + 65536


class CaptureFormatError(EnvironmentProblem):
    """The file is not a capture this reader understands (exit 2)."""


@dataclass
class Frame:
    """One captured frame: time in ns since the epoch, the link type, the captured bytes."""

    time_ns: int
    linktype: int
    data: bytes
    original_length: int


@dataclass
class ReadCounts:
    """What the reader met besides frames."""

    frames: int = 0
    truncated_tail: int = 0  # the file ends inside a record (tcpdump killed mid-write): the rest is dropped
    skipped_blocks: int = 0  # pcapng blocks that carry no packet (statistics, names, custom)
    unknown_interface: int = 0  # pcapng packets naming an interface never described


def read_frames(handle: BinaryIO, name: str, counts: ReadCounts) -> Iterator[Frame]:
    """Every frame of a pcap or pcapng file, in file order; raises CaptureFormatError."""
    head = handle.read(4)
    if len(head) < 4:
        raise CaptureFormatError(f"{name}: empty or shorter than a capture file header; give a pcap or pcapng file")
    for order in ("<", ">"):
        (magic,) = struct.unpack(order + "I", head)
        if magic in (PCAP_MAGIC_MICRO, PCAP_MAGIC_NANO):
            return _pcap(handle, name, order, magic == PCAP_MAGIC_NANO, counts)
    if struct.unpack("<I", head)[0] == PCAPNG_SHB:
        return _pcapng(handle, name, head, counts)
    raise CaptureFormatError(
        f"{name}: not a pcap or pcapng file (starts with {head.hex()}); write captures with tcpdump -w or tshark -w"
    )


def _read_exact(handle: BinaryIO, size: int) -> bytes:
    data = handle.read(size)
    return data if data is not None else b""


def _pcap(handle: BinaryIO, name: str, order: str, nanoseconds: bool, counts: ReadCounts) -> Iterator[Frame]:
    rest = _read_exact(handle, 20)
    if len(rest) < 20:
        raise CaptureFormatError(f"{name}: pcap file header is cut short ({4 + len(rest)} of 24 bytes)")
    _major, _minor, _zone, _sigfigs, _snaplen, linktype_field = struct.unpack(order + "HHiIII", rest)
    linktype = linktype_field & 0xFFFF
    unit = 1 if nanoseconds else 1000
    record = struct.Struct(order + "IIII")
    while True:
        header = _read_exact(handle, 16)
        if not header:
            return
        if len(header) < 16:
            counts.truncated_tail += 1
            return
        seconds, fraction, captured, original = record.unpack(header)
        if captured > MAX_RECORD_BYTES:
            raise CaptureFormatError(
                f"{name}: record {counts.frames + 1} claims {captured} bytes (more than {MAX_RECORD_BYTES}): "
                "the file is corrupt"
            )
        data = _read_exact(handle, captured)
        if len(data) < captured:
            counts.truncated_tail += 1
            return
        counts.frames += 1
        yield Frame(seconds * 1_000_000_000 + fraction * unit, linktype, data, max(original, captured))


@dataclass
class _Interface:
    linktype: int
    snaplen: int
    units_per_second: int  # from if_tsresol (default 10^6)
    offset_seconds: int  # if_tsoffset


def _pcapng(handle: BinaryIO, name: str, head: bytes, counts: ReadCounts) -> Iterator[Frame]:
    order = "<"
    interfaces: list[_Interface] = []
    first = True
    while True:
        if first:
            block_type_bytes = head
            first = False
        else:
            block_type_bytes = _read_exact(handle, 4)
            if not block_type_bytes:
                return
            if len(block_type_bytes) < 4:
                counts.truncated_tail += 1
                return
        length_bytes = _read_exact(handle, 4)
        if len(length_bytes) < 4:
            counts.truncated_tail += 1
            return
        if struct.unpack("<I", block_type_bytes)[0] == PCAPNG_SHB:
            # A new section: its byte-order magic sets the order of everything in it (§4.1).
            magic_bytes = _read_exact(handle, 4)
            if len(magic_bytes) < 4:
                counts.truncated_tail += 1
                return
            if struct.unpack("<I", magic_bytes)[0] == PCAPNG_BYTE_ORDER_MAGIC:
                order = "<"
            elif struct.unpack(">I", magic_bytes)[0] == PCAPNG_BYTE_ORDER_MAGIC:
                order = ">"
            else:
                raise CaptureFormatError(f"{name}: pcapng section header has no valid byte-order magic")
            (length,) = struct.unpack(order + "I", length_bytes)
            _check_block_length(name, length, 28)
            body = _read_exact(handle, length - 12)
            if len(body) < length - 12:
                counts.truncated_tail += 1
                return
            interfaces = []  # interface ids are per section (§4.2)
            continue
        (block_type,) = struct.unpack(order + "I", block_type_bytes)
        (length,) = struct.unpack(order + "I", length_bytes)
        _check_block_length(name, length, 12)
        body = _read_exact(handle, length - 8)
        if len(body) < length - 8:
            counts.truncated_tail += 1
            return
        body = body[:-4]  # the trailing copy of the block length
        if block_type == PCAPNG_IDB:
            if len(body) < 8:
                raise CaptureFormatError(f"{name}: pcapng interface description block is too short")
            linktype, _reserved, snaplen = struct.unpack(order + "HHI", body[:8])
            units, offset = _interface_options(body[8:], order)
            interfaces.append(_Interface(linktype, snaplen, units, offset))
        elif block_type in (PCAPNG_EPB, PCAPNG_OBSOLETE_PACKET):
            if len(body) < 20:
                raise CaptureFormatError(f"{name}: pcapng packet block is too short")
            if block_type == PCAPNG_EPB:
                interface_id, high, low, captured, original = struct.unpack(order + "IIIII", body[:20])
            else:  # §Appendix A obsolete Packet Block: 16-bit interface id and drops count
                interface_id, _drops, high, low, captured, original = struct.unpack(order + "HHIIII", body[:20])
            if interface_id >= len(interfaces):
                counts.unknown_interface += 1
                continue
            data = body[20 : 20 + captured]
            interface = interfaces[interface_id]
            counts.frames += 1
            yield Frame(_to_ns((high << 32) | low, interface), interface.linktype, data, max(original, len(data)))
        elif block_type == PCAPNG_SPB:
            # §4.4: no timestamp; the first interface; captured length is what fits.
            if not interfaces or len(body) < 4:
                counts.unknown_interface += 1
                continue
            (original,) = struct.unpack(order + "I", body[:4])
            interface = interfaces[0]
            limit = interface.snaplen or MAX_RECORD_BYTES
            data = body[4 : 4 + min(original, limit)]
            counts.frames += 1
            yield Frame(0, interface.linktype, data, max(original, len(data)))
        else:
            counts.skipped_blocks += 1


def _check_block_length(name: str, length: int, minimum: int) -> None:
    if length < minimum or length % 4 or length > MAX_BLOCK_BYTES:
        raise CaptureFormatError(
            f"{name}: pcapng block length {length} is invalid (a multiple of 4 from {minimum} to {MAX_BLOCK_BYTES}): "
            "the file is corrupt"
        )


def _interface_options(options: bytes, order: str) -> tuple[int, int]:
    """(timestamp units per second, offset in seconds) from an IDB's options (§4.2)."""
    units, offset = 1_000_000, 0
    position = 0
    while position + 4 <= len(options):
        code, length = struct.unpack(order + "HH", options[position : position + 4])
        value = options[position + 4 : position + 4 + length]
        if code == 0:
            break
        if code == IF_TSRESOL and length >= 1:
            exponent = value[0] & 0x7F
            # MSB clear: a negative power of 10; set: a negative power of 2. Cap the
            # exponent so a hostile value cannot build a huge integer.
            exponent = min(exponent, 30 if value[0] & 0x80 else 12)
            units = 2**exponent if value[0] & 0x80 else 10**exponent
        elif code == IF_TSOFFSET and length >= 8:
            (offset,) = struct.unpack(order + "q", value[:8])
        position += 4 + length + (-length % 4)
    return units, offset


def _to_ns(ticks: int, interface: _Interface) -> int:
    seconds, rest = divmod(ticks, interface.units_per_second)
    return (seconds + interface.offset_seconds) * 1_000_000_000 + rest * 1_000_000_000 // interface.units_per_second
