"""Network interfaces with nicstat's semantics, from /proc/net/dev and /sys.

Source of truth for the counters: the kernel's dev_seq_printf_stats()
(net/core/net-procfs.c), which prints 16 counters per interface after a
two-line header. nicstat's Linux columns (nicstat.c; tests/test_nic.py
runs Debian's nicstat as the reference) over a measured interval t:
  rKB/s = Δrx_bytes/t/1024, rPk/s = Δrx_packets/t, rAvs = Δrx_bytes/Δrx_packets
  (tx likewise), %Util = max(rx, tx) bits/s * 100 / speed (full duplex) or
  (rx + tx) bits/s * 100 / speed (half duplex), capped at 100,
  Sat = Δ(rx errs + rx drop + tx drop + tx fifo + tx colls + tx carrier)/t.
psutil lacks the fifo, colls and carrier counters, so this reads
/proc/net/dev itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Callable, Optional

from .. import rates
from ..points import Point
from ..rates import DiffResult, Sample
from .base import (
    HostInputs,
    HostSource,
    Parsed,
    ParseError,
    Raw,
    boot_identity,
    is_unsigned,
    read_host_files,
)

if TYPE_CHECKING:
    from ..config import Config

NAME = "nic"
MEASUREMENT = "dnfsmon_nic"
MEASUREMENTS = (MEASUREMENT,)
NET_DEV = "proc/net/dev"

# Column order of /proc/net/dev after "iface:", per dev_seq_printf_stats().
NET_DEV_COUNTERS = (
    "rx_bytes",
    "rx_packets",
    "rx_errs",
    "rx_drop",
    "rx_fifo",
    "rx_frame",
    "rx_compressed",
    "rx_multicast",
    "tx_bytes",
    "tx_packets",
    "tx_errs",
    "tx_drop",
    "tx_fifo",
    "tx_colls",
    "tx_carrier",
    "tx_compressed",
)
# The counters nicstat adds up into Sat (nicstat.c, Linux branch).
SATURATION_COUNTERS = ("rx_errs", "rx_drop", "tx_drop", "tx_fifo", "tx_colls", "tx_carrier")


def sys_files(interface: str) -> dict[str, str]:
    """sysfs attributes read per interface, by the name they get in the sample."""
    base = f"sys/class/net/{interface}"
    return {"speed": f"{base}/speed", "duplex": f"{base}/duplex", "mtu": f"{base}/mtu"}


def parse_net_dev(text: str, path: str = NET_DEV) -> tuple[dict[str, dict[str, int]], list[ParseError]]:
    """Counters per interface. A malformed interface line is reported and skipped.

    A header that is not the documented one raises ParseError: the columns
    could not be trusted for any interface.
    """
    lines = text.splitlines()
    if len(lines) < 2 or "|" not in lines[0] or "|" not in lines[1]:
        raise ParseError(path, "missing the two-line '|' header of /proc/net/dev", 1, lines[0] if lines else "")
    _, receive, transmit = ([*lines[1].split("|"), "", ""])[:3]
    columns = receive.split() + transmit.split()
    if len(columns) != len(NET_DEV_COUNTERS):
        raise ParseError(path, f"header names {len(columns)} columns, expected {len(NET_DEV_COUNTERS)}", 2, lines[1])

    counters: dict[str, dict[str, int]] = {}
    problems: list[ParseError] = []
    for number, line in enumerate(lines[2:], start=3):
        if not line.strip():
            continue
        name, colon, values = line.rpartition(":")
        name = name.strip()
        words = values.split()
        if not colon or not name:
            problems.append(ParseError(path, "expected 'interface: counters'", number, line))
            continue
        if len(words) != len(NET_DEV_COUNTERS) or not all(is_unsigned(w) for w in words):
            problems.append(
                ParseError(path, f"expected {len(NET_DEV_COUNTERS)} unsigned counters for {name}", number, line)
            )
            continue
        counters[name] = dict(zip(NET_DEV_COUNTERS, map(int, words)))
    return counters, problems


def parse_speed_mbit(text: Optional[str]) -> Optional[int]:
    """Link speed in Mbit/s; None when unknown (file unreadable, -1, or not a number)."""
    try:
        speed = int((text or "").strip())
    except ValueError:
        return None
    return speed if speed > 0 else None


InterfaceFilter = Callable[[str], bool]


def every_interface(interface: str) -> bool:
    return True


def read(inputs: HostInputs, wanted: InterfaceFilter = every_interface) -> Raw:
    """/proc/net/dev, and the /sys files of each interface `wanted` keeps."""
    net_dev = inputs.read(NET_DEV)
    paths = [NET_DEV]
    if net_dev is not None:
        try:
            interfaces, _ = parse_net_dev(net_dev)
        except ParseError:
            interfaces = {}
        for interface in filter(wanted, interfaces):
            paths.extend(sys_files(interface).values())
    return read_host_files(inputs, paths)


def samples(raw: Raw, host: str, wanted: InterfaceFilter = every_interface) -> tuple[list[Sample], list[ParseError]]:
    counters, problems = parse_net_dev(raw.text(NET_DEV))
    result = []
    for interface, values in counters.items():
        if not wanted(interface):
            continue
        files = {name: raw.files.get(path) for name, path in sys_files(interface).items()}
        gauges: dict[str, rates.Gauge] = {}
        speed = parse_speed_mbit(files["speed"])
        if speed is not None:
            gauges["speed_mbit"] = speed
        duplex = (files["duplex"] or "").strip()
        if duplex in ("full", "half"):
            gauges["full_duplex"] = duplex == "full"
        mtu = (files["mtu"] or "").strip()
        if is_unsigned(mtu):
            gauges["mtu_bytes"] = int(mtu)
        result.append(
            Sample(
                measurement=MEASUREMENT,
                key=(("host", host), ("interface", interface)),
                time=raw.time,
                wall_time=raw.wall_time,
                counters=values,
                gauges=gauges,
                identity=boot_identity(raw),
            )
        )
    return result, problems


def utilisation_pct(
    rx_bytes_per_s: float, tx_bytes_per_s: float, speed_mbit: Optional[int], full_duplex: Optional[bool]
) -> Optional[float]:
    """nicstat's %Util; None (not 0) when the link speed is unknown."""
    if not speed_mbit:
        return None
    # nicstat assumes full duplex when it cannot tell.
    busy = max(rx_bytes_per_s, tx_bytes_per_s) if full_duplex is not False else rx_bytes_per_s + tx_bytes_per_s
    pct = rates.percent(busy * 8, speed_mbit * 1_000_000)
    return None if pct is None else min(100.0, pct)


