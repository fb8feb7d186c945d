"""Every panel of both dashboards and every alert rule, run as Grafana runs them over a week the
agent wrote into a real InfluxDB, against the truth of the scenario (tests/dashboard_scenario.py).

Grafana's steps (the interval from the range and the panel's width, the variables, $timeFilter,
the reducers and transformations, the alert expressions) are those of tests/grafana_emulation.py;
docs/testing.md says which of Grafana's files each follows and what is not reproduced.
"""

from __future__ import annotations

import bisect
import functools
import json
import os
import re
import tempfile
import urllib.parse
import urllib.request
from typing import Optional

import pytest
import yaml

import dashboard_scenario as sc
import grafana_emulation as ge
from dnfsmon import diagnosis
from dnfsmon.sources import filer_tcp, mountstats, nic, oracle, pressure, rpc, tcp

ROOT = os.path.join(os.path.dirname(__file__), "..")
GRAFANA = os.path.join(ROOT, "grafana")
RANGES = {"5m": 300, "1h": 3600, "6h": 6 * 3600, "24h": 86400, "7d": 7 * 86400}
MINUTE = 60


def board(name: str) -> dict:
    with open(os.path.join(GRAFANA, "dashboards", name), encoding="utf-8") as f:
        return json.load(f)


def panels(dashboard: dict) -> list[dict]:
    found = []
    for p in dashboard["panels"]:
        found.extend(p["panels"] if p["type"] == "row" else [p])
    return found


def panel(dashboard: dict, title: str) -> dict:
    (found,) = [p for p in panels(dashboard) if p["title"] == title]
    return found


def datasource_interval_ms() -> int:
    """The provisioned data source's timeInterval: the low limit of $__interval (ds.interval)."""
    with open(os.path.join(GRAFANA, "provisioning", "datasources", "dnfsmon.yaml"), encoding="utf-8") as f:
        (source,) = yaml.safe_load(f)["datasources"]
    return ge.duration_ms(source["jsonData"]["timeInterval"])


def alert_rules() -> list[dict]:
    with open(os.path.join(GRAFANA, "provisioning", "alerting", "dnfsmon.json"), encoding="utf-8") as f:
        return [r for g in json.load(f)["groups"] for r in g["rules"]]


# The variables as the fleet tables' links set them: this host and its database, the rest "All".
LINKED = {
    "host": sc.HOST,
    "database": sc.DB,
    "instance": "All",
    "server": "All",
    "filer_address": "All",
    "interface": "All",
}


@pytest.fixture(scope="module")
def written(influx_server):
    """The scenario, written by the agent into a database of its own; (server, database, scenario)."""
    bucket = "truth"
    influx_server.create_database(bucket)
    # On a RAM disk where there is one: the store and state fsync at every sample.
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    end = int(__import__("time").time()) // MINUTE * MINUTE
    with tempfile.TemporaryDirectory(dir=base) as directory, pytest.MonkeyPatch.context() as monkeypatch:
        scenario = sc.run(directory, influx_server.url, bucket, end, monkeypatch)
    return influx_server, bucket, scenario


def influxql(server, bucket: str, query: str) -> list[ge.Frame]:
    """The query as Grafana's InfluxDB data source sends it: GET/POST /query, epoch=ms
    (pkg/tsdb/influxdb/influxql/influxql.go, createRequest)."""
    params = urllib.parse.urlencode({"db": bucket, "q": query, "epoch": "ms"}).encode()
    with urllib.request.urlopen(urllib.request.Request(f"{server.url}/query", data=params), timeout=60) as reply:
        return ge.frames_of(json.load(reply)["results"][0])


def shown(server, bucket: str, p: dict, end: int, seconds: int, variables=LINKED):
    """(interval ms, frames per target) of a panel over the `seconds` before `end`."""
    interval = ge.interval_ms(
        seconds * 1000, p.get("maxDataPoints") or ge.panel_width_px(p["gridPos"]["w"]), datasource_interval_ms()
    )
    start_ms, end_ms = (end - seconds) * 1000, end * 1000
    frames = [
        influxql(server, bucket, ge.interpolate(t["query"], start_ms, end_ms, interval, variables))
        for t in p["targets"]
    ]
    return interval, frames


def stat(server, bucket, p, end, seconds, variables=LINKED):
    """The one value a stat panel of one series shows, or its noValue text."""
    _, frames = shown(server, bucket, p, end, seconds, variables)
    values = [v for f in frames for v in ge.stat_values(p, f)]
    values = [v for v in values if v is not None]
    if not values:
        return p["fieldConfig"]["defaults"].get("noValue", "No data")
    (value,) = values
    return value


def table(server, bucket, p, end, seconds, variables=LINKED) -> list[dict]:
    _, frames = shown(server, bucket, p, end, seconds, variables)
    return ge.transform(ge.table_rows([f for fs in frames for f in fs]), p.get("transformations", []))


# --- the truth, from the scenario's schedule and the simulator's model ---


def samples_in(scenario, start: float, end: float, closed: bool = False) -> list[int]:
    """Sample times in (start, end], or in [start, end] when `closed` (as $timeFilter is)."""
    return [t for t in scenario.samples if (start <= t if closed else start < t) and t <= end]


def previous_of(scenario, t: int, up) -> int | None:
    """The sample the agent diffs t against: the latest earlier sample at which the source answered."""
    earlier = [s for s in scenario.samples if s < t and up(s)]
    return earlier[-1] if earlier else None


def previous_sample(scenario, t: int) -> Optional[int]:
    """The sample before t: the host's inputs are read at every sample."""
    earlier = [s for s in scenario.samples if s < t]
    return earlier[-1] if earlier else None


def db_up(scenario):
    return lambda t: sc.status_truth(scenario.end, t) == 1


def host_up(scenario):
    return lambda t: not sc.inside(sc.SOURCE_FAILING, scenario.end, t)


