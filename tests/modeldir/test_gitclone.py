"""git clones: the work tree against HEAD (or a revision), git LFS pointers, untracked files."""

from __future__ import annotations

import os
import stat

import pytest

from driftscan.formats.manifest import MANIFEST_NAME, build_manifest, write_manifest
from driftscan.core.values import DriftKind
from driftscan.modeldir import verify_model_dir
from driftscan.formats.lfs import parse_lfs_pointer
from fixtures.modeldirs import (
    build_git_clone, dump_json, lfs_pointer, safetensors_bytes, seed_files, sha256_hex, sm120_edit, sm120_json_changes,
    tree_state,
)



@pytest.fixture
def clone(tmp_path):
    files = {**seed_files(), ".gitignore": b"*.log\n__pycache__/\n"}
    repo = build_git_clone(tmp_path / "Kimi-K2.5-NVFP4", files)
    return tmp_path / "Kimi-K2.5-NVFP4", repo


def drifts(result):
    return {(os.path.relpath(c.path, result.root), c.kind.value) for c in result.checks}


def test_clean_clone(clone):
    root, repo = clone
    assert repo.git.show("HEAD:model-00001-of-00002.safetensors").startswith("version https://git-lfs")
    result = verify_model_dir(str(root))
    assert (result.kind, result.commit) == ("git", repo.head.commit.hexsha)
    assert result.checks == () and result.errors == () and result.unverifiable == ()
    assert result.files_checked == len(seed_files()) + 1


def test_uncommitted_sm120_edit_names_the_removed_keys(clone):
    root, repo = clone
    sm120_edit(root)
    result = verify_model_dir(str(root))
    assert drifts(result) == {("config.json", "modified"), ("hf_quant_config.json", "modified")}
    by_name = {os.path.basename(c.path): c for c in result.checks}
    changes = sm120_json_changes(result.checks)
    assert changes["got"] == changes["want"]
    head = repo.head.commit.hexsha
    config = by_name["config.json"]
    assert config.expected == {"blob": repo.head.commit.tree["config.json"].hexsha,
                               "size": len(seed_files()["config.json"]), "commit": head}
    assert config.evidence.startswith(f"git blob sha1 differs from HEAD (commit {head[:12]})")


def test_deleted_untracked_and_ignored(clone):
    root, _ = clone
    (root / "README.md").unlink()
    (root / "debug_dump.pt").write_bytes(b"tensor")
    (root / "serve.log").write_text("ignored by .gitignore\n")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "x.pyc").write_bytes(b"\0")
    result = verify_model_dir(str(root))
    assert drifts(result) == {("README.md", "missing"), ("debug_dump.pt", "added")}
    added = next(c for c in result.checks if c.kind is DriftKind.ADDED)
    assert "untracked" in added.evidence


def test_in_tree_manifest_is_not_an_untracked_file(clone):
    root, _ = clone
    write_manifest(str(root), build_manifest(str(root)), str(root / MANIFEST_NAME))
    result = verify_model_dir(str(root))
    assert result.kind == "git" and result.checks == ()


def test_staged_changes_count_against_head(clone):
    root, repo = clone
    (root / "generation_config.json").write_bytes(dump_json({"max_length": 1}))
    (root / "new.json").write_bytes(b"{}\n")
    repo.git.add("generation_config.json", "new.json")
    assert drifts(verify_model_dir(str(root))) == {("generation_config.json", "modified"), ("new.json", "added")}


def test_lfs_file_with_real_content_is_not_modified(clone):
    """The index holds the pointer, the work tree the weights: compare size (and sha256 with deep)."""
    root, _ = clone
    shard = root / "model-00001-of-00002.safetensors"
    assert verify_model_dir(str(root), small_file_limit=64).checks == ()
    deep = verify_model_dir(str(root), small_file_limit=64, deep=True)
    assert deep.checks == () and deep.bytes_hashed >= shard.stat().st_size


def test_lfs_file_changes(clone):
    root, _ = clone
    shard = root / "model-00001-of-00002.safetensors"
    original = shard.read_bytes()
    shard.write_bytes(original + b"\0")  # a different size: found without reading it
    [check] = verify_model_dir(str(root), small_file_limit=64).checks
    assert check.kind is DriftKind.MODIFIED and "content not read" in check.evidence
    assert check.expected["lfs_oid"] == sha256_hex(original) and check.expected["size"] == len(original)

    flipped = bytearray(original)
    flipped[-1] ^= 1
    shard.write_bytes(bytes(flipped))  # same size, new mtime: stale by default, modified with deep
    [check] = verify_model_dir(str(root), small_file_limit=64).checks
    assert check.kind is DriftKind.STALE_METADATA and "git's index" in check.evidence
    [check] = verify_model_dir(str(root), small_file_limit=64, deep=True).checks
    assert check.kind is DriftKind.MODIFIED and check.evidence.startswith("sha256 differs from the git LFS pointer")


