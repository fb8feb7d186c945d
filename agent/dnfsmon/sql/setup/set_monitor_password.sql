-- File name:   setup/set_monitor_password.sql
-- Purpose:     Set the password of the monitoring user that
--              create_monitor_user.sql made, without the password ever
--              being part of a SQL statement's text.
-- Usage:       @setup/set_monitor_password user
-- Examples:    @setup/set_monitor_password C##DNFSMON
-- Notes:       Run as a DBA (ALTER USER), in a CDB from the root, after
--              create_monitor_user.sql printed DNFSMON_PASSWORD=needed (or to
--              change the password later). SQL*Plus's PASSWORD command asks
--              for the new password twice without echo and changes it
--              itself: no statement with the password in its text reaches
--              the shared pool, V$SQL or the audit trail, and no SQL*Plus
--              line can echo it. Under Ansible the two answers come on
--              standard input.
--              Any error stops the script with a failure exit status; the
--              last line, "DNFSMON_PASSWORD=set ...", is printed only after
--              DBA_USERS shows the account no longer expired, its
--              PASSWORD_CHANGE_DATE moved (12.2 on; before 12.2 an account
--              that is not expired is expired first, so that leaving the
--              expired state proves PASSWORD worked), and, unlocked, OPEN.

-- The DBA's SET system variables, put back at the end (STORE SET saves them, and only
-- them, as SET commands in a file of the current directory: SQL*Plus User's Guide and
-- Reference, STORE), as the other scripts of the pack do, to a file named for the
-- database, instance, session and host, so two sessions never share one. The lines
-- below are _dnfs_start.sql's own (a test keeps them equal; see the notes there):
-- this script stands alone, as the Ansible role copies it.
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
whenever sqlerror exit failure
set verify off feedback off termout on
-- What a login.sql may have changed and this script relies on: & substitution,
-- ; ending statements, literals kept as written, no pause, no titles (SQL*Plus
-- User's Guide and Reference, "SET System Variable Summary", TTITLE, BTITLE).
set define '&' concat '.' sqlterminator ';' pause off sqlcase mixed
ttitle off
btitle off
column 1 new_value 1 noprint
select null as "1"
from dual
where 1 = 0;

-- The user must exist (no rows leave _dnfs_user empty, refused below):
-- PASSWORD for a name that does not may fail with an error SQL*Plus does
-- not pass to WHENEVER SQLERROR.
define _dnfs_user = ""
column user_name new_value _dnfs_user noprint
select username as user_name
from dba_users
where username = upper('&1');

variable dnfs_user varchar2(128)
variable dnfs_changed_before varchar2(19)
variable dnfs_status_before varchar2(32)
-- DBA_USERS.PASSWORD_CHANGE_DATE (Oracle Database Reference, DBA_USERS, from
-- 12.2) is read before and after PASSWORD; it is read by dynamic SQL,
-- which 11.2 and 12.1, without the column, never parse.
declare
    change_date_query constant varchar2(120) := 'select to_char(password_change_date, ''YYYY-MM-DD HH24:MI:SS'')'
    || ' from dba_users where username = :1';
    changed varchar2(19);
begin
    :dnfs_user := '&_dnfs_user';
    :dnfs_changed_before := null;
    if :dnfs_user is null then
        raise_application_error(
            -20005, 'Usage: @setup/set_monitor_password <user>, a user that exists (create_monitor_user.sql made it).'
        );
    end if;
    select account_status into :dnfs_status_before
    from dba_users
    where username = :dnfs_user;
    if dbms_db_version.version > 12 or (dbms_db_version.version = 12 and dbms_db_version.release >= 2) then
        execute immediate change_date_query into changed using :dnfs_user;
        :dnfs_changed_before := changed;
    elsif :dnfs_status_before not like 'EXPIRED%' then
        -- Before 12.2 nothing in DBA_USERS shows that PASSWORD changed the
        -- password of an account that is not expired, so a refused password
        -- would pass the read-back. Expired first, the account leaves that
        -- state only if PASSWORD succeeds; if it fails, the account stays
        -- expired and the script says so (the agent's logins fail with
        -- ORA-28001 until the password is set: loud, not silently wrong).
        execute immediate 'alter user ' || dbms_assert.enquote_name(:dnfs_user, false) || ' password expire';
    end if;
end;
/

password &_dnfs_user

-- Read back: PASSWORD's own errors (a verify function refusing it, the two
-- answers differing) do not stop the script: WHENEVER SQLERROR is triggered
-- by SQL and PL/SQL errors, not by SQL*Plus command errors (SQL*Plus
-- User's Guide and Reference, WHENEVER SQLERROR). So the account is
-- checked: no longer expired, and from 12.2, for an account that was not
-- expired, PASSWORD_CHANGE_DATE moved (an OPEN account stays OPEN when
-- PASSWORD fails; before 12.2 that case cannot be seen here). Only then
-- is the account unlocked (create_monitor_user.sql made it locked), and it
-- must then be OPEN (Reference, DBA_USERS.ACCOUNT_STATUS; OPEN & IN
-- ROLLOVER during a gradual password rollover, 21c, and 19c from 19.12): not
-- LOCKED(TIMED), say, by failed logins.
variable dnfs_status varchar2(32)
declare
    change_date_query constant varchar2(120) := 'select to_char(password_change_date, ''YYYY-MM-DD HH24:MI:SS'')'
    || ' from dba_users where username = :1';
    changed varchar2(19);
begin
    select account_status into :dnfs_status
    from dba_users
    where username = :dnfs_user;
    if :dnfs_status like 'EXPIRED%' then
        raise_application_error(
            -20006, :dnfs_user || ' is still ' || :dnfs_status || ': the password was not set (see the error above).'
        );
    end if;
    -- An expired account that is no longer expired had its password set;
    -- an account that was not expired shows it only by the change date.
    if :dnfs_status_before not like 'EXPIRED%' and (
        dbms_db_version.version > 12 or (dbms_db_version.version = 12 and dbms_db_version.release >= 2)
    ) then
        execute immediate change_date_query into changed using :dnfs_user;
        if changed is null or changed = nvl(:dnfs_changed_before, ' ') then
            raise_application_error(
                -20007, :dnfs_user || ': PASSWORD_CHANGE_DATE did not change: the password was not set (see the error above).'
            );
        end if;
    end if;
    execute immediate 'alter user ' || dbms_assert.enquote_name(:dnfs_user, false) || ' account unlock';
    select account_status into :dnfs_status
    from dba_users
    where username = :dnfs_user;
    if :dnfs_status not in ('OPEN', 'OPEN & IN ROLLOVER') then
        raise_application_error(
            -20008, :dnfs_user || ' is ' || :dnfs_status || ' after ACCOUNT UNLOCK: it cannot connect.'
        );
    end if;
end;
/
prompt DNFSMON_PASSWORD=set user &_dnfs_user can connect with the password just given.
column 1 clear
column user_name clear
undefine 1 _dnfs_user
-- A later typo must not end SQL*Plus (WHENEVER is not a SET variable: STORE SET does not save it).
whenever sqlerror continue none
column dnfs_settings clear
-- As _dnfs_end_caret.sql: the name as written ("&_dnfs_settings") where & did not
-- substitute, read with a DEFINE character no file name holds (SET DEFINE). This
-- script stands alone (no helper to run the file with & where the name was
-- substituted, as _dnfs_end.sql does), so a file STORE SET could not write leaves ^.
set define '^'
@^_dnfs_settings_used
undefine _dnfs_settings _dnfs_settings_used
