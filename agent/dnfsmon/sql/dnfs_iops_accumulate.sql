-- File name:   dnfs_iops_accumulate.sql (called by dnfs_iops_step.sql)
-- Purpose:     Each process's diff between the previous snapshot and the one
--              just taken (arithmetic only: no view is read here), summed per
--              instance (rows of kind 'interval': the interval that just
--              ended) and added to the run's totals so far (rows of kind
--              'run'), both into :dnfs_run_next, one XML document.
--              V$DNFS_STATS counts per process and a process's counters vanish
--              when it exits, so the run's totals cannot be the last snapshot's
--              sum minus the first's: they are the intervals' diffs added up,
--              with the time each instance was measured over (an instance
--              seen in only some intervals has less). :dnfs_iv_us and
--              :dnfs_run_next_us hold the interval's time and the run's.
--              Times are whole microseconds, in the XML and in the binds:
--              the run's total compares an instance's time read back from
--              the XML with the run's for equality, and the Oracle Database
--              Reference says neither how a NUMBER with a fraction is
--              written into XML text under a session's NLS_NUMERIC_CHARACTERS
--              (its decimal character, ',' in ',.'; Reference,
--              NLS_NUMERIC_CHARACTERS) nor that XMLTABLE reads it back
--              exactly. A whole number has no decimal character, as the
--              counters stored next to it have none. ROUND(n) with no
--              places rounds to a whole number (SQL Language Reference,
--              ROUND (number)); the snapshots' times come from the database
--              clock, whose fraction has six digits on Linux, so the
--              rounding loses nothing there.
--              The step then makes :dnfs_run_next the run's (:dnfs_run, with
--              _dnfs_shift_lob.sql), and dnfs_iops_print.sql prints either kind.

define _dnfs_lob = dnfs_run_next
@@_dnfs_free_lob.sql
declare
    interval_rows number;
