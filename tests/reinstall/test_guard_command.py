"""reinstall.guard.command: what an install command's argv reinstalls, and from where, read from
its words and the requirements files it names; the command is never run."""

from __future__ import annotations

import os
import subprocess

import pytest

from driftscan.reinstall.guard.command import Change, Requested, Tool, normalize, recognise, wheel_name


@pytest.fixture
def venv(tmp_path):
    """A venv-shaped directory whose pip and python would leave a marker if anything ran them."""
    root = tmp_path / "venv"
    (root / "bin").mkdir(parents=True)
    (root / "pyvenv.cfg").write_text("home = /usr/bin\n")
    for name in ("pip", "pip3", "python"):
        script = root / "bin" / name
        script.write_text(f"#!/bin/sh\ntouch {tmp_path}/RAN\n")
        script.chmod(0o755)
    return root


@pytest.fixture(autouse=True)
def nothing_runs(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"recognise ran something: {args}")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(os, "execv", refuse)
    monkeypatch.setattr(os, "execve", refuse)
    monkeypatch.setattr(os, "system", refuse)


def _env(venv) -> dict[str, str]:
    return {"PATH": str(venv / "bin")}


def test_pip_force_reinstall_of_pinned_names(venv, tmp_path):
    r = recognise(["pip", "install", "--force-reinstall", "--no-deps", "Torch_Utils==2.1.0", "vllm"],
                  env=_env(venv), cwd=str(tmp_path))
    assert r.tool is Tool.PIP and r.recognised
    assert r.requested == (Requested("torch-utils", "2.1.0"), Requested("vllm"))
    assert r.forced and r.no_deps and not r.upgrade
    assert r.environment == str(venv), "pip on PATH belongs to this venv"
    assert r.source == "index"
    assert r.change("vllm", "0.6") is Change.REINSTALL
    assert r.change("numpy", "1.0") is Change.NONE, "not named: left as it is"
    assert not (tmp_path / "RAN").exists()


def test_pip_without_force_only_reinstalls_another_version(venv, tmp_path):
    r = recognise([str(venv / "bin" / "python"), "-m", "pip", "install", "demo==2.0", "other==1.0", "plain"],
                  cwd=str(tmp_path))
    assert r.tool is Tool.PIP and r.environment == str(venv)
    assert not r.forced
    assert r.change("demo", "1.0") is Change.REINSTALL
    assert r.change("other", "1.0") is Change.NONE, "already satisfied"
    assert r.change("plain", "3.0") is Change.NONE


def test_upgrade_is_maybe(venv, tmp_path):
    r = recognise(["pip", "install", "-Uq", "demo"], env=_env(venv), cwd=str(tmp_path))
    assert r.upgrade, "bundled short flags are read one by one"
    assert r.change("demo", "1.0") is Change.MAYBE


def test_a_wheel_file_is_the_source(venv, tmp_path):
    wheel = tmp_path / "dist" / "demo_pkg-1.0-py3-none-any.whl"
    r = recognise(["pip", "install", "dist/demo_pkg-1.0-py3-none-any.whl"], env=_env(venv), cwd=str(tmp_path))
    assert r.requested == (Requested("demo-pkg", "1.0", str(wheel)),)
    assert r.source == str(wheel) and r.source_why == "the command installs this wheel file"
    assert r.wheel_dirs == (str(tmp_path / "dist"),)
    assert r.change("demo-pkg", "1.0") is Change.MAYBE, "the same version from a file"
    assert r.change("demo-pkg", "0.9") is Change.REINSTALL


def test_find_links_with_no_index(venv, tmp_path):
    (tmp_path / "house").mkdir()
    r = recognise(["pip", "install", "--no-index", "--find-links", "house", "demo"], env=_env(venv),
                  cwd=str(tmp_path))
    assert r.source == str(tmp_path / "house") and r.source_why == "--find-links with --no-index"
    r = recognise(["pip", "install", "-fhouse", "demo"], env=_env(venv), cwd=str(tmp_path))
    assert r.source == str(tmp_path / "house") and any("the index" in n for n in r.notes)
    r = recognise(["pip", "install", "--no-index", "demo"], env=_env(venv), cwd=str(tmp_path))
    assert r.source is None


def test_requirements_file_names_and_options(venv, tmp_path):
    (tmp_path / "house").mkdir()
    (tmp_path / "base.txt").write_text("numpy==1.26.4\n")
    (tmp_path / "reqs.txt").write_text("# pinned\n-r base.txt\n--find-links house\n--no-index\n"
                                       "demo == 2.0 ; python_version > '3'\nextra[gpu]>=1 \\\n  # cont\n"
                                       "./local/project\n-e ./editable\nfoo @ https://x/foo-1.0-py3-none-any.whl\n")
    r = recognise(["pip", "install", "-r", "reqs.txt"], env=_env(venv), cwd=str(tmp_path))
    assert {q.name: q.version for q in r.requested} == {"numpy": "1.26.4", "demo": "2.0", "extra": None, "foo": "1.0"}
    assert "./local/project" in r.unnamed and "-e ./editable" in r.unnamed
    assert r.source == str(tmp_path / "house")


