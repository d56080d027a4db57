"""``hf download --local-dir`` directories, including the seed scenario (the SM120 config edit)."""

from __future__ import annotations

import json
import os
import time

import pytest

from driftscan.formats.manifest import MANIFEST_NAME, build_manifest, write_manifest
from driftscan.core.values import DriftKind
from driftscan.modeldir import verify_model_dir
from fixtures.modeldirs import (
    COMMIT, KV_CACHE_SCHEME, SPARSE_SHARD_SHA256, SPARSE_SHARD_SIZE, build_cache_repo, build_local_dir,
    dump_json, git_blob_sha1, safetensors_bytes, seed_files, sm120_edit, tree_state, write_download_metadata,
)

SEED_CHANGES = {
    "config.json": [{"pointer": "/quantization_config/kv_cache_scheme", "op": "removed", "old": KV_CACHE_SCHEME}],
    "hf_quant_config.json": [{"pointer": "/quantization/kv_cache_quant_algo", "op": "removed", "old": "FP8"}],
}



def rel(result, check):
    return os.path.relpath(check.path, result.root)


def drifts(result):
    return {(rel(result, c), c.kind.value) for c in result.checks}


def test_pristine_download_is_clean_and_reads_only_small_files(tmp_path):
    root = build_local_dir(tmp_path / "kimi", seed_files())
    result = verify_model_dir(str(root))
    assert (result.kind, result.root, result.commit) == ("hf-local-dir", str(root), COMMIT)
    assert result.checks == () and result.errors == () and result.unverifiable == ()
    assert result.files_checked == len(seed_files())
    assert result.bytes_hashed == sum(len(d) for d in seed_files().values())


def test_seed_scenario_with_a_manifest_taken_after_download(tmp_path):
    """kv_cache_scheme and kv_cache_quant_algo removed after download: exactly two drifts, keys named."""
    root = build_local_dir(tmp_path / "kimi-k2.5-nvfp4", seed_files())
    write_manifest(str(root), build_manifest(str(root)), str(root / MANIFEST_NAME))
    sm120_edit(root)
    result = verify_model_dir(str(root))
    assert drifts(result) == {("config.json", "modified"), ("hf_quant_config.json", "modified")}
    for check in result.checks:
        name = rel(result, check)
        assert list(check.json_changes) == SEED_CHANGES[name]
        assert check.area == "model" and check.root == str(root) and check.diff is None
        assert check.expected["etag"] == git_blob_sha1(seed_files()[name])
        assert check.expected["commit"] == COMMIT
        assert check.actual["git_blob_sha1"] == git_blob_sha1((root / name).read_bytes())
        expected_evidence = f"git blob sha1 differs from the etag recorded at download (commit {COMMIT[:12]})"
        assert check.evidence.startswith(expected_evidence)
        assert "removed /" in check.evidence
    assert result.errors == () and result.unverifiable == ()
    assert result.bytes_hashed == sum(os.path.getsize(root / name) for name in seed_files())


def test_seed_scenario_with_originals_from_the_hub_cache(tmp_path):
    """No manifest, but the same files were once downloaded to the hub cache: blobs named by etag."""
    cache = tmp_path / "hub"
    build_cache_repo(cache, seed_files())
    root = build_local_dir(tmp_path / "kimi", seed_files())
    sm120_edit(root)
    result = verify_model_dir(str(root), hf_cache=str(cache))
    assert {rel(result, c): list(c.json_changes) for c in result.checks} == SEED_CHANGES


def test_without_an_original_the_drift_is_still_reported(tmp_path):
    root = build_local_dir(tmp_path / "kimi", seed_files())
    sm120_edit(root)
    result = verify_model_dir(str(root), hf_cache="")
    assert drifts(result) == {("config.json", "modified"), ("hf_quant_config.json", "modified")}
    assert all(c.json_changes == () and c.diff is None for c in result.checks)


