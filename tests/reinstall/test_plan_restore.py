"""`plan` with originals at hand: restore offered as the faster way, expectations judged on the
original's content (a real wheel built here, a real pip install)."""

from __future__ import annotations

import json
import shlex

import pytest

from driftscan.api import plan
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
    result = plan(["planpkg"], str(venv), expect=str(expect), wheels=[str(house)])
    faster = [s for s in result.steps if s.command and s.command.startswith("driftscan restore")]
    assert len(faster) == 1, [s.step for s in result.steps]
    assert faster[0].command == (f"driftscan restore --dist planpkg --venv {shlex.quote(str(venv))} "
                                 f"--wheels {shlex.quote(str(house))} --yes")
    assert "1 drifted file " in faster[0].step and "wheels" in faster[0].step
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


def test_plan_from_a_wheel_of_another_version_offers_no_restore(patched, tmp_path):
    """Restore puts the installed version back: no alternative to installing another one. The
    estimate counts the given wheel's files, not the installed version's."""
    venv, house, _ = patched
    big = {"planpkg/__init__.py": "", "planpkg/core.py": MODULE, "planpkg/weights.bin": "0" * 4_000_000,
           **{f"planpkg/extra{i}.py": "X = 1\n" for i in range(20)}}
    newer = build_wheel(tmp_path / "newer", "planpkg", "2.0", big)
    same = plan(["planpkg"], str(venv), wheels=[str(house)], source=str(house / "planpkg-1.0-py3-none-any.whl"))
    assert any(s.command and s.command.startswith("driftscan restore") for s in same.steps)
    result = plan(["planpkg"], str(venv), wheels=[str(house)], source=str(newer))
    assert not any(s.command and s.command.startswith("driftscan restore") for s in result.steps)
    (why,) = [s.step for s in result.steps if s.step.startswith("no faster alternative")]
    assert "installs planpkg 2.0" in why and "planpkg 1.0" in why
    import zipfile

    assert result.estimate.files == len(zipfile.ZipFile(newer).namelist()) and result.estimate.bytes > 4_000_000
    assert "planpkg 2.0: the --from wheel's files" in result.estimate.basis
    assert same.estimate.bytes < 1_000_000


def test_one_file_is_not_files():
    from driftscan.reinstall.plan import files_count
    from driftscan.render.text import _n

    assert files_count(1) == "1 file" and files_count(2) == "2 files" and _n(1, "file") == "1 file"
