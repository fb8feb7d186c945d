-- File name:   dnfs_latency_snapshot.sql (called by dnfs_latency.sql and its step)
-- Purpose:     Keep the I/O events' totals and the 'db file sequential read'
--              histogram, with the database clock, in bind variables.

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
        + mod(extract(second from systimestamp), 1) as taken_at
    into :dnfs_ev_prev, :dnfs_prev_t
    from gv$system_event
    where event in (
        'db file sequential read', 'db file scattered read', 'db file parallel read',
        'direct path read', 'direct path write', 'log file parallel write',
        'db file parallel write', 'control file sequential read'
    );

    select
        xmlserialize(
            content xmlelement(
                "s",
                xmlagg(xmlelement("b", xmlattributes(inst_id as "i", &_dnfs_hist_bound as "u", wait_count as "c")))
            ) as clob
        ) as snapshot
    into :dnfs_hist_prev
    from &_dnfs_hist_view
    where event = 'db file sequential read';
end;
/
