-- File name:   dnfs_iops_step.sql (called by _dnfs_loop.sql for dnfs_iops.sql)
-- Purpose:     Sleep one interval, take the next snapshot, print the interval
--              between the two snapshots per instance (arithmetic only: no
--              view is read here), and make the new snapshot the previous one.

@@_dnfs_sleep.sql
@@dnfs_iops_snapshot.sql

-- core: the interval that just ended, per instance
with
cur as (
    -- sqlfluff's oracle dialect cannot parse XMLTABLE, hence the noqa.
    select * from xmltable( -- noqa: PRS
        '/s/p' passing xmltype(:dnfs_cur)
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
prev as (
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
prev_instances as (
    select distinct inst_id from prev
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
    union all
    -- A process that started since the previous snapshot counts from zero:
    -- its PNUM was absent then, or held by another known process. That its
    -- counters started at zero is assumed, not documented (V$DNFS_STATS in
    -- the Reference) and not checked here (README.md, "Intervals"). Known:
    -- dnfs_iops_snapshot.sql stores '?' and -1 for a process missing from
    -- GV$PROCESS, and such a row tells nothing (the agent's UNKNOWN_PROCESS).
    select
        c.inst_id,
        c.nfs_read as reads,
        c.nfs_write as writes,
        c.nfs_readbytes as read_bytes,
        c.nfs_writebytes as write_bytes
    from cur c
    inner join prev_instances seen on c.inst_id = seen.inst_id
    left outer join prev p on c.inst_id = p.inst_id and c.pnum = p.pnum
    where
        p.pnum is null
        or (
            c.spid != '?' and c.serial != -1
            and p.spid != '?' and p.serial != -1
            and (c.spid != p.spid or c.serial != p.serial)
        )
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
printed as (
    select
        inst_id,
        :dnfs_cur_clock as label,
        reads,
        writes,
        read_bytes,
        write_bytes
    from per_instance
    union all
    -- RAC: the instances' sum over the same interval, one more line when more
    -- than one instance printed (Inst blank, 'total' for the time).
    select
        null as inst_id,
        'total' as label,
        t.reads,
        t.writes,
        t.read_bytes,
        t.write_bytes
    from (
        select
            count(*) as instances,
            sum(reads) as reads,
            sum(writes) as writes,
            sum(read_bytes) as read_bytes,
            sum(write_bytes) as write_bytes
        from per_instance
    ) t
    where t.instances > 1
)
select
    i.inst_id as dnfs_inst_id,
    i.label as dnfs_sample_time,
    i.reads / (:dnfs_cur_t - :dnfs_prev_t) as read_iops,
    i.writes / (:dnfs_cur_t - :dnfs_prev_t) as write_iops,
    (i.reads + i.writes) / (:dnfs_cur_t - :dnfs_prev_t) as total_iops,
    i.read_bytes / 1048576 / (:dnfs_cur_t - :dnfs_prev_t) as read_mbps,
    i.write_bytes / 1048576 / (:dnfs_cur_t - :dnfs_prev_t) as write_mbps,
    i.read_bytes / 1024 / nullif(i.reads, 0) as avg_read_kb,
    i.write_bytes / 1024 / nullif(i.writes, 0) as avg_write_kb
from printed i
where :dnfs_cur_t > :dnfs_prev_t
order by i.inst_id nulls last;
-- core: end

select :dnfs_cur_clock || ' No rows in GV$DNFS_STATS: no process does dNFS I/O (see @dnfs_check).' as note
from dual
where :dnfs_cur_n = 0;

@@dnfs_iops_shift.sql

set heading off newpage none
@@_dnfs_next.sql
