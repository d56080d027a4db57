"""reinstall.guard.uvlock: what uv sync installs, read from the project's uv.lock as data."""

from __future__ import annotations

import pytest

from driftscan.reinstall.guard import uvlock
from driftscan.reinstall.guard.command import Change, Tool, recognise
from driftscan.reinstall.guard.outcome import reinstalled

LOCK = '''version = 1
requires-python = ">=3.8"

[[package]]
name = "Attrs"
version = "24.2.0"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "proj"
version = "0.1"
source = { editable = "." }

[[package]]
name = "six"
version = "1.16.0"
source = { registry = "https://pypi.org/simple" }
'''


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "proj"\nversion = "0.1"\n')
    (tmp_path / "uv.lock").write_text(LOCK)
    (tmp_path / "sub").mkdir()
    return tmp_path


def test_the_lock_pins_each_distribution(project):
    read = uvlock.read_lock(str(project))
    assert read.path == str(project / "uv.lock")
    assert [(p.name, p.version) for p in read.packages] == [("attrs", "24.2.0"), ("proj", None), ("six", "1.16.0")]


def test_sync_reinstalls_what_the_lock_changed_and_removes_what_it_does_not_list(project):
    command = recognise(["uv", "sync"], env={}, cwd=str(project / "sub"))  # uv finds the project upwards
    assert command.tool is Tool.UV_SYNC and command.exact
    installed = {"attrs": "23.2.0", "six": "1.16.0", "proj": "0.1", "leftover": "1.0"}
    assert command.change("attrs", "23.2.0") is Change.REINSTALL
    assert command.change("six", "1.16.0") is Change.NONE and command.change("proj", "0.1") is Change.NONE
    assert reinstalled(command, installed) == (["attrs", "leftover"], [])


@pytest.mark.parametrize("content", [b"not = [toml", b"\xff\xfe", b"package = 3\n",
                                     b"package = " + b"[" * 100_000 + b"]" * 100_000 + b"\n"])
def test_a_bad_lock_is_said_and_nothing_is_assumed(project, content):
    (project / "uv.lock").write_bytes(content)
    read = uvlock.read_lock(str(project))
    assert read.path is None and read.packages == () and "not known" in read.note
    command = recognise(["uv", "sync"], env={}, cwd=str(project))
    assert not command.exact and command.requested == () and "not known" in command.notes[0]


def test_an_oversized_lock_is_not_read(project, monkeypatch):
    monkeypatch.setattr(uvlock, "LOCK_MAX", 10)
    read = uvlock.read_lock(str(project))
    assert read.path is None and "cannot read the lock file" in read.note


def test_upgrade_options_leave_the_lock_unknown(project):
    for extra in (["-U"], ["--upgrade-package", "six"]):
        command = recognise(["uv", "sync", *extra], env={}, cwd=str(project))
        assert not command.exact and command.requested == ()


def test_offline_is_read_from_the_flag_and_the_environment(project):
    assert recognise(["uv", "sync", "--offline"], env={}, cwd=str(project)).offline
    assert recognise(["uv", "sync"], env={"UV_OFFLINE": "1"}, cwd=str(project)).offline
    assert not recognise(["uv", "sync"], env={}, cwd=str(project)).offline


def test_uv_configuration_that_is_not_what_uv_reads_is_said_not_a_traceback(tmp_path):
    """A pyproject whose ``tool`` is not a table, and a uv.toml nested past the parser's depth: guard
    reads neither as settings and goes on."""
    (tmp_path / "pyproject.toml").write_text("tool = 1\n")
    command = recognise(["uv", "pip", "install", "six"], env={}, cwd=str(tmp_path))
    assert command.tool is Tool.UV_PIP and not command.forced
    (tmp_path / "uv.toml").write_bytes(b"reinstall = " + b"[" * 100_000 + b"]" * 100_000 + b"\n")
    command = recognise(["uv", "pip", "install", "six"], env={}, cwd=str(tmp_path))
    assert command.forced and any("nested too deeply" in n for n in command.notes), command.notes
