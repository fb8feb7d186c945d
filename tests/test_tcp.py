"""TCP source: /proc/net/snmp parsing and retransmit percentage."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dnfsmon import rates
from dnfsmon.sources import tcp
from dnfsmon.sources.base import ParseError, Raw

# A real /proc/net/snmp, committed so that a failing fuzz example replays anywhere (tests/fixtures/SOURCES.md).
SNMP_FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "proc", "net", "snmp")

NAMES = "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors"


def snmp(values):
    return f"Ip: Forwarding DefaultTTL\nIp: 2 64\n{NAMES}\nTcp: {values}\nUdp: InDatagrams\nUdp: 31\n"


def sample(values, t):
    raw = Raw({tcp.NET_SNMP: snmp(values), "proc/sys/kernel/random/boot_id": "b\n"}, t, 1_700_000_000 + t)
    (s,), problems = tcp.samples(raw, "h")
    assert problems == []
    return s


def test_parses_this_machines_live_file():
    tables = tcp.parse_snmp(open("/proc/net/snmp").read())
    assert tables["Tcp"]["MaxConn"] == -1  # signed, as the kernel prints it
    assert "OutSegs" in tables["Tcp"]


def test_retransmit_percentage_and_rates():
    old = sample("1 200 120000 -1 10 2 0 0 3 1000 2000 10 0 0 0", 100.0)
    new = sample("1 200 120000 -1 14 2 1 0 5 3000 6000 30 2 4 0", 104.0)
    f = tcp.fields(rates.diff(old, new))
    assert f["out_segs_per_s"] == 1000.0
    assert f["in_segs_per_s"] == 500.0
    assert f["retrans_segs_per_s"] == 5.0
    assert f["retrans_pct"] == 0.5  # 20 of 4000 segments
    assert f["active_opens_per_s"] == 1.0
    assert f["attempt_fails_per_s"] == 0.25
    assert f["in_errs_per_s"] == 0.5 and f["out_rsts_per_s"] == 1.0
    assert f["established"] == 5


def test_nothing_sent_means_no_retransmit_percentage():
    old = sample("1 200 120000 -1 10 2 0 0 3 1000 2000 10 0 0 0", 100.0)
    new = sample("1 200 120000 -1 10 2 0 0 3 1000 2000 10 0 0 0", 101.0)
    f = tcp.fields(rates.diff(old, new))
    assert "retrans_pct" not in f and f["out_segs_per_s"] == 0.0


@pytest.mark.parametrize(
    "text, message",
    [
        (f"{NAMES}\n", "names line without a values line"),
        (f"{NAMES}\nUdp: 1 2\n", "values line for 'Udp' follows names line for 'Tcp'"),
        (f"{NAMES}\nTcp: 1 2 3\n", "15 names but 3 values"),
        (f"{NAMES}\nTcp: 1 200 120000 -1 x 2 0 0 3 1000 2000 10 0 0 0\n", "non-integer value"),
    ],
)
def test_malformed_snmp_names_file_and_line(text, message):
    with pytest.raises(ParseError, match=message) as error:
        tcp.parse_snmp(text)
    assert str(error.value).startswith("proc/net/snmp:")


def test_missing_tcp_columns_are_named():
    raw = Raw({tcp.NET_SNMP: "Tcp: InSegs OutSegs\nTcp: 1 2\n"}, 0.0, 0.0)
    with pytest.raises(ParseError, match="lack ActiveOpens"):
        tcp.samples(raw, "h")


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(min_value=0, max_value=10**4), st.text(max_size=10)), min_size=1, max_size=6))
def test_mutated_snmp_gives_only_documented_errors(edits):
    lines = open(SNMP_FIXTURE).read().splitlines()
    for position, junk in edits:
        i = position % len(lines)
        words = lines[i].split(" ")
        words[position % len(words)] = junk
        lines[i] = " ".join(words)
    try:
        tcp.samples(Raw({tcp.NET_SNMP: "\n".join(lines)}, 1.0, 1.0), "h")
    except ParseError:
        pass
