"""A fake Oracle listener on 127.0.0.1 that python-oracledb's thin client really talks to.

No Oracle Database runs here, so the agent's handling of refused logons and
slow or silent listeners is tested against this: a TCP server speaking just
enough of the TNS/TTC wire protocol for the thin client to reach the point
where a database answers a logon, and answer it with an ORA- error. It
counts the TCP connections it accepted: in thin mode every logon attempt is
one new connection, so `accepted` is the number of logon attempts.

Behaviours:

- "refuse": ACCEPT the connect packet, then answer the client's first data
  message (protocol negotiation, which the thin client sends before its
  authentication messages) with an error message carrying `error_code`
  (ORA-01017 by default). The client raises it as oracledb.DatabaseError
  with full_code "ORA-01017", as it does for a database's logon refusal.
- "slow": accept the TCP connection and say nothing for `delay_s`, then
  close it (a listener or proxy that answers after the client gave up).
- "silent": accept, and never send a byte.
- "trickle": accept, send a TNS packet header announcing a large ACCEPT
  packet, then one byte of it every 0.2 s, for ever.
- "backlog": a listening socket whose accept queue is full and never
  served, so a new client's SYN is dropped (the kernel does not answer it
  once the queue of a listen(0) socket is full): connect() times out.

Wire format (written from the TNS packet layout: an 8-byte header of length,
checksum, type, flags and header checksum; TTC integers as a length byte
then big-endian bytes). ACCEPT announces protocol version 315 (12.1): the
lowest the thin client accepts, with 4-byte packet lengths afterwards and
neither the out-of-band check nor fast authentication (both from 318/319),
so the client's next packet is its protocol message.
"""

from __future__ import annotations

import socket
import struct
import threading

PACKET_CONNECT, PACKET_ACCEPT, PACKET_DATA = 1, 2, 6
MESSAGE_ERROR = 4
VERSION = 315
SDU = 8192
MAX_CONNECT_DATA = 230  # connect data longer than this follows in a DATA packet

MESSAGES = {
    1017: "ORA-01017: invalid credential or not authorized; logon denied",
    28000: "ORA-28000: The account is locked.",
    28001: "ORA-28001: the password has expired",
    1045: "ORA-01045: user DNFSMON lacks CREATE SESSION privilege; logon denied",
    1033: "ORA-01033: ORACLE initialization or shutdown in progress",
    1035: "ORA-01035: ORACLE only available to users with RESTRICTED SESSION privilege",
    1005: "ORA-01005: null password given; logon denied",
    1040: "ORA-01040: invalid character in password; logon denied",
}


def ub(value: int) -> bytes:
    """A TTC unsigned integer: its length in bytes, then the bytes, big-endian (0 is one zero byte)."""
    if value == 0:
        return b"\x00"
    data = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return bytes([len(data)]) + data


def error_message(code: int, text: str) -> bytes:
    """A TTC error message (type 4) as the thin client reads it after the protocol message."""
    encoded = text.encode()
    return b"".join(
        [
            bytes([MESSAGE_ERROR]),
            ub(0),  # end of call status
            ub(0),  # end-to-end sequence number
            ub(0),  # current row number
            ub(0),  # error number
            ub(0),  # array element error
            ub(0),  # array element error
            ub(0),  # cursor id
            ub(0),  # error position
            b"\x00" * 6,  # SQL type, fatal, flags, cursor options, UPI parameter, warning flags
            ub(0) + ub(0) + b"\x00" + ub(0) + ub(0),  # rowid: rba, partition, (byte), block, slot
            ub(0),  # OS error
            b"\x00\x00",  # statement number, call number
            ub(0),  # padding
            ub(0),  # success iterations
            ub(0),  # logical rowid bytes
            ub(0),  # batch error codes
            ub(0),  # batch error offsets
            ub(0),  # batch error messages
            ub(code),  # error number
            ub(0),  # row number
            ub(0) + ub(0),  # SQL type and server checksum (fields from 20c)
            bytes([len(encoded)]) + encoded,
        ]
    )


