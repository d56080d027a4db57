"""What an audit is asked to do, as one frozen value: the pipeline's only input besides what the
caller reads of it (``Need``). The library's entry points and the command line build it; nothing
downstream takes the settings one keyword at a time."""

from __future__ import annotations

import enum
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

from ..core.units import plural

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..report.accept import AcceptEntry


class Need(enum.Enum):
    """What the caller reads of a run; it decides what the pipeline may skip or must keep open."""

    REPORT = "report"  # Run.report alone: an unchanged clean environment may be settled by the clean index
    CHECKS = "checks"  # the verification whole, every RECORD entry
    ORIGINALS = "originals"  # also the originals found, held open until the Run is closed


@dataclass(frozen=True)
class Targets:
    """What is audited. Naming any of them replaces the default environment unless
    ``include_environment`` (model directories from a configuration file add to it)."""

    venv: str | None = None
    site_packages: tuple[str, ...] = ()
    model_dirs: tuple[str, ...] = ()
    hf_cache: str | None = None  # "" = the default Hugging Face cache: every repository of it
    include_environment: bool = False
    chosen_because: str | None = None  # why this environment, when nobody named it: said in the report

    @property
    def python_named(self) -> bool:
        return self.venv is not None or bool(self.site_packages) or self.include_environment

    @property
    def models_named(self) -> bool:
        return bool(self.model_dirs) or self.hf_cache is not None


@dataclass(frozen=True)
class RuleSelection:
    """Which debug-code rules run: ``select``/``ignore`` by code or prefix, rule modules and plugins."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    plugins: bool = True


@dataclass(frozen=True)
class ModelDirOptions:
    deep: bool = False  # hash large weight files too (else presence, size and the provenance's freshness rule)
    revision: str | None = None
    manifest: str | None = None


@dataclass(frozen=True)
class CachePolicy:
    use_cache: bool = True  # False: hash every file and parse every RECORD (--no-cache)
    uv_cache: str | None = None  # named: every archive of it is checked; None: uv's default, only what is used


@dataclass(frozen=True)
class OriginalSources:
    """Where verified originals of drifted package files are looked for (the defaults always:
    direct_url.json, uv's and pip's caches), to give each modified file its diff and each
    finding its origin. ``look=False`` (--no-pristine): not looked for."""

    look: bool = True
    wheels: tuple[str, ...] = ()
    fetch: bool = False  # `pip download` what no local source has


@dataclass(frozen=True)
class Accepted:
    """A configuration's accepted drift, applied to the report (report/accept.py)."""

    entries: tuple[AcceptEntry, ...] = ()
    source: str | None = None  # the configuration file, named in each accepted drift


@dataclass(frozen=True)
class AuditOptions:
    targets: Targets = field(default_factory=Targets)
    rules: RuleSelection = field(default_factory=RuleSelection)
    model_dirs: ModelDirOptions = field(default_factory=ModelDirOptions)
    cache: CachePolicy = field(default_factory=CachePolicy)
    originals: OriginalSources = field(default_factory=OriginalSources)
    accepted: Accepted = field(default_factory=Accepted)
    jobs: int | None = None
    installer: str | None = None  # "pip" or "uv": what-if for plan; None: each distribution's own INSTALLER
    # Lockfiles (--lock) the environment is checked against: versions, sources, and each wheel's
    # digest, which proves the wheel whose own RECORD the installed one is compared with.
    locks: tuple[str, ...] = ()
    # Dependency groups the install took besides the lock's default ones (--lock-group): required too.
    lock_groups: tuple[str, ...] = ()


class AuditSettings(TypedDict, total=False):
    """The same settings as keywords, for the library's functions (``audit(venv, jobs=4)``)."""

    jobs: int | None
    uv_cache: str | None
    installer: str | None
    use_cache: bool
    model_dirs: Sequence[str]
    hf_cache: str | None
    include_environment: bool
    chosen_because: str | None
    deep: bool
    revision: str | None
    manifest: str | None
    select: Sequence[str]
    ignore: Sequence[str]
    rules_modules: Sequence[str]
    plugins: bool
    compare: bool
    wheels: Sequence[str]
    fetch: bool
    accept: Sequence[AcceptEntry]
    accept_source: str | None
    locks: Sequence[str]
    lock_groups: Sequence[str]


def options_of(venv: str | None = None, site_packages: Sequence[str] = (), /,
               **s: Unpack[AuditSettings]) -> AuditOptions:
    """``AuditOptions`` from the keyword settings; an unknown keyword is a TypeError, as for any function."""
    unknown = set(s) - set(AuditSettings.__annotations__)
    if unknown:
        raise TypeError(f"unknown audit {plural(len(unknown), 'setting')}: {', '.join(sorted(unknown))}")
    return AuditOptions(
        targets=Targets(venv=venv, site_packages=tuple(site_packages), model_dirs=tuple(s.get("model_dirs", ())),
                        hf_cache=s.get("hf_cache"), include_environment=s.get("include_environment", False),
                        chosen_because=s.get("chosen_because")),
        rules=RuleSelection(select=tuple(s.get("select", ())), ignore=tuple(s.get("ignore", ())),
                            modules=tuple(s.get("rules_modules", ())), plugins=s.get("plugins", True)),
        model_dirs=ModelDirOptions(deep=s.get("deep", False), revision=s.get("revision"),
                                   manifest=s.get("manifest")),
        cache=CachePolicy(use_cache=s.get("use_cache", True), uv_cache=s.get("uv_cache")),
        originals=OriginalSources(look=s.get("compare", True), wheels=tuple(s.get("wheels", ())),
                                  fetch=s.get("fetch", False)),
        accepted=Accepted(entries=tuple(s.get("accept", ())), source=s.get("accept_source")),
        jobs=s.get("jobs"), installer=s.get("installer"),
        locks=tuple(os.path.abspath(p) for p in s.get("locks", ())), lock_groups=tuple(s.get("lock_groups", ())))
