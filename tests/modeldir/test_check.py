"""modeldir/check.py: expectations checked by stat first, small files hashed, large ones only with deep."""

from __future__ import annotations

import os
import stat

import pytest

from driftscan.core.values import Area, DriftKind
from driftscan.modeldir.check import (
    ERROR, MISSING, MODIFIED, OK, STALE, TYPE_CHANGED, Context, Expect, KindResult, Outcome, added_check, iso, run,
    to_check,
)
from driftscan.modeldir.hashing import Meter
from fixtures.modeldirs import dump_json, git_blob_sha1, sha256_hex, write_sparse_shard

LIMIT = 1 << 16  # files below this are small


def ctx_for(root, *, deep=False, limit=LIMIT):
    return Context(str(root), deep, limit, 2, Meter())


def expect(root, rel, data=None, *, algorithm="git-sha1", size=None, **kw):
    digest = None if algorithm is None else (git_blob_sha1(data) if algorithm == "git-sha1" else sha256_hex(data))
    return Expect(rel, os.path.join(str(root), rel), algorithm, digest, size=size, source="the test's record", **kw)


def test_an_unchanged_small_file_is_hashed_and_ok(tmp_path):
    data = dump_json({"a": 1})
    (tmp_path / "config.json").write_bytes(data)
    ctx = ctx_for(tmp_path)
    [outcome] = run([expect(tmp_path, "config.json", data)], ctx)
    assert outcome.status == OK and ctx.meter.hashed == len(data)


def test_a_small_file_that_differs_is_modified_with_its_content_kept(tmp_path):
    old, new = dump_json({"a": 1}), dump_json({"a": 2, "b": 3})
    (tmp_path / "config.json").write_bytes(new)
    [outcome] = run([expect(tmp_path, "config.json", old, size=len(old))], ctx_for(tmp_path))
    assert outcome.status == MODIFIED and outcome.content == new
    assert outcome.actual["git_blob_sha1"] == git_blob_sha1(new) and outcome.actual["size"] == len(new)
    assert outcome.evidence == (f"git blob sha1 differs from the test's record "
                                f"(size {len(old)} bytes → {len(new)} bytes)")


def test_a_missing_file_is_reported_without_reading(tmp_path):
    ctx = ctx_for(tmp_path)
    [outcome] = run([expect(tmp_path, "gone.json", b"{}")], ctx)
    assert outcome.status == MISSING and outcome.evidence == "listed in the test's record but not on disk"
    assert ctx.meter.read == ctx.meter.hashed == 0


def test_a_large_file_of_the_wrong_size_is_modified_without_being_read(tmp_path):
    size = write_sparse_shard(tmp_path / "model.safetensors", 10 << 20)
    ctx = ctx_for(tmp_path)
    exp = expect(tmp_path, "model.safetensors", b"never compared", algorithm="sha256", size=size + 1)
    [outcome] = run([exp], ctx)
    assert outcome.status == MODIFIED and outcome.actual["size"] == size
    # 10.5 MB on both sides: the bytes say which way it changed
    assert outcome.evidence == f"size differs from the test's record: {size + 1:,} → {size:,} bytes (content not read)"
    assert ctx.meter.read == 0 and ctx.meter.unread_large == 1


def test_a_large_file_is_trusted_by_the_freshness_rule_unless_deep(tmp_path):
    size = write_sparse_shard(tmp_path / "model.safetensors", 10 << 20)
    data = (tmp_path / "model.safetensors").read_bytes()
    seen = []

    def fresh(st):
        seen.append(st.st_size)
        return None

    exp = expect(tmp_path, "model.safetensors", data, algorithm="sha256", size=size, stale=fresh)
    ctx = ctx_for(tmp_path)
    assert run([exp], ctx)[0].status == OK and ctx.meter.hashed == 0 and seen == [size]
    deep = ctx_for(tmp_path, deep=True)
    [outcome] = run([exp], deep)
    assert outcome.status == OK and deep.meter.hashed == size and deep.meter.unread_large == 0
    assert outcome.content is None  # a large file's content is hashed, never kept


