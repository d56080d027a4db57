"""driftscan.pristine.release with real installers: a release uv unpacked into its cache (the
wheel gone since), and --fetch of a tiny real package from the index."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from driftscan.environment.dists import find_distributions
from driftscan.pristine.base import PristineOptions, SourceKind
from driftscan.pristine.release import ReleaseError, find_release
from fixtures import venvs
from fixtures.network import skip_or_fail_without_network
from fixtures.wheels import build_wheel

pytestmark = pytest.mark.slow

V1 = {"toy_pkg/__init__.py": "VERSION = 1\n"}
V2 = {"toy_pkg/__init__.py": "VERSION = 2\n", "toy_pkg/new.py": "NEW = True\n"}


def test_a_release_uv_installed_once_is_found_in_its_cache_after_the_wheel_is_gone(tmp_path):
    house, cache = tmp_path / "house", tmp_path / "uv-cache"
    build_wheel(house, "toy-pkg", "1.0", V1)
    v2 = build_wheel(house, "toy-pkg", "2.0", V2, data={"platlib": {"toy_pkg/plat.py": "P = 2\n"}})
    throwaway = venvs.make_uv_venv(tmp_path / "throwaway", cache)
    venvs.uv_install(throwaway, cache, "--no-index", "--find-links", str(house), "toy-pkg==2.0")
    v2.unlink()
    # The environment the release is wanted for has 1.0, installed by pip.
    venv = tmp_path / "venv"
    venvs.run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    venvs.modern_pip_install(venv, "--no-index", "--find-links", str(house), "toy-pkg==1.0")
    site = str(venvs.site_packages_of(venv))
    like = next(m.distribution for m in find_distributions((site,))
                if m.distribution is not None and m.distribution.name == "toy-pkg")
    options = PristineOptions(wheels=(str(house),), uv_cache=str(cache), pip_cache=str(tmp_path / "no-pip"))
    found, notes = find_release("toy_pkg", "2.0", options, like=like)
    assert found is not None, notes
    with found:
        assert found.source is SourceKind.UV_CACHE and found.where.startswith(str(cache / "archive-v0"))
        assert found.files() == ["toy_pkg/__init__.py", "toy_pkg/new.py", "toy_pkg/plat.py"]
        assert found.read("toy_pkg/new.py") == b"NEW = True\n"
        assert found.read("toy_pkg/plat.py") == b"P = 2\n"
        assert found.read("toy_pkg/gone.py") is None
        # An edit through the throwaway venv's hard link is an edit of the cache copy: refused.
        edited = venvs.site_packages_of(throwaway) / "toy_pkg" / "__init__.py"
        if os.stat(edited).st_nlink > 1:  # uv_env asks for hard links; a copying filesystem gets copies
            with open(edited, "a") as f:
                f.write("# edited\n")
            with pytest.raises(ReleaseError, match=r"toy_pkg/__init__\.py of toy-pkg 2\.0"):
                found.read("toy_pkg/__init__.py")
        else:
            assert found.read("toy_pkg/__init__.py") == b"VERSION = 2\n"
    assert notes[0].startswith("--wheels (no toy-pkg 2.0 wheel in")


@pytest.mark.network
def test_fetch_downloads_a_release_verifies_it_and_removes_it_on_close(tmp_path):
    options = PristineOptions(fetch=True, uv_cache=str(tmp_path / "no-uv"), pip_cache=str(tmp_path / "no-pip"))
    found, notes = find_release("six", "1.16.0", options)
    if found is None and any("pip download failed" in n for n in notes):
        skip_or_fail_without_network(f"pip download failed: {notes}")
    assert found is not None, notes
    with found:
        assert found.source is SourceKind.FETCH and (found.name, found.version) == ("six", "1.16.0")
        assert found.where.startswith("pip download six==1.16.0 from ")
        assert found.files() == ["six.py"]
        text = found.read("six.py")
        assert text is not None and b'__version__ = "1.16.0"' in text
        download = Path(found._copy.path)  # noqa: SLF001 - where the temporary wheel is
        assert download.is_file()
    assert not download.exists() and not download.parent.exists()
    assert "--fetch (not asked for)" not in notes
