"""modeldir/provenance/: the registry's contract (interface.py) — every provenance module defines
what the interface names, the order kinds are tried in, and the texts built from it."""

from __future__ import annotations

import os

import pytest

from driftscan.core.errors import TargetError
from driftscan.core.values import DriftKind, FileCheck, LayoutKind
from driftscan.formats.manifest import MANIFEST_NAME, build_manifest, write_manifest
from driftscan.modeldir import NO_PROVENANCE
from driftscan.modeldir.layout import ModelDirLayout
from driftscan.modeldir.provenance import PROVENANCES, detect_layout, provenance_of
from driftscan.modeldir.provenance import gitclone, hubcache, localdir, manifestdir
from driftscan.modeldir.provenance.interface import WayBack
from fixtures.modeldirs import COMMIT, build_cache_repo, build_git_clone, build_local_dir, seed_files


def in_tree_manifest(root) -> str:
    path = os.path.join(root, MANIFEST_NAME)
    write_manifest(str(root), build_manifest(str(root)), path)
    return path


def test_the_order_kinds_are_tried_in():
    assert PROVENANCES == (hubcache, localdir, gitclone, manifestdir)
    assert [p.KIND for p in PROVENANCES] == [LayoutKind.HF_CACHE_REPO, LayoutKind.HF_LOCAL_DIR, LayoutKind.GIT,
                                            LayoutKind.MANIFEST]


