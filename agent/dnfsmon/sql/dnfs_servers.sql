-- File name:   dnfs_servers.sql
-- Purpose:     The filers dNFS talks to, per instance: export, ports, NFS
--              version, largest read and write, and the files open on each.
-- Usage:       @dnfs_servers
-- Notes:       Reads GV$DNFS_SERVERS and GV$DNFS_FILES. NFSVERSION exists from
--              12.1 (shown as n/a before). No rows: dNFS is not in use (see
--              @dnfs_check). Read-only.

define _dnfs_default_interval = 0
define _dnfs_default_count = 0
define _dnfs_loop_step = _dnfs_noop
define _dnfs_report = _dnfs_noop
@@_dnfs_start.sql

column dnfs_inst_id heading 'Inst' format 9999
column dnfs_id heading 'Id' format 999
column dnfs_svrname heading 'Filer' format a20
column dnfs_dirname heading 'Export' format a30
column dnfs_nfsport heading 'NFS port' format 99999
column nfs_version heading 'NFS vers' format a9
column dnfs_wtmax heading 'Wtmax' format 99999999
column dnfs_rtmax heading 'Rtmax' format 99999999
column open_files heading 'Files' format 99990
column open_gb heading 'GiB' format 9999990.0

with files as (
    select
        inst_id,
        svr_id,
        count(*) as files,
        sum(filesize) as bytes
    from (
        select distinct
            inst_id,
            svr_id,
            filename,
            filesize
        from gv$dnfs_files
    ) distinct_files
    group by inst_id, svr_id
)
select
    s.inst_id as dnfs_inst_id,
    s.id as dnfs_id,
    s.svrname as dnfs_svrname,
    s.dirname as dnfs_dirname,
    s.nfsport as dnfs_nfsport,
    &_dnfs_nfsversion as nfs_version,
    s.wtmax as dnfs_wtmax,
    s.rtmax as dnfs_rtmax,
    nvl(f.files, 0) as open_files,
    nvl(f.bytes, 0) / power(1024, 3) as open_gb
from gv$dnfs_servers s
left outer join files f on s.inst_id = f.inst_id and s.id = f.svr_id
order by s.inst_id, s.id;

column dnfs_inst_id clear
column dnfs_id clear
column dnfs_svrname clear
column dnfs_dirname clear
column dnfs_nfsport clear
column nfs_version clear
column dnfs_wtmax clear
column dnfs_rtmax clear
column open_files clear
column open_gb clear
@@_dnfs_end.sql
