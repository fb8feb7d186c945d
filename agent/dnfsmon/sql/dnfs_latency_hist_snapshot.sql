-- File name:   dnfs_latency_hist_snapshot.sql (called by dnfs_latency.sql and its histogram step)
-- Purpose:     The one place the event histogram is read: the 'db file
--              sequential read' buckets, each with its instance's STARTUP_TIME
--              (GV$INSTANCE, as dnfs_latency_snapshot.sql reads it: a restarted
--              instance counts again from zero, and a bucket that grew past its
--              count before the restart looks like an ordinary increase), with
--              the database clock in the same statement, into :dnfs_hist_cur and
--              :dnfs_hist_cur_t, after freeing the temporary LOB :dnfs_hist_cur
--              held.

define _dnfs_lob = dnfs_hist_cur
@@_dnfs_free_lob.sql
begin
    with buckets as (
        select
            h.inst_id,
            h.&_dnfs_hist_bound as bound_us,
            h.wait_count,
            to_char(i.startup_time, 'YYYY-MM-DD HH24:MI:SS') as startup
        from &_dnfs_hist_view h
        inner join gv$instance i on h.inst_id = i.inst_id
        where h.event = 'db file sequential read'
    )
    select
        xmlserialize(
            content xmlelement(
                "s",
                xmlagg(
                    xmlelement(
                        "b", xmlattributes(inst_id as "i", bound_us as "u", wait_count as "c", startup as "s")
                    )
                )
            ) as clob
        ) as snapshot,
        (cast(sys_extract_utc(systimestamp) as date) - date '1970-01-01') * 86400
        + mod(extract(second from systimestamp), 1) as taken_at
    into :dnfs_hist_cur, :dnfs_hist_cur_t
    from buckets;
end;
/
