"""Editable installs: the source tree is verified with git, drifts are `source` scope and survive."""

from __future__ import annotations

import os
import time

import pytest

from driftscan import audit
from fixtures import venvs
from fixtures.demo import make_project
from fixtures.harness import offline


def source_drifts(report):
    return {(d.relpath, d.kind.value) for d in report.drifts if d.scope.value == "source"}


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_editable_source_drift(tmp_path, wheelhouse, installer):
    project = make_project(tmp_path / "proj")
    if installer == "pip":
        venv = venvs.make_pip_venv(tmp_path / "v")
        venvs.pip_install(venv, *offline(wheelhouse), "-e", str(project))
    else:
        cache = tmp_path / "uv-cache"
        venv = venvs.make_uv_venv(tmp_path / "v", cache)
        venvs.uv_install(venv, cache, *offline(wheelhouse), "-e", str(project))
    venvs.run([str(venvs.python_of(venv)), "-c", "import mypkg.util"])  # writes __pycache__ in the tree
    assert audit(venv=str(venv)).drifts == []

    time.sleep(1.1)  # reflog times have one-second resolution
    (project / "src/mypkg/__init__.py").write_text(
        "import torch\n\ndef forward(x):\n    torch.save(x, '/tmp/dump.pt')\n    return x * 2\n")
    (project / "src/mypkg/patch.py").write_text("OVERRIDES = {}\n")
    (project / "src/mypkg/util.py").unlink()
    git_index = project / ".git/index"
    index_mtime = git_index.stat().st_mtime_ns

    report = audit(venv=str(venv))
    assert source_drifts(report) == {("src/mypkg/__init__.py", "modified"), ("src/mypkg/patch.py", "added"),
                                     ("src/mypkg/util.py", "missing")}
    assert git_index.stat().st_mtime_ns == index_mtime  # git status did not refresh the index
    init = next(d for d in report.drifts if d.relpath == "src/mypkg/__init__.py")
    assert init.survives_reinstall is True and init.prediction.value == "survives"
    assert init.path == str(project / "src/mypkg/__init__.py")
    assert init.distribution.name == "mypkg"
    assert init.remedy == f"git -C {project} checkout HEAD -- src/mypkg/__init__.py"
    assert "+    torch.save(x, '/tmp/dump.pt')" in init.diff
    dump = [f for f in init.findings if f.code == "DBG101"]  # the debug rules ran on the source drift
    assert dump and dump[0].line == 4 and dump[0].severity.value == "high"

    import git

    repo = git.Repo(project)
    installed_at = repo.head.commit.hexsha
    repo.index.add(["src/mypkg/__init__.py"])
    repo.index.commit("keep the dump")
    report = audit(venv=str(venv))
    moved = [d for d in report.drifts if d.kind.value == "head-moved"]
    assert len(moved) == 1 and moved[0].expected["commit"] == installed_at
    assert moved[0].actual["commit"] == repo.head.commit.hexsha
    assert ("src/mypkg/__init__.py", "modified") not in source_drifts(report)


def test_editable_without_git_is_unverifiable(tmp_path, wheelhouse):
    project = make_project(tmp_path / "proj")
    import shutil

    shutil.rmtree(project / ".git")
    venv = venvs.make_pip_venv(tmp_path / "v")
    venvs.pip_install(venv, *offline(wheelhouse), "-e", str(project))
    report = audit(venv=str(venv))
    assert report.drifts == []
    assert [u.distribution for u in report.unverifiable] == ["mypkg 0.1 (editable)"]
    assert "not a git repository" in report.unverifiable[0].reason


def test_editable_source_tree_gone(tmp_path, wheelhouse):
    project = make_project(tmp_path / "proj")
    venv = venvs.make_pip_venv(tmp_path / "v")
    venvs.pip_install(venv, *offline(wheelhouse), "-e", str(project))
    os.rename(project, tmp_path / "moved")
    report = audit(venv=str(venv))
    assert [(d.kind.value, d.scope.value, d.path) for d in report.drifts] == [("missing", "source", str(project))]
