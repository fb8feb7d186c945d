-- File name:   dnfs_check_verdict.sql (called by dnfs_check.sql on an open database)
-- Purpose:     The verdict per instance of dnfs_check.sql (see there), after
--              the alert log's lines; clears the columns dnfs_check_report.sql set.

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
        name as file_name,
        &_dnfs_file_con_id as con_id
    from gv$datafile
    union all
    select
        inst_id,
        name as file_name,
        &_dnfs_file_con_id as con_id
    from gv$tempfile
    union all
    select
        lf.inst_id,
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
),
coverage as (
    -- A file of a container not open on the instance is counted apart: no
    -- process of that instance can have it open.
    select
        f.inst_id,
        sum(case when c.con_id is null then 1 else 0 end) as files,
        sum(case when c.con_id is null and d.filename is null then 1 else 0 end) as not_dnfs,
        sum(case when c.con_id is null then 0 else 1 end) as not_open_here
    from database_files f
    left outer join closed_containers c on f.inst_id = c.inst_id and f.con_id = c.con_id
    left outer join dnfs_open d on f.inst_id = d.inst_id and f.file_name = d.filename
    group by f.inst_id
),
redo as (
    select
        case
            when database_role in ('PRIMARY', 'LOGICAL STANDBY', 'SNAPSHOT STANDBY') then ''
            else ' (' || lower(database_role) || ': redo logs not counted, RFS writes one standby log at a time)'
        end as redo_note
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
        when c.not_dnfs = 0
            then
                'IN USE: all ' || c.files || ' database files' || r.redo_note || ' open through dNFS; '
                || nvl(p.filers, 0) || ' filer(s), fewest active paths to one filer: ' || nvl(p.fewest_paths, 0)
                || case when c.not_open_here > 0 then '; ' || c.not_open_here || ' files of PDBs not open here' else '' end
        else
            'PARTLY: ' || c.not_dnfs || ' of ' || c.files || ' database files' || r.redo_note
            || ' not open through dNFS (listed above: local disk/ASM, or a fallback to kernel NFS: check the'
            || ' alert log)'
            || case when c.not_open_here > 0 then '; ' || c.not_open_here || ' files of PDBs not open here' else '' end
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
column verdict_part clear
column file_con_id clear
column closed_containers clear
column containers_message clear
undefine _dnfs_file_con_id _dnfs_closed_containers _dnfs_containers_message
