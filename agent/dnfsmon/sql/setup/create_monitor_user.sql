-- File name:   setup/create_monitor_user.sql
-- Purpose:     Create, or bring up to date, the least-privilege user the
--              dnfsmon SQL pack and agent connect as: CREATE SESSION and
--              SELECT on exactly the views they read (a test keeps the list
--              in step with them), and in a CDB the CONTAINER_DATA to see
--              every container's rows; and a profile of its own, whose
--              password life the DBA chooses.
-- Usage:       @setup/create_monitor_user [user] [password_life]
-- Examples:    @setup/create_monitor_user              C##DNFSMON in a CDB (the COMMON_USER_PREFIX), DNFSMON otherwise
--              @setup/create_monitor_user C##MONITOR
--              @setup/create_monitor_user "" 365      the password expires after 365 days
--              @setup/set_monitor_password C##MONITOR  then, for a new user
-- Notes:       Run as a DBA (SYSDBA, or CREATE USER, ALTER USER and GRANT ANY
--              OBJECT PRIVILEGE); in a CDB from the root (refused in a PDB):
--              the user is common (C##..., CONTAINER=ALL), and CONTAINER=ALL
--              alone shows it the root's rows only, so CONTAINER_DATA=ALL is
--              set for each view it reads.
--              The script never reads a password, so none is in any SQL
--              text (shared pool, V$SQL, audit trail, SQL*Plus's echo of a
--              failing line). A new user gets a random password made inside
--              the database and never printed, expired and locked at once
--              (an expired password still logs in to change itself); the last
--              line then says DNFSMON_PASSWORD=needed, and
--              @setup/set_monitor_password <user> sets the real one with
--              SQL*Plus's PASSWORD command. An existing user keeps its
--              password (DNFSMON_PASSWORD=kept) unless it is still
--              expired; its grants are completed.
--              Any error stops the script with a failure exit status; the
--              line "DNFSMON_RESULT=created|updated|unchanged ..." is
--              printed only after the user, every grant and, in a CDB, every
--              view's CONTAINER_DATA (DBA_CONTAINER_DATA) were read back
--              from the dictionary.
--              The user gets the profile DNFSMON_PROFILE (C##DNFSMON_PROFILE,
--              the COMMON_USER_PREFIX, and CONTAINER=ALL in a CDB: a common
--              user takes a common profile), created if absent, so that the
--              DEFAULT profile's PASSWORD_LIFE_TIME (180 days) does not stop
--              monitoring. password_life is PASSWORD_LIFE_TIME in whole days
--              (1 to 9999), UNLIMITED or DEFAULT (the DEFAULT profile's);
--              every other limit, FAILED_LOGIN_ATTEMPTS among them, stays
--              DEFAULT, the DEFAULT profile's. Without password_life a new
--              profile gets UNLIMITED (rotate the password your own way) and
--              an existing one keeps its limit: a rerun never undoes a DBA's
--              ALTER PROFILE. The user is moved to the profile only when new
--              or on DEFAULT: a profile the site assigned it stays. The line
--              DNFSMON_PROFILE=... says what changed.
--              SQL Language Reference, CREATE PROFILE and ALTER PROFILE (the
--              same clauses 11.2 to 23ai; CONTAINER from 12.1, and a common
--              profile's name starts with COMMON_USER_PREFIX).
--              Grants name SYS.V_$/GV_$ views, not the V$ synonyms. Before 18c
--              the pack sleeps with DBMS_LOCK: EXECUTE is granted there.
--              This is the only script of the pack that changes the database.

-- noqa: disable=LT01,LT02,LT14,RF03
-- (sqlfluff's oracle dialect misreads PL/SQL collection calls such as
-- needed(i) and the layout of EXECUTE IMMEDIATE, and takes a PL/SQL variable
-- in a query (profile_name) for an unqualified column; SQL*Plus's side of
-- this script is checked by tests/sqlplus_rules.py.)

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
define _dnfs_user = ""
column 1 new_value 1 noprint
column 2 new_value 2 noprint
select
    null as "1",
    null as "2"
from dual
where 1 = 0;

-- CDB or not, and the container: V$DATABASE.CDB and CON_NAME exist from
-- 12.1, so they are read by dynamic SQL that 11.2 never parses.
variable dnfs_cdb varchar2(3)
variable dnfs_container varchar2(128)
variable dnfs_prefix varchar2(30)
variable dnfs_result varchar2(20)
variable dnfs_password varchar2(10)
variable dnfs_account varchar2(32)
variable dnfs_user_profile varchar2(128)
variable dnfs_user_life varchar2(40)
variable dnfs_profile_note varchar2(1000)
declare
    cdb varchar2(3) := 'NO';
    container varchar2(128) := '';
    prefix varchar2(30) := 'C##';
begin
    if dbms_db_version.version >= 12 then
        execute immediate 'select cdb, sys_context(''USERENV'', ''CON_NAME'') from v$database'
        into cdb, container;
        -- The prefix a common user's name must start with: the
        -- COMMON_USER_PREFIX parameter where the release has it (Oracle
        -- Database Reference, COMMON_USER_PREFIX; C## by default, and
        -- empty means any name), C## otherwise.
        begin
            execute immediate 'select value from v$parameter where name = ''common_user_prefix'''
            into prefix;
        exception
            when no_data_found then
                prefix := 'C##';
        end;
    end if;
    :dnfs_cdb := cdb;
    :dnfs_container := container;
    :dnfs_prefix := prefix;
end;
/

column user_name new_value _dnfs_user noprint
column profile_name new_value _dnfs_profile noprint
column password_life new_value _dnfs_life noprint
select
    upper(nvl('&1', case when :dnfs_cdb = 'YES' then :dnfs_prefix || 'DNFSMON' else 'DNFSMON' end)) as user_name,
    case when :dnfs_cdb = 'YES' then :dnfs_prefix || 'DNFSMON_PROFILE' else 'DNFSMON_PROFILE' end as profile_name,
    -- Empty when not given: the profile's limit is then kept (or UNLIMITED for a new profile).
    upper('&2') as password_life
from dual;

declare
    user_name constant varchar2(128) := dbms_assert.simple_sql_name('&_dnfs_user');
    profile_name constant varchar2(128) := dbms_assert.simple_sql_name('&_dnfs_profile');
    password_life constant varchar2(40) := '&_dnfs_life';
    profile_life varchar2(128) := '';
    -- The limit to set: the one given; without one, UNLIMITED for a new
    -- profile and none (NULL: keep what a DBA set) for an existing one.
    target_life varchar2(128) := '';
    user_profile varchar2(128) := '';
    -- New users and users on DEFAULT are moved to the profile; a profile a
    -- DBA assigned (another site profile) is left as it is.
    move_user boolean;
    profile_note varchar2(1000) := '';
    profile_changed boolean := false;
    profile_count number;
    -- A new user's first password: random, made here, never printed,
    -- expired and locked at once, so nobody can use it; PASSWORD sets the
    -- real one. Letters and digits alternate (no two letters side by
    -- side), so it cannot contain a word of two letters or more that a
    -- verify function refuses: the database name, the user name, "oracle"
    -- (verify_function_11G and ora12c_verify_function, made by
    -- utlpwdmg.sql; Database Security Guide, password complexity
    -- verification). A name that itself alternates letter and digit (P1)
    -- still can: ORA-28003 then stops the script, and a second run draws
    -- again. 6 upper, 6 lower, 12
    -- digits and two special characters, 26 bytes: within 11.2's 30-byte
    -- limit and past the class and length rules of
    -- ora12c_strong_verify_function and ora12c_stig_verify_function.
    first_password varchar2(30) := '';
    is_cdb boolean := :dnfs_cdb = 'YES';
    common_prefix constant varchar2(30) := :dnfs_prefix;
    scope varchar2(20) := '';
    -- The views the pack and the agent read (tests/test_sql_pack.py keeps
    -- this list equal to what they read): the agent reads the V$ views in
    -- its default scope "instance" (the connected instance only) and the
    -- GV$ views in scope "cluster".
    needed sys.odcivarchar2list := sys.odcivarchar2list(
        'GV_$INSTANCE', 'V_$INSTANCE', 'V_$DATABASE', 'GV_$DNFS_STATS', 'GV_$PROCESS',
        'GV_$DNFS_CHANNELS', 'GV_$DNFS_SERVERS', 'GV_$DNFS_FILES', 'GV_$SYSTEM_EVENT',
        'GV_$EVENT_HISTOGRAM', 'GV_$IOSTAT_FILE', 'GV_$PARAMETER', 'GV_$DATAFILE',
        'GV_$TEMPFILE', 'GV_$LOGFILE', 'GV_$LOG', 'GV_$CONTROLFILE', 'GV_$IOSTAT_FUNCTION',
        'V_$DNFS_STATS', 'V_$PROCESS', 'V_$DNFS_CHANNELS', 'V_$DNFS_SERVERS', 'V_$DNFS_FILES',
        'V_$SYSTEM_EVENT', 'V_$EVENT_HISTOGRAM', 'V_$IOSTAT_FILE', 'V_$IOSTAT_FUNCTION',
        'V_$DATAFILE', 'V_$TEMPFILE'
    );
    -- CONTAINER_DATA as DBA_CONTAINER_DATA shows it: for every container,
    -- for this view or as the user's default. The view exists from 12.1, so
    -- it is read by dynamic SQL, which 11.2 never parses.
    container_data_check constant varchar2(300) := 'select count(*) from dba_container_data'
    || ' where username = :1 and all_containers = ''Y'''
    || ' and (default_attr = ''Y'' or (owner = ''SYS'' and object_name = :2))';
    existed number;
    before_grants number;
    after_grants number;
    -- The user's CONTAINER_DATA=ALL rows, before and after (12.1+: dynamic
    -- SQL), so that setting it alone reports "updated", not "unchanged".
    container_data_count constant varchar2(200) := 'select count(*) from dba_container_data'
    || ' where username = :1 and all_containers = ''Y''';
    before_container_data number := 0;
    after_container_data number := 0;
    missing varchar2(4000) := '';
    -- ALTER USER ... SET CONTAINER_DATA ... FOR a view that is not a
    -- CONTAINER_DATA object raises ORA-65058 (Database Error Messages:
    -- "object-specific CONTAINER_DATA attribute may only be specified for
    -- a CONTAINER_DATA object"): caught per view, so the failure line names
    -- every such view instead of stopping at the first.
    not_container_data exception;
    pragma exception_init(not_container_data, -65058);
    refused varchar2(4000) := '';
    outcome varchar2(20);
    account varchar2(32);
begin
    if is_cdb and :dnfs_container != 'CDB$ROOT' then
        raise_application_error(
            -20001, 'Connected to ' || :dnfs_container || ': run this script in the CDB root (the user is common).'
        );
    end if;
    -- substr(..., 1, 0) is NULL: an empty prefix refuses no name.
    if is_cdb and substr(user_name, 1, nvl(length(common_prefix), 0)) != common_prefix then
        raise_application_error(
            -20002, 'In a CDB the user must be common: name it ' || common_prefix || '..., not ' || user_name || '.'
        );
    end if;
    if not (password_life in ('UNLIMITED', 'DEFAULT') or regexp_like(password_life, '^[1-9][0-9]{0,3}$')) then
        raise_application_error(
            -20004, 'Password life ' || password_life || ': give whole days (1 to 9999), UNLIMITED or DEFAULT.'
        );
    end if;
    if is_cdb then
        scope := ' container = all';
    end if;
    -- Release-dependent views, granted where the database has them: the
    -- microsecond histogram (12.1.0.2 on; DBMS_DB_VERSION cannot tell 12.1.0.1
    -- from 12.1.0.2), the containers' open modes per instance (12.1 on) and
    -- the alert log view (12.2 on), both read by dnfs_check.sql.
    for optional in (
        select object_name from dba_objects
        where owner = 'SYS' and object_type = 'VIEW'
            and object_name in (
                'GV_$EVENT_HISTOGRAM_MICRO', 'V_$EVENT_HISTOGRAM_MICRO', 'GV_$CONTAINERS', 'V_$DIAG_ALERT_EXT'
            )
        order by object_name
    ) loop
        needed.extend;
        needed(needed.count) := optional.object_name;
    end loop;
    select count(*) into existed from dba_users where username = user_name;
    select count(*) into before_grants from dba_tab_privs where grantee = user_name;
    if is_cdb then
        execute immediate container_data_count into before_container_data using user_name;
    end if;
    -- The profile: created if absent, its password life set to the one
    -- given (kept when none is given); FAILED_LOGIN_ATTEMPTS and every other
    -- limit DEFAULT. DBA_PROFILES.LIMIT shows a number of days, UNLIMITED or
    -- DEFAULT (Oracle Database Reference, DBA_PROFILES; SQL Language
    -- Reference, CREATE PROFILE and ALTER PROFILE).
    for existing in (
        select p.limit as life from dba_profiles p where p.profile = profile_name and p.resource_name = 'PASSWORD_LIFE_TIME'
    ) loop
        profile_life := existing.life;
    end loop;
    target_life := case when password_life is not null then password_life when profile_life is null then 'UNLIMITED' end;
    if profile_life is null then
        execute immediate 'create profile ' || profile_name || ' limit password_life_time ' || target_life
        || ' failed_login_attempts default' || scope;
        profile_changed := true;
        profile_note := profile_name || ' created with PASSWORD_LIFE_TIME ' || target_life || '; ';
    elsif profile_life != target_life then
        execute immediate 'alter profile ' || profile_name || ' limit password_life_time ' || target_life || scope;
        profile_changed := true;
        profile_note := profile_name || ' PASSWORD_LIFE_TIME ' || profile_life || ' -> ' || target_life || '; ';
    end if;
    if existed = 0 then
        for i in 1 .. 6 loop
            first_password := first_password || dbms_random.string('u', 1) || trunc(dbms_random.value(0, 10))
            || dbms_random.string('l', 1) || trunc(dbms_random.value(0, 10));
        end loop;
        first_password := first_password || '#_';
        execute immediate 'create user ' || user_name || ' identified by "' || first_password || '" password expire account lock'
        || scope;
    end if;
    select max(profile) into user_profile from dba_users where username = user_name;
    move_user := existed = 0 or user_profile = 'DEFAULT';
    if user_profile != profile_name and move_user then
        execute immediate 'alter user ' || user_name || ' profile ' || profile_name || scope;
        profile_changed := true;
        profile_note := profile_note || user_name || ' moved from ' || user_profile || ' to ' || profile_name || '; ';
        user_profile := profile_name;
    elsif user_profile != profile_name then
        profile_note := profile_note || user_name || ' keeps its profile ' || user_profile || ' (not moved to '
        || profile_name || '); ';
    end if;
    execute immediate 'grant create session to ' || user_name || scope;
    for i in 1 .. needed.count loop
        execute immediate 'grant select on sys.' || needed(i) || ' to ' || user_name || scope;
        if is_cdb then
            begin
                execute immediate 'alter user ' || user_name || ' set container_data = all for sys.' || needed(i)
                || ' container = current';
            exception
                when not_container_data then
                    -- ORA-65058: this view is not a CONTAINER_DATA object in
                    -- this release: its rows are not filtered by container, so
                    -- it needs no CONTAINER_DATA (the readback skips it).
                    refused := refused || ' ' || needed(i) || ' ';
            end;
        end if;
    end loop;
    if is_cdb then
        -- The agent's container check (dnfsmon check, and each connect) reads
        -- DBA_CONTAINER_DATA to find a view it reads whose CONTAINER_DATA is
        -- not ALL (docs/oracle.md, CDB section); without this grant it can only warn
        -- that it did not check. A DBA_ view shows the container it is read
        -- in, so no CONTAINER_DATA is set for it (nor read back).
        execute immediate 'grant select on sys.dba_container_data to ' || user_name || scope;
        needed.extend;
        needed(needed.count) := 'DBA_CONTAINER_DATA';
    end if;
    if dbms_db_version.version < 18 then
        execute immediate 'grant execute on sys.dbms_lock to ' || user_name || scope;
        needed.extend;
        needed(needed.count) := 'DBMS_LOCK';
    end if;
    -- Read everything back from the dictionary before saying it is done.
    for i in 1 .. needed.count loop
        select count(*) into after_grants
        from dba_tab_privs
        where grantee = user_name and owner = 'SYS' and table_name = needed(i);
        if after_grants = 0 then
            missing := missing || ' ' || needed(i);
        end if;
        if instr(refused, ' ' || needed(i) || ' ') > 0 then
            -- ORA-65058: not a CONTAINER_DATA object in this release, so not
            -- filtered by container at all: every row is already visible.
            null;
        elsif is_cdb and needed(i) not in ('DBMS_LOCK', 'DBA_CONTAINER_DATA') then
            execute immediate container_data_check into after_grants using user_name, needed(i);
            if after_grants = 0 then
                missing := missing || ' CONTAINER_DATA=ALL(' || needed(i) || ')';
            end if;
        end if;
    end loop;
    select count(*) into after_grants
    from dba_sys_privs
    where grantee = user_name and privilege = 'CREATE SESSION';
    if after_grants = 0 then
        missing := missing || ' CREATE SESSION';
    end if;
    select count(*) into after_grants
    from dba_users
    where username = user_name and profile = user_profile;
    select count(*) into profile_count
    from dba_profiles p
    where
        p.profile = profile_name and p.resource_name = 'PASSWORD_LIFE_TIME'
        and p.limit = nvl(target_life, profile_life);
    if after_grants = 0 or profile_count = 0 then
        missing := missing || ' PROFILE ' || user_profile || ' (' || profile_name || ' PASSWORD_LIFE_TIME '
        || nvl(target_life, profile_life) || ')';
    end if;
    if missing is not null then
        raise_application_error(-20003, user_name || ' lacks, after granting:' || missing);
    end if;
    select count(*) into after_grants from dba_tab_privs where grantee = user_name;
    if is_cdb then
        execute immediate container_data_count into after_container_data using user_name;
    end if;
    outcome := case
        when existed = 0 then 'created'
        when after_grants > before_grants or after_container_data > before_container_data or profile_changed then 'updated'
        else 'unchanged'
    end;
    :dnfs_result := outcome;
    -- Still expired: its password was never set (or has expired since).
    -- Oracle Database Reference, DBA_USERS.ACCOUNT_STATUS: EXPIRED,
    -- EXPIRED and LOCKED (a new user here), EXPIRED and LOCKED(TIMED) need a
    -- new password. EXPIRED(GRACE) still logs in (ORA-28002 is a warning),
    -- so its password is kept; a lock is named on the last line.
    select account_status into account from dba_users where username = user_name;
    :dnfs_password := case when account like 'EXPIRED%' and account not like 'EXPIRED(GRACE)%' then 'needed' else 'kept' end;
    :dnfs_account := account;
    -- The password life the user has now: its profile's limit, as DBA_PROFILES shows it.
    select max(p.limit) into :dnfs_user_life
    from dba_profiles p
    where p.profile = user_profile and p.resource_name = 'PASSWORD_LIFE_TIME';
    :dnfs_user_profile := user_profile;
    :dnfs_profile_note := nvl(profile_note, 'unchanged; ');
end;
/

column result new_value _dnfs_result noprint
column password_state new_value _dnfs_password_state noprint
column password_note new_value _dnfs_password_note noprint
column user_profile new_value _dnfs_user_profile noprint
column user_life new_value _dnfs_user_life noprint
column profile_note new_value _dnfs_profile_note noprint
select
    :dnfs_user_profile as user_profile,
    :dnfs_user_life as user_life,
    rtrim(:dnfs_profile_note, '; ') as profile_note,
    :dnfs_result as result,
    :dnfs_password as password_state,
    case
        when :dnfs_password = 'needed'
            then
                ': its password is random and expired, the account locked; set it with'
                || ' @setup/set_monitor_password &_dnfs_user'
        when :dnfs_account like '%LOCKED%'
            then ' (the account is ' || :dnfs_account || ': ALTER USER &_dnfs_user ACCOUNT UNLOCK to let it connect)'
    end as password_note
from dual;
prompt DNFSMON_PROFILE=&_dnfs_profile_note
prompt DNFSMON_RESULT=&_dnfs_result user &_dnfs_user has the grants dnfsmon needs, profile &_dnfs_user_profile (PASSWORD_LIFE_TIME &_dnfs_user_life).
prompt DNFSMON_PASSWORD=&_dnfs_password_state&_dnfs_password_note
column 1 clear
column 2 clear
column user_name clear
column profile_name clear
column password_life clear
column result clear
column password_state clear
column password_note clear
column user_profile clear
column user_life clear
column profile_note clear
undefine 1 2 _dnfs_user _dnfs_profile _dnfs_life _dnfs_result _dnfs_password_state _dnfs_password_note
undefine _dnfs_user_profile _dnfs_user_life _dnfs_profile_note
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
