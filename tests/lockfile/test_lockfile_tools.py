"""Locks written by real uv (uv lock, uv export --format pylock.toml, uv pip compile
--generate-hashes) over small real packages, read back and checked against what uv installed and
against the wheels pip downloads."""

from __future__ import annotations

import hashlib
import platform
import sys
from importlib.metadata import distributions
from pathlib import Path

import pytest

from driftscan.lockfile.markers import marker_environment
from driftscan.lockfile.model import LockFormat, SourceKind
from driftscan.lockfile.read import read_lock
from driftscan.lockfile.select import select, wheel_for
from fixtures import venvs
from fixtures.network import skip_or_fail_without_network

pytestmark = [pytest.mark.network, pytest.mark.slow, pytest.mark.xdist_group("lockfile-tools")]

PYPROJECT = """\
[project]
name = "demo"
version = "0.1.0"
requires-python = ">=3.9"
dependencies = ["six", "jmespath", "colorama; sys_platform == 'win32'"]

[project.optional-dependencies]
cli = ["click"]

[dependency-groups]
dev = ["iniconfig"]
lint = ["packaging"]
"""


def uv(project: Path, cache: Path, *args: str) -> str:
    try:
        return venvs.run([venvs.uv_bin(), "--directory", str(project), *args],
                         env={**venvs.uv_env(cache), "UV_PYTHON": sys.executable})
    except venvs.InstallError as exc:
        skip_or_fail_without_network(f"package index unreachable: {exc}")
        raise


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A project locked and synced by uv (the default sync: no extras, the dev group)."""
    root = tmp_path_factory.mktemp("lockproj")
    cache = tmp_path_factory.mktemp("lockproj-cache")
    (root / "pyproject.toml").write_text(PYPROJECT)
    uv(root, cache, "lock", "--quiet")
    uv(root, cache, "sync", "--quiet")
    uv(root, cache, "export", "--quiet", "--format", "pylock.toml", "-o", "pylock.toml")
    (root / "requirements.in").write_text("six\njmespath\ncolorama; sys_platform == 'win32'\n")
    uv(root, cache, "pip", "compile", "--quiet", "--universal", "--generate-hashes", "requirements.in", "-o", "requirements.txt")
    return root


def installed(project: Path) -> dict[str, tuple[str, list[str]]]:
    """What uv sync installed: canonical name → (version, WHEEL tags), read by importlib."""
    site = venvs.site_packages_of(project / ".venv")
    out = {}
    for dist in distributions(path=[str(site)]):
        wheel = dist.read_text("WHEEL") or ""
        tags = [line.split(":", 1)[1].strip() for line in wheel.splitlines() if line.startswith("Tag:")]
        out[dist.metadata["Name"].lower().replace("_", "-")] = (dist.version, tags)
    return out


def env():
    return marker_environment(platform.python_version())


def test_uv_lock_selection_is_what_uv_sync_installed(project):
    lock = read_lock(str(project / "uv.lock"))
    assert lock.format is LockFormat.UV
    selection = select(lock, env())
    have = installed(project)
    assert {name: p.version for name, p in selection.required.items()} == {n: v for n, (v, _) in have.items()}
    assert {"click", "packaging"} <= set(selection.optional)
    if sys.platform != "win32":
        assert "colorama" in selection.excluded and "colorama" not in have
    for package in selection.required.values():
        assert package.source is SourceKind.REGISTRY
        chosen = wheel_for(package, have[package.name][1])
        assert chosen is not None and chosen.sha256 and chosen.filename.startswith(package.name.replace("-", "_"))


def test_pylock_and_hashed_requirements_agree_with_uv_lock(project):
    uv_lock = select(read_lock(str(project / "uv.lock")), env())
    pylock = select(read_lock(str(project / "pylock.toml")), env())
    reqs = select(read_lock(str(project / "requirements.txt")), env())
    assert pylock.lock.format is LockFormat.PYLOCK and reqs.lock.format is LockFormat.REQUIREMENTS
    # uv export writes the default install: the dependencies and the dev group, not the project itself
    assert {n: p.version for n, p in pylock.required.items()} == {n: p.version for n, p in uv_lock.required.items()}
    for name in ("six", "jmespath"):
        uv_hashes = {f.sha256 for f in uv_lock.required[name].files}
        assert {f.sha256 for f in pylock.required[name].files} == uv_hashes
        assert {f.sha256 for f in reqs.required[name].files} == uv_hashes
        assert reqs.required[name].version == uv_lock.required[name].version
    if sys.platform != "win32":
        assert "colorama" in pylock.excluded and "colorama" in reqs.excluded


def test_locked_wheel_hash_is_the_downloaded_wheels(project, tmp_path):
    """The hash read for six's wheel is the sha256 of the wheel file pip downloads for the same pin."""
    selection = select(read_lock(str(project / "uv.lock")), env())
    six = selection.required["six"]
    try:
        venvs.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
                   "--dest", str(tmp_path), f"six=={six.version}"])
    except venvs.InstallError as exc:
        skip_or_fail_without_network(f"package index unreachable: {exc}")
    (wheel,) = tmp_path.glob("*.whl")
    locked = next(f for f in six.files if f.filename == wheel.name)
    assert locked.sha256 == hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert locked.size in (None, wheel.stat().st_size)


def test_workspace_whose_root_is_no_project(tmp_path_factory):
    """A workspace root without [project]: uv sync installs every member and the root's dev group
    (uv.lock's [manifest.dependency-groups], named without versions, forked by Python version)."""
    root = tmp_path_factory.mktemp("lockws")
    cache = tmp_path_factory.mktemp("lockws-cache")
    (root / "pyproject.toml").write_text('[tool.uv.workspace]\nmembers = ["packages/*"]\n'
                                         '[dependency-groups]\ndev = ["iniconfig"]\ndocs = ["jmespath"]\n')
    member = root / "packages" / "m1"
    (member / "src" / "m1").mkdir(parents=True)
    (member / "src" / "m1" / "__init__.py").write_text("")
    (member / "pyproject.toml").write_text(
        '[project]\nname = "m1"\nversion = "0.1"\nrequires-python = ">=3.9"\ndependencies = ["six"]\n'
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n')
    uv(root, cache, "lock", "--quiet")
    uv(root, cache, "sync", "--quiet")
    selection = select(read_lock(str(root / "uv.lock")), env())
    have = installed(root)
    assert {name: p.version for name, p in selection.required.items()} == {n: v for n, (v, _) in have.items()}
    assert selection.required["m1"].source is SourceKind.EDITABLE
    assert set(selection.optional) == {"jmespath"}
