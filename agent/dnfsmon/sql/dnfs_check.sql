-- File name:   dnfs_check.sql
-- Purpose:     Is Direct NFS really in use? Per instance: the database files
--              not open through dNFS, the active network paths per filer,
--              the "Direct NFS:" lines of the alert log, relevant parameters,
--              and a verdict that names its evidence.
-- Usage:       @dnfs_check
-- Notes:       dNFS falls back to the kernel NFS client quietly: only the
--              alert log says so. The authoritative per-file check is the
--              anti-join of the data, temp, redo and control files
--              (GV$DATAFILE, GV$TEMPFILE, GV$LOGFILE, GV$CONTROLFILE) to the
--              files not open through dNFS (GV$DNFS_FILES). In a CDB (12.1+),
--              the data and temp files of a PDB not open on an instance
--              (GV$CONTAINERS.OPEN_MODE MOUNTED: PDB-to-instance affinity on
--              RAC) are not counted for that instance, and the verdict says how
--              many; this needs SELECT on SYS.GV_$CONTAINERS (without it they
--              are counted, and the script says so). Redo logs: only the
--              online logs of the instance's own thread (GV$LOG.THREAD# =
--              GV$INSTANCE.THREAD#), not other RAC threads' or standby logs;
--              none on a physical standby or far sync (DATABASE_ROLE), whose
--              online logs are unused: the verdict says so. A file on local disk
--              or ASM is listed too: you judge. A file no process has opened
--              yet (an unused temp file) is listed until one does.
--              Mounted, not open: temp files are not counted (no process
--              opens one before the database is open: ORA-01220), and the
--              data files are open only while Redo Apply runs; with none open
--              on an instance its verdict is CANNOT TELL, not PARTLY.
--              Reading GV$DNFS_CHANNELS resets its send/receive counts for
--              the next reader (the agent's next interval shows fewer).
--              Alert log: V$DIAG_ALERT_EXT from 12.2 (SELECT on
--              SYS.V_$DIAG_ALERT_EXT; slow on a large log.xml; this
--              instance only); on 11.2 and 12.1 grep the text alert log on
--              the host for "Direct NFS" and "ODM". Read-only.

define _dnfs_default_interval = 0
define _dnfs_default_count = 0
define _dnfs_loop_step = _dnfs_noop
define _dnfs_report = _dnfs_noop
@@_dnfs_start.sql

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
        when i.version >= '12' and o.containers_visible = 0 and &_dnfs_mounted = 0
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
    -- Mounted, no process opens a temp file (ORA-01220: temporary tablespace
    -- usage not allowed before the database is open), so none is expected.
    where &_dnfs_mounted = 0
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
)
-- NOT EXISTS, not a DISTINCT of GV$DNFS_FILES: that view has a row per
-- process per file, and mounted only in-memory sorts work (ORA-01220); the
-- anti-join sorts nothing, and the ORDER BY sorts files only.
select
    f.inst_id as dnfs_inst_id,
    f.file_type as dnfs_file_type,
    f.file_name as dnfs_file_name
from database_files f
left outer join closed_containers c on f.inst_id = c.inst_id and f.con_id = c.con_id
where
    c.con_id is null
    and not exists (
        select 1 from gv$dnfs_files d
        where d.inst_id = f.inst_id and d.filename = f.file_name
    )
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

-- The alert log part runs from 12.2 when V$DIAG_ALERT_EXT is readable.
define _dnfs_alert_part = _dnfs_noop
define _dnfs_alert_message = ""
column alert_part new_value _dnfs_alert_part noprint
column alert_message new_value _dnfs_alert_message noprint
with alert_view as (
    select count(*) as alert_visible
    from &_dnfs_all_objects
    where owner = 'SYS' and object_name = 'V_$DIAG_ALERT_EXT'
)
select
    case when i.version >= '12.2' and o.alert_visible > 0 then 'dnfs_check_alert' else '_dnfs_noop' end as alert_part,
    case
        when i.version < '12.2'
            then 'Alert log: before 12.2 grep the host''s alert_<SID>.log for "Direct NFS" and "ODM".'
        when &_dnfs_mounted = 1
            then 'Alert log skipped: the database is mounted, not open (grep the host''s alert log).'
        when o.alert_visible = 0
            then 'Alert log skipped: GRANT SELECT ON SYS.V_$DIAG_ALERT_EXT TO ' || user
    end as alert_message
from v$instance i
cross join alert_view o;
prompt &_dnfs_alert_message
@@&_dnfs_alert_part..sql

