"""A simulated Oracle database using Direct NFS, with known truth.

It stands in for a database where none can run (tests, `make demo`): given
the queries dnfsmon.sources.oracle builds for a release, it returns rows with
exactly those columns, from a workload model:

- per instance, read and write IOPS of given sizes, scaled by a repeating
  load profile (`load_phases`: seconds at a multiplier, in a cycle);
- a fixed number of dNFS process slots per instance; each slot runs one
  process after another (lifetimes around `process_lifetime_s`), the next
  reusing the same PNUM with a new SPID and SERIAL#, and does a fixed share
  of the instance's I/O; counters start at zero with each process;
- instance restarts every `restart_every_s` (staggered across RAC
  instances), which reset every counter;
- several filers with several paths each, traffic split between a filer's
  paths by `path_imbalance`; channel counts are "since the last select";
- wait events whose latencies follow a log-normal distribution around a
  mean, bucketed into power-of-two histograms consistent with the totals;
- a client slot limit: while the outstanding I/O (Little's law: IOPS x
  unloaded latency) exceeds `client_slots`, every latency grows in
  proportion, as on a Linux client capped at 16 RPC slots.

Every cumulative value is a closed-form integral of the model from the
instance's startup, so the same instant gives the same rows in any process
(cron runs need no simulator state, except the time of the previous select
of V$DNFS_CHANNELS). `truth()` gives what the figures must be.
Every point made from it carries the tag simulated=true.
"""

from __future__ import annotations

import datetime
import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Callable, Optional

from . import oracle_facts
from .oracle_facts import AGENT_EVENTS, HISTOGRAM_EVENTS, OTHER_OPS
from .sources.base import Raw
from .sources.oracle import FILE_COUNTERS, RESULTS, Query, build_queries
from .sources.oracle.names import CHANNEL_COUNTS
from .sources.oracle.rows import group_channels

VERSIONS = oracle_facts.VERSION_STRINGS
# (kind, share of the instance's reads or writes, latency factor, foreground share)
EVENTS: dict[str, tuple[str, float, float, float]] = {
    "db file sequential read": ("read", 0.70, 1.0, 0.95),
    "db file scattered read": ("read", 0.10, 1.6, 0.90),
    "db file parallel read": ("read", 0.05, 1.3, 0.90),
    "direct path read": ("read", 0.15, 2.0, 1.00),
    "db file parallel write": ("write", 0.70, 1.5, 0.00),
    "log file parallel write": ("write", 0.25, 0.8, 0.00),
    "direct path write": ("write", 0.05, 1.8, 1.00),
    "control file sequential read": ("fixed", 2.0, 0.5, 0.10),  # 2 waits/s, not scaled by load
    # A commit per five writes; the session waits for LGWR's write and its wake-up.
    "log file sync": ("write", 0.20, 1.2, 1.00),
    "direct path read temp": ("read", 0.03, 2.5, 1.00),
    "direct path write temp": ("write", 0.03, 2.0, 1.00),
}
# V$IOSTAT_FUNCTION: (kind, share of the instance's reads or writes (or
# requests/s for "fixed"), large requests?, the event its synchronous waits
# are timed as, or "" for none).
FUNCTIONS: dict[str, tuple[str, float, bool, str]] = {
    "Buffer Cache Reads": ("read", 0.85, False, "db file sequential read"),
    "Direct Reads": ("read", 0.15, True, "direct path read"),
    "DBWR": ("write", 0.70, False, ""),
    "LGWR": ("write", 0.25, False, "log file parallel write"),
    "Direct Writes": ("write", 0.05, True, "direct path write"),
    "RMAN": ("read", 0.0, True, ""),
    "Others": ("fixed", 2.0, False, ""),
}
# V$IOSTAT_FILE of a dNFS data file: (counters, the event whose rate and
# latency they follow, shared evenly by the files).
FILE_REQUESTS = (
    ("SMALL_READ", "db file sequential read"),
    ("LARGE_READ", "direct path read"),
    ("SMALL_WRITE", "db file parallel write"),
    ("LARGE_WRITE", "direct path write"),
)
FOREGROUND_FUNCTIONS = ("Buffer Cache Reads", "Direct Reads", "Direct Writes", "RMAN")
HISTOGRAM_BUCKETS = 23  # upper bounds 2^0 .. 2^22 (the last also holds the tail)
LIFETIME_PATTERN = 16  # process lifetimes repeat every 16 generations


