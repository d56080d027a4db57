"""Single bad parts and output hygiene: a symlink the user chose, an in-tree manifest vouching for a
link out, a repository git would refuse, a NUL in a found config, a snapshot of ``/proc``, and file
names with newlines in restore, checkpoint and accept output.

Each input is built for real and driftscan runs on it under ``fixtures/bounded.py``'s bound.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fixtures.envtree import editable_site
from fixtures import venvs
from fixtures.bounded import driftscan_bounded
from fixtures.demo import make_project

EXIT_INCOMPLETE = 2


@pytest.fixture(scope="module")
def pip_venv(tmp_path_factory) -> Path:
    return venvs.make_pip_venv(tmp_path_factory.mktemp("edges") / "venv")


def _json(proc: subprocess.CompletedProcess) -> dict:
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


# ---- a symlinked site-packages named on the command line ------------------------------------------

def test_a_site_packages_named_through_a_symlink_is_audited_and_the_link_named(pip_venv, tmp_path):
    site = venvs.site_packages_of(pip_venv)
    link = tmp_path / "site-link"
    link.symlink_to(site)
    laid_out = tmp_path / "prefix" / "lib" / site.parent.name / "site-packages"  # a link in the layout
    laid_out.parent.mkdir(parents=True)
    laid_out.symlink_to(site)
    for named in (link, laid_out):
        proc = driftscan_bounded("audit", "--site-packages", str(named), "--format", "json", seconds=60)
        report = _json(proc)
        assert proc.returncode == 0, (named, report["errors"][:3])
        assert report["target"]["site_packages"] == [str(site)]
        assert report["target"]["site_packages_links"] == {str(named): str(site)}
        assert report["summary"]["files_checked"] > 100 and report["errors"] == []
    text = driftscan_bounded("audit", "--site-packages", str(link), seconds=60)
    assert f"named as {link} (through a symlink)" in text.stdout.splitlines()[0]


def test_a_venvs_own_site_packages_linked_out_stays_refused(pip_venv, tmp_path):
    venv = tmp_path / "v"
    shutil.copytree(pip_venv, venv, symlinks=True)
    site = venvs.site_packages_of(venv)
    elsewhere = tmp_path / "elsewhere"
    shutil.move(site, elsewhere)
    site.symlink_to(elsewhere)
    proc = driftscan_bounded("audit", "--venv", str(venv), seconds=60)
    assert proc.returncode == EXIT_INCOMPLETE and "resolves outside the environment" in proc.stderr, proc.stderr


# ---- an in-tree manifest naming a link out of the tree --------------------------------------------

def test_an_in_tree_manifest_vouching_for_a_link_out_of_the_tree_is_not_checked(tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_text('{"secret": 1}\n')
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"hidden": 16}\n')
    (model / "tokenizer.json").symlink_to(outside)
    manifest = model / ".driftscan-manifest.json"
    made = driftscan_bounded("snapshot", "--model-dir", str(model), "-o", str(manifest), seconds=60)
    assert made.returncode == 0, made.stderr
    assert json.loads(manifest.read_text())["files"]["tokenizer.json"]["link"] == str(outside)
    proc = driftscan_bounded("audit", "--model-dir", str(model), "--format", "json", seconds=60)
    report = _json(proc)
    assert proc.returncode & EXIT_INCOMPLETE, report
    [error] = [e for e in report["errors"] if e["path"] == str(model / "tokenizer.json")]
    assert str(outside) in error["message"] and "not checked" in error["message"]
    assert report["drifts"] == [] and report["summary"]["files_checked"] == 1  # config.json, still checked
    assert "secret" not in proc.stdout


# ---- a repository git refuses (safe.directory) ----------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_an_editable_source_repository_of_another_user_carries_could_not_check(tmp_path):
    project = make_project(tmp_path / "proj")
    site = editable_site(tmp_path, project)
    nobody = 65534
    subprocess.run(["chown", "-R", f"{nobody}:{nobody}", str(project)], check=True)
    # git itself refuses it as root: the rule driftscan applies
    plain = subprocess.run(["git", "-C", str(project), "status"], capture_output=True, text=True, timeout=30)
    assert "dubious ownership" in plain.stderr
    proc = driftscan_bounded("audit", "--site-packages", str(site), "--format", "json", seconds=60)
    report = _json(proc)
    assert proc.returncode & EXIT_INCOMPLETE, report
    assert any(e["path"] == str(project) and f"uid {nobody}" in e["message"] for e in report["errors"]), report
    assert any(f"uid {nobody}" in u["reason"] for u in report["unverifiable"]), report


# ---- a NUL byte in a found config -----------------------------------------------------------------

@pytest.mark.parametrize("name, text", [
    ("driftscan.toml", 'model_dirs = ["a\\u0000b"]\n'),
    ("pyproject.toml", '[tool.driftscan]\nmodel_dirs = ["models/\\u0000x"]\n'),
])
def test_a_nul_in_a_found_configs_model_dirs_is_a_config_error(tmp_path, name, text):
    work = tmp_path / "work"
    work.mkdir()
    (work / name).write_text(text)
    proc = driftscan_bounded("audit", cwd=str(work), seconds=30)
    assert proc.returncode == EXIT_INCOMPLETE, proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert str(work / name) in line and "model_dirs" in line and "NUL" in line, line


# ---- diff against a snapshot of /proc -------------------------------------------------------------

@pytest.mark.skipif(not os.path.isfile("/proc/self/pagemap"), reason="needs Linux /proc")
def test_a_diff_of_a_proc_snapshot_reports_what_could_not_be_read(tmp_path):
    snap = tmp_path / "proc.json"
    made = driftscan_bounded("snapshot", "--model-dir", "/proc/self", "-o", str(snap), seconds=60, memory_mb=512)
    assert made.returncode == EXIT_INCOMPLETE and "not recorded: /proc/self/pagemap" in made.stderr, made.stderr
    unreadable = json.loads(snap.read_text())["unreadable"]
    assert "pagemap" in unreadable
    proc = driftscan_bounded("diff", str(snap), "--format", "json", seconds=60, memory_mb=512)
    report = _json(proc)
    assert proc.returncode & EXIT_INCOMPLETE, report["summary"]
    errors = {e["path"]: e["message"] for e in report["errors"]}
    assert "not compared" in errors["/proc/self/pagemap"], errors
    added = {d["relpath"] for d in report["drifts"] if d["kind"] == "added"}
    assert "pagemap" not in added and not added & set(unreadable)


# ---- file names with newlines in restore, checkpoint and accept output ----------------------------

FAKE = "FAKE-LINE everything restored"


def _faked(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.lstrip().startswith("FAKE-LINE")]


def test_a_newline_in_a_file_name_fakes_no_line_of_restore_checkpoint_or_accept(pip_venv, tmp_path):
    venv = tmp_path / "v"
    shutil.copytree(pip_venv, venv, symlinks=True)
    pkg = venvs.site_packages_of(venv) / "pip"
    name = f"evil\n{FAKE}.py"
    (pkg / name).write_text("X = 1\n")
    restore = driftscan_bounded("restore", "--venv", str(venv), "--dist", "pip", "--remove-added", seconds=90)
    assert "Traceback" not in restore.stderr, restore.stderr
    assert "evil\\x0a" in restore.stdout, restore.stdout
    assert _faked(restore.stdout) == [] and _faked(restore.stderr) == []
    checkpoint = driftscan_bounded("checkpoint", "--venv", str(venv), "-o", str(tmp_path / "cp"), seconds=90)
    assert "evil\\x0a" in checkpoint.stdout, (checkpoint.stdout, checkpoint.stderr)
    assert _faked(checkpoint.stdout) == [] and _faked(checkpoint.stderr) == []
    config = tmp_path / "driftscan.toml"
    accept = driftscan_bounded("accept", f"pip/{name}", "--reason", "kept", "--venv", str(venv),
                               "--config", str(config), seconds=90)
    assert accept.returncode == 0, accept.stderr
    assert "evil\\x0a" in accept.stdout, accept.stdout
    assert _faked(accept.stdout) == [] and _faked(accept.stderr) == []
