"""snapshot/run.py: writing snapshots (one root: a plain manifest; several: a bundle), loading them
back, and diffing one root against its manifest."""

from __future__ import annotations

import json
import os

import pytest

from driftscan.caches import racy
from driftscan.core.errors import TargetError
from driftscan.core.values import DriftKind, LayoutKind, Prediction, Scope
from driftscan.formats import manifest as M
from driftscan.formats.manifest import ManifestError
from driftscan.fs.reader import POOL_MIN
from driftscan.snapshot import run as S
from driftscan.snapshot.run import Root, RootKind, diff_root, load_snapshot, take_snapshot
from fixtures.modeldirs import build_local_dir, seed_files, sm120_edit


@pytest.fixture(params=["inline", "fork"])
def fork_mode(request, monkeypatch):
    """Both ways a snapshot is written: one process, and the shared walk on two."""
    monkeypatch.setenv("DRIFTSCAN_FORK", request.param)
    return request.param


@pytest.fixture
def model(tmp_path):
    return build_local_dir(tmp_path / "model", seed_files())


def snap_one(model, tmp_path, name="m.json"):
    out = tmp_path / name
    assert take_snapshot([Root(RootKind.MODEL_DIR, str(model))], str(out)) == []
    return out


def kinds(result):
    return {(os.path.relpath(c.path, result.root), c.kind.value) for c in result.checks}


def test_one_root_is_written_as_a_plain_manifest(model, tmp_path, fork_mode):
    out = snap_one(model, tmp_path)
    doc = json.loads(out.read_text())
    assert doc["manifest_version"] == "1" and doc["root"] == str(model)
    assert set(doc["files"]) == set(seed_files())  # huggingface_hub's .cache/ is bookkeeping
    assert json.loads(doc["files"]["config.json"]["text"]) == json.loads(seed_files()["config.json"])
    assert "text" not in doc["files"]["model-00001-of-00002.safetensors"]


def test_several_roots_are_written_as_a_bundle_in_order(model, tmp_path, fork_mode):
    venv = tmp_path / "venv"
    (venv / "lib").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "lib" / "mod.py").write_text("x = 1\n")
    out = tmp_path / "bundle.json"
    take_snapshot([Root(RootKind.VENV, str(venv)), Root(RootKind.MODEL_DIR, str(model))], str(out))
    doc = json.loads(out.read_text())
    assert doc["bundle_version"] == S.BUNDLE_VERSION and doc["tool"] == "driftscan"
    assert [r["kind"] for r in doc["roots"]] == ["venv", "model-dir"]
    assert "text" not in doc["roots"][0]["manifest"]["files"]["lib/mod.py"]  # a venv's code is not embedded
    assert doc["roots"][0]["manifest"]["files"]["pyvenv.cfg"]["text"] == "home = /usr/bin\n"
    roots = load_snapshot(str(out), str(tmp_path / "work"))
    assert [(r.kind, r.path) for r, _, _ in roots] == [(RootKind.VENV, str(venv)), (RootKind.MODEL_DIR, str(model))]
    assert [part for _, part, _ in roots] == [str(tmp_path / "work" / "0.json"), str(tmp_path / "work" / "1.json")]
    assert set(roots[1][2].files) == set(seed_files())


def test_a_plain_manifest_loads_as_one_root_of_its_kind(model, tmp_path):
    out = snap_one(model, tmp_path)
    [(root, part, manifest)] = load_snapshot(str(out), str(tmp_path))
    assert (root, part) == (Root(RootKind.MODEL_DIR, str(model)), str(out))
    assert manifest.files["config.json"].size == len(seed_files()["config.json"])


@pytest.mark.parametrize("content, issue", [
    ("{not json", "not valid JSON"),
    ('{"something": 1}', "neither a driftscan manifest nor a snapshot bundle"),
    ('{"bundle_version": "1", "roots": [{"kind": "laptop", "manifest": {}}]}', "not an object with a kind of"),
    ("[" * 100_000, "nested too deeply"),
])
def test_a_bad_snapshot_file_raises_manifest_error(tmp_path, content, issue):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(ManifestError) as info:
        load_snapshot(str(bad), str(tmp_path))
    assert any(issue in i for i in info.value.issues)


