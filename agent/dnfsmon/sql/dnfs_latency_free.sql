-- File name:   dnfs_latency_free.sql (called by dnfs_latency.sql at its start and its end)
-- Purpose:     Free the temporary LOBs of the snapshot binds and set them to
--              NULL. A CLOB bind's temporary LOB stays allocated (in the
--              temporary tablespace) until it is freed: "To free resources used
--              by CLOB and NCLOB bind variables, you may need to manually free
--              temporary LOBs" (SQL*Plus User's Guide and Reference, VARIABLE).
--              At the start it frees what a run left unfinished (binds keep
--              their values for the session); each snapshot frees the one it
--              replaces; the end frees the last ones.

begin
    if :dnfs_ev_prev is not null and dbms_lob.istemporary(:dnfs_ev_prev) = 1 then
        dbms_lob.freetemporary(:dnfs_ev_prev);
    end if;
    :dnfs_ev_prev := null;
    if :dnfs_ev_cur is not null and dbms_lob.istemporary(:dnfs_ev_cur) = 1 then
        dbms_lob.freetemporary(:dnfs_ev_cur);
    end if;
    :dnfs_ev_cur := null;
    if :dnfs_hist_prev is not null and dbms_lob.istemporary(:dnfs_hist_prev) = 1 then
        dbms_lob.freetemporary(:dnfs_hist_prev);
    end if;
    :dnfs_hist_prev := null;
    if :dnfs_hist_cur is not null and dbms_lob.istemporary(:dnfs_hist_cur) = 1 then
        dbms_lob.freetemporary(:dnfs_hist_cur);
    end if;
    :dnfs_hist_cur := null;
end;
/
