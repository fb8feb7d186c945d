-- File name:   dnfs_iops_step.sql (called by _dnfs_loop.sql for dnfs_iops.sql)
-- Purpose:     Sleep one interval, print it per instance, take the next snapshot.

@@_dnfs_sleep

-- core: the interval that just ended, per instance
with
clock as (
    select
        (cast(sys_extract_utc(systimestamp) as date) - date '1970-01-01') * 86400
        + mod(extract(second from systimestamp), 1) as now_t
    from dual
),

cur as (
    select
        s.inst_id,
        s.pnum,
        s.nfs_read,
        s.nfs_write,
        s.nfs_readbytes,
        s.nfs_writebytes,
        nvl(p.spid, '?') as spid,
        nvl(p.serial#, -1) as serial
    from gv$dnfs_stats s
    left outer join gv$process p on s.inst_id = p.inst_id and s.pnum = p.pid
),

prev as (
    -- The previous snapshot (see the *_snapshot.sql script). sqlfluff's
    -- oracle dialect cannot parse XMLTABLE, hence the noqa on its line.
    select * from xmltable( -- noqa: PRS
        '/s/p' passing xmltype(:dnfs_prev)
        columns
        inst_id number path '@i',
        pnum number path '@n',
        spid varchar2(24) path '@s',
        serial number path '@e',
        nfs_read number path '@r',
        nfs_write number path '@w',
        nfs_readbytes number path '@rb',
        nfs_writebytes number path '@wb'
    )
),

delta as (
    -- A process counts only when present, and the same process, at both ends.
    select
        c.inst_id,
        c.nfs_read - p.nfs_read as reads,
        c.nfs_write - p.nfs_write as writes,
        c.nfs_readbytes - p.nfs_readbytes as read_bytes,
        c.nfs_writebytes - p.nfs_writebytes as write_bytes
    from cur c
    inner join prev p
        on
            c.inst_id = p.inst_id
            and c.pnum = p.pnum
            and c.spid = p.spid
            and c.serial = p.serial
    where c.nfs_read >= p.nfs_read and c.nfs_write >= p.nfs_write
),

per_instance as (
    select
        inst_id,
        sum(reads) as reads,
        sum(writes) as writes,
        sum(read_bytes) as read_bytes,
        sum(write_bytes) as write_bytes
    from delta
    group by inst_id
),

elapsed as (
    select clock.now_t - :dnfs_prev_t as seconds from clock
)

select
    i.inst_id,
    to_char(sysdate, 'HH24:MI:SS') as sample_time,
    i.reads / e.seconds as read_iops,
    i.writes / e.seconds as write_iops,
    (i.reads + i.writes) / e.seconds as total_iops,
    i.read_bytes / 1048576 / e.seconds as read_mbps,
    i.write_bytes / 1048576 / e.seconds as write_mbps,
    i.read_bytes / 1024 / nullif(i.reads, 0) as avg_read_kb,
    i.write_bytes / 1024 / nullif(i.writes, 0) as avg_write_kb
from per_instance i
cross join elapsed e
where e.seconds > 0
order by i.inst_id;
-- core: end

set heading off
@@dnfs_iops_snapshot

@@_dnfs_next