def _unit(*parts: object) -> float:
    """A deterministic number in [0, 1) from the parts (same in every process)."""
    digest = hashlib.sha256(repr(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass(frozen=True)
class Workload:
    release: str = "19c"
    db_name: str = "SIMDB"
    dbid: int = 1234567890
    instances: int = 2
    read_iops: float = 4000.0  # per instance at load multiplier 1
    write_iops: float = 1000.0
    read_bytes: int = 8192
    write_bytes: int = 8192
    processes: int = 40  # dNFS process slots per instance
    process_lifetime_s: float = 3600.0
    restart_every_s: float = 0.0  # 0: never
    servers: tuple[tuple[str, tuple[str, ...]], ...] = (
        ("filer1", ("10.0.1.5", "10.0.2.5")),
        ("filer2", ("10.0.1.6", "10.0.2.6")),
    )
    local_addresses: tuple[str, ...] = ("10.0.1.1", "10.0.2.1")  # per path position
    path_imbalance: float = 0.0  # 0: even; path 0 gets (1 + x) / (n + x) of its filer's traffic
    latency_us: float = 500.0  # unloaded mean of 'db file sequential read'
    latency_sigma: float = 0.5
    client_slots: int = 0  # 0: unlimited
    load_phases: tuple[tuple[float, float], ...] = ((600.0, 1.0), (300.0, 2.5))
    dnfs_enabled: bool = True
    datafiles_per_server: int = 10
    fallback_datafiles: int = 0  # data files read through the kernel NFS client (OS_LIB)
    # The filers' capacity as a load multiplier (0: unlimited): their service
    # time grows as 1 / (1 - load / capacity) (M/M/1), so a load phase near it
    # is an incident at the filer (the doctor's history test surges to 2.5x a 2.6x capacity).
    filer_capacity: float = 0.0
    # Per filer (in `servers` order), a factor on the service times of its
    # files in V$IOSTAT_FILE (a slow filer); missing ones are 1.
    filer_latency_factors: tuple[float, ...] = ()
    epoch: float = 1_700_000_000.0  # model time zero: first instance startup
    # The agent's side: python-oracledb's mode (thin cannot connect to 11.2),
    # its scope (dnfsmon.sources.oracle.SCOPES) and the instance its session
    # is connected to.
    mode: str = "thin"
    scope: str = "cluster"
    connected_instance: int = 1
    # 0: a non-CDB (CON_ID 0 everywhere); n: a CDB with n PDBs (CON_ID 3 ..
    # n + 2; the root is 1): foreground processes and data files belong to
    # the PDBs in turn, background processes and control files to the root.
    pdbs: int = 0
    # False (the agent's assumption): a process's V$DNFS_STATS counters start at zero with it.
    # True: the undocumented alternative the agent guards against (dba-review P1), counters kept
    # by the process slot (PNUM) from the instance's startup, each process adding to its
    # predecessors' counts. V$DNFS_CHANNELS is per process and select either way.
    slot_keeps_counters: bool = False
    # V$DATABASE.DATABASE_ROLE and OPEN_MODE (Reference, V$DATABASE): an Active Data Guard
    # standby is ("PHYSICAL STANDBY", "READ ONLY WITH APPLY"); its I/O is redo apply's.
    database_role: str = "PRIMARY"
    open_mode: str = "READ WRITE"

    def __post_init__(self) -> None:
        oracle_facts.release_tuple(self.release)
        if self.instances < 1 or self.processes < 1 or not self.load_phases or not self.servers:
            raise ValueError("a workload needs instances, processes, load phases and servers")
        if not 1 <= self.connected_instance <= self.instances:
            raise ValueError(
                f"connected_instance {self.connected_instance} is not one of the {self.instances} instances"
            )


@dataclass
class Memory:
    """What the simulated database remembers between reads: V$DNFS_CHANNELS' last select."""

    last_channel_select: dict[int, float] = field(default_factory=dict)


class Model:
    def __init__(self, workload: Workload):
        self.w = workload
        self.cycle = sum(seconds for seconds, _ in workload.load_phases)
        self.path_shares = {}
        for name, paths in workload.servers:
            n, x = len(paths), workload.path_imbalance
            self.path_shares[name] = [(1 + x) / (n + x) if i == 0 else 1 / (n + x) for i in range(n)]
        self._shares: dict[tuple[float, float], list[tuple[float, float]]] = {}
        self.weights = {}
        for inst in range(1, workload.instances + 1):
            raw = [1 + 3 * _unit("weight", inst, k) for k in range(workload.processes)]
            self.weights[inst] = [r / sum(raw) for r in raw]

    # --- the load profile and integrals over it ---

    def multiplier(self, t: float) -> float:
        offset = (t - self.w.epoch) % self.cycle
        for seconds, value in self.w.load_phases:
            if offset < seconds:
                return value
            offset -= seconds
        return self.w.load_phases[-1][1]

    def _cumulative(self, f: Callable[[float], float], x: float) -> float:
        """∫ f(m(t)) dt from the epoch to x, with whole cycles done arithmetically."""
        full, rest = divmod(x - self.w.epoch, self.cycle)
        total = full * sum(seconds * f(m) for seconds, m in self.w.load_phases)
        for seconds, m in self.w.load_phases:
            part = min(seconds, rest)
            total += part * f(m)
            rest -= part
            if rest <= 0:
                break
        return total

    def integral(self, f: Callable[[float], float], a: float, b: float) -> float:
        return self._cumulative(f, b) - self._cumulative(f, a) if b > a else 0.0

    def load(self, a: float, b: float) -> float:
        return self.integral(lambda m: m, a, b)

    # --- instances and processes ---

    def startup(self, inst: int, t: float) -> float:
        if not self.w.restart_every_s:
            return self.w.epoch
        offset = self.w.epoch + (inst - 1) * self.w.restart_every_s / self.w.instances
        if t < offset:
            return self.w.epoch
        return offset + math.floor((t - offset) / self.w.restart_every_s) * self.w.restart_every_s

    def _lifetime(self, inst: int, slot: int, g: int) -> float:
        return self.w.process_lifetime_s * (0.5 + _unit("life", inst, slot, g % LIFETIME_PATTERN))

    def process(self, inst: int, slot: int, t: float) -> tuple[int, float]:
        """(generation, start time) of the process in a slot at time t."""
        start = self.startup(inst, t)
        # The first process of a slot lives only part of a lifetime, so slots do not turn over together.
        first = self.w.process_lifetime_s * _unit("first", inst, slot)
        if t < start + first:
            return 0, start
        begin, g = start + first, 1
        period = sum(self._lifetime(inst, slot, j) for j in range(1, LIFETIME_PATTERN + 1))
        whole = math.floor((t - begin) / period)
        begin += whole * period
        g += whole * LIFETIME_PATTERN
        while t >= begin + self._lifetime(inst, slot, g):
            begin += self._lifetime(inst, slot, g)
            g += 1
        return g, begin

    def spid(self, inst: int, slot: int, g: int, startup: float) -> int:
        return 2000 + int(_unit("spid", inst, slot, g, startup) * 60000)

    # --- latency ---

    def slowdown(self, m: float) -> float:
        """Latency factor of the client slot limit at load multiplier m."""
        if not self.w.client_slots:
            return 1.0
        outstanding = (self.w.read_iops + self.w.write_iops) * m * self.w.latency_us / 1e6
        return max(1.0, outstanding / self.w.client_slots)

    def filer_queueing(self, m: float) -> float:
        """Latency factor of the filer's own queue at load multiplier m (1 without a capacity)."""
        if not self.w.filer_capacity:
            return 1.0
        return 1.0 / (1.0 - min(m / self.w.filer_capacity, 0.99))

    def mean_latency_us(self, event: str, m: float) -> float:
        return self.w.latency_us * EVENTS[event][2] * self.slowdown(m) * self.filer_queueing(m)

    def bucket_shares(self, mean_us: float, unit_us: float) -> list[tuple[float, float]]:
        """(probability, mean wait in µs) per power-of-two bucket of `unit_us` µs (memoised)."""
        key = (mean_us, unit_us)
        if key not in self._shares:
            self._shares[key] = self._bucket_shares(mean_us, unit_us)
        return self._shares[key]

    def _bucket_shares(self, mean_us: float, unit_us: float) -> list[tuple[float, float]]:
        mu = math.log(mean_us) - self.w.latency_sigma**2 / 2

        def cdf(x_us: float) -> float:
            return 0.5 * (1 + math.erf((math.log(x_us) - mu) / (self.w.latency_sigma * math.sqrt(2))))

        shares = []
        previous = 0.0
        for b in range(HISTOGRAM_BUCKETS):
            upper = unit_us * 2**b
            now = 1.0 if b == HISTOGRAM_BUCKETS - 1 else cdf(upper)
            shares.append((now - previous, upper * (0.5 if b == 0 else 0.75)))
            previous = now
        return shares

    def event_rate(self, event: str, m: float) -> float:
        kind, share, _, _ = EVENTS[event]
        if kind == "read":
            return self.w.read_iops * share * m
        if kind == "write":
            return self.w.write_iops * share * m
        return share

    # --- counters at time t ---

    def event_counts(self, inst: int, event: str, t: float, unit_us: float) -> tuple[list[int], int]:
        """(cumulative waits per bucket, cumulative µs waited) since the instance started."""
        start = self.startup(inst, t)
        counts, micros = [], 0.0
        for b in range(HISTOGRAM_BUCKETS):

            def rate(m: float, b: int = b) -> float:
                return self.event_rate(event, m) * self.bucket_shares(self.mean_latency_us(event, m), unit_us)[b][0]

            def time_rate(m: float, b: int = b) -> float:
                probability, mean = self.bucket_shares(self.mean_latency_us(event, m), unit_us)[b]
                return self.event_rate(event, m) * probability * mean

            counts.append(math.floor(self.integral(rate, start, t)))
            micros += self.integral(time_rate, start, t)
        return counts, math.floor(micros)

    def function_rate(self, function: str, m: float) -> float:
        kind, share, _, _ = FUNCTIONS[function]
        if kind == "read":
            return self.w.read_iops * share * m
        if kind == "write":
            return self.w.write_iops * share * m
        return share

    def function_wait_us(self, function: str, m: float) -> float:
        """Mean synchronous wait of a function's requests (0 for one that does not wait)."""
        event = FUNCTIONS[function][3]
        return self.mean_latency_us(event, m) if event else 0.0

    def function_counts(self, inst: int, function: str, t: float, part: float = 1.0) -> dict[str, int]:
        """V$IOSTAT_FUNCTION's cumulative row of a function since the instance started
        (of the part of its I/O one container does, in a CDB)."""
        start = self.startup(inst, t)
        kind, _, large, event = FUNCTIONS[function]
        requests = math.floor(part * self.integral(lambda m: self.function_rate(function, m), start, t))
        size = self.w.write_bytes if kind == "write" else self.w.read_bytes
        micros = part * self.integral(
            lambda m: self.function_rate(function, m) * self.function_wait_us(function, m), start, t
        )
        direction = "WRITE" if kind == "write" else "READ"
        row = dict.fromkeys(
            [f"{a}_{b}_{c}" for a in ("SMALL", "LARGE") for b in ("READ", "WRITE") for c in ("REQS", "MEGABYTES")], 0
        )
        row[f"{'LARGE' if large else 'SMALL'}_{direction}_REQS"] = requests
        row[f"{'LARGE' if large else 'SMALL'}_{direction}_MEGABYTES"] = requests * size // 2**20
        row["NUMBER_OF_WAITS"] = requests if event else 0
        row["WAIT_TIME"] = math.floor(micros / 1000)
        return row

    def dnfs_files(self) -> list[tuple[int, str, float]]:
        """(FILE#, filer, service time factor) of each data file dNFS serves, spread over the filers in turn."""
        count = self.w.datafiles_per_server * len(self.w.servers) - self.w.fallback_datafiles
        found = []
        for number in range(1, count + 1):
            position = (number - 1) % len(self.w.servers)
            factors = self.w.filer_latency_factors
            found.append((number, self.w.servers[position][0], factors[position] if position < len(factors) else 1.0))
        return found

    def file_counts(self, inst: int, t: float, factor: float) -> dict[str, int]:
        """V$IOSTAT_FILE's cumulative row of one dNFS data file: its share of the reads and writes."""
        start = self.startup(inst, t)
        files = len(self.dnfs_files())
        row = dict.fromkeys(FILE_COUNTERS, 0)
        for prefix, event in FILE_REQUESTS:
            requests = self.integral(lambda m, e=event: self.event_rate(e, m) / files, start, t)  # type: ignore[misc]
            micros = self.integral(
                lambda m, e=event: self.event_rate(e, m) / files * self.mean_latency_us(e, m) * factor,  # type: ignore[misc]
                start,
                t,
            )
            row[f"{prefix}_REQS"] = math.floor(requests)
            row[f"{prefix}_SERVICETIME"] = math.floor(micros / 1000)
            if prefix == "SMALL_READ":  # single-block reads are synchronous here
                row["SMALL_SYNC_READ_REQS"] = row["SMALL_READ_REQS"]
                row["SMALL_SYNC_READ_LATENCY"] = row["SMALL_READ_SERVICETIME"]
        return row

    def process_counts(self, inst: int, slot: int, t: float) -> dict[str, int]:
        _, begin = self.process(inst, slot, t)
        if self.w.slot_keeps_counters:
            begin = self.startup(inst, t)
        share = self.load(begin, t) * self.weights[inst][slot]
        reads = math.floor(self.w.read_iops * share)
        writes = math.floor(self.w.write_iops * share)
        return {
            "NFS_READ": reads,
            "NFS_WRITE": writes,
            "NFS_READBYTES": reads * self.w.read_bytes,
            "NFS_WRITEBYTES": writes * self.w.write_bytes,
            "NFS_GETATTR": math.floor(0.02 * (reads + writes)),
            "NFS_COMMIT": math.floor(0.05 * writes),
        }


# The columns of the simulated V$DNFS_CHANNELS rows (what _rows models; the statement reads those the
# release has).
CHANNEL_VIEW_COLUMNS = ("INST_ID", "PNUM", "SVRNAME", "PATH", "LOCAL", *CHANNEL_COUNTS, "DB_TIME", "CLOCK_INSTANCE")


def _row(columns: Sequence[str], values: Mapping[str, object]) -> list[object]:
    return [values.get(c) for c in columns]


# python-oracledb's refusal of an 11.2 database in thin mode, as the driver words it
# (python-oracledb documentation, "Troubleshooting", DPY-3010).
DPY_3010 = "DPY-3010: connections to this database server version are not supported by python-oracledb in thin mode"


def read(workload: Workload, t: float, memory: Optional[Memory] = None, inventory: bool = True) -> Raw:
    """What dnfsmon's queries would return from the simulated database at time t
    (without the inventory queries when `inventory` is false, as the agent reads them)."""
    from .oracle_db import describe, down_document, to_raw

    if workload.mode == "thin" and workload.release.startswith("11."):
        # What the live reader makes of the driver's error (oracle_db.read_once).
        document = down_document(describe(_DriverError(DPY_3010)), workload.db_name)
        document["kind"] = "simulated"
        return to_raw(document, t)
    model = Model(workload)
    memory = memory if memory is not None else Memory()
    available = {
        view: set(oracle_facts.columns(view, workload.release))
        for view in oracle_facts.VIEWS_READ
        if oracle_facts.columns(view, workload.release)
    }
    results = {}
    for query in build_queries(available, workload.scope):
        if query.inventory and not inventory:
            continue
        instances = [workload.connected_instance] if query.local else list(range(1, workload.instances + 1))
        clock = {"DB_TIME": t, "CLOCK_INSTANCE": workload.connected_instance}
        modelled = _rows(model, query.name, t, memory, instances)
        if query.name == "dnfs_channels":
            # The view's rows (one per process and channel), as the statement sums them (group_channels).
            read = [c for c in CHANNEL_VIEW_COLUMNS if c in query.columns or c in ("PNUM", "SENDS")]
            columns, rows = group_channels(read, [_row(read, dict(v, **clock)) for v in modelled])
            if tuple(columns) != query.columns:
                raise AssertionError(f"the channels query's columns {query.columns} are not {columns}")
        else:
            rows = [_row(query.columns, dict(v, **clock)) for v in modelled]
        results[query.name] = {
            "columns": list(query.columns),
            "rows": rows,
            "agent_clock": t,  # the simulated agent's clock runs with the database's
        }
        if query.name == "dnfs_channels":
            for inst in channel_selects(query, workload):
                memory.last_channel_select[inst] = t
    # As the live reader makes it: the database query's row (its columns in this release).
    database_query = next(q for q in build_queries(available, workload.scope) if q.name == "database")
    (database_row,) = _rows(model, "database", t, memory, [])
    database = {column: database_row[column] for column in database_query.columns}
    document = {
        "kind": "simulated",
        "target": workload.db_name,
        "version": VERSIONS[workload.release],
        "database": database,
        "results": results,
        "errors": {},
        "down": None,
    }
    return Raw({}, t, t, documents={RESULTS: document})


def channel_selects(query: Query, workload: Workload) -> list[int]:
    """The instances whose V$DNFS_CHANNELS counts a select of the channels query takes ("since the
    last select": Oracle Database Reference, V$DNFS_CHANNELS).

    A V$ view is the connected instance's alone. A GV$ view is read on every instance ("querying a
    GV$ view retrieves the V$ view information from all qualified instances": Reference, "GV$
    Views"); the Reference shows an INST_ID filter with a literal only, so the simulator takes the
    case it does not rule out: a filter on SYS_CONTEXT('USERENV', 'INSTANCE') applied after every
    instance's rows were read, each instance's counts taken.
    """
    if "gv$dnfs_channels" in query.sql.lower():
        return list(range(1, workload.instances + 1))
    return [workload.connected_instance]


class _DriverError(Exception):
    """Shaped like python-oracledb's errors: args[0] has full_code and message."""

    def __init__(self, message: str):
        detail = type("Detail", (), {"full_code": message.split(":")[0], "message": message})()
        super().__init__(detail)


def _iso(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


# V$PROCESS.PNAME of the first slots (background processes, in the root of
# a CDB: see _container); the other slots are server processes (PNAME null).
BACKGROUND_PROCESSES = ("DBW0", "DBW1", "LGWR", "CKPT", "ARC0")


def _container(w: Workload, slot: int) -> int:
    """CON_ID of a process slot: 0 in a non-CDB; the first 5 slots (background) in the root, then PDBs in turn."""
    if not w.pdbs:
        return 0
    return 1 if slot < 5 else 3 + slot % w.pdbs


def _rows(model: Model, name: str, t: float, memory: Memory, instances: Sequence[int]) -> list[dict[str, object]]:
    w = model.w
    rows: list[dict[str, object]] = []
    if name == "instances":
        for inst in instances:
            rows.append(
                {
                    "INST_ID": inst,
                    "INSTANCE_NAME": f"{w.db_name.lower()}{inst}",
                    "HOST_NAME": f"simhost{inst}",
                    "VERSION": VERSIONS[w.release],
                    "STARTUP_TIME": _iso(model.startup(inst, t)),
                }
            )
    elif name == "database":
        rows.append(
            {
                "DBID": w.dbid,
                "NAME": w.db_name,
                "DB_UNIQUE_NAME": w.db_name,
                "DATABASE_ROLE": w.database_role,
                "OPEN_MODE": w.open_mode,
                "CDB": "YES" if w.pdbs else "NO",
            }
        )
    elif name == "dnfs_stats" and w.dnfs_enabled:
        # The other operations this release's V$DNFS_STATS has.
        other_ops = set(oracle_facts.columns("GV$DNFS_STATS", w.release))
        for inst in instances:
            startup = model.startup(inst, t)
            for slot in range(w.processes):
                g, _ = model.process(inst, slot, t)
                counts = model.process_counts(inst, slot, t)
                row: dict[str, object] = dict.fromkeys(OTHER_OPS, 0)
                row.update(counts)
                # What the statement sums (the release's other operations): the model's.
                row["NFS_OTHER_OPS"] = sum(counts.get(op, 0) for op in OTHER_OPS if op in other_ops)
                pname = BACKGROUND_PROCESSES[slot] if slot < len(BACKGROUND_PROCESSES) else None
                row.update(
                    {
                        "INST_ID": inst,
                        "PNUM": 20 + slot,
                        "SPID": str(model.spid(inst, slot, g, startup)),
                        "SERIAL#": g + 1,
                        "PNAME": pname,
                        "PROGRAM": f"oracle@simhost{inst} ({pname or 'TNS V1-V3'})",
                        "CON_ID": _container(w, slot),
                    }
                )
                rows.append(row)
    elif name == "dnfs_channels" and w.dnfs_enabled:
        for inst in instances:
            since = max(memory.last_channel_select.get(inst, 0.0), model.startup(inst, t))
            for slot in range(w.processes):
                _, begin = model.process(inst, slot, t)
                ops = (w.read_iops + w.write_iops) * model.weights[inst][slot] * model.load(max(since, begin), t)
                for server, paths in w.servers:
                    for position, path in enumerate(paths):
                        share = model.path_shares[server][position] / len(w.servers)
                        sends = math.floor(ops * share)
                        rows.append(
                            {
                                "INST_ID": inst,
                                "PNUM": 20 + slot,
                                "SVRNAME": server,
                                "PATH": path,
                                "LOCAL": w.local_addresses[position % len(w.local_addresses)],
                                "SENDS": sends,
                                "RECVS": sends,
                                "PINGS": math.floor((t - since) / 10),
                                "RECO": 0,
                                "SPRECO": 0,
                                "DPRECO": 0,
                            }
                        )
    elif name == "dnfs_servers" and w.dnfs_enabled:
        for inst in instances:
            for number, (server, _) in enumerate(w.servers, start=1):
                rows.append(
                    {
                        "INST_ID": inst,
                        "ID": number,
                        "SVRNAME": server,
                        "DIRNAME": f"/vol/oradata{number}",
                        "NFSPORT": 2049,
                        "NFSVERSION": "NFSv3.0",
                        "WTMAX": 1048576,
                        "RTMAX": 1048576,
                    }
                )
    elif name == "dnfs_files" and w.dnfs_enabled:
        for inst in instances:
            for number in range(1, len(w.servers) + 1):
                rows.append(
                    {
                        "INST_ID": inst,
                        "SVR_ID": number,
                        "FILES": w.datafiles_per_server,
                        "BYTES": w.datafiles_per_server * 32 * 2**30,
                    }
                )
    elif name == "system_event":
        for inst in instances:
            for event in AGENT_EVENTS:
                buckets, micros = model.event_counts(inst, event, t, 1.0)
                waits = sum(buckets)
                fg = EVENTS[event][3]
                rows.append(
                    {
                        "INST_ID": inst,
                        "EVENT": event,
                        "TOTAL_WAITS": waits,
                        "TIME_WAITED_MICRO": micros,
                        "TOTAL_WAITS_FG": math.floor(waits * fg),
                        "TIME_WAITED_MICRO_FG": math.floor(micros * fg),
                    }
                )
    elif name == "filer_files" and w.dnfs_enabled:
        for inst in instances:
            for number, server, factor in model.dnfs_files():
                row = {"INST_ID": inst, "SVRNAME": server, "FILETYPE_NAME": "Data File", "FILE_NO": number}
                row.update(model.file_counts(inst, t, factor))
                rows.append(row)
    elif name == "iostat_function":
        # In a CDB, modelled like the processes (_container): the foregrounds'
        # functions split evenly over the PDBs, the background ones in the root.
        for inst in instances:
            for function in FUNCTIONS:
                containers = [0]
                if w.pdbs:
                    containers = [3 + n for n in range(w.pdbs)] if function in FOREGROUND_FUNCTIONS else [1]
                for con_id in containers:
                    row = {"INST_ID": inst, "FUNCTION_NAME": function, "CON_ID": con_id}
                    row.update(model.function_counts(inst, function, t, 1 / len(containers)))
                    rows.append(row)
    elif name == "event_histogram":
        micro = oracle_facts.release_tuple(w.release) >= oracle_facts.release_tuple("12.1.0.2")
        for inst in instances:
            for event in HISTOGRAM_EVENTS:
                buckets, _ = model.event_counts(inst, event, t, 1.0 if micro else 1000.0)
                for b, count in enumerate(buckets):
                    if not count:
                        continue  # the view lists only buckets hit since startup
                    bound = 2**b
                    rows.append(
                        {
                            "INST_ID": inst,
                            "EVENT": event,
                            "WAIT_TIME_MICRO" if micro else "WAIT_TIME_MILLI": bound,
                            "WAIT_COUNT": count,
                        }
                    )
    elif name == "iostat_file":
        data_files = w.datafiles_per_server * len(w.servers)
        data_dnfs = data_files - w.fallback_datafiles if w.dnfs_enabled else 0
        containers = [3 + n for n in range(w.pdbs)] if w.pdbs else [0]
        for inst in instances:
            for filetype, method, count, where in (
                ("Data File", "DNFS_LIB", data_dnfs, containers),
                ("Data File", "OS_LIB", data_files - data_dnfs, containers),
                ("Temp File", "DNFS_LIB" if w.dnfs_enabled else "OS_LIB", 2, containers),
                ("Control File", "OS_LIB", 2, [1 if w.pdbs else 0]),
            ):
                for number, con_id in enumerate(where):
                    # Spread the files over the containers; the first takes the remainder.
                    share = count // len(where) + (count % len(where) if number == 0 else 0)
                    if share:
                        rows.append(
                            {
                                "INST_ID": inst,
                                "FILETYPE_NAME": filetype,
                                "ACCESS_METHOD": method,
                                "CON_ID": con_id,
                                "FILES": share,
                            }
                        )
    return rows


# --- truth ---


@dataclass
class Truth:
    """What an instance's figures must be over an interval (t0, t1]."""

    read_iops: float  # the workload's rate
    write_iops: float
    # The share done by the processes alive at the interval's end (those that
    # started inside it counted from their start).
    observable_read_iops: float
    observable_write_iops: float
    read_mib_per_s: float
    write_mib_per_s: float
    event_avg_latency_us: dict[str, float]
    restarted: bool
    # V$IOSTAT_FUNCTION: requests per second and mean synchronous wait (ms) per function.
    function_reqs_per_s: dict[str, float]
    function_avg_wait_ms: dict[str, float]
    # V$IOSTAT_FILE per filer: single-block reads per second and their average service time (ms).
    filer_small_reads_per_s: dict[str, float]
    filer_small_read_avg_ms: dict[str, float]


def truth(workload: Workload, inst: int, t0: float, t1: float) -> Truth:
    model = Model(workload)
    dt = t1 - t0
    load = model.load(t0, t1)
    # What V$DNFS_STATS can show: each slot's process at t1, over the part of
    # the interval it lived (all of it, or since it started inside it); the
    # I/O of processes that exited inside the interval is gone with them.
    observable = sum(
        model.weights[inst][slot] * model.load(max(t0, model.process(inst, slot, t1)[1]), t1)
        for slot in range(workload.processes)
    )
    latencies = {}
    for event in AGENT_EVENTS:
        # mypy cannot infer a lambda whose default argument binds the loop variable.
        waits = model.integral(lambda m, e=event: model.event_rate(e, m), t0, t1)  # type: ignore[misc]
        micros = model.integral(
            lambda m, e=event: (  # type: ignore[misc]
                model.event_rate(e, m) * sum(p * c for p, c in model.bucket_shares(model.mean_latency_us(e, m), 1.0))
            ),
            t0,
            t1,
        )
        latencies[event] = micros / waits if waits else 0.0
    function_reqs, function_wait = {}, {}
    for function in FUNCTIONS:
        requests = model.integral(lambda m, f=function: model.function_rate(f, m), t0, t1)  # type: ignore[misc]
        waited = model.integral(
            lambda m, f=function: model.function_rate(f, m) * model.function_wait_us(f, m),  # type: ignore[misc]
            t0,
            t1,
        )
        function_reqs[function] = requests / dt
        function_wait[function] = waited / requests / 1000 if requests else 0.0
    filer_reads: dict[str, float] = {}
    filer_ms: dict[str, float] = {}
    files = model.dnfs_files()
    event = "db file sequential read"
    reads = model.integral(lambda m: model.event_rate(event, m), t0, t1) / len(files) if files else 0.0
    micros = model.integral(lambda m: model.event_rate(event, m) * model.mean_latency_us(event, m), t0, t1)
    for _, server, factor in files:
        filer_reads[server] = filer_reads.get(server, 0.0) + reads / dt
        filer_ms[server] = micros * factor / 1000 / (reads * len(files)) if reads else 0.0
    return Truth(
        filer_small_reads_per_s=filer_reads,
        filer_small_read_avg_ms=filer_ms,
        function_reqs_per_s=function_reqs,
        function_avg_wait_ms=function_wait,
        read_iops=workload.read_iops * load / dt,
        write_iops=workload.write_iops * load / dt,
        observable_read_iops=workload.read_iops * observable / dt,
        observable_write_iops=workload.write_iops * observable / dt,
        read_mib_per_s=workload.read_iops * workload.read_bytes * load / dt / 1048576,
        write_mib_per_s=workload.write_iops * workload.write_bytes * load / dt / 1048576,
        event_avg_latency_us=latencies,
        restarted=model.startup(inst, t0) != model.startup(inst, t1),
    )
