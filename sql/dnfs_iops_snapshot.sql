-- File name:   dnfs_iops_snapshot.sql (called by dnfs_iops.sql and its step)
-- Purpose:     Keep every process's dNFS counters, with the database clock, in
--              the bind variables :dnfs_prev (XML) and :dnfs_prev_t (seconds).

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
        + mod(extract(second from systimestamp), 1) as taken_at
    into :dnfs_prev, :dnfs_prev_t
    from processes;
end;
/
