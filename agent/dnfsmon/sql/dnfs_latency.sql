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
define _dnfs_report = dnfs_latency_report
define _dnfs_title = "I/O wait events per instance"
define _dnfs_title_note = "(then the histogram of db file sequential read; averages are per wait, see the header)"
@@_dnfs_start.sql

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
-- What reads the views (dnfs_latency_report.sql: the first snapshot, the loop and the whole
-- run's lines) runs only when the loop does: a refused run (an argument, no
-- sleep, a mounted database) reads no view (_dnfs_start.sql), and runs no
-- PL/SQL block: the binds are reset and their LOBs freed there, at its start
-- and its end. Mounted, a block calling DBMS_LOB (a stored package) fails,
-- and under a login.sql's WHENEVER SQLERROR EXIT would end the session before
-- _dnfs_end.sql puts the DBA's settings back. What an earlier run left is
-- freed by the next run whose loop runs.
@@&_dnfs_report_step..sql
@@_dnfs_end.sql
