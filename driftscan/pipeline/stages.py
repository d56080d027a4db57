"""The audit, stage by stage: each stage a function from one ``State`` to the next, in the order
``STAGES`` lists them (``docs/architecture.md`` names the same). ``execute`` runs them all.

The heavy stages import their modules when they run (tests/contract/test_imports.py): the clean
index settles a warm audit of an unchanged environment without RECORD verification's modules; a
venv alone never pays for model directories; no drifted Python file, no libcst; no drift, no
search for originals."""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ..caches.keys import cache_key
from ..caches.statcache import NoCache, StatCache, user_cache_dir, write_dump_list
from ..core.errors import TargetError
from ..core.values import (Distribution, Drift, DriftKind, FileCheck, Problem, SourceKind, Target, TargetKind,
                           Verification)
from ..environment import resolve_target
from ..environment.content import with_content_hashes
from ..environment.dists import has_direct_url, with_direct_url
from ..environment.fast.cleanindex import still_clean
from ..environment.target import audit_containment, environment_roots
from ..environment.uv.archives import (CleanArchives, archives_of, audit_archives, indexed_links_out_problems,
                                       links_out_problems, unchecked_note, uv_installed)
from ..environment.uv.cache import all_indexed_archives, archive_holding, default_uv_cache
from ..fs.reader import default_jobs
from ..lint.scancache import ContentMemo
from ..reinstall.dumpledger import recorded_checks
from .classify import classify, uv_cache_clean, uv_cache_prune
from .patched import mark_patched
from .options import AuditOptions, CachePolicy, Need, RuleSelection

if TYPE_CHECKING:
    from ..modeldir import ModelDirResult
    from ..report.contract import Report
    from ..pristine import PristineOptions, PristineSet
    from ..pristine.base import Lookup
    from ..pristine.backups import BackupCopy
    from ..lint.rule import Rule

NO_PYTHON = Target(kind=TargetKind.NONE, venv=None, site_packages=())

Progress = Callable[[int, int], None]


class LoadedRules:
    """The rules available to one run (built-ins, plugins, rule modules), loaded the first time a
    stage needs them and then shared: drifted files and their originals are inspected by the same
    rules, loaded once. Nothing is loaded (nor libcst imported) when nothing is parsed."""

    def __init__(self, modules: Sequence[str], plugins: bool) -> None:
        self._modules, self._plugins = tuple(modules), plugins
        self._available: tuple[type[Rule], ...] | None = None

    def __call__(self) -> tuple[type[Rule], ...]:
        return self.selected(None)

    def selected(self, selection: RuleSelection | None) -> tuple[type[Rule], ...]:
        """The rules available, or those ``selection`` picks of them."""
        from ..lint.registry import load_rules, select_rules  # libcst: only when a file is parsed

        if self._available is None:
            self._available = tuple(load_rules(self._modules, plugins=self._plugins))
        if selection is None:
            return self._available
        return tuple(select_rules(self._available, selection.select, selection.ignore))


@dataclass(frozen=True)
class State:
    """What the audit knows after a stage. ``originals`` is open only when the caller needs them
    (``Need.ORIGINALS``): the ``Run`` built from the last state closes them."""

    options: AuditOptions
    need: Need
    started: float
    target: Target
    models: tuple[str, ...]
    verification: Verification
    progress: Progress | None = None
    rules: LoadedRules | None = None  # resolve() makes it; the options' rules otherwise
    model_results: tuple[ModelDirResult, ...] = ()
    skipped: tuple[Problem, ...] = ()
    lookups: tuple[Any, ...] = ()  # pristine.Lookup per drifted distribution (or not looked up)
    originals: PristineSet | None = None
    drifts: tuple[Drift, ...] = ()
    report: Report | None = None
    provenance: tuple[Any, ...] = ()  # provenance.Provenance per wheel proven by a lock's or direct_url's digest

    def with_checks(self, checks: Sequence[FileCheck], *, errors: Sequence[Problem] = ()) -> State:
        verification = dataclasses.replace(self.verification, checks=tuple(checks),
                                           errors=self.verification.errors + tuple(errors))
        return dataclasses.replace(self, verification=verification)

    @property
    def loaded_rules(self) -> LoadedRules:
        return self.rules or LoadedRules(self.options.rules.modules, self.options.rules.plugins)

    @property
    def package_dirs(self) -> tuple[str, ...]:
        """The environment's own directories: no file in them is ever a dump."""
        t = self.target
        return (*t.site_packages, *t.extra_roots, *((t.bin_dir,) if t.bin_dir else ()))


