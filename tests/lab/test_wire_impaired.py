"""`dnfsmon wire` on an impaired path: loss, asymmetric delay, a far path, a reconnect on the same port.

Each run's figures are checked against a per-packet reference computed from
tshark's fields by tests/lab/reference.py, which does its own in-order TCP
bookkeeping (it shares no code with dnfsmon). Tolerances (docs/wire.md, "What
is verified"): counts equal; averages and maxima within 1 µs (both read the
same timestamps; tshark prints them to the ns, the pcap holds µs); p50 and
p95 within 0.6 % (dnfsmon's percentiles come from 1 %-wide buckets, reported
at the bucket's geometric middle: within 0.5 %).

Workloads are one RPC in flight (tshark gives no field for an RPC's position
inside a segment, so the reference needs every RPC at a segment's start) and
a few seconds long.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import nfslab
import pytest
import reference
from test_wire_lab import start_lab, wire, workloads

pytestmark = pytest.mark.lab

PLAN = [("3", "read", 300, 8192, 1), ("3", "write", 30, 65536, 1)]
# 1 % of the frames that carry data, both ways, dropped on the bridge between the capture points
# (nftables numgen: the kernel here has no netem). SYN, FIN and RST pass, so connections open promptly.
LOSS_RULES = """
table bridge lab {
    chain forward {
        type filter hook forward priority 0; policy accept;
        ether type ip ip protocol tcp tcp flags & (syn | fin | rst) == 0 meta length > 200 numgen random mod 100 < 1 drop
    }
}
"""
RECONNECT_PORT = 1001
# The replies to the reconnecting client, dropped while its first connection is open.
DROP_REPLIES = f"""
table bridge lab {{
    chain forward {{
        type filter hook forward priority 0; policy accept;
        ether type ip tcp sport 2049 tcp dport {RECONNECT_PORT} tcp flags & (syn | rst) == 0 meta length > 60 drop
    }}
}}
"""


def captured(workdir: Path, run, **lab_options) -> tuple[Path, Path]:
    lab = start_lab(workdir, **lab_options)
    try:
        client, server, dumps = lab.capture("impaired", snaplen=65535)
        run(lab)
        lab.stop_capture(dumps)
    finally:
        lab.close()
    return client, server


def check_capture(report: dict, side: int, truth: list[reference.Rpc], durations: tuple[str, ...]) -> None:
    operations = report["captures"][side]["operations"]
    for name in sorted({rpc.operation for rpc in truth}):
        for duration in durations:
            ours = operations[name][duration + "_ms"]
            expected = reference.summary([getattr(rpc, duration) for rpc in truth if rpc.operation == name])
            print(f"{report['captures'][side]['role']} {name} {duration}: wire {ours}, reference {expected}")
            assert ours["count"] == expected["count"], (name, duration)
            for figure in ("avg_ms", "max_ms"):
                assert ours[figure] == pytest.approx(expected[figure], abs=0.001), (name, duration, figure)
            for figure in ("p50_ms", "p95_ms"):
                assert ours[figure] == pytest.approx(expected[figure], rel=0.006), (name, duration, figure)


def check_split(report: dict, client: list[reference.Rpc], server: list[reference.Rpc]) -> dict[str, dict]:
    """wire's matched split against the reference's: the client's wait minus the server's own time."""
    at_server = {(rpc.xid, rpc.operation): rpc for rpc in server}
    differences: dict[str, list[int]] = {}
    for rpc in client:
        partner = at_server.get((rpc.xid, rpc.operation))
        if partner is not None:
            differences.setdefault(rpc.operation, []).append(
                rpc.first_call_to_last_reply - partner.last_call_to_first_reply
            )
    expected = {name: reference.summary(values) for name, values in differences.items()}
    for name, truth in expected.items():
        ours = report["matched"]["operations"][name]["difference_ms"]
        print(f"split {name}: wire {ours}, reference {truth}")
        assert ours["count"] == truth["count"], name
        assert ours["avg_ms"] == pytest.approx(truth["avg_ms"], abs=0.001), name
        assert ours["p95_ms"] == pytest.approx(truth["p95_ms"], rel=0.006), name
    return expected


def check_against_reference(client_file: Path, server_file: Path) -> tuple[dict, dict[str, dict]]:
    report = wire(client_file, server_file)
    client, server = reference.rpcs(client_file), reference.rpcs(server_file)
    check_capture(report, 0, client, ("first_call_to_first_reply", "first_call_to_last_reply"))
    check_capture(report, 1, server, ("first_call_to_first_reply", "last_call_to_first_reply"))
    return report, check_split(report, client, server)


def test_loss_lands_on_the_network_not_the_server(tmp_path):
    def run(lab: nfslab.Lab) -> None:
        lab.middle_rules(LOSS_RULES)
        workloads(lab, PLAN)

    client_file, server_file = captured(tmp_path, run)
    report, split = check_against_reference(client_file, server_file)
    # The run did lose segments between the capture points: the server saw some out of order.
    assert reference.out_of_order(server_file) + reference.out_of_order(client_file) > 0
    for side in (0, 1):
        assert report["captures"][side]["left_out"] == {}, "every RPC completes once the resends arrive"
    assert split["NFSv3 READ"]["count"] == 300 and split["NFSv3 WRITE"]["count"] == 30


@pytest.mark.parametrize(
    ("to_server_us", "to_client_us"),
    [(3000, 0), (2000, 2000)],
    ids=["asymmetric-3ms-to-server", "far-path-2ms-each-way"],
)
def test_delay_lands_on_the_network_not_the_server(tmp_path, to_server_us, to_client_us):
    """The forwarder holds each frame for a fixed time (no queueing): the split's difference takes
    the whole path delay, the server's own time none of it."""
    client_file, server_file = captured(
        tmp_path,
        lambda lab: workloads(lab, PLAN),
        middle="forwarder",
        client_to_server_delay_us=to_server_us,
        server_to_client_delay_us=to_client_us,
    )
    report, _ = check_against_reference(client_file, server_file)
    path_ms = (to_server_us + to_client_us) / 1000
    read = report["matched"]["operations"]["NFSv3 READ"]
    assert path_ms <= read["difference_ms"]["p50_ms"] < path_ms + 2.0
    assert read["server_last_call_to_first_reply_ms"]["p50_ms"] < path_ms / 2