def test_a_large_file_failing_the_freshness_rule_is_stale(tmp_path):
    size = write_sparse_shard(tmp_path / "model.safetensors", 10 << 20)
    exp = expect(tmp_path, "model.safetensors", b"unused", algorithm="sha256", size=size,
                 stale=lambda st: "modified after its download")
    [outcome] = run([exp], ctx_for(tmp_path))
    assert outcome.status == STALE
    assert outcome.evidence == "modified after its download; its content was not read (deep=True hashes it)"


def test_deep_finds_a_same_size_edit_the_freshness_rule_misses(tmp_path):
    path = tmp_path / "model.safetensors"
    size = write_sparse_shard(path, 10 << 20)
    original = path.read_bytes()
    with open(path, "r+b") as f:
        f.seek(size - 1)
        f.write(b"\x01")
    exp = expect(tmp_path, "model.safetensors", original, algorithm="sha256", size=size, stale=lambda st: None)
    assert run([exp], ctx_for(tmp_path))[0].status == OK  # by size and mtime: nothing to see
    assert run([exp], ctx_for(tmp_path, deep=True))[0].status == MODIFIED


def test_a_symlink_where_a_file_should_be_is_a_type_change(tmp_path):
    (tmp_path / "real.json").write_bytes(b"{}")
    (tmp_path / "config.json").symlink_to("real.json")
    [outcome] = run([expect(tmp_path, "config.json", b"{}")], ctx_for(tmp_path))
    assert outcome.status == TYPE_CHANGED
    assert outcome.actual == {"type": "symlink", "symlink_target": "real.json"}


def test_a_directory_or_fifo_where_a_file_should_be(tmp_path):
    (tmp_path / "dir.json").mkdir()
    os.mkfifo(tmp_path / "fifo.json")
    outcomes = run([expect(tmp_path, "dir.json", b"{}"), expect(tmp_path, "fifo.json", b"{}")], ctx_for(tmp_path))
    assert [(o.status, o.actual["type"]) for o in outcomes] == [(TYPE_CHANGED, "directory"), (TYPE_CHANGED, "fifo")]


def test_a_followed_symlink_is_hashed_where_it_leads(tmp_path):
    data = b"blob content\n"
    (tmp_path / "blobs").mkdir()
    (tmp_path / "blobs" / "x").write_bytes(data)
    (tmp_path / "link").symlink_to("blobs/x")
    [outcome] = run([expect(tmp_path, "link", data, follow=True)], ctx_for(tmp_path))
    assert outcome.status == OK


def test_a_followed_symlink_out_of_the_tree_is_an_error_and_never_opened(tmp_path):
    outside = tmp_path / "outside"
    outside.write_bytes(b"secret")
    root = tmp_path / "model"
    root.mkdir()
    (root / "link").symlink_to(outside)
    ctx = ctx_for(root)
    [outcome] = run([expect(root, "link", b"secret", follow=True)], ctx)
    assert outcome.status == ERROR and "resolves outside the model directory" in outcome.evidence
    assert ctx.meter.read == 0


def test_a_parent_directory_symlinked_out_of_the_tree_is_not_read(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "config.json").write_bytes(b"{}")
    root = tmp_path / "model"
    root.mkdir()
    (root / "sub").symlink_to(outside)
    [outcome] = run([expect(root, "sub/config.json", b"{}")], ctx_for(root))
    assert outcome.status == ERROR and "resolves outside" in outcome.evidence


def test_presence_only_expectations_are_not_read(tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"x" * 100)
    ctx = ctx_for(tmp_path)
    [outcome] = run([expect(tmp_path, "weights.bin", algorithm=None)], ctx)
    assert outcome.status == OK and ctx.meter.read == 0


