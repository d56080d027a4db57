"""Text and JSON for ``restore`` and ``reapply`` results."""

from __future__ import annotations

from ..restore import RestoreReport

_DONE = {"planned": "would", "restored": "", "removed": "", "failed": "FAILED"}
_VERB = {"rewrite": "rewrite", "recreate": "recreate", "remove": "remove"}


def render_restore_text(r: RestoreReport) -> str:
    lines = ["restore" + (" (dry run: nothing written)" if r.dry_run else "")]
    if r.checkpoint:
        lines.append(f"checkpoint: {r.checkpoint}")
    width = max((len(a.relpath) for a in r.actions), default=0)
    for a in r.actions:
        status = {"planned": f"would {a.action}", "restored": "restored", "removed": "removed",
                  "failed": f"FAILED to {a.action}"}[a.status]
        origin = f"from {a.source}" if a.source else "added file"
        who = f"{a.distribution} {a.version}" if a.distribution else ""
        lines.append(f"  {status:<16} {a.relpath:<{width}}  ({who}, {origin})" + (f": {a.error}" if a.error else ""))
    if not r.actions:
        lines.append("  nothing to restore")
    for title, items in (("refused", r.refused), ("left as they are", r.remaining)):
        if items:
            lines.append(f"{title} ({len(items)}):")
            lines += [f"  {i.kind:<17} {i.relpath}: {i.reason}" for i in items]
    if r.errors:
        lines.append(f"could not check ({len(r.errors)}):")
        lines += [f"  {e}" for e in r.errors]
    lines += [f"note: {n}" for n in r.notes]
    done = sum(a.status == "restored" for a in r.actions)
    removed = sum(a.status == "removed" for a in r.actions)
    took = f" in {r.duration_seconds:.2f} s" if r.duration_seconds is not None else ""
    if r.dry_run:
        lines.append(f"{len(r.actions)} file(s) would be restored{took}; run again with --yes "
                     "(a checkpoint of all drift is written first)" if r.actions else f"nothing to do{took}")
    else:
        gone = f", {removed} added file(s) removed" if removed else ""
        lines.append(f"{done} file(s) restored and verified against RECORD{gone}{took}; {len(r.failed)} failed; "
                     f"{len(r.remaining)} left as they are")
    return "\n".join(lines) + "\n"


def render_restore_json(r: RestoreReport) -> str:
    return r.model_dump_json(indent=2) + "\n"


RESTORE_RENDERERS = {"text": render_restore_text, "json": render_restore_json}


def render_reapply_text(r) -> str:
    lines = [f"reapply {r.source}" + (" (dry run: nothing written)" if r.dry_run else "")]
    if r.checkpoint:
        lines.append(f"checkpoint: {r.checkpoint}")
    for f in r.files:
        status = {"planned": f"would {f.action}", "applied": f"{f.action} done",
                  "partial": "partly applied"}.get(f.status, f.status)
        versions = ""
        if f.version_then and f.version_now and f.version_then != f.version_now:
            versions = f" {f.distribution} {f.version_then} → {f.version_now}"
        dropped = f", {f.dropped} of {f.hunks} hunks left out (debug findings)" if f.dropped else ""
        reason = f": {f.reason}" if f.reason else ""
        lines.append(f"  {status:<14} {f.relpath}{versions}{dropped}{reason}")
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
        if f.rej:
            lines.append(f"      conflicting hunks: {f.rej}")
        if r.dry_run and f.diff and f.status == "planned":
            lines += ["      " + line for line in f.diff.rstrip("\n").split("\n")]
    lines += [f"note: {n}" for n in r.notes]
    done = sum(f.status in ("applied", "partial") for f in r.files)
    planned = sum(f.status == "planned" for f in r.files)
    took = f" in {r.duration_seconds:.2f} s" if r.duration_seconds is not None else ""
    if r.dry_run:
        lines.append(f"{planned} file(s) would be written{took}; run again with --yes" if planned
                     else f"nothing to write{took}")
    else:
        lines.append(f"{done} file(s) written{took}; {len(r.failed)} conflict(s), refusal(s) or failure(s)")
    return "\n".join(lines) + "\n"


REAPPLY_RENDERERS = {"text": render_reapply_text, "json": render_restore_json}
