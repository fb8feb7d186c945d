"""dnfsmon: a monitoring agent for Oracle Direct NFS and the host beneath it."""

__version__ = "0.1.0"
