"""provenance/hubcache.py: hub cache repositories, snapshot symlinks against blobs named by their etag."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from driftscan.core.values import DriftKind
from driftscan.modeldir import verify_model_dir
from fixtures.modeldirs import (
    COMMIT, COMMIT_2, build_cache_repo, git_blob_sha1, seed_files, sm120_edit, sm120_json_changes,
    tree_state,
)



@pytest.fixture
def repo(tmp_path):
    return build_cache_repo(tmp_path / "hub", seed_files())


def snapshot(repo, commit=COMMIT):
    return repo / "snapshots" / commit


def drifts(result):
    return {(os.path.relpath(c.path, result.root), c.kind.value) for c in result.checks}


def test_pristine_repository_is_clean(repo):
    result = verify_model_dir(str(repo))
    assert (result.kind, result.root, result.commit) == ("hf-cache-repo", str(snapshot(repo)), COMMIT)
    assert result.checks == () and result.errors == () and result.unverifiable == ()
    assert result.files_checked == len(seed_files())


def test_edit_through_the_symlink_changes_the_blob(repo):
    """open(path, "w") follows the link: the blob's content no longer matches its name."""
    config = snapshot(repo) / "config.json"
    with open(config, "w") as f:
        f.write('{"edited": true}\n')
    result = verify_model_dir(str(repo))
    [check] = result.checks
    etag = git_blob_sha1(seed_files()["config.json"])
    assert (check.kind, check.path) == (DriftKind.MODIFIED, str(config))
    assert check.expected["blob"] == etag and os.path.islink(config)
    assert check.actual["git_blob_sha1"] == git_blob_sha1(b'{"edited": true}\n')
    assert f"blobs/{etag} was edited in place" in check.evidence
    assert check.json_changes == ()  # the only copy of the original was overwritten


def test_edit_seen_from_every_snapshot_sharing_the_blob(tmp_path):
    cache = tmp_path / "hub"
    build_cache_repo(cache, seed_files(), commit=COMMIT_2, ref=None)
    repo = build_cache_repo(cache, seed_files())
    with open(snapshot(repo) / "generation_config.json", "a") as f:
        f.write(" ")
    [check] = verify_model_dir(str(repo)).checks
    assert check.actual["also_linked_by"] == [f"{COMMIT_2}/generation_config.json"]
    assert "1 other snapshot link sees the same edit" in check.evidence


def test_sed_i_replaces_the_symlink_and_the_blob_is_the_original(repo):
    """sed -i writes a new file and renames it over the link: the blob stays intact."""
    sm120_edit(snapshot(repo), rename=True)
    blob = repo / "blobs" / git_blob_sha1(seed_files()["config.json"])
    assert blob.read_bytes() == seed_files()["config.json"]
    result = verify_model_dir(str(repo))
    assert drifts(result) == {("config.json", "modified"), ("hf_quant_config.json", "modified")}
    by_name = {os.path.basename(c.path): c for c in result.checks}
    changes = sm120_json_changes(result.checks)
    assert changes["got"] == changes["want"]
    assert by_name["config.json"].expected == {"type": "symlink", "blob": blob.name}
    assert "replaced by a regular file that differs from" in by_name["config.json"].evidence


def test_symlink_replaced_by_an_identical_copy_is_a_type_change(repo):
    link = snapshot(repo) / "tokenizer_config.json"
    data = link.read_bytes()
    link.unlink()
    link.write_bytes(data)
    [check] = verify_model_dir(str(repo)).checks
    assert check.kind is DriftKind.TYPE_CHANGED and "content identical" in check.evidence


def test_a_new_regular_file_with_no_original_is_added(repo):
    (snapshot(repo) / "chat_template.jinja").write_bytes(b"\x00\x01 binary, like no blob")
    assert drifts(verify_model_dir(str(repo))) == {("chat_template.jinja", "added")}


def test_dangling_symlink_is_missing(repo):
    shard = "model-00002-of-00002.safetensors"
    target = (snapshot(repo) / shard).resolve()
    target.unlink()
    result = verify_model_dir(str(repo))
    [check] = result.checks  # the index names the shard too, but one path gives one drift
    assert (os.path.basename(check.path), check.kind) == (shard, DriftKind.MISSING)
    assert check.expected["blob"] == target.name and check.actual["dangling"] is True


