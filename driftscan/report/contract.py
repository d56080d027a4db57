"""The report: a pydantic model with a versioned schema, and an atomic writer.

Field names here are a contract with CI jobs: add fields freely, rename none.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal

from dataclasses import field

from ..core.datamodel import DataModel, InlineEnum, datamodel, describe

from .._version import __version__
from ..fs.atomic import write_atomic  # noqa: F401 - re-exported: the report's writer
from ..core.values import Drift, DriftKind, Finding, Origin, Prediction, Problem, Scope, Severity, Verification
from ..formats.record import distribution_digest
from ..fs.paths import inert, printable, printable_tree, relpath
from ..procs.model import ProcsReport

if TYPE_CHECKING:  # a clean audit's report imports no pristine code (tests/contract/test_imports.py)
    from ..pristine.base import Lookup
    from ..provenance.model import Provenance

SCHEMA_VERSION: Final = "1"
SCOPE_ORDER = [Scope.PACKAGE, Scope.ENVIRONMENT, Scope.SOURCE, Scope.DATA, Scope.EXTERNAL]


# The report's classes are plain dataclasses with pydantic's model API (datamodel.py): building
# and rendering a report imports no pydantic; its schema and validation still come from pydantic.


def _hostname() -> str:
    """``socket.gethostname()``, without importing socket (~0.8 MB resident, for one name) where
    uname gives the same (POSIX: glibc's gethostname is uname's nodename)."""
    uname = getattr(os, "uname", None)
    if uname is not None:
        nodename: str = uname().nodename
        return nodename
    import socket  # ~0.8 MB resident; only where os has no uname

    return socket.gethostname()


@datamodel
class Tool(DataModel):
    name: Literal["driftscan"] = "driftscan"
    version: str = __version__


@datamodel
class TargetInfo(DataModel):
    venv: str | None = None
    site_packages: list[str] = field(default_factory=list)
    model_dirs: list[str] = field(default_factory=list)
    kind: str | None = field(default=None, metadata=describe("venv, prefix, site-packages or interpreter"))
    python_version: str | None = None
    chosen_because: str | None = field(default=None, metadata=describe("when no target was named: why this one"))
    site_packages_links: dict[str, str] = field(default_factory=dict, metadata=describe(
        "a site-packages named through a symlink: the path named, then the directory audited"))


@datamodel
class Summary(DataModel):
    distributions: int
    files_checked: int
    drifts: int
    unverifiable: int
    errors: int
    by_kind: dict[str, int] = field(default_factory=dict)
    accepted: int = field(default=0, metadata=describe(
        "drifts an accept entry of the configuration accepts (counted in drifts too)"))
    not_hashed: int = field(default=0, metadata=describe(
        "files checked by presence, size and mtime only (large model files without --deep): counted in "
        "files_checked, content unread"))
    trusted_by_signature: int = field(default=0, metadata=describe(
        "diff: files settled without hashing because their size, mtime and mode match the snapshot's (as audit's "
        "stat cache settles files): counted in files_checked, content unread; --no-cache hashes them all"))


@datamodel
class DistributionRef(DataModel):
    name: str
    version: str
    installer: str | None = None
    record_digest: str | None = field(default=None, metadata=describe(
        "sha256 over the RECORD rows a wheel ships (path, hash, size), installer-written rows, rows outside "
        "site-packages and __pycache__ rows left out: equal on every machine with the same wheel installed "
        "(what `driftscan compare` finds a rewritten RECORD by); null in drifts, for distributions without a "
        "RECORD and in reports of older driftscan"))


@datamodel
class FindingOut(DataModel):
    code: str
    name: str
    severity: Severity
    line: int
    column: int
    message: str
    snippet: str = ""
    origin: Annotated[Origin, InlineEnum(Origin)] | None = field(default=None, metadata=describe(
        "injected: not in the original file; upstream: the original has it too (matched by rule code and "
        "normalised source line); null: no original at hand to tell", title="Origin"))


@datamodel
class PristineRefOut(DataModel):
    source: str = field(metadata=describe("direct_url | wheels | uv-cache | pip-cache | backup | kept | fetch"))
    path: str


@datamodel
class RejectedOut(DataModel):
    source: str
    path: str
    reason: str


@datamodel
class PristineOut(DataModel):
    """Where a drifted distribution's original files came from, or why none was found."""

    distribution: str
    version: str
    source: str | None = field(default=None, metadata=describe("direct_url | wheels | uv-cache | pip-cache | backup | kept | fetch"))
    path: str | None = None
    reason: str | None = field(default=None, metadata=describe(
        "when no source (or only part of one) was found: why"))
    rejected: list[RejectedOut] = field(default_factory=list, metadata=describe(
        "sources tried and not trusted, with why"))