def _cache_repositories(hf_cache: str | None) -> tuple[list[str], Problem | None]:
    """Every repository of a Hugging Face cache ("" = the default one), and, when it holds none,
    that said as a problem of the cache."""
    if hf_cache is None:
        return [], None
    from ..modeldir.hfcache import default_hf_cache, find_cache_repos, no_repository  # see the top

    cache = hf_cache or default_hf_cache()
    if not os.path.isdir(cache):
        raise TargetError(f"{cache}: no Hugging Face cache here")
    message = no_repository(os.path.abspath(cache))
    return find_cache_repos(cache), Problem(os.path.abspath(cache), message) if message else None


def _paths(model_dirs: Sequence[str], repositories: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(os.path.abspath(p) for p in [*model_dirs, *repositories]))


def model_dir_paths(model_dirs: Sequence[str], hf_cache: str | None) -> list[str]:
    """The named model directories, plus every repository of a Hugging Face cache ("" = the default one)."""
    return _paths(model_dirs, _cache_repositories(hf_cache)[0])


def resolve(options: AuditOptions, need: Need, progress: Progress | None = None) -> State:
    """The target and everything discovery knows before a file is read: the environment (naming
    only model directories names none) and the model directories."""
    started = time.perf_counter()
    named = options.targets
    repositories, empty = _cache_repositories(named.hf_cache)
    models = _paths(named.model_dirs, repositories)
    # Model directories or a cache named replace the default environment, even when the cache
    # turns out to hold nothing: driftscan's own environment is never audited in their stead.
    python = named.python_named or not named.models_named
    target = resolve_target(named.venv, named.site_packages) if python else NO_PYTHON
    errors: tuple[Problem, ...] = ()
    skipped: tuple[Problem, ...] = ()
    if empty is not None:
        # Nothing else audited: the one thing asked for could not be checked (exit bit 2).
        if models or python:
            skipped = (empty,)
        else:
            errors = (empty,)
    return State(options, need, started, target, tuple(models), Verification(target, (), (), 0, (), errors),
                 progress=progress, rules=LoadedRules(options.rules.modules, options.rules.plugins),
                 skipped=skipped)


def verify_environment(state: State) -> State:
    """Every RECORD row, the files no RECORD lists, editable sources, package managers' records
    and uv's links (environment/verify.py) — or, when only the report is read, the clean index's
    answer for an unchanged clean environment (one lstat per file and directory)."""
    target, cache_policy = state.target, state.options.cache
    if target is NO_PYTHON:
        return state
    cache = StatCache.for_target(target.venv or "\0".join(target.site_packages)) if cache_policy.use_cache \
        else NoCache()
    index_on = os.environ.get("DRIFTSCAN_CLEAN_INDEX") != "off"  # off: to measure the path without it
    if state.need is Need.REPORT and index_on:
        settled = still_clean(target, cache.clean_index(), cache, cache_policy.uv_cache)
        if settled is not None:
            return dataclasses.replace(state, verification=settled)
    from ..environment.verify import verify  # see the top: not for a warm clean audit

    verification = verify(target, jobs=state.options.jobs, uv_cache=cache_policy.uv_cache, stat_cache=cache,
                          progress=state.progress, clean_index=index_on)
    cache.save()
    return dataclasses.replace(state, verification=verification)


