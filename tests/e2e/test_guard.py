"""``driftscan guard`` around real installers: real uv (hard-link mode, a private cache) and real
pip reinstalling toy wheels built here, on venvs patched the ways users patch them (temp file +
rename, in place through uv's hard link, deleted and added files, a torch.save-style dump in a
directory of the test). Every prediction guard makes is checked by guard against the files after
the real command; the tests check guard's verdicts against the files themselves."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from driftscan.reinstall.guard import GuardReport, Tool, recognise
from fixtures import venvs
from fixtures.harness import replace_by_rename
from fixtures.modeldirs import build_local_dir, seed_files, sm120_edit
from fixtures.restoring import cli, snapshot_tree
from fixtures.upgrades import pip_venv
from fixtures.wheels import build_wheel

EXIT_FAILED_PREDICTION, EXIT_REFUSED = 1, 2

CORE = "def f():\n    return 1\n"
FILES = {"toypkg/__init__.py": "X = 1\n", "toypkg/core.py": CORE, "toypkg/util.py": "A = 1\n",
         "toypkg/gone.py": "G = 1\n", "toypkg/fix.py": "def g(v):\n    return v\n"}
OTHER = {"otherpkg/__init__.py": "Y = 1\n", "otherpkg/mod.py": "B = 2\n"}


@pytest.fixture(scope="module")
def house(tmp_path_factory) -> Path:
    house = tmp_path_factory.mktemp("guard-wheels")
    build_wheel(house, "toypkg", "1.0", FILES)
    build_wheel(house, "otherpkg", "2.0", OTHER)
    return house


def wheel(house: Path) -> Path:
    return house / "toypkg-1.0-py3-none-any.whl"


def env_for(tmp: Path, cache: Path) -> dict[str, str]:
    """guard's environment (and so the command's): the test's uv cache, no pip cache, checkpoints
    here, and a driftscan cache of its own (a checkpoint keeps its originals there: another test's
    must not be found)."""
    (tmp / "no-pip-cache").mkdir(exist_ok=True)
    return {**venvs.uv_env(cache), "PIP_CACHE_DIR": str(tmp / "no-pip-cache"),
            "DRIFTSCAN_CHECKPOINT_DIR": str(tmp / "checkpoints"), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "DRIFTSCAN_CACHE_DIR": str(tmp / "ds-cache")}


def uv_venv(tmp: Path, house: Path, cache: Path, *install: str) -> tuple[Path, Path]:
    venv = venvs.make_uv_venv(tmp / "v", cache)
    venvs.uv_install(venv, cache, "--no-index", "--find-links", str(house), *(install or ("toypkg", "otherpkg")))
    return venv, venvs.site_packages_of(venv)


def patch_venv(site: Path, dumps: Path) -> dict[str, bytes]:
    """A debug dump written by a rename-edited core.py, a deleted module, an added helper; the dump
    files themselves (written after the code, as running it would)."""
    replace_by_rename(site / "toypkg/core.py", "import torch\n\n\ndef f(x):\n"
                      f"    torch.save(x, '{dumps}/probe_1.pt')\n    return 1\n")
    replace_by_rename(site / "toypkg/fix.py", "def g(v):\n    return v if v == v else 0\n")
    (site / "toypkg/gone.py").unlink()
    (site / "toypkg/helper.py").write_text("H = 3\n")
    dumps.mkdir()
    (dumps / "probe_1.pt").write_bytes(b"\x80\x02tensor" * 100)
    return {"core": (site / "toypkg/core.py").read_bytes(), "fix": (site / "toypkg/fix.py").read_bytes()}


def guard(venv: Path, env: dict[str, str], *command: str, args: tuple[str, ...] = ()) -> tuple[int, dict, str]:
    """The real command line, JSON report: (exit status, report, the command's own output on stderr)."""
    proc = cli("guard", "--venv", str(venv), "--format", "json", *args, "--", *command, env=env)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def by_relpath(report: dict) -> dict[str, dict]:
    return {p["relpath"]: p for p in report["predictions"]}


def validate(report: dict) -> None:
    schema = GuardReport.model_json_schema()
    jsonschema.validators.validator_for(schema)(schema).validate(report)


def assert_all_held(report: dict) -> None:
    failed = [(p["relpath"], p["prediction"], p["outcome"], p["detail"]) for p in report["predictions"]
              if p["held"] is not True]
    assert failed == [], failed
    assert report["summary"]["failed"] == 0 and report["summary"]["held"] == len(report["predictions"])


def assert_outcomes_are_real(report: dict, site: Path, house: Path, edited: dict[str, bytes]) -> None:
    """guard's outcomes, checked against the files: what it calls wiped is pristine, what survived is there."""
    preds = by_relpath(report)
    assert (site / "toypkg/core.py").read_text() == CORE and preds["toypkg/core.py"]["outcome"] == "wiped"
    assert (site / "toypkg/gone.py").read_text() == FILES["toypkg/gone.py"]
    assert preds["toypkg/gone.py"]["outcome"] == "wiped"
    assert (site / "toypkg/helper.py").exists() and preds["toypkg/helper.py"]["outcome"] == "survived"


def test_guard_around_uv_force_reinstall_of_a_wheel_file(tmp_path, house):
    cache = tmp_path / "uv-cache"
    venv, site = uv_venv(tmp_path, house, cache)
    edited = patch_venv(site, tmp_path / "dumps")
    model = build_local_dir(tmp_path / "model", seed_files())  # hf download --local-dir, then edited
    sm120_edit(model)
    env = env_for(tmp_path, cache)
    command = [venvs.uv_bin(), "pip", "install", "--python", str(venv / "bin/python"), "--force-reinstall",
               "--no-deps", str(wheel(house))]
    code, report, stderr = guard(venv, env, *command, args=("--model-dir", str(model)))
    assert code == 0, (report, stderr)
    validate(report)
    assert "Installed 1 package" in stderr  # the command's own output, passed through (to stderr: JSON mode)
    assert report["ran"] and report["exit_code"] == 0 and report["refused"] == []
    assert report["command"]["tool"] == "uv pip" and report["command"]["reinstalls"] == ["toypkg"]
    assert report["command"]["source"] == str(wheel(house))
    preds = by_relpath(report)
    assert {k: v["prediction"] for k, v in preds.items() if k.startswith("toypkg/")} == {
        "toypkg/core.py": "WIPED", "toypkg/fix.py": "WIPED", "toypkg/gone.py": "WIPED", "toypkg/helper.py": "SURVIVES"}
    assert {k: (v["prediction"], v["outcome"]) for k, v in preds.items() if k.endswith("config.json")} == {
        "config.json": ("SURVIVES", "survived"), "hf_quant_config.json": ("SURVIVES", "survived")}
    dump = next(p for p in report["predictions"] if p["kind"] == "debug-artifacts")
    assert dump["prediction"] == "SURVIVES" and dump["outcome"] == "survived"
    assert_all_held(report)
    assert_outcomes_are_real(report, site, house, edited)
    # What is left: the dump (named), the added helper; the work comes back with the reapply line.
    assert [d["files"] for d in report["leftovers"]["dumps"]] == [[str(tmp_path / "dumps/probe_1.pt")]]
    assert str(site / "toypkg/helper.py") in report["leftovers"]["added"]
    cp = report["checkpoint"]["path"]
    assert report["checkpoint"]["partial"] is False and Path(cp).parent == tmp_path / "checkpoints"
    assert report["reapply"] == f"driftscan reapply {cp} --venv {venv} --yes"
    # The line works: the fix comes back, the torch.save does not.
    proc = cli(*report["reapply"].split()[1:], env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (site / "toypkg/fix.py").read_bytes() == edited["fix"]
    assert "torch.save" not in (site / "toypkg/core.py").read_text()


def test_guard_around_pip_force_reinstall_text_report(tmp_path_factory, tmp_path, house):
    venv = pip_venv(tmp_path_factory, "guard-pip")
    venvs.pip_install(venv, "--no-cache-dir", "--no-index", "--find-links", str(house), "toypkg", "otherpkg")
    site = venvs.site_packages_of(venv)
    edited = patch_venv(site, tmp_path / "dumps")
    env = env_for(tmp_path, tmp_path / "uv-cache")
    cp = tmp_path / "cp"
    # No --venv: the environment the command installs into (its interpreter's), said with why.
    proc = cli("guard", "--checkpoint", str(cp), "--", str(venv / "bin/python"), "-m", "pip",
               "install", "--no-cache-dir", "--force-reinstall", "--no-deps", str(wheel(house)),
               env={**env, "VIRTUAL_ENV": ""})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    why = "the command installs into it"
    assert proc.stderr.splitlines()[0] == f"driftscan guard: target: {venv} ({why})"  # first, before the command
    assert f"\nguard: {venv} ({why})\n" in out  # and the report's first line
    assert "Successfully installed toypkg-1.0" in out  # pip's output, passed through before the report
    assert out.index("Successfully installed") < out.index("Predictions (prediction → what happened):")
    assert "✓ WIPED    → wiped     [package] toypkg: toypkg/core.py (modified)" in out
    assert "✓ SURVIVES → survived  [environment] toypkg/helper.py (added)" in out
    assert "✗" not in out
    assert f"dumps: 1 file matching {tmp_path / 'dumps/probe_1.pt'}" in out
    assert f"$ driftscan reapply {cp} --venv {venv} --yes" in out
    assert "predictions: " in out or "prediction: " in out and " 0 failed, 0 not judged" in out
    assert (cp / "checkpoint.json").is_file()
    assert (site / "toypkg/core.py").read_text() == CORE and (site / "toypkg/helper.py").exists()


def test_guard_around_a_failing_command_keeps_its_status(tmp_path, house):
    cache = tmp_path / "uv-cache"
    venv, site = uv_venv(tmp_path, house, cache)
    patch_venv(site, tmp_path / "dumps")
    env = env_for(tmp_path, cache)
    # No such wheel at this version offline: uv fails before it touches the venv.
    code, report, stderr = guard(venv, env, venvs.uv_bin(), "pip", "install", "--python", str(venv / "bin/python"),
                                 "--reinstall", "--no-deps", "--no-index", "--find-links", str(house), "toypkg==9.9")
    assert report["ran"] is True and code == report["exit_code"] != 0, report  # uv's own status, kept
    validate(report)
    assert any("the command failed" in n for n in report["notes"])
    # nothing is called wrong; what happened is said for each drift
    assert all(p["held"] is None for p in report["predictions"])
    assert report["summary"]["failed"] == 0
    assert by_relpath(report)["toypkg/core.py"]["outcome"] == "survived"  # uv gave up: the edit is still there
    assert "torch.save" in (site / "toypkg/core.py").read_text()
    # No reapply line that writes after a failure: only its dry run, which writes nothing.
    cp = report["checkpoint"]["path"]
    assert report["reapply"] is None and report["reapply_dry_run"] == f"driftscan reapply {cp} --venv {venv}"
    before = snapshot_tree(venv)
    proc = cli(*report["reapply_dry_run"].split()[1:], env=env)
    assert proc.returncode == 0 and "dry run" in proc.stdout.lower(), proc.stdout + proc.stderr
    assert snapshot_tree(venv) == before


def test_failing_command_status_is_the_commands_own(tmp_path, house):
    cache = tmp_path / "uv-cache"
    venv, _ = uv_venv(tmp_path, house, cache, "otherpkg")
    env = env_for(tmp_path, cache)
    code, report, _ = guard(venv, env, sys.executable, "-c", "import sys; sys.exit(7)")
    assert (code, report["exit_code"], report["ran"]) == (7, 7, True)
    code, report, _ = guard(venv, env, str(tmp_path / "no-such-program"))
    assert (code, report["exit_code"]) == (127, 127) and any("not found" in n for n in report["notes"])


def test_unrecognised_command_predicts_may_survive(tmp_path, house):
    cache = tmp_path / "uv-cache"
    venv, site = uv_venv(tmp_path, house, cache)
    patch_venv(site, tmp_path / "dumps")
    env = env_for(tmp_path, cache)
    # A command guard does not know, which does delete a drifted file: MAY SURVIVE holds either way.
    code, report, _ = guard(venv, env, sys.executable, "-c",
                            f"import os; os.unlink({str(site / 'toypkg/helper.py')!r})")
    assert code == 0, report
    validate(report)
    assert report["command"]["recognised"] is False and report["command"]["tool"] == "other"
    assert {p["prediction"] for p in report["predictions"]} == {"MAY SURVIVE"}
    preds = by_relpath(report)
    assert preds["toypkg/helper.py"]["outcome"] == "wiped" and preds["toypkg/core.py"]["outcome"] == "survived"
    assert_all_held(report)


def test_refuses_to_bring_debug_code_back_through_the_edited_uv_cache(tmp_path, house):
    cache = tmp_path / "uv-cache"
    venv, site = uv_venv(tmp_path, house, cache)
    util = site / "toypkg/util.py"
    assert util.stat().st_nlink > 1  # hard-linked with uv's cache
    dumps = tmp_path / "dumps"
    with open(util, "a") as f:  # in place, through the link: the cache copy is edited too
        f.write(f"import torch\ntorch.save(A, '{dumps}/util.pt')\n")
    edited = util.read_bytes()
    env = env_for(tmp_path, cache)
    command = [venvs.uv_bin(), "pip", "install", "--python", str(venv / "bin/python"), "--reinstall", "--no-deps",
               "--no-index", "--find-links", str(house), "toypkg"]
    before = snapshot_tree(venv)
    code, report, stderr = guard(venv, env, *command)
    assert code == EXIT_REFUSED, report
    validate(report)
    assert report["ran"] is False and report["exit_code"] is None and report["checkpoint"] is None
    assert "Resolved" not in stderr  # uv never ran
    assert snapshot_tree(venv) == before  # nothing was touched, not even an inode
    [refusal] = report["refused"]
    assert "bring debug code back" in refusal["reason"] and "toypkg/util.py" in refusal["reason"]
    assert refusal["command"] == f"uv cache clean --cache-dir {cache} toypkg"
    assert by_relpath(report)["toypkg/util.py"]["prediction"] == "SURVIVES"

    # The refusal was right: run anyway (--force) and the edit is linked back from the cache.
    code, report, _ = guard(venv, env, *command, args=("--force",))
    assert report["ran"] and report["forced"] and report["exit_code"] == 0
    assert util.read_bytes() == edited
    assert by_relpath(report)["toypkg/util.py"]["outcome"] == "survived"
    assert_all_held(report)
    assert code == 0
    [left] = report["leftovers"]["uv_cache"]
    assert left["relpath"] == "toypkg/util.py" and left["command"] == f"uv cache clean --cache-dir {cache} toypkg"
    assert Path(left["edited_copy"]).read_bytes() == edited


def test_refuses_a_partial_checkpoint_and_says_how_to_complete_it(tmp_path_factory, tmp_path, house):
    venv = pip_venv(tmp_path_factory, "guard-partial")
    venvs.pip_install(venv, "--no-cache-dir", "--no-index", "--find-links", str(house), "toypkg")
    site = venvs.site_packages_of(venv)
    replace_by_rename(site / "toypkg/fix.py", "def g(v):\n    return v if v == v else 0\n")
    env = env_for(tmp_path, tmp_path / "empty-uv-cache")
    (tmp_path / "empty-uv-cache").mkdir()
    # The index is not reachable offline, and no original is anywhere: the checkpoint cannot hold the original.
    command = [str(venv / "bin/python"), "-m", "pip", "install", "--no-cache-dir", "--force-reinstall", "--no-deps",
               "toypkg==1.0"]
    code, report, _ = guard(venv, env, *command)
    assert code == EXIT_REFUSED and report["ran"] is False, report
    cp = report["checkpoint"]
    assert cp["partial"] is True and len(cp["without_original"]) == 1, cp
    assert cp["without_original"][0].endswith("/site-packages/toypkg/fix.py") and cp["at_risk"] == cp["without_original"]
    assert cp["complete_with"][0] == "pip download --no-deps --only-binary :all: --dest WHEELS toypkg==1.0"
    assert "partial" in report["refused"][0]["reason"]
    assert (site / "toypkg/fix.py").read_text() != FILES["toypkg/fix.py"]  # not run
    # With the wheels named, the checkpoint is whole and the reinstall runs (offline, from the same wheels).
    code, report, _ = guard(venv, env, *command[:-1], "--no-index", "--find-links", str(house), "toypkg==1.0",
                            args=("--wheels", str(house)))
    assert code == 0 and report["checkpoint"]["partial"] is False, report
    assert_all_held(report)


def test_uv_reinstall_from_a_wheel_file_wipes_an_in_place_edit_of_the_cache_copy(tmp_path, house):
    cache = tmp_path / "uv-cache"
    venv, site = uv_venv(tmp_path, house, cache)
    util = site / "toypkg/util.py"
    with open(util, "a") as f:  # in place through the hard link: a fix, no debug code (so no refusal)
        f.write("A = max(A, 2)\n")
    env = env_for(tmp_path, cache)
    code, report, _ = guard(venv, env, venvs.uv_bin(), "pip", "install", "--python", str(venv / "bin/python"),
                            "--force-reinstall", "--no-deps", str(wheel(house)))
    assert report["ran"] and report["exit_code"] == 0
    assert util.read_text() == FILES["toypkg/util.py"]  # the wheel file was unpacked afresh
    assert by_relpath(report)["toypkg/util.py"]["held"] is True
    assert code == 0


# ---------------------------------------------------------------------------- recognising commands

def test_recognise_install_commands(tmp_path):
    env = {"PATH": "", "HOME": str(tmp_path), "XDG_CONFIG_DIRS": str(tmp_path)}  # no pip.conf but this test's
    whl = tmp_path / "toy_pkg-1.0-py3-none-any.whl"
    cmd = recognise(["uv", "pip", "install", "--python", "/v/bin/python", "--force-reinstall", "--no-deps", str(whl)],
                    env={}, cwd=str(tmp_path))
    assert (cmd.tool, cmd.forced, cmd.no_deps, cmd.source, cmd.environment) == \
        (Tool.UV_PIP, True, True, str(whl), "/v")
    assert [(r.name, r.version) for r in cmd.requested] == [("toy-pkg", "1.0")]
    cmd = recognise(["/v/bin/python", "-m", "pip", "install", "-U", "--no-index", "-f", "./wh", "six==1.17.0"],
                    env={}, cwd=str(tmp_path))
    assert (cmd.tool, cmd.upgrade, cmd.forced, cmd.source, cmd.environment) == \
        (Tool.PIP, True, False, str(tmp_path / "wh"), "/v")
    assert cmd.change("six", "1.16.0").value == "reinstall" and cmd.change("six", "1.17.0").value == "maybe"
    assert recognise(["pip3", "install", "six"], env=env).source == "index"
    assert recognise(["pip", "install", "six"], env=env).change("six", "1.0").value == "none"
    cmd = recognise(["uv", "pip", "install", "--reinstall-package", "six", "six"], env={})
    assert cmd.change("six", "1.0").value == "reinstall"
    cmd = recognise(["uv", "sync", "--reinstall"], env={}, cwd=str(tmp_path))
    assert cmd.tool is Tool.UV_SYNC and cmd.reinstall_all and cmd.environment == str(tmp_path / ".venv")
    cmd = recognise(["micromamba", "install", "-p", "/opt/env", "--force-reinstall", "conda-forge::numpy=1.26"])
    assert (cmd.tool, cmd.forced, cmd.environment) == (Tool.CONDA, True, "/opt/env")
    assert [(r.name, r.version) for r in cmd.requested] == [("numpy", "1.26")]
    assert recognise(["pixi", "reinstall"]).reinstall_all
    for other in (["make", "install"], ["pip", "uninstall", "six"], ["uv", "run", "x"], ["FOO=1", "pip"]):
        assert not recognise(other, env={}).recognised


def test_requirements_files_are_read_for_names_only(tmp_path):
    marker = tmp_path / "ran"
    (tmp_path / "more.txt").write_text("otherpkg==2.0  # pinned\n")
    (tmp_path / "reqs.txt").write_text(
        f"--find-links ./wh\n--no-index\n-r more.txt\nsix[extra]>=1; python_version>'3'\n"
        f"./local/project\n-e git+https://example.invalid/x.git#egg=x\n"
        f"# $(touch {marker})\n`touch {marker}`\n")
    cmd = recognise(["pip", "install", "-r", str(tmp_path / "reqs.txt")], env={"PATH": "", "HOME": str(tmp_path)},
                    cwd=str(tmp_path))
    assert {(r.name, r.version) for r in cmd.requested} >= {("six", None), ("otherpkg", "2.0")}
    assert cmd.source == str(tmp_path / "wh") and "./local/project" in cmd.unnamed
    assert not marker.exists()
    # A requirements file that names one outside its own directory does not get it read.
    (tmp_path / "sub").mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("topsecret-token\n")
    (tmp_path / "sub" / "reqs.txt").write_text(f"-r {secret}\nsix\n")
    cmd = recognise(["pip", "install", "-r", str(tmp_path / "sub" / "reqs.txt")], env={"PATH": ""})
    assert [r.name for r in cmd.requested] == ["six"] and "topsecret" not in repr(cmd)
    loop = tmp_path / "loop.txt"
    loop.write_text("-r loop.txt\nsix\n")
    assert [r.name for r in recognise(["pip", "install", "-r", str(loop)], env={"PATH": ""}).requested] == ["six"]


@pytest.fixture(scope="module")
def newer(tmp_path_factory) -> Path:
    """toypkg 1.1 (core.py changed) and otherpkg 2.1, in a directory of their own."""
    house = tmp_path_factory.mktemp("guard-newer")
    build_wheel(house, "toypkg", "1.1", {**FILES, "toypkg/core.py": "def f():\n    return 11\n"})
    build_wheel(house, "otherpkg", "2.1", OTHER)
    return house


def test_upgrade_versions_and_expectations_before_and_after(tmp_path, house, newer):
    cache = tmp_path / "uv-cache"
    venv, site = uv_venv(tmp_path, house, cache)
    patch_venv(site, tmp_path / "dumps")
    expect = tmp_path / "checks.toml"
    expect.write_text('[[expect]]\nname = "the fix is in"\nfile = "{site_packages}/toypkg/fix.py"\n'
                      'contains = "v == v"\n\n'
                      '[[expect]]\nname = "util untouched"\nfile = "{site_packages}/toypkg/util.py"\n'
                      'unchanged = true\n')
    env = env_for(tmp_path, cache)
    code, report, _ = guard(venv, env, venvs.uv_bin(), "pip", "install", "--python", str(venv / "bin/python"),
                            "--no-deps", "--no-index", "--find-links", str(newer), "toypkg==1.1",
                            args=("--expect", str(expect)))
    assert code == 0, report
    validate(report)
    assert report["command"]["reinstalls"] == ["toypkg"] and report["command"]["forced"] is False
    assert report["versions"] == [{"name": "toypkg", "before": "1.0", "after": "1.1", "asked": True}]
    assert by_relpath(report)["toypkg/fix.py"]["prediction"] == "WIPED"
    assert (site / "toypkg/core.py").read_text() == "def f():\n    return 11\n"
    assert_all_held(report)
    fix, util = report["expectations"]
    assert (fix["before"], fix["predicted_after"], fix["after"], fix["held"]) == (True, False, False, True)
    assert (util["before"], util["after"], util["held"]) == (True, True, True)


def test_an_unnamed_version_move_and_the_default_target(tmp_path, house, newer):
    cache = tmp_path / "uv-cache"
    venv, site = uv_venv(tmp_path, house, cache)
    env = {**env_for(tmp_path, cache), "VIRTUAL_ENV": str(venv)}
    script = (f"import subprocess; subprocess.run([{venvs.uv_bin()!r}, 'pip', 'install', '--quiet', '--python', "
              f"{str(venv / 'bin/python')!r}, '--no-deps', '--no-index', '-f', {str(newer)!r}, 'otherpkg==2.1'], "
              "check=True)")
    proc = cli("guard", "--", sys.executable, "-c", script, env=env)  # no --venv: $VIRTUAL_ENV
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stderr.splitlines()[0] == f"driftscan guard: target: {venv} (VIRTUAL_ENV is set)"
    assert f"guard: {venv} (VIRTUAL_ENV is set)" in proc.stdout
    assert "otherpkg: 2.0 → 2.1   ! the command did not name it" in proc.stdout


def test_refuses_a_command_that_installs_into_another_environment(tmp_path, house):
    cache = tmp_path / "uv-cache"
    venv, site = uv_venv(tmp_path, house, cache, "otherpkg")
    other = venvs.make_uv_venv(tmp_path / "other", cache)
    env = env_for(tmp_path, cache)
    code, report, _ = guard(venv, env, venvs.uv_bin(), "pip", "install", "--python", str(other / "bin/python"),
                            "--no-index", "--find-links", str(house), "otherpkg")
    assert code == EXIT_REFUSED and report["ran"] is False, report
    assert f"installs into {other}" in report["refused"][0]["reason"]
    assert not list(venvs.site_packages_of(other).glob("otherpkg*"))


def test_an_upgrade_that_finds_nothing_newer_may_survive(tmp_path, house):
    cache = tmp_path / "uv-cache"
    venv, site = uv_venv(tmp_path, house, cache)
    patch_venv(site, tmp_path / "dumps")
    env = env_for(tmp_path, cache)
    code, report, _ = guard(venv, env, venvs.uv_bin(), "pip", "install", "--python", str(venv / "bin/python"),
                            "--upgrade", "--no-deps", "--no-index", "--find-links", str(house), "toypkg",
                            args=("--from", str(house)))
    assert code == 0, report
    assert report["command"]["source"] == str(house) and report["command"]["from_given"] is True
    preds = by_relpath(report)
    # -U reinstalls only when the source has a newer version: both outcomes are possible, so MAY SURVIVE
    assert preds["toypkg/core.py"]["prediction"] == "MAY SURVIVE" and "may find nothing" in preds["toypkg/core.py"]["reason"]
    assert preds["toypkg/core.py"]["outcome"] == "survived" and "torch.save" in (site / "toypkg/core.py").read_text()
    assert_all_held(report)
    assert report["versions"] == []


def test_a_command_that_removes_the_environment_still_gets_its_report(tmp_path, house):
    cache = tmp_path / "uv-cache"
    venv, site = uv_venv(tmp_path, house, cache)
    patch_venv(site, tmp_path / "dumps")
    env = env_for(tmp_path, cache)
    code, report, _ = guard(venv, env, sys.executable, "-c", f"import shutil; shutil.rmtree({str(venv)!r})")
    assert report["ran"] is True and report["exit_code"] == 0
    assert code == EXIT_REFUSED  # bit 2: nothing after the command could be checked
    assert any("could not run" in e for e in report["errors"])
    assert {p["outcome"] for p in report["predictions"]} == {"unchecked"}
    assert report["reapply"] and Path(report["checkpoint"]["path"], "checkpoint.json").is_file()


def test_drift_the_command_brings_in_is_reported_as_new(tmp_path, house):
    """uv links an edited cache copy into a venv that was clean (docs/installers.md: a reinstall can add drift)."""
    cache = tmp_path / "uv-cache"
    poisoned, site = uv_venv(tmp_path, house, cache, "toypkg")
    clean = venvs.make_uv_venv(tmp_path / "clean", cache)  # copies, taken while the cache is still clean
    venvs.uv_install(clean, cache, "--link-mode", "copy", "--no-index", "--find-links", str(house), "toypkg")
    with open(site / "toypkg/util.py", "a") as f:  # in place, through the hard link: the cache copy too
        f.write(f"import torch\ntorch.save(A, '{tmp_path}/u.pt')\n")
    env = env_for(tmp_path, cache)
    command = [venvs.uv_bin(), "pip", "install", "--python", str(clean / "bin/python"),
               "--reinstall", "--no-deps", "--no-index", "--find-links", str(house), "toypkg"]
    # The clean venv has no drift of its own, but the cache audit finds the edited archive, whose
    # module holds a torch.save: guard refuses, naming the clean line, and runs nothing.
    before = snapshot_tree(clean)
    code, report, _ = guard(clean, env, *command)
    assert code == EXIT_REFUSED and report["ran"] is False, report
    [refusal] = report["refused"]
    assert "edited archive of toypkg" in refusal["reason"] and "toypkg/util.py (DBG101)" in refusal["reason"]
    assert refusal["command"] == f"uv cache clean --cache-dir {cache} toypkg"
    assert snapshot_tree(clean) == before
    # The refusal was right: forced, uv links the edited copy in.
    code, report, _ = guard(clean, env, *command, args=("--force",))
    assert code == 0 and report["ran"] and report["forced"], report
    [archive] = report["predictions"]  # the cache's own drift: no reinstall touches the cache
    assert (archive["kind"], archive["prediction"], archive["held"]) == ("cache-modified", "SURVIVES", True)
    [new] = report["new_drifts"]
    assert (new["relpath"], new["kind"], new["distribution"]) == ("toypkg/util.py", "modified", "toypkg")
    assert new["findings"] >= 1
    assert [a["relpath"] for a in report["leftovers"]["uv_cache"]] == ["toypkg/util.py"]


def test_report_to_a_file_and_the_commands_output_to_the_terminal(tmp_path, house):
    cache = tmp_path / "uv-cache"
    venv, _ = uv_venv(tmp_path, house, cache, "otherpkg")
    out = tmp_path / "guard.json"
    proc = cli("guard", "--venv", str(venv), "--format", "json", "-o", str(out), "--", sys.executable, "-c",
               "print('from the command')", env=env_for(tmp_path, cache))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "from the command\n"  # with -o, the command's stdout stays on stdout
    report = json.loads(out.read_text())
    validate(report)
    assert report["ran"] and report["predictions"] == [] and f"report written to {out}" in proc.stderr


def _write_dumps(where: Path, count: int) -> list[Path]:
    where.mkdir(parents=True)
    files = [where / f"probe_{i}.pt" for i in range(count)]
    for f in files:
        f.write_bytes(b"\x80\x02tensor" * 50)
    return files


@pytest.mark.parametrize("how", ["edited-again", "cp-a-copy"])
def test_possible_dumps_still_on_disk_are_never_called_wiped(tmp_path_factory, tmp_path, house, how):
    """11 dumps of a torch.save the audit can only call *possible* (older than the code's last change:
    the module was edited again after writing them, or the venv is a ``cp -a`` copy whose code names
    the original venv's dump directory), with a driftscan cache that cannot be written (a read-only
    home), so no checkpoint's dump list names them after the command either. The reinstall removes
    the code; the dumps stay: guard says so and lists them as left on disk."""
    venv = pip_venv(tmp_path_factory, "guard-possible")
    venvs.pip_install(venv, "--no-cache-dir", "--no-index", "--find-links", str(house), "toypkg")
    dumps = venv / "dumps"
    writer = "import torch\n\n\ndef f(x, i):\n    torch.save(x, f'DIR/probe_{i}.pt')\n    return N\n"
    replace_by_rename(venvs.site_packages_of(venv) / "toypkg/core.py",
                      writer.replace("DIR", str(dumps)).replace("N", "1"))
    time.sleep(0.05)  # the ordering of the timestamps is what is tested, not a duration
    files = _write_dumps(dumps, 11)  # written by running the code, after it was written
    time.sleep(0.05)
    if how == "edited-again":
        replace_by_rename(venvs.site_packages_of(venv) / "toypkg/core.py",
                          writer.replace("DIR", str(dumps)).replace("N", "2"))
    else:
        copy = tmp_path / "copy"
        subprocess.run(["cp", "-a", str(venv), str(copy)], check=True)
        venv = copy  # its code still names the original venv's dumps
    (tmp_path / "not-a-dir").write_text("")
    env = {**env_for(tmp_path, tmp_path / "uv-cache"), "DRIFTSCAN_CACHE_DIR": str(tmp_path / "not-a-dir/cache")}
    code, report, stderr = guard(venv, env, str(venv / "bin/python"), "-m", "pip", "install", "--no-cache-dir",
                                 "--force-reinstall", "--no-deps", str(wheel(house)))
    assert code == 0, (report, stderr)
    validate(report)
    assert "torch.save" not in (venvs.site_packages_of(venv) / "toypkg/core.py").read_text()  # the code is gone
    assert all(f.is_file() for f in files)  # the dumps are not
    dump = next(p for p in report["predictions"] if p["kind"] == "possible-debug-artifacts")
    assert (dump["prediction"], dump["outcome"], dump["held"]) == ("SURVIVES", "survived", True), dump
    assert dump["detail"] == "all 11 dump files still there"
    assert_all_held(report)
    assert [(d["files"], d["possible"]) for d in report["leftovers"]["dumps"]] == [
        (sorted(str(f) for f in files), True)]


def test_a_missing_wheel_file_in_the_command_is_named_as_the_command_wrote_it(tmp_path, house):
    cache = tmp_path / "uv-cache"
    venv, site = uv_venv(tmp_path, house, cache)
    patch_venv(site, tmp_path / "dumps")
    env = env_for(tmp_path, cache)
    before = snapshot_tree(venv)
    proc = cli("guard", "--venv", str(venv), "--", str(venv / "bin/python"), "-m", "pip", "install",
               "--force-reinstall", "--no-deps", "./gone/toypkg-1.0-py3-none-any.whl", env=env, cwd=str(tmp_path))
    assert proc.returncode == EXIT_REFUSED and "Traceback" not in proc.stderr, proc.stderr
    assert ("the command's wheel file ./gone/toypkg-1.0-py3-none-any.whl: No such file or directory; nothing was "
            "run") in proc.stderr
    assert "--from" not in proc.stderr  # no --from was given
    assert snapshot_tree(venv) == before and not (tmp_path / "checkpoints").exists()


def test_a_wheel_whose_record_lies_about_a_member_is_not_trusted_to_wipe_it(tmp_path_factory, tmp_path, house):
    import zipfile

    liar = tmp_path / "liar" / wheel(house).name
    liar.parent.mkdir()
    with zipfile.ZipFile(wheel(house)) as zin, zipfile.ZipFile(liar, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():  # core.py's bytes change, the wheel's RECORD row for it does not
            zout.writestr(info, b"def f():\n    return 666\n" if info.filename == "toypkg/core.py" else zin.read(info))
    venv = pip_venv(tmp_path_factory, "guard-liar")
    venvs.pip_install(venv, "--no-cache-dir", "--no-index", "--find-links", str(house), "toypkg")
    site = venvs.site_packages_of(venv)
    replace_by_rename(site / "toypkg/core.py", "def f():\n    return 2  # my fix\n")
    code, report, stderr = guard(venv, env_for(tmp_path, tmp_path / "uv-cache"), str(venv / "bin/python"), "-m", "pip",
                                 "install", "--no-cache-dir", "--force-reinstall", "--no-deps", str(liar),
                                 args=("--wheels", str(house)))  # the honest original, for a whole checkpoint
    assert code == 0, (report, stderr)
    core = by_relpath(report)["toypkg/core.py"]
    assert core["prediction"] == "MAY SURVIVE" and "cannot be trusted" in core["reason"]
    # neither wiped nor the edit: the member's bytes, under a RECORD row that claims the original
    assert (core["outcome"], core["held"]) == ("changed", True), core
    assert (site / "toypkg/core.py").read_text() == "def f():\n    return 666\n"


# ---------------------------------------------------------------- a command is read as pip and uv read it

FIX_EDIT = "def g(v):\n    return v if v == v else 0\n"


@pytest.fixture(scope="module")
def partial(tmp_path_factory, house) -> tuple[Path, Path]:
    """A pip venv with toypkg's fix.py edited and its original nowhere: guard's checkpoint is partial.
    Every test here is refused, so the venv stays as it is for the next."""
    venv = pip_venv(tmp_path_factory, "guard-bypass")
    venvs.pip_install(venv, "--no-cache-dir", "--no-index", "--find-links", str(house), "toypkg")
    site = venvs.site_packages_of(venv)
    replace_by_rename(site / "toypkg/fix.py", FIX_EDIT)
    return venv, site


def refused_and_not_run(partial, tmp_path: Path, *command: str, more_env: dict[str, str] | None = None) -> dict:
    """guard refuses ``command`` on the partial checkpoint, and nothing under the venv changed."""
    venv, site = partial
    (tmp_path / "empty-uv-cache").mkdir(exist_ok=True)
    env = {**env_for(tmp_path, tmp_path / "empty-uv-cache"), **(more_env or {})}
    before = snapshot_tree(venv)
    code, report, _ = guard(venv, env, *command)
    assert code == EXIT_REFUSED and report["ran"] is False, report
    assert (site / "toypkg/fix.py").read_text() == FIX_EDIT  # the edit is still there
    assert snapshot_tree(venv) == before  # nothing installed, nothing rewritten
    return report


def pip_from_house(venv: Path, house: Path, *options: str) -> list[str]:
    """The venv's pip reinstalling toypkg 1.0 from ``house`` named by URL: pip finds the wheel there,
    guard takes no original from it (a URL is not a local directory), so the checkpoint stays partial."""
    return [str(venv / "bin/python"), "-m", "pip", "install", "--no-cache-dir", "--no-deps", "--no-index",
            "--find-links", house.as_uri(), *options, "toypkg==1.0"]


def assert_partial_refusal(report: dict) -> None:
    assert report["command"]["forced"] is True and report["command"]["reinstalls"] == ["toypkg"], report["command"]
    assert "the checkpoint is partial" in report["refused"][0]["reason"] and "toypkg/fix.py" in \
        report["refused"][0]["reason"]


def test_an_abbreviated_force_reinstall_is_refused(partial, tmp_path, house):
    report = refused_and_not_run(partial, tmp_path, *pip_from_house(partial[0], house, "--force-rein"))
    assert_partial_refusal(report)


def test_combined_short_flags_with_a_requirements_file_are_refused(partial, tmp_path, house):
    reqs = tmp_path / "reqs.txt"
    reqs.write_text("toypkg==1.0\n")
    command = [str(partial[0] / "bin/python"), "-m", "pip", "install", "--no-cache-dir", "--no-deps", "--no-index",
               "--find-links", house.as_uri(), "-Ir", str(reqs)]
    report = refused_and_not_run(partial, tmp_path, *command)
    assert_partial_refusal(report)
    assert report["command"]["requested"] == ["toypkg"]


def test_force_reinstall_in_the_venvs_pip_conf_is_refused(partial, tmp_path, house):
    conf = partial[0] / "pip.conf"
    conf.write_text("[install]\nforce-reinstall = true\n")
    try:
        report = refused_and_not_run(partial, tmp_path, *pip_from_house(partial[0], house))
    finally:
        conf.unlink()
    assert_partial_refusal(report)
    assert any(str(conf) in n for n in report["command"]["notes"]), report["command"]["notes"]


def test_pip_force_reinstall_in_the_environment_is_refused(partial, tmp_path, house):
    report = refused_and_not_run(partial, tmp_path, *pip_from_house(partial[0], house),
                                 more_env={"PIP_FORCE_REINSTALL": "1"})
    assert_partial_refusal(report)
    assert any("PIP_FORCE_REINSTALL" in n for n in report["command"]["notes"])


@pytest.mark.parametrize("line", ["../outside/{wheel}", "--find-links ../outside\ntoypkg==1.0"])
def test_a_wheel_outside_the_requirements_files_directory_is_not_an_original(partial, tmp_path, house, line):
    outside, project = tmp_path / "outside", tmp_path / "project"
    outside.mkdir()
    project.mkdir()
    (outside / wheel(house).name).write_bytes(wheel(house).read_bytes())
    (project / "reqs.txt").write_text(line.format(wheel=wheel(house).name) + "\n")
    command = [str(partial[0] / "bin/python"), "-m", "pip", "install", "--no-cache-dir", "--no-deps",
               "--force-reinstall", "-r", str(project / "reqs.txt")]
    report = refused_and_not_run(partial, tmp_path, *command)
    assert report["checkpoint"]["partial"] is True  # nothing outside was taken as the original
    named = outside / wheel(house).name if line.startswith("..") else outside
    assert f"unnamed requirement: {named}" in report["notes"], report["notes"]
    assert any("outside its directory" in n for n in report["command"]["notes"])
    assert "the checkpoint is partial" in report["refused"][0]["reason"]


def test_an_interpreter_uv_picks_only_when_it_runs_is_refused(tmp_path, house):
    cache = tmp_path / "uv-cache"
    venv, site = uv_venv(tmp_path, house, cache, "otherpkg")
    before = snapshot_tree(venv)
    code, report, _ = guard(venv, env_for(tmp_path, cache), venvs.uv_bin(), "pip", "install", "--python", "3",
                            "--reinstall", "--no-index", "--find-links", str(house), "otherpkg")
    assert code == EXIT_REFUSED and report["ran"] is False, report
    assert "cannot tell for certain which environment" in report["refused"][0]["reason"]
    assert "--python 3 is an interpreter request" in report["refused"][0]["reason"]
    assert "--python 3 is an interpreter request" in report["command"]["environment_unsure"]
    validate(report)
    assert snapshot_tree(venv) == before
    text = cli("guard", "--venv", str(venv), "--", venvs.uv_bin(), "pip", "install", "--python", "3", "--reinstall",
               "--no-index", "--find-links", str(house), "otherpkg", env=env_for(tmp_path, cache))
    assert text.returncode == EXIT_REFUSED
    assert "environment not certain: uv --python 3 is an interpreter request" in text.stdout, text.stdout


def test_a_command_whose_environment_is_known_says_environment_unsure_null(tmp_path, house):
    cache = tmp_path / "uv-cache"
    venv, _ = uv_venv(tmp_path, house, cache, "otherpkg")
    code, report, _ = guard(venv, env_for(tmp_path, cache), venvs.uv_bin(), "pip", "install", "--python",
                            str(venv / "bin/python"), "--no-index", "--find-links", str(house), "otherpkg")
    assert report["command"]["environment"] == str(venv) and report["command"]["environment_unsure"] is None, report
    assert report["ran"] is True and code == 0, report


def test_a_copied_venvs_pip_is_refused_for_the_venv_it_really_changes(tmp_path_factory, tmp_path, house):
    original = pip_venv(tmp_path_factory, "guard-cp-original")
    bundled = Path(__import__("ensurepip").__file__).parent / "_bundled"  # its pip, rewritten to name this venv
    venvs.pip_install(original, "--no-cache-dir", "--no-index", "--find-links", str(bundled), "--force-reinstall",
                      "--no-deps", "pip")
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(original), str(copy)], check=True)
    assert (copy / "bin/pip").read_text().splitlines()[0] == f"#!{original}/bin/python"  # the situation
    before = snapshot_tree(original)
    env = env_for(tmp_path, tmp_path / "uv-cache")
    code, report, _ = guard(copy, env, str(copy / "bin/pip"), "install", "--no-cache-dir", "--no-index",
                            "--find-links", str(house), "toypkg")
    assert code == EXIT_REFUSED and report["ran"] is False, report
    assert f"installs into {original}" in report["refused"][0]["reason"]
    assert f"{copy}/bin/python -m pip installs into {copy}" in report["refused"][0]["reason"]
    assert snapshot_tree(original) == before and not list(venvs.site_packages_of(copy).glob("toypkg*"))


def test_uv_directory_is_refused_for_the_venv_uv_really_changes(tmp_path, house):
    cache = tmp_path / "uv-cache"
    here, other = tmp_path / "here", tmp_path / "other"
    here_venv = venvs.make_uv_venv(here / ".venv", cache)
    other_venv = venvs.make_uv_venv(other / ".venv", cache)
    venvs.uv_install(other_venv, cache, "--no-index", "--find-links", str(house), "otherpkg")
    before = snapshot_tree(other_venv)
    proc = cli("guard", "--venv", str(here_venv), "--format", "json", "--", venvs.uv_bin(), "--directory", "../other",
               "pip", "install", "--reinstall", "--no-index", "--find-links", str(house), "otherpkg",
               env=env_for(tmp_path, cache), cwd=str(here))
    report = json.loads(proc.stdout)
    assert proc.returncode == EXIT_REFUSED and report["ran"] is False, report
    assert f"installs into {other_venv}" in report["refused"][0]["reason"]
    assert snapshot_tree(other_venv) == before


@pytest.mark.parametrize("where", ["variable", "config"])
def test_uv_pip_sources_from_uvs_variables_and_configuration(tmp_path, house, where):
    """UV_FIND_LINKS, or find-links / no-index in uv.toml: uv installs from that directory, and guard's
    source, its originals and its prediction follow it."""
    cache = tmp_path / "uv-cache"
    venv, site = uv_venv(tmp_path, house, cache, "toypkg")
    with open(site / "toypkg/core.py", "a") as f:  # in place: uv's cache archive shares the inode
        f.write("Y = 2\n")
    env = env_for(tmp_path, cache)
    work = tmp_path / "work"
    work.mkdir()
    if where == "variable":
        env["UV_FIND_LINKS"] = str(house)
        command = [venvs.uv_bin(), "pip", "install", "--python", str(venv / "bin/python"), "--no-index",
                   "--reinstall", "toypkg"]
    else:
        (work / "uv.toml").write_text(f'find-links = ["{os.path.relpath(house, work)}"]\nno-index = true\n')
        command = [venvs.uv_bin(), "pip", "install", "--python", str(venv / "bin/python"), "--reinstall", "toypkg"]
    proc = cli("guard", "--venv", str(venv), "--format", "json", "--", *command, env=env, cwd=str(work))
    report = json.loads(proc.stdout)
    assert report["command"]["source"] == str(house), report["command"]
    assert report["command"]["source_why"] == "--find-links with --no-index"
    assert report["ran"] is True and report["exit_code"] == 0, (report["refused"], proc.stderr)
    assert report["checkpoint"]["partial"] is False  # the original was found in that directory
    core = by_relpath(report)["toypkg/core.py"]
    # the same wheel file the archive was unpacked from: uv links the edited archive back
    assert (core["prediction"], core["outcome"], core["held"]) == ("SURVIVES", "survived", True), core
    assert "Y = 2" in (site / "toypkg/core.py").read_text()
    validate(report)
