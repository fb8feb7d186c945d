"""Replay a bundled case's host files in real time, for `make demo`.

A doctor case (tests/cases/doctor/NAME) holds two captures of a host's
/proc and /sys, OLD and NEW, taken INTERVAL seconds apart (capture.json's
"time"). This writes a /proc and /sys tree under DIR whose counters move
from OLD's values at NEW's pace, as the host's would have: every whole
number that differs between OLD and NEW is old + (new - old) x elapsed /
INTERVAL, rewritten every 0.1 s. A dnfsmon whose [host] proc_root and
sys_root point there measures the case's rates (its README gives them).

Only the files under proc/ and sys/ are replayed: the database figures come
from the simulator, and what dnfsmon reads over netlink is this host's own.
It stops by itself after --seconds, so a demo stopped half-way leaves no
process behind.

    python examples/replay_host.py tests/cases/doctor/NAME DIR [--seconds 120] [--background]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time

NUMBER = re.compile(r"\d+")
TICK_S = 0.1


def at(old: str, new: str, progress: float) -> str:
    """OLD's text with each whole number that NEW changes moved `progress` of the way (past 1: on)."""
    new_numbers = NUMBER.findall(new)
    if NUMBER.sub("N", old) != NUMBER.sub("N", new) or len(new_numbers) != len(NUMBER.findall(old)):
        return new  # not the same lines: nothing to move between
    moved = iter(new_numbers)

    def step(match: re.Match[str]) -> str:
        start, end = int(match.group()), int(next(moved))
        return match.group() if start == end else str(start + round((end - start) * progress))

    return NUMBER.sub(step, old)


def case_files(case: str) -> list[str]:
    """The files of OLD under proc/ and sys/, relative to OLD."""
    found = []
    for top in ("proc", "sys"):
        for directory, _, names in os.walk(os.path.join(case, "old", top)):
            found += [os.path.relpath(os.path.join(directory, n), os.path.join(case, "old")) for n in names]
    return sorted(found)


def read_text(*parts: str) -> str:
    with open(os.path.join(*parts), encoding="utf-8") as f:
        return f.read()


def replay(case: str, target: str, seconds: float) -> None:
    with open(os.path.join(case, "old", "capture.json"), encoding="utf-8") as f:
        old_time = json.load(f)["sources"]["mountstats"]["time"]
    with open(os.path.join(case, "new", "capture.json"), encoding="utf-8") as f:
        interval = json.load(f)["sources"]["mountstats"]["time"] - old_time
    texts = {
        relative: (read_text(case, "old", relative), read_text(case, "new", relative)) for relative in case_files(case)
    }
    started = time.monotonic()
    while True:
        elapsed = time.monotonic() - started
        for relative, (old, new) in texts.items():
            path = os.path.join(target, relative)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            # A reader sees the whole file of one moment: written aside, then renamed over.
            with open(path + ".new", "w", encoding="utf-8") as f:
                f.write(at(old, new, elapsed / interval))
            os.replace(path + ".new", path)
        if elapsed >= seconds:
            return
        time.sleep(TICK_S)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("case", help="a case directory holding old/ and new/ captures")
    parser.add_argument("target", help="the directory to write proc/ and sys/ in")
    parser.add_argument("--seconds", type=float, default=120.0, help="stop after this long (default 120)")
    parser.add_argument(
        "--background",
        action="store_true",
        help="write the first files, then go on in the background and print its process id",
    )
    args = parser.parse_args()
    if args.background:
        replay(args.case, args.target, 0)  # the files exist before this command returns
        child = os.fork()
        if child:
            print(child)
            return
        # Detached from the caller's terminal and pipes: a caller reading our output to its end
        # (make under a test) must not wait for the replay to stop.
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
    replay(args.case, args.target, args.seconds)


if __name__ == "__main__":
    main()
