"""`dnfsmon wire` on hand-built captures: every framing case, every file format, two captures.

Each test writes a tiny pcap/pcapng (tests/wire_frames.py) whose bytes it
controls, runs the command the way users do (`dnfsmon wire FILE --format json`
through the CLI's main), and checks the figures against the times it put in.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

import wire_frames as w
from dnfsmon.cli import main
from dnfsmon.wire import analysis
from runner import run_dnfsmon

MS = 1_000_000
T0 = 1_700_000_000 * 1_000_000_000  # a plausible epoch time in ns


def run_wire(capsys, *args: str) -> dict:
    code = main(["wire", *args, "--format", "json"])
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


def write(tmp_path: Path, frames: list[w.Frame], name: str = "c.pcap", **options) -> str:
    path = tmp_path / name
    path.write_bytes(w.pcapng(frames, **options) if name.endswith(".pcapng") else w.pcap(frames, **options))
    return str(path)


def reads(connection: w.Connection, count: int, start_ns: int, service_ns: int, snaplen: int = 65535) -> int:
    """`count` 8 KiB NFSv3 READs one outstanding; returns the time after the last."""
    now = start_ns
    for index in range(count):
        connection.send(True, now, w.record(w.call(0x1000 + index, 6, body=b"\1" * 48)), snaplen)
        connection.send(False, now + service_ns, w.record(w.reply(0x1000 + index, body=b"d" * 8300)), snaplen)
        now += 10 * MS
    return now


def operation(report: dict, name: str, capture: int = 0) -> dict:
    return report["captures"][capture]["operations"][name]


def test_one_outstanding_reads_give_exact_service_times(tmp_path, capsys):
    connection = w.Connection()
    connection.handshake(T0)
    reads(connection, 20, T0 + MS, 300_000)
    report = run_wire(capsys, write(tmp_path, connection.frames))
    read = operation(report, "NFSv3 READ")
    assert read["count"] == 20
    srt = read["first_call_to_first_reply_ms"]
    assert srt["avg_ms"] == pytest.approx(0.3) and srt["max_ms"] == pytest.approx(0.3)
    # the 8 KiB reply spans 6 segments 1 µs apart: the caller waits 5 µs more
    assert read["first_call_to_last_reply_ms"]["avg_ms"] == pytest.approx(0.305)
    assert read["reply_bytes"] == 20 * (28 + 8300)
    assert report["captures"][0]["unpaired"] == {}


def test_several_rpcs_in_one_segment_each_way(tmp_path, capsys):
    connection = w.Connection()
    connection.handshake(T0)
    calls = b"".join(w.record(w.call(50 + i, 6, body=b"\1" * 40)) for i in range(8))
    replies = b"".join(w.record(w.reply(50 + i, body=b"d" * 64)) for i in range(8))
    connection.send(True, T0 + MS, calls, mss=4000)
    connection.send(False, T0 + 3 * MS, replies, mss=4000)
    report = run_wire(capsys, write(tmp_path, connection.frames))
    read = operation(report, "NFSv3 READ")
    assert read["count"] == 8
    assert read["first_call_to_first_reply_ms"]["avg_ms"] == pytest.approx(2.0)


def test_header_split_across_segments(tmp_path, capsys):
    connection = w.Connection()
    connection.handshake(T0)
    message = w.record(w.call(77, 7, body=b"\2" * 200))
    connection.send(True, T0 + MS, message, mss=10)  # the mark and 6 bytes, then the rest 10 bytes at a time
    connection.send(False, T0 + 5 * MS, w.record(w.reply(77)))
    report = run_wire(capsys, write(tmp_path, connection.frames))
    write_op = operation(report, "NFSv3 WRITE")
    assert write_op["count"] == 1
    last_segment_ns = (len(message) - 1) // 10 * 1000
    assert write_op["last_call_to_first_reply_ms"]["avg_ms"] == pytest.approx((4 * MS - last_segment_ns) / MS)


def test_truncated_payload_64k_writes_at_snaplen_256(tmp_path, capsys):
    connection = w.Connection()
    connection.handshake(T0)
    now = T0 + MS
    for index in range(10):
        made = connection.send(True, now, w.record(w.call(900 + index, 7, body=b"w" * 65536)), 256, step_ns=20_000)
        last_ns = made[-1].time_ns
        connection.send(False, last_ns + 400_000, w.record(w.reply(900 + index, body=b"r" * 120)), 256)
        now += 5 * MS
    report = run_wire(capsys, write(tmp_path, connection.frames))
    write_op = operation(report, "NFSv3 WRITE")
    assert write_op["count"] == 10
    # the server's own time starts at the last call segment; the first segment adds the transfer
    assert write_op["last_call_to_first_reply_ms"]["avg_ms"] == pytest.approx(0.4)
    segments = len(range(0, len(w.record(w.call(0, 7, body=b"w" * 65536))), 1448))
    assert write_op["first_call_to_first_reply_ms"]["avg_ms"] == pytest.approx(0.4 + (segments - 1) * 0.02)
    assert write_op["call_bytes"] == 10 * len(w.call(0, 7, body=b"w" * 65536))


def test_pipelined_replies_beyond_the_snaplen_are_counted_not_invented(tmp_path, capsys):
    """Reply headers that start past the snaplen inside a segment cannot be read: counted as lost sync."""
    connection = w.Connection()
    connection.handshake(T0)
    calls = b"".join(w.record(w.call(10 + i, 6, body=b"\1" * 40)) for i in range(4))
    connection.send(True, T0 + MS, calls, mss=4000)
    # four 600-byte replies in one segment captured at 512 bytes: only the first header is seen
    replies = b"".join(w.record(w.reply(10 + i, body=b"d" * 600)) for i in range(4))
    connection.send(False, T0 + 2 * MS, replies, snaplen=512, mss=4000)
    # the next reply segment starts with a header: the direction resynchronises there
    connection.send(True, T0 + 3 * MS, w.record(w.call(20, 6, body=b"\1" * 40)))
    connection.send(False, T0 + 4 * MS, w.record(w.reply(20, body=b"d" * 100)))
    report = run_wire(capsys, write(tmp_path, connection.frames))
    capture = report["captures"][0]
    assert operation(report, "NFSv3 READ")["count"] == 2  # xid 10 and xid 20
    assert capture["unpaired"]["call whose reply is not in the capture"] == 3
    assert sum(capture["stream_events"].values()) == 1


def test_retransmissions_count_once_with_the_first_times(tmp_path, capsys):
    connection = w.Connection()
    connection.handshake(T0)
    message = w.record(w.call(5, 6, body=b"\1" * 40))
    frames = connection.send(True, T0 + MS, message)
    connection.frames.append(w.Frame(T0 + 201 * MS, frames[0].data))  # TCP retransmission: same bytes
    connection.send(False, T0 + 202 * MS, w.record(w.reply(5)))
    # an RPC retransmission: the same XID sent again as new bytes on the connection
    connection.send(True, T0 + 203 * MS, message)
    connection.send(False, T0 + 204 * MS, w.record(w.reply(5)))
    report = run_wire(capsys, write(tmp_path, connection.frames))
    read = operation(report, "NFSv3 READ")
    assert read["count"] == 1
    assert read["first_call_to_first_reply_ms"]["avg_ms"] == pytest.approx(201.0)
    assert report["captures"][0]["unpaired"] == {
        "duplicate reply (counted once)": 1,
        "retransmitted call (counted once)": 1,
    }


def test_out_of_order_segments_are_put_back_in_order(tmp_path, capsys):
    connection = w.Connection()
    connection.handshake(T0)
    first = connection.send(True, T0 + MS, w.record(w.call(1, 6, body=b"\1" * 40)))
    second = connection.send(True, T0 + MS + 10, w.record(w.call(2, 6, body=b"\1" * 40)))
    connection.frames[-2:] = [second[0], first[0]]  # the second call's segment is captured first
    connection.send(False, T0 + 2 * MS, w.record(w.reply(1)) + w.record(w.reply(2)))
    report = run_wire(capsys, write(tmp_path, connection.frames))
    assert operation(report, "NFSv3 READ")["count"] == 2
    assert report["captures"][0]["unpaired"] == {}


def test_capture_started_mid_stream_synchronises_on_a_header(tmp_path, capsys):
    connection = w.Connection()
    connection.send(True, T0, b"\0" * 700)  # the tail of an earlier WRITE: no header
    reads(connection, 3, T0 + MS, 250_000)
    report = run_wire(capsys, write(tmp_path, connection.frames))
    assert operation(report, "NFSv3 READ")["count"] == 3


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("le-micro.pcap", {}),
        ("be-micro.pcap", {"big_endian": True}),
        ("le-nano.pcap", {"nanoseconds": True}),
        ("be-nano.pcap", {"nanoseconds": True, "big_endian": True}),
        ("nano.pcapng", {"tsresol": 9}),
        ("micro-be.pcapng", {"tsresol": 6, "big_endian": True}),
        ("binary.pcapng", {"tsresol": 0x80 | 30}),
    ],
)
def test_file_formats_and_timestamp_resolutions(tmp_path, capsys, name, options):
    connection = w.Connection()
    connection.handshake(T0)
    reads(connection, 4, T0 + MS, 123_000)
    report = run_wire(capsys, write(tmp_path, connection.frames, name, **options))
    srt = operation(report, "NFSv3 READ")["first_call_to_first_reply_ms"]
    exact = 0.123 if "micro" in name or "nano" in name else pytest.approx(0.123, abs=1e-6)
    assert srt["count"] == 4 and srt["avg_ms"] == exact


@pytest.mark.parametrize("linktype", [113, 276, 101])
def test_link_layers(tmp_path, capsys, linktype):
    connection = w.Connection()
    connection.handshake(T0)
    reads(connection, 3, T0 + MS, 200_000)
    frames = w.relink(connection.frames, linktype)
    report = run_wire(capsys, write(tmp_path, frames, linktype=linktype))
    assert operation(report, "NFSv3 READ")["count"] == 3


def test_ipv6(tmp_path, capsys):
    connection = w.Connection(client="fd00::1", server="fd00::2", ipv6=True)
    connection.handshake(T0)
    reads(connection, 3, T0 + MS, 200_000)
    report = run_wire(capsys, write(tmp_path, connection.frames))
    assert operation(report, "NFSv3 READ")["count"] == 3


def test_sequence_numbers_wrap(tmp_path, capsys):
    connection = w.Connection(server_seq=(1 << 32) - 5000)
    connection.handshake(T0)
    reads(connection, 5, T0 + MS, 200_000)  # the server's replies cross 2^32
    report = run_wire(capsys, write(tmp_path, connection.frames))
    assert operation(report, "NFSv3 READ")["count"] == 5


def test_nfs4_compounds_are_named_by_their_main_operation(tmp_path, capsys):
    connection = w.Connection()
    connection.handshake(T0)
    compounds = {
        1: [(53, w.SEQUENCE_ARGS), (22, w.FILEHANDLE), (25, b"\0" * 24)],  # READ
        2: [(53, w.SEQUENCE_ARGS), (22, w.FILEHANDLE), (38, b"\0" * 64), (9, b"\0" * 12)],  # WRITE, GETATTR
        3: [(53, w.SEQUENCE_ARGS), (22, w.FILEHANDLE), (5, b"\0" * 12)],  # COMMIT
        4: [(53, w.SEQUENCE_ARGS), (22, w.FILEHANDLE), (9, b"\0" * 12)],  # GETATTR
        5: [(53, w.SEQUENCE_ARGS)],  # a lease renewal: SEQUENCE alone
    }
    now = T0 + MS
    for xid, ops in compounds.items():
        connection.send(True, now, w.record(w.compound(xid, ops)))
        connection.send(False, now + 100_000, w.record(w.reply(xid)))
        now += MS
    report = run_wire(capsys, write(tmp_path, connection.frames))
    names = set(report["captures"][0]["operations"])
    assert names == {f"NFSv4.1 {op}" for op in ("READ", "WRITE", "COMMIT", "GETATTR", "SEQUENCE")}


def test_op_filter_and_nfs_errors(tmp_path, capsys):
    connection = w.Connection()
    connection.handshake(T0)
    connection.send(True, T0 + MS, w.record(w.call(1, 6, body=b"\1" * 40)))
    connection.send(False, T0 + 2 * MS, w.record(w.reply(1, status=70)))  # NFS3ERR_STALE
    connection.send(True, T0 + 3 * MS, w.record(w.call(2, 1, body=b"\1" * 40)))
    connection.send(False, T0 + 4 * MS, w.record(w.reply(2)))
    path = write(tmp_path, connection.frames)
    report = run_wire(capsys, path, "--op", "read")
    assert list(report["captures"][0]["operations"]) == ["NFSv3 READ"]
    assert operation(report, "NFSv3 READ")["errors"] == 1


def client_and_server(delay_ns: int, count: int = 50) -> tuple[w.Connection, w.Connection]:
    """The same READs seen at the client and, through a NAT, at the server; `delay_ns` each way."""
    client = w.Connection(client="192.168.1.10", server="10.9.9.9", client_port=901)
    server = w.Connection(client="10.1.1.1", server="10.0.0.2", client_port=40001)
    now = T0 + MS
    for index in range(count):
        call_message = w.record(w.call(7000 + index, 6, body=b"\1" * 48))
        reply_message = w.record(w.reply(7000 + index, body=b"d" * 8300))
        client.send(True, now, call_message)
        server.send(True, now + delay_ns, call_message)
        served = now + delay_ns + 150_000 + index * 1000  # the server's own time varies
        server.send(False, served, reply_message)
        client.send(False, served + delay_ns, reply_message)
        now += 2 * MS
    return client, server


def test_two_captures_split_the_time_and_tolerate_nat(tmp_path, capsys):
    client, server = client_and_server(delay_ns=1 * MS)
    # a call only the client saw (lost before the server capture) and the server capture 5 s later in clock
    client.send(True, T0 + 500 * MS, w.record(w.call(1, 6, body=b"\1" * 48)))
    for frame in server.frames:
        frame.time_ns += 5_000 * MS
    report = run_wire(
        capsys, write(tmp_path, client.frames, "client.pcap"), write(tmp_path, server.frames, "server.pcapng")
    )
    matched = report["matched"]["operations"]["NFSv3 READ"]
    assert matched["count"] == 50
    # the server's own time: 150 µs + index µs; the caller's wait adds 2 ms and 5 µs of reply segments
    assert matched["server_last_call_to_first_reply_ms"]["avg_ms"] == pytest.approx(0.150 + 0.0245)
    assert matched["difference_ms"]["avg_ms"] == pytest.approx(2.005)
    assert matched["difference_ms"]["max_ms"] == pytest.approx(2.005)
    assert matched["difference_first_call_to_first_reply_ms"]["avg_ms"] == pytest.approx(2.0)
    assert report["matched"]["unmatched"]["server"] == {"no call with this XID and operation in the other capture": 0}
    assert report["captures"][0]["unpaired"] == {"call whose reply is not in the capture": 1}


def test_text_output_names_the_split(tmp_path, capsys):
    client, server = client_and_server(delay_ns=2 * MS, count=5)
    code = main(["wire", write(tmp_path, client.frames, "a.pcap"), write(tmp_path, server.frames, "b.pcap")])
    out = capsys.readouterr().out
    assert code == 0
    assert "matched RPCs" in out and "NFSv3 READ" in out
    row = next(line for line in out.splitlines() if line.strip().startswith("NFSv3 READ") and "4.0" in line)
    assert row.split()[2] == "5"  # matched count


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty or shorter than a capture file header"),
        (b"hello, this is not a capture file", "not a pcap or pcapng file"),
        (b"\xd4\xc3\xb2\xa1\x02\x00", "pcap file header is cut short"),
        (
            w.pcap([]) + struct.pack("<IIII", 0, 0, 10_000_000, 10_000_000),
            "claims 10000000 bytes",
        ),
        (b"\x0a\x0d\x0d\x0a" + struct.pack("<I", 28) + b"\0\0\0\0" + b"\0" * 16, "no valid byte-order magic"),
        (b"\x0a\x0d\x0d\x0a" + struct.pack("<II", 7, 0x1A2B3C4D) + b"\0" * 16, "block length 7 is invalid"),
    ],
)
def test_bad_files_give_one_line_and_exit_2(tmp_path, content, message):
    path = tmp_path / "bad.pcap"
    path.write_bytes(content)
    result = run_dnfsmon("wire", path, timeout=60)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and message in result.stderr and str(path) in result.stderr


def test_missing_file_and_too_many_captures(tmp_path, capsys):
    assert main(["wire", str(tmp_path / "nope.pcap")]) == 2
    assert "No such file or directory" in capsys.readouterr().err
    assert main(["wire", "a", "b", "c"]) == 2
    assert "give one capture, or a client and a server capture" in capsys.readouterr().err


def test_file_cut_mid_record_keeps_what_came_before(tmp_path, capsys):
    connection = w.Connection()
    connection.handshake(T0)
    reads(connection, 5, T0 + MS, 100_000)
    content = w.pcap(connection.frames)
    path = tmp_path / "cut.pcap"
    path.write_bytes(content[:-50])
    report = run_wire(capsys, str(path))
    assert report["captures"][0]["file_ends_mid_record"] == 1
    # the last reply's first segment was captured, its last one was not: counted, without a last-segment time
    read = operation(report, "NFSv3 READ")
    assert read["count"] == 5
    assert read["first_call_to_last_reply_ms"]["count"] == 4


def test_pcapng_packets_of_undescribed_interfaces_are_counted(tmp_path, capsys):
    connection = w.Connection()
    connection.handshake(T0)
    reads(connection, 2, T0 + MS, 100_000)
    content = bytearray(w.pcapng(connection.frames))
    stray = struct.pack("<IIIII", 5, 0, 0, 4, 4) + b"abcd"  # an EPB naming interface 5
    content += struct.pack("<II", 6, 12 + len(stray)) + stray + struct.pack("<I", 12 + len(stray))
    path = tmp_path / "stray.pcapng"
    path.write_bytes(bytes(content))
    report = run_wire(capsys, str(path))
    assert report["captures"][0]["skipped_frames"] == {"pcapng packet of an interface never described": 1}
    assert operation(report, "NFSv3 READ")["count"] == 2


# --- loss, reconnects, swapped captures, cut NFSv4 calls (each failed before in-order reassembly) ---


def lose(connection: w.Connection, frame: w.Frame, resend_ns: int, dup_ack_from_client: bool) -> None:
    """`frame` was lost between the capture points: the receiver asks again (a duplicate acknowledgment
    of the bytes before it), and its resend is captured at `resend_ns`."""
    connection.frames.remove(frame)
    connection.ack(dup_ack_from_client, frame.time_ns + 50_000, upto=w.sequence_of(frame))
    connection.frames.append(w.Frame(resend_ns, frame.data, frame.snaplen))


def test_server_capture_a_resent_middle_segment_of_a_write_is_not_server_time(tmp_path, capsys):
    """The call is complete when the resent segment arrives: the wait for it is the network's."""
    connection = w.Connection()
    connection.handshake(T0)
    made = connection.send(True, T0 + MS, w.record(w.call(1, 7, body=b"w" * 65536)), step_ns=10_000)
    resend_ns = made[-1].time_ns + 5 * MS
    lose(connection, made[20], resend_ns, dup_ack_from_client=False)
    connection.send(False, resend_ns + 200_000, w.record(w.reply(1, body=b"r" * 120)))
    report = run_wire(capsys, write(tmp_path, connection.frames))
    write_op = operation(report, "NFSv3 WRITE")
    assert write_op["last_call_to_first_reply_ms"]["avg_ms"] == pytest.approx(0.2)  # before: 5.2
    assert write_op["first_call_to_first_reply_ms"]["avg_ms"] == pytest.approx((resend_ns + 200_000 - T0 - MS) / MS)


