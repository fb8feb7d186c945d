-- File name:   _dnfs_start.sql (called by the other scripts; not run on its own)
-- Purpose:     Save the session's SQL*Plus settings, read the positional
--              arguments with defaults, and set the release switches.
-- Usage:       define _dnfs_default_interval = 5
--              define _dnfs_default_count = 12
--              @@_dnfs_start          (no arguments: the caller's &1 and &2 stay
--                                      as the user gave them)
-- Notes:       STORE SET writes the current settings to dnfs_saved_settings.sql
--              in the current directory (a client file; nothing is created in
--              the database); _dnfs_end.sql runs it to put them back.

store set dnfs_saved_settings.sql replace
set termout off verify off feedback off heading on pagesize 50000 linesize 200 trimspool on tab off

-- Optional positional arguments: a query that returns no rows defines the
-- ones not given as empty, and leaves the given ones alone.
column 1 new_value 1 noprint
column 2 new_value 2 noprint
select
    null as "1",
    null as "2"
from dual
where 1 = 0;

column interval_s new_value _dnfs_interval noprint
column sample_count new_value _dnfs_count noprint
select
    to_number(nvl('&1', '&_dnfs_default_interval')) as interval_s,
    least(to_number(nvl('&2', '&_dnfs_default_count')), 60) as sample_count
from dual;

-- Release switches: DBMS_SESSION.SLEEP from 18c (DBMS_LOCK.SLEEP before,
-- which needs EXECUTE on SYS.DBMS_LOCK); V$DNFS_SERVERS.NFSVERSION from 12.1;
-- the microsecond event histogram from 12.1.0.2.
column sleep_call new_value _dnfs_sleep noprint
column nfsversion new_value _dnfs_nfsversion noprint
column hist_view new_value _dnfs_hist_view noprint
column hist_bound new_value _dnfs_hist_bound noprint
select
    case
        when to_number(substr(version, 1, instr(version, '.') - 1)) >= 18
            then 'dbms_session.sleep'
        else 'dbms_lock.sleep'
    end as sleep_call,
    case
        when to_number(substr(version, 1, instr(version, '.') - 1)) >= 12
            then 's.nfsversion'
        else '''n/a'''
    end as nfsversion,
    case
        when version >= '12.1.0.2' or to_number(substr(version, 1, instr(version, '.') - 1)) >= 18
            then 'gv$event_histogram_micro'
        else 'gv$event_histogram'
    end as hist_view,
    case
        when version >= '12.1.0.2' or to_number(substr(version, 1, instr(version, '.') - 1)) >= 18
            then 'wait_time_micro'
        else 'wait_time_milli * 1000'
    end as hist_bound
from v$instance;

define _dnfs_step = "_dnfs_noop"
set termout on
