"""``driftscan lock-check``'s result: an audit against lockfiles cut down to what a CI step asks —
does this environment match this lock — with its own versioned schema
(``driftscan schema --for lock-check``). Field names are a contract: add fields, rename none."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field
from typing import Annotated, Final, Literal

from ..core.datamodel import DataModel, InlineEnum, datamodel, describe
from ..core.values import DriftKind
from .contract import ErrorOut, ProvenanceOut, Report, TargetInfo, Tool, _now
from .policy import EXIT_CLEAN, EXIT_DRIFT, EXIT_INCOMPLETE, FailOn

SCHEMA_VERSION: Final = "1"
#: The drifts a lock check is about.
KINDS = (DriftKind.LOCK_MISMATCH, DriftKind.RECORD_REWRITTEN)
#: What fails it by default.
DEFAULT_FAIL_ON = (FailOn.LOCK_MISMATCH, FailOn.RECORD_REWRITTEN)


@datamodel
class MismatchOut(DataModel):
    kind: Annotated[DriftKind, InlineEnum(DriftKind)] = field(metadata=describe("lock-mismatch | record-rewritten"))
    path: str = field(metadata=describe("the dist-info (a version or source), or the file (a rewritten row)"))
    message: str
    relpath: str = field(default="", metadata=describe("the path relative to its site-packages"))
    distribution: str | None = None
    version: str | None = field(default=None, metadata=describe("installed; null: not installed"))
    locked: str | None = field(default=None, metadata=describe("the version the lock pins; null: not in the lock"))
    remedy: str = ""
    accepted: bool = field(default=False, metadata=describe("accepted by the configuration: never fails the run"))


@datamodel
class LockCheck(DataModel):
    schema_version: Literal["1"] = SCHEMA_VERSION
    tool: Tool = field(default_factory=Tool)
    target: TargetInfo = field(default_factory=TargetInfo)
    locks: list[str] = field(default_factory=list)
    distributions: int = 0
    verified: int = field(default=0, metadata=describe("distributions whose wheel was found by the lock's digest "
                                                       "and whose RECORD was compared with it row by row"))
    unverified: int = field(default=0, metadata=describe("distributions the lock names a wheel digest for whose "
                                                         "wheel was not found or not usable (provenance says why)"))
    mismatches: list[MismatchOut] = field(default_factory=list)
    provenance: list[ProvenanceOut] = field(default_factory=list)
    errors: list[ErrorOut] = field(default_factory=list, metadata=describe("what could not be checked (exit bit 2)"))
    notes: list[ErrorOut] = field(default_factory=list)
    generated_at: str = field(default_factory=_now)


def lock_check_of(report: Report) -> LockCheck:
    """The lock check a report of ``audit --lock`` holds."""
    mismatches = []
    for d in report.drifts:
        if d.kind not in KINDS:
            continue
        locked = d.expected.get("version") if d.kind is DriftKind.LOCK_MISMATCH else None
        mismatches.append(MismatchOut(kind=d.kind, path=d.path, relpath=d.relpath, message=d.evidence,
                                      distribution=d.distribution.name if d.distribution else None,
                                      version=d.actual.get("version") if d.kind is DriftKind.LOCK_MISMATCH
                                      else (d.distribution.version if d.distribution else None),
                                      locked=locked if isinstance(locked, str) else None, remedy=d.remedy,
                                      accepted=d.accepted is not None))
    provenance = list(report.provenance or [])
    return LockCheck(target=report.target, locks=list(report.lock or []), distributions=report.summary.distributions,
                     verified=sum(p.verified for p in provenance), unverified=sum(not p.verified for p in provenance),
                     mismatches=mismatches, provenance=provenance, errors=list(report.errors), notes=list(report.notes))


def lock_check_exit_status(result: LockCheck, fail_on: Sequence[FailOn] = DEFAULT_FAIL_ON, exit_zero: bool = False,
                           strict: bool = False) -> int:
    """Bit 1 when a mismatch not accepted meets ``fail_on`` (``drift``: any; ``lock-mismatch`` and
    ``record-rewritten``: that kind; ``never``: none); bit 2 when something could not be checked (a
    lock that could not be read, a file not readable; with ``strict``, also a wheel not verified)."""
    policies = set(fail_on)
    counted = [m for m in result.mismatches if not m.accepted]
    fails = any(FailOn.DRIFT in policies or FailOn(m.kind.value) in policies for m in counted)
    status = EXIT_DRIFT if fails and not exit_zero else EXIT_CLEAN
    if result.errors or (strict and result.unverified):
        status |= EXIT_INCOMPLETE
    return status


def lock_check_schema() -> dict[str, object]:
    return LockCheck.model_json_schema()
