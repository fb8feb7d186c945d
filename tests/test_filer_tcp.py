"""filer_tcp source: live tcp_info over loopback with known truth, churn, malformed input."""

from __future__ import annotations

import json
import math
import socket
import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dnfsmon import rates
from dnfsmon.sources import filer_tcp
from dnfsmon.sources.base import HostInputs, ParseError, Raw


class LoopbackFiler:
    """A listener on 127.0.0.1 standing in for a filer; the test chooses every byte sent."""

    def __init__(self):
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.port = self.server.getsockname()[1]
        self.clients, self.peers = [], []

    def connect(self):
        client = socket.create_connection(("127.0.0.1", self.port))
        peer, _ = self.server.accept()
        self.clients.append(client)
        self.peers.append(peer)
        return client, peer

    def close(self):
        for s in self.clients + self.peers + [self.server]:
            s.close()


def drain(peer, count):
    got = 0
    while got < count:
        got += len(peer.recv(1 << 20))


def live_sample(port):
    raw = filer_tcp.read(HostInputs(nfs_ports=(port,)))
    found, problems = filer_tcp.samples(raw, "h")
    assert problems == []
    return found


@pytest.fixture
def filer():
    f = LoopbackFiler()
    yield f
    f.close()


def test_bytes_to_and_from_the_filer_are_exact(filer):
    pairs = [filer.connect() for _ in range(3)]
    before = live_sample(filer.port)
    assert len(before) == 3  # only our client sockets: remote port = the filer's
    sent = [100_000, 250_000, 1_000_000]
    received = [4096, 0, 65536]
    for (client, peer), tx, rx in zip(pairs, sent, received):
        threading.Thread(target=drain, args=(peer, tx), daemon=True).start()
        client.sendall(b"w" * tx)
        if rx:
            peer.sendall(b"r" * rx)
            drain(client, rx)
    time.sleep(0.3)  # let the last ACKs arrive
    after = live_sample(filer.port)
    result = rates.diff_all({s.state_key: s for s in before}, after)
    assert len(result.intervals) == 3
    (point,) = filer_tcp.aggregate(result, after)
    tags = dict(point.tags)
    assert tags == {
        "host": "h",
        "server": "127.0.0.1",
        "server_port": str(filer.port),
        "local_address": "127.0.0.1",
        "interface": "lo",
    }
    dt = result.intervals[0].dt
    assert point.fields["tx_kib_per_s"] * 1024 * dt == pytest.approx(sum(sent), rel=1e-9)
    assert point.fields["rx_kib_per_s"] * 1024 * dt == pytest.approx(sum(received), rel=1e-9)
    assert point.fields["connections"] == 3
    assert point.fields["srtt_avg_ms"] > 0 and point.fields["srtt_max_ms"] >= point.fields["srtt_avg_ms"]
    # Loopback can retransmit too (tail loss probes count): check the arithmetic, not zero.
    assert point.fields["retrans_pct"] == pytest.approx(
        100 * point.fields["retrans_segs_per_s"] / point.fields["segs_out_per_s"]
    )
    assert point.fields["unacked_segments"] == 0


def test_connections_that_come_and_go_add_nothing_doubtful(filer):
    keep, _ = filer.connect()
    gone, _ = filer.connect()
    before = live_sample(filer.port)
    gone.close()
    newcomer, newcomer_peer = filer.connect()
    threading.Thread(target=drain, args=(newcomer_peer, 500_000), daemon=True).start()
    newcomer.sendall(b"n" * 500_000)  # a baseline this time: must not count
    keep_peer = filer.peers[0]
    threading.Thread(target=drain, args=(keep_peer, 10_000), daemon=True).start()
    keep.sendall(b"k" * 10_000)
    time.sleep(0.3)
    after = live_sample(filer.port)
    result = rates.diff_all({s.state_key: s for s in before}, after)
    (point,) = filer_tcp.aggregate(result, after)
    assert point.fields["tx_kib_per_s"] * 1024 * result.intervals[0].dt == pytest.approx(10_000, rel=1e-9)
    assert point.fields["connections"] == 2  # keep + newcomer are established now


def raw_of(data, t=10.0, boot="b"):
    return Raw({filer_tcp.SOCKETS: json.dumps(data), "proc/sys/kernel/random/boot_id": boot}, t, 1_700_000_000 + t)


