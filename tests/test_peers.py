"""The host parsers against other projects' test data: what they parse from the same text, we parse too.

The fixtures are the peers' own (tests/fixtures/SOURCES.md gives origin, licence
and commit); the expected values are theirs: node_exporter's end-to-end output
for its fixture /proc, and the values Telegraf's and procfs's tests assert for
theirs. Where dnfsmon reads a value differently on purpose, the case says why.
"""

from __future__ import annotations

import os
import re

import pytest

from dnfsmon import rates
from dnfsmon.sources import mountstats as ms
from dnfsmon.sources import pressure
from dnfsmon.sources.base import HostInputs, Raw

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
NODE = os.path.join(FIXTURES, "peers", "node_exporter")
PROCFS = os.path.join(FIXTURES, "peers", "procfs")


def text(*parts: str) -> str:
    with open(os.path.join(*parts), encoding="utf-8") as f:
        return f.read()


def node_exporter_values() -> list[tuple[str, dict[str, str], float]]:
    """(metric, labels, value) of every line of node_exporter's e2e output we compare."""
    found = []
    for line in text(NODE, "e2e-output.subset.txt").splitlines():
        match = re.match(r"^(\w+)(?:\{(.*)\})? (\S+)$", line)
        assert match, line
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2) or ""))
        found.append((match.group(1), labels, float(match.group(3))))
    return found


# node_exporter's name (after node_mountstats_nfs_) -> our name, for the per-mount lines.
NODE_EVENTS = {
    "inode_revalidate": "inoderevalidate",
    "dnode_revalidate": "dentryrevalidate",
    "data_invalidate": "datainvalidate",
    "attribute_invalidate": "attrinvalidate",
    "vfs_open": "vfsopen",
    "vfs_lookup": "vfslookup",
    "vfs_access": "vfsaccess",
    "vfs_update_page": "vfsupdatepage",
    "vfs_read_page": "vfsreadpage",
    "vfs_read_pages": "vfsreadpages",
    "vfs_write_page": "vfswritepage",
    "vfs_write_pages": "vfswritepages",
    "vfs_getdents": "vfsgetdents",
    "vfs_setattr": "vfssetattr",
    "vfs_flush": "vfsflush",
    "vfs_fsync": "vfsfsync",
    "vfs_lock": "vfslock",
    "vfs_file_release": "vfsrelease",
    "truncation": "setattrtrunc",
    "write_extension": "extendwrite",
    "silly_rename": "sillyrename",
    "short_read": "shortread",
    "short_write": "shortwrite",
    "jukebox_delay": "delay",
    "pnfs_read": "pnfsread",
    "pnfs_write": "pnfswrite",
}
NODE_BYTES = {
    "read_bytes": "normalread",
    "write_bytes": "normalwrite",
    "direct_read_bytes": "directread",
    "direct_write_bytes": "directwrite",
    "total_read_bytes": "serverread",
    "total_write_bytes": "serverwrite",
    "read_pages": "readpages",
    "write_pages": "writepages",
}
NODE_TRANSPORT = {
    "bind": "bind_count",
    "connect": "connect_count",
    "idle_time_seconds": "idle_time",
    "sends": "sends",
    "receives": "recvs",
    "bad_transaction_ids": "bad_xids",
    "backlog_queue": "bklog_u",
    "maximum_rpc_slots": "max_slots",
    "sending_queue": "sending_u",
    "pending_queue": "pending_u",
}
# Per-op: (our field, divisor): node_exporter publishes the millisecond counters in seconds.
NODE_OPS = {
    "requests": ("ops", 1),
    "transmissions": ("trans", 1),
    "major_timeouts": ("timeouts", 1),
    "sent_bytes": ("bytes_sent", 1),
    "received_bytes": ("bytes_recv", 1),
    "queue_time_seconds": ("queue_ms", 1000),
    "response_time_seconds": ("rtt_ms", 1000),
    "request_time_seconds": ("execute_ms", 1000),
}
# The one value we read differently on purpose: ACCESS's queue time is printed as
# 18446743919241604546 ms (2^64 - 1.5e8, kernel garbage). node_exporter converts it to
# a time.Duration, which overflows, and publishes 9.007e12 s; we keep the number as
# read and dnfsmon.rates gives it no delta (test_mountstats: near 2^64).
# And the UDP transport prints no connect count nor idle time (xs_udp_print_stats):
# node_exporter publishes 0 for them, we publish nothing.
NODE_DISAGREES = {("queue_time_seconds", "ACCESS", "udp"), ("connect", "", "udp"), ("idle_time_seconds", "", "udp")}


