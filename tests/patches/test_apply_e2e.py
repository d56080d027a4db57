"""``driftscan patch apply`` end to end: real pip and uv venvs of a small real package built here in
two releases, the patch made on 1.0 applied by the command line — dry run, ``--yes``, twice
(idempotent), onto 1.1 (one hunk applies, one is already upstream, one conflicts), a patch for a
version not installed, an edited patch under a pinned sha256, and the manifest's precedence."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from fixtures import venvs
from fixtures.harness import run_cli
from fixtures.patchfiles import patch_text, toy_core as core
from fixtures.wheels import build_wheel

from driftscan.render import json_schema

DIST = "toy-fix"


V10 = core()
V11 = core(beta="20", gamma="33")  # upstream took the beta fix, and changed gamma its own way
PATCHED = core(alpha="10", beta="20", gamma="30")
EXTRA = "def helper():\n    return 'extra'\n"


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> Path:
    house = tmp_path_factory.mktemp("house")
    for version, text in (("1.0", V10), ("1.1", V11)):
        build_wheel(house, DIST, version, {"toyfix/__init__.py": "", "toyfix/core.py": text})
    return house


@pytest.fixture(scope="module")
def pip_template(tmp_path_factory, wheels) -> Path:
    venv = venvs.make_pip_venv(tmp_path_factory.mktemp("tpl") / "venv")
    venvs.pip_install(venv, "--no-index", "--find-links", str(wheels), f"{DIST}==1.0")
    return venv


def fresh(template: Path, tmp_path: Path) -> tuple[Path, Path]:
    venv = tmp_path / "venv"
    shutil.copytree(template, venv, symlinks=True)
    return venv, venvs.site_packages_of(venv)


def write_patch(directory: Path, version: str = "1.0") -> Path:
    directory.mkdir(exist_ok=True)
    path = directory / f"{DIST}@{version}.patch"
    path.write_text(patch_text(DIST, version, {"toyfix/core.py": (V10, PATCHED), "toyfix/extra.py": (None, EXTRA)}))
    return path


def apply(venv: Path, *args: str, cwd: Path):
    proc = run_cli("patch", "apply", "--venv", str(venv), "--format", "json", *args, cwd=str(cwd))
    assert proc.stdout, proc.stderr
    result = json.loads(proc.stdout)
    jsonschema.validate(result, json_schema("patch-apply"))  # every real run's JSON is what the schema says
    return proc.returncode, result


def states(result):
    return {p["patch"]: p["state"] for p in result["patches"]}


def test_dry_run_then_yes_then_again(pip_template, tmp_path):
    venv, site = fresh(pip_template, tmp_path)
    write_patch(tmp_path / "patches")
    code, result = apply(venv, cwd=tmp_path)
    assert code == 1 and result["dry_run"] and not result["written"]
    assert states(result) == {"patches/toy-fix@1.0.patch": "applied"}
    assert (site / "toyfix/core.py").read_text() == V10 and not (site / "toyfix/extra.py").exists()

    code, result = apply(venv, "--yes", cwd=tmp_path)
    assert code == 0, result
    assert (site / "toyfix/core.py").read_text() == PATCHED
    assert (site / "toyfix/extra.py").read_text() == EXTRA
    assert sorted(result["written"]) == sorted([str(site / "toyfix/core.py"), str(site / "toyfix/extra.py")])
    record_before = (site / "toy_fix-1.0.dist-info/RECORD").read_bytes()
    ledger = json.loads(Path(result["record"]).read_text())
    (entry,) = ledger["patches"].values()
    assert entry["sha256"] == hashlib.sha256((tmp_path / "patches/toy-fix@1.0.patch").read_bytes()).hexdigest()
    assert entry["files"] == {"toyfix/core.py": hashlib.sha256(PATCHED.encode()).hexdigest(),
                              "toyfix/extra.py": hashlib.sha256(EXTRA.encode()).hexdigest()}

    code, result = apply(venv, "--yes", cwd=tmp_path)
    assert code == 0 and not result["written"]
    assert states(result) == {"patches/toy-fix@1.0.patch": "already"}
    assert {h["state"] for f in result["patches"][0]["files"] for h in f["hunks"]} == {"already"}
    assert (site / "toy_fix-1.0.dist-info/RECORD").read_bytes() == record_before  # never RECORD
    text = run_cli("patch", "apply", "--venv", str(venv), cwd=str(tmp_path))
    assert text.returncode == 0 and "already" in text.stdout and "nothing to write" in text.stdout


def test_onto_the_next_release_with_uv(wheels, tmp_path, uv_cache):
    venv = venvs.make_uv_venv(tmp_path / "venv", uv_cache)
    venvs.uv_install(venv, uv_cache, "--no-index", "--find-links", str(wheels), f"{DIST}==1.1")
    site = venvs.site_packages_of(venv)
    write_patch(tmp_path / "patches")
    (tmp_path / "driftscan.toml").write_text(f'[patches]\n"patches/{DIST}@1.0.patch" = {{ distribution = "{DIST}" }}\n')
    code, result = apply(venv, "--yes", cwd=tmp_path)
    (patch,) = result["patches"]
    assert patch["state"] == "conflict" and patch["version"] == "1.0" and patch["installed"] == "1.1"
    files = {f["path"]: f for f in patch["files"]}
    assert [h["state"] for h in files["toyfix/core.py"]["hunks"]] == ["applied", "obsolete", "conflict"]
    conflict = files["toyfix/core.py"]["hunks"][2]
    assert any("return 30" in line for line in conflict["hunk"])
    assert any("return 33" in line for line in conflict["found"])
    assert files["toyfix/core.py"]["state"] == "conflict" and not files["toyfix/core.py"]["written"]
    assert (site / "toyfix/core.py").read_text() == V11  # all or nothing for the file
    assert files["toyfix/extra.py"]["written"] and (site / "toyfix/extra.py").read_text() == EXTRA
    assert code == 1
    code, result = apply(venv, "--yes", "--allow-conflicts", cwd=tmp_path)
    assert code == 0 and not result["written"]
    text = run_cli("patch", "apply", "--venv", str(venv), cwd=str(tmp_path))
    assert "conflict" in text.stdout and "return 33" in text.stdout and text.returncode == 1


def test_a_patch_for_a_version_not_installed_is_unused(pip_template, tmp_path):
    venv, site = fresh(pip_template, tmp_path)
    write_patch(tmp_path / "patches", version="2.0")
    code, result = apply(venv, "--yes", cwd=tmp_path)
    assert code == 1 and states(result) == {"patches/toy-fix@2.0.patch": "unused"} and not result["written"]
    assert result["patches"][0]["message"] == "toy-fix 1.0 is installed, not ==2.0"
    code, result = apply(venv, "--yes", "--allow-unused", cwd=tmp_path)
    assert code == 0
    assert (site / "toyfix/core.py").read_text() == V10


def test_an_edited_patch_under_a_pinned_sha256_is_refused(pip_template, tmp_path):
    venv, site = fresh(pip_template, tmp_path)
    path = write_patch(tmp_path / "patches")
    pinned = hashlib.sha256(path.read_bytes()).hexdigest()
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.driftscan.patches]\n"patches/{path.name}" = {{ distribution = "{DIST}", version = "==1.0", '
        f'sha256 = "{pinned}" }}\n')
    path.write_text(path.read_text().replace("return 10", "return __import__('os').getpid()"))
    code, result = apply(venv, "--yes", cwd=tmp_path)
    (patch,) = result["patches"]
    assert code == 1 and patch["state"] == "refused" and pinned in patch["message"]
    assert (site / "toyfix/core.py").read_text() == V10 and not (site / "toyfix/extra.py").exists()


def test_the_exact_version_patch_wins(pip_template, tmp_path):
    venv, site = fresh(pip_template, tmp_path)
    (tmp_path / "p").mkdir()
    (tmp_path / "p/exact.patch").write_text(patch_text(DIST, "1.0", {"toyfix/core.py": (V10, core(alpha="100"))}))
    (tmp_path / "p/range.patch").write_text(patch_text(DIST, "1.0", {"toyfix/core.py": (V10, core(alpha="200"))}))
    (tmp_path / "p/name.patch").write_text(patch_text(DIST, "1.0", {"toyfix/core.py": (V10, core(alpha="300"))}))
    manifest = tmp_path / "team.toml"
    manifest.write_text(f'[patches]\n"p/name.patch" = {{ distribution = "{DIST}" }}\n'
                        f'"p/range.patch" = {{ distribution = "{DIST}", version = ">=1.0,<2" }}\n'
                        f'"p/exact.patch" = {{ distribution = "{DIST}", version = "==1.0" }}\n')
    code, result = apply(venv, "--manifest", str(manifest), "--yes", "--allow-unused", cwd=tmp_path)
    assert states(result) == {"p/exact.patch": "applied", "p/range.patch": "unused", "p/name.patch": "unused"}
    messages = {p["patch"]: p["message"] for p in result["patches"]}
    assert messages["p/range.patch"] == "toy-fix 1.0 takes p/exact.patch (a more precise entry)"
    assert code == 0 and (site / "toyfix/core.py").read_text() == core(alpha="100")
    proc = run_cli("patch", "apply", "--venv", str(venv), "--manifest", str(tmp_path / "absent.toml"),
                   cwd=str(tmp_path))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_a_manifest_another_user_could_have_planted_is_not_read(pip_template, tmp_path):
    venv, site = fresh(pip_template, tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    write_patch(work / "p")
    planted = work / "driftscan.toml"
    planted.write_text(f'[patches]\n"p/{DIST}@1.0.patch" = {{ distribution = "{DIST}" }}\n')
    planted.chmod(0o666)
    proc = run_cli("patch", "apply", "--venv", str(venv), "--yes", cwd=str(work))
    assert "not read" in proc.stderr and "writable by every user" in proc.stderr
    assert proc.returncode == 2 and "patches: no such directory" in proc.stderr  # it fell back to ./patches
    assert (site / "toyfix/core.py").read_text() == V10


def test_a_cache_inside_the_environment_is_refused(pip_template, tmp_path):
    venv, site = fresh(pip_template, tmp_path)
    write_patch(tmp_path / "patches")
    proc = run_cli("patch", "apply", "--venv", str(venv), "--yes", cwd=str(tmp_path),
                   env={"DRIFTSCAN_CACHE_DIR": str(venv / "cache")})
    assert proc.returncode == 2 and "inside the audited tree" in proc.stderr
    assert (site / "toyfix/core.py").read_text() == V10 and not (venv / "cache").exists()


def test_what_export_writes_apply_puts_onto_a_fresh_venv(pip_template, wheels, tmp_path):
    """The team's flow: export on the box where the fixes were made, apply after a fresh install."""
    dev = tmp_path / "dev"
    shutil.copytree(pip_template, dev, symlinks=True)
    dev_site = venvs.site_packages_of(dev)
    (dev_site / "toyfix/core.py").write_text(PATCHED)
    (dev_site / "toyfix/extra.py").write_text(EXTRA)
    proc = run_cli("patch", "export", "--venv", str(dev), "-o", "patches", "--wheels", str(wheels), cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    venv, site = fresh(pip_template, tmp_path)
    code, result = apply(venv, "--yes", cwd=tmp_path)
    assert code == 0 and states(result) == {"patches/toy-fix@1.0.patch": "applied"}
    assert (site / "toyfix/core.py").read_text() == PATCHED and (site / "toyfix/extra.py").read_text() == EXTRA


def test_audit_tells_the_teams_patch_from_drift(tmp_path, monkeypatch):
    """After ``patch apply --yes`` the file is ``patched`` with the patch named (the run does not
    fail); edited since, it is ``modified`` again and names the patch that wrote it."""
    from driftscan.api import audit as run_audit
    from driftscan.report.policy import exit_status
    from fixtures.harness import replace_by_rename

    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))
    house = tmp_path / "house"
    build_wheel(house, "teampkg", "1.0", {"teampkg/__init__.py": "", "teampkg/core.py": "VALUE = 1\n"})
    venv = venvs.make_pip_venv(tmp_path / "venv")
    venvs.pip_install(venv, "--no-index", "--find-links", str(house), "teampkg")
    patches = tmp_path / "patches"
    patches.mkdir()
    site = venvs.site_packages_of(venv)
    original = (site / "teampkg" / "core.py").read_bytes()
    digest = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(original).digest()).rstrip(b"=").decode()
    (patches / "teampkg@1.0.patch").write_text(
        "Description: the team's fix\nDistribution: teampkg\nVersion: 1.0\nDriftscan-Version: 0.1.0\n"
        f"Files:\n teampkg/core.py {digest}\n---\n"
        "diff --git a/teampkg/core.py b/teampkg/core.py\n--- a/teampkg/core.py\n+++ b/teampkg/core.py\n"
        "@@ -1 +1 @@\n-VALUE = 1\n+VALUE = 2\n")
    done = run_cli("patch", "apply", "--venv", str(venv), "--patches", str(patches), "--yes",
                   env={"DRIFTSCAN_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stdout + done.stderr
    report = run_audit(str(venv))
    [drift] = [d for d in report.drifts if d.relpath == "teampkg/core.py"]
    assert drift.kind.value == "patched" and drift.expected["patch"] == str(patches / "teampkg@1.0.patch")
    assert exit_status(report) == 0, "the team's own patch fails no run"
    assert drift.prediction.value == "wiped" and "driftscan patch apply --yes" in drift.remedy
    venvs.pip_install(venv, "--no-index", "--find-links", str(house), "--force-reinstall", "--no-deps", "teampkg")
    assert (site / "teampkg" / "core.py").read_bytes() == original, "predicted wiped by a reinstall: it is"
    assert not [d for d in run_audit(str(venv)).drifts if d.relpath == "teampkg/core.py"]
    again = run_cli("patch", "apply", "--venv", str(venv), "--patches", str(patches), "--yes",
                    env={"DRIFTSCAN_CACHE_DIR": str(tmp_path / "cache")})
    assert again.returncode == 0, again.stdout + again.stderr
    assert [d.kind.value for d in run_audit(str(venv)).drifts if d.relpath == "teampkg/core.py"] == ["patched"]
    replace_by_rename(site / "teampkg" / "core.py", "VALUE = 3\n")
    [edited] = [d for d in run_audit(str(venv)).drifts if d.relpath == "teampkg/core.py"]
    assert edited.kind.value == "modified" and "teampkg@1.0.patch wrote this file" in edited.evidence
