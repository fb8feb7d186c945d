"""The fleet path, tested with the real servers: past one InfluxDB.

dnfsmon's own `ship` of line protocol into a VictoriaMetrics single node
([influxdb] naming = "prometheus"), queried with the same PromQL as the
textfile path (tests/test_prometheus_server.py). The replicated path,
Prometheus remote write into Thanos Receive, is tests/test_fleet_thanos.py.
"""

from __future__ import annotations

import pytest

import metric_servers
from runner import run_dnfsmon

pytestmark = pytest.mark.prometheus


def latest_of_each_series(points) -> dict:
    """What an instant query answers within its look-back: each series' last value of the run."""
    return metric_servers.expected_series(sorted(points, key=lambda p: p.time_ns))


def test_ship_into_victoria_metrics_answers_the_same_promql_as_the_textfile_path(tmp_path):
    server = metric_servers.victoria_metrics(str(tmp_path / "vm")).start()
    try:
        # Collect first, then `dnfsmon ship` (the command users run): the points are read from the
        # store before shipping acknowledges them and the store deletes shipped segments.
        metric_servers.collect(metric_servers.write_config(tmp_path), count=3, interval_s=2)
        points, _ = metric_servers.last_sample(str(tmp_path / "store"))
        expected = latest_of_each_series(points)
        assert len(expected) > 150
        # The same store, now shipped: VictoriaMetrics takes line protocol on InfluxDB's v2 write API.
        shipping = {"enabled": True, "url": server.url, "bucket": "dnfsmon", "naming": "prometheus"}
        config_path = metric_servers.write_config(tmp_path, influxdb=shipping)
        run_dnfsmon("--config", config_path, "ship", check_rc=0)
        # VictoriaMetrics adds the request's database as the label `db` when it is given as one.
        ignored = {"db"}

        def differences() -> str:
            return metric_servers.differences(metric_servers.series(server.url, ignored), expected)

        # A new series is searchable some seconds after it is written (about 9 s here).
        metric_servers.wait_for(lambda: not differences(), timeout_s=90)
        assert differences() == ""
        metric_servers.assert_truth(server.url, config_path, points)
    finally:
        server.stop()
