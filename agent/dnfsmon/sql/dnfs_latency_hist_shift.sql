-- File name:   dnfs_latency_hist_shift.sql (called by dnfs_latency.sql and the histogram step)
-- Purpose:     Make the snapshot just taken (:dnfs_hist_cur, :dnfs_hist_cur_t) the previous
--              one (:dnfs_hist_prev, :dnfs_hist_prev_t); _dnfs_shift_lob.sql frees and copies.

define _dnfs_lob_cur = dnfs_hist_cur
define _dnfs_lob_prev = dnfs_hist_prev
define _dnfs_lob_cur_t = dnfs_hist_cur_t
define _dnfs_lob_prev_t = dnfs_hist_prev_t
@@_dnfs_shift_lob.sql
