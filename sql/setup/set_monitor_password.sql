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
--              DBA_USERS shows the account no longer expired.

whenever sqlerror exit failure
set verify off feedback off termout on
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
begin
    :dnfs_user := '&_dnfs_user';
    if :dnfs_user is null then
        raise_application_error(
            -20005, 'Usage: @setup/set_monitor_password <user>, a user that exists (create_monitor_user.sql made it).'
        );
    end if;
end;
/

password &_dnfs_user

-- Read back: PASSWORD's own errors (a verify function refusing it, the two
-- answers differing) may not stop the script, so the account is checked.
variable dnfs_status varchar2(32)
begin
    select account_status into :dnfs_status
    from dba_users
    where username = :dnfs_user;
    if :dnfs_status like 'EXPIRED%' then
        raise_application_error(
            -20006, :dnfs_user || ' is still ' || :dnfs_status || ': the password was not set (see the error above).'
        );
    end if;
end;
/
prompt DNFSMON_PASSWORD=set user &_dnfs_user can connect with the password just given.
column 1 clear
column user_name clear
undefine 1 _dnfs_user
-- Leave the DBA's session as SQL*Plus starts it: a later typo must not end SQL*Plus.
whenever sqlerror continue none
set feedback on
