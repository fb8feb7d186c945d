"""The repository stands alone: no pointer outside it, no private jargon.

A clone of this repository, with nothing beside it, must run every test and
make sense to a reader. So no tracked file may point at a directory beside
the checkout, and no text may lean on a case the reader has never seen ("the
... case" of some earlier investigation): say what the case is instead, e.g.
"a Linux client capped at 16 RPC slots".
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Each pattern is written so that this file's own text does not match it.
FORBIDDEN = {
    "a path beside the checkout": re.compile(r"\.\./shared\b|\.\./\.\./"),
    "an absolute path on a developer's machine": re.compile(r"(?<![\w.])/(?:work|home/\w+)/"),
    "jargon for a case the reader has not seen": re.compile(
        r"\bseed\s+(?:case|article|sampler)s?\b|\bthe\sseed\b", re.I
    ),
}


def tracked_files() -> list[str]:
    """The files git tracks; without git (an unpacked tarball), every file outside hidden and generated directories."""
    try:
        listing = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        return [name for name in listing.decode().split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for top, dirs, files in os.walk(ROOT):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("demo-data", "node_modules")]
            found += [os.path.relpath(os.path.join(top, f), ROOT) for f in files]
        return found


def offending_lines(text: str) -> list[tuple[int, str, str]]:
    return [
        (number, what, line.strip())
        for number, line in enumerate(text.splitlines(), 1)
        for what, pattern in FORBIDDEN.items()
        if pattern.search(line)
    ]


# A Markdown note named without a directory, in lowercase words joined by hyphens
# (the way private notes are named), must be a file of this repository. (Other projects' documents are cited with
# their project's name: "Telegraf's STATE_PERSISTENCE.md".)
BARE_MARKDOWN_NAME = re.compile(r"(?<![\w./-])([a-z0-9]+(?:-[a-z0-9]+)+\.md)\b")


def test_no_tracked_file_points_outside_the_repository_or_uses_private_jargon():
    problems = []
    ours = {os.path.basename(name) for name in tracked_files()}
    for name in tracked_files():
        path = os.path.join(ROOT, name)
        if not os.path.isfile(path):  # deleted in the work tree, not yet committed
            continue
        with open(path, "rb") as f:
            data = f.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:  # images and other binary files
            continue
        problems += [f"{name}:{number}: {what}: {line}" for number, what, line in offending_lines(text)]
        problems += [
            f"{name}: names {md}, which is not in the repository"
            for md in sorted(set(BARE_MARKDOWN_NAME.findall(text)))
            if md not in ours
        ]
    assert problems == [], "\n".join(problems)


# Split in two so that this file's own text stays clean.
SEED = "se" + "ed"


@pytest.mark.parametrize(
    "line",
    [
        "Format notes: ../" + "shared/reference/linux-sources.md.",
        "FIXTURES = HERE + '/../" + "../fixtures'",
        "read /" + "work/shared/fixtures/mountstats at test time",
        f"The {SEED} case: a client capped at 16 slots.",
        f"what the {SEED} articles got from DTrace",
        f"summing the view (what the {SEED.title()} sampler did)",
    ],
)
def test_the_check_catches(line):
    assert offending_lines(line), line


@pytest.mark.parametrize(
    "line",
    [
        "a Linux client capped at 16 RPC slots",
        "random(seed=inventory_hostname)",
        "Each host waits a fixed delay (seeded by its name).",
        "@pytest.mark.parametrize('seed', [1, 2, 3])",
        "see ../README.md and /proc/self/mountstats",
    ],
)
def test_the_check_lets_through(line):
    assert offending_lines(line) == [], line


CITED_TEST = re.compile(r"\b(tests/[\w/]+\.py)::(\w+)(\*?)")  # test_show_* names a family


def test_every_test_the_docs_cite_exists():
    """A doc that says "this test catches it" must name a test that is there (docs/extending.md's table)."""
    missing = []
    for name in tracked_files():
        if not name.endswith(".md"):
            continue
        with open(os.path.join(ROOT, name), encoding="utf-8") as handle:
            text = handle.read()
        for path, test, family in CITED_TEST.findall(text):
            target = os.path.join(ROOT, path)
            source = open(target, encoding="utf-8").read() if os.path.exists(target) else ""
            end = r"\w*\(" if family else r"\("
            if not re.search(rf"^(?:async )?def {test}{end}|^class {test}\b", source, re.M):
                missing.append(f"{name}: {path}::{test}{family}")
    assert missing == []
