"""Which environment a command means when none is named, and what a model directory named on the
command line does to it: it adds to that environment (as in the configuration file), and the
first line says what is covered. A real uv project: a pyproject.toml, a .venv made by real uv with
a wheel built here installed by real uv, one package file edited."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from driftscan.environment.default import default_environment
from fixtures import venvs
from fixtures.harness import run_cli
from fixtures.modeldirs import build_local_dir, seed_files, sm120_edit
from fixtures.wheels import build_wheel

CORE = "def load(path):\n    return open(path).read()\n"
PYPROJECT = '[project]\nname = "proj"\nversion = "0.1"\ndependencies = ["tgtpkg"]\n'


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """(project root, its .venv): tgtpkg installed by uv into the project's .venv, core.py edited."""
    root = tmp_path_factory.mktemp("targets")
    house = root / "wheels"
    build_wheel(house, "tgtpkg", "1.0", {"tgtpkg/__init__.py": "", "tgtpkg/core.py": CORE})
    proj = root / "home" / "me" / "proj"
    (proj / "src" / "deep").mkdir(parents=True)
    (proj / "pyproject.toml").write_text(PYPROJECT)
    (proj / "uv.lock").write_text("version = 1\n")  # only its presence counts: never read
    cache = root / "uv-cache"
    venv = venvs.make_uv_venv(proj / ".venv", cache)
    venvs.uv_install(venv, cache, "--no-index", "--find-links", str(house), "tgtpkg")
    core = venvs.site_packages_of(venv) / "tgtpkg" / "core.py"
    core.unlink()  # never write through uv's hard link into its cache
    core.write_text(CORE + "DEBUG = True\n")
    return proj, venv


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """No activated environment, no venv python3 on PATH, checkpoints in tmp_path."""
    return {"VIRTUAL_ENV": "", "CONDA_PREFIX": "", "UV_PROJECT_ENVIRONMENT": "", "PATH": "/nonexistent",
            "DRIFTSCAN_CHECKPOINT_DIR": str(tmp_path / "cps"), **extra}


@pytest.fixture
def model(tmp_path):
    m = build_local_dir(tmp_path / "model", seed_files())
    sm120_edit(m)
    return m


def test_model_dir_adds_to_the_activated_venv(project, model, tmp_path):
    _, venv = project
    env = clean_env(tmp_path, VIRTUAL_ENV=str(venv))
    cp = tmp_path / "cp"
    proc = run_cli("checkpoint", "--model-dir", str(model), "-o", str(cp), "--allow-partial", env=env,
                   cwd=str(tmp_path))
    assert proc.returncode in (0, 2), proc.stderr
    assert proc.stderr.splitlines()[0] == (f"driftscan checkpoint: target {venv} (VIRTUAL_ENV is set) + "
                                           f"model directory {model}"), proc.stderr
    index = json.loads((cp / "checkpoint.json").read_text())
    assert index["venv"] == str(venv) and index["model_dirs"] == [str(model)]
    saved = {(f["area"], f["relpath"].rsplit("site-packages/", 1)[-1]) for f in index["files"]}
    assert ("env", "tgtpkg/core.py") in saved and ("model-0", "config.json") in saved
    report = json.loads(run_cli("audit", "--model-dir", str(model), "--no-pristine", "--format", "json",
                                env=env, cwd=str(tmp_path)).stdout)
    assert report["target"]["venv"] == str(venv) and report["target"]["model_dirs"] == [str(model)]
    assert report["target"]["chosen_because"] == "VIRTUAL_ENV is set"
    text = run_cli("audit", "--model-dir", str(model), "--no-pristine", env=env, cwd=str(tmp_path)).stdout
    first = text.splitlines()[0]
    assert f"venv {venv}" in first and f"model directory {model}" in first and "VIRTUAL_ENV is set" in first
    proc = run_cli("plan", "--reinstall", "tgtpkg", "--model-dir", str(model), "--format", "json", env=env,
                   cwd=str(tmp_path))
    assert proc.stderr.splitlines()[0].endswith(f"(VIRTUAL_ENV is set) + model directory {model}"), proc.stderr
    assert json.loads(proc.stdout)["audit"]["target"]["model_dirs"] == [str(model)]
    snap = tmp_path / "snap.json"
    proc = run_cli("snapshot", "--model-dir", str(model), "-o", str(snap), env=env, cwd=str(tmp_path))
    assert proc.returncode == 0 and f"target {venv} (VIRTUAL_ENV is set) + model directory" in proc.stderr


