"""Pure: a FileCheck becomes a Drift with a scope, a reinstall prediction and a remedy."""

from __future__ import annotations

import shlex
import sys

from .model import Distribution, Drift, DriftKind, FileCheck, Scope, Target

_PACKAGE_KINDS = {DriftKind.MODIFIED, DriftKind.MISSING, DriftKind.TYPE_CHANGED, DriftKind.CLOBBERED}


def requirement(dist: Distribution) -> str:
    """What to hand the installer so it reinstalls exactly what is there."""
    url = (dist.direct_url or {}).get("url")
    if url and dist.editable:
        return f"-e {shlex.quote(url)}"
    if url and "vcs_info" not in (dist.direct_url or {}):
        return shlex.quote(url)
    return shlex.quote(f"{dist.name}=={dist.version}")


def reinstall_command(target: Target, dists: list[Distribution]) -> str:
    installer = (dists[0].installer or "pip").lower() if dists else "pip"
    reqs = " ".join(requirement(d) for d in dists)
    if installer == "uv":
        where = f" --python {shlex.quote(target.venv)}" if target.venv else ""
        return f"uv pip install{where} --reinstall --no-deps {reqs}"
    if target.venv:
        python = shlex.quote(f"{target.venv}/bin/python")
    elif target.kind == "interpreter":
        python = shlex.quote(sys.executable)
    else:
        python = "python"
    return f"{python} -m pip install --force-reinstall --no-deps {reqs}"


def classify(check: FileCheck, target: Target) -> Drift:
    dist = check.distribution
    path = shlex.quote(check.path)
    if check.kind in _PACKAGE_KINDS and dist is not None:
        remedy = reinstall_command(target, [dist])
        if check.kind is DriftKind.CLOBBERED:
            remedy = f"two distributions install this path; uninstall one of them, or {remedy}"
        return Drift(check, Scope.PACKAGE, False, remedy,
                     check.evidence or f"listed in the RECORD of {dist.key}; a reinstall rewrites it")
    if check.kind is DriftKind.ORPHANED_METADATA:
        return Drift(check, Scope.ENVIRONMENT, True, f"rm -r {path}",
                     check.evidence or "metadata directory without RECORD")
    if check.kind is DriftKind.ORPHANED_BYTECODE:
        return Drift(check, Scope.ENVIRONMENT, True, f"rm {path}", check.evidence)
    return Drift(check, Scope.ENVIRONMENT, True,
                 f"no reinstall removes it; if it is not needed: rm {path}",
                 check.evidence or "no RECORD lists this file")
