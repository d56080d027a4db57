"""``diff`` against a baseline taken while the venv was patched, after a real reinstall undid the
patch: files back to what RECORD lists are ``restored`` (no reinstall remedy), a module missing then and
present now too, and the text output has one heading per distribution."""

from __future__ import annotations

import json

from driftscan.api import diff, snapshot
from fixtures import venvs
from fixtures.harness import offline, replace_by_rename, run_cli


def test_diff_after_a_reinstall_shows_restored_files(tmp_path, wheelhouse):
    cache = tmp_path / "uv-cache"
    venv = venvs.make_uv_venv(tmp_path / "v", cache)
    venvs.uv_install(venv, cache, *offline(wheelhouse), "six==1.17.0", "click==8.1.8")
    site = venvs.site_packages_of(venv)
    replace_by_rename(site / "six.py", (site / "six.py").read_text() + "PATCHED = 1\n")  # the cache stays clean
    (site / "click/testing.py").rename(site / "click/testing.py.disabled")
    snap = tmp_path / "baseline.json"
    assert snapshot(str(snap), venv=str(venv)) == []

    wheels = [str(next(wheelhouse.glob(f"{name}-*.whl"))) for name in ("six-1.17.0", "click-8.1.8")]
    venvs.uv_install(venv, cache, "--reinstall", "--no-deps", *wheels)  # the real reinstall: back to pristine
    (site / "click/testing.py.disabled").unlink()
    replace_by_rename(site / "click/core.py", (site / "click/core.py").read_text() + "# after the snapshot\n")

    report = diff(str(snap), venv=str(venv))
    kinds = {d.relpath: d.kind.value for d in report.drifts}
    assert kinds["six.py"] == "restored" and kinds["click/testing.py"] == "restored"
    assert kinds["click/core.py"] == "modified"  # changed since, and not what RECORD lists: a real drift
    assert kinds["click/testing.py.disabled"] == "missing"
    for d in report.drifts:
        if d.kind.value == "restored":
            assert d.scope.value == "package" and d.survives_reinstall is False
            assert "reinstall" not in d.remedy and d.remedy.startswith("nothing to do")
            assert "RECORD" in d.evidence
    assert all(d.kind.value != "added" or d.distribution is None for d in report.drifts)

    proc = run_cli("diff", str(snap), "--venv", str(venv))
    assert proc.returncode == 1, proc.stderr  # core.py drifted since the snapshot
    lines = proc.stdout.splitlines()
    headings = [line for line in lines[1:-1] if line and not line.startswith(" ")]
    named = [h for h in headings if h.startswith(("six ", "click "))]
    assert sorted(named) == ["click 8.1.8 (uv)", "six 1.17.0 (uv)"], proc.stdout  # one heading each
    assert not any("modified" in line and "WIPED" in line for line in lines if line.endswith(" six.py")), proc.stdout
    assert any("restored" in line and "PRISTINE" in line for line in proc.stdout.splitlines())
    as_json = json.loads(run_cli("diff", str(snap), "--venv", str(venv), "--format", "json").stdout)
    assert {d["relpath"]: d["kind"] for d in as_json["drifts"]}["six.py"] == "restored"
