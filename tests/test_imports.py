"""Start-up stays cheap: importing the CLI and the API pulls in neither the rule engine (libcst),
nor model-directory or snapshot code, nor gitpython (api.py imports them where used)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ["libcst", "git", "driftscan.verify.tree", "driftscan.verify.snapshot", "driftscan.discover.hfcache",
         "driftscan.inspect.engine", "driftscan.pristine", "driftscan.changes", "driftscan.patching"]


def test_importing_the_cli_and_the_api_stays_light():
    code = ("import json, sys; import driftscan.cli, driftscan.api; "
            f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    proc = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


# A clean venv's audit has no drift: no original is looked for, so neither is the pristine package imported.
SYSTEM_READERS = ["driftscan.discover.conda", "driftscan.discover.dpkg", "driftscan.verify.env.placeholders",
                  "driftscan.pristine", "driftscan.changes"]


def test_auditing_a_venv_leaves_the_package_manager_readers_unimported(pristine_pip_venv):
    """conda's and dpkg's readers cost a warm audit of a venv 10% when imported at start-up."""
    code = ("import json, sys; import driftscan.api as api; "
            f"api.audit(venv={str(pristine_pip_venv)!r}); api.audit(venv={str(pristine_pip_venv)!r}); "
            f"print(json.dumps([m for m in {SYSTEM_READERS!r} if m in sys.modules]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []
