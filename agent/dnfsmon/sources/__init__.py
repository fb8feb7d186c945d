"""The registry of sources, by name.

The contract every source keeps is in dnfsmon.sources.base; a new source is
a module here that ends with its SOURCE (HostSource for what the host target
reads), added to the registry below.
"""

from __future__ import annotations

from . import filer_tcp, mountstats, nic, oracle, pressure, routes, rpc, tcp
from .base import HostSource, Source

# Sources the host target can read; all of them, in this order, unless
# config [host] sources names fewer.
HOST_SOURCES: dict[str, HostSource] = {
    s.name: s
    for s in (nic.SOURCE, tcp.SOURCE, mountstats.SOURCE, filer_tcp.SOURCE, rpc.SOURCE, routes.SOURCE, pressure.SOURCE)
}
# Every source a capture may hold: the host's and the database's.
ALL_SOURCES: dict[str, Source] = {**HOST_SOURCES, oracle.NAME: oracle.SOURCE}
