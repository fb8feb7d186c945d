"""`dnfsmon wire`'s output: one JSON document or tables for people, from the same dict."""

from __future__ import annotations

import json
from typing import Any, Optional

from ..errors import EnvironmentProblem
from . import Trace, transactions
from .analysis import DURATIONS, MatchStats, OperationStats, match

TIMING_POINTS = {
    "first_call_to_first_reply_ms": "first bytes of the call to first bytes of the reply "
    "(what tshark -z rpc,srt reports with TCP desegmentation off)",
    "last_call_to_first_reply_ms": "call complete (all its bytes arrived in order) to first bytes of the reply: "
    "the server's own time; the split uses it on the server capture",
    "first_call_to_last_reply_ms": "first bytes of the call to reply complete (all its bytes arrived in order): "
    "what the caller waits; the split uses it on the client capture",
}


def analyse(paths: list[str], operations: Optional[set[str]]) -> dict[str, Any]:
    """Read one capture (or a client and a server capture) and return the report as a dict."""
    traces = [Trace(path) for path in paths]
    matched: Optional[MatchStats] = None
    if len(traces) == 1:
        for _ in transactions(traces[0], operations):
            pass
    else:
        matched = match(transactions(traces[0], operations), transactions(traces[1], operations))
        if matched.swapped():
            raise EnvironmentProblem(
                f"{paths[0]} looks like the server's capture and {paths[1]} the client's: in "
                f"{matched.client_shorter} of {matched.matched()} RPCs seen in both, the first capture's time is "
                f"the shorter, which a client's capture cannot be; give the client's capture first: "
                f"dnfsmon wire {paths[1]} {paths[0]}"
            )
    roles = ["capture"] if len(traces) == 1 else ["client", "server"]
    report: dict[str, Any] = {
        "timing_points": TIMING_POINTS,
        "captures": [_capture(role, trace) for role, trace in zip(roles, traces)],
    }
    if matched is not None:
        report["matched"] = _matched(matched)
    return report


def _capture(role: str, trace: Trace) -> dict[str, Any]:
    operations = sorted(trace.stats.operations.items(), key=lambda item: (-_count(item[1]), item[0]))
    return {
        "role": role,
        "path": trace.path,
        "frames": trace.read.frames,
        "tcp_segments": trace.streams.segments,
        "duration_s": round((trace.last_ns - trace.first_ns) / 1e9, 6) if trace.first_ns and trace.last_ns else 0.0,
        "skipped_frames": _skipped(trace),
        "file_ends_mid_record": trace.read.truncated_tail,
        "stream_events": dict(sorted(trace.streams.events.items())),
        "unpaired": dict(sorted(trace.stats.unpaired.items())),
        "notes": dict(sorted(trace.stats.notes.items())),
        "left_out": dict(sorted(trace.stats.left_out.items())),
        "other_programs": {str(k): v for k, v in sorted(trace.stats.other_programs.items())},
        "operations": {name: _operation(stats) for name, stats in operations},
    }


def _skipped(trace: Trace) -> dict[str, int]:
    skipped = dict(trace.skipped_frames)
    if trace.read.unknown_interface:
        skipped["pcapng packet of an interface never described"] = trace.read.unknown_interface
    return dict(sorted(skipped.items()))


def _count(stats: OperationStats) -> int:
    return stats.durations["first_call_to_first_reply"].count


def _operation(stats: OperationStats) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "count": _count(stats),
        "errors": stats.errors,
        "call_bytes": stats.call_bytes,
        "reply_bytes": stats.reply_bytes,
    }
    for name in DURATIONS:
        entry[name + "_ms"] = stats.durations[name].summary()
    return entry


def _matched(result: MatchStats) -> dict[str, Any]:
    operations = {}
    for name, entry in sorted(result.operations.items(), key=lambda item: (-item[1].client_first.count, item[0])):
        operations[name] = {
            "count": entry.client_first.count,
            "client_first_call_to_last_reply_ms": entry.client.summary(),
            "server_last_call_to_first_reply_ms": entry.server.summary(),
            "difference_ms": entry.difference.summary(),
            "client_first_call_to_first_reply_ms": entry.client_first.summary(),
            "server_first_call_to_first_reply_ms": entry.server_first.summary(),
            "difference_first_call_to_first_reply_ms": entry.difference_first.summary(),
        }
    return {
        "operations": operations,
        "matched": result.matched(),
        "matched_without_last_segments": result.incomplete,
        "unmatched": {side: dict(sorted(counts.items())) for side, counts in result.unmatched.items()},
    }


