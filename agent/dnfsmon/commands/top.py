"""dnfsmon top: the live full-screen view (docs/top.md); curses is imported only here."""

from __future__ import annotations

from typing import Optional

from .. import config as configuration
from .. import top
from .doctor import doctor_exit_code


def cmd_top(cfg: configuration.Config, interval_s: float, batch: Optional[int], record_dir: Optional[str]) -> int:
    sampler = top.Sampler(cfg, record_dir)
    try:
        if batch is not None:
            failures, last = top.run_batch(sampler, interval_s, batch)
            return doctor_exit_code(last, failures)
        return top.run_screen(sampler, interval_s)
    finally:
        sampler.close()
