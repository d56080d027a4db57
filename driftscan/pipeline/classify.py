"""Pure: a FileCheck becomes a Drift with a scope, a reinstall prediction, a remedy and evidence.

"Survives" is the worst case for the environment's own installer (INSTALLER), following what
real pip and uv do (docs/installers.md §2): listed files are rewritten, unowned files are kept, except
where uv's hard links into its cache carry the edit back in.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence

from ..environment.reinstall_source import ReinstallSource, SourceKind, pip_installed
from ..environment.target import PYTHON_PLACEHOLDER, install_location
from ..environment.uv.cache import default_uv_cache
from ..environment.managers.registry import manager_of
from ..core.values import Area, Distribution, Drift, DriftKind, MetadataKind, FileCheck, Prediction, Scope, Target

_PACKAGE_KINDS = {DriftKind.MODIFIED, DriftKind.MISSING, DriftKind.TYPE_CHANGED, DriftKind.CLOBBERED,
                  DriftKind.MISSING_DIRECTORY, DriftKind.MISSING_FILES, DriftKind.RECORD_REWRITTEN}
_AREA_SCOPE = {Area.MODEL: Scope.DATA, Area.SOURCE: Scope.SOURCE, Area.EXTERNAL: Scope.EXTERNAL}


# What a reinstall command may take from the tree (METADATA, direct_url.json): values that are
# validated here, then shell-quoted, so that none can become an installer option or a second
# command (docs/security.md).
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?\Z")  # PEP 508 names
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]*\Z")
_URL = re.compile(r"(?:file|https?|git\+(?:https?|ssh|file)|hg\+https?|svn\+https?|bzr\+https?)://[^\s\x00-\x1f\x7f]+\Z")
UNSAFE = "<not shown: the distribution's metadata names no valid requirement>"


def safe_name(dist: Distribution) -> str | None:
    return dist.name if isinstance(dist.name, str) and _NAME.match(dist.name) else None


def safe_url(value: object) -> str | None:
    """A direct_url.json URL usable as an installer argument: a known scheme, no whitespace or
    control characters, so never an option (``--index-url=…``) nor a second word."""
    return value if isinstance(value, str) and _URL.match(value) else None


def requirement(dist: Distribution) -> str:
    """What to hand the installer so it reinstalls exactly what is there."""
    url = safe_url((dist.direct_url or {}).get("url"))
    if url and dist.editable:
        return f"-e {shlex.quote(url)}"
    if url and "vcs_info" not in (dist.direct_url or {}):
        return shlex.quote(url)
    name = safe_name(dist)
    if name is None:
        return UNSAFE
    if not (isinstance(dist.version, str) and _VERSION.match(dist.version)):
        return UNSAFE
    return shlex.quote(f"{name}=={dist.version}")


def installer_of(dists: list[Distribution], override: str | None = None) -> str:
    """The installer a reinstall uses: ``override`` (pip or uv), else the environment's own; a
    system package manager's packages (conda records, dpkg) always go back through it."""
    manager = manager_of(dists)
    if manager is not None:
        return manager.installer(dists)
    if override:
        return override
    names = {(d.installer or "pip").lower() for d in dists}
    return "uv" if names == {"uv"} else "pip"


def _system_command(dists: list[Distribution], prefix: str | None) -> str | None:
    """The package manager's own reinstall, for distributions a conda record or dpkg owns."""
    manager = manager_of(dists)
    return None if manager is None else manager.reinstall_command(dists, prefix)


def _words(args: Sequence[str]) -> str:
    # The placeholder for an interpreter driftscan did not find is ours, and stays visible as is.
    return "".join(f" {w if w == PYTHON_PLACEHOLDER else shlex.quote(w)}" for w in args)