def packet(kind: int, payload: bytes, long_length: bool) -> bytes:
    length = 8 + len(payload)
    head = struct.pack(">I", length) if long_length else struct.pack(">HH", length, 0)
    return head + bytes([kind, 0]) + b"\x00\x00" + payload


def accept_packet() -> bytes:
    payload = struct.pack(">HH", VERSION, 0) + b"\x00" * 10 + b"\x00" + b"\x00" * 9 + struct.pack(">I", SDU)
    return packet(PACKET_ACCEPT, payload, long_length=False)


def read_exactly(connection: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = connection.recv(count - len(data))
        if not chunk:
            raise ConnectionError("client closed")
        data += chunk
    return data


def read_packet(connection: socket.socket, long_length: bool) -> tuple[int, bytes]:
    head = read_exactly(connection, 8)
    length = struct.unpack(">I", head[:4])[0] if long_length else struct.unpack(">H", head[:2])[0]
    return head[4], head + read_exactly(connection, length - 8)


class FakeListener:
    """A fake listener on 127.0.0.1 (see the module docstring); close() when done."""

    def __init__(self, behaviour: str, error_code: int = 1017, delay_s: float = 0.0):
        self.behaviour = behaviour
        self.error_code = error_code
        self.delay_s = delay_s
        self.accepted = 0
        self.stopping = threading.Event()
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server.bind(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.fillers: list[socket.socket] = []
        if behaviour == "backlog":
            self.server.listen(0)
            self._fill_the_queue()
            return
        self.server.listen(16)
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def dsn(self) -> str:
        return f"127.0.0.1:{self.port}/ORCL"

    def _fill_the_queue(self) -> None:
        # listen(0) queues one connection (Linux allows backlog + 1); connections past that
        # get no SYN-ACK. Fill it with non-blocking connects until one does not complete.
        for _ in range(8):
            filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            filler.setblocking(False)
            self.fillers.append(filler)
            try:
                filler.connect(("127.0.0.1", self.port))
            except BlockingIOError:
                pass
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        probe.settimeout(0.5)
        try:
            probe.connect(("127.0.0.1", self.port))
        except OSError:
            pass  # timed out: SYNs are dropped
        else:
            raise RuntimeError("the listen queue did not fill: SYNs are still answered")
        finally:
            probe.close()

    def _serve(self) -> None:
        while not self.stopping.is_set():
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            try:
                if self.behaviour == "slow":
                    self.stopping.wait(self.delay_s)
                    return
                if self.behaviour in ("silent", "trickle"):
                    self._hang(connection)
                    return
                kind, data = read_packet(connection, long_length=False)
                if kind != PACKET_CONNECT:
                    return
                if struct.unpack(">H", data[24:26])[0] > MAX_CONNECT_DATA:
                    read_packet(connection, long_length=False)  # the connect data
                connection.sendall(accept_packet())
                read_packet(connection, long_length=True)  # the protocol message
                text = MESSAGES.get(self.error_code, f"ORA-{self.error_code:05d}: refused by the fake listener")
                payload = b"\x00\x00" + error_message(self.error_code, text)  # data flags, then the message
                connection.sendall(packet(PACKET_DATA, payload, long_length=True))
                self.stopping.wait(5)  # let the client read it and hang up first
            except (OSError, ConnectionError):
                return

    def _hang(self, connection: socket.socket) -> None:
        # Packet length 0x4000, type 2 (ACCEPT): the client waits for the rest.
        header = b"\x40\x00\x00\x00\x02\x00\x00\x00"
        sent = 0
        while not self.stopping.wait(0.2):
            if self.behaviour == "trickle":
                connection.sendall(header[sent : sent + 1] if sent < len(header) else b"\x00")
                sent += 1

    def close(self) -> None:
        self.stopping.set()
        self.server.close()
        for filler in self.fillers:
            filler.close()
