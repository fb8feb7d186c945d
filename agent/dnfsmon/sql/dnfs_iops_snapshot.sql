-- File name:   dnfs_iops_snapshot.sql (called by dnfs_iops.sql and its step)
-- Purpose:     The one place GV$DNFS_STATS is read: every process's dNFS
--              counters, with the database clock in the same statement, into
--              :dnfs_cur (XML), :dnfs_cur_t (seconds), :dnfs_cur_n (processes)
--              and :dnfs_cur_clock (HH24:MI:SS). The temporary LOB :dnfs_cur
--              held is freed first (dnfs_iops_shift.sql keeps a copy of its own).

define _dnfs_lob = dnfs_cur
@@_dnfs_free_lob.sql
begin
    with processes as (
        select
            s.inst_id,
            s.pnum,
            s.nfs_read,
            s.nfs_write,
            s.nfs_readbytes,
            s.nfs_writebytes,
            nvl(p.spid, '?') as spid,
            nvl(p.serial#, -1) as serial
        from gv$dnfs_stats s
        left outer join gv$process p on s.inst_id = p.inst_id and s.pnum = p.pid
    )
    select
        xmlserialize(
            content xmlelement(
                "s",
                xmlagg(
                    xmlelement(
                        "p",
                        xmlattributes(
                            inst_id as "i",
                            pnum as "n",
                            spid as "s",
                            serial as "e",
                            nfs_read as "r",
                            nfs_write as "w",
                            nfs_readbytes as "rb",
                            nfs_writebytes as "wb"
                        )
                    )
                )
            ) as clob
        ) as snapshot,
        (cast(sys_extract_utc(systimestamp) as date) - date '1970-01-01') * 86400
        + mod(extract(second from systimestamp), 1) as taken_at,
        count(*) as processes,
        to_char(systimestamp, 'HH24:MI:SS') as clock
    into :dnfs_cur, :dnfs_cur_t, :dnfs_cur_n, :dnfs_cur_clock
    from processes;
end;
/
