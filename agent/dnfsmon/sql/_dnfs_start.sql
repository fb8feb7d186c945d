-- File name:   _dnfs_start.sql (called by the other scripts; not run on its own)
-- Purpose:     Save the session's SQL*Plus settings, set the pack's own, read
--              the positional arguments with defaults, set the release
--              switches and the I/O wait-event list, and choose the first step.
-- Usage:       define _dnfs_default_interval = 5
--              define _dnfs_default_count = 12
--              define _dnfs_loop_step = dnfs_iops_step   (_dnfs_noop: no loop)
--              define _dnfs_title = "What each line shows"  (looping scripts)
--              define _dnfs_title_note = "(how it is measured)"
--              ...; prompt &_dnfs_header  (empty when nothing runs)
--              @@_dnfs_start.sql      (no arguments: the caller's first and
--                                      second arguments stay as given)
-- Notes:       STORE SET writes the current settings to a file of the current
--              directory named for this session (see below; a client file:
--              nothing is created in the database; the directory must be
--              writable); _dnfs_end.sql runs it to put them back. TERMOUT stays ON: an error here is
--              shown, and every variable below has a safe value before the
--              query that may change it.
--              Every @@ of the pack names its .sql: a name without an extension
--              gets SET SUFFIX's, which a login.sql may have changed (SQL*Plus
--              User's Guide and Reference, "@" and "SET SUF[FIX]").

