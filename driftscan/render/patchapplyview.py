"""``driftscan patch apply``: one line per patch, one per file that changes or conflicts (every file
and hunk with -v), a conflict's hunk and the lines the file has there, then what was (or would be)
written."""

from __future__ import annotations

from ..core.units import count
from ..fs.paths import inert
from ..patches.apply import FileState, HunkState, PatchApplyReport, PatchState


def render_patch_apply_text(result: PatchApplyReport, verbose: bool = False) -> str:
    lines: list[str] = []
    for p in result.patches:
        target = f"{p.distribution} {p.installed}" if p.installed else p.distribution
        head = f"{p.state.value:<9} {p.patch} ({target})"
        if p.state is PatchState.UNUSED or p.state is PatchState.REFUSED:
            head += f": {p.message}"
        elif p.version and p.installed and p.version != p.installed:
            head += f": made on {p.version}"
        lines.append(inert(head))
        for f in p.files:
            if not verbose and f.state in (FileState.ALREADY, FileState.OBSOLETE):
                continue
            verb = f.state.value
            if f.state is FileState.APPLIED:
                verb = "written" if f.written else "would write" if result.dry_run else "applied"
            tally = ", ".join(f"{count(sum(h.state is s for h in f.hunks), 'hunk')} {s.value}"
                              for s in HunkState if any(h.state is s for h in f.hunks))
            note = f"; {f.message}" if f.message else ""
            lines.append(inert(f"  {verb:<11} {f.path} ({f.change.value}: {tally}){note}"))
            for h in f.hunks:
                if h.state is HunkState.CONFLICT:
                    lines.append(inert(f"    conflict {h.header}: {h.reason}"))
                    lines.extend(inert(f"      | {line}") for line in h.hunk)
                    lines.append(inert(f"    the file has, from line {h.found_at}:"))
                    lines.extend(inert(f"      > {line}") for line in h.found)
                elif verbose:
                    lines.append(inert(f"    {h.state.value:<8} {h.header}"))
    for e in result.errors:
        lines.append(inert(f"error     {e}"))
    files = sum(f.state is FileState.APPLIED for p in result.patches for f in p.files)
    states = ", ".join(f"{result.count(s)} {s.value}" for s in PatchState if result.count(s))
    if not result.patches:
        where = result.manifest or result.patches_dir or "the manifest"
        return inert(f"no patches in {where}: nothing to do") + "\n"
    if result.dry_run:
        tail = (f"dry run: {count(files, 'file')} would be written (--yes writes them)" if files
                else "dry run: nothing to write")
    else:
        tail = f"{count(len(result.written), 'file')} written" + (f", recorded in {result.record}"
                                                                 if result.record else "")
        failed = sum(f.state is FileState.FAILED for p in result.patches for f in p.files)
        if failed:
            tail += f", {count(failed, 'file')} not written"
    conflicts = sum(f.state is FileState.CONFLICT for p in result.patches for f in p.files)
    if conflicts:
        tail += f"; {count(conflicts, 'file')} left as {'it is' if conflicts == 1 else 'they are'} (conflict)"
    lines.append(inert(count(len(result.patches), 'patch') + (f" ({states})" if states else "")
                       + f": {tail}"))
    return "\n".join(lines) + "\n"


def render_patch_apply_json(result: PatchApplyReport) -> str:
    return result.model_dump_json(indent=2) + "\n"


PATCH_APPLY_RENDERERS = {"text": render_patch_apply_text, "json": render_patch_apply_json}
