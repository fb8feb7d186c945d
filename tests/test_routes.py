"""The routes source: /proc/net/route, /proc/net/ipv6_route and netlink addresses."""

from __future__ import annotations

import json

import pytest

from dnfsmon import rates
from dnfsmon.sources import routes
from dnfsmon.sources.base import HostInputs, ParseError, Raw

# /proc/net/route as fib_route_seq_show() prints it (x86: little-endian hex), eth1 on 10.0.1.0/24,
# eth2 on 10.0.2.0/24, the default route via 192.168.0.1 on eth0, and a route that is not up.
IPV4 = """Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eth0\t00000000\t0100A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0
eth1\t0001000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
eth2\t0002000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
eth3\t0003000A\t00000000\t0000\t0\t0\t0\t00FFFFFF\t0\t0\t0
"""
IPV6 = """fd000000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth1
00000000000000000000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000002 00000000 80200001       lo
"""
ADDRESSES = {
    "addresses": [
        {"interface": "eth1", "address": "10.0.1.1", "prefix_len": 24},
        {"interface": "eth2", "address": "10.0.2.1", "prefix_len": 24},
        {"interface": "eth1", "address": "fd00::1", "prefix_len": 64},
    ]
}


def raw(addresses: object = ADDRESSES, ipv4: str = IPV4, t: float = 10.0) -> Raw:
    files = {routes.IPV4_ROUTES: ipv4, routes.IPV6_ROUTES: IPV6, routes.ADDRESSES: json.dumps(addresses)}
    return Raw(files=files, time=t, wall_time=1_700_000_000 + t)


def test_ipv4_routes_decode_the_kernels_hex_and_skip_routes_not_up():
    found, problems = routes.parse_ipv4_routes(IPV4)
    assert problems == []
    assert [(r["interface"], r["destination"], r["gateway"], r["metric"]) for r in found] == [
        ("eth0", "0.0.0.0/0", "192.168.0.1", 100),
        ("eth1", "10.0.1.0/24", "0.0.0.0", 0),
        ("eth2", "10.0.2.0/24", "0.0.0.0", 0),
    ]


def test_ipv6_routes_leave_out_lo():
    found, problems = routes.parse_ipv6_routes(IPV6)
    assert problems == []
    assert [(r["interface"], r["destination"], r["metric"]) for r in found] == [("eth1", "fd00::/64", 256)]


def test_bad_lines_are_reported_with_file_and_line():
    found, problems = routes.parse_ipv4_routes(IPV4 + "eth9\tnothex\n")
    assert len(found) == 3 and len(problems) == 1
    assert str(problems[0]).startswith("proc/net/route:6:")
    with pytest.raises(ParseError, match="header"):
        routes.parse_ipv4_routes("garbage\n")
    _, problems = routes.parse_addresses(json.dumps({"addresses": [{"interface": "x", "address": "999.1.1.1"}]}))
    assert len(problems) == 1 and "address 1" in str(problems[0])


def test_samples_publish_addresses_and_routes_after_a_baseline():
    first, _ = routes.samples(raw(t=10.0), "db1")
    second, problems = routes.samples(raw(t=20.0), "db1")
    assert problems == []
    result = rates.diff_all({s.state_key: s for s in first}, second)
    published = {s.current.key: routes.fields(s) for s in result.intervals}
    assert published[(("host", "db1"), ("address", "10.0.1.1"))] == {"interface": "eth1", "prefix_len": 24}
    key = (("host", "db1"), ("destination", "0.0.0.0/0"), ("interface", "eth0"))
    assert published[key] == {"gateway": "192.168.0.1", "metric": 100}


def test_interface_for_prefers_the_local_address_then_the_longest_prefix():
    addresses = {"10.0.1.1": "eth1"}
    table = [("0.0.0.0/0", "eth0", 100), ("10.0.0.0/8", "eth3", 0), ("10.0.2.0/24", "eth2", 0)]
    assert routes.interface_for("10.0.1.1", "10.0.2.5", addresses, table) == "eth1"
    assert routes.interface_for("", "10.0.2.5", addresses, table) == "eth2"
    assert routes.interface_for("", "10.9.9.9", addresses, table) == "eth3"
    assert routes.interface_for("", "8.8.8.8", addresses, table) == "eth0"
    assert routes.interface_for("", "fd00::5", addresses, table) is None
    assert routes.interface_for("10.0.9.9", "10.0.2.5", addresses, table) is None  # not an address of this host


def test_live_read_on_this_machine_names_the_loopback():
    found, problems = routes.samples(routes.read(HostInputs()), "h")
    assert problems == []
    assert any(s.key == (("host", "h"), ("address", "127.0.0.1")) and s.gauges["interface"] == "lo" for s in found)
