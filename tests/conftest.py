"""Shared fixtures: the real InfluxDB server, and the `influx` marker that goes with it."""

from __future__ import annotations

import itertools

import pytest

from influxdb_server import VERSIONS, InfluxServer

_databases = itertools.count(1)


def pytest_addoption(parser):
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite the golden files (tests/cases/*/*/expected.*) from what the code gives now; "
        "review the change with git diff before committing it (tests/cases/README.md)",
    )


@pytest.fixture
def update_golden(request) -> bool:
    """True when this run rewrites the golden files instead of comparing with them."""
    return bool(request.config.getoption("--update-golden"))


def pytest_collection_modifyitems(items):
    """Every test that uses the server (directly or through another fixture) is marked `influx`.

    The server is built with Go from the module proxy, so the fast tier
    (`make check`, -m "not influx ...") must leave these tests out; deriving the
    mark from the fixture means a new InfluxDB test cannot forget it. A test
    that starts an InfluxServer of its own marks itself.
    """
    for item in items:
        if {"influx_server", "influx_with_auth"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.influx)


# Every test of the shared server runs against 1.8.10 and the latest 1.x.
@pytest.fixture(scope="session", params=VERSIONS)
def influx_server(request, tmp_path_factory):
    server = InfluxServer(str(tmp_path_factory.mktemp("influxdb")), request.param).start()
    yield server
    server.stop()


@pytest.fixture
def influx(influx_server):
    """The shared server with a fresh database for this test: (server, database name)."""
    name = f"t{next(_databases)}"
    influx_server.create_database(name)
    return influx_server, name


@pytest.fixture(scope="session")
def influx_with_auth(tmp_path_factory):
    """A server of its own with authentication on, and one user: admin, password right."""
    server = InfluxServer(str(tmp_path_factory.mktemp("influxdb-auth")))
    text = open(server.config).read().replace("flux-enabled = true", "flux-enabled = true\n  auth-enabled = true")
    with open(server.config, "w") as f:
        f.write(text)
    server.start()
    # With auth on and no user yet, 1.8 accepts exactly this one statement unauthenticated.
    server.query("CREATE USER admin WITH PASSWORD 'right' WITH ALL PRIVILEGES")
    yield server
    server.stop()
