-- File name:   dnfs_files.sql
-- Purpose:     Files open through dNFS, per instance and filer, with their
--              size and how many processes have them open.
-- Usage:       @dnfs_files
-- Notes:       Reads GV$DNFS_FILES (one row per process and file) and
--              GV$DNFS_SERVERS. A data file on an NFS mount missing here is
--              read through the kernel NFS client: see @dnfs_check. Read-only.

define _dnfs_default_interval = 0
define _dnfs_default_count = 0
define _dnfs_loop_step = _dnfs_noop
define _dnfs_report = _dnfs_noop
@@_dnfs_start.sql

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
@@_dnfs_end.sql
