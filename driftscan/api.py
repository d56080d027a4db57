"""The library entry points: ``audit()`` and ``plan()`` wire discover → verify → classify → report."""

from __future__ import annotations

import dataclasses
import functools
import gc
import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from .caches.location import refuse_inside
from .core.errors import ConfigError, DriftscanError, TargetError
from .core.units import count
from .core.values import Drift, LayoutKind, MetadataKind, Problem, Target, Verification
from .environment import find_distributions, resolve_target
from .environment.reinstall_source import parse_source
from .environment.target import environment_roots
from .environment.uv.cache import default_uv_cache
from .fs.reader import inside
from .pipeline.options import AuditOptions, AuditSettings, Need, OriginalSources, RuleSelection, options_of
from .pipeline.stages import NO_PYTHON, Progress, execute, model_dir_paths, pristine_options
from .procs import ProcsReport, environment_of, scan as scan_processes
from .procs.compilecache import CacheDir, default_cache_dirs, scan_compile_caches
from .procs.recorded import RuntimeRecords
from .procs.model import RestartOut
from .procs.restart import running_of, scan_if_possible, stale_of
from .report.policy import EXIT_INCOMPLETE

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .modeldir import ModelDirResult
    from .pristine import PristineSet
    from .pristine.release import ReleaseWheel
    from .patches.apply import Source
    from .patches.export import PatchExport
    from .patches.manifest import Entry
    from .patches.rebase import PatchRebase
    from .reinstall.checkpoint import Written
    from .reinstall.guard import GuardReport
    from .reinstall.plan import PatchLookup, Plan
    from .reinstall.reapply import ReapplyReport
    from .reinstall.restore import RestoreReport
    from .report.contract import Report

# Model directories, snapshots and Hugging Face caches are imported where used: an audit of a
# venv alone should not pay for them at start-up (tests/contract/test_imports.py keeps it so).

P = ParamSpec("P")
R = TypeVar("R")

__all__ = ["AuditOptions", "Invocation", "NO_PYTHON", "Need", "Run", "add_processes", "audit", "checkpoint", "diff", "guard",
           "model_dir_paths", "patch_export", "patch_rebase", "patch_rebase_abort", "patch_rebase_continue", "plan",
           "pristine_options", "reapply", "restore", "run", "snapshot"]


def _without_cyclic_gc(func: Callable[P, R]) -> Callable[P, R]:
    """An audit allocates a few hundred thousand small acyclic objects; the cyclic collector's
    repeated passes over them cost a tenth of a warm audit and free nothing. Paused for the call,
    restored after (a host program's own setting included)."""
    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
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
    """One pass of the pipeline, kept whole for commands that need more than the report. With
    ``Need.ORIGINALS`` it holds the originals found open: use it as a context manager."""

    target: Target
    verification: Verification
    drifts: list[Drift]
    report: Report
    model_dirs: tuple[ModelDirResult, ...] = ()
    pristine: tuple[Any, ...] = ()  # pristine.Lookup: where each drifted distribution's originals came from
    originals: PristineSet | None = None  # open with Need.ORIGINALS: closed by close() or the with block

    def close(self) -> None:
        if self.originals is not None:
            self.originals.close()

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _options(venv: str | None, site_packages: Sequence[str], options: AuditOptions | None,
             settings: AuditSettings) -> AuditOptions:
    if options is None:
        return options_of(venv, site_packages, **settings)
    if settings or venv is not None or site_packages:
        raise TypeError("give either options or the targets and settings as keywords, not both")
    return options


@_without_cyclic_gc
def run(venv: str | None = None, site_packages: Sequence[str] = (), *, options: AuditOptions | None = None,
        need: Need = Need.CHECKS, progress: Progress | None = None, **settings: Unpack[AuditSettings]) -> Run:
    """One pass of the pipeline (``pipeline/stages.py``) on ``options`` — or on the targets and
    settings given as keywords (``AuditSettings``: ``jobs``, ``uv_cache``, ``model_dirs``, ``select``,
    ``compare``, ``wheels`` ...). Naming any target (a venv, site-packages, a model directory, a
    Hugging Face cache) replaces the default, the running environment, unless
    ``include_environment``. ``need`` says what the caller reads: ``Need.REPORT`` lets the clean
    index settle an unchanged clean environment (``Run.verification`` then lists distributions
    without their RECORD entries); ``Need.ORIGINALS`` keeps the originals found open (close the Run)."""
    state = execute(_options(venv, site_packages, options, settings), need, progress)
    assert state.report is not None
    return Run(state.target, state.verification, list(state.drifts), state.report, state.model_results,
               state.lookups, state.originals)


def add_processes(result: Run) -> Report:
    """``audit --processes``: ``result``'s report with ``processes``, the scan of /proc for the
    audited environment (docs/procs.md) run now, after the audit; where there is no /proc, or no
    environment was audited, a note says why instead."""
    from .report.contract import ErrorOut  # loaded already: the report is built

    report = result.report
    if not result.target.site_packages:
        report.notes.append(ErrorOut(path="/proc", message="processes not checked: no environment was audited"))
        return report
    scanned, why = scan_if_possible(environment_of(result.target))
    if scanned is None:
        report.notes.append(ErrorOut(path="/proc", message=why or ""))
    report.processes = scanned
    return report


