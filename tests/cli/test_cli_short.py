"""``driftscan audit --format short`` on a real venv (a wheel built here, installed by a real pip):
one line per drift — an edited file, an added one, a deleted one, an added one whose name has a
newline — nothing else, the exit status of any other format, and paths ``cut -c4- | xargs`` can use
from where the command ran."""

from __future__ import annotations

import codecs
import subprocess
import sys

import pytest

from fixtures import venvs
from fixtures.harness import run_cli
from fixtures.wheels import build_wheel


@pytest.fixture(scope="module")
def drifted(tmp_path_factory):
    root = tmp_path_factory.mktemp("short")
    build_wheel(root / "wheels", "shortpkg", "1.0",
                {"shortpkg/__init__.py": "", "shortpkg/core.py": "X = 1\n", "shortpkg/gone.py": "Y = 2\n"})
    venv = root / "venv"
    venvs.run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    venvs.modern_pip_install(venv, "--no-index", "--no-compile", "--find-links", str(root / "wheels"), "shortpkg")
    site = venvs.site_packages_of(venv)
    (site / "shortpkg/core.py").write_text("X = 3\n")
    (site / "shortpkg/gone.py").unlink()
    (site / "stray.py").write_text("Z = 1\n")
    (site / "shortpkg/new\nline.py").write_text("W = 1\n")
    return venv, site


def test_one_line_per_drift_relative_to_the_working_directory(drifted):
    venv, site = drifted
    proc = run_cli("audit", "--venv", str(venv), "--no-pristine", "--format", "short", cwd=str(site))
    assert proc.returncode == 1, proc.stderr  # drift, as with any format
    assert sorted(proc.stdout.splitlines()) == ['A! "shortpkg/new\\nline.py"', "A! stray.py", "D  shortpkg/gone.py",
                                                "M  shortpkg/core.py"]
    # the quoted name reads back as the file's name
    quoted = next(line[3:] for line in proc.stdout.splitlines() if line[3:].startswith('"'))
    assert (site / codecs.escape_decode(quoted[1:-1].encode())[0].decode()).is_file()


def test_absolute_outside_the_working_directory_and_usable_by_xargs(drifted, tmp_path):
    venv, site = drifted
    proc = run_cli("audit", "--venv", str(venv), "--no-pristine", "--format", "short", cwd=str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    paths = {line[0]: line[3:] for line in proc.stdout.splitlines() if '"' not in line and line[0] != "A"}
    assert paths == {"M": str(site / "shortpkg/core.py"), "D": str(site / "shortpkg/gone.py")}
    # the files still there, from where the command ran (a quoted name is C-unquoted first: xargs does not)
    pipeline = (f"{sys.executable} -m driftscan audit --venv {venv} --no-pristine --format short "
                "| grep -v -e '^D' -e '^...\"' | cut -c4- | xargs ls -d --")
    listed = subprocess.run(["sh", "-c", pipeline], cwd=site, capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    assert sorted(listed.stdout.splitlines()) == ["shortpkg/core.py", "stray.py"]
