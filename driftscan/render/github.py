"""GitHub Actions workflow commands: one annotation per drift and per debug finding.

    ::error file=lib/python3.12/site-packages/vllm/x.py,line=12,col=5,title=DBG101 debug-tensor-dump::torch.save()…

Levels: ``error`` for package and environment drift (what a reinstall of this environment is
about) and for high-severity findings; ``warning`` for every other drift (source trees, model
directories, dumps), medium and low findings and files that could not be checked; ``notice``
for findings the original file has too (``origin: upstream``), only with ``show_upstream``, and
for accepted drift (and the findings in it), which does not fail the job. A stale accept entry
is a warning.

Escaping follows @actions/core (``toCommandValue`` / ``escapeData`` / ``escapeProperty``):
``%`` → ``%25``, CR → ``%0D``, LF → ``%0A`` in the message, and also ``:`` → ``%3A``, ``,`` →
``%2C`` in properties, so a file name cannot end a property or start a new command.

Paths are relative to ``GITHUB_WORKSPACE`` when it is set and the file is under it (GitHub
places annotations only on repository files), else absolute.
"""

from __future__ import annotations

import os
import posixpath

from ..core.values import Origin
from ..report.contract import DriftOut, Report
from .sarif import DRIFT_KINDS, accepted_reason, drift_message


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(level: str, message: str, **properties: str | int | None) -> str:
    """``::level key=value,…::message`` with every value escaped."""
    props = ",".join(f"{k}={escape_property(str(v))}" for k, v in properties.items() if v not in (None, ""))
    return f"::{level}{' ' + props if props else ''}::{escape_data(message)}"


def workspace_path(path: str, workspace: str | None) -> str:
    """``path`` relative to ``workspace`` when it lies under it, else as it is (absolute)."""
    if not workspace:
        return path
    root = posixpath.normpath(workspace)
    norm = posixpath.normpath(path)
    if norm == root or not norm.startswith(root.rstrip("/") + "/"):
        return path
    return posixpath.relpath(norm, root)


def _drift_level(d: DriftOut) -> str:
    if d.kind.value == "restored":
        return "notice"  # (diff) back to what RECORD lists: nothing to undo
    return "error" if d.scope.value in ("package", "environment") else "warning"


def _finding_level(severity: str, origin: Origin | None) -> str:
    if origin is Origin.UPSTREAM:
        return "notice"
    return "error" if severity == "high" else "warning"


def render_github(report: Report, *, workspace: str | None = None, show_upstream: bool = False) -> str:
    """``workspace``: the checkout paths are made relative to (default: ``$GITHUB_WORKSPACE``)."""
    if workspace is None:
        workspace = os.environ.get("GITHUB_WORKSPACE") or None
    lines = []
    for d in report.drifts:
        short = DRIFT_KINDS.get(d.kind.value, (d.kind.value,))[0]
        title = f"driftscan {d.kind.value}: {short}"
        # a glob is no file: a dumps drift is annotated on the first dump it found (its message has the glob)
        possible = d.actual.get("possible_artifacts") if d.kind.value == "possible-debug-artifacts" else None
        where = d.artifacts[0] if d.kind.value == "debug-artifacts" and d.artifacts else (
            str(possible[0]) if isinstance(possible, list) and possible else
            None if d.kind.value in ("debug-artifacts", "possible-debug-artifacts") else d.path)
        accepted = accepted_reason(d) is not None  # accepted drift does not fail the job: a notice
        lines.append(command("notice" if accepted else _drift_level(d), drift_message(d),
                             file=workspace_path(where, workspace) if where else None, title=title))
        for f in d.findings:
            if f.origin is Origin.UPSTREAM and not show_upstream:
                continue
            origin = f" ({f.origin.value})" if f.origin else ""
            level = "notice" if accepted else _finding_level(f.severity.value, f.origin)
            lines.append(command(level, f"{f.message}{origin}" + (" (in an accepted drift)" if accepted else ""),
                                 file=workspace_path(d.path, workspace), line=f.line or None,
                                 col=f.column or None, title=f"{f.code} {f.name} ({f.severity.value})"))
    for stale in getattr(report, "stale_accepted", ()):
        lines.append(command("warning", f"stale accept entry {stale.entry} ({stale.path}): {stale.why}; its drift "
                                        f"counts again (reason given: {stale.reason})",
                             file=workspace_path(stale.file, workspace) if stale.file else None,
                             title="driftscan: stale accept entry"))
    for e in report.errors:
        lines.append(command("warning", f"could not check: {e.message}", file=workspace_path(e.path, workspace),
                             title="driftscan: could not check"))
    return "".join(line + "\n" for line in lines)
