"""``plan``: what will reinstalling these distributions undo, what survives, and what to do.

Pure except for reading the files expectations name (and, for a file the reinstall restores,
its pristine copy in uv's cache when one is there).
"""

from __future__ import annotations

import difflib
import enum
import hashlib
import os
import re
import shlex
import zipfile
from collections.abc import Callable, Mapping, Sequence, Set as AbstractSet
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, Field

from ..pipeline.classify import effective_installer, reinstall_parts, requirement, uv_cache_clean, uv_cache_prune
from ..environment.reinstall_source import (CacheEntry, Relink, ReinstallSource, SourceKind, cache_entry,
                                        confirmed, installed_source, mismatch, relink, sync_relink)
from ..environment.target import site_packages_prefix
from ..environment.uv.cache import find_pristine_copy
from ..core.datamodel import AsString, InlineEnum
from ..core.errors import ConfigError
from .expect import Expectation, evaluate, load_expectations
from ..fs.reader import read_regular
from ..core.units import size as readable, count
from ..core.values import (Distribution, Drift, DriftKind, MetadataKind, Prediction, Scope, Target, UvCacheLink,
                           Verdict, Verification)
from ..core.values import SourceKind as PristineKind  # where an original came from (SourceKind: a reinstall's)
from ..fs.paths import printable, relpath
from ..formats.record import parse_hash
from ..procs.model import RestartOut
from ..report.contract import Report

if TYPE_CHECKING:  # annotations only: plan runs without the pristine package when nothing is restored
    from ..pristine import PristineSet

class PatchFate(str, enum.Enum):
    """What becomes of the team's patch (docs/patches.md) for a distribution the reinstall rewrites."""

    REAPPLIED = "re-applied"  # an entry matches the version after: `driftscan patch apply` writes it again
    UNUSED = "unused"  # no entry matches the version after (an upgrade): rebase the patch onto it
    LOST = "lost"  # patched files no entry matches even now: nothing writes them again
    UNKNOWN = "unknown"  # the version after is not known (an upgrade without a pin): patch apply says after


@dataclass(frozen=True)
class PatchLookup:
    """The team's patches as plan sees them: ``match(name, version)`` gives the patch file (as the
    manifest or directory names it) for that version, or None; where they come from, for the
    ``driftscan patch apply`` line. ManifestError from ``match`` when two entries tie."""

    match: Callable[[str, str], str | None]
    manifest: str | None = None
    directory: str | None = None


class PlanPatch(BaseModel):
    """The team's patch for one distribution the reinstall rewrites."""

    distribution: str
    installed: str = Field(description="the version installed now")
    version_after: str | None = Field(description="the version the reinstall installs (null: not known)")
    patch: str | None = Field(default=None, description="the patch an entry matches to the installed version")
    patch_after: str | None = Field(default=None, description="the patch an entry matches to the version after")
    fate: Annotated[PatchFate, InlineEnum(PatchFate)] = Field(
        title="Fate", description="re-applied | unused | lost | unknown: what becomes of the patch after the reinstall")
    files: list[str] = Field(default_factory=list, description="its patched files, which the reinstall wipes")
    reason: str
    command: str | None = Field(default=None, description="the next step: the patch apply line, or the patch rebase "
                                                          "line for an unused patch")


class PlanItem(BaseModel):
    path: str
    relpath: str
    kind: str
    scope: str
    distribution: str | None
    # Verdicts, published as the plain strings they were (the schema says "string").
    status: Annotated[Verdict, AsString()] = Field(
        title="Status", description="WIPED | SURVIVES | MAY SURVIVE: after the plan's steps before the reinstall "
                                    "(a uv cache clean) and the reinstall")
    reason: str
    status_without_steps: Annotated[Verdict, AsString()] | None = Field(
        default=None, title="Status Without Steps",
        description="WIPED | SURVIVES | MAY SURVIVE for the reinstall command run alone, without "
                    "the plan's preparatory steps (what `driftscan guard` checks a bare command with)")
    reason_without_steps: str | None = Field(default=None, description="why, for the reinstall command run alone")
    patch_fate: Annotated[PatchFate, InlineEnum(PatchFate)] | None = Field(
        default=None, title="Patch Fate", description="a file the team's patch wrote (patched): re-applied | unused | "
                                                      "lost | unknown, as the plan's patches say (null: none)")


class PlanStep(BaseModel):
    step: str
    command: str | None = None


class ExpectationResult(BaseModel):
    name: str
    file: str
    check: str
    holds_now: bool | None
    holds_after: bool | None
    reason: str


class PlanSource(BaseModel):
    """What the reinstall is assumed to install from, and how driftscan was told."""

    kind: str = Field(description="wheel | find-links | index | unknown")
    path: str | None = Field(default=None, description="the wheel file or find-links directory")
    told_by: list[str] = Field(default_factory=list,
                               description="--from, direct_url.json, INSTALLER, uv-cache, uv_cache.json, or nothing")
    detail: str = ""
    distribution: str | None = Field(default=None, description="the distribution this source is for (None: all)")


class PlanEstimate(BaseModel):
    installer: str
    seconds: float
    files: int
    bytes: int
    basis: str


class Plan(BaseModel):
    schema_version: Literal["1"] = "1"
    reinstall: list[str]
    installer: str
    installer_reason: str | None = Field(default=None, description="why the installer that runs is not the one "
                                                                   "asked for (a venv without pip)")
    source: PlanSource | None = Field(default=None, description="the source --from named (None: as installed)")
    sources: list[PlanSource] = Field(default_factory=list, description="the source assumed per distribution")
    estimate: PlanEstimate | None = None
    wiped: list[str] = Field(default_factory=list)
    survives: list[str] = Field(default_factory=list)
    may_survive: list[str] = Field(default_factory=list)
    steps: list[PlanStep] = Field(default_factory=list)
    items: list[PlanItem] = Field(default_factory=list)
    expectations: list[ExpectationResult] = Field(default_factory=list)
    patches: list[PlanPatch] = Field(default_factory=list, description="the team's patches for the distributions "
                                                                       "the reinstall rewrites (docs/patches.md)")
    audit: Report
    restart_after_reinstall: list[RestartOut] | None = Field(default=None, description=(
        "the processes that run the environment now: each runs old code once the reinstall changes its files, "
        "with what to restart (docs/procs.md); null when /proc could not be read"))


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def select_distributions(names: Sequence[str], dists: Sequence[Distribution]) -> list[Distribution]:
    by_name = {normalize(d.name): d for d in dists if d.kind is not MetadataKind.EGG_LINK}
    chosen, unknown = [], []
    for name in names:
        dist = by_name.get(normalize(name))
        (chosen.append(dist) if dist else unknown.append(name))
    if unknown:
        hints = [m for n in unknown for m in difflib.get_close_matches(normalize(n), by_name, n=3)]
        hint = f" (did you mean: {', '.join(dict.fromkeys(hints))}?)" if hints else ""
        raise ConfigError(f"not installed here: {', '.join(unknown)}{hint}")
    return chosen


