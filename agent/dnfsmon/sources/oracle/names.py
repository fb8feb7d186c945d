"""The Oracle source's names: its measurements, the counters it reads and the scopes.

The Oracle lists themselves (events, operations per release) live in dnfsmon.oracle_facts.
"""

from __future__ import annotations

from ... import oracle_facts

NAME = "oracle"
RESULTS = "oracle/results.json"

IO_MEASUREMENT = "dnfsmon_dnfs_io"
CHANNEL_MEASUREMENT = "dnfsmon_dnfs_channel"
SERVER_MEASUREMENT = "dnfsmon_dnfs_server"
EVENT_MEASUREMENT = "dnfsmon_oracle_event"
HISTOGRAM_MEASUREMENT = "dnfsmon_oracle_latency_histogram"
COVERAGE_MEASUREMENT = "dnfsmon_dnfs_coverage"
FUNCTION_MEASUREMENT = "dnfsmon_oracle_io_function"
FILER_LATENCY_MEASUREMENT = "dnfsmon_dnfs_filer_latency"
TOP_PROCESS_MEASUREMENT = "dnfsmon_dnfs_top_process"
# Not published: each dNFS file's V$IOSTAT_FILE counters (diffed per file,
# then summed per filer into FILER_LATENCY_MEASUREMENT).
FILER_FILE_MEASUREMENT = "dnfsmon_dnfs_filer_file"
STATUS_MEASUREMENT = "dnfsmon_oracle_status"
# Kept in the state by dnfsmon before the I/O of an instance's processes was one sample
# (rates.Members, which holds which process held each PNUM): dropped from the state at the next read.
ROSTER_MEASUREMENT = "dnfsmon_dnfs_roster"
MEASUREMENTS = (
    IO_MEASUREMENT,
    CHANNEL_MEASUREMENT,
    SERVER_MEASUREMENT,
    EVENT_MEASUREMENT,
    HISTOGRAM_MEASUREMENT,
    COVERAGE_MEASUREMENT,
    FUNCTION_MEASUREMENT,
    FILER_LATENCY_MEASUREMENT,
    FILER_FILE_MEASUREMENT,
    TOP_PROCESS_MEASUREMENT,
    STATUS_MEASUREMENT,
)

# The Oracle lists live in dnfsmon.oracle_facts (one source of truth).
IO_EVENTS = oracle_facts.IO_EVENTS
AGENT_EVENTS = oracle_facts.AGENT_EVENTS
HISTOGRAM_EVENTS = oracle_facts.HISTOGRAM_EVENTS
OTHER_OPS = oracle_facts.OTHER_OPS
STATS_COUNTERS = ("NFS_READ", "NFS_WRITE", "NFS_READBYTES", "NFS_WRITEBYTES", *OTHER_OPS)
# What a process's sample counts: the counters the published fields and the top processes use
# (io_fields, _top_processes), and OTHER_OPS_COUNTER, the row's OTHER_OPS summed by the statement
# (a capture made before: summed as read). Each process is diffed over 7 counters, not 25 (4
# instances x 2000 processes: bench/README.md); a sum of counters that only grow grows, and falls
# back to zero with them.
PROCESS_COUNTERS = ("NFS_READ", "NFS_WRITE", "NFS_READBYTES", "NFS_WRITEBYTES", "NFS_GETATTR", "NFS_COMMIT")
OTHER_OPS_COUNTER = "NFS_OTHER_OPS"
CHANNEL_COUNTS = ("SENDS", "RECVS", "PINGS", "RECO", "SPRECO", "DPRECO")
EVENT_COUNTERS = ("TOTAL_WAITS", "TIME_WAITED_MICRO", "TOTAL_WAITS_FG", "TIME_WAITED_MICRO_FG")
# V$IOSTAT_FILE's cumulative counts and times (milliseconds) per file.
FILE_COUNTERS = (
    "SMALL_READ_REQS",
    "SMALL_READ_SERVICETIME",
    "SMALL_SYNC_READ_REQS",
    "SMALL_SYNC_READ_LATENCY",
    "LARGE_READ_REQS",
    "LARGE_READ_SERVICETIME",
    "SMALL_WRITE_REQS",
    "SMALL_WRITE_SERVICETIME",
    "LARGE_WRITE_REQS",
    "LARGE_WRITE_SERVICETIME",
)
FUNCTION_COUNTERS = (
    "SMALL_READ_REQS",
    "SMALL_WRITE_REQS",
    "LARGE_READ_REQS",
    "LARGE_WRITE_REQS",
    "SMALL_READ_MEGABYTES",
    "SMALL_WRITE_MEGABYTES",
    "LARGE_READ_MEGABYTES",
    "LARGE_WRITE_MEGABYTES",
    "NUMBER_OF_WAITS",
    "WAIT_TIME",
)
