"""The plan as the seed's to-do list (text) or as JSON for tools."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.units import count
from ..core.values import Verdict
from .procsview import restart_lines

if TYPE_CHECKING:
    from ..reinstall.plan import Plan

_ORDER = {Verdict.WIPED: 0, Verdict.MAY_SURVIVE: 1, Verdict.SURVIVES: 2}


def render_plan_json(plan: "Plan") -> str:
    return plan.model_dump_json(indent=2) + "\n"


def _yes_no(value: bool | None) -> str:
    return {True: "yes", False: "no", None: "unknown"}[value]


def render_plan_text(plan: "Plan") -> str:
    lines = [f"Plan: reinstall {', '.join(plan.reinstall)} with {plan.installer}"]
    if plan.installer_reason:
        lines.append(f"  ({plan.installer_reason})")
    for src in plan.sources:
        where = f" {src.path}" if src.path else ""
        lines.append(f"  from: {src.distribution}: {src.kind}{where} (told by {', '.join(src.told_by) or 'nothing'}"
                     f"{': ' + src.detail if src.detail else ''})")
    lines.append("")
    if plan.items:
        width = max(len(i.status.value) for i in plan.items)
        for item in sorted(plan.items, key=lambda i: (_ORDER[i.status], i.scope, i.distribution or "", i.path)):
            owner = f"{item.distribution}: " if item.distribution else ""
            lines.append(f"  {item.status.value:<{width}}  [{item.scope}] {owner}{item.relpath} ({item.kind})")
            lines.append(f"  {'':<{width}}    {item.reason}")
    else:
        lines.append("  nothing has drifted: the reinstall changes no file")
    if plan.expectations:
        lines += ["", "Expectations (now → after the reinstall):"]
        for e in plan.expectations:
            lines.append(f"  {_yes_no(e.holds_now):>7} → {_yes_no(e.holds_after):<7}  {e.name}")
            lines.append(f"  {'':>19}{e.reason}")
    if plan.patches:
        lines += ["", "The team's patches (docs/patches.md):"]
        for p in plan.patches:
            lines.append(f"  {p.fate.value:<10}  {p.distribution} {p.installed} → {p.version_after or 'unknown'}: "
                         f"{p.patch_after or p.patch or 'no patch'} ({count(len(p.files), 'patched file')})")
            lines.append(f"  {'':<10}    {p.reason}")
    if plan.estimate is not None:
        seconds = plan.estimate.seconds
        took = "under a second" if seconds < 1 else f"about {seconds:.0f} s"
        lines += ["", f"Reinstall time: {took} with {plan.estimate.installer} ({plan.estimate.basis}; an estimate)"]
    lines += ["", "Steps:"]
    for n, step in enumerate(plan.steps, 1):
        lines.append(f"  {n}. {step.step}")
        if step.command:
            lines.append(f"       $ {step.command}")
    lines += ["", f"{len(plan.wiped)} wiped, {len(plan.survives)} survive, {len(plan.may_survive)} may survive"]
    lines += restart_lines(plan.restart_after_reinstall, after=False)
    return "\n".join(lines) + "\n"


PLAN_RENDERERS = {"text": render_plan_text, "json": render_plan_json}
