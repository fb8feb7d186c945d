-- File name:   _dnfs_end.sql (called by the other scripts; not run on its own)
-- Purpose:     Put back the SQL*Plus settings _dnfs_start.sql saved. STORE SET
--              saves SET variables only, so the COLUMN settings of
--              _dnfs_start.sql and _dnfs_next.sql and the pack's substitution
--              variables are cleared here; each script clears its own columns.

column 1 clear
column 2 clear
column mounted clear
column all_objects_source clear
column interval_s clear
column sample_count clear
column arg_message clear
column sleep_call clear
column can_sleep clear
column sleep_message clear
column nfsversion_expr clear
column reconnects_expr clear
column hist_view clear
column hist_bound clear
column first_step clear
column report_step clear
column dnfs_title clear
column dnfs_title_note clear
column dnfs_header clear
column next_step clear
column remaining clear
undefine 1 2 _dnfs_default_interval _dnfs_default_count _dnfs_loop_step _dnfs_interval _dnfs_count _dnfs_remaining
undefine _dnfs_step _dnfs_sleep _dnfs_can_sleep _dnfs_sleep_message _dnfs_nfsversion _dnfs_reconnects _dnfs_hist_view _dnfs_hist_bound
undefine _dnfs_message _dnfs_io_events _dnfs_other_events _dnfs_title _dnfs_title_note _dnfs_header _dnfs_lob
undefine _dnfs_lob_cur _dnfs_lob_prev _dnfs_lob_cur_t _dnfs_lob_prev_t
undefine _dnfs_mounted _dnfs_all_objects _dnfs_report _dnfs_report_step
column dnfs_settings clear
-- The file _dnfs_start.sql's STORE SET wrote (its name: see there), then its
-- variables, on a line with nothing to substitute (the DEFINE put back may be OFF).
-- Where the DBA's & did not substitute, the name is "&_dnfs_settings" as written:
-- the guide does not say whether a value holding the DEFINE character is
-- substituted again, so the name is read with DEFINE set to ^, which no file
-- name of the pack holds (SQL*Plus User's Guide and Reference, SET DEFINE; the
-- checker's substitution-rescan rule). The file run puts the DBA's DEFINE back.
-- Where the name was substituted, the DBA's DEFINE was & (the default), and the
-- file is run with & (_dnfs_end_amp.sql): if STORE SET could not write it (SP2-0310
-- here), DEFINE is still the DBA's &, not ^. SQL*Plus has no command that reads a
-- SET value into a variable (STORE SET is the one that records them: STORE;
-- SHOW only displays), so only that case can be told from the name.
set define '^'
column dnfs_restore new_value _dnfs_restore noprint
define _dnfs_restore = _dnfs_end_caret
select case when instr('^_dnfs_settings_used', chr(38)) > 0 then '_dnfs_end_caret' else '_dnfs_end_amp' end as dnfs_restore
from dual;
column dnfs_restore clear
@@^_dnfs_restore..sql
undefine _dnfs_settings _dnfs_settings_used _dnfs_restore
