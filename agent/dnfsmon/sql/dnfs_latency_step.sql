-- File name:   dnfs_latency_step.sql (called by _dnfs_loop.sql for dnfs_latency.sql)
-- Purpose:     Sleep one interval, take the next events snapshot, print the
--              interval between the two snapshots (arithmetic only: no view
--              is read here), then the histogram part when it runs.

@@_dnfs_sleep.sql
@@dnfs_latency_snapshot.sql

-- core: events in the interval that just ended
with
cur as (
    -- sqlfluff's oracle dialect cannot parse XMLTABLE, hence the noqa.
    select * from xmltable( -- noqa: PRS
        '/s/e' passing xmltype(:dnfs_ev_cur)
        columns
        inst_id number path '@i',
        event varchar2(64) path '@n',
        total_waits number path '@w',
        time_waited_micro number path '@t',
        total_waits_fg number path '@wf',
        time_waited_micro_fg number path '@tf'
    )
),
prev as (
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
)
select
    c.inst_id as dnfs_inst_id,
    c.event as dnfs_event,
    :dnfs_cur_clock as dnfs_sample_time,
    (c.total_waits - p.total_waits) / (:dnfs_cur_t - :dnfs_prev_t) as waits_per_s,
    (c.time_waited_micro - p.time_waited_micro)
    / 1000 / nullif(c.total_waits - p.total_waits, 0) as avg_ms,
    (c.time_waited_micro_fg - p.time_waited_micro_fg)
    / 1000 / nullif(c.total_waits_fg - p.total_waits_fg, 0) as fg_avg_ms
from cur c
inner join prev p on c.inst_id = p.inst_id and c.event = p.event
where :dnfs_cur_t > :dnfs_prev_t and c.total_waits >= p.total_waits
order by c.inst_id, c.event;
-- core: end

@@dnfs_latency_shift.sql

@@&_dnfs_hist_step..sql
@@_dnfs_next.sql
