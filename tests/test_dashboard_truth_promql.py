"""The PromQL flavour of both dashboards, run as Grafana's Prometheus data source runs it, against
the truth of the dashboard scenario (tests/dashboard_scenario.py), by both roads to a PromQL store:

- `ship` with [influxdb] naming = "prometheus" into a real VictoriaMetrics: the scenario's whole
  week, every panel at every range (5m to 7d), the figures checked against the scenario's truth
  at the moments the InfluxQL harness checks (tests/test_dashboard_truth.py);
- node_exporter's textfile collector scraped by a real Prometheus: scrapes happen in real time,
  so this road holds the few minutes the test can wait for (a week would take a week); the
  panels run at the 5m range, and the figures are checked against the simulator's truth.

Grafana's steps (the step from the range, maxDataPoints and the data source's interval, the
alignment of a range query, the instant query at the range's end, the variables) are those of
tests/grafana_emulation.py, each citing the Grafana file it follows.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tempfile
import time
import urllib.parse
import urllib.request
from typing import Optional

import pytest

import dashboard_scenario as sc
import grafana_emulation as ge
import metric_servers
import test_dashboard_truth as influxql_truth
from dnfsmon import config, simulator
from dnfsmon import prometheus as naming
from test_dashboard_truth import LINKED, MINUTE, RANGES, TITLES, WRITTEN, moments, panel, panels, samples_in

pytestmark = pytest.mark.prometheus

GRAFANA = os.path.join(os.path.dirname(__file__), "..", "grafana")
# The Prometheus data source's "Scrape interval" (jsonData.timeInterval) docs/prometheus.md asks
# for: the agent's sample interval, 10 s. It is the low limit of $__interval.
TIME_INTERVAL_MS = 10_000
NAMES = {m.name: key[0] for key, m in naming.metrics().items()}


def board(name: str) -> dict:
    with open(os.path.join(GRAFANA, "dashboards", name.replace(".json", "-prometheus.json")), encoding="utf-8") as f:
        return json.load(f)


def api(url: str, path: str, params: dict) -> list[ge.PromSeries]:
    """Grafana's backend asks with POST (pkg/promlib/client/client.go, createQueryRequest)."""
    request = urllib.request.Request(f"{url}{path}", data=urllib.parse.urlencode(params).encode(), method="POST")
    with urllib.request.urlopen(request, timeout=60) as reply:
        return ge.prometheus_series(json.load(reply))


@dataclasses.dataclass
class Shown:
    step_ms: int
    series: list[list[ge.PromSeries]]  # per target


def shown(url: str, p: dict, end: float, seconds: int, variables=LINKED, time_interval_ms=TIME_INTERVAL_MS) -> Shown:
    """What Grafana asks Prometheus for a panel over the `seconds` before `end`, and the answers."""
    range_ms = seconds * 1000
    max_data_points = p.get("maxDataPoints") or ge.panel_width_px(p["gridPos"]["w"])
    interval = ge.interval_ms(range_ms, max_data_points, time_interval_ms)  # the frontend's intervalMs
    step = ge.prometheus_step_ms(range_ms, max_data_points, interval, p.get("interval", ""))
    answers = []
    for t in p["targets"]:
        expr = ge.prometheus_interpolate(t["expr"], range_ms, step, variables)
        if t["instant"]:
            answers.append(api(url, "/api/v1/query", {"query": expr, "time": f"{end:.3f}"}))
        else:
            start_ms = ge.prometheus_aligned(int((end - seconds) * 1000), step)
            end_ms = ge.prometheus_aligned(int(end * 1000), step)
            params = {"query": expr, "start": start_ms / 1000, "end": end_ms / 1000, "step": step / 1000}
            answers.append(api(url, "/api/v1/query_range", params))
    return Shown(step, answers)


