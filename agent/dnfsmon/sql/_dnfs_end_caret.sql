-- File name:   _dnfs_end_caret.sql (called by _dnfs_end.sql)
-- Purpose:     Run the settings file where its name is "&_dnfs_settings" as
--              written (the DBA's DEFINE was OFF or another character), with the
--              DEFINE character ^ that _dnfs_end.sql set: the file puts the DBA's
--              DEFINE back; if STORE SET could not write it, DEFINE stays ^ (the
--              DBA's own character is not known: README.md).

@^_dnfs_settings_used
