"""modeldir/hfcache.py: where the hub cache is, its repositories, and which snapshot a ref names."""

from __future__ import annotations

import os

import pytest

from driftscan.modeldir.hfcache import (
    blob_in_cache, containment_root, default_hf_cache, find_cache_repos, is_cache_repo, repo_id_of,
    resolve_revision, snapshot_parent, snapshots_of,
)
from fixtures.modeldirs import COMMIT, COMMIT_2, build_cache_repo, dump_json, git_blob_sha1, seed_files


@pytest.fixture
def repo(tmp_path):
    return build_cache_repo(tmp_path / "hub", seed_files())


def test_refs_main_names_the_default_snapshot(repo):
    rev = resolve_revision(str(repo), None)
    assert (rev.commit, rev.ref, rev.problem) == (COMMIT, "main", None)
    assert rev.label == f"main ({COMMIT})"


def test_a_commit_and_a_unique_prefix_name_their_snapshot(repo):
    assert resolve_revision(str(repo), COMMIT) == resolve_revision(str(repo), COMMIT[:7])
    rev = resolve_revision(str(repo), COMMIT[:7])
    assert (rev.commit, rev.ref, rev.problem, rev.label) == (COMMIT, None, None, COMMIT)


def test_a_nested_ref_with_or_without_refs_prefix(tmp_path):
    cache = tmp_path / "hub"
    build_cache_repo(cache, seed_files(), commit=COMMIT_2, ref="pr/1")
    repo = build_cache_repo(cache, seed_files())
    for name in ("pr/1", "refs/pr/1"):
        rev = resolve_revision(str(repo), name)
        assert (rev.commit, rev.ref, rev.problem) == (COMMIT_2, "pr/1", None)


def test_an_ambiguous_prefix_is_refused(tmp_path):
    cache = tmp_path / "hub"
    build_cache_repo(cache, seed_files(), commit="abcdef1" + "0" * 33, ref=None)
    repo = build_cache_repo(cache, seed_files(), commit="abcdef1" + "1" * 33, ref=None)
    rev = resolve_revision(str(repo), "abcdef1")
    assert rev.commit is None and rev.problem.startswith("commit prefix abcdef1 is ambiguous")


@pytest.mark.parametrize("content, why", [
    ("", "refs/main is empty"),
    ("ref: refs/heads/main", "refs/main does not hold a commit hash: 'ref: refs/heads/main'"),
    ("G" * 40, "refs/main does not hold a commit hash"),
    ("a" * 65, "refs/main does not hold a commit hash"),
])
def test_a_ref_that_is_not_a_commit_is_refused(repo, content, why):
    (repo / "refs" / "main").write_text(content)
    rev = resolve_revision(str(repo), None)
    assert rev.commit is None and rev.ref == "main" and rev.problem.startswith(why)


def test_a_ref_naming_a_commit_without_a_snapshot(repo):
    (repo / "refs" / "main").write_text("e" * 40)
    rev = resolve_revision(str(repo), None)
    assert (rev.commit, rev.ref) == ("e" * 40, "main")
    assert rev.problem == f"refs/main names commit {'e' * 40}, but snapshots/{'e' * 40} does not exist"