def _restart_needed(target: Target, notes: list[str], *, running: bool = False) -> list[RestartOut] | None:
    """After a command wrote ``target``: its processes that still run the old code (``running``:
    before a reinstall, every process that runs it). None, and a note, where there is no /proc."""
    try:
        scanned, why = scan_if_possible(environment_of(target))
    except (DriftscanError, OSError) as exc:  # after the writes: say so, never lose what was done
        notes.append(f"processes not checked: {exc}")
        return None
    if scanned is None:
        notes.append(why or "")
        return None
    notes += [f"processes: {e}" for e in scanned.errors]
    return running_of(scanned) if running else stale_of(scanned)


def audit(venv: str | None = None, site_packages: Sequence[str] = (), *, options: AuditOptions | None = None,
          processes: bool = False, **settings: Unpack[AuditSettings]) -> Report:
    """Audit an environment and/or model directories. With no target, the environment driftscan
    runs in.

    ``venv`` (a virtual environment's directory) or ``site_packages`` (bare directories) name the
    environment; its interpreter is never run. ``options`` is a whole ``AuditOptions``; else the
    keywords, the same as the command line's options:

    - ``jobs``: parallel hashing workers (default: the cores).
    - ``use_cache=False``: re-hash every file (``--no-cache``; see ``driftscan.caches.statcache``
      for what the cache trusts).
    - ``uv_cache``: uv's cache directory (default: ``UV_CACHE_DIR`` or uv's own).
    - ``installer``: "pip" or "uv", the installer remedies name (default: each distribution's INSTALLER).
    - ``model_dirs``: model directories to audit (``--model-dir``); ``hf_cache``: a Hugging Face
      cache whose every repository is audited ("" = the default cache); ``include_environment``:
      audit the environment too when model directories are named; ``deep``: hash large weight
      files too (by default presence, size and mtime); ``revision``: the ref or commit model
      directories are compared against; ``manifest``: a driftscan manifest to compare against.
    - ``select`` / ``ignore``: rule codes, prefixes or names; ``rules_modules``: modules of rules
      to load; ``plugins=False``: leave out the ``driftscan.rules`` entry points.
    - ``compare=False``: look for no originals (``--no-pristine``: no diffs, no finding origins);
      ``wheels``: directories of wheels to take originals from (``--wheels``); ``fetch=True``:
      allow ``pip download`` of originals found nowhere else (``--fetch``, the only network use).
    - ``accept``: a configuration's accepted-drift entries, marked in the report;
      ``accept_source``: the file they came from, named in the report.
    - ``chosen_because``: why this target was chosen, said in the report's target.
    - ``locks``: lockfiles (``uv.lock``, ``pylock.toml``, ``pdm.lock``, ``poetry.lock``,
      requirements with ``--hash``) the environment must match (``--lock``): a distribution of
      another version or source, or one missing or extra, is ``lock-mismatch``; the wheel each
      lock names by digest, when found, has its own RECORD compared with the installed one
      (``record-rewritten``, ``Report.provenance``).
      ``lock_groups``: dependency groups the install took besides each lock's default one
      (``--lock-group``): their packages are required too.

    - ``processes=True``: add the processes that run the environment and whether they run what is
      on disk (``Report.processes``, docs/procs.md).

    ``driftscan.exit_status(report, fail_on=...)`` gives the command line's verdict on the report.

    Raises ``TargetError`` when the target does not exist or is not an environment; every
    problem met while auditing a valid target is listed in ``Report.errors`` instead.
    """
    result = run(options=_options(venv, site_packages, options, settings), need=Need.REPORT)
    return add_processes(result) if processes else result.report


