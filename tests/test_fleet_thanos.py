"""The fleet path through a replicated store, with the real servers, and one replica killed.

dnfsmon's textfile -> node_exporter -> Prometheus -> remote write into three
Thanos Receive replicas on one hashring with replication factor 3 (a write is
acknowledged once two of them have it), read back through Thanos Query, which
merges the replicas on their `receive_replica` label. `dnfsmon collect` runs as
users run it against the simulated database; half-way through, one replica is
killed (SIGKILL). What each place holds is then counted, sample by sample:

- Prometheus's own TSDB against the agent's store: the textfile path saw every sample;
- Thanos Query's merged answer against Prometheus: what the fleet view lost;
- each replica alone (Thanos Query with dedup=false) against Prometheus: what the
  killed one lacks, once it is restarted on its own data.

The PromQL queries of the Prometheus end-to-end test (the simulator's truth) and
every series of the last sample are asked of Thanos Query while the replica is
down. docs/fleet.md reports the figures.
"""

from __future__ import annotations

import re
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

import metric_servers
from runner import DNFSMON
from test_grafana import PROMETHEUS_FLAVOUR, all_dashboards, panels_of

pytestmark = pytest.mark.prometheus

REPLICATION_FACTOR = 3
# Prometheus writes to replica 0, which routes each series to every replica; the one killed is another
# (a replica that is also Prometheus's only entry point stops the writes: docs/fleet.md).
KILLED = 2
SAMPLES, INTERVAL_S = 12, 2.0
# How long a scraped sample may take to reach the receivers: a batch leaves every second, and a
# loaded machine delays it (404 samples, one scrape, were still in flight at the kill here).
IN_FLIGHT_S = 10.0
# Dashboard queries with data: 34 of 67 here (no NFS mount, no filer TCP and no findings on this machine).
MIN_ANSWERED = 30
DNFSMON_SERIES = '{__name__=~"dnfsmon_.+"}'
# Labels the path adds to dnfsmon's: the scrape target's (Prometheus), the tenant's and the replica's (Thanos Receive).
PATH_LABELS = {"job", "instance", "tenant_id", "receive_replica"}


def without_path_labels(samples: dict) -> dict:
    return {
        (name, frozenset((k, v) for k, v in labels if k not in PATH_LABELS)): values
        for (name, labels), values in samples.items()
    }


def by_replica(samples: dict) -> dict[str, dict]:
    replicas: dict[str, dict] = {}
    for (name, labels), values in samples.items():
        replica = dict(labels)["receive_replica"]
        replicas.setdefault(replica, {})[(name, labels)] = values
    return {replica: without_path_labels(found) for replica, found in replicas.items()}


def count(samples: dict, start: float = float("-inf"), end: float = float("inf")) -> int:
    return sum(1 for values in samples.values() for t, _ in values if start <= t <= end)


def missing(reference: dict, found: dict) -> dict:
    """The samples of `reference` that `found` lacks (same series, same timestamp and value)."""
    lacking = {}
    for key, values in reference.items():
        have = set(found.get(key, ()))
        gone = [sample for sample in values if sample not in have]
        if gone:
            lacking[key] = gone
    return lacking


def dashboard_queries(start: float, end: float, interval_s: float) -> list[tuple[str, str, bool]]:
    """(panel title, PromQL, instant?) of every target of the PromQL dashboards, their variables set as
    a viewer leaves them (All: `.*`, their allValue) and Grafana's interval and range for [start, end]."""
    queries = []
    for name, board in all_dashboards().items():
        if not name.endswith(PROMETHEUS_FLAVOUR):
            continue
        for panel in panels_of(board):
            for target in panel["targets"]:
                expr = target["expr"].replace("$__interval", f"{interval_s:.0f}s")
                expr = expr.replace("$__range", f"{end - start:.0f}s")
                expr = re.sub(r"\$\{?\w+\}?", ".*", expr)
                queries.append((f"{name}: {panel['title']}", expr, bool(target.get("instant"))))
    return queries


def answer(base_url: str, promql: str, instant: bool, start: float, end: float, step_s: float) -> dict:
    """A dashboard query's answer as Grafana asks it: an instant query at the range's end, or a range
    query stepped at the interval; series keyed by their labels but the path's."""
    if instant:
        url, fields = f"{base_url}/api/v1/query", {"query": promql, "time": f"{end:.3f}"}
    else:
        url = f"{base_url}/api/v1/query_range"
        fields = {"query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step_s:.0f}"}
    found = {}
    for series in metric_servers.api(url, fields):
        labels = frozenset((k, v) for k, v in series["metric"].items() if k not in PATH_LABELS)
        values = series["values"] if "values" in series else [series["value"]]
        found[labels] = [(float(t), float(v)) for t, v in values]
    return found


