"""`plan` with originals at hand: restore offered as the faster way, expectations judged on the
original's content (a real wheel built here, a real pip install)."""

from __future__ import annotations

import json
import shlex

import pytest

from driftscan.api import pristine_options, plan
from driftscan.discover import resolve_target
from fixtures import venvs
from fixtures.harness import run_cli
from fixtures.wheels import build_wheel

MODULE = "def forward(x):\n    return x\n" + "".join(f"\n\ndef f{i}(a):\n    return a + {i}\n" for i in range(30))


@pytest.fixture(scope="module")
def patched(tmp_path_factory):
    root = tmp_path_factory.mktemp("plan-restore")
    house = root / "wheels"
    build_wheel(house, "planpkg", "1.0", {"planpkg/__init__.py": "", "planpkg/core.py": MODULE})
    venv = venvs.make_pip_venv(root / "venv")
    venvs.pip_install(venv, "--no-index", "--find-links", str(house), "planpkg")
    core = venvs.site_packages_of(venv) / "planpkg/core.py"
    core.write_text(MODULE.replace("    return x\n", "    import torch\n    torch.save(x, '/tmp/x.pt')\n"
                                   "    return x\n", 1))
    expect = root / "expect.toml"
    expect.write_text(f'[[expect]]\nname = "no torch.save"\nfile = "{core}"\nlacks = "torch\\\\.save"\n')
    return venv, house, expect


def test_plan_offers_restore_when_every_drift_has_an_original(patched):
    venv, house, expect = patched
    target = resolve_target(str(venv))
    result = plan(["planpkg"], str(venv), expect=str(expect), pristine=pristine_options(target, [str(house)]))
    faster = [s for s in result.steps if s.command and s.command.startswith("driftscan restore")]
    assert len(faster) == 1, [s.step for s in result.steps]
    assert faster[0].command == (f"driftscan restore --dist planpkg --venv {shlex.quote(str(venv))} "
                                 f"--wheels {shlex.quote(str(house))} --yes")
    assert "1 drifted file(s)" in faster[0].step and "wheels" in faster[0].step
    # The original is at hand, so what holds after the reinstall is known, not "check again".
    (exp,) = result.expectations
    assert (exp.holds_now, exp.holds_after) == (False, True), exp.reason


def test_plan_without_an_original_offers_no_restore(patched):
    venv, _, expect = patched
    result = plan(["planpkg"], str(venv), expect=str(expect))
    assert not any(s.command and s.command.startswith("driftscan restore") for s in result.steps)
    (exp,) = result.expectations
    assert exp.holds_after is None


def test_plan_cli_takes_wheels(patched):
    venv, house, _ = patched
    proc = run_cli("plan", "--reinstall", "planpkg", "--venv", str(venv), "--wheels", str(house), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    steps = json.loads(proc.stdout)["steps"]
    assert any((s["command"] or "").startswith("driftscan restore --dist planpkg") for s in steps)
    audit = json.loads(proc.stdout)["audit"]
    assert [p["source"] for p in audit["pristine"]] == ["wheels"]