def plan(reinstall: Sequence[str], venv: str | None = None, site_packages: Sequence[str] = (), *,
         options: AuditOptions | None = None, expect: str | None = None, source: str | None = None,
         checkpoint: str | None = None, processes: bool = True, patches: Source | None = None,
         versions_after: Mapping[str, str | None] | None = None, **settings: Unpack[AuditSettings]) -> Plan:
    """What reinstalling ``reinstall`` (distribution names) undoes and what survives it.
    ``processes``: list the processes that run the environment, to restart after the reinstall
    (``restart_after_reinstall``; False: not looked for, as ``guard`` does, which scans after its command).

    ``installer`` ("pip" or "uv", a setting) asks "what if I used this installer"; by default each
    distribution's own INSTALLER decides. ``expect`` is a TOML file of expectations.
    ``source`` is what ``plan --from`` takes: a path to a ``.whl``, a directory of wheels
    (find-links), or the literal ``"index"``; None: each distribution's source as installed
    (direct_url.json, INSTALLER, uv's cache). ``checkpoint``: a checkpoint directory already
    taken; the plan then asks for a checkpoint first only for wiped content it does not hold.
    ``patches``: the team's patches (``driftscan.patches.apply.Source``): each reinstalled
    distribution's patch predicted re-applied by ``driftscan patch apply``, or unused on the version
    after (``versions_after``: normalized name -> the version the command installs, None: not
    known; default: the installed one, or the ``--from`` wheel's).
    """
    # Each writing command imports what it drives when it runs: the reinstall modules pull in
    # pydantic's models and the pristine package (130-190 ms, python -X importtime), which
    # `driftscan audit` never needs.
    from .reinstall import checkpoint as checkpoints, expect as expecting, plan as plans

    told = parse_source(source) if source is not None else None
    chosen = _options(venv, site_packages, options, settings)
    with run(options=chosen, need=Need.ORIGINALS) as result:
        verified_roots = [r.root for r in result.model_dirs if r.kind is not LayoutKind.UNKNOWN]

        def referenced(path: str) -> bool:
            return path in result.verification.referenced or any(
                path.startswith(root.rstrip(os.sep) + os.sep) for root in verified_roots)

        target = result.target
        placeholders = {"venv": target.venv or "",
                        "site_packages": target.site_packages[0] if target.site_packages else ""}
        expectations = expecting.load_expectations(expect, placeholders) if expect else []
        held = checkpoints.held_by(checkpoint, result.drifts) if checkpoint is not None else None
        audited = plans.Audited(result.report, result.drifts, target, result.verification.distributions, referenced,
                                result.originals, [r.root for r in result.model_dirs])
        built = plans.build_plan(audited, reinstall, chosen.installer, expectations,
                                 chosen.cache.uv_cache or default_uv_cache(), source=told, held=held,
                                 checkpoint_dir=checkpoints.suggested_path(target),
                                 patches=_patch_lookup(patches) if patches is not None else None,
                                 versions_after=versions_after)
    if processes and target.site_packages:
        from .report.contract import ErrorOut  # loaded already: the plan holds the report

        notes: list[str] = []
        built.restart_after_reinstall = _restart_needed(target, notes, running=True)
        built.audit.notes += [ErrorOut(path="/proc", message=n) for n in notes]
    return built


def _patch_lookup(source: Source) -> PatchLookup:
    """The team's patches as plan sees them: the manifest's match, by patch file name."""
    from .patches.manifest import match  # packaging's specifiers: only with patches
    from .reinstall.plan import PatchLookup  # pydantic's models: loaded already by plan and guard

    def matched(name: str, version: str) -> str | None:
        entry = match(source.entries, name, version)
        return entry.shown if entry is not None else None

    return PatchLookup(matched, manifest=source.manifest, directory=source.directory)


@_without_cyclic_gc
def snapshot(output: str, venv: str | None = None, site_packages: Sequence[str] = (),
             model_dirs: Sequence[str] = (), *, jobs: int | None = None,
             progress: Progress | None = None) -> list[Problem]:
    """Record every file of the named roots (default: the running environment) into ``output``.
    Returns the files that could not be read (they are left out of the snapshot)."""
    from .pipeline.snapshots import take  # the snapshot's walk and model-directory code: only here

    return take(output, venv, site_packages, model_dirs, jobs=jobs, progress=progress)


@_without_cyclic_gc
def diff(snapshot_path: str, venv: str | None = None, site_packages: Sequence[str] = (), *,
         options: AuditOptions | None = None, progress: Progress | None = None, inspect: bool = True,
         **settings: Unpack[AuditSettings]) -> Report:
    """Drift against a snapshot, in the audit's report format. Naming roots limits the diff to them.

    ``use_cache``: files whose size, mtime and mode match the snapshot are settled without hashing
    (``summary.trusted_by_signature`` counts them) and RECORDs come from the parse cache; False
    (``--no-cache``) hashes every file and parses every RECORD."""
    from .pipeline.snapshots import diff_against  # as for snapshot()

    return diff_against(snapshot_path, _options(venv, site_packages, options, settings), progress, inspect)


def checkpoint(output: str, venv: str | None = None, site_packages: Sequence[str] = (), *,
               options: AuditOptions | None = None, max_copy: int | None = None,
               **settings: Unpack[AuditSettings]) -> Written:
    """Save every drift (environment and model directories) as a restorable checkpoint at ``output``
    (a new directory outside the audited trees). ``hf_cache``: also every repository of that Hugging
    Face cache ("" = the default one). Returns ``checkpoint.Written``; ``Written.index.partial``
    says whether a modified package file lacks both an original and a patch."""
    from .reinstall import checkpoint as checkpoints

    with run(options=_options(venv, site_packages, options, settings), need=Need.ORIGINALS) as result:
        return checkpoints.write_checkpoint(output, result.target, result.drifts, result.report, result.originals,
                                            [r.root for r in result.model_dirs],
                                            max_copy or checkpoints.DEFAULT_MAX_COPY)