prompt Verdict
-- core: verdict per instance
with servers as (
    select
        inst_id,
        count(*) as servers
    from gv$dnfs_servers
    group by inst_id
),
database_files as (
    select
        inst_id,
        1 as data_file,
        name as file_name,
        &_dnfs_file_con_id as con_id
    from gv$datafile
    union all
    select
        inst_id,
        0 as data_file,
        name as file_name,
        &_dnfs_file_con_id as con_id
    from gv$tempfile
    where &_dnfs_mounted = 0
    union all
    select
        lf.inst_id,
        0 as data_file,
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
        0 as data_file,
        name as file_name,
        0 as con_id
    from gv$controlfile
),
closed_containers as (
    &_dnfs_closed_containers
),
-- EXISTS per file, not a DISTINCT of GV$DNFS_FILES (a row per process per
-- file): the aggregation below then holds one row per file.
files_seen as (
    select
        f.inst_id,
        f.data_file,
        f.con_id,
        case
            when exists (
                select 1 from gv$dnfs_files d
                where d.inst_id = f.inst_id and d.filename = f.file_name
            ) then 1
            else 0
        end as on_dnfs
    from database_files f
),
coverage as (
    -- A file of a container not open on the instance is counted apart: no
    -- process of that instance can have it open.
    select
        f.inst_id,
        sum(case when c.con_id is null then 1 else 0 end) as files,
        sum(case when c.con_id is null and f.on_dnfs = 0 then 1 else 0 end) as not_dnfs,
        sum(case when c.con_id is null then 0 else 1 end) as not_open_here,
        sum(case when c.con_id is null and f.data_file = 1 and f.on_dnfs = 1 then 1 else 0 end) as data_files_open
    from files_seen f
    left outer join closed_containers c on f.inst_id = c.inst_id and f.con_id = c.con_id
    group by f.inst_id
),
redo as (
    select
        case
            when database_role in ('PRIMARY', 'LOGICAL STANDBY', 'SNAPSHOT STANDBY') then ''
            else ' (' || lower(database_role) || ': redo logs not counted, RFS writes one standby log at a time)'
        end as redo_note,
        case
            when &_dnfs_mounted = 1
                then '; mounted: temp files not counted, data files are open only while Redo Apply runs'
            else ''
        end as mounted_note
    from v$database
),
paths as (
    select
        inst_id,
        count(distinct svrname) as filers,
        min(paths) as fewest_paths
    from (
        select
            inst_id,
            svrname,
            count(distinct path) as paths
        from gv$dnfs_channels
        group by inst_id, svrname
    ) per_filer
    group by inst_id
)
select
    i.inst_id as dnfs_inst_id,
    case
        when nvl(s.servers, 0) = 0
            then
                'NOT IN USE: no dNFS filers in GV$DNFS_SERVERS (library not enabled, no oranfstab, or every filer'
                || ' unreachable: see the alert log lines above)'
        when nvl(c.files, 0) = 0
            then
                'CANNOT TELL: no database files visible (instance not open, or in a CDB the user lacks'
                || ' CONTAINER_DATA)'
        -- Mounted, the data files are open only while Redo Apply (recovery)
        -- runs: with none open, an unopened file says nothing about dNFS.
        when &_dnfs_mounted = 1 and c.data_files_open = 0
            then
                'CANNOT TELL: mounted, and no process has a data file open (they are open only while Redo Apply'
                || ' runs; temp files are not counted mounted)'
        when c.not_dnfs = 0
            then
                'IN USE: all ' || c.files || ' database files' || r.redo_note || ' open through dNFS; '
                || nvl(p.filers, 0) || ' filer(s), fewest active paths to one filer: ' || nvl(p.fewest_paths, 0)
                || case when c.not_open_here > 0 then '; ' || c.not_open_here || ' files of PDBs not open here' else '' end
                || r.mounted_note
        else
            'PARTLY: ' || c.not_dnfs || ' of ' || c.files || ' database files' || r.redo_note
            || ' not open through dNFS (listed above: local disk/ASM, or a fallback to kernel NFS: check the'
            || ' alert log)'
            || case when c.not_open_here > 0 then '; ' || c.not_open_here || ' files of PDBs not open here' else '' end
            || r.mounted_note
    end as verdict
from gv$instance i
cross join redo r
left outer join servers s on i.inst_id = s.inst_id
left outer join coverage c on i.inst_id = c.inst_id
left outer join paths p on i.inst_id = p.inst_id
order by i.inst_id;
-- core: end

column dnfs_inst_id clear
column dnfs_file_type clear
column dnfs_file_name clear
column dnfs_svrname clear
column paths clear
column dnfs_name clear
column dnfs_value clear
column verdict clear
column alert_part clear
column alert_message clear
column file_con_id clear
column closed_containers clear
column containers_message clear
undefine _dnfs_alert_part _dnfs_alert_message _dnfs_file_con_id _dnfs_closed_containers _dnfs_containers_message
@@_dnfs_end.sql
