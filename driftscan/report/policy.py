"""What makes a report fail, as a library decision: the fail policies (``--fail-on``) and the exit
status bitmask every command exits with (documented in the README). The CLI only maps options to
these and exits with the number; a library caller gets the same verdict from the same report."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..core.values import Origin

if TYPE_CHECKING:
    from ..procs.model import ProcsReport
    from .contract import DriftOut, FindingOut as Finding, Report

EXIT_CLEAN = 0
EXIT_DRIFT = 1  # bit 1: the report meets a fail policy
EXIT_INCOMPLETE = 2  # bit 2: something could not be checked (or a usage error, or a refusal)


class FailOn(str, enum.Enum):
    """What sets exit bit 1."""

    DRIFT = "drift"  # any drift not accepted
    PACKAGE = "package"  # a drift of that scope
    ENVIRONMENT = "environment"
    SOURCE = "source"
    DATA = "data"
    EXTERNAL = "external"
    DEBUG = "debug"  # a debug finding not upstream, or dumps
    DEBUG_HIGH = "debug-high"  # a high-severity debug finding not upstream
    # a distribution that could not be verified, or a file its own wheel's RECORD row cannot
    # (upstream-record-mismatch: the only policy that counts it)
    UNVERIFIABLE = "unverifiable"
    # a process that runs the environment with evidence of old code (``driftscan procs``' default;
    # on an audit, only when it was asked for its processes: ``audit --processes``)
    STALE_PROCESS = "stale-process"
    # a file whose RECORD row was rewritten to match it (only a wheel proven from outside the tree tells)
    RECORD_REWRITTEN = "record-rewritten"
    LOCK_MISMATCH = "lock-mismatch"  # a distribution not as the lockfile (``--lock``) pins it
    NEVER = "never"


_BY_KIND = {FailOn.RECORD_REWRITTEN, FailOn.LOCK_MISMATCH}  # the drifts of that one kind
_SCOPES = {FailOn.PACKAGE, FailOn.ENVIRONMENT, FailOn.SOURCE, FailOn.DATA, FailOn.EXTERNAL}
# Informational drift: what the wheel itself ships, not a change (counted by ``unverifiable`` alone).
_UPSTREAM = "upstream-record-mismatch"
_PATCHED = "patched"


def fail_policies(values: Iterable[str]) -> tuple[FailOn, ...]:
    """Policies from words (comma-separated, repeatable; none: ``drift``). ValueError names the
    words that are not policies."""
    chosen = [v.strip() for value in values for v in value.split(",") if v.strip()] or [FailOn.DRIFT.value]
    known = {p.value for p in FailOn}
    unknown = [v for v in chosen if v not in known]
    if unknown:
        raise ValueError(f"unknown {', '.join(unknown)} (choose from {', '.join(p.value for p in FailOn)})")
    return tuple(FailOn(v) for v in chosen)


def counted(report: Report) -> list[DriftOut]:
    """The drifts that count toward the exit status: not accepted (an accepted drift stays in the report)."""
    return [d for d in report.drifts if getattr(d, "accepted", None) is None]


def finding_fails(finding: Finding, policy: FailOn) -> bool:
    """Whether a finding (of a drift not accepted) meets ``policy`` by itself: only the debug
    policies look at findings, and never at one the original file has too."""
    if finding.origin is Origin.UPSTREAM:
        return False
    if policy is FailOn.DEBUG:
        return True
    return policy is FailOn.DEBUG_HIGH and finding.severity.value == "high"


def drift_fails(drift: DriftOut, policy: FailOn) -> bool:
    """Whether ``drift`` alone meets ``policy`` (an accepted drift never does): what a report
    fails on, one drift at a time, so a renderer can say which drift makes the run fail."""
    if getattr(drift, "accepted", None) is not None:
        return False
    if drift.kind.value == _UPSTREAM:
        return policy is FailOn.UNVERIFIABLE
    if drift.kind.value == _PATCHED:  # the team's own patch, as written: chosen, like an accepted drift
        return False
    if policy is FailOn.DRIFT:
        return True
    if policy is FailOn.STALE_PROCESS:
        return False
    if policy in _BY_KIND:
        return bool(drift.kind.value == policy.value)
    if policy in _SCOPES:
        return bool(drift.scope.value == policy.value)
    if policy is FailOn.DEBUG and drift.kind.value == "debug-artifacts":
        return True
    return any(finding_fails(f, policy) for f in drift.findings)


def fails(report: Report, policy: FailOn) -> bool:
    """Whether ``report`` meets ``policy``."""
    if policy is FailOn.UNVERIFIABLE and report.unverifiable:
        return True
    if policy is FailOn.STALE_PROCESS:
        processes = getattr(report, "processes", None)  # an audit's, with --processes
        return bool(processes is not None and processes.stale)
    return any(drift_fails(d, policy) for d in report.drifts)


def exit_status(report: Report, strict: bool = False, fail_on: Sequence[FailOn | str] = (FailOn.DRIFT,),
                exit_zero: bool = False) -> int:
    """Bit 1 when the report meets one of the ``fail_on`` policies (never with ``exit_zero``;
    ``stale-process`` only counts the processes of ``audit --processes``, ``drift`` never does);
    bit 2 when something could not be checked (a bounded walk of the processes' environment cut
    short too; with ``strict``: also unverifiable distributions,
    or a target where nothing at all could be verified)."""
    policies = [FailOn(p) for p in fail_on]
    status = EXIT_DRIFT if not exit_zero and any(fails(report, p) for p in policies) else EXIT_CLEAN
    nothing_verified = report.summary.files_checked == 0 and not report.drifts
    processes = getattr(report, "processes", None)
    if report.errors or (processes is not None and processes.errors) or (strict and (report.unverifiable or nothing_verified)):
        status |= EXIT_INCOMPLETE
    return status


def procs_exit_status(report: ProcsReport, fail_on: Sequence[FailOn | str] = (FailOn.STALE_PROCESS,),
                      exit_zero: bool = False) -> int:
    """``driftscan procs``' verdict: bit 1 when a process runs old code and ``fail_on`` holds
    ``stale-process`` (or ``drift``: a stale process is the environment's drift at run time);
    bit 2 when something could not be checked (a process or file not visible, a bounded walk cut)."""
    policies = {FailOn(p) for p in fail_on}
    counts = policies & {FailOn.STALE_PROCESS, FailOn.DRIFT}
    status = EXIT_DRIFT if not exit_zero and counts and report.stale else EXIT_CLEAN
    if report.incomplete():
        status |= EXIT_INCOMPLETE
    return status