def patch_export(output: str, venv: str | None = None, site_packages: Sequence[str] = (), *,
                 distributions: Sequence[str] = (), include_debug: bool = False, force: bool = False,
                 pin: str | None = None, options: AuditOptions | None = None,
                 **settings: Unpack[AuditSettings]) -> PatchExport:
    """Write ``output/<dist>@<version>.patch`` for each distribution named (all with package drift
    when none): its modified files diffed against their verified originals, its added files as new
    ones, its missing ones as deletions, injected debug code left out unless ``include_debug``
    (docs/patches.md). A different file already there is kept unless ``force``. ``pin``: a
    manifest file each patch's line is written into (``patches.pin``). Returns
    ``patches.export.PatchExport``: each file's fate and each patch's manifest line."""
    from .patches import export as exporting

    with run(options=_options(venv, site_packages, options, settings), need=Need.ORIGINALS) as result:
        return exporting.export_patches(output, result.target, result.report.target,
                                        result.verification.distributions, result.drifts, result.originals,
                                        distributions, include_debug=include_debug, force=force, pin=pin)


def patch_rebase(distribution: str, to: str, entries: Sequence[Entry], *, from_version: str | None = None,
                 output: str | None = None, venv: str | None = None, site_packages: Sequence[str] = (),
                 wheels: Sequence[str] = (), fetch: bool = False, uv_cache: str | None = None,
                 force: bool = False, pin: str | None = None) -> PatchRebase:
    """Carry the patch of ``distribution`` among ``entries`` (``patches.manifest``: ``from_version``
    chooses, else the highest version below ``to``) onto ``to``, each file merged three ways with the
    wheels of both versions (``pristine.release.find_release``: ``wheels``, uv's and pip's caches,
    ``fetch``). Writes ``<output>/<dist>@<to>.patch`` (default: beside the old patch), or, with a
    conflict, the work directory ``<dist>@<to>.rebase/`` (docs/patches.md). The environment
    (``venv`` / ``site_packages``), when named, may give the old version's originals and the wheel
    tags wanted. ``pin``: a manifest file the new patch's line is written into (kept in the work
    directory for ``--continue``). Returns ``patches.rebase.PatchRebase``."""
    from packaging.utils import canonicalize_name

    from .patches import rebase as rebasing
    from .pristine import PristineOptions  # see the top: the pristine package only when a command needs it

    installed = None
    installed_site: tuple[str, ...] | None = None
    python_version = root = None
    if venv is not None or site_packages:
        target = resolve_target(venv, tuple(site_packages))
        installed_site = tuple(target.site_packages)
        python_version, root = target.python_version, target.venv
        for env_root in environment_roots(target) if output is not None else ():
            if inside(os.path.realpath(env_root), os.path.realpath(str(output))):
                raise ConfigError(f"{output}: inside the environment named ({env_root}); choose a directory outside it")
        wanted = canonicalize_name(distribution)
        installed = next((md.distribution for md in find_distributions(target.site_packages, records=False)
                          if md.distribution is not None and canonicalize_name(md.distribution.name) == wanted), None)
    options = PristineOptions(wheels=tuple(os.path.abspath(w) for w in wheels), fetch=fetch, uv_cache=uv_cache,
                              venv=root, python_version=python_version)

    def releases(name: str, version: str) -> tuple[rebasing.Release | None, list[str]]:
        from .pristine.names import same_release
        from .pristine.release import InstalledRelease, find_release  # the pristine package: only for a rebase

        def wheel() -> tuple[ReleaseWheel | None, list[str]]:
            return find_release(name, version, options, like=installed)

        # The version an upgrade already installed is its own release: its files, verified against
        # its RECORD, need no wheel (an edited one is read from the wheel).
        if installed is not None and same_release(installed, name, version) and installed_site is not None:
            from .environment.dists import read_distribution
            from .environment.target import containment_for_site_packages

            full, _ = read_distribution(installed.metadata_dir, installed.site_packages,
                                        containment_for_site_packages(installed_site))
            if full is not None and full.entries:
                return InstalledRelease(full, wheel), []
        return wheel()

    return rebasing.rebase(entries, distribution, to, releases, from_version=from_version, output_dir=output,
                           installed=installed, force=force, pin=pin)


def patch_rebase_continue(workdir: str | None = None, force: bool = False,
                          pin: str | Callable[[], str] | None = None) -> PatchRebase:
    """Write the new patch from a rebase's work directory (default: the one under ./patches) once no
    conflict marker is left in it, and remove it; pinned in the manifest the rebase was started
    with ``pin`` for, else in ``pin`` (a path, or a function that finds one). Returns
    ``patches.rebase.PatchRebase``."""
    from .config.settings import _planted  # the rule a found configuration file is read by
    from .patches import rebase as rebasing

    return rebasing.continue_rebase(workdir or rebasing.find_workdir("patches"), force=force, pin=pin,
                                    planted=_planted)


def patch_rebase_abort(workdir: str | None = None) -> PatchRebase:
    """Remove a rebase's work directory (default: the one under ./patches); nothing else is touched."""
    from .patches import rebase as rebasing

    return rebasing.abort_rebase(workdir or rebasing.find_workdir("patches"))


