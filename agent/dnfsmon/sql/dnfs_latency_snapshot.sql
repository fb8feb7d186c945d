-- File name:   dnfs_latency_snapshot.sql (called by dnfs_latency.sql and its step)
-- Purpose:     The one place GV$SYSTEM_EVENT is read: the I/O events' totals,
--              each with its instance's STARTUP_TIME (GV$INSTANCE: an instance
--              restarted in between counts again from zero, and comparing the
--              totals alone misses a restart after which it waited more than
--              before), with the database clock in the same statement, into
--              :dnfs_ev_cur, :dnfs_cur_t and :dnfs_cur_clock, after freeing the
--              temporary LOB :dnfs_ev_cur held (dnfs_latency_shift.sql keeps a
--              copy of its own). A block of its own, so a failure of the
--              histogram's block cannot stop it.

define _dnfs_lob = dnfs_ev_cur
@@_dnfs_free_lob.sql
begin
    with events as (
        select
            e.inst_id,
            e.event,
            e.total_waits,
            e.time_waited_micro,
            e.total_waits_fg,
            e.time_waited_micro_fg,
            to_char(i.startup_time, 'YYYY-MM-DD HH24:MI:SS') as startup
        from gv$system_event e
        inner join gv$instance i on e.inst_id = i.inst_id
        where e.event in (&_dnfs_io_events, &_dnfs_other_events)
    )
    select
        xmlserialize(
            content xmlelement(
                "s",
                xmlagg(
                    xmlelement(
                        "e",
                        xmlattributes(
                            inst_id as "i",
                            event as "n",
                            total_waits as "w",
                            time_waited_micro as "t",
                            total_waits_fg as "wf",
                            time_waited_micro_fg as "tf",
                            startup as "u"
                        )
                    )
                )
            ) as clob
        ) as snapshot,
        (cast(sys_extract_utc(systimestamp) as date) - date '1970-01-01') * 86400
        + mod(extract(second from systimestamp), 1) as taken_at,
        to_char(systimestamp, 'HH24:MI:SS') as clock
    into :dnfs_ev_cur, :dnfs_cur_t, :dnfs_cur_clock
    from events;
end;
/
