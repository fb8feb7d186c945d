"""Write grafana/dashboards/*.json from the panel lists below.

The dashboards are committed JSON (provisioned as files); this script only
spares writing twenty near-identical panels by hand. Run it after changing a
panel: `python grafana/generate.py`. tests/test_grafana.py checks that the
committed files are what this script writes, and runs every query against a
real InfluxDB the agent filled.

Queries are InfluxQL: native on InfluxDB 1.8, on 2.x through a DBRP mapping,
and on 3.x. Every panel and target uses the data source variable.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
DATASOURCE = {"type": "influxdb", "uid": "${datasource}"}
SCHEMA_VERSION = 39  # Grafana 10.4 and later

# WHERE clauses of the template variables, per kind of measurement.
HOST = '"host" =~ /^$host$/'
DB = HOST + ' AND "database" =~ /^$database$/ AND "instance" =~ /^$instance$/'


def target(query: str, ref: str = "A", alias: str = "", table: bool = False) -> dict:
    t = {
        "refId": ref,
        "datasource": DATASOURCE,
        "rawQuery": True,
        "query": query,
        "resultFormat": "table" if table else "time_series",
    }
    if alias:
        t["alias"] = alias
    return t


def series(
    measurement: str, fields: Sequence[tuple[str, str]], where: str, group: Sequence[str], extra: str = ""
) -> list[dict]:
    """One target per field: mean of the field per $__interval, one series per tag in `group`."""
    targets = []
    by = "".join(f', "{tag}"' for tag in group)
    for number, (field, label) in enumerate(fields):
        alias = " ".join([label] + [f"$tag_{tag}" for tag in group])
        query = (
            f'SELECT mean("{field}") FROM "{measurement}" WHERE {where}{extra} AND $timeFilter '
            f"GROUP BY time($__interval){by} fill(none)"
        )
        targets.append(target(query, chr(ord("A") + number), alias))
    return targets


def panel(
    title: str,
    description: str,
    unit: str,
    targets: list[dict],
    kind: str = "timeseries",
    width: int = 12,
    height: int = 8,
    options: Optional[dict] = None,
    links: Optional[list[dict]] = None,
    thresholds: Optional[list[tuple[Optional[float], str]]] = None,
) -> dict:
    defaults: dict[str, object] = {"unit": unit}
    if links:
        defaults["links"] = links
    if thresholds:
        defaults["thresholds"] = {"mode": "absolute", "steps": [{"value": v, "color": c} for v, c in thresholds]}
    return {
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": options or {},
        "targets": targets,
        "gridPos": {"w": width, "h": height},
    }


def variable(name: str, label: str, query: str) -> dict:
    return {
        "type": "query",
        "name": name,
        "label": label,
        "datasource": DATASOURCE,
        "query": query,
        "definition": query,
        "refresh": 2,
        "includeAll": True,
        "multi": True,
        "allValue": ".*",
        "current": {"text": "All", "value": "$__all"},
        "sort": 1,
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


def layout(panels: list[dict]) -> list[dict]:
    """Give panels ids and place them left to right, top to bottom, 24 columns wide."""
    x = y = row_height = 0
    for number, p in enumerate(panels, start=1):
        w, h = p["gridPos"]["w"], p["gridPos"]["h"]
        if x + w > 24:
            x, y, row_height = 0, y + row_height, 0
        p["id"] = number
        p["gridPos"] = {"x": x, "y": y, "w": w, "h": h}
        x += w
        row_height = max(row_height, h)
    return panels


def dashboard(
    uid: str, title: str, description: str, panels: list[dict], variables: list[dict], links: list[dict]
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
        "annotations": {"list": []},
        "links": links,
        "panels": layout(panels),
    }


HOST_URL = (
    "/d/dnfsmon-host/dnfsmon-host?var-datasource=${datasource}&var-host=${__data.fields.host}&${__url_time_range}"
)


def host_dashboard() -> dict:
    read_event = " AND \"event\" = 'db file sequential read'"
    panels = [
        panel(
            "Database reachable",
            "1 when the agent could read the database in the interval, 0 when not (the reason is in dnfsmon_oracle_status.error).",
            "bool_yes_no",
            [
                target(
                    f'SELECT last("up") FROM "dnfsmon_oracle_status" WHERE {HOST} AND "database" =~ /^$database$/ AND $timeFilter GROUP BY "database"',
                    alias="$tag_database",
                )
            ],
            kind="stat",
            width=6,
            height=4,
        ),
        panel(
            "dNFS coverage of data files",
            "Share of data files whose V$IOSTAT_FILE access method is DNFS_LIB. Below 100 % on NFS storage: a silent fallback to the kernel NFS client.",
            "percent",
            [
                target(
                    f'SELECT last("dnfs_pct") FROM "dnfsmon_dnfs_coverage" WHERE {DB} AND "file_type" = \'Data File\' AND $timeFilter GROUP BY "instance"',
                    alias="$tag_instance",
                )
            ],
            kind="stat",
            width=6,
            height=4,
            thresholds=[(None, "red"), (99.99, "green")],
        ),
        panel(
            "dNFS processes",
            "Processes with a V$DNFS_STATS row at the end of each interval.",
            "short",
            series("dnfsmon_dnfs_io", [("processes", "processes")], DB, ["instance"]),
            width=12,
            height=4,
        ),
        panel(
            "dNFS IOPS",
            "Read and write NFS operations per second through Direct NFS, per instance (V$DNFS_STATS diffed per process).",
            "iops",
            series("dnfsmon_dnfs_io", [("read_iops", "read"), ("write_iops", "write")], DB, ["instance"]),
        ),
        panel(
            "dNFS throughput",
            "MiB per second read and written through Direct NFS, per instance.",
            "mbytes",
            series("dnfsmon_dnfs_io", [("read_mib_per_s", "read"), ("write_mib_per_s", "write")], DB, ["instance"]),
        ),
        panel(
            "Average I/O size",
            "KiB per dNFS read and per write over each interval.",
            "kbytes",
            series("dnfsmon_dnfs_io", [("avg_read_kib", "read"), ("avg_write_kib", "write")], DB, ["instance"]),
        ),
        panel(
            "I/O wait latency",
            "Average wait per I/O event in microseconds (ΔTIME_WAITED_MICRO / ΔTOTAL_WAITS). 'db file sequential read' is single-block read latency.",
            "µs",
            series("dnfsmon_oracle_event", [("avg_latency_us", "")], DB, ["instance", "event"]),
        ),
        panel(
            "Single-block read latency histogram",
            "Waits per second of 'db file sequential read' per power-of-two bucket (upper bound in µs) from V$EVENT_HISTOGRAM_MICRO.",
            "µs",
            [
                target(
                    f'SELECT mean("waits_per_s") FROM "dnfsmon_oracle_latency_histogram" WHERE {DB}{read_event} AND $timeFilter '
                    'GROUP BY time($__interval), "le_us" fill(0)',
                    alias="$tag_le_us",
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
            "ops",
            series("dnfsmon_oracle_event", [("waits_per_s", "")], DB, ["instance", "event"]),
        ),
        panel(
            "dNFS path balance",
            "Each path's share of its filer's sends (V$DNFS_CHANNELS): even paths share equally. Shares are exact even when others also select the view.",
            "percent",
            series(
                "dnfsmon_dnfs_channel", [("share_pct", "")], DB + ' AND "server" =~ /^$server$/', ["server", "path"]
            ),
        ),
        panel(
            "dNFS path sends",
            "Sends per second per path. V$DNFS_CHANNELS counts since the last select by anyone: another reader makes these low.",
            "ops",
            series(
                "dnfsmon_dnfs_channel", [("sends_per_s", "")], DB + ' AND "server" =~ /^$server$/', ["server", "path"]
            ),
        ),
        panel(
            "NIC utilisation",
            "nicstat %Util per interface (max of rx and tx on full duplex). Absent where the link speed is unknown.",
            "percent",
            series("dnfsmon_nic", [("util_pct", "")], HOST + ' AND "interface" =~ /^$interface$/', ["interface"]),
        ),
        panel(
            "NIC saturation",
            "nicstat Sat: errors, drops, overruns, collisions and carrier errors per second per interface.",
            "short",
            series(
                "dnfsmon_nic", [("saturation_per_s", "")], HOST + ' AND "interface" =~ /^$interface$/', ["interface"]
            ),
        ),
        panel(
            "NIC throughput",
            "KiB per second received and transmitted per interface.",
            "KiBs",
            series(
                "dnfsmon_nic",
                [("rx_kib_per_s", "rx"), ("tx_kib_per_s", "tx")],
                HOST + ' AND "interface" =~ /^$interface$/',
                ["interface"],
            ),
        ),
        panel(
            "TCP RTT to the filers",
            "Smoothed round-trip time of the TCP connections to each filer (kernel tcp_info): mean and worst connection.",
            "ms",
            series(
                "dnfsmon_filer_tcp",
                [("srtt_avg_ms", "mean"), ("srtt_max_ms", "max")],
                HOST + ' AND "server" =~ /^$server$/',
                ["server", "local_address"],
            ),
        ),
        panel(
            "TCP retransmissions to the filers",
            "Segments retransmitted per second on the connections to each filer.",
            "short",
            series(
                "dnfsmon_filer_tcp", [("retrans_segs_per_s", "")], HOST + ' AND "server" =~ /^$server$/', ["server"]
            ),
        ),
        panel(
            "Host TCP retransmissions",
            "Retransmitted segments as a percentage of segments sent, whole host (/proc/net/snmp).",
            "percent",
            series("dnfsmon_tcp", [("retrans_pct", "")], HOST, []),
        ),
        panel(
            "Kernel NFS client: READ/WRITE RTT, execute and queue time",
            "Per operation on each kernel NFS mount (mountstats): network and server round trip, whole RPC time, and time queued before transmission.",
            "ms",
            series(
                "dnfsmon_nfs_op",
                [("avg_rtt_ms", "rtt"), ("avg_exe_ms", "exe"), ("avg_queue_ms", "queue")],
                HOST + ' AND "op" =~ /^(READ|WRITE)$/',
                ["mountpoint", "op"],
            ),
        ),
        panel(
            "Kernel NFS client: retransmissions",
            "Retransmissions per second per mount and operation. Kernel NFS I/O on a datafile mount while dNFS is meant to be used is a fallback sign.",
            "short",
            series("dnfsmon_nfs_op", [("retrans_per_s", "")], HOST, ["mountpoint", "op"]),
        ),
        panel(
            "Kernel NFS client: RPC backlog",
            "Mean RPCs waiting for a transport slot per RPC sent; above 0 means the sunrpc slot table is full.",
            "short",
            series("dnfsmon_nfs_mount", [("avg_backlog", "")], HOST, ["mountpoint"]),
        ),
        panel(
            "sunrpc slot table",
            "sunrpc.tcp_slot_table_entries: RPC slots a kernel NFS TCP transport starts with (a client capped at 16 throttles the database; 128 lifts the cap).",
            "short",
            series("dnfsmon_rpc", [("tcp_slot_table_entries", "slots")], HOST, []),
        ),
    ]
    variables = [
        variable("host", "Host", 'SHOW TAG VALUES FROM "dnfsmon_agent" WITH KEY = "host"'),
        variable(
            "database",
            "Database",
            'SHOW TAG VALUES FROM "dnfsmon_oracle_status" WITH KEY = "database" WHERE "host" =~ /^$host$/',
        ),
        variable(
            "instance",
            "Instance",
            'SHOW TAG VALUES FROM "dnfsmon_dnfs_io" WITH KEY = "instance" WHERE "host" =~ /^$host$/ AND "database" =~ /^$database$/',
        ),
        variable(
            "server",
            "Filer",
            'SHOW TAG VALUES FROM "dnfsmon_dnfs_channel" WITH KEY = "server" WHERE "host" =~ /^$host$/',
        ),
        variable(
            "interface",
            "Interface",
            'SHOW TAG VALUES FROM "dnfsmon_nic" WITH KEY = "interface" WHERE "host" =~ /^$host$/',
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
        "One database host: Oracle's dNFS I/O and latency beside the paths, NICs, TCP to the filers and the kernel NFS client.",
        panels,
        variables,
        links,
    )


def fleet_table(
    title: str, description: str, unit: str, query: str, thresholds: list[tuple[Optional[float], str]]
) -> dict:
    return panel(
        title,
        description,
        unit,
        [target(query, table=True)],
        kind="table",
        width=12,
        height=8,
        links=[{"title": "Open the host dashboard", "url": HOST_URL}],
        thresholds=thresholds,
        options={"sortBy": [{"displayName": "value", "desc": True}], "showHeader": True},
    )


def fleet_dashboard() -> dict:
    panels = [
        fleet_table(
            "Worst single-block read latency",
            "Highest 'db file sequential read' average wait per host over the time range.",
            "µs",
            'SELECT max("avg_latency_us") AS "value" FROM "dnfsmon_oracle_event" WHERE "event" = \'db file sequential read\' AND $timeFilter GROUP BY "host", "database"',
            [(None, "green"), (2000, "orange"), (10000, "red")],
        ),
        fleet_table(
            "Top dNFS IOPS",
            "Highest dNFS IOPS (read + write) per host and instance over the time range.",
            "iops",
            'SELECT max("total_iops") AS "value" FROM "dnfsmon_dnfs_io" WHERE $timeFilter GROUP BY "host", "instance"',
            [(None, "blue")],
        ),
        fleet_table(
            "Hosts with a dNFS fallback",
            "Lowest share of data files on DNFS_LIB per host: below 100 % is a silent fallback to kernel NFS (or files on local disk or ASM).",
            "percent",
            'SELECT min("dnfs_pct") AS "value" FROM "dnfsmon_dnfs_coverage" WHERE "file_type" = \'Data File\' AND $timeFilter GROUP BY "host", "instance"',
            [(None, "red"), (99.99, "green")],
        ),
        fleet_table(
            "TCP retransmissions",
            "Highest host-wide TCP retransmit percentage per host.",
            "percent",
            'SELECT max("retrans_pct") AS "value" FROM "dnfsmon_tcp" WHERE $timeFilter GROUP BY "host"',
            [(None, "green"), (0.5, "orange"), (2, "red")],
        ),
        fleet_table(
            "Saturated NICs",
            "Highest nicstat %Util per host and interface.",
            "percent",
            'SELECT max("util_pct") AS "value" FROM "dnfsmon_nic" WHERE $timeFilter GROUP BY "host", "interface"',
            [(None, "green"), (70, "orange"), (90, "red")],
        ),
        fleet_table(
            "Databases not reachable",
            "Samples where the agent could not read the database (0 = down) per host: the lowest value over the range.",
            "bool_yes_no",
            'SELECT min("up") AS "value" FROM "dnfsmon_oracle_status" WHERE $timeFilter GROUP BY "host", "database"',
            [(None, "red"), (1, "green")],
        ),
    ]
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
        "Every host on one screen: worst latency, top IOPS, fallbacks, retransmissions, saturated NICs, unreachable databases.",
        panels,
        [],
        links,
    )


DASHBOARDS = {"dnfsmon-host.json": host_dashboard, "dnfsmon-fleet.json": fleet_dashboard}


def render() -> dict[str, str]:
    return {name: json.dumps(build(), indent=2, ensure_ascii=False) + "\n" for name, build in DASHBOARDS.items()}


def main() -> None:
    directory = os.path.join(HERE, "dashboards")
    os.makedirs(directory, exist_ok=True)
    for name, text in render().items():
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
