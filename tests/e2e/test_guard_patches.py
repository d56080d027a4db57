"""``plan`` and ``guard --reapply-patches`` with the team's patches, against the real operation: a
real pip (and uv) venv of a toy package built here in three releases, the team's 1.0 patch applied
by ``driftscan patch apply``; plan's prediction for a reinstall and an upgrade, then guard running
the real installer and ``patch apply --yes`` after it — the files themselves checked afterwards."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from fixtures import venvs
from fixtures.patchfiles import patch_text, toy_core as core
from fixtures.restoring import cli
from fixtures.wheels import build_wheel

from driftscan.render import json_schema

DIST = "toy-team"


V10 = core()
V11 = core(gamma="33")  # upstream changed gamma its own way: the patch's gamma hunk conflicts
V20 = core(alpha="7")
PATCHED = core(alpha="10", gamma="30")
EXTRA = "def helper():\n    return 'extra'\n"
APPLY = "re-applied by `driftscan patch apply`"


@pytest.fixture(scope="module")
def house(tmp_path_factory) -> Path:
    house = tmp_path_factory.mktemp("team-wheels")
    for version, text in (("1.0", V10), ("1.1", V11), ("2.0", V20)):
        build_wheel(house, DIST, version, {"toyteam/__init__.py": "", "toyteam/core.py": text})
    return house


@pytest.fixture(scope="module")
def template(tmp_path_factory, house) -> Path:
    venv = venvs.make_pip_venv(tmp_path_factory.mktemp("team-tpl") / "venv")
    venvs.pip_install(venv, "--no-index", "--find-links", str(house), f"{DIST}==1.0")
    return venv


def env_for(tmp: Path) -> dict[str, str]:
    (tmp / "no-pip-cache").mkdir(exist_ok=True)
    return {"PIP_CACHE_DIR": str(tmp / "no-pip-cache"), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "DRIFTSCAN_CHECKPOINT_DIR": str(tmp / "checkpoints"), "DRIFTSCAN_CACHE_DIR": str(tmp / "ds-cache")}


def team_venv(template: Path, tmp: Path, env: dict[str, str], manifest: str | None = None) -> tuple[Path, Path]:
    """A copy of the 1.0 venv with the team's 1.0 patch applied by the real command line (from
    ./patches, or from the manifest ``manifest``, a driftscan.toml table's body)."""
    venv = tmp / "venv"
    shutil.copytree(template, venv, symlinks=True)
    (tmp / "patches").mkdir()
    (tmp / "patches" / f"{DIST}@1.0.patch").write_text(
        patch_text(DIST, "1.0", {"toyteam/core.py": (V10, PATCHED), "toyteam/extra.py": (None, EXTRA)}))
    if manifest is not None:
        (tmp / "driftscan.toml").write_text(f"[patches]\n{manifest}\n")
    proc = cli("patch", "apply", "--venv", str(venv), "--yes", env=env, cwd=str(tmp))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    site = venvs.site_packages_of(venv)
    assert (site / "toyteam/core.py").read_text() == PATCHED
    return venv, site


def plan(venv: Path, env: dict[str, str], tmp: Path, *args: str) -> dict:
    proc = cli("plan", "--venv", str(venv), "--reinstall", DIST, "--format", "json", *args, env=env, cwd=str(tmp))
    assert "Traceback" not in proc.stderr and proc.stdout, proc.stderr
    result = json.loads(proc.stdout)
    jsonschema.validate(result, json_schema("plan"))
    return result


def guard(venv: Path, env: dict[str, str], tmp: Path, *command: str, args: tuple[str, ...] = ()) -> tuple[int, dict]:
    proc = cli("guard", "--venv", str(venv), "--format", "json", "--reapply-patches", *args, "--", *command,
               env=env, cwd=str(tmp))
    assert "Traceback" not in proc.stderr and proc.stdout.strip(), proc.stderr
    report = json.loads(proc.stdout)
    jsonschema.validate(report, json_schema("guard"))
    return proc.returncode, report


def audit_kinds(venv: Path, env: dict[str, str]) -> dict[str, str]:
    proc = cli("audit", "--venv", str(venv), "--format", "json", env=env)
    return {d["relpath"].split("site-packages/")[-1]: d["kind"] for d in json.loads(proc.stdout)["drifts"]}


