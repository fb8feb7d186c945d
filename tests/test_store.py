"""The embedded local store: durability, torn tails, size bound."""

from __future__ import annotations

import json
import os

import pytest

from dnfsmon.points import Point, from_line, measurement_of, series_key, to_line
from dnfsmon.store import (
    COUNTS_SLOT_BYTES,
    Store,
    StoreCounts,
    decode_json_record,
    decode_line_record,
    encode_json_record,
    encode_record,
)


def points(n, start=0):
    return [
        Point("m", (("host", "h"),), {"i": i, "f": i / 3}, 1_700_000_000_000_000_000 + i)
        for i in range(start, start + n)
    ]


def unshipped_i(store):
    """Field i of each unshipped record (line protocol as stored)."""
    return [from_line(line.decode()).fields["i"] for _, line in store.unshipped()]


def test_append_and_read_back_in_order(tmp_path):
    store = Store(str(tmp_path), max_bytes=10**6)
    store.append(points(3))
    store.append(points(2, start=3))
    assert list(store.points()) == points(5)


def test_torn_tail_is_skipped_on_read_and_cut_before_the_next_append(tmp_path, caplog):
    store = Store(str(tmp_path), max_bytes=10**6)
    store.append(points(3))
    ((_, path),) = store.segments()
    whole = encode_record(points(1, start=3)[0])
    with open(path, "ab") as f:
        f.write(whole[: len(whole) // 2])  # what a SIGKILL mid-write leaves
    # Readers cannot tell a torn tail from a write in progress: they skip it quietly.
    assert list(store.points()) == points(3)
    store.append(points(1, start=4))
    assert "cut a torn record" in caplog.text
    assert list(store.points()) == points(3) + points(1, start=4)
    assert store.counts().torn_records == 1


def test_corrupt_line_in_the_middle_is_skipped_and_later_points_kept(tmp_path):
    store = Store(str(tmp_path), max_bytes=10**6)
    store.append(points(3))
    ((_, path),) = store.segments()
    data = open(path, "rb").read().split(b"\n")
    data[1] = data[1].replace(b"i=1i", b"i=7i")  # checksum no longer matches
    open(path, "wb").write(b"\n".join(data))
    assert [p.fields["i"] for p in store.points()] == [0, 2]


def test_zero_filled_garbage_is_not_a_point():
    for garbage in (b"\0\0\0\0\n", b"00000000 {}\n", b"nonsense\n", b"00000000J\n", b"\0" * 4096 + b"\n"):
        for decode in (decode_line_record, decode_json_record):
            try:
                decode(garbage)
            except (ValueError, KeyError):
                continue
            raise AssertionError(f"{garbage!r} decoded")


def test_size_bound_drops_oldest_segments_and_counts_them(tmp_path):
    store = Store(str(tmp_path), max_bytes=20_000, segment_bytes=5_000)
    for batch in range(40):
        store.append(points(10, start=batch * 10))
    total = sum(os.path.getsize(p) for _, p in store.segments())
    kept = [p.fields["i"] for p in store.points()]
    dropped = store.counts().dropped_points
    assert total <= 20_000
    assert kept == list(range(400 - len(kept), 400))  # the newest, in order
    assert dropped == 400 - len(kept) > 0


def test_unshipped_follows_the_cursor_and_acknowledge_deletes_shipped_segments(tmp_path):
    store = Store(str(tmp_path), max_bytes=10**6, segment_bytes=2048)
    for batch in range(10):
        store.append(points(10, start=batch * 10))
    assert len(store.segments()) > 2
    pending = list(store.unshipped())
    assert [from_line(line.decode()).fields["i"] for _, line in pending] == list(range(100))  # store order
    position, _ = pending[54]
    store.acknowledge(position)
    assert unshipped_i(store) == list(range(55, 100))
    assert store.segments()[0][0] == position.segment  # wholly shipped segments are gone
    # A new Store object (next cron run) resumes at the same place.
    assert unshipped_i(Store(str(tmp_path), 10**6))[:1] == [55]
    last, _ = list(store.unshipped())[-1]
    store.acknowledge(last)
    assert list(store.unshipped()) == []
    store.append(points(1, start=100))  # the sequence goes on after the cursor
    assert unshipped_i(store) == [100]


def test_bound_counts_only_unshipped_points_as_dropped(tmp_path):
    store = Store(str(tmp_path), max_bytes=12_000, segment_bytes=4096)
    for batch in range(4):
        store.append(points(10, start=batch * 10))
    everything = list(store.unshipped())
    store.acknowledge(everything[-1][0])  # all shipped
    for batch in range(4, 12):
        store.append(points(10, start=batch * 10))
    kept = unshipped_i(store)
    assert store.counts().dropped_points == 80 - len(kept)


def test_unreadable_cursor_resends_from_the_oldest_point(tmp_path, caplog):
    store = Store(str(tmp_path), max_bytes=10**6)
    store.append(points(3))
    (tmp_path / "cursor.json").write_text("{broken")
    assert len(list(store.unshipped())) == 3
    assert "cursor unreadable" in caplog.text


def write_old_format_store(directory, batches):
    """A store as the agent wrote it before line protocol records: segments .jsonl of JSON records and latest.json."""
    latest = {}
    for sequence, batch in enumerate(batches, start=1):
        with open(os.path.join(directory, f"seg-{sequence:016d}.jsonl"), "wb") as f:
            f.write(b"".join(encode_json_record(p) for p in batch))
        for p in batch:
            latest[json.dumps([p.measurement, p.tags])] = p.to_json()
    with open(os.path.join(directory, "latest.json"), "w") as f:
        json.dump(latest, f)


def test_a_store_of_the_old_format_is_read_and_appended_to_after_the_upgrade(tmp_path):
    write_old_format_store(str(tmp_path), [points(3), points(2, start=3)])
    store = Store(str(tmp_path), max_bytes=10**6)
    assert list(store.points()) == points(5)
    old = list(store.unshipped())
    assert [p for _, p in old] == points(5)  # JSON records come as points, written as line protocol when sent
    store.acknowledge(old[1][0])
    store.append(points(2, start=5))
    names = sorted(os.listdir(tmp_path))
    # A new segment of line protocol after the old ones; the old index merged into latest.lp.
    assert [n for n in names if n.startswith("seg-")] == [
        "seg-0000000000000001.jsonl",
        "seg-0000000000000002.jsonl",
        "seg-0000000000000003.lp",
    ]
    assert "latest.json" not in names
    assert list(store.points()) == points(7)
    pending = list(Store(str(tmp_path), max_bytes=10**6).unshipped())
    assert [r if isinstance(r, Point) else from_line(r.decode()) for _, r in pending] == points(5)[2:] + points(
        2, start=5
    )
    assert store.latest_lines() == [to_line(points(1, start=6)[0])]


def test_the_old_index_is_read_until_the_first_append(tmp_path):
    write_old_format_store(str(tmp_path), [points(3)])
    store = Store(str(tmp_path), max_bytes=10**6, read_only=True)
    assert store.latest_lines() is None
    assert list(store.old_latest_index().values()) == points(1, start=2)


def test_a_line_break_in_a_string_field_is_stored_and_read_back(tmp_path):
    store = Store(str(tmp_path), max_bytes=10**6)
    error = Point("s", (("db", "x"),), {"error": 'ORA-12541: no listener\nline two "quoted" \\ back'}, 5)
    store.append([error, *points(1)])
    assert list(store.points()) == [error, *points(1)]
    ((_, path),) = store.segments()
    assert open(path, "rb").read().count(b"\n") == 2  # one record a line
    ((_, line), _) = store.unshipped()
    assert from_line(line.decode()) == error
    assert sorted(store.latest_lines()) == sorted([to_line(error), to_line(points(1)[0])])


def test_a_point_that_cannot_be_line_protocol_is_quarantined_when_appended(tmp_path, caplog):
    store = Store(str(tmp_path), max_bytes=10**6)
    bad = Point("m", (("host", "ends in \\"),), {"i": 1}, 7)
    store.append([bad, *points(2)])
    assert list(store.points()) == points(2)
    ((point, reason),) = store.quarantined()
    assert point == bad and "cannot be written as line protocol" in reason
    assert "quarantined a point of m" in caplog.text


def test_latest_lp_keeps_the_newest_point_per_series(tmp_path):
    store = Store(str(tmp_path), max_bytes=10**6)
    other = Point("n", (("host", "a b,c=d"),), {"f": 1.5, "s": "x y"}, 9)
    store.append([*points(2, start=10), other])
    store.append(points(1, start=3))  # older than what latest.lp holds for series m
    assert sorted(store.latest_lines()) == sorted([to_line(points(1, start=11)[0]), to_line(other)])


@pytest.mark.parametrize(
    "point",
    [
        Point("m", (("host", "h"),), {"i": 1, "f": 0.1, "b": True, "c": False, "s": ""}, 1),
        Point("a b,c", (("k ,=", "v ,="), ("z", "back\\slash")), {"f ,=": -1e300, "s": 'q"\\,= x'}, -5),
        Point("m", (), {"n": -3, "big": 2**62, "e": 1e-7, "x": 3.0}, 1_700_000_000_000_000_000),
    ],
)
def test_from_line_reads_what_to_line_writes(point):
    line = to_line(point)
    assert from_line(line) == point
    # The series key is the line's measurement and tags, whatever the fields.
    key = series_key(line)
    assert line.startswith(key + " ") and key == series_key(to_line(Point(point.measurement, point.tags, {"o": 1}, 0)))
    assert measurement_of(line) == point.measurement


def test_quarantined_points_are_counted(tmp_path):
    store = Store(str(tmp_path), 10**8)
    unwritable = Point("m", (("host", "ends\\"),), {"i": 1}, 1)
    store.append([unwritable])  # quarantined when appended: it could never be sent
    store.quarantine(Point("m", (("host", "h"),), {"i": 2}, 2), "InfluxDB rejected it: HTTP 400")
    assert len(store.quarantined()) == 2 and store.counts().quarantined_points == 2


def test_counts_are_rewritten_in_place_and_read_from_a_store_written_before(tmp_path):
    (tmp_path / "counts.json").write_text('{"dropped_points": 5, "torn_records": 2, "unwritten_points": 1}')
    store = Store(str(tmp_path), 10**8)
    assert store.counts() == StoreCounts(dropped_points=5, torn_records=2, unwritten_points=1)
    inode = os.stat(tmp_path / "counts.json").st_ino
    for _ in range(3):
        store._add_counts(torn_records=1)
    assert os.stat(tmp_path / "counts.json").st_ino == inode  # no new file: a full disk cannot stop it
    assert store.counts().torn_records == 5
    # A write torn in the middle of a slot leaves the copy's (written just after) or, torn in
    # both, the other slot's counts, one change older.
    for name, torn_records in (("counts.json", 5), ("counts.copy.json", 4)):
        with open(tmp_path / name, "r+b") as f:
            f.seek(COUNTS_SLOT_BYTES + 20)  # the slot written last (serial 3, the second slot)
            f.write(b"\0" * 40)
        assert Store(str(tmp_path), 10**8).counts().torn_records == torn_records


def test_a_torn_tail_a_ship_has_read_is_never_joined_to_the_record_written_in_its_place(tmp_path):
    """A ship reads the newest segment without the store's lock, through a read buffer. A collect
    killed in the middle of a write (the kernel stops a write at a page boundary on SIGKILL) leaves
    a torn tail; the ship's buffer holds it; the next append cuts it and writes a new record where
    it stood. The ship must not join the torn bytes it holds to the end of that new record: the
    joined line fails its checksum, and the new record was skipped as bad, then counted only as a
    torn record, its point in no place and no counter (the accounting test's one lost point)."""
    store = Store(str(tmp_path), max_bytes=10**6)
    store.append(points(3))
    [(_, segment)] = store.segments()
    with open(segment, "ab") as f:
        f.write(encode_record(points(1, start=3)[0])[:20])  # the write a SIGKILL cut short
    records = store.unshipped()
    next(records)  # the ship's read buffer now holds the whole segment, torn tail too
    store.append(points(2, start=4))  # cuts the torn tail and writes points 4 and 5 in its place
    rest = list(records)
    read = [from_line(line.decode()).fields["i"] for _, line in rest]
    store.acknowledge(rest[-1][0])  # as the ship does once InfluxDB took them
    # Points 4 and 5 were read by this ship or wait for the next; the one torn record is the cut tail.
    assert read + unshipped_i(store) == [1, 2, 4, 5]
    assert store.counts().torn_records == 1