def test_a_ref_that_is_a_symlink_out_of_the_repository_is_not_read(repo, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.write_text(COMMIT)
    (repo / "refs" / "main").unlink()
    (repo / "refs" / "main").symlink_to(outside)
    rev = resolve_revision(str(repo), None)
    assert rev.commit is None and rev.problem.startswith("cannot read refs/main")


@pytest.mark.parametrize("name", ["../../etc/passwd", "refs/../main", "/main"])
def test_a_ref_name_climbing_out_is_refused(repo, name):
    rev = resolve_revision(str(repo), name)
    assert rev.commit is None and rev.problem == f"{name!r} is not a valid ref name"


def test_an_unknown_revision_lists_the_snapshots(repo):
    rev = resolve_revision(str(repo), "v2")
    assert rev.commit is None and rev.problem == f"no ref or snapshot named 'v2' (snapshots: {COMMIT})"


def test_without_refs_the_only_snapshot_is_used_but_not_for_a_named_revision(tmp_path):
    repo = build_cache_repo(tmp_path / "hub", seed_files(), ref=None)
    assert resolve_revision(str(repo), None).commit == COMMIT
    assert resolve_revision(str(repo), "main").commit is None


def test_snapshots_of_lists_directories_only(repo):
    (repo / "snapshots" / "stray-file").write_text("")
    assert snapshots_of(str(repo)) == [COMMIT]
    assert snapshots_of(str(repo / "absent")) == []


def test_is_cache_repo_and_snapshot_parent(repo, tmp_path):
    assert is_cache_repo(str(repo)) and not is_cache_repo(str(repo.parent))
    snap = repo / "snapshots" / COMMIT
    assert snapshot_parent(str(snap)) == str(repo)
    assert snapshot_parent(str(repo)) is None
    plain = tmp_path / "plain" / "snapshots" / "x"
    plain.mkdir(parents=True)
    assert snapshot_parent(str(plain)) is None  # snapshots/ without blobs/ is not a repository
    renamed = tmp_path / "mirror"
    (renamed / "snapshots").mkdir(parents=True)
    (renamed / "blobs").mkdir()
    assert is_cache_repo(str(renamed))  # a repository folder renamed still has both


def test_containment_root_is_the_repository_for_anything_in_a_snapshot(repo, tmp_path):
    snap = repo / "snapshots" / COMMIT
    (snap / "sub" / "deeper").mkdir(parents=True)
    assert containment_root(str(repo)) == str(repo)
    assert containment_root(str(snap)) == str(repo)
    assert containment_root(str(snap / "sub" / "deeper")) == str(repo)
    assert containment_root(str(tmp_path)) == str(tmp_path)


def test_blob_in_cache_finds_a_blob_by_etag_and_refuses_paths(tmp_path):
    cache = tmp_path / "hub"
    build_cache_repo(cache, {"a.json": dump_json({"a": 1})}, repo_id="org/a")
    build_cache_repo(cache, {"config.json": seed_files()["config.json"]}, repo_id="org/b")
    repos = find_cache_repos(str(cache))
    etag = git_blob_sha1(seed_files()["config.json"])
    assert blob_in_cache(repos, etag) == os.path.join(repos[1], "blobs", etag)
    assert blob_in_cache(repos, "0" * 40) is None
    for bad in ("", "../blobs/" + etag, ".hidden"):
        assert blob_in_cache(repos, bad) is None


def test_a_blob_that_is_a_symlink_out_of_its_repository_is_not_offered(tmp_path):
    repo = build_cache_repo(tmp_path / "hub", {"a.json": dump_json({})})
    outside = tmp_path / "outside"
    outside.write_text("secret")
    (repo / "blobs" / ("f" * 40)).symlink_to(outside)
    assert blob_in_cache([str(repo)], "f" * 40) is None


def test_find_cache_repos_and_default_location(tmp_path, monkeypatch):
    cache = tmp_path / "hub"
    build_cache_repo(cache, {"config.json": dump_json({})}, repo_id="org/model")
    build_cache_repo(cache, {"data.json": dump_json({})}, repo_id="org/data")
    (cache / "datasets--org--set").mkdir()
    assert [os.path.basename(r) for r in find_cache_repos(str(cache))] == [
        "datasets--org--set", "models--org--data", "models--org--model"]
    assert repo_id_of(find_cache_repos(str(cache))[2]) == "org/model"
    assert find_cache_repos(str(tmp_path / "absent")) == []
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    assert default_hf_cache() == str(tmp_path / "hf" / "hub")
    monkeypatch.delenv("HF_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_hf_cache() == str(tmp_path / "xdg" / "huggingface" / "hub")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    assert default_hf_cache() == str(cache)


# ---- a cache asked for that holds no repository ------------------------------------------------

def test_no_repository_names_the_cache_only_when_it_is_empty(tmp_path):
    from driftscan.modeldir.hfcache import no_repository

    cache = tmp_path / "hub"
    (cache / ".locks").mkdir(parents=True)
    (cache / "models--not-a-dir").write_text("")
    assert no_repository(str(cache)) == (f"the Hugging Face cache {cache} holds no repository"
                                         " (models--*/, datasets--*/, spaces--*/)")
    build_cache_repo(cache, seed_files())
    assert no_repository(str(cache)) is None


def test_an_empty_cache_alone_is_what_could_not_be_checked_not_an_environment(tmp_path):
    from driftscan import audit
    from driftscan.report.policy import EXIT_INCOMPLETE, exit_status

    cache = tmp_path / "hub"
    cache.mkdir()
    report = audit(hf_cache=str(cache))
    message = f"the Hugging Face cache {cache} holds no repository (models--*/, datasets--*/, spaces--*/)"
    assert [(e.path, e.message) for e in report.errors] == [(str(cache), message)]
    assert (report.target.kind, report.target.venv, report.target.site_packages) == ("none", None, [])
    assert report.summary.distributions == 0 and report.summary.files_checked == 0
    assert exit_status(report) & EXIT_INCOMPLETE


def test_an_empty_cache_beside_a_model_directory_is_a_note(tmp_path):
    from driftscan import audit

    cache = tmp_path / "hub"
    cache.mkdir()
    other = build_cache_repo(tmp_path / "elsewhere", seed_files())
    report = audit(hf_cache=str(cache), model_dirs=[str(other)])
    assert report.errors == [] and report.drifts == [] and report.target.venv is None
    assert [(s.path, s.message.split(" holds ")[1]) for s in report.skipped] == [
        (str(cache), "no repository (models--*/, datasets--*/, spaces--*/)")]
