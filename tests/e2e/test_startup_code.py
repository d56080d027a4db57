"""Startup code in a real venv made by ``python -m venv`` and by uv: a .pth with an import line,
a .pth with only a path, setuptools' own distutils-precedence.pth, a sitecustomize.py; what the
real interpreter runs of them, and what every output says."""

from __future__ import annotations

import ensurepip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from driftscan import audit
from driftscan.core.values import DriftKind, Prediction, Scope
from driftscan.environment.startup import executable_lines
from fixtures import venvs
from fixtures.harness import run_cli

PTH_LINE = 'import os; os.environ.setdefault("NOMLA_DEBUG","1")'


@pytest.fixture
def venv(tmp_path, monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))
    return venvs.make_pip_venv(tmp_path / "v")


def _plant(venv):
    site = venvs.site_packages_of(venv)
    (site / "zz_nomla_debug.pth").write_text(PTH_LINE + "\n")
    (site / "extra_paths.pth").write_text("# only a path\n/opt/nomla/lib\n")
    (site / "sitecustomize.py").write_text("import os\nos.environ['NOMLA_SITE'] = '1'\n")
    return site


def test_startup_code_is_its_own_kind_and_a_path_file_stays_added(venv):
    site = _plant(venv)
    # The real interpreter runs both: what the audit says is what happens.
    out = venvs.run([str(venvs.python_of(venv)), "-c",
                     "import os; print(os.environ.get('NOMLA_DEBUG'), os.environ.get('NOMLA_SITE'))"])
    assert out.split() == ["1", "1"]

    drifts = {d.relpath: d for d in audit(venv=str(venv)).drifts}
    pth = drifts["zz_nomla_debug.pth"]
    assert pth.kind is DriftKind.STARTUP_CODE and pth.scope is Scope.ENVIRONMENT
    assert pth.survives_reinstall and pth.prediction is Prediction.SURVIVES
    assert pth.evidence == f"runs at every start of this environment's interpreter: line 1: {PTH_LINE}"
    assert pth.content_preview == PTH_LINE
    assert pth.remedy.endswith(f"rm {site / 'zz_nomla_debug.pth'}")
    custom = drifts["sitecustomize.py"]
    assert custom.kind is DriftKind.STARTUP_CODE and "imports sitecustomize" in custom.evidence
    assert custom.content_preview == "import os\nos.environ['NOMLA_SITE'] = '1'"
    assert drifts["extra_paths.pth"].kind is DriftKind.ADDED
    assert drifts["extra_paths.pth"].content_preview == "# only a path\n/opt/nomla/lib"
    # setuptools' own .pth runs code too, but its RECORD lists it and it matches: no drift.
    own = site / "distutils-precedence.pth"
    if own.exists():
        assert executable_lines(own.read_text())
    assert "distutils-precedence.pth" not in drifts
    assert set(drifts) == {"zz_nomla_debug.pth", "sitecustomize.py", "extra_paths.pth"}

    # The prediction, against a real reinstall (pip's own bundled wheel, no index): it survives.
    bundled = Path(ensurepip.__file__).parent / "_bundled"
    venvs.run([str(venvs.python_of(venv)), "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps",
               "--no-index", "--find-links", str(bundled), "pip"])
    out = venvs.run([str(venvs.python_of(venv)), "-c",
                     "import os; print(os.environ.get('NOMLA_DEBUG'), os.environ.get('NOMLA_SITE'))"])
    assert out.split() == ["1", "1"]
    after = {d.relpath: d.kind for d in audit(venv=str(venv)).drifts}
    assert after == {rel: d.kind for rel, d in drifts.items()}


def test_every_output_shows_it_and_the_default_policy_fails(venv):
    _plant(venv)
    proc = run_cli("audit", "--venv", str(venv), "--format", "json")
    assert proc.returncode & 1, proc.stderr
    doc = json.loads(proc.stdout)
    pth = next(d for d in doc["drifts"] if d["relpath"] == "zz_nomla_debug.pth")
    assert pth["kind"] == "startup-code" and pth["content_preview"] == PTH_LINE
    assert doc["summary"]["by_kind"]["startup-code"] == 2

    text = run_cli("audit", "--venv", str(venv), "-v").stdout
    row = next(i for i, line in enumerate(text.splitlines()) if "zz_nomla_debug.pth" in line)
    shown = text.splitlines()[row:row + 4]
    assert shown[0].split()[:3] == ["startup-code", "SURVIVES", "zz_nomla_debug.pth"]
    assert f"line 1: {PTH_LINE}" in shown[1] and shown[2] == f"      | {PTH_LINE}"
    plain = run_cli("audit", "--venv", str(venv)).stdout
    assert f"line 1: {PTH_LINE}" in plain and f"| {PTH_LINE}" not in plain  # the content under -v only
    # --diff shows a small added file's content too
    diffed = run_cli("audit", "--venv", str(venv), "--diff").stdout
    assert "      | /opt/nomla/lib" in diffed

    sarif = json.loads(run_cli("audit", "--venv", str(venv), "--format", "sarif").stdout)["runs"][0]
    results = [r for r in sarif["results"] if r["ruleId"] == "drift/startup-code"]
    assert len(results) == 2 and {r["level"] for r in results} == {"error"}
    rule = next(r for r in sarif["tool"]["driver"]["rules"] if r["id"] == "drift/startup-code")
    assert rule["defaultConfiguration"]["level"] == "error"
    github = run_cli("audit", "--venv", str(venv), "--format", "github").stdout
    assert any(line.startswith("::error ") and "zz_nomla_debug.pth" in line for line in github.splitlines())
    markdown = run_cli("audit", "--venv", str(venv), "--format", "markdown").stdout
    assert "| startup-code |" in markdown and f"```text\n{PTH_LINE}\n```" in markdown


