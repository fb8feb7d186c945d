"""NIC source: /proc/net/dev parsing, nicstat formulas, and nicstat itself as the reference."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dnfsmon import rates
from dnfsmon.sources import nic
from dnfsmon.sources.base import HostInputs, ParseError, Raw

# A real /proc/net/dev, committed so that a failing fuzz example replays anywhere (tests/fixtures/SOURCES.md).
NET_DEV_FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "proc", "net", "dev")

HEADER = (
    "Inter-|   Receive                                                |  Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"
)


def net_dev(*lines):
    return HEADER + "".join(line + "\n" for line in lines)


def counters(rx_bytes=0, rx_packets=0, tx_bytes=0, tx_packets=0, errs=(0,) * 8):
    """The 16 counters of one /proc/net/dev line; errs are the eight error/drop counters named below."""
    rx_errs, rx_drop, rx_fifo, tx_errs, tx_drop, tx_fifo, tx_colls, tx_carrier = errs
    values = [
        rx_bytes,
        rx_packets,
        rx_errs,
        rx_drop,
        rx_fifo,
        0,
        0,
        0,
        tx_bytes,
        tx_packets,
        tx_errs,
        tx_drop,
        tx_fifo,
        tx_colls,
        tx_carrier,
        0,
    ]
    return " ".join(str(v) for v in values)


def test_parses_this_machines_live_file():
    text = open("/proc/net/dev").read()
    found, problems = nic.parse_net_dev(text)
    assert problems == []
    assert "lo" in found
    assert set(found["lo"]) == set(nic.NET_DEV_COUNTERS)


@pytest.mark.parametrize(
    "case, text, line_no",
    [
        ("too_few_counters", net_dev("  eth0: 1 2 3", "    lo: " + counters(5, 1, 5, 1)), 3),
        ("non_numeric", net_dev("  eth0: " + counters().replace("0", "x", 1), "    lo: " + counters(5, 1, 5, 1)), 3),
        ("negative", net_dev("    lo: " + counters(5, 1, 5, 1), "  eth0: -1" + counters()[1:]), 4),
        ("no_colon", net_dev("    lo: " + counters(5, 1, 5, 1), "eth0 " + counters()), 4),
    ],
)
def test_malformed_interface_line_is_reported_and_others_kept(case, text, line_no):
    found, problems = nic.parse_net_dev(text)
    assert list(found) == ["lo"], case
    assert len(problems) == 1
    assert problems[0].line_no == line_no
    assert f"proc/net/dev:{line_no}" in str(problems[0])


@pytest.mark.parametrize(
    "text",
    ["", "lo: 1 2 3\n", HEADER.replace("colls carrier ", ""), "garbage\nmore garbage\n"],
)
def test_bad_header_raises_naming_the_file(text):
    with pytest.raises(ParseError, match="proc/net/dev"):
        nic.parse_net_dev(text)


def test_interface_names_with_colons_and_long_names():
    found, problems = nic.parse_net_dev(
        net_dev("veth1234567890ab:" + counters(1, 1, 1, 1), " a:b: " + counters(2, 2, 2, 2))
    )
    assert problems == []
    assert found["veth1234567890ab"]["rx_bytes"] == 1
    assert found["a:b"]["rx_bytes"] == 2


def raw_pair(old_counters, new_counters, dt=2.0, speed="1000", duplex="full", mtu="9000"):
    def raw(text, t):
        files = {
            nic.NET_DEV: net_dev("  eth0: " + text),
            "sys/class/net/eth0/speed": speed,
            "sys/class/net/eth0/duplex": duplex,
            "sys/class/net/eth0/mtu": mtu,
            "proc/sys/kernel/random/boot_id": "boot-1\n",
        }
        return Raw(files=files, time=t, wall_time=1_700_000_000 + t)

    (old,), _ = nic.samples(raw(old_counters, 100.0), "h")
    (new,), _ = nic.samples(raw(new_counters, 100.0 + dt), "h")
    return rates.diff(old, new)


def test_fields_follow_nicstat_formulas():
    interval = raw_pair(
        counters(0, 0, 0, 0),
        counters(
            rx_bytes=2_048_000, rx_packets=1000, tx_bytes=1_024_000, tx_packets=4000, errs=(1, 2, 3, 4, 5, 6, 7, 8)
        ),
        dt=2.0,
    )
    f = nic.fields(interval)
    assert f["rx_kib_per_s"] == 1000.0  # 2,048,000 B / 2 s / 1024
    assert f["tx_kib_per_s"] == 500.0
    assert f["rx_packets_per_s"] == 500.0
    assert f["tx_packets_per_s"] == 2000.0
    assert f["rx_avg_packet_bytes"] == 2048.0
    assert f["tx_avg_packet_bytes"] == 256.0
    # Full duplex: max(rx, tx) = 1,024,000 B/s = 8.192 Mbit/s of 1000 Mbit/s.
    assert f["util_pct"] == pytest.approx(0.8192)
    # Sat = rx errs + rx drop + tx drop + tx fifo + tx colls + tx carrier = 1+2+5+6+7+8 per 2 s.
    assert f["saturation_per_s"] == 14.5
    assert f["rx_errors_per_s"] == 0.5 and f["tx_errors_per_s"] == 2.0
    assert f["rx_drops_per_s"] == 1.0 and f["tx_drops_per_s"] == 2.5
    assert (f["speed_mbit"], f["full_duplex"], f["mtu_bytes"]) == (1000, True, 9000)


def test_half_duplex_adds_both_directions_and_util_is_capped():
    f = nic.fields(
        raw_pair(counters(), counters(rx_bytes=1_000_000, tx_bytes=1_000_000), dt=1.0, speed="10", duplex="half")
    )
    assert f["util_pct"] == 100.0  # 16 Mbit/s on a 10 Mbit/s half-duplex link, capped
    f = nic.fields(
        raw_pair(counters(), counters(rx_bytes=250_000, tx_bytes=125_000), dt=1.0, speed="10", duplex="half")
    )
    assert f["util_pct"] == pytest.approx(30.0)  # (2 + 1) Mbit/s of 10


@pytest.mark.parametrize("speed", [None, "-1", "", "unknown\n", "0"])
def test_unknown_speed_gives_no_utilisation_rather_than_zero(speed):
    f = nic.fields(raw_pair(counters(), counters(rx_bytes=1000, rx_packets=1), speed=speed))
    assert "util_pct" not in f and "speed_mbit" not in f
    assert f["rx_kib_per_s"] > 0


def test_no_packets_means_no_average_size():
    f = nic.fields(raw_pair(counters(), counters()))
    assert "rx_avg_packet_bytes" not in f and "tx_avg_packet_bytes" not in f
    assert f["rx_packets_per_s"] == 0.0


def test_reboot_rebaselines_through_the_boot_id():
    def raw(boot, value, t):
        return Raw(
            {nic.NET_DEV: net_dev("lo: " + counters(value, 1, value, 1)), "proc/sys/kernel/random/boot_id": boot}, t, t
        )

    (old,), _ = nic.samples(raw("a", 1000, 50.0), "h")
    (new,), _ = nic.samples(raw("b", 5000, 60.0), "h")
    result = rates.diff(old, new)
    assert isinstance(result, rates.Skip) and "identity changed" in result.reason


# --- the same run measured by nicstat (Debian package nicstat) ---


def paced_loopback_traffic(seconds: float, chunk: int = 16384, period: float = 0.004):
    """Send `chunk` bytes every `period` s over a loopback TCP connection; bounded in time."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname())
    peer, _ = server.accept()
    stop = time.monotonic() + seconds

    def receive():
        while peer.recv(1 << 20):
            pass

    def send():
        payload = b"x" * chunk
        next_at = time.monotonic()
        while time.monotonic() < stop:
            client.sendall(payload)
            next_at += period
            time.sleep(max(0.0, next_at - time.monotonic()))
        client.close()

    threads = [threading.Thread(target=receive, daemon=True), threading.Thread(target=send, daemon=True)]
    for t in threads:
        t.start()
    return threads, (server, peer)


