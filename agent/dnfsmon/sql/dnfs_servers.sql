-- File name:   dnfs_servers.sql
-- Purpose:     The filers dNFS talks to, per instance: export, ports, NFS
--              version, largest read and write, and the files open on each.
-- Usage:       @dnfs_servers
-- Notes:       Reads GV$DNFS_SERVERS and GV$DNFS_FILES. NFSVERSION exists from
--              12.1 (shown as n/a before). No rows: dNFS is not in use (see
--              @dnfs_check). Read-only.

define _dnfs_default_interval = 0
define _dnfs_default_count = 0
define _dnfs_loop_step = _dnfs_noop
define _dnfs_report = dnfs_servers_report
@@_dnfs_start.sql
-- What reads the views (dnfs_servers_report.sql) runs only on an open database:
-- mounted, its counts and sorts may need a temporary segment, which fails
-- there (Database Error Messages, ORA-01220: "Only in-memory sorts are
-- supported before the database is open"); _dnfs_start.sql then prints one
-- line naming the agent instead.
@@&_dnfs_report_step..sql
@@_dnfs_end.sql