def stat(url, p, end, seconds, variables=LINKED, time_interval_ms=TIME_INTERVAL_MS):
    """The one value a stat panel of one series shows (lastNotNull), or its noValue text."""
    answers = shown(url, p, end, seconds, variables, time_interval_ms).series
    values = [ge.last_not_null(s.values()) for answer in answers for s in answer]
    values = [v for v in values if v is not None]
    if not values:
        return p["fieldConfig"]["defaults"].get("noValue", "No data")
    (value,) = values
    return value


def table(url, p, end, seconds, variables=LINKED) -> list[dict]:
    rows = [r for answer in shown(url, p, end, seconds, variables).series for r in ge.prometheus_table_rows(answer)]
    return ge.transform(rows, p.get("transformations", []))


# --- the truth, from the scenario's schedule and the simulator's model ---


def last_point(
    per_series: list[dict[int, float]], end: float, seconds: int, step_ms: int, combine
) -> Optional[tuple[float, float]]:
    """(value, time) of the last point of a range query `combine`-ing, at each step, each series'
    samples in the window (t - step, t]: evaluation times from the aligned start to the aligned end,
    one per step; a time whose window holds no sample has no point (Prometheus's range query).
    Grafana aligns the end down to the step, so that point is up to one step before the range's end."""
    step = step_ms / 1000
    first = ge.prometheus_aligned(int((end - seconds) * 1000), step_ms) / 1000
    t = ge.prometheus_aligned(int(end * 1000), step_ms) / 1000
    while t >= first:
        windows = [[v for s, v in values.items() if t - step < s <= t] for values in per_series]
        windows = [w for w in windows if w]
        if windows:
            return combine(windows), t
        t -= step
    return None


# Truths worked out once per scenario (the simulator's model at every sample of the week).
_TRUTHS: dict[tuple, dict[int, float]] = {}


def once(function):
    def cached(scenario, *args):
        key = (function.__name__, scenario.end, *args)
        if key not in _TRUTHS:
            _TRUTHS[key] = function(scenario, *args)
        return _TRUTHS[key]

    return cached


@once
def ops_rates(scenario, instance: int) -> dict[int, float]:
    """total_iops the agent recorded for one instance at each sample (the interval before it)."""
    up = influxql_truth.db_up(scenario)
    rates = {}
    for t in scenario.samples:
        before = influxql_truth.previous_of(scenario, t, up) if up(t) else None
        value = None if before is None else sc.dnfs_ops_truth(scenario.end, instance, before, t)
        if value is not None:
            rates[t] = value
    return rates


@once
def retrans_values(scenario) -> dict[int, float]:
    up = influxql_truth.host_up(scenario)
    values = {}
    for t in scenario.samples:
        before = influxql_truth.previous_of(scenario, t, up) if up(t) else None
        if before is None or before < scenario.end - sc.TCP_RESET <= t:
            continue  # no reading, no previous one, or the counters went back: no point
        values[t] = sc.retrans_pct_truth(scenario.end, before, t)
    return values


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def check(value, truth, rel: float, lost, where, scale: float = 1.0, bounds=None) -> None:
    """The panel's value is the truth; where the last point's window reaches into the points the
    store dropped while nothing was shipped (the scenario's INFLUX_DOWN), which of them survived is
    not scheduled: then it lies within the window's values (`bounds`: their lowest and highest)."""
    if truth is None:
        assert value == "No data", where
        return
    figure, t = truth
    if lost[0] < t and t - where[2] / 1000 < lost[1]:
        low, high = bounds
        assert low * scale * (1 - rel) <= value <= high * scale * (1 + rel), where
        return
    assert value == pytest.approx(figure * scale, rel=rel), where


def lost_span(scenario) -> tuple[int, int]:
    return scenario.end - sc.INFLUX_DOWN[0], scenario.end - sc.INFLUX_DOWN[1]