def same_answers(mine: dict, theirs: dict) -> bool:
    return mine.keys() == theirs.keys() and all(
        [t for t, _ in mine[k]] == [t for t, _ in theirs[k]]
        and all(v == pytest.approx(w, rel=1e-9, nan_ok=True) for (_, v), (_, w) in zip(mine[k], theirs[k]))
        for k in mine
    )


def own_metric(url: str, name: str) -> float:
    """A server's own metric, every series of it summed, read from its /metrics (the tests' Prometheus
    scrapes node_exporter alone, so its own and the receivers' metrics are not in any TSDB)."""
    with urllib.request.urlopen(url + "/metrics", timeout=30) as response:
        lines = response.read().decode().splitlines()
    values = [float(line.split()[-1]) for line in lines if line.split("{")[0].split(" ")[0] == name]
    assert values, f"{url} has no {name}"
    return sum(values)


def before(samples: dict, moment: float) -> dict:
    return {key: [s for s in values if s[0] < moment] for key, values in samples.items()}


def changes(values: list[float]) -> list[float]:
    """The values with repeats folded: Prometheus scrapes the file more often than dnfsmon rewrites it."""
    return [v for i, v in enumerate(values) if i == 0 or v != values[i - 1]]


@pytest.fixture
def fleet(tmp_path):
    receivers = [metric_servers.Receiver(replica) for replica in range(REPLICATION_FACTOR)]
    ring = tmp_path / "hashring.json"
    ring.write_text(metric_servers.hashring(receivers))
    started = []
    try:
        replicas = [
            metric_servers.thanos_receive(str(tmp_path / f"receive-{r.replica}"), r, str(ring), REPLICATION_FACTOR)
            for r in receivers
        ]
        for replica in replicas:
            started.append(replica.start())
        query = metric_servers.thanos_query(
            str(tmp_path / "query"), [r.endpoint for r in receivers], "receive_replica"
        ).start()
        started.append(query)
        textfiles = tmp_path / "textfile"
        textfiles.mkdir()
        exporter = metric_servers.node_exporter(str(tmp_path / "node_exporter"), str(textfiles)).start()
        started.append(exporter)
        prometheus = metric_servers.prometheus(
            str(tmp_path / "prometheus"), [f"127.0.0.1:{exporter.port}"], receivers[0].remote_write_url
        ).start()
        started.append(prometheus)
        yield replicas, query, prometheus, textfiles
    finally:
        for server in reversed(started):
            server.stop()


