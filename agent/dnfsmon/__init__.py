"""dnfsmon: a monitoring agent for Oracle Direct NFS and the host beneath it."""

# The one place the version is written: pyproject.toml reads it for the wheel
# (setuptools' dynamic version), the CLI prints it, the tests compare with it.
__version__ = "0.1.0"
