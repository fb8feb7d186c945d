-- File name:   dnfs_latency_report.sql (called by dnfs_latency.sql when its loop runs)
-- Purpose:     The histogram's grant probe, the first snapshots, the loop and
--              the whole run's lines of dnfs_latency.sql (see there).

-- Bind variables belong to the SQL*Plus session and keep their values from
-- one script to the next (declaring one again is not documented to clear
-- it): start clean, or this run would diff against the previous run's last
-- snapshot (or the other looping script's clock), and stop after one
-- interval when the previous run ended with Ctrl-C.
-- The CLOB snapshots are freed first (dnfs_latency_free.sql: a CLOB bind's temporary
-- LOB stays allocated until freed), and again at the end.
@@dnfs_latency_free.sql
begin
    :dnfs_stop := null;
    :dnfs_prev_t := null;
    :dnfs_cur_t := null;
    :dnfs_cur_clock := null;
    :dnfs_hist_prev_t := null;
    :dnfs_hist_cur_t := null;
    :dnfs_first_t := null;
end;
/
-- The histogram part runs only when its view is readable (ALL_OBJECTS lists
-- a SYS view only to a user who may select from it). Mounted, this file does
-- not run (_dnfs_start.sql).
define _dnfs_hist_step = _dnfs_noop
define _dnfs_hist_snapshot = _dnfs_noop
define _dnfs_hist_shift = _dnfs_noop
define _dnfs_hist_message = ""
column hist_step new_value _dnfs_hist_step noprint
column hist_snapshot new_value _dnfs_hist_snapshot noprint
column hist_shift new_value _dnfs_hist_shift noprint
column hist_message new_value _dnfs_hist_message noprint
select
    case when count(*) > 0 then 'dnfs_latency_hist_step' else '_dnfs_noop' end as hist_step,
    case when count(*) > 0 then 'dnfs_latency_hist_snapshot' else '_dnfs_noop' end as hist_snapshot,
    case when count(*) > 0 then 'dnfs_latency_hist_shift' else '_dnfs_noop' end as hist_shift,
    case
        when count(*) = 0
            then 'Histogram skipped: GRANT SELECT ON SYS.' || upper(replace('&_dnfs_hist_view', '$', '_$')) || ' TO ' || user
    end as hist_message
from &_dnfs_all_objects
where owner = 'SYS' and object_name = upper(replace('&_dnfs_hist_view', '$', '_$'));
prompt &_dnfs_hist_message

@@dnfs_latency_snapshot.sql
@@dnfs_latency_shift.sql
-- A copy of the first snapshot too, for the whole run's lines after the loop.
define _dnfs_lob_prev = dnfs_ev_first
define _dnfs_lob_prev_t = dnfs_first_t
@@_dnfs_shift_lob.sql
@@&_dnfs_hist_snapshot..sql
@@&_dnfs_hist_shift..sql

column dnfs_sample_time heading 'Time' format a8
column dnfs_inst_id heading 'Inst' format 9999
column dnfs_event heading 'Event' format a30
column waits_per_s heading 'Waits/s' format 9999990.9
column avg_ms heading 'Avg ms/wait' format 99990.999
column fg_avg_ms heading 'FG ms/wait' format 99990.999
column bucket heading 'Bucket (< us)' format a14
column bucket_waits_per_s heading 'Waits/s' format 9999990.9
column pct heading '% waits' format 990.9
column dnfs_restart_note heading 'Note' format a110

prompt &_dnfs_header

@@_dnfs_loop.sql

-- The whole run, as a DBA reads after a run: from the first snapshot to the last,
-- per instance and event (Time 'run') and on RAC the instances together (Time
-- 'total'); nothing when no interval ran (a refused run, or one stopped before
-- its first snapshot).
column dnfs_run_note heading 'Whole run' format a80
-- TO_CHAR with a format model, as dnfs_iops_report.sql does (a decimal point
-- whatever the session's NLS_NUMERIC_CHARACTERS).
select 'Average over the whole run: ' || to_char(round(:dnfs_cur_t - :dnfs_first_t, 1), 'FM9999990.0') || ' s' as dnfs_run_note
from dual
where :dnfs_cur_t > :dnfs_first_t;
column dnfs_run_note clear
define _dnfs_from = dnfs_ev_first
define _dnfs_from_t = dnfs_first_t
define _dnfs_label = "'run'"
@@dnfs_latency_print.sql
undefine _dnfs_from _dnfs_from_t _dnfs_label
column dnfs_sample_time clear
column dnfs_inst_id clear
column dnfs_event clear
column waits_per_s clear
column avg_ms clear
column fg_avg_ms clear
column bucket clear
column bucket_waits_per_s clear
column pct clear
column dnfs_restart_note clear
column hist_step clear
column hist_snapshot clear
column hist_shift clear
column hist_message clear
undefine _dnfs_hist_step _dnfs_hist_snapshot _dnfs_hist_shift _dnfs_hist_message
-- The snapshots' LOBs freed (see the start of this file).
@@dnfs_latency_free.sql
