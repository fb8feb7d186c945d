-- File name:   dnfs_iops.sql
-- Purpose:     Direct NFS read and write IOPS, MB/s and average I/O sizes per
--              instance, one line per instance as each interval ends.
-- Usage:       @dnfs_iops [interval_s] [count]
-- Examples:    @dnfs_iops            5 seconds, 12 times
--              @dnfs_iops 10 30      10 seconds, 30 times
-- Notes:       Reads GV$DNFS_STATS (11.2.0.4+) and GV$PROCESS; RAC: every
--              instance. Read-only: creates nothing in the database; keeps
--              its previous sample in SQL*Plus bind variables.
--              V$DNFS_STATS counts per Oracle process and a process's counters
--              vanish when it exits: each process (PNUM with its SPID and
--              SERIAL#) is diffed on its own, then the deltas are summed, so
--              processes coming and going never give negative or inflated
--              rates (a new process adds from its second interval; an exiting
--              one's last partial interval is lost).
--              Intervals are measured on the database clock (SYSTIMESTAMP).
--              18c+: sleeps with DBMS_SESSION.SLEEP; before 18c with
--              DBMS_LOCK.SLEEP, which needs EXECUTE on SYS.DBMS_LOCK.
--              Known limits: count is capped at 60 per run; MB = 2^20 bytes.

define _dnfs_default_interval = 5
define _dnfs_default_count = 12
@@_dnfs_start

variable dnfs_prev clob
variable dnfs_prev_t number
@@dnfs_iops_snapshot

column sample_time heading 'Time' format a8
column inst_id heading 'Inst' format 9999
column read_iops heading 'Read IOPS' format 9999990.9
column write_iops heading 'Write IOPS' format 9999990.9
column total_iops heading 'Total IOPS' format 9999990.9
column read_mbps heading 'Read MB/s' format 999990.99
column write_mbps heading 'Write MB/s' format 999990.99
column avg_read_kb heading 'KB/read' format 99990.9
column avg_write_kb heading 'KB/write' format 99990.9

prompt
prompt dNFS I/O per instance, every &_dnfs_interval s, &_dnfs_count times (database clock; processes diffed one by one)
prompt

define _dnfs_remaining = &_dnfs_count
define _dnfs_step = "dnfs_iops_step"
@@_dnfs_loop
@@_dnfs_end
