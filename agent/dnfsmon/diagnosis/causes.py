"""Which finding explains the others, and the order findings are told in.

Faults cascade: a path that carries 94 % of a filer's traffic fills its
interface, a full interface queues packets and drops some. Each layer's rule
sees its own symptom, so several fire at once; the remedy is the first
cause's, not "add a faster link". A link below says when one finding is the
mechanism of another, and only from what both name (the same interface, path,
mount, or instance and filer), so that the evidence shown links them.

A finding that explains another and is explained by none is a *likely cause*.
Findings are told likely causes first, then by severity (critical first),
then in rule order.
"""

from __future__ import annotations

from collections.abc import Callable

from .rules import CRITICAL, WARNING, Finding

# Severities, most severe first.
SEVERITIES = (CRITICAL, WARNING)


def _same(name: str) -> Callable[[Finding, Finding], bool]:
    """Both findings name the same (known) `name`: one interface, one path, one mount."""

    def linked(cause: Finding, effect: Finding) -> bool:
        value = cause.scope.get(name)
        return bool(value) and value == effect.scope.get(name)

    return linked


def _carries(cause: Finding, effect: Finding) -> bool:
    """The cause's busiest path (or a sibling of its dead path) runs through the effect's interface."""
    return bool(cause.scope.get("interface")) and cause.scope.get("interface") == effect.scope.get("interface")


def _same_filer(cause: Finding, effect: Finding) -> bool:
    keys = ("instance", "server")
    return all(cause.scope.get(k) for k in keys) and all(cause.scope.get(k) == effect.scope.get(k) for k in keys)


def _on_mount(cause: Finding, effect: Finding) -> bool:
    mounts = set(filter(None, cause.scope.get("mountpoints", "").split(",")))
    return effect.scope.get("mountpoint", "") in mounts


def _on_interfaces(cause: Finding, effect: Finding) -> bool:
    return effect.scope.get("interface", "") in set(filter(None, cause.scope.get("interfaces", "").split(",")))


# (cause id, effect id, are they linked, why the cause explains the effect). Each
# link is a mechanism of the layers, not a correlation of figures.
LINKS: tuple[tuple[str, str, Callable[[Finding, Finding], bool], str], ...] = (
    (
        "dnfs-path-imbalance",
        "nic-saturation",
        _carries,
        "the path carrying {share_pct} % of filer {server}'s sends ({path}) runs through {interface}, "
        "{util_pct} % busy: the imbalance fills that link while the others idle; a faster link would not balance it",
    ),
    (
        "dnfs-path-down",
        "dnfs-path-imbalance",
        _same_filer,
        "path {path} carries nothing, so the filer's other paths take its share",
    ),
    (
        "nic-saturation",
        "network-latency",
        _same("interface"),
        "{interface} ({util_pct} % busy) is the interface this path runs through: its queue is the RTT's excess",
    ),
    (
        "nic-saturation",
        "tcp-retransmissions",
        _same("interface"),
        "{interface} ({util_pct} % busy) is the interface this path runs through: a full queue drops segments",
    ),
    (
        "tcp-retransmissions",
        "network-latency",
        _same("path"),
        "segments of path {path} are resent: loss recovery stretches its round trip",
    ),
    (
        "mtu-mismatch",
        "tcp-retransmissions",
        _on_interfaces,
        "the interfaces {interfaces} differ in MTU: frames too large for a hop are dropped and resent",
    ),
    (
        "dnfs-fallback",
        "client-rpc-slots",
        _on_mount,
        "the I/O that fell back from dNFS runs through the kernel client on {mountpoints}, whose RPC slots it fills",
    ),
)


def link(findings: list[Finding]) -> None:
    """Fill each finding's `explains` and `explained_by` from LINKS: for each cause, the effects in
    the findings' order, each tried against the links in LINKS's order. Only the findings a link
    names are paired: a host of 1000 mounts may have 1000 findings, and every pair against every
    link cost seconds of CPU a sample."""
    links_of: dict[str, list[tuple[str, Callable[[Finding, Finding], bool], str]]] = {}
    for cause_id, effect_id, linked, why in LINKS:
        links_of.setdefault(cause_id, []).append((effect_id, linked, why))
    effect_ids_of = {cause_id: {effect_id for effect_id, _, _ in links} for cause_id, links in links_of.items()}
    effects_of = {cause_id: [f for f in findings if f.id in ids] for cause_id, ids in effect_ids_of.items()}
    for cause in findings:
        for effect in effects_of.get(cause.id, []):
            if effect is cause:
                continue
            for effect_id, linked, why in links_of[cause.id]:
                if effect.id == effect_id and linked(cause, effect):
                    scope = _Scope({**effect.scope, **cause.scope})
                    cause.explains.append((effect.id, why.format_map(scope)))
                    if not effect.explained_by:
                        effect.explained_by = cause.id


class _Scope(dict):
    def __missing__(self, key: str) -> str:
        return "?"


def likely_causes(findings: list[Finding]) -> list[Finding]:
    """Findings that explain another and are explained by none."""
    return [f for f in findings if f.explains and not f.explained_by]


def depth(finding: Finding, findings: list[Finding]) -> int:
    """Links between this finding and the first cause that explains it (0: explained by none)."""
    by_id = {f.id: f for f in findings}
    seen: set[str] = set()
    current = finding
    while current.explained_by and current.explained_by not in seen:
        seen.add(current.explained_by)
        current = by_id[current.explained_by]
    return len(seen)


def explained_through(cause: Finding, findings: list[Finding]) -> list[str]:
    """The ids a cause explains, directly or through the findings it explains, nearest first."""
    by_id = {f.id: f for f in findings}
    found: list[str] = []
    queue = [effect for effect, _ in cause.explains]
    while queue:
        effect = queue.pop(0)
        if effect not in found and effect != cause.id:
            found.append(effect)
            queue.extend(e for e, _ in by_id[effect].explains)
    return found


def ordered(findings: list[Finding]) -> list[Finding]:
    """Likely causes first, then by severity, then nearer the cause first, then as the rules
    listed them (a stable sort)."""
    rank = {severity: number for number, severity in enumerate(SEVERITIES)}
    causes = {id(f) for f in likely_causes(findings)}
    return sorted(findings, key=lambda f: (id(f) not in causes, rank.get(f.severity, len(rank)), depth(f, findings)))
