-- File name:   _dnfs_shift_lob.sql (called by the *_shift.sql helpers)
-- Purpose:     Make the snapshot just taken the previous one: free the
--              temporary LOB of the previous one, copy the new one into the
--              previous one's bind (a temporary LOB of its own, so the next
--              snapshot can free the new one's before it replaces it) and take
--              its time. A CLOB bind's temporary LOB stays allocated until it
--              is freed (SQL*Plus User's Guide and Reference, VARIABLE: "you
--              may need to manually free temporary LOBs with
--              DBMS_LOB.FREETEMPORARY"). The binds are named by substitution
--              variables, as _dnfs_free_lob.sql's is, so one block serves every
--              snapshot (three levels below the user's @ at the deepest: the
--              step's helper, this file and _dnfs_free_lob.sql).
-- Usage:       define _dnfs_lob_cur = dnfs_cur
--              define _dnfs_lob_prev = dnfs_prev
--              define _dnfs_lob_cur_t = dnfs_cur_t
--              define _dnfs_lob_prev_t = dnfs_prev_t
--              @@_dnfs_shift_lob.sql

define _dnfs_lob = &_dnfs_lob_prev
@@_dnfs_free_lob.sql
begin
    -- NULL when the snapshot's query failed (its error is shown): nothing to copy.
    if :&_dnfs_lob_cur is not null then
        dbms_lob.createtemporary(:&_dnfs_lob_prev, true);
        dbms_lob.copy(:&_dnfs_lob_prev, :&_dnfs_lob_cur, dbms_lob.getlength(:&_dnfs_lob_cur));
    end if;
    :&_dnfs_lob_prev_t := :&_dnfs_lob_cur_t;
end;
/
