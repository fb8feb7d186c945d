-- File name:   dnfs_iops.sql
-- Purpose:     Direct NFS reads and writes per second (NFS READ and WRITE
--              calls, not database I/O requests), MiB/s and KiB per NFS call
--              per instance, one line per instance as each interval ends (on RAC
--              then a "total" line: the instances summed over that interval),
--              and after the last one the whole run's average per instance
--              (and its RAC total): the intervals' per-process diffs added up
--              over their seconds, since processes exit during a run.
-- Usage:       @dnfs_iops [interval_s] [count]
-- Examples:    @dnfs_iops            5 seconds, 12 times
--              @dnfs_iops 10 30      10 seconds, 30 times
-- Notes:       Reads GV$DNFS_STATS (11.2.0.4+) and GV$PROCESS; RAC: every
--              instance. Read-only: creates nothing in the database; keeps
--              two snapshots in SQL*Plus bind variables.
--              NFS_READ counts NFS READ calls: one 1 MiB multiblock read from
--              a filer with rtmax 64 KiB is 16 of them, so these are not the
--              'physical read total IO requests' of V$SYSSTAT, and KiB per
--              NFS read is at most rtmax (see @dnfs_servers).
--              V$DNFS_STATS counts per Oracle process and a process's counters
--              vanish when it exits: each process (PNUM with its SPID and
--              SERIAL#) is diffed on its own, then the deltas are summed, so
--              processes coming and going never give negative or inflated
--              rates (a process that started since the previous snapshot
--              counts from zero, assuming its counters started at zero with
--              it, which the pack does not check: README.md, "Intervals"; an
--              exiting one's last partial interval is lost).
--              Each interval is the time between two snapshots, each read
--              with the database clock (SYSTIMESTAMP) in the same statement;
--              intervals follow each other with no gap.
--              18c+: sleeps with DBMS_SESSION.SLEEP; before 18c with
--              DBMS_LOCK.SLEEP, which needs EXECUTE on SYS.DBMS_LOCK (without
--              it the script says so and runs nothing). Ctrl-C during a sleep
--              ends the run after that interval and puts the settings back.
--              Known limits: count is capped at 60 per run (said when
--              applied); MiB = 2^20 bytes.

define _dnfs_default_interval = 5
define _dnfs_default_count = 12
define _dnfs_loop_step = dnfs_iops_step
define _dnfs_report = dnfs_iops_report
define _dnfs_title = "dNFS NFS READ/WRITE calls per instance"
define _dnfs_title_note = "(database clock; processes diffed one by one)"
@@_dnfs_start.sql

variable dnfs_stop number
variable dnfs_prev clob
variable dnfs_prev_t number
variable dnfs_cur clob
variable dnfs_cur_t number
variable dnfs_cur_n number
variable dnfs_cur_clock varchar2(8)
variable dnfs_iv_us number
variable dnfs_run clob
variable dnfs_run_us number
variable dnfs_run_next clob
variable dnfs_run_next_us number
-- What reads the views (dnfs_iops_report.sql: the first snapshot, the loop and the whole
-- run's lines) runs only when the loop does: a refused run (an argument, no
-- sleep, a mounted database) reads no view (_dnfs_start.sql), and runs no
-- PL/SQL block: the binds are reset and their LOBs freed there, at its start
-- and its end. Mounted, a block calling DBMS_LOB (a stored package) fails,
-- and under a login.sql's WHENEVER SQLERROR EXIT would end the session before
-- _dnfs_end.sql puts the DBA's settings back. What an earlier run left is
-- freed by the next run whose loop runs.
@@&_dnfs_report_step..sql
@@_dnfs_end.sql
