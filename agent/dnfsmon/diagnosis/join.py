"""The join of the layers: which interface carries each path to a filer, and who uses it.

A path is a (filer address, local address) pair. It is known from the dNFS
side (GV$DNFS_CHANNELS PATH and LOCAL, measurement dnfsmon_dnfs_channel)
and from the TCP side (measurement dnfsmon_filer_tcp, whose series are the
connections of one local address to one filer address). Its interface is the
one holding the local address (dnfsmon_address), else the route to the filer
(dnfsmon_route): see sources/routes.interface_for.

Who uses a path: "dnfs:INSTANCE" for each instance with a dNFS channel on it,
and "nfs:MOUNTPOINT" for each kernel NFS mount of that filer address
(dnfsmon_nfs_mount's server tag). The attribution is per (filer, local
address), not per socket: when dNFS and a kernel mount share both, the path
lists both users.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Optional

from .. import rates
from ..points import Point
from ..records import Record


def tag(point: Point, name: str) -> str:
    return dict(point.tags).get(name, "")


def of(points: Iterable[Point], measurement: str) -> list[Point]:
    return [p for p in points if p.measurement == measurement]


def number(point: Optional[Point], name: str) -> Optional[float]:
    """A numeric field of a point, None when the point or the field is absent."""
    if point is None:
        return None
    value = point.fields.get(name)
    return None if isinstance(value, (str, bool)) or value is None else float(value)


class Path(Record):
    """One path from a local address to a filer, and what uses it (a plain class: see dnfsmon.records)."""

    __slots__ = ("channels", "interface", "local_address", "nic", "server", "tcp", "users")

    def __init__(
        self,
        server: str,
        local_address: str,
        interface: str = "",
        users: Optional[list[str]] = None,
        channels: Optional[list[Point]] = None,
        tcp: Optional[Point] = None,
        nic: Optional[Point] = None,
    ):
        self.server = server
        self.local_address = local_address
        self.interface = interface
        self.users: list[str] = [] if users is None else users
        self.channels: list[Point] = [] if channels is None else channels
        self.tcp = tcp
        self.nic = nic

    @property
    def dnfs(self) -> bool:
        return any(user.startswith("dnfs:") for user in self.users)

    @property
    def kernel_nfs(self) -> bool:
        return any(user.startswith("nfs:") for user in self.users)


def paths(points: list[Point]) -> list[Path]:
    tcp_points = of(points, "dnfsmon_filer_tcp")
    channel_points = of(points, "dnfsmon_dnfs_channel")
    if not tcp_points and not channel_points:
        return []  # no path to a filer seen
    # Here, not at the top: a run whose config reads neither source never loads their modules.
    from ..sources.filer_tcp import normalise_address
    from ..sources.routes import interface_for

    addresses = {tag(p, "address"): str(p.fields.get("interface", "")) for p in of(points, "dnfsmon_address")}
    routes = [
        (tag(p, "destination"), tag(p, "interface"), int(number(p, "metric") or 0)) for p in of(points, "dnfsmon_route")
    ]
    nics = {tag(p, "interface"): p for p in of(points, "dnfsmon_nic")}
    found: dict[tuple[str, str], Path] = {}

    def path(server: str, local: str) -> Path:
        key = (normalise_address(server), normalise_address(local))
        if key not in found:
            found[key] = Path(*key)
        return found[key]

    for point in tcp_points:
        entry = path(tag(point, "server"), tag(point, "local_address"))
        entry.tcp = point
        entry.interface = tag(point, "interface")
    for point in channel_points:
        entry = path(tag(point, "path"), tag(point, "local"))
        entry.channels.append(point)
        user = f"dnfs:{tag(point, 'instance')}"
        if user not in entry.users:
            entry.users.append(user)
    mounts = of(points, "dnfsmon_nfs_mount")
    for entry in found.values():
        if not entry.interface:
            entry.interface = interface_for(entry.local_address, entry.server, addresses, routes) or ""
        entry.nic = nics.get(entry.interface)
        for mount in mounts:
            if normalise_address(tag(mount, "server")) == entry.server:
                entry.users.append(f"nfs:{tag(mount, 'mountpoint')}")
    return sorted(found.values(), key=lambda p: (p.server, p.local_address))


def share_of_interface_pct(path: Path) -> Optional[float]:
    """The path's TCP traffic (received + acknowledged KiB/s) as a share of its interface's
    traffic: how much of what the NIC carries is this path's NFS."""
    tcp = [number(path.tcp, name) for name in ("rx_kib_per_s", "tx_kib_per_s")]
    nic = [number(path.nic, name) for name in ("rx_kib_per_s", "tx_kib_per_s")]
    return rates.percent(total(tcp), total(nic))


def total(values: list[Optional[float]]) -> Optional[float]:
    """The sum of values that must all be known; None when one is not (a partial sum would mislead)."""
    known = [v for v in values if v is not None]
    return sum(known) if len(known) == len(values) else None


def describe(path: Path) -> dict:
    """A path as the doctor prints it (--format json "paths")."""
    return {
        "share_of_interface_pct": share_of_interface_pct(path),
        "server": path.server,
        "local_address": path.local_address,
        "interface": path.interface,
        "users": path.users,
        "tcp_connections": number(path.tcp, "connections"),
        "tcp_srtt_ms": number(path.tcp, "srtt_avg_ms"),
        "nic_util_pct": number(path.nic, "util_pct"),
        "mtu_bytes": number(path.nic, "mtu_bytes"),
    }


def path_name(path: Path) -> str:
    """How a path is named in findings: LOCAL -> FILER."""
    return f"{path.local_address or '?'} -> {path.server}"