def pipless_venv(target: Target, dists: list[Distribution]) -> str | None:
    """The venv's site-packages when ``dists`` live in a venv that has no pip installed (no
    ``pip-*.dist-info`` there): ``V/bin/python -m pip`` cannot run in it."""
    if not target.venv or not dists or any(d.kind is not MetadataKind.DIST_INFO for d in dists):
        return None
    site = dists[0].site_packages
    if not _under(os.path.abspath(site), os.path.abspath(target.venv)):
        return None
    return None if pip_installed(site) else site


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def effective_installer(target: Target, dists: list[Distribution], override: str | None = None) -> tuple[str, str | None]:
    """(the installer that will run, why it is not the one asked for): pip asked for (or the
    environment's INSTALLER) in a venv without pip means uv runs instead (``uv pip install --python``
    installs into any venv)."""
    who = installer_of(dists, override)
    if who == "pip" and pipless_venv(target, dists) is not None:
        return "uv", (f"{target.venv} has no pip installed (no pip-*.dist-info in its site-packages), so "
                      "pip cannot run from it: uv installs into it instead")
    return who, None


def _requirement_from(dist: Distribution, source: ReinstallSource | None) -> str:
    """The requirement for ``dist`` when the reinstall takes it from ``source`` (None: as installed)."""
    if source is None or source.kind is SourceKind.UNKNOWN:
        return requirement(dist)
    if source.kind is SourceKind.WHEEL and source.path:
        return shlex.quote(source.path)
    name = safe_name(dist)
    if name is None or not (isinstance(dist.version, str) and _VERSION.match(dist.version)):
        return UNSAFE
    return shlex.quote(f"{name}=={dist.version}")


def reinstall_parts(target: Target, dists: list[Distribution], installer: str | None = None,
                    sources: Sequence[ReinstallSource | None] = ()) -> tuple[str | None, str]:
    """(what to know before running it, or None; the reinstall command). ``sources``: where each
    of ``dists`` is taken from (``plan --from``; missing or None: as installed)."""
    system = _system_command(dists, target.venv)
    if system is not None:
        return None, system
    chosen = list(sources) + [None] * (len(dists) - len(sources))
    reqs = " ".join(_requirement_from(d, s) for d, s in zip(dists, chosen))
    dirs = sorted({s.path for s in chosen if s is not None and s.kind is SourceKind.FIND_LINKS and s.path})
    links = "".join(f" --find-links {shlex.quote(d)}" for d in dirs)
    if dirs:
        links = " --no-index" + links
    where = install_location(target, dists[0].site_packages if dists else None)
    who, pipless = effective_installer(target, dists, installer)
    project = uv_project_of(target)
    if who == "uv" and project is not None and not dirs and not any(chosen) \
            and all("==" in requirement(d) for d in dists):
        names = "".join(f" --reinstall-package {shlex.quote(safe_name(d) or UNSAFE)}" for d in dists)
        return (f"the environment of the uv project {project}: uv sync also installs and removes what its uv.lock "
                "says", f"uv sync --project {shlex.quote(project)}{names}")
    if who == "uv":
        python = ("--python", where.python) if pipless else where.uv
        note = "; ".join(n for n in (where.note, pipless) if n) or None
        return note, f"uv pip install{_words(python)} --reinstall --no-deps{links} {reqs}"
    return where.note, (f"{shlex.quote(where.python)} -m pip{_words(where.pip_global)} install{_words(where.pip)} "
                        f"--force-reinstall --no-deps{links} {reqs}")


def uv_project_of(target: Target) -> str | None:
    """The uv project whose environment ``target`` is: its venv is ``<project>/.venv`` and the
    project has a pyproject.toml and a uv.lock (``uv sync`` is then how it is reinstalled)."""
    venv = target.venv
    if not venv or os.path.basename(os.path.normpath(venv)) != ".venv":
        return None
    project = os.path.dirname(os.path.normpath(venv))
    if all(os.path.isfile(os.path.join(project, f)) for f in ("pyproject.toml", "uv.lock")):
        return project
    return None


def uv_cache_prune(cache_dir: str | None = None) -> str:
    """``uv cache prune``: what removes an archive no entry of uv's wheel index names any more
    (``uv cache clean NAME`` leaves it: measured, uv 0.13.9)."""
    where = f" --cache-dir {shlex.quote(cache_dir)}" if cache_dir and not _is_uv_default(cache_dir) else ""
    return f"uv cache prune{where}"


def _then(note: str | None, command: str) -> str:
    return f"{note}: {command}" if note else command


