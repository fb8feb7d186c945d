"""The Prometheus exposition: names and units by Prometheus's conventions, from the catalogue.

The rules checked here are Prometheus's own (https://prometheus.io/docs/practices/naming/):
base units (seconds, bytes, ratios), `_total` only on counters, a unit suffix
in plural. The text is read back by the Prometheus project's own Python
parser (prometheus_client), not by ours. The end-to-end path (node_exporter
serving the file, Prometheus scraping it) is in tests/test_prometheus_server.py.
"""

from __future__ import annotations

import os
import stat

import pytest
from prometheus_client.parser import text_string_to_metric_families

from dnfsmon import catalogue, prometheus
from dnfsmon.collect import collect
from dnfsmon.config import parse
from dnfsmon.errors import EnvironmentProblem
from dnfsmon.points import Point
from dnfsmon.state import RunLock
from dnfsmon.store import Store
from test_catalogue import doctor_points, golden_points, simulated_points

# Written out here, apart from prometheus.UNITS: each catalogue unit's factor to its base unit.
BASE_UNIT_FACTORS = {
    "ms": ("seconds", 0.001),
    "µs": ("seconds", 1e-6),
    "s": ("seconds", 1),
    "deciseconds": ("seconds", 0.1),
    "bytes": ("bytes", 1),
    "KiB": ("bytes", 1024),
    "KiB/s": ("bytes_per_second", 1024),
    "MiB/s": ("bytes_per_second", 1048576),
    "MB/s": ("bytes_per_second", 1_000_000),
    "Mbit/s": ("bytes_per_second", 125_000),
    "percent": ("ratio", 0.01),
    "µs/s": ("seconds_per_second", 1e-6),
}


def numeric_fields():
    return [e for e in catalogue.load().values() if e.kind == "field" and e.type != "string"]


def test_every_numeric_field_of_the_catalogue_has_one_valid_prometheus_name():
    known = prometheus.metrics()
    fields = numeric_fields()
    assert set(known) == {(e.measurement, e.name) for e in fields}
    names = [m.name for m in known.values()]
    assert len(set(names)) == len(names), "two fields would share a metric"
    for entry in fields:
        metric = known[(entry.measurement, entry.name)]
        assert prometheus.valid_name(metric.name), metric.name
        assert metric.name.startswith(entry.measurement + "_")
        assert entry.description in metric.help
        if entry.unit in BASE_UNIT_FACTORS:
            suffix, factor = BASE_UNIT_FACTORS[entry.unit]
            assert metric.name.endswith("_" + suffix) or f"_{suffix}_" in metric.name, metric.name
            assert metric.factor == pytest.approx(factor, rel=1e-15), metric.name
        elif entry.unit.endswith("/s"):
            assert metric.name.endswith("_per_second") and metric.factor == 1, metric.name
        else:
            assert entry.unit in prometheus.COUNT_UNITS and metric.factor == 1, metric.name
        # Names say their unit once, in Prometheus's words: none of ours is left.
        words = metric.name.split("_")
        assert not {"pct", "ms", "us", "kib", "mib", "mb", "mbit", "iops", "ds"} & set(words), metric.name
        assert words[-2:] != ["per", "s"], metric.name


def test_total_only_on_counters():
    counters = {(e.measurement, e.name) for e in numeric_fields() if "a counter, total since" in e.description}
    assert counters, "the store's drop counters are counters"
    for key, metric in prometheus.metrics().items():
        assert metric.name.endswith("_total") == (key in counters) == (metric.type == "counter"), metric.name


def test_a_unit_without_a_prometheus_name_is_refused():
    entry = catalogue.Entry("dnfsmon_x", "size_gib", "field", "float", "GiB", "A size", "x")
    with pytest.raises(ValueError, match="GiB"):
        prometheus.metrics({("dnfsmon_x", "field", "size_gib"): entry})


def test_a_field_whose_name_does_not_say_its_unit_is_refused():
    entry = catalogue.Entry("dnfsmon_x", "latency", "field", "float", "ms", "A latency", "x")
    with pytest.raises(ValueError, match="latency"):
        prometheus.metrics({("dnfsmon_x", "field", "latency"): entry})