def test_mountstats_agrees_with_node_exporter_end_to_end_output():
    mounts, problems = ms.parse_mountstats(text(FIXTURES, "mountstats", "node_exporter-10.mountstats"))
    assert problems == []
    # node_exporter labels a mount by export and protocol and keeps the first block of each;
    # we key by mount point and keep the last block of each (the visible one, as nfs-utils).
    # Here the two agree: each protocol's first block is also the only one we keep of it.
    by_protocol: dict[str, ms.Mount] = {}
    for mount in mounts:
        by_protocol.setdefault(mount.options["proto"], mount)
    compared, disagreed = 0, set()
    for metric, labels, value in node_exporter_values():
        if not metric.startswith("node_mountstats_nfs_") or metric.endswith("_info"):
            continue
        name = metric[len("node_mountstats_nfs_") :]
        mount = by_protocol[labels["protocol"]]
        assert f"{mount.server}:{mount.export}" == labels["export"]
        if name == "age_seconds_total":
            ours: float = mount.age or 0
        elif name.startswith("event_"):
            ours = mount.events[NODE_EVENTS[name[len("event_") : -len("_total")]]]
        elif name.startswith("transport_"):
            short = re.sub(r"_total$", "", name[len("transport_") :])
            (_, transport), *_ = mount.transports
            if NODE_TRANSPORT[short] not in transport:
                disagreed.add((short, "", labels["protocol"]))
                assert value == 0  # node_exporter's zero for a field UDP does not print
                continue
            ours = transport[NODE_TRANSPORT[short]]
        elif name.startswith("operations_"):
            short = re.sub(r"_total$", "", name[len("operations_") :])
            field, divisor = NODE_OPS[short]
            ours = mount.ops[labels["operation"]][field] / divisor
            if (short, labels["operation"], labels["protocol"]) in NODE_DISAGREES:
                disagreed.add((short, labels["operation"], labels["protocol"]))
                assert ours != pytest.approx(value)
                continue
        else:
            ours = mount.bytes[NODE_BYTES[re.sub(r"_total$", "", name)]]
        assert ours == pytest.approx(value, rel=1e-12), (metric, labels)
        compared += 1
    assert disagreed == NODE_DISAGREES
    assert compared == 143  # every line of the subset but the three _info lines and the three disagreements


def test_mountstats_agrees_with_telegraf_nfsclient_test():
    """The values Telegraf's nfsclient_test.go (TestNFSClientProcessFull, ...Stat) asserts for its testdata."""
    mounts, problems = ms.parse_mountstats(text(FIXTURES, "mountstats", "telegraf-testdata.mountstats"))
    assert problems == []
    a = mounts[0]
    assert a.mountpoint == "/A"
    assert (a.ops["READ"]["ops"], a.ops["READ"]["rtt_ms"], a.ops["READ"]["execute_ms"]) == (600, 606, 607)
    # Telegraf: retrans = trans - ops, bytes = sent + received, rtt_per_op = rtt / ops.
    read, write = a.ops["READ"], a.ops["WRITE"]
    assert read["trans"] - read["ops"] == 1 and read["bytes_sent"] + read["bytes_recv"] == 1207
    assert write["trans"] - write["ops"] == 1 and write["bytes_sent"] + write["bytes_recv"] == 1407
    assert write["rtt_ms"] / write["ops"] == pytest.approx(1.0085714285714287)
    assert a.events == dict(
        zip(
            ms.EVENT_COUNTERS,
            [
                *(301736, 22838, 410979, 26188427, 27525, 9140, 114420, 30785253, 5308856, 5364858, 30784819),
                *(79832668, 170, 64, 18194, 29294718, 0, 18279, 0, 2, 785551, 0, 0, 0, 0, 0, 0),
            ],
        )
    )
    assert a.bytes == dict(
        zip(
            ms.BYTE_COUNTERS,
            [204440464584, 110857586443, 783170354688, 296174954496, 1134399088816, 407107155723, 85749323, 30784819],
        )
    )
    (_, tcp), *_ = a.transports
    assert [tcp[n] for n in ("bind_count", "connect_count", "connect_time", "idle_time", "sends", "recvs")] == [
        1,
        1,
        0,
        0,
        96172963,
        96172963,
    ]
    assert (tcp["bad_xids"], tcp["req_u"], tcp["bklog_u"]) == (0, 620878754, 0)


