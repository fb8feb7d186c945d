-- File name:   _dnfs_sleep.sql (called by the step scripts)
-- Purpose:     Sleep one interval: DBMS_SESSION.SLEEP from 18c, DBMS_LOCK.SLEEP
--              before (see _dnfs_start.sql).

begin
    &_dnfs_sleep(&_dnfs_interval);
end;
/
