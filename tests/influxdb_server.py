"""A real InfluxDB 1.x server for the tests, built and run by the tests.

Debian's influxdb package (1.6) lacks the /api/v2/write endpoint
the agent writes to, so the server is built from the Go module proxy by
tests/go_servers.py into a cache directory kept between runs: 1.8.10 (about 90 s
the first time; the server dnfsmon has always been tested with) and the latest
1.x, 1.13.2, whose Flux engine is a Rust library built with cargo. Each is
started on a free loopback port with its data in a temporary directory, and
stopped afterwards. A machine without Go fails here with a clear message: the
tests never skip.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from typing import Optional

import go_servers

# The go_servers names of the InfluxDB versions the tests run, oldest first.
VERSIONS = ("influxd", "influxd-1.13")


def ensure_binary(name: str = VERSIONS[0]) -> str:
    return go_servers.ensure(name)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Stoppable:
    """A server process a test stops (SIGTERM, then SIGKILL after `stop_timeout_s`) or kills."""

    process: Optional[subprocess.Popen] = None
    stop_timeout_s = 20.0

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()


class InfluxServer(Stoppable):
    def __init__(self, directory: str, version: str = VERSIONS[0]):
        os.makedirs(directory, exist_ok=True)
        self.directory = directory
        self.version = version
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = None
        config = os.path.join(directory, "influxdb.conf")
        with open(config, "w") as f:
            f.write(f"""reporting-disabled = true
bind-address = "127.0.0.1:{free_port()}"
[meta]
  dir = "{directory}/meta"
[data]
  dir = "{directory}/data"
  wal-dir = "{directory}/wal"
  query-log-enabled = false
[http]
  enabled = true
  bind-address = "127.0.0.1:{self.port}"
  flux-enabled = true
  log-enabled = false
[logging]
  level = "error"
""")
        self.config = config

    def start(self) -> InfluxServer:
        log = open(os.path.join(self.directory, "influxd.log"), "ab")
        self.process = subprocess.Popen([ensure_binary(self.version), "-config", self.config], stdout=log, stderr=log)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"influxd exited with {self.process.returncode}; see {self.directory}/influxd.log")
            try:
                with urllib.request.urlopen(f"{self.url}/ping", timeout=1) as response:
                    if response.status == 204:
                        return self
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("influxd did not answer /ping within 60 s")

    def query(self, q: str, db: str = "") -> dict:
        params = urllib.parse.urlencode({"q": q, "db": db, "epoch": "ns"})
        request = urllib.request.Request(f"{self.url}/query", data=params.encode(), method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def create_database(self, name: str) -> None:
        self.query(f'CREATE DATABASE "{name}"')

    def rows(self, q: str, db: str) -> list:
        """Rows of an InfluxQL query as dicts (column -> value), each with its series tags."""
        result = self.query(q, db)["results"][0]
        if "error" in result:
            raise RuntimeError(result["error"])
        found = []
        for series in result.get("series", []):
            for values in series["values"]:
                row = dict(zip(series["columns"], values))
                row.update(series.get("tags", {}))
                row["_measurement"] = series["name"]
                found.append(row)
        return found
