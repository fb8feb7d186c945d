-- File name:   dnfs_check.sql
-- Purpose:     Is Direct NFS really in use? Filers, data files by access
--              method, relevant parameters, and a one-line verdict.
-- Usage:       @dnfs_check
-- Notes:       dNFS falls back to the kernel NFS client silently (only the
--              alert log says so). Signs: no rows in GV$DNFS_SERVERS; data
--              files whose GV$IOSTAT_FILE.ACCESS_METHOD is not DNFS_LIB. A data
--              file on local disk or ASM is also not DNFS_LIB: the verdict
--              counts them and you judge. The alert log line
--              "Oracle instance running with ODM: Oracle Direct NFS ODM
--              Library Version" shows the library was loaded. Read-only.

define _dnfs_default_interval = 0
define _dnfs_default_count = 0
@@_dnfs_start

column inst_id heading 'Inst' format 9999
column filetype_name heading 'File type' format a20
column access_method heading 'Access method' format a14
column files heading 'Files' format 99990
column name heading 'Parameter' format a24
column value heading 'Value' format a30
column servers heading 'dNFS filers' format 99990
column verdict heading 'Verdict' format a120

prompt
prompt Files by access method (DNFS_LIB = Direct NFS)
select
    inst_id,
    filetype_name,
    access_method,
    count(*) as files
from gv$iostat_file
group by inst_id, filetype_name, access_method
order by inst_id, filetype_name, access_method;

prompt Parameters
select
    inst_id,
    name,
    value
from gv$parameter
where name in ('dnfs_batch_size', 'enable_dnfs_dispatcher', 'filesystemio_options', 'disk_asynch_io')
order by inst_id, name;

prompt Verdict
with
servers as (
    select
        inst_id,
        count(*) as servers
    from gv$dnfs_servers
    group by inst_id
),

datafiles as (
    select
        inst_id,
        count(*) as files,
        sum(case when access_method = 'DNFS_LIB' then 1 else 0 end) as dnfs_files
    from gv$iostat_file
    where filetype_name = 'Data File'
    group by inst_id
)

select
    i.inst_id,
    nvl(s.servers, 0) as servers,
    case
        when nvl(s.servers, 0) = 0
            then 'dNFS NOT IN USE: no dNFS filers (library not enabled, oranfstab missing, or every filer unreachable)'
        when nvl(d.dnfs_files, 0) = nvl(d.files, 0)
            then 'dNFS IN USE: all ' || nvl(d.files, 0) || ' data files use DNFS_LIB'
        else
            'dNFS PARTLY: ' || (d.files - d.dnfs_files) || ' of ' || d.files
            || ' data files do not use DNFS_LIB (local/ASM, or a silent fallback to kernel NFS: check the alert log)'
    end as verdict
from gv$instance i
left outer join servers s on i.inst_id = s.inst_id
left outer join datafiles d on i.inst_id = d.inst_id
order by i.inst_id;

@@_dnfs_end
