"""`dnfsmon top` in a real terminal (tmux), and as plain text for scripts.

Figures on the screen are checked against `dnfsmon diff` run on the very
inputs top read: top --record DIR keeps each refresh's raw inputs in the
capture format, so whatever the timing, refresh N must show exactly what
`dnfsmon diff DIR/N-1 DIR/N` computes. Inputs: the simulated database, and a
fixture /proc tree whose /proc/net/dev a thread of the test keeps growing.

Every tmux server a test starts has its own socket and is killed in a
finally; every wait is a poll with a deadline.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time

import pytest

from configs import write_config
from dnfsmon import diagnosis, rates, top
from dnfsmon.collect import diff_captures
from runner import DNFSMON

CASES = os.path.join(os.path.dirname(__file__), "cases", "diff")
BASIC = os.path.join(CASES, "basic", "old")
DEADLINE_S = 90.0
# A foreground colour in tmux's rendering of the screen (capture-pane -e).
COLOUR = re.compile(r"\x1b\[(?:[0-9;]*;)?3[0-7](?:;[0-9;]*)?m")


def poll(what, check, timeout=DEADLINE_S, last=lambda: ""):
    """check()'s first true value, polled until the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{last()}")
        time.sleep(0.1)


class NetDevFeed:
    """Keeps rewriting a fixture /proc/net/dev (atomically) with growing eth0 counters."""

    def __init__(self, path):
        self.path = path
        self.generation = 0
        self.stop = threading.Event()
        self.write()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def text(self):
        k = self.generation
        return (
            "Inter-|   Receive                                                |  Transmit\n"
            " face |bytes    packets errs drop fifo frame compressed multicast"
            "|bytes    packets errs drop fifo colls carrier compressed\n"
            f"  eth0: {1000000000 + k * 10000000} {1000000 + k * 8000} 0 {k} 0 0 0 0"
            f" {500000000 + k * 2000000} {800000 + k * 3000} 0 0 0 0 0 0\n"
            "    lo: 1000 10 0 0 0 0 0 0 1000 10 0 0 0 0 0 0\n"
        )

    def write(self):
        temp = self.path + ".new"
        with open(temp, "w") as f:
            f.write(self.text())
        os.replace(temp, self.path)

    def run(self):
        while not self.stop.wait(0.05):
            self.generation += 1
            self.write()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=10)


@pytest.fixture
def inputs(tmp_path):
    """(config, record dir, net/dev path): the simulator plus a fixture host whose eth0 is busy."""
    root = tmp_path / "root"
    shutil.copytree(BASIC, root, ignore=shutil.ignore_patterns("capture.json", "snmp"))
    config = write_config(
        tmp_path,
        agent={"host": "testhost"},
        host={"proc_root": str(root / "proc"), "sys_root": str(root / "sys"), "sources": ["nic"]},
        simulator={"enabled": True, "instances": 2, "scope": "cluster"},  # both instances from this node
    )
    return config, tmp_path / "rec", str(root / "proc" / "net" / "dev")


