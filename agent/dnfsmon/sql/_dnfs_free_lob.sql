-- File name:   _dnfs_free_lob.sql (called by the looping scripts' helpers)
-- Purpose:     Free the temporary LOB of the CLOB bind named by _dnfs_lob and
--              set the bind to NULL. A CLOB bind's temporary LOB stays
--              allocated (in the temporary tablespace) until it is freed: "To
--              free resources used by CLOB and NCLOB bind variables, you may
--              need to manually free temporary LOBs" (SQL*Plus User's Guide
--              and Reference, VARIABLE). A block of its own that nothing else
--              can fail: the bind never keeps a locator already freed, which a
--              later call would refuse (a failed block may leave its binds as
--              they were).
-- Usage:       define _dnfs_lob = dnfs_cur
--              @@_dnfs_free_lob.sql

begin
    if :&_dnfs_lob is not null and dbms_lob.istemporary(:&_dnfs_lob) = 1 then
        dbms_lob.freetemporary(:&_dnfs_lob);
    end if;
    :&_dnfs_lob := null;
end;
/
