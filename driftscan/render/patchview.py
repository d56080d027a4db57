"""``driftscan patch export``: per distribution the patch file written, each file's fate, the
manifest line to add; then one line that says what was and was not written."""

from __future__ import annotations

from ..core.units import count
from ..fs.paths import inert
from ..patches.export import Fate, PatchExport, Written
from ..patches.pin import PinStatus

_PINNED = {PinStatus.ADDED: "line added", PinStatus.REPLACED: "its line replaced",
           PinStatus.UNCHANGED: "its line already says this (not written)"}


def _status(status: Written, path: str | None) -> str:
    return {Written.WRITTEN: f"{path} written", Written.UNCHANGED: f"{path} unchanged (the same file was there)",
            Written.EXISTS: f"{path} NOT written: a different file is there (--force replaces it)",
            Written.NOTHING: "no patch file: nothing to export"}[status]


def render_patch_export_text(result: PatchExport, verbose: bool = False) -> str:
    lines = []
    for patch in result.patches:
        counts = [f"{count(patch.exported, 'file')} exported"]
        if patch.left_out:
            counts.append(f"{patch.left_out:,} left out")
        if patch.not_exported:
            counts.append(f"{patch.not_exported:,} not exported")
        lines.append(inert(f"{patch.distribution} {patch.version}: {_status(patch.status, patch.path)} "
                           f"({', '.join(counts)})"))
        for f in patch.files:
            if f.fate is Fate.EXPORTED and not verbose:
                continue
            lines.append(inert(f"  {f.fate.value:<14} {f.change.value:<8} {f.path}" + (f": {f.reason}" if f.reason else "")))
            if f.how_to:
                lines.append(inert(f"  {'':<14} {'':<8} to get it: {f.how_to}"))
        if patch.pinned is not None:
            lines.append(inert(f"  pinned in {patch.pinned.manifest}: {_PINNED[patch.pinned.status]}"))
        elif patch.manifest_line and patch.status is not Written.EXISTS:
            lines.append("  add to [tool.driftscan.patches] (pyproject.toml) or [patches] (driftscan.toml):")
            lines.append(inert("    " + patch.manifest_line))
    for e in result.errors:
        lines.append(inert(f"error: {e.path}: {e.message}"))
    written = [p for p in result.patches if p.status is Written.WRITTEN]
    same = [p for p in result.patches if p.status is Written.UNCHANGED]
    failed = sum(p.not_exported for p in result.patches)
    if not result.patches:
        summary = "no package drift to export: nothing written"
    else:
        summary = f"{count(len(written), 'patch file')} written to {result.output}"
        if same:
            summary += f", {len(same):,} unchanged"
        blocked = sum(p.status is Written.EXISTS for p in result.patches)
        if blocked:
            summary += f", {blocked:,} not overwritten"
        if failed:
            summary += f"; {count(failed, 'file')} could not be exported"
        pinned = [p.pinned for p in result.patches if p.pinned is not None]
        changed = sum(p.status is not PinStatus.UNCHANGED for p in pinned)
        if pinned:
            summary += f"; {count(changed, 'manifest line')} written to {pinned[0].manifest}"
        if not result.include_debug:
            summary += "; injected debug code left out (--include-debug keeps it)"
    lines.append(inert(summary))
    return "\n".join(lines) + "\n"


def render_patch_export_json(result: PatchExport) -> str:
    return result.model_dump_json(indent=2) + "\n"


PATCH_EXPORT_RENDERERS = {"text": render_patch_export_text, "json": render_patch_export_json}
