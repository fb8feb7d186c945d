-- File name:   dnfs_latency.sql
-- Purpose:     I/O wait events that time dNFS I/O (there is no dNFS-specific
--              event): waits/s and average ms per instance, and the histogram
--              of 'db file sequential read' (single-block read latency) for
--              each interval as it ends.
-- Usage:       @dnfs_latency [interval_s] [count]
-- Examples:    @dnfs_latency         5 seconds, 12 times
--              @dnfs_latency 60 10
-- Notes:       Reads GV$SYSTEM_EVENT (TIME_WAITED_MICRO: microsecond
--              resolution, not the centisecond TIME_WAITED) and
--              GV$EVENT_HISTOGRAM_MICRO from 12.1.0.2 (power-of-two buckets in
--              microseconds), GV$EVENT_HISTOGRAM (milliseconds) before.
--              Read-only; previous values are kept in bind variables.
--              An instance restarted during an interval shows no line for it.
--              Known limits: count is capped at 60 per run.

define _dnfs_default_interval = 5
define _dnfs_default_count = 12
@@_dnfs_start

variable dnfs_ev_prev clob
variable dnfs_hist_prev clob
variable dnfs_prev_t number
@@dnfs_latency_snapshot

column sample_time heading 'Time' format a8
column inst_id heading 'Inst' format 9999
column event heading 'Event' format a30
column waits_per_s heading 'Waits/s' format 9999990.9
column avg_ms heading 'Avg ms' format 99990.999
column fg_avg_ms heading 'FG avg ms' format 99990.999
column bucket heading 'Bucket (< µs)' format a14
column bucket_waits_per_s heading 'Waits/s' format 9999990.9
column pct heading '% waits' format 990.9

prompt
prompt I/O wait events per instance, every &_dnfs_interval s, &_dnfs_count times; then the 'db file sequential read' histogram
prompt

define _dnfs_remaining = &_dnfs_count
define _dnfs_step = "dnfs_latency_step"
@@_dnfs_loop
@@_dnfs_end
