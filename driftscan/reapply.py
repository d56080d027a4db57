"""``driftscan reapply CHECKPOINT``: bring a checkpoint's patches back after a reinstall or upgrade.

For each patched file of the checkpoint, the installed file must now be the verified original
of its distribution (it matches its RECORD row): where it is the same original the patch was
made against, the patch applies as it was; where the version changed, the edit is carried over
by a three-way merge (old original → saved content, onto the new original), and a file with any
conflicting hunk is left untouched and its conflicts are listed. ``exclude_findings`` drops the
hunks that add an injected debug finding, and then the hunks that only define names nothing
else uses any more (the one-shot flags and counters those blocks used), so the loader fix comes
back without the ``torch.save``. Added files of the checkpoint that are gone are recreated.
"""

from __future__ import annotations

import ast
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from .checkpoint import CheckpointFile, CheckpointIndex, environment_root, saved_path
from .discover.target import environment_roots
from .errors import ConfigError
from .fileio import inside, os_error, read_regular
from .changes import record_rows
from .model import Distribution, Target
from .patching import Hunk, PatchError, apply_hunks, diff_hunks, merge3, parse_patch, reverse_hunks, without_hunks
from .paths import printable
from .plan import normalize
from .restore import close_journal, mode_for, open_journal, replace_file, verify_file

READ_MAX = 64 << 20
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# ``x = …``, ``self.x = …``, ``x: T = …``, ``x += …``: a line that only sets one name.
_SETS_NAME = re.compile(r"^\s*(?:(?:self|cls|[A-Z]\w*)\.)?([A-Za-z_]\w*)\s*(?::[^=]*)?(?:[-+*/|&]?=)(?!=)")


class ConflictOut(BaseModel):
    hunk: int
    base_start: int
    reason: str


class ReapplyFile(BaseModel):
    relpath: str
    path: str
    distribution: str | None = None
    version_then: str | None = None
    version_now: str | None = None
    action: str = Field(description="apply (same original) | merge (the version changed) | recreate (an added file)")
    status: str = Field(default="planned", description="planned | applied | already | unchanged | conflict | skipped | failed")
    reason: str = ""
    hunks: int = 0
    dropped: int = Field(default=0, description="hunks left out by --exclude-findings")
    conflicts: list[ConflictOut] = Field(default_factory=list)


class ReapplyReport(BaseModel):
    dry_run: bool
    source: str = Field(description="the checkpoint re-applied")
    checkpoint: str | None = Field(default=None, description="the checkpoint written first (with --yes)")
    files: list[ReapplyFile] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    duration_seconds: float | None = None

    @property
    def failed(self) -> list[ReapplyFile]:
        return [f for f in self.files if f.status in ("conflict", "failed")]


@dataclass(frozen=True)
class Write:
    item: ReapplyFile
    path: str
    data: bytes
    mode: int


@dataclass
class ReapplyPlan:
    report: ReapplyReport
    writes: list[Write] = field(default_factory=list)


