"""Dashboards: dashboard-linter's rules checked by hand, the catalogue, and every
query run against a real InfluxDB the agent filled."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

import pytest

from configs import write_config
from dnfsmon import capture, catalogue, diagnosis
from dnfsmon.collect import compute, diff_captures
from dnfsmon.config import parse
from dnfsmon.influx import ship
from dnfsmon.points import Point
from dnfsmon.store import Store
from runner import run_dnfsmon

ROOT = os.path.join(os.path.dirname(__file__), "..")
GRAFANA = os.path.join(ROOT, "grafana")
CASES = os.path.join(os.path.dirname(__file__), "cases", "diff")
DOCTOR = os.path.join(os.path.dirname(__file__), "cases", "doctor")
DATASOURCE = {"type": "influxdb", "uid": "${datasource}"}


def load_generator():
    spec = importlib.util.spec_from_file_location("grafana_generate", os.path.join(GRAFANA, "generate.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PROMETHEUS_FLAVOUR = "-prometheus.json"


def all_dashboards():
    found = {}
    for name in sorted(os.listdir(os.path.join(GRAFANA, "dashboards"))):
        with open(os.path.join(GRAFANA, "dashboards", name), encoding="utf-8") as f:
            found[name] = json.load(f)
    return found


def dashboards():
    """The InfluxQL dashboards (the PromQL flavour's are checked in tests/test_grafana_prometheus.py)."""
    return {name: d for name, d in all_dashboards().items() if not name.endswith(PROMETHEUS_FLAVOUR)}


def panels_of(dashboard):
    """Every panel that shows data: those at the top level and those inside rows (collapsed or not)."""
    for p in dashboard["panels"]:
        if p["type"] == "row":
            yield from p["panels"]
        else:
            yield p


def all_panels():
    return [(name, p) for name, d in dashboards().items() for p in panels_of(d)]


def test_committed_dashboards_are_what_the_generator_writes():
    rendered = load_generator().render()
    assert sorted(n for n in rendered if n.startswith("dashboards")) == [f"dashboards/{n}" for n in all_dashboards()]
    for name, text in rendered.items():
        with open(os.path.join(GRAFANA, name), encoding="utf-8") as f:
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


def assert_no_overlap(name, panels):
    cells = set()
    for p in panels:
        g = p["gridPos"]
        assert g["x"] >= 0 and g["y"] >= 0 and g["w"] > 0 and g["h"] > 0 and g["x"] + g["w"] <= 24, (name, p["title"])
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & mine, (name, p["title"], "overlaps")
        cells |= mine


def test_unique_panel_ids_and_valid_non_overlapping_grid():
    for name, d in dashboards().items():
        ids = [p["id"] for p in d["panels"]] + [q["id"] for p in d["panels"] if p["type"] == "row" for q in p["panels"]]
        assert len(ids) == len(set(ids)), name
        # What a viewer sees with every row collapsed as committed, and each collapsed row once expanded.
        assert_no_overlap(name, d["panels"])
        for p in d["panels"]:
            if p["type"] == "row" and p["collapsed"]:
                assert_no_overlap(name, p["panels"])
                assert all(q["gridPos"]["y"] > p["gridPos"]["y"] for q in p["panels"]), (name, p["title"])


def test_host_dashboard_is_rows_by_layer_with_health_on_top():
    host = dashboards()["dnfsmon-host.json"]
    rows = [p for p in host["panels"] if p["type"] == "row"]
    assert [r["title"] for r in rows][:2] == ["Health", "Latency breakdown"]
    assert {"Database", "dNFS paths", "Network", "Kernel NFS client", "Agent"} <= {r["title"] for r in rows}
    # Nothing stands outside a row, and the health row is single numbers with thresholds.
    assert host["panels"][0]["type"] == "row"
    health = host["panels"][1 : host["panels"].index(rows[1])]
    # The verdict first (the worst current finding, its layer and remedy), top left; then single numbers.
    verdict, stats = health[0], health[1:]
    assert verdict["type"] == "table" and verdict["gridPos"]["x"] == 0 and "Verdict" in verdict["title"]
    assert len(stats) >= 7 and all(p["type"] == "stat" for p in stats)
    # The first screen holds it all: the verdict and the stats fit in two lines of the grid.
    assert max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in health) <= 1 + 2 * 4
    steps = [len(p["fieldConfig"]["defaults"]["thresholds"]["steps"]) for p in stats]
    assert sum(n >= 2 for n in steps) >= 6, steps  # all but a plain rate turn amber or red


