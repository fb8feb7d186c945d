"""Shared fixtures: the real InfluxDB server."""

from __future__ import annotations

import itertools

import pytest

from influxdb_server import InfluxServer

_databases = itertools.count(1)


@pytest.fixture(scope="session")
def influx_server(tmp_path_factory):
    server = InfluxServer(str(tmp_path_factory.mktemp("influxdb"))).start()
    yield server
    server.stop()


@pytest.fixture
def influx(influx_server):
    """The shared server with a fresh database for this test: (server, database name)."""
    name = f"t{next(_databases)}"
    influx_server.create_database(name)
    return influx_server, name
