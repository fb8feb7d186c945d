-- File name:   dnfs_iops_report.sql (called by dnfs_iops.sql when its loop runs)
-- Purpose:     The first snapshot, the loop and the whole run's lines of
--              dnfs_iops.sql (see there).

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
-- TO_CHAR with a format model: a number concatenated as it is would take the
-- session's NLS_NUMERIC_CHARACTERS ("60,5 s"), the '.' in a model never does
-- (SQL Language Reference, Format Models: the period "returns a decimal point").
select 'Average over the whole run: ' || to_char(round(:dnfs_run_us / 1000000, 1), 'FM9999990.0') || ' s' as dnfs_run_note
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
-- The snapshots' LOBs freed (see the start of this file).
@@dnfs_iops_free.sql
