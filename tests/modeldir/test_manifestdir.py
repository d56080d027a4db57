"""A directory against a driftscan manifest: in-tree or named explicitly."""

from __future__ import annotations

import json
import os
import time

import pytest

from driftscan.formats.manifest import MANIFEST_NAME, build_manifest, write_manifest
from driftscan.core.values import DriftKind
from driftscan.modeldir import verify_model_dir
from fixtures.modeldirs import KV_CACHE_SCHEME, safetensors_bytes, seed_files, sm120_edit, tree_state



@pytest.fixture
def model(tmp_path):
    """A plain directory (copied by hand: no metadata, no git) with a manifest taken once it worked."""
    root = tmp_path / "kimi"
    root.mkdir()
    for name, data in seed_files().items():
        (root / name).write_bytes(data)
    write_manifest(str(root), build_manifest(str(root)), str(root / MANIFEST_NAME))
    return root


def drifts(result):
    return {(os.path.relpath(c.path, result.root), c.kind.value) for c in result.checks}


def test_in_tree_manifest_is_used_and_never_reported(model):
    result = verify_model_dir(str(model))
    assert result.kind == "manifest" and result.checks == () and result.errors == ()
    assert result.files_checked == len(seed_files())


def test_seed_edit_against_the_manifest(model):
    sm120_edit(model)
    result = verify_model_dir(str(model))
    assert drifts(result) == {("config.json", "modified"), ("hf_quant_config.json", "modified")}
    config = next(c for c in result.checks if c.path.endswith("config.json") and "quant" not in c.path)
    assert list(config.json_changes) == [
        {"pointer": "/quantization_config/kv_cache_scheme", "op": "removed", "old": KV_CACHE_SCHEME}]
    assert config.evidence.startswith("xxh3-128 differs from the driftscan manifest")
    assert set(config.expected) == {"xxh3_128", "size", "mode", "mtime"}


def test_explicit_manifest_outside_the_directory(model, tmp_path):
    out = tmp_path / "baseline.json"
    os.replace(model / MANIFEST_NAME, out)
    (model / "notes.txt").write_text("added later\n")
    result = verify_model_dir(str(model), manifest=str(out))
    assert result.kind == "manifest" and drifts(result) == {("notes.txt", "added")}


def test_large_files_size_then_mtime(model):
    shard = model / "model-00001-of-00002.safetensors"
    data = shard.read_bytes()
    st = shard.stat()
    shard.write_bytes(data[:-1])
    [check] = verify_model_dir(str(model), small_file_limit=100).checks
    assert check.kind is DriftKind.MODIFIED and "content not read" in check.evidence

    shard.write_bytes(data)  # same size and content, new mtime
    [check] = verify_model_dir(str(model), small_file_limit=100).checks
    assert check.kind is DriftKind.STALE_METADATA and "as the manifest records" in check.evidence
    assert verify_model_dir(str(model), small_file_limit=100, deep=True).checks == ()
    os.utime(shard, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert verify_model_dir(str(model), small_file_limit=100).checks == ()


def test_permission_change(model):
    (model / "README.md").chmod(0o600)
    [check] = verify_model_dir(str(model)).checks
    assert check.kind is DriftKind.MODIFIED and "permissions changed from 0o644 to 0o600" in check.evidence


def test_missing_and_symlinked(model, tmp_path):
    (model / "tokenizer_config.json").unlink()
    (model / "generation_config.json").rename(tmp_path / "gen.json")
    (model / "generation_config.json").symlink_to(tmp_path / "gen.json")
    assert drifts(verify_model_dir(str(model))) == {
        ("tokenizer_config.json", "missing"), ("generation_config.json", "type-changed")}


def test_manifest_of_a_tree_with_symlinks(tmp_path):
    root = tmp_path / "m"
    root.mkdir()
    (root / "real.json").write_text("{}")
    (root / "alias.json").symlink_to("real.json")
    write_manifest(str(root), build_manifest(str(root)), str(root / MANIFEST_NAME))
    assert verify_model_dir(str(root)).checks == ()
    (root / "alias.json").unlink()
    (root / "alias.json").symlink_to("other.json")
    (root / "other.json").write_text("{}")
    assert drifts(verify_model_dir(str(root))) == {("alias.json", "modified"), ("other.json", "added")}


@pytest.mark.parametrize("content", [b"{broken", json.dumps({"manifest_version": "2"}).encode()])
def test_unusable_manifest_is_unverifiable_not_clean(model, content):
    (model / MANIFEST_NAME).write_bytes(content)
    result = verify_model_dir(str(model))
    assert result.checks == () and result.files_checked == 0
    assert result.unverifiable and result.unverifiable[0].reason.startswith("the driftscan manifest cannot be used")
    assert result.errors[0].path == str(model / MANIFEST_NAME)


def test_revision_does_not_apply(model):
    [problem] = verify_model_dir(str(model), revision="main").errors
    assert "a manifest has no revisions" in problem.message


def test_embedded_text_not_matching_its_hash_is_not_used(model):
    doc = json.loads((model / MANIFEST_NAME).read_text())
    doc["files"]["config.json"]["text"] = "{}"
    (model / MANIFEST_NAME).write_text(json.dumps(doc))
    sm120_edit(model)
    config = next(c for c in verify_model_dir(str(model)).checks if c.path.endswith("/config.json"))
    assert config.json_changes == () and config.diff is None


def test_audit_writes_nothing(model):
    (model / "big.safetensors").write_bytes(safetensors_bytes({"w": 1 << 16}))
    time.sleep(0.01)
    sm120_edit(model)
    before = tree_state(model)
    verify_model_dir(str(model), small_file_limit=1000)
    verify_model_dir(str(model), deep=True)
    assert tree_state(model) == before