def _with_environment(options: AuditOptions) -> AuditOptions:
    """The environment is audited even when model directories are named (restore, reapply, guard)."""
    return dataclasses.replace(options, targets=dataclasses.replace(options.targets, include_environment=True))


def _refuse_writing_inside(options: AuditOptions, checkpoint: str | None = None) -> None:
    """Before anything is audited or written (``restore``, ``reapply``): every root the run reads
    or writes — the venv and site-packages named, the environment root a site-packages resolves
    to (wider than the path given), each model directory and the hub cache — must not hold
    driftscan's cache, nor (``checkpoint``: where ``--yes`` writes its checkpoint) the checkpoint.
    One ConfigError naming both, nothing written."""
    named = options.targets
    venv, site_packages = named.venv, named.site_packages
    roots = [venv or "", *site_packages, *named.model_dirs]
    if named.hf_cache is not None:
        from .modeldir.hfcache import default_hf_cache

        roots.append(named.hf_cache or default_hf_cache())
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


def restore(venv: str | None = None, site_packages: Sequence[str] = (), *, options: AuditOptions | None = None,
            dists: Sequence[str] = (), paths: Sequence[str] = (), yes: bool = False, remove_added: bool = False,
            checkpoint_path: str | None = None, progress: Progress | None = None, max_copy: int | None = None,
            **settings: Unpack[AuditSettings]) -> RestoreReport:
    """Restore package-scope drift from verified originals: a dry run unless ``yes``; with
    ``yes``, a checkpoint is written first (``checkpoint_path``, default: see
    ``checkpoint.default_checkpoint_path``). Returns ``restore.RestoreReport``."""
    from .reinstall import checkpoint as checkpoints, restore as restoring

    started = time.perf_counter()
    chosen = _with_environment(_options(venv, site_packages, options, settings))
    # before the audit writes its own caches, and before anything is written
    _refuse_writing_inside(chosen, (checkpoint_path or checkpoints.checkpoints_base()) if yes else None)
    base = checkpoint_path or checkpoints.checkpoints_base()
    max_copy = max_copy or checkpoints.DEFAULT_MAX_COPY
    with run(options=chosen, need=Need.ORIGINALS) as result:
        originals, target = result.originals, result.target
        assert originals is not None
        root = checkpoints.environment_root(target)
        planned = restoring.plan_restore(target, result.drifts, result.verification.distributions, originals,
                                         names=dists, paths=paths, remove_added=remove_added)
        report = planned.report
        report.errors = [f"{e.path}: {e.message}" for e in result.report.errors]
        restoring.refuse_unchecked(planned, result.report.errors, root)
        if yes and planned.planned:
            written = checkpoints.write_checkpoint(checkpoint_path or checkpoints.default_checkpoint_path(target),
                                                   target, result.drifts, result.report, originals,
                                                   [r.root for r in result.model_dirs], max_copy=max_copy)
            report.checkpoint = written.path
            if written.index.partial:
                unsaved = len(written.index.incomplete)
                report.notes.append(f"the checkpoint is partial: {count(unsaved, 'modified package file')} saved "
                                    "without an original or a patch (reapply cannot tell "
                                    f"{'its' if unsaved == 1 else 'their'} fix from debug code); to complete it: "
                                    + " ; ".join(written.index.complete_with))
            restoring.keep_unsaved(planned, written.index)
            restoring.apply_restore(planned, root or "", progress)
            report.restart_needed = _restart_needed(target, report.notes)
        elif yes:
            report.dry_run = False
        else:  # the dry run lists exactly what --yes would write, and what it would not
            restoring.predict(planned, max_copy, root)
            if planned.planned:
                report.checkpoint_in = os.path.abspath(checkpoint_path) if checkpoint_path else base
        report.duration_seconds = round(time.perf_counter() - started, 3)
        return report