@pytest.mark.slow
@pytest.mark.system
def test_rates_agree_with_nicstat_over_the_same_intervals():
    threads, sockets = paced_loopback_traffic(seconds=9.0)
    time.sleep(0.5)  # let the pace settle before the first interval starts
    nicstat = subprocess.Popen(["nicstat", "-p", "-i", "lo", "2", "4"], stdout=subprocess.PIPE, text=True)
    ours, theirs = [], []
    for line in nicstat.stdout:
        # Our reading right after nicstat printed: the same interval boundaries.
        ours.append(loopback_sample(nic.read(HostInputs())))
        theirs.append(line.strip().split(":"))
    assert nicstat.wait(timeout=30) == 0
    for t in threads:
        t.join(timeout=15)
    for s in sockets:
        s.close()
    assert len(theirs) == 4
    # nicstat's first line is the average since boot; lines 2-4 are intervals.
    for previous, current, columns in zip(ours, ours[1:], theirs[1:]):
        fields = nic.fields(rates.diff(previous, current))
        _, interface, rkb, wkb, rpk, wpk, _, _ = columns
        assert interface == "lo"
        for name, reference in (
            ("rx_kib_per_s", rkb),
            ("tx_kib_per_s", wkb),
            ("rx_packets_per_s", rpk),
            ("tx_packets_per_s", wpk),
        ):
            assert float(reference) > 100 or name.endswith("packets_per_s"), "traffic did not flow"
            assert fields[name] == pytest.approx(float(reference), rel=0.02), name


def loopback_sample(raw):
    found, _ = nic.samples(raw, "h")
    return next(s for s in found if dict(s.key)["interface"] == "lo")


# --- fuzzing: mutated real files never raise anything but ParseError ---


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutated_net_dev_gives_only_documented_errors(data):
    lines = open(NET_DEV_FIXTURE).read().splitlines()
    for _ in range(data.draw(st.integers(min_value=1, max_value=6))):
        i = data.draw(st.integers(min_value=0, max_value=len(lines) - 1))
        kind = data.draw(st.sampled_from(["delete", "garble", "truncate", "dup"]))
        if kind == "delete" and len(lines) > 1:
            del lines[i]
        elif kind == "garble":
            words = lines[i].split(" ")
            words[data.draw(st.integers(min_value=0, max_value=len(words) - 1))] = data.draw(st.text(max_size=8))
            lines[i] = " ".join(words)
        elif kind == "truncate":
            lines[i] = lines[i][: data.draw(st.integers(min_value=0, max_value=len(lines[i])))]
        else:
            lines.insert(i, lines[i])
    raw = Raw({nic.NET_DEV: "\n".join(lines)}, 1.0, 1.0)
    try:
        _found, problems = nic.samples(raw, "h")
    except ParseError:
        return
    assert all(isinstance(p, ParseError) for p in problems)