@datamodel
class DriftOut(DataModel):
    path: str = field(metadata=describe("absolute path"))
    relpath: str = field(metadata=describe(
        "relative to its root (site-packages, the venv, a model directory), with /"))
    kind: DriftKind
    scope: Scope
    distribution: DistributionRef | None = None
    survives_reinstall: bool
    prediction: Prediction = field(default=Prediction.WIPED, metadata=describe(
        "wiped | survives | may-survive: survives_reinstall, with its certainty"))
    remedy: str
    evidence: str = ""
    findings: list[FindingOut] = field(default_factory=list)
    expected: dict[str, Any] = field(default_factory=dict)
    actual: dict[str, Any] = field(default_factory=dict)
    json_changes: list[dict[str, Any]] = field(default_factory=list, metadata=describe(
        "for JSON files: [{pointer, op: added|removed|changed, old, new}]"))
    diff: str | None = field(default=None, metadata=describe(
        "unified diff against the original, when it is at hand"))
    artifacts: list[str] = field(default_factory=list, metadata=describe("debug-artifacts: the dump files found"))
    pristine: PristineRefOut | None = field(default=None, metadata=describe("the verified original compared with"))
    byte_ranges: list[list[int]] = field(default_factory=list, metadata=describe(
        "binary files compared with their original: changed [start, end) ranges"))
    accepted: dict[str, Any] | None = field(default=None, metadata=describe(
        "accepted drift (docs/configuration.md): {reason, entry (its index), path (as written), source (the "
        "config file)}; it does not count toward the exit status"))
    content_preview: str | None = field(default=None, metadata=describe(
        "startup-code, and added text files of at most 4 KiB: the file's first lines (at most 20 lines, 4 KiB), "
        "terminal-safe, with a last line saying what was cut; a .pth a RECORD lists that now has executable "
        "lines too"))


@datamodel
class RowChangeOut(DataModel):
    """One RECORD row of the installed distribution that is not its wheel's own row."""

    path: str = field(metadata=describe("the RECORD path (relative to site-packages)"))
    kind: str = field(metadata=describe("changed (both rows, other hashes) | added (no such row in the wheel) | "
                                        "removed (the wheel's row is not in the installed RECORD)"))
    installed_hash: str | None = None
    wheel_hash: str | None = None
    file_state: str = field(default="not-checked", metadata=describe(
        "the file now: matches-wheel | matches-installed-row | neither | missing | not-checked"))


@datamodel
class ProvenanceOut(DataModel):
    """Where a distribution came from, proven from outside the tree: the wheel a lockfile or
    direct_url.json names by digest, and its own RECORD compared with the installed one."""

    distribution: str
    version: str
    lock: str | None = field(default=None, metadata=describe("the lockfile that pins it (absolute path)"))
    wheel_sha256: str | None = field(default=None, metadata=describe("the wheel's sha256 the lock or direct_url names"))
    wheel: str | None = field(default=None, metadata=describe("the wheel's file name"))
    source: str = field(default="none", metadata=describe(
        "where the wheel was found: direct_url | wheels | uv-cache | pip-cache | fetch | none"))
    verified: bool = field(default=False, metadata=describe(
        "the wheel was found, its digest matched, and its RECORD was compared row by row"))
    reason: str | None = field(default=None, metadata=describe("when not verified: why"))
    how_to: str | None = field(default=None, metadata=describe("when not verified: what would make it verifiable"))
    rows_compared: int = 0
    rows: list[RowChangeOut] = field(default_factory=list, metadata=describe(
        "the installed RECORD rows that differ from the wheel's own (each also a record-rewritten drift)"))


