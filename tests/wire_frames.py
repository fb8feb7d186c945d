"""Hand-built NFS-over-TCP captures for the `dnfsmon wire` tests.

Builds RPC messages (RFC 5531 §9, record marks §11), TCP/IP frames and pcap or
pcapng files byte by byte, so each test states exactly what is on the wire:
where segments start, what the snaplen kept, which segment comes when.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Optional

NFS = 100003
AUTH_SYS = 1


def xdr_opaque(data: bytes) -> bytes:
    return struct.pack("!I", len(data)) + data + b"\0" * (-len(data) % 4)


def auth_sys(machine: bytes = b"dbhost01", uid: int = 54321, gids: tuple[int, ...] = (54321, 54322)) -> bytes:
    body = struct.pack("!I", 12345) + xdr_opaque(machine) + struct.pack("!II", uid, uid)
    body += struct.pack("!I", len(gids)) + b"".join(struct.pack("!I", g) for g in gids)
    return struct.pack("!I", AUTH_SYS) + xdr_opaque(body)


def call(
    xid: int, procedure: int, version: int = 3, body: bytes = b"", program: int = NFS, credential: bytes = b""
) -> bytes:
    """An RPC call message (no record mark) with an AUTH_SYS credential (auth_sys() unless given)."""
    header = struct.pack("!IIIIII", xid, 0, 2, program, version, procedure)
    return header + (credential or auth_sys()) + struct.pack("!II", 0, 0) + body


def compound(
    xid: int, operations: list[tuple[int, bytes]], minor: int = 1, tag: bytes = b"", credential: bytes = b""
) -> bytes:
    """An NFSv4 COMPOUND call (RFC 8881 §16.2) of (opcode, arguments)."""
    body = xdr_opaque(tag) + struct.pack("!II", minor, len(operations))
    body += b"".join(struct.pack("!I", opcode) + arguments for opcode, arguments in operations)
    return call(xid, 1, version=4, body=body, credential=credential)


def compound_reply(xid: int, results: list[tuple[int, bytes]], status: int = 0) -> bytes:
    """An NFSv4 COMPOUND reply (RFC 8881 §16.2.2): status, empty tag, then (opcode, result) per operation."""
    body = xdr_opaque(b"") + struct.pack("!I", len(results))
    body += b"".join(struct.pack("!I", opcode) + result for opcode, result in results)
    return reply(xid, status, body)


SEQUENCE_RESULT = struct.pack("!I", 0) + b"S" * 16 + struct.pack("!IIIII", 7, 0, 63, 63, 0)  # RFC 8881 §18.46.2


SEQUENCE_ARGS = b"S" * 16 + struct.pack("!IIII", 7, 0, 0, 0)
FILEHANDLE = xdr_opaque(b"\x01" * 28)


def reply(xid: int, status: int = 0, body: bytes = b"") -> bytes:
    """An accepted, successful RPC reply whose result starts with the NFS status."""
    return struct.pack("!IIIIII", xid, 1, 0, 0, 0, 0) + struct.pack("!I", status) + body


def record(message: bytes) -> bytes:
    """One record, one fragment (RFC 5531 §11)."""
    return struct.pack("!I", 0x80000000 | len(message)) + message


def sequence_of(frame: Frame) -> int:
    """The TCP sequence number of an Ethernet/IPv4 frame made here."""
    return int(struct.unpack_from("!I", frame.data, 14 + 20 + 4)[0])


def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


@dataclass
class Frame:
    time_ns: int
    data: bytes  # the whole frame as on the wire
    snaplen: int = 65535

    @property
    def captured(self) -> bytes:
        return self.data[: self.snaplen]


@dataclass
class Connection:
    """One TCP connection; sends build Ethernet/IPv4 (or IPv6) frames with real sequence numbers."""

    client: str = "10.0.0.1"
    server: str = "10.0.0.2"
    client_port: int = 800
    server_port: int = 2049
    client_seq: int = 1000
    server_seq: int = 4_294_000_000  # wraps past 2^32 within a few MB
    mss: int = 1448
    frames: list[Frame] = field(default_factory=list)
    ipv6: bool = False

    def handshake(self, time_ns: int) -> None:
        """SYN, SYN-ACK (RFC 9293 §3.5): each side's data then starts one past its initial sequence number."""
        self.frames.append(Frame(time_ns, self._frame(True, self.client_seq, b"", flags=0x02, ack=0)))
        self.frames.append(
            Frame(time_ns + 1000, self._frame(False, self.server_seq, b"", flags=0x12, ack=self.client_seq + 1))
        )
        self.client_seq += 1
        self.server_seq = (self.server_seq + 1) % (1 << 32)

    def reconnect(self, time_ns: int, client_seq: int, server_seq: int) -> None:
        """The client resets the connection and opens a new one from the same port (new sequence numbers)."""
        self.frames.append(Frame(time_ns, self._frame(True, self.client_seq, b"", flags=0x04, ack=0)))  # RST
        self.client_seq, self.server_seq = client_seq, server_seq
        self.handshake(time_ns + 1000)

    def ack(self, from_client: bool, time_ns: int, upto: Optional[int] = None) -> Frame:
        """A pure acknowledgment: of everything the other side sent so far, or of the bytes before `upto`
        (a duplicate acknowledgment while a lost segment is awaited)."""
        sequence = self.client_seq if from_client else self.server_seq
        frame = Frame(time_ns, self._frame(from_client, sequence, b"", 0x10, ack=upto))
        self.frames.append(frame)
        return frame

    def send(
        self,
        from_client: bool,
        time_ns: int,
        payload: bytes,
        snaplen: int = 65535,
        step_ns: int = 1000,
        mss: Optional[int] = None,
    ) -> list[Frame]:
        """Send payload as MSS-sized segments, one every step_ns; returns the new frames."""
        size = mss or self.mss
        made = []
        for offset in range(0, len(payload), size):
            piece = payload[offset : offset + size]
            if from_client:
                data = self._frame(True, self.client_seq, piece)
                self.client_seq = (self.client_seq + len(piece)) % (1 << 32)
            else:
                data = self._frame(False, self.server_seq, piece)
                self.server_seq = (self.server_seq + len(piece)) % (1 << 32)
            made.append(Frame(time_ns + (offset // size) * step_ns, data, snaplen))
        self.frames.extend(made)
        return made

    def _frame(
        self, from_client: bool, sequence: int, payload: bytes, flags: int = 0x18, ack: Optional[int] = None
    ) -> bytes:
        """A frame; unless told otherwise it acknowledges every byte the other side has sent so far."""
        source, destination = (self.client, self.server) if from_client else (self.server, self.client)
        sport, dport = (self.client_port, self.server_port) if from_client else (self.server_port, self.client_port)
        if ack is None:
            ack = self.server_seq if from_client else self.client_seq
        tcp = struct.pack("!HHIIBBHHH", sport, dport, sequence, ack, 5 << 4, flags, 65535, 0, 0) + payload
        if self.ipv6:
            import ipaddress

            src = ipaddress.IPv6Address(source).packed
            dst = ipaddress.IPv6Address(destination).packed
            ip = struct.pack("!IHBB", 6 << 28, len(tcp), 6, 64) + src + dst
            return b"\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x86\xdd" + ip + tcp
        src = bytes(int(part) for part in source.split("."))
        dst = bytes(int(part) for part in destination.split("."))
        header = struct.pack("!BBHHHBBH", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0) + src + dst
        header = header[:10] + struct.pack("!H", checksum(header)) + header[12:]
        return b"\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x08\x00" + header + tcp


def pcap(frames: list[Frame], nanoseconds: bool = False, big_endian: bool = False, linktype: int = 1) -> bytes:
    """A pcap file (draft-ietf-opsawg-pcap §4-5)."""
    order = ">" if big_endian else "<"
    magic = 0xA1B23C4D if nanoseconds else 0xA1B2C3D4
    out = [struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, 65535, linktype)]
    for frame in frames:
        seconds, rest = divmod(frame.time_ns, 1_000_000_000)
        fraction = rest if nanoseconds else rest // 1000
        data = frame.captured
        out.append(struct.pack(order + "IIII", seconds, fraction, len(data), len(frame.data)) + data)
    return b"".join(out)


def _block(order: str, block_type: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    length = 12 + len(body)
    return struct.pack(order + "II", block_type, length) + body + struct.pack(order + "I", length)


def pcapng(frames: list[Frame], tsresol: int = 9, big_endian: bool = False, linktype: int = 1) -> bytes:
    """A pcapng file (draft-ietf-opsawg-pcapng §4.1-4.3): SHB, one IDB with if_tsresol, EPBs.

    tsresol is the raw if_tsresol byte: 9 means 10^-9 s, 0x80 | 20 means 2^-20 s.
    """
    order = ">" if big_endian else "<"
    units = 2 ** (tsresol & 0x7F) if tsresol & 0x80 else 10 ** (tsresol & 0x7F)
    out = [_block(order, 0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1))]
    option = struct.pack(order + "HH", 9, 1) + bytes([tsresol]) + b"\0\0\0" + struct.pack(order + "HH", 0, 0)
    out.append(_block(order, 1, struct.pack(order + "HHI", linktype, 0, 65535) + option))
    out.append(_block(order, 5, struct.pack(order + "II", 0, 0)))  # an Interface Statistics Block: skipped
    for frame in frames:
        ticks = frame.time_ns * units // 1_000_000_000
        data = frame.captured
        body = struct.pack(order + "IIIII", 0, ticks >> 32, ticks & 0xFFFFFFFF, len(data), len(frame.data)) + data
        out.append(_block(order, 6, body))
    return b"".join(out)


def relink(frames: list[Frame], linktype: int) -> list[Frame]:
    """The same frames with the Ethernet header replaced by another link layer's."""
    result = []
    for frame in frames:
        ethertype, network = frame.data[12:14], frame.data[14:]
        if linktype == 113:  # Linux SLL: packet type, ARPHRD, address length, 8-byte address, protocol
            head = struct.pack("!HHH", 0, 1, 6) + b"\x02\0\0\0\0\x01\0\0" + ethertype
        elif linktype == 276:  # SLL2: protocol, reserved, ifindex, ARPHRD, packet type, address length, address
            head = ethertype + b"\0\0" + struct.pack("!IHBB", 2, 1, 0, 6) + b"\x02\0\0\0\0\x01\0\0"
        elif linktype == 101:  # raw IP
            head = b""
        else:
            raise ValueError(linktype)
        result.append(Frame(frame.time_ns, head + network, frame.snaplen - 14 + len(head)))
    return result
