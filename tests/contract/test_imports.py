"""Start-up stays cheap: importing the CLI and the API pulls in neither the rule engine (libcst),
nor model-directory or snapshot code, nor gitpython (api.py imports them where used)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from driftscan.environment.managers.registry import MANAGERS

HEAVY = ["libcst", "git", "pydantic", "cyclonedx", "packageurl", "driftscan.report.accept", "driftscan.modeldir", "driftscan.snapshot.run", "driftscan.modeldir.hfcache",
         "driftscan.lint.engine", "driftscan.pristine", "driftscan.pipeline.changes", "driftscan.formats.patch",
         "driftscan.environment.verify", "driftscan.environment.records", "driftscan.environment.unowned"]


def test_importing_the_cli_and_the_api_stays_light():
    code = ("import json, sys; import driftscan.cli, driftscan.api; "
            f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    proc = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def test_the_renderer_registry_imports_no_renderer_and_no_model():
    """The command line reads its --format choices from render/registry.py at start-up: looking a
    renderer up imports it, naming the formats imports none (nor pydantic)."""
    code = ("import json, sys; import driftscan.render, driftscan.render.registry; "
            "print(json.dumps(sorted(m for m in sys.modules if m == 'pydantic' or m.startswith('driftscan.render.')"
            " and m not in ('driftscan.render.registry', 'driftscan.render.formats'))))")
    proc = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


# Every registered package manager's module, imported only where its records may be. A clean venv's
# audit has no drift: no original is looked for, so neither is the pristine package imported.
SYSTEM_READERS = [f"driftscan.environment.managers.{r.module}" for r in MANAGERS] + [
    "driftscan.environment.managers.placeholders", "driftscan.pristine", "driftscan.pipeline.changes"]


def test_auditing_a_venv_leaves_the_package_manager_readers_unimported(pristine_pip_venv):
    """conda's and dpkg's readers cost a warm audit of a venv 10% when imported at start-up."""
    code = ("import json, sys; import driftscan.api as api; "
            f"api.audit(venv={str(pristine_pip_venv)!r}); api.audit(venv={str(pristine_pip_venv)!r}); "
            f"print(json.dumps([m for m in {SYSTEM_READERS!r} if m in sys.modules]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def test_a_warm_audit_settled_by_the_clean_index_does_not_import_the_pipeline(pristine_pip_venv, tmp_path):
    """The clean index answers a warm audit of an unchanged clean venv: RECORD verification's
    modules (half of an audit's imports) are not loaded for it."""
    env = {**os.environ, "DRIFTSCAN_CACHE_DIR": str(tmp_path / "cache")}
    first = subprocess.run([sys.executable, "-m", "driftscan", "audit", "--venv", str(pristine_pip_venv)],
                           capture_output=True, text=True, cwd="/", env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    time.sleep(2.1)  # the index trusts nothing younger than the racy window
    subprocess.run([sys.executable, "-m", "driftscan", "audit", "--venv", str(pristine_pip_venv)],
                   capture_output=True, text=True, cwd="/", env=env, check=True)
    code = ("import json, sys; import driftscan.api as api; "
            f"report = api.audit(venv={str(pristine_pip_venv)!r}); "
            "print(json.dumps([report.summary.drifts, 'driftscan.environment.verify' in sys.modules]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/", env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [0, False]
