"""Write grafana/dashboards/*.json and the alert rules (grafana/provisioning/alerting/dnfsmon.json)
from the panel and rule lists below.

The dashboards are committed JSON (provisioned as files); this script only
spares writing twenty near-identical panels by hand. Run it after changing a
panel: `python grafana/generate.py`. tests/test_grafana.py checks that the
committed files are what this script writes, and runs every query against a
real InfluxDB the agent filled.

Every panel is defined once, with its query in two flavours side by side:
InfluxQL (native on InfluxDB 1.8, on 2.x through a DBRP mapping, and on 3.x)
and PromQL, on the Prometheus names of agent/dnfsmon/prometheus.py (the
textfile collector's, and those `ship` writes with [influxdb] naming =
"prometheus" into a store that answers PromQL). Each flavour is a dashboard
of its own: dnfsmon-host.json and dnfsmon-host-prometheus.json, and so on
(FLAVOURS). Every panel and target uses the data source variable.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Sequence
from typing import Optional

try:
    from dnfsmon import catalogue
    from dnfsmon import prometheus as naming
except ImportError:  # run from a checkout without the package installed
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent"))
    from dnfsmon import catalogue
    from dnfsmon import prometheus as naming

HERE = os.path.dirname(os.path.abspath(__file__))
DATASOURCE = {"type": "influxdb", "uid": "${datasource}"}
PROMETHEUS_DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
# Targeted: Grafana 11, 12 and 13. 39 is the schema Grafana 11.0 writes; Grafana migrates an older
# schemaVersion forward when it loads a dashboard (never backward), so the oldest targeted one is used.
SCHEMA_VERSION = 39


class Where:
    """A filter in both query languages: an InfluxQL WHERE condition and PromQL label matchers.

    `a + b` is both conditions (b's InfluxQL text starts with its own " AND "). In PromQL the
    template variables are regex matchers, which PromQL anchors at both ends; the Oracle
    `instance` tag is the label `oracle_instance` (agent/dnfsmon/prometheus.py says why).
    """

    def __init__(self, influxql: str, promql: str):
        self.influxql, self.promql = influxql, promql

    def __add__(self, other: Where) -> Where:
        return Where(self.influxql + other.influxql, ",".join(m for m in (self.promql, other.promql) if m))


# The template variables' filters, per kind of measurement.
EVERYTHING = Where("", "")
HOST = Where('"host" =~ /^$host$/', 'host=~"$host"')
DB = HOST + Where(
    ' AND "database" =~ /^$database$/ AND "instance" =~ /^$instance$/',
    'database=~"$database",oracle_instance=~"$instance"',
)
READ_EVENT = Where(" AND \"event\" = 'db file sequential read'", 'event="db file sequential read"')
ANY_HOST = Where('"host" =~ /.+/', 'host=~".+"')  # the fleet: every host
FILER = Where(' AND "server" =~ /^$server$/', 'server=~"$server"')  # dNFS channels: the filer's name (SVRNAME)
FILER_ADDRESS = Where(' AND "server" =~ /^$filer_address$/', 'server=~"$filer_address"')  # TCP: the filer's address
INTERFACE = Where(' AND "interface" =~ /^$interface$/', 'interface=~"$interface"')
# "Current": the last two minutes before the end of the dashboard's range (Grafana's global
# variable ${__to}, the range's end in ms since the epoch), so a range in the past shows what
# was current at its end. The agent stores a sample every 10 s and ships them once a minute
# (cron), so the newest point of a live agent is at most about 70 s old.
CURRENT = "time > ${__to}ms - 2m AND time <= ${__to}ms"
# A live agent's newest sample is at most one run (60 s) plus shipping old; silent for three
# more samples (30 s), it has none in this window.
SILENT_AFTER = "100s"


# Grafana unit ids for the catalogue's units (Grafana: "Standard options > Unit";
# `suffix:<text>` is Grafana's documented custom unit). A unit missing here is
# shown with its catalogue text as a suffix, so a panel never invents a unit.
GRAFANA_UNITS = {
    "percent": "percent",
    "ms": "ms",
    "µs": "µs",
    "s": "s",
    "bytes": "bytes",
    "KiB": "kbytes",
    "KiB/s": "KiBs",
    "MiB/s": "MiBs",
    "Mbit/s": "Mbits",
    "ops/s": "ops",
    "0/1": "bool_yes_no",
}
# Conversions a panel may ask for so that one panel shows one unit
# (the latency breakdown: Oracle publishes µs, TCP and NFS publish ms).
CONVERSIONS = {("µs", "ms"): " / 1000", ("ms", "ms"): "", ("µs", "µs"): ""}


def grafana_unit(catalogue_unit: str) -> str:
    if not catalogue_unit:
        return "short"
    return GRAFANA_UNITS.get(catalogue_unit, f"suffix: {catalogue_unit}")


_ENTRIES: dict = {}


def catalogue_unit(measurement: str, field: str) -> str:
    """The unit the catalogue gives a field (the one source of truth for units)."""
    if not _ENTRIES:
        _ENTRIES.update(catalogue.load())
    entry = _ENTRIES.get((measurement, "field", field))
    if entry is None:
        raise KeyError(f"{measurement}.{field} is not in the catalogue")
    return str(entry.unit)


# The Prometheus names' base units as Grafana unit ids (agent/dnfsmon/prometheus.py scales every
# value to them); "per_second" of things keeps the catalogue unit's text.
PROMETHEUS_GRAFANA_UNITS = {
    "seconds": "s",
    "bytes": "bytes",
    "bytes_per_second": "Bps",
    "ratio": "percentunit",
    "seconds_per_second": "s",
    "ops_per_second": "ops",
}


def prometheus_unit(catalogue_unit: str) -> tuple[str, float]:
    """(Grafana unit, factor from the catalogue unit) of a value the Prometheus names publish."""
    choices = naming.UNITS.get(catalogue_unit)
    if not choices:
        return grafana_unit(catalogue_unit), 1.0
    _, base, factor = choices[0]
    return PROMETHEUS_GRAFANA_UNITS.get(base) or grafana_unit(catalogue_unit), factor


_METRICS: dict = {}


def metric(measurement: str, field: str) -> str:
    """The Prometheus name of a catalogued field (agent/dnfsmon/prometheus.py: one rule for every name)."""
    if not _METRICS:
        _METRICS.update(naming.metrics())
    return str(_METRICS[(measurement, field)].name)


def labels(tags: Sequence[str]) -> str:
    return ", ".join(naming.label(tag) for tag in tags)


def legend(text: str) -> str:
    """An InfluxQL alias ("reads $tag_instance") as a Prometheus legend ("reads {{oracle_instance}}")."""
    words = text.split(" ") if text else []
    return " ".join("{{" + naming.label(w[len("$tag_") :]) + "}}" if w.startswith("$tag_") else w for w in words)


def promql(expr: str, legend_format: str = "", instant: bool = False, table: bool = False, column: str = "") -> dict:
    """A target's PromQL side: a range query drawn over the range, or an instant query at its end.
    `column` names the value column of a table (Grafana calls it "Value")."""
    return {"expr": expr, "legendFormat": legend_format, "instant": instant, "table": table, "column": column}


def target(
    query: str,
    ref: str = "A",
    alias: str = "",
    table: bool = False,
    unit: str = "",
    prometheus: Optional[dict] = None,
) -> dict:
    """A target with its InfluxQL `query` and its PromQL side (promql()), side by side."""
    if prometheus is None:
        raise ValueError(f"target {query!r} has no PromQL side")
    t = {
        "refId": ref,
        "datasource": DATASOURCE,
        "rawQuery": True,
        "query": query,
        "resultFormat": "table" if table else "time_series",
    }
    if alias:
        t["alias"] = alias
    # Not Grafana keys: the generator's notes of the unit this target's values are in and of its
    # PromQL side, removed before the JSON is written (see panel() and flavoured()).
    t["_unit"] = unit
    t["_promql"] = prometheus
    return t


# InfluxQL aggregate -> the PromQL aggregation (over time, then across series) that picks the same value.
OVER_TIME = {"mean": "avg", "max": "max", "min": "min", "last": "last"}


def selector(metric_name: str, where: Where) -> str:
    return f"{metric_name}{{{where.promql}}}" if where.promql else metric_name


def over(aggregate: str, metric_name: str, where: Where, window: str, group: Sequence[str]) -> str:
    """`aggregate` of each series over `window`, then across the series of each `group`."""
    inner = f"{OVER_TIME[aggregate]}_over_time({selector(metric_name, where)}[{window}])"
    across = "max" if aggregate == "last" else OVER_TIME[aggregate]
    return f"{across} by ({labels(group)}) ({inner})" if group else f"{across}({inner})"


def summed(measurement: str, field: str, where: Where, group: Sequence[str], alias: str = "") -> dict:
    """The sum over series of each series' mean per $__interval, one sum per tag in `group`.

    A measurement with one series per instance (and PDB) is a rate per series: the total
    is the sum of the series' rates. sum() over the raw points would add every sample that
    falls in an interval too (two instances at 1,000/s showed 12,000 at a 1 min interval),
    so each series is averaged over the interval first (`GROUP BY *`: every tag), then added.
    """
    by = "".join(f', "{tag}"' for tag in group)
    inner = (
        f'SELECT mean("{field}") AS "{field}" FROM "{measurement}" WHERE {where.influxql} AND $timeFilter '
        "GROUP BY time($__interval), * fill(none)"
    )
    query = f'SELECT sum("{field}") FROM ({inner}) WHERE $timeFilter GROUP BY time($__interval){by} fill(null)'
    alias = alias or " ".join(f"$tag_{tag}" for tag in group)
    each = f"avg_over_time({metric(measurement, field)}{{{where.promql}}}[$__interval])"
    expr = f"sum by ({labels(group)}) ({each})" if group else f"sum({each})"
    return target(query, alias=alias, unit=catalogue_unit(measurement, field), prometheus=promql(expr, legend(alias)))


def series(
    measurement: str,
    fields: Sequence[tuple[str, str]],
    where: Where,
    group: Sequence[str],
    extra: Optional[Where] = None,
    aggregate: str = "mean",
    to_unit: str = "",
    refs: str = "ABCDEFGH",
) -> list[dict]:
    """One target per field: `aggregate` of the field per $__interval, one series per tag in `group`.

    fill(null) leaves an interval without points empty, so Grafana draws an
    agent outage as a gap, not as a straight line across it (a PromQL range query has no
    point where the window holds no sample).
    """
    targets = []
    by = "".join(f', "{tag}"' for tag in group)
    where = where + extra if extra else where
    for ref, (field, label) in zip(refs, fields):
        unit = catalogue_unit(measurement, field)
        scale = ""
        if to_unit:
            scale = CONVERSIONS[(unit, to_unit)]
            unit = to_unit
        alias = " ".join([label] + [f"$tag_{tag}" for tag in group]).strip()
        query = (
            f'SELECT {aggregate}("{field}"){scale} FROM "{measurement}" WHERE {where.influxql} AND $timeFilter '
            f"GROUP BY time($__interval){by} fill(null)"
        )
        expr = over(aggregate, metric(measurement, field), where, "$__interval", group)
        targets.append(target(query, ref, alias, unit=unit, prometheus=promql(expr, legend(alias))))
    return targets


def last_in_range(measurement: str, field: str, where: Where, tag: str) -> dict:
    """The latest value of the field in the range, one per `tag`.

    PromQL (an instant query at the range's end) takes the last value per series, then one per
    `tag`: where two series share the tag (a database's points without the simulator's tag
    beside those with it), each series' last value would count, however old. So the last
    2 minutes come first ("current", as the health row's other figures), the whole range only
    where they hold nothing."""
    query = f'SELECT last("{field}") FROM "{measurement}" WHERE {where.influxql} AND $timeFilter GROUP BY "{tag}"'
    recent = over("last", metric(measurement, field), where, "2m", [tag])
    expr = f"{recent} or {over('last', metric(measurement, field), where, '$__range', [tag])}"
    return target(
        query,
        alias=f"$tag_{tag}",
        unit=catalogue_unit(measurement, field),
        prometheus=promql(expr, legend(f"$tag_{tag}"), instant=True),
    )


Thresholds = list[tuple[Optional[float], str]]


def threshold_steps(thresholds: Thresholds, factor: float = 1.0) -> dict:
    # round(): 0.5 % is 0.005, not 0.005000000000000001.
    steps = [{"value": v if v is None or factor == 1.0 else round(v * factor, 12), "color": c} for v, c in thresholds]
    return {"mode": "absolute", "steps": steps}


def panel(
    title: str,
    description: str,
    targets: list[dict],
    kind: str = "timeseries",
    width: int = 12,
    height: int = 8,
    options: Optional[dict] = None,
    links: Optional[list[dict]] = None,
    thresholds: Optional[Thresholds] = None,
    unit: str = "",
    transformations: Sequence[dict] = (),
    no_value: str = "",
    mappings: Sequence[dict] = (),
    overrides: Sequence[dict] = (),
) -> dict:
    """A panel whose unit is its targets' catalogue unit (all must agree), or `unit` for what the catalogue has none of.

    In the PromQL flavour the unit is the Prometheus name's base unit and the thresholds are
    scaled to it (10 ms is 0.01 s): the panel shows the same figure in either flavour."""
    units = {t.pop("_unit") for t in targets}
    prometheus = {"unit": unit, "factor": 1.0}
    if not unit:
        if len(units) != 1:
            raise ValueError(f"panel {title!r} mixes units {sorted(units)}: convert with to_unit")
        (catalogued,) = units
        unit = grafana_unit(catalogued)
        prometheus["unit"], prometheus["factor"] = prometheus_unit(catalogued)
    defaults: dict[str, object] = {"unit": unit}
    if links:
        defaults["links"] = links
    if thresholds:
        defaults["thresholds"] = threshold_steps(thresholds)
        prometheus["thresholds"] = threshold_steps(thresholds, float(prometheus["factor"]))
    if no_value:
        defaults["noValue"] = no_value
    if mappings:
        defaults["mappings"] = list(mappings)
    if kind == "stat":
        options = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}, **(options or {})}
    built = {
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "fieldConfig": {"defaults": defaults, "overrides": list(overrides)},
        "options": options or {},
        "targets": targets,
        "gridPos": {"w": width, "h": height},
    }
    if transformations:
        built["transformations"] = list(transformations)
    built["_prometheus"] = prometheus
    return built


def row(title: str, panels: list[dict], collapsed: bool = False) -> list[dict]:
    """A collapsible row of panels (Grafana nests a collapsed row's panels inside it)."""
    header = {"type": "row", "title": title, "collapsed": collapsed, "panels": [], "gridPos": {"w": 24, "h": 1}}
    if collapsed:
        header["panels"] = panels
        return [header]
    return [header, *panels]


def variable(name: str, label: str, query: str, values_of: str) -> dict:
    """A template variable filled by `query` (InfluxQL) or, in the PromQL flavour, by Grafana's
    label_values(metric{matchers}, label) (`values_of`)."""
    return {
        "type": "query",
        "name": name,
        "label": label,
        "datasource": DATASOURCE,
        "query": query,
        "refresh": 2,
        "includeAll": True,
        "multi": True,
        "allValue": ".*",
        "current": {"text": "All", "value": "$__all"},
        "sort": 1,
        "_promql": f"label_values({values_of})",
    }


def datasource_variable() -> dict:
    return {
        "type": "datasource",
        "name": "datasource",
        "label": "InfluxDB",
        "query": "influxdb",
        "current": {},
        "hide": 0,
        "refresh": 1,
    }


def layout(items: list[dict]) -> list[dict]:
    """Give panels ids and place them left to right, top to bottom, 24 columns wide.

    A row header takes a full line; a collapsed row's panels are placed as they
    will stand when the row is expanded.
    """
    ids = iter(range(1, 1000))

    def place(panels: list[dict], y: int) -> int:
        x = row_height = 0
        for p in panels:
            w, h = p["gridPos"]["w"], p["gridPos"]["h"]
            if p["type"] == "row" or x + w > 24:
                x, y, row_height = 0, y + row_height, 0
            p["id"] = next(ids)
            p["gridPos"] = {"x": x, "y": y, "w": w, "h": h}
            if p["type"] == "row":
                y, row_height = y + 1, 0
                place(p["panels"], y)
                continue
            x += w
            row_height = max(row_height, h)
        return y + row_height

    place(items, 0)
    return items


def dashboard(
    uid: str,
    title: str,
    description: str,
    panels: list[dict],
    variables: list[dict],
    links: list[dict],
    annotations: Sequence[dict] = (),
) -> dict:
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "editable": False,
        "tags": ["dnfsmon"],
        "timezone": "browser",
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "refresh": "1m",
        "time": {"from": "now-6h", "to": "now"},
        "graphTooltip": 1,
        "templating": {"list": [datasource_variable(), *variables]},
        "annotations": {"list": list(annotations)},
        "links": links,
        "panels": layout(panels),
    }


def finding_columns(where: str) -> str:
    """Each finding's last summary and remedy over `where`: one row per finding id (a finding
    is written with every sample it holds in, so the raw points repeat it six times a minute)."""
    return (
        'SELECT last("summary") AS "summary", last("remedy") AS "remedy" FROM "dnfsmon_finding" '
        f'WHERE {HOST.influxql} AND {where} GROUP BY "severity", "layer", "id"'
    )


def finding_ids(window: str) -> str:
    """PromQL: one series per finding (severity, layer, id) seen in the `window` before the query's
    time. A Prometheus sample is a number, so the summary and remedy are not there: the id names
    the rule, whose remedy docs/doctor.md gives; likely_cause is a finding's one numeric field."""
    each = f"last_over_time({metric('dnfsmon_finding', 'likely_cause')}{{{HOST.promql}}}[{window}])"
    return f"max by (severity, layer, id) ({each})"


# Severity order for sorting: the tag's values sort alphabetically in the order of their
# weight ("critical" before "warning"); a test checks every severity the rules emit.
SEVERITIES = ("critical", "warning")


def agent_samples(where: Where, group: Sequence[str], table: bool = False) -> dict:
    """Samples each agent stored in the last SILENT_AFTER before the range's end, 0 for an
    agent seen in the range but silent since: the recent count and a zero per agent seen,
    added (InfluxQL has no outer join; a subquery list is a union). In PromQL, `or` keeps the
    count where there is one and the zero elsewhere, at the range's end (an instant query)."""
    by = ", ".join(f'"{tag}"' for tag in group)
    condition = f"{where.influxql} AND " if where.influxql else ""
    recent = (
        f'SELECT count("sample_seconds") AS "samples" FROM "dnfsmon_agent" '
        f"WHERE {condition}time > ${{__to}}ms - {SILENT_AFTER} AND time <= ${{__to}}ms GROUP BY {by}"
    )
    seen = f'SELECT last("sample_seconds") * 0 AS "samples" FROM "dnfsmon_agent" WHERE {condition}$timeFilter GROUP BY {by}'
    query = f'SELECT sum("samples") AS "samples" FROM ({recent}), ({seen}) GROUP BY {by}'
    name = selector(metric("dnfsmon_agent", "sample_seconds"), where)
    expr = (
        f"sum by ({labels(group)}) (count_over_time({name}[{SILENT_AFTER}])) "
        f"or sum by ({labels(group)}) (0 * last_over_time({name}[$__range]))"
    )
    column = "samples" if table else ""
    return target(query, table=table, prometheus=promql(expr, instant=True, table=table, column=column))


SILENT_MAPPING = {"type": "value", "options": {"0": {"text": "silent", "color": "red", "index": 0}}}


def health_row() -> list[dict]:
    """The verdict first, then single numbers with thresholds: is something wrong, and in which layer."""

    def stat(
        title: str, description: str, targets: list[dict], thresholds: list, unit: str = "", width: int = 4, **more
    ) -> dict:
        return panel(
            title, description, targets, kind="stat", width=width, height=4, thresholds=thresholds, unit=unit, **more
        )

    verdict = panel(
        "Verdict: the worst current finding",
        "The most severe finding of dnfsmon doctor's rules in the last 2 minutes before the end of the range: what is wrong, "
        "the layer it blames (client, network, filer or host) and what to do (docs/doctor.md). Empty when no rule fired; "
        "all current findings are in the table of the Host pressure and findings row.",
        [
            target(
                finding_columns(CURRENT),
                table=True,
                prometheus=promql(finding_ids("2m"), instant=True, table=True),
            )
        ],
        kind="table",
        width=8,
        height=4,
        unit="short",
        no_value="No finding in the last 2 minutes",
        transformations=[
            {"id": "sortBy", "options": {"sort": [{"field": "severity", "desc": False}]}},
            {"id": "limit", "options": {"limitField": 1}},
            {"id": "organize", "options": {"excludeByName": {"Time": True, "id": True}, "indexByName": {}}},
        ],
        options={"showHeader": True, "cellHeight": "sm"},
    )
    return row(
        "Health",
        [
            verdict,
            stat(
                "Nothing to judge",
                "Yes when the agent's latest interval measured no layer: no database figures and no NFS or dNFS traffic to "
                "a filer (dnfsmon doctor's exit code 12). No finding can fire then, so an empty verdict does not mean "
                "healthy; dnfsmon_verdict.nothing_measured says why.",
                [last_in_range("dnfsmon_verdict", "nothing_to_judge", HOST, "host")],
                [(None, "green"), (1, "orange")],
            ),
            stat(
                "Agent: samples in the last 100 s",
                "Samples this host's agent stored in the 100 s before the end of the range. The agent samples every 10 s and "
                "ships once a minute, so a live agent always has some; none (red, 'silent') means it stopped for more than "
                "three samples: every other number on this dashboard is then old.",
                [agent_samples(HOST, ["host"])],
                [(None, "red"), (1, "green")],
                unit="short",
                no_value="silent",
                mappings=[SILENT_MAPPING],
            ),
            stat(
                "Current findings",
                "Distinct findings of dnfsmon doctor's rules (one per rule id) in the last 2 minutes before the end of the range; "
                "the verdict names the worst.",
                [
                    target(
                        f'SELECT count("summary") FROM ({finding_columns(CURRENT)}) GROUP BY "host"',
                        unit="",
                        prometheus=promql(f"count({finding_ids('2m')})", instant=True),
                    )
                ],
                [(None, "green"), (1, "red")],
                unit="short",
                no_value="0",
            ),
            stat(
                "Database reachable",
                "Yes when the agent could read the database in its latest sample; the reason is in dnfsmon_oracle_status.error when not.",
                [
                    last_in_range(
                        "dnfsmon_oracle_status",
                        "reachable",
                        HOST + Where(' AND "database" =~ /^$database$/', 'database=~"$database"'),
                        "database",
                    )
                ],
                [(None, "red"), (1, "green")],
            ),
            stat(
                "Single-block read",
                "Average 'db file sequential read' wait of the worst instance, latest interval. Above 10 ms a dNFS read is slow for NAS on flash; above 20 ms users notice.",
                series(
                    "dnfsmon_oracle_event", [("avg_latency_us", "")], DB + READ_EVENT, [], aggregate="max", to_unit="ms"
                ),
                [(None, "green"), (10, "orange"), (20, "red")],
            ),
            stat(
                "dNFS NFS ops/s",
                "NFS READ + WRITE operations per second through Direct NFS, all selected instances together, latest interval "
                "(V$DNFS_STATS; one database block read can be one or more NFS READs).",
                [summed("dnfsmon_dnfs_io", "total_iops", DB, [])],
                [(None, "blue")],
            ),
            stat(
                "Filer TCP RTT",
                "Largest smoothed TCP round-trip time of the connections to the filers, latest interval.",
                series("dnfsmon_filer_tcp", [("srtt_max_ms", "")], HOST, [], aggregate="max"),
                [(None, "green"), (2, "orange"), (10, "red")],
                width=3,
            ),
            stat(
                "TCP retransmits",
                "Host-wide retransmitted segments as a share of segments sent, latest interval.",
                series("dnfsmon_tcp", [("retrans_pct", "")], HOST, [], aggregate="max"),
                [(None, "green"), (0.5, "orange"), (2, "red")],
                width=3,
            ),
            stat(
                "Busiest NIC",
                "Highest nicstat %Util of any interface, latest interval.",
                series("dnfsmon_nic", [("util_pct", "")], HOST, [], aggregate="max"),
                [(None, "green"), (70, "orange"), (90, "red")],
                width=3,
            ),
            stat(
                "Kernel NFS backlog",
                "Mean RPCs waiting for a transport slot per RPC sent, worst kernel NFS mount. Above 0: the sunrpc slot table is full (dNFS does not use it).",
                series("dnfsmon_nfs_mount", [("avg_backlog", "")], HOST, [], aggregate="max"),
                [(None, "green"), (0.01, "orange"), (1, "red")],
            ),
            stat(
                "Sources failed",
                "Sources the agent could not read in its latest sample (each is logged with its reason).",
                series("dnfsmon_agent", [("sources_failed", "")], HOST, [], aggregate="max"),
                [(None, "green"), (1, "red")],
                width=3,
            ),
        ],
    )


def latency_row() -> list[dict]:
    """Where the latency comes from: every layer in one panel, in one unit."""
    return row(
        "Latency breakdown",
        [
            panel(
                "Where a single-block read spends its time",
                "One unit (ms) for every layer. Oracle's 'db file sequential read' is what a session waits; the filer TCP RTT is the network and the filer's TCP stack; "
                "the kernel NFS client's RTT, execute and queue times apply only to data on kernel NFS mounts (dNFS does not use the kernel client). "
                "Oracle far above the TCP RTT points at the filer or the host; TCP RTT far above its minimum points at the network. "
                "These are the latency ladder's figures (dnfsmon_latency_ladder, docs/doctor.md): the TCP connections are those that carry Oracle's I/O.",
                series(
                    "dnfsmon_latency_ladder",
                    [
                        ("oracle_read_avg_ms", "Oracle read avg"),
                        ("oracle_read_p95_ms", "Oracle read p95"),
                        ("tcp_srtt_ms", "TCP RTT"),
                        ("tcp_min_rtt_ms", "TCP min RTT"),
                        ("nfs_queue_ms", "NFS queue"),
                        ("nfs_rtt_ms", "NFS RTT"),
                        ("nfs_exe_ms", "NFS execute"),
                        ("unexplained_ms", "not explained by the RTT"),
                    ],
                    HOST,
                    [],
                ),
                width=24,
                height=9,
            ),
        ],
    )


def database_row() -> list[dict]:
    return row(
        "Database",
        [
            panel(
                "dNFS coverage of data files",
                "Share of data files whose V$IOSTAT_FILE access method is DNFS_LIB. Below 100 % on NFS storage: a silent fallback to the kernel NFS client.",
                [
                    last_in_range(
                        "dnfsmon_dnfs_coverage",
                        "dnfs_pct",
                        DB + Where(" AND \"file_type\" = 'Data File'", 'file_type="Data File"'),
                        "instance",
                    )
                ],
                kind="stat",
                width=6,
                height=8,
                thresholds=[(None, "red"), (99.99, "green")],
            ),
            panel(
                "dNFS NFS operations",
                "NFS READ and WRITE operations per second through Direct NFS, per instance (V$DNFS_STATS diffed per process). These are NFS RPCs, not database I/O calls.",
                [
                    summed("dnfsmon_dnfs_io", "read_iops", DB, ["instance"], alias="reads $tag_instance"),
                    {
                        **summed("dnfsmon_dnfs_io", "write_iops", DB, ["instance"], alias="writes $tag_instance"),
                        "refId": "B",
                    },
                ],
                width=9,
            ),
            panel(
                "dNFS throughput",
                "MiB per second read and written through Direct NFS, per instance.",
                series("dnfsmon_dnfs_io", [("read_mib_per_s", "read"), ("write_mib_per_s", "write")], DB, ["instance"]),
                width=9,
            ),
            panel(
                "I/O wait latency",
                "Average wait per event in milliseconds (ΔTIME_WAITED_MICRO / ΔTOTAL_WAITS / 1000), the unit of the latency ladder above. "
                "'db file sequential read' is single-block read latency; "
                "asynchronous and direct-path events measure waits for batches, not the latency of one I/O.",
                series("dnfsmon_oracle_event", [("avg_latency_us", "")], DB, ["instance", "event"], to_unit="ms"),
            ),
            panel(
                "Single-block read latency histogram",
                "Waits per second of 'db file sequential read' per power-of-two bucket (upper bound in µs) from V$EVENT_HISTOGRAM_MICRO, all selected instances together.",
                [
                    target(
                        f'SELECT mean("waits_per_s") FROM "dnfsmon_oracle_latency_histogram" WHERE {(DB + READ_EVENT).influxql} AND $timeFilter '
                        'GROUP BY time($__interval), "le_us" fill(0)',
                        alias="$tag_le_us",
                        unit=catalogue_unit("dnfsmon_oracle_latency_histogram", "waits_per_s"),
                        prometheus=promql(
                            over(
                                "mean",
                                metric("dnfsmon_oracle_latency_histogram", "waits_per_s"),
                                DB + READ_EVENT,
                                "$__interval",
                                ["le_us"],
                            ),
                            "{{le_us}}",
                        ),
                    )
                ],
                kind="heatmap",
                options={
                    "calculate": False,
                    "yAxis": {"unit": "µs"},
                    "rowsFrame": {"layout": "le"},
                    "cellValues": {"unit": "short"},
                    "color": {"scheme": "Oranges", "mode": "scheme"},
                },
            ),
            panel(
                "I/O waits per second",
                "Waits per second per I/O event.",
                series("dnfsmon_oracle_event", [("waits_per_s", "")], DB, ["instance", "event"]),
            ),
            panel(
                "Average NFS operation size",
                "KiB per dNFS read and per write over each interval.",
                series("dnfsmon_dnfs_io", [("avg_read_kib", "read"), ("avg_write_kib", "write")], DB, ["instance"]),
                width=6,
            ),
            panel(
                "dNFS processes",
                "Processes with a V$DNFS_STATS row at the end of each interval.",
                series("dnfsmon_dnfs_io", [("processes", "processes")], DB, ["instance"]),
                width=6,
            ),
        ],
    )


def paths_row() -> list[dict]:
    return row(
        "dNFS paths",
        [
            panel(
                "dNFS path balance",
                "Each path's share of its filer's sends (V$DNFS_CHANNELS): even paths share equally. Shares are exact even when others also select the view.",
                series("dnfsmon_dnfs_channel", [("share_pct", "")], DB + FILER, ["server", "path"]),
            ),
            panel(
                "dNFS path sends",
                "Sends per second per path. V$DNFS_CHANNELS counts since the last select by anyone: another reader makes these low.",
                series("dnfsmon_dnfs_channel", [("sends_per_s", "")], DB + FILER, ["server", "path"]),
            ),
        ],
        collapsed=True,
    )


def network_row() -> list[dict]:
    return row(
        "Network",
        [
            panel(
                "NIC utilisation",
                "nicstat %Util per interface (max of rx and tx on full duplex). Absent where the link speed is unknown.",
                series("dnfsmon_nic", [("util_pct", "")], HOST + INTERFACE, ["interface"]),
            ),
            panel(
                "NIC throughput",
                "KiB per second received and transmitted per interface.",
                series(
                    "dnfsmon_nic", [("rx_kib_per_s", "rx"), ("tx_kib_per_s", "tx")], HOST + INTERFACE, ["interface"]
                ),
            ),
            panel(
                "NIC saturation",
                "nicstat Sat: errors, drops, overruns, collisions and carrier errors per second per interface.",
                series("dnfsmon_nic", [("saturation_per_s", "")], HOST + INTERFACE, ["interface"]),
            ),
            panel(
                "TCP RTT to the filers",
                "Smoothed round-trip time of the TCP connections to each filer address (kernel tcp_info): mean and worst connection.",
                series(
                    "dnfsmon_filer_tcp",
                    [("srtt_avg_ms", "mean"), ("srtt_max_ms", "max")],
                    HOST + FILER_ADDRESS,
                    ["server", "local_address"],
                ),
            ),
            panel(
                "TCP retransmissions to the filers",
                "Segments retransmitted per second on the connections to each filer address.",
                series("dnfsmon_filer_tcp", [("retrans_segs_per_s", "")], HOST + FILER_ADDRESS, ["server"]),
            ),
            panel(
                "Host TCP retransmissions",
                "Retransmitted segments as a percentage of segments sent, whole host (/proc/net/snmp).",
                series("dnfsmon_tcp", [("retrans_pct", "")], HOST, []),
            ),
        ],
        collapsed=True,
    )


def kernel_nfs_row() -> list[dict]:
    return row(
        "Kernel NFS client",
        [
            panel(
                "READ/WRITE RTT, execute and queue time",
                "Per operation on each kernel NFS mount (mountstats): network and server round trip, whole RPC time, and time queued before transmission.",
                series(
                    "dnfsmon_nfs_op",
                    [("avg_rtt_ms", "rtt"), ("avg_exe_ms", "exe"), ("avg_queue_ms", "queue")],
                    HOST + Where(' AND "op" =~ /^(READ|WRITE)$/', 'op=~"READ|WRITE"'),
                    ["mountpoint", "op"],
                ),
            ),
            panel(
                "Retransmissions",
                "Retransmissions per second per mount and operation. Kernel NFS I/O on a datafile mount while dNFS is meant to be used is a fallback sign.",
                series("dnfsmon_nfs_op", [("retrans_per_s", "")], HOST, ["mountpoint", "op"]),
            ),
            panel(
                "RPC backlog",
                "Mean RPCs waiting for a transport slot per RPC sent; above 0 means the sunrpc slot table is full.",
                series("dnfsmon_nfs_mount", [("avg_backlog", "")], HOST, ["mountpoint"]),
            ),
            panel(
                "sunrpc slot table",
                "sunrpc.tcp_slot_table_entries: RPC slots a kernel NFS TCP transport starts with. A Linux client capped at 16 slots queues RPCs in the client while the filer idles.",
                series("dnfsmon_rpc", [("tcp_slot_table_entries", "slots")], HOST, []),
            ),
        ],
        collapsed=True,
    )


def host_pressure_row() -> list[dict]:
    return row(
        "Host pressure and findings",
        [
            panel(
                "CPU",
                "Busy, iowait and steal time over all CPUs (/proc/stat).",
                series(
                    "dnfsmon_host_pressure",
                    [("cpu_busy_pct", "busy"), ("cpu_iowait_pct", "iowait"), ("cpu_steal_pct", "steal")],
                    HOST,
                    [],
                ),
                width=8,
            ),
            panel(
                "Run queue per CPU",
                "Runnable tasks per online CPU: above 1, tasks wait for a CPU and I/O completions are handled late.",
                series("dnfsmon_host_pressure", [("run_queue_per_cpu", "")], HOST, []),
                width=8,
            ),
            panel(
                "Swapping",
                "Pages swapped in and out per second (/proc/vmstat): a database host that swaps serves I/O late.",
                series(
                    "dnfsmon_host_pressure", [("swap_in_pages_per_s", "in"), ("swap_out_pages_per_s", "out")], HOST, []
                ),
                width=8,
            ),
            panel(
                "Findings over the range, last occurrence of each",
                "One row per finding of dnfsmon doctor's rules seen in the time range, most severe first: when it was last seen, "
                "the layer it blames, what is wrong and what to do (docs/doctor.md).",
                [
                    target(
                        finding_columns("$timeFilter"),
                        table=True,
                        prometheus=promql(finding_ids("$__range"), instant=True, table=True),
                    )
                ],
                kind="table",
                width=24,
                unit="short",
                no_value="No finding in the range",
                transformations=[{"id": "sortBy", "options": {"sort": [{"field": "severity", "desc": False}]}}],
                options={"showHeader": True},
            ),
        ],
        collapsed=True,
    )


def agent_row() -> list[dict]:
    return row(
        "Agent",
        [
            panel(
                "Sources failed per sample",
                "Sources the agent could not read or parse in each sample (each is logged with its reason).",
                series("dnfsmon_agent", [("sources_failed", "failed")], HOST, [], aggregate="max"),
                width=6,
            ),
            panel(
                "Malformed entries skipped per sample",
                "Malformed entries the sources skipped in each sample, the rest of the input still read (each is logged "
                "with its file and line).",
                series("dnfsmon_agent", [("parse_problems", "malformed")], HOST, [], aggregate="max"),
                width=6,
            ),
            panel(
                "Sample time",
                "Wall time the agent spent reading and computing each sample.",
                series("dnfsmon_agent", [("sample_seconds", "")], HOST, [], aggregate="max"),
                width=6,
            ),
            panel(
                "Points dropped by the local store (total)",
                "Points the local store has dropped (oldest first) to stay within store.max_bytes since it was created: a rise means "
                "InfluxDB was unreachable for too long and that many points are lost. A counter: the panel shows its value, not a sum.",
                series("dnfsmon_agent", [("store_dropped_points", "")], HOST, [], aggregate="max"),
                width=6,
            ),
        ],
        collapsed=True,
    )


def agent_events() -> dict:
    """Annotations from the agent's events: re-baselines (reboot, instance restart, remount) and counter resets.

    query, textColumn and tagsColumn are the InfluxDB data source's annotation
    keys (Grafana's InfluxDB data source documentation, "Annotations"); the
    published dashboard schema does not list data-source keys.
    """
    return {
        "name": "Agent events",
        "datasource": DATASOURCE,
        "enable": True,
        "iconColor": "orange",
        "query": 'SELECT "reason", "kind" FROM "dnfsmon_event" WHERE "host" =~ /^$host$/ AND $timeFilter',
        "textColumn": "reason",
        "tagsColumn": "kind",
        # The Prometheus data source's annotation keys (its documentation, "Annotations"): a mark
        # where the series has a sample; the reason is a string, not published (docs/prometheus.md).
        "_promql": {
            "expr": f"max by (kind, source_measurement) ({metric('dnfsmon_event', 'series')}{{{HOST.promql}}})",
            "titleFormat": "{{kind}}",
            "textFormat": "{{source_measurement}}",
            "step": "10s",
        },
    }


def host_dashboard() -> dict:
    panels = [
        *health_row(),
        *latency_row(),
        *database_row(),
        *paths_row(),
        *network_row(),
        *kernel_nfs_row(),
        *host_pressure_row(),
        *agent_row(),
    ]
    variables = [
        variable(
            "host",
            "Host",
            'SHOW TAG VALUES FROM "dnfsmon_agent" WITH KEY = "host"',
            f"{metric('dnfsmon_agent', 'sample_seconds')}, host",
        ),
        variable(
            "database",
            "Database",
            'SHOW TAG VALUES FROM "dnfsmon_oracle_status" WITH KEY = "database" WHERE "host" =~ /^$host$/',
            f"{metric('dnfsmon_oracle_status', 'reachable')}{{{HOST.promql}}}, database",
        ),
        variable(
            "instance",
            "Instance",
            'SHOW TAG VALUES FROM "dnfsmon_dnfs_io" WITH KEY = "instance" WHERE "host" =~ /^$host$/ AND "database" =~ /^$database$/',
            f'{metric("dnfsmon_dnfs_io", "total_iops")}{{{HOST.promql},database=~"$database"}}, {naming.label("instance")}',
        ),
        variable(
            "server",
            "Filer (dNFS)",
            'SHOW TAG VALUES FROM "dnfsmon_dnfs_channel" WITH KEY = "server" WHERE "host" =~ /^$host$/',
            f"{metric('dnfsmon_dnfs_channel', 'sends_per_s')}{{{HOST.promql}}}, server",
        ),
        variable(
            "filer_address",
            "Filer address (TCP)",
            'SHOW TAG VALUES FROM "dnfsmon_filer_tcp" WITH KEY = "server" WHERE "host" =~ /^$host$/',
            f"{metric('dnfsmon_filer_tcp', 'srtt_avg_ms')}{{{HOST.promql}}}, server",
        ),
        variable(
            "interface",
            "Interface",
            'SHOW TAG VALUES FROM "dnfsmon_nic" WITH KEY = "interface" WHERE "host" =~ /^$host$/',
            f"{metric('dnfsmon_nic', 'rx_kib_per_s')}{{{HOST.promql}}}, interface",
        ),
    ]
    links = [
        {
            "title": "Fleet",
            "type": "link",
            "url": "/d/dnfsmon-fleet/dnfsmon-fleet?${__url_time_range}",
            "icon": "dashboard",
        }
    ]
    return dashboard(
        "dnfsmon-host",
        "dnfsmon host",
        "One database host, by layer: health on top, then where a read's latency goes, the database, the dNFS paths, the network, the kernel NFS client and the agent.",
        panels,
        variables,
        links,
        annotations=[agent_events()],
    )


def host_link(tags: Sequence[str]) -> str:
    """The host dashboard's URL for a fleet row: carries the row's host (and database) and the time range."""
    carried = "".join(f"&var-{tag}=${{__data.fields.{tag}}}" for tag in tags)
    return f"/d/dnfsmon-host/dnfsmon-host?var-datasource=${{datasource}}{carried}&${{__url_time_range}}"


def fleet_table(
    title: str,
    description: str,
    measurement: str,
    field: str,
    aggregate: str,
    group: Sequence[str],
    thresholds: list[tuple[Optional[float], str]],
    column: str,
    where: Optional[Where] = None,
    to_unit: str = "",
    sort_desc: bool = True,
    keep: Optional[tuple[str, float]] = None,
) -> dict:
    """Worst hosts first: one row per host (and database or interface) with `aggregate` of the field over
    the range, in a column named for what it holds; `keep` (e.g. "< 100") lists only the rows whose value
    passes it, so that a table titled for a problem lists only where it is. In PromQL: an instant
    query at the range's end over the whole range ($__range)."""
    unit = catalogue_unit(measurement, field)
    scale = CONVERSIONS[(unit, to_unit)] if to_unit else ""
    by = ", ".join(f'"{tag}"' for tag in group)
    condition = f"{where.influxql} AND " if where else ""
    query = f'SELECT {aggregate}("{field}"){scale} AS "{column}" FROM "{measurement}" WHERE {condition}$timeFilter GROUP BY {by}'
    expr = over(aggregate, metric(measurement, field), where or EVERYTHING, "$__range", group)
    if keep:
        comparison, limit = keep
        query = f'SELECT "{column}" FROM ({query}) WHERE "{column}" {comparison} {limit:g} GROUP BY {by}'
        _, factor = prometheus_unit(to_unit or unit)
        expr = f"{expr} {comparison} {round(limit * factor, 12):g}"
    return table_of_hosts(
        title,
        description,
        target(query, table=True, prometheus=promql(expr, instant=True, table=True, column=column)),
        group,
        column,
        grafana_unit(to_unit or unit),
        thresholds,
        sort_desc,
        prometheus_unit=prometheus_unit(to_unit or unit),
    )


def table_of_hosts(
    title: str,
    description: str,
    query: dict,
    group: Sequence[str],
    column: str,
    unit: str,
    thresholds: list[tuple[Optional[float], str]],
    sort_desc: bool,
    prometheus_unit: tuple[str, float] = ("", 1.0),
    **more,
) -> dict:
    """A fleet table of the target `query` (one row per host, or host and database...), its values in the
    Grafana `unit` (in the PromQL flavour `prometheus_unit`: unit and factor), every row a link to its host
    dashboard."""
    carried = [tag for tag in group if tag in ("host", "database")]
    built = panel(
        title,
        description,
        [query],
        unit=unit,
        kind="table",
        width=12,
        height=8,
        links=[{"title": "Open the host dashboard", "url": host_link(carried)}],
        thresholds=thresholds,
        options={"sortBy": [{"displayName": column, "desc": sort_desc}], "showHeader": True},
        transformations=[{"id": "organize", "options": {"excludeByName": {"Time": True}, "indexByName": {}}}],
        **more,
    )
    if prometheus_unit[0]:
        built["_prometheus"] = {
            "unit": prometheus_unit[0],
            "factor": prometheus_unit[1],
            "thresholds": threshold_steps(thresholds, prometheus_unit[1]),
        }
    return built


def fleet_trend(title: str, description: str, targets: list[dict], thresholds: list) -> dict:
    """One tile per host with its latest value and a sparkline of the range."""
    return panel(
        title,
        description,
        targets,
        kind="stat",
        width=6,
        height=6,
        thresholds=thresholds,
        options={"graphMode": "area", "colorMode": "background", "orientation": "horizontal"},
        links=[{"title": "Open the host dashboard", "url": host_link(["host"])}],
    )


def fleet_dashboard() -> dict:
    read_event = Where("\"event\" = 'db file sequential read'", READ_EVENT.promql)
    latency = [(None, "green"), (10, "orange"), (20, "red")]
    trends = row(
        "Latency ladder per host",
        [
            fleet_trend(
                "Single-block read",
                "Worst instance's 'db file sequential read' average per host.",
                series(
                    "dnfsmon_oracle_event",
                    [("avg_latency_us", "")],
                    ANY_HOST + READ_EVENT,
                    ["host"],
                    aggregate="max",
                    to_unit="ms",
                ),
                latency,
            ),
            fleet_trend(
                "Filer TCP RTT",
                "Largest smoothed TCP RTT to the filers per host.",
                series("dnfsmon_filer_tcp", [("srtt_max_ms", "")], ANY_HOST, ["host"], aggregate="max"),
                [(None, "green"), (2, "orange"), (10, "red")],
            ),
            fleet_trend(
                "Busiest NIC",
                "Highest nicstat %Util of any interface per host.",
                series("dnfsmon_nic", [("util_pct", "")], ANY_HOST, ["host"], aggregate="max"),
                [(None, "green"), (70, "orange"), (90, "red")],
            ),
            fleet_trend(
                "TCP retransmits",
                "Host-wide TCP retransmit percentage per host.",
                series("dnfsmon_tcp", [("retrans_pct", "")], ANY_HOST, ["host"], aggregate="max"),
                [(None, "green"), (0.5, "orange"), (2, "red")],
            ),
        ],
    )
    tables = row(
        "Worst over the time range",
        [
            fleet_table(
                "Worst single-block read latency",
                "Highest 'db file sequential read' average wait per host and database over the time range.",
                "dnfsmon_oracle_event",
                "avg_latency_us",
                "max",
                ["host", "database"],
                latency,
                "worst ms",
                where=read_event,
                to_unit="ms",
            ),
            fleet_table(
                "Top dNFS NFS operations",
                "Highest dNFS NFS operations per second (read + write) per host and database over the time range.",
                "dnfsmon_dnfs_io",
                "total_iops",
                "max",
                ["host", "database", "instance"],
                [(None, "blue")],
                "highest ops/s",
            ),
            fleet_table(
                "Databases with a dNFS fallback",
                "Databases and instances whose share of data files on DNFS_LIB fell below 100 % in the range (lowest share): a silent "
                "fallback to kernel NFS (or files on local disk or ASM). Only those are listed.",
                "dnfsmon_dnfs_coverage",
                "dnfs_pct",
                "min",
                ["host", "database", "instance"],
                [(None, "red"), (99.99, "green")],
                "lowest dNFS %",
                where=Where("\"file_type\" = 'Data File'", 'file_type="Data File"'),
                sort_desc=False,
                keep=("<", 100),
            ),
            fleet_table(
                "TCP retransmissions",
                "Highest host-wide TCP retransmit percentage per host.",
                "dnfsmon_tcp",
                "retrans_pct",
                "max",
                ["host"],
                [(None, "green"), (0.5, "orange"), (2, "red")],
                "highest retransmit %",
            ),
            fleet_table(
                "Busiest NICs",
                "Highest nicstat %Util per host and interface over the range, busiest first.",
                "dnfsmon_nic",
                "util_pct",
                "max",
                ["host", "interface"],
                [(None, "green"), (70, "orange"), (90, "red")],
                "highest %Util",
            ),
            table_of_hosts(
                "Databases not reachable in the range",
                "Databases the agent could not read at least once in the range, with the number of samples that failed "
                "(the reason is in dnfsmon_oracle_status.error and the agent's log). Only those are listed.",
                target(
                    'SELECT "samples down" FROM (SELECT count("reachable") - sum("reachable") AS "samples down" '
                    'FROM "dnfsmon_oracle_status" WHERE $timeFilter GROUP BY "host", "database") '
                    'WHERE "samples down" > 0 GROUP BY "host", "database"',
                    table=True,
                    prometheus=promql(
                        "sum by (host, database) (count_over_time({0}[$__range]) - sum_over_time({0}[$__range])) > 0".format(
                            metric("dnfsmon_oracle_status", "reachable")
                        ),
                        instant=True,
                        table=True,
                        column="samples down",
                    ),
                ),
                ["host", "database"],
                "samples down",
                "short",
                [(None, "red")],
                True,
                no_value="Every database answered every sample",
            ),
            table_of_hosts(
                "Agents: samples in the last 100 s",
                "Every agent seen in the range with the samples it stored in the 100 s before the end of the range. A live agent "
                "samples every 10 s and ships once a minute, so it always has some; 0 (red, 'silent') means it stopped for more "
                "than three samples and its host's figures are old.",
                agent_samples(EVERYTHING, ["host"], table=True),
                ["host"],
                "samples",
                "short",
                [(None, "red"), (1, "green")],
                False,
                mappings=[SILENT_MAPPING],
            ),
        ],
    )
    links = [
        {
            "title": "Host",
            "type": "link",
            "url": "/d/dnfsmon-host/dnfsmon-host?${__url_time_range}",
            "icon": "dashboard",
        }
    ]
    return dashboard(
        "dnfsmon-fleet",
        "dnfsmon fleet",
        "Every host on one screen: the latency ladder per host with sparklines, then the worst hosts over the range; every row links to its host dashboard.",
        [*trends, *tables],
        [],
        links,
    )


DASHBOARDS = {"dnfsmon-host": host_dashboard, "dnfsmon-fleet": fleet_dashboard}


# --- flavours: each dashboard once per query language ---


def private_keys_removed(node):
    """The JSON without the generator's notes (keys starting with "_")."""
    if isinstance(node, dict):
        return {k: private_keys_removed(v) for k, v in node.items() if not k.startswith("_")}
    if isinstance(node, list):
        return [private_keys_removed(v) for v in node]
    return node


def influxql_flavour(board: dict) -> dict:
    return private_keys_removed(board)


def prometheus_target(t: dict) -> dict:
    """A target of the Prometheus data source (pkg/promlib/models/query.go, PrometheusQueryProperties):
    expr, legendFormat, range or instant, format."""
    side = t["_promql"]
    built = {
        "refId": t["refId"],
        "datasource": PROMETHEUS_DATASOURCE,
        "expr": side["expr"],
        "range": not side["instant"],
        "instant": side["instant"],
        "format": "table" if side["table"] else "time_series",
    }
    if side["legendFormat"]:
        built["legendFormat"] = side["legendFormat"]
    return built


def prometheus_table_columns(p: dict) -> list[dict]:
    """A Prometheus table's value column is "Value": named as the InfluxQL column (organize's
    renameByName) where the panel has one, hidden where the row's labels are the content."""
    columns = [t["_promql"]["column"] for t in p["targets"]]
    transformations = []
    for t in p.get("transformations", []):
        if t["id"] == "organize":
            options = copy.deepcopy(t["options"])
            if any(columns):
                options["renameByName"] = {"Value": columns[0]}
            else:
                options["excludeByName"]["Value"] = True
                # The id is what names a finding here (no summary in Prometheus): keep it.
                options["excludeByName"].pop("id", None)
            t = {**t, "options": options}
        transformations.append(t)
    if not any(t["id"] == "organize" for t in transformations) and not any(columns):
        transformations.append({"id": "organize", "options": {"excludeByName": {"Time": True, "Value": True}}})
    return transformations


def prometheus_panel(p: dict) -> dict:
    if p["type"] == "row":
        return {**p, "panels": [prometheus_panel(q) for q in p["panels"]]}
    side = p["_prometheus"]
    defaults = {**p["fieldConfig"]["defaults"], "unit": side["unit"]}
    if "thresholds" in side:
        defaults["thresholds"] = side["thresholds"]
    built = {
        **p,
        "datasource": PROMETHEUS_DATASOURCE,
        "fieldConfig": {**p["fieldConfig"], "defaults": defaults},
        "targets": [prometheus_target(t) for t in p["targets"]],
    }
    if p["type"] == "table":
        built["transformations"] = prometheus_table_columns(p)
    return built


def linked_to_flavour(node, suffix: str):
    """Links between the dashboards go to the same flavour's uid."""
    if isinstance(node, dict):
        return {k: linked_to_flavour(v, suffix) for k, v in node.items()}
    if isinstance(node, list):
        return [linked_to_flavour(v, suffix) for v in node]
    if isinstance(node, str):
        for uid in DASHBOARDS:
            node = node.replace(f"/d/{uid}/{uid}", f"/d/{uid}{suffix}/{uid}{suffix}")
    return node


def prometheus_flavour(board: dict) -> dict:
    """The same dashboard on a Prometheus data source: every panel's PromQL side, its unit the
    Prometheus name's base unit, its variables filled by label_values()."""
    variables = []
    for v in board["templating"]["list"]:
        if v["type"] == "datasource":
            v = {**v, "label": "Prometheus", "query": "prometheus"}
        elif v["type"] == "query":
            v = {**v, "datasource": PROMETHEUS_DATASOURCE, "query": v["_promql"]}
        variables.append(v)
    annotations = [
        {k: a[k] for k in ("name", "enable", "iconColor")} | {"datasource": PROMETHEUS_DATASOURCE, **a["_promql"]}
        for a in board["annotations"]["list"]
    ]
    built = {
        **board,
        "uid": f"{board['uid']}-prometheus",
        "title": f"{board['title']} (Prometheus)",
        "templating": {"list": variables},
        "annotations": {"list": annotations},
        "panels": [prometheus_panel(p) for p in board["panels"]],
    }
    return private_keys_removed(linked_to_flavour(built, "-prometheus"))


# File name suffix -> the flavour.
FLAVOURS = {"": influxql_flavour, "-prometheus": prometheus_flavour}


# --- alert rules ---
# Grafana alerting file provisioning (Grafana documentation, "Use configuration files to provision
# alerting resources"; pkg/services/provisioning/alerting reads .yaml, .yml and .json files from
# provisioning/alerting/). Each rule: query A on the provisioned data source over a relative time
# range, B reduces each series to its last value (server-side expression "reduce", mode dropNN:
# nulls dropped), C compares it with a threshold; every series (one per host, database...) is an
# alert instance with the series' tags as labels.
DATASOURCE_UID = "dnfsmon-influxdb"  # provisioning/datasources/dnfsmon.yaml
ALERT_FOLDER = "dnfsmon"


def alert_rule(
    uid: str,
    title: str,
    query: str,
    seconds: int,
    condition: tuple[str, float],
    summary: str,
    description: str,
    severity: str,
    pending: str = "0s",
) -> dict:
    """One rule: `query` over the last `seconds`, the last value of each series compared by `condition` (gt or lt);
    `pending`: how long the condition must hold at every evaluation before the alert fires (the rule's `for`)."""
    evaluator, limit = condition
    return {
        "uid": uid,
        "title": title,
        "condition": "C",
        "data": [
            {
                "refId": "A",
                "relativeTimeRange": {"from": seconds, "to": 0},
                "datasourceUid": DATASOURCE_UID,
                "model": {
                    "refId": "A",
                    "rawQuery": True,
                    "query": query,
                    "resultFormat": "time_series",
                    "intervalMs": 1000,
                    "maxDataPoints": 43200,
                },
            },
            {
                "refId": "B",
                "datasourceUid": "__expr__",
                "model": {
                    "refId": "B",
                    "type": "reduce",
                    "expression": "A",
                    "reducer": "last",
                    "settings": {"mode": "dropNN"},
                },
            },
            {
                "refId": "C",
                "datasourceUid": "__expr__",
                "model": {
                    "refId": "C",
                    "type": "threshold",
                    "expression": "B",
                    "conditions": [{"evaluator": {"type": evaluator, "params": [limit]}}],
                },
            },
        ],
        # No series at all: nothing to alert on (the agent-silent rule covers a host that stopped).
        "noDataState": "OK",
        "execErrState": "Error",
        "for": pending,
        "annotations": {"summary": summary, "description": description},
        "labels": {"severity": severity},
    }


def agent_samples_now() -> str:
    """agent_samples() for an alert rule: alerting has no ${__to}; InfluxDB's now() is the evaluation time."""
    recent = (
        f'SELECT count("sample_seconds") AS "samples" FROM "dnfsmon_agent" WHERE time > now() - {SILENT_AFTER} '
        'AND time <= now() GROUP BY "host"'
    )
    seen = 'SELECT last("sample_seconds") * 0 AS "samples" FROM "dnfsmon_agent" WHERE $timeFilter GROUP BY "host"'
    return f'SELECT sum("samples") AS "samples" FROM ({recent}), ({seen}) GROUP BY "host"'


def alert_rules() -> dict:
    rules = [
        alert_rule(
            "dnfsmon-critical-finding",
            "dnfsmon: critical finding",
            'SELECT count("summary") FROM "dnfsmon_finding" WHERE "severity" = \'critical\' AND $timeFilter '
            'GROUP BY "host", "id", "layer"',
            120,
            ("gt", 0),
            "{{ $labels.host }}: {{ $labels.id }} ({{ $labels.layer }})",
            "A critical finding of dnfsmon doctor's rules held in the last 2 minutes; the host dashboard's "
            "verdict names it with its remedy (docs/doctor.md).",
            "critical",
        ),
        alert_rule(
            "dnfsmon-database-unreachable",
            "dnfsmon: database not reachable",
            'SELECT last("reachable") FROM "dnfsmon_oracle_status" WHERE $timeFilter GROUP BY "host", "database"',
            300,
            ("lt", 1),
            "{{ $labels.host }}: database {{ $labels.database }} not reachable",
            "The agent's latest sample could not read the database, and none since 2 minutes; "
            "dnfsmon_oracle_status.error and the agent's log say why.",
            "critical",
            # A listener restart or one failed read is not an outage: 2 minutes is 12 samples that failed.
            pending="2m",
        ),
        alert_rule(
            "dnfsmon-agent-silent",
            "dnfsmon: agent silent",
            agent_samples_now(),
            86400,
            ("lt", 1),
            "{{ $labels.host }}: no sample for more than 100 s",
            "The agent stored nothing in the last 100 s (it samples every 10 s and ships every minute): cron, the "
            "agent or the way to InfluxDB stopped; every figure of this host is old. Hosts silent for more than a "
            "day are no longer listed.",
            "critical",
        ),
        alert_rule(
            "dnfsmon-store-dropping",
            "dnfsmon: local store dropping points",
            'SELECT spread("store_dropped_points") FROM "dnfsmon_agent" WHERE $timeFilter GROUP BY "host"',
            600,
            ("gt", 0),
            "{{ $labels.host }}: the local store dropped points",
            "The store reached store.max_bytes and dropped its oldest unshipped points in the last 10 minutes: "
            "InfluxDB was unreachable for too long; those points are lost.",
            "warning",
        ),
        alert_rule(
            "dnfsmon-source-failing",
            "dnfsmon: a source keeps failing",
            'SELECT min("sources_failed") FROM "dnfsmon_agent" WHERE $timeFilter GROUP BY "host"',
            300,
            ("gt", 0),
            "{{ $labels.host }}: a source failed in every sample for 5 minutes",
            "At least one source could not be read in every sample of the last 5 minutes; the agent's log names "
            "it and why.",
            "warning",
        ),
        alert_rule(
            "dnfsmon-nothing-to-judge",
            "dnfsmon: nothing to judge",
            'SELECT last("nothing_to_judge") FROM "dnfsmon_verdict" WHERE $timeFilter GROUP BY "host"',
            300,
            ("gt", 0),
            "{{ $labels.host }}: no layer measured, no verdict",
            "For 10 minutes the agent measured no layer (no database figures and no NFS or dNFS traffic to a filer): "
            "dnfsmon doctor would exit 12, and no finding can fire. dnfsmon_verdict.nothing_measured says why.",
            "warning",
            # A quiet spell (no single-block read, no NFS traffic for a minute) is not a blind host.
            pending="10m",
        ),
    ]
    return {
        "apiVersion": 1,
        "groups": [{"orgId": 1, "name": "dnfsmon", "folder": ALERT_FOLDER, "interval": "1m", "rules": rules}],
    }


ALERTING = os.path.join("provisioning", "alerting", "dnfsmon.json")


def render() -> dict[str, str]:
    """File under grafana/ -> its text, for every file this script writes."""
    files = {
        os.path.join("dashboards", f"{name}{suffix}.json"): json.dumps(flavour(build()), indent=2, ensure_ascii=False)
        + "\n"
        for name, build in DASHBOARDS.items()
        for suffix, flavour in FLAVOURS.items()
    }
    files[ALERTING] = json.dumps(alert_rules(), indent=2, ensure_ascii=False) + "\n"
    return files


def main() -> None:
    for name, text in render().items():
        path = os.path.join(HERE, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
