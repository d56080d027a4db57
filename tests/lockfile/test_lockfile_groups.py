"""Dependency groups of pdm.lock and poetry.lock told apart: the locks in data/ were written by real
pdm and poetry (see their first lines); a package only a non-default group brings is optional
unless that group is asked for (``--lock-group``), and poetry's marker per group is evaluated for
the groups selected."""

from __future__ import annotations

import platform
import shutil
import sys
from pathlib import Path

import pytest

import driftscan.lockfile.memo as memo
from driftscan.lockfile.markers import marker_environment, marker_holds
from driftscan.lockfile.model import LockError, LockFormat
from driftscan.lockfile.read import read_lock
from driftscan.lockfile.select import select
from fixtures.harness import run_cli, settle

DATA = Path(__file__).parent / "data"
ENV = marker_environment(platform.python_version())


def grouped(path: Path) -> dict[str, tuple[str, ...]]:
    return {p.name: p.groups for p in read_lock(str(path)).packages}


def test_real_pdm_lock_names_each_packages_groups():
    lock = read_lock(str(DATA / "pdm.lock"))
    assert lock.format is LockFormat.PDM
    assert grouped(DATA / "pdm.lock") == {"six": ("default", "dev"), "idna": ("dev",), "jmespath": ("aws",)}
    assert lock.default_groups == ("default",)
    assert set(lock.dependency_groups) == {"default", "dev", "aws"}
    assert not any("told apart" in note for note in lock.notes)


def test_real_poetry_lock_names_groups_and_a_marker_per_group():
    lock = read_lock(str(DATA / "poetry.lock"))
    assert lock.format is LockFormat.POETRY
    assert grouped(DATA / "poetry.lock") == {"six": ("main", "dev"), "idna": ("dev",), "jmespath": ("main",),
                                              "colorama": ("dev", "docs")}
    assert lock.default_groups == ("main",) and lock.extras == ("aws",)
    colorama = next(p for p in lock.packages if p.name == "colorama")
    assert colorama.marker is None and {g for g, _ in colorama.group_markers} == {"dev", "docs"}
    assert all("sys_platform" in m for _, m in colorama.group_markers)
    assert lock.notes == ()


def test_pdm_dev_and_optional_groups_are_optional_unless_asked_for():
    lock = read_lock(str(DATA / "pdm.lock"))
    plain = select(lock, ENV)
    assert set(plain.required) == {"six"} and set(plain.optional) == {"idna", "jmespath"} and not plain.excluded
    dev = select(lock, ENV, ["dev"])
    assert set(dev.required) == {"six", "idna"} and set(dev.optional) == {"jmespath"}
    both = select(lock, ENV, ["Dev", "aws"])  # group names are compared normalized
    assert set(both.required) == {"six", "idna", "jmespath"} and not both.optional


def test_poetry_groups_extras_and_per_group_markers():
    lock = read_lock(str(DATA / "poetry.lock"))
    markers = dict(next(p for p in lock.packages if p.name == "colorama").group_markers)
    plain = select(lock, ENV)
    # jmespath is in main but only through the extra "aws" (optional = true): optional, not excluded
    assert set(plain.required) == {"six"} and set(plain.optional) == {"idna", "jmespath", "colorama"}
    dev = select(lock, ENV, ["dev"])
    assert "idna" in dev.required
    assert ("colorama" in dev.required) is bool(marker_holds(markers["dev"], ENV))
    docs = select(lock, ENV, ["docs"])
    # docs's marker is evaluated for docs; dev's, true or not here, only makes it optional
    if marker_holds(markers["docs"], ENV):
        assert "colorama" in docs.required
    else:
        assert "colorama" not in docs.required
        assert ("colorama" in docs.optional) is bool(marker_holds(markers["dev"], ENV))