def reapply(checkpoint_dir: str, venv: str | None = None, site_packages: Sequence[str] = (), *,
            options: AuditOptions | None = None, only: Sequence[str] = (), exclude_findings: bool = True,
            keep_findings: bool = False, yes: bool = False, checkpoint_path: str | None = None,
            partial: bool = False, **settings: Unpack[AuditSettings]) -> ReapplyReport:
    """Re-apply a checkpoint's patches (recreate its added files, delete again the package files it
    recorded as missing) onto the environment: by default the one the checkpoint was taken of. A
    dry run unless ``yes``; with ``yes`` a new checkpoint of the current drift is written first.
    Injected debug code is left out (``exclude_findings``, the default) unless ``keep_findings``
    (or ``exclude_findings=False``): then the report lists every finding written back.
    ``partial``: a file with conflicting hunks gets its clean ones, the others go to a ``.rej``
    beside the checkpoint. ``wheels``/``fetch``: where to find the originals the checkpoint lacks.
    Returns ``reapply.ReapplyReport``."""
    from .reinstall import checkpoint as checkpoints, reapply as reapplying

    started = time.perf_counter()
    index = checkpoints.load_index(checkpoint_dir)
    from_checkpoint = venv is None and not site_packages and options is None
    if from_checkpoint:
        venv, site_packages = index.venv, (() if index.venv else tuple(index.site_packages))
        if venv is None and not site_packages:
            raise TargetError(f"{checkpoint_dir}: the checkpoint names no environment; pass --venv")
    chosen = _with_environment(_options(venv, site_packages, options, settings))
    sources = chosen.originals
    # before the audit writes its own caches, and before anything is written
    _refuse_writing_inside(dataclasses.replace(chosen, targets=dataclasses.replace(chosen.targets, model_dirs=(),
                                                                                   hf_cache=None)),
                           (checkpoint_path or checkpoints.checkpoints_base()) if yes else None)
    # The current drift's own originals come from the wheels named; nothing is downloaded for them.
    audited = dataclasses.replace(chosen, originals=dataclasses.replace(sources, fetch=False))
    with run(options=audited, need=Need.ORIGINALS) as result:
        target = result.target
        plan = reapplying.plan_reapply(os.path.abspath(checkpoint_dir), index, target,
                                       result.verification.distributions, only=only,
                                       exclude_findings=exclude_findings, keep_findings=keep_findings,
                                       partial=partial, wheels=sources.wheels, fetch=sources.fetch,
                                       from_checkpoint=from_checkpoint)
        if yes and plan.writes:
            written = checkpoints.write_checkpoint(checkpoint_path or checkpoints.default_checkpoint_path(target),
                                                   target, result.drifts, result.report, result.originals)
            plan.report.checkpoint = written.path
            reapplying.apply_reapply(plan, checkpoints.environment_root(target) or "")
            plan.report.restart_needed = _restart_needed(target, plan.report.notes)
        elif yes:
            plan.report.dry_run = False
        plan.report.duration_seconds = round(time.perf_counter() - started, 3)
        return plan.report


def _run_command(argv: Sequence[str], stdout: int | None, env: dict[str, str] | None = None) -> tuple[int, str | None]:
    """Run ``argv`` (no shell) with the terminal's stdin and stderr, stdout to ``stdout`` when given;
    (its exit status as a shell reports it — 128+N when killed by signal N, 127 not found, 126 not
    runnable —, why it did not start). Ctrl-C goes to the command, which decides; guard waits."""
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


@dataclass(frozen=True)
class Invocation:
    """The command guard runs: no shell; the environment guard read it with (None: driftscan's
    own), its working directory, and where its stdout goes (None: the terminal)."""

    argv: tuple[str, ...]
    env: dict[str, str] | None = None
    cwd: str | None = None
    stdout: int | None = None


