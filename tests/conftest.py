from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from fixtures import venvs
from fixtures.demo import BUILD_PACKAGES, INDEX_PACKAGES, build_clobber_wheels, build_demo_wheels
from fixtures.demo import CACHE_TAG
from fixtures.harness import DEMO_REQS, offline, replace_by_rename
from fixtures.network import skip_or_fail_without_network
from fixtures.paths import REPO


# What makes a test slow: a real installer making a venv, driftscan's command line in a fresh
# interpreter, a build, mypy. A module that calls any of these is slow as a whole.
_SLOW_CALLS = ("make_pip_venv", "make_uv_venv", "pip_venv(", "pip_install(", "uv_install(", "build_wheel(",
               "cli(", "run_cli(", "subprocess.", "venvs.run(", "mypy")
_SLOW_FIXTURES = {"wheelhouse", "pristine_pip_venv", "pristine_uv_venv", "house", "env", "shared_checkpoint"}
_slow_modules: dict[str, bool] = {}


def _slow_module(path) -> bool:
    key = str(path)
    if key not in _slow_modules:
        try:
            text = Path(key).read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        _slow_modules[key] = any(call in text for call in _SLOW_CALLS)
    return _slow_modules[key]


def pytest_collection_modifyitems(config, items):
    """Every test that needs the wheelhouse (a download from the package index) is marked
    ``network``, so ``-m 'not network'`` selects the offline ones; every test that makes venvs,
    runs the command line or builds is marked ``slow``, so ``-m 'not slow'`` is the fast loop."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if "wheelhouse" in fixtures:
            item.add_marker(pytest.mark.network)
        if fixtures & _SLOW_FIXTURES or _slow_module(item.path):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session", autouse=True)
def private_driftscan_cache(tmp_path_factory):
    """Keep every audit the tests run (in-process and CLI) away from the user's caches: the stat
    cache is written to a private directory, and the Hugging Face cache searched for original
    blobs is an empty one."""
    os.environ["DRIFTSCAN_CACHE_DIR"] = str(tmp_path_factory.mktemp("driftscan-cache"))
    os.environ["HF_HUB_CACHE"] = str(tmp_path_factory.mktemp("no-hf-cache"))
    os.environ["XDG_CONFIG_HOME"] = str(tmp_path_factory.mktemp("no-user-config"))  # no ~/.config/driftscan


@pytest.fixture(autouse=True)
def no_kept_originals_between_tests():
    """A checkpoint keeps the originals it verified in driftscan's cache, where later audits find
    them. Tests share one cache per worker (the stat cache stays warm), so the kept originals one
    test made are removed after it: another test's audit must not find an original it never had."""
    yield
    shutil.rmtree(os.path.join(os.environ["DRIFTSCAN_CACHE_DIR"], "originals"), ignore_errors=True)


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory) -> Path:
    """Demo wheels built here plus a few small real packages downloaded once per session."""
    house = tmp_path_factory.mktemp("wheelhouse")
    build_demo_wheels(house)
    build_clobber_wheels(house / "clobber")
    try:
        venvs.run([sys.executable, "-m", "pip", "download", "--quiet", "--only-binary", ":all:",
                   "--dest", str(house), *INDEX_PACKAGES, *BUILD_PACKAGES])
    except venvs.InstallError as exc:
        skip_or_fail_without_network(f"package index unreachable: {exc}")
    return house


@pytest.fixture(scope="session")
def uv_cache(tmp_path_factory) -> Path:
    """A private uv cache on the same filesystem as the venvs, so uv hard-links from it."""
    return tmp_path_factory.mktemp("uv-cache")


@pytest.fixture(scope="session")
def pristine_pip_venv(tmp_path_factory, wheelhouse) -> Path:
    venv = venvs.make_pip_venv(tmp_path_factory.mktemp("pristine") / "vpip")
    venvs.pip_install(venv, *offline(wheelhouse), *DEMO_REQS)
    return venv


@pytest.fixture(scope="session")
def pristine_uv_venv(tmp_path_factory, wheelhouse, uv_cache) -> Path:
    venv = venvs.make_uv_venv(tmp_path_factory.mktemp("pristine") / "vuv", uv_cache)
    venvs.uv_install(venv, uv_cache, *offline(wheelhouse), *DEMO_REQS)
    return venv


@pytest.fixture
def copy_fixture(tmp_path):
    """Copy a static fixture tree into tmp_path (tests never touch fixtures/ itself)."""

    def copy(name: str) -> Path:
        dest = tmp_path / name
        shutil.copytree(REPO / "fixtures" / "static" / name, dest, symlinks=True)
        return dest

    return copy


