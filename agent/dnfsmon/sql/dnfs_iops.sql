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
-- Bind variables belong to the SQL*Plus session and keep their values from
-- one script to the next (declaring one again is not documented to clear
-- it): start clean, or this run would diff against the previous run's last
-- snapshot (or the other looping script's clock), and stop after one
-- interval when the previous run ended with Ctrl-C.
-- The CLOB snapshots are freed first (dnfs_iops_free.sql: a CLOB bind's temporary
-- LOB stays allocated until freed), and again at the end.
@@dnfs_iops_free.sql
begin
    :dnfs_stop := null;
    :dnfs_prev_t := null;
    :dnfs_cur_t := null;
    :dnfs_cur_n := null;
    :dnfs_cur_clock := null;
    :dnfs_iv_us := null;
    :dnfs_run_us := null;
    :dnfs_run_next_us := null;
end;
/
@@dnfs_iops_snapshot.sql
@@dnfs_iops_shift.sql

column dnfs_sample_time heading 'Time' format a8
column dnfs_inst_id heading 'Inst' format 9999
column read_iops heading 'NFS reads/s' format 9999990.9
column write_iops heading 'NFS writes/s' format 9999990.9
column total_iops heading 'NFS r+w/s' format 9999990.9
column read_mbps heading 'Read MiB/s' format 999990.99
column write_mbps heading 'Write MiB/s' format 999990.99
column avg_read_kb heading 'KiB/NFS read' format 99990.9
column avg_write_kb heading 'KiB/NFS write' format 99990.9
column note heading 'Note' format a100

prompt &_dnfs_header

@@_dnfs_loop.sql

-- The whole run, as a DBA reads after a run: each instance's intervals added
-- up (Time 'run'; an instance seen in only some of them shows its seconds) and
-- on RAC the instances together (Time 'total'); nothing when no interval ran
-- (a refused run, or one stopped before its first snapshot).
column dnfs_run_note heading 'Whole run' format a80
select 'Average over the whole run: ' || round(:dnfs_run_us / 1000000, 1) || ' s' as dnfs_run_note
from dual
where :dnfs_run_us > 0;
column dnfs_run_note clear
define _dnfs_kind = "'run'"
define _dnfs_from_us = dnfs_run_us
define _dnfs_label = "'run'"
@@dnfs_iops_print.sql
undefine _dnfs_kind _dnfs_from_us _dnfs_label
column dnfs_sample_time clear
column dnfs_inst_id clear
column read_iops clear
column write_iops clear
column total_iops clear
column read_mbps clear
column write_mbps clear
column avg_read_kb clear
column avg_write_kb clear
column note clear
@@dnfs_iops_free.sql
@@_dnfs_end.sql