# --- the ship road: VictoriaMetrics, the scenario's week ---


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """The scenario, shipped by the agent with Prometheus names into VictoriaMetrics; (url, scenario)."""
    server = metric_servers.victoria_metrics(str(tmp_path_factory.mktemp("victoria-metrics"))).start()
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    end = int(time.time()) // MINUTE * MINUTE
    try:
        with tempfile.TemporaryDirectory(dir=base) as directory, pytest.MonkeyPatch.context() as monkeypatch:
            scenario = sc.run(directory, server.url, "dnfsmon", end, monkeypatch, naming="prometheus")
        # A series is searchable some seconds after it is written: wait for the last minutes' samples.
        recent = len(samples_in(scenario, end - 120, end))

        def arrived() -> bool:
            answer = api(
                server.url, "/api/v1/query", {"query": "count_over_time(dnfsmon_agent_sample_seconds[2m])", "time": end}
            )
            return [s.values() for s in answer] == [[recent]]

        assert metric_servers.wait_for(arrived, timeout_s=90), "VictoriaMetrics did not answer with the last samples"
        yield server.url, scenario
    finally:
        server.stop()


CASES = [
    (moment, name) for moment in ("now", "incident", "db outage", "agent stopped", "source failing") for name in RANGES
]


@pytest.mark.parametrize("moment, range_name", CASES)
def test_dnfs_ops_adds_the_instances_rates_at_any_step(shipped, moment, range_name):
    url, scenario = shipped
    end, seconds = moments(scenario)[moment], RANGES[range_name]
    p = panel(board("dnfsmon-host.json"), TITLES["ops"])
    step = shown(url, p, end, seconds).step_ms
    for instances, variables in (((1,), LINKED), ((1, 2), {**LINKED, "host": "All"})):
        rates = [ops_rates(scenario, i) for i in instances]
        truth = last_point(rates, end, seconds, step, lambda windows: sum(mean(w) for w in windows))
        bounds = last_point(rates, end, seconds, step, lambda ws: (sum(min(w) for w in ws), sum(max(w) for w in ws)))
        value = stat(url, p, end, seconds, variables)
        where = (moment, range_name, step, instances)
        check(value, truth, 2e-3, lost_span(scenario), where, bounds=bounds and bounds[0])


@pytest.mark.parametrize("moment, range_name", CASES)
def test_tcp_retransmits_as_a_ratio(shipped, moment, range_name):
    url, scenario = shipped
    end, seconds = moments(scenario)[moment], RANGES[range_name]
    p = panel(board("dnfsmon-host.json"), TITLES["retransmits"])
    step = shown(url, p, end, seconds).step_ms
    values = [retrans_values(scenario)]
    truth = last_point(values, end, seconds, step, lambda windows: max(max(w) for w in windows))
    bounds = last_point(values, end, seconds, step, lambda ws: (min(min(w) for w in ws), max(max(w) for w in ws)))
    value = stat(url, p, end, seconds)
    # Percent in the catalogue, a ratio in Prometheus.
    check(value, truth, 1e-3, lost_span(scenario), (moment, range_name, step), 0.01, bounds and bounds[0])


@pytest.mark.parametrize("moment, range_name", CASES)
def test_health_row_and_tables_at_the_ranges_end(shipped, moment, range_name):
    """The instant queries: reachable (latest in the range), current findings and the verdict (the last
    2 minutes), the agent's samples in the last 100 s, the findings seen in the range, and the fleet's
    tables of databases not reachable and agents."""
    url, scenario = shipped
    end, seconds = moments(scenario)[moment], RANGES[range_name]
    where = (moment, range_name)
    host, fleet = board("dnfsmon-host.json"), board("dnfsmon-fleet.json")
    in_range = samples_in(scenario, end - seconds, end)  # (end - range, end]: a range vector's window

    value = stat(url, panel(host, TITLES["reachable"]), end, seconds)
    assert value == (sc.status_truth(scenario.end, in_range[-1]) if in_range else "No data"), where

    current = set().union(*(sc.findings_truth(scenario.end, t) for t in samples_in(scenario, end - 120, end)))
    value = stat(url, panel(host, TITLES["findings"]), end, seconds)
    assert (0 if value == "0" else value) == len(current), where
    rows = table(url, panel(host, TITLES["verdict"]), end, seconds)
    assert rows == ([{"severity": "critical", "layer": "client", "id": "dnfs-fallback"}] if current else []), where

    recent = len(samples_in(scenario, end - 100, end))
    value = stat(url, panel(host, TITLES["agent"]), end, seconds)
    assert value == (recent if in_range else "silent"), where

    rows = table(url, panel(host, TITLES["findings table"]), end, seconds)
    seen = set().union(*(sc.findings_truth(scenario.end, t) for t in in_range))
    assert sorted(r["id"] for r in rows) == sorted(seen), where

    down = [t for t in in_range if sc.status_truth(scenario.end, t) == 0]
    rows = table(url, panel(fleet, TITLES["not reachable"]), end, seconds)
    assert rows == ([{"host": sc.HOST, "database": sc.DB, "samples down": len(down)}] if down else []), where
    rows = table(url, panel(fleet, TITLES["agents"]), end, seconds)
    assert rows == ([{"host": sc.HOST, "samples": recent}] if in_range else []), where