def test_symlink_loop_is_a_problem_not_an_exception(repo):
    loop = snapshot(repo) / "loop.json"
    loop.symlink_to("loop.json")
    result = verify_model_dir(str(repo))
    assert result.checks == ()
    assert [(p.path, p.message) for p in result.errors] == [(str(loop), "cannot follow symlink: symlink loop")]


def test_large_blob_newer_than_its_link_is_stale(repo):
    link = snapshot(repo) / "model-00001-of-00002.safetensors"
    now = time.time()
    os.utime(link, (now, now))  # follows the link: the blob's mtime
    [check] = verify_model_dir(str(repo), small_file_limit=100).checks
    assert check.kind is DriftKind.STALE_METADATA and "after the snapshot link to it was created" in check.evidence


def test_revision_by_ref_commit_and_prefix(tmp_path):
    cache = tmp_path / "hub"
    build_cache_repo(cache, seed_files(), commit=COMMIT_2, ref="pr/1")
    repo = build_cache_repo(cache, seed_files())
    (snapshot(repo, COMMIT_2) / "extra.txt").write_text("only in the PR snapshot\n")
    default = verify_model_dir(str(repo))
    assert (default.root, default.checks) == (str(snapshot(repo)), ())
    for revision in ("pr/1", "refs/pr/1", COMMIT_2, COMMIT_2[:8]):
        result = verify_model_dir(str(repo), revision=revision)
        assert (result.root, result.commit) == (str(snapshot(repo, COMMIT_2)), COMMIT_2)
        assert drifts(result) == {("extra.txt", "added")}


def test_path_to_a_snapshot_itself(repo):
    with open(snapshot(repo) / "config.json", "a") as f:
        f.write("\n")
    result = verify_model_dir(str(snapshot(repo)))
    assert (result.kind, result.root) == ("hf-cache-repo", str(snapshot(repo)))
    assert drifts(result) == {("config.json", "modified")}


def test_refs_main_naming_a_missing_snapshot(repo):
    (repo / "refs" / "main").write_text("f" * 40)
    result = verify_model_dir(str(repo))
    assert result.checks == () and result.files_checked == 0
    [problem] = result.errors
    assert problem.path == str(repo / "refs" / "main")
    assert problem.message == f"refs/main names commit {'f' * 40}, but snapshots/{'f' * 40} does not exist"
    assert [u.reason for u in result.unverifiable] == [problem.message]


def test_unknown_revision_lists_the_snapshots(repo):
    result = verify_model_dir(str(repo), revision="v2")
    assert result.unverifiable[0].reason == f"no ref or snapshot named 'v2' (snapshots: {COMMIT})"


def test_no_refs_with_a_single_snapshot_uses_it(tmp_path):
    repo = build_cache_repo(tmp_path / "hub", seed_files(), ref=None)
    result = verify_model_dir(str(repo))
    assert result.commit == COMMIT and result.checks == ()


def test_hub_cache_root_is_unverifiable_with_a_hint(repo):
    result = verify_model_dir(str(repo.parent))
    assert result.kind == "unknown"
    assert "it looks like a Hugging Face cache" in result.unverifiable[0].reason


def test_audit_writes_nothing(repo):
    with open(snapshot(repo) / "config.json", "a") as f:
        f.write(" ")
    before = tree_state(repo.parent)
    verify_model_dir(str(repo), deep=True)
    verify_model_dir(str(repo), small_file_limit=10)
    assert tree_state(repo.parent) == before


# ---- recognise and way_back (the provenance interface) -----------------------------------------

def test_recognise_a_repository_chooses_its_snapshot(repo):
    from driftscan.modeldir.provenance import hubcache

    layout = hubcache.recognise(str(repo), None, None)
    assert (layout.kind, layout.repo_dir, layout.root, layout.revision.commit) == (
        "hf-cache-repo", str(repo), str(snapshot(repo)), COMMIT)
    unresolved = hubcache.recognise(str(repo), "nope", None)
    assert unresolved.root == str(repo) and unresolved.revision.problem  # no snapshot: the repository itself
    assert hubcache.recognise(str(repo.parent), None, None) is None  # the cache is not a repository


