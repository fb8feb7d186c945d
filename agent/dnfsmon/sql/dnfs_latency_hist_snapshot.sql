-- File name:   dnfs_latency_hist_snapshot.sql (called by dnfs_latency.sql and its histogram step)
-- Purpose:     The one place the event histogram is read: the 'db file
--              sequential read' buckets, with the database clock in the same
--              statement, into :dnfs_hist_cur and :dnfs_hist_cur_t, after
--              freeing the temporary LOB :dnfs_hist_cur held.

define _dnfs_lob = dnfs_hist_cur
@@_dnfs_free_lob.sql
begin
    select
        xmlserialize(
            content xmlelement(
                "s",
                xmlagg(xmlelement("b", xmlattributes(inst_id as "i", &_dnfs_hist_bound as "u", wait_count as "c")))
            ) as clob
        ) as snapshot,
        (cast(sys_extract_utc(systimestamp) as date) - date '1970-01-01') * 86400
        + mod(extract(second from systimestamp), 1) as taken_at
    into :dnfs_hist_cur, :dnfs_hist_cur_t
    from &_dnfs_hist_view
    where event = 'db file sequential read';
end;
/
