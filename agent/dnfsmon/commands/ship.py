"""dnfsmon ship, and the ship at the end of a collect run: the store's points to InfluxDB.

Its own module: http.client, ssl, gzip and socket are loaded only by a run that ships."""

from __future__ import annotations

import logging
import time
from typing import Optional

from .. import config as configuration
from ..influx import ShipError, ship
from ..state import LockHeld, RunLock
from ..store import SHIP_LOCK, Store

log = logging.getLogger("dnfsmon")


def ship_stored(cfg: configuration.Config, after_collect: bool, until: Optional[float] = None) -> bool:
    """Ship the store to InfluxDB; False when InfluxDB failed (logged, points kept).

    Shipping holds the store's own ship.lock, not the run lock: a slow
    InfluxDB never delays the next run's samples. After a collect, a ship
    already under way (an earlier run's) is left to finish its work, and
    this one stops at `until` (the end of the run's slot), so that a
    systemd timer, which skips a start while the last run is still active,
    never loses a run's samples to a slow InfluxDB.
    """
    assert cfg.influxdb is not None
    settings = cfg.influxdb
    if until is not None:
        remaining = until - time.monotonic()
        if remaining < 1.0:
            log.info("no time left in this run's slot to ship: the points wait in %s for the next run", cfg.store_dir)
            return True
        settings = settings._replace(deadline_s=min(settings.deadline_s, remaining))
    store = Store(cfg.store_dir, cfg.store_max_bytes)
    try:
        with RunLock(cfg.store_dir, SHIP_LOCK):
            report = ship(store, settings)
    except LockHeld as error:
        if not after_collect:
            raise
        log.info("%s: it ships this run's points too", error)
        return True
    except ShipError as error:
        log.error("%s; the points stay in %s for the next run", error, cfg.store_dir)
        return False
    log.info(
        "shipped %d points to %s (%d quarantined)%s",
        report.sent,
        cfg.influxdb.url,
        report.quarantined,
        "; deadline_s reached, a later run sends the rest" if report.unfinished else "",
    )
    return True