def test_the_latency_question_is_one_panel_in_one_unit():
    host = dashboards()["dnfsmon-host.json"]
    rows = [p for p in host["panels"] if p["type"] == "row"]
    start = host["panels"].index(rows[1])
    breakdown = host["panels"][start + 1 : host["panels"].index(rows[2])]
    assert len(breakdown) == 1
    p = breakdown[0]
    assert p["fieldConfig"]["defaults"]["unit"] == "ms"
    # The ladder: Oracle's latency beside the round trip of the connections that carry it, and what is left.
    assert {queried(t["query"])[0] for t in p["targets"]} == {"dnfsmon_latency_ladder"}
    fields = {f for t in p["targets"] for f in queried(t["query"])[1]}
    assert {"oracle_read_avg_ms", "oracle_read_p95_ms", "tcp_srtt_ms", "unexplained_ms", "nfs_queue_ms"} <= fields


# Grafana unit ids for catalogue units, and the factor a query may apply to reach them.
SCALED = {" / 1000": {"µs": "ms"}}


def test_every_panel_unit_is_the_catalogue_unit_of_what_it_plots():
    generator = load_generator()
    entries = catalogue.load()
    checked = 0
    for _name, p in all_panels():
        unit = p["fieldConfig"]["defaults"]["unit"]
        for t in p["targets"]:
            measurement, fields, _tags = queried(t["query"])
            for field in fields:
                entry = entries[(measurement, "field", field)]
                expected = entry.unit
                for factor, mapping in SCALED.items():
                    if f'("{field}"){factor}' in t["query"]:
                        expected = mapping[expected]
                if f'count("{field}")' in t["query"]:
                    assert unit == "short", p["title"]  # a count of samples or findings, not the field's unit
                elif entry.type == "boolean":
                    assert unit == "bool_yes_no", p["title"]
                else:
                    assert unit == generator.grafana_unit(expected), (p["title"], field, unit, expected)
                checked += 1
    assert checked > 40


def test_a_throughput_panel_in_a_size_unit_would_fail():
    # The defect this guards against: MiB/s plotted with Grafana's "mbytes" (a size).
    assert load_generator().grafana_unit("MiB/s") == "MiBs" != "mbytes"


def test_outages_are_drawn_as_gaps():
    for _name, p in all_panels():
        for t in p["targets"]:
            if "GROUP BY time(" in t["query"]:
                expected = "fill(0)" if p["type"] == "heatmap" else "fill(null)"
                assert t["query"].endswith(expected), (p["title"], t["query"])


def test_fleet_rows_link_to_the_host_dashboard_with_their_host_and_database():
    fleet = dashboards()["dnfsmon-fleet.json"]
    for p in panels_of(fleet):
        links = p["fieldConfig"]["defaults"]["links"]
        assert links and "var-host=${__data.fields.host}" in links[0]["url"], p["title"]
        grouped_by_database = any('"database"' in t["query"].split("GROUP BY")[-1] for t in p["targets"])
        assert ("var-database=${__data.fields.database}" in links[0]["url"]) == grouped_by_database, p["title"]


def test_variables_filter_the_tag_they_are_filled_from():
    """A variable filled from one tag must not filter another (filer names are not addresses)."""
    for name, d in dashboards().items():
        sources = {
            v["name"]: re.search(r'FROM "(\w+)" WITH KEY = "(\w+)"', v["query"]).groups()
            for v in d["templating"]["list"]
            if v["type"] == "query"
        }
        for p in panels_of(d):
            for t in p["targets"]:
                measurement = queried(t["query"])[0]
                for tag, variable in re.findall(r'"(\w+)" =~ /\^\$(\w+)\$/', t["query"]):
                    filled_from_measurement, filled_from_tag = sources[variable]
                    assert tag == filled_from_tag, (name, p["title"], tag, variable)
                    # The same tag name on another measurement must mean the same thing: a filer
                    # name (dnfs_channel.server) is not a filer address (filer_tcp.server).
                    if tag == "server":
                        assert filled_from_measurement == measurement, (name, p["title"], variable)


