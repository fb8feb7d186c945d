"""Targets: the systems one run reads, each with its own reader and state.

A target is one system whose sources are read together at one moment: the
host itself (/proc and /sys), a live Oracle database (python-oracledb) or
the simulated database. `dnfsmon collect` takes each sample target by target,
host first: it reads a target, diffs the reading against that target's
previous samples, stores the points and saves the target's state, then goes
on to the next. A slow or failing database therefore never costs the host's
points. `dnfsmon capture` writes the union of the targets' readings.

A new target is a subclass of Target that provides:

- id: names its state file (dnfsmon.state.StateFile); "host:<name>",
  "oracle:<target>" or "simulator:<db_name>" so far. Two targets of one
  config never share an id;
- sources: the sources it reads, by name, each built from the config for
  this run (dnfsmon.sources.build; the parse and publish steps are the
  sources' own, and collect runs them);
- read() -> Reading: the raw inputs of its sources, read now, and why any
  source could not be read. It never raises for trouble with what it reads
  (a file missing, a database down): that is a failure of the source, and
  the other sources and targets go on. It writes nothing: captures read
  targets without the run lock;
- remember(): saves what the reader itself keeps between runs (the
  simulator's memory of its last V$DNFS_CHANNELS select). collect calls it
  right after saving the target's state, under the run lock; the default
  keeps nothing;
- close(): releases what the reader holds (a database session).

and a line in targets_from(config) that creates it from its config section.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Optional, cast

from .config import Config, OracleSettings, SimulatorSettings
from .errors import EnvironmentProblem, reason
from .rates import Sample
from .records import Record
from .sources import build_all
from .sources.base import HostInputs, HostSource, Raw, Source
from .state import StateFile

if TYPE_CHECKING:  # python-oracledb is imported only with [oracle]
    from .oracle_db import Database


log = logging.getLogger(__name__)

# The simulator's inventory cadence: [oracle] inventory_interval_s's default.
SIMULATED_INVENTORY_INTERVAL_S = 600.0


class Reading(Record):
    """One reading of a target's sources."""

    __slots__ = ("failures", "raws", "seconds")

    def __init__(
        self,
        raws: Optional[dict[str, Raw]] = None,
        failures: Optional[dict[str, str]] = None,
        seconds: Optional[dict[str, float]] = None,
    ):
        # Source name -> what it read.
        self.raws: dict[str, Raw] = {} if raws is None else raws
        # Source name -> why it could not be read this time.
        self.failures: dict[str, str] = {} if failures is None else failures
        # Source name -> seconds its reading took (a target that reads its sources at once gives each the whole).
        self.seconds: dict[str, float] = {} if seconds is None else seconds


class Target:
    """One system whose sources are read together (see the module docstring)."""

    id: str
    sources: dict[str, Source]

    def read(self) -> Reading:
        raise NotImplementedError

    def starting(self, previous: Mapping[str, Sample]) -> None:
        """collect hands over the target's stored samples before its first read (the
        database targets time their inventory reads from them); most readers ignore them."""

    def remember(self) -> None:
        """Save what the reader keeps between runs; most readers keep nothing."""

    def close(self) -> None:
        """Release what the reader holds; most readers hold nothing."""


class HostTarget(Target):
    """The host: the configured [host] sources, read from /proc and /sys."""

    def __init__(self, config: Config):
        self.id = f"host:{config.host}"
        self.sources = build_all(config.host_sources, config)
        self.host_sources = {name: cast(HostSource, source) for name, source in self.sources.items()}
        self.inputs = HostInputs(proc=config.proc_root, sys=config.sys_root, nfs_ports=tuple(config.nfs_ports))

    def read(self) -> Reading:
        reading = Reading()
        for name, source in self.host_sources.items():
            started = time.perf_counter()
            try:
                reading.raws[name] = source.read(self.inputs)
            except Exception as error:  # one broken source must not stop the others
                log.debug("source %s: read raised", name, exc_info=True)
                reading.failures[name] = reason(error)
            reading.seconds[name] = time.perf_counter() - started
        return reading


