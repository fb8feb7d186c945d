-- File name:   _dnfs_end.sql (called by the other scripts; not run on its own)
-- Purpose:     Put back the SQL*Plus settings _dnfs_start.sql saved.

undefine 1 2 _dnfs_default_interval _dnfs_default_count _dnfs_interval _dnfs_count _dnfs_remaining _dnfs_step _dnfs_sleep
undefine _dnfs_nfsversion _dnfs_hist_view _dnfs_hist_bound
@dnfs_saved_settings.sql
