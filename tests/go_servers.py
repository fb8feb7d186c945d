"""Servers the tests build from the Go module proxy, once, into a cache kept between runs.

Each server is one entry of SERVERS: the Go module and version, the package of
its main program, and the Go toolchain its go.mod asks for. A server whose
go.mod carries `replace` directives cannot be installed with `go install
module@version` (the go command refuses replace directives in a module it
installs that way), so it is built inside a small wrapper module of ours,
tests/gobuild/NAME/go.mod, which requires that module and repeats its replace
directives; the go command fills in the rest of the graph (-mod=mod).

The binary lands in ~/.cache/dnfsmon-tests/NAME-VERSION/ and is reused while it
is there; the module and build caches are Go's own (GOMODCACHE, GOCACHE).
Builds run under `nice` (the machine is shared) and with a time bound; a
machine without Go fails here with one clear line: the tests never skip.
`python tests/go_servers.py NAME...` builds ahead of a test run and prints the
time each build took (docs/testing.md has the figures for a cold cache).
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE_ROOT = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "dnfsmon-tests")
# A cold build of the largest server (Thanos) on two shared cores; a build that
# takes longer has gone wrong, and the test says so instead of holding CI.
BUILD_TIMEOUT_S = 2400


@dataclasses.dataclass(frozen=True)
class GoServer:
    name: str  # the cache directory's prefix, and the binary's name unless `program` says another
    module: str
    version: str
    package: str  # the main package, inside module
    # "local" uses the machine's go; a newer one is fetched from the proxy as a module (golang.org/toolchain).
    toolchain: str = "local"
    ldflags: str = "-s -w"
    # tests/gobuild/NAME holds the wrapper module when the server's go.mod has replace directives
    # (or when a build step needs a main module of its own, as pkg_config does).
    wrapper: bool = False
    # InfluxDB 1.9+ links Flux's Rust library, libflux: InfluxData's pkg-config wrapper
    # (github.com/influxdata/pkg-config, from the same module graph) builds it with cargo
    # when cgo asks pkg-config for "flux". Needs cargo (rustup) on the machine.
    pkg_config: bool = False
    program: str = ""
    # Go build tags (-tags); part of the cache directory's name, so a change rebuilds.
    tags: str = ""

    @property
    def cache(self) -> str:
        return os.path.join(CACHE_ROOT, f"{self.name}-{self.version}" + (f"-{self.tags}" if self.tags else ""))

    @property
    def binary(self) -> str:
        return os.path.join(self.cache, self.program or self.name)


SERVERS = {
    server.name: server
    for server in (
        # InfluxDB 1.8.10 (tests/influxdb_server.py): Debian's 1.6 lacks the v2 write API.
        GoServer(
            "influxd",
            "github.com/influxdata/influxdb",
            "1.8.10",
            "github.com/influxdata/influxdb/cmd/influxd",
            ldflags="-s -w -X main.version=1.8.10",
        ),
        GoServer(
            "node_exporter",
            "github.com/prometheus/node_exporter",
            "1.12.1",
            "github.com/prometheus/node_exporter",
            ldflags="-s -w -X github.com/prometheus/common/version.Version=1.12.1",
        ),
        # Prometheus tags its Go module v0.X.Y for release 3.X.Y (v0.316.0 is 3.16.0). Built without
        # the `builtinassets` tag: no web UI (it would need npm), the HTTP API is all the tests use;
        # and with `remove_all_sd` (3.10+): no service discovery but static and file targets, which
        # leaves out the cloud SDKs (Azure, AWS, GCE, Kubernetes...), most of a full build's time.
        GoServer(
            "prometheus",
            "github.com/prometheus/prometheus",
            "0.316.0",
            "github.com/prometheus/prometheus/cmd/prometheus",
            ldflags="-s -w -X github.com/prometheus/common/version.Version=3.16.0",
            tags="remove_all_sd",
        ),
        # VictoriaMetrics' single node (Apache-2.0); its go.mod asks for Go 1.27.1.
        # 1.153.0, not the latest 1.154.x: the proxy answers 403 for two of 1.154's own modules
        # (github.com/VictoriaMetrics/metrics v1.44.1, metricsql v0.87.5; docs/testing.md).
        GoServer(
            "victoria-metrics",
            "github.com/VictoriaMetrics/VictoriaMetrics",
            "1.153.0",
            "github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics",
            toolchain="go1.27.3",
        ),
        # The latest InfluxDB 1.x beside 1.8.10 (tests/influxdb_server.py); its go.mod asks for Go 1.26.
        GoServer(
            "influxd-1.13",
            "github.com/influxdata/influxdb",
            "1.13.2",
            "github.com/influxdata/influxdb/cmd/influxd",
            ldflags="-s -w -X main.version=1.13.2",
            wrapper=True,
            pkg_config=True,
            program="influxd",
        ),
        # Thanos (Apache-2.0): go.mod with replace directives and Go 1.26.10. Built with the tags of
        # its releases (.promu.yml: netgo, slicelabels): its gRPC code reinterprets Prometheus's
        # labels as a slice, and without `slicelabels` every receiver panics on its first Store API
        # answer (grpc mem.BinaryTieredBufferPool: index out of range [64]).
        GoServer(
            "thanos",
            "github.com/thanos-io/thanos",
            "0.42.5",
            "github.com/thanos-io/thanos/cmd/thanos",
            toolchain="go1.27.3",
            wrapper=True,
            tags="netgo,slicelabels",
        ),
    )
}


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise RuntimeError(
            "the server tests build their servers with Go: install it (apt-get install golang, or go.dev)"
        )
    return go


def build_command(server: GoServer, go: str) -> tuple[list[str], str]:
    """The command that builds server into its cache directory, and the directory to run it in."""
    nice = ["nice", "-n", "10"] if shutil.which("nice") else []
    tags = ["-tags", server.tags] if server.tags else []
    if not server.wrapper:
        return [
            *nice,
            go,
            "install",
            *tags,
            "-ldflags",
            server.ldflags,
            f"{server.package}@v{server.version}",
        ], server.cache
    # A copy of the wrapper module: -mod=mod writes go.sum beside its go.mod, never into the checkout.
    source = os.path.join(server.cache, "wrapper")
    os.makedirs(source, exist_ok=True)
    shutil.copy(os.path.join(HERE, "gobuild", server.name, "go.mod"), os.path.join(source, "go.mod"))
    return [*nice, go, "build", *tags, "-ldflags", server.ldflags, "-o", server.binary, server.package], source


def ensure(name: str, timeout_s: float = BUILD_TIMEOUT_S) -> str:
    """The path of the server's binary, built first if it is not in the cache yet.

    One build at a time per server (a lock file in its cache directory): a second
    test run waits for the first's build instead of building over it.
    """
    server = SERVERS[name]
    if os.access(server.binary, os.X_OK):
        return server.binary
    os.makedirs(server.cache, exist_ok=True)
    with open(os.path.join(server.cache, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.access(server.binary, os.X_OK):
            return server.binary
        _build(server, timeout_s)
    return server.binary


def _build(server: GoServer, timeout_s: float) -> None:
    name = server.name
    go = _go()
    command, cwd = build_command(server, go)
    env = dict(os.environ, GOBIN=server.cache, GOFLAGS="-mod=mod", GOTOOLCHAIN=server.toolchain)
    commands = [command]
    if server.pkg_config:
        if shutil.which("cargo") is None:
            raise RuntimeError(
                f"building {name} needs cargo for Flux's Rust library (rustup.rs, or apt-get install cargo)"
            )
        env["PKG_CONFIG"] = os.path.join(server.cache, "pkg-config")
        # libflux's rust-toolchain file pins Rust 1.83, which rustup would have to fetch; the
        # machine's stable Rust builds it (1.95.0 here) unless the caller chose a toolchain.
        env.setdefault("RUSTUP_TOOLCHAIN", "stable")
        commands.insert(
            0, [*command[: command.index("build") + 1], "-o", env["PKG_CONFIG"], "github.com/influxdata/pkg-config"]
        )
    log_path = os.path.join(server.cache, "build.log")
    started = time.monotonic()
    with open(log_path, "wb") as log:
        try:
            for step in commands:
                left = timeout_s - (time.monotonic() - started)
                _run_bounded(step, env, cwd, log, max(left, 1))
        except subprocess.CalledProcessError as e:
            tail = open(log_path, errors="replace").read()[-3000:]
            raise RuntimeError(f"building {name} {server.version} failed ({e.returncode}); {log_path}:\n{tail}") from e
        except subprocess.TimeoutExpired as e:
            raise RuntimeError(f"building {name} {server.version} took over {timeout_s:.0f} s; see {log_path}") from e


def _run_bounded(command: list[str], env: dict, cwd: str, log, timeout_s: float) -> None:
    """Run one build step in a process group of its own, so a step past its time ends with every
    compiler and cargo it started (subprocess.run's timeout kills only the go command itself)."""
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=log, stderr=log, start_new_session=True)
    try:
        returncode = process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise
    if returncode != 0:
        raise subprocess.CalledProcessError(returncode, command)


def main(names: Optional[list[str]] = None) -> int:
    for name in names or list(SERVERS):
        started = time.monotonic()
        path = ensure(name)
        print(f"{name} {SERVERS[name].version}: {path} ({time.monotonic() - started:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
