-- File name:   dnfs_latency_print.sql (called by dnfs_latency_step.sql and dnfs_latency.sql)
-- Purpose:     Print the I/O wait events between an earlier events snapshot
--              (the bind named by _dnfs_from, taken at the bind named by
--              _dnfs_from_t) and the latest one (:dnfs_ev_cur at :dnfs_cur_t):
--              one line per instance and event, and on RAC one more line per
--              event for the instances together (Inst blank, Time 'total').
--              The step passes the previous snapshot (the interval that just
--              ended); dnfs_latency.sql passes the first one after the loop
--              (the whole run: the intervals are contiguous, so the run's waits
--              are the sum of its intervals' waits, and its seconds too).
--              Arithmetic only: no view is read here. One query for both, so
--              the interval lines and the run lines cannot differ in formula.
--              An instance whose STARTUP_TIME differs between the two
--              snapshots restarted in between: it has no line and is not in
--              the total, and one line says so.
-- Called as:   define _dnfs_from = dnfs_ev_prev      (or dnfs_ev_first)
--              define _dnfs_from_t = dnfs_prev_t     (or dnfs_first_t)
--              define _dnfs_label = ":dnfs_cur_clock" (or "'run'")
--              @@dnfs_latency_print.sql

-- core: events between two snapshots, per instance and in total
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
        time_waited_micro_fg number path '@tf',
        startup varchar2(19) path '@u'
    )
),
prev as (
    select * from xmltable( -- noqa: PRS
        '/s/e' passing xmltype(:&_dnfs_from)
        columns
        inst_id number path '@i',
        event varchar2(64) path '@n',
        total_waits number path '@w',
        time_waited_micro number path '@t',
        total_waits_fg number path '@wf',
        time_waited_micro_fg number path '@tf',
        startup varchar2(19) path '@u'
    )
),
delta as (
    -- An instance restarted in between (another STARTUP_TIME; V$INSTANCE)
    -- counts again from zero: no line for it (the note below names it). Counts
    -- that went down mean the same, for a snapshot an older pack took.
    select
        c.inst_id,
        c.event,
        c.total_waits - p.total_waits as waits,
        c.time_waited_micro - p.time_waited_micro as waited_us,
        c.total_waits_fg - p.total_waits_fg as waits_fg,
        c.time_waited_micro_fg - p.time_waited_micro_fg as waited_fg_us
    from cur c
    inner join prev p on c.inst_id = p.inst_id and c.event = p.event and c.startup = p.startup
    where c.total_waits >= p.total_waits
),
printed as (
    select
        inst_id,
        event,
        &_dnfs_label as label,
        waits,
        waited_us,
        waits_fg,
        waited_fg_us
    from delta
    union all
    -- RAC: the instances together over the same seconds (waits summed, average
    -- = time summed / waits summed), when more than one instance printed.
    select
        null as inst_id,
        event,
        'total' as label,
        sum(waits) as waits,
        sum(waited_us) as waited_us,
        sum(waits_fg) as waits_fg,
        sum(waited_fg_us) as waited_fg_us
    from delta
    group by event
    having count(*) > 1
)
select
    d.inst_id as dnfs_inst_id,
    d.event as dnfs_event,
    d.label as dnfs_sample_time,
    d.waits / (:dnfs_cur_t - :&_dnfs_from_t) as waits_per_s,
    d.waited_us / 1000 / nullif(d.waits, 0) as avg_ms,
    d.waited_fg_us / 1000 / nullif(d.waits_fg, 0) as fg_avg_ms
from printed d
where :dnfs_cur_t > :&_dnfs_from_t
order by d.inst_id nulls last, d.event;
-- core: end

-- core: instances restarted between the two snapshots
with
cur as (
    select * from xmltable( -- noqa: PRS
        '/s/e' passing xmltype(:dnfs_ev_cur)
        columns
        inst_id number path '@i',
        startup varchar2(19) path '@u'
    )
),
prev as (
    select * from xmltable( -- noqa: PRS
        '/s/e' passing xmltype(:&_dnfs_from)
        columns
        inst_id number path '@i',
        startup varchar2(19) path '@u'
    )
)
select distinct
    &_dnfs_label || ' instance ' || c.inst_id || ' restarted (STARTUP_TIME ' || c.startup
    || '): left out, its counts started again from zero' as dnfs_restart_note
from cur c
inner join prev p on c.inst_id = p.inst_id
where c.startup != p.startup;
-- core: end
