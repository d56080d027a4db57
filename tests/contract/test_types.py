"""mypy, in pyproject.toml's configuration, finds nothing in driftscan/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from fixtures.paths import REPO

ROOT = REPO


def test_mypy_is_clean():
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--config-file",
                           str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "Success" in proc.stdout