def test_no_hard_coded_data_source_anywhere():
    for name, d in dashboards().items():
        text = json.dumps(d)
        assert not re.search(r'"uid": "(?!\$\{datasource\}|dnfsmon-)', text), name
        assert '"datasource": "' not in text, name  # the old string form names a data source


QUERY = re.compile(r'FROM "(?P<m>\w+)"')


def queried(query):
    """(measurement, fields, tags) a panel query names."""
    measurement = QUERY.search(query).group("m")
    # Names a subquery gives its columns (AS "..."): an outer query selects those, not fields.
    aliases = set(re.findall(r'AS "([^"]+)"', query))
    fields = set(re.findall(r'(?:mean|max|min|last|sum|count)\("(\w+)"\)', query)) - aliases
    raw_select = re.match(r'SELECT "(\w+)", "(\w+)" FROM "', query)
    if raw_select:
        fields |= set(raw_select.groups())
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
    run_dnfsmon("--config", config, "collect", "--count", "3", "--interval", "1", check_rc=0)
    # Host sources this machine lacks (NFS mounts, filers, kernel NFS client, a NIC with a known speed): the golden captures.
    points = []
    for case in ("nfs", "filer", "rpc", "basic", "reset"):
        _, old_raws, old_failures = capture.read(os.path.join(CASES, case, "old"))
        host, raws, failures = capture.read(os.path.join(CASES, case, "new"))
        points += compute(raws, failures, host, compute(old_raws, old_failures, host, {}).samples).points
    store = Store(str(directory / "golden-store"), 10**8)
    store.append(shifted(points, time.time_ns() - 60 * 10**9))
    # The latency ladder, the findings and the host pressure as collect stores them, for a Linux client
    # capped at 16 RPC slots (its own clock, so moved to the last minutes on its own).
    _, outcome = diff_captures(*(os.path.join(DOCTOR, "linux-client-16-slots", side) for side in ("old", "new")))
    newest = max(p.time_ns for p in outcome.points)
    doctor = [p for p in outcome.points if p.measurement == "dnfsmon_host_pressure"]
    doctor += diagnosis.to_points(diagnosis.diagnose(outcome.points, "dbhost1"), newest)
    store.append(shifted(doctor, time.time_ns() - 60 * 10**9))
    # One sample that could not read the database: the fleet lists only databases not reachable.
    down = {"up": False, "reachable": 0, "instances": 0, "failed_queries": 0, "error": "DPY-6005: cannot connect"}
    store.append([Point("dnfsmon_oracle_status", (("host", "dbhost1"), ("database", "SIMDB")), down, time.time_ns())])
    # Data files on the kernel NFS client: the fleet's fallback table lists only such databases.
    coverage = (("host", "dbhost1"), ("database", "SIMDB"), ("instance", "SIMDB1"), ("file_type", "Data File"))
    fallback = {"files": 20, "dnfs_files": 18, "dnfs_pct": 90.0}
    store.append([Point("dnfsmon_dnfs_coverage", coverage, fallback, time.time_ns())])
    settings = parse(
        {"influxdb": {"enabled": True, "url": influx_server.url, "bucket": db, "token_env": "DNFSMON_TEST_NO_TOKEN"}},
        None,
    ).influxdb
    ship(store, settings)
    return influx_server, db


def concrete(query):
    """A panel query with Grafana's variables filled as a user choosing "All" over the last hour would."""
    for name in ("host", "database", "instance", "server", "filer_address", "interface"):
        query = query.replace(f"${name}", ".*")
    query = query.replace("${__to}", str(time.time_ns() // 10**6))
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
            if k not in ("time", "_measurement") and (isinstance(v, (int, float, bool)) or (p["type"] == "table" and v))
        ]
        assert values, f"{p['title']}: {t['query']} returned no data"


def test_plots_of_the_panel_queries_draw_every_row(filled, tmp_path):
    """grafana/plot.py: the pictures in docs/dashboards/ are these queries' results, drawn."""
    server, db = filled
    spec = importlib.util.spec_from_file_location("grafana_plot", os.path.join(GRAFANA, "plot.py"))
    plot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plot)
    out = str(tmp_path)  # docs/dashboards are drawn by test_dashboard_truth.py, from a week of data
    for name, board in dashboards().items():
        drawn = plot.plot_dashboard(board, plot.simple_runner(server.url, db, 1.0), out)
        rows = [p for p in board["panels"] if p["type"] == "row"]
        assert len(drawn) == len(rows), name
        assert all(count > 0 for count in drawn.values()), (name, drawn)
        for png in drawn:
            with open(os.path.join(out, png), "rb") as f:
                assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_the_agent_events_annotation_returns_events(filled):
    server, db = filled
    (annotation,) = dashboards()["dnfsmon-host.json"]["annotations"]["list"]
    rows = server.rows(concrete(annotation["query"]), db)
    assert rows and all(annotation["textColumn"] in row and annotation["tagsColumn"] in row for row in rows)
    assert {row["kind"] for row in rows} == {"counter-reset"}  # the reset golden case