def test_a_reconnect_on_the_same_port_is_a_new_connection(tmp_path):
    """The reply is dropped; the client resets, reconnects from the same port and resends the same
    XID: timed from the resend, and the first attempt counted as left out."""
    rounds = 3

    def run(lab: nfslab.Lab) -> None:
        command = ["ip", "netns", "exec", lab.client_ns, sys.executable, str(nfslab.HERE / "reconnect.py")]
        command += [nfslab.SERVER_ADDRESS, str(RECONNECT_PORT), str(rounds)]
        client = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert client.stdin is not None and client.stdout is not None
            for _ in range(rounds):
                lab.middle_rules(DROP_REPLIES)
                client.stdin.write("\n")
                client.stdin.flush()
                assert client.stdout.readline().startswith("sent")
                time.sleep(0.3)  # the reply and a resend of it are dropped
                client.stdin.write("\n")
                client.stdin.flush()
                assert client.stdout.readline().startswith("reset")
                lab.clear_middle_rules()
                client.stdin.write("\n")
                client.stdin.flush()
            assert client.stdout.readline().startswith("done")
        finally:
            client.kill()
            client.wait(timeout=10)

    client_file, server_file = captured(tmp_path, run)
    # Each capture on its own: the server answered each XID twice (once per connection), which
    # two-capture matching cannot tell apart by XID.
    at_client, at_server = wire(client_file), wire(server_file)
    check_capture(at_client, 0, reference.rpcs(client_file), ("first_call_to_first_reply", "first_call_to_last_reply"))
    check_capture(at_server, 0, reference.rpcs(server_file), ("first_call_to_first_reply", "last_call_to_first_reply"))
    null = at_client["captures"][0]["operations"]["NFSv3 NULL"]
    assert null["count"] == rounds
    assert null["first_call_to_first_reply_ms"]["max_ms"] < 100  # the resend's time, not the 300 ms before it
    resent = "call left unanswered on a connection that was replaced (resent on the new one: timed there)"
    assert at_client["captures"][0]["unpaired"] == {resent: rounds}
    assert at_server["captures"][0]["operations"]["NFSv3 NULL"]["count"] == 2 * rounds
