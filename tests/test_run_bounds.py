"""A run's bounds against its slot, with a hung database and a hung InfluxDB (docs/reliability.md, "Time").

Both servers accept connections and never answer, the worst case for a
client: a refused connection fails at once. The README's cron line and the
systemd unit's ExecStart (contrib/dnfsmon.service) are run as each starts
them, at once, each with its own config: every run must end before the next
one is due (a minute later) and below the unit's TimeoutStartSec, which a
systemd timer would otherwise enforce by killing it and, meanwhile,
skipping the next start.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time

import pytest

import systemd_units
from configs import write_config
from dnfsmon.commands.collect import SCHEDULE_SLOT_S

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)


class Hung:
    """A TCP server on 127.0.0.1 that accepts every connection and never sends a byte."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            self.held.append(connection)

    def close(self):
        self.server.close()
        for connection in self.held:
            connection.close()


def readme_cron_command() -> str:
    text = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
    [line] = re.findall(r"^\* \* \* \* \* \$DNFSMON_USER (.*)$", text, re.M)
    return line


def unit_settings() -> dict[str, str]:
    return dict(systemd_units.settings(open(os.path.join(REPO, "contrib", "dnfsmon.service")).read()))


def timeout_start_s() -> float:
    return float(unit_settings()["TimeoutStartSec"])


@pytest.fixture
def hung_servers():
    database, influxdb = Hung(), Hung()
    yield database, influxdb
    database.close()
    influxdb.close()


def hung_config(directory, database: Hung, influxdb: Hung):
    directory.mkdir()
    password = directory / "oracle.password"
    password.write_text("not-a-real-password\n")
    password.chmod(0o600)
    return write_config(
        directory,
        host={"sources": ["nic", "tcp"]},
        oracle={"enabled": True, "dsn": f"127.0.0.1:{database.port}/X", "user": "u", "password_file": str(password)},
        influxdb={"enabled": True, "url": f"http://127.0.0.1:{influxdb.port}", "bucket": "dnfsmon"},
    )


@pytest.mark.slow
def test_the_cron_and_timer_runs_end_inside_their_slot_with_a_hung_database_and_influxdb(tmp_path, hung_servers):
    database, influxdb = hung_servers
    cron_config = hung_config(tmp_path / "cron", database, influxdb)
    timer_config = hung_config(tmp_path / "timer", database, influxdb)
    cron = (
        readme_cron_command()
        .replace("$PREFIX/bin/dnfsmon", f"{BIN}/dnfsmon")
        .replace("$ETC/dnfsmon.toml", str(cron_config))
        .replace("$LOG/collect.log", str(tmp_path / "cron" / "collect.log"))
    )
    timer = unit_settings()["ExecStart"].replace("/opt/dnfsmon/bin/dnfsmon", f"{BIN}/dnfsmon")
    timer = timer.replace("/etc/dnfsmon/dnfsmon.toml", str(timer_config)) + f" 2>{tmp_path / 'timer' / 'journal'}"
    assert "--count 6 --interval 9.5" in cron and "--count 6 --interval 9.5" in timer
    durations: dict[str, float] = {}
    codes: dict[str, int] = {}

    def run(name, command):
        started = time.monotonic()
        result = subprocess.run(["env", "-i", "PATH=/usr/bin:/bin", "/bin/sh", "-c", command], timeout=300)
        durations[name] = time.monotonic() - started
        codes[name] = result.returncode

    threads = [threading.Thread(target=run, args=item) for item in (("cron", cron), ("timer", timer))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    logs = {
        "cron": (tmp_path / "cron" / "collect.log").read_text(),
        "timer": (tmp_path / "timer" / "journal").read_text(),
    }
    for name in ("cron", "timer"):
        # The database and InfluxDB were both tried and both hung: the worst case, not a short cut.
        assert "no answer from the database" in logs[name], logs[name]
        assert codes[name] == 4, logs[name]  # InfluxDB did not take the points; they wait in the store
        # Before the next run is due, and below the unit's limit, with a margin for a loaded machine.
        assert durations[name] < SCHEDULE_SLOT_S, (name, durations, logs[name])
        assert durations[name] < timeout_start_s() - 5, (name, durations)


def test_the_units_limit_is_above_the_runs_bound_and_the_role_uses_the_same():
    """docs/reliability.md: a run ends SLOT_MARGIN_S before its minute is out; the unit's limit is a backstop above."""
    from dnfsmon.commands.collect import SLOT_MARGIN_S, run_slot_end

    assert run_slot_end(0.0, 6, 9.5) == SCHEDULE_SLOT_S - SLOT_MARGIN_S < SCHEDULE_SLOT_S
    assert run_slot_end(0.0, 7, 10.0) == 2 * SCHEDULE_SLOT_S - SLOT_MARGIN_S  # sampling spans a second minute
    assert timeout_start_s() > SCHEDULE_SLOT_S
    template = open(os.path.join(REPO, "ansible", "roles", "dnfsmon_agent", "templates", "dnfsmon.service.j2")).read()
    assert f"TimeoutStartSec={unit_settings()['TimeoutStartSec']}\n" in template
    reliability = open(os.path.join(REPO, "docs", "reliability.md"), encoding="utf-8").read()
    assert f"TimeoutStartSec={unit_settings()['TimeoutStartSec']}" in reliability


def test_the_process_age_counts_the_imports():
    """The slot is counted from the process's start: a child that slept 1.5 s before asking is that old."""
    code = "import time; time.sleep(1.5); from dnfsmon.commands.collect import process_age_s; print(process_age_s())"
    age = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert 1.5 <= age < 10