def test_a_missing_snapshot_file(tmp_path):
    with pytest.raises(ManifestError) as info:
        load_snapshot(str(tmp_path / "absent.json"), str(tmp_path))
    assert info.value.issues[0].startswith("cannot read")


def test_only_an_old_snapshot_file_is_identified_for_the_diff_index(model, tmp_path, monkeypatch):
    out = snap_one(model, tmp_path)
    [(_, _, fresh)] = load_snapshot(str(out), str(tmp_path), use_cache=True)
    assert fresh.identity is None  # written within the racy window: it could change unseen
    monkeypatch.setattr(racy, "RACY_NS", 0)
    [(_, _, old)] = load_snapshot(str(out), str(tmp_path), use_cache=True)
    st = os.stat(out)
    assert old.identity == (os.path.realpath(out), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev, 0)
    [(_, _, cached)] = load_snapshot(str(out), str(tmp_path), use_cache=True)  # from the load cache now
    assert cached.files == old.files and cached.identity == old.identity


def test_diff_of_an_unchanged_root_is_clean(model, tmp_path):
    out = snap_one(model, tmp_path)
    [(root, part, manifest)] = load_snapshot(str(out), str(tmp_path))
    result = diff_root(root, part, manifest, jobs=2)
    assert result.kind is LayoutKind.MANIFEST and result.root == str(model)
    assert result.checks == () and result.errors == () and result.files_checked == len(seed_files())


def test_diff_reports_edits_additions_and_removals(model, tmp_path):
    out = snap_one(model, tmp_path)
    sm120_edit(model)
    (model / "README.md").unlink()
    (model / "notes.txt").write_text("mine\n")
    [(root, part, manifest)] = load_snapshot(str(out), str(tmp_path))
    result = diff_root(root, part, manifest, jobs=2)
    assert kinds(result) == {("config.json", "modified"), ("hf_quant_config.json", "modified"),
                             ("README.md", "missing"), ("notes.txt", "added")}
    config = next(c for c in result.checks if c.path.endswith("/config.json"))
    assert {"pointer": "/quantization_config/kv_cache_scheme", "op": "removed",
            "old": {"dynamic": False, "num_bits": 8, "type": "float"}} in config.json_changes  # from the embedded text


def test_diff_runs_the_consistency_checks(model, tmp_path, monkeypatch):
    """A large shard is compared by size and mtime only; its broken header is still found."""
    monkeypatch.setattr(S, "SMALL_FILE_LIMIT", 64)  # every shard is large
    out = snap_one(model, tmp_path)
    [(root, part, manifest)] = load_snapshot(str(out), str(tmp_path))
    shard = model / "model-00002-of-00002.safetensors"
    data = shard.read_bytes()
    shard.write_bytes(data[:8] + b"{broken" + data[15:])  # same size, the header no longer JSON
    result = diff_root(root, part, manifest, jobs=1)
    [check] = result.checks
    assert check.path == str(shard) and check.kind is DriftKind.CORRUPT  # outranks the stale mtime
    assert result.large_files_unread == sum(len(d) >= 64 for d in seed_files().values())


def test_trust_settles_unchanged_files_by_signature(model, tmp_path, monkeypatch):
    monkeypatch.setattr(racy, "RACY_NS", 0)  # every file is older than the snapshot's start
    out = snap_one(model, tmp_path)
    with open(model / "config.json", "a") as f:
        f.write(" ")
    [(root, part, manifest)] = load_snapshot(str(out), str(tmp_path))
    trusting = diff_root(root, part, manifest, jobs=1, trust=True)
    hashing = diff_root(root, part, manifest, jobs=1)
    assert kinds(trusting) == kinds(hashing) == {("config.json", "modified")}
    small = sum(1 for data in seed_files().values() if len(data) < S.SMALL_FILE_LIMIT)
    assert trusting.trusted == small - 1 and hashing.trusted == 0  # the edited file is hashed, not trusted
    assert trusting.bytes_hashed < hashing.bytes_hashed


