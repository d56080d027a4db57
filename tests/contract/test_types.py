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


def test_every_package_is_under_the_strict_flags():
    """mypy --strict's flags hold for the whole package: each subpackage and top-level module is
    in pyproject.toml's strict list (a new package joins it, or this fails)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: the backport
        import tomli as tomllib  # type: ignore[no-redef]

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    strict = next(o for o in config["tool"]["mypy"]["overrides"] if o.get("disallow_untyped_defs"))
    listed = set(strict["module"])
    package = ROOT / "driftscan"
    wanted = {"driftscan"} | {f"driftscan.{p.name}" for p in package.iterdir() if (p / "__init__.py").exists()} \
        | {f"driftscan.{p.stem}" for p in package.glob("*.py") if p.stem != "__init__"}
    assert wanted - listed == set()
    assert all(f"{name}.*" in listed for name in wanted if (package / name.removeprefix("driftscan.")).is_dir())
    assert strict.get("warn_unused_ignores") is True  # no stale ignore
