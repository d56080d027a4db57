"""``plan``: what will reinstalling these distributions undo, what survives, and what to do.

Pure except for reading the files expectations name (and, for a file the reinstall restores,
its pristine copy in uv's cache when one is there).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from .classify import installer_of, reinstall_parts, uv_cache_clean
from .discover.target import site_packages_prefix
from .discover.uvcache import find_pristine_copy
from .errors import ConfigError
from .expect import Expectation, evaluate
from .fileio import read_regular
from .model import Distribution, Drift, DriftKind, MetadataKind, Prediction, Scope, Target
from .paths import printable, relpath
from .record import parse_hash
from .report import Report

WIPED, SURVIVES, MAY_SURVIVE = "WIPED", "SURVIVES", "MAY SURVIVE"


class PlanItem(BaseModel):
    path: str
    relpath: str
    kind: str
    scope: str
    distribution: str | None
    status: str = Field(description="WIPED | SURVIVES | MAY SURVIVE")
    reason: str


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


class Plan(BaseModel):
    schema_version: Literal["1"] = "1"
    reinstall: list[str]
    installer: str
    wiped: list[str] = Field(default_factory=list)
    survives: list[str] = Field(default_factory=list)
    may_survive: list[str] = Field(default_factory=list)
    steps: list[PlanStep] = Field(default_factory=list)
    items: list[PlanItem] = Field(default_factory=list)
    expectations: list[ExpectationResult] = Field(default_factory=list)
    audit: Report


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def select_distributions(names: Sequence[str], dists: Sequence[Distribution]) -> list[Distribution]:
    by_name = {normalize(d.name): d for d in dists if d.kind is not MetadataKind.EGG_LINK}
    chosen, unknown = [], []
    for name in names:
        dist = by_name.get(normalize(name))
        (chosen.append(dist) if dist else unknown.append(name))
    if unknown:
        import difflib

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


def _status(drift: Drift, chosen: set[str]) -> tuple[str, str]:
    check = drift.check
    dist = check.distribution
    in_set = dist is not None and normalize(dist.name) in chosen
    if drift.scope is Scope.PACKAGE:
        if not in_set:
            return SURVIVES, f"{dist.key if dist else 'its distribution'} is not part of this reinstall"
        if drift.prediction is Prediction.WIPED:
            return WIPED, drift.evidence
        return (MAY_SURVIVE if drift.prediction is Prediction.MAY_SURVIVE else SURVIVES), drift.evidence
    if drift.scope is Scope.ENVIRONMENT and in_set and drift.prediction is Prediction.WIPED:
        return WIPED, drift.evidence
    reasons = {
        Scope.ENVIRONMENT: "no RECORD lists it, so no reinstall removes it",
        Scope.DATA: "a model directory file: outside every package",
        Scope.SOURCE: "an editable install's source tree: a reinstall re-links the same tree",
        Scope.EXTERNAL: "written outside the environment",
    }
    return SURVIVES, reasons.get(drift.scope, drift.evidence)


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


def _pristine(drift: Drift, uv_cache: str | None, originals=None) -> bytes | None:
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


def _expectation(exp: Expectation, drifts: dict[str, tuple[Drift, str]], referenced,
                 uv_cache: str | None, originals=None) -> ExpectationResult:
    path = os.path.normpath(exp.file)
    match = drifts.get(path) or drifts.get(os.path.realpath(path))
    # A file with no drift is known to match its reference only if something audited it.
    drifted = True if match else (False if referenced(path) else None)
    now_content, unread = _read_target(path)
    if unread is not None:
        return ExpectationResult(name=exp.label, file=printable(path), check=exp.check, holds_now=None,
                                 holds_after=None, reason=f"not checked: {unread}")
    holds_now, why_now = evaluate(exp, now_content, drifted)
    if not match or match[1] != WIPED:
        stays = "unchanged by the reinstall" if not match else f"{match[1].lower()} the reinstall"
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


def build_plan(report: Report, drifts: list[Drift], target: Target, dists: Sequence[Distribution],
               names: Sequence[str], installer: str | None, expectations: Sequence[Expectation] = (),
               uv_cache: str | None = None, referenced=lambda path: False, originals=None) -> Plan:
    """``referenced(path)``: whether the audit compared ``path`` with a reference (RECORD, metadata...)."""
    chosen_dists = select_distributions(names, dists)
    chosen = {normalize(d.name) for d in chosen_dists}
    who = installer_of(chosen_dists, installer)
    plan = Plan(reinstall=[d.name for d in chosen_dists], installer=who, audit=report)
    by_path: dict[str, tuple[Drift, str]] = {}
    replaced = _replaced_whole(chosen_dists, who)
    for drift in drifts:
        status, reason = _status(drift, chosen)
        whole = next((d for d in replaced if drift.check.path.startswith(d + os.sep)), None)
        if whole is not None and drift.scope is Scope.ENVIRONMENT and status == SURVIVES:
            status, reason = WIPED, (f"pip install --target --upgrade replaces {whole} whole, files no RECORD "
                                     "lists included")
        check = drift.check
        by_path[os.path.normpath(check.path)] = (drift, status)
        item = PlanItem(path=printable(check.path), relpath=printable(relpath(check.path, check.root)),
                        kind=check.kind.value, scope=drift.scope.value,
                        distribution=check.distribution.name if check.distribution else None,
                        status=status, reason=printable(reason))
        plan.items.append(item)
        {WIPED: plan.wiped, SURVIVES: plan.survives, MAY_SURVIVE: plan.may_survive}[status].append(item.path)
    plan.expectations = [_expectation(e, by_path, referenced, uv_cache, originals) for e in expectations]
    plan.steps = _steps(plan, drifts, chosen_dists, chosen, target, who)
    return plan


# Throughputs behind the time estimates (docs/checkpoint.md: measured on the seed's vLLM venv).
RESTORE_BYTES_PER_S = 200e6
RESTORE_SECONDS_PER_FILE = 0.002
REINSTALL_BYTES_PER_S = 32e6  # vLLM 0.33: 837 MB, 9,036 files, 30.8 s with pip (docs/checkpoint.md)
REINSTALL_SECONDS_PER_FILE = 0.0005
_RESTORABLE = {DriftKind.MODIFIED, DriftKind.MISSING, DriftKind.TYPE_CHANGED}


def _restore_alternative(drifts: list[Drift], chosen_dists: list[Distribution], chosen: set[str],
                         target: Target) -> PlanStep | None:
    """``driftscan restore`` in place of the reinstall, when every package drift of the chosen
    distributions has a verified original at hand; with both times estimated."""
    mine = [d for d in drifts if d.scope is Scope.PACKAGE and d.check.distribution is not None
            and normalize(d.check.distribution.name) in chosen]
    restorable = [d for d in mine if d.check.kind in _RESTORABLE]
    if not restorable or any(d.check.pristine is None for d in restorable) or len(restorable) != len(mine):
        return None
    size = sum(int(d.check.expected.get("size") or 0) for d in restorable)
    restore_s = size / RESTORE_BYTES_PER_S + len(restorable) * RESTORE_SECONDS_PER_FILE
    rows = [e for dist in chosen_dists for e in dist.entries]
    total = sum(e.size or 0 for e in rows)
    reinstall_s = total / REINSTALL_BYTES_PER_S + len(rows) * REINSTALL_SECONDS_PER_FILE
    refs = [d.check.pristine for d in restorable if d.check.pristine]
    sources = sorted({r.source for r in refs})
    where = f" --venv {shlex.quote(target.venv)}" if target.venv else "".join(
        f" --site-packages {shlex.quote(s)}" for s in target.site_packages)
    names = "".join(f" --dist {shlex.quote(d.name)}" for d in chosen_dists)
    # The restore must find the originals where this audit found them.
    wheels = sorted({os.path.dirname(r.path) for r in refs if r.source == "wheels"})
    found = "".join(f" --wheels {shlex.quote(w)}" for w in wheels) + (" --fetch" if "fetch" in sources else "")
    restore_time = "under a second" if restore_s < 1 else f"about {restore_s:.0f} s"
    return PlanStep(
        step=(f"faster alternative to the reinstall: restore the {len(restorable)} drifted file(s) "
              f"({size / 1e6:.1f} MB) from verified originals ({', '.join(sources)}): {restore_time} "
              f"after the audit, against about {reinstall_s:.0f} s for the reinstall to rewrite {len(rows)} files "
              f"({total / 1e6:.0f} MB) (estimates, docs/checkpoint.md); it writes a checkpoint of the drift first"),
        command=f"driftscan restore{names}{where}{found} --yes")


def _steps(plan: Plan, drifts: list[Drift], chosen_dists: list[Distribution], chosen: set[str],
           target: Target, who: str) -> list[PlanStep]:
    steps: list[PlanStep] = []
    # name -> the cache holding the edited copy (the one a plain "uv cache clean" may not be)
    poisoned: dict[str, str | None] = {}
    for d in drifts:
        dist, link = d.check.distribution, d.check.uv_cache
        if dist is not None and normalize(dist.name) in chosen and link:
            if poisoned.get(dist.name) is None:
                poisoned[dist.name] = link.cache_dir
    for name, cache_dir in sorted(poisoned.items()):
        dist = next(x for x in chosen_dists if x.name == name)
        where = f" ({cache_dir})" if cache_dir else ""
        if who == "uv":
            steps.append(PlanStep(step=f"clean {name} from uv's cache{where} first: an edited file is hard-linked "
                                       "there and a reinstall would link it back",
                                  command=uv_cache_clean(dist, cache_dir)))
        else:
            steps.append(PlanStep(step=f"pip rewrites {name}'s files, but uv's cache{where} keeps the edited copy "
                                       "for other venvs: clean it too", command=uv_cache_clean(dist, cache_dir)))
    for d in drifts:
        if d.check.kind is DriftKind.ORPHANED_METADATA:
            steps.append(PlanStep(step=f"remove the orphaned {os.path.basename(d.check.path)}: installers think "
                                       "its package is installed and may refuse to reinstall it",
                                  command=f"rm -r {shlex.quote(d.check.path)}"))
    note, reinstall = reinstall_parts(target, chosen_dists, who)
    steps.append(PlanStep(step=f"reinstall {', '.join(plan.reinstall)} with {who}" + (f" ({note})" if note else ""),
                          command=reinstall))
    faster = _restore_alternative(drifts, chosen_dists, chosen, target)
    if faster is not None:
        steps.append(faster)
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
        steps.append(PlanStep(step=f"review, then delete {len(files)} dump file(s) matching {d.check.path}, "
                                   f"{size / 1e6:.1f} MB, written by {writers} (no reinstall touches them; the "
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
