"""`driftscan plan` on one scenario holding every scope, checked line by line and against reality."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess

import pytest

from driftscan import ConfigError
from driftscan.api import plan
from fixtures import venvs
from fixtures.demo import make_project
from fixtures.harness import offline, replace_by_rename, run_cli


@pytest.fixture
def scenario(tmp_path, wheelhouse):
    cache = tmp_path / "uv-cache"
    venv = venvs.make_uv_venv(tmp_path / "venv", cache)
    project = make_project(tmp_path / "proj")
    venvs.uv_install(venv, cache, *offline(wheelhouse), "six==1.17.0", "click==8.1.8", "requests==2.32.3",
                     "-e", str(project))
    site = venvs.site_packages_of(venv)
    with open(site / "six.py", "a") as f:  # in place: poisons uv's cache
        f.write("_nomla_debug = 0\n")
    replace_by_rename(site / "click/core.py", (site / "click/core.py").read_text() + "# sed -i style patch\n")
    (site / "requests/help.py").unlink()
    (site / "requests/debug_patch.py").write_text("PATCHED = True\n")
    (site / "requests/__pycache__").mkdir(exist_ok=True)
    (site / "requests/__pycache__/ghost.cpython-311.pyc").write_bytes(b"ghost")
    (project / "src/mypkg/util.py").write_text("HELPER = 2  # local experiment\n")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"quantization_config": {"quant_method": "fp8"}}))
    expect = tmp_path / "expect.toml"
    expect.write_text(f"""
[[expect]]
name = "SM120: no kv_cache_scheme"
file = "{model}/config.json"
json_lacks = "/quantization_config/kv_cache_scheme"

[[expect]]
name = "click patch present"
file = "{{site_packages}}/click/core.py"
contains = "sed -i style patch"

