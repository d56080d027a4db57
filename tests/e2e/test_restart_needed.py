"""The processes a command leaves running old code, on real processes started from a real pip venv:
``restore --yes`` and ``guard -- pip install --force-reinstall`` end with the process that imported
the file they changed and what to restart; ``audit --processes`` lists it; ``plan`` lists every
process that runs the environment. Every process a test starts is killed when it ends."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from fixtures import venvs
from fixtures.processes import python, spawned
from fixtures.upgrades import cli, install, own_env, pip_venv
from fixtures.wheels import build_wheel

pytestmark = pytest.mark.slow

CORE = "def f():\n    return 1\n"
EDITED = "def f():\n    return 2  # the fix being tried\n"
WAIT = "import sys, toypkg.core\nprint('ready', flush=True)\nsys.stdin.read()"


@pytest.fixture
def spawn():
    yield from spawned()


@pytest.fixture(scope="module")
def house(tmp_path_factory) -> Path:
    house = tmp_path_factory.mktemp("restart-wheels")
    build_wheel(house, "toypkg", "1.0", {"toypkg/__init__.py": "", "toypkg/core.py": CORE})
    return house


@pytest.fixture
def edited(tmp_path_factory, house) -> tuple[Path, Path]:
    """A pip venv with toypkg installed from its wheel, toypkg/core.py edited in place."""
    venv = pip_venv(tmp_path_factory, "restart")
    install(venv, house, "toypkg")
    core = venvs.site_packages_of(venv) / "toypkg" / "core.py"
    core.write_text(EDITED)
    return venv, core


def started(spawn, venv: Path):
    """The venv's python importing the edited module, then waiting; past the scan's margin of two
    clock ticks, so that a file written next is later than its start."""
    proc = spawn([python(venv), "-c", WAIT])
    time.sleep(0.05)
    return proc


def test_restore_names_the_process_that_still_runs_the_edit(tmp_path, edited, house, spawn):
    venv, core = edited
    proc = started(spawn, venv)
    env = own_env(tmp_path)
    out = cli("restore", "--venv", str(venv), "--wheels", str(house), "--yes", env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert core.read_text() == CORE
    lines = out.stdout.splitlines()
    head = lines.index("1 process still runs the old code:")
    assert lines[head + 1].startswith(f"  restart PID {proc.pid} (")
    assert f"likely: 1 file changed after it started: {core}" in lines[head + 2]

    # the JSON result: the process, the restored file, the remedy
    core.write_text(EDITED)
    again = started(spawn, venv)
    out = cli("restore", "--venv", str(venv), "--wheels", str(house), "--yes", "--format", "json", env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    needed = {r["pid"]: r for r in json.loads(out.stdout)["restart_needed"]}
    assert {proc.pid, again.pid} <= set(needed)
    assert needed[again.pid]["files"] == [str(core)] and needed[again.pid]["stale"] is True
    assert needed[again.pid]["remedy"].startswith(f"restart PID {again.pid} (")


def test_a_dry_run_scans_nothing(tmp_path, edited, house, spawn):
    venv, core = edited
    started(spawn, venv)
    out = cli("restore", "--venv", str(venv), "--wheels", str(house), "--format", "json", env=own_env(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads(out.stdout)["restart_needed"] is None and core.read_text() == EDITED


def test_audit_processes_lists_the_stale_process_and_fails_on_it(tmp_path, edited, house, spawn):
    venv, core = edited
    old = started(spawn, venv)
    core.write_text(EDITED + "# edited again after it started\n")
    time.sleep(0.05)
    new = started(spawn, venv)
    env = own_env(tmp_path)
    out = cli("audit", "--venv", str(venv), "--wheels", str(house), "--processes", "--format", "json", env=env)
    report = json.loads(out.stdout)
    by_pid = {p["pid"]: p for p in report["processes"]["processes"]}
    assert by_pid[old.pid]["stale"] is True and by_pid[old.pid]["evidence"][0]["files"] == [str(core)]
    assert by_pid[new.pid]["stale"] is False
    assert out.returncode == 1  # the edit is drift (the default policy)

    text = cli("audit", "--venv", str(venv), "--wheels", str(house), "--processes", env=env).stdout
    assert f"  STALE  PID {old.pid}  " in text and f"      restart: restart PID {old.pid} (" in text
    assert "1 other process runs what is on disk" in text

    # stale-process alone: bit 1 for the process; without --processes no process is looked at
    stale = cli("audit", "--venv", str(venv), "--processes", "--fail-on", "stale-process", env=env)
    assert stale.returncode == 1, stale.stdout + stale.stderr
    old.kill()
    old.wait()
    assert cli("audit", "--venv", str(venv), "--processes", "--fail-on", "stale-process", env=env).returncode == 0
    plain = cli("audit", "--venv", str(venv), "--format", "json", env=env)
    assert json.loads(plain.stdout)["processes"] is None


def test_plan_lists_the_processes_to_restart(tmp_path, edited, house, spawn):
    venv, _ = edited
    proc = started(spawn, venv)
    out = cli("plan", "--venv", str(venv), "--wheels", str(house), "--reinstall", "toypkg", "--format", "json",
              env=own_env(tmp_path))
    assert out.returncode in (0, 1), out.stdout + out.stderr
    listed = {r["pid"]: r for r in json.loads(out.stdout)["restart_after_reinstall"]}
    assert listed[proc.pid]["stale"] is False and listed[proc.pid]["remedy"].startswith(f"restart PID {proc.pid} (")
    text = cli("plan", "--venv", str(venv), "--wheels", str(house), "--reinstall", "toypkg",
               env=own_env(tmp_path)).stdout
    assert "1 process to restart after the reinstall (it runs the environment):" in text
    assert f"  restart PID {proc.pid} (" in text


def test_guard_ends_with_the_process_the_reinstall_left_on_old_code(tmp_path, edited, house, spawn):
    venv, core = edited
    proc = started(spawn, venv)
    env = {**own_env(tmp_path), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    command = [str(venv / "bin/python"), "-m", "pip", "install", "--no-cache-dir", "--force-reinstall", "--no-deps",
               str(house / "toypkg-1.0-py3-none-any.whl")]
    out = cli("guard", "--venv", str(venv), "--format", "json", "--", *command, env=env)
    report = json.loads(out.stdout)
    assert report["ran"] is True and report["exit_code"] == 0, report
    assert core.read_text() == CORE
    needed = {r["pid"]: r for r in report["restart_needed"]}
    assert str(core) in needed[proc.pid]["files"] and needed[proc.pid]["remedy"].startswith(f"restart PID {proc.pid}")

    core.write_text(EDITED)
    again = started(spawn, venv)
    text = cli("guard", "--venv", str(venv), "--", *command, env=env).stdout
    tail = text[text.index("still run"):] if "still run" in text else ""
    assert f"  restart PID {again.pid} (" in tail


def test_reapply_names_the_process_started_on_the_restored_code(tmp_path, edited, house, spawn):
    venv, core = edited
    env = own_env(tmp_path)
    out = cli("restore", "--venv", str(venv), "--wheels", str(house), "--yes", "--format", "json", env=env)
    checkpoint = json.loads(out.stdout)["checkpoint"]
    assert core.read_text() == CORE and checkpoint, out.stdout + out.stderr
    proc = started(spawn, venv)  # imports the original
    out = cli("reapply", checkpoint, "--yes", "--format", "json", env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert core.read_text() == EDITED
    needed = {r["pid"]: r for r in json.loads(out.stdout)["restart_needed"]}
    assert needed[proc.pid]["files"] == [str(core)] and needed[proc.pid]["remedy"].startswith(f"restart PID {proc.pid}")
    text = cli("reapply", checkpoint, env=env).stdout  # a dry run: nothing written, no process listed
    assert "still run" not in text
