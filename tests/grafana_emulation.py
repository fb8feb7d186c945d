"""What Grafana does with a dashboard panel or an alert rule before and after its InfluxQL query,
reimplemented from Grafana's source so that a test can show the value a viewer would see.

No Grafana server runs where dnfsmon is tested. Each step below names the Grafana file and
function it follows (github.com/grafana/grafana unless said otherwise); docs/testing.md lists
them and what is not reproduced (rendering, time zones, legends).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Optional

# --- the interval -----------------------------------------------------------------------

# roundInterval (packages/grafana-data/src/datetime/rangeutil.ts): the interval a range divided by
# the resolution is rounded to, as (upper bound exclusive, rounded value), both in ms.
ROUND_INTERVAL_MS = (
    (10, 1),
    (15, 10),
    (35, 20),
    (75, 50),
    (150, 100),
    (350, 200),
    (750, 500),
    (1_500, 1_000),
    (3_500, 2_000),
    (7_500, 5_000),
    (12_500, 10_000),
    (17_500, 15_000),
    (25_000, 20_000),
    (45_000, 30_000),
    (90_000, 60_000),
    (210_000, 120_000),
    (450_000, 300_000),
    (750_000, 600_000),
    (1_050_000, 900_000),
    (1_500_000, 1_200_000),
    (2_700_000, 1_800_000),
    (5_400_000, 3_600_000),
    (9_000_000, 7_200_000),
    (16_200_000, 10_800_000),
    (32_400_000, 21_600_000),
    (86_400_000, 43_200_000),
    (604_800_000, 86_400_000),
    (1_814_400_000, 604_800_000),
    (3_628_800_000, 2_592_000_000),
)


def round_interval(ms: float) -> int:
    for bound, rounded in ROUND_INTERVAL_MS:
        if ms < bound:
            return rounded
    return 31_536_000_000


def seconds_to_hms(seconds: float) -> str:
    """secondsToHms (rangeutil.ts): the largest whole unit, as Grafana writes $__interval."""
    for unit, size in (("y", 31_536_000), ("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)):
        whole = math.floor(seconds / size)
        if whole:
            return f"{whole}{unit}"
    return f"{math.floor(seconds * 1000)}ms"


def interval_ms(range_ms: int, max_data_points: int, low_limit_ms: int) -> int:
    """calculateInterval (rangeutil.ts): round(range / resolution), at least the low limit.

    The resolution is the panel's maxDataPoints, else the width of its container in pixels
    (grafana/scenes, SceneQueryRunner.getMaxDataPoints); the low limit is the panel's
    interval (minInterval), else the data source's timeInterval (PanelQueryRunner.run:
    lowerIntervalLimit = minInterval ?? ds.interval).
    """
    return max(round_interval(range_ms / max_data_points), low_limit_ms)


# The dashboard's width in pixels this harness assumes: a 1920-pixel screen less Grafana's side
# menu and margins. A panel w columns wide (of 24) is w/24 of it, less its own padding.
DASHBOARD_WIDTH_PX = 1_840
PANEL_PADDING_PX = 16


def panel_width_px(columns: int) -> int:
    return columns * DASHBOARD_WIDTH_PX // 24 - PANEL_PADDING_PX


def duration_ms(text: str) -> int:
    """intervalToMs (rangeutil.ts) for the forms the provisioned data source uses ("10s")."""
    number, unit = re.fullmatch(r"(\d+)(ms|s|m|h|d)", text).groups()
    return int(number) * {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}[unit]


# --- the query ----------------------------------------------------------------------------


def regex_escape(value: str) -> str:
    """The InfluxDB data source's regex format of a variable value (public/app/plugins/datasource/
    influxdb/datasource.ts, interpolateQueryExpr -> escapeRegex of @grafana/data): a selected value
    is matched literally inside /^...$/."""
    return re.sub(r"[\\^$*+?.()|[\]{}/]", lambda m: "\\" + m.group(0), value)


def interpolate(query: str, start_ms: int, end_ms: int, interval: int, variables: dict[str, str]) -> str:
    """The query as the data source sends it to InfluxDB.

    - template variables (TemplateSrv.replace with the regex format): a value set by a link is
      escaped; "All" is the variable's allValue, ".*";
    - ${__from} and ${__to}: the range in ms since the epoch (the global variables);
    - $__interval and $__interval_ms: the scoped variables PanelQueryRunner.run adds;
    - $timeFilter: "time >= <from>ms and time <= <to>ms" (pkg/tsdb/influxdb/models/query.go,
      renderTimeFilter and epochMStoInfluxTime).
    """
    for name in sorted(variables, key=len, reverse=True):
        value = variables[name]
        query = query.replace(f"${name}", ".*" if value == "All" else regex_escape(value))
    query = query.replace("${__from}", str(start_ms)).replace("${__to}", str(end_ms))
    query = query.replace("$__interval_ms", str(interval)).replace("$__interval", seconds_to_hms(interval / 1000))
    return query.replace("$timeFilter", f"time >= {start_ms}ms and time <= {end_ms}ms")


# --- the result -------------------------------------------------------------------------------


@dataclass
class Frame:
    """One series of an InfluxQL result as Grafana's converter makes it a data frame
    (pkg/tsdb/influxdb/influxql/converter: one frame per series, its tags as labels)."""

    name: str
    tags: dict[str, str]
    columns: list[str]
    rows: list[list] = field(default_factory=list)

    def values(self, column: str) -> list:
        index = self.columns.index(column)
        return [r[index] for r in self.rows]


def frames_of(result: dict) -> list[Frame]:
    if "error" in result:
        raise RuntimeError(result["error"])
    return [
        Frame(s["name"], dict(s.get("tags") or {}), list(s["columns"]), list(s["values"]))
        for s in result.get("series", [])
    ]


def last_not_null(values: list) -> Optional[float]:
    """The stat panel's 'lastNotNull' (packages/grafana-data/src/transformations/fieldReducer.ts,
    calculateLastNotNull: the last value that is neither null nor NaN)."""
    for v in reversed(values):
        if v is not None and not (isinstance(v, float) and math.isnan(v)):
            return v
    return None


REDUCERS = {"lastNotNull": last_not_null}


def stat_values(panel: dict, frames: list[Frame]) -> list[Optional[float]]:
    """What a stat panel shows: its reducer over each numeric field, one value per series
    (public/app/plugins/panel/stat, getFieldDisplayValues with reduceOptions.values false)."""
    (calc,) = panel["options"]["reduceOptions"]["calcs"]
    return [REDUCERS[calc](f.values(c)) for f in frames for c in f.columns if c != "time"]


def table_rows(frames: list[Frame]) -> list[dict]:
    """A table-format result as one table: each row with its series' tags as columns
    (pkg/tsdb/influxdb/influxql/converter, resultFormat "table")."""
    rows = []
    for f in frames:
        for r in f.rows:
            # The converter names InfluxDB's time column "Time".
            row = dict(zip(["Time" if c == "time" else c for c in f.columns], r))
            row.update(f.tags)
            rows.append(row)
    return rows


def transform(rows: list[dict], transformations: list[dict]) -> list[dict]:
    """The transformations the dashboards use, as Grafana applies them in order
    (public/app/features/transformers/: sortBy; packages/grafana-data/src/transformations/
    transformers/: limit, organize)."""
    for t in transformations:
        options = t.get("options", {})
        if t["id"] == "sortBy":
            (rule,) = options["sort"]
            rows = sorted(
                rows,
                key=lambda r: (r.get(rule["field"]) is None, r.get(rule["field"])),
                reverse=rule.get("desc", False),
            )
        elif t["id"] == "limit":
            rows = rows[: options["limitField"]]
        elif t["id"] == "organize":
            hidden = {k for k, v in options.get("excludeByName", {}).items() if v}
            names = options.get("renameByName", {})
            rows = [{names.get(k, k): v for k, v in r.items() if k not in hidden} for r in rows]
        else:
            raise ValueError(f"transformation {t['id']} is not reproduced here")
    return rows


# --- alert rules --------------------------------------------------------------------------


def reduce_last(values: list, mode: str) -> Optional[float]:
    """Server-side expression 'reduce' with reducer last (pkg/expr/mathexp/reduce.go): mode
    dropNN drops null and NaN first; an empty series gives NaN (here None)."""
    if mode == "dropNN":
        values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return values[-1] if values else None


def threshold(value: Optional[float], evaluator: dict) -> bool:
    """Server-side expression 'threshold' (pkg/expr/threshold.go): gt, lt, within_range..."""
    if value is None:
        return False
    (limit, *_rest) = evaluator["params"]
    return {"gt": value > limit, "lt": value < limit}[evaluator["type"]]


# --- the Prometheus data source ---------------------------------------------------------------
# Since Grafana 10 the Prometheus data source runs its queries in Grafana's backend
# (pkg/promlib); the frontend (packages/grafana-prometheus/src/datasource.ts) interpolates the
# template variables and sends the panel's intervalMs and maxDataPoints with each target.

# packages/grafana-prometheus/src/datasource.ts, constructor: `this.interval =
# instanceSettings.jsonData.timeInterval || '15s'`: the low limit of $__interval (ds.interval).
PROMETHEUS_DEFAULT_INTERVAL_MS = 15_000
# pkg/promlib/models/query.go, safeResolution: the step never asks for more points than this.
PROMETHEUS_SAFE_RESOLUTION = 11_000


def prometheus_step_ms(range_ms: int, max_data_points: int, interval: int, min_step: str = "") -> int:
    """The step Grafana sends to Prometheus, which $__interval also becomes.

    pkg/promlib/models/query.go, calculatePrometheusInterval: the low limit is the target's own
    interval (minStep) when set, else the intervalMs the frontend computed (gtime.GetIntervalFrom);
    intervalv2.Calculate gives range / maxDataPoints, rounded (gtime.RoundInterval, the table of
    round_interval), or the low limit when that is smaller; CalculateSafeInterval gives range /
    11,000 rounded; the step is the larger of the two (intervalFactor 1).
    """
    low = duration_ms(min_step) if min_step else interval
    raw = range_ms / max_data_points
    calculated = low if raw < low else round_interval(raw)
    safe = round_interval(range_ms / PROMETHEUS_SAFE_RESOLUTION)
    return max(calculated, safe)


def prometheus_rate_interval_ms(step_ms: int, scrape_ms: int) -> int:
    """$__rate_interval (query.go, calculateRateInterval): max(step + scrape interval, 4 x scrape interval)."""
    return max(step_ms + scrape_ms, 4 * scrape_ms)


def prometheus_regex_escape(value: str) -> str:
    """A selected value of a multi-value or include-All variable inside =~"..."
    (packages/grafana-prometheus/src/escaping.ts, prometheusSpecialRegexEscape, classic behaviour):
    backslashes doubled twice, regex metacharacters escaped with two backslashes (one for the
    PromQL string, one for the regex)."""
    value = value.replace("\\", "\\\\\\\\")
    return re.sub(r"[$^*{}\[\]+?.()|]", lambda m: "\\\\" + m.group(0), value)


def prometheus_interpolate(expr: str, range_ms: int, step_ms: int, variables: dict[str, str]) -> str:
    """The expression as Prometheus receives it.

    - template variables (frontend, interpolateQueryExpr): "All" is the variable's allValue (".*",
      not escaped), a value is escaped as above;
    - $__interval and $__interval_ms: the step (query.go, InterpolateVariables, gtime.FormatInterval:
      the largest whole unit, as seconds_to_hms);
    - $__range: the range in whole seconds, "s" appended; $__rate_interval as above with the data
      source's scrape interval (not used by these dashboards: dnfsmon publishes rates, not counters).
    """
    for name in sorted(variables, key=len, reverse=True):
        value = variables[name]
        expr = expr.replace(f"${name}", ".*" if value == "All" else prometheus_regex_escape(value))
    range_s = round(range_ms / 1000)
    expr = expr.replace("$__interval_ms", str(step_ms)).replace("$__interval", seconds_to_hms(step_ms / 1000))
    expr = expr.replace("$__range_ms", str(range_ms)).replace("$__range_s", str(range_s))
    return expr.replace("$__range", f"{range_s}s")


def prometheus_aligned(t_ms: int, step_ms: int) -> int:
    """query.go, AlignTimeRange (the UTC offset 0): a range query's start and end rounded down to a
    multiple of the step. An instant query is sent the range's end as it is (pkg/promlib/client/
    client.go, QueryInstant: "Instead of aligning we use time point directly")."""
    return t_ms // step_ms * step_ms


LEGEND_LABEL = re.compile(r"\{\{\s*(.+?)\s*\}\}")


def legend(legend_format: str, labels: dict[str, str]) -> str:
    """A series' display name from its legendFormat (packages/grafana-prometheus/src/
    legend.ts, renderLegendFormat: {{label}} is the label's value, "" where the series has none)."""
    return LEGEND_LABEL.sub(lambda m: labels.get(m.group(1), ""), legend_format)


