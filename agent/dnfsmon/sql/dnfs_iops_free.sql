-- File name:   dnfs_iops_free.sql (called by dnfs_iops.sql at its start and its end)
-- Purpose:     Free the temporary LOBs of the snapshot binds and set them to
--              NULL. A CLOB bind's temporary LOB stays allocated (in the
--              temporary tablespace) until it is freed: "To free resources used
--              by CLOB and NCLOB bind variables, you may need to manually free
--              temporary LOBs" (SQL*Plus User's Guide and Reference, VARIABLE).
--              At the start it frees what a run left unfinished (binds keep
--              their values for the session); each snapshot frees the one it
--              replaces; the end frees the last ones.

define _dnfs_lob = dnfs_prev
@@_dnfs_free_lob.sql
define _dnfs_lob = dnfs_cur
@@_dnfs_free_lob.sql
define _dnfs_lob = dnfs_run
@@_dnfs_free_lob.sql
define _dnfs_lob = dnfs_run_next
@@_dnfs_free_lob.sql
