-- File name:   dnfs_iops_step.sql (called by _dnfs_loop.sql for dnfs_iops.sql)
-- Purpose:     Sleep one interval, take the next snapshot, diff it against the
--              previous one and add the interval to the run's totals
--              (dnfs_iops_accumulate.sql), print the interval per instance
--              (dnfs_iops_print.sql; arithmetic only: no view is read here),
--              and make the new snapshot the previous one and the new totals
--              the run's.

@@_dnfs_sleep.sql
@@dnfs_iops_snapshot.sql

-- The interval that just ended, per instance, added to the run's totals,
-- which become the run's (freed and copied as a snapshot is).
@@dnfs_iops_accumulate.sql
define _dnfs_lob_cur = dnfs_run_next
define _dnfs_lob_prev = dnfs_run
define _dnfs_lob_cur_t = dnfs_run_next_us
define _dnfs_lob_prev_t = dnfs_run_us
@@_dnfs_shift_lob.sql
define _dnfs_kind = "'interval'"
define _dnfs_from_us = dnfs_iv_us
define _dnfs_label = ":dnfs_cur_clock"
@@dnfs_iops_print.sql

select :dnfs_cur_clock || ' No rows in GV$DNFS_STATS: no process does dNFS I/O (see @dnfs_check).' as note
from dual
where :dnfs_cur_n = 0;

@@dnfs_iops_shift.sql

set heading off newpage none
@@_dnfs_next.sql
