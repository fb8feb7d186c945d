"""A real InfluxDB 1.8.10 server for the tests, built and run by the tests.

Debian's influxdb package (1.6) lacks the /api/v2/write endpoint
the agent writes to, so the server is built from the Go module proxy
(`go install`, module github.com/influxdata/influxdb) into a cache directory kept
between runs (about 90 s the first time), started on a free loopback port
with its data in a temporary directory, and stopped afterwards. A machine
without Go fails here with a clear message: the tests never skip.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request

VERSION = "1.8.10"
CACHE = os.path.join(
    os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "dnfsmon-tests", f"influxd-{VERSION}"
)
BINARY = os.path.join(CACHE, "influxd")


def ensure_binary() -> str:
    if os.access(BINARY, os.X_OK):
        return BINARY
    go = shutil.which("go")
    if go is None:
        raise RuntimeError(
            "the InfluxDB tests need Go to build influxd 1.8.10 (apt-get install golang, or the machine's Go)"
        )
    os.makedirs(CACHE, exist_ok=True)
    env = dict(os.environ, GOBIN=CACHE, GOFLAGS="-mod=mod")
    subprocess.run(
        [
            go,
            "install",
            "-ldflags",
            f"-s -w -X main.version={VERSION}",
            f"github.com/influxdata/influxdb/cmd/influxd@v{VERSION}",
        ],
        check=True,
        env=env,
        cwd=CACHE,
        timeout=1500,
    )
    return BINARY


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class InfluxServer:
    def __init__(self, directory: str):
        os.makedirs(directory, exist_ok=True)
        self.directory = directory
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
        self.process = subprocess.Popen([ensure_binary(), "-config", self.config], stdout=log, stderr=log)
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

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()

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
