"""``audit --lock`` and ``driftscan lock-check`` on environments real uv and pip install from real
locks (offline: wheels built here, the lock naming them by path): an edit whose RECORD row is
re-hashed to match is found only with the lock, a version swapped behind the lock's back and a
distribution added outside it are mismatches, one line each."""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from pathlib import Path

import pytest

from driftscan.api import audit
from driftscan.core.values import DriftKind
from fixtures import venvs
from fixtures.harness import replace_by_rename, run_cli
from fixtures.wheels import build_wheel

pytestmark = pytest.mark.slow

CODE = "def handler(x):\n    return x + 1\n" + "# padding\n" * 20


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rewrite(site: Path, dist_info: str, relpath: str, text: str) -> None:
    """Edit ``relpath`` and re-hash its RECORD row to match: what RECORD alone cannot tell."""
    target = site / relpath
    replace_by_rename(target, text)  # uv hard-links from its cache: an in-place write would edit the cache too
    data = target.read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record = site / dist_info / "RECORD"
    rows = [f"{relpath},sha256={digest},{len(data)}" if line.startswith(f"{relpath},") else line
            for line in record.read_text().splitlines()]
    record.write_text("\n".join(rows) + "\n")


def kinds(report) -> list[tuple[str, str]]:
    return sorted((d.kind.value, d.relpath) for d in report.drifts)


@pytest.fixture(scope="module")
def uv_project(tmp_path_factory):
    """A uv project locked and synced offline: ``lkpkg`` 1.0 from a wheel file the lock names by sha256."""
    root = tmp_path_factory.mktemp("uvlock")
    cache, project = root / "uv-cache", root / "proj"
    wheel = build_wheel(root / "house", "lkpkg", "1.0", {"lkpkg/__init__.py": "from .core import handler\n",
                                                         "lkpkg/core.py": CODE})
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "proj"\nversion = "0.1"\nrequires-python = ">=3.8"\n'
        f'dependencies = ["lkpkg @ {wheel.as_uri()}"]\n[tool.uv]\npackage = false\n')
    venvs.run([venvs.uv_bin(), "--directory", str(project), "sync", "--quiet", "--offline", "--python",
               sys.executable], env=venvs.uv_env(cache))
    return project, cache, wheel


def copy_env(uv_project, tmp_path) -> tuple[Path, Path, Path]:
    """A fresh copy of the synced project (its own venv, the same cache), to edit."""
    project, cache, wheel = uv_project
    dest = tmp_path / "proj"
    venvs.run([venvs.uv_bin(), "venv", "--quiet", str(dest / ".venv"), "--python", sys.executable],
              env=venvs.uv_env(cache))
    for name in ("pyproject.toml", "uv.lock"):
        (dest / name).write_bytes((project / name).read_bytes())
    venvs.run([venvs.uv_bin(), "--directory", str(dest), "sync", "--quiet", "--offline", "--locked", "--python",
               sys.executable], env=venvs.uv_env(cache))
    return dest, cache, wheel