class OracleTarget(Target):
    """A live database through one python-oracledb session, kept for the whole run.

    After a logon refusal (oracle_db.LOGON_REFUSALS) the target logs on no
    more in the run, and the next runs hold (oracle_db.LogonBackoff, kept
    beside the target's state): after wrong credentials until they change or
    the operator removes the hold, so that a wrong password cannot lock the
    shared monitoring account; after a locked or expired account for a
    doubling wait. `dnfsmon top` (persist=False) obeys the back-off
    but never writes it.
    """

    def __init__(self, settings: OracleSettings, state_dir: Optional[str] = None, persist: bool = True):
        from .oracle_db import Database, LogonBackoff, backoff_file_id, load_backoff
        from .sources import oracle  # here: a host-only run never loads the Oracle package

        self.id = f"oracle:{settings.target}"
        self.sources = {oracle.NAME: oracle.of_settings(settings)}
        self.database: Database = Database(settings)
        # Filers, files and coverage change rarely: read every inventory_interval_s (review D1).
        self.inventory = oracle.InventoryCadence(settings.inventory_interval_s)
        self.backoff = load_backoff(state_dir, self.id) if state_dir else LogonBackoff()
        self.backoff_file = StateFile(state_dir, backoff_file_id(self.id)) if state_dir and persist else None
        # Named in the status point: removing it is how the operator ends a hold.
        self.backoff_path = StateFile(state_dir, backoff_file_id(self.id)).path if state_dir else "its state file"
        self.backoff_changed = False
        self.known_name = ""

    def starting(self, previous: Mapping[str, Sample]) -> None:
        from .sources import oracle  # here: a host-only run never loads the Oracle package

        self.inventory = oracle.InventoryCadence(self.inventory.interval_s, previous.values())
        # The name the database last answered with: a sample that cannot reach it is tagged
        # with it, not with the configured target (one database, one name on the dashboards).
        self.known_name = oracle.last_known_name(previous.values())

    def read_raw(self) -> Raw:
        """One sample's reading, or the back-off's reason without a logon while it holds."""
        from .oracle_db import credentials_of, down_document, read_once, to_raw
        from .sources import oracle  # here: a host-only run never loads the Oracle package

        now = time.time()
        credentials = credentials_of(self.database.settings)
        if self.backoff.holds(now, credentials):
            return to_raw(down_document(self.backoff.explain(self.backoff_path), self.database.settings.target), now)
        refused_before = self.database.refused
        raw = read_once(self.database, now, self.inventory.due(now))
        if self.database.refused and not refused_before:
            self.backoff.refused(self.database.refused, self.database.given_up, now, credentials)
            self.backoff_changed = True
        elif self.backoff.refusals and not raw.document(oracle.RESULTS)["down"]:  # type: ignore[index]
            self.backoff = type(self.backoff)()  # logged on: the refusals are over
            self.backoff_changed = True
        return raw

    def read(self) -> Reading:
        from .sources import oracle  # here: a host-only run never loads the Oracle package

        raw = self.read_raw()
        self.inventory.read(raw)
        self.known_name = oracle.name_down_reading(raw, self.known_name)
        return Reading(raws={oracle.NAME: raw})

    def remember(self) -> None:
        if self.backoff_file is not None and self.backoff_changed:
            self.backoff_file.save_json(self.backoff.to_json())
            self.backoff_changed = False

    def close(self) -> None:
        self.database.close()


class SimulatedTarget(Target):
    """The simulated database (dnfsmon.simulator), with its memory kept beside its state.

    Without a state directory (`dnfsmon top`) the memory lives in this process
    only: nothing in the agent's state directory is read or written.
    """

    def __init__(self, settings: SimulatorSettings, state_dir: Optional[str]):
        from . import simulator
        from .sources import oracle  # here: a host-only run never loads the Oracle package

        self.id = f"simulator:{settings.db_name}"
        self.sources = {oracle.NAME: oracle.OracleSource()}
        # SimulatorSettings holds exactly the Workload fields a config may set.
        self.workload = simulator.Workload(**settings._asdict())
        self.memory_file = None if state_dir is None else StateFile(state_dir, f"{self.id}:memory")
        remembered = {} if self.memory_file is None else self.memory_file.load_json()
        self.memory = simulator.Memory({int(k): float(v) for k, v in remembered.items()})
        # The same inventory cadence as a live database's, at [oracle]'s default.
        self.inventory = oracle.InventoryCadence(SIMULATED_INVENTORY_INTERVAL_S)

    def starting(self, previous: Mapping[str, Sample]) -> None:
        from .sources import oracle  # here: a host-only run never loads the Oracle package

        self.inventory = oracle.InventoryCadence(self.inventory.interval_s, previous.values())

    def read(self) -> Reading:
        from . import simulator
        from .sources import oracle  # here: a host-only run never loads the Oracle package

        now = time.time()
        raw = simulator.read(self.workload, now, self.memory, self.inventory.due(now))
        self.inventory.read(raw)
        return Reading(raws={oracle.NAME: raw})

    def remember(self) -> None:
        if self.memory_file is not None:
            self.memory_file.save_json({str(k): v for k, v in self.memory.last_channel_select.items()})


def targets_from(config: Config, keep_memory: bool = True) -> list[Target]:
    """The targets a config names, the host first (its points never wait on a database).

    keep_memory=False: readers keep what they remember in this process only,
    never in the state directory (`dnfsmon top` runs beside the agent).
    """
    targets: list[Target] = [HostTarget(config)]
    # One target per database: each its own state, status, time budget and failures, read in turn.
    targets.extend(OracleTarget(settings, config.state_dir, persist=keep_memory) for settings in config.databases)
    if config.simulator is not None:
        targets.append(SimulatedTarget(config.simulator, config.state_dir if keep_memory else None))
    return targets


def read_or_fail(target: Target) -> Reading:
    """A target's reading; a reader that raises anyway fails its sources, not the run."""
    started = time.perf_counter()
    try:
        reading = target.read()
    except EnvironmentProblem:
        raise  # the user's environment: one line and exit 2
    except Exception as error:
        log.debug("target %s: read raised", target.id, exc_info=True)
        reading = Reading(failures=dict.fromkeys(target.sources, reason(error)))
    seconds = time.perf_counter() - started
    for name in target.sources:
        reading.seconds.setdefault(name, seconds)
    return reading
