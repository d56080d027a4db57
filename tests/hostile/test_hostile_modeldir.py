"""Model directories and snapshots built by someone hostile: the tree is data.

Each test builds a real model directory of one kind (fixtures/modeldirs.py), plants what an
attacker would, and checks that the run ends, that the hostile file fails alone (an error entry
with its reason) and that the rest of the report is intact: a real edit next to it is reported.
Nothing outside the model directory is read: a canary file elsewhere (mode 0600, distinctive
content) never shows up, nor its hashes, in a report or a snapshot.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import xxhash
from click.testing import CliRunner

from driftscan.api import snapshot
from driftscan.cli import main
from driftscan.formats.manifest import MANIFEST_NAME, build_manifest, write_manifest
from driftscan.modeldir import verify_model_dir
from fixtures.modeldirs import (
    COMMIT, build_cache_repo, build_git_clone, build_local_dir, dump_json, etag_of, git_blob_sha1, seed_files,
)

CANARY = b'{"api_key": "canary-7f3e9a51c0d24b68"}\n'
SECRET_WORD = "canary-7f3e9a51c0d24b68"
TIMEOUT = 60


def canary_marks() -> list[str]:
    """What would betray that the canary was read: its content and every hash driftscan computes."""
    return [SECRET_WORD, xxhash.xxh3_128(CANARY).hexdigest(), hashlib.sha256(CANARY).hexdigest(),
            git_blob_sha1(CANARY)]


@pytest.fixture
def canary(tmp_path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    path = outside / "credentials.json"
    path.write_bytes(CANARY)
    path.chmod(0o600)
    return path


def cli(*args: str) -> subprocess.CompletedProcess:
    """The real command line, which must end (timeout) and never show a traceback."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, "-m", "driftscan", *args], capture_output=True, text=True,
                          timeout=TIMEOUT, env=env)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    return proc


def audit_json(*args: str) -> tuple[int, dict, str]:
    proc = cli("audit", *args, "--format", "json")
    return proc.returncode, json.loads(proc.stdout), proc.stdout


def drifts_of(report: dict, model: Path) -> dict[str, str]:
    prefix = str(model) + os.sep
    return {d["path"][len(prefix):]: d["kind"] for d in report["drifts"] if d["path"].startswith(prefix)}


def errors_of(report: dict) -> dict[str, str]:
    return {e["path"]: e["message"] for e in report["errors"]}


