"""Real pip and uv venvs: pristine ones audit clean; every planted drift is found, nothing else."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

from driftscan import audit
from fixtures import venvs

from fixtures.harness import DEMO_REQS, offline, replace_by_rename, run_cli


def drift_set(report) -> set[tuple[str, str, str | None]]:
    return {(d.relpath, d.kind.value, d.distribution.name if d.distribution else None) for d in report.drifts}


@pytest.mark.parametrize("venv_fixture", ["pristine_pip_venv", "pristine_uv_venv"])
def test_pristine_venv_is_clean(request, venv_fixture):
    venv = request.getfixturevalue(venv_fixture)
    report = audit(venv=str(venv))
    assert report.drifts == [], [d.relpath for d in report.drifts]
    assert report.errors == [] and report.unverifiable == []
    assert report.summary.distributions >= len(DEMO_REQS)
    assert report.summary.files_checked > 100
    assert report.target.venv == str(venv)


def test_pristine_after_imports_is_still_clean(tmp_path, wheelhouse, uv_cache):
    """Import-made bytecode in a uv venv (uv compiles nothing) is derived, not added."""
    venv = venvs.make_uv_venv(tmp_path / "v", uv_cache)
    venvs.uv_install(venv, uv_cache, *offline(wheelhouse), *DEMO_REQS)
    venvs.run([str(venvs.python_of(venv)), "-c", "import six, requests, click, demo_pkg, nsp.a, nsp.b"])
    site = venvs.site_packages_of(venv)
    assert list(site.glob("requests/__pycache__/*.pyc")), "the import should have written bytecode"
    report = audit(venv=str(venv))
    assert report.drifts == []


def test_pristine_cli_json_and_exit_zero(pristine_pip_venv, tmp_path):
    out = tmp_path / "report.json"
    proc = run_cli("audit", "--venv", str(pristine_pip_venv), "--format", "json", "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    data = json.loads(out.read_text())
    assert data["schema_version"] == "1"
    assert data["tool"]["name"] == "driftscan"
    assert data["target"]["venv"] == str(pristine_pip_venv)
    assert data["target"]["model_dirs"] == []
    assert set(data["summary"]) >= {"distributions", "files_checked", "drifts", "unverifiable", "errors"}
    assert data["drifts"] == [] and data["summary"]["drifts"] == 0


def test_modern_pip_writes_no_false_positive(tmp_path, wheelhouse):
    """The test runner's pip (a recent release) installing into a venv via --python."""
    venv = tmp_path / "v26"
    venvs.run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    venvs.modern_pip_install(venv, *offline(wheelhouse), *DEMO_REQS)
    report = audit(venv=str(venv))
    assert report.drifts == [] and report.errors == []


def test_every_planted_drift_is_found_and_nothing_else(planted):
    venv, expected = planted
    report = audit(venv=str(venv))
    assert drift_set(report) == expected
    assert report.errors == []


def test_planted_drift_details(planted):
    venv, _ = planted
    report = audit(venv=str(venv))
    by_path = {d.relpath: d for d in report.drifts}
    core = by_path["demo_pkg/core.py"]
    assert core.scope.value == "package" and core.survives_reinstall is False
    assert core.expected["size"] == 43 and core.actual["size"] == 43 + len("_debug_counter = 0\n")
    assert core.path == str(venvs.site_packages_of(venv) / "demo_pkg/core.py")
    assert "--force-reinstall" in core.remedy and "demo-pkg==1.0" in core.remedy
    assert core.distribution.installer == "pip"
    added = by_path["six_extra.py"]
    assert added.scope.value == "environment" and added.survives_reinstall is True
    # The link leaves the venv (the planted root holds the venv and the target side by side):
    # reported with its target, never followed for content.
    assert by_path["click/termui.py"].actual == {"type": "symlink",
                                                  "target": str(venv.parent / "elsewhere_termui.py")}
    clobbered = by_path["sharedmod/common.py"]
    winner = ({"pkga", "pkgb"} - {clobbered.distribution.name}).pop()
    assert winner in clobbered.evidence


def test_planted_cli_text_and_exit_bit(planted):
    venv, expected = planted
    proc = run_cli("audit", "--venv", str(venv))
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{len(expected)} drifts" in proc.stdout.splitlines()[-1]
    assert "demo-pkg 1.0 (pip)" in proc.stdout
    assert "not owned by any distribution" in proc.stdout


def test_uv_in_place_edit_and_rename_edit(tmp_path, wheelhouse, uv_cache):
    venv = venvs.make_uv_venv(tmp_path / "v", uv_cache)
    venvs.uv_install(venv, uv_cache, *offline(wheelhouse), "six==1.17.0", "click==8.1.8")
    site = venvs.site_packages_of(venv)
    six_py = site / "six.py"
    # Work on a private copy first: an in-place edit of a hard-linked file would poison the shared cache.
    os.replace(shutil.copy(six_py, tmp_path / "six_copy.py"), six_py)
    with open(six_py, "a") as f:
        f.write("# edited in place\n")
    replace_by_rename(site / "click/core.py", (site / "click/core.py").read_text() + "# renamed over\n")
    report = audit(venv=str(venv))
    assert drift_set(report) == {("six.py", "modified", "six"), ("click/core.py", "modified", "click")}
    assert all(d.distribution.installer == "uv" and d.remedy.startswith("uv pip install") for d in report.drifts)