def test_way_back_removes_an_edited_blob_before_downloading_again(repo):
    from driftscan.modeldir.provenance import hubcache

    with open(snapshot(repo) / "config.json", "a") as f:
        f.write(" ")
    result = verify_model_dir(str(repo))
    [check] = result.checks
    etag = check.expected["blob"]
    way = hubcache.way_back(check, result.root, result.commit, {})
    assert way.remedy == (f"rm {repo / 'blobs' / etag} {check.path} && "
                          f"hf download nvidia/Kimi-K2.5-NVFP4 config.json --revision {COMMIT}")


def test_way_back_of_a_replaced_symlink_relinks_the_intact_blob(repo):
    from driftscan.modeldir.provenance import hubcache

    sm120_edit(snapshot(repo), rename=True)
    result = verify_model_dir(str(repo))
    check = next(c for c in result.checks if c.path.endswith("/config.json"))
    assert (repo / "blobs" / check.expected["blob"]).read_bytes() == seed_files()["config.json"]  # intact
    way = hubcache.way_back(check, result.root, None, {})
    assert way.remedy == f"ln -sfn ../../blobs/{check.expected['blob']} {check.path}"
    assert f"blobs/{check.expected['blob']} is intact" in way.evidence


# ---- the offline way back: the snapshot link re-made to a verified blob --------------------------

def _remedies(root):
    from driftscan.modeldir.remedies import with_remedies

    result = verify_model_dir(str(root))
    return result, {os.path.relpath(c.path, result.root): c for c in with_remedies(result)}


def _after_checkpoint(remedy, model_root):
    from driftscan.modeldir.remedies import CHECKPOINT_FIRST

    head, sep, rest = remedy.partition(" && ")
    assert sep and head.startswith(f"{CHECKPOINT_FIRST}driftscan checkpoint --model-dir {model_root} -o "), remedy
    return rest


def _run(command, cwd):
    subprocess.run(command, shell=True, check=True, cwd=cwd, capture_output=True)


def test_sed_i_gets_the_offline_relink_and_running_it_ends_the_drift(repo, tmp_path):
    link = snapshot(repo) / "tokenizer_config.json"
    etag = os.path.basename(os.readlink(link))
    subprocess.run(["sed", "-i", "s/262144/131072/", str(link)], check=True)  # the real sed: a new file
    assert not link.is_symlink()
    result, checks = _remedies(repo)
    check = checks["tokenizer_config.json"]
    assert check.kind is DriftKind.MODIFIED and check.expected["blob"] == etag
    rest = _after_checkpoint(check.remedy_hint, result.root)
    assert rest == f"ln -sfn ../../blobs/{etag} {link}"
    assert "hf download" not in check.remedy_hint and "without a download" in check.evidence
    _run(rest, tmp_path)  # from anywhere: the link's target is relative to the link
    assert os.readlink(link) == f"../../blobs/{etag}"
    assert verify_model_dir(str(repo)).checks == ()


def test_a_replaced_file_in_a_subfolder_links_back_from_its_depth(tmp_path):
    repo = build_cache_repo(tmp_path / "hub", {**seed_files(), "tokenizer/sub/vocab.json": b'{"a": 1}\n'})
    link = snapshot(repo) / "tokenizer" / "sub" / "vocab.json"
    etag = os.path.basename(os.readlink(link))
    subprocess.run(["sed", "-i", "s/1/2/", str(link)], check=True)
    result, checks = _remedies(repo)
    rest = _after_checkpoint(checks["tokenizer/sub/vocab.json"].remedy_hint, result.root)
    assert rest == f"ln -sfn ../../../../blobs/{etag} {link}"
    _run(rest, tmp_path)
    assert link.read_bytes() == b'{"a": 1}\n' and verify_model_dir(str(repo)).checks == ()


def test_an_identical_copy_is_relinked_too(repo, tmp_path):
    link = snapshot(repo) / "tokenizer_config.json"
    etag = os.path.basename(os.readlink(link))
    data = link.read_bytes()
    link.unlink()
    link.write_bytes(data)
    result, checks = _remedies(repo)
    check = checks["tokenizer_config.json"]
    assert check.kind is DriftKind.TYPE_CHANGED
    rest = _after_checkpoint(check.remedy_hint, result.root)
    assert rest == f"ln -sfn ../../blobs/{etag} {link}"
    _run(rest, tmp_path)
    assert verify_model_dir(str(repo)).checks == ()