@pytest.mark.parametrize("module", PROVENANCES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_every_module_defines_the_interface(module):
    assert isinstance(module.KIND, LayoutKind)
    assert module.ABSENT is None or (isinstance(module.ABSENT, str) and module.ABSENT)
    assert isinstance(module.SELF_AUDITED, bool)
    for name in ("recognise", "audit", "way_back"):
        assert callable(getattr(module, name)), name


def test_every_kind_but_unknown_has_exactly_one_module():
    kinds = [p.KIND for p in PROVENANCES]
    assert len(set(kinds)) == len(kinds)
    assert set(kinds) == set(LayoutKind) - {LayoutKind.UNKNOWN}


def test_provenance_of_finds_the_module_of_a_kind():
    for module in PROVENANCES:
        assert provenance_of(module.KIND) is module
    assert provenance_of(LayoutKind.UNKNOWN) is None


def test_no_provenance_names_what_each_record_based_kind_lacks():
    absent = [p.ABSENT for p in PROVENANCES if p.ABSENT]
    assert absent == ["download metadata", "git repository", "driftscan manifest"]  # the hub cache: by its place
    assert NO_PROVENANCE == ", ".join(f"no {a}" for a in absent)
    for text in absent:
        assert f"no {text}" in NO_PROVENANCE


def test_only_a_manifest_named_to_diff_is_not_self_audited():
    assert [p.KIND for p in PROVENANCES if not p.SELF_AUDITED] == [LayoutKind.MANIFEST]


def test_detect_layout_recognises_each_kind(tmp_path):
    local = build_local_dir(tmp_path / "local", seed_files())
    repo = build_cache_repo(tmp_path / "hub", seed_files())
    build_git_clone(tmp_path / "clone", seed_files())
    plain = tmp_path / "plain"
    plain.mkdir()
    manifest = in_tree_manifest(plain)
    unknown = tmp_path / "unknown"
    unknown.mkdir()

    layout = detect_layout(str(local))
    assert (layout.kind, layout.root, layout.manifest) == (LayoutKind.HF_LOCAL_DIR, str(local), None)
    layout = detect_layout(str(repo))
    assert (layout.kind, layout.repo_dir, layout.root) == (LayoutKind.HF_CACHE_REPO, str(repo),
                                                           str(repo / "snapshots" / COMMIT))
    assert layout.revision.commit == COMMIT and layout.revision.ref == "main"
    snap = detect_layout(str(repo / "snapshots" / COMMIT))
    assert (snap.kind, snap.root, snap.repo_dir) == (LayoutKind.HF_CACHE_REPO, str(repo / "snapshots" / COMMIT),
                                                     str(repo))
    layout = detect_layout(str(tmp_path / "clone"))
    assert (layout.kind, layout.git_top) == (LayoutKind.GIT, str(tmp_path / "clone"))
    layout = detect_layout(str(plain))
    assert (layout.kind, layout.manifest) == (LayoutKind.MANIFEST, manifest)
    assert detect_layout(str(unknown)) == ModelDirLayout(str(unknown), str(unknown), LayoutKind.UNKNOWN)


def test_a_subfolder_of_a_clone_is_a_git_tree_with_its_top(tmp_path):
    build_git_clone(tmp_path / "clone", {**seed_files(), "sub/extra.json": b"{}"})
    layout = detect_layout(str(tmp_path / "clone" / "sub"))
    assert (layout.kind, layout.root, layout.git_top) == (LayoutKind.GIT, str(tmp_path / "clone" / "sub"),
                                                          str(tmp_path / "clone"))


def test_an_explicit_manifest_is_used_before_any_provenance(tmp_path):
    local = build_local_dir(tmp_path / "local", seed_files())
    named = tmp_path / "elsewhere.json"
    write_manifest(str(local), build_manifest(str(local)), str(named))
    layout = detect_layout(str(local), manifest=str(named))
    assert (layout.kind, layout.manifest, layout.root) == (LayoutKind.MANIFEST, str(named), str(local))
    repo = build_cache_repo(tmp_path / "hub", seed_files())
    assert detect_layout(str(repo), manifest=str(named)).kind is LayoutKind.MANIFEST


def test_provenance_comes_before_an_in_tree_manifest_which_is_kept_as_a_fallback(tmp_path):
    local = build_local_dir(tmp_path / "local", seed_files())
    manifest = in_tree_manifest(local)
    layout = detect_layout(str(local))
    assert (layout.kind, layout.manifest) == (LayoutKind.HF_LOCAL_DIR, manifest)
    build_git_clone(tmp_path / "clone", seed_files())
    manifest = in_tree_manifest(tmp_path / "clone")
    layout = detect_layout(str(tmp_path / "clone"))
    assert (layout.kind, layout.manifest) == (LayoutKind.GIT, manifest)


def test_hub_cache_comes_before_download_metadata(tmp_path):
    """A snapshot is recognised by its place even if it also holds download metadata."""
    repo = build_cache_repo(tmp_path / "hub", seed_files())
    snap = repo / "snapshots" / COMMIT
    build_local_dir(snap / "inner", {"a.json": b"{}"})
    os.replace(snap / "inner" / ".cache", snap / ".cache")
    assert detect_layout(str(snap)).kind is LayoutKind.HF_CACHE_REPO


def test_a_relative_path_is_made_absolute(tmp_path, monkeypatch):
    build_local_dir(tmp_path / "m", seed_files())
    monkeypatch.chdir(tmp_path)
    layout = detect_layout("m")
    assert layout.path == layout.root == str(tmp_path / "m")


def test_detect_layout_raises_target_error_only_for_a_non_directory(tmp_path):
    with pytest.raises(TargetError, match="no such directory"):
        detect_layout(str(tmp_path / "absent"))
    (tmp_path / "f").write_text("")
    with pytest.raises(TargetError, match="not a directory"):
        detect_layout(str(tmp_path / "f"))


def test_each_recognise_says_no_to_a_plain_directory(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    for module in (hubcache, localdir, manifestdir):
        assert module.recognise(str(plain), None, None) is None, module.__name__
    if gitclone.recognise(str(plain), None, None) is not None:
        pytest.skip("the temporary directory lies inside a git work tree")


@pytest.mark.parametrize("module", PROVENANCES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_every_way_back_gives_a_remedy(module, tmp_path):
    root = str(tmp_path)
    check = FileCheck(DriftKind.MODIFIED, os.path.join(root, "config.json"), root, None, {}, {}, "edited")
    way = module.way_back(check, root, COMMIT, {})
    assert isinstance(way, WayBack) and way.remedy and isinstance(way.evidence, str)

