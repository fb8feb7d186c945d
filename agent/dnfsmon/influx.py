"""Shipping stored points to InfluxDB, with the standard library's http.client.

It speaks the v2 write API (POST /api/v2/write, precision ns), which
InfluxDB 2.x and 3.x serve and 1.8+ serves as a compatibility endpoint
(bucket "database/retention_policy", token "user:password", org ignored):
the store's records are line protocol already, so a request is their lines
joined, gzip-compressed, with the token in an Authorization header. This
module is imported only when shipping. It replaced influxdb-client, whose
import alone cost 0.36 s of CPU (and level 9 gzip 2.2 s per 100 000 points)
where a ship of 100 000 points now spends under 1 s in all.

Order and delivery: points are sent in store order, in batches; after each
batch InfluxDB acknowledged, the store's cursor moves past it (and only
then are shipped segments deleted). A batch InfluxDB rejects as malformed
(HTTP 400, 413 or 422 - e.g. a field type conflict) is split in halves and
re-sent until the offending points stand alone; they are quarantined, the
rest arrive. Re-sending a point InfluxDB already has is harmless: same
series and timestamp means an overwrite with the same values.

Time bounds (docs/reliability.md):
- One ship takes at most [influxdb] deadline_s: no request starts, and no
  retry waits, past it.
- One request takes at most timeout_s in all. A socket timeout bounds the
  connect and each socket read, not the whole reply: a server trickling a
  byte now and then holds a request for ever (measured with urllib3: 236 s
  with timeout_s = 2). So each request also runs under a hard wall-clock
  alarm (SIGALRM via setitimer) that interrupts it; in a thread other than
  the main one, where signals cannot be delivered, the socket timeout alone
  applies.
- The first request that times out ends the ship: a server that does not
  answer within timeout_s will not answer the next batch either.
- A 429 or 503 with Retry-After waits what the server asks, if that fits
  before the deadline; otherwise the ship stops.
- A server that rejects everything stops the ship after
  REJECTED_REQUESTS_MAX rejected requests (the points stay in the store, the
  run exits 4), instead of 2n-1 requests and n quarantined points.
"""

from __future__ import annotations

import contextlib
import email.utils
import http.client
import logging
import signal
import socket
import ssl
import threading
import time
import urllib.parse
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Callable, Optional

from . import prometheus
from .config import ConfigError, InfluxSettings, read_secret
from .errors import EnvironmentProblem
from .points import Point, from_line, to_line
from .store import Position, Store

log = logging.getLogger(__name__)

# HTTP statuses that say "this data is bad", as opposed to "try again later".
REJECTED_STATUSES = (400, 413, 422)
# Statuses after which the server may say when to come back (RFC 9110 10.2.3).
RETRY_AFTER_STATUSES = (429, 503)
# Rejected requests one ship may spend isolating bad points. One bad point in
# a batch of n costs about 2*log2(n) of them (about 26 for 5000); a server
# rejecting everything would otherwise cost 2n-1 requests per batch.
REJECTED_REQUESTS_MAX = 64
# gzip level of request bodies ([influxdb] gzip). influxdb-client used level 9
# (gzip.compress's default), which cost 2.2 s of CPU for 100 000 points (46 MB
# of line protocol, bench/whole.py's ship) and was most of a ship's own work;
# level 1 took 0.23 s for the same and still shrinks line protocol five times.
GZIP_LEVEL = 1
# zlib's window bits for a gzip header and trailer (zlib manual, deflateInit2: 16 + 15).
GZIP_WBITS = 31
# Bytes of a reply body read at most. A write's reply is empty (204) or a short JSON error; only
# its first 300 characters are ever reported. A broken or hostile endpoint's endless body would
# otherwise be read into memory until timeout_s and turn an HTTP error into a timeout.
REPLY_BYTES_MAX = 64 * 1024


class ShipError(RuntimeError):
    """InfluxDB could not be reached or kept failing; the points stay in the store."""


class RequestTimedOut(Exception):
    """A request passed its wall-clock bound."""