def _replaced_whole(dists: Sequence[Distribution], installer: str) -> list[str]:
    """The directories pip replaces whole when it reinstalls into a ``--target`` directory: every
    top-level directory the distribution installs there (docs/environments.md). uv, and pip in a
    venv or prefix, remove only what RECORD lists."""
    if installer != "pip":
        return []
    out = set()
    for dist in dists:
        if dist.kind is not MetadataKind.DIST_INFO or site_packages_prefix(dist.site_packages) is not None:
            continue
        for entry in dist.entries:
            top, sep, _ = entry.path.partition("/")
            if sep and top not in ("", ".", "..") and not top.endswith(".dist-info"):
                out.add(os.path.join(dist.site_packages, top))
    return sorted(out)


def _status(drift: Drift, chosen: set[str]) -> tuple[Verdict, str]:
    check = drift.check
    dist = check.distribution
    in_set = dist is not None and normalize(dist.name) in chosen
    if check.kind is DriftKind.CACHE_MODIFIED:  # no reinstall touches uv's cache; a clean step may
        return Verdict.SURVIVES, drift.evidence
    if check.kind is DriftKind.UPSTREAM_RECORD_MISMATCH:  # the wheel's own bytes, written again
        return Verdict.SURVIVES, drift.evidence
    if drift.scope is Scope.PACKAGE:
        if not in_set:
            return Verdict.SURVIVES, f"{dist.key if dist else 'its distribution'} is not part of this reinstall"
        if drift.prediction is Prediction.WIPED:
            return Verdict.WIPED, drift.evidence
        return (Verdict.MAY_SURVIVE if drift.prediction is Prediction.MAY_SURVIVE else Verdict.SURVIVES,
                drift.evidence)
    if drift.scope is Scope.ENVIRONMENT and in_set and drift.prediction is Prediction.WIPED:
        return Verdict.WIPED, drift.evidence
    reasons = {
        Scope.ENVIRONMENT: "no RECORD lists it, so no reinstall removes it",
        Scope.DATA: "a model directory file: outside every package",
        Scope.SOURCE: "an editable install's source tree: a reinstall re-links the same tree",
        Scope.EXTERNAL: "written outside the environment",
    }
    return Verdict.SURVIVES, reasons.get(drift.scope, drift.evidence)


EXPECT_MAX = 64 << 20  # an expectation names a config file, not a weight shard


def _read_target(path: str) -> tuple[bytes | None, str | None]:
    """(content, None), (None, None) when the file does not exist, or (None, why it was not read):
    the file lives in the audited tree, so it may be a FIFO, a device or endless."""
    try:
        return read_regular(path, EXPECT_MAX, what="file an expectation checks"), None
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"cannot read it: {exc.strerror or exc}"


def _read(path: str) -> bytes | None:
    return _read_target(path)[0]


def _pristine(drift: Drift, uv_cache: str | None, originals: PristineSet | None = None) -> bytes | None:
    """The content a reinstall writes back, when a verified original is at hand (``originals``,
    a ``driftscan.pristine.PristineSet``), else a matching copy in uv's cache."""
    dist, expected = drift.check.distribution, drift.check.expected.get("hash")
    if dist is None or not expected:
        return None
    lookup = originals.get(dist) if originals is not None else None
    if lookup is not None and lookup.copy is not None:
        path = os.path.normpath(drift.check.path)
        entry = next((e for e in dist.entries if os.path.normpath(os.path.join(dist.site_packages, e.path)) == path),
                     None)
        data = lookup.copy.read(entry, EXPECT_MAX) if entry is not None else None
        if data is not None:
            return data
    want = parse_hash(expected, allow_hex=False)

    def matches(path: str) -> bool:
        data = _read(path)
        return data is not None and hashlib.new(want.algorithm, data).digest() == want.digest

    record_path = os.path.relpath(drift.check.path, dist.site_packages).replace(os.sep, "/")
    copy = find_pristine_copy(uv_cache, record_path, matches)
    return _read(copy) if copy else None


def _expectation(exp: Expectation, drifts: dict[str, tuple[Drift, Verdict]], referenced: Callable[[str], bool],
                 uv_cache: str | None, originals: PristineSet | None = None) -> ExpectationResult:
    path = os.path.normpath(exp.file)
    match = drifts.get(path) or drifts.get(os.path.realpath(path))
    # A file with no drift is known to match its reference only if something audited it.
    drifted = True if match else (False if referenced(path) else None)
    now_content, unread = _read_target(path)
    if unread is not None:
        return ExpectationResult(name=exp.label, file=printable(path), check=exp.check, holds_now=None,
                                 holds_after=None, reason=f"not checked: {unread}")
    holds_now, why_now = evaluate(exp, now_content, drifted)
    if not match or match[1] is not Verdict.WIPED:
        stays = "unchanged by the reinstall" if not match else f"{match[1].value.lower()} the reinstall"
        return ExpectationResult(name=exp.label, file=printable(path), check=exp.check, holds_now=holds_now,
                                 holds_after=holds_now, reason=f"{why_now}; {stays}")
    if exp.check == "unchanged":
        return ExpectationResult(name=exp.label, file=printable(path), check=exp.check, holds_now=holds_now,
                                 holds_after=True, reason=f"{why_now}; the reinstall restores it")
    pristine = _pristine(match[0], uv_cache, originals)
    if pristine is None:
        return ExpectationResult(name=exp.label, file=printable(path), check=exp.check, holds_now=holds_now,
                                 holds_after=None, reason=f"{why_now}; the reinstall restores the original, "
                                 "whose content is not at hand here (check again afterwards)")
    holds_after, why_after = evaluate(exp, pristine, False)
    return ExpectationResult(name=exp.label, file=printable(path), check=exp.check, holds_now=holds_now,
                             holds_after=holds_after,
                             reason=f"{why_now} now; after the reinstall (verified original at hand): {why_after}")



