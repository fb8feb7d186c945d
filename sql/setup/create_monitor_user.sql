-- File name:   setup/create_monitor_user.sql
-- Purpose:     Create the least-privilege user the dnfsmon SQL pack and agent
--              connect as: CREATE SESSION and SELECT on exactly the views they
--              read (a test keeps this list in step with them).
-- Usage:       @setup/create_monitor_user [user]
-- Examples:    @setup/create_monitor_user              C##DNFSMON in a CDB, DNFSMON otherwise
--              @setup/create_monitor_user C##MONITOR
-- Notes:       Run as a DBA (SYSDBA or a user with CREATE USER and GRANT ANY
--              OBJECT PRIVILEGE); in a CDB, from the root: the user is common
--              (CONTAINER=ALL) and sees every PDB. The password is asked for
--              and not echoed; it never appears on a command line.
--              Grants name SYS.V_$/GV_$ views, not the V$ synonyms.
--              Before 18c the pack sleeps with DBMS_LOCK: EXECUTE is granted.
--              This is the only script of the pack that changes the database.

set verify off feedback off
column 1 new_value 1 noprint
select null as "1"
from dual
where 1 = 0;

column container new_value _dnfs_container noprint
column user_name new_value _dnfs_user noprint
column pre18 new_value _dnfs_pre18 noprint
select
    case
        when to_number(substr(version, 1, instr(version, '.') - 1)) >= 18 then '--'
        else ''
    end as pre18
from v$instance;

-- In a CDB root the user is common (C##...) and sees every container.
select
    case
        when sys_context('USERENV', 'CON_NAME') = 'CDB$ROOT' then 'container = all'
        else ''
    end as container,
    upper(
        nvl(
            '&1',
            case when sys_context('USERENV', 'CON_NAME') = 'CDB$ROOT' then 'C##DNFSMON' else 'DNFSMON' end
        )
    ) as user_name
from dual;

accept _dnfs_password char prompt 'Password for &_dnfs_user: ' hide

create user &_dnfs_user identified by "&_dnfs_password" &_dnfs_container;
undefine _dnfs_password
grant create session to &_dnfs_user &_dnfs_container;
grant select on sys.gv_$instance to &_dnfs_user &_dnfs_container;
grant select on sys.v_$instance to &_dnfs_user &_dnfs_container;
grant select on sys.v_$database to &_dnfs_user &_dnfs_container;
grant select on sys.gv_$dnfs_stats to &_dnfs_user &_dnfs_container;
grant select on sys.gv_$process to &_dnfs_user &_dnfs_container;
grant select on sys.gv_$dnfs_channels to &_dnfs_user &_dnfs_container;
grant select on sys.gv_$dnfs_servers to &_dnfs_user &_dnfs_container;
grant select on sys.gv_$dnfs_files to &_dnfs_user &_dnfs_container;
grant select on sys.gv_$system_event to &_dnfs_user &_dnfs_container;
grant select on sys.gv_$event_histogram to &_dnfs_user &_dnfs_container;
grant select on sys.gv_$iostat_file to &_dnfs_user &_dnfs_container;
grant select on sys.gv_$parameter to &_dnfs_user &_dnfs_container;
-- 12.1.0.2+ only (an error on older releases is expected and harmless):
grant select on sys.gv_$event_histogram_micro to &_dnfs_user &_dnfs_container;
-- Before 18c the pack sleeps with DBMS_LOCK.SLEEP:
&_dnfs_pre18.grant execute on sys.dbms_lock to &_dnfs_user &_dnfs_container;

prompt User &_dnfs_user created with the grants dnfsmon needs.
undefine 1 _dnfs_user _dnfs_container _dnfs_pre18
set feedback on
