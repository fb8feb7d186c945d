-- File name:   dnfs_channels.sql
-- Purpose:     dNFS network paths per instance and filer: the number of paths
--              per filer, and per path and local address the sends,
--              receives, pings, reconnects and the path's share of its
--              filer's sends (are the paths balanced? is one flapping?).
-- Usage:       @dnfs_channels
-- Notes:       Reads GV$DNFS_CHANNELS (one row per process per path).
--              SENDS, RECVS, PINGS and the reconnect counts count since the
--              LAST SELECT OF THE VIEW BY ANYONE: this script's figures cover
--              the time since the previous select (yours, another DBA's, or a
--              monitoring agent's), and reading the view resets them for the
--              next reader. Compare shares, not absolute counts; run it twice
--              a known time apart for rates.
--              Reconnects: RECO in 11.2.0.4, SPRECO + DPRECO from 12.1.0.2,
--              none in 12.1.0.1 (shown empty). Read-only. 11.2.0.4+.

define _dnfs_default_interval = 0
define _dnfs_default_count = 0
define _dnfs_loop_step = _dnfs_noop
define _dnfs_report = dnfs_channels_report
@@_dnfs_start.sql
-- What reads the views (dnfs_channels_report.sql) runs only on an open database:
-- mounted, its counts and sorts may need a temporary segment, which fails
-- there (Database Error Messages, ORA-01220: "Only in-memory sorts are
-- supported before the database is open"); _dnfs_start.sql then prints one
-- line naming the agent instead.
@@&_dnfs_report_step..sql
@@_dnfs_end.sql
