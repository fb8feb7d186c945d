-- File name:   dnfs_iops_print.sql (called by dnfs_iops_step.sql and dnfs_iops.sql)
-- Purpose:     Print per-instance NFS call totals (the rows of :dnfs_run,
--              made by dnfs_iops_accumulate.sql, of the kind _dnfs_kind names,
--              over the microseconds in the bind _dnfs_from_us names): one line per instance, and
--              on RAC one more line for the instances together (Inst blank,
--              Time 'total'). The step passes the interval that just ended;
--              dnfs_iops.sql passes the run's totals after the loop (the
--              intervals' diffs added up, as the intervals follow each other
--              with no gap). Arithmetic only: no view is read here. One query
--              for both, so the interval lines and the run lines cannot differ
--              in formula. An instance measured over fewer seconds than the
--              whole (it was seen in only some intervals of the run) shows its
--              seconds as its Time, and is left out of the total. Times are
--              whole microseconds (dnfs_iops_accumulate.sql says why), so the
--              comparisons below are of whole numbers; the rates divide by
--              the seconds they make, as before.
-- Called as:   define _dnfs_kind = "'interval'"       (or "'run'")
--              define _dnfs_from_us = dnfs_iv_us     (or dnfs_run_us)
--              define _dnfs_label = ":dnfs_cur_clock" (or "'run'")
--              @@dnfs_iops_print.sql

-- core: NFS calls per instance and in total
with
totals as (
    -- sqlfluff's oracle dialect cannot parse XMLTABLE, hence the noqa. NULL
    -- (no interval ran, or its query failed) reads as no instance.
    select * from xmltable( -- noqa: PRS
        '/s/i' passing xmltype(nvl(:dnfs_run, '<s/>'))
        columns
        kind varchar2(8) path '@k',
        inst_id number path '@i',
        reads number path '@r',
        writes number path '@w',
        read_bytes number path '@rb',
        write_bytes number path '@wb',
        microseconds number path '@t'
    )
),
per_instance as (
    select
        inst_id,
        reads,
        writes,
        read_bytes,
        write_bytes,
        microseconds
    from totals
    where kind = &_dnfs_kind
),
printed as (
    select
        inst_id,
        case
            when microseconds < :&_dnfs_from_us then to_char(round(microseconds / 1000000)) || ' s'
            else &_dnfs_label
        end as label,
        reads,
        writes,
        read_bytes,
        write_bytes,
        microseconds / 1000000 as seconds
    from per_instance
    union all
    -- RAC: the instances measured over all the seconds, summed, one more line
    -- when there is more than one.
    select
        null as inst_id,
        'total' as label,
        sum(reads) as reads,
        sum(writes) as writes,
        sum(read_bytes) as read_bytes,
        sum(write_bytes) as write_bytes,
        max(microseconds) / 1000000 as seconds
    from per_instance
    where microseconds = :&_dnfs_from_us
    having count(*) > 1
)
select
    i.inst_id as dnfs_inst_id,
    i.label as dnfs_sample_time,
    i.reads / i.seconds as read_iops,
    i.writes / i.seconds as write_iops,
    (i.reads + i.writes) / i.seconds as total_iops,
    i.read_bytes / 1048576 / i.seconds as read_mbps,
    i.write_bytes / 1048576 / i.seconds as write_mbps,
    i.read_bytes / 1024 / nullif(i.reads, 0) as avg_read_kb,
    i.write_bytes / 1024 / nullif(i.writes, 0) as avg_write_kb
from printed i
where i.seconds > 0
order by i.inst_id nulls last;
-- core: end