def test_client_capture_a_resent_middle_reply_segment_stays_in_the_clients_wait(tmp_path, capsys):
    connection = w.Connection()
    connection.handshake(T0)
    connection.send(True, T0 + MS, w.record(w.call(1, 6, body=b"\1" * 48)))
    made = connection.send(False, T0 + MS + 300_000, w.record(w.reply(1, body=b"d" * 8300)))
    resend_ns = T0 + 201 * MS
    lose(connection, made[2], resend_ns, dup_ack_from_client=True)
    report = run_wire(capsys, write(tmp_path, connection.frames))
    read = operation(report, "NFSv3 READ")
    assert read["first_call_to_last_reply_ms"]["avg_ms"] == pytest.approx(200.0)  # before: 0.305
    assert read["first_call_to_first_reply_ms"]["avg_ms"] == pytest.approx(0.3)


def test_a_reply_whose_first_segment_was_lost_is_kept(tmp_path, capsys):
    """Seen first as a retransmission after its later segments: the reply starts and completes then."""
    connection = w.Connection()
    connection.handshake(T0)
    connection.send(True, T0 + MS, w.record(w.call(1, 6, body=b"\1" * 48)))
    made = connection.send(False, T0 + MS + 300_000, w.record(w.reply(1, body=b"d" * 8300)))
    lose(connection, made[0], T0 + 201 * MS, dup_ack_from_client=True)
    report = run_wire(capsys, write(tmp_path, connection.frames))
    read = operation(report, "NFSv3 READ")
    assert read["first_call_to_last_reply_ms"]["count"] == 1  # before: 0 (left out without a word)
    assert read["first_call_to_last_reply_ms"]["avg_ms"] == pytest.approx(200.0)
    assert read["first_call_to_first_reply_ms"]["avg_ms"] == pytest.approx(200.0)
    assert report["captures"][0]["left_out"] == {}