def test_legends_name_each_instance(shipped):
    url, scenario = shipped
    p = panel(board("dnfsmon-host.json"), "dNFS NFS operations")
    answer = shown(url, p, scenario.end, 3600, {**LINKED, "host": "All"})
    names = {ge.legend(t["legendFormat"], s.labels) for t, series in zip(p["targets"], answer.series) for s in series}
    instances = [f"{sc.DB.lower()}{i}" for i in (1, 2)]
    assert names == {f"{kind} {i}" for kind in ("reads", "writes") for i in instances}


def measurement_of(expr: str) -> str:
    """The measurement whose series a PromQL expression reads (one per expression here)."""
    (measurement,) = {NAMES[name] for name in re.findall(r"\b(dnfsmon_\w+)", expr)}
    return measurement


@pytest.mark.parametrize("dashboard", ["dnfsmon-host.json", "dnfsmon-fleet.json"])
def test_every_panel_at_every_range(shipped, dashboard):
    """Every panel and range: the step Grafana asks for, a query the store accepts, and data exactly
    where the scenario wrote some (a panel on what this host lacks shows nothing rather than something)."""
    url, scenario = shipped
    checked = 0
    for p in panels(board(dashboard)):
        for name, seconds in RANGES.items():
            answer = shown(url, p, scenario.end, seconds)
            assert answer.step_ms >= TIME_INTERVAL_MS and seconds * 1000 / answer.step_ms <= 11_000
            for t, series in zip(p["targets"], answer.series):
                if measurement_of(t["expr"]) not in WRITTEN:
                    assert series == [], (p["title"], name)
            checked += 1
    assert checked == 5 * len(panels(board(dashboard)))


def test_the_database_variable_lists_the_database_once(shipped):
    url, scenario = shipped
    (variable,) = [v for v in board("dnfsmon-host.json")["templating"]["list"] if v["name"] == "database"]
    # label_values(metric{matchers}, label): Grafana asks /api/v1/series for the matchers (or
    # /api/v1/label/<label>/values with match[]) over the dashboard's range.
    inner = variable["query"][len("label_values(") : -1]
    selector, label = (part.strip() for part in inner.rsplit(",", 1))
    params = {
        "match[]": ge.prometheus_interpolate(selector, 0, 0, LINKED),
        "start": scenario.end - 7 * 86400,
        "end": scenario.end,
    }
    with urllib.request.urlopen(
        f"{url}/api/v1/label/{label}/values?{urllib.parse.urlencode(params)}", timeout=30
    ) as reply:
        assert json.load(reply)["data"] == [sc.DB]


# --- the scrape road: the textfile, node_exporter and Prometheus, in real time ---


SCRAPE_S = 1
SAMPLES, SAMPLE_INTERVAL_S = 12, 5