def test_every_variable_query_returns_values(filled):
    server, db = filled
    for name, d in dashboards().items():
        for v in d["templating"]["list"]:
            if v["type"] == "query":
                assert server.rows(concrete(v["query"]), db), (name, v["name"])


# --- the JSON type-checks against Grafana's published schema ---

SCHEMA_PACKAGE = os.path.join(os.path.dirname(__file__), "grafana_schema")
# Panel options types of @grafana/schema, per panel type the dashboards use.
PANEL_OPTIONS = {
    "timeseries": "timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen",
    "stat": "stat/panelcfg/x/StatPanelCfg_types.gen",
    "table": "table/panelcfg/x/TablePanelCfg_types.gen",
    "heatmap": "heatmap/panelcfg/x/HeatmapPanelCfg_types.gen",
}
# Grafana's JSON holds an enum's value where the TypeScript types name the enum, and Grafana fills
# omitted keys with defaults when it loads a dashboard. Loose<T> accepts exactly that: enum values as
# their strings and every key optional. Unknown keys and wrongly typed values still fail, because
# TypeScript checks an object literal's keys against the type it is assigned to.
LOOSE = """
type Loose<T> = T extends string ? `${T}` : T extends number | boolean | null | undefined ? T
  : T extends Array<infer U> ? Array<Loose<U>> : { [K in keyof T]?: Loose<T[K]> };
"""


@pytest.fixture(scope="module")
def tsc(tmp_path_factory):
    """TypeScript's compiler and @grafana/schema at the versions pinned in tests/grafana_schema/package.json."""
    cache = os.path.join(os.path.expanduser("~"), ".cache", "dnfsmon-tests", "grafana-schema")
    with open(os.path.join(SCHEMA_PACKAGE, "package.json"), encoding="utf-8") as f:
        wanted = f.read()
    os.makedirs(cache, exist_ok=True)
    manifest = os.path.join(cache, "package.json")
    current = open(manifest, encoding="utf-8").read() if os.path.exists(manifest) else ""
    if current != wanted or not os.path.exists(os.path.join(cache, "node_modules", ".bin", "tsc")):
        with open(manifest, "w", encoding="utf-8") as f:
            f.write(wanted)
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--no-package-lock", "--silent"],
            cwd=cache,
            check=True,
            timeout=600,
        )
    return cache


def typescript_for(dashboard: dict) -> str:
    lines = ['import type { Dashboard } from "@grafana/schema";']
    for kind, module in PANEL_OPTIONS.items():
        lines.append(
            f'import type {{ Options as {kind}Options }} from "@grafana/schema/dist/esm/raw/composable/{module}";'
        )
    lines.append('import type { AnnotationQuery } from "@grafana/schema";')
    lines.append(LOOSE)
    # The InfluxDB and Prometheus data sources' own annotation keys, which the dashboard schema
    # leaves to data sources.
    lines.append(
        "type InfluxAnnotation = Loose<AnnotationQuery> & { query?: string; textColumn?: string; tagsColumn?: string;"
        " expr?: string; titleFormat?: string; textFormat?: string; step?: string };"
    )
    lines.append(
        'type Board = Loose<Omit<Dashboard, "annotations">> & { annotations?: { list?: InfluxAnnotation[] } };'
    )
    lines.append(f"export const dashboard: Board = {json.dumps(dashboard, ensure_ascii=False)};")
    for p in panels_of(dashboard):
        lines.append(f"export const options_{p['id']}: Loose<{p['type']}Options> = {json.dumps(p['options'])};")
    return "\n".join(lines) + "\n"


