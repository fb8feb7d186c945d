"""Unit files against the systemd that EL8 ships (239): the directives they use, and systemd-analyze verify.

tests/fixtures/systemd/directives.csv lists every directive (or directive=value)
dnfsmon's units may use, with the systemd release that brought it and where
that is stated: systemd's NEWS ("CHANGES WITH N"), or the man page. The NEWS
claims are checked against the NEWS file Debian's systemd package installs.
"""

from __future__ import annotations

import csv
import gzip
import os
import re
import subprocess

DIRECTIVES_CSV = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "systemd", "directives.csv")
# Red Hat Enterprise Linux 8 (and Oracle Linux 8) ship systemd 239.
EL8_SYSTEMD = 239
# Debian's systemd package installs the upstream NEWS here.
DEBIAN_NEWS = "/usr/share/doc/systemd/NEWS.gz"


def directives_since() -> dict[str, tuple[int, str]]:
    """directive (or directive=value prefix) -> (first systemd release with it, source)."""
    with open(DIRECTIVES_CSV, encoding="utf-8", newline="") as f:
        return {row["directive"]: (int(row["since"]), row["source"]) for row in csv.DictReader(f)}


def settings(text: str) -> list[tuple[str, str]]:
    """(key, value) of every setting line of a unit file, comments and section headers skipped."""
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")):
            key, value = line.split("=", 1)
            found.append((key.strip(), value.strip()))
    return found


def problems_on_el8(name: str, text: str) -> list[str]:
    """Why a unit would not work on systemd 239: a directive (or value) not in the list or newer than 239."""
    known = directives_since()
    problems = []
    for key, value in settings(text):
        if key not in known:
            problems.append(f"{name}: {key}= is not in {DIRECTIVES_CSV}: add it with the release that brought it")
            continue
        for directive in (key, *(d for d in known if d.startswith(f"{key}=") and value.startswith(d.split("=", 1)[1]))):
            since, source = known[directive]
            if since > EL8_SYSTEMD:
                problems.append(f"{name}: {directive} needs systemd {since} ({source}); EL8 has {EL8_SYSTEMD}")
    return problems


def news_sections() -> dict[int, str]:
    """Release -> its section of systemd's NEWS."""
    with gzip.open(DEBIAN_NEWS, "rt", encoding="utf-8") as f:
        text = f.read()
    parts = re.split(r"^CHANGES WITH (\d+):\s*$", text, flags=re.M)
    return {int(parts[i]): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def verify(paths: list[str]) -> subprocess.CompletedProcess:
    """systemd-analyze verify, as a packager checks units (man pages not looked up)."""
    return subprocess.run(
        ["systemd-analyze", "verify", "--man=no", *paths], capture_output=True, text=True, timeout=120
    )
