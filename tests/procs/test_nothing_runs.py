"""driftscan procs reads /proc and never runs anything of the target: under strace, the only
programs started are driftscan's own interpreter (and git, which driftscan may run itself)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fixtures.processes import importer, python
from fixtures.venvs import site_packages_of

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")]

EXECVE = re.compile(r'execve\("([^"]*)"')


def test_procs_on_a_stale_server_execs_nothing_of_the_target(venv, spawn, tmp_path):
    server = spawn(importer(venv))
    time.sleep(0.05)  # past the scan's margin of two clock ticks after the start
    mod = site_packages_of(venv) / "pkgx" / "mod.py"
    with open(mod, "a") as f:
        f.write("VALUE = 2\n")
    trace = tmp_path / "trace"
    proc = subprocess.run(["strace", "-f", "-qq", "-e", "trace=execve", "-o", str(trace),
                           sys.executable, "-m", "driftscan", "procs", "--venv", str(venv)],
                          capture_output=True, text=True, timeout=120)
    if "ptrace" in proc.stderr.lower() and proc.returncode != 1:
        pytest.skip(f"strace cannot trace here: {proc.stderr.strip()[:200]}")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the stale server found
    assert f"PID {server.pid}" in proc.stdout, proc.stdout
    started = {m.group(1) for m in EXECVE.finditer(trace.read_text())}
    ours = {sys.executable, os.path.realpath(sys.executable)}
    allowed = ours | {p for p in started if os.path.basename(p) == "git"}
    assert started and started <= allowed, sorted(started - allowed)
    assert not any(p.startswith(str(venv)) for p in started)  # not the venv's python, not its scripts
    assert python(venv) not in started
