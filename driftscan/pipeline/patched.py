"""Package files ``driftscan patch apply`` wrote, told from drift: a file that still holds what the
team's patch wrote is ``patched`` (the patch named), one edited since stays ``modified`` and says
which patch wrote it first (reinstall/patchledger.py keeps what was written)."""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Sequence
from dataclasses import replace

from ..core.values import DriftKind, FileCheck, FileState
from ..reinstall.patchledger import Patched, patched_files

_KINDS = {DriftKind.MODIFIED, DriftKind.ADDED, DriftKind.MISSING}


def _hex(record_hash: object) -> str | None:
    """RECORD's ``sha256=<urlsafe base64>`` as hex."""
    if not isinstance(record_hash, str) or not record_hash.startswith("sha256="):
        return None
    encoded = record_hash[len("sha256="):]
    try:
        return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).hex()
    except (binascii.Error, ValueError):
        return None


def _patched(check: FileCheck, by: Patched) -> FileCheck:
    expected = FileState(patch=by.patch, patch_sha256=by.patch_sha256, applied_at=by.applied_at)
    what = "deleted it" if by.sha256 is None else "wrote these bytes"
    evidence = (f"{by.patch} (sha256 {by.patch_sha256[:12]}…) {what} with driftscan patch apply on {by.applied_at}: "
                f"the team's change to {by.distribution} {by.version}")
    return replace(check, kind=DriftKind.PATCHED, expected={**check.expected, **expected}, evidence=evidence)


def mark_patched(checks: Sequence[FileCheck], site_packages: Sequence[str]) -> list[FileCheck]:
    """``checks`` with each file still as a patch wrote it marked ``patched``, and each one edited
    since a patch wrote it saying so."""
    if not site_packages or not any(c.kind in _KINDS and c.distribution is not None for c in checks):
        return list(checks)
    written = patched_files(site_packages)
    if not written:
        return list(checks)
    out = []
    for check in checks:
        dist = check.distribution
        by = written.get(os.path.relpath(check.path, dist.site_packages).replace(os.sep, "/")) \
            if dist is not None and check.kind in _KINDS else None
        if by is None or by.distribution.lower() != dist.name.lower():  # type: ignore[union-attr]
            out.append(check)
        elif (check.kind is DriftKind.MISSING) == (by.sha256 is None) and \
                (by.sha256 is None or _hex(check.actual.get("hash")) == by.sha256):
            out.append(_patched(check, by))
        else:
            out.append(replace(check, evidence=f"{check.evidence + '; ' if check.evidence else ''}{by.patch} wrote "
                                               f"this file on {by.applied_at}; it was changed since"))
    return out
