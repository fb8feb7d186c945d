-- File name:   dnfs_latency_hist_step.sql (called by dnfs_latency_step.sql)
-- Purpose:     Take the next histogram snapshot and print the interval's
--              'db file sequential read' buckets (arithmetic only). A bucket
--              the previous snapshot lacks counts from 0: the view lists only
--              buckets hit since startup, and a first stall is the outlier
--              a DBA looks for. An instance whose STARTUP_TIME differs between
--              the two snapshots restarted in between (its buckets count again
--              from zero, V$INSTANCE): it has no line, and one line says so,
--              as in dnfs_latency_print.sql.

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
        wait_count number path '@c',
        startup varchar2(19) path '@s'
    )
),
prev as (
    select * from xmltable( -- noqa: PRS
        '/s/b' passing xmltype(:dnfs_hist_prev)
        columns
        inst_id number path '@i',
        bound_us number path '@u',
        wait_count number path '@c',
        startup varchar2(19) path '@s'
    )
),
delta as (
    select
        c.inst_id,
        c.bound_us,
        c.wait_count - nvl(p.wait_count, 0) as waits
    from cur c
    left outer join prev p on c.inst_id = p.inst_id and c.bound_us = p.bound_us
    -- An instance restarted in between (another STARTUP_TIME in any of its
    -- previous buckets) is left out; counts that went down mean the same, for
    -- a snapshot an older pack took.
    where
        c.wait_count >= nvl(p.wait_count, 0)
        and c.inst_id not in (
            select n.inst_id
            from cur n
            inner join prev r on n.inst_id = r.inst_id and n.bound_us = r.bound_us
            where n.startup != r.startup
        )
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

-- core: instances restarted between the two histogram snapshots
with
cur as (
    select * from xmltable( -- noqa: PRS
        '/s/b' passing xmltype(:dnfs_hist_cur)
        columns
        inst_id number path '@i',
        startup varchar2(19) path '@s'
    )
),
prev as (
    select * from xmltable( -- noqa: PRS
        '/s/b' passing xmltype(:dnfs_hist_prev)
        columns
        inst_id number path '@i',
        startup varchar2(19) path '@s'
    )
)
select distinct
    :dnfs_cur_clock || ' instance ' || c.inst_id || ' restarted (STARTUP_TIME ' || c.startup
    || '): left out of the histogram, its counts started again from zero' as dnfs_restart_note
from cur c
inner join prev p on c.inst_id = p.inst_id
where c.startup != p.startup;
-- core: end

@@dnfs_latency_hist_shift.sql
