"""NFS workloads for the lab, over the nfs-rs userspace client (NFSv3 and NFSv4.1).

    workload.py URL read  COUNT SIZE DEPTH   random SIZE-byte reads of export/data, DEPTH outstanding
    workload.py URL write COUNT SIZE DEPTH   sequential SIZE-byte writes to export/written

Prints one JSON line: {"operations": COUNT, "seconds": elapsed}. DEPTH > 1
keeps DEPTH reads in flight with asyncio (one task per slot), which is what
pipelines RPCs on one TCP connection.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time

import nfs_rs

DATA_BYTES = 16 * 1024 * 1024  # tests/lab/nfslab.py EXPORT_FILE_BYTES


async def main(url: str, mode: str, count: int, size: int, depth: int) -> dict:
    client = await nfs_rs.AsyncClient.connect(url, connect_timeout=10, operation_timeout=30)
    try:
        handle = await client.open("data" if mode == "read" else "written", "rb" if mode == "read" else "r+b")
        chooser = random.Random(19)
        offsets = (
            [chooser.randrange(DATA_BYTES // size) * size for _ in range(count)]
            if mode == "read"
            else [index * size for index in range(count)]
        )
        payload = bytes(range(256)) * (size // 256)
        queue = iter(offsets)

        async def slot() -> None:
            for offset in queue:
                if mode == "read":
                    data = await handle.read_at(offset, size)
                    assert len(data) == size, (offset, len(data))
                else:
                    await handle.write_at(payload, offset)

        started = time.monotonic()
        await asyncio.gather(*(slot() for _ in range(depth)))
        elapsed = time.monotonic() - started
        await handle.close()
    finally:
        await client.close()
    return {"operations": count, "seconds": round(elapsed, 3)}


if __name__ == "__main__":
    url, mode, count, size, depth = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    print(json.dumps(asyncio.run(main(url, mode, count, size, depth))), flush=True)
    # nfs-rs 0.8.7 sometimes dies with SIGSEGV while the interpreter finalises
    # (its runtime threads outlive the module); the work is done and reported,
    # so leave without finalising.
    os._exit(0)
