"""The way back for a drifted model-directory file: what every kind shares (added files, files
not read, the checkpoint line before anything destructive); each provenance module says the rest
(``way_back``)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..core.values import DriftKind, FileCheck, LayoutKind
from .provenance import provenance_of
from .provenance.interface import WayBack

if TYPE_CHECKING:
    from . import ModelDirResult


def checkpoints_base() -> str:
    """Where checkpoints go when no path is named: ``DRIFTSCAN_CHECKPOINT_DIR``, else
    ``$XDG_STATE_HOME/driftscan/checkpoints`` (``~/.local/state``). ``driftscan checkpoint``
    creates it when a path inside it is asked for."""
    return os.environ.get("DRIFTSCAN_CHECKPOINT_DIR") or os.path.join(
        os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state"), "driftscan", "checkpoints")


# A remedy that deletes or replaces a file destroys the edit in it: before that part, the exact
# line that saves it, chained with && so that nothing is deleted when the checkpoint fails.
CHECKPOINT_FIRST = "checkpoint first: "


def checkpoint_line(model_root: str, check: FileCheck) -> str:
    """``driftscan checkpoint --model-dir ROOT -o DIR`` saving this drift (and the directory's
    others) before a remedy destroys it. DIR is new for each state of the file (named by the
    path and what is on disk now), in ``checkpoints_base()``: run again after another edit, the
    line names another checkpoint; the same line twice refuses to replace the first."""
    state = json.dumps([check.path, check.kind.value, check.actual], sort_keys=True, default=str)
    name = os.path.basename(model_root.rstrip(os.sep)) or "model"
    repo = os.path.dirname(os.path.dirname(model_root.rstrip(os.sep)))
    if os.path.basename(os.path.dirname(model_root.rstrip(os.sep))) == "snapshots" and repo:
        name = f"{os.path.basename(repo)}-{name[:12]}"  # models--org--name-<commit>, not the bare commit
    dest = os.path.join(checkpoints_base(), f"{name}-{hashlib.sha256(state.encode()).hexdigest()[:12]}")
    return f"driftscan checkpoint --model-dir {shlex.quote(model_root)} -o {shlex.quote(dest)}"


def _remedy(kind: LayoutKind, root: str, commit: str | None, check: FileCheck, memo: dict[Any, Any]) -> WayBack:
    """The way back, with the checkpoint line first wherever it deletes or replaces content."""
    way = _way_back(kind, root, commit, check, memo)
    if check.kind in (DriftKind.MISSING, DriftKind.STALE_METADATA):
        return way  # nothing on disk to lose (a dangling link, a file only re-read)
    provenance = provenance_of(kind)
    if provenance is None or not provenance.SELF_AUDITED:
        return way  # a checkpoint of the directory alone would not see this drift (a snapshot's diff)
    first = checkpoint_line(root, check)
    command = _DESTRUCTIVE.search(way.remedy)  # the destructive part, wherever the text puts it
    if command is not None:
        at = command.start(1)
        return replace(way, remedy=f"{way.remedy[:at]}{CHECKPOINT_FIRST}{first} && {way.remedy[at:]}")
    return replace(way, remedy=f"{CHECKPOINT_FIRST}{first}; then {way.remedy}")


# The command a remedy's text starts with, or that follows its explanation's ": ".
_DESTRUCTIVE = re.compile(r"(?:\A|: )(rm |git -C |hf download |cp |ln -sfn )")


def _way_back(kind: LayoutKind, root: str, commit: str | None, check: FileCheck, memo: dict[Any, Any]) -> WayBack:
    if check.kind is DriftKind.ADDED:
        return WayBack(f"no download or reinstall removes it; if it is not needed: rm {shlex.quote(check.path)}")
    if check.kind is DriftKind.STALE_METADATA:
        return WayBack("its content was not read (large file newer than its download metadata): rerun with --deep "
                       "to hash it")
    provenance = provenance_of(kind)
    if provenance is None:
        return WayBack("restore it from its source")
    return provenance.way_back(check, root, commit, memo)


def with_remedy(result: ModelDirResult, check: FileCheck, memo: dict[Any, Any]) -> FileCheck:
    """``check`` (one of ``result``'s) with its way back as ``remedy_hint`` (one it has already is
    kept) and the evidence for it; ``memo``: shared by the checks of one result."""
    if check.remedy_hint:
        return check
    way = _remedy(result.kind, result.root, result.commit, check, memo)
    return replace(check, evidence=check.evidence + way.evidence, remedy_hint=way.remedy)


def with_remedies(result: ModelDirResult) -> tuple[FileCheck, ...]:
    """Each check of ``result`` with its ``remedy_hint`` (one it has already is kept)."""
    memo: dict[Any, Any] = {}
    return tuple(with_remedy(result, c, memo) for c in result.checks)
