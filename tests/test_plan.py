"""`driftscan plan` on one scenario holding every scope, checked line by line and against reality."""

from __future__ import annotations

import json
import os
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
    status = {os.path.relpath(i.path, site) if i.scope != "source" else i.relpath: i.status for i in result.items
              if i.kind != "cache-modified"}
    # uv's cache archive of six, edited through the link, is a drift of its own (outside the venv).
    assert [i.status for i in result.items if i.kind == "cache-modified"] == ["SURVIVES"]
    assert status == {
        "six.py": "SURVIVES",  # hard-linked with uv's cache, which has the edit too
        "click/core.py": "WIPED",
        "requests/help.py": "WIPED",
        "requests/debug_patch.py": "SURVIVES",
        "requests/__pycache__/ghost.cpython-311.pyc": "WIPED",  # uv empties the package's __pycache__
        "src/mypkg/util.py": "SURVIVES",
    }
    assert result.installer == "uv"
    commands = [s.command for s in result.steps if s.command]
    assert commands[0] == f"uv cache clean --cache-dir {cache} six"  # the cache the edit is in
    assert commands[1] == f"uv pip install --python {venv} --reinstall --no-deps six==1.17.0 click==8.1.8 requests==2.32.3"
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


def test_plan_predictions_match_the_real_reinstall(scenario, wheelhouse):
    venv, cache, site, project, expect = scenario
    result = plan(["six", "click", "requests"], venv=str(venv), uv_cache=str(cache))
    reinstall = next(s.command for s in result.steps if s.command and "--reinstall" in s.command)
    argv = shlex.split(reinstall)
    subprocess.run([venvs.uv_bin(), *argv[1:], *offline(wheelhouse)], check=True, capture_output=True,
                   env={**os.environ, **venvs.uv_env(cache)})
    after = plan(["six"], venv=str(venv), uv_cache=str(cache))
    remaining = {i.path for i in after.items}
    assert remaining == set(result.survives) | set(result.may_survive)
    assert not remaining & set(result.wiped)


def test_plan_cli_text_and_json(scenario):
    venv, cache, site, project, expect = scenario
    args = ["plan", "--reinstall", "six,click", "--reinstall", "requests", "--venv", str(venv),
            "--expect", str(expect), "--uv-cache", str(cache)]
    text = run_cli(*args)
    assert text.returncode == 1, text.stderr  # "click patch present" will not hold after the reinstall
    lines = text.stdout.splitlines()
    assert lines[0] == "Plan: reinstall six, click, requests with uv"
    assert any(line.strip().startswith("WIPED") and "click/core.py" in line for line in lines)
    assert any(line.strip().startswith("SURVIVES") and "six.py" in line for line in lines)
    assert f"       $ uv cache clean --cache-dir {cache} six" in lines
    assert lines[-1] == "3 wiped, 4 survive, 0 may survive"  # six.py and its edited cache archive among them
    data = json.loads(run_cli(*args, "--format", "json").stdout)
    assert set(data) >= {"reinstall", "wiped", "survives", "may_survive", "steps"}
    assert data["reinstall"] == ["six", "click", "requests"]
    assert len(data["wiped"]) == 3 and len(data["survives"]) == 4


def test_plan_unknown_distribution_is_a_clear_error(pristine_pip_venv):
    with pytest.raises(ConfigError, match="did you mean: six"):
        plan(["sx"], venv=str(pristine_pip_venv))
    proc = run_cli("plan", "--reinstall", "sx", "--venv", str(pristine_pip_venv))
    assert proc.returncode == 2 and proc.stderr.startswith("driftscan: error: not installed here: sx")


def test_plan_with_pip_override_predicts_the_cache_stays_poisoned(scenario):
    venv, cache, site, project, expect = scenario
    result = plan(["six"], venv=str(venv), installer="pip", uv_cache=str(cache))
    six = next(i for i in result.items if i.path.endswith("six.py"))
    assert six.status == "WIPED" and "cache" in six.reason
    assert result.steps[0].command == f"uv cache clean --cache-dir {cache} six"
    assert "pip rewrites six's files" in result.steps[0].step
