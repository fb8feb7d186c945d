-- File name:   dnfs_latency_snapshot.sql (called by dnfs_latency.sql and its step)
-- Purpose:     The one place GV$SYSTEM_EVENT is read: the I/O events' totals,
--              with the database clock in the same statement, into
--              :dnfs_ev_cur, :dnfs_cur_t and :dnfs_cur_clock, after freeing the
--              temporary LOB :dnfs_ev_cur held (dnfs_latency_shift.sql keeps a
--              copy of its own). A block of its own, so a failure of the
--              histogram's block cannot stop it.

define _dnfs_lob = dnfs_ev_cur
@@_dnfs_free_lob.sql
begin
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
                            time_waited_micro_fg as "tf"
                        )
                    )
                )
            ) as clob
        ) as snapshot,
        (cast(sys_extract_utc(systimestamp) as date) - date '1970-01-01') * 86400
        + mod(extract(second from systimestamp), 1) as taken_at,
        to_char(systimestamp, 'HH24:MI:SS') as clock
    into :dnfs_ev_cur, :dnfs_cur_t, :dnfs_cur_clock
    from gv$system_event
    where event in (&_dnfs_io_events, &_dnfs_other_events);
end;
/
