"""The embedded local store: durability, torn tails, size bound."""

from __future__ import annotations

import os

from dnfsmon.points import Point
from dnfsmon.store import Store, decode_record, encode_record


def points(n, start=0):
    return [
        Point("m", (("host", "h"),), {"i": i, "f": i / 3}, 1_700_000_000_000_000_000 + i)
        for i in range(start, start + n)
    ]


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
    data[1] = data[1].replace(b'"i":1', b'"i":7')  # checksum no longer matches
    open(path, "wb").write(b"\n".join(data))
    assert [p.fields["i"] for p in store.points()] == [0, 2]


def test_zero_filled_garbage_is_not_a_point():
    for garbage in (b"\0\0\0\0\n", b"00000000 {}\n", b"nonsense\n"):
        try:
            decode_record(garbage)
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
    store = Store(str(tmp_path), max_bytes=10**6, segment_bytes=4096)
    for batch in range(10):
        store.append(points(10, start=batch * 10))
    assert len(store.segments()) > 2
    pending = list(store.unshipped())
    assert [p.fields["i"] for _, p in pending] == list(range(100))  # store order
    position, _ = pending[54]
    store.acknowledge(position)
    assert [p.fields["i"] for _, p in store.unshipped()] == list(range(55, 100))
    assert store.segments()[0][0] == position.segment  # wholly shipped segments are gone
    # A new Store object (next cron run) resumes at the same place.
    assert [p.fields["i"] for _, p in Store(str(tmp_path), 10**6).unshipped()][:1] == [55]
    last, _ = list(store.unshipped())[-1]
    store.acknowledge(last)
    assert list(store.unshipped()) == []
    store.append(points(1, start=100))  # the sequence goes on after the cursor
    assert [p.fields["i"] for _, p in store.unshipped()] == [100]


def test_bound_counts_only_unshipped_points_as_dropped(tmp_path):
    store = Store(str(tmp_path), max_bytes=12_000, segment_bytes=4096)
    for batch in range(4):
        store.append(points(10, start=batch * 10))
    everything = list(store.unshipped())
    store.acknowledge(everything[-1][0])  # all shipped
    for batch in range(4, 12):
        store.append(points(10, start=batch * 10))
    kept = [p.fields["i"] for _, p in store.unshipped()]
    assert store.counts().dropped_points == 80 - len(kept)


def test_unreadable_cursor_resends_from_the_oldest_point(tmp_path, caplog):
    store = Store(str(tmp_path), max_bytes=10**6)
    store.append(points(3))
    (tmp_path / "cursor.json").write_text("{broken")
    assert len(list(store.unshipped())) == 3
    assert "cursor unreadable" in caplog.text