def guard(command: Invocation | Sequence[str], venv: str | None = None, site_packages: Sequence[str] = (), *,
          options: AuditOptions | None = None, source: str | None = None, checkpoint_path: str | None = None,
          expect: str | None = None, force: bool = False, on_event: Callable[[str], None] | None = None,
          patches: Source | None = None, reapply_patches: bool = False, allow_unused: bool = False,
          allow_conflicts: bool = False, **settings: Unpack[AuditSettings]) -> GuardReport:
    """Audit and predict for ``command`` (an install: pip, uv, conda, pixi; anything else is
    predicted ``may_survive``), write a whole checkpoint, refuse to start a command that would
    bring debug code back or that the checkpoint cannot undo (unless ``force``), run it (no shell;
    its stdout to ``Invocation.stdout`` when given), audit again and say, per drift, whether the
    prediction held. ``on_event(text)`` hears each step before the command runs.
    ``patches``: the team's patches, predicted re-applied or unused; with ``reapply_patches``,
    ``driftscan patch apply --yes`` runs after a command that exited 0 and the audit after it
    (``allow_unused`` / ``allow_conflicts`` as for patch apply; a file the checkpoint holds an edit
    of is left to reapply). Returns ``guard.GuardReport``; ``guard.exit_status`` gives its exit status."""
    from .reinstall import checkpoint as checkpoints, guard as guarding, plan as plans

    started = time.perf_counter()
    call = command if isinstance(command, Invocation) else Invocation(tuple(command))
    command, env, cwd = call.argv, call.env, call.cwd
    say = on_event or (lambda text: None)
    if not command:
        raise TargetError("guard needs a command after --")
    if reapply_patches and patches is None:
        raise ConfigError("guard --reapply-patches needs the team's patches (a manifest or a patches directory)")
    chosen = _options(venv, site_packages, options, settings)
    named, sources, cache = chosen.targets, chosen.originals, chosen.cache
    chosen_because = named.chosen_because
    target = resolve_target(named.venv, named.site_packages)
    if reapply_patches:  # patch apply records what it writes in the user cache: never inside what it writes
        refuse_inside(environment_roots(target))
    root = checkpoints.environment_root(target)
    recognised = guarding.recognise(command, env, cwd)
    chosen_source: str | None
    source_note: str | None
    if source is not None:
        chosen_source, source_why, source_note = guarding.valid_source(source), "--from", None
    else:
        chosen_source, source_why, source_note = guarding.command_source(recognised, command, cwd)
    models = model_dir_paths(named.model_dirs, named.hf_cache)
    # The running interpreter's environment when none is named: named from here on, so model
    # directories add to it; the model directories as found, the hub cache's repositories included.
    venv, site_packages = named.venv, named.site_packages
    if venv is None and not site_packages:
        venv, site_packages = target.venv, (() if target.venv else target.site_packages)
    chosen = dataclasses.replace(chosen, targets=dataclasses.replace(
        named, venv=venv, site_packages=site_packages, model_dirs=tuple(models), hf_cache=None,
        include_environment=True, chosen_because=None))
    metadirs = find_distributions(target.site_packages, records=False)
    installed = {guarding.normalize(md.distribution.name): md.distribution.version for md in metadirs
                 if md.distribution is not None and md.distribution.kind is not MetadataKind.EGG_LINK}
    sure, maybe = guarding.reinstalled(recognised, installed)
    tool = guarding.Tool
    installer = {tool.PIP: "pip", tool.UV_PIP: "uv", tool.UV_SYNC: "uv"}.get(recognised.tool)
    originals_in = (*sources.wheels, *recognised.wheel_dirs)  # the command's own wheels are originals too (verified)
    dest = checkpoints.check_destination(checkpoint_path or checkpoints.default_checkpoint_path(target),
                             [r for r in (root, *target.site_packages, *models) if r])
    say(f"target: {root or ', '.join(target.site_packages)}" + (f" ({chosen_because})" if chosen_because else "")
        + "".join(f" + model directory {m}" for m in models))  # they add to the environment, as everywhere
    notes = list(recognised.notes) + ([source_note] if source_note else [])
    say("command: " + (f"{recognised.tool.value}, reinstalls {', '.join([*sure, *maybe]) or 'nothing installed'}"
                       f", source {chosen_source or 'as installed'}" if recognised.recognised
                       else "not recognised: every drift may survive it"))
    with_originals = dataclasses.replace(sources, wheels=originals_in)
    planned = plan([*sure, *maybe], options=dataclasses.replace(chosen, installer=installer, originals=with_originals),
                   expect=expect, source=chosen_source, processes=False, patches=patches,
                   versions_after=guarding.versions_after(recognised, installed))
    predicted = guarding.predict(planned, recognised, sure, maybe, source is not None)
    report = guarding.GuardReport(
        target=root or ", ".join(target.site_packages), chosen_because=chosen_because,
        command=guarding.GuardCommand(
            argv=list(command), tool=recognised.tool.value, recognised=recognised.recognised,
            requested=sorted({r.name for r in recognised.requested}), reinstalls=[*sure, *maybe],
            forced=recognised.forced, no_deps=recognised.no_deps, source=chosen_source, source_why=source_why,
            from_given=source is not None, environment=recognised.environment,
            environment_unsure=recognised.environment_unsure or None, notes=notes),
        ran=False, notes=[f"unnamed requirement: {u}" for u in recognised.unnamed], patch_plan=planned.patches)
    report.errors += [f"before: {e.path}: {e.message}" for e in planned.audit.errors]
    counts = {s: sum(1 for p in predicted if p.status == s) for s in ("WIPED", "SURVIVES", "MAY SURVIVE")}
    say(f"predictions: {counts['WIPED']} wiped, {counts['SURVIVES']} survive, {counts['MAY SURVIVE']} may survive")
    refusals = [r for r in (guarding.other_environment(recognised, target.venv or root),) if r is not None]
    refusals += guarding.debug_comes_back(predicted, planned, sure, recognised, cache.uv_cache)

    def refuse() -> guarding.GuardReport:
        report.refused = refusals
        if reapply_patches:
            report.patch_apply_skipped = "guard did not run the command: the team's patches were not applied"
        report.predictions = guarding.not_run(predicted)
        guarding.summarise(report)
        report.duration_seconds = round(time.perf_counter() - started, 3)
        return report

    if refusals and not force:
        return refuse()
    # the checkpoint's own audit: the default rules, as `driftscan checkpoint` without options
    kept = dataclasses.replace(chosen, originals=with_originals, rules=RuleSelection(),
                               targets=dataclasses.replace(chosen.targets, include_environment=False))
    written = checkpoint(dest, options=kept)
    report.checkpoint = guarding.checkpoint_summary(written.path, written.index, written.problems, predicted)
    say(f"checkpoint: {written.path}" + (" (partial)" if report.checkpoint.partial else ""))
    if report.checkpoint.at_risk:
        lacking = report.checkpoint.at_risk
        refusals.append(guarding.Refusal(
            reason=(f"the checkpoint is partial: {count(len(lacking), 'file')} the command may wipe that it could not "
                    f"bring back ({'; '.join(lacking[:5])}{' …' if len(lacking) > 5 else ''})"),
            command=report.checkpoint.complete_with[0] if report.checkpoint.complete_with else None))
    if refusals and not force:
        return refuse()
    report.refused, report.forced = refusals, bool(refusals)
    before = guarding.fingerprints(predicted, planned)
    say(f"running: {shlex.join(command)}")
    t0 = time.perf_counter()
    code, why = _run_command(command, call.stdout, env)
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
    line = guarding.reapply_line(written.path, written.index, target.venv, target.site_packages, yes=judged)
    report.reapply, report.reapply_dry_run = (line, None) if judged else (None, line)

    def team_patches() -> None:
        """After the command and the audit after it (which judges what the command alone did):
        the team's patches applied, and said, never silently."""
        if not reapply_patches or patches is None:
            return
        if not judged:
            report.patch_apply_skipped = (f"the command failed (exit {code}): the team's patches were not applied; "
                                          "once the environment is whole again: driftscan patch apply --yes")
            return
        say("applying the team's patches: driftscan patch apply --yes")
        from .patches.apply import Allow, apply_patches, exit_status as apply_status  # only with --reapply-patches

        try:
            applied = apply_patches(target.site_packages, patches, yes=True,
                                    leave=guarding.left_to_reapply(written.index))
        except (DriftscanError, OSError) as exc:
            report.patch_apply_skipped = f"the team's patches could not be applied: {exc}"
            report.patch_apply_exit = EXIT_INCOMPLETE
            return
        report.patch_apply = applied
        report.patch_apply_exit = apply_status(applied, Allow(unused=allow_unused, conflicts=allow_conflicts))
        now = {guarding.normalize(md.distribution.name): md.distribution.version
               for md in find_distributions(target.site_packages, records=False) if md.distribution is not None}
        report.patch_rebase = guarding.rebase_lines(applied, now, recognised.wheel_dirs)

    try:
        after = run(options=dataclasses.replace(chosen, originals=OriginalSources(look=False)),
                    need=Need.REPORT if expect is None else Need.CHECKS)
    except (DriftscanError, OSError) as exc:  # the command ran: say what is known, never lose the report
        team_patches()
        report.errors.append(f"after: the audit after the command could not run: {exc}")
        report.predictions = guarding.unchecked(predicted, f"the audit after the command could not run: {exc}")
        guarding.summarise(report)
        report.duration_seconds = round(time.perf_counter() - started, 3)
        return report
    report.predictions = guarding.judge(predicted, before, after.report, judged)
    report.restart_needed = _restart_needed(target, report.notes)
    asked = {r.name for r in recognised.requested} | set(sure) | set(maybe)
    report.versions = guarding.versions(planned.audit, after.report, asked)
    report.leftovers = guarding.leftovers(planned, after.report, cache.uv_cache)
    report.new_drifts = guarding.new_drifts(planned.audit, after.report)
    if expect:
        placeholders = {"venv": target.venv or "",
                        "site_packages": target.site_packages[0] if target.site_packages else ""}
        verified = [r.root for r in after.model_dirs if r.kind is not LayoutKind.UNKNOWN]
        now = plans.expectations_now(expect, after.verification, verified, placeholders)
        report.expectations = guarding.expectations(planned, now, judged, predicted, recognised.recognised)
    report.errors += [f"after: {e.path}: {e.message}" for e in after.report.errors]
    team_patches()
    guarding.summarise(report)
    report.duration_seconds = round(time.perf_counter() - started, 3)
    return report