def socket_entry(cookie, sport=871, **info):
    base = {
        "tcpi_rtt": 500,
        "tcpi_rttvar": 100,
        "tcpi_min_rtt": 200,
        "tcpi_snd_cwnd": 10,
        "tcpi_snd_ssthresh": filer_tcp.INFINITE_SSTHRESH,
        "tcpi_unacked": 0,
        "tcpi_retransmits": 0,
        "tcpi_bytes_acked": 0,
        "tcpi_bytes_received": 0,
        "tcpi_segs_out": 0,
        "tcpi_segs_in": 0,
        "tcpi_total_retrans": 0,
    }
    base.update(info)
    return {
        "src": "::ffff:10.0.0.1",
        "sport": sport,
        "dst": "::ffff:10.0.0.5",
        "dport": 2049,
        "cookie": cookie,
        "tcp_info": base,
    }


def test_address_reuse_with_a_new_cookie_is_a_new_socket():
    old = raw_of({"sockets": [socket_entry(1, tcpi_bytes_acked=10**9)], "interfaces": {"10.0.0.1": "eth1"}}, t=0.0)
    new = raw_of({"sockets": [socket_entry(2, tcpi_bytes_acked=5)], "interfaces": {"10.0.0.1": "eth1"}}, t=10.0)
    (a,), _ = filer_tcp.samples(old, "h")
    (b,), _ = filer_tcp.samples(new, "h")
    result = rates.diff_all({a.state_key: a}, [b])
    assert result.intervals == [] and "identity changed" in result.skips[0].reason
    assert filer_tcp.aggregate(result, [b]) == []  # nothing but new sockets: no point


def test_ipv4_mapped_addresses_and_interface_lookup():
    (sample,), _ = filer_tcp.samples(raw_of({"sockets": [socket_entry(1)], "interfaces": {"10.0.0.1": "eth1"}}), "h")
    assert dict(sample.key)["server"] == "10.0.0.5" and dict(sample.key)["local_address"] == "10.0.0.1"
    assert filer_tcp.group_of(sample)[-1] == ("interface", "eth1")


@pytest.mark.parametrize("text", ["", "[]", '{"sockets": {}}', '{"sockets": [], "interfaces": []}', "not json"])
def test_malformed_document_names_the_input(text):
    with pytest.raises(ParseError, match=r"netlink/inet_diag_tcp\.json"):
        filer_tcp.samples(Raw({filer_tcp.SOCKETS: text}, 0.0, 0.0), "h")


def test_a_malformed_socket_is_reported_and_the_others_kept():
    bad = {"src": "10.0.0.1", "tcp_info": {}}
    found, problems = filer_tcp.samples(raw_of({"sockets": [bad, socket_entry(7)], "interfaces": {}}), "h")
    assert len(found) == 1 and "socket 1 lacks" in str(problems[0])


def test_infinite_ssthresh_is_not_a_value():
    old = raw_of({"sockets": [socket_entry(1)], "interfaces": {}}, t=0.0)
    new = raw_of({"sockets": [socket_entry(1, tcpi_segs_out=10)], "interfaces": {}}, t=1.0)
    (a,), _ = filer_tcp.samples(old, "h")
    (b,), _ = filer_tcp.samples(new, "h")
    (point,) = filer_tcp.aggregate(rates.diff_all({a.state_key: a}, [b]), [b])
    assert "ssthresh_min_segments" not in point.fields
    assert dict(point.tags)["interface"] == ""


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


@pytest.mark.slow
@given(
    st.one_of(
        json_values,
        st.fixed_dictionaries(
            {
                "sockets": st.lists(
                    st.dictionaries(
                        st.sampled_from(["src", "sport", "dst", "dport", "cookie", "tcp_info"]), json_values
                    )
                ),
                "interfaces": st.dictionaries(st.text(max_size=5), json_values),
            }
        ),
    )
)
def test_arbitrary_json_gives_only_documented_errors(document):
    try:
        found, problems = filer_tcp.samples(Raw({filer_tcp.SOCKETS: json.dumps(document)}, 0.0, 0.0), "h")
    except ParseError as error:
        assert str(error).startswith(filer_tcp.SOCKETS)  # names the file
        return
    # Whatever is accepted is counters and gauges a diff can use: integer counters, finite numbers.
    for sample in found:
        assert all(type(value) is int for value in sample.counters.values())
        assert all(not isinstance(value, float) or math.isfinite(value) for value in sample.gauges.values())
    assert all(isinstance(problem, ParseError) for problem in problems)
