"""Text and JSON for ``restore`` and ``reapply`` results."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..fs.paths import line_safe, one_line
from ..core.units import count as n_of
from ..core.values import DriftKind, Scope
from ..reinstall.checkpoint import CheckpointFile, EntryType, Written
from ..reinstall.reapply import Action as ReapplyAction, Status as Reapplied
from ..reinstall.restore import Action, RestoreReport, Status
from .procsview import restart_lines

if TYPE_CHECKING:  # imported by the reapply command itself
    from ..reinstall.reapply import ReapplyReport

_VERB = {"rewrite": "rewrite", "recreate": "recreate", "remove": "remove"}


def render_restore_text(r: RestoreReport) -> str:
    r = line_safe(r)  # every value from the tree on one line: a file name cannot fake the lines after it
    lines = ["restore" + (" (dry run: nothing written)" if r.dry_run else "")]
    if r.checkpoint:
        lines.append(f"checkpoint: {r.checkpoint}")
    width = max((len(a.relpath) for a in r.actions), default=0)
    ways: dict[str, tuple[int, str]] = {}
    for a in r.actions:
        status = {Status.PLANNED: f"would {a.action.value}", Status.RESTORED: "restored", Status.REMOVED: "removed",
                  Status.FAILED: f"{'would FAIL' if r.dry_run else 'FAILED'} to {a.action.value}",
                  Status.NO_ORIGINAL: "NO ORIGINAL", Status.UNSAVED: "NOT SAVED"}[a.status]
        left_alone = a.status in (Status.NO_ORIGINAL, Status.UNSAVED)
        origin = f"from {a.source}" if a.source else ("not touched" if left_alone else "added file")
        who = f"{a.distribution} {a.version}" if a.distribution else ""
        lines.append(f"  {status:<16} {a.relpath:<{width}}  ({who}, {origin})" + (f": {a.error}" if a.error else ""))
        lines += [f"      creates the directory {d}" for d in a.creates]
        if a.get_original and a.distribution:
            count, _ = ways.get(a.distribution, (0, ""))
            ways[a.distribution] = (count + 1, a.get_original)
    if not r.actions:
        lines.append("  nothing to restore")
    for name, (count, how) in ways.items():
        lines.append(f"to restore {name}'s {n_of(count, 'file')} without a verified original: {how}")
    for title, items in (("refused", r.refused), ("left as they are", r.remaining)):
        if items:
            lines.append(f"{title} ({len(items)}):")
            lines += [f"  {i.kind:<17} {i.relpath}: {i.reason}" for i in items]
    if r.errors:
        lines.append(f"could not check ({len(r.errors)}):")
        lines += [f"  {e}" for e in r.errors]
    lines += [f"note: {n}" for n in r.notes]
    done = sum(a.status is Status.RESTORED for a in r.actions)
    removed = sum(a.status is Status.REMOVED for a in r.actions)
    no_original = sum(a.status is Status.NO_ORIGINAL for a in r.actions)
    unsaved = sum(a.status is Status.UNSAVED for a in r.actions)
    untouched = "".join([f"; {no_original} not touched: no verified original" if no_original else "",
                         f"; {unsaved} not touched: not saved in the checkpoint" if unsaved else ""])
    took = f" in {r.duration_seconds:.2f} s" if r.duration_seconds is not None else ""
    if r.dry_run:
        planned = [a for a in r.actions if a.status is Status.PLANNED]
        rewrite = sum(a.action is not Action.REMOVE for a in planned)
        gone = sum(a.action is Action.REMOVE for a in planned)
        failing = f"; {len(r.failed)} would fail" if r.failed else ""
        into = f" into {r.checkpoint_in}" if r.checkpoint_in else ""
        if planned:
            lines.append(f"{n_of(rewrite, 'file')} would be restored" + (f", {n_of(gone, 'added file')} removed" if gone else "")
                         + f"{untouched}{failing}{took}; run again with --yes (a checkpoint of all drift is written "
                         f"first{into})")
        else:
            lines.append(f"nothing to do{untouched}{failing}{took}")
    else:
        removals = f", {n_of(removed, 'added file')} removed" if removed else ""
        lines.append(f"{n_of(done, 'file')} restored and verified against RECORD{removals}{took}; {len(r.failed)} failed"
                     f"{untouched}; {len(r.remaining)} left as they are")
    lines += restart_lines(r.restart_needed)
    return "\n".join(lines) + "\n"


def render_checkpoint_text(written: Written, allow_partial: bool = False) -> str:
    """What the checkpoint holds, file by file: for a modified file, whether a patch and a
    verified original are saved; a partial checkpoint ends with the lines that complete it."""
    index = written.index
    lines = [f"checkpoint: {written.path}"]
    shown_added = 0
    added = [f for f in index.files if f.kind is DriftKind.ADDED]
    for f in index.files:
        where = one_line(f.relpath if f.in_env else f.path)
        if f.kind is DriftKind.ADDED:
            shown_added += 1
            if shown_added > ADDED_SHOWN:
                continue
        held = one_line(_held(f))
        lines.append(f"  {f.kind.value:<17} {where}: {held}")
    if shown_added > ADDED_SHOWN:
        lines.append(f"  ... and {n_of(len(added) - ADDED_SHOWN, 'more added file')} (checkpoint.json lists them)")
    patches = sum(1 for f in index.files if f.patch)
    copies = sum(1 for f in index.files if f.content)
    possible = sum(1 for d in index.dumps if d.possible)
    dumps = (f"; {n_of(len(index.dumps), 'dump file')} listed" + (f" ({possible} possible)" if possible else "")
             if index.dumps else "")
    # Per file, never per distribution: a distribution's source may have verified some files only.
    modified = [f for f in index.files if f.kind is DriftKind.MODIFIED and f.scope is Scope.PACKAGE]
    lines.append(f"{n_of(len(index.files), 'drifted file')}: {n_of(patches, 'patch')}, {n_of(copies, 'copy')}; "
                 f"{sum(1 for f in modified if f.has_original)} of {n_of(len(modified), 'modified package file')} "
                 f"with a verified original{dumps}")
    if written.kept or written.not_kept:
        lines.append(f"kept {n_of(written.kept, 'verified original')} in {one_line(written.kept_dir or '')} for later audits "
                     "and reapplies without --wheels" + (f"; {len(written.not_kept)} not kept: "
                                                         + one_line("; ".join(written.not_kept[:3])) if written.not_kept else ""))
    if index.partial:
        verdict = "partial (--allow-partial)" if allow_partial else "PARTIAL"
        lines.append(f"{verdict}: {n_of(len(index.incomplete), 'modified package file')} with no original and no patch: "
                     "reapply cannot tell their fix from injected debug code, nor merge them onto a new release")
        lines.append("complete it (a new checkpoint, the same drift, with the originals):")
        lines += [f"  {one_line(line)}" for line in index.complete_with]
    return "\n".join(lines) + "\n"


ADDED_SHOWN = 20


def _held(f: CheckpointFile) -> str:
    if f.not_copied:
        return f"NOT SAVED ({f.not_copied})"
    parts = []
    if f.type is EntryType.SYMLINK:
        parts.append(f"symlink to {f.symlink_target}")
        if f.content:
            parts.append(f"its edited content ({f.link_resolves_to})")
    elif f.type is EntryType.MISSING:
        parts.append("missing (nothing to copy)")
    elif f.content:
        parts.append("content")
    if f.kind is DriftKind.MODIFIED and f.scope is Scope.PACKAGE:
        parts.append("patch" if f.has_patch else "no patch")
        parts.append("original" if f.has_original else "NO ORIGINAL")
    elif f.has_original:
        parts.append("original")
    return ", ".join(parts) + (f" — {f.no_original}" if f.no_original else "")


def render_restore_json(r: RestoreReport | ReapplyReport) -> str:
    return r.model_dump_json(indent=2) + "\n"


RESTORE_RENDERERS = {"text": render_restore_text, "json": render_restore_json}


def render_reapply_text(r: ReapplyReport) -> str:
    r = line_safe(r)  # but each file's diff, multi-line by nature (made inert when written)
    lines = [f"reapply {r.source}" + (f" onto {r.target}" if r.target else "")
             + (f" — NOT the environment the checkpoint was taken of ({r.other_target})" if r.other_target else "")
             + (" (dry run: nothing written)" if r.dry_run else "")]
    if r.keep_findings:
        lines.append("--keep-findings: injected debug code is written back (listed under each file)")
    if r.checkpoint:
        lines.append(f"checkpoint: {r.checkpoint}")
    for f in r.files:
        status = {Reapplied.PLANNED: f"would {f.action.value}", Reapplied.APPLIED: f"{f.action.value} done",
                  Reapplied.PARTIAL: "partly applied"}.get(f.status, f.status.value)
        versions = ""
        if f.version_then and f.version_now and f.version_then != f.version_now:
            versions = f" {f.distribution} {f.version_then} → {f.version_now}"
        dropped = f", {f.dropped} of {f.hunks} hunks left out (debug findings)" if f.dropped else ""
        reason = f": {f.reason}" if f.reason else ""
        lines.append(f"  {status:<14} {f.relpath}{versions}{dropped}{reason}")
        if f.status in (Reapplied.PLANNED, Reapplied.APPLIED, Reapplied.PARTIAL) and f.path:
            # Exactly what is (or would be) written: the file, and its missing parents first.
            lines += [f"      creates the directory {d}" for d in f.creates]
            lines.append(f"      {'deletes' if f.action is ReapplyAction.DELETE else 'writes'} {f.path}")
        if f.original:
            lines.append(f"      original: {f.original}")
        for c in f.conflicts:
            lines.append(f"      hunk {c.hunk} (line {c.base_start}): {c.reason}")
        for d in f.removed:
            where = f"line {d.start_line}" if d.start_line == d.end_line else f"lines {d.start_line}-{d.end_line}"
            lines.append(f"      removed {where}: {d.text}  ({d.reason})")
        if f.removed:
            kept = ", ".join(str(k.start_line) if k.start_line == k.end_line else f"{k.start_line}-{k.end_line}"
                             for k in f.kept)
            lines.append(f"      kept added lines: {kept or 'none'}")
        for x in f.written_findings:
            origin = x.origin.value if x.origin else "origin unknown"
            lines.append(f"      debug code written back: {x.code} line {x.line} ({origin})")
        if f.rej:
            lines.append(f"      conflicting hunks: {f.rej}")
        if r.dry_run and f.diff and f.status is Reapplied.PLANNED:
            lines += ["      " + line for line in f.diff.rstrip("\n").split("\n")]
    lines += [f"note: {n}" for n in r.notes]
    done = sum(f.status in (Reapplied.APPLIED, Reapplied.PARTIAL) for f in r.files)
    planned = sum(f.status is Reapplied.PLANNED for f in r.files)
    took = f" in {r.duration_seconds:.2f} s" if r.duration_seconds is not None else ""
    left = len(r.not_applied) + len(r.refused_or_failed)
    undone = f"; {n_of(left, 'file')} not applied (see above)" if left else ""
    if r.dry_run:
        lines.append(f"{n_of(planned, 'file')} would be written{took}{undone}; run again with --yes" if planned
                     else f"nothing to write{took}{undone}")
    else:
        lines.append(f"{n_of(done, 'file')} written{took}{undone}")
    lines += restart_lines(r.restart_needed)
    return "\n".join(lines) + "\n"


REAPPLY_RENDERERS: dict[str, Callable[[ReapplyReport], str]] = {"text": render_reapply_text,
                                                                "json": render_restore_json}