def _text(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return None if "\0" in text else text


def _read_saved(checkpoint: str, rel: str | None) -> bytes | None:
    try:
        path = saved_path(checkpoint, rel)
    except ConfigError:
        return None  # an index naming a place outside the checkpoint: that entry is unusable
    if path is None:
        return None
    try:
        return read_regular(path, READ_MAX, what="checkpoint file", follow=False)
    except OSError:
        return None


def _names(lines: Sequence[str]) -> list[str]:
    return [n for line in lines for n in _NAME.findall(line.split("#", 1)[0])]


def _count(text: str, name: str) -> int:
    return len(re.findall(rf"(?<![\w.]){re.escape(name)}\b|(?<=\.){re.escape(name)}\b", text))


def hunks_to_drop(base: str, ours: str, finding_lines: Sequence[int]) -> set[Hunk]:
    """The base→ours hunks that add a line with an injected finding, then (to a fixed point) the
    hunks that only set names which the dropped hunks use and the remaining text no longer does."""
    hunks = diff_hunks(base, ours)
    drop = {h for h in hunks if any(line in h.added_range() for line in finding_lines)}
    while True:
        used = set(_names([line for h in drop for line in h.added_lines()]))
        kept = without_hunks(base, ours, lambda h: h in drop)
        more = set()
        for h in hunks:
            if h in drop:
                continue
            added = [line for line in h.added_lines() if line.strip() and not line.strip().startswith("#")]
            targets = [m.group(1) if (m := _SETS_NAME.match(line)) else None for line in added]
            if not added or any(t is None or t not in used for t in targets):
                continue
            # Dead once the debug code is gone: no more uses in what is kept than the original had
            # plus this hunk's own assignments.
            if all(_count(kept, t) - _count("".join(added), t) <= _count(base, t) for t in targets if t):
                more.add(h)
        if not more:
            return drop
        drop |= more


def _parses(path: str, text: str) -> str | None:
    if not path.endswith((".py", ".pyw")):
        return None
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return f"the result does not parse ({type(exc).__name__}: {exc})"
    return None


def _dist_now(name: str | None, dists: Sequence[Distribution]) -> Distribution | None:
    if name is None:
        return None
    return next((d for d in dists if normalize(d.name) == normalize(name)), None)


def _begin(plan: ReapplyPlan, item: ReapplyFile, f: CheckpointFile, root: str, roots: Sequence[str]) -> str | None:
    """List ``item`` in the report and return the path it would write, or None (failed: outside)."""
    plan.report.files.append(item)
    try:
        path = _target_path(root, roots, _real_rel(f))
    except ConfigError as exc:
        item.status, item.reason = "failed", str(exc)
        return None
    item.path = printable(path)
    return path


def _real_rel(f: CheckpointFile) -> str:
    if not f.relpath_hex:
        return f.relpath
    try:
        return os.fsdecode(bytes.fromhex(f.relpath_hex))
    except ValueError:
        raise ConfigError(f"checkpoint names {f.relpath!r} with a malformed relpath_hex") from None


def _target_path(root: str, roots: Sequence[str], rel: str) -> str:
    parts = rel.split("/")
    if rel.startswith("/") or ".." in parts or "\0" in rel or not rel:
        raise ConfigError(f"checkpoint names {rel!r}: not a path inside the environment")
    path = os.path.join(root, *parts)
    if not any(inside(r, os.path.dirname(path)) for r in roots):
        raise ConfigError(f"{path}: resolves outside the environment root; not written")
    return path


def plan_reapply(checkpoint: str, index: CheckpointIndex, target: Target, dists: Sequence[Distribution],
                 only: Sequence[str] = (), exclude_findings: bool = False) -> ReapplyPlan:
    root = environment_root(target)
    if root is None:
        raise ConfigError("reapply needs an environment (--venv or --site-packages)")
    roots = environment_roots(target)
    plan = ReapplyPlan(ReapplyReport(dry_run=True, source=checkpoint))
    wanted = [o.strip("/") for o in only]
    for f in index.files:
        if f.area != "env" or (wanted and not any(f.relpath == w or f.relpath.startswith(w + "/") for w in wanted)):
            continue
        saved = _read_saved(checkpoint, f.content) if f.content else None
        if f.patch or (f.kind == "modified" and saved is not None and _text(saved) is not None):
            _plan_patched(plan, checkpoint, f, root, roots, dists, exclude_findings)
        elif f.kind == "added" and f.content:
            _plan_added(plan, checkpoint, f, root, roots, exclude_findings)
        elif f.kind == "modified" and f.content:
            _plan_copied(plan, checkpoint, f, root, roots, dists)
        elif f.kind == "modified":
            plan.report.files.append(ReapplyFile(
                relpath=f.relpath, path="", action="copy", distribution=f.distribution, version_then=f.version,
                status="skipped", reason=f"its content was not saved in the checkpoint ({f.not_copied or 'no copy'})"))
    skipped_model = sum(1 for f in index.files if f.area != "env")
    if skipped_model:
        plan.report.notes.append(f"{skipped_model} model-directory file(s) not re-applied: no reinstall touches "
                                 "a model directory (their copies are in the checkpoint's files/)")
    return plan


def _plan_added(plan: ReapplyPlan, checkpoint: str, f: CheckpointFile, root: str, roots: Sequence[str],
                exclude_findings: bool) -> None:
    item = ReapplyFile(relpath=f.relpath, path="", action="recreate", distribution=f.distribution)
    path = _begin(plan, item, f, root, roots)
    if path is None:
        return
    if exclude_findings and any(x.origin != "upstream" for x in f.findings):
        item.status, item.reason = "skipped", "an added file with debug findings (--exclude-findings)"
        return
    data = _read_saved(checkpoint, f.content)
    if data is None:
        item.status, item.reason = "failed", "its copy in the checkpoint is unreadable"
        return
    if os.path.lexists(path):
        try:
            same = read_regular(path, READ_MAX, follow=False) == data
        except OSError:
            same = False
        item.status, item.reason = ("already", "present with the saved content") if same else \
            ("skipped", "a different file is there now; not replaced")
        return
    plan.writes.append(Write(item, path, data, f.mode if f.mode is not None else 0o644))


def _plan_copied(plan: ReapplyPlan, checkpoint: str, f: CheckpointFile, root: str, roots: Sequence[str],
                 dists: Sequence[Distribution]) -> None:
    """A modified file with no patch (binary): its saved content goes back only over the very
    original it was changed from; a new version of it is not merged."""
    item = ReapplyFile(relpath=f.relpath, path="", action="copy", distribution=f.distribution, version_then=f.version)
    path = _begin(plan, item, f, root, roots)
    if path is None:
        return
    saved, original = _read_saved(checkpoint, f.content), _read_saved(checkpoint, f.original)
    try:
        current = read_regular(path, READ_MAX, follow=False)
    except OSError as exc:
        item.status, item.reason = "skipped", f"cannot read it: {os_error(exc)}"
        return
    if original is None and _same_original(path, f, _dist_now(f.distribution, dists)):
        original = current  # no original was saved, but the installed file is that very original
    if saved is None:
        item.status, item.reason = "failed", "its saved copy in the checkpoint is unreadable"
    elif original is None:
        item.status, item.reason = "conflict", ("no original was saved and the installed file is not the one it was "
                                                "changed from: not replaced; its saved copy is in the checkpoint")
    elif current == saved:
        item.status, item.reason = "already", "the installed file already has the saved content"
    elif current != original:
        item.status, item.reason = "conflict", ("binary, and not the original it was changed from (a new version?): "
                                                "not merged; its saved copy is in the checkpoint")
    else:
        plan.writes.append(Write(item, path, saved, mode_for(path)))


def _plan_patched(plan: ReapplyPlan, checkpoint: str, f: CheckpointFile, root: str, roots: Sequence[str],
                  dists: Sequence[Distribution], exclude_findings: bool) -> None:
    dist = _dist_now(f.distribution, dists)
    item = ReapplyFile(relpath=f.relpath, path="", distribution=f.distribution, version_then=f.version,
                       version_now=dist.version if dist else None, action="apply")
    path = _begin(plan, item, f, root, roots)
    if path is None:
        return
    ours_data = _read_saved(checkpoint, f.content)
    ours = _text(ours_data) if ours_data is not None else None
    if ours is None:
        item.status, item.reason = "failed", "the saved content is missing or not UTF-8 text"
        return
    base = _base_of(checkpoint, f, ours)
    try:
        current_data = read_regular(path, READ_MAX, follow=False)
    except FileNotFoundError:
        item.status, item.reason = "skipped", "the file is gone from the installed version"
        return
    except OSError as exc:
        item.status, item.reason = "failed", f"cannot read it: {os_error(exc)}"
        return
    current = _text(current_data)
    if current is None:
        item.status, item.reason = "failed", "the installed file is not UTF-8 text now"
        return
    if base is None and _same_original(path, f, dist):
        base = current  # no original was saved, but the installed file is that very original
    if base is None:
        item.status, item.reason = "conflict", ("no original was saved and the installed file is not the one it was "
                                                "changed from: merge by hand from the checkpoint's saved copy")
        return
    findings = [x.line for x in f.findings if x.origin == "injected"] if exclude_findings else []
    drop = hunks_to_drop(base, ours, findings) if findings else set()
    item.hunks = len(diff_hunks(base, ours))
    item.dropped = len(drop)
    wanted = without_hunks(base, ours, lambda h: h in drop) if drop else ours
    if drop and wanted == base:
        item.status, item.reason = "unchanged", "every hunk adds debug code (--exclude-findings): nothing to apply"
        return
    if current == wanted:
        item.status, item.reason = "already", "the installed file already has these changes"
        return
    if not _is_original(path, f, dist):
        item.status = "conflict"
        item.reason = (f"the installed file is not the original of {dist.key if dist else f.distribution} "
                       "(changed since the reinstall): not touched")
        return
    if current == base:
        result = wanted
    else:
        item.action = "merge"
        merged = merge3(base, wanted, current)
        if merged.text is None:
            item.status = "conflict"
            # Numbered as in the checkpoint's patch (base → saved content), not the filtered one.
            numbers = {h.old_start: i for i, h in enumerate(diff_hunks(base, ours), 1)}
            kept = diff_hunks(base, wanted)
            item.conflicts = [ConflictOut(hunk=numbers.get(kept[c.hunk - 1].old_start, c.hunk) if c.hunk <= len(kept)
                                          else c.hunk, base_start=c.base_start, reason=c.reason)
                              for c in merged.conflicts]
            item.reason = f"{len(merged.conflicts)} conflicting hunk(s): nothing applied to this file"
            return
        result = merged.text
    if result == current:
        item.status, item.reason = "unchanged", "every hunk was left out"
        return
    broken = _parses(path, result)
    if broken:
        item.status, item.reason = "failed", broken
        return
    plan.writes.append(Write(item, path, result.encode("utf-8"), mode_for(path)))


def _base_of(checkpoint: str, f: CheckpointFile, ours: str) -> str | None:
    saved = _read_saved(checkpoint, f.original)
    if saved is not None and (text := _text(saved)) is not None:
        return text
    patch_data = _read_saved(checkpoint, f.patch)
    if patch_data is None or (patch := _text(patch_data)) is None:
        return None
    try:
        (file_patch,) = parse_patch(patch)
        return apply_hunks(ours, reverse_hunks(file_patch.hunks))
    except (PatchError, ValueError):
        return None


def _same_original(path: str, f: CheckpointFile, dist: Distribution | None) -> bool:
    """The installed file is the verified original and the very one the checkpoint's file was
    changed from (its RECORD hash is the checkpoint's hash_before)."""
    if dist is None or not f.hash_before:
        return False
    from .record import hash_text

    entry = record_rows(dist).get(os.path.normpath(path))
    return entry is not None and entry.hash is not None and hash_text(entry.hash) == f.hash_before \
        and verify_file(path, entry)


def _is_original(path: str, f: CheckpointFile, dist: Distribution | None) -> bool:
    if dist is None:
        return False
    entry = record_rows(dist).get(os.path.normpath(path))
    return entry is not None and verify_file(path, entry)


def apply_reapply(plan: ReapplyPlan, root: str) -> ReapplyReport:
    started = time.perf_counter()
    report = plan.report
    report.dry_run = False
    journal = open_journal(root, report.notes)
    for w in plan.writes:
        data = w.data

        def fill(out, data=data) -> bool:
            out.write(data)
            return True

        why = replace_file(w.path, fill, w.mode, journal)
        w.item.status, w.item.reason = ("failed", why) if why else ("applied", w.item.reason)
    close_journal(journal)
    report.duration_seconds = round(time.perf_counter() - started, 3)
    return report
