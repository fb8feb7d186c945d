"""The registry of sources, by name.

The contract every source keeps is in dnfsmon.sources.base. A source is a
module of this package, named as the source, with a function
`build(config) -> Source` that makes the source configured for one run from
its config section. A module is imported only when a config names its
source (`build`), so a run pays for the sources it reads and no other.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from ..config import Config
    from .base import Source

# Sources the host target can read; all of them, in this order, unless
# config [host] sources names fewer.
HOST_SOURCES = ("nic", "tcp", "mountstats", "filer_tcp", "rpc", "routes", "pressure")
# The database's source (read by the oracle or simulator target).
DATABASE_SOURCE = "oracle"
# Every source a capture may hold: the host's and the database's.
ALL_SOURCES = (*HOST_SOURCES, DATABASE_SOURCE)


def source_of(entry: str) -> str:
    """The source a reading's (or a capture's) entry is of: its name, or for one of several
    databases "oracle:<target>" (dnfsmon.collect.entry_name) the part before the colon."""
    return entry.split(":", 1)[0]


def build(name: str, config: Optional[Config] = None) -> Source:
    """The source `name` (or entry, see source_of) as `config` configures it (the built-in
    defaults when None); an entry of one of several targets ("oracle:<target>") as that
    target's own section configures it.

    KeyError for a name not in ALL_SOURCES.
    """
    entry, name = name, source_of(name)
    if name not in ALL_SOURCES:
        raise KeyError(name)
    if config is None:
        from ..config import parse

        config = parse({}, None)
    module = importlib.import_module(f"{__name__}.{name}")
    # "oracle:<target>": one of several databases, built from its own [[oracle]] table.
    target = entry.partition(":")[2]
    source: Source = module.build_target(config, target) if target else module.build(config)
    return source


def build_all(names: Iterable[str], config: Optional[Config] = None) -> dict[str, Source]:
    """build() of each name, in the given order."""
    return {name: build(name, config) for name in names}