def _recalled(target: Target, dists: Sequence[Distribution], policy: CachePolicy) -> tuple[Any, ...] | None:
    """Each provenance verdict of the distributions direct_url.json names a wheel digest for, when
    every one is remembered and still holds (provenance/verdicts.py); None when one must be made."""
    if not policy.use_cache:
        return None
    from ..provenance.expected import from_direct_url  # see the top: light, no wheel reader
    from ..provenance.verdicts import Verdicts

    containment = audit_containment(target, policy.uv_cache)[0]
    verdicts = Verdicts()
    out = []
    for dist in dists:
        if not has_direct_url(dist):
            continue
        wanted = from_direct_url(with_direct_url(dist, containment))
        if wanted is None:
            continue
        known = verdicts.get(dist, wanted)
        if known is None:
            return None
        out.append(known)
    return tuple(out)


def check_locks_and_wheels(state: State) -> State:
    """``--lock``: each distribution against the lockfiles (``lock-mismatch``); then each wheel a
    lock or direct_url.json names by its digest, where found, has its own RECORD compared with the
    installed one row by row (``record-rewritten``; the report's ``provenance``)."""
    target, v = state.target, state.verification
    locks = state.options.locks
    if target is NO_PYTHON:
        if locks:
            return state.with_checks(v.checks, errors=[Problem(p, "not checked: no environment was audited")
                                                       for p in locks])
        return state
    if not locks and not any(has_direct_url(d) for d in v.distributions):
        return state
    if not locks:  # a wheel direct_url.json names: its remembered verdict spares loading the wheel readers
        recalled = _recalled(target, v.distributions, state.options.cache)
        if recalled is not None:
            return dataclasses.replace(state, provenance=recalled)
    from . import locks as locking  # see the top: only with a lock or a wheel named by its digest

    cache_policy = state.options.cache
    cache = StatCache.for_target(target.venv or "\0".join(target.site_packages)) if cache_policy.use_cache \
        else NoCache()
    sources = state.options.originals
    checked = locking.check(v.checks, v.distributions, target, locks,
                            pristine_options(target, sources.wheels, sources.fetch, cache_policy.uv_cache),
                            cache, cache_policy.uv_cache, state.options.lock_groups)
    state = state.with_checks(checked.checks, errors=checked.errors)
    return dataclasses.replace(state, provenance=checked.provenance, skipped=state.skipped + checked.notes)


def verify_model_dirs(state: State) -> State:
    """Each model directory against its provenance, merged into the same checks."""
    if not state.models:
        return state
    from ..modeldir import verify_model_dir  # see the top: a venv alone does not pay for it

    opts = state.options.model_dirs
    # The cache named with --hf-cache is where originals of drifted local-dir files are looked
    # for too; else huggingface_hub's own.
    cache = state.options.targets.hf_cache or None
    results = tuple(verify_model_dir(p, deep=opts.deep, revision=opts.revision, manifest=opts.manifest,
                                     jobs=state.options.jobs or default_jobs(), progress=state.progress,
                                     hf_cache=cache)
                    for p in state.models)
    v = state.verification
    merged = dataclasses.replace(
        v, checks=v.checks + tuple(c for r in results for c in r.checks),
        files_checked=v.files_checked + sum(r.files_checked for r in results),
        unverifiable=v.unverifiable + tuple(u for r in results for u in r.unverifiable),
        errors=v.errors + tuple(e for r in results for e in r.errors))
    return dataclasses.replace(state, verification=merged, model_results=results)


def hash_content(state: State) -> State:
    """The digest of each modified or added file's current content (for ``compare`` and accept pins),
    and which of them are as the team's patch wrote them (``patched``)."""
    if not state.verification.checks:
        return state

    hashed = with_content_hashes(state.verification.checks, state.target.site_packages, state.target.venv)
    # a file as the team's patch wrote it (driftscan patch apply's record) is that, not drift
    return state.with_checks(mark_patched(hashed, state.target.site_packages))


