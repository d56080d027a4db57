"""Accept entries pinned by content and root: hub cache files edited through their snapshot links,
another model's file of the same relpath, entries without root or sha256 from older files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from driftscan.config.settings import load_config
from driftscan.report.accept import AcceptEntry, apply_accepted, counted, drift_root, matches
from driftscan.report.contract import DriftOut, Report, Summary, TargetInfo
from fixtures.harness import run_cli
from fixtures.modeldirs import COMMIT, REPO_ID, build_cache_repo, cache_repo_dir, seed_files

OTHER_ID = "acme/Other-Model"


def snapshot_file(cache: Path, repo_id: str, relpath: str = "config.json") -> Path:
    return cache_repo_dir(cache, repo_id) / "snapshots" / COMMIT / relpath


def edit_through_link(link: Path, key: str) -> None:
    """What a user's editor does to a hub file: writes through the snapshot symlink, into the blob."""
    assert link.is_symlink()
    data = json.loads(link.read_text())
    data[key] = True
    link.write_text(json.dumps(data))


def audit(cache: Path, cwd: Path) -> tuple[int, dict]:
    proc = run_cli("audit", "--hf-cache", str(cache), "--format", "json", cwd=str(cwd))
    assert "Traceback" not in proc.stderr and proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def by_repo(report: dict) -> dict[str, dict]:
    return {d["path"].split("/snapshots/")[0].rsplit("/", 1)[1]: d for d in report["drifts"]}


@pytest.fixture
def hub(tmp_path) -> Path:
    cache = tmp_path / "hub"
    build_cache_repo(cache, seed_files())
    build_cache_repo(cache, seed_files(), repo_id=OTHER_ID)
    return cache