def _twin_repos(tmp_path, name: str):
    """Two repositories of one cache holding the same files: (the other one, this one, the link
    to ``name`` in this one's snapshot, its blob's etag)."""
    cache = tmp_path / "hub"
    other = build_cache_repo(cache, seed_files(), repo_id="someone/kimi-copy")
    repo = build_cache_repo(cache, seed_files())
    link = snapshot(repo) / name
    return other, repo, link, os.path.basename(os.readlink(link))


def test_an_edited_blob_is_restored_from_the_same_blob_in_another_repository(tmp_path):
    other, repo, link, etag = _twin_repos(tmp_path, "config.json")
    with open(link, "a") as f:  # through the link: this repository's blob is the edited one
        f.write(" ")
    result, checks = _remedies(repo)
    check = checks["config.json"]
    theirs, mine = other / "blobs" / etag, repo / "blobs" / etag
    rest = _after_checkpoint(check.remedy_hint, result.root)
    assert rest == f"rm {mine} && cp {theirs} {mine} && ln -sfn ../../blobs/{etag} {link}"
    assert f"{theirs} is the same blob, verified against its etag" in check.evidence
    _run(rest, tmp_path)
    assert verify_model_dir(str(repo)).checks == () and verify_model_dir(str(other)).checks == ()


def test_a_blob_edited_in_place_is_diffed_against_the_same_blob_in_another_repository(tmp_path):
    other, repo, link, _ = _twin_repos(tmp_path, "config.json")
    sm120_edit(snapshot(repo))  # through the links: this repository's blobs are the edited ones
    result = verify_model_dir(str(repo))
    changes = sm120_json_changes(result.checks)
    assert changes["got"] == changes["want"]
    assert verify_model_dir(str(other)).checks == ()  # only read, never written


def test_without_an_intact_twin_an_edited_blob_has_no_json_changes(tmp_path):
    other, repo, link, etag = _twin_repos(tmp_path, "config.json")
    (other / "blobs" / etag).write_bytes(b'{"edited": "there too"}\n')
    sm120_edit(snapshot(repo))
    result = verify_model_dir(str(repo))
    check = next(c for c in result.checks if c.path.endswith("/config.json"))
    assert check.kind is DriftKind.MODIFIED and check.json_changes == () and check.diff is None


def test_a_deleted_blob_is_copied_from_another_repository_without_a_checkpoint(tmp_path):
    other, repo, link, etag = _twin_repos(tmp_path, "generation_config.json")
    (repo / "blobs" / etag).unlink()
    result, checks = _remedies(repo)
    check = checks["generation_config.json"]
    assert check.kind is DriftKind.MISSING  # nothing on disk to lose: no checkpoint line
    assert check.remedy_hint == (f"cp {other / 'blobs' / etag} {repo / 'blobs' / etag} && "
                                 f"ln -sfn ../../blobs/{etag} {link}")
    _run(check.remedy_hint, tmp_path)
    assert verify_model_dir(str(repo)).checks == ()


def test_an_edited_copy_in_another_repository_is_no_original(tmp_path):
    other, repo, link, etag = _twin_repos(tmp_path, "generation_config.json")
    (repo / "blobs" / etag).unlink()
    (other / "blobs" / etag).write_bytes(b"edited there too\n")
    _, checks = _remedies(repo)
    remedy = checks["generation_config.json"].remedy_hint
    assert remedy == f"rm {link} && hf download nvidia/Kimi-K2.5-NVFP4 generation_config.json --revision {COMMIT}"


def test_a_replaced_file_whose_blob_was_edited_too_is_not_relinked(repo):
    """sed -i left the blob, then something edited the blob: no verified original here."""
    from driftscan.modeldir.provenance import hubcache

    sm120_edit(snapshot(repo), rename=True)
    result = verify_model_dir(str(repo))
    check = next(c for c in result.checks if c.path.endswith("/config.json"))
    (repo / "blobs" / check.expected["blob"]).write_bytes(b"{}\n")
    way = hubcache.way_back(check, result.root, COMMIT, {})
    assert way.remedy == f"rm {check.path} && hf download nvidia/Kimi-K2.5-NVFP4 config.json --revision {COMMIT}"


def test_way_back_outside_a_repository(tmp_path):
    from driftscan.core.values import FileCheck
    from driftscan.modeldir.provenance import hubcache

    check = FileCheck(DriftKind.MISSING, str(tmp_path / "a.json"), str(tmp_path), None, {}, {}, "gone")
    assert hubcache.way_back(check, str(tmp_path), COMMIT, {}).remedy == "restore it from its source"
