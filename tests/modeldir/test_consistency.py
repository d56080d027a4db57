"""Weight maps naming absent shards, unreadable safetensors headers — with or without provenance."""

from __future__ import annotations

import json
import os
import struct

import pytest

from driftscan.core.values import DriftKind
from driftscan.modeldir import verify_model_dir
from driftscan.modeldir.consistency import safetensors_problem
from driftscan.modeldir.hashing import Meter
from fixtures.modeldirs import (
    build_cache_repo, build_local_dir, dump_json, safetensors_bytes, safetensors_header, seed_files,
    write_sparse_shard,
)



def drifts(result):
    return {(os.path.relpath(c.path, result.root), c.kind.value) for c in result.checks}


def test_shard_named_by_the_index_but_never_downloaded(tmp_path):
    """hf download --include '*.json' --include 'model-00001*': the second shard has no metadata."""
    files = seed_files()
    del files["model-00002-of-00002.safetensors"]
    root = build_local_dir(tmp_path / "m", files)
    result = verify_model_dir(str(root))
    [check] = result.checks
    assert (os.path.basename(check.path), check.kind) == ("model-00002-of-00002.safetensors", DriftKind.MISSING)
    assert check.expected == {"named_by": "model.safetensors.index.json", "tensors": 1}
    assert check.evidence == "named by model.safetensors.index.json's weight_map (1 tensors) but not on disk"


def test_deleted_shard_is_reported_once(tmp_path):
    root = build_local_dir(tmp_path / "m", seed_files())
    (root / "model-00001-of-00002.safetensors").unlink()
    [check] = verify_model_dir(str(root)).checks
    assert check.kind is DriftKind.MISSING and check.evidence.startswith("listed in the LFS etag")


def test_index_in_a_subfolder_resolves_shards_there(tmp_path):
    root = tmp_path / "m"
    (root / "text_encoder").mkdir(parents=True)
    (root / "text_encoder" / "model.safetensors.index.json").write_bytes(
        dump_json({"weight_map": {"a": "model-1.safetensors", "b": "../../escape.safetensors"}}))
    result = verify_model_dir(str(root))
    assert drifts(result) == {("text_encoder/model-1.safetensors", "missing")}
    assert "outside the model directory" in result.errors[0].message
    assert result.kind == "unknown" and result.unverifiable  # still never "clean"


def test_truncated_shard_is_corrupt_even_when_metadata_says_fresh(tmp_path):
    """A large file is not hashed by default; its header still tells that the copy is short."""
    root = build_local_dir(tmp_path / "m", seed_files(), sparse={"big.safetensors": (8 << 20, "0" * 64)})
    st = os.stat(root / "big.safetensors")
    os.truncate(root / "big.safetensors", st.st_size - 4096)
    os.utime(root / "big.safetensors", ns=(st.st_atime_ns, st.st_mtime_ns))
    result = verify_model_dir(str(root), small_file_limit=1 << 20)
    [check] = result.checks
    assert check.kind is DriftKind.CORRUPT and check.evidence.endswith("(truncated)")
    assert result.bytes_hashed < 1 << 20  # the header was read, the tensor data was not


def test_corrupt_outranks_stale(tmp_path):
    root = build_local_dir(tmp_path / "m", seed_files(), sparse={"big.safetensors": (8 << 20, "0" * 64)})
    with open(root / "big.safetensors", "r+b") as f:
        f.write(struct.pack("<Q", 1 << 40))  # header length beyond the file
    [check] = verify_model_dir(str(root), small_file_limit=1 << 20).checks
    assert check.kind is DriftKind.CORRUPT and "exceeds the file size" in check.evidence


@pytest.mark.parametrize("data, message", [
    (b"\x01\x02", "too short"),
    (struct.pack("<Q", 4) + b"nope", "not valid JSON"),
    (struct.pack("<Q", 2) + b"[]", "not a JSON object"),
    (safetensors_header({"w": 10}) + b"\0" * 9, "describes 10 bytes of tensor data, the file holds 9 (truncated)"),
    (safetensors_header({"w": 10}) + b"\0" * 11, "(trailing bytes)"),
    (struct.pack("<Q", 30) + b'{"w": {"data_offsets": [5, 1]}}'[:30], "not valid JSON"),
    (struct.pack("<Q", 32) + b'{"w": {"data_offsets": [5, 1]}} ', "no valid data_offsets"),
])
def test_safetensors_header_problems(tmp_path, data, message):
    path = tmp_path / "x.safetensors"
    path.write_bytes(data)
    assert message in safetensors_problem(str(path), Meter())


def test_valid_headers_read_only_the_header(tmp_path):
    path = tmp_path / "x.safetensors"
    size = write_sparse_shard(path, 1 << 30)
    meter = Meter()
    assert safetensors_problem(str(path), meter) is None
    assert meter.read == size - (1 << 30) and meter.hashed == 0
    path.write_bytes(safetensors_bytes({"a": 3, "b": 5}))
    assert safetensors_problem(str(path), Meter()) is None


def test_unparsable_unmodified_index_is_corrupt(tmp_path):
    root = tmp_path / "m"
    root.mkdir()
    (root / "model.safetensors.index.json").write_text("{not json")
    [check] = verify_model_dir(str(root)).checks
    assert check.kind is DriftKind.CORRUPT and "not valid JSON" in check.evidence


def test_index_without_a_weight_map_is_ignored(tmp_path):
    root = tmp_path / "m"
    root.mkdir()
    (root / "faiss.index.json").write_text(json.dumps({"dim": 768}))
    assert verify_model_dir(str(root)).checks == ()


def test_cache_snapshot_missing_shard_link(tmp_path):
    """A deleted snapshot link leaves no trace in the cache; the index still names the shard."""
    repo = build_cache_repo(tmp_path / "hub", seed_files())
    snap = next((repo / "snapshots").iterdir())
    (snap / "model-00002-of-00002.safetensors").unlink()
    assert drifts(verify_model_dir(str(repo))) == {("model-00002-of-00002.safetensors", "missing")}
