"""Plot the dashboards' panel queries from an InfluxDB, one PNG per dashboard row.

No Grafana server can be had where dnfsmon is tested, so the pictures in
docs/dashboards/ are made by this script: it runs each panel's own InfluxQL
query (variables set to "All", the last hour) against an InfluxDB the agent
filled and draws the result with matplotlib. They are plots of the same
queries, not Grafana screenshots: Grafana's styling, legends and thresholds
colouring differ.

    python grafana/plot.py --url http://127.0.0.1:8086 --database dnfsmon --out docs/dashboards

tests/test_grafana.py runs it against the real InfluxDB the tests fill.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
import urllib.parse
import urllib.request
from datetime import datetime, timezone

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt

HERE = os.path.dirname(os.path.abspath(__file__))
VARIABLES = ("host", "database", "instance", "server", "filer_address", "interface")


def concrete(query: str) -> str:
    """A panel query as Grafana runs it for a viewer choosing "All" over the last hour."""
    for name in VARIABLES:
        query = query.replace(f"${name}", ".*")
    query = query.replace("${__to}", str(int(time.time() * 1000)))
    return query.replace("$timeFilter", "time > now() - 1h").replace("$__interval", "10s")


def run(url: str, database: str, query: str) -> list[dict]:
    """Series of an InfluxQL query (InfluxDB's /query API): [{name, tags, columns, values}]."""
    params = urllib.parse.urlencode({"db": database, "q": query, "epoch": "ms"})
    with urllib.request.urlopen(f"{url}/query?{params}", timeout=30) as reply:
        result = json.load(reply)["results"][0]
    if "error" in result:
        raise RuntimeError(f"{query}: {result['error']}")
    return list(result.get("series", []))


def label(alias: str, tags: dict) -> str:
    return re.sub(r"\$tag_(\w+)", lambda m: str(tags.get(m.group(1), "")), alias).strip() or "value"


def draw(axis, panel: dict, url: str, database: str) -> int:
    """Draw one panel's query results on `axis`; the number of values drawn."""
    unit = panel["fieldConfig"]["defaults"].get("unit", "")
    axis.set_title(f"{panel['title']} [{unit}]", fontsize=9, loc="left")
    drawn = 0
    texts = []
    for target in panel["targets"]:
        for series in run(url, database, concrete(target["query"])):
            tags = series.get("tags", {})
            columns = series["columns"]
            rows = [dict(zip(columns, v)) for v in series["values"]]
            value_column = next(c for c in columns if c != "time")
            points = [(r["time"], r[value_column]) for r in rows if r[value_column] is not None]
            drawn += len(points)
            name = label(target.get("alias", ""), tags) or " ".join(f"{k}={v}" for k, v in tags.items())
            if panel["type"] in ("timeseries", "heatmap"):
                times = [datetime.fromtimestamp(t / 1000, timezone.utc) for t, _ in points]
                axis.plot(times, [v for _, v in points], label=name, linewidth=1, marker="o", markersize=3)
            elif points:
                texts.append(
                    f"{name}: {points[-1][1]:.3g}" if isinstance(points[-1][1], float) else f"{name}: {points[-1][1]}"
                )
    if panel["type"] in ("timeseries", "heatmap"):
        axis.tick_params(labelsize=7)
        axis.xaxis.set_major_formatter(matplotlib.dates.DateFormatter("%H:%M"))
        if drawn:
            axis.legend(fontsize=6, loc="upper left")
    else:
        axis.axis("off")
        axis.text(
            0.02,
            0.9,
            "\n".join(texts[:12]) or "no data",
            va="top",
            fontsize=8,
            family="monospace",
            transform=axis.transAxes,
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


def plot_dashboard(dashboard: dict, url: str, database: str, out: str) -> dict[str, int]:
    """One PNG per row of `dashboard` in `out`; values drawn per file."""
    os.makedirs(out, exist_ok=True)
    drawn = {}
    for title, panels in rows_of(dashboard):
        columns = 4 if all(p["gridPos"]["w"] <= 6 for p in panels) else 2
        if len(panels) == 1:
            columns = 1
        lines = -(-len(panels) // columns)
        width = 12 if columns == 1 else 4.2 * columns
        height = 1.8 if all(p["type"] == "stat" for p in panels) else 3.0
        figure, axes = plt.subplots(lines, columns, figsize=(width, height * lines), squeeze=False)
        count = 0
        for axis, p in zip(axes.flat, panels):
            count += draw(axis, p, url, database)
        for axis in list(axes.flat)[len(panels) :]:
            axis.axis("off")
        figure.suptitle(f"{dashboard['title']} — {title} (plots of the panel queries, not Grafana)", fontsize=10)
        figure.tight_layout()
        name = re.sub(r"[^a-z0-9]+", "-", f"{dashboard['uid']}-{title}".lower()).strip("-") + ".png"
        figure.savefig(os.path.join(out, name), dpi=80)
        plt.close(figure)
        drawn[name] = count
    return drawn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="InfluxDB base URL (its /query API)")
    parser.add_argument("--database", required=True, help="database (1.x) or DBRP-mapped bucket (2.x/3.x)")
    parser.add_argument("--out", default=os.path.join(HERE, "..", "docs", "dashboards"), help="directory for the PNGs")
    args = parser.parse_args()
    for name in sorted(os.listdir(os.path.join(HERE, "dashboards"))):
        with open(os.path.join(HERE, "dashboards", name), encoding="utf-8") as f:
            for png, count in plot_dashboard(json.load(f), args.url, args.database, args.out).items():
                print(f"{png}: {count} values")


if __name__ == "__main__":
    main()
