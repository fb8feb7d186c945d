-- File name:   dnfs_check_alert.sql (called by dnfs_check.sql from 12.2 when
--              V$DIAG_ALERT_EXT is readable)
-- Purpose:     The alert log's "Direct NFS" lines since this instance
--              started: the ODM library line ("Oracle instance running with
--              ODM: Oracle Direct NFS ODM Library Version ..."), mount and
--              channel failures, fallbacks to kernel NFS.

column logged heading 'Logged' format a19
column dnfs_message_text heading 'Alert log (this instance, since startup)' format a130
prompt Alert log lines mentioning Direct NFS (V$DIAG_ALERT_EXT)
select
    message_text as dnfs_message_text,
    to_char(originating_timestamp, 'YYYY-MM-DD HH24:MI:SS') as logged
from v$diag_alert_ext
where
    message_text like '%Direct NFS%'
    -- STARTUP_TIME is a DATE in the server's time: compare as DATEs, not in the session's time zone.
    and cast(originating_timestamp as date) >= (select i.startup_time from v$instance i)
order by originating_timestamp;
column logged clear
column dnfs_message_text clear