@datamodel
class StaleAcceptedOut(DataModel):
    """An accept entry that no longer accepts its drift: the drift counts again."""

    entry: int = field(metadata=describe("the entry's index in the config file's accept list (from 0)"))
    path: str = field(metadata=describe("the entry's path, as written"))
    reason: str
    why: str = field(metadata=describe('e.g. "expired 2027-03-01", "the file no longer has that sha256 (now …)"'))
    file: str | None = field(default=None, metadata=describe("the drifted file it no longer accepts (absolute)"))


@datamodel
class UnusedAcceptedOut(DataModel):
    """An accept entry that accepts no drift (its file is clean again, or the path matches nothing)."""

    entry: int
    path: str
    reason: str


@datamodel
class UnverifiableOut(DataModel):
    distribution: str
    reason: str


@datamodel
class ErrorOut(DataModel):
    path: str
    message: str


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@datamodel
class Report(DataModel):
    schema_version: Literal["1"] = SCHEMA_VERSION
    tool: Tool = field(default_factory=Tool)
    target: TargetInfo
    summary: Summary
    drifts: list[DriftOut] = field(default_factory=list)
    unverifiable: list[UnverifiableOut] = field(default_factory=list)
    errors: list[ErrorOut] = field(default_factory=list)
    skipped: list[ErrorOut] = field(default_factory=list, metadata=describe(
        "deliberately not checked, with the reason"))
    notes: list[ErrorOut] = field(default_factory=list, metadata=describe(
        "files checked against a reference other than their own RECORD, and which (a virtualenv "
        "--symlink-app-data image: the wheel in the app-data's wheel/house/ or the one virtualenv embeds)"))
    pristine: list[PristineOut] = field(default_factory=list, metadata=describe(
        "for each distribution with package drift: where its originals came from"))
    stale_accepted: list[StaleAcceptedOut] = field(default_factory=list, metadata=describe(
        "accept entries that expired or whose file changed: their drift counts"))
    unused_accepted: list[UnusedAcceptedOut] = field(default_factory=list, metadata=describe(
        "accept entries that match no drift"))
    generated_at: str = field(default_factory=_now)
    duration_seconds: float | None = None
    hostname: str | None = field(default_factory=_hostname, metadata=describe(
        "the machine the audit ran on (what `driftscan compare` names it by)"))
    distributions: list[DistributionRef] | None = field(default=None, metadata=describe(
        "every distribution of the environment, sorted by name (what `driftscan compare` finds version skew in); "
        "null in reports of older driftscan"))
    processes: ProcsReport | None = field(default=None, metadata=describe(
        "audit --processes: the processes that run the environment and whether they run what is on disk "
        "(docs/procs.md); null when not asked"))
    lock: list[str] | None = field(default=None, metadata=describe(
        "audit --lock: the lockfiles the environment was checked against; null when none was named"))
    provenance: list[ProvenanceOut] | None = field(default=None, metadata=describe(
        "per distribution whose wheel a lockfile (--lock) or direct_url.json names by digest: that wheel's "
        "own RECORD against the installed one (docs/provenance.md); null when no distribution has one"))

    @property
    def clean(self) -> bool:
        return not self.drifts


def _finding(f: Finding) -> FindingOut:
    return FindingOut(code=f.code, name=f.name, severity=f.severity, line=f.line, column=f.column,
                      message=f.message, snippet=f.snippet, origin=f.origin)


def _drift(d: Drift) -> DriftOut:
    c = d.check
    dist = c.distribution
    return DriftOut(
        path=printable(c.path),
        relpath=printable(relpath(c.path, c.root)),
        kind=c.kind,
        scope=d.scope,
        distribution=DistributionRef(name=dist.name, version=dist.version, installer=dist.installer) if dist else None,
        survives_reinstall=d.survives_reinstall,
        prediction=d.prediction,
        remedy=printable(d.remedy),
        evidence=printable(d.evidence),
        findings=[_finding(f) for f in c.findings],
        expected=printable_tree(dict(c.expected)),
        actual=printable_tree(c.observed()),
        json_changes=printable_tree(list(c.json_changes)),
        diff=printable(c.diff) if c.diff is not None else None,
        artifacts=[printable(p) for p in c.dumps.paths] if c.dumps and c.kind is DriftKind.DEBUG_ARTIFACTS else [],
        pristine=PristineRefOut(source=c.pristine.source.value, path=printable(c.pristine.path))
        if c.pristine else None,
        byte_ranges=[[a, b] for a, b in c.byte_ranges],
        content_preview=inert(printable(c.content_preview)) if c.content_preview is not None else None,
    )