def find_debug_code(state: State) -> State:
    """Debug-code findings on drifted Python files, and the dumps they left on disk."""
    v = state.verification
    if not any(c.path.endswith((".py", ".pyw")) for c in v.checks):
        return state  # nothing to parse: libcst is not even imported
    from ..lint.drifts import inspect_drifts  # see the top: libcst only for a drifted Python file

    rules, cache = state.options.rules, state.options.cache
    outcome = inspect_drifts(v.checks, jobs=state.options.jobs, select=rules.select, ignore=rules.ignore,
                             rules_modules=rules.modules, owned=v.referenced.__contains__,
                             package_dirs=state.package_dirs, plugins=rules.plugins,
                             dump_list=write_dump_list,  # many dumps: their exact list in the user cache
                             memo_dir=os.path.join(user_cache_dir(), "inspect") if cache.use_cache else None,
                             loaded=state.loaded_rules)
    state = state.with_checks([*outcome.checks, *outcome.artifacts], errors=outcome.errors)
    return dataclasses.replace(state, skipped=state.skipped + tuple(outcome.skipped))


def recorded_dumps(state: State) -> State:
    """The dumps earlier checkpoints of this environment recorded that are still on disk and that
    this audit did not name itself (the code that named them may be gone since)."""
    roots = environment_roots(state.target) if state.target is not NO_PYTHON else ()
    if not roots:
        return state

    v = state.verification
    named: set[str] = set()
    for c in v.checks:
        if c.kind is DriftKind.DEBUG_ARTIFACTS and c.dumps is not None:
            named.update(c.dumps.paths)
        elif c.kind is DriftKind.POSSIBLE_DEBUG_ARTIFACTS:
            named.update(p for p in c.actual.get("possible_artifacts") or () if isinstance(p, str))
    checks, notes = recorded_checks(roots[0], named, v.referenced.__contains__, state.package_dirs, write_dump_list)
    if checks:
        state = state.with_checks(v.checks + tuple(checks))
    return dataclasses.replace(state, skipped=state.skipped + tuple(notes))


def audit_uv_cache(state: State) -> State:
    """uv's cache archives checked against their own RECORDs: with a cache named (--uv-cache, the
    configuration), every archive of it; else, in uv's default cache, the archives the
    environment's uv-installed distributions came from or would be reinstalled from, and those a
    drifted file is hard-linked to. Each edited archive is a ``cache-modified`` drift."""
    named, use_cache = state.options.cache.uv_cache, state.options.cache.use_cache
    cache_dir = named or default_uv_cache()
    if not cache_dir:
        return state
    cache_dir = os.path.abspath(cache_dir)
    v = state.verification
    notes: list[Problem] = []
    if named is not None:
        archives, index = None, all_indexed_archives(cache_dir)
    elif not os.path.isdir(cache_dir):
        note = unchecked_note(cache_dir, uv_installed(v.distributions), exists=False)
        return dataclasses.replace(state, skipped=state.skipped + ((note,) if note else ()))
    else:
        linked = [archive_holding(cache_dir, c.uv_cache.copy) for c in v.checks
                  if c.uv_cache is not None and c.uv_cache.copy]
        archives, index, unfound = archives_of(cache_dir, v.distributions, [a for a in linked if a])
        # an archive-v0/<id> the index names that leads out of the cache: named, not followed
        out_of_cache, out_keys = indexed_links_out_problems(cache_dir, uv_installed(v.distributions))
        named_out = {p.path for p in out_of_cache}
        archives = [a for a in archives if a not in named_out]  # not followed: said once, by name, here
        note = unchecked_note(cache_dir, [d for d in unfound if d.key not in out_keys], exists=True)
        notes = [note] if note else []
        state = state.with_checks(v.checks, errors=out_of_cache)
        if not archives:
            moved = links_out_problems(cache_dir, top_only=True)  # archive-v0 moved out: say so
            state = state.with_checks(state.verification.checks, errors=moved)
            return dataclasses.replace(state, skipped=state.skipped + tuple(notes))
    stat_cache = StatCache.for_target(cache_dir, os.path.join(user_cache_dir(), "uv-archives")) if use_cache else None
    clean = CleanArchives(stat_cache.path[:-len(".bin")] + ".archives.bin") if stat_cache and stat_cache.path else None
    found = audit_archives(cache_dir, archives, stat_cache, index, clean)
    if stat_cache is not None:
        stat_cache.save()
    if clean is not None:
        clean.save(found.archive_paths if archives is None else None)
    state = state.with_checks(state.verification.checks + tuple(found.checks), errors=found.errors)
    return dataclasses.replace(state, skipped=state.skipped + tuple(notes) + tuple(found.skipped))


