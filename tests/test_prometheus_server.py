"""dnfsmon's textfile through the real node_exporter and Prometheus, read back with PromQL.

`dnfsmon collect` runs as users run it (the command line, a config file with
[prometheus] textfile) against the simulated database, whose figures are known
(dnfsmon.simulator.truth), and the host's own NIC and TCP counters. node_exporter's
textfile collector serves the file; Prometheus scrapes it every second. The
answers of PromQL queries must be the simulator's truth, and every series of
the last sample must be in Prometheus with the stored point's value in base
units and its tags as labels.
"""

from __future__ import annotations

import os

import pytest

import metric_servers

pytestmark = pytest.mark.prometheus

# Labels Prometheus gives every scraped series (the target's); the rest are dnfsmon's.
TARGET_LABELS = {"job", "instance"}


@pytest.fixture
def scraping_stack(tmp_path):
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    exporter = metric_servers.node_exporter(str(tmp_path / "node_exporter"), str(textfiles)).start()
    server = metric_servers.prometheus(str(tmp_path / "prometheus"), [f"127.0.0.1:{exporter.port}"]).start()
    yield textfiles, exporter, server
    server.stop()
    exporter.stop()


def test_promql_answers_the_simulators_truth_and_every_series_of_the_sample(tmp_path, scraping_stack):
    textfiles, _, server = scraping_stack
    config_path = metric_servers.write_config(tmp_path, prometheus={"textfile": f"{textfiles}/dnfsmon.prom"})
    metric_servers.collect(config_path, count=3, interval_s=2)
    points, sample = metric_servers.last_sample(str(tmp_path / "store"))
    expected = metric_servers.expected_series(sample)

    # Every series of the last sample, with its value, once Prometheus has scraped the last file.
    metric_servers.wait_for(
        lambda: not metric_servers.differences(metric_servers.series(server.url, TARGET_LABELS), expected)
    )
    assert metric_servers.differences(metric_servers.series(server.url, TARGET_LABELS), expected) == ""
    assert len(expected) > 150

    metric_servers.assert_truth(server.url, config_path, points)


def test_node_exporter_reports_the_file_without_error_and_its_age(tmp_path, scraping_stack):
    textfiles, _, server = scraping_stack
    metric_servers.collect(
        metric_servers.write_config(tmp_path, prometheus={"textfile": f"{textfiles}/dnfsmon.prom"}),
        count=2,
        interval_s=1,
    )
    errors = metric_servers.wait_for(lambda: metric_servers.query(server.url, "node_textfile_scrape_error"))
    assert [value for _, value in errors] == [0]
    [(labels, mtime)] = metric_servers.query(server.url, "node_textfile_mtime_seconds")
    assert labels["file"].endswith("dnfsmon.prom")
    assert mtime == pytest.approx(os.stat(textfiles / "dnfsmon.prom").st_mtime, abs=1)
    # The age docs/prometheus.md alerts on: seconds since the agent last wrote.
    [(_, age)] = metric_servers.query(server.url, "time() - node_textfile_mtime_seconds")
    assert 0 <= age < 60