def test_an_owned_pth_edited_to_run_code_is_modified_and_says_so(venv):
    site = venvs.site_packages_of(venv)
    own = site / "distutils-precedence.pth"
    if not own.exists():
        pytest.skip("this Python's venv seeds no setuptools (3.12 and later)")
    with open(own, "a") as f:
        f.write("\nimport os; os.environ['NOMLA_OWNED'] = '1'\n")
    drift = next(d for d in audit(venv=str(venv)).drifts if d.relpath == "distutils-precedence.pth")
    assert drift.kind is DriftKind.MODIFIED and drift.distribution.name == "setuptools"
    assert "it has executable lines" in drift.evidence
    assert "line 3: import os; os.environ['NOMLA_OWNED'] = '1'" in drift.evidence


def test_a_pth_in_a_uv_venv_is_startup_code(tmp_path, monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))
    venv = venvs.make_uv_venv(tmp_path / "vuv", tmp_path / "uvcache")
    site = venvs.site_packages_of(venv)
    assert [d.relpath for d in audit(venv=str(venv)).drifts] == []
    (site / "zz_nomla_debug.pth").write_text(PTH_LINE + "\n")
    assert [(d.relpath, d.kind) for d in audit(venv=str(venv)).drifts] == [("zz_nomla_debug.pth",
                                                                           DriftKind.STARTUP_CODE)]


def test_the_rule_is_the_interpreter_s_own(tmp_path):
    """Each line is written into a real site directory and Python started on it: what ran is
    exactly what ``executable_lines`` says runs."""
    lines = ["import os; os.environ['R1'] = '1'", " import os; os.environ['R2'] = '1'",
             "import\tos; os.environ['R3'] = '1'", "importos; os.environ['R4'] = '1'",
             "\ufeffimport os; os.environ['R5'] = '1'"]
    site = tmp_path / "site"
    site.mkdir()
    ran = []
    for n, line in enumerate(lines, 1):
        (site / f"t{n}.pth").write_text(line + "\n", encoding="utf-8")
        code = f"import site, os; site.addsitedir({str(site)!r}); print(os.environ.get('R{n}', ''))"
        out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True).stdout
        ran.append(out.strip() == "1")
        (site / f"t{n}.pth").unlink()
    said = [bool(executable_lines(line)) for line in lines]
    # A byte-order mark is dropped by newer Pythons (utf-8-sig) and kept by older ones: driftscan
    # counts it as code either way, never the other way round.
    assert said[:4] == ran[:4]
    assert said[4] is True




def test_restore_keeps_startup_code_and_says_how_to_remove_it(venv):
    site = _plant(venv)
    proc = run_cli("restore", "--venv", str(venv), "--format", "json")
    doc = json.loads(proc.stdout)
    left = next(r for r in doc["remaining"] if r["relpath"] == "zz_nomla_debug.pth")
    assert "runs at every start of the interpreter" in left["reason"]
    assert left["reason"].endswith(f"rm {site / 'zz_nomla_debug.pth'}")
    assert (site / "zz_nomla_debug.pth").read_text() == PTH_LINE + "\n"


def test_diff_against_a_snapshot_tells_startup_code_from_an_added_file(venv, tmp_path):
    snap = tmp_path / "snap.json"
    proc = run_cli("snapshot", "--venv", str(venv), "-o", str(snap))
    assert proc.returncode == 0, proc.stderr
    _plant(venv)
    proc = run_cli("diff", str(snap), "--venv", str(venv), "--format", "json")
    assert proc.returncode & 1, proc.stderr
    kinds = {d["relpath"]: (d["kind"], d["content_preview"]) for d in json.loads(proc.stdout)["drifts"]}
    assert kinds["zz_nomla_debug.pth"] == ("startup-code", PTH_LINE)
    assert kinds["sitecustomize.py"][0] == "startup-code"
    assert kinds["extra_paths.pth"][0] == "added"


def test_a_sitecustomize_package_runs_and_is_startup_code(venv):
    """A ``sitecustomize/`` package is imported at start-up as the module is: the real interpreter
    runs it, and the audit says so of its ``__init__.py`` (its other files are added files)."""
    site = venvs.site_packages_of(venv)
    (site / "sitecustomize").mkdir()
    (site / "sitecustomize" / "__init__.py").write_text("import os\nos.environ['NOMLA_PKG'] = '1'\n")
    (site / "sitecustomize" / "hooks.py").write_text("X = 1\n")
    out = venvs.run([str(venvs.python_of(venv)), "-c", "import os; print(os.environ.get('NOMLA_PKG'))"])
    assert out.split() == ["1"]
    drifts = {d.relpath: d for d in audit(venv=str(venv)).drifts}
    init = drifts["sitecustomize/__init__.py"]
    assert init.kind is DriftKind.STARTUP_CODE and "imports sitecustomize (a package) at start-up" in init.evidence
    assert init.survives_reinstall
    assert drifts["sitecustomize/hooks.py"].kind is DriftKind.ADDED
