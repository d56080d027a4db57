"""``guard --reapply-patches``: the team's patches (docs/patches.md) around an install command — the
version each reinstalled distribution will have (for the plan's prediction), the files left to the
checkpoint's reapply, and the rebase line for each patch the new version leaves unused."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

from ...patches.apply import PatchApplyReport, PatchState
from ..checkpoint import CheckpointIndex
from .command import Recognised, normalize


def versions_after(command: Recognised, installed: Mapping[str, str]) -> dict[str, str | None]:
    """Normalized name -> the version the command installs, for each installed distribution it
    names: a pin or a wheel file's version; None for an upgrade without one (not known)."""
    out: dict[str, str | None] = {}
    for req in command.requested:
        if req.name not in installed:
            continue
        if req.version is not None:
            out[req.name] = req.version
        elif command.upgrade or req.name in command.upgrade_packages:
            out.setdefault(req.name, None)
    for name in command.upgrade_packages:
        if name in installed:
            out.setdefault(name, None)
    return out


def left_to_reapply(index: CheckpointIndex) -> dict[str, str]:
    """Absolute path -> why, for each file the checkpoint holds an edit of: ``reapply`` brings that
    edit back whole, the team's change included (it is diffed from the original), so patch apply
    leaves the file to it — one write, nothing clobbered."""
    return {f.path: f"the checkpoint holds an edit of this file (the patch's change with it): left to "
                    "driftscan reapply, which writes both at once"
            for f in index.files if f.patch and f.in_env}


def rebase_lines(report: PatchApplyReport, installed: Mapping[str, str], wheel_dirs: Sequence[str] = ()) -> list[str]:
    """``driftscan patch rebase DIST --to VERSION`` for each unused patch whose distribution is
    installed (at a version the patch does not match) and has no patch of its own."""
    lines = []
    # A distribution another patch was used for has its patch already: the unused one is superseded.
    patched = {normalize(p.distribution) for p in report.patches
               if p.state not in (PatchState.UNUSED, PatchState.REFUSED)}
    for p in report.patches:
        version = installed.get(normalize(p.distribution))
        if p.state is PatchState.UNUSED and version is not None and normalize(p.distribution) not in patched:
            # the command's own wheel directories hold the new version's wheel: rebase reads it there
            wheels = "".join(f" --wheels {shlex.quote(d)}" for d in wheel_dirs)
            lines.append(f"driftscan patch rebase {shlex.quote(p.distribution)} --to {shlex.quote(version)}{wheels}")
    return list(dict.fromkeys(lines))
