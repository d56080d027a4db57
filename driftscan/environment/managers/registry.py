"""The package managers driftscan knows, and their records merged into the RECORD pass.

A conda prefix's ``conda-meta/*.json`` and a Debian system's dpkg database list every file their
packages installed, with a hash; a Python distribution those packages carry (its dist-info) is
theirs, and its RECORD, written at build time by a tool nobody ran here, is not what the
installer checked. So the package records replace those dist-infos: each record becomes one
distribution whose rows ``records.py`` verifies like any RECORD's (sha256 for conda, md5 as
Debian records it). docs/environments.md.

To add a manager: a ``MetadataKind`` member, a module beside this one (``interface.py`` says what
it defines), and one ``Registration`` in ``MANAGERS``.
"""

from __future__ import annotations

import enum
import importlib
import os
from dataclasses import dataclass, field, replace
from typing import cast

from ...core.values import Distribution, DriftKind, FileCheck, MetadataKind, Problem, Target, TargetKind, Unverifiable
from ...fs.containment import Containment
from ..dists import MetadataDir
from .interface import ManagerModule, Owned


class Location(enum.Enum):
    """Where a manager's records may apply, decided without importing its module."""

    PREFIX = "prefix"  # the target's prefix (not a venv), when it holds ``marker`` as a directory
    SITE_PACKAGES = "site-packages"  # each of the target's site-packages whose last part is ``marker``


@dataclass(frozen=True)
class Registration:
    kind: MetadataKind  # the Distribution.kind of its records
    module: str  # a module of this package, imported only where ``location`` matches
    location: Location
    marker: str

    def roots(self, target: Target) -> list[str]:
        if self.location is Location.PREFIX:
            if target.venv and target.kind is TargetKind.PREFIX and os.path.isdir(os.path.join(target.venv, self.marker)):
                return [target.venv]
            return []
        return [site for site in target.site_packages if os.path.basename(site.rstrip(os.sep)) == self.marker]

    def load(self) -> ManagerModule:
        return cast(ManagerModule, importlib.import_module(f"{__package__}.{self.module}"))


MANAGERS: tuple[Registration, ...] = (
    Registration(MetadataKind.CONDA, "conda", Location.PREFIX, "conda-meta"),
    Registration(MetadataKind.DPKG, "dpkg", Location.SITE_PACKAGES, "dist-packages"),
)
MANAGED_KINDS = frozenset(r.kind for r in MANAGERS)


def manager_of(dists: list[Distribution]) -> ManagerModule | None:
    """The manager whose records all of ``dists`` are, if one is (a reinstall goes through it)."""
    kinds = {d.kind for d in dists}
    for registration in MANAGERS:
        if kinds == {registration.kind}:
            return registration.load()
    return None


@dataclass
class ManagedFiles:
    """What the package managers of a target own, ready for the RECORD pass."""

    owned: list[tuple[ManagerModule, Owned]] = field(default_factory=list)
    metadirs: list[MetadataDir] = field(default_factory=list)
    replaced: set[str] = field(default_factory=set)
    problems: list[Problem] = field(default_factory=list)
    unverifiable: list[Unverifiable] = field(default_factory=list)
    evidence: dict[str, str] = field(default_factory=dict)


def find_managed(target: Target, containment: Containment) -> ManagedFiles:
    """Every registered manager's records at the places of the target they may apply to.
    Never raises for the tree's sake."""
    found = ManagedFiles()
    for registration in MANAGERS:
        for root in registration.roots(target):
            module = registration.load()
            owned = module.read(root, target, containment)
            found.owned.append((module, owned))
            found.metadirs += owned.metadirs
            found.replaced |= owned.replaced
            found.problems += owned.problems
            found.unverifiable += owned.unverifiable
            found.evidence.update(owned.evidence)
    return found


_DRIFTS = (DriftKind.MODIFIED, DriftKind.MISSING, DriftKind.TYPE_CHANGED)


def settle_managed(checks: list[FileCheck], managed: ManagedFiles) -> list[FileCheck]:
    """The RECORD pass's checks, settled for what the records say beyond file hashes (each
    manager's ``settle``: its verdict replaces the pass's on the paths it judged), and each
    package-record drift saying how its hash was recorded."""
    out: list[FileCheck] = []
    judged: set[str] = set()
    for module, owned in managed.owned:
        settle = getattr(module, "settle", None)
        if settle is None:
            continue
        settled = settle(checks, owned)
        out += settled.checks
        judged |= settled.judged
        managed.problems += settled.problems
    for check in checks:
        if check.path in judged:
            continue
        owner = check.distribution
        how = managed.evidence.get(owner.metadata_dir) if owner is not None else None
        if how and check.kind in _DRIFTS:
            check = replace(check, evidence=f"{check.evidence}; {how}" if check.evidence else f"checked against {how}")
        out.append(check)
    return out