def test_unfetched_lfs_pointer_is_corrupt_weights(tmp_path):
    """A clone without git-lfs: git is clean, but the .safetensors holds a pointer, not tensors."""
    import git

    root = tmp_path / "m"
    repo = git.Repo.init(root)
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "t")
        cw.set_value("user", "email", "t@example.invalid")
    data = safetensors_bytes({"w": 16})
    (root / "model.safetensors").write_bytes(lfs_pointer(data))
    repo.git.add("--all")
    repo.git.commit("-m", "pointer only")
    [check] = verify_model_dir(str(root)).checks
    assert check.kind is DriftKind.CORRUPT and "git LFS pointer" in check.evidence


def test_mode_change_is_modified(clone):
    root, _ = clone
    path = root / "tokenizer_config.json"
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    [check] = verify_model_dir(str(root)).checks
    assert check.kind is DriftKind.MODIFIED and "permissions changed" in check.evidence


def test_touched_file_with_identical_content_is_clean(clone):
    root, _ = clone
    os.utime(root / "config.json")
    assert verify_model_dir(str(root)).checks == ()


def test_revision_other_than_head(clone):
    root, repo = clone
    first = repo.head.commit.hexsha
    sm120_edit(root)
    repo.git.commit("-am", "SM120: no FP8 KV cache")
    assert verify_model_dir(str(root)).checks == ()
    result = verify_model_dir(str(root), revision=first[:10])
    assert result.commit == first
    assert drifts(result) == {("config.json", "modified"), ("hf_quant_config.json", "modified")}
    [problem] = verify_model_dir(str(root), revision="no-such-branch").errors
    assert "git cannot compare against no-such-branch" in problem.message


def test_model_dir_inside_a_larger_repository(tmp_path):
    files = {f"models/kimi/{k}": v for k, v in seed_files().items()}
    files["src/app.py"] = b"print('hi')\n"
    build_git_clone(tmp_path / "project", files)
    root = tmp_path / "project" / "models" / "kimi"
    sm120_edit(root)
    (tmp_path / "project" / "src" / "app.py").write_text("changed outside the model dir\n")
    result = verify_model_dir(str(root))
    assert result.kind == "git" and result.root == str(root)
    assert drifts(result) == {("config.json", "modified"), ("hf_quant_config.json", "modified")}


def test_untracked_directory_inside_a_repository_is_not_a_git_model(tmp_path):
    build_git_clone(tmp_path / "home", {".bashrc": b"alias ll='ls -l'\n"})
    model = tmp_path / "home" / "models" / "local"
    model.mkdir(parents=True)
    (model / "config.json").write_bytes(b"{}")
    result = verify_model_dir(str(model))
    assert result.kind == "unknown" and result.checks == ()
    assert result.unverifiable[0].reason.startswith("no download metadata, no git repository")


def test_repository_without_commits(tmp_path):
    import git

    git.Repo.init(tmp_path / "empty")
    (tmp_path / "empty" / "config.json").write_text("{}")
    result = verify_model_dir(str(tmp_path / "empty"))
    assert result.kind == "git" and result.checks == ()
    assert result.unverifiable and "git cannot compare against HEAD" in result.unverifiable[0].reason


def test_committed_symlinks(tmp_path):
    repo = build_git_clone(tmp_path / "m", seed_files())
    root = tmp_path / "m"
    (root / "tokenizer.json").symlink_to("tokenizer_config.json")
    (root / "latest").symlink_to("config.json")
    repo.git.add("tokenizer.json", "latest")
    repo.git.commit("-m", "links")
    assert verify_model_dir(str(root)).checks == ()
    (root / "latest").unlink()
    (root / "latest").symlink_to("hf_quant_config.json")
    (root / "tokenizer.json").unlink()
    (root / "tokenizer.json").write_text("{}")
    result = verify_model_dir(str(root))
    assert drifts(result) == {("latest", "modified"), ("tokenizer.json", "type-changed")}
    latest = next(c for c in result.checks if c.path.endswith("latest"))
    assert latest.expected["symlink_target"] == "config.json"
    assert latest.actual["symlink_target"] == "hf_quant_config.json"


def test_parse_lfs_pointer():
    data = b"weights"
    assert parse_lfs_pointer(lfs_pointer(data)) == (sha256_hex(data), len(data))
    assert parse_lfs_pointer(b"version https://git-lfs.github.com/spec/v1\noid md5:abc\nsize 3\n") is None
    assert parse_lfs_pointer(b'{"a": 1}') is None


def test_audit_writes_nothing_not_even_the_index(clone):
    root, _ = clone
    sm120_edit(root)
    os.utime(root / "model-00001-of-00002.safetensors")  # stat-dirty: git status would refresh the index
    (root / "untracked.txt").write_text("x")
    before = tree_state(root)
    verify_model_dir(str(root))
    verify_model_dir(str(root), deep=True, small_file_limit=64)
    assert tree_state(root) == before
