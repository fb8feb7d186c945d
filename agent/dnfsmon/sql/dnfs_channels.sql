-- File name:   dnfs_channels.sql
-- Purpose:     dNFS network paths per instance and filer: the number of paths
--              per filer, and per path and local address the sends,
--              receives, pings, reconnects and the path's share of its
--              filer's sends (are the paths balanced? is one flapping?).
-- Usage:       @dnfs_channels
-- Notes:       Reads GV$DNFS_CHANNELS (one row per process per path).
--              SENDS, RECVS, PINGS and the reconnect counts count since the
--              LAST SELECT OF THE VIEW BY ANYONE: this script's figures cover
--              the time since the previous select (yours, another DBA's, or a
--              monitoring agent's), and reading the view resets them for the
--              next reader. Compare shares, not absolute counts; run it twice
--              a known time apart for rates.
--              Reconnects: RECO in 11.2.0.4, SPRECO + DPRECO from 12.1.0.2,
--              none in 12.1.0.1 (shown empty). Read-only. 11.2.0.4+.

define _dnfs_default_interval = 0
define _dnfs_default_count = 0
define _dnfs_loop_step = _dnfs_noop
define _dnfs_report = _dnfs_noop
@@_dnfs_start.sql

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
@@_dnfs_end.sql
