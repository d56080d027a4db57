"""``driftscan lock-check``: one line per mismatch, then one line that says what was checked."""

from __future__ import annotations

import os

from ..core.units import count
from ..core.values import DriftKind
from ..fs.paths import inert
from ..report.lockcheck import LockCheck


def _line(kind: DriftKind, subject: str, message: str) -> str:
    return inert(f"{kind.value:<17} {subject}: {message}")


def render_lock_check_text(result: LockCheck, verbose: bool = False) -> str:
    lines = []
    for m in result.mismatches:
        subject = f"{m.distribution} {m.version or m.locked or ''}".strip() if m.kind is DriftKind.LOCK_MISMATCH \
            else f"{m.relpath or m.path} ({m.distribution} {m.version})"
        # One line each: what was found; what a reinstall or uv's cache does to a rewritten row is -v's
        # (and the JSON's).
        message = m.message.split("; ", 1)[0] if m.kind is DriftKind.RECORD_REWRITTEN and not verbose else m.message
        lines.append(_line(m.kind, subject, message) + (" (accepted)" if m.accepted else ""))
        if verbose and m.remedy:
            lines.append(inert(f"  remedy: {m.remedy}"))
    for e in result.errors:
        lines.append(inert(f"error             {e.path}: {e.message}"))
    if verbose:
        for p in result.provenance:
            if not p.verified:
                lines.append(inert(f"unverified        {p.distribution} {p.version}: {p.reason or ''}"
                                   + (f" ({p.how_to})" if p.how_to else "")))
    locks = ", ".join(os.path.basename(p) for p in result.locks) or "no lock"
    counted = [m for m in result.mismatches if not m.accepted]
    head = (f"{locks}: {count(len(counted), 'mismatch')}" if counted
            else f"{locks}: the environment matches")
    checked = f"{count(result.distributions, 'distribution')}, {result.verified:,} verified against their wheels"
    if result.unverified:
        checked += f", {result.unverified} not" + ("" if verbose else " (-v: why)")
    lines.append(f"{head} ({checked})")
    return "\n".join(lines) + "\n"


def render_lock_check_json(result: LockCheck) -> str:
    return result.model_dump_json(indent=2) + "\n"


LOCK_CHECK_RENDERERS = {"text": render_lock_check_text, "json": render_lock_check_json}
