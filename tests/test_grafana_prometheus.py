"""The PromQL flavour of the dashboards: the same panels as the InfluxQL ones, on the names
agent/dnfsmon/prometheus.py publishes, in their base units. Their queries run against real
servers in tests/test_dashboard_truth_promql.py."""

from __future__ import annotations

import json
import re

import pytest

from dnfsmon import catalogue
from dnfsmon import prometheus as naming
from test_grafana import PROMETHEUS_FLAVOUR, all_dashboards, load_generator, panels_of

PROMETHEUS_DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
PAIRS = [
    (name, name.replace(".json", PROMETHEUS_FLAVOUR))
    for name in all_dashboards()
    if not name.endswith(PROMETHEUS_FLAVOUR)
]


def test_every_dashboard_has_its_promql_flavour():
    boards = all_dashboards()
    assert len(PAIRS) == 2 and all(flavour in boards for _, flavour in PAIRS)


@pytest.mark.parametrize("influxql, promql", PAIRS)
def test_the_same_panels_in_the_same_places(influxql, promql):
    boards = all_dashboards()
    mine, theirs = list(panels_of(boards[promql])), list(panels_of(boards[influxql]))
    assert [(p["title"], p["type"], p["gridPos"], p["id"]) for p in mine] == [
        (p["title"], p["type"], p["gridPos"], p["id"]) for p in theirs
    ]
    for p, q in zip(mine, theirs):
        assert len(p["targets"]) == len(q["targets"]), p["title"]
        assert p["datasource"] == PROMETHEUS_DATASOURCE and all(
            t["datasource"] == PROMETHEUS_DATASOURCE for t in p["targets"]
        )
        assert all(t["expr"] and "query" not in t for t in p["targets"]), p["title"]
        assert p["description"] == q["description"] and p["options"] == q["options"], p["title"]
    assert boards[promql]["uid"] == boards[influxql]["uid"] + "-prometheus"
    text = json.dumps(boards[promql])
    # Links go to the same flavour; nothing of InfluxQL is left.
    assert "/d/dnfsmon-host/" not in text and "/d/dnfsmon-fleet/" not in text
    assert "$timeFilter" not in text and "SELECT" not in text and '"influxdb"' not in text


NAMES = {m.name: key for key, m in naming.metrics().items()}


def promql_names(expr: str) -> tuple[set[str], set[str]]:
    """(metric names, label names) a PromQL expression uses."""
    metrics = set(re.findall(r"\b(dnfsmon_\w+)", expr))
    matched = set(re.findall(r"[{,](\w+)=~?\"", expr))
    grouped = {label.strip() for group in re.findall(r"by \(([^)]*)\)", expr) for label in group.split(",")}
    return metrics, matched | grouped


def test_every_metric_and_label_is_one_the_agent_publishes():
    entries = catalogue.load()
    tags = {(m, naming.label(name)) for (m, kind, name) in entries if kind == "tag"}
    checked = 0
    for _, promql in PAIRS:
        board = all_dashboards()[promql]
        exprs = [t["expr"] for p in panels_of(board) for t in p["targets"]]
        exprs += [v["query"] for v in board["templating"]["list"] if v["type"] == "query"]
        exprs += [a["expr"] for a in board["annotations"]["list"]]
        for expr in exprs:
            metrics, label_names = promql_names(expr)
            assert metrics, expr
            for name in metrics:
                assert name in NAMES, f"{expr}: {name} is not a published name"
                measurement = NAMES[name][0]
                for label in label_names - {""}:
                    assert (measurement, label) in tags, f"{expr}: {label} is not a label of {name}"
            checked += 1
    assert checked > 60


def test_a_misspelt_name_would_fail():
    metrics, _ = promql_names('max(max_over_time(dnfsmon_tcp_retrans_pct{host=~"$host"}[$__interval]))')
    assert metrics == {"dnfsmon_tcp_retrans_pct"} and "dnfsmon_tcp_retrans_pct" not in NAMES


@pytest.mark.parametrize("influxql, promql", PAIRS)
def test_units_are_the_base_units_and_thresholds_scaled_to_them(influxql, promql):
    """10 ms is 0.01 s, 0.5 % is a ratio of 0.005: the panel turns amber at the same figure."""
    boards = all_dashboards()
    generator = load_generator()
    factors = {generator.grafana_unit(u): generator.prometheus_unit(u) for u in generator.GRAFANA_UNITS}
    scaled = 0
    for p, q in zip(panels_of(boards[promql]), panels_of(boards[influxql])):
        unit, factor = factors.get(q["fieldConfig"]["defaults"]["unit"], (q["fieldConfig"]["defaults"]["unit"], 1.0))
        assert p["fieldConfig"]["defaults"]["unit"] == unit, p["title"]
        steps = q["fieldConfig"]["defaults"].get("thresholds", {}).get("steps", [])
        mine = p["fieldConfig"]["defaults"].get("thresholds", {}).get("steps", [])
        assert len(mine) == len(steps), p["title"]
        for a, b in zip(mine, steps):
            assert (a["value"] is None and b["value"] is None) or a["value"] == pytest.approx(b["value"] * factor)
            scaled += factor != 1.0 and b["value"] is not None
    assert scaled >= (6 if "host" in influxql else 8)


def test_a_target_without_its_promql_side_is_refused():
    with pytest.raises(ValueError, match="no PromQL side"):
        load_generator().target('SELECT mean("x") FROM "y"')


def test_variables_are_label_values_of_published_series():
    for _, promql in PAIRS:
        for v in all_dashboards()[promql]["templating"]["list"]:
            if v["type"] == "datasource":
                assert v["query"] == "prometheus"
            else:
                assert v["datasource"] == PROMETHEUS_DATASOURCE and v["query"].startswith("label_values(")
                assert v["allValue"] == ".*"
