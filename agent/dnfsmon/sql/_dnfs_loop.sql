-- File name:   _dnfs_loop.sql (called by dnfs_iops.sql and dnfs_latency.sql)
-- Purpose:     Run the step script named by _dnfs_step up to 60 times. Each step
--              counts down and switches _dnfs_step to _dnfs_noop.sql when done;
--              a flat list keeps the nesting depth from growing with the count:
--              7 at the deepest from the user's @ (script, loop, step, the
--              histogram step, its shift, _dnfs_shift_lob, _dnfs_free_lob;
--              SQL*Plus allows 20).

@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
@@&_dnfs_step..sql