def run_tsc(tsc: str, sources: dict) -> subprocess.CompletedProcess:
    """Type-check `sources` (file name -> TypeScript) beside the installed packages, strict mode."""
    # A directory of its own beside node_modules (so imports resolve), never shared with another run.
    directory = tempfile.mkdtemp(prefix="check-", dir=tsc)
    for name, text in sources.items():
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            f.write(text)
    command = [os.path.join(tsc, "node_modules", ".bin", "tsc"), "--noEmit", "--strict", "--target", "es2022"]
    command += ["--module", "esnext", "--moduleResolution", "bundler", "--skipLibCheck", *sources]
    try:
        return subprocess.run(command, cwd=directory, capture_output=True, text=True, timeout=300)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.slow  # installs TypeScript and @grafana/schema with npm on first use
def test_dashboards_type_check_against_grafanas_published_schema(tsc):
    sources = {
        name.replace(".json", ".ts").replace("-", "_"): typescript_for(d) for name, d in all_dashboards().items()
    }
    result = run_tsc(tsc, sources)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow  # installs TypeScript and @grafana/schema with npm on first use
def test_the_schema_check_catches_an_unknown_key_and_a_wrong_type(tsc):
    board = dashboards()["dnfsmon-host.json"]
    stat = next(i for i, p in enumerate(board["panels"]) if p["type"] == "stat")
    bad_key = json.loads(json.dumps(board))
    bad_key["panels"][stat]["fieldConfig"]["defaults"]["unitt"] = "ms"
    bad_type = json.loads(json.dumps(board))
    bad_type["panels"][stat]["gridPos"]["w"] = "wide"
    bad_option = json.loads(json.dumps(board))
    bad_option["panels"][stat]["options"]["graphMode"] = "sparkle"
    for broken, needle in ((bad_key, "unitt"), (bad_type, "not assignable to type 'number'"), (bad_option, "sparkle")):
        result = run_tsc(tsc, {"broken.ts": typescript_for(broken)})
        assert result.returncode != 0 and needle in result.stdout, result.stdout


def test_alert_states_follow_grafanas_transitions():
    """grafana_emulation.RuleStates on the transitions pkg/services/ngalert/state/state.go makes:
    Pending for `for`, then Alerting; back to Normal when the condition is 0; a series missing
    from two evaluations resolved; noDataState OK and execErrState Error on their own results."""
    import grafana_emulation as ge

    host = (("host", "db1"),)
    rule = {"for": "2m", "noDataState": "OK", "execErrState": "Error"}
    states = ge.RuleStates(rule, 60)
    seen = []
    for at, conditions in [
        (0, {host: False}),
        (60, {host: True}),  # Pending from here
        (120, {host: True}),
        (180, {host: True}),  # 2 minutes since 60: Alerting
        (240, {host: False}),  # Normal at once
        (300, {host: True}),  # Pending again
        (360, {}),  # no series: a NoData result of its own (OK), the host's instance missing
        (420, {}),  # missing from 2 evaluations: resolved and dropped
        (480, None),  # the query failed: Error
    ]:
        states.evaluate(at, ge.results_of(conditions))
        seen.append({labels: i.state for labels, i in states.instances.items()})
    assert [s.get(host) for s in seen] == [
        "Normal",
        "Pending",
        "Pending",
        "Alerting",
        "Normal",
        "Pending",
        "Pending",
        None,
        None,
    ]
    assert seen[6][ge.NO_SERIES] == "Normal" and seen[8][ge.NO_SERIES] == "Error"
    # for 0s: straight to Alerting; a firing instance whose series vanishes keeps firing one evaluation.
    states = ge.RuleStates({**rule, "for": "0s"}, 60)
    states.evaluate(0, ge.results_of({host: True}))
    assert states.firing() == {host}
    states.evaluate(60, ge.results_of({}))
    assert states.firing() == {host}
    states.evaluate(120, ge.results_of({}))
    assert states.firing() == set()
    # execErrState Alerting and noDataState Alerting fire on their own result, after `for` too.
    states = ge.RuleStates({"for": "1m", "noDataState": "Alerting", "execErrState": "Alerting"}, 60)
    states.evaluate(0, ge.results_of({}))
    assert states.pending() == {ge.NO_SERIES}
    states.evaluate(60, ge.results_of(None))
    assert states.firing() == {ge.NO_SERIES}
