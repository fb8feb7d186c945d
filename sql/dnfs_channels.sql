-- File name:   dnfs_channels.sql
-- Purpose:     dNFS network paths per instance, filer, path and local address:
--              sends, receives and pings, and each path's share of its filer's
--              sends (are the paths balanced?).
-- Usage:       @dnfs_channels
-- Notes:       Reads GV$DNFS_CHANNELS (one row per process per path).
--              SENDS, RECVS and PINGS count since the LAST SELECT OF THE VIEW
--              BY ANYONE: this script's figures cover the time since the
--              previous select (yours, another DBA's, or a monitoring agent's),
--              and reading the view resets them for the next reader. Compare
--              shares, not absolute counts; run it twice a known time apart
--              for rates.
--              Read-only. 11.2.0.4+ (LOCAL, the local address, from 11.2.0.3).

define _dnfs_default_interval = 0
define _dnfs_default_count = 0
@@_dnfs_start

column inst_id heading 'Inst' format 9999
column svrname heading 'Filer' format a20
column path heading 'Path' format a18
column local heading 'Local' format a18
column processes heading 'Procs' format 99990
column sends heading 'Sends' format 9999999990
column recvs heading 'Recvs' format 9999999990
column pings heading 'Pings' format 9999990
column share_pct heading 'Share %' format 990.0

prompt
prompt dNFS paths. Counts are since the previous select of GV$DNFS_CHANNELS by anyone (this select resets them).
prompt

select
    inst_id,
    svrname,
    path,
    local,
    count(*) as processes,
    sum(sends) as sends,
    sum(recvs) as recvs,
    sum(pings) as pings,
    100 * sum(sends) / nullif(sum(sum(sends)) over (partition by inst_id, svrname), 0) as share_pct
from gv$dnfs_channels
group by inst_id, svrname, path, local
order by inst_id, svrname, path;

@@_dnfs_end
