"""``driftscan fleet`` for people: each node's status, then the comparison."""

from __future__ import annotations

from ..fs.paths import one_line
from ..core.units import count
from ..render.compare import render_compare_markdown, render_compare_text
from ..render.markdown import code, esc
from .model import FleetResult, NodeOut


def short(node_id: str) -> str:
    return node_id[:12]


def _status(n: NodeOut) -> str:
    if n.status != "ok":
        return n.error or n.status
    s = n.summary or {}
    if "drifts" in s:
        kinds = ", ".join(f"{v} {k}" for k, v in sorted((s.get("by_kind") or {}).items()))
        return "no drift" if not s["drifts"] else f"{count(s['drifts'], 'drift')} ({kinds})"
    return f"snapshot of {s.get('files')} files"


def render_fleet_text(r: FleetResult, verbose: bool = False) -> str:
    counts = {k: sum(1 for n in r.nodes if n.status == k) for k in ("ok", "unreachable", "failed")}
    lines = [f"{len(r.nodes)} nodes: {counts['ok']} ok, {counts['unreachable']} unreachable, "
             f"{counts['failed']} failed ({r.kind}s)"]
    for n in r.nodes:
        where = f"  {n.target} [{n.chosen_because}]" if n.target else ""
        lines.append(one_line(f"  {n.status:<11} node {short(n.node_id)} ({n.hostname or '?'}){where}: {_status(n)}"))
        if n.shipped:
            lines.append(one_line(f"              sent with the job (the node lacked them): {', '.join(n.shipped)}"))
        if n.report_file:
            lines.append(one_line(f"              report: {n.report_file}"))
    if r.comparison is not None:
        lines.append("")
        lines.append(render_compare_text(r.comparison, verbose=verbose, label=lambda m: f"node {short(m)}").rstrip("\n"))
    else:
        lines += [one_line(f"note: {note}") for note in r.notes]
    return "\n".join(lines) + "\n"


def render_fleet_markdown(r: FleetResult, verbose: bool = False) -> str:
    lines = ["## driftscan fleet", "", "| node | host | status | |", "|---|---|---|---|"]
    for n in r.nodes:
        lines.append(f"| {code(short(n.node_id))} | {esc(n.hostname or '?')} | {esc(n.status)} | {esc(_status(n))} |")
    lines.append("")
    if r.comparison is not None:
        lines.append(render_compare_markdown(r.comparison))
    return "\n".join(lines) + "\n"


def render_fleet_json(r: FleetResult, verbose: bool = False) -> str:
    return r.model_dump_json(indent=2) + "\n"


FLEET_RENDERERS = {"text": render_fleet_text, "json": render_fleet_json, "markdown": render_fleet_markdown}
