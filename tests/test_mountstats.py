"""mountstats source: real captures, kernel variants, invalid inputs, nfs-utils as the reference."""

from __future__ import annotations

import os
import re
import subprocess

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dnfsmon import rates
from dnfsmon.sources import mountstats as ms
from dnfsmon.sources.base import ParseError, Raw

# Real captures from other projects' test data (origin and licence: tests/fixtures/SOURCES.md).
FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "mountstats")
TELEGRAF = os.path.join(FIXTURES, "telegraf-testdata.mountstats")
PROCFS = os.path.join(FIXTURES, "procfs-26231.mountstats")


def fixture(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


# A minimal valid NFSv3 block, statvers 1.1, kernel >= 5.3 (9 per-op fields).
V3 = """device srv:/export mounted on /u02 with fstype nfs statvers=1.1
\topts:\trw,vers=3,rsize=1048576,wsize=1048576,hard,proto=tcp,nconnect=2,timeo=600,retrans=2,noac
\tage:\t100
\tcaps:\tcaps=0x3fc7,wtmult=512,dtsize=32768,bsize=0,namlen=255
\tsec:\tflavor=1,pseudoflavor=1
\tevents:\t1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27
\tbytes:\t100 200 300 400 500 600 7 8
\tRPC iostats version: 1.1  p/v: 100003/3 (nfs)
\txprt:\ttcp 871 1 1 0 0 1000 1000 0 3000 50 16 200 100
\txprt:\ttcp 872 1 1 0 0 1000 1000 0 1000 50 16 200 100
\tper-op statistics
\t        NULL: 0 0 0 0 0 0 0 0 0
\t        READ: 1000 1002 1 100000 8000000 50 9000 9100 3
\t       WRITE: 500 500 0 4000000 50000 20 4000 4050 0
"""
OTHER = "device /dev/sda1 mounted on / with fstype ext4\n"
SECOND = V3.replace("srv:/export mounted on /u02", "srv2:/data mounted on /u03")


def parse(text):
    return ms.parse_mountstats(text)


def test_telegraf_capture_four_mounts_v3_and_v4():
    mounts, problems = parse(fixture(TELEGRAF))
    assert problems == []
    assert [(m.mountpoint, m.server, m.export, m.fstype) for m in mounts] == [
        ("/A", "1.2.3.4", "/storage/NFS", "nfs"),
        ("/B", "2.2.2.2", "/nfsdata/", "nfs4"),
        ("/C", "nfsserver1", "/vol/export1/bread_recipes", "nfs"),
        ("/D", "nfsserver2", "/tank/os2warp", "nfs4"),
    ]
    a, b, _, d = mounts
    # The capture's opts line for /B has spaces after commas: options still parse.
    assert b.options["acdirmin"] == "30" and b.options["clientaddr"] == "3.3.3.3"
    assert a.ops["READ"] == dict(zip(ms.OP_FIELDS[:8], range(600, 608)))  # 8 fields: no "errors"
    assert d.rpc_version == "1.1" and d.ops["ACCESS"]["errors"] == 0 and d.age == 2
    assert a.transports == [
        (
            "tcp",
            dict(
                zip(
                    ms.XPRT_FIELDS["tcp"],
                    [733, 1, 1, 0, 0, 96172963, 96172963, 0, 620878754, 0, 690, 196347132, 524706275],
                )
            ),
        )
    ]
    assert a.events["vfsopen"] == 27525 and a.bytes["serverread"] == 1134399088816


def test_procfs_capture_keeps_its_near_2_64_counter_as_read():
    mounts, problems = parse(fixture(PROCFS))
    assert problems == []
    (mount,) = mounts
    assert mount.options["vers"] == "4.0" and mount.rpc_version == "1.0"
    assert mount.ops["ACCESS"]["queue_ms"] == 18446743919241604546


def test_rates_from_the_procfs_capture_reject_the_near_2_64_counter():
    text = fixture(PROCFS)
    newer = text.replace("13968", "13978").replace(
        "ACCESS: 2927395007 2927394995 0 526931094212 362996810236 18446743919241604546 1667369447 1953587717",
        "ACCESS: 2927395107 2927395095 0 526931094312 362996810336 18446743919241605000 1667369547 1953587817",
    )
    old_samples, _ = ms.samples(Raw({ms.MOUNTSTATS: text}, 1000.0, 1.0), "h")
    new_samples, _ = ms.samples(Raw({ms.MOUNTSTATS: newer}, 1010.0, 11.0), "h")
    result = rates.diff_all({s.state_key: s for s in old_samples}, new_samples)
    access = next(i for i in result.intervals if dict(i.current.key).get("op") == "ACCESS")
    assert "queue_ms" in access.dropped
    fields = ms.fields(access)
    assert fields["ops_per_s"] == 10.0 and fields["avg_rtt_ms"] == 1.0
    assert "avg_queue_ms" not in fields  # never published as a huge latency


@pytest.mark.parametrize(
    "case, text",
    [
        ("nfsv3_statvers_1_1_nine_field_ops", V3),
        (
            "statvers_1_0_eight_field_ops",
            V3.replace("statvers=1.1", "statvers=1.0")
            .replace("version: 1.1", "version: 1.0")
            .replace(" 9100 3\n", " 9100\n")
            .replace(" 4050 0\n", " 4050\n")
            .replace(" 0 0 0 0 0 0 0 0 0\n", " 0 0 0 0 0 0 0 0\n"),
        ),
        ("statvers_1_2", V3.replace("statvers=1.1", "statvers=1.2")),
        (
            "nfsv4_1_with_impl_id_and_nfsv4_lines",
            V3.replace("fstype nfs ", "fstype nfs4 ")
            .replace("vers=3", "vers=4.1")
            .replace(
                "\tcaps:",
                "\timpl_id:\tname='',domain='',date='0,0'\n\tnfsv4:\tbm0=0xfdffafff,sessions,pnfs=not configured\n\tcaps:",
            )
            .replace("p/v: 100003/3", "p/v: 100003/4"),
        ),
        (
            "udp_transport",
            V3.replace("proto=tcp", "proto=udp").replace(
                "\txprt:\ttcp 871 1 1 0 0 1000 1000 0 3000 50 16 200 100\n\txprt:\ttcp 872 1 1 0 0 1000 1000 0 1000 50 16 200 100",
                "\txprt:\tudp 871 0 2000 2000 0 4000 100 16 400 200",
            ),
        ),
        (
            "rdma_transport",
            V3.replace("proto=tcp", "proto=rdma").replace(
                "\txprt:\ttcp 871 1 1 0 0 1000 1000 0 3000 50 16 200 100\n\txprt:\ttcp 872 1 1 0 0 1000 1000 0 1000 50 16 200 100",
                "\txprt:\trdma 0 0 1 0 0 2000 2000 0 4000 100 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28",
            ),
        ),
        (
            "older_kernel_fewer_events",
            V3.replace(
                "events:\t1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27",
                "events:\t1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25",
            ),
        ),
        (
            "future_trailing_fields_and_lines",
            V3.replace("\tsec:", "\tfsc:\tsomething new\n\tsec:").replace("27\n", "27 28 29\n"),
        ),
    ],
)
def test_kernel_variants_parse(case, text):
    mounts, problems = parse(OTHER + text)
    assert problems == [], case
    (mount,) = mounts
    assert mount.ops["READ"]["ops"] == 1000
    assert mount.age == 100
    assert mount.transports, case


def test_v3_block_values_and_transport_sums():
    (sample_mount, *op_samples), _ = ms.samples(Raw({ms.MOUNTSTATS: V3}, 50.0, 1.0), "h")
    assert dict(sample_mount.key) == {
        "host": "h",
        "mountpoint": "/u02",
        "server": "srv",
        "export": "/export",
        "nfs_version": "3",
        "proto": "tcp",
    }
    assert sample_mount.counters["x_sends"] == 2000 and sample_mount.counters["x_req_u"] == 4000  # nconnect=2: summed
    g = sample_mount.gauges
    assert (g["nconnect"], g["transports"], g["max_slots"], g["hard"], g["noac"], g["timeo_ds"]) == (
        2,
        2,
        32,
        True,
        True,
        600,
    )
    assert sample_mount.started == 50.0 - 100
    assert {dict(s.key)["op"] for s in op_samples} == {"NULL", "READ", "WRITE"}


def test_octal_escaped_paths():
    text = V3.replace("srv:/export mounted on /u02", r"srv:/my\040export mounted on /mnt/with\040space")
    (mount,), _ = parse(text)
    assert mount.mountpoint == "/mnt/with space" and mount.export == "/my export"


def test_ipv6_server_and_soft_mount():
    text = V3.replace("srv:/export", "[fd00::1]:/export").replace(",hard,", ",soft,")
    (mount,), _ = parse(text)
    assert mount.server == "[fd00::1]" and mount.export == "/export"
    assert ms.mount_gauges(mount)["hard"] is False


# Each case: a broken NFS block between two good ones. The parse error names
# the offending line; the two good mounts are still returned.
BROKEN = [
    ("bad_device_line", "device srv:/x mounted /broken with fstype nfs statvers=1.1\n\tage:\t5\n", 1),
    ("no_statvers", "device srv:/x mounted on /broken with fstype nfs\n\tage:\t5\n", 1),
    ("statvers_0_9", "device srv:/x mounted on /broken with fstype nfs statvers=0.9\n\tage:\t5\n", 1),
    ("statvers_garbage", "device srv:/x mounted on /broken with fstype nfs statvers=x.y\n\tage:\t5\n", 1),
    ("no_age", "device srv:/x mounted on /broken with fstype nfs statvers=1.1\n\topts:\trw\n", 1),
    ("age_not_a_number", "device srv:/x mounted on /broken with fstype nfs statvers=1.1\n\tage:\tabc\n", 2),
    ("age_negative", "device srv:/x mounted on /broken with fstype nfs statvers=1.1\n\tage:\t-5\n", 2),
    ("age_unicode_digit", "device srv:/x mounted on /broken with fstype nfs statvers=1.1\n\tage:\t\u00b9\n", 2),
    ("age_two_values", "device srv:/x mounted on /broken with fstype nfs statvers=1.1\n\tage:\t5 6\n", 2),
    (
        "events_not_numbers",
        "device srv:/x mounted on /broken with fstype nfs statvers=1.1\n\tage:\t5\n\tevents:\t1 2 x\n",
        3,
    ),
    (
        "bytes_negative",
        "device srv:/x mounted on /broken with fstype nfs statvers=1.1\n\tage:\t5\n\tbytes:\t1 -2 3\n",
        3,
    ),
    (
        "rpc_line_mangled",
        "device srv:/x mounted on /broken with fstype nfs statvers=1.1\n\tage:\t5\n\tRPC iostats: what\n",
        3,
    ),
    ("xprt_without_protocol", "device srv:/x mounted on /broken with fstype nfs statvers=1.1\n\tage:\t5\n\txprt:\n", 3),
    (
        "xprt_tcp_too_short",
        "device srv:/x mounted on /broken with fstype nfs statvers=1.1\n\tage:\t5\n\txprt:\ttcp 1 2 3\n",
        3,
    ),
    (
        "xprt_not_numbers",
        "device srv:/x mounted on /broken with fstype nfs statvers=1.1\n\tage:\t5\n\txprt:\ttcp 1 2 3 4 5 6 7 8 9 x\n",
        3,
    ),
    (
        "op_seven_fields",
        "device srv:/x mounted on /broken with fstype nfs statvers=1.1\n\tage:\t5\n\tper-op statistics\n\tREAD: 1 2 3 4 5 6 7\n",
        4,
    ),
    (
        "op_without_colon",
        "device srv:/x mounted on /broken with fstype nfs statvers=1.1\n\tage:\t5\n\tper-op statistics\n\tREAD 1 2 3 4 5 6 7 8\n",
        4,
    ),
    (
        "op_not_numbers",
        "device srv:/x mounted on /broken with fstype nfs statvers=1.1\n\tage:\t5\n\tper-op statistics\n\tREAD: 1 2 3 4 5 6 7 z\n",
        4,
    ),
]


@pytest.mark.parametrize("case, block, bad_line", BROKEN, ids=[c[0] for c in BROKEN])
def test_invalid_block_is_reported_and_never_hides_the_other_mounts(case, block, bad_line):
    text = V3 + block + SECOND
    mounts, problems = parse(text)
    assert [m.mountpoint for m in mounts] == ["/u02", "/u03"], case
    assert len(problems) == 1, case
    offset = V3.count("\n")
    assert problems[0].line_no == offset + bad_line, case
    assert str(problems[0]).startswith(f"proc/self/mountstats:{offset + bad_line}: "), case


def test_unknown_transport_is_noted_but_the_mount_kept():
    text = V3.replace("\txprt:\ttcp 872", "\txprt:\tquic 1 2 3\n\txprt:\ttcp 872")
    (mount,), problems = parse(text)
    assert len(mount.transports) == 2 and "unknown transport 'quic'" in str(problems[0])


def test_lines_before_the_first_device_are_reported():
    mounts, problems = parse("garbage\n" + V3)
    assert len(mounts) == 1 and problems[0].line_no == 1


def test_remount_rebaselines_the_mount_and_its_ops():
    (old_samples, _), (new_samples, _) = (
        ms.samples(Raw({ms.MOUNTSTATS: V3}, 500.0, 1.0), "h"),
        ms.samples(
            Raw(
                {ms.MOUNTSTATS: V3.replace("age:\t100", "age:\t5").replace("READ: 1000 1002", "READ: 1001 1003")},
                560.0,
                61.0,
            ),
            "h",
        ),
    )
    result = rates.diff_all({s.state_key: s for s in old_samples}, new_samples)
    assert result.intervals == []
    assert all("restarted" in skip.reason for skip in result.skips)


@pytest.mark.parametrize("path", [TELEGRAF, PROCFS])
def test_per_op_lines_read_per_block_as_read_line_by_line(path):
    """_parse_ops checks a block's per-op lines at once; the line-by-line reader is the reference."""
    lines = fixture(path).splitlines()
    starts = [index for index, line in enumerate(lines) if line.strip() == "per-op statistics"]
    assert starts
    for start in starts:
        block = lines[
            start + 1 : next((i for i in range(start + 1, len(lines)) if lines[i].startswith("device ")), None)
        ]
        assert ms._parse_ops(1, block, "x") == ms._parse_ops_line_by_line(1, block, "x")


op_line = st.one_of(
    st.builds(
        lambda name, counters, indent: f"{indent}{name}: " + " ".join(map(str, counters)),
        st.sampled_from(["READ", "WRITE", "GETATTR", "NULL"]),
        st.lists(st.integers(min_value=0, max_value=2**64), min_size=7, max_size=11),
        st.sampled_from(["\t", "\t        ", ""]),
    ),
    st.text(alphabet="READ:0123 \t", max_size=30),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(op_line, max_size=6))
# Two operations on one line, a line of digits, a blank line: as many names as lines, a name every 9 words.
@example(["\tA: 1 2 3 4 5 6 7 8 B: 1 2 3 4 5 6 7", "8"])
@example(["\tA: 1 2 3 4 5 6 7 8 B: 1 2 3 4 5 6 7 8", "\t"])
def test_per_op_lines_read_at_once_or_line_by_line_alike(lines):
    """_parse_ops checks and converts a block's lines together; the line-by-line reader is the
    reference, for any lines: the same rows, or the same error."""
    try:
        expected = ms._parse_ops_line_by_line(1, lines, "x")
    except ParseError as error:
        with pytest.raises(ParseError) as raised:
            ms._parse_ops(1, lines, "x")
        assert (raised.value.line_no, raised.value.message) == (error.line_no, error.message)
    else:
        assert ms._parse_ops(1, lines, "x") == expected


def test_an_unchanged_block_that_was_refused_is_refused_again():
    """The source remembers only blocks that parsed: a malformed one is reported at every reading."""
    block = "device srv:/x mounted on /broken with fstype nfs statvers=1.1\n\tage:\t5\n\tper-op statistics\n"
    bad = block + "\tREAD: 1 2 3 4 5 6 7 z\n"
    source = ms.MountstatsSource(["*"], [], ["all"])
    for clock in (100.0, 110.0):
        parsed = source.parse(Raw({ms.MOUNTSTATS: V3 + bad}, clock, clock), "h")
        assert [dict(s.key)["mountpoint"] for s in parsed.samples] == ["/u02", "/u02"]
        assert [p.line_no for p in parsed.problems] == [V3.count("\n") + 4]


def test_state_keys_the_source_makes_are_the_samples_own():
    found, _ = ms.samples(Raw({ms.MOUNTSTATS: fixture(TELEGRAF) + fixture(PROCFS)}, 500.0, 1.0), "h")
    assert found
    for sample in found:
        assert sample.state_key == rates.Sample(sample.measurement, sample.key, 0.0, 0.0).state_key


def test_fields_of_one_interval():
    newer = (
        V3.replace("age:\t100", "age:\t110")
        .replace(
            "READ: 1000 1002 1 100000 8000000 50 9000 9100 3", "READ: 2000 2010 2 200000 16192000 150 19000 19200 5"
        )
        .replace("tcp 871 1 1 0 0 1000 1000 0 3000 50", "tcp 871 1 1 0 0 1500 1500 0 5000 150")
    )
    old, _ = ms.samples(Raw({ms.MOUNTSTATS: V3}, 200.0, 1.0), "h")
    new, _ = ms.samples(Raw({ms.MOUNTSTATS: newer}, 210.0, 11.0), "h")
    result = rates.diff_all({s.state_key: s for s in old}, new)
    by_op = {dict(i.current.key).get("op"): ms.fields(i) for i in result.intervals}
    read = by_op["READ"]
    assert read["ops_per_s"] == 100.0
    assert read["kib_per_s"] == pytest.approx((100000 + 8192000) / 1024 / 10)
    assert read["kib_per_op"] == pytest.approx((100000 + 8192000) / 1024 / 1000)
    assert read["sent_kib_per_s"] == pytest.approx(100000 / 1024 / 10)
    assert read["recv_kib_per_s"] == pytest.approx(8192000 / 1024 / 10)
    assert read["retrans_per_s"] == 0.8 and read["retrans_pct"] == 0.8  # 8 of 1000
    assert (read["avg_queue_ms"], read["avg_rtt_ms"], read["avg_exe_ms"]) == (0.1, 10.0, 10.1)
    assert read["timeouts_per_s"] == 0.1 and read["errors_per_s"] == 0.2
    assert by_op["WRITE"]["ops_per_s"] == 0.0 and "avg_rtt_ms" not in by_op["WRITE"]  # no ops, no average
    mount = by_op[None]
    assert mount["rpc_sends_per_s"] == 50.0
    assert mount["avg_backlog"] == 0.2  # 100 backlog units over 500 sends
    assert mount["avg_outstanding_rpcs"] == 4.0
    assert mount["age_s"] == 110 and mount["rsize_bytes"] == 1048576


# --- nfs-utils' mountstats (Debian nfs-common) as the reference ---


def advance(text, seconds, rng):
    """A later capture: age + seconds, and every per-op counter of READ/WRITE advanced consistently."""
    out = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("age:"):
            line = line.replace(stripped.split()[1], str(int(stripped.split()[1]) + seconds))
        match = re.match(r"^(\s*)(READ|WRITE): (.*)$", line)
        if match:
            values = [int(v) for v in match.group(3).split()]
            ops = rng.randint(1, 50000)
            retrans = rng.randint(0, ops // 20)
            size = rng.choice([4096, 8192, 32768, 1048576])
            increments = [
                ops,
                ops + retrans,
                rng.randint(0, 3),
                ops * 200,
                ops * size,
                rng.randint(0, ops * 5),
                rng.randint(ops, ops * 40),
                0,
            ]
            increments[7] = increments[5] + increments[6] + rng.randint(0, ops)
            if len(values) > 8:
                increments.append(rng.randint(0, 5))
            values = [v + inc for v, inc in zip(values, increments)]
            line = f"{match.group(1)}{match.group(2)}: " + " ".join(map(str, values))
        out.append(line)
    return "\n".join(out) + "\n"


def parse_mountstats_iostat(output):
    """{(mountpoint, op): {column: text}} from `mountstats iostat` output."""
    found, mountpoint, columns = {}, None, None
    lines = output.splitlines()
    for number, line in enumerate(lines):
        header = re.match(r"^\S+ mounted on (\S+):$", line)
        if header:
            mountpoint = header.group(1)
        op = re.match(r"^(read|write):\s+ops/s", line)
        if op:
            columns = re.split(r"\s{2,}", line.split(":", 1)[1].strip())
            values = re.findall(r"\d+\s+\([\d.]+%\)|[\d.]+", lines[number + 1])
            found[(mountpoint, op.group(1).upper())] = dict(zip(columns, values))
    return found


@pytest.mark.system
@pytest.mark.parametrize("capture", [TELEGRAF, PROCFS])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_per_op_figures_equal_nfs_utils_mountstats_iostat(tmp_path, capture, seed):
    import random

    old_text = fixture(capture)
    new_text = advance(old_text, 10, random.Random(seed))
    (tmp_path / "old").write_text(old_text)
    (tmp_path / "new").write_text(new_text)
    result = subprocess.run(
        ["mountstats", "iostat", "-f", str(tmp_path / "new"), "-S", str(tmp_path / "old")],
        capture_output=True,
        text=True,
        check=True,
    )
    reference = parse_mountstats_iostat(result.stdout)
    assert reference, result.stdout

    # Our interval: the same 10 s (mountstats takes it from Δage).
    old, _ = ms.samples(Raw({ms.MOUNTSTATS: old_text}, 1000.0, 1.0), "h")
    new, _ = ms.samples(Raw({ms.MOUNTSTATS: new_text}, 1010.0, 11.0), "h")
    intervals = rates.diff_all({s.state_key: s for s in old}, new).intervals
    ours = {
        (dict(i.current.key)["mountpoint"], dict(i.current.key)["op"]): ms.fields(i)
        for i in intervals
        if dict(i.current.key).get("op") in ("READ", "WRITE")
    }
    assert set(reference) == set(ours)
    for key, columns in reference.items():
        mine = ours[key]
        assert format(mine["ops_per_s"], ".3f") == columns["ops/s"], key
        assert format(mine["kib_per_s"], ".3f") == columns["kB/s"], key
        assert format(mine["kib_per_op"], ".3f") == columns["kB/op"], key
        retrans = round(mine["retrans_per_s"] * 10)
        assert f"{retrans} ({mine['retrans_pct']:.1f}%)" == re.sub(r"\s+", " ", columns["retrans"]), key
        assert format(mine["avg_rtt_ms"], ".3f") == columns["avg RTT (ms)"], key
        assert format(mine["avg_exe_ms"], ".3f") == columns["avg exe (ms)"], key
        assert format(mine["avg_queue_ms"], ".3f") == columns["avg queue (ms)"], key
        nine_fields = len(next(m for m in ms.parse_mountstats(new_text)[0] if m.mountpoint == key[0]).ops[key[1]]) == 9
        if nine_fields:
            assert f"{round(mine['errors_per_s'] * 10)} (" in columns["errors"], key
        else:
            # nfs-utils pads an 8-field kernel's line with a zero; the kernel did not count errors: we publish none.
            assert "errors_per_s" not in mine and columns["errors"].startswith("0 ("), key


# --- fuzzing: mutated real captures never raise anything but ParseError (collected) ---


def mutations():
    base = [fixture(TELEGRAF), fixture(PROCFS), V3]
    return st.tuples(
        st.sampled_from(base),
        st.lists(
            st.tuples(
                st.integers(min_value=0, max_value=10**6),
                st.sampled_from(["delete", "dup", "garble", "truncate", "swap", "insert"]),
                st.text(max_size=12),
            ),
            min_size=1,
            max_size=8,
        ),
    )


def mutate(text, edits):
    lines = text.splitlines()
    for position, kind, junk in edits:
        if not lines:
            break
        i = position % len(lines)
        if kind == "delete":
            del lines[i]
        elif kind == "dup":
            lines.insert(i, lines[i])
        elif kind == "garble":
            words = lines[i].split(" ")
            words[position % len(words)] = junk
            lines[i] = " ".join(words)
        elif kind == "truncate":
            lines[i] = lines[i][: position % (len(lines[i]) + 1)]
        elif kind == "swap":
            j = (i + 1) % len(lines)
            lines[i], lines[j] = lines[j], lines[i]
        else:
            lines.insert(i, junk)
    return "\n".join(lines)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(mutations())
def test_mutated_captures_only_ever_give_documented_errors(case):
    text, edits = case
    mutated = mutate(text, edits)
    _mounts, problems = ms.parse_mountstats(mutated)
    assert all(isinstance(p, ParseError) for p in problems)
    samples, _ = ms.samples(Raw({ms.MOUNTSTATS: mutated}, 10.0, 10.0), "h")
    previous = {s.state_key: s for s in ms.samples(Raw({ms.MOUNTSTATS: text}, 0.0, 0.0), "h")[0]}
    for interval in rates.diff_all(previous, samples).intervals:
        for value in ms.fields(interval).values():
            assert not isinstance(value, float) or value >= 0


# --- the source's samples (a mount's operations as one sample) against a sample per operation ---


def moved(text, rng):
    """A later reading: age + 10 s, and a random part of every counter line moved forward, some
    counters to a value no workload reaches (rates.IMPLAUSIBLE_COUNTER); the per-op lines of about
    one mount in three left as they were (an idle mount's)."""
    out = []
    idle = False
    for line in text.splitlines():
        words = line.split()
        if words and words[0] == "device":
            idle = rng.random() < 0.3
        if words and words[0] == "age:":
            line = line.replace(words[1], str(int(words[1]) + 10))
        elif not idle and len(words) > 8 and words[0].endswith(":") and words[0][:-1].isupper() and rng.random() < 0.5:
            values = [int(w) + rng.choice([0, 0, 1, rng.randint(0, 10**6)]) for w in words[1:]]
            if rng.random() < 0.1:
                values[rng.randrange(len(values))] = 2**64 - rng.randint(1, 10**9)
            line = f"\t{words[0]} " + " ".join(map(str, values))
        elif words and words[0] in ("events:", "bytes:") and rng.random() < 0.5:
            line = f"\t{words[0]} " + " ".join(str(int(w) + rng.randint(0, 1000)) for w in words[1:])
        out.append(line)
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("operations", [["all"], ["READ", "WRITE", "COMMIT", "GETATTR", "ACCESS", "LOOKUP"]])
@pytest.mark.parametrize("seed", range(8))
def test_the_source_publishes_what_a_sample_per_operation_publishes(seed, operations):
    """MountstatsSource diffs a mount's operations in one sample; `samples` keeps each operation a
    sample of its own, as the nfs-utils comparison above reads them: the same points, in the same order."""
    import random

    rng = random.Random(seed)
    # /u03 mounted over: the last block's figures, in the place of the first.
    over = V3.replace("srv:/export mounted on /u02", "srv3:/over mounted on /u03").replace("READ: 1000", "READ: 7000")
    old_text = fixture(TELEGRAF) + SECOND + fixture(PROCFS) + over
    new_text = moved(old_text, rng)
    if seed % 4 == 3:  # a remount: every key of /u03 starts again
        new_text = new_text.replace("age:\t110", "age:\t3")
    source = ms.MountstatsSource(["*"], [], operations)
    old = source.parse(Raw({ms.MOUNTSTATS: old_text}, 1000.0, 1.0), "h").samples
    new = source.parse(Raw({ms.MOUNTSTATS: new_text}, 1010.0, 11.0), "h").samples
    published = source.publish(rates.diff_all({s.state_key: s for s in old}, new), new)

    wanted = None if operations == ["all"] else frozenset(operations)
    reference_old, _ = ms.samples(Raw({ms.MOUNTSTATS: old_text}, 1000.0, 1.0), "h", wanted)
    reference_new, _ = ms.samples(Raw({ms.MOUNTSTATS: new_text}, 1010.0, 11.0), "h", wanted)
    result = rates.diff_all({s.state_key: s for s in reference_old}, reference_new)
    reference = rates.per_key_points(result, ms.fields)
    assert reference
    assert [(p.measurement, p.tags, dict(p.fields), p.time_ns) for p in published] == [
        (p.measurement, p.tags, dict(p.fields), p.time_ns) for p in reference
    ]


def test_an_idle_mounts_block_is_not_parsed_again(monkeypatch):
    """The source remembers what each block parsed to: the same block again with only its age moved
    (an idle mount's) is not parsed, and its samples share the last ones' counters."""
    idle = re.sub(r"age:(\s+)(\d+)", lambda m: f"age:{m.group(1)}{int(m.group(2)) + 10}", fixture(TELEGRAF))
    busy = SECOND.replace("READ: 1000 1002", "READ: 1100 1102").replace("age:\t100", "age:\t110")
    assert busy != SECOND
    source = ms.MountstatsSource(["*"], [], ["all"])
    old = source.parse(Raw({ms.MOUNTSTATS: fixture(TELEGRAF) + SECOND}, 1000.0, 1.0), "h").samples
    parsed = []
    real_parse_block = ms._parse_block
    monkeypatch.setattr(ms, "_parse_block", lambda *args: parsed.append(args) or real_parse_block(*args))
    new = source.parse(Raw({ms.MOUNTSTATS: idle + busy}, 1010.0, 11.0), "h").samples
    # The other mounts' blocks (proc, sysfs, ...) are a header line each, read for their fstype.
    assert [args[1][0] for args in parsed if " with fstype nfs" in args[1][0]] == [busy.splitlines()[0]]
    moved = [dict(b.key)["mountpoint"] for a, b in zip(old, new) if a.counters is not b.counters or a.key is not b.key]
    assert moved == ["/u03", "/u03"]
    # The new reading's age, and the same start: a moved age is all that differs.
    for a, b in zip(old, new):
        if b.measurement == ms.MOUNT_MEASUREMENT:
            assert b.gauges["age_s"] == a.gauges["age_s"] + 10 and b.started == a.started


def readings(seed):
    """A sequence of readings: the fixtures' mounts moving as `moved` moves them, some readings with
    a block damaged, one mount remounted (its age down) or mounted over, a block with two age lines."""
    import random

    rng = random.Random(seed)
    over = V3.replace("srv:/export mounted on /u02", "srv3:/over mounted on /u03")
    two_ages = SECOND.replace("srv2:/data mounted on /u03", "srv4:/two mounted on /u04").replace(
        "\tsec:", "\tage:\t7\n\tsec:"
    )
    text = fixture(TELEGRAF) + SECOND + fixture(PROCFS) + over + two_ages + OTHER
    for _ in range(6):
        choice = rng.random()
        if choice < 0.2:  # damaged in this reading only
            yield mutate(text, [(rng.randrange(10**6), rng.choice(["delete", "dup", "garble", "swap"]), "x")])
        else:
            yield text
        text = moved(text, rng)
        if choice < 0.3:
            text = text.replace("age:\t1", "age:\t", 1)
        elif choice < 0.4:
            text += over.replace("READ: 1000", "READ: 3000")
        elif choice < 0.5:  # the age line moved within a block, the rest unchanged
            text = text.replace("\topts:", "\tage:\t99\n\topts:", 1).replace("\tage:\t100\n", "", 1)


def same_parse(source, raw):
    """The source's samples and problems at `raw`, and a source's that remembers nothing."""
    ours, fresh = source.parse(raw, "h"), ms.MountstatsSource(["*"], [], ["all"]).parse(raw, "h")
    return [
        [(s.state_key, s.to_json(), list(s.gauges), getattr(s, "layout", None)) for s in parsed.samples]
        + [(p.line_no, p.message) for p in parsed.problems]
        for parsed in (ours, fresh)
    ]


# The age line's place left blank, and a blank line at the end where it goes next: a block's text
# without its age line is the same in both.
AGE_AFTER_PER_OP = (V3 + "\n", V3.replace("\tage:\t100", "") + "\tage:\t110\n")
TWO_AGES = V3.replace("\tsec:", "\tage:\t100\n\tsec:")


@pytest.mark.parametrize(
    "old, new",
    [
        # The age line moved after "per-op statistics", where it is no age line: refused, not remembered.
        AGE_AFTER_PER_OP,
        # Two age lines of one value, then only the first moves: the parser reads the last.
        (TWO_AGES, TWO_AGES.replace("age:\t100", "age:\t110", 1)),
        # Blank lines after the block, a mount point mounted over, a non-NFS mount between.
        (V3 + OTHER + V3, V3 + "\n\n" + OTHER + V3.replace("age:\t100", "age:\t110")),
    ],
)
def test_a_block_the_source_remembers_is_only_taken_when_parsing_it_agrees(old, new):
    source = ms.MountstatsSource(["*"], [], ["all"])
    source.parse(Raw({ms.MOUNTSTATS: old}, 1000.0, 1.0), "h")
    ours, fresh = same_parse(source, Raw({ms.MOUNTSTATS: new}, 1010.0, 11.0))
    assert ours == fresh


@pytest.mark.parametrize("seed", range(12))
def test_a_remembered_block_gives_what_parsing_it_gives(seed):
    """The source's shortcut (a block unchanged but for its age is not parsed) against a source that
    remembers nothing, reading by reading: the same samples, the same problems."""
    source = ms.MountstatsSource(["*"], [], ["all"])
    for number, text in enumerate(readings(seed)):
        raw = Raw({ms.MOUNTSTATS: text}, 1000.0 + 10 * number, 1.0 + 10 * number)
        ours, fresh = same_parse(source, raw)
        assert ours == fresh
    assert source.remembered


def test_an_idle_mounts_operations_are_diffed_as_one_vector_with_no_mapping_per_counter():
    """A mount's operations' counters are one CounterVector: its interval's deltas are one tuple
    under the layout's names (no dict of some 300 deltas per mount), all zeros for an idle mount,
    and the mount's operations publish an idle operation's figures."""
    idle = V3.replace("age:\t100", "age:\t110")
    source = ms.MountstatsSource(["*"], [], ["all"])
    old = source.parse(Raw({ms.MOUNTSTATS: V3}, 1000.0, 1.0), "h").samples
    new = source.parse(Raw({ms.MOUNTSTATS: idle}, 1010.0, 11.0), "h").samples
    result = rates.diff_all({s.state_key: s for s in old}, new)
    (interval,) = [i for i in result.intervals if isinstance(i.current, ms.MountOps)]
    assert type(interval.deltas) is rates.CounterVector
    assert interval.deltas.names is interval.current.layout.names
    assert set(interval.deltas.row) == {0} and len(interval.deltas.row) == len(interval.current.counters)
    ops = [p for p in source.publish(result, new) if p.measurement == ms.OP_MEASUREMENT]
    assert ops and all(p.fields["ops_per_s"] == 0.0 and "avg_rtt_ms" not in p.fields for p in ops)


@pytest.mark.parametrize("seed", range(6))
def test_operations_diffed_as_vectors_publish_what_the_same_counters_in_dicts_publish(seed):
    """The state gives the last reading's samples back with their counters in dicts; rates.diff
    then diffs by name and publish reads the deltas by name: the same points as the two vectors of
    one process (the test of the source against a sample per operation covers the vectors)."""
    import random

    rng = random.Random(seed)
    old_text = fixture(TELEGRAF) + SECOND + fixture(PROCFS)
    new_text = moved(old_text, rng)

    def published(reload_previous: bool):
        source = ms.MountstatsSource(["*"], [], ["all"])
        old = source.parse(Raw({ms.MOUNTSTATS: old_text}, 1000.0, 1.0), "h").samples
        if reload_previous:
            old = [rates.Sample.from_json(s.to_json()) for s in old]
            assert not any(type(s.counters) is rates.CounterVector for s in old)
        new = source.parse(Raw({ms.MOUNTSTATS: new_text}, 1010.0, 11.0), "h").samples
        points = source.publish(rates.diff_all({s.state_key: s for s in old}, new), new)
        return [(p.measurement, p.tags, dict(p.fields), p.time_ns) for p in points]

    vectors = published(reload_previous=False)
    assert any(p[0] == ms.OP_MEASUREMENT and p[2]["ops_per_s"] > 0 for p in vectors)
    assert vectors == published(reload_previous=True)