def test_an_edited_cache_blob_is_not_taken_for_the_original(tmp_path):
    cache = tmp_path / "hub"
    repo = build_cache_repo(cache, seed_files())
    blob = repo / "blobs" / git_blob_sha1(seed_files()["config.json"])
    blob.write_bytes(dump_json({"poisoned": True}))
    root = build_local_dir(tmp_path / "kimi", seed_files())
    sm120_edit(root)
    result = verify_model_dir(str(root), hf_cache=str(cache))
    by_name = {rel(result, c): c for c in result.checks}
    assert by_name["config.json"].json_changes == ()
    assert list(by_name["hf_quant_config.json"].json_changes) == SEED_CHANGES["hf_quant_config.json"]


def test_an_edited_blob_in_one_repository_does_not_hide_an_intact_one_in_another(tmp_path):
    cache = tmp_path / "hub"
    edited = build_cache_repo(cache, seed_files(), repo_id="aaa/first-in-order")
    build_cache_repo(cache, seed_files(), repo_id="zzz/second")
    (edited / "blobs" / git_blob_sha1(seed_files()["config.json"])).write_bytes(dump_json({"poisoned": True}))
    root = build_local_dir(tmp_path / "kimi", seed_files())
    sm120_edit(root)
    result = verify_model_dir(str(root), hf_cache=str(cache))
    assert {rel(result, c): list(c.json_changes) for c in result.checks} == SEED_CHANGES


def test_the_cache_named_to_the_audit_is_searched_for_originals(tmp_path):
    from driftscan import api

    cache = tmp_path / "hub"
    build_cache_repo(cache, seed_files())
    root = build_local_dir(tmp_path / "kimi", seed_files())
    sm120_edit(root)
    report = api.audit(model_dirs=[str(root)], hf_cache=str(cache))
    got = {d.relpath: [dict(c) for c in d.json_changes] for d in report.drifts if d.path.startswith(str(root))}
    assert got == SEED_CHANGES


@pytest.mark.parametrize("suffix", [".bak", ".orig", "~"])
def test_a_backup_beside_the_file_with_the_recorded_content_is_its_original(tmp_path, suffix):
    root = build_local_dir(tmp_path / "kimi", seed_files())
    for name in ("config.json", "hf_quant_config.json"):
        (root / f"{name}{suffix}").write_bytes((root / name).read_bytes())
    sm120_edit(root)
    result = verify_model_dir(str(root), hf_cache="")
    modified = [c for c in result.checks if c.kind is DriftKind.MODIFIED]
    assert {rel(result, c): list(c.json_changes) for c in modified} == SEED_CHANGES
    assert all(f"original: {os.path.basename(c.path)}{suffix}, a backup beside it" in c.evidence for c in modified)


def test_a_backup_that_does_not_hash_to_the_etag_or_is_a_link_is_no_original(tmp_path):
    root = build_local_dir(tmp_path / "kimi", seed_files())
    (root / "config.json.bak").write_bytes((root / "config.json").read_bytes().replace(b"8", b"9"))
    outside = tmp_path / "outside.json"
    outside.write_bytes((root / "hf_quant_config.json").read_bytes())  # the right bytes, outside
    os.symlink(outside, root / "hf_quant_config.json.orig")
    sm120_edit(root)
    result = verify_model_dir(str(root), hf_cache="")
    modified = [c for c in result.checks if c.kind is DriftKind.MODIFIED]
    assert len(modified) == 2 and all(c.json_changes == () and "a backup beside it" not in c.evidence
                                      for c in modified)


def test_text_file_drift_comes_with_a_diff(tmp_path):
    root = build_local_dir(tmp_path / "m", seed_files())
    write_manifest(str(root), build_manifest(str(root)), str(root / MANIFEST_NAME))
    (root / "README.md").write_text("# Kimi-K2.5-NVFP4\n\nPatched locally for SM120.\n")
    [check] = verify_model_dir(str(root)).checks
    assert check.json_changes == ()
    assert "-Quantized with ModelOpt.\n+Patched locally for SM120.\n" in check.diff