def procs(venv: str | None = None, site_packages: Sequence[str] = (), *, all_python: bool = False,
          compile_caches: bool = True, compile_cache_dirs: Sequence[str] = (),
          runtime_dirs: Sequence[str] = ()) -> ProcsReport:
    """The processes that run the environment (default: the one driftscan runs in), each with the
    evidence that it runs code other than what is on disk now: a mapped file deleted or replaced
    (exact), files changed after it started (likely), and what to restart. Only /proc is read:
    no process is run, traced, or has its memory or environment read (docs/procs.md).
    ``all_python``: every Python process, those not tied to the environment marked ``none``.
    ``compile_caches``: also name the vLLM and Triton compile-cache entries built from files of the
    environment that are gone or changed since (the default cache directories and
    ``compile_cache_dirs``; nothing deleted: each comes with its ``rm -r`` line).
    A process that runs ``driftscan.runtime``'s recorder (docs/runtime.md) gets exact evidence: the
    module files it imported that changed since, from its record file in the standard per-user
    places (``runtime_dirs``: only these directories instead).
    ``driftscan.report.policy.procs_exit_status(report)`` gives the command line's verdict."""
    env = environment_of(resolve_target(venv, list(site_packages)))
    records = RuntimeRecords(runtime_dirs)
    report = scan_processes(env, all_python=all_python, recorder=records)
    report.errors += [f"runtime record file not used: {why}" for why in records.untrusted]
    if compile_caches:
        dirs = default_cache_dirs() + [CacheDir("given", d) for d in compile_cache_dirs]
        report.compile_caches = scan_compile_caches(env, dirs)
    return report

