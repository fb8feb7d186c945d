"""A real NFS lab in network namespaces: nfs-ganesha, userspace clients, captures on both ends.

    client ns (veth wc, tcpdump) ── middle ns (kernel bridge, or delayfwd) ── server ns (veth ws, tcpdump, ganesha)

The delay element sits in the middle namespace, between the two capture points:
on a veth's egress tcpdump's tap runs after the qdisc, and on ingress before
tc/IFB, so a delay on either end's own interface would be charged to the
wrong side. This kernel has no netem, hence delayfwd.c (a userspace forwarder
between two AF_PACKET sockets).

Everything started here is bounded in time (timeouts on every wait, lifetimes
on the long-running helpers) and removed in `close()`: processes killed by
their process group, namespaces deleted, even when a step fails.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
PREFIX = "dnfswire"
CLIENT_ADDRESS = "10.77.0.1"
SERVER_ADDRESS = "10.77.0.2"
STEP_TIMEOUT = 30  # seconds for any one setup command
LIFETIME = 300  # seconds after which every helper (server, tcpdump, forwarder) is stopped whatever happens
EXPORT_FILE_BYTES = 16 * 1024 * 1024

GANESHA_CONFIG = """
NFS_CORE_PARAM {{
    Protocols = 3, 4;
    Enable_NLM = false;
    Enable_RQUOTA = false;
    Enable_UDP = false;
    NFS_Port = 2049;
    MNT_Port = 20048;
    Bind_addr = {server};
    Mount_Path_Pseudo = true;
}}
NFS_KRB5 {{ Active_krb5 = false; }}
NFSv4 {{
    Graceless = true;
    Minor_Versions = 0, 1, 2;
    pnfs_mds = false;
    pnfs_ds = false;
    RecoveryBackend = fs;
    RecoveryRoot = {recovery};
}}
EXPORT {{
    Export_Id = 1;
    Path = {export};
    Pseudo = /export;
    Access_Type = RW;
    Squash = No_Root_Squash;
    Protocols = 3, 4;
    Transports = TCP;
    SecType = sys;
    FSAL {{ Name = VFS; }}
}}
"""

# Inside the server namespace: a private /run so rpcbind's socket and ganesha's
# state stay off the host (ip netns exec gives the command its own mount
# namespace, with propagation to the host turned off).
SERVER_SCRIPT = """
set -e
mount -t tmpfs tmpfs /run
rpcbind -f -w &
for i in $(seq 50); do [ -S /run/rpcbind.sock ] && break; sleep 0.1; done
exec ganesha.nfsd -F -L {log} -p /run/ganesha.pid -f {config}
"""

NEEDED_PROGRAMS = ("ip", "ethtool", "tcpdump", "tshark", "ganesha.nfsd", "rpcbind", "cc", "nft")


class LabUnavailable(Exception):
    """The machine cannot run the lab: the message says why (the tests skip with it)."""


def why_not_runnable() -> Optional[str]:
    """None when the lab can run here, else the precise reason."""
    if os.geteuid() != 0:
        return "the NFS lab needs root (network namespaces, veth interfaces, AF_PACKET sockets)"
    if not os.path.exists("/proc/self/ns/net"):
        return "this kernel has no network namespaces (CONFIG_NET_NS)"
    probe = f"{PREFIX}-probe-{os.getpid()}"
    result = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, timeout=STEP_TIMEOUT)
    if result.returncode != 0:
        return f"cannot create a network namespace here: {result.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=STEP_TIMEOUT)
    return None


def missing_programs() -> list[str]:
    return [program for program in NEEDED_PROGRAMS if shutil.which(program) is None]


def run(*command: str, timeout: float = STEP_TIMEOUT) -> str:
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({result.returncode}): {result.stderr.strip()}")
    return result.stdout


def remove_stale_namespaces() -> None:
    """Namespaces left by a lab whose test process died (a killed test run), with what runs in them."""
    for line in run("ip", "netns", "list").splitlines():
        name = line.split()[0] if line.strip() else ""
        parts = name.split("-")
        if len(parts) == 3 and parts[0] == PREFIX and parts[2].isdigit() and not _alive(int(parts[2])):
            for pid in run("ip", "netns", "pids", name).split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=STEP_TIMEOUT)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Lab:
    """One lab: create with `Lab(workdir, middle="bridge" | "forwarder", delay_us=...)`, then `close()`."""

    def __init__(
        self,
        workdir: Path,
        middle: str = "bridge",
        client_to_server_delay_us: int = 0,
        server_to_client_delay_us: int = 0,
    ):
        self.workdir = workdir
        self.middle = middle
        self.delay_us = client_to_server_delay_us
        self.back_delay_us = server_to_client_delay_us
        suffix = os.getpid()
        self.client_ns = f"{PREFIX}-c-{suffix}"
        self.middle_ns = f"{PREFIX}-m-{suffix}"
        self.server_ns = f"{PREFIX}-s-{suffix}"
        self.processes: list[subprocess.Popen] = []
        self.export = workdir / "export"
        self.server_log = workdir / "ganesha.log"

    # --- setup -------------------------------------------------------------------------------------------
    def start(self) -> Lab:
        try:
            remove_stale_namespaces()
            self._network()
            self._server()
        except BaseException:
            self.close()
            raise
        return self

    def _network(self) -> None:
        for namespace in (self.client_ns, self.middle_ns, self.server_ns):
            run("ip", "netns", "add", namespace)
            self.ns(namespace, "ip", "link", "set", "lo", "up")
        run("ip", "link", "add", "wc", "netns", self.client_ns, "type", "veth", "peer", "mc", "netns", self.middle_ns)
        run("ip", "link", "add", "ws", "netns", self.server_ns, "type", "veth", "peer", "ms", "netns", self.middle_ns)
        for namespace, interface in (
            (self.client_ns, "wc"),
            (self.middle_ns, "mc"),
            (self.middle_ns, "ms"),
            (self.server_ns, "ws"),
        ):
            # Frames no larger than the MTU with real checksums, as from a real NIC.
            self.ns(namespace, "ethtool", "-K", interface, "tx", "off", "tso", "off", "gso", "off", "gro", "off")
            self.ns(namespace, "ip", "link", "set", interface, "up")
        for namespace in (self.client_ns, self.server_ns):
            # Reno, not this machine's default BBR: BBR paces each reply at its bandwidth
            # estimate, which for one-outstanding 8 KiB reads turns the added delay into
            # extra reply transfer time. Reno sends the reply back to back, like the
            # CUBIC of most database hosts. (The namespace may choose only what the
            # root namespace's tcp_allowed_congestion_control lists: reno always is.)
            self.ns(namespace, "sysctl", "-qw", "net.ipv4.tcp_congestion_control=reno")
        self.ns(self.client_ns, "ip", "address", "add", f"{CLIENT_ADDRESS}/24", "dev", "wc")
        self.ns(self.server_ns, "ip", "address", "add", f"{SERVER_ADDRESS}/24", "dev", "ws")
        if self.middle == "bridge":
            self.ns(self.middle_ns, "ip", "link", "add", "br0", "type", "bridge")
            for interface in ("mc", "ms"):
                self.ns(self.middle_ns, "ip", "link", "set", interface, "master", "br0")
            self.ns(self.middle_ns, "ip", "link", "set", "br0", "up")
        else:
            binary = self.workdir / "delayfwd"
            run("cc", "-O2", "-Wall", "-o", str(binary), str(HERE / "delayfwd.c"), timeout=120)
            self.spawn(
                [
                    "ip",
                    "netns",
                    "exec",
                    self.middle_ns,
                    str(binary),
                    "mc",
                    "ms",
                    str(self.delay_us),
                    str(self.back_delay_us),
                    str(LIFETIME),
                ],
                "delayfwd.log",
            )

    def _server(self) -> None:
        self.export.mkdir()
        (self.workdir / "recovery").mkdir()
        with open(self.export / "data", "wb") as handle:
            handle.write(os.urandom(EXPORT_FILE_BYTES))
        (self.export / "written").write_bytes(b"")
        config = self.workdir / "ganesha.conf"
        config.write_text(
            GANESHA_CONFIG.format(server=SERVER_ADDRESS, recovery=self.workdir / "recovery", export=self.export)
        )
        script = SERVER_SCRIPT.format(log=self.server_log, config=config)
        self.spawn(["ip", "netns", "exec", self.server_ns, "sh", "-c", script], "server.out")
        probe = f"import socket; s = socket.create_connection(('{SERVER_ADDRESS}', 2049), timeout=1); s.close()"
        # The first connection crosses the middle namespace: it checks the wire too.
        self._wait(lambda: self.ns_ok(self.client_ns, sys.executable, "-c", probe), "reach ganesha on port 2049")

    def _wait(self, check, what: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return
            for process in self.processes:
                if process.poll() is not None:
                    raise RuntimeError(
                        f"lab: {process.args!r} exited with {process.returncode} before we could {what}; "
                        f"see {self.workdir}"
                    )
            time.sleep(0.2)
        raise RuntimeError(f"lab: could not {what} within {timeout:.0f} s; see {self.workdir}")

    # --- helpers -----------------------------------------------------------------------------------------
    def ns(self, namespace: str, *command: str, timeout: float = STEP_TIMEOUT) -> str:
        return run("ip", "netns", "exec", namespace, *command, timeout=timeout)

    def ns_ok(self, namespace: str, *command: str) -> bool:
        result = subprocess.run(["ip", "netns", "exec", namespace, *command], capture_output=True, timeout=STEP_TIMEOUT)
        return result.returncode == 0

    def spawn(self, command: list[str], log_name: str) -> subprocess.Popen:
        """Start a helper in its own process group, killed by timeout(1) after LIFETIME whatever happens."""
        log = open(self.workdir / log_name, "wb")
        bounded = ["timeout", "--signal=INT", "--kill-after=5", str(LIFETIME), *command]
        process = subprocess.Popen(bounded, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.processes.append(process)
        return process

    def middle_rules(self, ruleset: str) -> None:
        """Load an nftables ruleset in the middle namespace (the bridge's forward hook drops there)."""
        path = self.workdir / "middle.nft"
        path.write_text(ruleset)
        self.ns(self.middle_ns, "nft", "-f", str(path))

    def clear_middle_rules(self) -> None:
        self.ns(self.middle_ns, "nft", "flush", "ruleset")

    # --- captures and workloads --------------------------------------------------------------------------
    def capture(self, name: str, snaplen: int = 512) -> tuple[Path, Path, list[subprocess.Popen]]:
        """Start tcpdump on both ends; returns (client file, server file, the two processes)."""
        client_file = self.workdir / f"{name}-client.pcap"
        server_file = self.workdir / f"{name}-server.pcap"
        dumps = []
        for namespace, interface, path in (
            (self.client_ns, "wc", client_file),
            (self.server_ns, "ws", server_file),
        ):
            dumps.append(
                self.spawn(
                    [
                        "ip", "netns", "exec", namespace, "tcpdump", "-i", interface, "-s", str(snaplen),
                        "-B", "16384", "--immediate-mode", "-U", "-w", str(path), "tcp", "port", "2049",
                    ],
                    f"{name}-{interface}-tcpdump.log",
                )
            )  # fmt: skip
        for path in (client_file, server_file):
            self._wait(lambda path=path: path.exists() and path.stat().st_size >= 24, f"start tcpdump for {path.name}")
        time.sleep(0.5)  # tcpdump's socket is open once the file header is written; let the ring settle
        return client_file, server_file, dumps

    def stop_capture(self, dumps: list[subprocess.Popen]) -> None:
        # TPACKET_V3 can hold the last partial block: give it time before stopping.
        time.sleep(1.5)
        for process in dumps:
            _stop(process)
            self.processes.remove(process)

    def workload(self, *arguments: object, timeout: float = 120) -> str:
        """Run tests/lab/workload.py in the client namespace; returns its output (one JSON line)."""
        return self.ns(self.client_ns, sys.executable, str(HERE / "workload.py"), *map(str, arguments), timeout=timeout)

    def url(self, version: str) -> str:
        return f"nfs://{SERVER_ADDRESS}/export?version={version}"

    # --- teardown ----------------------------------------------------------------------------------------
    def close(self) -> None:
        for process in reversed(self.processes):
            _stop(process)
        self.processes.clear()
        for namespace in (self.client_ns, self.middle_ns, self.server_ns):
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True, timeout=STEP_TIMEOUT)


def _stop(process: subprocess.Popen) -> None:
    """SIGINT (tcpdump flushes, ganesha exits), then SIGKILL to the whole group after 5 s."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGINT)
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        except ProcessLookupError:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=10)
