-- File name:   dnfs_files_report.sql (called by dnfs_files.sql on an open database)
-- Purpose:     The files open through dNFS: the queries of dnfs_files.sql (see there).

column dnfs_inst_id heading 'Inst' format 9999
column dnfs_svrname heading 'Filer' format a20
column dnfs_filename heading 'File' format a70
column size_mb heading 'MiB' format 99999990.0
column processes heading 'Procs' format 99990

select
    f.inst_id as dnfs_inst_id,
    s.svrname as dnfs_svrname,
    f.filename as dnfs_filename,
    max(f.filesize) / 1048576 as size_mb,
    count(distinct f.pnum) as processes
from gv$dnfs_files f
left outer join gv$dnfs_servers s on f.inst_id = s.inst_id and f.svr_id = s.id
group by f.inst_id, s.svrname, f.filename
order by f.inst_id, s.svrname, f.filename;

column dnfs_inst_id clear
column dnfs_svrname clear
column dnfs_filename clear
column size_mb clear
column processes clear