def _source_json(source: ReinstallSource, dist: str | None = None) -> PlanSource:
    return PlanSource(kind=source.kind.value, path=printable(source.path) if source.path else None,
                      told_by=[t.value for t in source.told_by], detail=printable(source.detail), distribution=dist)


def _wheel_name(path: str) -> str | None:
    """The normalized distribution name a wheel file's name gives."""
    stem = os.path.basename(path).split("-", 1)[0]
    return normalize(stem) if stem else None


def _wheel_version(path: str) -> str | None:
    """The version a wheel file's name gives (``name-version[-build]-py-abi-plat.whl``)."""
    parts = os.path.basename(path).split("-")
    return parts[1] if len(parts) >= 5 and parts[1] else None


def _same_version(a: str, b: str) -> bool:
    try:  # deferred: packaging is not a dependency, and its absence is handled here
        from packaging.version import InvalidVersion, Version
    except ImportError:  # the spelling decides
        return a.replace("_", "-").lower() == b.replace("_", "-").lower()
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


def _other_version(source: ReinstallSource | None, chosen_dists: Sequence[Distribution]) \
        -> tuple[Distribution, str] | None:
    """(the installed distribution, the version the ``--from`` wheel installs) when they differ."""
    if source is None or source.kind is not SourceKind.WHEEL or not source.path:
        return None
    name, version = _wheel_name(source.path), _wheel_version(source.path)
    dist = next((d for d in chosen_dists if normalize(d.name) == name), None)
    if dist is None or version is None or _same_version(version, dist.version):
        return None
    return dist, version


WHEEL_MAX_MEMBERS = 1_000_000  # a wheel's central directory read for the estimate, at most


def _wheel_sizes(path: str) -> list[int] | None:
    """The uncompressed size of each file of a wheel (its zip directory only: nothing is unpacked
    or run); None when it cannot be read."""
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
    except (OSError, zipfile.BadZipFile, ValueError):
        return None
    if len(infos) > WHEEL_MAX_MEMBERS:
        return None
    return [i.file_size for i in infos if not i.is_dir()]


def files_count(n: int) -> str:
    """"1 file", "2 files"."""
    return f"{n} file" if n == 1 else f"{n} files"


def _sources_for(chosen_dists: list[Distribution], source: ReinstallSource | None,
                 entries: Mapping[str, CacheEntry]) -> dict[str, ReinstallSource]:
    """Each distribution's source: ``source`` (``--from``) where it applies (a wheel file applies to
    the distribution it is a wheel of), else the one it was installed from."""
    out = {}
    for dist in chosen_dists:
        key = normalize(dist.name)
        if source is not None and (source.kind is not SourceKind.WHEEL or _wheel_name(source.path or "") == key):
            out[key] = confirmed(source, dist)
        else:
            out[key] = confirmed(installed_source(dist, entries.get(key)), dist)
    return out


def _untrusted(source: ReinstallSource | None, chosen_dists: Sequence[Distribution],
               drifts: Sequence[Drift]) -> tuple[dict[str, str], str | None]:
    """(drifted package files of the distribution a ``--from`` wheel reinstalls whose member in the
    wheel does not match the wheel's own RECORD: path → why; a note naming the wheel, or None).
    pip and uv install the member's bytes and keep the wheel's row in the installed RECORD, so
    neither "wiped" nor "survives" can be said of such a file from this wheel."""
    if source is None or source.kind is not SourceKind.WHEEL or not source.path:
        return {}, None
    # Deferred: the pristine package (24 modules, 25 ms measured) only for --from a wheel; a plan
    # of a clean environment and `schema --for plan` do without it.
    from ..pristine.wheel import open_wheel, wheel_members_error

    key = _wheel_name(source.path)
    dist = next((d for d in chosen_dists if normalize(d.name) == key), None)
    if dist is None:
        return {}, None
    by_path = {os.path.normpath(os.path.join(dist.site_packages, e.path)): e for e in dist.entries}
    wanted = {d.check.path: by_path[p] for d in drifts
              if d.scope is Scope.PACKAGE and d.check.distribution is not None
              and normalize(d.check.distribution.name) == key and (p := os.path.normpath(d.check.path)) in by_path}
    if not wanted:
        return {}, None
    try:
        wheel = open_wheel(source.path, PristineKind.WHEELS, dist)
    except Exception as exc:  # noqa: BLE001 - not a readable wheel: the reinstall itself will say so
        return {}, f"the --from wheel {source.path} could not be read to check it ({wheel_members_error(exc)})"
    try:
        lies = wheel.unfaithful(list(wanted.values()))
    finally:
        wheel.close()
    out = {path: lies[entry.path] for path, entry in wanted.items() if entry.path in lies}
    if not out:
        return {}, None
    names = sorted(relpath(p, dist.site_packages) for p in out)
    return out, (f"the --from wheel {source.path} does not match its own RECORD for {count(len(out), 'drifted file')} "
                 f"({', '.join(names[:5])}{' …' if len(names) > 5 else ''}): what the reinstall writes there cannot "
                 "be trusted; get the wheel again from where it came from, or reinstall from another source")


def _nothing_referenced(path: str) -> bool:
    return False


@dataclass(frozen=True)
class Audited:
    """What the audit before a plan found. ``referenced(path)``: whether the audit compared
    ``path`` with a reference (RECORD, metadata...); ``originals``: the originals it found, open."""

    report: Report
    drifts: Sequence[Drift]
    target: Target
    dists: Sequence[Distribution]
    referenced: Callable[[str], bool] = _nothing_referenced
    originals: PristineSet | None = None
    model_dirs: Sequence[str] = ()