def test_model_dir_alone_when_only_driftscans_own_environment_is_found(model, tmp_path):
    env = clean_env(tmp_path)
    cp = tmp_path / "cp"
    proc = run_cli("checkpoint", "--model-dir", str(model), "-o", str(cp), env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first.startswith(f"driftscan checkpoint: target model directory {model} (the model directories alone: "
                            "no environment of yours found"), first
    index = json.loads((cp / "checkpoint.json").read_text())
    assert index["venv"] is None and not index["site_packages"] and index["model_dirs"] == [str(model)]


def test_uv_project_environment_is_the_default(project, tmp_path):
    proj, venv = project
    env = clean_env(tmp_path)
    proc = run_cli("audit", "--no-pristine", "--format", "json", env=env, cwd=str(proj / "src" / "deep"))
    report = json.loads(proc.stdout)
    assert report["target"]["venv"] == str(venv), proc.stderr
    assert report["target"]["chosen_because"] == (f"the environment (.venv) of the uv project at {proj}, the "
                                                  "working directory's")
    assert any(d["relpath"].endswith("tgtpkg/core.py") for d in report["drifts"])
    cp = tmp_path / "cp"
    proc = run_cli("checkpoint", "-o", str(cp), "--allow-partial", env=env, cwd=str(proj))
    assert proc.stderr.splitlines()[0].startswith(f"driftscan checkpoint: target {venv} (the environment (.venv) "
                                                  "of the uv project"), proc.stderr
    assert json.loads((cp / "checkpoint.json").read_text())["venv"] == str(venv)


def test_uv_project_environment_rules(project, tmp_path):
    proj, venv = project
    own = sys.prefix
    base = {"PATH": "/nonexistent"}
    assert default_environment(base, own, str(proj / "src"))[0] == str(venv)
    # UV_PROJECT_ENVIRONMENT, relative to the project root (not to the working directory).
    other = tmp_path / "proj2"
    (other / "sub").mkdir(parents=True)
    (other / "pyproject.toml").write_text(PYPROJECT)
    env_dir = other / "envs" / "py"
    env_dir.mkdir(parents=True)
    (env_dir / "pyvenv.cfg").write_text("home = /usr/bin\n")
    found, why = default_environment({**base, "UV_PROJECT_ENVIRONMENT": "envs/py"}, own, str(other / "sub"))
    assert found == str(env_dir) and "UV_PROJECT_ENVIRONMENT" in why
    # A pyproject.toml with neither uv.lock nor .venv is not a uv project: nothing found there.
    assert default_environment(base, own, str(other / "sub"))[0] is None
    # VIRTUAL_ENV and CONDA_PREFIX still come first.
    assert default_environment({**base, "VIRTUAL_ENV": str(env_dir)}, own, str(proj))[1] == "VIRTUAL_ENV is set"
    # The project's .venv being driftscan's own counts as driftscan's own.
    assert default_environment(base, str(venv), str(proj))[0] is None
    # A .venv that is not a venv (no pyvenv.cfg) is not taken.
    fake = tmp_path / "proj3"
    (fake / ".venv").mkdir(parents=True)
    (fake / "pyproject.toml").write_text(PYPROJECT)
    assert default_environment(base, own, str(fake))[0] is None
    assert os.path.isfile(venv / "pyvenv.cfg")


def test_default_checkpoint_names_tell_projects_apart(project, tmp_path, monkeypatch):
    from driftscan.reinstall.checkpoint import NAME_MAX, checkpoint_name, default_checkpoint_path
    from driftscan.core.values import Target, TargetKind

    proj, venv = project
    monkeypatch.setenv("DRIFTSCAN_CHECKPOINT_DIR", str(tmp_path / "cps"))
    a = os.path.basename(default_checkpoint_path(Target(TargetKind.VENV, "/home/me/proj/.venv", ())))
    b = os.path.basename(default_checkpoint_path(Target(TargetKind.VENV, "/home/me/other/.venv", ())))
    assert a.startswith("home-me-proj-.venv-") and b.startswith("home-me-other-.venv-")
    assert not a.startswith(".") and a[:-30] != b[:-30]
    odd = checkpoint_name("/srv/a b/$(rm -rf)/ünï/my_env/.venv")
    assert odd == "srv-a-b-rm-rf-n-my_env-.venv" and all(c.isalnum() or c in "_.+-" for c in odd)
    long_a, long_b = checkpoint_name("/x" + "/d" * 200 + "/a/.venv"), checkpoint_name("/y" + "/d" * 200 + "/a/.venv")
    assert len(long_a) <= NAME_MAX and long_a.endswith("-a-.venv") and long_a != long_b
    # The checkpoint step plan suggests for the uv project names it the same way.
    proc = run_cli("plan", "--reinstall", "tgtpkg", "--format", "json", env=clean_env(tmp_path), cwd=str(proj))
    steps = [s["command"] for s in json.loads(proc.stdout)["steps"] if s.get("command", "").startswith(
        "driftscan checkpoint")]
    slug = str(venv).strip("/").replace("/", "-")
    assert steps and f"/{slug}-" in steps[0], steps


def test_model_dir_alone_when_the_activated_venv_is_driftscans_own(model, tmp_path):
    env = clean_env(tmp_path, VIRTUAL_ENV=sys.prefix)
    proc = run_cli("audit", "--model-dir", str(model), "--format", "json", env=env, cwd=str(tmp_path))
    report = json.loads(proc.stdout)
    assert report["target"]["venv"] is None and not report["target"]["site_packages"], proc.stderr
    assert report["target"]["chosen_because"].startswith("the model directories alone: the environment found "
                                                         "(VIRTUAL_ENV is set) is driftscan's own")
