"""environment/verify.py: the whole pass over a venv: RECORD rows, unowned files, orphaned metadata."""

from __future__ import annotations

import os

import pytest

from driftscan.caches import racy
from driftscan.core.values import DriftKind
from driftscan.environment.target import venv_target
from driftscan.environment.verify import verify
from fixtures.envtree import install, make_venv


@pytest.fixture
def venv(tmp_path):
    venv, site = make_venv(tmp_path / "v")
    install(site, "demo", "1.0", {"demo/__init__.py": "", "demo/core.py": "X = 1\n",
                                  "../../../bin/demo": "#!/bin/sh\n"})
    install(site, "other", "2.0", {"other.py": "Y = 2\n"}, installer="uv")
    return venv, site


def run(venv, tmp_path, **kw):
    # A private (empty) uv cache: nothing outside the venv is consulted.
    return verify(venv_target(str(venv)), jobs=1, uv_cache=str(tmp_path / "no-uv-cache"), **kw)


def kinds(verification, root):
    return {(os.path.relpath(c.path, root), c.kind) for c in verification.checks}


def test_a_pristine_venv_verifies_clean(venv, tmp_path):
    root, _ = venv
    result = run(root, tmp_path)
    assert result.checks == () and result.errors == () and result.unverifiable == ()
    assert {d.key for d in result.distributions} == {"demo 1.0", "other 2.0"}
    assert result.files_checked == (3 + 3) + (1 + 3)  # each RECORD row: files, METADATA, INSTALLER, RECORD
    assert str(root / "bin/demo") in result.referenced


@pytest.mark.parametrize("jobs", [1, 4])
def test_every_kind_of_environment_drift(venv, tmp_path, jobs):
    root, site = venv
    (site / "demo/core.py").write_text("X = 2\n")
    (site / "other.py").unlink()
    (site / "stray.py").write_text("")
    orphan = site / "ghost-1.0.dist-info"
    orphan.mkdir()
    (orphan / "METADATA").write_text("Name: ghost\n")
    result = verify(venv_target(str(root)), jobs=jobs, uv_cache=str(tmp_path / "no-uv-cache"))
    S = "lib/python3.11/site-packages"
    assert kinds(result, root) == {(f"{S}/demo/core.py", DriftKind.MODIFIED), (f"{S}/other.py", DriftKind.MISSING),
                                   (f"{S}/stray.py", DriftKind.ADDED), (f"{S}/ghost-1.0.dist-info",
                                                                        DriftKind.ORPHANED_METADATA)}
    ghost = next(c for c in result.checks if c.kind is DriftKind.ORPHANED_METADATA)
    assert ghost.actual == {"type": "directory", "files": ["METADATA"]} and "no RECORD" in ghost.evidence
    assert {d.name for d in result.distributions} == {"demo", "other"}  # the orphan is no distribution


def test_the_target_problems_are_errors(venv, tmp_path):
    root, _ = venv
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "share").symlink_to(outside)
    result = run(root, tmp_path)
    assert [(e.path, "resolves outside the environment" in e.message) for e in result.errors] == \
        [(str(root / "share"), True)]


def test_a_clean_result_leaves_a_clean_index(venv, tmp_path, monkeypatch):
    from driftscan.caches import statcache
    from driftscan.environment.fast import cleanindex

    monkeypatch.setattr(racy, "RACY_NS", 0)
    root, _ = venv
    cache = statcache.StatCache(str(tmp_path / "stat-cache"))
    captured = {}
    monkeypatch.setattr(cache, "set_clean_index", lambda index, owned: captured.update(index=index))
    run(root, tmp_path, stat_cache=cache)
    assert captured["index"]  # a clean venv: the next audit may be settled by the index
    (root / "lib/python3.11/site-packages/demo-1.0.dist-info/RECORD").unlink()  # an orphan: no index
    run(root, tmp_path, stat_cache=cache)
    assert captured["index"] is None


def test_an_editable_installs_source_tree_is_verified_too(tmp_path):
    import shutil

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    from fixtures.gitrepos import init_repo

    project = init_repo(tmp_path / "proj", {"pyproject.toml": "[project]\nname = 'proj'\n", "proj/core.py": "X = 1\n"})
    root, site = make_venv(tmp_path / "v")
    install(site, "proj", "0.1", {"__editable__.proj-0.1.pth": str(project) + "\n",
                                  "proj-0.1.dist-info/direct_url.json":
                                      f'{{"url": "file://{project}", "dir_info": {{"editable": true}}}}'})
    (project / "proj/core.py").write_text("X = 2\n")
    result = run(root, tmp_path)
    assert [(c.kind, c.area.value, c.path) for c in result.checks] == \
        [(DriftKind.MODIFIED, "source", str(project / "proj/core.py"))]
    assert result.files_checked == 5 + 2  # the RECORD rows, and the tracked files of the source tree