def build_plan(audited: Audited, names: Sequence[str], installer: str | None, expectations: Sequence[Expectation] = (),
               uv_cache: str | None = None, *, source: ReinstallSource | None = None,
               held: AbstractSet[str] | None = None, checkpoint_dir: str | None = None,
               patches: PatchLookup | None = None, versions_after: Mapping[str, str | None] | None = None) -> Plan:
    """What reinstalling ``names`` does to what ``audited`` found.
    ``source``: where the reinstall installs from (``--from``; None: as each distribution was installed).
    ``held``: the drifted paths whose current content a checkpoint given holds (None: no checkpoint given).
    ``patches``: the team's patches; ``versions_after``: normalized name -> the version the command
    installs (None: not known), where it is not the installed one or the ``--from`` wheel's."""
    report, drifts, target, dists = audited.report, list(audited.drifts), audited.target, audited.dists
    referenced, originals, model_dirs = audited.referenced, audited.originals, audited.model_dirs
    chosen_dists = select_distributions(names, dists)
    chosen = {normalize(d.name) for d in chosen_dists}
    if source is not None and source.kind is SourceKind.WHEEL and _wheel_name(source.path or "") not in chosen:
        raise ConfigError(f"--from {source.path}: a wheel of none of the distributions to reinstall "
                          f"({', '.join(d.name for d in chosen_dists)})")
    who, why_installer = effective_installer(target, chosen_dists, installer)
    plan = Plan(reinstall=[d.name for d in chosen_dists], installer=who, installer_reason=why_installer, audit=report)
    entries, entry_by_name = _cache_entries(drifts, chosen)
    sources = _sources_for(chosen_dists, source, entry_by_name)
    plan.source = _source_json(source) if source is not None else None
    plan.sources = [_source_json(sources[normalize(d.name)], d.name) for d in chosen_dists]
    note, reinstall = reinstall_parts(target, chosen_dists, installer,
                                      [sources[normalize(d.name)] for d in chosen_dists] if source else ())
    # A uv project's environment is reinstalled with uv sync: its lock fixes the source, and uv
    # installs from that source's archive (guard's rule for the same command).
    syncs = reinstall.startswith("uv sync ")
    # What the reinstall alone does to each uv-linked file, then which distributions the plan
    # cleans from uv's cache first (the reinstall would link an edited file back).
    alone: dict[str, tuple[Verdict, str]] = {}
    to_clean: dict[str, str | None] = {}  # name -> the cache holding the edited copy
    after_only: dict[str, str | None] = {}  # edited archive left in the cache, wiped from this venv anyway
    for drift in drifts:
        dist, link = drift.check.distribution, drift.check.uv_cache
        if drift.scope is not Scope.PACKAGE or dist is None or link is None or normalize(dist.name) not in chosen \
                or drift.check.kind is DriftKind.UPSTREAM_RECORD_MISMATCH:  # no edit to link back: nothing to clean
            continue
        key = normalize(dist.name)
        if who != "uv":
            continue
        if not link.copy:
            alone[drift.check.path] = (Verdict.MAY_SURVIVE, drift.evidence)
            to_clean.setdefault(dist.name, link.cache_dir)
            continue
        entry = entries.get((link.cache_dir or "", _archive_id(link)))
        outcome, why = sync_relink(entry, offline=False) if syncs and entry is not None else \
            relink(entry, sources[key])
        how = "is a symlink to" if link.symlink else f"shares its inode ({link.links} links) with"
        why = f"{how} uv's cache copy {link.copy}, which carries the edit; {why}"
        status = {Relink.RELINKS: Verdict.SURVIVES, Relink.UNPACKS: Verdict.WIPED,
                  Relink.UNKNOWN: Verdict.MAY_SURVIVE}[outcome]
        alone[drift.check.path] = (status, why)
        if status is Verdict.WIPED:
            after_only.setdefault(dist.name, link.cache_dir)
        elif to_clean.get(dist.name) is None:
            to_clean[dist.name] = link.cache_dir
    for name in to_clean:
        after_only.pop(name, None)
    steps: list[PlanStep] = []
    clean_step: dict[str, int] = {}
    pending: list[tuple[PlanItem, Drift, Verdict, str]] = []
    by_path: dict[str, tuple[Drift, Verdict]] = {}
    replaced = _replaced_whole(chosen_dists, who)
    untrusted, untrusted_note = _untrusted(source, chosen_dists, drifts)
    for drift in drifts:
        status, reason = _status(drift, chosen)
        check = drift.check
        alone_status, alone_reason = alone.get(check.path, (status, reason))
        status, reason = alone_status, alone_reason
        lie = untrusted.get(check.path)
        if lie is not None and status is Verdict.WIPED:
            status = alone_status = Verdict.MAY_SURVIVE
            reason = alone_reason = (f"the --from wheel cannot be trusted for this file: {lie}; the reinstall writes "
                                     "that member's bytes and keeps the wheel's RECORD row, so what is there after it "
                                     "is neither the original nor, for certain, the edit")
        dist = check.distribution
        if dist is not None and dist.name in to_clean and check.path in alone:
            if check.uv_cache is not None and check.uv_cache.copy:
                status = Verdict.WIPED  # the reason names the step once the steps are numbered
            else:
                status = Verdict.MAY_SURVIVE
        whole = next((d for d in replaced if check.path.startswith(d + os.sep)), None)
        if whole is not None and drift.scope is Scope.ENVIRONMENT and status is Verdict.SURVIVES:
            status = alone_status = Verdict.WIPED
            reason = alone_reason = (f"pip install --target --upgrade replaces {whole} whole, files no RECORD "
                                     "lists included")
        by_path[os.path.normpath(check.path)] = (drift, status)
        item = PlanItem(path=printable(check.path), relpath=printable(relpath(check.path, check.root)),
                        kind=check.kind.value, scope=drift.scope.value,
                        distribution=dist.name if dist else None,
                        status=status, reason=printable(reason), status_without_steps=alone_status,
                        reason_without_steps=printable(alone_reason))
        plan.items.append(item)
        pending.append((item, drift, alone_status, alone_reason))
        _lists(plan)[status].append(item.path)
    plan.expectations = [_expectation(e, by_path, referenced, uv_cache, originals) for e in expectations]
    # Steps: the checkpoint first when the reinstall would destroy content no checkpoint holds.
    # (a file a --from wheel is untrusted for is overwritten too: with bytes no RECORD vouches for)
    lost = [d for item, d, _, _ in pending if (item.status is Verdict.WIPED or d.check.path in untrusted)
            and d.check.kind in _HAS_CONTENT and (held is None or d.check.path not in held)]
    if lost:
        steps.append(_checkpoint_step(lost, target, checkpoint_dir, model_dirs, held is not None,
                                      overwritten=any(d.check.path in untrusted for d in lost)))
    if untrusted_note is not None:
        steps.append(PlanStep(step=f"note: {printable(untrusted_note)}"))
    for dist in chosen_dists:
        odd = mismatch(sources[normalize(dist.name)], dist)
        if odd is not None:
            steps.append(PlanStep(step=f"note: {printable(odd)}"))
    for name, cache_dir in sorted(to_clean.items()):
        dist = next(x for x in chosen_dists if x.name == name)
        where = f" ({cache_dir})" if cache_dir else ""
        steps.append(PlanStep(step=f"clean {name} from uv's cache{where} first: an edited file is hard-linked "
                                   "there and the reinstall from this source would link it back",
                              command=uv_cache_clean(dist, cache_dir)))
        clean_step[name] = len(steps)
    if who != "uv":
        for name, cache_dir in sorted(_pip_poisoned(drifts, chosen).items()):
            dist = next(x for x in chosen_dists if x.name == name)
            where = f" ({cache_dir})" if cache_dir else ""
            steps.append(PlanStep(step=f"pip rewrites {name}'s files, but uv's cache{where} keeps the edited copy "
                                       "for other venvs: clean it too", command=uv_cache_clean(dist, cache_dir)))
            clean_step[name] = len(steps)
    for d in drifts:
        if d.check.kind is DriftKind.ORPHANED_METADATA:
            steps.append(PlanStep(step=f"remove the orphaned {os.path.basename(d.check.path)}: installers think "
                                       "its package is installed and may refuse to reinstall it",
                                  command=f"rm -r {shlex.quote(d.check.path)}"))
    relinks = not to_clean and not after_only and source is None and all(map(_linked_from_cache, chosen_dists))
    other = _other_version(source, chosen_dists)
    plan.estimate = _estimate(chosen_dists, who, sources, cleaned=bool(to_clean), relinks=relinks,
                              unpacks=bool(after_only), other=other,
                              given_wheel=source.path if other and source else None)
    for name, cache_dir in sorted(after_only.items()):
        dist = next(x for x in chosen_dists if x.name == name)
        where = f" ({cache_dir})" if cache_dir else ""
        steps.append(PlanStep(step=f"clean {name} from uv's cache{where} before the reinstall: the reinstall "
                                   "would unpack the wheel afresh here, but the edited archive would stay there and "
                                   "a later install from the source it was unpacked for (other venvs too) links it "
                                   "back",
                              command=uv_cache_clean(dist, cache_dir)))
        clean_step.setdefault(name, len(steps))
    # An edited archive of uv's cache that no venv file links to any more is a drift of its own
    # (the cache audit's): the plan cleans it before the reinstall, which would link it back from the
    # source it was unpacked for, and so no later install links it back either.
    for item, drift, _, _ in pending:
        dist = drift.check.distribution
        if drift.check.kind is DriftKind.CACHE_MODIFIED and dist is not None and normalize(dist.name) in chosen \
                and _step_of(clean_step, dist.name) is None:
            indexed = bool(drift.check.actual.get("index_entries"))
            steps.append(PlanStep(step=f"clean {dist.name} from uv's cache ({drift.check.root}) before the reinstall: "
                                       "its archive there differs from its own RECORD, and " +
                                       ("an install from the source it was unpacked for links the edit back" if indexed
                                        else "no index entry names it any more: uv cache prune removes it (uv cache "
                                        "clean NAME leaves it)"),
                                  command=uv_cache_clean(dist, drift.check.root)
                                  if drift.check.actual.get("index_entries") else uv_cache_prune(drift.check.root)))
            clean_step[dist.name] = len(steps)
    steps.append(PlanStep(step=f"reinstall {', '.join(plan.reinstall)} with {who}" + (f" ({note})" if note else ""),
                          command=reinstall))
    faster = _restore_alternative(drifts, chosen_dists, chosen, target, plan.estimate, originals, other)
    if faster is not None:
        steps.append(faster)
    if patches is not None:
        after: dict[str, str | None] = {normalize(d.name): (other[1] if other and other[0] is d else d.version)
                                        for d in chosen_dists}
        after.update(versions_after or {})
        plan.patches = _team_patches(plan, chosen_dists, patches, after, target)
        steps += _patch_steps(plan.patches)
    steps += _later_steps(plan, drifts)
    plan.steps = steps
    # Now that the steps are numbered, the predictions that depend on one name it.
    for item, drift, alone_status, alone_reason in pending:
        dist = drift.check.distribution
        n = _step_of(clean_step, dist.name) if dist is not None else None
        if drift.check.kind is DriftKind.CACHE_MODIFIED and n is not None:
            _move(plan, item, Verdict.WIPED)
            item.reason = printable(f"step {n} (`{steps[n - 1].command}`) removes the edited archive from uv's "
                                    f"cache; without that step it survives: {alone_reason}")
            continue
        n = clean_step.get(dist.name) if dist is not None and drift.check.path in alone else None
        if n is None:
            continue
        command = steps[n - 1].command
        if item.status is Verdict.WIPED:
            item.reason = printable(f"after step {n} (`{command}`) removes the edited archive, the reinstall "
                                    f"unpacks the wheel afresh and writes the original; without that step: "
                                    f"{alone_status.value.lower()} ({alone_reason})")
        else:
            item.reason = printable(f"step {n} (`{command}`) cleans the cache named there, but the edited copy "
                                    f"was not found in it; {alone_reason}")
    return plan


