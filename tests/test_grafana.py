"""Dashboards: dashboard-linter's rules checked by hand, the catalogue, and every
query run against a real InfluxDB the agent filled."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time

import pytest

from configs import write_config
from dnfsmon import capture, catalogue
from dnfsmon.collect import compute
from dnfsmon.config import parse
from dnfsmon.influx import ship
from dnfsmon.points import Point
from dnfsmon.store import Store

ROOT = os.path.join(os.path.dirname(__file__), "..")
GRAFANA = os.path.join(ROOT, "grafana")
CASES = os.path.join(os.path.dirname(__file__), "cases", "diff")
DATASOURCE = {"type": "influxdb", "uid": "${datasource}"}


def load_generator():
    spec = importlib.util.spec_from_file_location("grafana_generate", os.path.join(GRAFANA, "generate.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def dashboards():
    found = {}
    for name in sorted(os.listdir(os.path.join(GRAFANA, "dashboards"))):
        with open(os.path.join(GRAFANA, "dashboards", name), encoding="utf-8") as f:
            found[name] = json.load(f)
    return found


def all_panels():
    return [(name, p) for name, d in dashboards().items() for p in d["panels"]]


def test_committed_dashboards_are_what_the_generator_writes():
    rendered = load_generator().render()
    assert sorted(rendered) == sorted(dashboards())
    for name, text in rendered.items():
        with open(os.path.join(GRAFANA, "dashboards", name), encoding="utf-8") as f:
            assert f.read() == text, f"{name} is stale: run python grafana/generate.py"


def test_dashboard_level_rules():
    boards = dashboards()
    assert len({d["uid"] for d in boards.values()}) == len(boards)
    for name, d in boards.items():
        assert d["editable"] is False, name
        assert d["title"] and d["description"], name
        variables = {v["name"]: v for v in d["templating"]["list"]}
        assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "influxdb"
        for v in variables.values():
            if v["type"] == "query":
                assert v["datasource"] == DATASOURCE, (name, v["name"])


@pytest.mark.parametrize("name, p", all_panels(), ids=lambda x: x if isinstance(x, str) else x["title"])
def test_panel_rules(name, p):
    assert p["title"] and p["description"], p
    assert p["datasource"] == DATASOURCE
    assert p["fieldConfig"]["defaults"].get("unit"), f"{p['title']} has no unit"
    assert p["targets"] and all(t["datasource"] == DATASOURCE for t in p["targets"])


def test_unique_panel_ids_and_valid_non_overlapping_grid():
    for name, d in dashboards().items():
        ids = [p["id"] for p in d["panels"]]
        assert len(ids) == len(set(ids)), name
        cells = set()
        for p in d["panels"]:
            g = p["gridPos"]
            assert g["x"] >= 0 and g["y"] >= 0 and g["w"] > 0 and g["h"] > 0 and g["x"] + g["w"] <= 24, (
                name,
                p["title"],
            )
            mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
            assert not cells & mine, (name, p["title"], "overlaps")
            cells |= mine


def test_no_hard_coded_data_source_anywhere():
    for name, d in dashboards().items():
        text = json.dumps(d)
        assert not re.search(r'"uid": "(?!\$\{datasource\}|dnfsmon-)', text), name
        assert '"datasource": "' not in text, name  # the old string form names a data source


QUERY = re.compile(r'FROM "(?P<m>\w+)"')


def queried(query):
    """(measurement, fields, tags) a panel query names."""
    measurement = QUERY.search(query).group("m")
    fields = set(re.findall(r'(?:mean|max|min|last|sum)\("(\w+)"\)', query))
    tags = (
        set(re.findall(r'"(\w+)" (?:=~|=|!=) ', query))
        | set(re.findall(r', "(\w+)"', query.split("GROUP BY")[-1]))
        | set(re.findall(r'GROUP BY "(\w+)"', query))
    )
    return measurement, fields, tags


def test_every_queried_field_and_tag_is_catalogued():
    entries = catalogue.load()
    for _name, p in all_panels():
        for t in p["targets"]:
            measurement, fields, tags = queried(t["query"])
            for field in fields:
                assert (measurement, "field", field) in entries, (
                    f"{p['title']}: {measurement}.{field} is not catalogued"
                )
            for tag in tags:
                assert (measurement, "tag", tag) in entries, (
                    f"{p['title']}: tag {tag} of {measurement} is not catalogued"
                )


def test_a_panel_on_an_uncatalogued_field_would_fail():
    entries = catalogue.load()
    measurement, _fields, _ = queried('SELECT mean("read_latency_ms") FROM "dnfsmon_dnfs_io" WHERE $timeFilter')
    assert (measurement, "field", "read_latency_ms") not in entries


# --- every query against a real InfluxDB filled by the agent ---


def shifted(points, now_ns):
    """Golden points moved to the last minutes, keeping their spacing."""
    newest = max(p.time_ns for p in points)
    return [Point(p.measurement, p.tags, p.fields, now_ns - (newest - p.time_ns)) for p in points]


@pytest.fixture(scope="module")
def filled(influx_server, tmp_path_factory):
    directory = tmp_path_factory.mktemp("grafana")
    db = "grafana"
    influx_server.create_database(db)
    config = write_config(
        directory,
        agent={"host": "dbhost1"},
        host={"sources": ["nic", "tcp"]},
        simulator={"enabled": True, "instances": 2},
        influxdb={"enabled": True, "url": influx_server.url, "bucket": db},
    )
    result = subprocess.run(
        [sys.executable, "-m", "dnfsmon", "--config", str(config), "collect", "--count", "3", "--interval", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    # Host sources this machine lacks (NFS mounts, filers, kernel NFS client, a NIC with a known speed): the golden captures.
    points = []
    for case in ("nfs", "filer", "rpc", "basic"):
        _, old_raws, old_failures = capture.read(os.path.join(CASES, case, "old"))
        host, raws, failures = capture.read(os.path.join(CASES, case, "new"))
        points += compute(raws, failures, host, compute(old_raws, old_failures, host, {}).samples).points
    store = Store(str(directory / "golden-store"), 10**8)
    store.append(shifted(points, time.time_ns() - 60 * 10**9))
    settings = parse(
        {"influxdb": {"enabled": True, "url": influx_server.url, "bucket": db, "token_env": "DNFSMON_TEST_NO_TOKEN"}},
        None,
    ).influxdb
    ship(store, settings)
    return influx_server, db


def concrete(query):
    """A panel query with Grafana's variables filled as a user choosing "All" over the last hour would."""
    for name in ("host", "database", "instance", "server", "interface"):
        query = query.replace(f"${name}", ".*")
    return query.replace("$timeFilter", "time > now() - 1h").replace("$__interval", "10s")


@pytest.mark.parametrize("name, p", all_panels(), ids=lambda x: x if isinstance(x, str) else x["title"])
def test_every_panel_query_returns_data(filled, name, p):
    server, db = filled
    for t in p["targets"]:
        rows = server.rows(concrete(t["query"]), db)
        values = [
            v
            for row in rows
            for k, v in row.items()
            if k not in ("time", "_measurement") and isinstance(v, (int, float, bool))
        ]
        assert values, f"{p['title']}: {t['query']} returned no data"


def test_every_variable_query_returns_values(filled):
    server, db = filled
    for name, d in dashboards().items():
        for v in d["templating"]["list"]:
            if v["type"] == "query":
                assert server.rows(concrete(v["query"]), db), (name, v["name"])