def last_bucket(points: dict[int, float], interval_ms: int) -> list[float]:
    """The values in the newest GROUP BY time bucket that has any (InfluxDB aligns buckets to the epoch)."""
    if not points:
        return []
    newest = max(t * 1000 // interval_ms for t in points)
    return [v for t, v in points.items() if t * 1000 // interval_ms == newest]


def ops_truth(scenario, end: int, seconds: int, interval: int, instances: tuple[int, ...]) -> float | None:
    """dNFS NFS ops/s: per instance, the mean of its rates in the newest bucket; added over instances."""
    per_instance = []
    up = db_up(scenario)
    rates: dict[int, dict[int, float]] = {inst: {} for inst in instances}
    for t in samples_in(scenario, end - seconds, end, closed=True):
        if not up(t):
            continue
        before = previous_of(scenario, t, up)
        for inst in instances:
            value = None if before is None else sc.dnfs_ops_truth(scenario.end, inst, before, t)
            if value is not None:
                rates[inst][t] = value
    merged = {t: 0.0 for inst in rates for t in rates[inst]}
    if not merged:
        return None
    newest = max(t * 1000 // interval for t in merged)
    for inst in instances:
        in_bucket = [v for t, v in rates[inst].items() if t * 1000 // interval == newest]
        if in_bucket:
            per_instance.append(sum(in_bucket) / len(in_bucket))
    return sum(per_instance)


def retrans_truth(scenario, end: int, seconds: int, interval: int) -> float | None:
    """TCP retransmits: the largest retrans_pct of the intervals in the newest bucket (max per bucket)."""
    up = host_up(scenario)
    values = {}
    for t in samples_in(scenario, end - seconds, end, closed=True):
        before = previous_of(scenario, t, up) if up(t) else None
        if before is None or before < scenario.end - sc.TCP_RESET <= t:
            continue  # no reading, no previous one, or the counters went back: no point
        values[t] = sc.retrans_pct_truth(scenario.end, before, t)
    in_bucket = last_bucket(values, interval)
    return max(in_bucket) if in_bucket else None


# Moments the dashboards are looked at: the end of the scenario, and ends inside each window.
def moments(scenario) -> dict[str, int]:
    n = scenario.end
    return {
        "now": n,
        "incident": n - 90 * MINUTE,
        "db outage": n - 60 * MINUTE,
        "agent stopped": n - 35 * MINUTE,
        "source failing": n - 115 * MINUTE,
        "after the reset": n - 10 * MINUTE,
    }


CASES = [
    (moment, name) for moment in ("now", "incident", "db outage", "agent stopped", "source failing") for name in RANGES
]


# The panels the truth is computed for, by title (a test fails on a dashboard without one).
TITLES = {
    "ops": "dNFS NFS ops/s",
    "reachable": "Database reachable",
    "findings": "Current findings",
    "verdict": "Verdict: the worst current finding",
    "nothing to judge": "Nothing to judge",
    "agent": "Agent: samples in the last 100 s",
    "retransmits": "TCP retransmits",
    "findings table": "Findings over the range, last occurrence of each",
    "not reachable": "Databases not reachable in the range",
    "agents": "Agents: samples in the last 100 s",
}


def case(written, moment, range_name):
    server, bucket, scenario = written
    return server, bucket, scenario, moments(scenario)[moment], RANGES[range_name], f"{moment}, last {range_name}"


@pytest.mark.parametrize("moment, range_name", CASES)
def test_dnfs_ops_adds_the_instances_rates_at_any_interval(written, moment, range_name):
    """User review H1: the sum of every sample in a bucket showed 6-12 times the rate."""
    server, bucket, scenario, end, seconds, where = case(written, moment, range_name)
    p = panel(board("dnfsmon-host.json"), TITLES["ops"])
    interval, _ = shown(server, bucket, p, end, seconds)
    # The agent's host (its instance), and every host (both instances of the RAC).
    for instances, variables in (((1,), LINKED), ((1, 2), {**LINKED, "host": "All"})):
        truth = ops_truth(scenario, end, seconds, interval, instances)
        value = stat(server, bucket, p, end, seconds, variables)
        if truth is None:
            assert value == "No data", where
        else:
            assert value == pytest.approx(truth, rel=2e-3), (where, interval, instances)


@pytest.mark.parametrize("moment, range_name", CASES)
def test_database_reachable_with_the_database_the_links_select(written, moment, range_name):
    """User review H2: with the database selected, the outage showed Yes."""
    server, bucket, scenario, end, seconds, where = case(written, moment, range_name)
    latest = samples_in(scenario, end - seconds, end, closed=True)
    value = stat(server, bucket, panel(board("dnfsmon-host.json"), TITLES["reachable"]), end, seconds)
    assert value == (sc.status_truth(scenario.end, latest[-1]) if latest else "No data"), where


def current_findings(scenario, end: int) -> set[str]:
    """Distinct rule ids that held in a sample of the last 2 minutes before `end`."""
    return set().union(*(sc.findings_truth(scenario.end, t) for t in samples_in(scenario, end - 120, end)))


@pytest.mark.parametrize("moment, range_name", CASES)
def test_current_findings_counts_distinct_findings(written, moment, range_name):
    """User review H3: a green 0 during the incident, or 12 for one finding."""
    server, bucket, scenario, end, seconds, where = case(written, moment, range_name)
    value = stat(server, bucket, panel(board("dnfsmon-host.json"), TITLES["findings"]), end, seconds)
    assert (0 if value == "0" else value) == len(current_findings(scenario, end)), where


@pytest.mark.parametrize("moment, range_name", CASES)
def test_the_verdict_names_the_worst_current_finding_its_layer_and_remedy(written, moment, range_name):
    server, bucket, scenario, end, seconds, where = case(written, moment, range_name)
    host = board("dnfsmon-host.json")
    p = panel(host, TITLES["verdict"])
    assert host["panels"][1] is p  # first on the first screen
    rows = table(server, bucket, p, end, seconds)
    if current_findings(scenario, end):
        (row,) = rows
        assert (row["severity"], row["layer"]) == ("critical", "client") and "oranfstab" in row["remedy"], where
    else:
        assert rows == [], where


@pytest.mark.parametrize("moment, range_name", CASES)
def test_nothing_to_judge_shows_the_latest_intervals_verdict(written, moment, range_name):
    """dnfsmon doctor's "nothing to judge" (exit 12) as the dashboard shows it: an empty verdict
    while the database is down is not a healthy host."""
    server, bucket, scenario, end, seconds, where = case(written, moment, range_name)
    latest = samples_in(scenario, end - seconds, end, closed=True)
    value = stat(server, bucket, panel(board("dnfsmon-host.json"), TITLES["nothing to judge"]), end, seconds)
    truth = (
        sc.nothing_to_judge_truth(scenario.end, previous_sample(scenario, latest[-1]), latest[-1]) if latest else None
    )
    assert value == ("No data" if truth is None else int(truth)), where


@pytest.mark.parametrize("moment, range_name", CASES)
def test_the_agents_recent_samples_turn_silent_when_it_stops(written, moment, range_name):
    """User review M10: the health row stayed green on old values when the agent died."""
    server, bucket, scenario, end, seconds, where = case(written, moment, range_name)
    value = stat(server, bucket, panel(board("dnfsmon-host.json"), TITLES["agent"]), end, seconds)
    if samples_in(scenario, end - seconds, end, closed=True):
        assert value == len(samples_in(scenario, end - 100, end)), where
    else:
        assert value == "silent", where  # nothing in the range: the panel's noValue


@pytest.mark.parametrize("moment, range_name", CASES)
def test_tcp_retransmits_of_the_recorded_host(written, moment, range_name):
    """The lossy window, the counter reset and the failing source, from the recorded /proc/net/snmp."""
    server, bucket, scenario, end, seconds, where = case(written, moment, range_name)
    p = panel(board("dnfsmon-host.json"), TITLES["retransmits"])
    interval, _ = shown(server, bucket, p, end, seconds)
    truth = retrans_truth(scenario, end, seconds, interval)
    value = stat(server, bucket, p, end, seconds)
    if truth is None:
        assert value == "No data", where
    else:
        assert value == pytest.approx(truth, rel=1e-3), (where, interval)


@pytest.mark.parametrize("moment, range_name", CASES)
def test_findings_and_fleet_tables_list_what_their_titles_say(written, moment, range_name):
    server, bucket, scenario = written
    end, seconds = moments(scenario)[moment], RANGES[range_name]
    in_range = samples_in(scenario, end - seconds, end, closed=True)
    where = f"{moment}, last {range_name}"

    # One row per finding seen in the range (not one per point).
    rows = table(server, bucket, panel(board("dnfsmon-host.json"), TITLES["findings table"]), end, seconds)
    assert sorted(r["id"] for r in rows) == sorted(
        set().union(*(sc.findings_truth(scenario.end, t) for t in in_range))
    ), where

    fleet = board("dnfsmon-fleet.json")
    down = [t for t in in_range if sc.status_truth(scenario.end, t) == 0]
    rows = table(server, bucket, panel(fleet, TITLES["not reachable"]), end, seconds)
    expected = [{"host": sc.HOST, "database": sc.DB, "samples down": len(down)}] if down else []
    assert rows == expected, where

    rows = table(server, bucket, panel(fleet, TITLES["agents"]), end, seconds)
    expected = [{"host": sc.HOST, "samples": len(samples_in(scenario, end - 100, end))}] if in_range else []
    assert rows == expected, where


def test_the_database_variable_lists_the_database_once(written):
    """The down samples carry the name the database answered with, not the DSN (H2)."""
    server, bucket, scenario = written
    (variable,) = [v for v in board("dnfsmon-host.json")["templating"]["list"] if v["name"] == "database"]
    query = ge.interpolate(variable["query"], 0, scenario.end * 1000, 10_000, LINKED)
    values = {row[1] for f in influxql(server, bucket, query) for row in f.rows}
    assert values == {sc.DB}


# Which measurements the scenario writes (from the sources' own lists, not from the store).
WRITTEN = {
    *oracle.MEASUREMENTS,
    *mountstats.MEASUREMENTS,
    *rpc.MEASUREMENTS,
    *tcp.MEASUREMENTS,
    *nic.MEASUREMENTS,
    *filer_tcp.MEASUREMENTS,
    *pressure.MEASUREMENTS,
    "dnfsmon_agent",
    diagnosis.FINDING_MEASUREMENT,
    diagnosis.LADDER_MEASUREMENT,
    diagnosis.VERDICT_MEASUREMENT,
}


@pytest.mark.parametrize("dashboard", ["dnfsmon-host.json", "dnfsmon-fleet.json"])
def test_every_panel_at_every_range(written, dashboard):
    """Every panel and range: Grafana's interval, a query InfluxDB accepts, and data exactly where the
    scenario wrote some (a panel on what this host lacks shows nothing rather than something)."""
    server, bucket, scenario = written
    end = scenario.end
    checked = 0
    for p in panels(board(dashboard)):
        for name, seconds in RANGES.items():
            interval, frames = shown(server, bucket, p, end, seconds)
            assert interval >= datasource_interval_ms()
            assert seconds * 1000 / interval <= (p.get("maxDataPoints") or ge.panel_width_px(p["gridPos"]["w"])) * 2
            for t, fs in zip(p["targets"], frames):
                measurement = t["query"].split('FROM "', 1)[1].split('"', 1)[0]
                if measurement not in WRITTEN:
                    assert fs == [], (p["title"], name)
            checked += 1
    assert checked == 5 * len(panels(board(dashboard)))


def evaluate(server, bucket, rule: dict, at: int) -> Optional[dict[tuple, bool]]:
    """The condition of each series of a rule at `at` (None when the query fails): query A over
    its relative range, reduce (last, dropNN), threshold; InfluxDB's now() is the evaluation time
    (replaced by it here)."""
    a, b, c = rule["data"]
    start = at - a["relativeTimeRange"]["from"]
    query = ge.interpolate(a["model"]["query"], start * 1000, at * 1000, a["model"]["intervalMs"], {})
    try:
        frames = influxql(server, bucket, query.replace("now()", f"{at * 1000}ms"))
    except RuntimeError:
        return None
    (condition,) = c["model"]["conditions"]
    return {
        tuple(sorted(f.tags.items())): ge.threshold(
            ge.reduce_last(f.values(f.columns[1]), b["model"]["settings"]["mode"]), condition["evaluator"]
        )
        for f in frames
    }


def alert_truth(scenario, uid: str, at: int) -> bool:
    n = scenario.end
    recent = lambda seconds: samples_in(scenario, at - seconds, at, closed=True)  # noqa: E731
    if uid == "dnfsmon-critical-finding":
        return any(sc.findings_truth(n, t) for t in recent(120))
    if uid == "dnfsmon-database-unreachable":
        return bool(recent(300)) and sc.status_truth(n, recent(300)[-1]) == 0
    if uid == "dnfsmon-agent-silent":
        return bool(recent(86400)) and not samples_in(scenario, at - 100, at)
    if uid == "dnfsmon-store-dropping":
        # The store's own counter (Store.counts after each run), not the points. An agent point
        # carries the counter as its sample began, up to one run (60 s) before the count after it.
        counts = [d for t, d in scenario.dropped if at - 600 - MINUTE <= t <= at]
        return bool(counts) and max(counts) > min(counts)
    if uid == "dnfsmon-source-failing":
        window = recent(300)
        # The TCP source while /proc/net/snmp is missing; the database source while it is down.
        failing = (sc.SOURCE_FAILING, sc.DB_OUTAGE)
        return bool(window) and all(any(sc.inside(w, n, t) for w in failing) for t in window)
    if uid == "dnfsmon-nothing-to-judge":
        # The agent's latest interval measured no layer: the database could not be read and the
        # recorded host has no NFS or dNFS traffic (dnfsmon doctor's exit 12).
        latest = recent(300)[-1] if recent(300) else None
        return latest is not None and sc.nothing_to_judge_truth(n, previous_sample(scenario, latest), latest)
    raise AssertionError(f"no truth for {uid}")


# Rules whose series vanish when their condition ends (a count of points that are no longer
# written): Grafana keeps such an instance as it was until it is missing from
# MISSING_SERIES_EVALS_TO_RESOLVE evaluations, one evaluation longer than the condition.
VANISHING = {"dnfsmon-critical-finding"}
RULE_UIDS = {
    "dnfsmon-critical-finding",
    "dnfsmon-database-unreachable",
    "dnfsmon-agent-silent",
    "dnfsmon-store-dropping",
    "dnfsmon-source-failing",
    "dnfsmon-nothing-to-judge",
}


def firing_truth(scenario, rule: dict, at: int, interval: int) -> bool:
    """Grafana's documented meaning of `for` (docs: alert rule evaluation, pending period): the
    condition held at every evaluation of the last `for`; for a vanishing series, also until its
    instance is resolved as missing."""
    pending = ge.duration_s(rule["for"])

    def held(t: int) -> bool:
        return all(alert_truth(scenario, rule["uid"], t - k) for k in range(0, pending + 1, interval))

    if held(at):
        return True
    lag = (ge.MISSING_SERIES_EVALS_TO_RESOLVE - 1) * interval
    return rule["uid"] in VANISHING and any(held(at - k) for k in range(interval, lag + 1, interval))


def test_every_alert_rule_fires_inside_its_window_and_nowhere_else(written):
    """Each rule evaluated every minute as its group is, its instances moved through Grafana's
    states (Normal, Pending, Alerting; noDataState, execErrState; grafana_emulation.RuleStates):
    firing after `for` inside its window, never outside it, and pending before it fires."""
    server, bucket, scenario = written
    rules = alert_rules()
    assert {r["uid"] for r in rules} == RULE_UIDS
    (group,) = json.load(open(os.path.join(GRAFANA, "provisioning", "alerting", "dnfsmon.json")))["groups"]
    interval = ge.duration_s(group["interval"])
    assert any(ge.duration_s(r["for"]) > 0 for r in rules)  # the pending state is exercised
    # Every minute of the last 3 hours, as Grafana evaluates the group.
    instants = range(scenario.end - sc.DENSE + 10 * MINUTE, scenario.end + 1, interval)
    lost = (scenario.end - sc.INFLUX_DOWN[0], scenario.end - sc.INFLUX_DOWN[1])
    # The store drops points only while InfluxDB is down: elsewhere a run fits in it.
    rises = [t for (_, a), (t, b) in zip(scenario.dropped, scenario.dropped[1:]) if b > a]
    assert rises and all(lost[0] <= t <= lost[1] + MINUTE for t in rises), rises[:5]
    for rule in rules:
        states = ge.RuleStates(rule, interval)
        fired, pending = set(), set()
        for at in instants:
            states.evaluate(at, ge.results_of(evaluate(server, bucket, rule, at)))
            fired |= {at} if states.firing() else set()
            pending |= {at} if states.pending() else set()
        # What the rule looks at: its range (the agent-silent rule: the last 100 s), back over its
        # `for`. Where that reaches into the points the store dropped, what InfluxDB holds is not
        # the schedule's.
        back = 100 if rule["uid"] == "dnfsmon-agent-silent" else rule["data"][0]["relativeTimeRange"]["from"]
        back += ge.duration_s(rule["for"]) + interval
        checked = [at for at in instants if at - back > lost[1] or at < lost[0]]
        if rule["uid"] == "dnfsmon-store-dropping":
            checked = list(instants)  # its window is the lost one
        truth = {at for at in checked if firing_truth(scenario, rule, at, interval)}
        assert truth, rule["uid"]  # the scenario has a window for every rule
        if rule["uid"] == "dnfsmon-store-dropping":
            # The store drops its oldest points, agent points among them: where every agent point
            # of a window was dropped, nothing is left to show the rise. Right after InfluxDB is
            # back the newest survive, and it must fire; it must never fire without a drop.
            back = scenario.end - sc.INFLUX_DOWN[1]
            assert fired <= truth and set(range(back, back + 5 * MINUTE, MINUTE)) <= fired, sorted(fired ^ truth)[:5]
        else:
            assert fired & set(checked) == truth, (rule["uid"], sorted((fired & set(checked)) ^ truth)[:5])
        if ge.duration_s(rule["for"]):
            # Pending in the `for` before it fires: the condition held, the alert not yet sent.
            first = min(truth)
            assert set(range(first - ge.duration_s(rule["for"]), first, interval)) <= pending, rule["uid"]


def test_pictures_of_the_last_three_hours(written, tmp_path):
    """grafana/plot.py draws docs/dashboards from this week, the queries expanded as Grafana expands
    them (the last 3 hours: every window of the scenario); set DNFSMON_WRITE_DASHBOARD_PLOTS to
    docs/dashboards to refresh the pictures."""
    import importlib.util

    server, bucket, scenario = written
    spec = importlib.util.spec_from_file_location("grafana_plot", os.path.join(GRAFANA, "plot.py"))
    plot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plot)
    end, seconds = scenario.end, 3 * 3600

    def runner(p, target):
        interval, _ = shown(server, bucket, {**p, "targets": []}, end, seconds)
        query = ge.interpolate(target["query"], (end - seconds) * 1000, end * 1000, interval, LINKED)
        return [
            {"name": f.name, "tags": f.tags, "columns": f.columns, "values": f.rows}
            for f in influxql(server, bucket, query)
        ]

    def tabulate(p, rows):
        return ge.transform(rows, p.get("transformations", []))

    out = os.environ.get("DNFSMON_WRITE_DASHBOARD_PLOTS") or str(tmp_path)
    for name in ("dnfsmon-host.json", "dnfsmon-fleet.json"):
        dashboard = board(name)
        drawn = plot.plot_dashboard(dashboard, runner, out, "(the test scenario, last 3 hours) ", tabulate)
        assert len(drawn) == len([p for p in dashboard["panels"] if p["type"] == "row"])
        for png, count in drawn.items():
            with open(os.path.join(out, png), "rb") as f:
                assert f.read(8) == b"\x89PNG\r\n\x1a\n"
            # No row is empty, and every row of graphs of the host dashboard is drawn from many
            # points, not one or two: the scenario has data for each (the health row's stats show
            # one value each, the fleet's tables a few hosts).
            many = png.startswith("dnfsmon-host") and not png.endswith("-health.png")
            assert count >= (50 if many else 1), (png, count)


# --- every panel on the recorded host's measurements, against the inputs' truth ---------------


def host_points(scenario) -> list[tuple[int, dict, dict]]:
    """(time, tags, fields) of every point the agent must write for the recorded host's NICs,
    filer connections, CPU and memory, kernel NFS mount and host TCP: each sample diffed against the previous one
    (the state the agent keeps across runs), from the inputs the scenario wrote, never from a query."""
    n, found = scenario.end, []
    host = {"host": sc.HOST}
    for before, t in zip(scenario.samples, scenario.samples[1:]):
        for interface in sc.NICS:
            found.append((t, {**host, "interface": interface}, sc.nic_truth(n, interface, before, t)))
        # The loopback: counters that do not move, and no link speed (so no %Util).
        found.append((t, {**host, "interface": "lo"}, dict.fromkeys(LOOPBACK_FIELDS, 0.0)))
        if sc.filer_connected(n, before, t):
            for local, server in sc.FILER_PATHS:
                tags = {**host, "server": server, "server_port": "2049", "local_address": local}
                tags["interface"] = interface_of(local)
                found.append((t, tags, sc.filer_truth(n, local, server, before, t)))
        found.append((t, host, sc.pressure_truth(n, before, t)))
        mount = {**host, "mountpoint": sc.ARCHIVE["mountpoint"]}
        for op in (*sc.NFS_OPS, "COMMIT", "GETATTR", "ACCESS", "LOOKUP"):
            fields = sc.nfs_op_truth(n, op, before, t) if op in sc.NFS_OPS else {"retrans_per_s": 0.0}
            found.append((t, {**mount, "op": op}, fields))
        found.append((t, mount, sc.nfs_mount_truth(n, before, t)))
        found.append((t, host, {"tcp_slot_table_entries": sc.SLOT_TABLE_ENTRIES}))
    up = host_up(scenario)
    for t in scenario.samples:
        before = previous_of(scenario, t, up) if up(t) else None
        if before is not None and not before < n - sc.TCP_RESET <= t:
            found.append((t, host, {"retrans_pct": sc.retrans_pct_truth(n, before, t)}))
    return found


LOOPBACK_FIELDS = ("rx_kib_per_s", "tx_kib_per_s", "saturation_per_s")


def interface_of(address: str) -> str:
    (interface,) = [i for i, a in sc.NICS.items() if a == address]
    return interface


HOST_MEASUREMENTS = (
    *nic.MEASUREMENTS,
    *filer_tcp.MEASUREMENTS,
    *pressure.MEASUREMENTS,
    *tcp.MEASUREMENTS,
    *mountstats.MEASUREMENTS,
    *rpc.MEASUREMENTS,
)
QUERY = re.compile(
    r'SELECT (?P<function>\w+)\("(?P<field>\w+)"\)(?: AS "[^"]+")? FROM "(?P<measurement>\w+)" '
    r"WHERE (?P<where>.*)time >= (?P<start>\d+)ms and time <= (?P<end>\d+)ms"
    r"(?: GROUP BY (?P<group>.*?))?(?: fill\(null\))?$"
)
AGGREGATES = {"mean": lambda v: sum(v) / len(v), "max": max, "min": min}


def reference(points, query: str, lost: tuple[int, int]) -> dict[tuple, dict[Optional[int], tuple[float, bool]]]:
    """What InfluxDB must answer to `query` (one aggregate of one field, tag conditions, GROUP BY
    time and tags, as InfluxQL defines them: buckets of the interval aligned to the epoch,
    the range closed at both ends): {series tags: {bucket ms or None: (value, touches lost)}}."""
    m = QUERY.fullmatch(query)
    assert m, query
    conditions = re.findall(r'"(\w+)" =~ /(.*?)/ AND ', m["where"])
    assert m["where"] == "".join(f'"{tag}" =~ /{pattern}/ AND ' for tag, pattern in conditions), query
    group = [g.strip() for g in (m["group"] or "").split(",") if g.strip()]
    interval = next((ge.duration_ms(g[5:-1]) for g in group if g.startswith("time(")), None)
    tags = [g.strip('"') for g in group if not g.startswith("time(")]
    start, end = int(m["start"]), int(m["end"])
    series: dict[tuple, dict[Optional[int], list]] = {}
    for t, point_tags, fields in points:
        ms = t * 1000
        if not start <= ms <= end or m["field"] not in fields:
            continue
        if not all(re.search(p, point_tags.get(tag, "")) for tag, p in conditions):
            continue
        key = tuple((tag, point_tags.get(tag, "")) for tag in tags)
        bucket = None if interval is None else ms // interval * interval
        series.setdefault(key, {}).setdefault(bucket, []).append((fields[m["field"]], lost[0] <= t <= lost[1]))
    return {
        key: {
            b: (AGGREGATES[m["function"]]([v for v, _ in values]), any(x for _, x in values))
            for b, values in buckets.items()
        }
        for key, buckets in series.items()
    }


def host_panels() -> list[tuple[str, dict]]:
    return [
        (name, p)
        for name in ("dnfsmon-host.json", "dnfsmon-fleet.json")
        for p in panels(board(name))
        if any(f'FROM "{m}"' in t["query"] for t in p["targets"] for m in HOST_MEASUREMENTS)
    ]


def compare_host_panels(server, bucket, end: int, moment: str, truth, lost, chosen) -> set[tuple[str, str]]:
    """Each panel of `chosen` at every range, for the recorded host: each series InfluxDB answers
    equals reference() over the truth points, bucket by bucket (buckets touching `lost` left
    out), and a stat shows its newest bucket; the panels compared."""
    checked = set()
    variables = {**LINKED, "host": sc.HOST}
    for dashboard, p in chosen:
        for range_name, seconds in RANGES.items():
            interval, frames = shown(server, bucket, p, end, seconds, variables)
            start_ms = (end - seconds) * 1000
            for t, fs in zip(p["targets"], frames):
                query = ge.interpolate(t["query"], start_ms, end * 1000, interval, variables)
                expected = reference(truth, query, lost)
                where = (dashboard, p["title"], moment, range_name, query)
                got = {tuple(sorted(f.tags.items())): f for f in fs}
                assert set(got) == {tuple(sorted(k)) for k in expected}, where
                for key, buckets in expected.items():
                    f = got[tuple(sorted(key))]
                    column = f.columns[1]
                    if None in buckets:  # one aggregate over the range (a table)
                        (value,) = f.values(column)
                        want, touched = buckets[None]
                        if not touched:
                            assert value == pytest.approx(want, rel=1e-9, abs=1e-9), where
                        continue
                    rows = {r[0]: r[1] for r in zip(f.values("time"), f.values(column)) if r[1] is not None}
                    assert {b for b, (_, touched) in buckets.items() if not touched} <= set(rows), where
                    for b, (want, touched) in buckets.items():
                        if not touched:
                            assert rows[b] == pytest.approx(want, rel=1e-9, abs=1e-9), (where, b)
                    assert set(rows) <= set(buckets), where
                if p["type"] == "stat" and expected:
                    # The stat shows the newest bucket's value (lastNotNull).
                    (series,) = expected.values()
                    newest = max(series)
                    assert ge.stat_values(p, fs) == [pytest.approx(series[newest][0], rel=1e-9)], where
            checked.add((dashboard, p["title"]))
    return checked


@pytest.mark.parametrize("moment", ["now", "incident", "db outage", "agent stopped"])
def test_every_host_panel_shows_the_recorded_inputs(written, moment):
    """Every panel on the NICs, the filer connections, CPU and memory and host TCP, at every
    range: each series InfluxDB answers equals the truth of the inputs, bucket by bucket, and a
    stat panel shows the last of it. Buckets holding points the store dropped while InfluxDB was
    down (INFLUX_DOWN) are left out: what survived there is the store's choice, not the inputs'."""
    server, bucket, scenario = written
    end = moments(scenario)[moment]
    lost = (scenario.end - sc.INFLUX_DOWN[0], scenario.end - sc.INFLUX_DOWN[1] + MINUTE)
    checked = compare_host_panels(server, bucket, end, moment, host_points(scenario), lost, host_panels())
    assert len(checked) == len(host_panels()) == 22


# --- the agent row: the agent's measures of itself, against the scenario's schedule -------------

AGENT_MEASUREMENT = "dnfsmon_agent"


def agent_points(scenario, lost: tuple[int, int]) -> list[tuple[int, dict, dict]]:
    """(time, tags, fields) of the dnfsmon_agent point of every sample, from the schedule alone:

    - sources_failed: the TCP source while /proc/net/snmp cannot be read (SOURCE_FAILING), the
      database's while nothing listens where it was (DB_OUTAGE: a source that reads another
      system says what it could not read: collect._compute_source), none elsewhere;
    - parse_problems: none (every recorded file is in the kernel's own format);
    - sample_seconds: 0: the scenario's clock moves only when collect sleeps between samples,
      so a sample measured on it takes no time (the real duration is not known here);
    - store_dropped_points: the store's own counter (Store.counts, read by the scenario after
      each run) of the run the sample belongs to. Where it rose inside a run, which sample saw
      which count is not known from outside: those samples must lie in `lost` (the points the
      store dropped while InfluxDB was down), whose buckets are left out."""
    n, found = scenario.end, []
    before = 0
    for (start, count), (_, after) in zip(sc.runs(n), scenario.dropped, strict=True):
        for t in range(start, start + count * int(sc.SAMPLE_INTERVAL_S), int(sc.SAMPLE_INTERVAL_S)):
            assert before == after or lost[0] <= t <= lost[1], (t, before, after)
            failed = sc.inside(sc.SOURCE_FAILING, n, t) + (sc.status_truth(n, t) == 0)
            fields = {"sources_failed": failed, "parse_problems": 0, "sample_seconds": 0.0}
            found.append((t, {"host": sc.HOST}, {**fields, "store_dropped_points": after}))
        before = after
    assert [t for t, _, _ in found] == scenario.samples
    return found


def agent_panels() -> list[tuple[str, dict]]:
    return [
        (name, p)
        for name in ("dnfsmon-host.json", "dnfsmon-fleet.json")
        for p in panels(board(name))
        if all(f'FROM "{AGENT_MEASUREMENT}"' in t["query"] for t in p["targets"])
        # The recent samples' panels (a count in the last 100 s) have tests of their own above.
        and not any("count(" in t["query"] for t in p["targets"])
    ]


@pytest.mark.parametrize("moment", ["now", "incident", "db outage", "agent stopped", "source failing"])
def test_every_agent_panel_shows_the_schedule(written, moment):
    """The health row's "Sources failed" and the agent row (sources failed, malformed entries,
    sample time, points dropped by the store) at every range, series by series and bucket by
    bucket, against what the schedule says the agent must record of itself."""
    server, bucket, scenario = written
    end = moments(scenario)[moment]
    lost = (scenario.end - sc.INFLUX_DOWN[0], scenario.end - sc.INFLUX_DOWN[1] + MINUTE)
    checked = compare_host_panels(server, bucket, end, moment, agent_points(scenario, lost), lost, agent_panels())
    assert checked == {
        ("dnfsmon-host.json", title)
        for title in (
            "Sources failed",
            "Sources failed per sample",
            "Malformed entries skipped per sample",
            "Sample time",
            "Points dropped by the local store (total)",
        )
    }


def test_the_agent_rows_panels_show_what_their_titles_name():
    """Each panel of the agent row queries the field its title names, and only that one (the
    malformed entries had a title and no query)."""
    host = board("dnfsmon-host.json")
    (row,) = [p for p in host["panels"] if p["type"] == "row" and p["title"] == "Agent"]
    fields = {p["title"]: {re.search(r'\("(\w+)"\)', t["query"])[1] for t in p["targets"]} for p in row["panels"]}
    assert fields == {
        "Sources failed per sample": {"sources_failed"},
        "Malformed entries skipped per sample": {"parse_problems"},
        "Sample time": {"sample_seconds"},
        "Points dropped by the local store (total)": {"store_dropped_points"},
    }


# --- every panel on the database's measurements, against the simulator's views -----------------

DATABASE_MEASUREMENTS = (*oracle.MEASUREMENTS, diagnosis.LADDER_MEASUREMENT)
SELECT = re.compile(
    r'SELECT (?:(?P<function>\w+)\("(?P<field>[^"]+)"\)(?: / (?P<divisor>\d+))?|"(?P<raw>[^"]+)")(?: AS "(?P<alias>[^"]+)")? '
    r"FROM (?:\"(?P<measurement>\w+)\"|\((?P<subquery>.*)\)) "
    r"WHERE (?P<where>.*?)(?:time >= (?P<start>\d+)ms and time <= (?P<end>\d+)ms)?"
    r"(?: GROUP BY (?P<group>.*?))?(?: fill\((?P<fill>\w+)\))?$"
)
CONDITION = re.compile(r"\"(?P<tag>.+?)\" (?:=~ /(?P<regex>.*)/|= '(?P<value>.*)'|< (?P<below>\d+))")


def evaluate_influxql(points, query: str, lost: tuple[int, int]):
    """What InfluxDB must answer to one of the dashboards' InfluxQL statements, as the language
    defines it (docs.influxdata.com, InfluxQL reference: GROUP BY time buckets aligned to the epoch
    and stamped with their start, the range closed at both ends, fill, subqueries whose rows are
    the outer query's points, GROUP BY * for every tag): {series tags: {bucket ms or None:
    (value, touches lost)}}. `points` are (seconds, tags, fields)."""
    m = SELECT.fullmatch(query)
    assert m, query
    where = m["where"]
    if m["subquery"] is not None:
        inner = evaluate_influxql(points, m["subquery"], lost)
        name = SELECT.fullmatch(m["subquery"])
        field_name = name["alias"] or name["field"]
        points = [
            (
                (b if b is not None else int(name["start"])) / 1000,
                {**dict(key), sc.MEASUREMENT: ""},
                {field_name: v},
                touched,
            )
            for key, buckets in inner.items()
            for b, (v, touched) in buckets.items()
        ]
    else:
        times, of_measurement = points[m["measurement"]]
        # The points in the range only (sorted by time): the lists are long, the ranges often short.
        first = bisect.bisect_left(times, int(m["start"]) / 1000) if m["start"] else 0
        last = bisect.bisect_right(times, int(m["end"]) / 1000) if m["end"] else len(times)
        points = [(t, tags, fields, lost[0] <= t <= lost[1]) for t, tags, fields in of_measurement[first:last]]
    conditions = [CONDITION.fullmatch(c.strip()) for c in where.strip().removesuffix("AND").split(" AND ") if c.strip()]
    assert all(conditions), (where, query)
    group = [g.strip() for g in (m["group"] or "").split(",") if g.strip()]
    interval = next((ge.duration_ms(g[5:-1]) for g in group if g.startswith("time(")), None)
    tags = [g.strip('"') for g in group if not g.startswith("time(")]
    start = int(m["start"]) if m["start"] else None
    end = int(m["end"]) if m["end"] else None
    field = m["field"] or m["raw"]
    series: dict[tuple, dict] = {}
    for t, point_tags, fields, touched in points:
        ms = round(t * 1000)
        # A subquery's rows are stamped with their bucket's start, which may precede the range: the
        # outer time condition is the inner query's range, not a filter on those stamps (InfluxDB
        # 1.x answers the bucket the range begins in).
        if start is not None and m["subquery"] is None and not start <= ms <= end:
            continue
        if field not in fields or not all(holds(c, point_tags, fields) for c in conditions):
            continue
        every = sorted((tag, value) for tag, value in point_tags.items() if tag != sc.MEASUREMENT)
        key = tuple(every) if tags == ["*"] else tuple((tag, point_tags.get(tag, "")) for tag in tags)
        key = tuple((k, v) for k, v in key if v != "")
        bucket = None if interval is None else ms // interval * interval
        series.setdefault(key, {}).setdefault(bucket, []).append((fields[field], touched))
    aggregate = {"mean": lambda v: sum(v) / len(v), "max": max, "min": min, "sum": sum, "last": lambda v: v[-1]}
    out = {}
    for key, buckets in series.items():
        out[key] = {}
        for b, values in buckets.items():
            if m["function"]:
                value = aggregate[m["function"]]([v for v, _ in values])
                value = value / int(m["divisor"]) if m["divisor"] else value
            else:
                ((value, _),) = values
            out[key][b] = (value, any(x for _, x in values))
    return out


def holds(condition: re.Match, tags: dict, fields: dict) -> bool:
    """One WHERE condition: a tag matching a regular expression or equal to a string, a field below a number."""
    if condition["regex"] is not None:
        return re.search(condition["regex"], tags.get(condition["tag"], "")) is not None
    if condition["value"] is not None:
        return tags.get(condition["tag"], "") == condition["value"]
    return fields.get(condition["tag"], float("inf")) < float(condition["below"])


def database_truth(scenario) -> dict[str, tuple[list[int], list[tuple[int, dict, dict]]]]:
    """The truth points by measurement, each list in time order with its times (for bisect)."""
    return truth_by_measurement(scenario.end, tuple(scenario.samples))


@functools.lru_cache(maxsize=1)
def truth_by_measurement(end: int, samples: tuple[int, ...]) -> dict[str, tuple[list[int], list]]:
    # Once per session, for both InfluxDB versions: the simulator's integrals take most of a minute.
    points, oracle_rungs = sc.database_points(end, list(samples))
    found: dict[str, list] = {}
    for point in sorted(points + ladder_truth(end, list(samples), points, oracle_rungs), key=lambda p: p[0]):
        found.setdefault(point[1][sc.MEASUREMENT], []).append(point)
    return {name: ([t for t, _, _ in listed], listed) for name, listed in found.items()}


def ladder_truth(n: int, samples: list[int], database: list, oracle_rungs: dict) -> list[tuple[int, dict, dict]]:
    """dnfsmon_latency_ladder of each interval, rung by rung as docs/doctor.md defines the ladder:
    Oracle's single-block read (all instances, weighted by waits; p95 from the histogram), the
    kernel client's READ (mountstats), the smoothed and minimum TCP RTT of the connections that
    carry dNFS (its paths: the filer connections, weighted by connection; the smallest floor), and
    the part of Oracle's latency the round trip does not explain."""
    found = []
    dnfs_used = {t for t, tags, _ in database if "path" in tags}
    for before, t in zip(samples, samples[1:]):
        rungs: dict[str, float] = {}
        if t in oracle_rungs:
            average, p95 = oracle_rungs[t]
            rungs["oracle_read_avg_ms"] = average
            if p95 is not None:
                rungs["oracle_read_p95_ms"] = p95 / 1000
        read = sc.nfs_op_truth(n, "READ", before, t)
        if "avg_rtt_ms" in read:
            rungs.update(
                nfs_queue_ms=read["avg_queue_ms"], nfs_rtt_ms=read["avg_rtt_ms"], nfs_exe_ms=read["avg_exe_ms"]
            )
        if t in dnfs_used and sc.filer_connected(n, before, t):
            rtts = list(sc.FILER_PATHS.values())
            rungs["tcp_srtt_ms"] = sum(rtts) / len(rtts) / 1000
            rungs["tcp_min_rtt_ms"] = min(rtt // 2 for rtt in rtts) / 1000
            if "oracle_read_avg_ms" in rungs and rungs["oracle_read_avg_ms"] >= rungs["tcp_srtt_ms"]:
                rungs["unexplained_ms"] = rungs["oracle_read_avg_ms"] - rungs["tcp_srtt_ms"]
        if rungs:
            found.append((t, {sc.MEASUREMENT: diagnosis.LADDER_MEASUREMENT, "host": sc.HOST}, rungs))
    return found


def database_panels() -> list[tuple[str, dict]]:
    return [
        (name, p)
        for name in ("dnfsmon-host.json", "dnfsmon-fleet.json")
        for p in panels(board(name))
        if any(f'FROM "{m}"' in t["query"] for t in p["targets"] for m in DATABASE_MEASUREMENTS)
        and not any(f'FROM "{m}"' in t["query"] for t in p["targets"] for m in ("dnfsmon_oracle_status",))
    ]


@pytest.fixture(scope="module")
def database_truth_points(written):
    return database_truth(written[2])


@pytest.mark.parametrize("moment", ["now", "incident", "db outage", "agent stopped"])
def test_every_database_panel_shows_the_simulated_views(written, database_truth_points, moment):
    """Every panel on the database's measurements (dNFS I/O, wait events and their histogram,
    paths, coverage, the latency ladder's Oracle rungs; the fleet's worst-read, top-operations and
    fallback tables), at every range, for the agent's host and for every host: each series InfluxDB
    answers equals what the simulated views' counters give by the Reference's formulas, bucket by
    bucket; a stat shows the newest bucket, a table its rows."""
    server, bucket, scenario = written
    end = moments(scenario)[moment]
    truth = database_truth_points
    lost = (scenario.end - sc.INFLUX_DOWN[0], scenario.end - sc.INFLUX_DOWN[1] + MINUTE)
    checked: dict[tuple[str, str], int] = {}
    for dashboard, p in database_panels():
        for host in (sc.HOST, "All"):
            variables = {**LINKED, "host": host}
            for range_name, seconds in RANGES.items():
                interval, frames = shown(server, bucket, p, end, seconds, variables)
                start_ms = (end - seconds) * 1000
                for t, fs in zip(p["targets"], frames):
                    query = ge.interpolate(t["query"], start_ms, end * 1000, interval, variables)
                    expected = evaluate_influxql(truth, query, lost)
                    where = (dashboard, p["title"], moment, host, range_name, query)
                    compared = compare(fs, expected, "fill(0)" in query, where)
                    if p["type"] == "stat":
                        # What the stat shows: per series, its newest bucket (lastNotNull).
                        newest = [buckets[max(b for b in buckets)][0] for buckets in expected.values()]
                        assert sorted(ge.stat_values(p, fs)) == pytest.approx(sorted(newest), rel=1e-9), where
                    checked[(dashboard, p["title"])] = checked.get((dashboard, p["title"]), 0) + compared
    # Every panel compared values (none passed on empty answers alone); the fallback table has
    # rows only in a range that holds the incident without the points the store dropped.
    assert len(checked) == len(database_panels()) == 17
    fallback = ("dnfsmon-fleet.json", "Databases with a dNFS fallback")
    assert {k for k, n in checked.items() if not n} <= (set() if moment == "incident" else {fallback}), checked


def compare(frames, expected, zero_filled: bool, where) -> int:
    """Each series InfluxDB answered against the reference's, bucket by bucket; the values compared."""
    compared = 0
    got = {tuple(sorted(f.tags.items())): f for f in frames}
    assert set(got) == {tuple(sorted(k)) for k in expected}, (where, sorted(got), sorted(expected))
    for key, buckets in expected.items():
        f = got[tuple(sorted(key))]
        column = f.columns[1]
        if None in buckets:  # one value over the range (a table)
            ((_, (want, touched)),) = buckets.items()
            (value,) = f.values(column)
            if not touched:
                assert value == pytest.approx(want, rel=1e-9, abs=1e-9), (where, key)
                compared += 1
            continue
        rows = {r[0]: r[1] for r in zip(f.values("time"), f.values(column)) if r[1] is not None}
        assert {b for b, (_, touched) in buckets.items() if not touched} <= set(rows), (where, key)
        for b, value in rows.items():
            want, touched = buckets.get(b, (0 if zero_filled else None, False))
            assert want is not None, (where, key, b, value)
            if not touched:
                assert value == pytest.approx(want, rel=1e-9, abs=1e-9), (where, key, b)
                compared += 1
    return compared