def _patch_apply_line(lookup: PatchLookup, target: Target) -> str:
    where = f" --venv {shlex.quote(target.venv)}" if target.venv else "".join(
        f" --site-packages {shlex.quote(s)}" for s in target.site_packages)
    given = (f" --manifest {shlex.quote(lookup.manifest)}" if lookup.manifest else
             f" --patches {shlex.quote(lookup.directory)}" if lookup.directory else "")
    return f"driftscan patch apply{where}{given} --yes"


def _wheels_option(plan: Plan, dist: Distribution) -> str:
    """`` --wheels DIR`` when the reinstall installs ``dist`` from a wheel file or a find-links
    directory: where rebase finds the new version's wheel too."""
    for source in plan.sources:
        if source.distribution in (None, dist.name) and source.path and source.kind in ("wheel", "find-links"):
            where = os.path.dirname(source.path) if source.kind == "wheel" else source.path
            return f" --wheels {shlex.quote(where)}"
    return ""


def _team_patches(plan: Plan, dists: Sequence[Distribution], lookup: PatchLookup, after: Mapping[str, str | None],
                  target: Target) -> list[PlanPatch]:
    """Each reinstalled distribution with patched files or a patch: what becomes of the patch, its
    patched items told so (the reinstall still wipes them: the audit after it sees the original)."""
    out = []
    apply_line = _patch_apply_line(lookup, target)
    for dist in dists:
        items = [i for i in plan.items if i.kind == DriftKind.PATCHED.value and i.distribution == dist.name]
        now = lookup.match(dist.name, dist.version)
        if not items and now is None:
            continue
        version = after.get(normalize(dist.name), dist.version)
        then = lookup.match(dist.name, version) if version is not None else None
        command: str | None = apply_line
        if version is None:
            fate = PatchFate.UNKNOWN
            said = (f"the version the command installs is not known: `driftscan patch apply` after it says which patch "
                    f"matches (now: {now or 'none'})")
        elif then is not None:
            fate, said = PatchFate.REAPPLIED, f"patch re-applied by `driftscan patch apply` ({then})"
        elif _same_version(version, dist.version):
            fate, command = PatchFate.LOST, None
            said = (f"no patch of the manifest matches {dist.name} {version}: nothing writes the patched files again "
                    "(export them with `driftscan patch export` before the reinstall)")
        else:
            fate, command = PatchFate.UNUSED, f"driftscan patch rebase {shlex.quote(dist.name)} --to {shlex.quote(version)}"
            command += _wheels_option(plan, dist)
            said = (f"no patch matches {dist.name} {version}: {now or 'the patch that wrote them'} will be unused; "
                    f"next step: {command}")
        for item in items:
            item.patch_fate = fate
            item.reason = printable(f"{item.reason}; {said}")
            if item.reason_without_steps is not None:
                item.reason_without_steps = printable(f"{item.reason_without_steps}; {said}")
        out.append(PlanPatch(distribution=dist.name, installed=dist.version, version_after=version, patch=now,
                             patch_after=then, fate=fate, files=[i.path for i in items], reason=printable(said),
                             command=command))
    return out


