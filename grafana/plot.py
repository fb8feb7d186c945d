"""Plot the dashboards' panels from an InfluxDB, one PNG per dashboard row.

No Grafana server can be had where dnfsmon is tested, so the pictures in
docs/dashboards/ are made by this script: it runs each panel's own InfluxQL
query and draws what came back with matplotlib - time series as lines (a gap
where the agent wrote nothing), a stat as its value coloured by the panel's
thresholds, a table as its rows. They are plots of the same queries, not
Grafana screenshots: Grafana's styling and legends differ.

tests/test_dashboard_truth.py draws them from the week it writes, with the
queries expanded as Grafana expands them (tests/grafana_emulation.py), over the
last 3 hours of the scenario:

    DNFSMON_WRITE_DASHBOARD_PLOTS=$PWD/docs/dashboards pytest tests/test_dashboard_truth.py -k pictures

Run by hand against any InfluxDB, the variables are "All", the range is the last
`--hours`, and $__interval is the range over 300 points:

    python grafana/plot.py --url http://127.0.0.1:8086 --database dnfsmon --out docs/dashboards
"""

from __future__ import annotations

import argparse
import json
import os
import re
import textwrap
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from datetime import datetime, timezone

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.dates as mdates
import matplotlib.pyplot as plt

HERE = os.path.dirname(os.path.abspath(__file__))
VARIABLES = ("host", "database", "instance", "server", "filer_address", "interface")

# (panel, target) -> the series InfluxDB returned for the target's query: [{name, tags, columns, values}],
# times in ms since the epoch.
Runner = Callable[[dict, dict], list[dict]]
# (panel, rows of its targets, tags as columns) -> the rows the table shows after the panel's transformations.
Tabulate = Callable[[dict, list[dict]], list[dict]]


def run(url: str, database: str, query: str) -> list[dict]:
    """Series of an InfluxQL query (InfluxDB's /query API): [{name, tags, columns, values}]."""
    params = urllib.parse.urlencode({"db": database, "q": query, "epoch": "ms"}).encode()
    with urllib.request.urlopen(urllib.request.Request(f"{url}/query", data=params), timeout=60) as reply:
        result = json.load(reply)["results"][0]
    if "error" in result:
        raise RuntimeError(f"{query}: {result['error']}")
    return list(result.get("series", []))


def simple_runner(url: str, database: str, hours: float) -> Runner:
    """Queries expanded for a viewer choosing "All" over the last `hours`."""
    end_ms = int(time.time() * 1000)
    start_ms = end_ms - int(hours * 3600 * 1000)
    interval_s = max(10, int(hours * 3600 / 300))

    def runner(_panel: dict, target: dict) -> list[dict]:
        query = target["query"]
        for name in VARIABLES:
            query = query.replace(f"${name}", ".*")
        query = query.replace("${__to}", str(end_ms)).replace("${__from}", str(start_ms))
        query = query.replace("$__interval", f"{interval_s}s")
        return run(url, database, query.replace("$timeFilter", f"time >= {start_ms}ms and time <= {end_ms}ms"))

    return runner


def label(alias: str, tags: dict) -> str:
    return re.sub(r"\$tag_(\w+)", lambda m: str(tags.get(m.group(1), "")), alias).strip()


def colour(panel: dict, value: object) -> str:
    """The colour of the panel's threshold step the value falls in (Grafana's absolute thresholds)."""
    steps = panel["fieldConfig"]["defaults"].get("thresholds", {}).get("steps", [])
    chosen = steps[0]["color"] if steps else "black"
    for step in steps[1:]:
        if isinstance(value, (int, float)) and value >= step["value"]:
            chosen = step["color"]
    return {"green": "#2e7d32", "orange": "#ef6c00", "red": "#c62828", "blue": "#1565c0"}.get(chosen, chosen)


def text_of(panel: dict, value: object) -> str:
    for mapping in panel["fieldConfig"]["defaults"].get("mappings", []):
        hit = mapping["options"].get(str(value))
        if hit:
            return str(hit["text"])
    unit = panel["fieldConfig"]["defaults"].get("unit", "")
    if isinstance(value, float):
        value = f"{value:.3g}"
    if unit == "bool_yes_no":
        return "Yes" if value in (1, "1") else "No"
    suffix = {"ms": " ms", "percent": " %", "ops": " ops/s"}.get(unit, "")
    return f"{value}{suffix}"


def untransformed(_panel: dict, rows: list[dict]) -> list[dict]:
    return rows


