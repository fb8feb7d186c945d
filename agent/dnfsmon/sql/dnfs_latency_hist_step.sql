-- File name:   dnfs_latency_hist_step.sql (called by dnfs_latency_step.sql)
-- Purpose:     Take the next histogram snapshot and print the interval's
--              'db file sequential read' buckets (arithmetic only). A bucket
--              the previous snapshot lacks counts from 0: the view lists only
--              buckets hit since startup, and a first stall is the outlier
--              a DBA looks for.

@@dnfs_latency_hist_snapshot.sql

-- core: histogram of 'db file sequential read' in the interval
with
cur as (
    -- sqlfluff's oracle dialect cannot parse XMLTABLE, hence the noqa.
    select * from xmltable( -- noqa: PRS
        '/s/b' passing xmltype(:dnfs_hist_cur)
        columns
        inst_id number path '@i',
        bound_us number path '@u',
        wait_count number path '@c'
    )
),
prev as (
    select * from xmltable( -- noqa: PRS
        '/s/b' passing xmltype(:dnfs_hist_prev)
        columns
        inst_id number path '@i',
        bound_us number path '@u',
        wait_count number path '@c'
    )
),
delta as (
    select
        c.inst_id,
        c.bound_us,
        c.wait_count - nvl(p.wait_count, 0) as waits
    from cur c
    left outer join prev p on c.inst_id = p.inst_id and c.bound_us = p.bound_us
    where c.wait_count >= nvl(p.wait_count, 0)
)
select
    d.inst_id as dnfs_inst_id,
    to_char(d.bound_us) as bucket,
    d.waits / (:dnfs_hist_cur_t - :dnfs_hist_prev_t) as bucket_waits_per_s,
    100 * d.waits / nullif(sum(d.waits) over (partition by d.inst_id), 0) as pct
from delta d
where :dnfs_hist_cur_t > :dnfs_hist_prev_t and d.waits > 0
order by d.inst_id, d.bound_us;
-- core: end

@@dnfs_latency_hist_shift.sql
