"""Which columns each Oracle view has, by release: the column facts.

Transcribed from the Oracle Database Reference of each release (the
"Dynamic Performance Views" part: V$DNFS_STATS, V$DNFS_CHANNELS, ...).
This module is the one place for every Oracle list dnfsmon uses: the views
the agent reads (and so the grants it needs), the wait events dNFS I/O is
timed under, the NFS operation counters, and the version string each
release reports. Tests check every SQL
text the agent (and the SQL pack) sends against these facts for every
release it claims, so a misspelt column or one newer than a release fails
before it reaches a database. At run time the agent still discovers the
columns of the connected database and uses only those it has.

Every GV$ view has its V$ view's columns plus INST_ID first.
"""

from __future__ import annotations

import re
from typing import Optional

# Releases dnfsmon claims, oldest first, as version tuples.
RELEASES: dict[str, tuple[int, ...]] = {
    "11.2.0.4": (11, 2, 0, 4),
    "12.1.0.1": (12, 1, 0, 1),
    "12.1.0.2": (12, 1, 0, 2),
    "12.2": (12, 2),
    "18c": (18,),
    "19c": (19,),
    "21c": (21,),
    "23ai": (23,),
}

# V$INSTANCE.VERSION of each release (18c on report the release as N.0.0.0.0;
# VERSION_FULL has the release update).
VERSION_STRINGS: dict[str, str] = {
    "11.2.0.4": "11.2.0.4.0",
    "12.1.0.1": "12.1.0.1.0",
    "12.1.0.2": "12.1.0.2.0",
    "12.2": "12.2.0.1.0",
    "18c": "18.0.0.0.0",
    "19c": "19.0.0.0.0",
    "21c": "21.0.0.0.0",
    "23ai": "23.0.0.0.0",
}

# Views the agent reads in scope "cluster", as queried (the GRANT names
# SYS.<view with V_$/GV_$>, see grant_name): every instance through GV$.
CLUSTER_VIEWS = (
    "GV$INSTANCE",
    "V$DATABASE",
    "GV$DNFS_STATS",
    "GV$PROCESS",
    "GV$DNFS_CHANNELS",
    "GV$DNFS_SERVERS",
    "GV$DNFS_FILES",
    "GV$SYSTEM_EVENT",
    "GV$EVENT_HISTOGRAM",
    "GV$EVENT_HISTOGRAM_MICRO",
    "GV$IOSTAT_FILE",
    "GV$IOSTAT_FUNCTION",
    "GV$DATAFILE",
    "GV$TEMPFILE",
)
# In scope "instance" (the default: one agent per RAC node) the V$ view of
# each GV$ one. A V$ view is instance-specific: it shows the instance the
# session is connected to, so reading it starts no parallel execution on
# the other instances and never reads (so never resets: V$DNFS_CHANNELS
# counts "since the last select") another instance's rows. A GV$ view
# "retrieves the V$ view information from all qualified instances" (Oracle
# Database Reference, "GV$ Views"; Real Application Clusters Administration
# and Deployment Guide, "Performance Views in Oracle RAC"); an INST_ID
# filter is documented with a literal (INST_ID = 2), not with
# SYS_CONTEXT('USERENV', 'INSTANCE').
INSTANCE_VIEWS = tuple(view[1:] if view.startswith("GV$") else view for view in CLUSTER_VIEWS)
# Every view the agent may read, in either scope. The setup script grants
# exactly these; tests hold both to it.
VIEWS_READ = tuple(dict.fromkeys((*CLUSTER_VIEWS, *INSTANCE_VIEWS)))

# Wait events dNFS I/O is timed under (there is no dNFS-specific event):
# Oracle Database Reference, "Descriptions of Wait Events", User I/O and
# System I/O classes. The agent and the SQL pack read exactly these.
IO_EVENTS = (
    "db file sequential read",
    "db file scattered read",
    "db file parallel read",
    "direct path read",
    "direct path write",
    "log file parallel write",
    "db file parallel write",
    "control file sequential read",
)