def parsed(text):
    """{metric name: (type, help, {labels: value})} as prometheus_client reads the text."""
    found = {}
    for family in text_string_to_metric_families(text):
        samples = {}
        for sample in family.samples:
            key = frozenset(sample.labels.items())
            assert key not in samples, f"{sample.name} {sample.labels} twice"
            samples[key] = sample.value
        # prometheus_client names a counter family without its _total; its samples keep it.
        name = family.samples[0].name if family.samples else family.name
        found[name] = (family.type, family.documentation, samples)
    return found


def test_every_point_of_the_test_cases_reads_back_with_its_values_in_base_units_and_its_tags_as_labels():
    points = golden_points() + simulated_points() + doctor_points()
    known = prometheus.metrics()
    families = parsed(prometheus.exposition(points, known))
    expected: dict[str, dict[frozenset, float]] = {}
    entries = catalogue.load()
    for point in points:
        labels = frozenset(("oracle_instance" if k == "instance" else k, v) for k, v in point.tags if v)
        for name, value in point.fields.items():
            entry = entries[(point.measurement, "field", name)]
            if entry.type == "string":
                continue
            factor = BASE_UNIT_FACTORS.get(entry.unit, ("", 1))[1]
            expected.setdefault(known[(point.measurement, name)].name, {})[labels] = float(value) * factor
    assert set(families) == set(expected)
    for name, samples in expected.items():
        kind, text, got = families[name]
        assert kind == known_type(known, name)
        assert text == next(m.help for m in known.values() if m.name == name)
        assert got.keys() == samples.keys(), name
        for labels, value in samples.items():
            assert got[labels] == pytest.approx(value, rel=1e-12, abs=1e-300), (name, labels)
    assert sum(len(s) for s in expected.values()) > 1000


def known_type(known, name):
    return next(m.type for m in known.values() if m.name == name)


def test_awkward_label_values_and_help_text_read_back_exactly():
    awkward = 'C:\\ora "data"\nline two'
    point = Point("dnfsmon_nic", (("host", "h"), ("interface", awkward)), {"rx_kib_per_s": 2.5, "full_duplex": True}, 1)
    families = parsed(prometheus.exposition([point], prometheus.metrics()))
    assert families["dnfsmon_nic_rx_bytes_per_second"][2] == {frozenset({("host", "h"), ("interface", awkward)}): 2560}
    assert families["dnfsmon_nic_full_duplex"][2] == {frozenset({("host", "h"), ("interface", awkward)}): 1}


def test_string_fields_and_non_finite_values_are_left_out():
    point = Point("dnfsmon_oracle_status", (("host", "h"),), {"version": "19.0.0.0.0", "up": False}, 1)
    text = prometheus.exposition([point], prometheus.metrics())
    assert "19.0.0.0.0" not in text
    assert parsed(text)["dnfsmon_oracle_status_up"][2] == {frozenset({("host", "h")}): 0}
    assert (
        prometheus.exposition([Point("dnfsmon_tcp", (), {"retrans_pct": float("nan")}, 1)], prometheus.metrics()) == ""
    )


def test_converted_points_carry_the_same_names_units_and_labels_for_line_protocol():
    point = Point("dnfsmon_dnfs_io", (("host", "h"), ("instance", "2")), {"read_iops": 10.0, "read_mib_per_s": 2.0}, 5)
    assert prometheus.converted(point, prometheus.metrics()) == Point(
        "dnfsmon_dnfs_io",
        (("host", "h"), ("oracle_instance", "2")),
        {"read_ops_per_second": 10.0, "read_bytes_per_second": 2097152.0},
        5,
    )


