"""The library entry points: ``audit()`` and ``plan()`` wire discover → verify → classify → report."""

from __future__ import annotations

import dataclasses
import functools
import gc
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .caches.statcache import NoCache, StatCache
from .pipeline.classify import classify
from .environment import find_distributions, resolve_target
from .environment.target import containment_for
from .environment.uv.cache import default_uv_cache
from .core.errors import TargetError
from .core.values import Drift, LayoutKind, Target, TargetKind, Verification
from .fs.reader import default_jobs
from .environment.ownership import build_ownership

if TYPE_CHECKING:
    from .reinstall.plan import Plan
    from .report.contract import Report
    from .pristine import Lookup, PristineOptions, PristineSet
    from .modeldir import ModelDirResult
    from .snapshot.run import Root, RootKind

# Model directories, snapshots and Hugging Face caches are imported where used: an audit of a
# venv alone should not pay for them at start-up (tests/contract/test_imports.py keeps it so).

NO_PYTHON = Target(kind=TargetKind.NONE, venv=None, site_packages=())


def _without_cyclic_gc(func):
    """An audit allocates a few hundred thousand small acyclic objects; the cyclic collector's
    repeated passes over them cost a tenth of a warm audit and free nothing. Paused for the call,
    restored after (a host program's own setting included)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        enabled = gc.isenabled()
        gc.disable()
        try:
            return func(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()
    return wrapper


@dataclass(frozen=True)
class Run:
    """One pass of the pipeline, kept whole for commands that need more than the report."""

    target: Target
    verification: Verification
    drifts: list[Drift]
    report: Report
    model_dirs: tuple[ModelDirResult, ...] = ()
    pristine: tuple = ()  # pristine.Lookup: where each drifted distribution's originals came from
    originals: PristineSet | None = None  # open when run(hold_originals=True): the caller closes it


def model_dir_paths(model_dirs: Sequence[str], hf_cache: str | None) -> list[str]:
    """The named model directories, plus every repository of a Hugging Face cache ("" = the default one)."""
    paths = list(model_dirs)
    if hf_cache is not None:
        from .modeldir.hfcache import default_hf_cache, find_cache_repos

        cache = hf_cache or default_hf_cache()
        if not os.path.isdir(cache):
            raise TargetError(f"{cache}: no Hugging Face cache here")
        paths += find_cache_repos(cache)
    return list(dict.fromkeys(os.path.abspath(p) for p in paths))


def _merge(verification: Verification, results: Sequence[ModelDirResult]) -> Verification:
    if not results:
        return verification
    from .modeldir.remedies import with_remedies

    return Verification(
        target=verification.target,
        distributions=verification.distributions,
        checks=verification.checks + tuple(c for r in results for c in with_remedies(r)),
        files_checked=verification.files_checked + sum(r.files_checked for r in results),
        unverifiable=verification.unverifiable + tuple(u for r in results for u in r.unverifiable),
        errors=verification.errors + tuple(e for r in results for e in r.errors),
        referenced=verification.referenced,
    )


def _inspect(verification: Verification, jobs: int | None, select: Sequence[str], ignore: Sequence[str],
             rules_modules: Sequence[str] = (), plugins: bool = True, use_cache: bool = True):
    """Debug-code findings on drifted Python files, and the dumps they left on disk."""
    if not any(c.path.endswith((".py", ".pyw")) for c in verification.checks):
        return verification, []  # nothing to parse: libcst is not even imported
    from .caches.statcache import user_cache_dir, write_dump_list
    from .lint.drifts import inspect_drifts

    target = verification.target
    # No file of the environment's own directories, and none a RECORD owns, is ever a "dump".
    package_dirs = (*target.site_packages, *target.extra_roots, *((target.bin_dir,) if target.bin_dir else ()))
    outcome = inspect_drifts(verification.checks, jobs=jobs, select=select, ignore=ignore, rules_modules=rules_modules,
                             owned=verification.referenced.__contains__, package_dirs=package_dirs, plugins=plugins,
                             dump_list=write_dump_list,  # many dumps: their exact list in the user cache
                             memo_dir=os.path.join(user_cache_dir(), "inspect") if use_cache else None)
    merged = Verification(
        target=verification.target,
        distributions=verification.distributions,
        checks=tuple(outcome.checks) + tuple(outcome.artifacts),
        files_checked=verification.files_checked,
        unverifiable=verification.unverifiable,
        errors=verification.errors + tuple(outcome.errors),
        referenced=verification.referenced,
    )
    return merged, outcome.skipped


def _recorded_dumps(verification: Verification):
    """The dumps earlier checkpoints of this environment recorded that are still on disk and that
    this audit did not name itself (the code that named them may be gone since): dumpledger.py."""
    from .environment.target import environment_roots

    target = verification.target
    roots = environment_roots(target) if target is not NO_PYTHON else ()
    if not roots:
        return verification, []
    from .caches.statcache import write_dump_list
    from .reinstall.dumpledger import recorded_checks
    from .core.values import DriftKind

    named: set[str] = set()
    for c in verification.checks:
        if c.kind is DriftKind.DEBUG_ARTIFACTS and c.dumps is not None:
            named.update(c.dumps.paths)
        elif c.kind is DriftKind.POSSIBLE_DEBUG_ARTIFACTS:
            named.update(p for p in c.actual.get("possible_artifacts") or () if isinstance(p, str))
    package_dirs = (*target.site_packages, *target.extra_roots, *((target.bin_dir,) if target.bin_dir else ()))
    checks, notes = recorded_checks(roots[0], named, verification.referenced.__contains__, package_dirs,
                                    write_dump_list)
    if checks:
        verification = dataclasses.replace(verification, checks=verification.checks + tuple(checks))
    return verification, notes


def _audit_uv_cache(verification: Verification, uv_cache: str | None, use_cache: bool):
    """uv's cache archives checked against their own RECORDs: with ``uv_cache`` named (--uv-cache,
    the configuration), every archive of it; else, in uv's default cache, the archives the
    environment's uv-installed distributions came from or would be reinstalled from, and those a
    drifted file is hard-linked to. Each edited archive is a ``cache-modified`` drift whose remedy is
    the exact ``uv cache clean`` line."""
    from .environment.uv.cache import all_indexed_archives, archive_holding

    cache_dir = uv_cache or default_uv_cache()
    if not cache_dir:
        return verification, []
    cache_dir = os.path.abspath(cache_dir)
    from .pipeline.classify import uv_cache_clean, uv_cache_prune
    from .environment.uv.archives import archives_of, audit_archives, unchecked_note, uv_installed

    notes = []
    if uv_cache is not None:
        archives, index = None, all_indexed_archives(cache_dir)
    elif not os.path.isdir(cache_dir):
        note = unchecked_note(cache_dir, uv_installed(verification.distributions), exists=False)
        return verification, [note] if note else []
    else:
        linked = [archive_holding(cache_dir, c.uv_cache.copy) for c in verification.checks
                  if c.uv_cache is not None and c.uv_cache.copy]
        archives, index, unfound = archives_of(cache_dir, verification.distributions, [a for a in linked if a])
        from .environment.uv.archives import indexed_links_out_problems, links_out_problems

        # an archive-v0/<id> the index names that leads out of the cache: named, not followed
        out_of_cache, out_keys = indexed_links_out_problems(cache_dir, uv_installed(verification.distributions))
        named_out = {p.path for p in out_of_cache}
        archives = [a for a in archives if a not in named_out]  # not followed: said once, by name, here
        note = unchecked_note(cache_dir, [d for d in unfound if d.key not in out_keys], exists=True)
        notes = [note] if note else []
        verification = dataclasses.replace(verification, errors=verification.errors + out_of_cache) \
            if out_of_cache else verification
        if not archives:
            moved = links_out_problems(cache_dir, top_only=True)  # archive-v0 moved out: say so
            return (dataclasses.replace(verification, errors=verification.errors + moved) if moved
                    else verification), notes
    from .caches.statcache import user_cache_dir

    from .environment.uv.archives import CleanArchives

    stat_cache = StatCache.for_target(cache_dir, os.path.join(user_cache_dir(), "uv-archives")) if use_cache else None
    clean = CleanArchives(stat_cache.path[:-len(".bin")] + ".archives.bin") if stat_cache and stat_cache.path else None
    found = audit_archives(cache_dir, archives, stat_cache, index, clean)
    if stat_cache is not None:
        stat_cache.save()
    if clean is not None:
        clean.save(found.archive_paths if archives is None else None)
    # An archive no index entry names (uv fetched its wheel again into a new one) is left by
    # `uv cache clean NAME`; `uv cache prune` removes it.
    checks = tuple(dataclasses.replace(c, remedy_hint=uv_cache_clean(c.distribution, cache_dir)  # type: ignore[arg-type]
                                       if c.actual.get("index_entries") else uv_cache_prune(cache_dir))
                   for c in found.checks)
    return dataclasses.replace(verification, checks=verification.checks + checks,
                               errors=verification.errors + found.errors), notes + list(found.skipped)


@_without_cyclic_gc
def run(venv: str | None = None, site_packages: Sequence[str] = (), *, jobs: int | None = None,
        uv_cache: str | None = None, installer: str | None = None, use_cache: bool = True,
        model_dirs: Sequence[str] = (), hf_cache: str | None = None, deep: bool = False,
        revision: str | None = None, manifest: str | None = None, progress=None,
        select: Sequence[str] = (), ignore: Sequence[str] = (), inspect: bool = True,
        rules_modules: Sequence[str] = (), include_environment: bool = False, report_only: bool = False,
        plugins: bool = True, pristine: PristineOptions | None = None, originals: PristineSet | None = None,
        compare: bool = True, hold_originals: bool = False) -> Run:
    """One pass of the pipeline. Naming any target (a venv, site-packages, a model directory,
    a Hugging Face cache) replaces the default, the running environment, unless
    ``include_environment`` (model directories from a config file add to the default).
    ``report_only``: the caller reads ``Run.report`` alone, so an unchanged clean environment
    may be settled from the clean index (its ``Run.verification`` then lists distributions
    without their RECORD entries).

    ``compare``: look for the verified originals of drifted package files (``pristine`` says
    where, default: direct_url, uv's and pip's caches; ``originals``, an open set, is reused) to
    give each modified file its diff and each finding its origin."""
    started = time.perf_counter()
    models = model_dir_paths(model_dirs, hf_cache)
    python_named = venv is not None or bool(site_packages) or include_environment
    target = resolve_target(venv, tuple(site_packages)) if python_named or not models else NO_PYTHON
    cache = StatCache.for_target(target.venv or "\0".join(target.site_packages)) if use_cache else NoCache()
    if target is NO_PYTHON:
        verification = Verification(NO_PYTHON, (), (), 0, (), ())
    else:
        # The clean index settles a warm audit of an unchanged clean environment with one lstat per
        # file and directory. It rebuilds no RECORD entries: only for callers that need the report.
        # The pipeline's modules are imported only when it runs: a clean index that settles the
        # environment, and the snapshot, diff and scan commands, do without them.
        from .environment.fast.cleanindex import still_clean

        index_on = os.environ.get("DRIFTSCAN_CLEAN_INDEX") != "off"  # off: to measure the path without it
        settled = still_clean(target, cache.clean_index(), cache, uv_cache) if report_only and index_on else None
        if settled is not None:
            verification = settled
        else:
            from .environment.verify import verify

            verification = verify(target, jobs=jobs, uv_cache=uv_cache, stat_cache=cache, progress=progress,
                                  clean_index=index_on)
            cache.save()
    results: tuple[ModelDirResult, ...] = ()
    if models:
        from .modeldir import verify_model_dir

        results = tuple(verify_model_dir(p, deep=deep, revision=revision, manifest=manifest,
                                         jobs=jobs or default_jobs(), progress=progress) for p in models)
    verification = _merge(verification, results)
    if verification.checks:
        from .environment.content import with_content_hashes

        verification = dataclasses.replace(verification, checks=with_content_hashes(verification.checks))
    skipped: list = []
    if inspect:
        verification, skipped = _inspect(verification, jobs, select, ignore, rules_modules, plugins, use_cache)
        verification, recorded_notes = _recorded_dumps(verification)
        skipped += recorded_notes
    verification, cache_skipped = _audit_uv_cache(verification, uv_cache, use_cache)
    skipped += cache_skipped
    lookups: tuple = ()
    held = None
    if compare and (verification.checks or hold_originals):
        verification, lookups, held = _compare(verification, pristine or pristine_options(target, uv_cache=uv_cache),
                                               originals, select, ignore, rules_modules, plugins, hold=hold_originals,
                                               use_cache=use_cache)
    elif verification.checks:
        verification, lookups = _not_compared(verification)
    drifts = [classify(check, target, installer) for check in verification.checks]
    from .report.contract import build_report  # pydantic and the report models: not for a snapshot

    report = build_report(verification, drifts, time.perf_counter() - started,
                          model_dirs=[r.root for r in results], skipped=skipped, pristine=lookups,
                          not_hashed=sum(r.large_files_unread for r in results))
    return Run(target, verification, drifts, report, results, lookups, held or originals)


@dataclass(frozen=True)
class _NotLookedUp:
    """A report row for a drifted distribution whose originals were not looked for."""

    distribution: object
    copy: None = None
    reason: str = "not looked for (--no-pristine): no diffs, and findings' origin unknown"
    rejected: tuple = ()


def _not_compared(verification: Verification):
    from .pipeline.changes import compare_with_originals, wanted_originals

    needed = wanted_originals(verification.checks)
    checks = compare_with_originals(verification.checks, None, ())  # added files' findings are still injected
    merged = Verification(target=verification.target, distributions=verification.distributions,
                          checks=tuple(checks), files_checked=verification.files_checked,
                          unverifiable=verification.unverifiable, errors=verification.errors,
                          referenced=verification.referenced)
    return merged, tuple(_NotLookedUp(dist) for dist, _ in needed)


def pristine_options(target: Target, wheels: Sequence[str] = (), fetch: bool = False,
                     uv_cache: str | None = None) -> PristineOptions:
    """Where to look for originals of ``target``'s files: the given wheel directories, and
    ``pip download`` only when ``fetch``."""
    from .pristine import PristineOptions

    return PristineOptions(wheels=tuple(os.path.abspath(w) for w in wheels), fetch=fetch, uv_cache=uv_cache,
                           venv=target.venv, python_version=target.python_version)


def _compare(verification: Verification, options: PristineOptions, originals: PristineSet | None,
             select: Sequence[str], ignore: Sequence[str], rules_modules: Sequence[str], plugins: bool,
             hold: bool = False, use_cache: bool = True):
    """Diffs, byte ranges and finding origins from the verified originals of drifted package files.
    ``hold``: return the set of originals open (the caller closes it), for a restore or checkpoint."""
    from .pipeline.changes import wanted_originals

    needed = wanted_originals(verification.checks)
    if not needed and not any(c.findings for c in verification.checks) and not hold:
        return verification, (), None
    from .pipeline.changes import compare_with_originals
    from .pristine import find_pristine

    def rules():
        from .lint import load_rules, select_rules

        return select_rules(load_rules(rules_modules, plugins=plugins), select, ignore)

    memo = None
    if use_cache:  # the originals' findings by content: a warm audit of the same drift parses nothing
        from .caches.statcache import user_cache_dir
        from .lint.scancache import ContentMemo

        memo = ContentMemo(os.path.join(user_cache_dir(), "inspect"),
                           repr(("originals", sys.version, list(sys.path), list(select), list(ignore),
                                 list(rules_modules), plugins)))
    opened = find_pristine(needed, options) if originals is None and (needed or hold) else None
    try:
        found = originals if originals is not None else opened
        checks = compare_with_originals(verification.checks, found, rules, memo, plugins)
        lookups = tuple(found.lookups()) if found is not None else ()
    except BaseException:
        if opened is not None:
            opened.close()
        raise
    if opened is not None and not hold:
        opened.close()
        opened = None
    merged = Verification(target=verification.target, distributions=verification.distributions,
                          checks=tuple(checks), files_checked=verification.files_checked,
                          unverifiable=verification.unverifiable, errors=verification.errors,
                          referenced=verification.referenced)
    return merged, lookups, opened


def audit(
    venv: str | None = None,
    site_packages: Sequence[str] = (),
    *,
    jobs: int | None = None,
    uv_cache: str | None = None,
    use_cache: bool = True,
    model_dirs: Sequence[str] = (),
    hf_cache: str | None = None,
    deep: bool = False,
    revision: str | None = None,
    manifest: str | None = None,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    plugins: bool = True,
) -> Report:
    """Audit an environment and/or model directories. With no target, the environment driftscan
    runs in. ``hf_cache=""`` audits every repository of the default Hugging Face cache; ``deep``
    hashes large weight files too (by default they are checked by presence, size and mtime).

    ``use_cache=False`` re-hashes every file (see ``driftscan.caches.statcache`` for what the cache trusts);
    ``plugins=False`` leaves out rules from the ``driftscan.rules`` entry points.

    Raises ``TargetError`` when the target does not exist or is not an environment; every
    problem met while auditing a valid target is listed in ``Report.errors`` instead.
    """
    return run(venv, site_packages, jobs=jobs, uv_cache=uv_cache, use_cache=use_cache, model_dirs=model_dirs,
               hf_cache=hf_cache, deep=deep, revision=revision, manifest=manifest, select=select,
               ignore=ignore, report_only=True, plugins=plugins).report


def plan(
    reinstall: Sequence[str],
    venv: str | None = None,
    site_packages: Sequence[str] = (),
    *,
    installer: str | None = None,
    expect: str | None = None,
    jobs: int | None = None,
    uv_cache: str | None = None,
    use_cache: bool = True,
    model_dirs: Sequence[str] = (),
    hf_cache: str | None = None,
    include_environment: bool = False,
    pristine: PristineOptions | None = None,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    rules_modules: Sequence[str] = (),
    plugins: bool = True,
    source: str | None = None,
    checkpoint: str | None = None,
) -> "Plan":
    """What reinstalling ``reinstall`` (distribution names) undoes and what survives it.

    ``installer`` ("pip" or "uv") asks "what if I used this installer"; by default each
    distribution's own INSTALLER decides. ``expect`` is a TOML file of expectations.
    ``source`` is what ``plan --from`` takes: a path to a ``.whl``, a directory of wheels
    (find-links), or the literal ``"index"``; None: each distribution's source as installed
    (direct_url.json, INSTALLER, uv's cache). ``checkpoint``: a checkpoint directory already
    taken; the plan then asks for a checkpoint first only for wiped content it does not hold.
    """
    from .environment.reinstall_source import parse_source
    from .reinstall.expect import load_expectations
    from .reinstall.plan import build_plan

    told = parse_source(source) if source is not None else None

    result = run(venv, site_packages, jobs=jobs, uv_cache=uv_cache, installer=installer, use_cache=use_cache,
                 model_dirs=model_dirs, hf_cache=hf_cache, include_environment=include_environment, pristine=pristine,
                 hold_originals=True, select=select, ignore=ignore, rules_modules=rules_modules, plugins=plugins)
    verified_roots = [r.root for r in result.model_dirs if r.kind is not LayoutKind.UNKNOWN]

    def referenced(path: str) -> bool:
        return path in result.verification.referenced or any(
            path.startswith(root.rstrip(os.sep) + os.sep) for root in verified_roots)

    target = result.target
    placeholders = {"venv": target.venv or "", "site_packages": target.site_packages[0] if target.site_packages else ""}
    expectations = load_expectations(expect, placeholders) if expect else []
    held = _held_by_checkpoint(checkpoint, result.drifts) if checkpoint is not None else None
    try:
        return build_plan(result.report, result.drifts, target, result.verification.distributions, reinstall,
                          installer, expectations, uv_cache or default_uv_cache(),
                          referenced=referenced, originals=result.originals, source=told, held=held,
                          checkpoint_dir=_suggested_checkpoint(target),
                          model_dirs=[r.root for r in result.model_dirs])
    finally:
        if result.originals is not None:
            result.originals.close()


def _held_by_checkpoint(path: str, drifts) -> frozenset[str]:
    """The drifted paths whose current content ``path`` (a checkpoint) holds byte for byte."""
    import hashlib

    from .reinstall.checkpoint import load_index, saved_path
    from .fs.reader import read_regular

    def digest(file: str) -> bytes | None:
        try:
            return hashlib.sha256(read_regular(file, 1 << 36, what="checkpointed file")).digest()
        except OSError:
            return None

    index = load_index(path)
    saved = {os.path.normpath(f.path): f.content for f in index.files if f.content}
    held = set()
    for drift in drifts:
        rel = saved.get(os.path.normpath(drift.check.path))
        if rel is None:
            continue
        copy = saved_path(path, rel)
        now = digest(drift.check.path)
        if copy is not None and now is not None and digest(copy) == now:
            held.add(drift.check.path)
    return frozenset(held)


def _suggested_checkpoint(target: Target) -> str:
    """Where ``plan`` suggests the checkpoint goes: the place ``restore --yes`` writes its own
    (``checkpoint.default_checkpoint_path``), named without creating anything."""
    from datetime import datetime, timezone

    base = os.environ.get("DRIFTSCAN_CHECKPOINT_DIR") or os.path.join(
        os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state"), "driftscan", "checkpoints")
    from .reinstall.checkpoint import checkpoint_name, environment_root

    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return os.path.join(base, f"{checkpoint_name(environment_root(target))}-{stamp}")


def snapshot_roots(venv: str | None, site_packages: Sequence[str], model_dirs: Sequence[str]) -> list[Root]:
    from .snapshot.run import Root, RootKind

    roots: list[Root] = []
    if venv is not None or site_packages or not model_dirs:
        target = resolve_target(venv, tuple(site_packages))
        if target.venv:
            roots.append(Root(RootKind.VENV, target.venv))
        roots += [Root(RootKind.SITE_PACKAGES, s) for s in target.site_packages if not target.venv]
    for path in model_dirs:
        if not os.path.isdir(path):
            raise TargetError(f"{path}: not a directory")
        roots.append(Root(RootKind.MODEL_DIR, os.path.abspath(path)))
    return roots


@_without_cyclic_gc
def snapshot(output: str, venv: str | None = None, site_packages: Sequence[str] = (),
             model_dirs: Sequence[str] = (), *, jobs: int | None = None, progress=None) -> list:
    """Record every file of the named roots (default: the running environment) into ``output``.
    Returns the files that could not be read (they are left out of the snapshot)."""
    from .snapshot.run import take_snapshot

    return take_snapshot(snapshot_roots(venv, site_packages, model_dirs), output, jobs=jobs or default_jobs(),
                         progress=progress)


def _python_target(root: Root, named: Target) -> Target:
    from .snapshot.run import RootKind

    if root.path == named.venv or root.path in named.site_packages:
        return named
    return resolve_target(root.path) if root.kind is RootKind.VENV else resolve_target(None, [root.path])


@_without_cyclic_gc
def diff(snapshot_path: str, venv: str | None = None, site_packages: Sequence[str] = (),
         model_dirs: Sequence[str] = (), *, jobs: int | None = None, deep: bool = False, progress=None,
         inspect: bool = True, select: Sequence[str] = (), ignore: Sequence[str] = (),
         rules_modules: Sequence[str] = (), plugins: bool = True, use_cache: bool = True) -> Report:
    """Drift against a snapshot, in the audit's report format. Naming roots limits the diff to them.

    ``use_cache``: files whose size, mtime and mode match the snapshot are settled without hashing
    (``summary.trusted_by_signature`` counts them) and RECORDs come from the parse cache; False
    (``--no-cache``) hashes every file and parses every RECORD."""
    import tempfile

    from .modeldir.remedies import with_remedies
    from .snapshot.run import RootKind, attach_ownership, diff_root, load_snapshot

    started = time.perf_counter()
    wanted = {os.path.abspath(p) for p in model_dirs}
    target = NO_PYTHON
    if venv is not None or site_packages:
        target = resolve_target(venv, tuple(site_packages))
        wanted |= {target.venv} if target.venv else set(target.site_packages)
    with tempfile.TemporaryDirectory(prefix="driftscan-diff-") as work:
        roots = load_snapshot(snapshot_path, work, use_cache=use_cache)
        chosen = [(r, m, man) for r, m, man in roots if not wanted or r.path in wanted]
        if wanted - {r.path for r, _, _ in chosen}:
            missing = sorted(wanted - {r.path for r, _, _ in chosen})
            raise TargetError(f"{missing[0]}: not in the snapshot {snapshot_path}")
        results = [diff_root(r, m, man, jobs=jobs or default_jobs(), deep=deep, progress=progress, trust=use_cache)
                   for r, m, man in chosen]
    checks: list = []
    dists: list = []
    for (root, _, _), result in zip(chosen, results):
        if root.kind is RootKind.MODEL_DIR:
            checks += with_remedies(result)
            continue
        # Files of a Python root are judged like audit's: RECORD decides package or environment scope.
        python = _python_target(root, target)
        target = python if target is NO_PYTHON else target
        containment = containment_for(python, tuple(c for c in (default_uv_cache(),) if c))
        cache = StatCache.for_target(python.venv or "\0".join(python.site_packages)) if use_cache else None
        # RECORD rows only to attribute drift: an unchanged root needs the names and versions alone.
        metadirs = list(find_distributions(python.site_packages, cache=cache, containment=containment,
                                           records=bool(result.checks)))
        if cache is not None:
            cache.save()  # only the RECORD parses changed: the file audit keeps them in
        dists += [md.distribution for md in metadirs if md.distribution is not None]
        if result.checks:
            checks += attach_ownership(result.checks, build_ownership(metadirs, containment), python.site_packages)
    verification = Verification(
        target=target, distributions=tuple(dists), checks=tuple(checks),
        files_checked=sum(r.files_checked for r in results),
        unverifiable=tuple(u for r in results for u in r.unverifiable),
        errors=tuple(e for r in results for e in r.errors))
    skipped: list = []
    if inspect:  # the same rules as audit's, so one file gets the same findings from both
        verification, skipped = _inspect(verification, jobs, select, ignore, rules_modules, plugins, use_cache)
    from .core.values import DriftKind
    from .snapshot.run import restored_drift

    drifts = [restored_drift(check) if check.kind is DriftKind.RESTORED else classify(check, target)
              for check in verification.checks]
    from .report.contract import build_report

    return build_report(verification, drifts, time.perf_counter() - started,
                        model_dirs=[r.path for r, _, _ in chosen if r.kind is RootKind.MODEL_DIR],
                        skipped=skipped, not_hashed=sum(r.large_files_unread for r in results),
                        trusted_by_signature=sum(r.trusted for r in results))


def _held_run(venv, site_packages, model_dirs, *, wheels, fetch, uv_cache, jobs, use_cache, hf_cache=None,
              select=(), ignore=(), rules_modules=(), plugins=True, include_environment=False) -> Run:
    # A model directory or a hub cache alone names no environment (as in run()).
    named = venv is not None or bool(site_packages) or not (model_dirs or hf_cache is not None) \
        or include_environment
    target = resolve_target(venv, tuple(site_packages)) if named else NO_PYTHON
    options = pristine_options(target, wheels, fetch, uv_cache)
    return run(venv, site_packages, jobs=jobs, uv_cache=uv_cache, use_cache=use_cache, model_dirs=model_dirs,
               hf_cache=hf_cache, select=select, ignore=ignore, rules_modules=rules_modules, plugins=plugins,
               pristine=options, hold_originals=True, include_environment=include_environment)


def checkpoint(output: str, venv: str | None = None, site_packages: Sequence[str] = (),
               model_dirs: Sequence[str] = (), *, wheels: Sequence[str] = (), fetch: bool = False,
               uv_cache: str | None = None, jobs: int | None = None, use_cache: bool = True,
               max_copy: int | None = None, hf_cache: str | None = None):
    """Save every drift (environment and model directories) as a restorable checkpoint at ``output``
    (a new directory outside the audited trees). ``hf_cache``: also every repository of that Hugging
    Face cache ("" = the default one). Returns ``checkpoint.Written``; ``Written.index.partial``
    says whether a modified package file lacks both an original and a patch."""
    from .reinstall.checkpoint import DEFAULT_MAX_COPY, write_checkpoint

    result = _held_run(venv, site_packages, model_dirs, wheels=wheels, fetch=fetch, uv_cache=uv_cache, jobs=jobs,
                       use_cache=use_cache, hf_cache=hf_cache)
    try:
        return write_checkpoint(output, result.target, result.drifts, result.report, result.originals,
                                [r.root for r in result.model_dirs], max_copy or DEFAULT_MAX_COPY)
    finally:
        if result.originals is not None:
            result.originals.close()


def _refuse_writing_inside(venv, site_packages, model_dirs=(), hf_cache=None, checkpoint=None) -> None:
    """Before anything is audited or written (``restore``, ``reapply``): every root the run reads
    or writes — the venv and site-packages named, the environment root a site-packages resolves
    to (wider than the path given), each model directory and the hub cache — must not hold
    driftscan's cache, nor (``checkpoint``: where ``--yes`` writes its checkpoint) the checkpoint.
    One ConfigError naming both, nothing written."""
    from .caches.location import refuse_inside
    from .core.errors import ConfigError
    from .environment.target import environment_roots

    roots = [venv or "", *site_packages, *model_dirs]
    if hf_cache is not None:
        from .modeldir.hfcache import default_hf_cache

        roots.append(hf_cache or default_hf_cache())
    if venv is not None or site_packages:
        roots.extend(environment_roots(resolve_target(venv, tuple(site_packages))))
    roots = [r for r in dict.fromkeys(roots) if r]
    refuse_inside(roots)
    if checkpoint is not None:
        dest = os.path.realpath(checkpoint)
        for root in roots:
            real = os.path.realpath(root)
            if dest == real or dest.startswith(real.rstrip(os.sep) + os.sep):
                raise ConfigError(f"{os.path.abspath(checkpoint)}: inside the audited tree {root}; a checkpoint "
                                  "is written outside it")


def restore(venv: str | None = None, site_packages: Sequence[str] = (), *, dists: Sequence[str] = (),
            paths: Sequence[str] = (), wheels: Sequence[str] = (), fetch: bool = False, uv_cache: str | None = None,
            yes: bool = False, remove_added: bool = False, checkpoint_path: str | None = None,
            model_dirs: Sequence[str] = (), jobs: int | None = None, use_cache: bool = True, progress=None,
            max_copy: int | None = None, hf_cache: str | None = None):
    """Restore package-scope drift from verified originals: a dry run unless ``yes``; with
    ``yes``, a checkpoint is written first (``checkpoint_path``, default: see
    ``checkpoint.default_checkpoint_path``). Returns ``restore.RestoreReport``."""
    from .reinstall.checkpoint import (DEFAULT_MAX_COPY, checkpoints_base, default_checkpoint_path, environment_root,
                             write_checkpoint)
    from .reinstall.restore import apply_restore, keep_unsaved, plan_restore, predict, refuse_unchecked

    started = time.perf_counter()
    # before the audit writes its own caches, and before anything is written
    _refuse_writing_inside(venv, site_packages, model_dirs, hf_cache,
                           (checkpoint_path or checkpoints_base()) if yes else None)
    result = _held_run(venv, site_packages, model_dirs, wheels=wheels, fetch=fetch, uv_cache=uv_cache, jobs=jobs,
                       use_cache=use_cache, include_environment=True, hf_cache=hf_cache)
    originals = result.originals
    try:
        assert originals is not None
        planned = plan_restore(result.target, result.drifts, result.verification.distributions, originals,
                               names=dists, paths=paths, remove_added=remove_added)
        report = planned.report
        report.errors = [f"{e.path}: {e.message}" for e in result.report.errors]
        refuse_unchecked(planned, result.report.errors, environment_root(result.target))
        if yes and planned.planned:
            written = write_checkpoint(checkpoint_path or default_checkpoint_path(result.target), result.target,
                                       result.drifts, result.report, originals, [r.root for r in result.model_dirs],
                                       max_copy=max_copy or DEFAULT_MAX_COPY)
            report.checkpoint = written.path
            if written.index.partial:
                report.notes.append(f"the checkpoint is partial: {len(written.index.incomplete)} modified package "
                                    "file(s) saved without an original or a patch (reapply cannot tell their fix from "
                                    "debug code); to complete it: " + " ; ".join(written.index.complete_with))
            keep_unsaved(planned, written.index)
            apply_restore(planned, environment_root(result.target) or "", progress)
        elif yes:
            report.dry_run = False
        else:  # the dry run lists exactly what --yes would write, and what it would not
            predict(planned, max_copy or DEFAULT_MAX_COPY, environment_root(result.target))
            if planned.planned:
                report.checkpoint_in = os.path.abspath(checkpoint_path) if checkpoint_path else checkpoints_base()
        report.duration_seconds = round(time.perf_counter() - started, 3)
        return report
    finally:
        if originals is not None:
            originals.close()


def reapply(checkpoint_dir: str, venv: str | None = None, site_packages: Sequence[str] = (), *,
            only: Sequence[str] = (), exclude_findings: bool = True, keep_findings: bool = False,
            yes: bool = False, checkpoint_path: str | None = None, jobs: int | None = None,
            use_cache: bool = True, partial: bool = False, wheels: Sequence[str] = (), fetch: bool = False):
    """Re-apply a checkpoint's patches (recreate its added files, delete again the package files it
    recorded as missing) onto the environment: by default the one the checkpoint was taken of. A
    dry run unless ``yes``; with ``yes`` a new checkpoint of the current drift is written first.
    Injected debug code is left out (``exclude_findings``, the default) unless ``keep_findings``
    (or ``exclude_findings=False``): then the report lists every finding written back.
    ``partial``: a file with conflicting hunks gets its clean ones, the others go to a ``.rej``
    beside the checkpoint. ``wheels``/``fetch``: where to find the originals the checkpoint lacks.
    Returns ``reapply.ReapplyReport``."""
    from .reinstall.checkpoint import default_checkpoint_path, environment_root, load_index, write_checkpoint
    from .reinstall.reapply import apply_reapply, plan_reapply

    started = time.perf_counter()
    index = load_index(checkpoint_dir)
    from_checkpoint = venv is None and not site_packages
    if from_checkpoint:
        venv, site_packages = index.venv, (() if index.venv else tuple(index.site_packages))
        if venv is None and not site_packages:
            raise TargetError(f"{checkpoint_dir}: the checkpoint names no environment; pass --venv")
    from .reinstall.checkpoint import checkpoints_base

    # before the audit writes its own caches, and before anything is written
    _refuse_writing_inside(venv, site_packages, checkpoint=(checkpoint_path or checkpoints_base()) if yes else None)
    result = _held_run(venv, site_packages, (), wheels=wheels, fetch=False, uv_cache=None, jobs=jobs,
                       use_cache=use_cache, include_environment=True)
    try:
        plan = plan_reapply(os.path.abspath(checkpoint_dir), index, result.target, result.verification.distributions,
                            only=only, exclude_findings=exclude_findings, keep_findings=keep_findings,
                            partial=partial, wheels=wheels, fetch=fetch, from_checkpoint=from_checkpoint)
        if yes and plan.writes:
            written = write_checkpoint(checkpoint_path or default_checkpoint_path(result.target), result.target,
                                       result.drifts, result.report, result.originals)
            plan.report.checkpoint = written.path
            apply_reapply(plan, environment_root(result.target) or "")
        elif yes:
            plan.report.dry_run = False
        plan.report.duration_seconds = round(time.perf_counter() - started, 3)
        return plan.report
    finally:
        if result.originals is not None:
            result.originals.close()


def _run_command(argv: Sequence[str], stdout: int | None, env: dict[str, str] | None = None) -> tuple[int, str | None]:
    """Run ``argv`` (no shell) with the terminal's stdin and stderr, stdout to ``stdout`` when given;
    (its exit status as a shell reports it — 128+N when killed by signal N, 127 not found, 126 not
    runnable —, why it did not start). Ctrl-C goes to the command, which decides; guard waits."""
    import signal
    import subprocess
    import threading

    try:
        proc = subprocess.Popen(list(argv), stdout=stdout, env=env)  # the environment guard read it with
    except FileNotFoundError:
        return 127, f"{argv[0]}: command not found"
    except PermissionError:
        return 126, f"{argv[0]}: permission denied"
    except OSError as exc:
        return 126, f"{argv[0]}: cannot run it ({exc.strerror or exc})"
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        code = proc.wait()
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    return (128 - code if code < 0 else code), None


def _expectations_now(expect: str, result: Run, placeholders: dict[str, str]) -> list[tuple[bool | None, str]]:
    """Each expectation of ``expect`` judged on the files as they are (``result``: a full audit of them)."""
    from .reinstall.expect import evaluate, load_expectations
    from .fs.reader import read_regular
    from .reinstall.plan import EXPECT_MAX

    drifted = {os.path.normpath(c.path) for c in result.verification.checks}
    roots = [r.root for r in result.model_dirs if r.kind is not LayoutKind.UNKNOWN]
    out: list[tuple[bool | None, str]] = []
    for exp in load_expectations(expect, placeholders):
        path = os.path.normpath(exp.file)
        known = path in result.verification.referenced or any(path.startswith(r.rstrip(os.sep) + os.sep)
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


def _valid_source(source: str) -> str:
    if source == "index":
        return source
    path = os.path.abspath(source)
    if source.endswith(".whl") and os.path.isfile(path):
        return path
    if os.path.isdir(path):
        return path
    raise TargetError(f"--from {source}: not a wheel file, a directory, or 'index'")


def _command_source(recognised, command: Sequence[str], cwd: str | None) -> tuple[str | None, str, str | None]:
    """(the source the command itself names, why, a note) — a wheel file it names that is missing is an
    error in the user's own words (the command would fail); a missing --find-links directory is
    ignored by pip and uv (with a warning), so the predictions are for the sources the
    distributions were installed from, and a note says so."""
    from .reinstall.guard import missing_source

    missing = missing_source(recognised, command, cwd)
    if missing is None:
        return recognised.source, recognised.source_why, None
    if missing.wheel:
        raise TargetError(f"the command's wheel file {missing.word}: {missing.why}; nothing was run (the command "
                          "would fail)")
    return None, "the command's --find-links directory is missing", (
        f"the command's --find-links directory {missing.word}: {missing.why} (pip and uv ignore it); the "
        "predictions are for the source each distribution was installed from")


def guard(command: Sequence[str], venv: str | None = None, site_packages: Sequence[str] = (), *,
          model_dirs: Sequence[str] = (), hf_cache: str | None = None, source: str | None = None,
          checkpoint_path: str | None = None, expect: str | None = None, wheels: Sequence[str] = (),
          fetch: bool = False, uv_cache: str | None = None, jobs: int | None = None, use_cache: bool = True,
          force: bool = False, select: Sequence[str] = (), ignore: Sequence[str] = (),
          rules_modules: Sequence[str] = (), plugins: bool = True, chosen_because: str | None = None,
          command_stdout: int | None = None, on_event=None, env: dict[str, str] | None = None,
          cwd: str | None = None):
    """Audit and predict for ``command`` (an install: pip, uv, conda, pixi; anything else is
    predicted ``may_survive``), write a whole checkpoint, refuse to start a command that would
    bring debug code back or that the checkpoint cannot undo (unless ``force``), run it (no shell;
    its stdout to ``command_stdout`` when given), audit again and say, per drift, whether the
    prediction held. ``on_event(text)`` hears each step before the command runs.
    Returns ``guard.GuardReport``; ``guard.exit_status`` gives its exit status."""
    import shlex

    from .reinstall.checkpoint import check_destination, default_checkpoint_path, environment_root
    from .core.errors import DriftscanError
    from .core.values import MetadataKind
    from .reinstall.guard import (GuardCommand, GuardReport, Refusal, Tool, checkpoint_summary, debug_comes_back,
                        expectations, fingerprints, judge, leftovers, new_drifts, normalize, not_run,
                        other_environment, predict, recognise, reapply_line, reinstalled, summarise, unchecked,
                        versions)

    started = time.perf_counter()
    say = on_event or (lambda text: None)
    if not command:
        raise TargetError("guard needs a command after --")
    target = resolve_target(venv, tuple(site_packages))
    if venv is None and not site_packages:  # the running interpreter's: named, so model directories add to it
        venv, site_packages = target.venv, (() if target.venv else target.site_packages)
    root = environment_root(target)
    recognised = recognise(command, env, cwd)
    chosen_source, source_why, source_note = (_valid_source(source), "--from", None) if source is not None else \
        _command_source(recognised, command, cwd)
    models = model_dir_paths(model_dirs, hf_cache)
    metadirs = find_distributions(target.site_packages, records=False)
    installed = {normalize(md.distribution.name): md.distribution.version for md in metadirs
                 if md.distribution is not None and md.distribution.kind is not MetadataKind.EGG_LINK}
    sure, maybe = reinstalled(recognised, installed)
    installer = {Tool.PIP: "pip", Tool.UV_PIP: "uv", Tool.UV_SYNC: "uv"}.get(recognised.tool)
    originals_in = [*wheels, *recognised.wheel_dirs]  # the command's own wheels are originals too (verified)
    dest = check_destination(checkpoint_path or default_checkpoint_path(target),
                             [r for r in (root, *target.site_packages, *models) if r])
    say(f"target: {root or ', '.join(target.site_packages)}" + (f" ({chosen_because})" if chosen_because else "")
        + "".join(f" + model directory {m}" for m in models))  # they add to the environment, as everywhere
    notes = list(recognised.notes) + ([source_note] if source_note else [])
    say("command: " + (f"{recognised.tool.value}, reinstalls {', '.join([*sure, *maybe]) or 'nothing installed'}"
                       f", source {chosen_source or 'as installed'}" if recognised.recognised
                       else "not recognised: every drift may survive it"))
    planned = plan([*sure, *maybe], venv, site_packages, installer=installer, expect=expect, jobs=jobs,
                   uv_cache=uv_cache, use_cache=use_cache, model_dirs=models, include_environment=True,
                   pristine=pristine_options(target, originals_in, fetch, uv_cache), select=select, ignore=ignore,
                   rules_modules=rules_modules, plugins=plugins, source=chosen_source)
    predicted = predict(planned, recognised, sure, maybe, source is not None)
    report = GuardReport(
        target=root or ", ".join(target.site_packages), chosen_because=chosen_because,
        command=GuardCommand(argv=list(command), tool=recognised.tool.value, recognised=recognised.recognised,
                             requested=sorted({r.name for r in recognised.requested}), reinstalls=[*sure, *maybe],
                             forced=recognised.forced, no_deps=recognised.no_deps, source=chosen_source,
                             source_why=source_why,
                             from_given=source is not None, environment=recognised.environment,
                             environment_unsure=recognised.environment_unsure or None, notes=notes),
        ran=False, notes=[f"unnamed requirement: {u}" for u in recognised.unnamed])
    report.errors += [f"before: {e.path}: {e.message}" for e in planned.audit.errors]
    counts = {s: sum(1 for p in predicted if p.status == s) for s in ("WIPED", "SURVIVES", "MAY SURVIVE")}
    say(f"predictions: {counts['WIPED']} wiped, {counts['SURVIVES']} survive, {counts['MAY SURVIVE']} may survive")
    refusals = [r for r in (other_environment(recognised, target.venv or root),) if r is not None]
    refusals += debug_comes_back(predicted, planned, sure, recognised, uv_cache)

    def refuse() -> GuardReport:
        report.refused = refusals
        report.predictions = not_run(predicted)
        summarise(report)
        report.duration_seconds = round(time.perf_counter() - started, 3)
        return report

    if refusals and not force:
        return refuse()
    written = checkpoint(dest, venv, site_packages, models, wheels=originals_in, fetch=fetch, uv_cache=uv_cache,
                         jobs=jobs, use_cache=use_cache)
    report.checkpoint = checkpoint_summary(written.path, written.index, written.problems, predicted)
    say(f"checkpoint: {written.path}" + (" (partial)" if report.checkpoint.partial else ""))
    if report.checkpoint.at_risk:
        lacking = report.checkpoint.at_risk
        refusals.append(Refusal(reason=(f"the checkpoint is partial: {len(lacking)} file(s) the command may wipe "
                                        "that it could not bring back "
                                        f"({'; '.join(lacking[:5])}{' …' if len(lacking) > 5 else ''})"),
                                command=report.checkpoint.complete_with[0] if report.checkpoint.complete_with
                                else None))
    if refusals and not force:
        return refuse()
    report.refused, report.forced = refusals, bool(refusals)
    before = fingerprints(predicted, planned)
    say(f"running: {shlex.join(command)}")
    t0 = time.perf_counter()
    code, why = _run_command(command, command_stdout, env)
    report.command_seconds = round(time.perf_counter() - t0, 3)
    report.ran, report.exit_code = True, code
    if why:
        report.notes.append(why)
    judged = code == 0
    if not judged:
        report.notes.append(f"the command failed (exit {code}): the predictions were for a command that completes, "
                            "so none is held to what happened; each drift's outcome is listed")
    # After a failed command the environment may be half installed: what reapply would write there
    # is unknown, so no line that writes is offered — only its dry run, for once it is whole again.
    line = reapply_line(written.path, written.index, target.venv, target.site_packages, yes=judged)
    report.reapply, report.reapply_dry_run = (line, None) if judged else (None, line)
    try:
        after = run(venv, site_packages, jobs=jobs, uv_cache=uv_cache, use_cache=use_cache, model_dirs=models,
                    select=select, ignore=ignore, rules_modules=rules_modules, plugins=plugins, compare=False,
                    include_environment=True, report_only=expect is None)
    except (DriftscanError, OSError) as exc:  # the command ran: say what is known, never lose the report
        report.errors.append(f"after: the audit after the command could not run: {exc}")
        report.predictions = unchecked(predicted, f"the audit after the command could not run: {exc}")
        summarise(report)
        report.duration_seconds = round(time.perf_counter() - started, 3)
        return report
    report.predictions = judge(predicted, before, after.report, judged)
    asked = {r.name for r in recognised.requested} | set(sure) | set(maybe)
    report.versions = versions(planned.audit, after.report, asked)
    report.leftovers = leftovers(planned, after.report, uv_cache)
    report.new_drifts = new_drifts(planned.audit, after.report)
    if expect:
        placeholders = {"venv": target.venv or "",
                        "site_packages": target.site_packages[0] if target.site_packages else ""}
        report.expectations = expectations(planned, _expectations_now(expect, after, placeholders), judged,
                                           predicted, recognised.recognised)
    report.errors += [f"after: {e.path}: {e.message}" for e in after.report.errors]
    summarise(report)
    report.duration_seconds = round(time.perf_counter() - started, 3)
    return report