def to_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=1)


# The table each capture's text shows: (duration, title).
TEXT_TABLE = {
    "capture": ("first_call_to_last_reply_ms", "the client's wait, first call bytes to reply complete"),
    "client": ("first_call_to_last_reply_ms", "the client's wait, first call bytes to reply complete"),
    "server": ("last_call_to_first_reply_ms", "the server's own time, call complete to first reply bytes"),
}


def _ms(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.3f}"


def to_text(report: dict[str, Any]) -> str:
    lines: list[str] = []
    names = [name for capture in report["captures"] for name in capture["operations"]]
    width = max([12, *map(len, names)])
    for capture in report["captures"]:
        lines.append(
            f"{capture['role']} {capture['path']}: {capture['frames']} frames, {capture['tcp_segments']} TCP segments, "
            f"{capture['duration_s']:.3f} s"
        )
        duration, title = TEXT_TABLE[capture["role"]]
        lines.append(f"  {title} (ms):")
        lines.append(
            f"  {'OPERATION':<{width}} {'COUNT':>8} {'AVG':>9} {'P50':>9} {'P95':>9} {'P99':>9} {'MAX':>9} "
            f"{'CALL BYTES':>12} {'REPLY BYTES':>12} {'ERRORS':>6}"
        )
        for name, entry in capture["operations"].items():
            srt = entry[duration]
            lines.append(
                f"  {name:<{width}} {srt['count']:>8} {_ms(srt['avg_ms']):>9} {_ms(srt['p50_ms']):>9} "
                f"{_ms(srt['p95_ms']):>9} {_ms(srt['p99_ms']):>9} {_ms(srt['max_ms']):>9} "
                f"{entry['call_bytes']:>12} {entry['reply_bytes']:>12} {entry['errors']:>6}"
            )
        if not capture["operations"]:
            lines.append("  (no NFS calls with replies found)")
        if capture["role"] == "capture":
            lines.append(
                "  (a capture taken at the server: its own time is last_call_to_first_reply_ms in --format json)"
            )
        for title, key in (
            ("skipped frames", "skipped_frames"),
            ("stream events", "stream_events"),
            ("not paired", "unpaired"),
            ("left out", "left_out"),
            ("note", "notes"),
        ):
            for reason, count in capture[key].items():
                lines.append(f"  {title}: {count} {reason}")
        if capture["file_ends_mid_record"]:
            lines.append("  the file ends inside a record (capture cut short): the partial record was dropped")
        lines.append("")
    matched = report.get("matched")
    if matched is not None:
        lines.append("matched RPCs (same XID and operation in both captures):")
        lines.append("  client = first call bytes to reply complete on the client capture (the client's wait);")
        lines.append("  server = call complete to first reply bytes on the server capture (the server's own time);")
        lines.append("  difference = client − server per RPC: network and client stack (ms);")
        lines.append("  SPLIT = matched RPCs in these columns (the others lack a complete call or reply, below)")
        lines.append(
            f"  {'OPERATION':<{width}} {'MATCHED':>8} {'SPLIT':>8} {'CLIENT AVG':>11} {'SERVER AVG':>11} "
            f"{'DIFF AVG':>9} {'DIFF P50':>9} {'DIFF P95':>9} {'DIFF P99':>9}"
        )
        for name, entry in matched["operations"].items():
            difference = entry["difference_ms"]
            lines.append(
                f"  {name:<{width}} {entry['count']:>8} {difference['count']:>8} "
                f"{_ms(entry['client_first_call_to_last_reply_ms']['avg_ms']):>11} "
                f"{_ms(entry['server_last_call_to_first_reply_ms']['avg_ms']):>11} {_ms(difference['avg_ms']):>9} "
                f"{_ms(difference['p50_ms']):>9} {_ms(difference['p95_ms']):>9} {_ms(difference['p99_ms']):>9}"
            )
        if matched["matched_without_last_segments"]:
            lines.append(
                f"  left out of the split: {matched['matched_without_last_segments']} matched RPCs whose reply "
                "(client capture) or call (server capture) never completed in the capture"
            )
        for side, reasons in matched["unmatched"].items():
            for reason, count in reasons.items():
                if count:
                    lines.append(f"  unmatched on the {side} capture: {count} {reason}")
    return "\n".join(lines).rstrip() + "\n"
