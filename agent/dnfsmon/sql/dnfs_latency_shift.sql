-- File name:   dnfs_latency_shift.sql (called by dnfs_latency.sql and its step)
-- Purpose:     Make the snapshot just taken (:dnfs_ev_cur, :dnfs_cur_t) the previous
--              one (:dnfs_ev_prev, :dnfs_prev_t); _dnfs_shift_lob.sql frees and copies.

define _dnfs_lob_cur = dnfs_ev_cur
define _dnfs_lob_prev = dnfs_ev_prev
define _dnfs_lob_cur_t = dnfs_cur_t
define _dnfs_lob_prev_t = dnfs_prev_t
@@_dnfs_shift_lob.sql
