"""A misbehaving InfluxDB write endpoint for the reliability tests.

A real InfluxDB cannot be made to stall, trickle or answer 429 on demand, so
this small HTTP server on a loopback port does, one behaviour per instance:

- "stall": accepts connections, reads the request, never answers;
- "trickle": starts a reply, then sends one header byte every `trickle_s`
  for ever (the reply never ends);
- "respond": answers each request with the next of `responses`
  (status, headers, body), repeating the last one.

It records the time of every request it received (`requests`) and counts
accepted connections (`connections`).
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Optional

REASONS = {204: "No Content", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests", 503: "Unavailable"}


class FakeInflux:
    def __init__(self, mode: str, responses: Optional[list] = None, trickle_s: float = 0.3):
        self.mode = mode
        self.responses = responses or [(204, {}, b"")]
        self.trickle_s = trickle_s
        self.requests: list[float] = []
        self.connections = 0
        self.lock = threading.Lock()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.open: list[socket.socket] = []
        self.stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
                self.open.append(connection)
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _read_request(self, connection: socket.socket, buffer: bytes) -> Optional[bytes]:
        """Read one request; the bytes after it, or None when the client went away."""
        while b"\r\n\r\n" not in buffer:
            chunk = connection.recv(65536)
            if not chunk:
                return None
            buffer += chunk
        head, _, rest = buffer.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(rest) < length:
            chunk = connection.recv(65536)
            if not chunk:
                return None
            rest += chunk
        with self.lock:
            self.requests.append(time.monotonic())
        return rest[length:]

    def _serve(self, connection: socket.socket) -> None:
        buffer: Optional[bytes] = b""
        try:
            while not self.stopped.is_set():
                buffer = self._read_request(connection, buffer or b"")
                if buffer is None:
                    return
                if self.mode == "stall":
                    self.stopped.wait()
                    return
                if self.mode == "trickle":
                    connection.sendall(b"HTTP/1.1 204 No Content\r\nX-Slow: ")
                    while not self.stopped.wait(self.trickle_s):
                        connection.sendall(b"a")
                    return
                with self.lock:
                    status, headers, body = self.responses[min(len(self.requests), len(self.responses)) - 1]
                lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}", f"Content-Length: {len(body)}"]
                lines += [f"{k}: {v}" for k, v in headers.items()]
                if body:
                    lines.append("Content-Type: application/json")
                connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        except OSError:
            return
        finally:
            connection.close()

    def stop(self) -> None:
        self.stopped.set()
        self.server.close()
        with self.lock:
            for connection in self.open:
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
