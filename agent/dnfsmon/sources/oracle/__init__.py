"""Oracle Direct NFS: IOPS, bytes, channels, servers, I/O latency, histograms,
I/O by function, latency per filer, the top processes.

The package, one module per job, in the order a sample goes through them:

    names     the measurements and the counters read (the lists: dnfsmon.oracle_facts)
    queries   the SQL texts, built from the columns the connected release has
    wire      several queries as one statement, and its rows back as each query's
    rows      the results document and its rows, as every parser reads them
    parsers   each query's rows as samples; the inventory's cadence
    publish   samples diffed into points (I/O summed per instance, top processes)

This module holds the source object and the names the rest of dnfsmon uses.

Facts and traps: docs/oracle.md. The package is pure:
it builds the SQL texts from the columns the connected release has
(dnfsmon.oracle_facts names them per release) and turns result rows into
samples and points. The I/O happens in dnfsmon.oracle_db (a live database
through python-oracledb) or dnfsmon.simulator; both hand over the same
document as Python values (Raw.documents: no JSON round trip on the live
path), and a capture stores its JSON text as "oracle/results.json":

    {"kind": "live" | "simulated", "version": "19.0.0.0.0",
     "database": {"DBID": 1, "NAME": "ORCL", "DB_UNIQUE_NAME": "ORCL", "CDB": "NO"},
     "results": {"<query>": {"columns": ["INST_ID", ...], "rows": [[1, ...], ...]}},
     "errors": {"<query>": "ORA-00942: ... (grant SELECT ON SYS.GV_$X TO USER)"},
     "down": null | "ORA-01017: invalid username/password; logon denied",
     "warning": null | "ORA-28002: the password will expire within 7 days (...)"}

DB_TIME (every query reads SYS_EXTRACT_UTC(SYSTIMESTAMP) in the same round
trip as its counters) is seconds since the Unix epoch, or in the live
reader's documents its text "YYYY-MM-DDTHH:MM:SS.ffffff" (UTC; rows.clock_seconds
reads both); STARTUP_TIME is an ISO 8601 string. The live reader's rows are
the combined statement's (wire.split): "columns" names every position, and
the statement's own columns (Q, N1, T1, ...) that are not the query's hold
its name or NULL.

How the traps are handled:
- V$DNFS_STATS counts per process: each process (INST_ID, PNUM) is diffed
  on its own, with SPID and SERIAL# from V$PROCESS as its identity, so a
  process replaced under the same PNUM re-baselines; only then are the
  deltas summed per instance. A process that started since the previous
  read (its PNUM was absent then, or held by another SPID/SERIAL#) is
  counted from zero, since its counters started at zero with it; a process
  whose start is not known is left out and counted in processes_left_out.
  An exiting process's last partial interval cannot be counted.
- Instance restarts: STARTUP_TIME is in every sample's identity.
- V$DNFS_CHANNELS counts "since the last select": each read's counts are
  an interval count, divided by the time since dnfsmon's previous read. Any
  other reader of the view in between (a DBA's script) takes counts away,
  so the per-second figures are a lower bound; the path shares are exact.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from ... import rates
from ...points import Point
from ...rates import Sample
from ..base import Parsed, Raw, Source
from .names import (
    FILE_COUNTERS,
    IO_EVENTS,
    IO_MEASUREMENT,
    MEASUREMENTS,
    NAME,
    OTHER_OPS,
    OTHER_OPS_COUNTER,
    PROCESS_COUNTERS,
    RESULTS,
    ROSTER_MEASUREMENT,
    STATUS_MEASUREMENT,
    TOP_PROCESS_MEASUREMENT,
)
from .parsers import (
    INVENTORY_MEASUREMENTS,
    InventoryCadence,
    inventory_due,
    last_known_name,
    name_down_reading,
    samples,
)
from .publish import DEFAULT_TOP_PROCESSES, aggregate
from .queries import SCOPES, Query, build_queries
from .rows import clock_seconds, failure, load
from .wire import DB_TIME_FORMAT, Combined, combine, read_groups, split

if TYPE_CHECKING:
    from ...config import Config, OracleSettings

# What the rest of dnfsmon (and the tests) use of the package.
__all__ = [
    "DB_TIME_FORMAT",
    "DEFAULT_TOP_PROCESSES",
    "FILE_COUNTERS",
    "INVENTORY_MEASUREMENTS",
    "IO_EVENTS",
    "IO_MEASUREMENT",
    "MEASUREMENTS",
    "NAME",
    "OTHER_OPS",
    "OTHER_OPS_COUNTER",
    "PROCESS_COUNTERS",
    "RESULTS",
    "SCOPES",
    "SOURCE",
    "STATUS_MEASUREMENT",
    "TOP_PROCESS_MEASUREMENT",
    "Combined",
    "InventoryCadence",
    "OracleSource",
    "Query",
    "build",
    "build_queries",
    "build_target",
    "clock_seconds",
    "combine",
    "failure",
    "inventory_due",
    "last_known_name",
    "load",
    "name_down_reading",
    "of_settings",
    "parse",
    "publish",
    "read_groups",
    "samples",
    "split",
]


def parse(raw: Raw, host: str) -> Parsed:
    """The contract's parse step (dnfsmon.sources.base): the samples, their problems
    and what could not be read this time (the status sample carries it)."""
    found, problems = samples(raw, host)
    return Parsed(found, problems, failure(found))


def publish(result: rates.DiffResult, current: list[Sample], top_processes: int = DEFAULT_TOP_PROCESSES) -> list[Point]:
    """The contract's publish step: aggregate()."""
    return aggregate(result, current, top_processes)


class OracleSource(Source):
    """The database's source, with its options from [oracle] (top_processes: how many of each
    instance's busiest processes are published). The defaults apply to the simulator's target
    and to a capture replayed without a config."""

    name = NAME
    measurements = MEASUREMENTS
    retired_measurements = (ROSTER_MEASUREMENT,)

    def __init__(self, top_processes: int = DEFAULT_TOP_PROCESSES):
        self.top_processes = top_processes

    def parse(self, raw: Raw, host: str) -> Parsed:
        return parse(raw, host)

    def publish(self, result: rates.DiffResult, current: list[Sample]) -> list[Point]:
        return publish(result, current, self.top_processes)


# The source with the defaults (tests, the bench, a capture replayed without a config).
SOURCE = OracleSource()


def build(config: Config) -> OracleSource:
    """The source as [oracle] configures it (the defaults for the simulator, or no [oracle])."""
    return of_settings(config.oracle)


def build_target(config: Config, target: str) -> OracleSource:
    """The source of one of several databases ([[oracle]]; a capture's entry "oracle:<target>") as its
    own table configures it; the defaults for a database the config does not name (a capture
    replayed with another host's config)."""
    return of_settings(next((s for s in config.databases if s.target == target), None))


def of_settings(settings: Optional[OracleSettings]) -> OracleSource:
    """The source as one database's options configure it (None: the defaults)."""
    return OracleSource() if settings is None else OracleSource(settings.top_processes)
