-- File name:   dnfs_latency_step.sql (called by _dnfs_loop.sql for dnfs_latency.sql)
-- Purpose:     Sleep one interval, print its events and histogram, take the next snapshot.

@@_dnfs_sleep

-- core: events in the interval that just ended
with
clock as (
    select
        (cast(sys_extract_utc(systimestamp) as date) - date '1970-01-01') * 86400
        + mod(extract(second from systimestamp), 1) as now_t
    from dual
),

cur as (
    select
        inst_id,
        event,
        total_waits,
        time_waited_micro,
        total_waits_fg,
        time_waited_micro_fg
    from gv$system_event
    where event in (
        'db file sequential read', 'db file scattered read', 'db file parallel read',
        'direct path read', 'direct path write', 'log file parallel write',
        'db file parallel write', 'control file sequential read'
    )
),

prev as (
    -- The previous snapshot (see the *_snapshot.sql script). sqlfluff's
    -- oracle dialect cannot parse XMLTABLE, hence the noqa on its line.
    select * from xmltable( -- noqa: PRS
        '/s/e' passing xmltype(:dnfs_ev_prev)
        columns
        inst_id number path '@i',
        event varchar2(64) path '@n',
        total_waits number path '@w',
        time_waited_micro number path '@t',
        total_waits_fg number path '@wf',
        time_waited_micro_fg number path '@tf'
    )
),

elapsed as (
    select clock.now_t - :dnfs_prev_t as seconds from clock
)

select
    c.inst_id,
    c.event,
    to_char(sysdate, 'HH24:MI:SS') as sample_time,
    (c.total_waits - p.total_waits) / e.seconds as waits_per_s,
    (c.time_waited_micro - p.time_waited_micro)
    / 1000 / nullif(c.total_waits - p.total_waits, 0) as avg_ms,
    (c.time_waited_micro_fg - p.time_waited_micro_fg)
    / 1000 / nullif(c.total_waits_fg - p.total_waits_fg, 0) as fg_avg_ms
from cur c
inner join prev p on c.inst_id = p.inst_id and c.event = p.event
cross join elapsed e
where e.seconds > 0 and c.total_waits >= p.total_waits
order by c.inst_id, c.event;
-- core: end

-- core: histogram of 'db file sequential read' in the interval
with
clock as (
    select
        (cast(sys_extract_utc(systimestamp) as date) - date '1970-01-01') * 86400
        + mod(extract(second from systimestamp), 1) as now_t
    from dual
),

cur as (
    select
        inst_id,
        wait_count,
        &_dnfs_hist_bound as bound_us
    from &_dnfs_hist_view
    where event = 'db file sequential read'
),

prev as (
    -- The previous snapshot (see the *_snapshot.sql script). sqlfluff's
    -- oracle dialect cannot parse XMLTABLE, hence the noqa on its line.
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
),

elapsed as (
    select clock.now_t - :dnfs_prev_t as seconds from clock
)

select
    d.inst_id,
    to_char(d.bound_us) as bucket,
    d.waits / e.seconds as bucket_waits_per_s,
    100 * d.waits / nullif(sum(d.waits) over (partition by d.inst_id), 0) as pct
from delta d
cross join elapsed e
where e.seconds > 0 and d.waits > 0
order by d.inst_id, d.bound_us;
-- core: end

@@dnfs_latency_snapshot

@@_dnfs_next