def replace(path: Path, data: bytes) -> None:
    """An edit the way sed -i makes it: a new file renamed over the old (or over a symlink)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def edited_config() -> bytes:
    config = json.loads(seed_files()["config.json"])
    config["quantization_config"].pop("kv_cache_scheme")
    return dump_json(config)


# ---- hub cache: refs/main ----------------------------------------------------------------------

def test_a_64_gib_refs_main_is_refused_by_size_and_the_other_repository_is_audited(tmp_path):
    cache = tmp_path / "hub"
    hostile = build_cache_repo(cache, seed_files(), repo_id="evil/model")
    with open(hostile / "refs" / "main", "wb") as f:
        f.truncate(64 << 30)  # sparse: no disk used, and nothing should read it
    good = build_cache_repo(cache, seed_files(), repo_id="good/model")
    snap_config = next((good / "snapshots").iterdir()) / "config.json"
    snap_config.write_bytes(edited_config())  # through the symlink: the blob is edited in place
    started = time.monotonic()
    status, report, _ = audit_json("--hf-cache", str(cache))
    assert time.monotonic() - started < 20
    ref_error = errors_of(report)[str(hostile / "refs" / "main")]
    assert "68719476736 bytes" in ref_error and "git ref" in ref_error
    assert status == 3  # drift (the good repository) and something could not be checked
    assert [d["relpath"] for d in report["drifts"]] == ["config.json"]
    assert report["drifts"][0]["path"].startswith(str(good))


def test_refs_main_holding_junk_or_leading_outside(tmp_path, canary):
    repo = build_cache_repo(tmp_path / "hub", seed_files())
    (repo / "refs" / "main").write_bytes(b"\x1b]0;pwned\x07" + b"z" * 100)
    result = verify_model_dir(str(repo), hf_cache="")
    assert len(result.errors) == 1
    assert result.errors[0].message.startswith("refs/main does not hold a commit hash: '\\x1b]0;pwned\\x07zzz")
    assert "\x1b" not in result.errors[0].message
    (repo / "refs" / "main").unlink()
    (repo / "refs" / "main").symlink_to(canary)
    result = verify_model_dir(str(repo), hf_cache="")
    assert "resolves outside the audited tree" in result.errors[0].message
    assert SECRET_WORD not in repr(result)


# ---- hf download --local-dir: each metadata file fails alone -------------------------------------

BROKEN_METADATA = {
    "generation_config.json": "1e18",  # datetime cannot show it: used to sink the whole directory
    "tokenizer_config.json": "nan",
    "README.md": "binary",
    "hf_quant_config.json": "fifo",
    "tiktoken.model": "10 MiB",
    ".gitattributes": "symlink out",
}


def break_metadata(root: Path, rel: str, how: str, canary: Path) -> None:
    meta = root / ".cache" / "huggingface" / "download" / f"{rel}.metadata"
    etag = etag_of(rel, seed_files()[rel])
    if how in ("1e18", "nan"):
        meta.write_text(f"{COMMIT}\n{etag}\n{how}\n")
    elif how == "binary":
        meta.write_bytes(b"\xff\xfe\x00\x9c" * 64)
    elif how == "fifo":
        meta.unlink()
        os.mkfifo(meta)  # opening it for reading without O_NONBLOCK would wait forever
    elif how == "10 MiB":
        with open(meta, "wb") as f:
            f.truncate(10 << 20)
    elif how == "symlink out":
        meta.unlink()
        meta.symlink_to(canary)


def test_every_broken_metadata_file_fails_alone(tmp_path, canary):
    model = build_local_dir(tmp_path / "kimi", seed_files())
    for rel, how in BROKEN_METADATA.items():
        break_metadata(model, rel, how, canary)
    replace(model / "config.json", edited_config())
    status, report, raw = audit_json("--model-dir", str(model))
    assert status == 3
    assert drifts_of(report, model) == {"config.json": "modified"}  # broken ones: neither checked nor "added"
    base = model / ".cache" / "huggingface" / "download"
    errors = errors_of(report)
    reasons = {rel: errors.get(str(base / f"{rel}.metadata"), "") for rel in BROKEN_METADATA}
    assert "timestamp '1e18' is not a Unix time" in reasons["generation_config.json"]
    assert "timestamp 'nan' is not a Unix time" in reasons["tokenizer_config.json"]
    assert "can't decode" in reasons["README.md"]
    assert "not a regular file" in reasons["hf_quant_config.json"]
    assert "10485760 bytes, more than the 4096 bytes a hf metadata may have" in reasons["tiktoken.model"]
    assert "a symlink" in reasons[".gitattributes"] and "not followed" in reasons[".gitattributes"]
    assert len(report["errors"]) == len(BROKEN_METADATA)
    assert SECRET_WORD not in raw
    # The shards, the index and the untouched metadata were all verified.
    assert report["summary"]["files_checked"] >= len(seed_files()) - len(BROKEN_METADATA)


def test_a_metadata_folder_linked_out_of_the_tree_is_not_walked(tmp_path, canary):
    model = build_local_dir(tmp_path / "m", seed_files())
    elsewhere = build_local_dir(tmp_path / "elsewhere", {"secret.json": CANARY})
    download = model / ".cache" / "huggingface" / "download"
    os.rename(download, tmp_path / "saved")
    download.symlink_to(elsewhere / ".cache" / "huggingface" / "download")
    result = verify_model_dir(str(model), hf_cache="")
    assert result.kind == "hf-local-dir"
    assert any("resolves outside the model directory" in e.message for e in result.errors)
    assert result.files_checked == 0 and SECRET_WORD not in repr(result)


# ---- symlinks out of the tree: reported with their target, never read -----------------------------

def hostile_manifest(root: Path, canary: Path) -> None:
    """An in-tree manifest vouching for symlinks to the canary, with text that differs from it
    (a diff would print the canary), and a weight map linked from outside."""
    (root / "vouched.json").symlink_to(canary)
    (root / "claimed-regular.json").symlink_to(canary)
    (root / "retargeted.json").symlink_to(canary)
    outside_index = canary.parent / "outside.index.json"
    outside_index.write_text(json.dumps({"weight_map": {"t": f"{SECRET_WORD}.safetensors"}}))
    (root / "model.safetensors.index.json").unlink()
    (root / "model.safetensors.index.json").symlink_to(outside_index)
    (root / "model.safetensors").symlink_to(canary)
    entries = dict(build_manifest(str(root)))  # links leaving the tree are recorded by target only
    assert all("text" not in e.to_json() for r, e in entries.items() if r.endswith((".json", ".safetensors"))
               and os.path.islink(root / r))
    doc = manifest_doc(str(root), {r: e.to_json() for r, e in entries.items()})
    text = '{"api_key": "harmless"}\n'
    lie = {"xxh3_128": xxhash.xxh3_128(text.encode()).hexdigest(), "size": len(text), "mode": 0o100600,
           "mtime_ns": 0, "text": text}
    doc["files"]["vouched.json"] = {**lie, "link": str(canary)}
    doc["files"]["claimed-regular.json"] = dict(lie)
    doc["files"]["retargeted.json"] = {**lie, "link": "/somewhere/else.json"}
    (root / MANIFEST_NAME).write_text(json.dumps(doc))


def test_an_in_tree_manifest_cannot_make_the_audit_read_outside(tmp_path, canary):
    model = tmp_path / "m"
    model.mkdir()
    for rel, data in seed_files().items():
        (model / rel).write_bytes(data)
    hostile_manifest(model, canary)
    replace(model / "config.json", edited_config())
    status, report, raw = audit_json("--model-dir", str(model))
    for mark in canary_marks():
        assert mark not in raw
    got = drifts_of(report, model)
    assert got["config.json"] == "modified"
    assert got["claimed-regular.json"] == "type-changed" and got["retargeted.json"] == "modified"
    assert "vouched.json" not in got  # the same link as recorded: its target is all that is compared
    config = next(d for d in report["drifts"] if d["relpath"] == "config.json")
    assert config["json_changes"][0]["pointer"] == "/quantization_config/kv_cache_scheme"
    retargeted = next(d for d in report["drifts"] if d["relpath"] == "retargeted.json")
    assert str(canary) in retargeted["evidence"]  # reported with its target


def test_a_local_dir_manifest_or_file_linked_outside_is_not_read(tmp_path, canary):
    model = build_local_dir(tmp_path / "m", seed_files())
    (model / "config.json").unlink()
    (model / "config.json").symlink_to(canary)
    outside_manifest = canary.parent / "manifest.json"
    write_manifest(str(canary.parent), build_manifest(str(canary.parent)), str(outside_manifest))
    (model / MANIFEST_NAME).symlink_to(outside_manifest)
    status, report, raw = audit_json("--model-dir", str(model))
    for mark in canary_marks():
        assert mark not in raw
    assert drifts_of(report, model) == {"config.json": "type-changed"}
    assert any("in-tree manifest not used" in e["message"] and "outside" in e["message"] for e in report["errors"])


def test_hub_snapshot_links_into_blobs_are_followed_but_not_out_of_the_repository(tmp_path, canary):
    repo = build_cache_repo(tmp_path / "hub", seed_files())
    snap = next((repo / "snapshots").iterdir())
    blob = repo / "blobs" / etag_of("README.md", seed_files()["README.md"])
    blob.unlink()
    blob.symlink_to(canary)  # a blob that leads out of the repository
    replace(snap / "config.json", edited_config())
    result = verify_model_dir(str(repo), hf_cache="")
    kinds = {os.path.relpath(c.path, result.root): c.kind.value for c in result.checks}
    assert kinds == {"README.md": "modified", "config.json": "modified"}
    readme = next(c for c in result.checks if c.path.endswith("README.md"))
    assert "resolves outside the repository" in readme.evidence and str(canary) in readme.evidence
    for mark in canary_marks():
        assert mark not in repr(result)


def test_snapshots_do_not_embed_what_a_link_out_of_the_tree_points_at(tmp_path, canary):
    model = build_local_dir(tmp_path / "m", seed_files())
    (model / "leak.json").symlink_to(canary)
    venv = tmp_path / "venv"
    (venv / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (venv / "bin").mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.7\n")
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / "lib" / "python3.11" / "site-packages" / "leak.json").symlink_to(canary)
    repo = build_cache_repo(tmp_path / "hub", seed_files())
    hub_snap = next((repo / "snapshots").iterdir())
    for roots, out in (({"model_dirs": [str(model)]}, "model.json"), ({"venv": str(venv)}, "venv.json"),
                       ({"venv": str(venv), "model_dirs": [str(model), str(hub_snap)]}, "bundle.json")):
        problems = snapshot(str(tmp_path / out), **roots)
        raw = (tmp_path / out).read_text()
        assert problems == []
        for mark in canary_marks():
            assert mark not in raw, out
        assert oct((tmp_path / out).stat().st_mode & 0o777) == "0o644"
    bundle = json.loads((tmp_path / "bundle.json").read_text())
    venv_files, model_files, hub_files = (r["manifest"]["files"] for r in bundle["roots"])
    assert venv_files["bin/python"]["link"] == sys.executable and "text" not in venv_files["bin/python"]
    assert model_files["leak.json"] == {**model_files["leak.json"], "link": str(canary)}
    assert "text" not in model_files["leak.json"]
    # A hub snapshot's links into ../../blobs stay inside its repository: their content is recorded.
    assert "DeepseekV3ForCausalLM" in hub_files["config.json"]["text"]
    # And the diff against it compares the link by its target.
    (model / "leak.json").unlink()
    (model / "leak.json").symlink_to(canary.parent / "other.json")
    proc = cli("diff", str(tmp_path / "bundle.json"), "--format", "json")
    report = json.loads(proc.stdout)
    assert {d["relpath"]: d["kind"] for d in report["drifts"]} == {"leak.json": "modified"}
    for mark in canary_marks():
        assert mark not in proc.stdout


# ---- cost bounds ---------------------------------------------------------------------------------

def test_a_regular_file_among_300_blobs_is_compared_with_a_few(tmp_path):
    repo = build_cache_repo(tmp_path / "hub", seed_files())
    snap = next((repo / "snapshots").iterdir())
    line = b"".join(b"token%05d " % i for i in range(9000))  # ~90 KB of text per blob
    for i in range(300):
        data = b"blob %d\n" % i + line
        (repo / "blobs" / git_blob_sha1(data)).write_bytes(data)
    (snap / "notes.txt").write_bytes(b"edited\n" + line)
    started = time.monotonic()
    result = verify_model_dir(str(repo), hf_cache="")
    elapsed = time.monotonic() - started
    assert elapsed < 10, elapsed
    notes = next(c for c in result.checks if c.path.endswith("notes.txt"))
    assert notes.kind.value == "modified" and "the blob is intact" in notes.evidence
    assert result.bytes_read < 16 * 100_000 + 1_000_000  # 16 candidate blobs, not 300


# ---- deeply nested JSON --------------------------------------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000
NESTED = '{"a": ' + "[" * 900 + "]" * 900 + "}"  # parses, but its changes would sink the report


def test_deeply_nested_config_json_in_every_kind(tmp_path):
    models = []
    plain = tmp_path / "manifest"
    plain.mkdir()
    for rel, data in seed_files().items():
        (plain / rel).write_bytes(data)
    write_manifest(str(plain), build_manifest(str(plain)), str(plain / MANIFEST_NAME))
    local = build_local_dir(tmp_path / "local", seed_files())
    write_manifest(str(local), build_manifest(str(local)), str(local / MANIFEST_NAME))  # originals' text
    build_git_clone(tmp_path / "git", seed_files())
    repo = build_cache_repo(tmp_path / "hub", seed_files())
    for model in (plain, local, tmp_path / "git", next((repo / "snapshots").iterdir())):
        for name, text in (("config.json", DEEP), ("hf_quant_config.json", NESTED)):
            replace(model / name, text.encode())
        models.append(model)
    args = [a for m in models for a in ("--model-dir", str(m))]
    status, report, _ = audit_json(*args)
    assert status == 1
    for model in models:
        got = drifts_of(report, model)
        assert got.get("config.json") in ("modified", "added") and got.get("hf_quant_config.json") in (
            "modified", "added"), (model, got)
    for d in report["drifts"]:
        assert json.dumps(d["json_changes"]).count("[") < 200


# ---- snapshots given to diff ---------------------------------------------------------------------

def manifest_doc(root: str, files: dict) -> dict:
    return {"manifest_version": "1", "tool": "driftscan", "created": "2026-12-01T00:00:00+00:00", "root": root,
            "files": files}


def test_hostile_snapshot_files_are_one_line_errors(tmp_path):
    good = {"xxh3_128": "0" * 32, "size": 1, "mode": 0o100644, "mtime_ns": 1}
    cases = {
        "invalid-utf8.json": b'{"manifest_version": "1", "tool": "\xff\xfe"}',
        "utf16-junk.json": b"\xff\xfe{\x00\x00",
        "deep.json": DEEP.encode(),
        "deep-bundle.json": b'{"bundle_version": "1", "roots": [' + DEEP.encode() + b"]}",
        "nested-root.json": json.dumps({"bundle_version": "1", "roots": [
            {"kind": "model-dir", "manifest": {**manifest_doc(str(tmp_path), {}), "tool": [[[[]]]] * 3}}]}).encode(),
        "surrogate.json": json.dumps(manifest_doc(str(tmp_path), {"a\ud800": good})).encode(),
        "huge-int.json": json.dumps(manifest_doc(str(tmp_path), {"a": {**good, "mtime_ns": 10 ** 400}})).encode(),
        "relative-root.json": json.dumps(manifest_doc("rel", {})).encode(),
        "many-problems.json": json.dumps(manifest_doc(str(tmp_path), {f"../{i}": good for i in range(5000)})).encode(),
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
    os.mkfifo(tmp_path / "fifo.json")
    runner = CliRunner()  # in-process: eleven interpreters would cost more than the checks
    for name in [*cases, "fifo.json"]:
        started = time.monotonic()
        result = runner.invoke(main, ["diff", str(tmp_path / name)])
        assert time.monotonic() - started < 10, name
        assert result.exit_code == 2, (name, result.output)
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("driftscan: error: "), (name, result.stderr)
        assert "internal error" not in result.stderr and "Traceback" not in result.stderr, name
        assert len(result.stderr) < 4000, name
    proc = cli("diff", str(tmp_path / "deep.json"))  # and once through the real command line
    assert proc.returncode == 2
    assert proc.stderr == f"driftscan: error: {tmp_path / 'deep.json'}: not valid JSON: nested too deeply\n"


def test_a_snapshot_folder_linked_out_of_the_repository_is_never_walked(tmp_path, canary):
    from fixtures.modeldirs import COMMIT_2

    repo = build_cache_repo(tmp_path / "hub", seed_files())
    (repo / "snapshots" / COMMIT_2).symlink_to(canary.parent)  # another "snapshot": the outside folder
    (repo / "refs" / "pr").mkdir()
    (repo / "refs" / "pr" / "1").write_text(COMMIT_2)
    replace(next(p for p in (repo / "snapshots").iterdir() if p.name != COMMIT_2) / "config.json", edited_config())
    result = verify_model_dir(str(repo), hf_cache="")
    assert [os.path.basename(c.path) for c in result.checks] == ["config.json"] and result.errors == ()
    result = verify_model_dir(str(repo), revision="pr/1", hf_cache="")
    assert result.checks == () and result.files_checked == 0
    assert "resolves outside the repository" in result.unverifiable[0].reason
    for mark in canary_marks():
        assert mark not in repr(result)


def test_a_folder_linked_out_of_a_manifest_tree_is_not_entered(tmp_path, canary):
    model = tmp_path / "m"
    (model / "sub").mkdir(parents=True)
    (model / "sub" / "credentials.json").write_bytes(b'{"api_key": "old"}\n')
    (model / "config.json").write_bytes(seed_files()["config.json"])
    write_manifest(str(model), build_manifest(str(model)), str(model / MANIFEST_NAME))
    os.rename(model / "sub", tmp_path / "gone")
    (model / "sub").symlink_to(canary.parent)  # sub/credentials.json now names the canary
    replace(model / "config.json", edited_config())
    result = verify_model_dir(str(model), hf_cache="")
    kinds = {os.path.relpath(c.path, model): c.kind.value for c in result.checks}
    assert kinds == {"config.json": "modified", "sub": "added"}
    assert [e.message.split(" (")[0] for e in result.errors] == ["resolves outside the model directory"]
    for mark in canary_marks():
        assert mark not in repr(result)


def test_safetensors_headers_read_at_most_a_budget(tmp_path, monkeypatch):
    import struct

    from driftscan.modeldir import consistency as modeldir_consistency

    monkeypatch.setattr(modeldir_consistency, "HEADER_BUDGET", 10 << 20)
    model = tmp_path / "m"
    model.mkdir()
    for i in range(4):  # each claims a 6 MB header over a hole: only one fits the budget
        with open(model / f"shard-{i}.safetensors", "wb") as f:
            f.write(struct.pack("<Q", 6 << 20))
            f.truncate(8 + (6 << 20) + 16)
    result = verify_model_dir(str(model), hf_cache="")
    assert result.bytes_read < 7 << 20
    assert [c.kind.value for c in result.checks] == ["corrupt"]  # the one header read is not JSON
    assert len(result.errors) == 3 and all("not read" in e.message for e in result.errors)


def test_a_commit_from_the_tree_is_quoted_in_remedies(tmp_path):
    from driftscan.modeldir.remedies import with_remedies

    hostile = "abc;touch${IFS}pwned"
    model = build_local_dir(tmp_path / "m", seed_files(), commit=hostile)
    replace(model / "config.json", edited_config())
    [check] = with_remedies(verify_model_dir(str(model), hf_cache=""))
    assert f"--revision '{hostile}'" in check.remedy_hint


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_under_strace_nothing_outside_is_ever_opened(tmp_path, canary):
    """The report could hide a read; the system calls cannot. Every kind of pointer out of the
    tree at once: audit, snapshot and diff open nothing in the canary's folder."""
    from fixtures.modeldirs import COMMIT_2

    plain = tmp_path / "plain"
    plain.mkdir()
    for rel, data in seed_files().items():
        (plain / rel).write_bytes(data)
    hostile_manifest(plain, canary)
    local = build_local_dir(tmp_path / "local", seed_files())
    (local / "leak.json").symlink_to(canary)
    meta = local / ".cache" / "huggingface" / "download" / "README.md.metadata"
    meta.unlink()
    meta.symlink_to(canary)
    (local / MANIFEST_NAME).symlink_to(canary)
    repo = build_cache_repo(tmp_path / "hub", seed_files())
    snap = next((repo / "snapshots").iterdir())
    blob = repo / "blobs" / etag_of("README.md", seed_files()["README.md"])
    blob.unlink()
    blob.symlink_to(canary)
    (snap / "extra.json").symlink_to(canary)
    (repo / "snapshots" / COMMIT_2).symlink_to(canary.parent)
    other = build_cache_repo(tmp_path / "hub", seed_files(), repo_id="other/model")
    (other / "refs" / "main").unlink()
    (other / "refs" / "main").symlink_to(canary)
    log = tmp_path / "strace.log"

    def traced(*args: str) -> subprocess.CompletedProcess:
        proc = subprocess.run(["strace", "-f", "-qq", "-e", "trace=open,openat,openat2", "-o", str(log),
                               sys.executable, "-m", "driftscan", *args], capture_output=True, text=True,
                              timeout=TIMEOUT, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
        opened = [line for line in log.read_text(errors="replace").splitlines() if str(canary.parent) in line]
        assert opened == [], (args[0], opened)
        return proc

    dirs = [a for d in (plain, local, repo, other) for a in ("--model-dir", str(d))]
    audit = traced("audit", *dirs, "--format", "json")
    assert audit.returncode == 3 and SECRET_WORD not in audit.stdout
    traced("snapshot", "--model-dir", str(plain), "--model-dir", str(local), "--model-dir", str(snap),
           "-o", str(tmp_path / "snap.json"))
    for mark in canary_marks():
        assert mark not in (tmp_path / "snap.json").read_text()
    assert traced("diff", str(tmp_path / "snap.json")).returncode == 0


def test_a_tree_1400_directories_deep_costs_nothing_else(tmp_path):
    """Python 3.10 and 3.11's os.walk recurses: 1,400 nested directories made the whole model
    directory's audit fail (RecursionError) and hid a real edit."""
    model = build_local_dir(tmp_path / "kimi", seed_files())
    replace(model / "config.json", edited_config())
    levels = [model]
    try:
        for _ in range(1400):  # not os.makedirs: it recurses too
            levels.append(levels[-1] / "a")
            levels[-1].mkdir()
        (levels[-1] / "x.txt").write_text("x\n")
        status, report, _ = audit_json("--model-dir", str(model))
    finally:  # pytest's own clean-up (shutil.rmtree) recurses as well: take the tree down here
        (levels[-1] / "x.txt").unlink(missing_ok=True)
        for level in reversed(levels[1:]):
            if level.is_dir():
                level.rmdir()
    assert not any("RecursionError" in e["message"] for e in report["errors"]), report["errors"]
    found = drifts_of(report, model)
    assert found["config.json"] == "modified"
    assert found["/".join(["a"] * 1400) + "/x.txt"] == "added"