@dataclass(frozen=True)
class _NotLookedUp:
    """A report row for a drifted distribution whose originals were not looked for."""

    distribution: object
    copy: None = None
    reason: str = "not looked for (--no-pristine): no diffs, and findings' origin unknown"
    rejected: tuple[()] = ()


def pristine_options(target: Target, wheels: Sequence[str] = (), fetch: bool = False,
                     uv_cache: str | None = None) -> PristineOptions:
    """Where to look for originals of ``target``'s files: the given wheel directories, and
    ``pip download`` only when ``fetch``."""
    from ..pristine import PristineOptions  # see the top: no drift, no search for originals

    return PristineOptions(wheels=tuple(os.path.abspath(w) for w in wheels), fetch=fetch, uv_cache=uv_cache,
                           venv=target.venv, python_version=target.python_version)


def compare_with_originals(state: State) -> State:
    """Diffs, byte ranges and finding origins from the verified originals of drifted package
    files. The set of originals is closed here unless the caller needs it (``Need.ORIGINALS``)."""
    v, hold = state.verification, state.need is Need.ORIGINALS
    if not (v.checks or hold):
        return state
    from .changes import compare_with_originals as compare, installed_contents, wanted_originals  # see the top

    if not state.options.originals.look:
        if not v.checks:
            return state
        needed = wanted_originals(v.checks)
        checks = compare(v.checks, None, ())  # added files' findings are still injected
        return dataclasses.replace(state.with_checks(checks), lookups=tuple(_NotLookedUp(d) for d, _ in needed))
    needed = wanted_originals(v.checks)
    if not needed and not any(c.findings for c in v.checks) and not hold:
        return state
    from ..pristine import find_pristine

    rules, sources = state.options.rules, state.options.originals

    loaded = state.loaded_rules

    def load() -> Sequence[type[Rule]]:
        return loaded.selected(rules)

    memo = None
    if state.options.cache.use_cache:  # the originals' findings by content: a warm audit of the same drift parses nothing
        memo = ContentMemo(os.path.join(user_cache_dir(), "inspect"),
                           cache_key("originals", sys.version, list(sys.path), list(rules.select), list(rules.ignore),
                                     list(rules.modules), rules.plugins))
    options = pristine_options(state.target, sources.wheels, sources.fetch, state.options.cache.uv_cache)
    with ExitStack() as stack:
        found = stack.enter_context(find_pristine(needed, options, installed=installed_contents(v.checks))) \
            if (needed or hold) else None
        checks = compare(v.checks, found, load, memo, rules.plugins)
        lookups = tuple(found.lookups()) if found is not None else ()
        checks = _backups_named(checks, lookups)
        if hold:
            stack.pop_all()  # the Run owns them now
    return dataclasses.replace(state.with_checks(checks), lookups=lookups, originals=found if hold else None)


def _backups_named(checks: list[FileCheck], lookups: Sequence[Lookup]) -> list[FileCheck]:
    """An added backup (``x.py.bak``) that gave a file's verified original says so: it is the
    original, not a stray file (and what a user may delete once the file is restored)."""
    of: dict[str, str] = {}
    for lookup in lookups:
        copy = lookup.copy
        if copy is not None and copy.source is SourceKind.BACKUP:
            for path, backup in cast("BackupCopy", copy).chosen_items():
                of[backup] = path
    if not of:
        return checks
    return [dataclasses.replace(c, evidence=f"{c.evidence + '; ' if c.evidence else ''}a backup of {of[c.path]}: "
                                             "its bytes match that file's RECORD row (the original)")
            if c.kind is DriftKind.ADDED and c.path in of else c for c in checks]


