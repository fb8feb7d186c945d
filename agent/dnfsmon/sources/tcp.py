"""Host-wide TCP segments and retransmissions from /proc/net/snmp.

Source of truth: the kernel's snmp_seq_show_tcp_udp() (net/ipv4/proc.c),
which prints each protocol as a pair of lines, names then values:
    Tcp: RtoAlgorithm RtoMin ... RetransSegs InErrs OutRsts InCsumErrors
    Tcp: 1 200 ... 0 0 10 0
Retransmit % over an interval = ΔRetransSegs / ΔOutSegs * 100 (nicstat's
Linux -t columns do not compute it this way). Columns are found by
name, so kernels that add columns are read as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import rates
from ..rates import Sample
from .base import HostInputs, HostSource, ParseError, Raw, boot_identity, per_key_host_source, read_host_files

if TYPE_CHECKING:
    from ..config import Config

NAME = "tcp"
MEASUREMENT = "dnfsmon_tcp"
MEASUREMENTS = (MEASUREMENT,)
NET_SNMP = "proc/net/snmp"

# Counters this source diffs (cumulative since boot) and the gauge it keeps.
TCP_COUNTERS = (
    "ActiveOpens",
    "PassiveOpens",
    "AttemptFails",
    "EstabResets",
    "InSegs",
    "OutSegs",
    "RetransSegs",
    "InErrs",
    "OutRsts",
)
TCP_GAUGES = ("CurrEstab",)


def parse_snmp(text: str, path: str = NET_SNMP) -> dict[str, dict[str, int]]:
    """Values per protocol and column name, e.g. result["Tcp"]["OutSegs"]."""
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if len(lines) % 2:
        n, line = lines[-1]
        raise ParseError(path, "names line without a values line", n, line)
    tables: dict[str, dict[str, int]] = {}
    for (_n1, names_line), (n2, values_line) in zip(lines[0::2], lines[1::2]):
        proto, _, names_text = names_line.partition(":")
        proto2, _, values_text = values_line.partition(":")
        if proto != proto2 or not proto:
            raise ParseError(path, f"values line for {proto2!r} follows names line for {proto!r}", n2, values_line)
        names, values = names_text.split(), values_text.split()
        if len(names) != len(values):
            raise ParseError(path, f"{len(names)} names but {len(values)} values for {proto}", n2, values_line)
        try:
            tables[proto] = {name: int(value) for name, value in zip(names, values)}
        except ValueError:
            raise ParseError(path, f"non-integer value for {proto}", n2, values_line) from None
    return tables


def read(inputs: HostInputs) -> Raw:
    return read_host_files(inputs, [NET_SNMP])


def samples(raw: Raw, host: str) -> tuple[list[Sample], list[ParseError]]:
    tables = parse_snmp(raw.text(NET_SNMP))
    tcp = tables.get("Tcp")
    if tcp is None:
        raise ParseError(NET_SNMP, "no Tcp: lines")
    missing = [name for name in TCP_COUNTERS + TCP_GAUGES if name not in tcp]
    if missing:
        raise ParseError(NET_SNMP, f"Tcp: lines lack {', '.join(missing)}")
    sample = Sample(
        measurement=MEASUREMENT,
        key=(("host", host),),
        time=raw.time,
        wall_time=raw.wall_time,
        counters={name: tcp[name] for name in TCP_COUNTERS},
        gauges={"established": tcp["CurrEstab"]},
        identity=boot_identity(raw),
    )
    return [sample], []


def fields(interval: rates.Interval) -> dict[str, rates.Gauge]:
    d = interval.deltas
    out = {
        "in_segs_per_s": interval.rate("InSegs"),
        "out_segs_per_s": interval.rate("OutSegs"),
        "retrans_segs_per_s": interval.rate("RetransSegs"),
        "retrans_pct": rates.percent(d.get("RetransSegs"), d.get("OutSegs")),
        "in_errs_per_s": interval.rate("InErrs"),
        "out_rsts_per_s": interval.rate("OutRsts"),
        "active_opens_per_s": interval.rate("ActiveOpens"),
        "passive_opens_per_s": interval.rate("PassiveOpens"),
        "attempt_fails_per_s": interval.rate("AttemptFails"),
        "estab_resets_per_s": interval.rate("EstabResets"),
        "established": interval.current.gauges.get("established"),
    }
    return {name: value for name, value in out.items() if value is not None}


SOURCE = per_key_host_source(NAME, MEASUREMENTS, read, samples, fields)


def build(config: Config) -> HostSource:
    """This source has no option: the one instance serves every run."""
    return SOURCE
