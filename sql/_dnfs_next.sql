-- File name:   _dnfs_next.sql (called at the end of each step script)
-- Purpose:     Count the interval down; after the last one, point &_dnfs_step
--              at _dnfs_noop.sql so the rest of _dnfs_loop.sql does nothing.

set termout off
column next_step new_value _dnfs_step noprint
column remaining new_value _dnfs_remaining noprint
select
    case when &_dnfs_remaining <= 1 then '_dnfs_noop' else '&_dnfs_step' end as next_step,
    &_dnfs_remaining - 1 as remaining
from dual;
set termout on
