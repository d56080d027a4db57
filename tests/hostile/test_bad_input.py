"""Bad input gets a clear message and the rest of the audit goes on; never a traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from driftscan import TargetError, audit
from driftscan.core.values import Hash, RecordEntry
from driftscan.environment import files as files_mod
from driftscan.environment import unowned as unowned_mod
from fixtures.harness import run_cli
from fixtures.wheels import build_wheel
from fixtures.paths import REPO


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("driftscan: error: "), proc.stderr
    return lines[0]


def test_nonexistent_venv(tmp_path):
    line = one_line_error(run_cli("audit", "--venv", str(tmp_path / "nope")))
    assert "no such file or directory" in line


def test_venv_that_is_a_file(tmp_path):
    (tmp_path / "f").write_text("x")
    assert "not a directory" in one_line_error(run_cli("audit", "--venv", str(tmp_path / "f")))


def test_directory_that_is_not_a_venv(tmp_path):
    line = one_line_error(run_cli("audit", "--venv", str(tmp_path)))
    assert "not a virtual environment" in line and "--site-packages" in line


def test_venv_without_site_packages(tmp_path):
    (tmp_path / "pyvenv.cfg").write_text("version = 3.12.1\n")
    assert "site-packages" in one_line_error(run_cli("audit", "--venv", str(tmp_path)))


def test_nonexistent_site_packages(tmp_path):
    one_line_error(run_cli("audit", "--site-packages", str(tmp_path / "nope")))


def test_library_raises_typed_error(tmp_path):
    with pytest.raises(TargetError):
        audit(venv=str(tmp_path))


def test_output_into_missing_directory(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    one_line_error(run_cli("audit", "--site-packages", str(site), "--output", str(tmp_path / "no/dir/r.json")))


def test_usage_error_exit_status(tmp_path):
    proc = run_cli("audit", "--format", "yaml")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def _site_with_dist(root: Path) -> Path:
    """A site-packages holding one real wheel, unpacked the way installers do (via pip --target)."""
    site = root / "site"
    wheel = build_wheel(root / "wheels", "victim", "1.0",
                        {"victim/__init__.py": "V = 1\n", "victim/secret.py": "S = 1\n", "victim/other.py": "O = 1\n"})
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
                    "--target", str(site), str(wheel)], check=True, capture_output=True)
    return site


def test_symlink_loops_and_fifos_do_not_hang_or_crash(tmp_path):
    site = _site_with_dist(tmp_path)
    os.unlink(site / "victim/secret.py")
    os.symlink("secret.py", site / "victim/secret.py")  # a loop where a RECORD file was
    os.symlink("loop_b", site / "loop_a")
    os.symlink("loop_a", site / "loop_b")
    os.unlink(site / "victim/other.py")
    os.mkfifo(site / "victim/other.py")  # opening it for reading would block forever
    os.mkfifo(site / "stray_fifo")
    os.symlink(str(site), site / "victim/up")  # a directory symlink cycle the walk must not follow
    report = audit(site_packages=[str(site)])
    got = {(d.relpath, d.kind.value) for d in report.drifts}
    assert got == {("victim/other.py", "type-changed"), ("loop_a", "added"), ("loop_b", "added"),
                   ("stray_fifo", "added"), ("victim/up", "added")}
    assert [(os.path.basename(e.path), e.message) for e in report.errors] == [
        ("secret.py", "cannot follow symlink: symlink loop")]


def test_metadata_files_that_are_fifos_are_reported_not_read(tmp_path):
    """A FIFO where RECORD or METADATA should be would block a plain open() forever."""
    site = _site_with_dist(tmp_path)
    info = next(site.glob("victim-*.dist-info"))
    for name in ("RECORD", "METADATA"):
        os.unlink(info / name)
        os.mkfifo(info / name)
        os.chmod(info / name, 0o644)  # the mode is in the message: not left to the umask
    report = audit(site_packages=[str(site)])
    assert sorted((os.path.basename(e.path), e.message) for e in report.errors) == [
        ("METADATA", "cannot read: not a regular file (prw-r--r--)"),
        ("RECORD", "cannot read: not a regular file (prw-r--r--)")]
    assert [u.distribution for u in report.unverifiable] == ["victim 1.0"]  # named after its directory


def test_file_vanishing_mid_audit(tmp_path, monkeypatch):
    site = _site_with_dist(tmp_path)
    real_open = os.open

    def vanishing_open(path, *args, **kwargs):
        if str(path).endswith("secret.py"):
            os.unlink(path)
            raise FileNotFoundError(2, "No such file or directory", path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(files_mod.os, "open", vanishing_open)
    report = audit(site_packages=[str(site)], jobs=1)
    missing = [d for d in report.drifts if d.kind.value == "missing"]
    assert [d.relpath for d in missing] == ["victim/secret.py"]
    assert report.errors == []


def test_file_vanishing_between_stat_and_open_says_so(tmp_path, monkeypatch):
    site = _site_with_dist(tmp_path)
    path = site / "victim/secret.py"
    entry = RecordEntry("victim/secret.py", Hash("sha256", b"\0" * 32), path.stat().st_size, 1)
    real_open = os.open

    def vanishing_open(name, *args, **kwargs):
        if str(name) == str(path):
            os.unlink(name)
            raise FileNotFoundError(2, "No such file or directory", name)
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr(files_mod.os, "open", vanishing_open)
    result = files_mod.check_entry(str(path), entry)  # lstat sees it, open does not
    assert (result.status, result.message) == (files_mod.MISSING, "vanished during the audit")


def test_directory_vanishing_mid_walk(tmp_path, monkeypatch):
    site = _site_with_dist(tmp_path)
    (site / "extra_dir").mkdir()
    (site / "extra_dir/f.txt").write_text("x")
    real_scandir = os.scandir

    def scandir(path):
        if str(path).endswith("extra_dir"):
            shutil.rmtree(path)
        return real_scandir(path)

    monkeypatch.setattr(unowned_mod.os, "scandir", scandir)
    report = audit(site_packages=[str(site)])
    assert [(os.path.basename(e.path), e.message) for e in report.errors] == [
        ("extra_dir", "vanished during the audit")]
    assert report.drifts == []


def _unprivileged_runner(root: Path):
    """A way to run the CLI as a user who cannot read a chmod-000 file (root reads everything).

    The test interpreter may sit under a directory only root can enter (pyenv in /root), so try
    interpreters of the same version with this checkout and its dependencies on PYTHONPATH.
    """
    if os.geteuid() != 0:
        return lambda *args: run_cli(*args, cwd=str(root))
    import sysconfig

    repo = str(REPO)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([repo, sysconfig.get_paths()["purelib"]]),
           "PYTHONDONTWRITEBYTECODE": "1"}
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for python in dict.fromkeys([sys.executable, os.path.realpath(sys.executable),
                                 f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]):
        try:
            probe = subprocess.run([python, "-c", "import driftscan.cli"], user="nobody", env=env,
                                   capture_output=True, cwd=str(root))
        except OSError:
            continue
        if probe.returncode == 0:
            return lambda *args: subprocess.run([python, "-m", "driftscan", *args], user="nobody", env=env,
                                                capture_output=True, text=True, cwd=str(root))
    pytest.skip("no interpreter an unprivileged user can run here")


def test_unreadable_files_and_record_are_reported_and_audit_goes_on():
    root = Path(tempfile.mkdtemp(prefix="driftscan-perm-"))
    try:
        os.chmod(root, 0o755)
        site = _site_with_dist(root)
        other = build_wheel(root / "wheels", "locked", "2.0", {"locked/__init__.py": "L = 1\n"})
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
                        "--target", str(site), str(other)], check=True, capture_output=True)
        for dirpath, dirnames, filenames in os.walk(root):
            os.chmod(dirpath, 0o755)
            for name in filenames:
                os.chmod(os.path.join(dirpath, name), 0o644)
        (site / "victim/other.py").write_text("O = 2\n")  # a real drift that must still be found
        os.chmod(site / "victim/secret.py", 0)
        os.chmod(next(site.glob("locked-*.dist-info")) / "RECORD", 0)
        (site / "closed_dir").mkdir()
        os.chmod(site / "closed_dir", 0)
        run_unprivileged = _unprivileged_runner(root)
        proc = run_unprivileged("audit", "--site-packages", str(site))
        assert "Traceback" not in proc.stderr
        assert proc.returncode == 3, proc.stdout + proc.stderr  # drift and could-not-check bits
        out = proc.stdout
        assert "victim/other.py" in out and "modified" in out
        assert "secret.py: cannot open: Permission denied" in out
        assert "RECORD: cannot read: Permission denied" in out
        assert "closed_dir: cannot list directory: Permission denied" in out
        assert "locked 2.0: RECORD could not be read" in out
    finally:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames + filenames:
                os.chmod(os.path.join(dirpath, name), 0o755, follow_symlinks=False)
        shutil.rmtree(root, ignore_errors=True)