def pressure_sample(root: str, host: str = "h") -> dict:
    """The counters and gauges of the pressure source's samples from a fixture /proc tree."""
    raw = pressure.read(HostInputs(proc=os.path.join(root, "proc"), sys="/nonexistent"))
    found, problems = pressure.samples(raw, host)
    assert problems == []
    merged: dict = {}
    for sample in found:
        merged.update(sample.counters)
        merged.update(sample.gauges)
    return merged


def test_pressure_agrees_with_node_exporter_end_to_end_output():
    ours = pressure_sample(NODE)
    theirs = {metric: value for metric, _, value in node_exporter_values() if not metric.startswith("node_mountstats")}
    # PSI totals are microseconds; node_exporter publishes seconds. "waiting" is "some", "stalled" is "full".
    for resource in ("cpu", "io", "memory"):
        assert ours[f"psi_{resource}_some_us"] / 1e6 == pytest.approx(
            theirs[f"node_pressure_{resource}_waiting_seconds_total"]
        )
    for resource in ("io", "memory"):
        assert ours[f"psi_{resource}_full_us"] / 1e6 == pytest.approx(
            theirs[f"node_pressure_{resource}_stalled_seconds_total"]
        )
    for name in ("pswpin", "pswpout", "pgmajfault"):
        assert ours[name] == theirs[f"node_vmstat_{name}"]
    assert ours["mem_total_bytes"] == theirs["node_memory_MemTotal_bytes"]
    assert (ours["procs_running"], ours["procs_blocked"]) == (
        theirs["node_procs_running"],
        theirs["node_procs_blocked"],
    )
    # node_exporter's /proc/stat: the cpu line in USER_HZ ticks (its cpu0 line is 444.9 s of user time).
    assert ours["cpu_user_ms"] == 301854 * 10 and ours["cpus"] == 8


def test_pressure_agrees_with_procfs_tests():
    """procfs's stat_test.go, meminfo_test.go and psi_test.go values for its fixture /proc."""
    ours = pressure_sample(PROCFS)
    assert ours["cpu_user_ms"] == 301854 * 10 and ours["cpu_iowait_ms"] == 3552 * 10
    assert (ours["procs_running"], ours["procs_blocked"], ours["cpus"]) == (2, 1, 8)
    assert ours["mem_total_bytes"] == 15666184 * 1024
    # This meminfo is from a kernel before 3.14: no MemAvailable, so no available memory (not an estimate).
    assert "mem_available_bytes" not in ours
    assert (ours["psi_cpu_some_us"], ours["psi_io_some_us"], ours["psi_io_full_us"]) == (15, 15, 25)


def test_cpu_times_agree_with_psutil_on_this_machine():
    """psutil's cpu_times() of the live /proc/stat, read just before and after ours, brackets ours."""
    psutil = pytest.importorskip("psutil", reason="psutil is the reference here; pip install -e '.[test]'")
    before = psutil.cpu_times()
    ours = pressure_sample("/", host="h")
    after = psutil.cpu_times()
    for state in pressure.CPU_STATES:
        low, high = getattr(before, state) * 1000, getattr(after, state) * 1000
        # psutil divides ticks by SC_CLK_TCK, we multiply by 10: both exact to a tick (10 ms).
        assert low - 10 <= ours[f"cpu_{state}_ms"] <= high + 10, state


