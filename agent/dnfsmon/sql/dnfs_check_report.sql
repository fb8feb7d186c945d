-- File name:   dnfs_check_report.sql (called by dnfs_check.sql on an open database)
-- Purpose:     The files not open through dNFS, the paths per filer, the
--              parameters and the alert log's probe: the first queries of
--              dnfs_check.sql (see there).

-- The containers not open on each instance, from 12.1 where GV$CONTAINERS is
-- readable (Oracle Database Reference, V$CONTAINERS: OPEN_MODE MOUNTED, READ
-- WRITE, READ ONLY or MIGRATE; a PDB is opened per instance). GV$DATAFILE and
-- GV$TEMPFILE list every container's files (the control file knows them all),
-- GV$DNFS_FILES only those some process has open. Before 12.1, or without the
-- grant: no container left out, and the message says so.
define _dnfs_file_con_id = 0
define _dnfs_closed_containers = "select 0 as inst_id, 0 as con_id from dual where 1 = 0"
define _dnfs_containers_message = ""
column file_con_id new_value _dnfs_file_con_id noprint
column closed_containers new_value _dnfs_closed_containers noprint
column containers_message new_value _dnfs_containers_message noprint
with containers_view as (
    select count(*) as containers_visible
    from &_dnfs_all_objects
    where owner = 'SYS' and object_name = 'GV_$CONTAINERS'
)
select
    case when i.version >= '12' and o.containers_visible > 0 then 'con_id' else '0' end as file_con_id,
    case
        when i.version >= '12' and o.containers_visible > 0
            then 'select inst_id, con_id from gv$containers where open_mode = ''MOUNTED'''
        else 'select 0 as inst_id, 0 as con_id from dual where 1 = 0'
    end as closed_containers,
    case
        when i.version >= '12' and o.containers_visible = 0
            then
                'PDBs not open on an instance are counted too: GRANT SELECT ON SYS.GV_$CONTAINERS TO ' || user
                || ' (CONTAINER=ALL in a CDB).'
    end as containers_message
from v$instance i
cross join containers_view o;
prompt &_dnfs_containers_message

column dnfs_inst_id heading 'Inst' format 9999
column dnfs_file_type heading 'File type' format a12
column dnfs_file_name heading 'Not open through dNFS' format a100
column dnfs_svrname heading 'Filer' format a30
column paths heading 'Active paths' format 99990
column dnfs_name heading 'Parameter' format a24
column dnfs_value heading 'Value' format a30
column verdict heading 'Verdict' format a150

prompt
prompt Database files not open through dNFS (none listed: every file is)
-- core: files not open through dNFS
with database_files as (
    select
        inst_id,
        'Data file' as file_type,
        name as file_name,
        &_dnfs_file_con_id as con_id
    from gv$datafile
    union all
    select
        inst_id,
        'Temp file' as file_type,
        name as file_name,
        &_dnfs_file_con_id as con_id
    from gv$tempfile
    union all
    -- The online logs of this instance's own thread only: GV$LOGFILE lists
    -- every thread's logs (RAC) and the standby logs (Data Guard), which
    -- this instance never opens. GV$LOG has the online groups with their
    -- THREAD#, and V$INSTANCE.THREAD# is the thread the instance writes.
    -- None on a physical standby or a far sync instance (12.1+): their online
    -- logs are unused, and RFS writes the standby logs one group at a time
    -- (V$DATABASE.DATABASE_ROLE). Named positively, so a role added later is
    -- not taken for a primary.
    select
        lf.inst_id,
        'Redo log' as file_type,
        lf.member as file_name,
        0 as con_id
    from gv$logfile lf
    inner join gv$log lg on lf.inst_id = lg.inst_id and lf.group# = lg.group#
    inner join gv$instance own on lg.inst_id = own.inst_id and lg.thread# = own.thread#
    cross join v$database db
    where lf.type = 'ONLINE' and db.database_role in ('PRIMARY', 'LOGICAL STANDBY', 'SNAPSHOT STANDBY')
    union all
    select
        inst_id,
        'Control file' as file_type,
        name as file_name,
        0 as con_id
    from gv$controlfile
),
closed_containers as (
    &_dnfs_closed_containers
),
dnfs_open as (
    select distinct
        inst_id,
        filename
    from gv$dnfs_files
)
select
    f.inst_id as dnfs_inst_id,
    f.file_type as dnfs_file_type,
    f.file_name as dnfs_file_name
from database_files f
left outer join dnfs_open d on f.inst_id = d.inst_id and f.file_name = d.filename
left outer join closed_containers c on f.inst_id = c.inst_id and f.con_id = c.con_id
where d.filename is null and c.con_id is null
order by f.inst_id, f.file_type, f.file_name;
-- core: end

prompt Active dNFS paths per filer (GV$DNFS_CHANNELS)
select
    inst_id as dnfs_inst_id,
    svrname as dnfs_svrname,
    count(distinct path) as paths
from gv$dnfs_channels
group by inst_id, svrname
order by inst_id, svrname;

prompt Parameters
select
    inst_id as dnfs_inst_id,
    name as dnfs_name,
    value as dnfs_value
from gv$parameter
where name in ('dnfs_batch_size', 'enable_dnfs_dispatcher', 'filesystemio_options', 'disk_asynch_io')
order by inst_id, name;

-- The alert log part runs from 12.2 when V$DIAG_ALERT_EXT is readable; it and
-- the verdict (dnfs_check_verdict.sql) are run by dnfs_check.sql, not from
-- here: SQLcl fails an @@ whose name is a substitution variable in a script
-- itself called with @@ (sql/README.md, "SQLcl").
column alert_part new_value _dnfs_alert_part noprint
column alert_message new_value _dnfs_alert_message noprint
column verdict_part new_value _dnfs_verdict_part noprint
with alert_view as (
    select count(*) as alert_visible
    from &_dnfs_all_objects
    where owner = 'SYS' and object_name = 'V_$DIAG_ALERT_EXT'
)
select
    'dnfs_check_verdict' as verdict_part,
    case when i.version >= '12.2' and o.alert_visible > 0 then 'dnfs_check_alert' else '_dnfs_noop' end as alert_part,
    case
        when i.version < '12.2'
            then 'Alert log: before 12.2 grep the host''s alert_<SID>.log for "Direct NFS" and "ODM".'
        when o.alert_visible = 0
            then 'Alert log skipped: GRANT SELECT ON SYS.V_$DIAG_ALERT_EXT TO ' || user
    end as alert_message
from v$instance i
cross join alert_view o;
