-- File name:   _dnfs_sleep.sql (called by the step scripts)
-- Purpose:     Sleep one interval: DBMS_SESSION.SLEEP from 18c, DBMS_LOCK.SLEEP
--              before (see _dnfs_start.sql). Ctrl-C during the sleep cancels
--              the call (ORA-01013); the block catches it and sets :dnfs_stop,
--              and _dnfs_next.sql then ends the loop, so the settings are put
--              back after one Ctrl-C.
-- noqa: disable=LT02
-- (sqlfluff's oracle dialect indents an exception handler one level deeper
-- than its BEGIN; PL/SQL's own layout lines them up.)

begin
    &_dnfs_sleep(&_dnfs_interval);
exception
    when others then
        if sqlcode = -1013 then
            :dnfs_stop := 1;
        else
            raise;
        end if;
end;
/