[[expect]]
name = "requests untouched"
file = "{{site_packages}}/requests/__init__.py"
unchanged = true
""")
    return venv, cache, site, project, expect


def test_plan_marks_every_drift_and_lists_the_steps(scenario):
    venv, cache, site, project, expect = scenario
    result = plan(["six", "click", "requests"], venv=str(venv), expect=str(expect), uv_cache=str(cache))
    status = {os.path.relpath(i.path, site) if i.scope != "source" else i.relpath: (i.status, i.status_without_steps)
              for i in result.items if i.kind != "cache-modified"}
    # uv's cache archive of six, edited through the link, is a drift of its own (outside the venv):
    # the reinstall alone leaves it; the plan's uv cache clean step removes it.
    archive = [i for i in result.items if i.kind == "cache-modified"]
    assert [(i.status, i.status_without_steps) for i in archive] == [("WIPED", "SURVIVES")]
    assert archive[0].reason.startswith(f"step 2 (`uv cache clean --cache-dir {cache} six`) removes"), archive[0].reason
    assert status == {
        # hard-linked with uv's cache, which has the edit too: the same-source reinstall alone links it
        # back; the plan cleans the cache first, so after its steps it is wiped
        "six.py": ("WIPED", "MAY SURVIVE"),
        "click/core.py": ("WIPED", "WIPED"),
        "requests/help.py": ("WIPED", "WIPED"),
        "requests/debug_patch.py": ("SURVIVES", "SURVIVES"),
        "requests/__pycache__/ghost.cpython-311.pyc": ("WIPED", "WIPED"),  # uv empties the package's __pycache__
        "src/mypkg/util.py": ("SURVIVES", "SURVIVES"),
    }
    assert result.installer == "uv"
    six = next(i for i in result.items if i.path.endswith("six.py"))
    assert six.reason.startswith(f"after step 2 (`uv cache clean --cache-dir {cache} six`)"), six.reason
    commands = [s.command for s in result.steps if s.command]
    # something the reinstall wipes is in no checkpoint: the checkpoint comes first
    assert commands[0].startswith(f"driftscan checkpoint --venv {venv} -o "), commands[0]
    assert commands[1] == f"uv cache clean --cache-dir {cache} six"  # the cache the edit is in
    assert commands[2] == f"uv pip install --python {venv} --reinstall --no-deps six==1.17.0 click==8.1.8 requests==2.32.3"
    assert [(s.distribution, s.kind, s.told_by) for s in result.sources] == [
        ("six", "index", ["INSTALLER", "direct_url.json", "uv-cache"]),
        ("click", "index", ["INSTALLER", "direct_url.json"]), ("requests", "index", ["INSTALLER", "direct_url.json"])]
    assert result.estimate.installer == "uv" and "after the cache clean" in result.estimate.basis
    expectations = {e.name: (e.holds_now, e.holds_after) for e in result.expectations}
    assert expectations == {
        "SM120: no kv_cache_scheme": (True, True),  # a model-directory file: survives as it is
        "click patch present": (True, False),  # pristine copy found in uv's cache: the patch is undone
        "requests untouched": (True, True),
    }
    texts = [s.step for s in result.steps]
    assert any(t.startswith("skip 'SM120: no kv_cache_scheme'") for t in texts)
    assert any(t.startswith("re-apply 'click patch present'") for t in texts)
    assert sorted(result.wiped) == sorted(i.path for i in result.items if i.status == "WIPED")


@pytest.mark.parametrize("with_steps", [False, True], ids=["reinstall-alone", "plan-steps"])
def test_plan_predictions_match_the_real_reinstall(scenario, wheelhouse, with_steps):
    venv, cache, site, project, expect = scenario
    result = plan(["six", "click", "requests"], venv=str(venv), uv_cache=str(cache))
    env = {**os.environ, **venvs.uv_env(cache)}
    for step in result.steps:
        command = step.command or ""
        if command.startswith("uv cache clean") and with_steps:
            subprocess.run([venvs.uv_bin(), *shlex.split(command)[1:]], check=True, capture_output=True, env=env)
        if "--reinstall" in command:
            subprocess.run([venvs.uv_bin(), *shlex.split(command)[1:], *offline(wheelhouse)], check=True,
                           capture_output=True, env=env)
    after = plan(["six"], venv=str(venv), uv_cache=str(cache))
    remaining = {i.path for i in after.items}
    predicted = {i.path: i.status if with_steps else i.status_without_steps for i in result.items}
    reasons = {i.path: i.reason_without_steps or i.reason for i in result.items}
    assert {p for p, s in predicted.items() if s == "SURVIVES"} <= remaining
    assert not remaining & {p for p, s in predicted.items() if s == "WIPED"}
    # Installed from a find-links directory, reinstalled from "the index": whether that is the same
    # source is not known, so the in-place edit through uv's link may survive, with both cases said.
    unsure = {p for p, s in predicted.items() if s == "MAY SURVIVE"}
    assert {os.path.relpath(p, site) for p in unsure} == (set() if with_steps else {"six.py"})
    assert all("survives" in reasons[p] and "wiped" in reasons[p] for p in unsure)


def test_plan_cli_text_and_json(scenario):
    venv, cache, site, project, expect = scenario
    args = ["plan", "--reinstall", "six,click", "--reinstall", "requests", "--venv", str(venv),
            "--expect", str(expect), "--uv-cache", str(cache)]
    text = run_cli(*args)
    assert text.returncode == 1, text.stderr  # "click patch present" will not hold after the reinstall
    lines = text.stdout.splitlines()
    assert lines[0] == "Plan: reinstall six, click, requests with uv"
    assert lines[1].startswith("  from: six: index (told by INSTALLER, direct_url.json, uv-cache")
    assert any(line.strip().startswith("WIPED") and "click/core.py" in line for line in lines)
    assert any(line.strip().startswith("WIPED") and "six.py" in line for line in lines)  # after the cache clean
    assert f"       $ uv cache clean --cache-dir {cache} six" in lines
    assert lines[-1] == "5 wiped, 2 survive, 0 may survive"  # six.py and its edited cache archive among them
    data = json.loads(run_cli(*args, "--format", "json").stdout)
    assert set(data) >= {"reinstall", "wiped", "survives", "may_survive", "steps", "sources", "estimate"}
    assert data["reinstall"] == ["six", "click", "requests"]
    assert len(data["wiped"]) == 5 and len(data["survives"]) == 2
    assert data["source"] is None  # no --from: each distribution's own source


def test_plan_unknown_distribution_is_a_clear_error(pristine_pip_venv):
    with pytest.raises(ConfigError, match="did you mean: six"):
        plan(["sx"], venv=str(pristine_pip_venv))
    proc = run_cli("plan", "--reinstall", "sx", "--venv", str(pristine_pip_venv))
    assert proc.returncode == 2 and proc.stderr.startswith("driftscan: error: not installed here: sx")


def test_plan_with_pip_override_on_a_venv_without_pip_runs_uv(scenario):
    """``uv venv`` makes a venv with no pip: ``V/bin/python -m pip`` cannot run there, so the plan
    is for uv (``uv pip install --python V/bin/python``) and says why."""
    venv, cache, site, project, expect = scenario
    assert not list(site.glob("pip-*.dist-info"))
    result = plan(["six"], venv=str(venv), installer="pip", uv_cache=str(cache))
    assert result.installer == "uv" and "has no pip installed" in result.installer_reason
    reinstall = next(s.command for s in result.steps if s.command and "--reinstall" in s.command)
    assert reinstall == f"uv pip install --python {venv}/bin/python --reinstall --no-deps six==1.17.0"
    assert not any("-m pip" in (s.command or "") for s in result.steps)
    assert not any("-m pip" in d.remedy for d in plan(["six"], venv=str(venv), installer="pip").audit.drifts)


def test_plan_with_pip_override_predicts_the_cache_stays_poisoned(scenario, wheelhouse):
    venv, cache, site, project, expect = scenario
    import ensurepip

    bundled = os.path.join(os.path.dirname(ensurepip.__file__), "_bundled")
    venvs.uv_install(venv, cache, "--no-index", "--find-links", bundled, "pip")  # now pip can run in it
    result = plan(["six"], venv=str(venv), installer="pip", uv_cache=str(cache))
    six = next(i for i in result.items if i.path.endswith("six.py"))
    assert result.installer == "pip" and result.installer_reason is None
    assert six.status == "WIPED" and "cache" in six.reason
    clean = next(s for s in result.steps if (s.command or "").startswith("uv cache clean"))
    assert clean.command == f"uv cache clean --cache-dir {cache} six"
    assert "pip rewrites six's files" in clean.step
    assert result.estimate.installer == "pip"


def test_plan_restore_alternative_counts_originals_file_by_file(scenario):
    """uv's cache holds verified originals of click's and requests' files, but six's archive carries
    the in-place edit: the plan says 2 of 3 and how to get the third, and offers no restore."""
    venv, cache, site, project, expect = scenario
    result = plan(["six", "click", "requests"], venv=str(venv), uv_cache=str(cache))
    assert not any((s.command or "").startswith("driftscan restore") for s in result.steps)
    (step,) = [s for s in result.steps if "restore cannot replace the reinstall" in s.step]
    assert "2 of 3 drifted files have a verified original, 1 have none (e.g. six.py, six 1.17.0)" in step.step
    assert "--wheels DIR" in step.step and "--fetch" in step.step
    assert step.command == "pip download --no-deps --only-binary :all: --dest WHEELS_DIR six==1.17.0"


def test_plan_asks_for_a_checkpoint_only_for_content_no_checkpoint_holds(scenario, tmp_path):
    from driftscan.api import checkpoint

    venv, cache, site, project, expect = scenario
    first = plan(["click"], venv=str(venv), uv_cache=str(cache))
    assert first.steps[0].command.startswith(f"driftscan checkpoint --venv {venv} -o ")
    assert "wipes 1 drifted file whose" in first.steps[0].step and "click/core.py" in first.steps[0].step
    taken = tmp_path / "cp"
    checkpoint(str(taken), venv=str(venv), uv_cache=str(cache))
    held = plan(["click"], venv=str(venv), uv_cache=str(cache), checkpoint=str(taken))
    assert not any((s.command or "").startswith("driftscan checkpoint") for s in held.steps)
    # Edited again after the checkpoint: the checkpoint no longer holds what the reinstall destroys.
    replace_by_rename(site / "click/core.py", (site / "click/core.py").read_text() + "# second edit\n")
    again = plan(["click"], venv=str(venv), uv_cache=str(cache), checkpoint=str(taken))
    assert again.steps[0].command.startswith("driftscan checkpoint")
    assert "whose content the checkpoint given does not hold" in again.steps[0].step


def test_plan_from_bad_values_is_a_clear_error(scenario, wheelhouse):
    venv, cache, site, project, expect = scenario
    missing = run_cli("plan", "--reinstall", "six", "--venv", str(venv), "--from", str(venv / "nope.whl"))
    assert missing.returncode == 2
    assert missing.stderr.startswith(f"driftscan: error: --from {venv / 'nope.whl'}: No such file or directory")
    other = next(wheelhouse.glob("click-*.whl"))
    wrong = run_cli("plan", "--reinstall", "six", "--venv", str(venv), "--from", str(other))
    assert wrong.returncode == 2 and "a wheel of none of the distributions to reinstall (six)" in wrong.stderr
    not_wheel = run_cli("plan", "--reinstall", "six", "--venv", str(venv), "--from", str(expect))
    assert not_wheel.returncode == 2 and "neither a .whl file nor a directory" in not_wheel.stderr
    assert "Traceback" not in missing.stderr + wrong.stderr + not_wheel.stderr


def test_plan_from_a_wheel_file_predicts_the_fresh_unpack_and_says_how_it_was_told(scenario, wheelhouse):
    venv, cache, site, project, expect = scenario
    wheel = next(wheelhouse.glob("six-1.17.0-*.whl"))
    result = plan(["six"], venv=str(venv), uv_cache=str(cache), source=str(wheel))
    six = next(i for i in result.items if i.path.endswith("six.py"))
    assert (six.status, six.status_without_steps) == ("WIPED", "WIPED")
    assert f"a reinstall from the wheel file {wheel} uses another cache entry" in six.reason
    assert result.source.kind == "wheel" and result.source.told_by == ["--from"]
    assert result.source.path == str(wheel)
    # It is the very wheel uv installed six from (through the find-links directory): uv_cache.json
    # says so, and still the reinstall from the file unpacks afresh (another cache entry).
    assert result.sources[0].told_by == ["--from", "uv_cache.json"]
    assert "is the very file uv installed it from" in result.sources[0].detail
    commands = [s.command for s in result.steps if s.command]
    reinstall = f"uv pip install --python {venv} --reinstall --no-deps {wheel}"
    assert reinstall in commands
    # The edited archive would stay in uv's cache: the plan cleans it, in the order the steps run (first),
    # and every step a reason names comes before the reinstall it says it prepares.
    clean = commands.index(f"uv cache clean --cache-dir {cache} six")
    assert clean < commands.index(reinstall)
    numbered = [s.command for s in result.steps]
    for item in result.items:
        for n in re.findall(r"step (\d+) \(`", item.reason):
            assert int(n) - 1 < numbered.index(reinstall), item.reason
    assert "uv unpacking the wheel" in result.estimate.basis


def test_plan_from_a_source_that_is_no_reinstall_says_so(scenario, wheelhouse, tmp_path):
    venv, cache, site, project, expect = scenario
    empty = tmp_path / "no-wheels"
    empty.mkdir()
    result = plan(["six"], venv=str(venv), uv_cache=str(cache), source=str(empty))
    assert any(s.step.startswith(f"note: {empty} holds no wheel of six 1.17.0: the reinstall below fails")
               for s in result.steps)
    other = tmp_path / "six-1.16.0-py2.py3-none-any.whl"
    other.write_bytes(next(wheelhouse.glob("six-1.17.0-*.whl")).read_bytes())
    result = plan(["six"], venv=str(venv), uv_cache=str(cache), source=str(other))
    assert any("is version 1.16.0, and six 1.17.0 is installed" in s.step for s in result.steps)
    assert result.steps[0].command.startswith("driftscan checkpoint")  # still the first step


def _lying_wheel(honest, dest, member: str, content: bytes):
    """A copy of ``honest`` whose ``member`` holds ``content`` while its RECORD still gives the
    honest member's hash and size."""
    import zipfile

    dest.mkdir(parents=True, exist_ok=True)
    liar = dest / honest.name
    with zipfile.ZipFile(honest) as zin, zipfile.ZipFile(liar, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(info, content if info.filename == member else zin.read(info))
    return liar


def test_plan_from_a_wheel_whose_record_lies_about_a_member_does_not_predict_wiped(tmp_path_factory, tmp_path):
    """The --from wheel's core.py is not what its own RECORD says: pip installs the member's bytes
    and keeps the wheel's row in the installed RECORD. plan checks the member against that row
    first and says the wheel cannot be trusted for that file; an honest member keeps its WIPED."""
    from fixtures.upgrades import pip_venv
    from fixtures.wheels import build_wheel

    files = {"toypkg/__init__.py": "X = 1\n", "toypkg/core.py": "def f():\n    return 1\n",
             "toypkg/fix.py": "def g():\n    return 1\n"}
    honest = build_wheel(tmp_path / "house", "toypkg", "1.0", files)
    liar = _lying_wheel(honest, tmp_path / "liar", "toypkg/core.py", b"def f():\n    return 666\n")
    venv = pip_venv(tmp_path_factory, "plan-liar")
    venvs.pip_install(venv, "--no-cache-dir", "--no-index", "--find-links", str(tmp_path / "house"), "toypkg")
    site = venvs.site_packages_of(venv)
    replace_by_rename(site / "toypkg/core.py", "def f():\n    return 2  # my fix\n")
    replace_by_rename(site / "toypkg/fix.py", "def g():\n    return 2  # my other fix\n")
    result = plan(["toypkg"], venv=str(venv), source=str(liar))
    items = {i.relpath: i for i in result.items}
    core = items["toypkg/core.py"]
    assert core.status == "MAY SURVIVE" and core.status_without_steps == "MAY SURVIVE"
    assert core.reason.startswith("the --from wheel cannot be trusted for this file: its member toypkg/core.py does "
                                  "not match the wheel's own RECORD")
    assert items["toypkg/fix.py"].status == "WIPED", "a member that matches the wheel's RECORD is trusted"
    steps = [s.step for s in result.steps]
    assert any(s.startswith(f"note: the --from wheel {liar} does not match its own RECORD for 1 drifted file "
                            "(toypkg/core.py)") for s in steps), steps
    assert any(s.startswith("checkpoint first: the reinstall wipes or overwrites 2 drifted files") for s in steps)
    # What the reinstall really does: the member's bytes, neither the original nor the edit, under
    # an installed RECORD row that claims the original.
    venvs.pip_install(venv, "--no-cache-dir", "--force-reinstall", "--no-deps", str(liar))
    assert (site / "toypkg/core.py").read_text() == "def f():\n    return 666\n"
    assert (site / "toypkg/fix.py").read_text() == files["toypkg/fix.py"]