@pytest.fixture(scope="session")
def planted(tmp_path_factory, wheelhouse):
    """One pip venv with every drift kind planted, and the exact set of drifts expected."""
    root = tmp_path_factory.mktemp("planted")
    venv = venvs.make_pip_venv(root / "venv")
    venvs.pip_install(venv, *offline(wheelhouse), *DEMO_REQS, "pkga", "pkgb")
    site = venvs.site_packages_of(venv)
    expected: set[tuple[str, str, str | None]] = set()

    with open(site / "demo_pkg/core.py", "a") as f:  # in-place edit
        f.write("_debug_counter = 0\n")
    expected.add(("demo_pkg/core.py", "modified", "demo-pkg"))
    replace_by_rename(site / "six.py", (site / "six.py").read_text() + "# patched\n")
    expected.add(("six.py", "modified", "six"))
    (site / "demo_pkg/data/ro,1.s1p").write_text("edited\n")  # a comma in a RECORD path
    expected.add(("demo_pkg/data/ro,1.s1p", "modified", "demo-pkg"))
    (venv / "bin/demo-cli").write_text("#!/bin/sh\necho hijacked\n")
    expected.add(("bin/demo-cli", "modified", "demo-pkg"))
    (site / "requests/help.py").unlink()
    expected.add(("requests/help.py", "missing", "requests"))
    (site / "six_extra.py").write_text("X = 1\n")
    expected.add(("six_extra.py", "added", None))
    venvs.run([str(venvs.python_of(venv)), "-c", "import six_extra"])  # its bytecode is not a second drift
    (site / "requests/debug_dump.pt").write_bytes(b"\x80\x02tensor")
    expected.add(("requests/debug_dump.pt", "added", None))
    dist_info = next(site.glob("six-*.dist-info"))
    (dist_info / "extra.txt").write_text("notes\n")
    expected.add((f"{dist_info.name}/extra.txt", "added", None))
    (venv / "bin/my_tool").write_text("#!/bin/sh\n")
    expected.add(("bin/my_tool", "added", None))
    (site / f"requests/__pycache__/ghost.{CACHE_TAG}.pyc").write_bytes(b"ghost")
    # Ghost bytecode in a package's __pycache__ is attributed to that package (uv would wipe it).
    expected.add((f"requests/__pycache__/ghost.{CACHE_TAG}.pyc", "orphaned-bytecode", "requests"))
    outside = root / "elsewhere_termui.py"
    shutil.copy(site / "click/termui.py", outside)
    (site / "click/termui.py").unlink()
    (site / "click/termui.py").symlink_to(outside)
    expected.add(("click/termui.py", "type-changed", "click"))
    (site / "demo_pkg/data/Lorem ipsum.txt").unlink()
    (site / "demo_pkg/data/Lorem ipsum.txt").mkdir()
    expected.add(("demo_pkg/data/Lorem ipsum.txt", "type-changed", "demo-pkg"))
    orphan = site / "ghostpkg-1.0.dist-info"
    orphan.mkdir()
    (orphan / "notes.txt").write_text("left behind\n")
    expected.add(("ghostpkg-1.0.dist-info", "orphaned-metadata", None))
    # Both ship sharedmod/common.py; whichever the installer wrote last wins, the other is clobbered.
    winner = "pkga" if "'a'" in (site / "sharedmod/common.py").read_text() else "pkgb"
    loser = {"pkga": "pkgb", "pkgb": "pkga"}[winner]
    expected.add(("sharedmod/common.py", "clobbered", loser))
    (site / os.fsdecode(b"demo_pkg/caf\xe9.py")).write_bytes(b"Y = 1\n")  # a non-UTF-8 file name
    expected.add(("demo_pkg/caf\\xe9.py", "added", None))
    return venv, expected


@pytest.fixture(scope="session")
def index_template(tmp_path_factory, wheelhouse):
    """A pip venv with six and requests, for the clean-index and warm-drift tests to copy."""
    venv = venvs.make_pip_venv(tmp_path_factory.mktemp("index") / "v")
    venvs.pip_install(venv, *offline(wheelhouse), "six==1.17.0", "requests==2.32.3")
    return venv


@pytest.fixture
def index_venv(index_template, tmp_path, monkeypatch):
    """A fresh copy of ``index_template``; the racy window shrunk to nothing, so files written now
    may be trusted (tests that need the real window restore it), and a private cache dir."""
    from driftscan.caches import racy

    copy = tmp_path / "v"
    shutil.copytree(index_template, copy, symlinks=True)
    monkeypatch.setattr(racy, "RACY_NS", 0)
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))
    return copy