def test_missing_added_and_bookkeeping(tmp_path):
    root = build_local_dir(tmp_path / "m", seed_files())
    (root / "tokenizer_config.json").unlink()
    (root / "debug").mkdir()
    (root / "debug" / "dump.pt").write_bytes(b"\x80\x02tensor")
    (root / ".cache" / "huggingface" / "download" / "partial.bin.abc.incomplete").write_bytes(b"x")
    result = verify_model_dir(str(root))
    assert drifts(result) == {("tokenizer_config.json", "missing"), ("debug/dump.pt", "added")}
    added = next(c for c in result.checks if c.kind is DriftKind.ADDED)
    assert added.actual["size"] == 8 and "not in the download metadata" in added.evidence


def test_weight_file_edited_in_place(tmp_path):
    files = seed_files()
    root = build_local_dir(tmp_path / "m", files)
    shard = root / "model-00002-of-00002.safetensors"
    data = bytearray(shard.read_bytes())
    data[-1] ^= 0xFF
    shard.write_bytes(bytes(data))
    [check] = verify_model_dir(str(root)).checks
    assert check.kind is DriftKind.MODIFIED
    assert check.evidence == f"sha256 differs from the LFS etag recorded at download (commit {COMMIT[:12]})"
    assert len(check.expected["etag"]) == 64 and check.actual["sha256"] != check.expected["etag"]


def test_large_file_newer_than_its_metadata_is_stale_unless_deep(tmp_path):
    files = seed_files()
    root = build_local_dir(tmp_path / "m", files)
    shard = root / "model-00001-of-00002.safetensors"
    now = time.time()
    os.utime(shard, (now, now))  # touched (or edited) after download; content identical
    result = verify_model_dir(str(root), small_file_limit=100)
    [check] = result.checks
    assert check.kind is DriftKind.STALE_METADATA and rel(result, check) == shard.name
    assert "after its download metadata was written" in check.evidence and "not read" in check.evidence
    assert check.expected["metadata_timestamp"] < check.actual["mtime"]
    assert result.large_files_unread == sum(len(d) >= 100 for d in files.values())
    deep = verify_model_dir(str(root), small_file_limit=100, deep=True)
    assert deep.checks == () and deep.large_files_unread == 0


def test_mtime_within_one_second_of_the_metadata_is_trusted(tmp_path):
    root = build_local_dir(tmp_path / "m", seed_files())
    shard = root / "model-00001-of-00002.safetensors"
    meta = (root / ".cache/huggingface/download" / f"{shard.name}.metadata").read_text().split("\n")
    stamp = float(meta[2])
    os.utime(shard, (stamp + 0.9, stamp + 0.9))
    assert verify_model_dir(str(root), small_file_limit=100).checks == ()
    os.utime(shard, (stamp + 1.5, stamp + 1.5))
    assert [c.kind for c in verify_model_dir(str(root), small_file_limit=100).checks] == [DriftKind.STALE_METADATA]


def test_mtime_preserving_edit_of_a_large_file_needs_deep(tmp_path):
    """What the default honestly cannot see: same size, old mtime. deep hashes and finds it."""
    root = build_local_dir(tmp_path / "m", seed_files())
    shard = root / "model-00001-of-00002.safetensors"
    st = shard.stat()
    data = bytearray(shard.read_bytes())
    data[-1] ^= 1
    shard.write_bytes(bytes(data))
    os.utime(shard, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert verify_model_dir(str(root), small_file_limit=100).checks == ()
    [check] = verify_model_dir(str(root), small_file_limit=100, deep=True).checks
    assert check.kind is DriftKind.MODIFIED and "sha256 differs" in check.evidence


def test_sparse_4_gib_shard_is_read_only_with_deep(tmp_path):
    root = build_local_dir(tmp_path / "m", seed_files(),
                           sparse={"model-00003-of-00003.safetensors": (SPARSE_SHARD_SIZE, SPARSE_SHARD_SHA256)})
    started = time.perf_counter()
    cheap = verify_model_dir(str(root))
    cheap_time = time.perf_counter() - started
    assert cheap.checks == () and cheap.errors == ()
    small = sum(len(d) for d in seed_files().values())
    assert cheap.bytes_hashed == small
    assert cheap.bytes_read < small + 4096  # plus three safetensors headers, an index: nothing of the 4 GiB

    calls = []
    started = time.perf_counter()
    deep = verify_model_dir(str(root), deep=True, progress=lambda done, total: calls.append((done, total)))
    deep_time = time.perf_counter() - started
    assert deep.checks == () and deep.errors == ()  # also proves SPARSE_SHARD_SHA256 is the shard's sha256
    assert deep.bytes_hashed == small + os.path.getsize(root / "model-00003-of-00003.safetensors")
    assert deep_time > 10 * cheap_time
    assert calls[-1][0] == calls[-1][1] == deep.bytes_hashed
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)


