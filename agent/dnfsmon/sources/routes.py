"""Routes and interface addresses: which local interface carries a connection.

The join of the layers needs, for each dNFS path (PATH, LOCAL) and each
filer TCP connection, the interface its packets leave by. The kernel picks
it from the source address when the socket is bound to one (dNFS binds to
LOCAL when oranfstab names it), else from the routing table. So this source
publishes both:

- addresses (measurement dnfsmon_address): every interface address, read
  through netlink RTM_GETADDR (dnfsmon.netlink, as filer_tcp's sockets) and
  stored as JSON in the capture file
  "netlink/addresses.json":
      {"addresses": [{"interface": "eth1", "address": "10.0.1.1", "prefix_len": 24}]}
  /proc has no list of IPv4 addresses by interface (/proc/net/fib_trie
  names prefixes, not interfaces), hence netlink; IPv6 addresses come the
  same way so there is one format for both families.
- routes (measurement dnfsmon_route): /proc/net/route (IPv4) and
  /proc/net/ipv6_route (IPv6), printed by fib_route_seq_show()
  (net/ipv4/fib_trie.c) and ipv6_route_native_seq_show()
  (net/ipv6/route.c). IPv4 fields are little-endian hex of the network-order
  address as the kernel prints them on x86 and arm64 hosts (the only byte
  order of the hosts dnfsmon runs on); IPv6 fields are 32 hex digits.
"""

from __future__ import annotations

import ipaddress
import json
from typing import TYPE_CHECKING, Optional

from .. import netlink, rates
from ..rates import Sample
from .base import HostInputs, HostSource, ParseError, Raw, boot_identity, per_key_host_source, read_host_files

if TYPE_CHECKING:
    from ..config import Config

NAME = "routes"
ADDRESS_MEASUREMENT = "dnfsmon_address"
ROUTE_MEASUREMENT = "dnfsmon_route"
MEASUREMENTS = (ADDRESS_MEASUREMENT, ROUTE_MEASUREMENT)
ADDRESSES = "netlink/addresses.json"
IPV4_ROUTES = "proc/net/route"
IPV6_ROUTES = "proc/net/ipv6_route"
# RTF_UP (include/uapi/linux/route.h): only usable routes carry traffic.
RTF_UP = 0x0001


def read_addresses() -> dict:
    """Every interface address of the host, live (netlink RTM_GETADDR)."""
    return {"addresses": netlink.addresses()}


def read(inputs: HostInputs) -> Raw:
    raw = read_host_files(inputs, [IPV4_ROUTES, IPV6_ROUTES])
    raw.files[ADDRESSES] = json.dumps(read_addresses(), sort_keys=True)
    return raw


def parse_addresses(text: str, path: str = ADDRESSES) -> tuple[list[tuple[str, str, int]], list[ParseError]]:
    """(interface, address, prefix length) of each entry; malformed entries are reported."""
    try:
        entries = json.loads(text)["addresses"]
        if not isinstance(entries, list):
            raise TypeError("addresses must be a list")
    except (ValueError, KeyError, TypeError) as error:
        raise ParseError(path, f'expected {{"addresses": [...]}}: {error}') from None
    found, problems = [], []
    for number, entry in enumerate(entries, start=1):
        try:
            interface = str(entry["interface"])
            address = ipaddress.ip_address(str(entry["address"]))
            prefix_len = int(entry["prefix_len"])
            if not 0 <= prefix_len <= address.max_prefixlen:
                raise ValueError(f"prefix length {prefix_len} out of range")
        except (KeyError, TypeError, ValueError) as error:
            problems.append(ParseError(path, f"address {number} needs interface, address and prefix_len: {error}"))
            continue
        found.append((interface, str(address), prefix_len))
    return found, problems


def _ipv4_hex(text: str) -> ipaddress.IPv4Address:
    """An address as /proc/net/route prints it: %08X of the network-order u32 on a little-endian host."""
    return ipaddress.IPv4Address(int(text, 16).to_bytes(4, "little"))


