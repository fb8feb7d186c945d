-- File name:   dnfs_latency_step.sql (called by _dnfs_loop.sql for dnfs_latency.sql)
-- Purpose:     Sleep one interval, take the next events snapshot, print the
--              interval between the two snapshots (dnfs_latency_print.sql:
--              arithmetic only, no view is read), then the histogram part when
--              it runs.

@@_dnfs_sleep.sql
@@dnfs_latency_snapshot.sql

-- The interval that just ended: from the previous snapshot to this one.
define _dnfs_from = dnfs_ev_prev
define _dnfs_from_t = dnfs_prev_t
define _dnfs_label = ":dnfs_cur_clock"
@@dnfs_latency_print.sql

@@dnfs_latency_shift.sql

@@&_dnfs_hist_step..sql
@@_dnfs_next.sql
