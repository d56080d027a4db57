"""environment/managers/interface.py and the registry that holds to it: which manager applies
where, decided without importing its module, and what every registered module defines."""

from __future__ import annotations

import importlib
import sys

import pytest

from driftscan.core.values import Distribution, DriftKind, FileCheck, MetadataKind, Target, TargetKind
from driftscan.environment.managers import registry
from driftscan.environment.managers.interface import Owned, Settled
from driftscan.environment.managers.registry import MANAGED_KINDS, MANAGERS, Location, manager_of
from driftscan.fs.containment import Containment

CONDA = next(r for r in MANAGERS if r.kind is MetadataKind.CONDA)
DPKG = next(r for r in MANAGERS if r.kind is MetadataKind.DPKG)


def test_the_registered_managers():
    assert {(r.kind, r.module, r.location, r.marker) for r in MANAGERS} == {
        (MetadataKind.CONDA, "conda", Location.PREFIX, "conda-meta"),
        (MetadataKind.DPKG, "dpkg", Location.SITE_PACKAGES, "dist-packages"),
    }
    assert MANAGED_KINDS == {MetadataKind.CONDA, MetadataKind.DPKG}
    assert len({r.kind for r in MANAGERS}) == len(MANAGERS)  # one registration per kind


@pytest.mark.parametrize("registration", MANAGERS, ids=lambda r: r.module)
def test_every_registered_module_defines_the_interface(registration):
    module = registration.load()
    assert module.__name__ == f"driftscan.environment.managers.{registration.module}"
    for name in ("read", "installer", "reinstall_command"):
        assert callable(getattr(module, name, None)), f"{module.__name__} lacks {name}()"
    assert callable(getattr(module, "settle", lambda: None))  # optional, a function when there


def test_roots_of_a_conda_prefix(tmp_path):
    prefix = tmp_path / "env"
    (prefix / "conda-meta").mkdir(parents=True)
    site = str(prefix / "lib/python3.12/site-packages")
    target = Target(TargetKind.PREFIX, str(prefix), (site,))
    assert CONDA.roots(target) == [str(prefix)]
    assert DPKG.roots(target) == []
    # A venv holding a conda-meta directory is still a venv: conda's records are not its own.
    assert CONDA.roots(Target(TargetKind.VENV, str(prefix), (site,))) == []
    (prefix / "conda-meta").rmdir()
    assert CONDA.roots(target) == []


def test_roots_of_a_dist_packages(tmp_path):
    usr = "/usr/lib/python3/dist-packages"
    local = "/usr/local/lib/python3.11/dist-packages/"
    target = Target(TargetKind.SITE_PACKAGES, None, (usr, "/srv/site-packages", local))
    assert DPKG.roots(target) == [usr, local]  # the last part of the path decides, a trailing slash or not
    assert CONDA.roots(target) == []


def test_roots_of_a_plain_venv(tmp_path):
    venv = tmp_path / "v"
    site = venv / "lib/python3.11/site-packages"
    site.mkdir(parents=True)
    target = Target(TargetKind.VENV, str(venv), (str(site),))
    assert [r.roots(target) for r in MANAGERS] == [[], []]
    found = registry.find_managed(target, Containment([str(venv)]))
    assert found.owned == [] and found.metadirs == [] and found.replaced == set()


def test_no_manager_module_is_imported_where_none_applies(tmp_path, monkeypatch):
    for r in MANAGERS:
        monkeypatch.delitem(sys.modules, f"driftscan.environment.managers.{r.module}", raising=False)
    venv = tmp_path / "v"
    (venv / "lib/python3.11/site-packages").mkdir(parents=True)
    registry.find_managed(Target(TargetKind.VENV, str(venv), (str(venv / "lib/python3.11/site-packages"),)),
                          Containment([str(venv)]))
    assert not any(f"driftscan.environment.managers.{r.module}" in sys.modules for r in MANAGERS)


def dist(kind, name="p"):
    return Distribution(name, "1.0", f"/m/{name}", "/s", kind=kind)


def test_manager_of_needs_every_distribution_of_one_manager():
    conda = importlib.import_module("driftscan.environment.managers.conda")
    dpkg = importlib.import_module("driftscan.environment.managers.dpkg")
    assert manager_of([dist(MetadataKind.CONDA), dist(MetadataKind.CONDA, "q")]) is conda
    assert manager_of([dist(MetadataKind.DPKG)]) is dpkg
    assert manager_of([dist(MetadataKind.CONDA), dist(MetadataKind.DIST_INFO)]) is None  # mixed: pip's affair
    assert manager_of([dist(MetadataKind.DIST_INFO)]) is None
    assert manager_of([]) is None


class _Fake:
    """A manager module as interface.py describes it, with a ``settle`` that judges one path."""

    def __init__(self, judged):
        self.judged = judged

    def settle(self, checks, owned):
        mine = [c for c in checks if c.path in self.judged]
        return Settled([FileCheck(DriftKind.MODIFIED, c.path, c.root, c.distribution, evidence="judged")
                        for c in mine], set(self.judged))


def test_settle_managed_replaces_judged_checks_and_cites_the_record():
    owner = dist(MetadataKind.CONDA)
    other = dist(MetadataKind.DIST_INFO, "o")
    checks = [FileCheck(DriftKind.MISSING, "/p/a", "/p", owner), FileCheck(DriftKind.MISSING, "/p/b", "/p", owner),
              FileCheck(DriftKind.ADDED, "/p/c", "/p", owner), FileCheck(DriftKind.MODIFIED, "/p/d", "/p", other)]
    managed = registry.ManagedFiles(owned=[(_Fake({"/p/a"}), Owned())], evidence={owner.metadata_dir: "sha256 in X"})
    out = {c.path: c for c in registry.settle_managed(checks, managed)}
    assert out["/p/a"].kind is DriftKind.MODIFIED and out["/p/a"].evidence == "judged"
    assert out["/p/b"].evidence == "checked against sha256 in X"  # a drift of a package record says how
    assert out["/p/c"].evidence == ""  # an added file is not the record's
    assert out["/p/d"].evidence == ""  # another owner
    assert len(out) == 4