class Terminal:
    """A detached tmux session of a fixed size running one command."""

    def __init__(self, tmp_path, width, height):
        self.socket = str(tmp_path / "tmux.sock")
        self.width, self.height = width, height
        self.rc_file = tmp_path / "rc"
        self.err_file = tmp_path / "stderr"

    def tmux(self, *args):
        return subprocess.run(
            ["tmux", "-S", self.socket, "-f", "/dev/null", *args], capture_output=True, text=True, timeout=30
        )

    def start(self, args, env=""):
        # sh traps SIGHUP and SIGINT so it outlives a killed pane or Ctrl-C and
        # records top's exit status; a trapped (not ignored) signal is back to
        # its default in top, as from a login shell.
        command = " ".join([*DNFSMON, *map(str, args)])
        script = f"trap : HUP INT; env {env} {command} 2>{self.err_file}; echo $? >{self.rc_file}; exec sleep 600"
        result = self.tmux("new-session", "-d", "-x", str(self.width), "-y", str(self.height), "sh", "-c", script)
        assert result.returncode == 0, result.stderr

    def screen(self, escapes=False):
        result = self.tmux("capture-pane", "-p", *(["-e"] if escapes else []))
        return result.stdout if result.returncode == 0 else ""

    def keys(self, *keys):
        assert self.tmux("send-keys", *keys).returncode == 0

    def value(self, name):
        return self.tmux("display-message", "-p", f"#{{{name}}}").stdout.strip()

    def exit_status(self):
        return int(poll("top to exit", lambda: self.rc_file.exists() and self.rc_file.read_text().strip()))

    def wait_for(self, what, check):
        """The first screen for which check(screen) is true, and that is whole.

        On a loaded machine tmux can be captured while it is still taking in a
        refresh (the header already new, a table still the previous one's), so
        a screen counts only when a second capture a moment later is the same.
        """

        def screen_if_ready():
            screen = self.screen()
            if not check(screen):
                return None
            time.sleep(0.1)
            return screen if self.screen() == screen else None

        return poll(what, screen_if_ready, last=self.screen)

    def kill(self):
        self.tmux("kill-server")


def refresh_number(screen):
    match = re.search(r"refresh (\d+),", screen)
    return int(match.group(1)) if match else 0