def test_permissions_changed_with_content_intact(tmp_path):
    data = b"#!/bin/sh\n"
    path = tmp_path / "run.sh"
    path.write_bytes(data)
    path.chmod(0o644)
    exp = expect(tmp_path, "run.sh", data, mode=(stat.S_IFREG | 0o755, 0o111))
    [outcome] = run([exp], ctx_for(tmp_path))
    assert outcome.status == MODIFIED and outcome.actual == {"mode": "0o644"}
    assert outcome.evidence == "permissions changed from 0o755 to 0o644 (content matches the test's record)"
    path.chmod(0o755)
    assert run([exp], ctx_for(tmp_path))[0].status == OK


def test_outcomes_come_back_in_the_order_given(tmp_path):
    expects = []
    for n in range(12):
        data = b"y" * (n * 10_000)  # small and large (limit 64 KiB) mixed, hashed in a pool
        (tmp_path / f"f{n}").write_bytes(data)
        expects.append(expect(tmp_path, f"f{n}", data if n % 3 else b"other"))
    outcomes = run(expects, ctx_for(tmp_path, deep=True))
    assert [o.expect.relpath for o in outcomes] == [f"f{n}" for n in range(12)]
    assert [o.status for o in outcomes] == [OK if n % 3 else MODIFIED for n in range(12)]


def test_to_check_describes_a_json_edit_against_the_original(tmp_path):
    old = dump_json({"quantization": {"kv_cache_quant_algo": "FP8", "group_size": 16}})
    new = dump_json({"quantization": {"group_size": 16}})
    (tmp_path / "hf_quant_config.json").write_bytes(new)
    ctx = ctx_for(tmp_path)
    exp = expect(tmp_path, "hf_quant_config.json", old, original=lambda: old, expected={"git_blob_sha1": "x"})
    [outcome] = run([exp], ctx)
    check = to_check(ctx, outcome)
    assert (check.kind, check.path, check.root, check.area) == (
        DriftKind.MODIFIED, str(tmp_path / "hf_quant_config.json"), str(tmp_path), Area.MODEL)
    assert check.expected == {"git_blob_sha1": "x"}
    assert list(check.json_changes) == [{"pointer": "/quantization/kv_cache_quant_algo", "op": "removed",
                                         "old": "FP8"}]


def test_to_check_without_an_original_has_no_changes(tmp_path):
    (tmp_path / "a.json").write_bytes(b'{"a": 2}')
    ctx = ctx_for(tmp_path)
    [outcome] = run([expect(tmp_path, "a.json", b'{"a": 1}')], ctx)
    check = to_check(ctx, outcome, kind=DriftKind.STALE_METADATA, extra_actual={"note": 1})
    assert check.kind is DriftKind.STALE_METADATA and check.json_changes == () and check.actual["note"] == 1


def test_kind_result_counts_checked_files_and_turns_errors_into_problems(tmp_path):
    ctx = ctx_for(tmp_path)
    exp = expect(tmp_path, "x", b"")
    result = KindResult()
    result.add_outcomes(ctx, [Outcome(exp, OK), Outcome(exp, MISSING, evidence="gone"),
                              Outcome(exp, ERROR, evidence="cannot stat: denied")])
    assert result.files_checked == 2
    assert [c.kind for c in result.checks] == [DriftKind.MISSING]
    assert [(p.path, p.message) for p in result.problems] == [(str(tmp_path / "x"), "cannot stat: denied")]


def test_added_check_describes_what_is_there(tmp_path):
    (tmp_path / "new.txt").write_bytes(b"12345")
    (tmp_path / "link").symlink_to("new.txt")
    ctx = ctx_for(tmp_path)
    added = added_check(ctx, "new.txt", "not in the record")
    assert added.kind is DriftKind.ADDED and added.actual["size"] == 5 and added.actual["type"] == "file"
    link = added_check(ctx, "link", "not in the record")
    assert link.actual["type"] == "symlink" and link.actual["symlink_target"] == "new.txt"
    assert added_check(ctx, "vanished", "why").actual == {}


@pytest.mark.parametrize("seconds", [1e20, float("inf")])
def test_iso_of_a_time_no_date_can_show(seconds):
    assert iso(seconds) == f"{seconds!r} (not a representable time)"
    assert iso(0) == "1970-01-01T00:00:00.000+00:00"