def test_textfile_is_replaced_atomically_readable_by_node_exporter_and_never_through_a_planted_link(tmp_path):
    target = tmp_path / "dnfsmon.prom"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("precious\n")
    target.symlink_to(elsewhere)
    textfile = prometheus.Textfile(str(target))
    (tmp_path / ".dnfsmon.prom.tmp-left-by-a-kill").write_text("x")
    (tmp_path / ".other.prom.tmp-someone-elses").write_text("x")
    textfile.remove_stale_temps()
    textfile.write([Point("dnfsmon_tcp", (("host", "h"),), {"established": 3}, 1)])
    assert elsewhere.read_text() == "precious\n"
    info = os.lstat(target)
    assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o644
    assert 'dnfsmon_tcp_established{host="h"} 3\n' in target.read_text()
    assert sorted(os.listdir(tmp_path)) == [".other.prom.tmp-someone-elses", "dnfsmon.prom", "elsewhere"]


def config_for(tmp_path, textfile):
    cfg = parse(
        {
            "agent": {"state_dir": str(tmp_path / "state"), "host": "db1"},
            "store": {"dir": str(tmp_path / "store")},
            "host": {"sources": ["tcp"]},
            "simulator": {"enabled": True},
            "prometheus": {"textfile": str(textfile)},
        },
        None,
    )
    os.makedirs(cfg.state_dir)
    return cfg


def test_collect_writes_each_sample_to_the_textfile(tmp_path):
    cfg = config_for(tmp_path, tmp_path / "out" / "dnfsmon.prom")
    os.makedirs(tmp_path / "out")
    with RunLock(cfg.state_dir):
        collect(cfg, count=2, interval_s=0.2)
    families = parsed((tmp_path / "out" / "dnfsmon.prom").read_text())
    stored = [p for p in Store(cfg.store_dir, cfg.store_max_bytes).points() if p.measurement == "dnfsmon_dnfs_io"]
    last = {dict(p.tags)["instance"]: p.fields["read_iops"] for p in stored if p.time_ns == stored[-1].time_ns}
    got = {
        dict(labels)["oracle_instance"]: v for labels, v in families["dnfsmon_dnfs_io_read_ops_per_second"][2].items()
    }
    assert got == last and got
    assert "dnfsmon_agent_sources_ok" in families and "dnfsmon_tcp_established" in families


def test_an_unwritable_textfile_directory_stores_every_sample_then_exits_2_naming_it(tmp_path):
    cfg = config_for(tmp_path, tmp_path / "missing" / "dnfsmon.prom")
    with RunLock(cfg.state_dir), pytest.raises(EnvironmentProblem, match=r"missing.*install -d") as raised:
        collect(cfg, count=2, interval_s=0.2)
    assert raised.value.exit_code == 2
    agent_points = [p for p in Store(cfg.store_dir, cfg.store_max_bytes).points() if p.measurement == "dnfsmon_agent"]
    assert len(agent_points) == 2


def test_prometheus_naming_ships_the_exposition_names_units_and_labels(influx, tmp_path):
    """[influxdb] naming = "prometheus" sends what the textfile publishes, as line protocol (a real InfluxDB reads it)."""
    from dnfsmon.influx import ship
    from test_influx import settings

    server, db = influx
    store = Store(str(tmp_path / "store"), 10**8)
    store.append(
        [
            Point("dnfsmon_nic", (("host", "h"), ("interface", "eth0")), {"rx_kib_per_s": 2.0, "util_pct": 50.0}, 10),
            Point("dnfsmon_oracle_status", (("host", "h"),), {"version": "19.0.0.0.0"}, 10),  # text only: not sent
            Point("dnfsmon_dnfs_io", (("host", "h"), ("instance", "simdb1")), {"read_iops": 5.0}, 10),
        ]
    )
    report = ship(store, settings(server.url, db, naming="prometheus"))
    assert (report.sent, report.quarantined) == (2, 0)
    assert list(store.unshipped()) == []
    rows = {row["_measurement"]: row for row in server.rows("SELECT * FROM /dnfsmon_.*/ GROUP BY *", db)}
    assert set(rows) == {"dnfsmon_nic", "dnfsmon_dnfs_io"}
    assert rows["dnfsmon_nic"]["rx_bytes_per_second"] == 2048.0 and rows["dnfsmon_nic"]["util_ratio"] == 0.5
    assert rows["dnfsmon_dnfs_io"]["read_ops_per_second"] == 5.0
    assert rows["dnfsmon_dnfs_io"]["oracle_instance"] == "simdb1"
