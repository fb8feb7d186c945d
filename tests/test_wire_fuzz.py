"""Malformed, truncated and hostile captures: a clear error or a counted skip, never a crash.

Hypothesis mutates the real captures of tests/lab/captures/ (bytes flipped,
cut, repeated, spliced) and builds hostile TCP streams; every outcome must be a
report or the one-line capture error (CaptureFormatError, exit 2). The tables
that could grow with hostile input are bounded; tests shrink the bounds to see
the evictions counted.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import wire_frames as w
from dnfsmon.wire import analysis, streams
from dnfsmon.wire.capfile import CaptureFormatError
from dnfsmon.wire.packets import Segment
from dnfsmon.wire.report import analyse

pytestmark = pytest.mark.slow  # hypothesis runs hundreds of captures

CAPTURES = Path(__file__).parent / "lab" / "captures"
CLIENT = (CAPTURES / "client.pcap").read_bytes()
SERVER = (CAPTURES / "server.pcapng").read_bytes()
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def outcome(tmp_path: Path, content: bytes, name: str = "fuzz.pcap") -> dict | None:
    path = tmp_path / name
    path.write_bytes(content)
    try:
        return analyse([str(path)], None)
    except CaptureFormatError as error:
        message = str(error)
        assert "\n" not in message and str(path) in message
        return None


def test_the_committed_captures_decode_as_documented(tmp_path):
    report = analyse([str(CAPTURES / "client.pcap"), str(CAPTURES / "server.pcapng")], None)
    for capture in report["captures"]:
        assert capture["operations"]["NFSv3 WRITE"]["count"] == 2
        assert capture["operations"]["NFSv4.1 WRITE"]["count"] == 2
        assert capture["operations"]["NFSv4.1 READ"]["count"] == 8
        # 16 pipelined READs: the replies whose header is beyond the snaplen are counted, not invented
        found = capture["operations"]["NFSv3 READ"]["count"]
        assert found + capture["unpaired"]["call whose reply is not in the capture"] == 16
    assert report["matched"]["operations"]["NFSv3 READ"]["count"] == 12


mutations = st.lists(
    st.tuples(st.integers(min_value=0, max_value=len(CLIENT) - 1), st.integers(min_value=0, max_value=255)),
    min_size=1,
    max_size=40,
)


@FUZZ
@given(flips=mutations, source=st.sampled_from([CLIENT, SERVER]))
def test_flipped_bytes(tmp_path, flips, source):
    content = bytearray(source)
    for position, value in flips:
        content[position % len(content)] = value
    outcome(tmp_path, bytes(content))


@FUZZ
@given(cut=st.integers(min_value=0, max_value=len(SERVER)), source=st.sampled_from([CLIENT, SERVER]))
def test_cut_anywhere(tmp_path, cut, source):
    report = outcome(tmp_path, source[:cut])
    if report is not None and cut > 4096:
        assert report["captures"][0]["frames"] > 0


@FUZZ
@given(
    start=st.integers(min_value=0, max_value=len(CLIENT)),
    length=st.integers(min_value=1, max_value=4096),
    at=st.integers(min_value=0, max_value=len(CLIENT)),
    junk=st.binary(max_size=64),
)
def test_spliced_and_repeated_chunks(tmp_path, start, length, at, junk):
    content = CLIENT[:at] + junk + CLIENT[start : start + length] + CLIENT[at:]
    outcome(tmp_path, content)


def test_hostile_record_lengths_are_refused_before_reading(tmp_path):
    # a pcap record claiming 2^32-1 bytes and a pcapng block claiming 2^31: refused, nothing allocated
    assert outcome(tmp_path, w.pcap([]) + struct.pack("<IIII", 0, 0, 0xFFFFFFFF, 0xFFFFFFFF)) is None
    block = struct.pack("<III", 0x0A0D0D0A, 28, 0x1A2B3C4D) + b"\0" * 12 + struct.pack("<I", 28)
    assert outcome(tmp_path, block + struct.pack("<II", 6, 1 << 31)) is None


segments = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=(1 << 32) - 1),  # sequence number
        st.binary(max_size=300),  # captured payload
        st.integers(min_value=0, max_value=20000),  # extra bytes on the wire beyond the capture
        st.booleans(),  # from the client?
        st.sampled_from([0x18, 0x02, 0x11, 0x04]),  # PSH|ACK, SYN, FIN|ACK, RST
    ),
    max_size=60,
)
rpc_pieces = st.sampled_from(
    [
        w.record(w.call(1, 6, body=b"\1" * 40)),
        w.record(w.reply(1, body=b"d" * 200)),
        w.record(w.compound(2, [(53, w.SEQUENCE_ARGS), (22, w.FILEHANDLE), (25, b"\0" * 24)])),
        struct.pack("!I", 0x7FFFFFFF),  # a huge fragment that is not the last
        struct.pack("!I", 0x80000000),  # an empty last fragment
        b"\0" * 8,
    ]
)


@FUZZ
@given(segments=segments, pieces=st.lists(rpc_pieces, max_size=8))
def test_hostile_tcp_streams(segments, pieces):
    """Random sequence numbers, flags and payloads, seeded with RPC-looking pieces."""
    counts = streams.StreamCounts()
    stats = analysis.TraceStats()
    pairer = analysis.Pairer(stats, None)
    tracker = streams.StreamTracker(pairer.started, pairer.delivered, counts)
    sequence_base = 1000
    for index, (sequence, payload, extra, from_client, flags) in enumerate(segments):
        if pieces and index % 2:
            payload = pieces[index % len(pieces)] + payload
            sequence = sequence_base
            sequence_base += len(payload) + extra
        ends = ("10.0.0.1", 800, "10.0.0.2", 2049) if from_client else ("10.0.0.2", 2049, "10.0.0.1", 800)
        tracker.add(
            Segment(index * 1000, ends[0], ends[1], ends[2], ends[3], sequence, flags, payload, len(payload) + extra)
        )
    tracker.finish()
    pairer.finish()
    for direction in tracker.directions.values():
        assert len(direction.held) <= streams.PENDING_SEGMENTS


def test_outstanding_calls_are_bounded_and_evictions_counted(tmp_path, monkeypatch):
    monkeypatch.setattr(analysis, "MAX_OUTSTANDING", 10)
    connection = w.Connection()
    connection.handshake(1_000_000_000)
    for index in range(50):  # calls whose replies never come
        connection.send(True, 2_000_000_000 + index * 1000, w.record(w.call(index, 6, body=b"\1" * 40)))
    report = outcome(tmp_path, w.pcap(connection.frames))
    assert report is not None
    assert report["captures"][0]["unpaired"] == {
        analysis.CALL_EVICTED: 40,
        analysis.CALL_WITHOUT_REPLY: 10,
    }


def test_followed_connections_are_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(streams, "MAX_DIRECTIONS", 8)
    frames = []
    for port in range(1000, 1040):
        connection = w.Connection(client_port=port)
        connection.send(True, 1_000_000_000 + port, w.record(w.call(port, 6, body=b"\1" * 40)))
        frames += connection.frames
    report = outcome(tmp_path, w.pcap(frames))
    assert report is not None
    assert report["captures"][0]["stream_events"] == {streams.DIRECTION_EVICTED: 32}


def eighty_reads_the_tenth_call_not_captured(replies: bool) -> bytes:
    connection = w.Connection()
    connection.handshake(1_000_000_000)
    now = 2_000_000_000
    for index in range(1, 81):
        now += 1_000_000
        made = connection.send(True, now, w.record(w.call(index, 6, body=b"\1" * 40)))
        if index == 10:
            connection.frames.remove(made[0])
        if replies:
            connection.send(False, now + 100_000, w.record(w.reply(index, body=b"d" * 100)))
    return w.pcap(connection.frames)


def test_a_boundary_segment_missing_from_the_capture_costs_only_its_rpc(tmp_path):
    """The segment holding a call's header was not captured (tcpdump dropped it): the server's
    acknowledgment covers it, so the direction skips it at once and resynchronises on the next header."""
    report = outcome(tmp_path, eighty_reads_the_tenth_call_not_captured(replies=True))
    assert report is not None
    capture = report["captures"][0]
    assert capture["stream_events"] == {streams.GAP: 1}
    assert capture["operations"]["NFSv3 READ"]["count"] == 79
    assert capture["unpaired"] == {analysis.REPLY_WITHOUT_CALL: 1}


def test_held_segments_are_bounded_when_no_acknowledgment_comes(tmp_path, monkeypatch):
    """Without the peer's acknowledgments in the capture (a one-way capture), a segment never
    captured is given up after PENDING_SEGMENTS held ones; the RPCs held meanwhile are counted."""
    monkeypatch.setattr(streams, "PENDING_SEGMENTS", 8)
    report = outcome(tmp_path, eighty_reads_the_tenth_call_not_captured(replies=False))
    assert report is not None
    capture = report["captures"][0]
    assert capture["stream_events"] == {streams.GAP: 1}
    assert capture["unpaired"] == {analysis.CALL_WITHOUT_REPLY: 79}
