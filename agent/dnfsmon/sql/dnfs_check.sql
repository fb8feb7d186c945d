-- File name:   dnfs_check.sql
-- Purpose:     Is Direct NFS really in use? Per instance: the database files
--              not open through dNFS, the active network paths per filer,
--              the "Direct NFS:" lines of the alert log, relevant parameters,
--              and a verdict that names its evidence.
-- Usage:       @dnfs_check
-- Notes:       dNFS falls back to the kernel NFS client quietly: only the
--              alert log says so. The authoritative per-file check is the
--              anti-join of the data, temp, redo and control files
--              (GV$DATAFILE, GV$TEMPFILE, GV$LOGFILE, GV$CONTROLFILE) to the
--              files not open through dNFS (GV$DNFS_FILES). In a CDB (12.1+),
--              the data and temp files of a PDB not open on an instance
--              (GV$CONTAINERS.OPEN_MODE MOUNTED: PDB-to-instance affinity on
--              RAC) are not counted for that instance, and the verdict says how
--              many; this needs SELECT on SYS.GV_$CONTAINERS (without it they
--              are counted, and the script says so). Redo logs: only the
--              online logs of the instance's own thread (GV$LOG.THREAD# =
--              GV$INSTANCE.THREAD#), not other RAC threads' or standby logs;
--              none on a physical standby or far sync (DATABASE_ROLE), whose
--              online logs are unused: the verdict says so. A file on local disk
--              or ASM is listed too: you judge. A file no process has opened
--              yet (an unused temp file) is listed until one does.
--              Reading GV$DNFS_CHANNELS resets its send/receive counts for
--              the next reader (the agent's next interval shows fewer).
--              Alert log: V$DIAG_ALERT_EXT from 12.2 (SELECT on
--              SYS.V_$DIAG_ALERT_EXT; slow on a large log.xml; this
--              instance only); on 11.2 and 12.1 grep the text alert log on
--              the host for "Direct NFS" and "ODM". Read-only.

define _dnfs_default_interval = 0
define _dnfs_default_count = 0
define _dnfs_loop_step = _dnfs_noop
define _dnfs_report = dnfs_check_report
@@_dnfs_start.sql
-- What reads the views (dnfs_check_report.sql) runs only on an open database:
-- mounted, its counts and sorts may need a temporary segment, which fails
-- there (Database Error Messages, ORA-01220: "Only in-memory sorts are
-- supported before the database is open"); _dnfs_start.sql then prints one
-- line naming the agent instead.
define _dnfs_alert_part = _dnfs_noop
define _dnfs_alert_message = ""
define _dnfs_verdict_part = _dnfs_noop
@@&_dnfs_report_step..sql
prompt &_dnfs_alert_message
@@&_dnfs_alert_part..sql
@@&_dnfs_verdict_part..sql
undefine _dnfs_alert_part _dnfs_alert_message _dnfs_verdict_part
@@_dnfs_end.sql
