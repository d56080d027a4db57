"""Real processes started from real venvs, each killed when its test ends."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from fixtures.processes import spawned
from fixtures.venvs import site_packages_of
from fixtures.wheelfiles import installed

MOD = "import sys\nVALUE = 1\nif __name__ == '__main__':\n    print('ready', flush=True)\n    sys.stdin.read()\n"


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    """A venv (without pip: nothing here needs it) holding the pure package ``pkgx`` and an
    extension module copied from the stdlib's lib-dynload."""
    path = tmp_path / "v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    site = site_packages_of(path)
    native = sorted(Path(sysconfig.get_config_var("DESTSHARED")).glob("_bisect*.so"))[0]
    installed(site, "pkgx", "1.0", {"pkgx/__init__.py": "", "pkgx/mod.py": MOD,
                                    "pkgx/_native.so": native.read_bytes()})
    return path


@pytest.fixture
def spawn():
    yield from spawned()