-- The settings file is named for the database, instance, session (SID) and host, so
-- two sessions that run the pack from one directory (two DBAs, or one DBA's two
-- windows) never overwrite each other's settings. Nothing is changed before STORE
-- SET saves them: the name comes from a query run as the session is set, written
-- so SQLCASE (upper-case literals) and SQLTERMINATOR (/ runs it) do not change it;
-- PAUSE ON waits, and a TTITLE prints, once there. Where the ampersand does not
-- substitute (SET DEFINE OFF or another character) STORE SET writes the file
-- under the name as written on its line, with SET SUFFIX's extension (shared by
-- such sessions: README.md), and _dnfs_settings_used keeps that
-- name too; _dnfs_end.sql reads it with a DEFINE character the name does not
-- hold, so nothing rests on whether SQL*Plus substitutes a value again.
-- (sqlfluff's oracle dialect does not take a / alone as the end of a statement without ;.)
-- noqa: disable=PRS
define _dnfs_settings = dnfs_saved_settings.sql
column dnfs_settings new_value _dnfs_settings noprint
select
    lower(
        'DNFS_SAVED_SETTINGS_' || sys_context('USERENV', 'DB_NAME') || '_' || sys_context('USERENV', 'INSTANCE')
        || '_' || sys_context('USERENV', 'SID') || '_' || sys_context('USERENV', 'SERVER_HOST') || '.SQL'
    ) as dnfs_settings
from dual
/
-- noqa: enable=PRS
store set &_dnfs_settings replace
define _dnfs_settings_used = "&_dnfs_settings"
-- A login.sql may change what the pack relies on: SET DEFINE OFF would leave the loop's
-- step name unsubstituted (SP2-0310 at each step), SQLCASE UPPER would
-- upper-case the event names, PAUSE ON would wait at every query, a TTITLE would print
-- above every query. STORE SET saves these and _dnfs_end restores them (SQL*Plus User's
-- Guide and Reference, "SET System Variable Summary" and STORE); TTITLE and BTITLE it
-- does not save, so they are switched off here (SQL*Plus User's Guide, TTITLE).
set define '&' concat '.' sqlterminator ';' pause off sqlcase mixed
ttitle off
btitle off
set verify off feedback off heading on pagesize 50000 linesize 200 trimspool on tab off
set sqlblanklines on echo off timing off autoprint off autotrace off serveroutput off newpage 1 numformat ""

-- The wait events dNFS I/O is timed under, and those a DBA reads beside them
-- (commit, temp I/O): the one list of the pack, in two variables because a
-- substitution variable holds at most 240 characters (SQL*Plus User's Guide
-- and Reference, "SQL*Plus Limits"); a test keeps them equal to the agent's.
define _dnfs_io_events = "'db file sequential read', 'db file scattered read', 'db file parallel read'"
define _dnfs_io_events = "&_dnfs_io_events, 'direct path read', 'direct path write', 'log file parallel write'"
define _dnfs_io_events = "&_dnfs_io_events, 'db file parallel write', 'control file sequential read'"
define _dnfs_other_events = "'log file sync', 'direct path read temp', 'direct path write temp'"

-- Safe values first: a query below that fails leaves these, never an
-- undefined variable that SQL*Plus would prompt for.
define _dnfs_interval = &_dnfs_default_interval
define _dnfs_count = &_dnfs_default_count
define _dnfs_sleep = dbms_session.sleep
define _dnfs_can_sleep = 0
define _dnfs_sleep_message = ""
define _dnfs_nfsversion = "'n/a'"
define _dnfs_reconnects = "to_number(null)"
define _dnfs_hist_view = gv$event_histogram
define _dnfs_hist_bound = "wait_time_milli * 1000"
define _dnfs_message = ""
define _dnfs_step = _dnfs_noop
define _dnfs_report_step = _dnfs_noop
define _dnfs_header = ""

-- Optional positional arguments: a query that returns no rows defines the
-- ones not given as empty, and leaves the given ones alone. The same for the
-- title the one-shot scripts do not define.
column 1 new_value 1 noprint
column 2 new_value 2 noprint
column dnfs_title new_value _dnfs_title noprint
column dnfs_title_note new_value _dnfs_title_note noprint
select
    null as "1",
    null as "2",
    null as dnfs_title,
    null as dnfs_title_note
from dual
where 1 = 0;

-- The arguments of the looping scripts: whole numbers, interval 1 to 3600 s
-- (DBMS_SESSION.SLEEP's limit), count 1 to 60 (the loop's length); anything
-- else is refused with one line. The one-shot scripts (defaults 0) take none.
column interval_s new_value _dnfs_interval noprint
column sample_count new_value _dnfs_count noprint
column arg_message new_value _dnfs_message noprint
select
    case
        when not regexp_like(nvl('&1', '&_dnfs_default_interval'), '^[0-9]{1,4}$') then 0
        when to_number(nvl('&1', '&_dnfs_default_interval')) > 3600 then 0
        else to_number(nvl('&1', '&_dnfs_default_interval'))
    end as interval_s,
    case
        when not regexp_like(nvl('&2', '&_dnfs_default_count'), '^[0-9]{1,6}$') then 0
        else least(to_number(nvl('&2', '&_dnfs_default_count')), 60)
    end as sample_count,
    case
        when '&_dnfs_default_count' = '0' then ''
        when not regexp_like(nvl('&1', '&_dnfs_default_interval'), '^[0-9]{1,4}$')
            then
                'Interval "&1" is not a whole number of seconds from 1 to 3600: nothing run'
                || ' (left from an earlier script? undefine 1 2).'
        when to_number(nvl('&1', '&_dnfs_default_interval')) not between 1 and 3600
            then 'Interval &1 is outside 1 to 3600 seconds: nothing run.'
        when not regexp_like(nvl('&2', '&_dnfs_default_count'), '^[0-9]{1,6}$')
            then
                'Count "&2" is not a whole number from 1 to 60: nothing run (left from an earlier script?'
                || ' undefine 1 2).'
        when to_number(nvl('&2', '&_dnfs_default_count')) < 1
            then 'Count &2 is below 1: nothing run.'
        when to_number(nvl('&2', '&_dnfs_default_count')) > 60
            then 'Count &2 capped at 60, the most one run does.'
    end as arg_message
from dual;

-- Mounted, not open (a physical standby without Active Data Guard, an
-- instance being started): only fixed tables and views answer, a dictionary
-- view such as ALL_OBJECTS fails with ORA-01219 (Database Error Messages,
-- ORA-01219: "queries allowed on fixed tables or views only"), so the probes
-- of the pack read an empty stand-in for it (V$DATABASE.OPEN_MODE, a fixed
-- view: MOUNTED, READ WRITE, READ ONLY, READ ONLY WITH APPLY; Oracle Database
-- Reference, V$DATABASE), of this instance: another RAC instance may be open.
-- A PDB left MOUNTED in an open CDB is not seen here (sql/README.md, "On a
-- mounted database"). The loops sleep with a stored package, and then
-- refuse with one line. The one-shot scripts run and sort in memory: a sort
-- over GV$DNFS_FILES takes processes x files rows, and one that needs a
-- temporary segment fails with ORA-01220 (sql/README.md, "On a mounted
-- database").
define _dnfs_mounted = 0
define _dnfs_all_objects = all_objects
column mounted new_value _dnfs_mounted noprint
column all_objects_source new_value _dnfs_all_objects noprint
select
    case when open_mode = 'MOUNTED' then 1 else 0 end as mounted,
    case
        when open_mode = 'MOUNTED'
            then '(select ''SYS'' as owner, ''NONE'' as object_name from dual where 1 = 0)'
        else 'all_objects'
    end as all_objects_source
from v$database;

-- Release switches: DBMS_SESSION.SLEEP from 18c where the user may execute
-- it (EXECUTE is granted to PUBLIC, but hardened databases revoke it), else
-- DBMS_LOCK.SLEEP, which needs EXECUTE on SYS.DBMS_LOCK (ALL_OBJECTS lists a
-- package only to a user who may execute it: without either the loop refuses
-- to run rather than print intervals a few milliseconds long, and names the
-- grant); V$DNFS_SERVERS.NFSVERSION from
-- 12.1; the microsecond event histogram from 12.1.0.2; V$DNFS_CHANNELS
-- reconnects: RECO in 11.2.0.4, SPRECO + DPRECO from 12.1.0.2, none between.
column sleep_call new_value _dnfs_sleep noprint
column can_sleep new_value _dnfs_can_sleep noprint
column sleep_message new_value _dnfs_sleep_message noprint
column nfsversion_expr new_value _dnfs_nfsversion noprint
column reconnects_expr new_value _dnfs_reconnects noprint
column hist_view new_value _dnfs_hist_view noprint
column hist_bound new_value _dnfs_hist_bound noprint
with release as (
    select
        version,
        to_number(substr(version, 1, instr(version, '.') - 1)) as major
    from v$instance
),
-- EXISTS rather than COUNT: mounted, nothing the probes and the loops send may
-- aggregate or sort (sql/README.md, "On a mounted database").
packages as (
    select
        case
            when exists (
                select 1 from &_dnfs_all_objects o
                where o.owner = 'SYS' and o.object_name = 'DBMS_SESSION'
            ) then 1
            else 0
        end as session_visible,
        case
            when exists (
                select 1 from &_dnfs_all_objects o
                where o.owner = 'SYS' and o.object_name = 'DBMS_LOCK'
            ) then 1
            else 0
        end as lock_visible
    from dual
)
select
    case
        when r.major >= 18 and l.session_visible > 0 then 'dbms_session.sleep'
        else 'dbms_lock.sleep'
    end as sleep_call,
    case when (r.major >= 18 and l.session_visible > 0) or l.lock_visible > 0 then 1 else 0 end as can_sleep,
    case
        when '&_dnfs_default_count' = '0' or l.lock_visible > 0 then null
        when &_dnfs_mounted = 1
            then
                'The database is mounted, not open: the looping scripts sleep with a stored package, which'
                || ' needs it open (nothing run). Connect to an open instance (RAC) or the primary; from 12.1'
                || ' the dnfsmon agent reads the views when mounted.'
        when r.major >= 18 and l.session_visible = 0
            then
                'The pack sleeps with DBMS_SESSION.SLEEP, which this user may not execute: GRANT EXECUTE ON'
                || ' SYS.DBMS_SESSION TO ' || user || ' (or on SYS.DBMS_LOCK; nothing run).'
        when r.major < 18
            then
                'Before 18c the pack sleeps with DBMS_LOCK.SLEEP: GRANT EXECUTE ON SYS.DBMS_LOCK TO '
                || user || ' (nothing run).'
    end as sleep_message,
    case when r.major >= 12 then 's.nfsversion' else '''n/a''' end as nfsversion_expr,
    case
        when r.major >= 18 or r.version >= '12.1.0.2' then 'spreco + dpreco'
        when r.major = 11 then 'reco'
        else 'to_number(null)'
    end as reconnects_expr,
    case
        when r.major >= 18 or r.version >= '12.1.0.2' then 'gv$event_histogram_micro'
        else 'gv$event_histogram'
    end as hist_view,
    case
        when r.major >= 18 or r.version >= '12.1.0.2' then 'wait_time_micro'
        else 'wait_time_milli * 1000'
    end as hist_bound
from release r
cross join packages l;

-- The first step: none when an argument was refused or nothing can sleep;
-- the header line only when the loop runs (a refused run prints its one line).
-- (_dnfs_next.sql's columns are set here too, so _dnfs_end.sql can clear them.)
column first_step new_value _dnfs_step noprint
column report_step new_value _dnfs_report_step noprint
column dnfs_header new_value _dnfs_header noprint
column next_step new_value _dnfs_step noprint
column remaining new_value _dnfs_remaining noprint
select
    case
        when &_dnfs_count >= 1 and &_dnfs_interval >= 1 and &_dnfs_can_sleep = 1 then '&_dnfs_loop_step'
        else '_dnfs_noop'
    end as first_step,
    -- The part of a loop that reads the dNFS views (_dnfs_report names it):
    -- only when the loop runs. A one-shot script reads them itself.
    case
        when &_dnfs_count >= 1 and &_dnfs_interval >= 1 and &_dnfs_can_sleep = 1 and '&_dnfs_loop_step' != '_dnfs_noop'
            then '&_dnfs_report'
        else '_dnfs_noop'
    end as report_step,
    case
        when &_dnfs_count >= 1 and &_dnfs_interval >= 1 and &_dnfs_can_sleep = 1 and '&_dnfs_loop_step' != '_dnfs_noop'
            then '&_dnfs_title, every &_dnfs_interval s, &_dnfs_count times &_dnfs_title_note'
    end as dnfs_header
from dual;
define _dnfs_remaining = &_dnfs_count
prompt &_dnfs_message &_dnfs_sleep_message
