"""GitHub Actions workflow commands: one annotation per drift and per debug finding.

    ::error file=lib/python3.12/site-packages/vllm/x.py,line=12,col=5,title=DBG101 debug-tensor-dump::torch.save()…

Levels follow the fail policy the run exits by (``--fail-on``, ``--exit-zero``;
report/policy.py): ``error`` for a drift that makes the run fail under it (and for a finding
that does by itself: any under ``debug``, a high one under ``debug-high``) and for a file that
could not be checked (exit bit 2, whatever the policy); ``warning`` for drift and findings that
do not make it fail; ``notice`` for accepted drift and the findings in it, and for findings the
original file has too (``origin: upstream``, shown only with ``show_upstream``). A stale accept
entry is a warning (its drift is annotated by its own level).

Escaping follows @actions/core (``toCommandValue`` / ``escapeData`` / ``escapeProperty``):
``%`` → ``%25``, CR → ``%0D``, LF → ``%0A`` in the message, and also ``:`` → ``%3A``, ``,`` →
``%2C`` in properties, so a file name cannot end a property or start a new command.

Paths are relative to ``GITHUB_WORKSPACE`` when it is set and the file is under it (GitHub
places annotations only on repository files), else absolute.
"""

from __future__ import annotations

import enum
import os
import posixpath
from collections.abc import Sequence

from ..core.values import Origin
from ..report.contract import DriftOut, FindingOut, Report
from ..report.policy import FailOn, drift_fails, finding_fails
from .sarif import DRIFT_KINDS, accepted_reason, drift_message


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(level: Level | str, message: str, **properties: str | int | None) -> str:
    """``::level key=value,…::message`` with every value escaped."""
    props = ",".join(f"{k}={escape_property(str(v))}" for k, v in properties.items() if v not in (None, ""))
    return f"::{Level(level).value}{' ' + props if props else ''}::{escape_data(message)}"


def workspace_path(path: str, workspace: str | None) -> str:
    """``path`` relative to ``workspace`` when it lies under it, else as it is (absolute)."""
    if not workspace:
        return path
    root = posixpath.normpath(workspace)
    norm = posixpath.normpath(path)
    if norm == root or not norm.startswith(root.rstrip("/") + "/"):
        return path
    return posixpath.relpath(norm, root)


class Level(str, enum.Enum):
    """An annotation's level, as the workflow command spells it."""

    ERROR = "error"  # it makes the run fail
    WARNING = "warning"  # drift (or debug code in it) that does not make the run fail
    NOTICE = "notice"  # for information: accepted, or also in the original file


def _drift_level(d: DriftOut, policies: Sequence[FailOn]) -> Level:
    if accepted_reason(d) is not None:
        return Level.NOTICE  # accepted drift never fails the run
    if d.kind.value == "upstream-record-mismatch" and not any(drift_fails(d, p) for p in policies):
        return Level.NOTICE  # the wheel's own bytes: for information
    return Level.ERROR if any(drift_fails(d, p) for p in policies) else Level.WARNING


def _finding_level(d: DriftOut, f: FindingOut, policies: Sequence[FailOn]) -> Level:
    if f.origin is Origin.UPSTREAM or accepted_reason(d) is not None:
        return Level.NOTICE
    return Level.ERROR if any(finding_fails(f, p) for p in policies) else Level.WARNING


def render_github(report: Report, *, workspace: str | None = None, show_upstream: bool = False,
                  fail_on: Sequence[FailOn] = (FailOn.DRIFT,), exit_zero: bool = False) -> str:
    """``workspace``: the checkout paths are made relative to (default: ``$GITHUB_WORKSPACE``).
    ``fail_on`` and ``exit_zero``: the fail policy the run's exit status follows (``--fail-on``,
    ``--exit-zero``), which decides each annotation's level."""
    if workspace is None:
        workspace = os.environ.get("GITHUB_WORKSPACE") or None
    policies = () if exit_zero else tuple(fail_on)
    lines = []
    for d in report.drifts:
        short = DRIFT_KINDS.get(d.kind.value, (d.kind.value,))[0]
        title = f"driftscan {d.kind.value}: {short}"
        # a glob is no file: a dumps drift is annotated on the first dump it found (its message has the glob)
        possible = d.actual.get("possible_artifacts") if d.kind.value == "possible-debug-artifacts" else None
        where = d.artifacts[0] if d.kind.value == "debug-artifacts" and d.artifacts else (
            str(possible[0]) if isinstance(possible, list) and possible else
            None if d.kind.value in ("debug-artifacts", "possible-debug-artifacts") else d.path)
        accepted = accepted_reason(d) is not None
        lines.append(command(_drift_level(d, policies), drift_message(d),
                             file=workspace_path(where, workspace) if where else None, title=title))
        for f in d.findings:
            if f.origin is Origin.UPSTREAM and not show_upstream:
                continue
            origin = f" ({f.origin.value})" if f.origin else ""
            lines.append(command(_finding_level(d, f, policies),
                                 f"{f.message}{origin}" + (" (in an accepted drift)" if accepted else ""),
                                 file=workspace_path(d.path, workspace), line=f.line or None,
                                 col=f.column or None, title=f"{f.code} {f.name} ({f.severity.value})"))
    for stale in getattr(report, "stale_accepted", ()):
        lines.append(command(Level.WARNING, f"stale accept entry {stale.entry} ({stale.path}): {stale.why}; its drift "
                                        f"counts again (reason given: {stale.reason})",
                             file=workspace_path(stale.file, workspace) if stale.file else None,
                             title="driftscan: stale accept entry"))
    for e in report.errors:  # exit bit 2, whatever the policy: the run fails
        lines.append(command(Level.ERROR, f"could not check: {e.message}", file=workspace_path(e.path, workspace),
                             title="driftscan: could not check"))
    return "".join(line + "\n" for line in lines)