def _uv_cache_dir(state: State) -> str | None:
    named = state.options.cache.uv_cache or default_uv_cache()
    return os.path.abspath(named) if named else None


def _with_remedy(check: FileCheck, state: State, owners: dict[tuple[str, DriftKind], ModelDirResult],
                 memos: dict[str, dict[Any, Any]]) -> FileCheck:
    """The remedies ``classify`` cannot make from the check alone: a model directory's way back
    (from its provenance) and an edited uv cache archive's clean line."""
    if check.remedy_hint:
        return check
    owner = owners.get((check.path, check.kind))
    if owner is not None:
        from ..modeldir.remedies import with_remedy  # only with model directories (see the top)

        return with_remedy(owner, check, memos.setdefault(owner.root, {}))
    if check.kind is DriftKind.CACHE_MODIFIED:
        cache_dir, dist = _uv_cache_dir(state), check.distribution
        # An archive no index entry names (uv fetched its wheel again into a new one) is left by
        # `uv cache clean NAME`; `uv cache prune` removes it.
        remedy = uv_cache_clean(dist, cache_dir) if check.actual.get("index_entries") and dist is not None \
            else uv_cache_prune(cache_dir)
        return dataclasses.replace(check, remedy_hint=remedy)
    return check


def classify_drifts(state: State) -> State:
    """Each file check becomes a drift with scope, prediction, remedy and evidence: every remedy
    the audit makes is made here (packages' and environment files' by ``classify``), save two
    made where their facts are — the exact list of many dumps (written to the user cache by
    ``find_debug_code``) and an editable source tree's git view (environment/sourcetree.py)."""
    owners = {(c.path, c.kind): r for r in state.model_results for c in r.checks}
    memos: dict[str, dict[Any, Any]] = {}
    checks = tuple(_with_remedy(c, state, owners, memos) for c in state.verification.checks)
    installer = state.options.installer
    return dataclasses.replace(state.with_checks(checks),
                               drifts=tuple(classify(c, state.target, installer) for c in checks))


def build(state: State) -> State:
    """The versioned report."""
    from ..report.contract import build_report  # its classes: 6-9 ms a warm `driftscan scan` never pays
    results = state.model_results
    report = build_report(state.verification, list(state.drifts), time.perf_counter() - state.started,
                          model_dirs=[r.root for r in results], skipped=list(state.skipped),
                          pristine=state.lookups, not_hashed=sum(r.large_files_unread for r in results),
                          locks=state.options.locks, provenance=state.provenance)
    if state.options.targets.chosen_because:
        report.target.chosen_because = state.options.targets.chosen_because
    return dataclasses.replace(state, report=report)


def accept(state: State) -> State:
    """The configuration's accepted drift marked in the report, stale and unused entries listed."""
    accepted = state.options.accepted
    if not accepted.entries or state.report is None:
        return state
    from ..report.accept import apply_accepted  # pydantic (accept entries): 60 ms, only with entries

    return dataclasses.replace(state, report=apply_accepted(state.report, accepted.entries, source=accepted.source))


STAGES: tuple[Callable[[State], State], ...] = (
    verify_environment, check_locks_and_wheels, verify_model_dirs, hash_content, find_debug_code, recorded_dumps, audit_uv_cache,
    compare_with_originals, classify_drifts, build, accept)


def execute(options: AuditOptions, need: Need = Need.CHECKS, progress: Progress | None = None) -> State:
    """Every stage in order, from ``resolve``. On an error the originals a stage holds are closed."""
    state = resolve(options, need, progress)
    try:
        for stage in STAGES:
            state = stage(state)
    except BaseException:
        if state.originals is not None:
            state.originals.close()
        raise
    return state
