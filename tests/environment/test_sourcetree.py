"""environment/sourcetree.py: editable installs' source trees verified through git (real
repositories made with git in tmp_path)."""

from __future__ import annotations

import os
import shutil

import pytest

from driftscan.core.values import Area, Distribution, DriftKind
from driftscan.environment.editable import EditableSource
from driftscan.environment.sourcetree import verify_source, verify_sources
from fixtures.gitrepos import commit, git, init_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

FILES = {"pyproject.toml": "[project]\nname = 'proj'\nversion = '0.1'\n", "src/proj/__init__.py": "",
         "src/proj/core.py": "def f():\n    return 1\n"}


def source(project, tmp_path, recorded=None):
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    dist = Distribution("proj", "0.1", str(site / "proj-0.1.dist-info"), str(site),
                        direct_url={"url": f"file://{project}", "dir_info": {"editable": True}})
    return EditableSource("proj", "0.1", str(project), "direct_url", dist, None, recorded)


@pytest.fixture
def repo(tmp_path):
    return init_repo(tmp_path / "proj", FILES)


def by_rel(outcome, repo):
    return {os.path.relpath(c.path, repo): c for c in outcome.checks}


def test_a_clean_tree(repo, tmp_path):
    outcome = verify_source(source(repo, tmp_path, recorded=git(repo, "rev-parse", "HEAD")))
    assert outcome.checks == [] and outcome.errors == [] and outcome.unverifiable == []
    assert outcome.files_checked == 3  # the tracked files


def test_edits_deletions_and_untracked_files(repo, tmp_path):
    (repo / "src/proj/core.py").write_text("def f():\n    breakpoint()\n    return 1\n")
    (repo / "src/proj/__init__.py").unlink()
    (repo / "src/proj/scratch.py").write_text("")
    # What installing or importing the project writes is no edit:
    (repo / "src/proj/__pycache__").mkdir()
    (repo / "src/proj/__pycache__/core.cpython-311.pyc").write_bytes(b"")
    (repo / "src/proj.egg-info").mkdir()
    (repo / "src/proj.egg-info/PKG-INFO").write_text("")
    checks = by_rel(verify_source(source(repo, tmp_path)), repo)
    assert {rel: c.kind for rel, c in checks.items()} == {"src/proj/core.py": DriftKind.MODIFIED,
                                                          "src/proj/__init__.py": DriftKind.MISSING,
                                                          "src/proj/scratch.py": DriftKind.ADDED}
    edited = checks["src/proj/core.py"]
    assert edited.area is Area.SOURCE and edited.root == str(repo)
    assert "+    breakpoint()" in edited.diff
    assert edited.remedy_hint == f"git -C {repo} checkout HEAD -- src/proj/core.py"
    assert checks["src/proj/scratch.py"].remedy_hint == f"git -C {repo} clean -f -- src/proj/scratch.py"
    assert checks["src/proj/scratch.py"].evidence == "not tracked by git"


def test_head_moved_since_the_recorded_commit(repo, tmp_path):
    first = git(repo, "rev-parse", "HEAD")
    second = commit(repo, {"src/proj/core.py": "def f():\n    return 2\n"}, "second")
    [moved] = verify_source(source(repo, tmp_path, recorded=first)).checks
    assert moved.kind is DriftKind.HEAD_MOVED
    assert moved.expected == {"commit": first} and moved.actual == {"commit": second}
    assert "recorded in direct_url.json" in moved.evidence


def test_only_the_projects_directory_of_a_larger_repository(tmp_path):
    top = init_repo(tmp_path / "mono", {**{f"proj/{k}": v for k, v in FILES.items()}, "other/x.py": ""})
    (top / "other/x.py").write_text("edited elsewhere\n")
    (top / "proj/src/proj/core.py").write_text("edited\n")
    outcome = verify_source(source(top / "proj", tmp_path))
    assert [os.path.relpath(c.path, top) for c in outcome.checks] == ["proj/src/proj/core.py"]
    assert outcome.files_checked == 3


def test_a_source_tree_that_is_gone(tmp_path):
    [gone] = verify_source(source(tmp_path / "deleted", tmp_path)).checks
    assert gone.kind is DriftKind.MISSING and gone.area is Area.SOURCE and "source tree is gone" in gone.evidence


def test_not_a_python_project_is_not_read(tmp_path):
    etc = init_repo(tmp_path / "etc", {"passwd": "root:x:0:0\n"})
    (etc / "passwd").write_text("edited\n")
    outcome = verify_source(source(etc, tmp_path))
    assert outcome.checks == [] and "not a Python project's source tree" in outcome.unverifiable[0].reason


def test_a_project_that_is_no_git_repository(tmp_path):
    project = tmp_path / "plain"
    project.mkdir()
    (project / "setup.py").write_text("")
    outcome = verify_source(source(project, tmp_path))
    assert outcome.checks == [] and "is not a git repository" in outcome.unverifiable[0].reason
    assert outcome.unverifiable[0].distribution == "proj 0.1 (editable)"


def test_verify_sources_adds_the_outcomes_up(repo, tmp_path):
    (repo / "src/proj/core.py").write_text("edited\n")
    both = verify_sources([source(repo, tmp_path), source(tmp_path / "deleted", tmp_path)])
    assert sorted(c.kind.value for c in both.checks) == ["missing", "modified"] and both.files_checked == 3
