"""dnfsmon capture: every source's raw inputs written to a directory (docs/capture-format.md)."""

from __future__ import annotations

import logging

from .. import capture
from .. import config as configuration
from ..cli import EXIT_OK, EXIT_SOURCE_FAILED
from ..collect import read_targets
from ..targets import targets_from

log = logging.getLogger("dnfsmon")


def cmd_capture(cfg: configuration.Config, directory: str) -> int:
    # A capture only reads: it writes no state (the run lock is not taken).
    targets = targets_from(cfg)
    try:
        reading = read_targets(targets)
    finally:
        for target in targets:
            target.close()
    capture.write(directory, cfg.host, reading.raws, reading.failures)
    for name, reason in sorted(reading.failures.items()):
        log.error("source %s failed: %s", name, reason)
    print(f"captured {len(reading.raws)} sources to {directory}")
    return EXIT_SOURCE_FAILED if reading.failures else EXIT_OK
