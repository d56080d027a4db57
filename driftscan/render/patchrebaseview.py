"""``driftscan patch rebase``: one line per file of the patch (every hunk with -v), each conflicting
hunk with its reason and the region on each side, then what was written, or the work directory and
the two commands that follow."""

from __future__ import annotations

import os

from ..core.units import count
from ..fs.paths import inert
from ..patches.pin import PinStatus
from ..patches.rebase import FileState, HunkState, PatchRebase, RebaseState


def _region(lines: list[str], tag: str) -> list[str]:
    return [f"      {tag} {line}" for line in lines] or [f"      {tag} (nothing)"]


def _files(result: PatchRebase, verbose: bool) -> list[str]:
    lines: list[str] = []
    for f in result.files:
        tally = ", ".join(f"{count(sum(h.state is s for h in f.hunks), 'hunk')} {s.value}"
                          for s in HunkState if any(h.state is s for h in f.hunks))
        where = f"; original from {f.base_from}" if verbose and f.base_from else ""
        shown = f.message and not any(h.reason == f.message for h in f.hunks)  # said once, by its hunk
        note = f"; {f.message}" if shown else ""
        lines.append(f"  {f.state.value:<9} {f.path} ({f.change.value}" + (f": {tally}" if tally else "")
                     + f"{where}){note}")
        for h in f.hunks:
            if h.state is HunkState.CONFLICT and (h.ours or h.theirs or h.base):
                lines.append(f"    conflict {h.header}: {h.reason}")
                lines.append(f"    from line {h.region_start} of {result.from_version}:")
                lines += _region(h.base, "|")
                lines.append("    with the patch:")
                lines += _region(h.ours, "<")
                lines.append(f"    in {result.to_version}:")
                lines += _region(h.theirs, ">")
            elif h.state is HunkState.CONFLICT:
                lines.append(f"    conflict {h.header}: {h.reason}")
            elif verbose:
                lines.append(f"    {h.state.value:<8} {h.header}")
    return lines


def render_patch_rebase_text(result: PatchRebase, verbose: bool = False) -> str:
    name, old, to = result.distribution, result.from_version, result.to_version
    what = f"{name} {old} -> {to}" if old else f"{name} {to}" if to else name or "patch rebase"
    lines: list[str] = []
    if result.state is RebaseState.REFUSED:
        lines.append(f"refused   {what}: {result.message}")
        lines += [f"  {note}" for note in result.notes]
        lines.append("nothing written")
        return "\n".join(inert(line) for line in lines) + "\n"
    if result.state is RebaseState.ABORTED:
        return inert(f"removed   {result.workdir} (the rebase of {what}): nothing else written") + "\n"
    head = f"{'continue' if result.continued else 'rebase':<9} {what}"
    if result.patch:
        head += f" ({os.path.basename(result.patch)})"
    if verbose and result.release:
        head += f"; {to} from {result.release}"
    lines.append(head)
    lines += _files(result, verbose)
    if verbose:
        lines += [f"  note: {note}" for note in result.notes]
    work = result.workdir or ""
    if result.state is RebaseState.CONFLICT:
        conflicts = result.count(FileState.CONFLICT)
        lines.append(f"{count(conflicts, 'file')} did not merge: {work} holds every file as merged "
                     f"(files/, conflicts between <<<<<<< and >>>>>>> markers) and {to}'s own (upstream/)")
        lines.append(f"resolve the files in {os.path.join(work, 'files')}, then: "
                     f"driftscan patch rebase --continue {work}")
        lines.append(f"or drop the rebase: driftscan patch rebase --abort {work}")
        lines.append(f"nothing else written; {result.patch} left in place")
    elif result.state is RebaseState.MARKERS:
        for f in result.files:
            if f.marker_line:
                lines.append(f"markers   {os.path.join(work, 'files', f.path)}:{f.marker_line}")
        lines.append("conflict markers are left: resolve them, then run --continue again (nothing written)")
    else:
        if result.state is RebaseState.WRITTEN:
            lines.append(f"wrote {result.output}")
        elif result.state is RebaseState.UNCHANGED:
            lines.append(f"{result.output} is already this patch: not written again")
        else:
            lines.append(f"{to} already carries every change: nothing to keep, no patch written")
        if result.patch:
            lines.append(f"{result.patch} left in place")
        if result.workdir_removed:
            lines.append(f"removed {work}")
        if result.pinned is not None:
            lines.append(f"pinned in {result.pinned.manifest}: " + {
                PinStatus.ADDED: "line added (the old patch's line kept)", PinStatus.REPLACED: "its line replaced",
                PinStatus.UNCHANGED: "its line already says this (not written)"}[result.pinned.status])
        elif result.manifest_line:
            lines.append("the manifest line that pins it ([tool.driftscan.patches]):")
            lines.append(f"  {result.manifest_line}")
        if result.message:
            lines.append(f"NOT pinned: {result.message.removeprefix('not pinned: ')}")
    return "\n".join(inert(line) for line in lines) + "\n"


def render_patch_rebase_json(result: PatchRebase) -> str:
    return result.model_dump_json(indent=2) + "\n"


PATCH_REBASE_RENDERERS = {"text": render_patch_rebase_text, "json": render_patch_rebase_json}