@dataclass
class PromSeries:
    """One series of a Prometheus answer as Grafana's frame of it: its labels and (time s, value) pairs."""

    labels: dict[str, str]
    points: list[tuple[float, float]]

    def values(self) -> list[float]:
        return [v for _, v in self.points]


def prometheus_series(answer: dict) -> list[PromSeries]:
    """/api/v1/query (vector) and /api/v1/query_range (matrix) answers (Prometheus's HTTP API
    documentation, "Expression query result formats"); values come as strings."""
    if answer.get("status") != "success":
        raise RuntimeError(str(answer))
    data = answer["data"]
    if data["resultType"] == "vector":
        return [PromSeries(dict(s["metric"]), [(float(s["value"][0]), float(s["value"][1]))]) for s in data["result"]]
    return [PromSeries(dict(s["metric"]), [(float(t), float(v)) for t, v in s["values"]]) for s in data["result"]]


def prometheus_table_rows(series: list[PromSeries]) -> list[dict]:
    """A table-format instant answer as Grafana shows it: one row per series, its labels as columns,
    "Time" and "Value" (pkg/promlib/querydata/response.go; one query per panel, so no "#A" suffix)."""
    rows = []
    for s in series:
        for t, v in s.points:
            row: dict = {"Time": t * 1000, **{k: val for k, val in s.labels.items() if k != "__name__"}, "Value": v}
            rows.append(row)
    return rows