def test_a_root_that_is_gone_raises_target_error(model, tmp_path):
    out = snap_one(model, tmp_path)
    [(root, part, manifest)] = load_snapshot(str(out), str(tmp_path))
    (model / "config.json").unlink()
    os.rename(model, tmp_path / "moved")
    with pytest.raises(TargetError, match="recorded in the snapshot but not a directory now"):
        diff_root(root, part, manifest, jobs=1)


def test_child_share_takes_about_half_the_work_largest_first():
    sizes = [POOL_MIN * 8, POOL_MIN * 4] + [100] * 1000
    share = S._child_share(sizes)
    assert share[0] == 0  # the largest file goes to the child first
    cost = [S.SMALL_FILE_S + s / S.LARGE_BYTES_PER_S for s in sizes]
    theirs = sum(cost[k] for k in share)
    assert len(set(share)) == len(share)
    assert abs(theirs - sum(cost) / 2) <= max(cost)  # within one file of half


def test_forked_mapper_gives_what_the_plain_mapper_gives(monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_FORK", "fork")
    items = list(range(S.CHILD_MIN_FILES + 10))
    sizes = [1] * len(items)
    got = S.forked_mapper(lambda n: n * n, lambda n: n * n, lambda answer: answer, items, sizes, 2)
    assert got == [n * n for n in items]
    redo = S.forked_mapper(lambda n: -n, lambda n: None, lambda answer: M.REDO, items, sizes, 2)
    assert redo == [-n for n in items]  # what the child could not settle is done here


def test_share_out_balances_the_directories_by_the_manifests_files():
    files = {f"big/{n:04d}": M.ManifestEntry("0" * 32, 10, 0o100644, 0) for n in range(100)}
    files.update({f"small{k}/x": M.ManifestEntry("0" * 32, 10, 0o100644, 0) for k in range(10)})
    manifest = M.Manifest("/s.json", "/r", "now", files)
    pending = [("/r/big", "big/")] + [(f"/r/small{k}", f"small{k}/") for k in range(10)]
    theirs, mine = S._share_out(pending, manifest, 1 << 20)
    assert sorted(theirs + mine) == sorted(pending)
    assert theirs == [("/r/big", "big/")]  # the heaviest directory alone is half the work and more


def test_a_restored_file_needs_nothing_done(tmp_path):
    from driftscan.core.values import FileCheck

    check = FileCheck(DriftKind.RESTORED, str(tmp_path / "six.py"), str(tmp_path), None, {}, {}, "matches again")
    drift = S.restored_drift(check)
    assert (drift.scope, drift.prediction, drift.check) == (Scope.PACKAGE, Prediction.WIPED, check)
    assert drift.remedy == "nothing to do: it matches its RECORD again"


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_venv_root_records_the_files_that_hold_its_path(tmp_path, fork_mode, jobs):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = /usr/bin\ncommand = /usr/bin/python3 -m venv {venv}\n")
    (venv / "bin" / "activate").write_text(f"VIRTUAL_ENV='{venv}'\nexport VIRTUAL_ENV\n")
    (venv / "bin" / "other").write_text(f"# {venv}2 is another directory\n")
    (venv / "bin" / "python").symlink_to("/usr/bin/python3")
    out = tmp_path / "venv.json"
    take_snapshot([Root(RootKind.VENV, str(venv))], str(out), jobs=jobs)
    doc = json.loads(out.read_text())
    assert set(doc["prefix_free"]) == {"pyvenv.cfg", "bin/activate"}
    for rel, own in doc["prefix_free"].items():
        assert own["xxh3_128"] == doc["files"][rel]["xxh3_128"]
        assert own["prefix_free_xxh3_128"] != own["xxh3_128"]
    assert load_snapshot(str(out), str(tmp_path))[0][2].root == str(venv)  # it still loads
    # A model directory gets none.
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(f'{{"path": "{model}"}}')
    take_snapshot([Root(RootKind.MODEL_DIR, str(model))], str(out), jobs=jobs)
    assert "prefix_free" not in json.loads(out.read_text())