def pristine_of(report: Report, distribution: str) -> PristineOut | None:
    """The report's row of where ``distribution``'s originals came from (or why none was found)."""
    return next((p for p in report.pristine if p.distribution == distribution), None)


def pristine_out(lookups: Sequence[Lookup]) -> list[PristineOut]:
    """The report's view of ``driftscan.pristine.Lookup`` values."""
    out = []
    for lk in lookups:
        copy = lk.copy
        out.append(PristineOut(
            distribution=lk.distribution.name, version=lk.distribution.version,
            source=copy.source.value if copy else None, path=printable(copy.where) if copy else None,
            reason=printable(lk.reason) if lk.reason else None,
            rejected=[RejectedOut(source=r.source.value, path=printable(r.path), reason=printable(r.reason))
                      for r in lk.rejected]))
    return sorted(out, key=lambda p: p.distribution.lower())


def build_report(verification: Verification, drifts: list[Drift], duration: float | None = None,
                 model_dirs: list[str] | None = None, skipped: Sequence[Problem] | None = None,
                 pristine: Sequence[Lookup] = (), not_hashed: int = 0, trusted_by_signature: int = 0,
                 locks: Sequence[str] = (), provenance: Sequence[Provenance] = ()) -> Report:
    t = verification.target
    out = sorted((_drift(d) for d in drifts), key=lambda d: (SCOPE_ORDER.index(d.scope),
                 d.distribution is None, d.distribution.name.lower() if d.distribution else "", d.path))
    by_kind: dict[str, int] = {}
    for d in out:
        by_kind[d.kind.value] = by_kind.get(d.kind.value, 0) + 1
    return Report(
        target=TargetInfo(venv=t.venv, site_packages=list(t.site_packages), model_dirs=list(model_dirs or []),
                          kind=t.kind.value, python_version=t.python_version,
                          site_packages_links=dict(t.named_links)),
        summary=Summary(
            distributions=len(verification.distributions),
            files_checked=verification.files_checked,
            not_hashed=not_hashed,
            trusted_by_signature=trusted_by_signature,
            drifts=len(out),
            unverifiable=len(verification.unverifiable),
            errors=len(verification.errors),
            by_kind=by_kind,
        ),
        drifts=out,
        unverifiable=[UnverifiableOut(distribution=u.distribution, reason=u.reason) for u in verification.unverifiable],
        errors=[ErrorOut(path=printable(p.path), message=printable(p.message)) for p in verification.errors],
        skipped=[ErrorOut(path=printable(p.path), message=printable(p.message)) for p in skipped or []],
        notes=[ErrorOut(path=printable(p.path), message=printable(p.message)) for p in verification.notes],
        duration_seconds=None if duration is None else round(duration, 3),
        pristine=pristine_out(pristine),
        distributions=sorted((DistributionRef(name=printable(d.name), version=printable(d.version),
                                              installer=printable(d.installer) if d.installer else None,
                                              record_digest=distribution_digest(d))
                              for d in verification.distributions), key=lambda r: (r.name.lower(), r.version)),
        lock=[printable(p) for p in locks] or None,
        provenance=provenance_out(provenance) or None,
    )


def provenance_out(provenance: Sequence[Provenance]) -> list[ProvenanceOut]:
    """The report's view of ``driftscan.provenance.Provenance`` values, by distribution."""
    out = [ProvenanceOut(
        distribution=printable(p.distribution), version=printable(p.version),
        lock=printable(p.lock) if p.lock else None, wheel_sha256=p.wheel_sha256,
        wheel=printable(p.wheel) if p.wheel else None, source=p.source.value, verified=p.verified,
        reason=printable(p.reason) if p.reason else None, how_to=printable(p.how_to) if p.how_to else None,
        rows_compared=p.rows_compared,
        rows=[RowChangeOut(path=printable(r.path), kind=r.kind.value, installed_hash=r.installed_hash,
                           wheel_hash=r.wheel_hash, file_state=r.file_state.value) for r in p.rows])
        for p in provenance]
    return sorted(out, key=lambda p: (p.distribution.lower(), p.version))


def report_schema() -> dict[str, Any]:
    return Report.model_json_schema()
