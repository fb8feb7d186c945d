-- File name:   _dnfs_end_amp.sql (called by _dnfs_end.sql)
-- Purpose:     Run the settings file where its name was substituted at the start,
--              that is where the DBA's DEFINE was & (SQL*Plus's default): with
--              DEFINE set back to &, so a settings file STORE SET could not write
--              (SP2-0310) leaves the DBA's own & rather than ^.

set define '&'
@&_dnfs_settings_used
