"""Bench inputs: the committed real mountstats fixtures scaled to N NFS mounts.

The NFS blocks of tests/fixtures/mountstats/ (what real kernels printed:
NFSv3 and NFSv4, RPC iostats 1.0 and 1.1, one near-2^64 counter) are repeated
under new mount points and devices until there are N of them. The later
reading advances every mount's age by INTERVAL_S seconds, and the counters of
the active mounts only (a fraction of them) consistently: per-op counters as
tests/test_mountstats.py advances them for the nfs-utils comparison, events,
bytes and transport counters by small increments. Idle mounts keep their
counters: on a database host most NFS mounts are idle most of the time.

Each reading is written three ways:
- DIR/1/mountstats: the layout prometheus/procfs reads (a /proc with pid 1);
- DIR/capture/: a dnfsmon capture directory (`dnfsmon diff OLD NEW`);
- DIR/1/mountstats is also the file `mountstats iostat -f` reads.
"""

from __future__ import annotations

import json
import os
import random
import re

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "mountstats")
INTERVAL_S = 10
BOOT_ID = "4b6b8c4e-8f4f-4d77-9f5b-0e7f0c1a2b3c\n"
# Counters this close to 2^64 (the procfs fixture's ACCESS execute time) are left
# as they are: advancing them would leave the unsigned 64-bit range every peer reads.
LEAVE_ALONE = 2**62
DEVICE_RE = re.compile(r"^device (\S+) mounted on (\S+) with fstype (nfs4?) ")


def nfs_blocks() -> list[str]:
    """The NFS device blocks of the committed fixtures, in file order."""
    blocks: list[str] = []
    for name in sorted(os.listdir(FIXTURES)):
        with open(os.path.join(FIXTURES, name)) as f:
            current: list[str] = []
            for line in f.read().splitlines():
                if line.startswith("device "):
                    if current and DEVICE_RE.match(current[0]):
                        blocks.append(_block_text(current))
                    current = [line]
                elif current:
                    current.append(line)
            if current and DEVICE_RE.match(current[0]):
                blocks.append(_block_text(current))
    return blocks


def _block_text(lines: list[str]) -> str:
    """A block ending as the kernel ends an NFS block: one empty line after the per-op lines."""
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines) + "\n\n"


def scaled(count: int) -> list[str]:
    """count NFS blocks, each under its own device and mount point."""
    blocks = nfs_blocks()
    result = []
    for number in range(count):
        block = blocks[number % len(blocks)]
        first, rest = block.split("\n", 1)
        match = DEVICE_RE.match(first)
        assert match, first
        device = f"filer{number % 8}:/export/db{number:04d}"
        mountpoint = f"/u02/oradata/db{number:04d}"
        first = f"device {device} mounted on {mountpoint} with fstype {match.group(3)} " + first[match.end() :]
        result.append(first + "\n" + rest)
    return result


def _advance_words(words: list[str], skip: int, step: int) -> list[str]:
    return words[:skip] + [w if int(w) >= LEAVE_ALONE else str(int(w) + step) for w in words[skip:]]


def advance(block: str, active: bool, rng: random.Random) -> str:
    """The same mount INTERVAL_S seconds later; counters move only when active."""
    out = []
    for line in block.splitlines():
        stripped = line.strip()
        indent = line[: len(line) - len(line.lstrip())]
        words = stripped.split()
        if stripped.startswith("age:"):
            line = f"{indent}age:\t{int(words[1]) + INTERVAL_S}"
        elif active and words and words[0] in ("events:", "bytes:"):
            line = indent + " ".join(_advance_words(words, 1, rng.randint(1, 5000)))
        elif active and words and words[0] == "xprt:":
            # Counters after the port; the same increment keeps the queue sums plausible.
            line = indent + " ".join(_advance_words(words, 3, rng.randint(1, 500)))
        elif active and len(words) >= 9 and words[0].endswith(":") and words[0][:-1].isupper():
            values = [int(w) for w in words[1:]]
            ops = rng.randint(1, 5000)
            queue, rtt = rng.randint(0, ops * 5), rng.randint(ops, ops * 40)
            increments = [ops, ops + rng.randint(0, ops // 20), 0, ops * 200, ops * 8192, queue, rtt]
            increments.append(queue + rtt + rng.randint(0, ops))
            increments += [0] * (len(values) - len(increments))
            moved = [v if v >= LEAVE_ALONE else v + i for v, i in zip(values, increments)]
            line = f"{indent}{words[0]} " + " ".join(map(str, moved))
        out.append(line)
    return "\n".join(out) + "\n\n"


def write_reading(directory: str, text: str, time: float) -> None:
    os.makedirs(os.path.join(directory, "1"), exist_ok=True)
    with open(os.path.join(directory, "1", "mountstats"), "w") as f:
        f.write(text)
    capture = os.path.join(directory, "capture")
    os.makedirs(os.path.join(capture, "proc", "self"), exist_ok=True)
    os.makedirs(os.path.join(capture, "proc", "sys", "kernel", "random"), exist_ok=True)
    with open(os.path.join(capture, "proc", "self", "mountstats"), "w") as f:
        f.write(text)
    with open(os.path.join(capture, "proc", "sys", "kernel", "random", "boot_id"), "w") as f:
        f.write(BOOT_ID)
    files = ["proc/self/mountstats", "proc/sys/kernel/random/boot_id"]
    meta = {
        "format": 1,
        "host": "bench",
        "sources": {"mountstats": {"time": time, "wall_time": 1732240000.0 + time, "files": files}},
    }
    with open(os.path.join(capture, "capture.json"), "w") as f:
        json.dump(meta, f, indent=2)


def make_pair(directory: str, count: int, active_fraction: float, seed: int = 20) -> tuple[str, str]:
    """(old, new) readings of `count` mounts under directory; returns their directories."""
    rng = random.Random(seed)
    blocks = scaled(count)
    active = set(rng.sample(range(count), max(1, round(count * active_fraction)) if active_fraction else 0))
    old_text = "".join(blocks)
    new_text = "".join(advance(block, number in active, rng) for number, block in enumerate(blocks))
    old, new = os.path.join(directory, "old"), os.path.join(directory, "new")
    write_reading(old, old_text, 7000.0)
    write_reading(new, new_text, 7000.0 + INTERVAL_S)
    return old, new


def make_sequence(directory: str, count: int, active_fraction: float, readings: int, seed: int = 20) -> list[str]:
    """`readings` readings of `count` mounts INTERVAL_S apart, the same mounts active in each; their directories."""
    rng = random.Random(seed)
    blocks = scaled(count)
    active = set(rng.sample(range(count), max(1, round(count * active_fraction))))
    paths = []
    for number in range(readings):
        if number:
            blocks = [advance(block, index in active, rng) for index, block in enumerate(blocks)]
        path = os.path.join(directory, f"reading-{number}")
        write_reading(path, "".join(blocks), 7000.0 + number * INTERVAL_S)
        paths.append(path)
    return paths
