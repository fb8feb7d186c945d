"""Errors that are the user's environment, not a bug in dnfsmon.

A problem with a file, a directory, the disk or a server's configuration is
raised as `EnvironmentProblem` with a message that names the path or setting
and says how to fix it. The command line prints that message on one line and
exits with `exit_code` (2: configuration or environment, see `dnfsmon --help`);
it never prints a traceback for these. Exit 1 stays for bugs.
"""

from __future__ import annotations

EXIT_ENVIRONMENT = 2


class EnvironmentProblem(Exception):
    """The environment stops dnfsmon: the message names what and the fix."""

    exit_code = EXIT_ENVIRONMENT

    def __init__(self, message: str, exit_code: int = EXIT_ENVIRONMENT):
        super().__init__(message)
        self.exit_code = exit_code


def reason(error: BaseException) -> str:
    """An error as one line for the log: an environment problem's own message (it names the
    path and the fix; its class name would only puzzle the reader), anything else with its type."""
    if isinstance(error, EnvironmentProblem):
        return str(error)
    return f"{error.__class__.__name__}: {error}"


# Defined here, not in the modules that raise them, so that cli.main can map them to their
# exit codes without importing capture, state and store for commands that use none of them.
class CaptureError(ValueError):
    """A capture directory that cannot be read (dnfsmon.capture)."""


class LockHeld(RuntimeError):
    """Another dnfsmon run holds the lock (dnfsmon.state.RunLock)."""


class StoreLocked(RuntimeError):
    """Another process holds the store's lock for longer than a store change takes (dnfsmon.store)."""