def _is_uv_default(cache_dir: str) -> bool:
    """Whether a plain ``uv cache clean`` cleans ``cache_dir`` wherever the command is pasted: it
    is uv's platform default and UV_CACHE_DIR, if set, names it too."""
    platform = default_uv_cache({k: v for k, v in os.environ.items() if k != "UV_CACHE_DIR"})
    current = default_uv_cache()
    if platform is None or current is None:
        return False
    return os.path.realpath(cache_dir) == os.path.realpath(platform) == os.path.realpath(current)


def uv_cache_clean(dist: Distribution, cache_dir: str | None = None) -> str:
    """``uv cache clean NAME``, with ``--cache-dir DIR`` when the cache holding the edited copy
    (``cache_dir``: from --uv-cache, UV_CACHE_DIR or uv's default) is not uv's default: a plain
    ``uv cache clean`` would clean another cache and leave the edited one."""
    where = f" --cache-dir {shlex.quote(cache_dir)}" if cache_dir and not _is_uv_default(cache_dir) else ""
    return f"uv cache clean{where} {shlex.quote(safe_name(dist) or UNSAFE)}"


def _package(check: FileCheck, target: Target, installer: str | None) -> Drift:
    dist = check.distribution
    assert dist is not None
    who, _ = effective_installer(target, [dist], installer)
    note, command = reinstall_parts(target, [dist], installer)
    reinstall = _then(note, command)
    evidence = check.evidence or f"listed in the RECORD of {dist.key}; a reinstall rewrites it"
    cache = check.uv_cache
    # A rewritten row's evidence says what was found; what the cache does to it comes after.
    first = f"{check.evidence}; " if check.kind is DriftKind.RECORD_REWRITTEN and check.evidence else ""
    if cache and who == "uv":
        clean = uv_cache_clean(dist, cache.cache_dir)
        if cache.copy:
            how = "is a symlink to" if cache.symlink else f"shares its inode ({cache.links} links) with"
            evidence = (f"{first}{how} uv's cache copy {cache.copy}: the edit is in the cache, so a uv reinstall "
                        "from the source it was installed from links the edited file back and every venv sharing "
                        "this cache has it (one from another source, such as a wheel file, unpacks afresh and "
                        "wipes it: `driftscan plan --from` tells which); a pip --force-reinstall would fix this "
                        "venv but leave the cache edited")
            return Drift(check, Scope.PACKAGE, True, _then(note, f"{clean} && {command}"), evidence,
                         Prediction.SURVIVES)
        evidence = (f"{first}hard-linked ({cache.links} links) but no copy found in uv's cache "
                    f"({cache.cache_dir or 'not located; pass --uv-cache'}): if the other link is the cache, "
                    "a uv reinstall links the edited file back")
        return Drift(check, Scope.PACKAGE, True, _then(note, f"{clean} && {command}"), evidence,
                     Prediction.MAY_SURVIVE)
    if cache and cache.copy:
        evidence += f"; uv's cache copy {cache.copy} carries the same edit and stays so after a pip reinstall"
    if check.kind is DriftKind.CLOBBERED:
        reinstall = f"two distributions install this path; uninstall one of them, or {reinstall}"
    return Drift(check, Scope.PACKAGE, False, reinstall, evidence, Prediction.WIPED)


def _lock_mismatch(check: FileCheck) -> Drift:
    """A version or a distribution the lock does not pin: a reinstall of what is installed keeps it;
    installing from the lock (the remedy the lock layer wrote) is the way back."""
    scope = Scope.PACKAGE if check.distribution is not None else Scope.ENVIRONMENT
    return Drift(check, scope, True, check.remedy_hint or "install the environment again from the lockfile",
                 check.evidence, Prediction.SURVIVES)


def _in_uv_pycache(check: FileCheck) -> bool:
    """Files in a uv-installed package's __pycache__ that it does not own: uv wipes them (docs/installers.md §2)."""
    dist = check.distribution
    return (dist is not None and (dist.installer or "").lower() == "uv"
            and os.path.basename(os.path.dirname(check.path)) == "__pycache__")


