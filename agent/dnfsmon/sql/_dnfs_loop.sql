-- File name:   _dnfs_loop.sql (called by dnfs_iops.sql and dnfs_latency.sql)
-- Purpose:     Run the step script named by _dnfs_step up to 60 times. Each step
--              counts down and switches _dnfs_step to _dnfs_noop.sql when done;
--              a flat list keeps the nesting depth at 4 from the user's @
--              (script, loop, step, its helpers; SQL*Plus allows 20).

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
