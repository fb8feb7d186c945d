-- File name:   dnfs_latency.sql
-- Purpose:     I/O wait events that time dNFS I/O (there is no dNFS-specific
--              event), with 'log file sync' and the temp I/O events beside
--              them: waits/s and average ms per wait per instance, and the
--              histogram of 'db file sequential read' (single-block read
--              latency) for each interval as it ends.
-- Usage:       @dnfs_latency [interval_s] [count]
-- Examples:    @dnfs_latency         5 seconds, 12 times
--              @dnfs_latency 60 10
-- Notes:       Reads GV$SYSTEM_EVENT (TIME_WAITED_MICRO: microsecond
--              resolution, not the centisecond TIME_WAITED) and
--              GV$EVENT_HISTOGRAM_MICRO from 12.1.0.2 (power-of-two buckets in
--              microseconds), GV$EVENT_HISTOGRAM (milliseconds) before,
--              each with GV$INSTANCE (STARTUP_TIME, to tell a restart).
--              Only 'db file sequential read' and 'control file sequential
--              read' are close to per-I/O latency. With asynchronous I/O,
--              'db file parallel write' and 'log file parallel write' time a
--              batch, and 'direct path read/write' time only the wait for I/O
--              not already complete: their waits/s are not I/O per second and
--              their averages are not per-I/O service times.
--              Without the histogram view's grant the events still print and
--              the histogram is skipped with one line naming the grant.
--              Read-only; two snapshots per view are kept in bind variables.
--              An instance restarted during an interval (its STARTUP_TIME in
--              GV$INSTANCE changed) shows no line for it, in the events and in
--              the histogram, and one line says so.
--              After the loop, the whole run: each event's waits/s and average
--              per instance from the first snapshot to the last, and on RAC
--              the instances together (a total line per event, also printed
--              each interval); an instance restarted during the run has no
--              run line.
--              Known limits: count is capped at 60 per run (said when applied).

define _dnfs_default_interval = 5
define _dnfs_default_count = 12
define _dnfs_loop_step = dnfs_latency_step
define _dnfs_title = "I/O wait events per instance"
define _dnfs_title_note = "(then the histogram of db file sequential read; averages are per wait, see the header)"
@@_dnfs_start.sql

-- The histogram part runs only when its view is readable (ALL_OBJECTS lists
-- a SYS view only to a user who may select from it; mounted, its stand-in
-- lists none, and the loop does not run: _dnfs_start.sql).
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
        when count(*) = 0 and &_dnfs_mounted = 0
            then 'Histogram skipped: GRANT SELECT ON SYS.' || upper(replace('&_dnfs_hist_view', '$', '_$')) || ' TO ' || user
    end as hist_message
from &_dnfs_all_objects
where owner = 'SYS' and object_name = upper(replace('&_dnfs_hist_view', '$', '_$'));
prompt &_dnfs_hist_message

variable dnfs_stop number
variable dnfs_ev_prev clob
variable dnfs_ev_cur clob
variable dnfs_prev_t number
variable dnfs_cur_t number
variable dnfs_cur_clock varchar2(8)
variable dnfs_hist_prev clob
variable dnfs_hist_cur clob
variable dnfs_hist_prev_t number
variable dnfs_hist_cur_t number
variable dnfs_ev_first clob
variable dnfs_first_t number
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
select 'Average over the whole run: ' || round(:dnfs_cur_t - :dnfs_first_t, 1) || ' s' as dnfs_run_note
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
@@dnfs_latency_free.sql
@@_dnfs_end.sql
