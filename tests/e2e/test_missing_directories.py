"""A deleted directory of many files is one drift; what it predicts is checked against the real
operations: pip's reinstall puts every file back, restore recreates each from the verified
wheel, and a checkpoint records each file (so reapply deletes each again)."""

from __future__ import annotations

import shutil

import pytest

from driftscan import api
from fixtures import venvs
from fixtures.wheels import build_wheel

pytestmark = pytest.mark.slow
FILES = {"bigpkg/__init__.py": "", **{f"bigpkg/kernels/k{i:03d}.py": f"K = {i}\n" for i in range(120)},
         **{f"bigpkg/data/d{i:03d}.json": "{}\n" for i in range(110)},
         **{f"bigpkg/data/sub/s{i}.json": "[]\n" for i in range(5)}}


@pytest.fixture
def installed(tmp_path):
    house = tmp_path / "house"
    build_wheel(house, "bigpkg", "1.0", FILES)
    venv = venvs.make_pip_venv(tmp_path / "v")
    venvs.pip_install(venv, "--no-index", "--find-links", str(house), "bigpkg==1.0")
    return venv, venvs.site_packages_of(venv), house


def _delete(site):
    shutil.rmtree(site / "bigpkg/kernels")
    for path in (site / "bigpkg/data").glob("*.json"):
        path.unlink()


def _grouped(venv, house):
    report = api.audit(venv=str(venv))
    return {(d.kind.value, d.relpath): d for d in report.drifts}


def test_a_reinstall_puts_a_deleted_directory_back_as_predicted(installed):
    venv, site, house = installed
    _delete(site)
    drifts = _grouped(venv, house)
    assert set(drifts) == {("missing-directory", "bigpkg/kernels"), ("missing-files", "bigpkg/data")}
    assert all(d.prediction.value == "wiped" and not d.survives_reinstall for d in drifts.values())
    venvs.pip_install(venv, "--no-index", "--find-links", str(house), "--force-reinstall", "--no-deps", "bigpkg==1.0")
    assert api.audit(venv=str(venv)).drifts == []


def test_restore_recreates_every_file_of_a_grouped_drift_and_a_checkpoint_records_each(installed, tmp_path):
    venv, site, house = installed
    _delete(site)
    dry = api.restore(venv=str(venv), wheels=[str(house)])
    assert len(dry.actions) == 230 and dry.remaining == []
    written = api.checkpoint(str(tmp_path / "cp"), venv=str(venv), wheels=[str(house)])
    missing = [f.path for f in written.index.files if f.kind == "missing"]
    assert sorted(p.split("/site-packages/", 1)[1] for p in missing) == sorted(f for f in FILES if f != "bigpkg/__init__.py" and "/sub/" not in f)
    done = api.restore(venv=str(venv), wheels=[str(house)], yes=True, checkpoint_path=str(tmp_path / "cp2"))
    assert len(done.actions) == 230 and not done.failed
    assert api.audit(venv=str(venv)).drifts == []
    assert (site / "bigpkg/kernels/k007.py").read_text() == "K = 7\n"


def test_rows_under_a_link_out_of_the_environment_are_never_taken_file_by_file(installed, tmp_path):
    """A grouped drift's rows below a directory that a symlink leads out of the environment are
    not named for restore, whatever is (not) there."""
    venv, site, house = installed
    for path in (site / "bigpkg/data").glob("*.json"):
        path.unlink()
    shutil.rmtree(site / "bigpkg/data/sub")
    outside = tmp_path / "outside"
    outside.mkdir()
    (site / "bigpkg/data/sub").symlink_to(outside)  # below the grouped directory, leading out
    plan = api.restore(venv=str(venv), wheels=[str(house)])
    assert len(plan.actions) == 110 and not any("/sub/" in a.relpath for a in plan.actions)
    assert list(outside.iterdir()) == []