def _patch_steps(patches: Sequence[PlanPatch]) -> list[PlanStep]:
    """After the reinstall: the team's patches written again (one line for all), each unused patch's rebase."""
    steps = []
    again = [p for p in patches if p.fate in (PatchFate.REAPPLIED, PatchFate.UNKNOWN)]
    if again:
        names = ", ".join(dict.fromkeys(p.patch_after or f"{p.distribution}'s, if one matches" for p in again))
        steps.append(PlanStep(step=printable(f"patch re-applied by `driftscan patch apply`: {names}"),
                              command=again[0].command))
    for p in patches:
        if p.fate is PatchFate.UNUSED:
            steps.append(PlanStep(step=printable(f"{p.patch or 'the patch'} matches {p.distribution} {p.installed}, "
                                                 f"not {p.version_after}: the patch will be unused; rebase it onto "
                                                 f"{p.version_after}, review it, then run driftscan patch apply"),
                                  command=p.command))
        elif p.fate is PatchFate.LOST:
            steps.append(PlanStep(step=printable(f"note: {p.distribution}'s patched files: {p.reason}")))
    return steps


def _step_of(steps: dict[str, int], name: str) -> int | None:
    return next((n for k, n in steps.items() if normalize(k) == normalize(name)), None)


def _move(plan: Plan, item: PlanItem, status: Verdict) -> None:
    """Change an item's status after the steps are known, keeping the three path lists in step."""
    lists = _lists(plan)
    lists[item.status].remove(item.path)
    item.status = status
    lists[status].append(item.path)


def _lists(plan: Plan) -> dict[Verdict, list[str]]:
    """The plan's path list of each verdict."""
    return {Verdict.WIPED: plan.wiped, Verdict.SURVIVES: plan.survives, Verdict.MAY_SURVIVE: plan.may_survive}


def _archive_id(link: UvCacheLink) -> str:
    if not link.copy or not link.cache_dir:
        return ""
    return os.path.relpath(link.copy, os.path.join(link.cache_dir, "archive-v0")).split(os.sep, 1)[0]


def _cache_entries(drifts: list[Drift], chosen: set[str]
                   ) -> tuple[dict[tuple[str, str], CacheEntry | None], dict[str, CacheEntry]]:
    """uv cache entries of the chosen distributions' linked drifts, by (cache, archive id), and the
    first per distribution name (to tell where it was installed from)."""
    by_archive: dict[tuple[str, str], CacheEntry | None] = {}
    by_name: dict[str, CacheEntry] = {}
    for drift in drifts:
        dist, link = drift.check.distribution, drift.check.uv_cache
        if dist is None or link is None or not link.copy or not link.cache_dir or normalize(dist.name) not in chosen:
            continue
        key = (link.cache_dir, _archive_id(link))
        if key not in by_archive:
            by_archive[key] = cache_entry(link.cache_dir, link.copy, dist.name)
        found = by_archive[key]
        if found is not None:
            by_name.setdefault(normalize(dist.name), found)
    return by_archive, by_name


def _linked_from_cache(dist: Distribution) -> bool:
    """Whether ``dist``'s files are still hard links (its first package file has more than one
    link): uv's cache holds the archive it was installed from, so a same-source reinstall links."""
    if (dist.installer or "").lower() != "uv":
        return False
    for entry in dist.entries:
        if entry.hash is not None and ".dist-info/" not in entry.path and not entry.path.startswith(".."):
            try:
                return os.lstat(os.path.join(dist.site_packages, entry.path)).st_nlink > 1
            except OSError:
                return False
    return False


def _pip_poisoned(drifts: list[Drift], chosen: set[str]) -> dict[str, str | None]:
    poisoned: dict[str, str | None] = {}
    for d in drifts:
        dist, link = d.check.distribution, d.check.uv_cache
        if dist is not None and normalize(dist.name) in chosen and link and link.copy:
            if poisoned.get(dist.name) is None:
                poisoned[dist.name] = link.cache_dir
    return poisoned


# Drift whose content a reinstall destroys (ghost bytecode is derived: nothing to keep).
_HAS_CONTENT = {DriftKind.MODIFIED, DriftKind.ADDED, DriftKind.TYPE_CHANGED, DriftKind.CLOBBERED,
                DriftKind.RECORD_REWRITTEN}