def test_requirements_file_outside_its_directory_is_not_read(venv, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("should-not-be-read\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "reqs.txt").write_text("-r ../secret.txt\ndemo\n")
    r = recognise(["pip", "install", "-r", "project/reqs.txt"], env=_env(venv), cwd=str(tmp_path))
    assert [q.name for q in r.requested] == ["demo"]
    assert str(secret) in r.unnamed and any("outside its directory" in n for n in r.notes)


def test_unreadable_requirements_are_a_note(venv, tmp_path):
    os.mkfifo(tmp_path / "fifo.txt")
    r = recognise(["pip", "install", "-r", "fifo.txt", "-r", "https://example.invalid/r.txt"], env=_env(venv),
                  cwd=str(tmp_path))
    assert r.requested == ()
    assert any("cannot read the requirements file" in n for n in r.notes)
    assert any("at a URL is not read" in n for n in r.notes)


def test_uv_pip_install_command(venv, tmp_path):
    r = recognise(["uv", "pip", "install", "--python", str(venv / "bin" / "python"), "--reinstall-package", "Demo",
                   "-P", "other", "--no-cache", "x==1"], env={}, cwd=str(tmp_path))
    assert r.tool is Tool.UV_PIP and r.environment == str(venv) and r.no_cache
    assert r.names() == {"demo", "other", "x"}
    assert r.change("demo", "1.0") is Change.REINSTALL
    assert r.change("other", "1.0") is Change.MAYBE
    r = recognise(["uv", "pip", "install", "--reinstall", "demo"], env={"VIRTUAL_ENV": str(venv)}, cwd=str(tmp_path))
    assert r.forced and r.environment == str(venv) and r.environment_why == "uv uses VIRTUAL_ENV"


def test_uv_finds_the_dot_venv_upward(tmp_path):
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("")
    sub = tmp_path / "src"
    sub.mkdir()
    r = recognise(["uv", "pip", "install", "demo"], env={}, cwd=str(sub))
    assert r.environment == str(tmp_path / ".venv")


def test_uv_sync_reinstall_all(tmp_path):
    r = recognise(["uv", "sync", "--reinstall"], env={}, cwd=str(tmp_path))
    assert r.tool is Tool.UV_SYNC and r.reinstall_all
    assert r.change("anything", "1") is Change.REINSTALL
    assert r.environment == str(tmp_path / ".venv")
    plain = recognise(["uv", "sync"], env={"UV_PROJECT_ENVIRONMENT": "/envs/p"}, cwd=str(tmp_path))
    assert plain.environment == "/envs/p" and not plain.reinstall_all
    assert plain.change("anything", "1") is Change.NONE


def test_conda_and_pixi(tmp_path):
    r = recognise(["mamba", "install", "-p", "/opt/env", "--force-reinstall", "conda-forge::numpy=1.26.4=py312h_0",
                   "scipy"], cwd=str(tmp_path))
    assert r.tool is Tool.CONDA and r.environment == "/opt/env" and r.forced
    assert r.requested == (Requested("numpy", "1.26.4"), Requested("scipy"))
    assert recognise(["conda", "update", "numpy"], cwd=str(tmp_path)).upgrade
    assert recognise(["conda", "list"], cwd=str(tmp_path)).tool is Tool.OTHER
    all_ = recognise(["pixi", "reinstall"], cwd=str(tmp_path))
    assert all_.tool is Tool.PIXI and all_.reinstall_all
    some = recognise(["pixi", "reinstall", "numpy"], cwd=str(tmp_path))
    assert some.change("numpy", "1") is Change.REINSTALL and some.change("scipy", "1") is Change.NONE


@pytest.mark.parametrize("argv,note", [
    ([], "no command"),
    (["FOO=1", "pip", "install", "x"], "without a shell"),
    (["make", "install"], "not an installer"),
    (["pip", "uninstall", "x"], "not an install"),
    (["uv", "tool", "install", "x"], "not an install"),
])
def test_anything_else_is_other(argv, note, tmp_path):
    r = recognise(argv, env={}, cwd=str(tmp_path))
    assert r.tool is Tool.OTHER and not r.recognised
    assert any(note in n for n in r.notes)
    assert r.change("x", "1") is Change.NONE


def test_wheel_name_and_normalize():
    assert wheel_name("/w/Foo_Bar-1.0.post1-py3-none-any.whl") == ("foo-bar", "1.0.post1")
    assert wheel_name("foo-1.0-1-cp312-cp312-linux_x86_64.whl") == ("foo", "1.0")
    assert wheel_name("foo-1.0.tar.gz") is None and wheel_name("notawheel.whl") is None
    assert normalize("A.b__C") == "a-b-c"