def test_a_group_no_package_of_any_group_holds_for_is_excluded(tmp_path):
    text = (DATA / "poetry.lock").read_text()
    other = "win32" if sys.platform != "win32" else "linux"
    text = text.replace('markers = {dev = "sys_platform == \\"linux\\" or sys_platform == \\"win32\\""',
                        f'markers = {{dev = "sys_platform == \\"{other}\\""')
    text = text.replace('docs = "sys_platform == \\"win32\\""}', f'docs = "sys_platform == \\"{other}\\""}}')
    path = tmp_path / "poetry.lock"
    path.write_text(text)
    chosen = select(read_lock(str(path)), ENV, ["dev", "docs"])
    assert "colorama" not in chosen.required and "colorama" not in chosen.optional
    assert other in chosen.excluded["colorama"]


def test_a_group_the_lock_does_not_have_is_a_note():
    chosen = select(read_lock(str(DATA / "pdm.lock")), ENV, ["nosuch"])
    assert set(chosen.required) == {"six"}
    assert "group 'nosuch': the lock has no such group" in chosen.lock.notes


@pytest.mark.parametrize("name, key", [("pdm.lock", "groups"), ("poetry.lock", "groups")])
def test_an_older_lock_without_groups_takes_every_package_as_required(tmp_path, name, key):
    path = tmp_path / name
    path.write_text("\n".join(line for line in (DATA / name).read_text().splitlines()
                              if not line.startswith(f"{key} = ") and not line.startswith("markers = {")) + "\n")
    lock = read_lock(str(path))
    assert all(p.groups == () for p in lock.packages)
    assert any("groups are not told apart" in note for note in lock.notes)
    chosen = select(lock, ENV, ["dev"])
    assert {"six", "idna"} <= set(chosen.required)
    assert any("the lock names no groups" in note for note in chosen.lock.notes)


@pytest.mark.parametrize("bad, error", [
    ('groups = [1]', "package[0].groups[0]: expected a group name"),
    ('groups = "dev"', "package[0].groups: expected an array"),
    ('groups = ["dev"]\nmarkers = {dev = 3}', "package[0].markers.dev: expected a string"),
])
def test_malformed_groups_and_markers_are_one_line(tmp_path, bad, error):
    path = tmp_path / "poetry.lock"
    path.write_text(f'[[package]]\nname = "a"\nversion = "1"\n{bad}\n\n[metadata]\ncontent-hash = "x"\n'
                    'lock-version = "2.1"\n')
    with pytest.raises(LockError, match="^" + str(path).replace("\\", "\\\\") + ": " + error.replace("[", r"\[")
                       .replace("]", r"\]").replace(".", r"\.")):
        read_lock(str(path))


UV_LOCK = """
version = 1
revision = 3
requires-python = ">=3.8"

[[package]]
name = "app"
version = "0.1.0"
source = { virtual = "." }
dependencies = [{ name = "six" }]

[package.dev-dependencies]
dev = [{ name = "pytest" }]
docs = [{ name = "sphinx" }]
""" + "".join(f'\n[[package]]\nname = "{n}"\nversion = "1"\nsource = {{ registry = "https://pypi.org/simple" }}\n'
              for n in ("six", "pytest", "sphinx"))


def test_uv_lock_groups_asked_for_are_required(tmp_path):
    path = tmp_path / "uv.lock"
    path.write_text(UV_LOCK)
    lock = read_lock(str(path))
    assert set(select(lock, ENV).required) == {"six", "pytest"} and set(select(lock, ENV).optional) == {"sphinx"}
    assert set(select(lock, ENV, ["docs"]).required) == {"six", "pytest", "sphinx"}
    assert "group 'lint': the lock has no such group" in select(lock, ENV, ["lint"]).lock.notes


def test_the_memo_keeps_a_selection_per_set_of_groups(tmp_path, monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "pdm.lock"
    shutil.copyfile(DATA / "pdm.lock", path)
    settle(tmp_path)
    for _ in range(2):  # made, then remembered: each set of groups its own
        assert set(memo.select_remembered(str(path), ENV).required) == {"six"}
        assert set(memo.select_remembered(str(path), ENV, groups=["dev"]).required) == {"six", "idna"}
    assert len(list((tmp_path / "cache" / "locks").iterdir())) == 2


def test_lock_group_without_a_lock_is_a_usage_error(tmp_path):
    proc = run_cli("audit", "--venv", str(tmp_path), "--lock-group", "dev")
    assert proc.returncode == 2 and "--lock-group applies to a lockfile: give --lock too" in proc.stderr