def test_a_reply_never_complete_is_left_out_and_says_why(tmp_path, capsys):
    """A reply segment the capture missed (the client acknowledged it): no wait for that RPC, and the
    report says so in JSON and in text."""
    connection = w.Connection()
    connection.handshake(T0)
    reads(connection, 5, T0 + MS, 300_000)
    second_reply = [f for f in connection.frames if len(f.data) > 1000 and T0 + 11 * MS < f.time_ns < T0 + 12 * MS]
    connection.frames.remove(second_reply[2])  # a middle segment of the second reply
    path = write(tmp_path, connection.frames)
    report = run_wire(capsys, path)
    read = operation(report, "NFSv3 READ")
    assert read["count"] == 5 and read["first_call_to_last_reply_ms"]["count"] == 4
    assert report["captures"][0]["left_out"] == {analysis.REPLY_INCOMPLETE: 1}
    assert main(["wire", path]) == 0
    assert f"left out: 1 {analysis.REPLY_INCOMPLETE}" in capsys.readouterr().out


def test_a_reconnect_on_the_same_port_starts_a_new_connection(tmp_path, capsys):
    """The client gives up on a connection, reconnects from the same port and resends the call with
    the same XID: the resend is timed; the time spent reconnecting is not the server's."""
    connection = w.Connection()
    connection.handshake(T0)
    connection.send(True, T0 + MS, w.record(w.call(42, 6, body=b"\1" * 48)))  # never answered
    connection.reconnect(T0 + 60 * MS, client_seq=555_000, server_seq=777_000)
    connection.send(True, T0 + 62 * MS, w.record(w.call(42, 6, body=b"\1" * 48)))
    connection.send(False, T0 + 62 * MS + 300_000, w.record(w.reply(42, body=b"d" * 100)))
    report = run_wire(capsys, write(tmp_path, connection.frames))
    read = operation(report, "NFSv3 READ")
    assert read["count"] == 1
    assert read["first_call_to_first_reply_ms"]["avg_ms"] == pytest.approx(0.3)  # before: 61.3
    assert report["captures"][0]["unpaired"] == {analysis.RESENT_ON_NEW_CONNECTION: 1}