# --- The four places where dnfsmon disagreed with the peers, each fixed. ---


def two_readings(first: Raw, second: Raw):
    old = pressure.SOURCE.parse(first, "h")
    new = pressure.SOURCE.parse(second, "h")
    result = rates.diff_all({s.state_key: s for s in old.samples}, new.samples)
    return pressure.SOURCE.publish(result, new.samples), new.problems


def node_raw(t: float, **replace: str) -> Raw:
    raw = pressure.read(HostInputs(proc=os.path.join(NODE, "proc"), sys="/nonexistent"))
    files = dict(raw.files)
    files.update(replace)
    return Raw(files=files, time=t, wall_time=1_700_000_000 + t)


def test_iowait_going_backwards_costs_the_cpu_percentages_only():
    """proc.rst: iowait "will decrease in certain conditions"; psutil ignores such a decrease."""
    stat = text(NODE, "proc", "stat")
    cpu_line = stat.splitlines()[0]
    later = stat.replace(cpu_line, "cpu  301954 612 111922 8979104 3500 2 3944 0 44 36", 1)
    psi_later = text(NODE, "proc", "pressure", "io").replace("total=159886802", "total=160886802")
    points, problems = two_readings(
        node_raw(100.0), node_raw(110.0, **{pressure.STAT: later, "proc/pressure/io": psi_later})
    )
    assert problems == []
    (point,) = points
    assert point.fields["psi_io_some_pct"] == pytest.approx(10.0)  # 1 s of 10 s
    assert point.fields["procs_running"] == 2 and "swap_in_pages_per_s" in point.fields
    assert not any(name.startswith("cpu_") and name != "cpus" for name in point.fields)


def test_an_unknown_psi_line_is_ignored_not_the_whole_file():
    """procfs ignores lines other than some/full; the kernel has added files and lines before."""
    newer = text(NODE, "proc", "pressure", "io") + "partial avg10=0.00 avg60=0.00 avg300=0.00 total=7\n"
    raw = node_raw(1.0, **{"proc/pressure/io": newer})
    found, problems = pressure.samples(raw, "h")
    assert problems == []
    assert found[0].counters["psi_io_some_us"] == 159886802


def cut(line_tag: str, keep: int) -> str:
    """The node_exporter mount block with its `line_tag` line cut to `keep` counters."""
    block = text(FIXTURES, "mountstats", "node_exporter-10.mountstats").split("\n\n")[0]
    lines = []
    for line in block.splitlines():
        words = line.split()
        if words and words[0] == line_tag:
            line = "\t" + " ".join(words[: 1 + keep])
        lines.append(line)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "tag, keep",
    [("bytes:", 7), ("bytes:", 3), ("events:", 26), ("events:", 24), ("events:", 10)],
)
def test_a_cut_bytes_or_events_line_is_refused_with_the_count(tag, keep):
    mounts, problems = ms.parse_mountstats(cut(tag, keep))
    assert mounts == []
    (problem,) = problems
    assert f"{tag} has {keep} counters" in str(problem) and "a cut line" in str(problem)


@pytest.mark.parametrize("tag, keep", [("bytes:", 8), ("events:", 27), ("events:", 25)])
def test_the_counts_the_kernel_prints_are_accepted(tag, keep):
    mounts, problems = ms.parse_mountstats(cut(tag, keep))
    assert problems == [] and len(mounts) == 1


def test_a_block_without_opts_publishes_no_option_it_cannot_know():
    block = "\n".join(line for line in cut("bytes:", 8).splitlines() if not line.strip().startswith("opts:"))
    (mount,), problems = ms.parse_mountstats(block)
    assert problems == []
    gauges = ms.mount_gauges(mount)
    assert not {"hard", "noac", "nconnect"} & set(gauges)
    assert gauges["age_s"] == 13968
    with_opts = ms.mount_gauges(ms.parse_mountstats(cut("bytes:", 8))[0][0])
    assert (with_opts["hard"], with_opts["noac"], with_opts["nconnect"]) == (True, False, 1)