def _stale_bytecode(check: FileCheck, target: Target, path: str) -> Drift:
    """Removing the exact pyc is enough: Python compiles the source again at the next import. A
    reinstall rewrites the source (a new mtime), so the header no longer matches either."""
    source = check.expected.get("source")
    python = os.path.join(target.bin_dir, "python") if target.bin_dir else "python"
    again = f"; or recompile it: {shlex.quote(python)} -m compileall -f {shlex.quote(source)}" if source else ""
    scope = Scope.PACKAGE if check.distribution is not None else Scope.ENVIRONMENT
    return Drift(check, scope, False, f"rm {path}", f"{check.evidence}{again}", Prediction.WIPED)


def classify(check: FileCheck, target: Target, installer: str | None = None) -> Drift:
    """``installer`` overrides the environment's own (what-if: ``plan --installer``)."""
    scope = _AREA_SCOPE.get(check.area)
    if scope is not None:
        # A dump drift's path is a pattern from code: only its remedy_hint (exact files) may delete.
        remedy = check.remedy_hint or ("review the files, then delete them" if check.kind is DriftKind.DEBUG_ARTIFACTS
                                       else "restore it from its source")
        evidence = check.evidence or {Scope.DATA: "a model directory file; no package reinstall touches it",
                                      Scope.SOURCE: "an editable install's source tree; a reinstall re-links "
                                                    "the same tree",
                                      Scope.EXTERNAL: "written outside the environment"}[scope]
        return Drift(check, scope, True, remedy, evidence, Prediction.SURVIVES)
    if check.kind is DriftKind.UPSTREAM_RECORD_MISMATCH:  # the wheel's bytes: a reinstall brings them back
        return Drift(check, Scope.PACKAGE, True, "nothing to do here: the file is what its wheel ships (the wheel's "
                     "RECORD row is wrong; report it upstream)", check.evidence, Prediction.SURVIVES)
    if check.kind is DriftKind.LOCK_MISMATCH:
        return _lock_mismatch(check)
    if check.kind is DriftKind.PATCHED:  # a reinstall wipes it; patch apply writes it again
        patch = check.expected.get("patch", "the patch")
        if check.expected.get("hash") is None:  # a file the patch added: no RECORD lists it, no reinstall removes it
            return Drift(check, Scope.PACKAGE, False, f"nothing to do; after a reinstall it is still there "
                         f"(driftscan patch apply finds {patch} already applied to it)", check.evidence,
                         Prediction.SURVIVES)
        return Drift(check, Scope.PACKAGE, False,
                     f"nothing to do; after a reinstall: driftscan patch apply --yes (writes {patch} again)",
                     check.evidence, Prediction.WIPED)
    if check.kind in _PACKAGE_KINDS and check.distribution is not None:
        return _package(check, target, installer)
    path = shlex.quote(check.path)
    if check.kind is DriftKind.STALE_BYTECODE:
        return _stale_bytecode(check, target, path)
    if check.kind is DriftKind.ORPHANED_METADATA:
        return Drift(check, Scope.ENVIRONMENT, True, f"rm -r {path}", check.evidence, Prediction.SURVIVES)
    if check.kind is DriftKind.STARTUP_CODE:
        # Python runs it at every start, and no installer ever removes a file no RECORD lists.
        return Drift(check, Scope.ENVIRONMENT, True,
                     f"no reinstall removes it; review what it runs, and if it is not meant to run at every start: "
                     f"rm {path}", check.evidence or "runs at every start of this environment's interpreter",
                     Prediction.SURVIVES)
    if _in_uv_pycache(check) and installer_of([check.distribution], installer) == "uv":  # type: ignore[list-item]
        return Drift(check, Scope.ENVIRONMENT, False, f"rm {path}",
                     f"uv deletes every file in {check.distribution.key}'s __pycache__ when it reinstalls it",  # type: ignore[union-attr]
                     Prediction.WIPED)
    remedy = f"rm {path}" if check.kind is DriftKind.ORPHANED_BYTECODE else \
        f"no reinstall removes it; if it is not needed: rm {path}"
    return Drift(check, Scope.ENVIRONMENT, True, remedy, check.evidence or "no RECORD lists this file",
                 Prediction.SURVIVES)