# Events a dNFS DBA reads next to those (review C9), all from the same
# "Descriptions of Wait Events" appendix: 'log file sync' (Commit class) is
# what a committing session waits for, LGWR's write included, so commit
# latency on an NFS-backed redo log; 'direct path read temp' and 'direct path
# write temp' (User I/O) are sorts and hash joins spilling to temp files,
# which on a dNFS database are NFS reads and writes too. The SQL pack keeps
# to IO_EVENTS.
COMMIT_EVENT = "log file sync"
TEMP_EVENTS = ("direct path read temp", "direct path write temp")
# The events the agent reads from V$SYSTEM_EVENT (waits, latency), and those
# whose histogram it reads too (V$EVENT_HISTOGRAM(_MICRO)).
AGENT_EVENTS = (*IO_EVENTS, COMMIT_EVENT, *TEMP_EVENTS)
HISTOGRAM_EVENTS = (*IO_EVENTS, COMMIT_EVENT)

# (column, first release it exists in, last release it exists in or None).
Column = tuple[str, str, Optional[str]]

# V$DNFS_STATS's NFSv3 operation counters, in the view's column order (one
# per NFSv3 procedure of RFC 1813, plus the MOUNT protocol's MNT).
NFS_OPS = (
    "NFS_NULL",
    "NFS_GETATTR",
    "NFS_SETATTR",
    "NFS_LOOKUP",
    "NFS_ACCESS",
    "NFS_READLINK",
    "NFS_READ",
    "NFS_WRITE",
    "NFS_CREATE",
    "NFS_MKDIR",
    "NFS_SYMLINK",
    "NFS_MKNOD",
    "NFS_REMOVE",
    "NFS_RMDIR",
    "NFS_RENAME",
    "NFS_LINK",
    "NFS_READDIR",
    "NFS_READDIRPLUS",
    "NFS_FSSTAT",
    "NFS_FSINFO",
    "NFS_PATHCONF",
    "NFS_COMMIT",
    "NFS_MOUNT",
)
# The operations other than READ and WRITE (published summed as "other").
OTHER_OPS = tuple(op for op in NFS_OPS if op not in ("NFS_READ", "NFS_WRITE"))