def draw(axis, panel: dict, runner: Runner, tabulate: Tabulate = untransformed) -> int:
    """Draw one panel on `axis`; the number of values drawn."""
    unit = panel["fieldConfig"]["defaults"].get("unit", "")
    axis.set_title(f"{panel['title']}" + (f" [{unit}]" if unit not in ("", "short") else ""), fontsize=9, loc="left")
    drawn = 0
    texts: list[str] = []
    shown_values: list[object] = []
    rows: list[dict] = []
    for target in panel["targets"]:
        for series in runner(panel, target):
            tags = series.get("tags") or {}
            columns = series["columns"]
            for values in series["values"]:
                rows.append({**dict(zip(columns, values)), **tags})
            value_columns = [c for c in columns if c != "time"]
            if panel["type"] in ("timeseries", "heatmap"):
                points = [(t, v) for t, v in ((r[0], r[1]) for r in series["values"])]
                drawn += sum(v is not None for _, v in points)
                times = [datetime.fromtimestamp(t / 1000, timezone.utc) for t, _ in points]
                values = [float("nan") if v is None else v for _, v in points]
                name = label(target.get("alias", ""), tags) or " ".join(tags.values()) or value_columns[0]
                axis.plot(times, values, label=name, linewidth=1)
            elif panel["type"] == "stat":
                last = [r[1] for r in series["values"] if r[1] is not None]
                if last:
                    drawn += 1
                    texts.append(text_of(panel, last[-1]))
                    shown_values.append(last[-1])
    if panel["type"] in ("timeseries", "heatmap"):
        locator = mdates.AutoDateLocator()
        axis.xaxis.set_major_locator(locator)
        axis.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        axis.tick_params(labelsize=7)
        if drawn:
            axis.legend(fontsize=6, loc="upper left", ncol=2)
        return drawn
    axis.axis("off")
    if panel["type"] == "stat":
        shown = texts[-1] if texts else panel["fieldConfig"]["defaults"].get("noValue", "No data")
        axis.text(
            0.5,
            0.35,
            shown,
            ha="center",
            va="center",
            fontsize=18,
            color=colour(panel, shown_values[-1] if shown_values else None),
        )
        return drawn
    # A table: its rows, long text wrapped (as Grafana's table does with cell wrapping on).
    hidden = {"time", "Time"}
    for t in panel.get("transformations", []):
        if t["id"] == "organize":
            hidden |= {k for k, v in t["options"].get("excludeByName", {}).items() if v}
    rows = tabulate(panel, rows)
    lines = []
    for r in rows[:8]:
        cells = [f"{k}: {v}" for k, v in r.items() if k not in hidden and v is not None]
        lines.extend(textwrap.wrap("  ".join(cells), 150) or [""])
    drawn += len(rows)
    no_value = panel["fieldConfig"]["defaults"].get("noValue", "No data")
    axis.text(
        0.0, 0.95, "\n".join(lines[:12]) or no_value, va="top", fontsize=7, family="monospace", transform=axis.transAxes
    )
    return drawn


def rows_of(dashboard: dict) -> list[tuple[str, list[dict]]]:
    """(row title, panels) in order; panels before the first row go under the dashboard's title."""
    found: list[tuple[str, list[dict]]] = []
    for p in dashboard["panels"]:
        if p["type"] == "row":
            found.append((p["title"], list(p["panels"])))
        elif found:
            found[-1][1].append(p)
        else:
            found.append((dashboard["title"], [p]))
    return found


def plot_dashboard(
    dashboard: dict, runner: Runner, out: str, caption: str = "", tabulate: Tabulate = untransformed
) -> dict[str, int]:
    """One PNG per row of `dashboard` in `out`; values drawn per file."""
    os.makedirs(out, exist_ok=True)
    drawn = {}
    for title, panels in rows_of(dashboard):
        small = [p for p in panels if p["type"] == "stat"]
        large = [p for p in panels if p["type"] != "stat"]
        columns = 2 if len(large) > 1 else 1
        stat_lines = -(-len(small) // 6)
        large_lines = -(-len(large) // columns)
        heights = [1.4] * stat_lines + [3.2 if all(p["type"] != "table" for p in large) else 2.4] * large_lines
        figure = plt.figure(figsize=(16, sum(heights) + 0.6))
        grid = figure.add_gridspec(len(heights), 6 * columns, height_ratios=heights)
        count = 0
        for i, p in enumerate(small):
            axis = figure.add_subplot(grid[i // 6, (i % 6) * columns : (i % 6 + 1) * columns])
            count += draw(axis, p, runner, tabulate)
        for i, p in enumerate(large):
            line = stat_lines + i // columns
            axis = figure.add_subplot(grid[line, (i % columns) * 6 : (i % columns + 1) * 6])
            count += draw(axis, p, runner, tabulate)
        figure.suptitle(
            f"{dashboard['title']} - {title} {caption}(plots of the panel queries, not Grafana)", fontsize=10
        )
        figure.tight_layout()
        name = re.sub(r"[^a-z0-9]+", "-", f"{dashboard['uid']}-{title}".lower()).strip("-") + ".png"
        figure.savefig(os.path.join(out, name), dpi=72)
        plt.close(figure)
        drawn[name] = count
    return drawn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="InfluxDB base URL (its /query API)")
    parser.add_argument("--database", required=True, help="database (1.x) or DBRP-mapped bucket (2.x/3.x)")
    parser.add_argument("--hours", type=float, default=3.0, help="the range: the last HOURS")
    parser.add_argument("--out", default=os.path.join(HERE, "..", "docs", "dashboards"), help="directory for the PNGs")
    args = parser.parse_args()
    runner = simple_runner(args.url, args.database, args.hours)
    for name in sorted(os.listdir(os.path.join(HERE, "dashboards"))):
        with open(os.path.join(HERE, "dashboards", name), encoding="utf-8") as f:
            for png, count in plot_dashboard(json.load(f), runner, args.out).items():
                print(f"{png}: {count} values")


if __name__ == "__main__":
    main()
