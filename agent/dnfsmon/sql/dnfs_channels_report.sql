-- File name:   dnfs_channels_report.sql (called by dnfs_channels.sql on an open database)
-- Purpose:     The paths per filer: the queries of dnfs_channels.sql (see there).

column dnfs_inst_id heading 'Inst' format 9999
column dnfs_svrname heading 'Filer' format a20
column filer_paths heading 'Paths' format 9990
column dnfs_path heading 'Path' format a18
column dnfs_local heading 'Local' format a18
column processes heading 'Procs' format 99990
column dnfs_sends heading 'Sends' format 9999999990
column dnfs_recvs heading 'Recvs' format 9999999990
column dnfs_pings heading 'Pings' format 9999990
column reconnects heading 'Reconnects' format 9999990
column share_pct heading 'Share %' format 990.0

prompt
prompt dNFS paths. Counts are since the previous select of GV$DNFS_CHANNELS by anyone (this select resets them).
prompt

select
    c.inst_id as dnfs_inst_id,
    c.svrname as dnfs_svrname,
    c.path as dnfs_path,
    c.local as dnfs_local,
    c.processes,
    c.sends as dnfs_sends,
    c.recvs as dnfs_recvs,
    c.pings as dnfs_pings,
    c.reconnects,
    count(distinct c.path) over (partition by c.inst_id, c.svrname) as filer_paths,
    100 * c.sends / nullif(sum(c.sends) over (partition by c.inst_id, c.svrname), 0) as share_pct
from (
    select
        inst_id,
        svrname,
        path,
        local,
        count(*) as processes,
        sum(sends) as sends,
        sum(recvs) as recvs,
        sum(pings) as pings,
        sum(&_dnfs_reconnects) as reconnects
    from gv$dnfs_channels
    group by inst_id, svrname, path, local
) c
order by c.inst_id, c.svrname, c.path;

column dnfs_inst_id clear
column dnfs_svrname clear
column filer_paths clear
column dnfs_path clear
column dnfs_local clear
column processes clear
column dnfs_sends clear
column dnfs_recvs clear
column dnfs_pings clear
column reconnects clear
column share_pct clear