VIEWS: dict[str, list[Column]] = {
    # One row per Oracle process (PNUM); counters die with the process.
    "V$DNFS_STATS": list[Column]([("PNUM", "11.2.0.4", None)])
    + [(op, "11.2.0.4", None) for op in NFS_OPS]
    + [
        ("NFS_READBYTES", "11.2.0.4", None),
        ("NFS_WRITEBYTES", "11.2.0.4", None),
        ("CON_ID", "12.1.0.1", None),
    ],
    # One row per process per network path; SENDS/RECVS/PINGS and the
    # reconnect counts are "since the last select" of the view.
    "V$DNFS_CHANNELS": [
        ("PNUM", "11.2.0.4", None),
        ("SVRNAME", "11.2.0.4", None),
        ("PATH", "11.2.0.4", None),
        ("LOCAL", "11.2.0.4", None),
        ("CH_ID", "11.2.0.4", None),
        ("SVR_ID", "11.2.0.4", None),
        ("SENDS", "11.2.0.4", None),
        ("RECVS", "11.2.0.4", None),
        ("PINGS", "11.2.0.4", None),
        ("RECO", "11.2.0.4", "11.2.0.4"),
        ("SPRECO", "12.1.0.2", None),
        ("DPRECO", "12.1.0.2", None),
        ("CON_ID", "12.1.0.1", None),
        ("RDMA", "12.1.0.1", None),
        ("RDMA_CREDITS", "12.1.0.2", None),
        ("CLIENTPORT", "12.1.0.2", None),
        ("ACTIVE_SPEED", "12.1.0.2", None),
        ("PEAK_FMR", "12.1.0.1", None),
        ("CURRENT_FMR", "12.1.0.1", None),
        ("FMRREG_COUNT", "12.1.0.1", None),
    ],
    "V$DNFS_SERVERS": [
        ("ID", "11.2.0.4", None),
        ("SVRNAME", "11.2.0.4", None),
        ("DIRNAME", "11.2.0.4", None),
        ("MNTPORT", "11.2.0.4", None),
        ("NFSPORT", "11.2.0.4", None),
        ("NFSVERSION", "12.1.0.1", None),
        ("WTMAX", "11.2.0.4", None),
        ("RTMAX", "11.2.0.4", None),
        ("CON_ID", "12.1.0.1", None),
        ("RDMAENABLE", "12.1.0.2", None),
        ("RDMAPORT", "12.1.0.2", None),
        ("SECURITY", "12.2", None),
    ],
    "V$DNFS_FILES": [
        ("FILENAME", "11.2.0.4", None),
        ("FILESIZE", "11.2.0.4", None),
        ("PNUM", "11.2.0.4", None),
        ("SVR_ID", "11.2.0.4", None),
        ("CON_ID", "12.1.0.1", None),
    ],
    "V$SYSTEM_EVENT": [
        ("EVENT", "11.2.0.4", None),
        ("TOTAL_WAITS", "11.2.0.4", None),
        ("TOTAL_TIMEOUTS", "11.2.0.4", None),
        ("TIME_WAITED", "11.2.0.4", None),
        ("AVERAGE_WAIT", "11.2.0.4", None),
        ("TIME_WAITED_MICRO", "11.2.0.4", None),
        ("TOTAL_WAITS_FG", "11.2.0.4", None),
        ("TOTAL_TIMEOUTS_FG", "11.2.0.4", None),
        ("TIME_WAITED_FG", "11.2.0.4", None),
        ("AVERAGE_WAIT_FG", "11.2.0.4", None),
        ("TIME_WAITED_MICRO_FG", "11.2.0.4", None),
        ("EVENT_ID", "11.2.0.4", None),
        ("WAIT_CLASS_ID", "11.2.0.4", None),
        ("WAIT_CLASS#", "11.2.0.4", None),
        ("WAIT_CLASS", "11.2.0.4", None),
        ("CON_ID", "12.1.0.1", None),
    ],
    "V$EVENT_HISTOGRAM": [
        ("EVENT#", "11.2.0.4", None),
        ("EVENT", "11.2.0.4", None),
        ("WAIT_TIME_MILLI", "11.2.0.4", None),
        ("WAIT_COUNT", "11.2.0.4", None),
        ("LAST_UPDATE_TIME", "11.2.0.4", None),
        ("CON_ID", "12.1.0.1", None),
    ],
    "V$EVENT_HISTOGRAM_MICRO": [
        ("EVENT#", "12.1.0.2", None),
        ("EVENT", "12.1.0.2", None),
        ("WAIT_TIME_FORMAT", "12.1.0.2", None),
        ("WAIT_TIME_MICRO", "12.1.0.2", None),
        ("WAIT_COUNT", "12.1.0.2", None),
        ("LAST_UPDATE_TIME", "12.1.0.2", None),
        ("CON_ID", "12.1.0.2", None),
    ],
    "V$IOSTAT_FILE": [
        ("FILE_NO", "11.2.0.4", None),
        ("FILETYPE_ID", "11.2.0.4", None),
        ("FILETYPE_NAME", "11.2.0.4", None),
        ("SMALL_READ_MEGABYTES", "11.2.0.4", None),
        ("SMALL_WRITE_MEGABYTES", "11.2.0.4", None),
        ("LARGE_READ_MEGABYTES", "11.2.0.4", None),
        ("LARGE_WRITE_MEGABYTES", "11.2.0.4", None),
        ("SMALL_READ_REQS", "11.2.0.4", None),
        ("SMALL_WRITE_REQS", "11.2.0.4", None),
        ("SMALL_SYNC_READ_REQS", "11.2.0.4", None),
        ("LARGE_READ_REQS", "11.2.0.4", None),
        ("LARGE_WRITE_REQS", "11.2.0.4", None),
        ("SMALL_READ_SERVICETIME", "11.2.0.4", None),
        ("SMALL_WRITE_SERVICETIME", "11.2.0.4", None),
        ("SMALL_SYNC_READ_LATENCY", "11.2.0.4", None),
        ("LARGE_READ_SERVICETIME", "11.2.0.4", None),
        ("LARGE_WRITE_SERVICETIME", "11.2.0.4", None),
        ("ASYNCH_IO", "11.2.0.4", None),
        ("ACCESS_METHOD", "11.2.0.4", None),
        ("RETRIES_ON_ERROR", "11.2.0.4", None),
        ("CON_ID", "12.1.0.1", None),
    ],
    # Disk I/O by database function (Buffer Cache Reads, Direct Reads, DBWR,
    # LGWR, ARCH, RMAN, Data Pump, ...), cumulative since startup; megabytes
    # are whole MB counters, WAIT_TIME milliseconds of synchronous I/O waits
    # (Reference 11.2 "V$IOSTAT_FUNCTION"; CON_ID from 12.1).
    "V$IOSTAT_FUNCTION": [
        ("FUNCTION_ID", "11.2.0.4", None),
        ("FUNCTION_NAME", "11.2.0.4", None),
        ("SMALL_READ_MEGABYTES", "11.2.0.4", None),
        ("SMALL_WRITE_MEGABYTES", "11.2.0.4", None),
        ("LARGE_READ_MEGABYTES", "11.2.0.4", None),
        ("LARGE_WRITE_MEGABYTES", "11.2.0.4", None),
        ("SMALL_READ_REQS", "11.2.0.4", None),
        ("SMALL_WRITE_REQS", "11.2.0.4", None),
        ("LARGE_READ_REQS", "11.2.0.4", None),
        ("LARGE_WRITE_REQS", "11.2.0.4", None),
        ("NUMBER_OF_WAITS", "11.2.0.4", None),
        ("WAIT_TIME", "11.2.0.4", None),
        ("CON_ID", "12.1.0.1", None),
    ],
    # File numbers and names (the part the agent reads): V$IOSTAT_FILE's
    # FILE_NO is V$DATAFILE.FILE# for data files, V$TEMPFILE.FILE# for temp
    # files (Reference, V$IOSTAT_FILE, V$DATAFILE, V$TEMPFILE).
    "V$DATAFILE": [("FILE#", "11.2.0.4", None), ("NAME", "11.2.0.4", None), ("CON_ID", "12.1.0.1", None)],
    "V$TEMPFILE": [("FILE#", "11.2.0.4", None), ("NAME", "11.2.0.4", None), ("CON_ID", "12.1.0.1", None)],
    "V$INSTANCE": [
        ("INSTANCE_NUMBER", "11.2.0.4", None),
        ("INSTANCE_NAME", "11.2.0.4", None),
        ("HOST_NAME", "11.2.0.4", None),
        ("VERSION", "11.2.0.4", None),
        ("VERSION_FULL", "18c", None),
        ("STARTUP_TIME", "11.2.0.4", None),
        ("STATUS", "11.2.0.4", None),
        ("DATABASE_STATUS", "11.2.0.4", None),
        ("INSTANCE_ROLE", "11.2.0.4", None),
        ("CON_ID", "12.1.0.1", None),
    ],
    "V$PROCESS": [
        ("ADDR", "11.2.0.4", None),
        ("PID", "11.2.0.4", None),
        ("SPID", "11.2.0.4", None),
        ("SERIAL#", "11.2.0.4", None),
        ("PNAME", "11.2.0.4", None),
        ("USERNAME", "11.2.0.4", None),
        ("PROGRAM", "11.2.0.4", None),
        ("BACKGROUND", "11.2.0.4", None),
        ("CON_ID", "12.1.0.1", None),
    ],
    "V$DATABASE": [
        ("DBID", "11.2.0.4", None),
        ("NAME", "11.2.0.4", None),
        ("DB_UNIQUE_NAME", "11.2.0.4", None),
        # The database's Data Guard role and how it is open (Reference, V$DATABASE): DATABASE_ROLE
        # is PRIMARY, PHYSICAL STANDBY, LOGICAL STANDBY, SNAPSHOT STANDBY, or FAR SYNC (12.1 on);
        # OPEN_MODE is MOUNTED, READ WRITE, READ ONLY, READ ONLY WITH APPLY (a physical standby
        # open read only while redo apply runs: Active Data Guard) or MIGRATE.
        ("DATABASE_ROLE", "11.2.0.4", None),
        ("OPEN_MODE", "11.2.0.4", None),
        ("CDB", "12.1.0.1", None),
        ("CON_ID", "12.1.0.1", None),
    ],
    "V$PARAMETER": [
        ("NAME", "11.2.0.4", None),
        ("VALUE", "11.2.0.4", None),
        ("ISDEFAULT", "11.2.0.4", None),
        ("CON_ID", "12.1.0.1", None),
    ],
    "V$TIMER": [("HSECS", "11.2.0.4", None), ("CON_ID", "12.1.0.1", None)],
    # Data dictionary view the agent discovers columns with (the part it reads).
    "ALL_TAB_COLUMNS": [
        ("OWNER", "11.2.0.4", None),
        ("TABLE_NAME", "11.2.0.4", None),
        ("COLUMN_NAME", "11.2.0.4", None),
        ("DATA_TYPE", "11.2.0.4", None),
        ("COLUMN_ID", "11.2.0.4", None),
    ],
    # Data dictionary views of the container check (oracle_db.container_data_sql), 12.1 on:
    # Oracle Database Reference, ALL_VIEWS (CONTAINER_DATA: Y when the view was created with
    # the CONTAINER_DATA clause) and DBA_CONTAINER_DATA (default and per-object attributes).
    "ALL_VIEWS": [("OWNER", "11.2.0.4", None), ("VIEW_NAME", "11.2.0.4", None), ("CONTAINER_DATA", "12.1.0.1", None)],
    "DBA_CONTAINER_DATA": [
        ("USERNAME", "12.1.0.1", None),
        ("DEFAULT_ATTR", "12.1.0.1", None),
        ("OWNER", "12.1.0.1", None),
        ("OBJECT_NAME", "12.1.0.1", None),
        ("ALL_CONTAINERS", "12.1.0.1", None),
    ],
}


