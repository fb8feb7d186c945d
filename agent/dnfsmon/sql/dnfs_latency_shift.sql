-- File name:   dnfs_latency_shift.sql (called by dnfs_latency.sql and its step)
-- Purpose:     Make the snapshot just taken the previous one: free the
--              temporary LOB of the previous one, copy the new one into
--              :dnfs_ev_prev (a temporary LOB of its own, so dnfs_latency_snapshot.sql can free
--              :dnfs_ev_cur before it replaces it) and take its time.
--              A CLOB bind's temporary LOB stays allocated until it is freed
--              (SQL*Plus User's Guide and Reference, VARIABLE: "you may need to
--              manually free temporary LOBs with DBMS_LOB.FREETEMPORARY").

define _dnfs_lob = dnfs_ev_prev
@@_dnfs_free_lob.sql
begin
    -- NULL when the snapshot's query failed (its error is shown): nothing to copy.
    if :dnfs_ev_cur is not null then
        dbms_lob.createtemporary(:dnfs_ev_prev, true);
        dbms_lob.copy(:dnfs_ev_prev, :dnfs_ev_cur, dbms_lob.getlength(:dnfs_ev_cur));
    end if;
    :dnfs_prev_t := :dnfs_cur_t;
end;
/
