"""Model directories through the command line: data scope, what changed, cheap by default."""

from __future__ import annotations

import json

from fixtures.harness import run_cli
from fixtures.modeldirs import (
    REPO_ID, build_cache_repo, build_git_clone, build_local_dir, seed_files, sm120_edit, sparse_shard_header,
    write_sparse_shard,
)


def audit_json(*args: str) -> tuple[int, dict]:
    proc = run_cli("audit", *args, "--format", "json")
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_seed_local_dir_edit_shows_exactly_the_two_configs(tmp_path):
    model = build_local_dir(tmp_path / "kimi", seed_files())
    status, report = audit_json("--model-dir", str(model))
    assert status == 0 and report["drifts"] == []
    assert report["target"] == {**report["target"], "venv": None, "site_packages": [], "model_dirs": [str(model)]}

    sm120_edit(model)
    status, report = audit_json("--model-dir", str(model))
    assert status == 1
    assert sorted(d["relpath"] for d in report["drifts"]) == ["config.json", "hf_quant_config.json"]
    for d in report["drifts"]:
        assert (d["kind"], d["scope"], d["survives_reinstall"], d["prediction"]) == ("modified", "data", True,
                                                                                   "survives")
        # Nothing in the directory names its repository: the remedy saves the edit, says so, gives
        # the offline way, and the command's shape holds a placeholder that cannot be pasted by
        # mistake (quoted, and not a repository id hf accepts).
        assert d["remedy"].startswith(f"checkpoint first: driftscan checkpoint --model-dir {model} -o ")
        assert "; then no repository is known: " in d["remedy"]
        assert "restore it offline from a copy of the original" in d["remedy"]
        assert f", hf download '<ORG/NAME: see above>' {d['relpath']} --revision " in d["remedy"]
    # A --local-dir download keeps only hashes: the original text is not at hand, so no json_changes.
    assert all(d["json_changes"] == [] for d in report["drifts"])


def test_git_clone_with_uncommitted_sm120_edit(tmp_path):
    model = tmp_path / "clone"
    build_git_clone(model, seed_files())
    sm120_edit(model)
    status, report = audit_json("--model-dir", str(model))
    config = next(d for d in report["drifts"] if d["relpath"] == "config.json")
    assert config["scope"] == "data"
    assert any(c["pointer"] == "/quantization_config/kv_cache_scheme" and c["op"] == "removed"
               for c in config["json_changes"])
    assert config["remedy"].startswith(f"checkpoint first: driftscan checkpoint --model-dir {model} -o ")
    assert f" && git -C {model} checkout HEAD -- config.json" in config["remedy"]


def test_hf_cache_flag_audits_every_repository(tmp_path):
    cache = tmp_path / "hub"
    repo = build_cache_repo(cache, seed_files())
    snapshot_config = next((repo / "snapshots").iterdir()) / "config.json"
    data = json.loads(snapshot_config.read_text())
    data["quantization_config"].pop("kv_cache_scheme")
    snapshot_config.write_text(json.dumps(data))  # through the symlink: the blob is edited in place
    status, report = audit_json("--hf-cache", str(cache))
    assert status == 1
    assert [d["relpath"] for d in report["drifts"]] == ["config.json"]
    assert REPO_ID in report["drifts"][0]["remedy"]
    missing = run_cli("audit", "--hf-cache", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "no Hugging Face cache here" in missing.stderr


def test_an_empty_hf_cache_is_said_and_is_not_a_clean_pass(tmp_path):
    cache = tmp_path / "hub"
    cache.mkdir()
    message = f"the Hugging Face cache {cache} holds no repository (models--*/, datasets--*/, spaces--*/)"
    alone = {"VIRTUAL_ENV": "", "CONDA_PREFIX": "", "PATH": "/usr/bin:/bin"}  # no environment of the user's
    proc = run_cli("audit", "--hf-cache", str(cache), "--format", "json", cwd=str(tmp_path), env=alone)
    assert proc.returncode == 2 and f"driftscan audit: {message}" in proc.stderr
    report = json.loads(proc.stdout)
    assert report["errors"] == [{"path": str(cache), "message": message}]
    assert report["target"]["kind"] == "none" and report["summary"]["distributions"] == 0  # not driftscan's own
    text = run_cli("audit", "--hf-cache", str(cache), cwd=str(tmp_path), env=alone)
    assert text.returncode == 2 and message in text.stdout and "nothing audited" in text.stdout
    # Beside a model directory that was checked: a note, and the directory's verdict is the exit status.
    model = build_local_dir(tmp_path / "kimi", seed_files())
    status, report = audit_json("--hf-cache", str(cache), "--model-dir", str(model))
    assert status == 0 and report["skipped"] == [{"path": str(cache), "message": message}]
    # A checkpoint of nothing but that cache: refused, nothing written.
    cp = tmp_path / "cp"
    proc = run_cli("checkpoint", "--hf-cache", str(cache), "-o", str(cp), cwd=str(tmp_path), env=alone)
    assert proc.returncode == 2 and f"{message}: nothing to checkpoint, nothing written" in proc.stderr
    assert not cp.exists() and "Traceback" not in proc.stderr


def test_large_shard_is_not_read_unless_deep(tmp_path):
    files = seed_files()
    shard_len = 4 << 30
    model = build_local_dir(tmp_path / "big", files)
    write_sparse_shard(model / "model-00003-of-00003.safetensors", shard_len)
    # Not listed in the download metadata: reported as added without reading it.
    status, report = audit_json("--model-dir", str(model))
    assert [d["relpath"] for d in report["drifts"]] == ["model-00003-of-00003.safetensors"]
    assert report["drifts"][0]["kind"] == "added"
    assert len(sparse_shard_header(shard_len)) < 1024


def test_model_dir_and_venv_together_are_one_report(tmp_path, pristine_pip_venv):
    model = build_local_dir(tmp_path / "kimi", seed_files())
    sm120_edit(model)
    status, report = audit_json("--venv", str(pristine_pip_venv), "--model-dir", str(model))
    assert report["target"]["venv"] == str(pristine_pip_venv) and report["target"]["model_dirs"] == [str(model)]
    assert {d["scope"] for d in report["drifts"]} == {"data"}
    assert report["summary"]["distributions"] > 5


def test_directory_with_no_provenance_is_unverifiable_not_clean(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m/config.json").write_text("{}")
    proc = run_cli("audit", "--model-dir", str(tmp_path / "m"), "--strict")
    assert proc.returncode == 2
    assert "no download metadata, no git repository, no driftscan manifest" in proc.stdout