# The datatype of each column the agent reads, as the Oracle Database Reference gives it (each
# view's "Datatype" column in "Dynamic Performance Views", 11.2 to 23ai): every column of the
# views below is a NUMBER except those listed here, with the type's name only (VARCHAR2(255) ->
# VARCHAR2: the name is what decides how a statement may send the value), in the releases that
# give it that type: (column, datatype, first release, last release or None). The agent sends a
# NUMBER as a NUMBER and anything else as text (sources.oracle.wire); a test holds every
# statement, for every release, to these facts. A GV$ view's INST_ID is a NUMBER.
Datatype = tuple[str, str, str, Optional[str]]

NOT_NUMBER: dict[str, list[Datatype]] = {
    # V$DNFS_STATS: every column a NUMBER (Reference, V$DNFS_STATS).
    "V$DNFS_STATS": [],
    # Reference, V$DNFS_CHANNELS: SVRNAME, PATH, LOCAL VARCHAR2(255); the counts, RDMA and the
    # FMR sizes are NUMBERs.
    "V$DNFS_CHANNELS": [
        ("SVRNAME", "VARCHAR2", "11.2.0.4", None),
        ("PATH", "VARCHAR2", "11.2.0.4", None),
        ("LOCAL", "VARCHAR2", "11.2.0.4", None),
    ],
    # Reference, V$DNFS_SERVERS: SVRNAME VARCHAR2(255), DIRNAME VARCHAR2(1024), NFSVERSION
    # VARCHAR2(8), RDMAENABLE VARCHAR2(16) ("YES" or "NO"), SECURITY VARCHAR2(32).
    "V$DNFS_SERVERS": [
        ("SVRNAME", "VARCHAR2", "11.2.0.4", None),
        ("DIRNAME", "VARCHAR2", "11.2.0.4", None),
        ("NFSVERSION", "VARCHAR2", "12.1.0.1", None),
        ("RDMAENABLE", "VARCHAR2", "12.1.0.2", None),
        ("SECURITY", "VARCHAR2", "12.2", None),
    ],
    # Reference, V$DNFS_FILES: FILENAME VARCHAR2(513).
    "V$DNFS_FILES": [("FILENAME", "VARCHAR2", "11.2.0.4", None)],
    # Reference, V$SYSTEM_EVENT: EVENT and WAIT_CLASS VARCHAR2(64).
    "V$SYSTEM_EVENT": [("EVENT", "VARCHAR2", "11.2.0.4", None), ("WAIT_CLASS", "VARCHAR2", "11.2.0.4", None)],
    # Reference, V$EVENT_HISTOGRAM and V$EVENT_HISTOGRAM_MICRO: EVENT VARCHAR2(64),
    # WAIT_TIME_FORMAT VARCHAR2(30); LAST_UPDATE_TIME is text too (VARCHAR2(64)), not a DATE.
    "V$EVENT_HISTOGRAM": [("EVENT", "VARCHAR2", "11.2.0.4", None), ("LAST_UPDATE_TIME", "VARCHAR2", "11.2.0.4", None)],
    "V$EVENT_HISTOGRAM_MICRO": [
        ("EVENT", "VARCHAR2", "12.1.0.2", None),
        ("WAIT_TIME_FORMAT", "VARCHAR2", "12.1.0.2", None),
        ("LAST_UPDATE_TIME", "VARCHAR2", "12.1.0.2", None),
    ],
    # Reference, V$IOSTAT_FILE: FILETYPE_ID is VARCHAR2(25) in the 11.2 Reference and a NUMBER
    # from 12.1 on (a column that changed type: read it by name only with that in mind);
    # FILETYPE_NAME VARCHAR2(28), ASYNCH_IO VARCHAR2(9), ACCESS_METHOD VARCHAR2(11).
    "V$IOSTAT_FILE": [
        ("FILETYPE_ID", "VARCHAR2", "11.2.0.4", "11.2.0.4"),
        ("FILETYPE_NAME", "VARCHAR2", "11.2.0.4", None),
        ("ASYNCH_IO", "VARCHAR2", "11.2.0.4", None),
        ("ACCESS_METHOD", "VARCHAR2", "11.2.0.4", None),
    ],
    # Reference, V$IOSTAT_FUNCTION: FUNCTION_NAME VARCHAR2(18).
    "V$IOSTAT_FUNCTION": [("FUNCTION_NAME", "VARCHAR2", "11.2.0.4", None)],
    # Reference, V$DATAFILE and V$TEMPFILE: NAME VARCHAR2(513).
    "V$DATAFILE": [("NAME", "VARCHAR2", "11.2.0.4", None)],
    "V$TEMPFILE": [("NAME", "VARCHAR2", "11.2.0.4", None)],
    # Reference, V$INSTANCE: INSTANCE_NAME VARCHAR2(16), HOST_NAME VARCHAR2(64), VERSION and
    # VERSION_FULL VARCHAR2(17), STARTUP_TIME DATE, STATUS VARCHAR2(12), DATABASE_STATUS
    # VARCHAR2(17), INSTANCE_ROLE VARCHAR2(18).
    "V$INSTANCE": [
        ("INSTANCE_NAME", "VARCHAR2", "11.2.0.4", None),
        ("HOST_NAME", "VARCHAR2", "11.2.0.4", None),
        ("VERSION", "VARCHAR2", "11.2.0.4", None),
        ("VERSION_FULL", "VARCHAR2", "18c", None),
        ("STARTUP_TIME", "DATE", "11.2.0.4", None),
        ("STATUS", "VARCHAR2", "11.2.0.4", None),
        ("DATABASE_STATUS", "VARCHAR2", "11.2.0.4", None),
        ("INSTANCE_ROLE", "VARCHAR2", "11.2.0.4", None),
    ],
    # Reference, V$PROCESS: ADDR RAW(4 | 8), SPID VARCHAR2(24), PNAME VARCHAR2(5), USERNAME
    # VARCHAR2(15), PROGRAM VARCHAR2(48), BACKGROUND VARCHAR2(1); PID and SERIAL# are NUMBERs.
    "V$PROCESS": [
        ("ADDR", "RAW", "11.2.0.4", None),
        ("SPID", "VARCHAR2", "11.2.0.4", None),
        ("PNAME", "VARCHAR2", "11.2.0.4", None),
        ("USERNAME", "VARCHAR2", "11.2.0.4", None),
        ("PROGRAM", "VARCHAR2", "11.2.0.4", None),
        ("BACKGROUND", "VARCHAR2", "11.2.0.4", None),
    ],
    # Reference, V$DATABASE: NAME VARCHAR2(9), DB_UNIQUE_NAME VARCHAR2(30), DATABASE_ROLE
    # VARCHAR2(16), OPEN_MODE VARCHAR2(20), CDB VARCHAR2(3) ("YES" or "NO").
    "V$DATABASE": [
        ("NAME", "VARCHAR2", "11.2.0.4", None),
        ("DB_UNIQUE_NAME", "VARCHAR2", "11.2.0.4", None),
        ("DATABASE_ROLE", "VARCHAR2", "11.2.0.4", None),
        ("OPEN_MODE", "VARCHAR2", "11.2.0.4", None),
        ("CDB", "VARCHAR2", "12.1.0.1", None),
    ],
}


