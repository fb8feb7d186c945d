-- File name:   _dnfs_shift_lob.sql (called by the *_shift.sql helpers)
-- Purpose:     Make the snapshot just taken the previous one: copy the new
--              one into a temporary LOB of its own (so the next snapshot can
--              free the new one's before it replaces it), then free the
--              previous one's, put the copy in its bind and take its time. A CLOB bind's temporary LOB stays allocated until it
--              is freed (SQL*Plus User's Guide and Reference, VARIABLE: "you
--              may need to manually free temporary LOBs with
--              DBMS_LOB.FREETEMPORARY"). The binds are named by substitution
--              variables, as _dnfs_free_lob.sql's is, so one block serves every
--              snapshot.
-- Usage:       define _dnfs_lob_cur = dnfs_cur
--              define _dnfs_lob_prev = dnfs_prev
--              define _dnfs_lob_cur_t = dnfs_cur_t
--              define _dnfs_lob_prev_t = dnfs_prev_t
--              @@_dnfs_shift_lob.sql

declare
    -- The new copy exists before the previous one is freed, and NULL (the
    -- snapshot's or the accumulation's query failed; its error is shown)
    -- leaves the previous one and its time as they were: the next interval
    -- then runs from it, and a run's totals so far are never lost.
    taken clob;
begin
    if :&_dnfs_lob_cur is not null then
        dbms_lob.createtemporary(taken, true);
        dbms_lob.copy(taken, :&_dnfs_lob_cur, dbms_lob.getlength(:&_dnfs_lob_cur));
        if :&_dnfs_lob_prev is not null and dbms_lob.istemporary(:&_dnfs_lob_prev) = 1 then
            dbms_lob.freetemporary(:&_dnfs_lob_prev);
        end if;
        -- An assignment gives the bind a copy of its own (LOB Developer's
        -- Guide, temporary LOBs), so the local one is freed after it.
        :&_dnfs_lob_prev := taken;
        dbms_lob.freetemporary(taken);
        :&_dnfs_lob_prev_t := :&_dnfs_lob_cur_t;
    end if;
end;
/