def _checkpoint_step(lost: list[Drift], target: Target, checkpoint_dir: str | None, model_dirs: Sequence[str],
                     given: bool, overwritten: bool = False) -> PlanStep:
    where = f" --venv {shlex.quote(target.venv)}" if target.venv else "".join(
        f" --site-packages {shlex.quote(s)}" for s in target.site_packages)
    models = "".join(f" --model-dir {shlex.quote(m)}" for m in model_dirs)
    dest = shlex.quote(checkpoint_dir) if checkpoint_dir else "CHECKPOINT_DIR"
    held = "the checkpoint given does not hold" if given else "no checkpoint holds (none given: --checkpoint DIR)"
    return PlanStep(step=f"checkpoint first: the reinstall {'wipes or overwrites' if overwritten else 'wipes'} {count(len(lost), 'drifted file')} whose content "
                         f"{held} (e.g. {printable(relpath(lost[0].check.path, lost[0].check.root))}); "
                         "`driftscan reapply` brings the wanted changes back from it afterwards",
                    command=f"driftscan checkpoint{where}{models} -o {dest}")


# Throughputs behind the time estimates (docs/reinstall-matrix.md, "Time estimates").
RESTORE_BYTES_PER_S = 200e6
RESTORE_SECONDS_PER_FILE = 0.002
REINSTALL_BYTES_PER_S = 32e6  # pip: vLLM 0.33, 837 MB, 9,036 files, 30.8 s (docs/checkpoint.md)
REINSTALL_SECONDS_PER_FILE = 0.0005
UV_UNPACK_SPEEDUP = 4.0  # uv unpacking the same wheel: 7.4 s against pip's 29-31 s
UV_LINK_SPEEDUP = 3.0  # uv linking from its cache against uv unpacking (toy: 0.13 s against 0.43 s)
_RESTORABLE = {DriftKind.MODIFIED, DriftKind.MISSING, DriftKind.TYPE_CHANGED}


def _seconds(value: float) -> str:
    return "under a second" if value < 1 else f"about {value:.0f} s"


def _estimate(chosen_dists: list[Distribution], who: str, sources: dict[str, ReinstallSource], *, cleaned: bool,
              relinks: bool, unpacks: bool, other: tuple[Distribution, str] | None = None,
              given_wheel: str | None = None) -> PlanEstimate:
    """Seconds for the reinstall, from the installed files' sizes; a ``--from`` wheel of another
    version (``other``) counts with its own files' sizes instead of the installed version's."""
    sizes = [e.size or 0 for dist in chosen_dists for e in dist.entries if other is None or dist is not other[0]]
    given = _wheel_sizes(given_wheel) if other is not None and given_wheel else None
    if other is not None:
        sizes += given if given is not None else [e.size or 0 for e in other[0].entries]
    rows = sizes
    total = sum(sizes)
    pip_s = total / REINSTALL_BYTES_PER_S + len(rows) * REINSTALL_SECONDS_PER_FILE
    of = (f" ({other[0].name} {other[1]}: the --from wheel's files)" if given is not None
          else f" ({other[0].name} {other[1]}'s wheel unreadable: the installed version's files)") if other else ""
    if who != "uv":
        return PlanEstimate(installer=who, seconds=round(pip_s, 1), files=len(rows), bytes=total,
                            basis=f"{who} unpacking and byte-compiling {files_count(len(rows))}{of}, "
                                  f"{readable(total)}, at the rate measured for pip")
    unpack_s = pip_s / UV_UNPACK_SPEEDUP
    wheel = any(s.kind is SourceKind.WHEEL for s in sources.values())
    if cleaned or unpacks or (wheel and not relinks):
        why = "after the cache clean" if cleaned else "from a source uv has no archive for" if not unpacks \
            else "from a source whose cache entry is not the installed one"
        return PlanEstimate(installer="uv", seconds=round(unpack_s, 1), files=len(rows), bytes=total,
                            basis=f"uv unpacking the wheel {why}: {files_count(len(rows))}{of}, {readable(total)}, "
                                  f"{UV_UNPACK_SPEEDUP:.0f}x pip's rate")
    if relinks:
        return PlanEstimate(installer="uv", seconds=round(unpack_s / UV_LINK_SPEEDUP, 1), files=len(rows),
                            bytes=total, basis=f"uv linking {files_count(len(rows))}{of} from its cache, "
                                               f"{UV_UNPACK_SPEEDUP * UV_LINK_SPEEDUP:.0f}x pip's rate")
    return PlanEstimate(installer="uv", seconds=round(unpack_s, 1), files=len(rows), bytes=total,
                        basis=f"uv unpacking the wheel, {files_count(len(rows))}{of}, {readable(total)}, at most "
                              f"(about {UV_LINK_SPEEDUP:.0f}x less when its cache already holds the archive)")


def _has_original(drift: Drift, originals: PristineSet | None) -> bool:
    """Whether a verified original of this very file is at hand: the distribution's source (the
    drift's ``pristine``) gives bytes matching its RECORD row. A source that has some of the
    distribution's files, not this one (uv's cache with this file edited through a hard link), does
    not count."""
    check, dist = drift.check, drift.check.distribution
    if check.pristine is None or dist is None:
        return False
    lookup = originals.get(dist) if originals is not None else None
    if lookup is None or lookup.copy is None:
        return False
    path = os.path.normpath(check.path)
    entry = next((e for e in dist.entries if os.path.normpath(os.path.join(dist.site_packages, e.path)) == path),
                 None)
    return entry is not None and entry.path not in lookup.lacking and lookup.copy.check(entry) is None