def test_untouched_environment_matches_its_uv_lock(uv_project, tmp_path, monkeypatch):
    project, cache, wheel = copy_env(uv_project, tmp_path)
    monkeypatch.setenv("UV_CACHE_DIR", str(cache))
    proc = run_cli("lock-check", str(project / "uv.lock"), "--venv", str(project / ".venv"), "--format", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["mismatches"] == [] and result["verified"] == 1
    [prov] = result["provenance"]
    assert prov["distribution"] == "lkpkg" and prov["source"] == "uv-cache" and prov["verified"]
    assert prov["wheel_sha256"] == sha256(wheel) and prov["rows"] == [] and prov["rows_compared"] >= 3
    text = run_cli("lock-check", str(project / "uv.lock"), "--venv", str(project / ".venv"))
    assert text.returncode == 0 and text.stdout.strip().splitlines()[-1].startswith("uv.lock: the environment matches")


def test_an_edit_with_its_record_row_rehashed_is_found_only_with_the_lock(uv_project, tmp_path, monkeypatch):
    project, cache, _ = copy_env(uv_project, tmp_path)
    monkeypatch.setenv("UV_CACHE_DIR", str(cache))
    venv = project / ".venv"
    site = venvs.site_packages_of(venv)
    rewrite(site, "lkpkg-1.0.dist-info", "lkpkg/core.py", CODE.replace("x + 1", "x + 2"))
    assert not [d for d in audit(str(venv)).drifts if d.distribution and d.distribution.name == "lkpkg"
                and d.kind is not DriftKind.CACHE_MODIFIED], "RECORD alone says the package is clean"
    report = audit(str(venv), locks=[str(project / "uv.lock")])
    [drift] = [d for d in report.drifts if d.kind is DriftKind.RECORD_REWRITTEN]
    assert drift.relpath == "lkpkg/core.py" and drift.actual["row_change"] == "changed"
    assert "the file and its record were both changed" in drift.evidence
    assert drift.expected["row"] != drift.actual["row"]
    [prov] = report.provenance
    assert [r.path for r in prov.rows] == ["lkpkg/core.py"] and prov.rows[0].file_state == "matches-installed-row"
    proc = run_cli("lock-check", str(project / "uv.lock"), "--venv", str(venv))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len([line for line in lines if line.startswith("record-rewritten")]) == 1 and "lkpkg/core.py" in lines[0]
    assert lines[-1].startswith("uv.lock: 1 mismatch")


def test_a_version_swapped_and_a_distribution_added_behind_the_locks_back(uv_project, tmp_path, monkeypatch):
    project, cache, _ = copy_env(uv_project, tmp_path)
    monkeypatch.setenv("UV_CACHE_DIR", str(cache))
    venv = project / ".venv"
    newer = build_wheel(tmp_path / "house2", "lkpkg", "1.1", {"lkpkg/__init__.py": "X = 2\n"})
    extra = build_wheel(tmp_path / "house2", "stowaway", "0.3", {"stowaway/__init__.py": "Y = 1\n"})
    venvs.uv_install(venv, cache, "--no-index", "--no-deps", str(newer), str(extra))
    report = audit(str(venv), locks=[str(project / "uv.lock")])
    found = {(d.distribution.name if d.distribution else None): d for d in report.drifts
             if d.kind is DriftKind.LOCK_MISMATCH}
    assert set(found) == {"lkpkg", "stowaway"}
    assert found["lkpkg"].expected["version"] == "1.0" and found["lkpkg"].actual["version"] == "1.1"
    assert "uv.lock pins 1.0" in found["lkpkg"].evidence
    assert found["stowaway"].expected["version"] is None and "no such distribution" in found["stowaway"].evidence
    assert found["lkpkg"].remedy.startswith("uv sync --locked --project ")
    proc = run_cli("lock-check", str(project / "uv.lock"), "--venv", str(venv))
    assert proc.returncode == 1
    lines = proc.stdout.strip().splitlines()
    assert sorted(line.split()[1] for line in lines[:-1]) == ["lkpkg", "stowaway"], lines
    assert lines[-1].startswith("uv.lock: 2 mismatches")


def test_pip_and_a_hashed_requirements_file(tmp_path):
    """pip installs from a requirements file with --hash (--require-hashes); the wheels are found
    in --wheels by that digest. A copy of the wheel with other bytes is refused, saying why."""
    house = tmp_path / "house"
    wheel = build_wheel(house, "lkpkg", "1.0", {"lkpkg/__init__.py": "X = 1\n", "lkpkg/core.py": CODE})
    other = build_wheel(tmp_path / "other", "lkpkg", "1.0", {"lkpkg/__init__.py": "X = 1\n",
                                                             "lkpkg/core.py": CODE + "# another build\n"})
    reqs = tmp_path / "requirements.txt"
    reqs.write_text(f"lkpkg==1.0 \\\n    --hash=sha256:{sha256(wheel)}\n")
    venv = venvs.make_pip_venv(tmp_path / "venv")
    venvs.pip_install(venv, "--no-index", "--find-links", str(house), "--require-hashes", "-r", str(reqs))
    clean = audit(str(venv), locks=[str(reqs)], wheels=[str(other.parent), str(house)])
    [prov] = clean.provenance
    assert prov.verified and prov.source == "wheels" and prov.wheel == wheel.name
    assert not [d for d in clean.drifts if d.kind in (DriftKind.LOCK_MISMATCH, DriftKind.RECORD_REWRITTEN)]
    refused = audit(str(venv), locks=[str(reqs)], wheels=[str(other.parent)])
    [prov] = refused.provenance
    assert not prov.verified and "differs from the expected" in prov.reason and prov.how_to
    rewrite(venvs.site_packages_of(venv), "lkpkg-1.0.dist-info", "lkpkg/core.py", CODE + "import os\n")
    edited = audit(str(venv), locks=[str(reqs)], wheels=[str(house)])
    [drift] = [d for d in edited.drifts if d.kind is DriftKind.RECORD_REWRITTEN]
    assert drift.relpath == "lkpkg/core.py"
    # the original is the wheel's file, verified against the wheel's own row: the edit as a diff
    assert drift.pristine is not None and drift.pristine.source == "wheels"
    assert drift.diff is not None and "\n+import os\n" in drift.diff


def test_pylock_exported_by_uv_gives_the_same_verdict(uv_project, tmp_path, monkeypatch):
    project, cache, _ = copy_env(uv_project, tmp_path)
    monkeypatch.setenv("UV_CACHE_DIR", str(cache))
    venvs.run([venvs.uv_bin(), "--directory", str(project), "export", "--quiet", "--offline", "--format",
               "pylock.toml", "-o", "pylock.toml"], env=venvs.uv_env(cache))
    venv = project / ".venv"
    rewrite(venvs.site_packages_of(venv), "lkpkg-1.0.dist-info", "lkpkg/core.py", "X = 'edited'\n")
    for lock in ("uv.lock", "pylock.toml"):
        report = audit(str(venv), locks=[str(project / lock)])
        assert [d.relpath for d in report.drifts if d.kind is DriftKind.RECORD_REWRITTEN] == ["lkpkg/core.py"], lock


def test_a_lock_that_cannot_be_read_is_one_line_and_exit_bit_2(tmp_path):
    venv = venvs.make_pip_venv(tmp_path / "venv")
    bad = tmp_path / "uv.lock"
    bad.write_bytes(b"\xff\xfe not toml")
    proc = run_cli("lock-check", str(bad), "--venv", str(venv))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    [error] = [line for line in proc.stdout.splitlines() if line.startswith("error")]
    assert str(bad) in error
    missing = run_cli("lock-check", str(tmp_path / "nope.lock"), "--venv", str(venv))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr + missing.stdout


def test_the_sbom_of_an_audit_against_its_lock_validates_and_carries_the_wheels_digest(uv_project, tmp_path,
                                                                                       monkeypatch):
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    project, cache, wheel = copy_env(uv_project, tmp_path)
    monkeypatch.setenv("UV_CACHE_DIR", str(cache))
    venv = project / ".venv"
    rewrite(venvs.site_packages_of(venv), "lkpkg-1.0.dist-info", "lkpkg/core.py", "X = 'edited'\n")
    proc = run_cli("audit", "--venv", str(venv), "--lock", str(project / "uv.lock"), "--format", "cyclonedx")
    assert proc.returncode == 1, proc.stderr
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(proc.stdout) is None
    doc = json.loads(proc.stdout)
    [library] = [c for c in doc["components"] if c["type"] == "library" and c["name"] == "lkpkg"]
    assert library["hashes"] == [{"alg": "SHA-256", "content": sha256(wheel)}]
    [file] = library["components"]
    state = {p["name"]: p["value"] for p in file["properties"]}
    assert state["driftscan:drift:kind"] == "record-rewritten" and state["driftscan:provenance:verified"] == "true"


def test_without_a_lock_the_wheel_direct_url_names_by_digest_is_enough(tmp_path):
    """``pip install ./x.whl`` records the wheel's sha256 in direct_url.json: a plain audit then
    compares the installed RECORD with that wheel's own, no lock needed."""
    wheel = build_wheel(tmp_path / "house", "lkpkg", "1.0", {"lkpkg/__init__.py": "X = 1\n", "lkpkg/core.py": CODE})
    venv = venvs.make_pip_venv(tmp_path / "venv")
    venvs.pip_install(venv, "--no-index", str(wheel))
    clean = audit(str(venv))
    [prov] = clean.provenance
    assert prov.verified and prov.source == "direct_url" and prov.lock is None and prov.rows == []
    rewrite(venvs.site_packages_of(venv), "lkpkg-1.0.dist-info", "lkpkg/core.py", CODE + "breakpoint()\n")
    for report in (audit(str(venv)), audit(str(venv), use_cache=False)):  # warm and cold agree
        [drift] = [d for d in report.drifts if d.kind is DriftKind.RECORD_REWRITTEN]
        assert drift.relpath == "lkpkg/core.py" and "direct_url.json" in drift.evidence
        assert [f.name for f in drift.findings] == ["debugger-call"], "the injected code is linted"
    proc = run_cli("audit", "--venv", str(venv), "--fail-on", "record-rewritten", "--format", "short")
    assert proc.returncode == 1 and proc.stdout.startswith("V "), proc.stdout


def test_a_package_the_lock_leaves_out_of_this_python_is_a_mismatch_when_installed(tmp_path):
    house = tmp_path / "house"
    wanted = build_wheel(house, "lkpkg", "1.0", {"lkpkg/__init__.py": "X = 1\n"})
    legacy = build_wheel(house, "oldshim", "0.1", {"oldshim/__init__.py": "Y = 1\n"})
    reqs = tmp_path / "requirements.txt"
    reqs.write_text(f"lkpkg==1.0 --hash=sha256:{sha256(wanted)}\n"
                    f"oldshim==0.1 ; python_version < \"3.0\" --hash=sha256:{sha256(legacy)}\n")
    venv = venvs.make_pip_venv(tmp_path / "venv")
    venvs.pip_install(venv, "--no-index", "--find-links", str(house), "lkpkg==1.0", "oldshim==0.1")
    report = audit(str(venv), locks=[str(reqs)], wheels=[str(house)])
    [drift] = [d for d in report.drifts if d.kind is DriftKind.LOCK_MISMATCH]
    assert drift.distribution.name == "oldshim" and "leaves it out of this environment" in drift.evidence
    assert 'python_version < "3.0"' in drift.evidence


def test_checkpoint_keeps_a_record_rewritten_edit_and_reapply_brings_it_back(tmp_path):
    """The edit is saved with its wheel's original (verified against the wheel's own row), the
    reinstall wipes it, reapply writes it again — and never a RECORD row, so the audit then calls
    it what it is against the reinstalled RECORD: modified."""
    wheel = build_wheel(tmp_path / "house", "lkpkg", "1.0", {"lkpkg/__init__.py": "X = 1\n", "lkpkg/core.py": CODE})
    venv = venvs.make_pip_venv(tmp_path / "venv")
    venvs.pip_install(venv, "--no-index", str(wheel))
    site = venvs.site_packages_of(venv)
    edited = CODE.replace("x + 1", "x + 41")
    rewrite(site, "lkpkg-1.0.dist-info", "lkpkg/core.py", edited)
    checkpoint = tmp_path / "cp"
    proc = run_cli("checkpoint", "--venv", str(venv), "-o", str(checkpoint))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    index = json.loads((checkpoint / "checkpoint.json").read_text())
    [item] = [f for f in index["files"] if f["relpath"].endswith("lkpkg/core.py")]
    assert item["kind"] == "record-rewritten" and item["has_original"] and not index["partial"]
    venvs.pip_install(venv, "--no-index", "--force-reinstall", "--no-deps", str(wheel))
    assert (site / "lkpkg/core.py").read_text() == CODE
    proc = run_cli("reapply", str(checkpoint), "--venv", str(venv), "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (site / "lkpkg/core.py").read_text() == edited
    [drift] = [d for d in audit(str(venv)).drifts if d.relpath == "lkpkg/core.py"]
    assert drift.kind is DriftKind.MODIFIED


def test_predictions_hold_against_the_real_reinstall(tmp_path, monkeypatch):
    """An in-place edit through uv's hard link, its RECORD row re-hashed: predicted to survive a uv
    reinstall from the same cache, and it does; the remedy (clean the cache entry, then sync) wipes
    it. A version swapped behind the lock: its remedy, run as printed, makes lock-check pass."""
    cache, project = tmp_path / "uv-cache", tmp_path / "proj"
    monkeypatch.setenv("UV_CACHE_DIR", str(cache))
    wheel = build_wheel(tmp_path / "house", "lkpkg", "1.0", {"lkpkg/__init__.py": "from .core import handler\n",
                                                             "lkpkg/core.py": CODE})
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "proj"\nversion = "0.1"\nrequires-python = ">=3.8"\n'
        f'dependencies = ["lkpkg @ {wheel.as_uri()}"]\n[tool.uv]\npackage = false\n')
    sync = [venvs.uv_bin(), "--directory", str(project), "sync", "--quiet", "--offline", "--python", sys.executable]
    venvs.run(sync, env=venvs.uv_env(cache))
    venv = project / ".venv"
    site = venvs.site_packages_of(venv)
    core = site / "lkpkg" / "core.py"
    edited = CODE.replace("x + 1", "x + 3")
    core.write_text(edited)  # in place: through the hard link into uv's cache
    data = core.read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record = site / "lkpkg-1.0.dist-info" / "RECORD"
    record.write_text("\n".join(f"lkpkg/core.py,sha256={digest},{len(data)}" if line.startswith("lkpkg/core.py,")
                                else line for line in record.read_text().splitlines()) + "\n")
    [drift] = [d for d in audit(str(venv), locks=[str(project / "uv.lock")]).drifts
               if d.kind is DriftKind.RECORD_REWRITTEN]
    assert drift.prediction.value == "survives" and "uv cache clean" in drift.remedy
    venvs.run([*sync, "--reinstall-package", "lkpkg"], env=venvs.uv_env(cache))
    assert core.read_text() == edited, "predicted to survive a uv reinstall from the same cache: it does"
    venvs.run([venvs.uv_bin(), "cache", "clean", "--cache-dir", str(cache), "lkpkg"], env=venvs.uv_env(cache))
    venvs.run([*sync, "--reinstall-package", "lkpkg"], env=venvs.uv_env(cache))
    assert core.read_text() == CODE, "the remedy's cache clean, then the reinstall, brings the wheel's file back"
    newer = build_wheel(tmp_path / "house2", "lkpkg", "1.1", {"lkpkg/__init__.py": "X = 2\n"})
    venvs.uv_install(venv, cache, "--no-index", "--no-deps", str(newer))
    [mismatch] = [d for d in audit(str(venv), locks=[str(project / "uv.lock")]).drifts
                  if d.kind is DriftKind.LOCK_MISMATCH]
    assert mismatch.remedy == f"uv sync --locked --project {project}"
    venvs.run([venvs.uv_bin(), *mismatch.remedy.split()[1:], "--offline", "--python", sys.executable],
              env=venvs.uv_env(cache))
    proc = run_cli("lock-check", str(project / "uv.lock"), "--venv", str(venv))
    assert proc.returncode == 0, proc.stdout + proc.stderr