def fields(interval: rates.Interval) -> dict[str, rates.Gauge]:
    d = interval.deltas
    if not all(name in d for name in NET_DEV_COUNTERS):
        return {}
    rx_bytes_per_s = rates.per_second(d["rx_bytes"], interval.dt)
    tx_bytes_per_s = rates.per_second(d["tx_bytes"], interval.dt)
    gauges = interval.current.gauges
    speed_mbit, full_duplex = gauges.get("speed_mbit"), gauges.get("full_duplex")  # int and bool when the link says
    out: dict[str, Optional[rates.Gauge]] = {
        "rx_kib_per_s": rx_bytes_per_s / 1024,
        "tx_kib_per_s": tx_bytes_per_s / 1024,
        "rx_packets_per_s": interval.rate("rx_packets"),
        "tx_packets_per_s": interval.rate("tx_packets"),
        "rx_avg_packet_bytes": rates.mean_per_event(d["rx_bytes"], d["rx_packets"]),
        "tx_avg_packet_bytes": rates.mean_per_event(d["tx_bytes"], d["tx_packets"]),
        "util_pct": utilisation_pct(
            rx_bytes_per_s,
            tx_bytes_per_s,
            speed_mbit if isinstance(speed_mbit, int) else None,
            full_duplex if isinstance(full_duplex, bool) else None,
        ),
        "saturation_per_s": rates.per_second(sum(d[name] for name in SATURATION_COUNTERS), interval.dt),
        "rx_errors_per_s": interval.rate("rx_errs"),
        "tx_errors_per_s": interval.rate("tx_errs"),
        "rx_drops_per_s": interval.rate("rx_drop"),
        "tx_drops_per_s": interval.rate("tx_drop"),
    }
    out.update(gauges)
    return {name: value for name, value in out.items() if value is not None}


class NicSource(HostSource):
    """/proc/net/dev and /sys/class/net with the [nic] interface filters."""

    name = NAME
    measurements = MEASUREMENTS

    def __init__(self, include_interfaces: Sequence[str], exclude_interfaces: Sequence[str]):
        self.include_interfaces = tuple(include_interfaces)
        self.exclude_interfaces = tuple(exclude_interfaces)

    def wanted(self, interface: str) -> bool:
        """Shell-style globs (fnmatch) on the interface name: included and not excluded."""
        return any(fnmatchcase(interface, g) for g in self.include_interfaces) and not any(
            fnmatchcase(interface, g) for g in self.exclude_interfaces
        )

    def read(self, inputs: HostInputs) -> Raw:
        return read(inputs, self.wanted)

    def parse(self, raw: Raw, host: str) -> Parsed:
        found, problems = samples(raw, host, self.wanted)
        return Parsed(found, problems)

    def publish(self, result: DiffResult, current: list[Sample]) -> list[Point]:
        return rates.per_key_points(result, fields)


def build(config: Config) -> NicSource:
    """The source as [nic] configures it (the options and their defaults: dnfsmon.config)."""
    return NicSource(**config.sources[NAME])
