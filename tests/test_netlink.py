"""dnfsmon.netlink: the kernel's replies decoded, live over loopback and recorded, against pyroute2 and iproute2."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess

import pytest

from dnfsmon import netlink
from dnfsmon.sources import filer_tcp

RECORDED = os.path.join(os.path.dirname(__file__), "fixtures", "netlink")
# Point-in-time RTT estimates move between two reads even of an idle socket (delayed ACKs).
MOVING = ("tcpi_rtt", "tcpi_rttvar", "tcpi_min_rtt")


def recorded(name: str) -> list[bytes]:
    with open(os.path.join(RECORDED, f"{name}.hex")) as f:
        return [bytes.fromhex(line) for line in f.read().split()]


def decode_dump(datagrams: list[bytes], wanted: int, decode) -> list:
    found = []
    for data in datagrams:
        for kind, _flags, payload in netlink.messages(data):
            if kind == wanted:
                found.append(decode(payload))
    return found


@pytest.fixture(scope="module")
def expected():
    with open(os.path.join(RECORDED, "expected.json")) as f:
        return json.load(f)


@pytest.mark.parametrize("family", ["inet", "inet6"])
def test_recorded_sock_diag_replies_decode_as_pyroute2_decoded_them(family, expected):
    found = decode_dump(recorded(f"sock_diag_{family}"), netlink.SOCK_DIAG_BY_FAMILY, netlink.decode_inet_diag)
    assert found == expected["sockets"][family]
    (entry,) = found
    # The recording sent 100 000 bytes on the connection (plus the SYN's sequence number).
    assert entry["tcp_info"]["tcpi_bytes_acked"] == 100_001
    assert entry["src"] == ("127.0.0.1" if family == "inet" else "::1")


def test_recorded_rtm_getaddr_reply_decodes_as_pyroute2_decoded_it(expected):
    found = decode_dump(recorded("rtm_getaddr"), netlink.RTM_NEWADDR, netlink.decode_address)
    names = {int(index): name for index, name in expected["interfaces"].items()}
    addresses = [
        {"interface": names[index], "address": address, "prefix_len": prefix_len}
        for index, address, prefix_len in found
    ]
    assert addresses == expected["addresses"]


def test_an_older_kernels_shorter_tcp_info_leaves_the_newer_fields_absent():
    (data,) = [d for d in recorded("sock_diag_inet") if len(d) > 100]
    _kind, _flags, payload = netlink.messages(data)[0]
    info = netlink.attributes(payload, netlink.INET_DIAG_MSG_SIZE)[netlink.INET_DIAG_INFO]
    # Linux 4.0's struct tcp_info ends after tcpi_max_pacing_rate: 120 bytes.
    short = netlink.decode_tcp_info(info[:120])
    assert "tcpi_bytes_acked" not in short and "tcpi_segs_out" not in short and "tcpi_min_rtt" not in short
    assert short["tcpi_snd_cwnd"] == netlink.decode_tcp_info(info)["tcpi_snd_cwnd"]


@pytest.mark.parametrize("cut", [3, 17, 40, 90])
def test_a_truncated_reply_is_a_netlink_error_not_garbage(cut):
    (data,) = [d for d in recorded("sock_diag_inet") if len(d) > 100]
    with pytest.raises(netlink.NetlinkError):
        decode_dump([data[:-cut]], netlink.SOCK_DIAG_BY_FAMILY, netlink.decode_inet_diag)


def test_a_refused_request_names_the_errno(monkeypatch):
    # struct nlmsgerr: -EPERM and the request's header, as the kernel answers a refused dump.
    error = struct.pack("=i", -1) + netlink.NLMSGHDR.pack(16, 20, 0x301, 1, 0)
    reply = netlink.NLMSGHDR.pack(netlink.NLMSGHDR.size + len(error), netlink.NLMSG_ERROR, 0, 1, 0) + error

    closed = []

    class Refusing:
        def __init__(self, *args):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *args):
            closed.append(True)
            return False

        def settimeout(self, seconds):
            assert 0 < seconds <= 10  # every read is bounded

        def bind(self, address):
            pass

        def send(self, data):
            return len(data)

        def recv(self, size):
            return reply

    monkeypatch.setattr(netlink.socket, "socket", Refusing)
    with pytest.raises(netlink.NetlinkError) as raised:
        netlink.addresses()
    assert raised.value.errno == 1 and "Operation not permitted" in str(raised.value)
    assert closed == [True]  # the socket is closed on the error too


class Loopback:
    def __init__(self, family: int, host: str):
        self.server = socket.socket(family)
        self.server.bind((host, 0))
        self.server.listen(8)
        self.port = self.server.getsockname()[1]
        self.sockets = [self.server]
        for size in (0, 4096, 70_000):
            client = socket.create_connection((host, self.port))
            peer, _ = self.server.accept()
            if size:
                client.sendall(b"x" * size)
                got = 0
                while got < size:
                    got += len(peer.recv(1 << 20))
            self.sockets += [client, peer]

    def close(self):
        for s in self.sockets:
            s.close()


def stable(entries: list[dict]) -> list[tuple]:
    return sorted(
        (
            e["src"],
            e["sport"],
            e["dst"],
            e["dport"],
            e["cookie"],
            sorted((k, v) for k, v in e["tcp_info"].items() if k not in MOVING),
        )
        for e in entries
    )


@pytest.mark.parametrize(("family", "host"), [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")])
def test_live_sockets_over_loopback_equal_pyroute2s(family, host):
    from pyroute2.netlink.diag import DiagSocket

    loopback = Loopback(family, host)
    try:
        ours = netlink.tcp_sockets(family, filer_tcp.TCP_ESTABLISHED_STATES, loopback.port)
        with DiagSocket() as diag:
            diag.bind()
            theirs = [
                {
                    "src": m["idiag_src"],
                    "sport": m["idiag_sport"],
                    "dst": m["idiag_dst"],
                    "dport": m["idiag_dport"],
                    "cookie": m["idiag_cookie"],
                    "tcp_info": {k: m.get_attr("INET_DIAG_INFO")[k] for k, _, _ in netlink.TCP_INFO_FIELDS},
                }
                for m in diag.get_sock_stats(
                    family=family, states=filer_tcp.TCP_ESTABLISHED_STATES, extensions=2, dport=loopback.port
                )
            ]
    finally:
        loopback.close()
    # The three client sockets only: the kernel filtered on the remote port.
    assert len(ours) == 3 and {e["dport"] for e in ours} == {loopback.port}
    assert stable(ours) == stable(theirs)
    assert sorted(e["tcp_info"]["tcpi_bytes_acked"] for e in ours) == [1, 4097, 70_001]


def test_live_addresses_equal_pyroute2s_and_ip_addr():
    from pyroute2.iproute.linux import IPRoute

    ours = netlink.addresses()
    with IPRoute() as ip:
        names = {link["index"]: link.get_attr("IFLA_IFNAME") for link in ip.get_links()}
        theirs = [
            {"interface": names.get(m["index"], ""), "address": m.get_attr("IFA_ADDRESS"), "prefix_len": m["prefixlen"]}
            for m in ip.get_addr()
        ]
    assert ours == theirs
    assert {"interface": "lo", "address": "127.0.0.1", "prefix_len": 8} in ours
    # iproute2's view (tests/bootstrap/debian-packages.sh installs it): a third, independent reader.
    shown = json.loads(subprocess.run(["ip", "-j", "addr"], capture_output=True, text=True, check=True).stdout)
    listed = {(link["ifname"], a["local"], a["prefixlen"]) for link in shown for a in link.get("addr_info", [])}
    assert {(e["interface"], e["address"], e["prefix_len"]) for e in ours} == listed
