-- File name:   dnfs_latency_hist_shift.sql (called by dnfs_latency.sql and the histogram step)
-- Purpose:     Make the snapshot just taken the previous one: free the
--              temporary LOB of the previous one, copy the new one into
--              :dnfs_hist_prev (a temporary LOB of its own, so dnfs_latency_hist_snapshot.sql can free
--              :dnfs_hist_cur before it replaces it) and take its time.
--              A CLOB bind's temporary LOB stays allocated until it is freed
--              (SQL*Plus User's Guide and Reference, VARIABLE: "you may need to
--              manually free temporary LOBs with DBMS_LOB.FREETEMPORARY").

define _dnfs_lob = dnfs_hist_prev
@@_dnfs_free_lob.sql
begin
    -- NULL when the snapshot's query failed (its error is shown): nothing to copy.
    if :dnfs_hist_cur is not null then
        dbms_lob.createtemporary(:dnfs_hist_prev, true);
        dbms_lob.copy(:dnfs_hist_prev, :dnfs_hist_cur, dbms_lob.getlength(:dnfs_hist_cur));
    end if;
    :dnfs_hist_prev_t := :dnfs_hist_cur_t;
end;
/