begin
    select
        xmlserialize(
            content xmlelement(
                "s",
                xmlagg(
                    xmlelement(
                        "i",
                        xmlattributes(
                            kind as "k",
                            inst_id as "i",
                            reads as "r",
                            writes as "w",
                            read_bytes as "rb",
                            write_bytes as "wb",
                            microseconds as "t"
                        )
                    )
                )
            ) as clob
        ) as totals_xml,
        count(case when kind = 'interval' then 1 end) as interval_rows
    into :dnfs_run_next, interval_rows
    from (
        -- core: per instance, the interval that just ended and the run so far
        with
        cur as (
            -- sqlfluff's oracle dialect cannot parse XMLTABLE, hence the noqa.
            -- A snapshot whose query failed is NULL (its error is shown): no
            -- process, so the interval adds nothing and the run keeps its totals.
            select * from xmltable( -- noqa: PRS
                '/s/p' passing xmltype(nvl(:dnfs_cur, '<s/>'))
                columns
                inst_id number path '@i',
                pnum number path '@n',
                spid varchar2(24) path '@s',
                serial number path '@e',
                nfs_read number path '@r',
                nfs_write number path '@w',
                nfs_readbytes number path '@rb',
                nfs_writebytes number path '@wb'
            )
        ),
        prev as (
            select * from xmltable( -- noqa: PRS
                '/s/p' passing xmltype(nvl(:dnfs_prev, '<s/>'))
                columns
                inst_id number path '@i',
                pnum number path '@n',
                spid varchar2(24) path '@s',
                serial number path '@e',
                nfs_read number path '@r',
                nfs_write number path '@w',
                nfs_readbytes number path '@rb',
                nfs_writebytes number path '@wb'
            )
        ),
        run as (
            -- The run's totals so far (the rows of kind 'run'): none before the
            -- first interval (NULL).
            select * from xmltable( -- noqa: PRS
                '/s/i' passing xmltype(nvl(:dnfs_run, '<s/>'))
                columns
                kind varchar2(8) path '@k',
                inst_id number path '@i',
                reads number path '@r',
                writes number path '@w',
                read_bytes number path '@rb',
                write_bytes number path '@wb',
                microseconds number path '@t'
            )
        ),
        prev_instances as (
            select distinct inst_id from prev
        ),
        delta as (
            -- A process counts only when present, and the same process, at both ends.
            select
                c.inst_id,
                c.nfs_read - p.nfs_read as reads,
                c.nfs_write - p.nfs_write as writes,
                c.nfs_readbytes - p.nfs_readbytes as read_bytes,
                c.nfs_writebytes - p.nfs_writebytes as write_bytes
            from cur c
            inner join prev p
                on
                    c.inst_id = p.inst_id
                    and c.pnum = p.pnum
                    and c.spid = p.spid
                    and c.serial = p.serial
            where c.nfs_read >= p.nfs_read and c.nfs_write >= p.nfs_write
            union all
            -- A process that started since the previous snapshot counts from zero:
            -- its PNUM was absent then, or held by another known process. That its
            -- counters started at zero is assumed, not documented (V$DNFS_STATS in
            -- the Reference) and not checked here (README.md, "Intervals"). Known:
            -- dnfs_iops_snapshot.sql stores '?' and -1 for a process missing from
            -- GV$PROCESS, and such a row tells nothing (the agent's UNKNOWN_PROCESS).
            select
                c.inst_id,
                c.nfs_read as reads,
                c.nfs_write as writes,
                c.nfs_readbytes as read_bytes,
                c.nfs_writebytes as write_bytes
            from cur c
            inner join prev_instances seen on c.inst_id = seen.inst_id
            left outer join prev p on c.inst_id = p.inst_id and c.pnum = p.pnum
            where
                p.pnum is null
                or (
                    c.spid != '?' and c.serial != -1
                    and p.spid != '?' and p.serial != -1
                    and (c.spid != p.spid or c.serial != p.serial)
                )
        ),
        interval_totals as (
            -- Each instance's time is the interval's, the same for all.
            select
                inst_id,
                sum(reads) as reads,
                sum(writes) as writes,
                sum(read_bytes) as read_bytes,
                sum(write_bytes) as write_bytes,
                round((:dnfs_cur_t - :dnfs_prev_t) * 1000000) as microseconds
            from delta
            where :dnfs_cur_t > :dnfs_prev_t
            group by inst_id
        ),
        run_totals as (
            -- The run so far plus this interval, per instance: counts and microseconds.
            select
                inst_id,
                sum(reads) as reads,
                sum(writes) as writes,
                sum(read_bytes) as read_bytes,
                sum(write_bytes) as write_bytes,
                sum(microseconds) as microseconds
            from (
                select
                    inst_id,
                    reads,
                    writes,
                    read_bytes,
                    write_bytes,
                    microseconds
                from run
                where kind = 'run'
                union all
                select
                    inst_id,
                    reads,
                    writes,
                    read_bytes,
                    write_bytes,
                    microseconds
                from interval_totals
            ) both_parts
            group by inst_id
        )
        select
            'interval' as kind,
            inst_id,
            reads,
            writes,
            read_bytes,
            write_bytes,
            microseconds
        from interval_totals
        union all
        select
            'run' as kind,
            inst_id,
            reads,
            writes,
            read_bytes,
            write_bytes,
            microseconds
        from run_totals
        -- core: end
    ) totals;
    :dnfs_iv_us := case when :dnfs_cur_t > :dnfs_prev_t then round((:dnfs_cur_t - :dnfs_prev_t) * 1000000) end;
    -- The run's time grows only by an interval some instance was measured
    -- over: an interval without rows (no process diffed) adds none, or no
    -- instance would ever match the run's time again.
    :dnfs_run_next_us := nvl(:dnfs_run_us, 0) + case when interval_rows > 0 then nvl(:dnfs_iv_us, 0) else 0 end;
end;
/