def _restore_alternative(drifts: list[Drift], chosen_dists: list[Distribution], chosen: set[str],
                         target: Target, estimate: PlanEstimate, originals: PristineSet | None = None,
                         other: tuple[Distribution, str] | None = None) -> PlanStep | None:
    """``driftscan restore`` in place of the reinstall, when every package drift of the chosen
    distributions has a verified original of that very file at hand; with both times estimated.
    When some lack one, the step says how many and how to get them, and promises nothing. Never
    when the reinstall installs another version (``other``): restore puts the installed one back."""
    from ..pipeline.changes import file_by_file  # deferred: 10 ms, only when there is package drift

    mine = file_by_file([d for d in drifts if d.scope is Scope.PACKAGE and d.check.distribution is not None
                         and normalize(d.check.distribution.name) in chosen])
    restorable = [d for d in mine if d.check.kind in _RESTORABLE]
    if not restorable or len(restorable) != len(mine):
        return None
    if other is not None:
        dist, version = other
        return PlanStep(step=f"no faster alternative: the --from wheel installs {dist.name} {version}, and restore "
                             f"would only put the installed {dist.name} {dist.version}'s original files back (no "
                             "change of version); reinstall from the wheel")
    if any(d.kind is not MetadataKind.DIST_INFO for d in chosen_dists):
        return None  # a system package manager's files go back through it (restore is for wheels' files)
    with_original = [d for d in restorable if _has_original(d, originals)]
    where = f" --venv {shlex.quote(target.venv)}" if target.venv else "".join(
        f" --site-packages {shlex.quote(s)}" for s in target.site_packages)
    names = "".join(f" --dist {shlex.quote(d.name)}" for d in chosen_dists)
    lacking = [d for d in restorable if d not in with_original]
    if lacking:
        owners = sorted({d.check.distribution.key for d in lacking if d.check.distribution})
        reqs = " ".join(sorted({requirement(d.check.distribution) for d in lacking if d.check.distribution}))
        first = printable(relpath(lacking[0].check.path, lacking[0].check.root))
        return PlanStep(step=(f"restore cannot replace the reinstall yet: {len(with_original)} of "
                              f"{count(len(restorable), 'drifted file')} have a verified original, {len(lacking)} have none (e.g. {first}, "
                              f"{', '.join(owners)}); give a directory holding the wheel with --wheels DIR, or "
                              "--fetch to download it (the pip download line below), then plan again"),
                        command=f"pip download --no-deps --only-binary :all: --dest WHEELS_DIR {reqs}")
    size = sum(int(d.check.expected.get("size") or 0) for d in restorable)
    restore_s = size / RESTORE_BYTES_PER_S + len(restorable) * RESTORE_SECONDS_PER_FILE
    refs = [d.check.pristine for d in restorable if d.check.pristine]
    kinds = {r.source for r in refs}  # (every one of them has its original, checked above)
    sources = sorted(k.value for k in kinds)
    # The restore must find the originals where this audit found them.
    wheels = sorted({os.path.dirname(r.path) for r in refs if r.source is PristineKind.WHEELS})
    found = "".join(f" --wheels {shlex.quote(w)}" for w in wheels) + (" --fetch" if PristineKind.FETCH in kinds else "")
    return PlanStep(
        step=(f"faster alternative to the reinstall: restore the {count(len(restorable), 'drifted file')} "
              f"({readable(size)}), each from a verified original of that file ({', '.join(sources)}): "
              f"{_seconds(restore_s)} after the audit, against {_seconds(estimate.seconds)} for {estimate.installer} "
              f"to rewrite {files_count(estimate.files)} ({readable(estimate.bytes)}) (estimates, "
              "docs/reinstall-matrix.md); it writes a checkpoint of the drift first"),
        command=f"driftscan restore{names}{where}{found} --yes")


def _later_steps(plan: Plan, drifts: list[Drift]) -> list[PlanStep]:
    steps: list[PlanStep] = []
    dumps = [d for d in drifts if d.check.kind is DriftKind.DEBUG_ARTIFACTS]
    for d in dumps:
        found = d.check.dumps
        files = found.paths if found else ()
        size = found.total_bytes if found else 0
        writers = ", ".join(f"{w.path}:{w.line}" for w in found.writers) if found and found.writers else "debug code"
        listed = found.list_file if found else None
        where = f"; the exact list is in {listed} (xargs -0 ls -l -- < {shlex.quote(listed)})" if listed else ""
        command = (f"xargs -0 rm -- < {shlex.quote(listed)}" if listed
                   else "rm -- " + " ".join(shlex.quote(f) for f in files) if files else None)
        steps.append(PlanStep(step=f"review, then delete {count(len(files), 'dump file')} matching {d.check.path}, "
                                   f"{readable(size)}, written by {writers} (no reinstall touches them; the "
                                   f"list is what the code's save calls name, so look before removing){where}",
                              command=command))
    for e in plan.expectations:
        if e.holds_now and e.holds_after:
            steps.append(PlanStep(step=f"skip '{e.name}': it already holds and survives the reinstall"))
        elif e.holds_now and e.holds_after is False:
            steps.append(PlanStep(step=f"re-apply '{e.name}' after the reinstall: it holds now, the reinstall "
                                       "undoes it"))
        elif e.holds_now and e.holds_after is None:
            steps.append(PlanStep(step=f"check '{e.name}' again after the reinstall: it holds now, and the "
                                       "original content is not at hand to tell"))
        elif e.holds_now is False and e.holds_after:
            steps.append(PlanStep(step=f"nothing to do for '{e.name}': the reinstall makes it hold"))
        elif e.holds_now is False and e.holds_after is None:
            steps.append(PlanStep(step=f"check '{e.name}' after the reinstall: it does not hold now, and the "
                                       "reinstall restores an original whose content is not at hand"))
        elif e.holds_now is False:
            steps.append(PlanStep(step=f"apply '{e.name}': it does not hold now ({e.reason})"))
    return steps


def expectations_now(expect: str, verification: Verification, verified_roots: Sequence[str],
                     placeholders: dict[str, str]) -> list[tuple[bool | None, str]]:
    """Each expectation of ``expect`` judged on the files as they are (``verification``: a full
    audit of them; ``verified_roots``: the model directories whose provenance is known)."""
    drifted = {os.path.normpath(c.path) for c in verification.checks}
    roots = verified_roots
    out: list[tuple[bool | None, str]] = []
    for exp in load_expectations(expect, placeholders):
        path = os.path.normpath(exp.file)
        known = path in verification.referenced or any(path.startswith(r.rstrip(os.sep) + os.sep)
                                                              for r in roots)
        state = True if path in drifted or os.path.realpath(path) in drifted else (False if known else None)
        try:
            content: bytes | None = read_regular(path, EXPECT_MAX, what="file an expectation checks")
        except FileNotFoundError:
            content = None
        except OSError as exc:
            out.append((None, f"not checked: cannot read it: {exc.strerror or exc}"))
            continue
        out.append(evaluate(exp, content, state))
    return out