def pip(venv: Path, house: Path, *args: str) -> list[str]:
    return [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index", "--find-links", str(house), *args]


def test_a_reinstall_re_applies_the_patch_as_plan_predicts(template, house, tmp_path):
    env = env_for(tmp_path)
    venv, site = team_venv(template, tmp_path, env)
    predicted = plan(venv, env, tmp_path)
    (team,) = predicted["patches"]
    assert team["fate"] == "re-applied" and team["patch_after"] == f"patches/{DIST}@1.0.patch"
    items = {Path(i["path"]).name: i for i in predicted["items"]}
    assert items["core.py"]["status"] == "WIPED" and items["core.py"]["patch_fate"] == "re-applied"
    assert APPLY in items["core.py"]["reason"]
    assert items["extra.py"]["status"] == "SURVIVES"  # the patch added it: no RECORD lists it, no reinstall removes it
    step = next(s for s in predicted["steps"] if APPLY in s["step"])
    assert step["command"].startswith("driftscan patch apply --venv") and step["command"].endswith("--yes")
    text = cli("plan", "--venv", str(venv), "--reinstall", DIST, env=env, cwd=str(tmp_path)).stdout
    assert "re-applied" in text and APPLY in text

    code, report = guard(venv, env, tmp_path, *pip(venv, house, "--force-reinstall", "--no-deps", f"{DIST}==1.0"))
    assert code == 0, report
    assert report["summary"]["failed"] == 0 and report["summary"]["held"] >= 1  # wiped by the command, as predicted
    assert [p["fate"] for p in report["patch_plan"]] == ["re-applied"]
    (applied,) = report["patch_apply"]["patches"]
    assert applied["state"] == "applied" and report["patch_apply_exit"] == 0
    assert report["patch_apply"]["written"] == [str(site / "toyteam/core.py")]
    assert (site / "toyteam/core.py").read_text() == PATCHED and (site / "toyteam/extra.py").read_text() == EXTRA
    assert audit_kinds(venv, env)["toyteam/core.py"] == "patched"


def test_an_upgrade_the_patch_does_not_match_is_loud(template, house, tmp_path):
    env = env_for(tmp_path)
    venv, site = team_venv(template, tmp_path, env)
    new = str(house / f"{DIST.replace('-', '_')}-2.0-py3-none-any.whl")
    predicted = plan(venv, env, tmp_path, "--from", new)
    (team,) = predicted["patches"]
    rebase = f"driftscan patch rebase {DIST} --to 2.0 --wheels {house}"  # where the reinstall found the wheel
    assert team["fate"] == "unused" and team["version_after"] == "2.0" and team["command"] == rebase
    assert any(s["command"] == rebase and "unused" in s["step"] for s in predicted["steps"])

    code, report = guard(venv, env, tmp_path, *pip(venv, house, "--no-deps", new))
    assert code == 1, report
    assert [p["fate"] for p in report["patch_plan"]] == ["unused"]
    (unused,) = report["patch_apply"]["patches"]
    # (PIP_FIND_LINKS, when the machine sets it, adds its directories after the command's own)
    assert unused["state"] == "unused" and [line[:len(rebase)] for line in report["patch_rebase"]] == [rebase]
    assert (site / "toyteam/core.py").read_text() == V20
    text = cli("guard", "--venv", str(venv), "--reapply-patches", "--", *pip(venv, house, "--no-deps",
                                                                               "--force-reinstall", new),
               env=env, cwd=str(tmp_path))
    assert text.returncode == 1 and f"{DIST}@1.0.patch" in text.stdout and rebase in text.stdout
    code, report = guard(venv, env, tmp_path, *pip(venv, house, "--no-deps", "--force-reinstall", new),
                         args=("--allow-unused",))
    assert code == 0 and report["patch_apply_exit"] == 0


def test_a_conflicting_patch_under_guard_leaves_the_installed_file(template, house, tmp_path):
    env = env_for(tmp_path)
    venv, site = team_venv(template, tmp_path, env, manifest=f'"patches/{DIST}@1.0.patch" = {{ distribution = "{DIST}" }}')
    code, report = guard(venv, env, tmp_path, *pip(venv, house, "--no-deps", f"{DIST}==1.1"))
    assert code == 1, report
    assert [p["fate"] for p in report["patch_plan"]] == ["re-applied"]  # the name alone matches 1.1
    (patch,) = report["patch_apply"]["patches"]
    files = {f["path"]: f for f in patch["files"]}
    assert patch["state"] == "conflict" and files["toyteam/core.py"]["state"] == "conflict"
    assert (site / "toyteam/core.py").read_text() == V11  # as the install wrote it
    text = cli("guard", "--venv", str(venv), "--reapply-patches", "--", *pip(venv, house, "--no-deps",
                                                                               "--force-reinstall", f"{DIST}==1.1"),
               env=env, cwd=str(tmp_path))
    assert text.returncode == 1 and "NOT ALL APPLIED" in text.stdout and "conflict" in text.stdout
    assert (site / "toyteam/core.py").read_text() == V11


def test_a_failed_command_applies_no_patch(template, house, tmp_path):
    env = env_for(tmp_path)
    venv, site = team_venv(template, tmp_path, env)
    code, report = guard(venv, env, tmp_path, *pip(venv, house, "--force-reinstall", f"{DIST}==9.9"))
    assert code != 0 and report["exit_code"] != 0 and report["patch_apply"] is None
    assert "the command failed" in report["patch_apply_skipped"]
    assert (site / "toyteam/core.py").read_text() == PATCHED  # pip found nothing to install: nothing changed


def test_a_patched_file_edited_since_is_left_to_reapply(template, house, tmp_path):
    """A file the patch wrote and the user edited since is a checkpointed edit: guard's patch
    apply leaves it (one write, by reapply, patch and edit together); the others it writes."""
    env = env_for(tmp_path)
    venv, site = team_venv(template, tmp_path, env)
    edited = PATCHED.replace("return 2", "return 22")
    (site / "toyteam/core.py").write_text(edited)
    (site / "toyteam/extra.py").unlink()
    code, report = guard(venv, env, tmp_path, *pip(venv, house, "--force-reinstall", "--no-deps", f"{DIST}==1.0"))
    files = {f["path"]: f for f in report["patch_apply"]["patches"][0]["files"]}
    assert files["toyteam/core.py"]["state"] == "left" and not files["toyteam/core.py"]["written"]
    assert "reapply" in files["toyteam/core.py"]["message"]
    assert files["toyteam/extra.py"]["written"] and (site / "toyteam/extra.py").read_text() == EXTRA
    assert (site / "toyteam/core.py").read_text() == V10 and code == 0, report
    reapply = report["reapply"].split()
    proc = cli(*reapply[1:], env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (site / "toyteam/core.py").read_text() == edited


def test_uv_reinstall_re_applies_the_patch(house, tmp_path, uv_cache):
    env = {**env_for(tmp_path), **venvs.uv_env(uv_cache)}
    venv = venvs.make_uv_venv(tmp_path / "venv", uv_cache)
    venvs.uv_install(venv, uv_cache, "--no-index", "--find-links", str(house), f"{DIST}==1.0")
    site = venvs.site_packages_of(venv)
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / f"{DIST}@1.0.patch").write_text(patch_text(DIST, "1.0", {"toyteam/core.py": (V10, PATCHED)}))
    proc = cli("patch", "apply", "--venv", str(venv), "--patches", "team", "--yes", env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    code, report = guard(venv, env, tmp_path, venvs.uv_bin(), "pip", "install", "--python", str(venv / "bin" / "python"),
                         "--reinstall", "--no-deps", "--no-index", "--find-links", str(house), f"{DIST}==1.0",
                         args=("--patches", "team"))
    assert code == 0, report
    assert report["command"]["tool"] == "uv pip" and [p["fate"] for p in report["patch_plan"]] == ["re-applied"]
    assert report["patch_apply"]["patches"][0]["state"] == "applied"
    assert (site / "toyteam/core.py").read_text() == PATCHED
    assert audit_kinds(venv, env) == {"toyteam/core.py": "patched"}


def test_bad_patch_options_are_clear_errors_and_nothing_runs(template, tmp_path):
    env = env_for(tmp_path)
    marker = tmp_path / "ran"
    command = ("--", "touch", str(marker))
    for args, says in ((("--allow-unused",), "go with --reapply-patches"),
                       (("--reapply-patches",), "no such directory"),
                       (("--reapply-patches", "--patches", "p", "--manifest", "m.toml"), "give one")):
        proc = cli("guard", "--venv", str(template), *args, *command, env=env, cwd=str(tmp_path))
        assert proc.returncode == 2 and says in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert not marker.exists()
    proc = cli("plan", "--venv", str(template), "--reinstall", DIST, "--patches", "nowhere", env=env, cwd=str(tmp_path))
    assert proc.returncode == 2 and "nowhere: no such directory" in proc.stderr, proc.stderr
    proc = cli("plan", "--venv", str(template), "--reinstall", DIST, "--format", "json", env=env, cwd=str(tmp_path))
    assert json.loads(proc.stdout)["patches"] == [], "no patches anywhere: plan predicts as before"