@dataclass
class ShipReport:
    sent: int = 0
    quarantined: int = 0
    # Stopped at the deadline with points left for a later run.
    unfinished: bool = False


class Deadline:
    def __init__(self, seconds: float):
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def remaining(self) -> float:
        return self.end - time.monotonic()


def _on_alarm(signum: int, frame: Any) -> None:
    raise RequestTimedOut()


@contextlib.contextmanager
def hard_time_limit(seconds: float) -> Iterator[None]:
    """Interrupt the block with RequestTimedOut after `seconds` of wall time (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def retry_after_s(headers: Any) -> Optional[float]:
    """Seconds a Retry-After header asks for (delay-seconds or an HTTP date); None when absent or bad."""
    value = headers.get("Retry-After") if headers is not None else None
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _is_timeout(error: BaseException) -> bool:
    # socket.timeout is TimeoutError from Python 3.10; both named for 3.9.
    return isinstance(error, (RequestTimedOut, socket.timeout, TimeoutError))


class HTTPStatusError(Exception):
    """InfluxDB answered the write with a status other than 204 (or another 2xx)."""

    def __init__(self, status: int, body: str, headers: Any):
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body
        self.headers = headers


def token_of(settings: InfluxSettings) -> str:
    """The token from its file or environment variable; empty for 1.8 without auth."""
    try:
        return read_secret(settings.token_file or None, settings.token_env or None, "InfluxDB token", http_header=True)
    except ConfigError:
        if settings.token_file:
            raise
        return ""


class Writer:
    """POST /api/v2/write with the standard library's http.client, bounded in time.

    One connection, kept alive across the batches of a ship (a new one after
    any failure). No client library: influxdb-client's import alone cost
    0.36 s of CPU, more than a ship of 100 000 points spends on its own work.
    """

    def __init__(self, settings: InfluxSettings, deadline: Deadline):
        self.settings = settings
        self.deadline = deadline
        self.rejected_requests = 0
        self.token = token_of(settings)
        url = urllib.parse.urlsplit(settings.url)
        self.tls = url.scheme == "https"
        self.host = url.hostname or "localhost"
        self.port = url.port or (443 if self.tls else 80)
        # The write endpoint under the URL's path (a reverse proxy may serve InfluxDB under one);
        # 1.8 takes bucket "database/retention_policy" and ignores org.
        query = urllib.parse.urlencode({"org": settings.org, "bucket": settings.bucket, "precision": "ns"})
        self.path = f"{url.path.rstrip('/')}/api/v2/write?{query}"
        self.connection: Optional[http.client.HTTPConnection] = None

    def _connect(self) -> http.client.HTTPConnection:
        if self.connection is None:
            if self.tls:
                context = ssl.create_default_context(cafile=self.settings.ca_file or None)
                if not self.settings.verify_tls:  # [influxdb] verify_tls = false: the operator's choice
                    context.check_hostname = False
                    context.verify_mode = ssl.CERT_NONE
                self.connection = http.client.HTTPSConnection(
                    self.host, self.port, timeout=self.settings.timeout_s, context=context
                )
            else:
                self.connection = http.client.HTTPConnection(self.host, self.port, timeout=self.settings.timeout_s)
        return self.connection

    def _post(self, body: bytes, headers: dict[str, str]) -> None:
        """One request; HTTPStatusError unless InfluxDB answered 2xx (204: written)."""
        reused = self.connection is not None
        try:
            response = self._exchange(body, headers)
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            if not reused:
                raise
            # The server closed the kept-alive connection while it was idle (RFC 9112 9.3.1):
            # the request is sent again on a new one, as browsers do. Re-sending is harmless:
            # InfluxDB overwrites a point with the same series and timestamp.
            response = self._exchange(body, headers)
        if not 200 <= response[0] < 300:
            raise HTTPStatusError(*response)

    def _exchange(self, body: bytes, headers: dict[str, str]) -> tuple[int, str, Any]:
        """Send one request and read its reply: (status, body text, headers)."""
        connection = self._connect()
        try:
            connection.request("POST", self.path, body=body, headers=headers)
            response = connection.getresponse()
            text = response.read(REPLY_BYTES_MAX).decode("utf-8", "replace")
        except BaseException:
            self.close()  # a request cut half-way leaves the connection unusable
            raise
        if response.will_close or not response.isclosed():  # not read to its end: unusable
            self.close()
        return response.status, text, response.headers

    def _clean(self, text: str) -> str:
        """Error text without the token, should a server or proxy ever echo a header."""
        return text.replace(self.token, "<token>") if self.token else text

    def _bounded(self, call: Callable[[], None]) -> None:
        budget = min(self.settings.timeout_s, self.deadline.remaining())
        if budget <= 0:
            raise ShipError(
                f"InfluxDB {self.settings.url}: this ship's deadline_s ({self.deadline.seconds:g} s) is spent"
            )
        try:
            with hard_time_limit(budget):
                call()
        except Exception as error:
            if _is_timeout(error):
                raise ShipError(
                    f"InfluxDB {self.settings.url} did not answer within {budget:.1f} s; "
                    "shipping stops for this run (timeout_s, deadline_s)"
                ) from None
            raise

    def write(self, lines: list[bytes]) -> Optional[str]:
        """None when InfluxDB stored the lines; the reason when it rejected them as bad data.

        The body is compressed here, once per request, at GZIP_LEVEL. Raises ShipError after max_retries, at the first timeout, or at the
        deadline; EnvironmentProblem when the bucket does not exist.
        """
        payload = b"\n".join(lines)
        if self.settings.gzip:
            compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, GZIP_WBITS)
            payload = compressor.compress(payload) + compressor.flush()
        # InfluxDB API reference, "Write data": line protocol in the body, precision in the query,
        # the token as "Authorization: Token ..." (1.8: "user:password"), gzip as Content-Encoding.
        headers = {"Content-Type": "text/plain; charset=utf-8"}
        if self.token:
            headers["Authorization"] = f"Token {self.token}"
        if self.settings.gzip:
            headers["Content-Encoding"] = "gzip"
        delay = self.settings.retry_backoff_s
        for attempt in range(self.settings.max_retries + 1):
            asked: Optional[float] = None
            try:
                self._bounded(lambda: self._post(payload, headers))
                return None
            except HTTPStatusError as error:
                body = self._clean(error.body.strip())[:300]
                if error.status in REJECTED_STATUSES:
                    self.rejected_requests += 1
                    if self.rejected_requests > REJECTED_REQUESTS_MAX:
                        raise ShipError(
                            f"InfluxDB {self.settings.url} rejected {self.rejected_requests} requests in this ship "
                            f"(last: HTTP {error.status}: {body}); stopping: fix the server's limits or schema"
                        ) from None
                    return f"HTTP {error.status}: {body}"
                if error.status in (401, 403):
                    raise ShipError(
                        f"InfluxDB {self.settings.url} refused the credentials (HTTP {error.status}); check the token"
                    ) from None
                if error.status == 404:
                    raise EnvironmentProblem(
                        f"InfluxDB {self.settings.url}: bucket {self.settings.bucket!r} not found (HTTP 404: {body}); "
                        "create it (1.8: CREATE DATABASE) or fix [influxdb] bucket"
                    ) from None
                reason = f"HTTP {error.status}: {body}"
                if error.status in RETRY_AFTER_STATUSES:
                    asked = retry_after_s(error.headers)
            except ShipError:
                raise
            except (OSError, http.client.HTTPException) as error:  # refused, reset, TLS, a bad reply
                reason = self._clean(f"{error.__class__.__name__}: {error}")[:300]
            if attempt < self.settings.max_retries:
                wait = max(delay, asked or 0.0)
                if wait >= self.deadline.remaining():
                    raise ShipError(
                        f"InfluxDB {self.settings.url} write failed ({reason}); the next try "
                        f"({wait:.1f} s away{', as Retry-After asks' if asked else ''}) would pass deadline_s"
                    )
                # Debug only: a ship that fails for good ends in one error naming its retries, and a
                # line per retry made an InfluxDB outage some 5 lines a minute (user review M12).
                log.debug(
                    "InfluxDB write failed (%s); retry %d of %d in %.1f s",
                    reason,
                    attempt + 1,
                    self.settings.max_retries,
                    wait,
                )
                time.sleep(wait)
                delay *= 2
        raise ShipError(
            f"InfluxDB {self.settings.url} write failed after {self.settings.max_retries} retries: {reason}"
        )

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


def _send(
    writer: Writer,
    store: Store,
    lines: list[bytes],
    positions: list[Position],
    report: ShipReport,
    done: list[Position],
) -> None:
    """Deliver a batch (lines and the position just after each), isolating rejected lines by
    halving; quarantine those.

    `done` gets the position of each settled line in order, so a ship
    stopped half-way acknowledges exactly the settled prefix.
    """
    reason = writer.write(lines)
    if reason is None:
        report.sent += len(lines)
        done.append(positions[-1])
    elif len(lines) == 1:
        # The store wrote the line with points.to_line, so it reads back as the point.
        store.quarantine(from_line(lines[0].decode()), f"InfluxDB rejected it: {reason}")
        report.quarantined += 1
        done.append(positions[0])
    else:
        middle = len(lines) // 2
        _send(writer, store, lines[:middle], positions[:middle], report, done)
        _send(writer, store, lines[middle:], positions[middle:], report, done)


def _claimed(store: Store, lines: list[bytes], positions: list[Position]) -> tuple[list[bytes], list[Position]]:
    """The records of a batch the store still holds, once it has recorded that they are sent
    (Store.claim): one whose segment the size bound deleted since it was read is counted as
    dropped, and is not sent, so no point is both in InfluxDB and in the drop counter."""
    still = store.claim(positions) if positions else []
    if all(still):
        return lines, positions
    return [line for line, ours in zip(lines, still) if ours], [p for p, ours in zip(positions, still) if ours]


def ship(store: Store, settings: InfluxSettings) -> ShipReport:
    """Send unshipped points in order within deadline_s; ShipError (points kept) when InfluxDB fails.

    The store's records are line protocol, sent as they are read (no point
    is decoded); a record of a store written before (a JSON point) is
    written as line protocol here. The caller holds the store's ship lock.
    """
    report = ShipReport()
    # Prometheus names are made from each line as it is sent; the store keeps the catalogue's.
    known = prometheus.metrics() if settings.naming == "prometheus" else None
    deadline = Deadline(settings.deadline_s)
    writer = Writer(settings, deadline)
    done: list[Position] = []
    try:
        lines: list[bytes] = []
        positions: list[Position] = []
        for position, record in store.unshipped():
            if known is not None:
                named = prometheus.converted(from_line(record.decode()) if isinstance(record, bytes) else record, known)
                if named is None:  # nothing but text: no Prometheus sample to send
                    if not lines:
                        done.append(position)
                    continue
                record = named
            if isinstance(record, Point):
                try:
                    line = to_line(record).encode()
                except ValueError as error:
                    store.quarantine(record, f"cannot be written as line protocol: {error}")
                    report.quarantined += 1
                    if not lines:
                        done.append(position)
                    continue
            else:
                line = record
            lines.append(line)
            positions.append(position)
            if len(lines) >= settings.batch_size:
                if deadline.remaining() <= 0:
                    report.unfinished = True
                    break
                lines, positions = _claimed(store, lines, positions)
                if lines:
                    _send(writer, store, lines, positions, report, done)
                if done:
                    store.acknowledge(done[-1])
                lines, positions = [], []
        else:
            lines, positions = _claimed(store, lines, positions)
            if lines:
                _send(writer, store, lines, positions, report, done)
        if done:
            store.acknowledge(done[-1])
    except BaseException:
        if done:
            store.acknowledge(done[-1])  # what InfluxDB took stays taken
        raise
    finally:
        writer.close()
    return report