def test_swapped_captures_are_refused_with_the_fix(tmp_path):
    client, server = client_and_server(delay_ns=1 * MS, count=20)
    client_path = write(tmp_path, client.frames, "cli.pcap")
    server_path = write(tmp_path, server.frames, "srv.pcap")
    result = run_dnfsmon("wire", server_path, client_path, timeout=60)
    assert result.returncode == 2, result.stdout
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert f"give the client's capture first: dnfsmon wire {client_path} {server_path}" in result.stderr


def test_an_nfs4_compound_cut_by_the_snaplen_is_named_from_its_reply(tmp_path, capsys):
    """At snaplen 200 a long AUTH_SYS credential pushes the call's operations out of the capture; the
    reply's operation list names it, and it matches the same RPC seen whole at the client."""
    credential = w.auth_sys(machine=b"a-database-host-with-a-long-name.example.com", gids=tuple(range(1000, 1016)))
    operations = [(53, w.SEQUENCE_ARGS), (22, w.FILEHANDLE), (25, b"\0" * 24)]
    results = [(53, w.SEQUENCE_RESULT), (22, struct.pack("!I", 0)), (25, struct.pack("!II", 0, 0) + b"d" * 8200)]
    client, server = w.Connection(), w.Connection()
    for xid in (1, 2, 3):
        now = T0 + xid * MS
        for side, snaplen, delay in ((client, 65535, 0), (server, 200, 100_000)):
            side.send(True, now + delay, w.record(w.compound(xid, operations, credential=credential)), snaplen)
            side.send(False, now + 400_000 - delay, w.record(w.compound_reply(xid, results)), snaplen)
    assert len(w.call(0, 1, version=4, credential=credential)) > 200 - 14 - 20 - 20 - 4
    report = run_wire(capsys, write(tmp_path, client.frames, "c.pcap"), write(tmp_path, server.frames, "s.pcap"))
    assert list(report["captures"][1]["operations"]) == ["NFSv4 READ"]  # before: NFSv4 COMPOUND
    assert report["captures"][1]["notes"] == {analysis.COMPOUND_FROM_REPLY: 3}
    assert report["matched"]["operations"]["NFSv4.1 READ"]["count"] == 3


def test_client_text_shows_the_clients_wait(tmp_path, capsys):
    connection = w.Connection()
    connection.handshake(T0)
    reads(connection, 4, T0 + MS, 300_000)
    assert main(["wire", write(tmp_path, connection.frames)]) == 0
    out = capsys.readouterr().out
    assert "the client's wait, first call bytes to reply complete" in out
    row = next(line.split() for line in out.splitlines() if line.strip().startswith("NFSv3 READ"))
    assert row[3] == "0.305"  # average: 8 KiB reply over 6 segments 1 µs apart; before: 0.300


def test_negative_differences_keep_their_sign_in_percentiles():
    from dnfsmon.wire.stats import Distribution

    distribution = Distribution()
    for value_ns in (-5 * MS, -4 * MS, -3 * MS, 0, 1 * MS):
        distribution.add(value_ns)
    assert distribution.percentile_ms(0.5) == pytest.approx(-3.0, rel=0.005)  # before: 0.0
    assert distribution.percentile_ms(0.2) == pytest.approx(-5.0, rel=0.005)
    assert distribution.percentile_ms(0.7) == 0.0
    assert distribution.percentile_ms(1.0) == pytest.approx(1.0)