def diff_points(record, number):
    """`dnfsmon diff` of the inputs of refresh `number` and the one before."""
    result = subprocess.run(
        [*DNFSMON, "diff", str(record / f"{number - 1:04d}"), str(record / f"{number:04d}"), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def doctor(record, number):
    """`dnfsmon doctor --format json` on the inputs of refresh `number` and the one before."""
    result = subprocess.run(
        [*DNFSMON, "doctor", str(record / f"{number - 1:04d}"), str(record / f"{number:04d}"), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode in (0, 10, 11), result.stderr
    return json.loads(result.stdout)


def assert_doctor_matches(screen, found):
    """The verdict line and the ladder's rungs as `dnfsmon doctor` gives them."""
    if found["findings"]:
        worst = found["findings"][0]  # the doctor's order: likely cause, then critical first
        assert f"Verdict: {worst['severity'].upper()} {worst['id']} [{worst['layer']}]" in screen
    else:
        assert "Verdict: healthy, no rule fired" in screen
    for name, label in diagnosis.ladder.RUNGS.items():
        if label in screen:
            (line,) = [line for line in screen.splitlines() if line.startswith(label)]
            value = found["ladder"].get(name)
            assert line[len(label) :].split()[0] == ("-" if value is None else f"{value:.2f}"), line


def point(points, measurement, **tags):
    (found,) = [p for p in points if p["m"] == measurement and all([k, v] in p["t"] for k, v in tags.items())]
    return found["f"]


def row(screen, first):
    """The cells of the screen line that starts with `first` ([] when there is none)."""
    lines = [line.split() for line in screen.splitlines() if line.split()[:1] == [first]]
    assert len(lines) <= 1, screen
    return lines[0] if lines else []


def assert_instances_match_diff(screen, points):
    """INSTANCE READ/s WRITE/s RD-MiB/s WR-MiB/s 1BLK-ms P95-ms PATHS SHARE, as diff computes them."""
    for instance in ("simdb1", "simdb2"):
        io = point(points, "dnfsmon_dnfs_io", instance=instance)
        event = point(points, "dnfsmon_oracle_event", instance=instance, event="db file sequential read")
        buckets = [
            (float(dict(p["t"])["le_us"]), p["f"]["waits_per_s"])
            for p in points
            if p["m"] == "dnfsmon_oracle_latency_histogram"
            and ["instance", instance] in p["t"]
            and ["event", "db file sequential read"] in p["t"]
        ]
        shares = [
            p["f"]["share_pct"] for p in points if p["m"] == "dnfsmon_dnfs_channel" and ["instance", instance] in p["t"]
        ]
        expected = [
            instance,
            f"{io['read_iops']:.0f}",
            f"{io['write_iops']:.0f}",
            f"{io['read_mib_per_s']:.2f}",
            f"{io['write_mib_per_s']:.2f}",
            f"{event['avg_latency_us'] / 1000:.2f}",
            f"{rates.histogram_quantile(buckets, 0.95) / 1000:.2f}",
            str(len(shares)),
            f"{min(shares):.0f}-{max(shares):.0f}%",
        ]
        assert row(screen, instance)[: len(expected)] == expected
        assert io["read_iops"] > 0


def assert_nic_matches_diff(screen, points):
    """IF RX-KiB/s TX-KiB/s %UTIL SAT/s for eth0, as diff computes them."""
    nic = point(points, "dnfsmon_nic", interface="eth0")
    expected = [
        "eth0",
        f"{nic['rx_kib_per_s']:.1f}",
        f"{nic['tx_kib_per_s']:.1f}",
        f"{nic['util_pct']:.1f}",
        f"{nic['saturation_per_s']:.1f}",
    ]
    assert row(screen, "eth0")[:5] == expected


def assert_fits(screen, width, height):
    lines = screen.rstrip("\n").split("\n")
    assert len(lines) <= height
    assert all(len(line) <= width for line in lines)


@pytest.mark.tmux
@pytest.mark.parametrize("width, height", [(80, 24), (160, 50)])
def test_screen_shows_what_diff_computes_and_keys_switch_views(tmp_path, inputs, width, height):
    config, record, net_dev = inputs
    terminal = Terminal(tmp_path, width, height)
    try:
        with NetDevFeed(net_dev):
            terminal.start(["--config", config, "top", "--interval", "1", "--record", record], env="TERM=xterm")
            # A refresh where eth0 moved (the feed rewrites net/dev every 50 ms).
            screen = terminal.wait_for(
                "a refresh with eth0 traffic",
                lambda s: refresh_number(s) >= 1 and row(s, "eth0")[1:2] not in ([], ["0.0"]),
            )
            points = diff_points(record, refresh_number(screen))
            assert_instances_match_diff(screen, points)
            assert_nic_matches_diff(screen, points)
            assert_fits(screen, width, height)
            assert "SIMULATED" in screen
            # Wider screens show more columns.
            assert ("DATABASE" in screen) == (width > 80)
            assert terminal.value("alternate_on") == "1"

            for key, title in (("p", "Paths to the filers"), ("n", "Network interfaces"), ("m", "Kernel NFS mounts")):
                terminal.keys(key)
                screen = terminal.wait_for(f"view {key}", lambda s, t=title: t in s and "dNFS per instance" not in s)
                assert_fits(screen, width, height)
            terminal.keys("f")
            screen = terminal.wait_for("the findings view", lambda s: "Latency ladder" in s and "Kernel NFS" not in s)
            assert_fits(screen, width, height)
            found = doctor(record, refresh_number(screen))
            assert_doctor_matches(screen, found)
            assert "Oracle single-block read, average" in screen and found["ladder"]["oracle_read_avg_ms"] > 0
            terminal.keys("n")
            screen = terminal.wait_for("the NIC view", lambda s: "Network interfaces" in s and "Paths" not in s)
            points = diff_points(record, refresh_number(screen))
            assert_nic_matches_diff(screen, points)
            terminal.keys("q")
            assert terminal.exit_status() == 0
        # The terminal is back as it was: main screen, cursor shown, nothing printed over it.
        assert terminal.value("alternate_on") == "0"
        assert terminal.value("cursor_flag") == "1"
        assert terminal.err_file.read_text() == ""
    finally:
        terminal.kill()
    # top never touched the agent's state directory or store.
    assert not (tmp_path / "state").exists()
    assert not (tmp_path / "store").exists()


@pytest.mark.tmux
def test_ctrl_c_exits_cleanly(tmp_path, inputs):
    config, _, _ = inputs
    terminal = Terminal(tmp_path, 80, 24)
    try:
        terminal.start(["--config", config, "top", "--interval", "1"], env="TERM=xterm")
        terminal.wait_for("the first refresh", lambda s: refresh_number(s) >= 1)
        terminal.keys("C-c")
        assert terminal.exit_status() == 130
        assert terminal.value("alternate_on") == "0"
        assert terminal.err_file.read_text() == ""
    finally:
        terminal.kill()


@pytest.mark.tmux
@pytest.mark.parametrize(
    "how, status",
    [
        # The pane goes: the tty answers EIO (and the kernel may send SIGHUP too).
        ("kill-pane", 129),
        # The SSH session drops: SIGHUP.
        ("SIGHUP", 129),
        ("SIGTERM", 143),
    ],
)
def test_lost_terminal_or_sigterm_exits_cleanly(tmp_path, inputs, how, status):
    config, _, _ = inputs
    terminal = Terminal(tmp_path, 80, 24)
    try:
        terminal.start(["--config", config, "top", "--interval", "1"], env="TERM=xterm")
        terminal.wait_for("the first refresh", lambda s: refresh_number(s) >= 1)
        if how == "kill-pane":
            terminal.tmux("kill-pane")
        else:
            shell = terminal.value("pane_pid")
            (top_pid,) = open(f"/proc/{shell}/task/{shell}/children").read().split()
            os.kill(int(top_pid), getattr(signal, how))
        # 128 + the signal, no traceback.
        assert terminal.exit_status() == status
        assert "Traceback" not in terminal.err_file.read_text()
    finally:
        terminal.kill()


@pytest.mark.tmux
@pytest.mark.parametrize("term, no_color, coloured", [("xterm", "", True), ("xterm", "1", False), ("vt100", "", False)])
def test_colour_only_when_the_terminal_has_it(tmp_path, inputs, term, no_color, coloured):
    config, _, _ = inputs
    terminal = Terminal(tmp_path, 80, 24)
    try:
        env = f"TERM={term}" + (f" NO_COLOR={no_color}" if no_color else "")
        terminal.start(["--config", config, "top", "--interval", "1"], env=env)
        terminal.wait_for("the first refresh", lambda s: refresh_number(s) >= 1 and "simdb1" in s)
        assert bool(COLOUR.search(terminal.screen(escapes=True))) == coloured
        assert_fits(terminal.screen(), 80, 24)
        terminal.keys("m")
        terminal.wait_for("the mounts view", lambda s: "Kernel NFS mounts" in s and "dNFS per" not in s)
        terminal.keys("q")
        assert terminal.exit_status() == 0
        assert terminal.err_file.read_text() == ""
    finally:
        terminal.kill()


def test_batch_prints_plain_text_blocks_that_match_diff(tmp_path, inputs):
    config, record, net_dev = inputs
    with NetDevFeed(net_dev):
        result = subprocess.run(
            [*DNFSMON, "--config", str(config), "top", "--batch", "2", "--interval", "0.5", "--record", str(record)],
            capture_output=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
    assert result.returncode == 0, result.stderr
    assert b"\x1b" not in result.stdout
    text = result.stdout.decode()
    blocks = text.split("\n\ndnfsmon top - ")
    assert len(blocks) == 2
    for number, block in enumerate(blocks, start=1):
        assert refresh_number(block) == number
        points = diff_points(record, number)
        assert_instances_match_diff(block, points)
        assert_nic_matches_diff(block, points)
        assert_doctor_matches(block, doctor(record, number))
    # Every view's table, every column, in each block.
    titles = (
        "dNFS per instance",
        "Network interfaces",
        "Paths to the filers",
        "Kernel NFS mounts",
        "Findings",
        "Latency",
    )
    for title in titles:
        assert text.count(title) == 2
    assert "DATABASE" in text and "keys:" not in text
    assert not (tmp_path / "state").exists()


def test_once_is_one_block(tmp_path, inputs):
    config, _, _ = inputs
    result = subprocess.run(
        [*DNFSMON, "top", "--once", "--interval", "0.2", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("dnfsmon top - ") == 1
    assert refresh_number(result.stdout) == 1


def test_without_a_terminal_says_so(tmp_path, inputs):
    config, _, _ = inputs
    result = subprocess.run(
        [*DNFSMON, "--config", str(config), "top"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()  # one timestamped line, as every dnfsmon error
    assert line.endswith(" ERROR: dnfsmon top needs a terminal: use --once or --batch N for plain text"), line


def test_paths_join_dnfs_channels_with_filer_tcp():
    """The filer case's TCP series appear on their paths with diff's figures."""
    _, outcome = diff_captures(os.path.join(CASES, "filer", "old"), os.path.join(CASES, "filer", "new"))
    table = top.paths_table(outcome.points)
    by_filer = {r["filer"]: r for r in table.rows}
    for p in outcome.points:
        if p.measurement == "dnfsmon_filer_tcp":
            shown = by_filer[top.tag(p, "server")]
            assert shown["srtt_avg_ms"] == p.fields["srtt_avg_ms"]
            assert shown["retrans_pct"] == p.fields.get("retrans_pct")
            assert shown["interface"] == top.tag(p, "interface")
    # Worst first: the path that retransmits leads.
    assert [r["filer"] for r in table.rows] == ["10.0.0.5", "10.0.0.6"]


def test_mounts_show_the_slowest_operation_first():
    _, outcome = diff_captures(os.path.join(CASES, "nfs", "old"), os.path.join(CASES, "nfs", "new"))
    rows = top.mounts_table(outcome.points).rows
    assert rows
    assert {r["op"] for r in rows} <= {"READ", "WRITE"}
    exe = [r["avg_exe_ms"] for r in rows if r["avg_exe_ms"] is not None]
    assert exe == sorted(exe, reverse=True)
    lines = top.screen_lines(top.Frame(1, outcome.points), "h", 5, top.VIEW_BY_KEY["m"], 80, 24)
    assert len(lines) <= 24 and all(len(text) <= 80 for text, _ in lines)


def test_text_is_made_printable():
    """A mount point with an escape character cannot drive the terminal."""
    assert top.printable("/mnt/\x1b[2Jx") == "/mnt/?[2Jx"


def test_histogram_quantile():
    # Buckets [0.5, 1), [1, 2), [2, 4) with 10, 80, 10 waits/s: p95 is 95 of
    # 100, 5 into the last bucket's 10: 2 + 2 * 0.5 = 3.
    assert rates.histogram_quantile([(1.0, 10.0), (2.0, 80.0), (4.0, 10.0)], 0.95) == 3.0
    assert rates.histogram_quantile([(1.0, 10.0), (2.0, 80.0), (4.0, 10.0)], 0.5) == pytest.approx(1.5)
    assert rates.histogram_quantile([(1.0, 0.0)], 0.95) is None
    # Two RAC instances' histograms: one bucket per bound, counts added (the whole 1024 µs bucket
    # [512, 1024) holds the 95th percentile, not its second instance's half).
    two = [(512.0, 50.0), (1024.0, 50.0), (512.0, 50.0), (1024.0, 50.0)]
    assert rates.histogram_quantile(two, 0.95) == rates.histogram_quantile([(512.0, 100.0), (1024.0, 100.0)], 0.95)
    assert rates.histogram_quantile(two, 0.95) == 512 + 512 * 0.9


def test_once_names_malformed_input_and_failed_sources(tmp_path, inputs):
    """A malformed /proc/net/dev line is skipped and named; a source that cannot read says why (exit 3)."""
    config, _, net_dev = inputs
    with open(net_dev, "a") as f:
        f.write("  bad0: not numbers\n")
    os.makedirs(os.path.join(os.path.dirname(net_dev), "rpc"))
    with open(os.path.join(os.path.dirname(net_dev), "rpc", "nfs"), "w") as f:
        f.write("net 0 0 0 0\n")  # no 'rpc' line
    config.write_text(config.read_text().replace('sources = ["nic"]', 'sources = ["nic", "rpc"]'))
    result = subprocess.run(
        [*DNFSMON, "top", "--once", "--interval", "0.2", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 3, result.stderr
    assert "malformed input part(s) skipped, first: proc/net/dev:" in result.stdout
    assert "bad0" in result.stdout
    assert "source rpc failed: proc/net/rpc/nfs: no 'rpc' line" in result.stdout


@pytest.mark.tmux
def test_unknown_terminal_type_is_one_line(tmp_path, inputs):
    config, _, _ = inputs
    terminal = Terminal(tmp_path, 80, 24)
    try:
        terminal.start(["--config", config, "top"], env="TERM=no-such-terminal")
        assert terminal.exit_status() == 2
        (line,) = terminal.err_file.read_text().splitlines()
        assert " ERROR: dnfsmon top cannot drive the terminal TERM='no-such-terminal'" in line
        assert "TERM=vt100" in line and "--once" in line
    finally:
        terminal.kill()


def test_tables_share_the_screen():
    # Tables needing less than a fair share get it; the others split the rest.
    assert top.share_lines([7, 11, 3], 15) == [6, 6, 3]
    assert top.share_lines([4, 4], 20) == [4, 4]
    assert top.share_lines([10, 10], 5) == [2, 2]


@pytest.mark.parametrize("case", ["nic-saturated", "dnfs-path-down", "healthy"])
def test_findings_are_the_doctors(case):
    """The doctor's golden cases: top's findings and verdict are the doctor's, critical first."""
    directory = os.path.join(os.path.dirname(__file__), "cases", "doctor", case)
    with open(os.path.join(directory, "expected.json")) as f:
        expected = json.load(f)
    _, outcome = diff_captures(os.path.join(directory, "old"), os.path.join(directory, "new"))
    frame = top.Frame(1, outcome.points, diagnosis=diagnosis.diagnose(outcome.points, "h"))
    rows = top.findings_table(frame.diagnosis).rows
    assert sorted(r["id"] for r in rows) == sorted(f["id"] for f in expected["findings"])
    severities = [r["severity"] for r in rows]
    assert severities == sorted(severities, key=lambda s: s != "CRITICAL")
    lines = [text for text, _ in top.screen_lines(frame, "h", 5, top.VIEW_BY_KEY["f"], 80, 24)]
    assert len(lines) <= 24 and all(len(line) <= 80 for line in lines)
    verdict = next(line for line in lines if line.startswith("Verdict: "))
    if rows:
        assert verdict.startswith(f"Verdict: {rows[0]['severity']} {rows[0]['id']} [{rows[0]['layer']}]")
    else:
        assert verdict == "Verdict: healthy, no rule fired"


def test_the_loopback_is_never_ranked_as_the_busiest_nic():
    """On a quiet host `lo` carried the most (the agent's own InfluxDB or listener traffic): "NIC lo speed unknown"."""
    from dnfsmon.points import Point

    def nic(name, rx_kib_per_s, util_pct=None):
        fields = {"rx_kib_per_s": rx_kib_per_s, "tx_kib_per_s": rx_kib_per_s, "saturation_per_s": 0.0}
        if util_pct is not None:
            fields["util_pct"] = util_pct
        return Point("dnfsmon_nic", (("host", "h"), ("interface", name)), fields, 0)

    points = [nic("lo", 500.0), nic("eth0", 2.0), nic("eth1", 1.0)]  # a VM: no link speed, so no %Util
    assert [row["interface"] for row in top.nics_table(points).rows] == ["eth0", "eth1", "lo"]
    summary = top.layers_summary(points)
    assert summary.startswith("Host: NIC eth0 speed unknown"), summary
    assert not top.layers_summary([nic("lo", 500.0)]).startswith("Host: NIC")