# --- alert evaluation states ----------------------------------------------------------------
#
# Grafana's unified alerting keeps one state per alert instance (a series' labels) and moves it at
# each evaluation of the rule's group (pkg/services/ngalert/state/state.go, State.transition and
# resultNormal/resultAlerting/resultError/resultNoData; pkg/services/ngalert/state/manager.go,
# stateIsStale). What an evaluation returns (pkg/services/ngalert/eval/eval.go,
# evaluateExecutionResult): an error gives one Error result; no series at all gives one NoData result
# whose labels are not any series' (so noDataState acts on that result, not on the hosts'
# instances); else one result per series: the condition 0 is Normal, non-zero Alerting.

NORMAL, PENDING, ALERTING, NODATA, ERROR = "Normal", "Pending", "Alerting", "NoData", "Error"
# A series missing from this many evaluations in a row is resolved and dropped (manager.go:
# stateIsStale, missingSeriesEvalsToResolve, whose default is 2).
MISSING_SERIES_EVALS_TO_RESOLVE = 2
NO_SERIES: tuple = (("__no_series__", ""),)  # the labels of the NoData result (not a series' labels)


def duration_s(text: str) -> int:
    """A rule's `for` ("0s", "2m", "1h30m": prometheus/common/model.ParseDuration's forms used here)."""
    parts = re.findall(r"(\d+)(h|m|s)", text)
    assert "".join(n + u for n, u in parts) == text, text
    return sum(int(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in parts)


@dataclass
class AlertInstance:
    state: str
    starts_at: float  # when the current state began (State.StartsAt)
    last_evaluated: float  # State.LastEvaluationTime


class RuleStates:
    """The states of one rule's alert instances across evaluations."""

    def __init__(self, rule: dict, interval_s: int):
        self.pending_s = duration_s(rule["for"])
        self.no_data_state = rule["noDataState"]  # Alerting, NoData, OK or KeepLast
        self.error_state = rule["execErrState"]  # Alerting, Error, OK or KeepLast
        self.interval_s = interval_s
        self.instances: dict[tuple, AlertInstance] = {}

    def _alerting(self, i: AlertInstance, at: float) -> None:
        """resultAlerting: Alerting stays; Pending fires once `for` has passed since it began;
        any other state goes Pending (for > 0) or straight to Alerting."""
        if i.state == ALERTING:
            return
        if i.state == PENDING:
            if at - i.starts_at >= self.pending_s:
                i.state, i.starts_at = ALERTING, at
            return
        i.state, i.starts_at = (PENDING if self.pending_s > 0 else ALERTING), at

    def _normal(self, i: AlertInstance, at: float) -> None:
        """resultNormal: Normal and StartsAt = the evaluation time, unless already Normal."""
        if i.state != NORMAL:
            i.state, i.starts_at = NORMAL, at

    def _keep_last(self, i: AlertInstance, at: float) -> None:
        """resultKeepLast: Alerting stays; Pending still fires after `for`; anything else is Normal."""
        if i.state in (ALERTING, PENDING):
            self._alerting(i, at)
        else:
            self._normal(i, at)

    def _special(self, i: AlertInstance, at: float, setting: str, own_state: str) -> None:
        """resultNoData (noDataState) and resultError (execErrState)."""
        if setting == "Alerting":
            self._alerting(i, at)
        elif setting == own_state:
            if i.state != own_state:
                i.state, i.starts_at = own_state, at
        elif setting == "OK":
            self._normal(i, at)
        elif setting == "KeepLast":
            self._keep_last(i, at)
        else:
            raise ValueError(f"unsupported state setting {setting}")

    def evaluate(self, at: float, results: dict[tuple, str]) -> None:
        """One evaluation at `at`: results maps each instance's labels to NORMAL, ALERTING,
        NODATA or ERROR (results_of gives them from the frames)."""
        for labels, result in results.items():
            # newState: a new instance starts Normal, StartsAt the evaluation time.
            i = self.instances.setdefault(labels, AlertInstance(NORMAL, at, at))
            if result == NORMAL:
                self._normal(i, at)
            elif result == ALERTING:
                self._alerting(i, at)
            elif result == NODATA:
                self._special(i, at, self.no_data_state, NODATA)
            elif result == ERROR:
                self._special(i, at, self.error_state, ERROR)
            i.last_evaluated = at
        for labels, i in list(self.instances.items()):
            if labels not in results and at - i.last_evaluated >= MISSING_SERIES_EVALS_TO_RESOLVE * self.interval_s:
                del self.instances[labels]  # stale: resolved (reason MissingSeries) and evicted

    def firing(self) -> set[tuple]:
        """The instances in Alerting: what the Alertmanager receives (NeedsSending skips Pending)."""
        return {labels for labels, i in self.instances.items() if i.state == ALERTING}

    def pending(self) -> set[tuple]:
        return {labels for labels, i in self.instances.items() if i.state == PENDING}


def results_of(conditions: Optional[dict[tuple, bool]]) -> dict[tuple, str]:
    """evaluateExecutionResult: None (the query failed) is one Error result; no series one NoData
    result; else each series' condition."""
    if conditions is None:
        return {NO_SERIES: ERROR}
    if not conditions:
        return {NO_SERIES: NODATA}
    return {labels: ALERTING if firing else NORMAL for labels, firing in conditions.items()}
