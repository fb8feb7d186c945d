"""dnfsmon collect: one cron run, its run lock and its slot, then the ship when [influxdb] is enabled."""

from __future__ import annotations

import logging
import os
import time

from .. import config as configuration
from ..collect import collect
from ..state import LockHeld, RunLock

log = logging.getLogger("dnfsmon")


# cron and dnfsmon.timer start one collect a minute: a run is one slot of that schedule
# (or as many whole minutes as its sampling spans), and ends SLOT_MARGIN_S before the next
# run starts. docs/reliability.md ("Time") has the arithmetic.
SCHEDULE_SLOT_S = 60.0
# For the interpreter's exit after the ship (about a second on a loaded host).
SLOT_MARGIN_S = 3.0


def process_age_s() -> float:
    """Seconds since this process started, imports included (a second on a loaded host): proc(5)
    /proc/self/stat field 22, starttime, in clock ticks since boot, against CLOCK_BOOTTIME."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            after_name = f.read().rsplit(")", 1)[1].split()  # field 3 (state) onwards: the name may hold spaces
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - int(after_name[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, IndexError, ValueError):
        return 0.0


def run_slot_end(started: float, count: int, interval_s: float) -> float:
    """The monotonic time by which a collect run started at `started` must have ended."""
    minutes = int((count - 1) * interval_s // SCHEDULE_SLOT_S) + 1
    return started + minutes * SCHEDULE_SLOT_S - SLOT_MARGIN_S


def take_run_lock(lock: RunLock, count: int, interval_s: float) -> int:
    """Take the run lock within this run's slot (count x interval); the samples still due in it.

    The run before may overrun its slot by a moment (a slow read): waiting for it
    costs the samples whose time has passed, not the whole run, as exiting 75 at
    once did. A run that holds the lock past this slot too (stuck) still gives
    LockHeld, so runs never pile up behind it. Samples are due every interval
    from this run's start: after waiting w seconds, floor(w / interval) are past.
    """
    started = time.monotonic()
    try:
        lock.acquire(wait_s=count * interval_s)
    except OSError as error:  # flock on a FIFO or the like names no file: name the lock
        error.filename = error.filename or lock.path
        raise
    waited = time.monotonic() - started
    due = count - int(waited // interval_s)
    if due < count:
        log.warning(
            "waited %.1f s for the run before to release %s: %d of %d samples left in this run's slot",
            waited,
            lock.path,
            due,
            count,
        )
    if due < 1:
        lock.release()
        raise LockHeld(f"{lock.path} was held for this run's whole slot")
    return due


def cmd_collect(cfg: configuration.Config, count: int, interval_s: float) -> tuple[bool, float]:
    """One run under the run lock: whether a source failed, and the monotonic time the run's slot ends."""
    slot_end = run_slot_end(time.monotonic() - process_age_s(), count, interval_s)
    lock = RunLock(cfg.state_dir)
    due = take_run_lock(lock, count, interval_s)
    try:
        return collect(cfg, due, interval_s), slot_end
    finally:
        lock.release()
