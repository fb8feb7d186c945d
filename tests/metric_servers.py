"""node_exporter, Prometheus and VictoriaMetrics, run by the tests on 127.0.0.1, and what the tests ask them.

Each is the real program, built from the Go module proxy by tests/go_servers.py
and cached between runs; each listens on a free loopback port with its data in a
temporary directory, and is stopped (or killed, when a test says so) afterwards.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import time
import urllib.parse
import urllib.request
from typing import Optional

import pytest

import configs
import go_servers
from dnfsmon import catalogue, config, simulator
from dnfsmon import prometheus as naming
from dnfsmon.store import Store
from influxdb_server import Stoppable, free_port
from runner import run_dnfsmon


class Process(Stoppable):
    """One server process: started, waited for until `ready_path` answers 200, stopped."""

    def __init__(
        self, program: str, directory: str, args: list[str], port: int, ready_path: str, name: Optional[str] = None
    ):
        os.makedirs(directory, exist_ok=True)
        self.program, self.name = program, name or program
        self.directory, self.args, self.port, self.ready_path = directory, args, port, ready_path
        self.url = f"http://127.0.0.1:{port}"
        self.process: Optional[subprocess.Popen] = None
        self.log = os.path.join(directory, f"{self.name}.log")

    def start(self, timeout_s: float = 90) -> Process:
        binary = go_servers.ensure(self.program)
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen([binary, *self.args], stdout=log, stderr=log, cwd=self.directory)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}; see {self.log}")
            try:
                with urllib.request.urlopen(self.url + self.ready_path, timeout=2) as response:
                    if response.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} did not answer {self.ready_path} within {timeout_s:.0f} s; see {self.log}")


def node_exporter(directory: str, textfile_directory: str) -> Process:
    """node_exporter with the textfile collector alone (the host's other collectors are not under test)."""
    port = free_port()
    args = [
        f"--web.listen-address=127.0.0.1:{port}",
        "--collector.disable-defaults",
        "--collector.textfile",
        f"--collector.textfile.directory={textfile_directory}",
    ]
    return Process("node_exporter", directory, args, port, "/metrics")


def prometheus(directory: str, targets: list[str], remote_write_url: str = "") -> Process:
    """Prometheus scraping `targets` (host:port) every second, and remote-writing what it scrapes
    to `remote_write_url` when one is given."""
    port = free_port()
    config_path = os.path.join(directory, "prometheus.yml")
    os.makedirs(directory, exist_ok=True)
    remote_write = ""
    if remote_write_url:
        # A batch leaves at least every second (the default waits up to 5 s to fill one), and a
        # failed send is retried from 100 ms up to 1 s apart: the tests see where each sample went
        # within seconds (docs.prometheus.io, configuration: <queue_config>).
        remote_write = f"""remote_write:
  - url: {json.dumps(remote_write_url)}
    queue_config:
      batch_send_deadline: 1s
      min_backoff: 100ms
      max_backoff: 1s
"""
    with open(config_path, "w") as f:
        f.write(f"""global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: node
    static_configs:
      - targets: {json.dumps(targets)}
{remote_write}""")
    args = [
        f"--config.file={config_path}",
        f"--web.listen-address=127.0.0.1:{port}",
        f"--storage.tsdb.path={directory}/data",
    ]
    return Process("prometheus", directory, args, port, "/-/ready")


def victoria_metrics(directory: str) -> Process:
    port = free_port()
    args = [
        f"-httpListenAddr=127.0.0.1:{port}",
        f"-storageDataPath={directory}/data",
        # Points of any age are kept (the default -retentionPeriod is a month; the tests write now).
        "-loggerLevel=ERROR",
        # Answer a query with what was just written (the default hides the last 30 s, for late samples).
        "-search.latencyOffset=0s",
        "-search.disableCache",
    ]
    return Process("victoria-metrics", directory, args, port, "/health")


@dataclasses.dataclass
class Receiver:
    """One Thanos Receive replica's addresses: its place in the hashring is its gRPC address."""

    replica: int
    grpc_port: int = dataclasses.field(default_factory=free_port)
    http_port: int = dataclasses.field(default_factory=free_port)
    remote_write_port: int = dataclasses.field(default_factory=free_port)
    capnproto_port: int = dataclasses.field(default_factory=free_port)

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def remote_write_url(self) -> str:
        return f"http://127.0.0.1:{self.remote_write_port}/api/v1/receive"


def hashring(receivers: list[Receiver]) -> str:
    """One hashring of every receiver (docs/components/receive.md, "Example": hashring.json)."""
    return json.dumps([{"hashring": "default", "endpoints": [r.endpoint for r in receivers]}])


def thanos_receive(directory: str, receiver: Receiver, hashring_path: str, replication_factor: int) -> Process:
    """One Thanos Receive replica: it takes remote writes, forwards each series to the replicas the
    hashring names (`replication_factor` of them, a write acknowledged once a quorum has it) and
    stores its share in a TSDB of its own, labelled receive_replica for Thanos Query's deduplication."""
    args = [
        "receive",
        f"--tsdb.path={directory}/data",
        f"--grpc-address={receiver.endpoint}",
        f"--http-address=127.0.0.1:{receiver.http_port}",
        f"--remote-write.address=127.0.0.1:{receiver.remote_write_port}",
        # Unused with the default protobuf replication, but its listener would default to 0.0.0.0:19391.
        f"--receive.capnproto-address=127.0.0.1:{receiver.capnproto_port}",
        f"--receive.local-endpoint={receiver.endpoint}",
        f"--receive.hashrings-file={hashring_path}",
        f"--receive.replication-factor={replication_factor}",
        f'--label=receive_replica="{receiver.replica}"',
        "--log.level=warn",
    ]
    return Process("thanos", directory, args, receiver.http_port, "/-/ready", name=f"receive-{receiver.replica}")


def thanos_query(directory: str, store_endpoints: list[str], replica_label: str) -> Process:
    """Thanos Query over the receivers' Store API, merging their replicas on `replica_label`."""
    port = free_port()
    endpoints = {"endpoints": [{"address": address} for address in store_endpoints]}
    args = [
        "query",
        f"--http-address=127.0.0.1:{port}",
        f"--grpc-address=127.0.0.1:{free_port()}",
        f"--endpoint.sd-config={json.dumps(endpoints)}",
        f"--query.replica-label={replica_label}",
        "--log.level=warn",
    ]
    return Process("thanos", directory, args, port, "/-/ready", name="query")


def api(url: str, fields: dict[str, str]) -> list[dict]:
    """The result of a query to a Prometheus HTTP API endpoint (`url` ends in /query or /query_range)."""
    request = urllib.request.Request(url, data=urllib.parse.urlencode(fields).encode(), method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        answer = json.loads(response.read())
    if answer.get("status") != "success":
        raise RuntimeError(f"{fields['query']}: {answer}")
    return answer["data"]["result"]


def raw_samples(
    base_url: str, selector: str, start: float, end: float, **params: str
) -> dict[tuple[str, frozenset], list[tuple[float, float]]]:
    """Every stored sample of `selector`'s series from `start` to `end`: a range selector in an
    instant query answers the raw samples, not values evaluated at steps."""
    window_ms = int((end - start) * 1000) + 1
    found = {}
    for series in api(
        f"{base_url}/api/v1/query", {"query": f"{selector}[{window_ms}ms]", "time": f"{end:.3f}", **params}
    ):
        labels = dict(series["metric"])
        name = labels.pop("__name__")
        found[(name, frozenset(labels.items()))] = [(float(t), float(v)) for t, v in series["values"]]
    return found


def query(
    base_url: str, promql: str, at: Optional[float] = None, prefix: str = "/api/v1", **extra: str
) -> list[tuple[dict, float]]:
    """An instant PromQL query's series: (labels without __name__ kept, value); `extra` are more
    parameters of the request (Thanos Query's dedup)."""
    params = {"query": promql, **extra}
    if at is not None:
        params["time"] = f"{at:.3f}"
    return [(series["metric"], float(series["value"][1])) for series in api(f"{base_url}{prefix}/query", params)]


def expected_series(sample) -> dict[tuple[str, frozenset], float]:
    """(metric name, labels) -> value in base units, from the stored points and the catalogue's units."""
    known = naming.metrics()
    entries = catalogue.load()
    found = {}
    for point in sample:
        labels = frozenset((naming.label(k), v) for k, v in point.tags if v)
        for name, value in point.fields.items():
            if entries[(point.measurement, "field", name)].type == "string":
                continue
            metric = known[(point.measurement, name)]
            found[(metric.name, labels)] = float(value) * metric.factor
    return found


def expected_history(points) -> dict[tuple[str, frozenset], list[float]]:
    """(metric name, labels) -> the values of every stored sample in time order, in base units."""
    history: dict[tuple[str, frozenset], list[float]] = {}
    for point in sorted(points, key=lambda p: p.time_ns):
        for key, value in expected_series([point]).items():
            history.setdefault(key, []).append(value)
    return history


def series(url: str, ignored_labels: set[str], prefix: str = "/api/v1") -> dict[tuple[str, frozenset], float]:
    """Every dnfsmon series a PromQL server has now: (metric name, labels but the ignored) -> value."""
    found = {}
    for labels, value in query(url, '{__name__=~"dnfsmon_.+"}', prefix=prefix):
        name = labels.pop("__name__")
        found[(name, frozenset((k, v) for k, v in labels.items() if k not in ignored_labels))] = value
    return found


def wait_for(condition, timeout_s: float = 30.0):
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.5)


def differences(found: dict, expected: dict, rel: float = 1e-12) -> str:
    """What a server's series lack, have too many of, or hold another value for; "" when none."""
    missing = sorted(expected.keys() - found.keys())
    extra = sorted(found.keys() - expected.keys())
    wrong = [(k, v, found[k]) for k, v in expected.items() if k in found and abs(found[k] - v) > rel * abs(v)]
    if not (missing or extra or wrong):
        return ""
    return (
        f"{len(missing)} missing {missing[:3]}, {len(extra)} extra {extra[:3]}, {len(wrong)} other values {wrong[:3]}"
    )


def collect(config_path: str, count: int, interval_s: float) -> None:
    run_dnfsmon("--config", config_path, "collect", "--count", count, "--interval", interval_s, check_rc=0)


def last_sample(store_dir: str):
    """The points of the run's last sample: those stamped at or after its last agent point's sample started."""
    points = list(Store(store_dir, 1 << 30).points())
    agents = [p for p in points if p.measurement == "dnfsmon_agent"]
    # Every point of a sample lies between the previous sample's agent point and this one's.
    previous_agent_ns = agents[-2].time_ns
    return points, [p for p in points if p.time_ns > previous_agent_ns]


def assert_truth(url: str, config_path: str, points, prefix: str = "/api/v1") -> None:
    """PromQL answers over the run's last interval are the simulator's truth, in base units."""
    cfg = config.load(config_path)
    assert cfg.simulator is not None
    workload = simulator.Workload(**cfg.simulator._asdict())
    io_times = sorted({p.time_ns for p in points if p.measurement == "dnfsmon_dnfs_io"})
    t0, t1 = io_times[-2] / 1e9, io_times[-1] / 1e9
    truth = simulator.truth(workload, 1, t0, t1)

    def one(promql: str) -> tuple[dict, float]:
        [answer] = query(url, promql, prefix=prefix)
        return answer

    labels, read_ops = one('dnfsmon_dnfs_io_read_ops_per_second{oracle_instance="simdb1"}')
    assert labels["database"] == "SIMDB" and labels["simulated"] == "true"
    assert read_ops == pytest.approx(truth.observable_read_iops, rel=0.005)
    assert one("dnfsmon_dnfs_io_write_ops_per_second")[1] == pytest.approx(truth.observable_write_iops, rel=0.005)
    latency_s = one(
        'dnfsmon_oracle_event_avg_latency_seconds{event="db file sequential read",oracle_instance="simdb1"}'
    )[1]
    assert latency_s == pytest.approx(truth.event_avg_latency_us["db file sequential read"] * 1e-6, rel=0.005)
    # A ratio is 0 to 1: the shares of a filer's dNFS paths add up to one.
    shares = query(url, "sum by (oracle_instance, server) (dnfsmon_dnfs_channel_share_ratio)", prefix=prefix)
    assert shares and all(value == pytest.approx(1.0, rel=1e-9) for _, value in shares)
    # The store's counter is a counter.
    assert one("dnfsmon_agent_store_dropped_points_total")[1] == 0


def write_config(tmp_path, **sections) -> str:
    """dnfsmon's config for these tests (tests/configs.py): the simulated database, the host's NIC and TCP, and `sections`."""
    tables: dict[str, dict] = {
        "agent": {"host": "db1"},
        "host": {"sources": ["nic", "tcp"]},
        "simulator": {"enabled": True},
    }
    for name, values in sections.items():
        tables.setdefault(name, {}).update(values)
    os.makedirs(tmp_path / "state", mode=0o750, exist_ok=True)
    return str(configs.write_config(tmp_path, **tables))