def grant_name(view: str) -> str:
    """The object a GRANT names for a V$/GV$ view: GV$DNFS_STATS -> SYS.GV_$DNFS_STATS."""
    return "SYS." + view.replace("$", "_$", 1)


def release_tuple(name: str) -> tuple[int, ...]:
    if name not in RELEASES:
        raise KeyError(f"unknown release {name!r}; known: {', '.join(RELEASES)}")
    return RELEASES[name]


def release_of_version(version: str) -> str:
    """The claimed release a V$INSTANCE.VERSION string belongs to (e.g. '19.0.0.0.0' -> '19c')."""
    numbers = tuple(int(n) for n in re.findall(r"\d+", version)[:4])
    best = None
    for name, release in RELEASES.items():
        if numbers[: len(release)] >= release:
            best = name
    if best is None:
        raise ValueError(f"Oracle {version} is older than 11.2.0.4, which dnfsmon does not support")
    return best


def base_view(view: str) -> str:
    """V$ name of a V$ or GV$ view (GV$X -> V$X)."""
    view = view.upper()
    return view[1:] if view.startswith("GV$") else view


def in_release(first: str, last: Optional[str], release: str) -> bool:
    """True when `release` is between `first` and `last` (None: every later release), inclusive."""
    at = release_tuple(release)
    return release_tuple(first) <= at and (last is None or at <= release_tuple(last))


def columns(view: str, release: str) -> list[str]:
    """The columns a view has in a release, in the documented order; GV$ adds INST_ID first."""
    found = [name for name, first, last in VIEWS[base_view(view)] if in_release(first, last, release)]
    if not found:
        return []  # the view does not exist in this release
    return (["INST_ID", *found]) if view.upper().startswith("GV$") else found


def datatype(view: str, column: str, release: str) -> str:
    """A column's datatype in a release, by name (NUMBER, VARCHAR2, DATE, RAW: NOT_NUMBER)."""
    if base_view(view) not in NOT_NUMBER:
        raise KeyError(f"no datatypes are transcribed for {view}")
    if column not in columns(view, release):
        raise KeyError(f"{view} has no column {column} in Oracle {release}")
    for name, kind, first, last in NOT_NUMBER[base_view(view)]:
        if name == column and in_release(first, last, release):
            return kind
    return "NUMBER"