def test_textfile_scraped_by_prometheus_shows_the_simulators_truth(tmp_path):
    """`dnfsmon collect` writes the textfile every 5 s for a minute; node_exporter serves it and
    Prometheus scrapes it every second. Every panel runs at the 5m range (the scrape road holds only
    what it saw: the other ranges show the same minute) and answers; the dNFS operations, the latency
    and the database's state are the simulator's truth over the last interval."""
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    exporter = metric_servers.node_exporter(str(tmp_path / "node_exporter"), str(textfiles)).start()
    server = metric_servers.prometheus(str(tmp_path / "prometheus"), [f"127.0.0.1:{exporter.port}"]).start()
    try:
        config_path = metric_servers.write_config(tmp_path, prometheus={"textfile": f"{textfiles}/dnfsmon.prom"})
        metric_servers.collect(config_path, count=SAMPLES, interval_s=SAMPLE_INTERVAL_S)
        time.sleep(3 * SCRAPE_S)  # the last file scraped
        end = time.time()
        points, _ = metric_servers.last_sample(str(tmp_path / "store"))
        io_times = sorted({p.time_ns for p in points if p.measurement == "dnfsmon_dnfs_io"})
        cfg = config.load(config_path)
        workload = simulator.Workload(**cfg.simulator._asdict())
        truth = simulator.truth(workload, 1, io_times[-2] / 1e9, io_times[-1] / 1e9)
        # The simulated instance's points carry the simulator's host name (the agent's own are "db1").
        (oracle_host,) = {dict(p.tags)["host"] for p in points if p.measurement == "dnfsmon_dnfs_io"}
        variables = {**LINKED, "host": oracle_host, "database": "SIMDB"}
        host, fleet = board("dnfsmon-host.json"), board("dnfsmon-fleet.json")
        # The data source's interval for a 1 s scrape: 1 s (docs/prometheus.md: the scrape interval).
        at = {"variables": variables, "time_interval_ms": SCRAPE_S * 1000}

        # The stat panels' last point: the last sample the file held (no sample since: the same value
        # in every window of the last step).
        ops = stat(server.url, panel(host, TITLES["ops"]), end, 300, **at)
        assert ops == pytest.approx(truth.observable_read_iops + truth.observable_write_iops, rel=0.005)
        latency = stat(server.url, panel(host, "Single-block read"), end, 300, **at)
        assert latency == pytest.approx(truth.event_avg_latency_us["db file sequential read"] * 1e-6, rel=0.005)
        # The status point carries the host of the agent that asked ("db1"): every host.
        everywhere = {**at, "variables": {**variables, "host": "All"}}
        assert stat(server.url, panel(host, TITLES["reachable"]), end, 300, **everywhere) == 1
        # Scrapes, not samples: the textfile holds the latest sample and each scrape reads it again
        # (docs/prometheus.md says so, and what tells a stopped agent on this road).
        # The truth is Prometheus's own record of the scrapes it made (the `up` series it writes for
        # every scrape, Prometheus docs "Jobs and instances", automatically generated labels and time
        # series), not the wall clock: a loaded machine scrapes late or skips a beat.
        first_written = min(p.time_ns for p in points) / 1e9
        scrapes = stat(server.url, panel(host, TITLES["agent"]), end, 300, **everywhere)
        (up,) = api(server.url, "/api/v1/query", {"query": "up[100s]", "time": f"{end:.3f}"})
        expected = sum(1 for t, _ in up.points if t > first_written)
        assert expected >= 20, ("Prometheus scraped too seldom to judge", expected)
        assert expected - 3 <= scrapes <= expected, (scrapes, expected)

        # Every panel answers; a time series on a metric some file held has points, and one on a metric
        # none did (kernel NFS, filer TCP, host pressure; a NIC's %Util without a known link speed) has none.
        written = {name for name, _ in metric_servers.expected_series(points)}
        drawn = 0
        for dashboard in (host, fleet):
            for p in panels(dashboard):
                result = shown(server.url, p, end, 300, everywhere["variables"], SCRAPE_S * 1000)
                for t, series in zip(p["targets"], result.series):
                    if not set(re.findall(r"\b(dnfsmon_\w+)", t["expr"])) <= written:
                        assert series == [], p["title"]
                    elif not t["instant"]:
                        assert series, p["title"]
                        drawn += 1
        assert drawn >= 20, drawn
    finally:
        server.stop()
        exporter.stop()
