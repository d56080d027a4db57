"""What verify_model_dir accepts, how it recognises a directory, and what it refuses."""

from __future__ import annotations

import os

import pytest

from driftscan.core.errors import TargetError
from driftscan.formats.manifest import MANIFEST_NAME, build_manifest, write_manifest
from driftscan.modeldir import NO_PROVENANCE, verify_model_dir
from fixtures.modeldirs import build_cache_repo, build_git_clone, build_local_dir, seed_files



def test_nonexistent_path_raises_target_error(tmp_path):
    with pytest.raises(TargetError, match="no such directory") as info:
        verify_model_dir(str(tmp_path / "absent"))
    assert "\n" not in str(info.value)


def test_a_file_is_not_a_model_directory(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(TargetError, match="not a directory"):
        verify_model_dir(str(tmp_path / "config.json"))


def test_dangling_symlink_as_the_target(tmp_path):
    (tmp_path / "link").symlink_to(tmp_path / "gone")
    with pytest.raises(TargetError, match="not a directory"):
        verify_model_dir(str(tmp_path / "link"))


def test_a_plain_directory_is_unverifiable_never_clean(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    result = verify_model_dir(str(tmp_path / "m"))
    assert result.kind == "unknown" and result.checks == () and result.files_checked == 0
    assert [(u.distribution, u.reason) for u in result.unverifiable] == [(str(tmp_path / "m"), NO_PROVENANCE)]
    assert NO_PROVENANCE == "no download metadata, no git repository, no driftscan manifest"


def test_kinds_are_recognised(tmp_path):
    local = build_local_dir(tmp_path / "local", seed_files())
    repo = build_cache_repo(tmp_path / "hub", seed_files())
    build_git_clone(tmp_path / "clone", seed_files())
    plain = tmp_path / "plain"
    plain.mkdir()
    write_manifest(str(plain), build_manifest(str(plain)), str(plain / MANIFEST_NAME))
    kinds = {p.name: verify_model_dir(str(p)).kind for p in (local, repo, tmp_path / "clone", plain)}
    assert kinds == {"local": "hf-local-dir", repo.name: "hf-cache-repo", "clone": "git", "plain": "manifest"}


def test_download_metadata_wins_over_an_in_tree_manifest_and_git(tmp_path):
    root = build_local_dir(tmp_path / "m", seed_files())
    write_manifest(str(root), build_manifest(str(root)), str(root / MANIFEST_NAME))
    assert verify_model_dir(str(root)).kind == "hf-local-dir"
    assert verify_model_dir(str(root), manifest=str(root / MANIFEST_NAME)).kind == "manifest"


def test_relative_path_is_reported_absolute(tmp_path, monkeypatch):
    build_local_dir(tmp_path / "m", seed_files())
    monkeypatch.chdir(tmp_path)
    result = verify_model_dir("m")
    assert result.path == result.root == str(tmp_path / "m")


def test_output_is_sorted_and_deterministic(tmp_path):
    root = build_local_dir(tmp_path / "m", seed_files())
    for name in ("z.txt", "a.txt", "m/inner.txt"):
        os.makedirs(os.path.dirname(root / name), exist_ok=True)
        (root / name).write_text(name)
    (root / "config.json").write_text("{}")
    first, second = verify_model_dir(str(root), jobs=1), verify_model_dir(str(root), jobs=2)
    assert first.checks == second.checks
    assert [c.path for c in first.checks] == sorted(c.path for c in first.checks)
