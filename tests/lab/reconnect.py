"""A client that reconnects from the same port and resends its call with the same XID.

    reconnect.py SERVER PORT ROUNDS

What the Linux NFS client does when a call goes unanswered past its timeout:
it closes the connection, connects again from the same source port, and
resends the call with the same XID (RFC 5531 §9: the XID identifies the call,
so the server's duplicate request cache can recognise it). Here each round
waits for a line on standard input (the lab starts dropping replies), then:
connect from PORT, send an NFSv3 NULL call (RFC 1813 §3.3.0), print
"sent XID" and wait for a line on standard input (the lab drops the reply
meanwhile); reset the connection (SO_LINGER 0: an RST, so the port is free at
once), print "reset" and wait for another line (the lab lets replies through
again); connect again from PORT, resend the same call and read its reply.
Prints "done" at the end.
"""

from __future__ import annotations

import socket
import struct
import sys

NFS_PROGRAM, NFS_VERSION, NULL_PROCEDURE = 100003, 3, 0


def connect(server: str, port: int) -> socket.socket:
    connection = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    connection.bind(("", port))
    connection.settimeout(10)
    connection.connect((server, 2049))
    return connection


def null_call(xid: int) -> bytes:
    """Record mark (RFC 5531 §11) and a call with AUTH_NONE credential and verifier."""
    message = struct.pack("!10I", xid, 0, 2, NFS_PROGRAM, NFS_VERSION, NULL_PROCEDURE, 0, 0, 0, 0)
    return struct.pack("!I", 0x80000000 | len(message)) + message


def main(server: str, port: int, rounds: int) -> None:
    for round_number in range(rounds):
        xid = 0x5EED0000 + round_number
        sys.stdin.readline()
        first = connect(server, port)
        first.sendall(null_call(xid))
        print(f"sent {xid:#x}", flush=True)
        sys.stdin.readline()
        first.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        first.close()
        print("reset", flush=True)
        sys.stdin.readline()
        second = connect(server, port)
        second.sendall(null_call(xid))
        reply = second.recv(4096)
        assert struct.unpack_from("!I", reply, 4)[0] == xid, reply
        second.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        second.close()  # an RST too: no TIME_WAIT, so the next round can use the port at once
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
