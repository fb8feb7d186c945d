-- File name:   _dnfs_next.sql (called at the end of each step script)
-- Purpose:     Count the interval down; after the last one, or after Ctrl-C
--              during a sleep (see _dnfs_sleep.sql), point _dnfs_step at
--              _dnfs_noop.sql so the rest of _dnfs_loop.sql does nothing.
--              The columns are set in _dnfs_start.sql.

select
    case when &_dnfs_remaining <= 1 or :dnfs_stop = 1 then '_dnfs_noop' else '&_dnfs_step' end as next_step,
    &_dnfs_remaining - 1 as remaining
from dual;
