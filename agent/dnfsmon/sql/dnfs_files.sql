-- File name:   dnfs_files.sql
-- Purpose:     Files open through dNFS, per instance and filer, with their
--              size and how many processes have them open.
-- Usage:       @dnfs_files
-- Notes:       Reads GV$DNFS_FILES (one row per process and file) and
--              GV$DNFS_SERVERS. A data file on an NFS mount missing here is
--              read through the kernel NFS client: see @dnfs_check. Read-only.

define _dnfs_default_interval = 0
define _dnfs_default_count = 0
define _dnfs_loop_step = _dnfs_noop
define _dnfs_report = dnfs_files_report
@@_dnfs_start.sql
-- What reads the views (dnfs_files_report.sql) runs only on an open database:
-- mounted, its counts and sorts may need a temporary segment, which fails
-- there (Database Error Messages, ORA-01220: "Only in-memory sorts are
-- supported before the database is open"); _dnfs_start.sql then prints one
-- line naming the agent instead.
@@&_dnfs_report_step..sql
@@_dnfs_end.sql
