"""rpc source: /proc/net/rpc/nfs and the sunrpc slot tunables."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dnfsmon.sources import rpc
from dnfsmon.sources.base import ParseError, Raw


def test_counters_by_name_and_per_op_lines_ignored():
    text = "net 10 0 10 2\nrpc 500 3 1\nproc3 22 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21\n"
    assert rpc.parse_rpc_nfs(text) == {
        "net_packets": 10,
        "net_udp": 0,
        "net_tcp": 10,
        "net_tcpconn": 2,
        "rpc_calls": 500,
        "rpc_retrans": 3,
        "rpc_authrefresh": 1,
    }


@pytest.mark.parametrize(
    "text, line", [("rpc 1 2\n", 1), ("net 1 2 3 4\nrpc 1 x 3\n", 2), ("net 1 -2 3 4\nrpc 1 2 3\n", 1)]
)
def test_malformed_lines_are_named(text, line):
    with pytest.raises(ParseError) as error:
        rpc.parse_rpc_nfs(text)
    assert error.value.line_no == line and str(error.value).startswith(f"proc/net/rpc/nfs:{line}:")


def test_missing_rpc_line():
    with pytest.raises(ParseError, match="no 'rpc' line"):
        rpc.parse_rpc_nfs("net 1 2 3 4\n")


def test_no_kernel_nfs_client_is_not_a_failure():
    assert rpc.samples(Raw({rpc.RPC_NFS: None}, 0.0, 0.0), "h") == ([], [])


def test_counters_are_declared_32_bits_wide_and_tunables_are_gauges():
    raw = Raw({rpc.RPC_NFS: "rpc 1 2 3\n", rpc.TUNABLES["tcp_slot_table_entries"]: "128\n"}, 0.0, 0.0)
    (sample,), _ = rpc.samples(raw, "h")
    assert sample.widths["rpc_calls"] == 32
    assert sample.gauges == {"tcp_slot_table_entries": 128}


@pytest.mark.slow
@given(st.text(alphabet=st.sampled_from(list("rpcnetproc3 0123456789-x\n")), max_size=80))
def test_arbitrary_text_gives_only_documented_errors(text):
    try:
        counters = rpc.parse_rpc_nfs(text)
    except ParseError as error:
        assert str(error).startswith(rpc.RPC_NFS)  # names the file
        return
    # What is accepted is counters: non-negative integers, each read from the text.
    assert all(type(value) is int and value >= 0 and str(value) in text for value in counters.values())
