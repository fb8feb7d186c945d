"""Shipping stored points to InfluxDB with influxdb-client.

influxdb-client is imported only here, and this module only when shipping:
its import costs about 0.15 s of CPU, which a `collect` run that does not
ship must not pay (bench/collect_cost.py measures both).

It speaks the v2 write API (POST /api/v2/write, precision ns), which
InfluxDB 2.x and 3.x serve and 1.8+ serves as a compatibility endpoint
(bucket "database/retention_policy", token "user:password", org ignored).

Order and delivery: points are sent in store order, in batches; after each
batch InfluxDB acknowledged, the store's cursor moves past it (and only
then are shipped segments deleted). A batch InfluxDB rejects as malformed
(HTTP 400, 413 or 422 - e.g. a field type conflict) is split in halves and
re-sent until the offending points stand alone; they are quarantined, the
rest arrive. Re-sending a point InfluxDB already has is harmless: same
series and timestamp means an overwrite with the same values.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Optional

from .config import ConfigError, InfluxSettings, read_secret
from .points import Point, to_line
from .store import Position, Store

log = logging.getLogger(__name__)

# HTTP statuses that say "this data is bad", as opposed to "try again later".
REJECTED_STATUSES = (400, 413, 422)


class ShipError(RuntimeError):
    """InfluxDB could not be reached or kept failing; the points stay in the store."""


@dataclass
class ShipReport:
    sent: int = 0
    quarantined: int = 0


def token_of(settings: InfluxSettings) -> str:
    """The token from its file or environment variable; empty for 1.8 without auth."""
    try:
        return read_secret(settings.token_file or None, settings.token_env or None, "InfluxDB token")
    except ConfigError:
        if settings.token_file:
            raise
        return ""


class Writer:
    """A thin wrapper around influxdb-client's synchronous write API."""

    def __init__(self, settings: InfluxSettings):
        from influxdb_client import InfluxDBClient
        from influxdb_client.client.write_api import SYNCHRONOUS

        self.settings = settings
        self.client = InfluxDBClient(
            url=settings.url,
            token=token_of(settings),
            org=settings.org,
            timeout=int(settings.timeout_s * 1000),
            verify_ssl=settings.verify_tls,
            ssl_ca_cert=settings.ca_file or None,
            enable_gzip=settings.gzip,
        )
        self.api = self.client.write_api(write_options=SYNCHRONOUS)

    def write(self, lines: list[str]) -> Optional[str]:
        """None when InfluxDB stored the lines; the reason when it rejected them as bad data.

        Raises ShipError after max_retries for anything else (down, timeouts, 5xx, auth).
        """
        from influxdb_client.client.write_api import WritePrecision
        from influxdb_client.rest import ApiException

        delay = self.settings.retry_backoff_s
        for attempt in range(self.settings.max_retries + 1):
            try:
                self.api.write(
                    bucket=self.settings.bucket,
                    org=self.settings.org,
                    record="\n".join(lines),
                    # WritePrecision.NS is the plain string "ns"; the client annotates the parameter with the class.
                    write_precision=WritePrecision.NS,  # type: ignore[arg-type]
                )
                return None
            except ApiException as error:
                if error.status in REJECTED_STATUSES:
                    return f"HTTP {error.status}: {(error.body or error.reason or '').strip()}"
                if error.status in (401, 403):
                    raise ShipError(
                        f"InfluxDB {self.settings.url} refused the credentials (HTTP {error.status}); check the token"
                    ) from None
                reason = f"HTTP {error.status}: {(error.body or error.reason or '').strip()}"
            except Exception as error:  # connection refused, timeouts, TLS: urllib3 and OS errors
                reason = f"{error.__class__.__name__}: {error}"
            if attempt < self.settings.max_retries:
                log.warning(
                    "InfluxDB write failed (%s); retry %d of %d in %.1f s",
                    reason,
                    attempt + 1,
                    self.settings.max_retries,
                    delay,
                )
                time.sleep(delay)
                delay *= 2
        raise ShipError(
            f"InfluxDB {self.settings.url} write failed after {self.settings.max_retries} retries: {reason}"
        )

    def close(self) -> None:
        self.client.close()


def _send(writer: Writer, store: Store, batch: list[tuple[Point, str]], report: ShipReport) -> None:
    """Deliver a batch, isolating rejected points by halving; quarantine those."""
    reason = writer.write([line for _, line in batch])
    if reason is None:
        report.sent += len(batch)
    elif len(batch) == 1:
        store.quarantine(batch[0][0], f"InfluxDB rejected it: {reason}")
        report.quarantined += 1
    else:
        middle = len(batch) // 2
        _send(writer, store, batch[:middle], report)
        _send(writer, store, batch[middle:], report)


def ship(store: Store, settings: InfluxSettings) -> ShipReport:
    """Send every unshipped point in order; raise ShipError (points kept) when InfluxDB fails."""
    report = ShipReport()
    writer = Writer(settings)
    try:
        batch: list[tuple[Point, str]] = []
        end: Optional[Position] = None
        for position, point in store.unshipped():
            try:
                batch.append((point, to_line(point)))
            except ValueError as error:
                store.quarantine(point, f"cannot be written as line protocol: {error}")
                report.quarantined += 1
            end = position
            if len(batch) >= settings.batch_size:
                _send(writer, store, batch, report)
                store.acknowledge(end)
                batch = []
        if batch:
            _send(writer, store, batch, report)
        if end is not None:
            store.acknowledge(end)
    finally:
        writer.close()
    return report
