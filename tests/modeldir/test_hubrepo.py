"""Which repository a ``hf download --local-dir`` directory's remedy names, and what named it: the
hub cache holding the recorded commit, the directory's git remote, ``config.json``'s
``_name_or_path``, else none — never README.md's ``base_model`` (the model it was derived from)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from driftscan.core.values import DriftKind
from driftscan.modeldir import verify_model_dir
from driftscan.modeldir.remedies import with_remedies
from driftscan.modeldir.provenance.hubrepo import RepoEvidence, find_repo_id, hub_repo_of_url
from fixtures.modeldirs import COMMIT, build_cache_repo, build_local_dir, dump_json, seed_files

DERIVED = "nvidia/DeepSeek-V2-Lite-NVFP4"
BASE = "deepseek-ai/DeepSeek-V2-Lite"
CARD = f"---\nlicense: other\nbase_model: {BASE}\ntags:\n- nvfp4\n---\n# DeepSeek-V2-Lite-NVFP4\n"


def _quantized_dir(tmp_path: Path, *, name_or_path: str | None = DERIVED, card: str = CARD) -> Path:
    """A local-dir download whose config names itself and whose card names its base; config.json then edited."""
    files = seed_files()
    config = json.loads(files["config.json"])
    if name_or_path is not None:
        config["_name_or_path"] = name_or_path
    files["config.json"] = dump_json(config)
    files["README.md"] = card.encode()
    root = build_local_dir(tmp_path / "dsv2-nvfp4", files)
    config["max_position_embeddings"] = 4096  # the edit: _name_or_path stays
    (root / "config.json").write_bytes(dump_json(config))
    return root


def _config_check(root: Path):
    [check] = [c for c in with_remedies(verify_model_dir(str(root))) if c.path.endswith("config.json")]
    assert check.kind is DriftKind.MODIFIED
    return check


def _command(remedy: str) -> list[str]:
    """The hf download the remedy runs after its checkpoint line, as words."""
    _, sep, command = remedy.partition(" && ")
    assert sep, remedy
    return shlex.split(command)


def test_name_or_path_names_the_repository_not_base_model(tmp_path):
    root = _quantized_dir(tmp_path)
    check = _config_check(root)
    assert check.remedy_hint.startswith("repository named by config.json's _name_or_path: checkpoint first: ")
    assert _command(check.remedy_hint) == ["hf", "download", DERIVED, "config.json", "--revision", COMMIT,
                                           "--local-dir", str(root), "--force-download"]
    assert BASE not in check.remedy_hint
    assert f"the repository {DERIVED} in the remedy: config.json's _name_or_path (evidence: name-or-path)" \
        in check.evidence
    found = find_repo_id(str(root), COMMIT)
    assert found is not None and found.evidence is RepoEvidence.NAME_OR_PATH and not found.certain


def test_the_hub_cache_holding_the_recorded_commit_comes_first(tmp_path, monkeypatch):
    hub = tmp_path / "hub"
    build_cache_repo(hub, {"config.json": b"{}"}, repo_id="acme/dsv2-mirror", commit=COMMIT)
    build_cache_repo(hub, {"config.json": b"{}"}, repo_id=BASE, commit="0" * 40)  # the base: another commit
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    root = _quantized_dir(tmp_path)
    check = _config_check(root)
    assert check.remedy_hint.startswith("repository named by the hub cache holding the recorded commit: ")
    assert _command(check.remedy_hint)[2:6] == ["acme/dsv2-mirror", "config.json", "--revision", COMMIT]
    assert f"the hub cache holds the download metadata's commit {COMMIT[:12]}" in check.evidence
    assert "(evidence: hub-cache)" in check.evidence and "a wrong name fails" not in check.evidence


def test_a_hugging_face_git_remote_comes_before_name_or_path(tmp_path):
    root = _quantized_dir(tmp_path)
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text(
        '[core]\n\tbare = false\n[remote "mirror"]\n\turl = https://github.com/acme/other.git\n'
        f'[remote "origin"]\n\turl = https://user:hf_secret@huggingface.co/{DERIVED}-v2.git\n')
    check = _config_check(root)
    assert check.remedy_hint.startswith("repository named by the git remote in .git/config: ")
    assert _command(check.remedy_hint)[2] == f"{DERIVED}-v2"
    assert "the git remote 'origin' in .git/config (evidence: git-remote)" in check.evidence
    assert "hf_secret" not in check.evidence + check.remedy_hint  # a token in the URL is never shown


def test_with_only_base_model_no_repository_is_guessed(tmp_path):
    root = _quantized_dir(tmp_path, name_or_path=None)
    check = _config_check(root)
    remedy = check.remedy_hint
    assert BASE not in remedy and BASE not in check.evidence
    assert remedy.startswith("checkpoint first: driftscan checkpoint --model-dir ")  # before anything it suggests
    assert f"; then no repository is known: the download metadata records only the commit {COMMIT[:12]}" in remedy
    assert "restore it offline from a copy of the original" in remedy
    # the command's shape holds a placeholder hf refuses, never a name
    assert "hf download '<ORG/NAME: see above>' config.json" in remedy
    assert "README.md's base_model is the model this one was derived from" in check.evidence
    assert find_repo_id(str(root), COMMIT) is None


@pytest.mark.parametrize("value", ["./local/checkpoint", "/models/dsv2", "DeepSeek-V2-Lite"])
def test_name_or_path_that_is_a_path_or_a_bare_name_names_nothing(tmp_path, value):
    root = _quantized_dir(tmp_path, name_or_path=value)
    assert find_repo_id(str(root), COMMIT) is None
    assert _config_check(root).remedy_hint.startswith("checkpoint first: ")


@pytest.mark.parametrize("url, expected", [
    ("https://huggingface.co/org/name", ("org/name", "model")),
    ("https://huggingface.co/org/name.git/", ("org/name", "model")),
    ("https://hf.co/datasets/org/data", ("org/data", "dataset")),
    ("git@hf.co:spaces/org/app", ("org/app", "space")),
    ("ssh://git@huggingface.co/org/name.git", ("org/name", "model")),
    ("https://github.com/org/name.git", None),
    ("https://huggingface.co.evil.example/org/name", None),
    ("https://evil.example/huggingface.co/org/name", None),
    ("https://huggingface.co/org/name/extra", None),
    ("https://huggingface.co/-rf/x", None),
    ("https://huggingface.co//abs/path", None),
    ("/srv/mirror/org/name", None),
])
def test_hub_urls(url, expected):
    assert hub_repo_of_url(url) == expected


def test_git_config_is_read_only_as_a_regular_file_inside_the_directory(tmp_path):
    root = _quantized_dir(tmp_path, name_or_path=None)
    (tmp_path / "outside").write_text('[remote "origin"]\n\turl = https://huggingface.co/org/outside\n')
    (root / ".git").mkdir()
    (root / ".git" / "config").symlink_to(tmp_path / "outside")
    assert find_repo_id(str(root), COMMIT) is None


def test_a_name_without_a_full_commit_to_pin_is_not_used(tmp_path):
    files = seed_files()
    config = json.loads(files["config.json"])
    config["_name_or_path"] = DERIVED
    files["config.json"] = dump_json(config)
    root = build_local_dir(tmp_path / "m", files, commit="3f2a9c1")  # a short commit: pins nothing
    (root / "config.json").write_bytes(dump_json({**config, "max_position_embeddings": 4096}))
    check = _config_check(root)
    assert "; then no repository is known for sure: config.json's _name_or_path names " + DERIVED in check.remedy_hint
    assert f"hf download {DERIVED}" not in check.remedy_hint
    assert f"names {DERIVED}, not used without a recorded commit to pin the download to" in check.evidence