def parse_ipv4_routes(text: str, path: str = IPV4_ROUTES) -> tuple[list[dict], list[ParseError]]:
    """Usable routes of /proc/net/route: destination network, gateway, metric, interface."""
    lines = text.splitlines()
    if not lines or lines[0].split()[:3] != ["Iface", "Destination", "Gateway"]:
        raise ParseError(path, "missing the 'Iface Destination Gateway ...' header", 1, lines[0] if lines else "")
    routes, problems = [], []
    for number, line in enumerate(lines[1:], start=2):
        words = line.split()
        if not words:
            continue
        try:
            interface, destination, gateway, flags = words[0], words[1], words[2], int(words[3], 16)
            metric, mask = int(words[6]), _ipv4_hex(words[7])
            network = ipaddress.IPv4Network(f"{_ipv4_hex(destination)}/{mask}")
            via = _ipv4_hex(gateway)
        except (IndexError, ValueError) as error:
            problems.append(ParseError(path, f"expected 11 route fields: {error}", number, line))
            continue
        if flags & RTF_UP:
            routes.append({"interface": interface, "destination": str(network), "gateway": str(via), "metric": metric})
    return routes, problems


def parse_ipv6_routes(text: str, path: str = IPV6_ROUTES) -> tuple[list[dict], list[ParseError]]:
    """Usable routes of /proc/net/ipv6_route (10 fields: dest, plen, src, plen, gateway, metric, ...)."""
    routes, problems = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split()
        if not words:
            continue
        try:
            if len(words) != 10:
                raise ValueError(f"{len(words)} fields")
            destination = ipaddress.IPv6Address(bytes.fromhex(words[0]))
            network = ipaddress.IPv6Network(f"{destination}/{int(words[1], 16)}")
            via = ipaddress.IPv6Address(bytes.fromhex(words[4]))
            metric, flags = int(words[5], 16), int(words[8], 16)
        except ValueError as error:
            problems.append(ParseError(path, f"expected 10 route fields: {error}", number, line))
            continue
        # The kernel lists local and loopback routes on "lo"; they carry nothing outwards.
        if flags & RTF_UP and words[9] != "lo":
            routes.append({"interface": words[9], "destination": str(network), "gateway": str(via), "metric": metric})
    return routes, problems


def samples(raw: Raw, host: str) -> tuple[list[Sample], list[ParseError]]:
    addresses, problems = parse_addresses(raw.text(ADDRESSES))
    v4, v4_problems = parse_ipv4_routes(raw.text(IPV4_ROUTES))
    # A host without IPv6 has no /proc/net/ipv6_route: no IPv6 routes, not an error.
    v6, v6_problems = parse_ipv6_routes(raw.files.get(IPV6_ROUTES) or "")
    problems += v4_problems + v6_problems
    identity = boot_identity(raw)
    result = [
        Sample(
            ADDRESS_MEASUREMENT,
            (("host", host), ("address", address)),
            raw.time,
            raw.wall_time,
            gauges={"interface": interface, "prefix_len": prefix_len},
            identity=identity,
        )
        for interface, address, prefix_len in addresses
    ]
    for route in v4 + v6:
        key = (("host", host), ("destination", route["destination"]), ("interface", route["interface"]))
        gauges = {"gateway": route["gateway"], "metric": route["metric"]}
        result.append(Sample(ROUTE_MEASUREMENT, key, raw.time, raw.wall_time, gauges=gauges, identity=identity))
    return result, problems


def fields(interval: rates.Interval) -> dict[str, rates.Gauge]:
    return dict(interval.current.gauges)


def interface_for(
    local_address: str, remote_address: str, addresses: dict[str, str], routes: list[tuple[str, str, int]]
) -> Optional[str]:
    """The interface carrying a connection: the one holding its local address; without a
    local address (dNFS before 11.2.0.3 has no LOCAL), the longest-prefix route to the
    remote address (lowest metric among equals); else None. A local address no
    interface holds gives None: the path cannot start on this host.

    addresses: address -> interface; routes: (destination network, interface, metric).
    """
    if local_address:
        return addresses.get(local_address)
    try:
        remote = ipaddress.ip_address(remote_address)
    except ValueError:
        return None
    best: Optional[tuple[int, int, str]] = None
    for destination, interface, metric in routes:
        network = ipaddress.ip_network(destination)
        if network.version == remote.version and remote in network:
            candidate = (-network.prefixlen, metric, interface)
            best = candidate if best is None or candidate < best else best
    return None if best is None else best[2]


SOURCE = per_key_host_source(NAME, MEASUREMENTS, read, samples, fields)


def build(config: Config) -> HostSource:
    """This source has no option: the one instance serves every run."""
    return SOURCE