def test_a_killed_replica_loses_the_fleet_view_nothing_and_promql_answers_through_it(tmp_path, fleet):
    replicas, query, prometheus, textfiles = fleet
    # Thanos Query finds its stores by polling them: every replica answers before the run starts.
    metric_servers.wait_for(
        lambda: (
            len(metric_servers.query(query.url, 'count by (receive_replica) (up{job="node"})', dedup="false"))
            == REPLICATION_FACTOR
        ),
        timeout_s=60,
    )
    config_path = metric_servers.write_config(tmp_path, prometheus={"textfile": f"{textfiles}/dnfsmon.prom"})
    start = time.time()
    collecting = subprocess.Popen(
        [*DNFSMON, "--config", config_path, "collect", "--count", str(SAMPLES), "--interval", str(INTERVAL_S)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(SAMPLES * INTERVAL_S / 2)
        killed_at = time.time()
        replicas[KILLED].kill()
        _, errors = collecting.communicate(timeout=180)
    finally:
        if collecting.poll() is None:
            collecting.kill()
    assert collecting.returncode == 0, errors
    # The last file is scraped within a second; the window is fixed from here on (Prometheus goes on
    # scraping the file, and those later samples are outside it).
    time.sleep(2)
    end = time.time()
    points, sample = metric_servers.last_sample(str(tmp_path / "store"))

    scraped = without_path_labels(metric_servers.raw_samples(prometheus.url, DNFSMON_SERIES, start, end))

    def merged() -> dict:
        return without_path_labels(metric_servers.raw_samples(query.url, DNFSMON_SERIES, start, end, dedup="true"))

    # Remote write trails the scrapes by a batch (1 s here); then the merged view has caught up or never will.
    metric_servers.wait_for(lambda: not missing(scraped, merged()), timeout_s=60)
    fleet_view = merged()

    # 1. The textfile path saw every sample the agent stored, value for value.
    history = metric_servers.expected_history(points)
    assert {key: changes(values) for key, values in history.items()} == {
        key: changes([v for _, v in scraped.get(key, [])]) for key in history
    }
    # 2. The fleet view lost nothing of what Prometheus scraped, before, during and after the kill.
    assert missing(scraped, fleet_view) == {}
    assert not fleet_view.keys() - scraped.keys()
    assert count(scraped, killed_at, end) > 0

    # 3. Dashboards' PromQL through Thanos Query while the replica is down: the simulator's truth,
    #    and every series of the last sample with its value.
    metric_servers.assert_truth(query.url, config_path, points)
    expected = metric_servers.expected_series(sample)
    assert metric_servers.differences(metric_servers.series(query.url, PATH_LABELS), expected) == ""

    #    The dashboards' own queries, host and fleet, over the run (across the kill): Thanos Query
    #    answers each as Prometheus answers it from its own TSDB.
    queries = dashboard_queries(start, end, INTERVAL_S)
    differing, answered = [], 0
    for title, promql, instant in queries:
        theirs = answer(prometheus.url, promql, instant, start, end, INTERVAL_S)
        mine = answer(query.url, promql, instant, start, end, INTERVAL_S)
        answered += bool(theirs)
        if not same_answers(mine, theirs):
            differing.append((title, promql))
    assert differing == []
    assert answered >= MIN_ANSWERED, f"{answered} of {len(queries)} dashboard queries answered"

    # 4. Each replica alone. The two that stayed up hold everything; the killed one, restarted on its
    #    own data, holds nothing from its time down: nothing sends it what it missed.
    live = by_replica(metric_servers.raw_samples(query.url, DNFSMON_SERIES, start, end, dedup="false"))
    assert sorted(live) == sorted(str(r) for r in range(REPLICATION_FACTOR) if r != KILLED)
    for replica, held in live.items():
        assert missing(scraped, held) == {}, f"replica {replica}"
    restarted_at = time.time()
    replicas[KILLED].start()
    metric_servers.wait_for(
        lambda: (
            str(KILLED) in by_replica(metric_servers.raw_samples(query.url, DNFSMON_SERIES, start, end, dedup="false"))
        ),
        timeout_s=60,
    )
    kept = by_replica(metric_servers.raw_samples(query.url, DNFSMON_SERIES, start, end, dedup="false"))[str(KILLED)]
    # A sample is stamped when it is scraped, before it is sent: none scraped after the kill reached it.
    assert count(kept, killed_at, end) == 0
    # What it had acknowledged before the kill survives it: Receive's TSDB writes each append to its
    # WAL file before answering, and SIGKILL leaves what the kernel holds. Only samples still in
    # flight at the kill (Prometheus sends a batch every second) may be lacking.
    lost_before_kill = missing(before(scraped, killed_at - IN_FLIGHT_S), kept)
    assert lost_before_kill == {}
    # Sizing: with replication factor 3 every replica holds every series (its TSDB head counts them).
    head_series = [own_metric(replica.url, "prometheus_tsdb_head_series") for replica in replicas]
    # Prometheus's side of the outage: a sample it gives up on is dropped; a retried one was resent.
    sender = {
        name: own_metric(prometheus.url, f"prometheus_remote_storage_samples_{name}")
        for name in ("failed_total", "retried_total", "total")
    }
    assert sender["failed_total"] == 0
    print(
        f"\ndashboards: {answered} of {len(queries)} queries with data, the same through Thanos Query"
        f"\nremote write: {sender}; head series per replica {head_series}"
        f"\nfleet: {len(scraped)} series, {count(scraped)} samples scraped in {end - start:.0f} s;"
        f" merged view lacks {count(missing(scraped, fleet_view))};"
        f" replica {KILLED} killed {killed_at - start:.1f} s in, restarted {restarted_at - killed_at:.1f} s later,"
        f" lacks {count(missing(scraped, kept))} samples ({count(scraped, killed_at, end)} scraped after its kill,"
        f" {count(missing(before(scraped, killed_at), kept))} of the {count(before(scraped, killed_at))} before it)"
    )