def test_other_files_of_a_partial_metadata_set_are_added(tmp_path):
    root = build_local_dir(tmp_path / "m", {"config.json": dump_json({"a": 1})})
    (root / "model.safetensors").write_bytes(safetensors_bytes({"w": 4}))
    result = verify_model_dir(str(root))
    assert drifts(result) == {("model.safetensors", "added")}


@pytest.mark.parametrize("content, message", [
    (f"{COMMIT}\n{'a' * 40}\n", "has 2 lines, expected 3"),
    (f"{COMMIT}\n{'a' * 40}\n1712656091.1\nextra\n", "has 4 lines"),
    (f"{COMMIT}\n{'a' * 40}\nyesterday\n", "timestamp 'yesterday' is not a number"),
    ("\n\n\n", "empty commit or etag"),
])
def test_malformed_metadata_is_a_problem_not_a_drift(tmp_path, content, message):
    root = build_local_dir(tmp_path / "m", seed_files())
    meta = root / ".cache/huggingface/download/config.json.metadata"
    meta.write_text(content)
    result = verify_model_dir(str(root))
    assert result.checks == ()  # config.json is neither verified nor called "added"
    [problem] = result.errors
    assert problem.path == str(meta) and message in problem.message
    assert result.files_checked == len(seed_files()) - 1


@pytest.mark.parametrize("make, message", [
    (lambda p: p.write_bytes(b"\xff\xfe\n"), "codec can't decode"),
    (lambda p: (p.unlink(), os.mkfifo(p)), "not a regular file"),  # must not hang the audit
])
def test_unreadable_metadata_is_a_problem(tmp_path, make, message):
    root = build_local_dir(tmp_path / "m", seed_files())
    meta = root / ".cache/huggingface/download/config.json.metadata"
    make(meta)
    result = verify_model_dir(str(root))
    assert result.checks == ()
    [problem] = result.errors
    assert problem.path == str(meta) and message in problem.message


def test_unknown_etag_form_falls_back_to_presence(tmp_path):
    root = build_local_dir(tmp_path / "m", {"config.json": dump_json({"a": 1})})
    write_download_metadata(root, "config.json", '"W/quoted"', time.time())
    result = verify_model_dir(str(root))
    assert result.checks == () and "neither a git blob sha1" in result.errors[0].message


def test_revision_that_does_not_match_the_download_is_reported(tmp_path):
    root = build_local_dir(tmp_path / "m", seed_files())
    assert verify_model_dir(str(root), revision=COMMIT[:7]).errors == ()
    [problem] = verify_model_dir(str(root), revision="deadbeef").errors
    assert "revision deadbeef was not checked" in problem.message and COMMIT in problem.message


def test_a_symlink_where_a_file_was_downloaded_is_a_type_change(tmp_path):
    root = build_local_dir(tmp_path / "m", seed_files())
    (root / "generation_config.json").unlink()
    (root / "generation_config.json").symlink_to(tmp_path / "elsewhere.json")
    [check] = verify_model_dir(str(root)).checks
    assert check.kind is DriftKind.TYPE_CHANGED and check.actual["symlink_target"] == str(tmp_path / "elsewhere.json")


def test_audit_writes_nothing(tmp_path):
    root = build_local_dir(tmp_path / "m", seed_files(),
                           sparse={"big.safetensors": (64 << 20, "0" * 64)})
    sm120_edit(root)
    before = tree_state(root)
    verify_model_dir(str(root))
    verify_model_dir(str(root), deep=True)
    assert tree_state(root) == before
    assert json.loads((root / "config.json").read_text())["quantization_config"].get("kv_cache_scheme") is None