def test_hub_blob_edited_through_its_link_is_pinned_by_content_and_repository(hub, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    mine, other = snapshot_file(hub, REPO_ID), snapshot_file(hub, OTHER_ID)
    edit_through_link(mine, "kept_on_purpose")
    code, report = audit(hub, project)
    assert code == 1 and [d["relpath"] for d in report["drifts"]] == ["config.json"]

    proc = run_cli("accept", "config.json", "--reason", "sm120 kv cache off", "--hf-cache", str(hub),
                   cwd=str(project))
    assert proc.returncode == 0, proc.stderr
    [entry] = load_config(str(project / "driftscan.toml")).accept
    # The content read through the link (the blob), and the repository and revision, not the cache's place.
    assert entry.sha256 == hashlib.sha256(mine.read_bytes()).hexdigest()
    assert entry.path == "config.json"
    assert entry.root == f"**/{cache_repo_dir(hub, REPO_ID).name}/snapshots/{COMMIT}"
    assert f"accepted config.json in {entry.root} (sha256 {entry.sha256[:16]}" in proc.stdout

    code, report = audit(hub, project)
    assert code == 0 and report["drifts"][0]["accepted"]["root"] == entry.root
    assert report["stale_accepted"] == [] and report["unused_accepted"] == []

    # Another model's config.json: the entry is not about it (neither accepted nor stale).
    edit_through_link(other, "someone_elses_edit")
    code, report = audit(hub, project)
    assert code == 1
    drifts = by_repo(report)
    assert drifts[cache_repo_dir(hub, REPO_ID).name]["accepted"] is not None
    assert drifts[cache_repo_dir(hub, OTHER_ID).name]["accepted"] is None
    assert report["stale_accepted"] == [] and report["summary"]["accepted"] == 1

    # A second edit of the accepted file: the entry is stale, its drift counts (exit bit 1).
    edit_through_link(mine, "and_again")
    code, report = audit(hub, project)
    assert code & 1 and report["summary"]["accepted"] == 0
    [stale] = report["stale_accepted"]
    assert (stale["entry"], stale["path"], stale["file"]) == (0, "config.json", str(mine))
    assert stale["why"] == f"the file no longer has that sha256 (now {hashlib.sha256(mine.read_bytes()).hexdigest()})"
    text = run_cli("audit", "--hf-cache", str(hub), cwd=str(project))
    assert text.returncode & 1 and "accept[0] config.json: the file no longer has that sha256" in text.stdout


def test_any_root_and_any_content_keep_the_unpinned_entry(hub, tmp_path):
    mine, other = snapshot_file(hub, REPO_ID), snapshot_file(hub, OTHER_ID)
    edit_through_link(mine, "a")
    edit_through_link(other, "b")
    proc = run_cli("accept", "config.json", "--reason", "every model's config is ours", "--any-root",
                   "--any-content", "--hf-cache", str(hub), cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    entries = load_config(str(tmp_path / "driftscan.toml")).accept
    assert [(e.path, e.root, e.sha256) for e in entries] == [("config.json", None, None)] * 2
    assert 'root' not in (tmp_path / "driftscan.toml").read_text()
    edit_through_link(mine, "again")
    code, report = audit(hub, tmp_path)
    assert code == 0 and report["summary"]["accepted"] == 2


def test_an_entry_without_root_or_sha256_from_an_older_file_matches_as_before(hub, tmp_path):
    (tmp_path / "driftscan.toml").write_text('[[accept]]\npath = "config.json"\nreason = "written by hand"\n')
    edit_through_link(snapshot_file(hub, REPO_ID), "a")
    edit_through_link(snapshot_file(hub, OTHER_ID), "b")
    code, report = audit(hub, tmp_path)
    assert code == 0 and [d["accepted"]["entry"] for d in report["drifts"]] == [0, 0]
    assert all("root" not in d["accepted"] for d in report["drifts"])


def test_a_link_out_of_the_repository_is_refused_not_written_unpinned(hub, tmp_path):
    outside = tmp_path / "elsewhere.json"
    outside.write_text('{"planted": true}')
    link = snapshot_file(hub, REPO_ID)
    link.unlink()
    link.symlink_to(outside)
    code, report = audit(hub, tmp_path)
    assert code & 1 and [d["relpath"] for d in report["drifts"]] == ["config.json"]
    proc = run_cli("accept", "config.json", "--reason", "r", "--hf-cache", str(hub), cwd=str(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith("driftscan: error: config.json: cannot hash it: resolves outside the audited tree")
    assert "not accepted" in line and "--any-content" in line
    assert not (tmp_path / "driftscan.toml").exists()
    again = run_cli("accept", "config.json", "--reason", "r", "--any-content", "--hf-cache", str(hub),
                    cwd=str(tmp_path))
    assert again.returncode == 0, again.stderr
    [entry] = load_config(str(tmp_path / "driftscan.toml")).accept
    assert entry.sha256 is None and entry.root is not None


def _drift(path: str, relpath: str) -> DriftOut:
    return DriftOut(path=path, relpath=relpath, kind="modified", scope="data", survives_reinstall=True, remedy="")


def test_root_matching_literal_glob_and_old_entries():
    a = _drift("/models/a/config.json", "config.json")
    b = _drift("/models/b/config.json", "config.json")
    deep = _drift("/models/a/sub/config.json", "sub/config.json")
    assert drift_root(a) == "/models/a" and drift_root(deep) == "/models/a"
    assert matches("config.json", a, "/models/a") and not matches("config.json", b, "/models/a")
    assert matches("config.json", a, "/models/a/") and matches("config.json", b, "**/b")
    assert not matches("config.json", deep, "/models/a")  # the relpath is relative to the root
    assert matches("config.json", a) and matches("config.json", b)  # no root: any root
    assert not matches("config.json", _drift("/weird", "config.json"), "/models/a")  # root unknown


def test_a_pinned_root_accepts_only_its_own_file(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text("{}")
    a, b = (_drift(str(tmp_path / n / "config.json"), "config.json") for n in ("a", "b"))
    report = Report(target=TargetInfo(model_dirs=[str(tmp_path / "a"), str(tmp_path / "b")]),
                    summary=Summary(distributions=0, files_checked=2, drifts=2, unverifiable=0, errors=0),
                    drifts=[a, b])
    digest = hashlib.sha256(b"{}").hexdigest()
    out = apply_accepted(report, [AcceptEntry(path="config.json", root=str(tmp_path / "a"), sha256=digest,
                                              reason="mine")])
    assert [d.accepted is not None for d in out.drifts] == [True, False] and counted(out) == [out.drifts[1]]
    assert out.stale_accepted == [] and out.unused_accepted == []


@pytest.mark.parametrize("root", ["models/a", "", "**/[z-a]", "a*"])
def test_a_root_is_an_absolute_directory_or_a_glob_of_one(root):
    with pytest.raises(ValueError):
        AcceptEntry(path="config.json", root=root, reason="r")


def test_root_is_written_before_sha256_and_read_back(tmp_path):
    from driftscan.config.settings import append_entries

    target = tmp_path / "driftscan.toml"
    append_entries(str(target), [AcceptEntry(path="config.json", root="/srv/models/kimi", sha256="a" * 64,
                                             reason="r")])
    text = target.read_text()
    assert text.index("root = ") < text.index("sha256 = ")
    [entry] = load_config(str(target)).accept
    assert (entry.root, entry.sha256) == ("/srv/models/kimi", "a" * 64)


def test_a_local_model_directory_is_pinned_by_its_absolute_path(tmp_path):
    from fixtures.modeldirs import build_local_dir

    kimi, other = build_local_dir(tmp_path / "kimi", seed_files()), build_local_dir(tmp_path / "other", seed_files())
    for model in (kimi, other):
        with open(model / "config.json", "a") as f:
            f.write("\n")
    targets = ("--model-dir", str(kimi), "--model-dir", str(other))
    proc = run_cli("accept", str(kimi / "config.json"), "--reason", "kimi's own", *targets, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    [entry] = load_config(str(tmp_path / "driftscan.toml")).accept
    # Root told the two apart: the relpath is written, not the absolute path.
    assert (entry.path, entry.root) == ("config.json", str(kimi))
    out = run_cli("audit", *targets, "--format", "json", cwd=str(tmp_path))
    report = json.loads(out.stdout)
    assert out.returncode == 1 and report["summary"]["accepted"] == 1
    assert [d["path"] for d in report["drifts"] if d["accepted"]] == [str(kimi / "config.json")]
