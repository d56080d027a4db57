"""More real-installer situations: another Python version, uv symlink mode, orphans from uninstall."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

from driftscan import audit
from fixtures import venvs
from fixtures.harness import offline, run_cli


def kinds(report):
    return {(d.relpath, d.kind.value, d.distribution.name if d.distribution else None) for d in report.drifts}


def _other_python() -> tuple[str, str] | None:
    """Another CPython on this machine (pyenv's shims only work when activated: use the real binary)."""
    import glob
    import subprocess

    mine = f"{sys.version_info.major}.{sys.version_info.minor}"
    for version in ("3.12", "3.13", "3.10"):
        if version == mine:
            continue
        candidates = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}*/bin/python{version}")))
        candidates += [p for p in (shutil.which(f"python{version}"),) if p]
        for python in candidates:
            if subprocess.run([python, "-c", "pass"], capture_output=True).returncode == 0:
                return version, python
    return None


def test_venv_of_another_python_version_is_audited_without_running_it(tmp_path, wheelhouse, uv_cache):
    found = _other_python()
    if found is None:
        pytest.skip("no second CPython version on this machine")
    version, interpreter = found
    venv = tmp_path / "other"
    try:
        venvs.make_uv_venv(venv, uv_cache, python=interpreter)
    except venvs.InstallError as exc:
        pytest.skip(f"uv cannot make a {version} venv here: {exc}")
    venvs.uv_install(venv, uv_cache, *offline(wheelhouse), "six==1.17.0", "demo-pkg")
    # Break the foreign interpreter: the audit must not need it.
    python = venvs.python_of(venv)
    python.unlink()
    python.symlink_to("/nonexistent/python")
    site = venvs.site_packages_of(venv)
    assert f"python{version}" in str(site)
    # six.py is hard-linked from the shared test cache: replace it rather than edit it in place.
    (tmp_path / "six.py").write_text("patched\n")
    os.replace(tmp_path / "six.py", site / "six.py")
    report = audit(venv=str(venv))
    assert report.target.python_version == version
    assert kinds(report) == {("six.py", "modified", "six")}


def test_uv_symlink_mode_is_clean_until_the_cache_is_cleaned(tmp_path, wheelhouse):
    cache = tmp_path / "cache"
    venv = venvs.make_uv_venv(tmp_path / "v", cache)
    venvs.uv_install(venv, cache, *offline(wheelhouse), "--link-mode", "symlink", "six==1.17.0")
    site = venvs.site_packages_of(venv)
    assert (site / "six.py").is_symlink()
    # The links lead into uv's cache: followed only because driftscan is told where that cache is
    # (the tree cannot name places for driftscan to read).
    assert audit(venv=str(venv), uv_cache=str(cache)).drifts == []
    venvs.run([venvs.uv_bin(), "cache", "clean", "six"], env=venvs.uv_env(cache))
    report = audit(venv=str(venv), uv_cache=str(cache))
    missing = {d.relpath for d in report.drifts if d.kind.value == "missing"}
    # Every cache-linked file dangles now, METADATA included; uv's own files (RECORD, INSTALLER) remain.
    assert {"six.py", "six-1.17.0.dist-info/METADATA"} <= missing
    assert {d.kind.value for d in report.drifts} == {"missing"}
    assert next(d for d in report.drifts if d.relpath == "six.py").actual["dangling"] is True


def test_pip_uninstall_leaves_an_orphaned_dist_info(tmp_path, wheelhouse):
    venv = venvs.make_pip_venv(tmp_path / "v")
    venvs.pip_install(venv, *offline(wheelhouse), "six==1.17.0")
    site = venvs.site_packages_of(venv)
    dist_info = next(site.glob("six-*.dist-info"))
    (dist_info / "extra.txt").write_text("a user's note\n")
    venvs.run([str(venvs.python_of(venv)), "-m", "pip", "uninstall", "-y", "six"])
    assert dist_info.is_dir() and not (dist_info / "RECORD").exists()
    report = audit(venv=str(venv))
    assert kinds(report) == {(dist_info.name, "orphaned-metadata", None)}
    drift = report.drifts[0]
    assert drift.actual["files"] == ["extra.txt"] and drift.remedy.startswith("rm -r ")


def test_default_target_is_the_running_environment():
    proc = run_cli("audit", "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr  # whatever the runner's state, the audit completes
    data = json.loads(proc.stdout)
    if os.path.exists(os.path.join(sys.prefix, "pyvenv.cfg")):
        assert data["target"]["venv"] == os.path.abspath(sys.prefix)
    else:
        assert data["target"]["venv"] is None and data["target"]["site_packages"]
    assert data["summary"]["distributions"] > 0
