"""``driftscan guard``'s report: text readable at a glance (one line per drift: prediction →
outcome ✓/✗, then what is left, then the reapply line), or JSON (``GuardReport``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.values import Verdict
from ..core.units import count, size
from .patchapplyview import render_patch_apply_text
from .procsview import restart_lines

if TYPE_CHECKING:
    from ..reinstall.guard import GuardReport

_ORDER = {Verdict.WIPED: 0, Verdict.MAY_SURVIVE: 1, Verdict.SURVIVES: 2}
_MARK = {True: "✓", False: "✗", None: "·"}


def render_guard_json(report: "GuardReport") -> str:
    return report.model_dump_json(indent=2) + "\n"


def _yes_no(value: bool | None) -> str:
    return {True: "yes", False: "no", None: "unknown"}[value]


def _command_line(report: "GuardReport") -> str:
    c = report.command
    if not c.recognised:
        return f"command: not an install guard recognises ({c.tool}): every drift may survive it"
    what = ", ".join(c.reinstalls) if c.reinstalls else "no installed distribution"
    how = " (forced)" if c.forced else ""
    source = c.source or "as installed"
    return f"command: {c.tool}, reinstalls {what}{how}; source: {source} ({c.source_why or 'as installed'})"


def _patch_lines(report: "GuardReport") -> list[str]:
    """The team's patches: what was predicted, what `patch apply --yes` did, what to run next."""
    lines: list[str] = []
    if report.patch_plan:
        lines += ["", "The team's patches (predicted):"]
        for p in report.patch_plan:
            lines.append(f"  {p.fate.value:<10}  {p.distribution} {p.installed} → {p.version_after or 'unknown'}: "
                         f"{p.reason}")
    if report.patch_apply is not None:
        failed = bool(report.patch_apply_exit)
        lines += ["", "The team's patches, applied after the command (driftscan patch apply --yes)"
                  + (": NOT ALL APPLIED" if failed else ":")]
        lines += [f"  {line}" for line in render_patch_apply_text(report.patch_apply).splitlines()]
        for line in report.patch_rebase:
            lines += ["  an unused patch: rebase it onto the version installed, review it, then apply it:",
                      f"  $ {line}"]
    elif report.patch_apply_skipped:
        lines += ["", f"The team's patches: {report.patch_apply_skipped}"]
    return lines


def render_guard_text(report: "GuardReport") -> str:
    lines = [f"guard: {report.target}" + (f" ({report.chosen_because})" if report.chosen_because else ""),
             _command_line(report)]
    if report.command.environment_unsure:
        lines.append(f"  environment not certain: {report.command.environment_unsure}")
    lines += [f"  note: {n}" for n in report.command.notes + report.notes]
    cp = report.checkpoint
    if cp is not None:
        lines.append(f"checkpoint: {cp.path} ({count(cp.files, 'file')}, {count(cp.patches, 'patch')}"
                     + (", PARTIAL)" if cp.partial else ")"))
        for rel in cp.without_original:
            lines.append(f"  no patch and no original: {rel}")
        for rel in cp.not_saved:
            lines.append(f"  not saved: {rel}")
        for how in cp.complete_with:
            lines.append(f"  to complete it: {how}")
    if report.refused:
        head = "started anyway (--force) despite:" if report.forced else "REFUSED: the command was not run:"
        lines.append(head)
        for r in report.refused:
            lines.append(f"  - {r.reason}")
            if r.command:
                lines.append(f"      $ {r.command}")
    if report.ran:
        took = f" in {report.command_seconds:.1f} s" if report.command_seconds is not None else ""
        lines.append(f"ran: exit {report.exit_code}{took}")
    lines.append("")
    if report.predictions:
        lines.append("Predictions (prediction → what happened):")
        width = max(len(p.prediction.value) for p in report.predictions)
        for p in sorted(report.predictions, key=lambda p: (_ORDER[p.prediction], p.scope, p.distribution or "",
                                                           p.path)):
            owner = f"{p.distribution}: " if p.distribution else ""
            lines.append(f"  {_MARK[p.held]} {p.prediction.value:<{width}} → {p.outcome.value:<9} [{p.scope}] {owner}"
                         f"{p.relpath} ({p.kind}): {p.detail}")
            if p.held is False:
                lines.append(f"      predicted because: {p.reason}")
    else:
        lines.append("Predictions: nothing had drifted")
    if report.versions:
        lines += ["", "Versions moved:"]
        for v in report.versions:
            flag = "" if v.asked else "   ! the command did not name it"
            lines.append(f"  {v.name}: {v.before or '(absent)'} → {v.after or '(absent)'}{flag}")
    if report.new_drifts:
        lines += ["", "New drift (not there before the command):"]
        for new in report.new_drifts:
            owner = f"{new.distribution}: " if new.distribution else ""
            debug = f", {count(new.findings, 'debug finding')}" if new.findings else ""
            lines.append(f"  ! [{new.scope}] {owner}{new.relpath} ({new.kind}{debug})")
    left = report.leftovers
    if left.dumps or left.uv_cache or left.added:
        lines += ["", "Left on disk:"]
        for d in left.dumps:
            gone = f", {d.gone} gone" if d.gone else ""
            what = "possible dumps" if d.possible else "dumps"
            lines.append(f"  {what}: {count(len(d.files), 'file')} matching {d.pattern} ({size(d.bytes)}{gone})")
            if d.remedy:
                lines.append(f"      {d.remedy}")
        for a in left.uv_cache:
            lines.append(f"  uv cache: {a.distribution}'s {a.relpath} is still edited in {a.archive or a.edited_copy} "
                         "(a new install from that source gets the edit)")
            lines.append(f"      $ {a.command}")
        for path in left.added:
            lines.append(f"  added: {path}")
    if report.expectations:
        lines += ["", "Expectations (before → predicted after → after):"]
        for e in report.expectations:
            lines.append(f"  {_MARK[e.held]} {_yes_no(e.before):>7} → {_yes_no(e.predicted_after):<7} → "
                         f"{_yes_no(e.after):<7}  {e.name}")
    lines += _patch_lines(report)
    if report.reapply:
        lines += ["", "Bring the kept work back (review with the dry run first, without --yes):",
                  f"  $ {report.reapply}"]
    elif report.reapply_dry_run:
        lines += ["", "The command failed: what reapply would do now is unknown (the install may have stopped half "
                  "way), so no line that writes is given. Your work is kept in the checkpoint; once the environment "
                  "is whole again (the command run to completion, or the distribution reinstalled), see what reapply "
                  "would bring back — the dry run writes nothing:", f"  $ {report.reapply_dry_run}"]
    if report.errors:
        lines += ["", "Not checked:"] + [f"  {e}" for e in report.errors]
    s = report.summary
    lines += ["", f"{count(s.predictions, 'prediction')}: {s.held} held, {s.failed} failed, {s.unjudged} not judged"
              + (f" ({s.unchecked} unchecked)" if s.unchecked else "")]
    lines += restart_lines(report.restart_needed)
    return "\n".join(lines) + "\n"


GUARD_RENDERERS = {"text": render_guard_text, "json": render_guard_json}
