"""environment/unowned.py: the files no RECORD lists, found by a walk that follows no symlink."""

from __future__ import annotations

import os

import pytest

from driftscan.core.values import DriftKind
from driftscan.environment.dists import find_distributions
from driftscan.environment.ownership import build_ownership
from driftscan.environment.records import presence_only
from driftscan.environment.target import containment_for, venv_target
from driftscan.environment.unowned import UnownedWalk, find_unowned
from fixtures.envtree import install, make_venv

TAG = "cpython-311"


def unowned(venv):
    target = venv_target(str(venv))
    containment = containment_for(target)
    own = build_ownership(list(find_distributions(target.site_packages, containment=containment)), containment)
    return target, own, find_unowned(target, own)


def rel(checks, venv):
    return {os.path.relpath(c.path, venv): c for c in checks}


@pytest.fixture
def venv(tmp_path):
    venv, site = make_venv(tmp_path / "v")
    install(site, "demo", "1.0", {"demo/__init__.py": "", "demo/core.py": "X = 1\n"})
    return venv, site


SITE = "lib/python3.11/site-packages"


def test_an_installed_tree_has_nothing_unowned(venv):
    root, site = venv
    for name in ("python", "python3.11", "activate", "activate.fish"):  # what venv writes into bin/
        (root / "bin" / name).write_text("")
    (site / "_virtualenv.pth").write_text("")
    (site / "demo/__pycache__").mkdir()
    (site / f"demo/__pycache__/core.{TAG}.pyc").write_bytes(b"")  # bytecode of an owned module
    _, _, (checks, problems) = unowned(root)
    assert checks == [] and problems == []


def test_a_file_no_record_lists_is_added(venv):
    root, site = venv
    (site / "stray.py").write_text("import pdb\n")
    (site / "demo/debug_dump.pt").write_bytes(b"\x80")
    (root / "bin/my_tool").write_text("#!/bin/sh\n")
    (site / "demo-1.0.dist-info/notes.txt").write_text("")
    _, _, (checks, _) = unowned(root)
    found = rel(checks, root)
    assert set(found) == {f"{SITE}/stray.py", f"{SITE}/demo/debug_dump.pt", "bin/my_tool",
                          f"{SITE}/demo-1.0.dist-info/notes.txt"}
    assert all(c.kind is DriftKind.ADDED and c.evidence == "no RECORD lists this file" for c in checks)
    assert found[f"{SITE}/stray.py"].actual["type"] == "file" and found[f"{SITE}/stray.py"].actual["size"] == 11
    assert [c.path for c in checks] == sorted(c.path for c in checks)


def test_bytecode_rules(venv):
    root, site = venv
    pycache = site / "demo/__pycache__"
    pycache.mkdir()
    (pycache / f"gone.{TAG}.pyc").write_bytes(b"")  # its source does not exist
    (site / "added.py").write_text("")
    (site / "__pycache__").mkdir()
    (site / f"__pycache__/added.{TAG}.opt-1.pyc").write_bytes(b"")  # of an added file: that file is the drift
    _, _, (checks, _) = unowned(root)
    found = rel(checks, root)
    assert set(found) == {f"{SITE}/demo/__pycache__/gone.{TAG}.pyc", f"{SITE}/added.py"}
    ghost = found[f"{SITE}/demo/__pycache__/gone.{TAG}.pyc"]
    assert ghost.kind is DriftKind.ORPHANED_BYTECODE
    assert ghost.distribution is not None and ghost.distribution.name == "demo"  # whoever reinstalls demo wipes it


def test_a_derived_cache_counts_only_beside_its_module(venv):
    root, site = venv
    pycache = site / "demo/__pycache__"
    pycache.mkdir()
    (pycache / "core.f-3.py311.nbi").write_bytes(b"")  # numba's index of demo/core.py
    (pycache / "gone.f-3.py311.nbi").write_bytes(b"")
    _, _, (checks, _) = unowned(root)
    assert [(os.path.basename(c.path), c.kind) for c in checks] == [("gone.f-3.py311.nbi", DriftKind.ADDED)]
    assert "numba cache" in checks[0].evidence


def test_the_walk_does_not_follow_a_symlinked_directory(venv, tmp_path):
    root, site = venv
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("")
    (site / "linked").symlink_to(outside)
    (site / "loop").symlink_to(site)  # a loop cannot trap it
    _, _, (checks, problems) = unowned(root)
    found = rel(checks, root)
    assert set(found) == {f"{SITE}/linked", f"{SITE}/loop"}  # the links themselves, not what they lead to
    assert found[f"{SITE}/linked"].actual["type"] == "symlink"
    assert found[f"{SITE}/linked"].actual["target"] == str(outside)
    assert problems == []


def test_uv_target_lock_is_bookkeeping_only_when_empty(tmp_path):
    root, site = make_venv(tmp_path / "v")
    (site / ".lock").write_text("")
    assert unowned(root)[2][0] == []
    (site / ".lock").write_text("not uv's")
    assert [os.path.basename(c.path) for c in unowned(root)[2][0]] == [".lock"]


def test_an_unlistable_directory_is_a_problem_and_the_walk_goes_on(venv, monkeypatch):
    """A directory the walk cannot list (no permission for a non-root user; root is shown the
    same refusal by the listing call itself) is one problem; the rest is still walked."""
    from driftscan.environment import unowned as unowned_module

    root, site = venv
    (site / "locked").mkdir()
    (site / "stray.py").write_text("")
    real_scandir = os.scandir

    def scandir(path):
        if os.fspath(path) == str(site / "locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(unowned_module.os, "scandir", scandir)
    _, _, (checks, problems) = unowned(root)
    assert [p.path for p in problems] == [str(site / "locked")]
    assert [os.path.basename(c.path) for c in checks] == ["stray.py"]


def test_the_walk_object_answers_as_find_unowned(venv):
    root, site = venv
    (site / "stray.py").write_text("")
    (site / "demo/core.py").unlink()  # a hashed row the walk does not see
    target, own, expected = unowned(root)
    walk = UnownedWalk(target, own, presence_only(own.rows, own.owners))
    checks, problems = walk.unowned()
    assert [(c.kind, c.path) for c in checks] == [(c.kind, c.path) for c in expected[0]]
    assert problems == expected[1]
    typed = walk.typed()
    paths = [row[2] for row in own.rows]
    assert typed[paths.index(str(site / "demo/__init__.py"))] == 1  # listed as a regular file
    assert typed[paths.index(str(site / "demo/core.py"))] == 0  # not there
    listed = dict(walk.listed_directories())
    assert str(site / "demo") in listed


def test_other_directories_a_record_writes_into_are_walked_too(tmp_path):
    root, site = make_venv(tmp_path / "v")
    install(site, "tool", "1.0", {"tool.py": "", "../../../man/man1/tool.1": ".TH TOOL\n"})
    (root / "man/man1/stray.1").write_text("")
    (root / "unlisted").mkdir()  # no RECORD writes here: not walked
    (root / "unlisted/file").write_text("")
    _, _, (checks, _) = unowned(root)
    assert [os.path.relpath(c.path, root) for c in checks] == ["man/man1/stray.1"]
    assert checks[0].root == str(root)
