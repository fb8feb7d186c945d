"""Regenerate the small real captures in tests/lab/captures/ from the NFS lab.

    sudo .venv/bin/python tests/lab/make_captures.py

Runs a short mixed workload (NFSv3 pipelined reads and 64 KiB writes, NFSv4.1
reads and writes) through the lab's kernel bridge, captured at snaplen 256 on
both ends, and writes client.pcap (as tcpdump wrote it) and server.pcapng
(converted by editcap, so both formats are covered by real files). The fuzz
tests in tests/test_wire_fuzz.py mutate these files.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nfslab

TARGET = Path(__file__).resolve().parent / "captures"


def main() -> int:
    reason = nfslab.why_not_runnable()
    if reason:
        print(f"cannot run the lab here: {reason}", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="dnfsmon-captures-"))
    lab = nfslab.Lab(workdir).start()
    try:
        client, server, dumps = lab.capture("small", snaplen=256)
        for version, mode, count, size, depth in (
            ("3", "read", 16, 8192, 8),
            ("3", "write", 2, 65536, 2),
            ("4.1", "read", 8, 8192, 1),
            ("4.1", "write", 2, 65536, 1),
        ):
            print(lab.workload(lab.url(version), mode, count, size, depth).strip())
        lab.stop_capture(dumps)
    finally:
        lab.close()
    TARGET.mkdir(exist_ok=True)
    shutil.copyfile(client, TARGET / "client.pcap")
    subprocess.run(["editcap", "-F", "pcapng", str(server), str(TARGET / "server.pcapng")], check=True, timeout=60)
    shutil.rmtree(workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
