"""Hostile lockfiles: too large, nested too deeply, not a regular file, naming paths and URLs that
must stay data. Each refusal is one LockError line; nothing the lock names is opened."""

from __future__ import annotations

import builtins
import io
import os
import textwrap

import pytest

from driftscan.lockfile.markers import marker_environment
from driftscan.lockfile.model import LockError, SourceKind
from driftscan.lockfile.read import LOCK_MAX, read_lock
from driftscan.lockfile.select import select
from fixtures.bounded import python_bounded


def test_a_file_past_the_cap_is_refused_without_reading_it(tmp_path):
    path = tmp_path / "uv.lock"
    with open(path, "wb") as out:
        out.truncate(70 << 20)  # sparse: 70 MiB of size, nothing to read
    assert os.path.getsize(path) > LOCK_MAX
    code = textwrap.dedent(f"""
        from driftscan.lockfile.read import read_lock, LockError
        try:
            read_lock({str(path)!r})
        except LockError as exc:
            print(exc)
    """)
    proc = python_bounded(code, seconds=60, memory_mb=96)  # far less than the file: it is never read
    assert proc.returncode == 0, proc.stderr
    assert str(path) in proc.stdout and "more than the" in proc.stdout and "lockfile" in proc.stdout


def test_deeply_nested_toml_is_one_line(tmp_path):
    path = tmp_path / "uv.lock"
    path.write_text("version = 1\nx = " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(LockError) as err:
        read_lock(str(path))
    assert str(err.value).startswith(str(path)) and "\n" not in str(err.value)


def test_too_many_packages(tmp_path):
    path = tmp_path / "requirements.txt"
    path.write_text("a==1\n" * 200_001)
    with pytest.raises(LockError, match="more than the 200000"):
        read_lock(str(path))
    toml = tmp_path / "pylock.toml"
    toml.write_text('lock-version = "1.0"\n' + '[[packages]]\nname = "a"\n' * 200_001)
    with pytest.raises(LockError, match="more than the 200000"):
        read_lock(str(toml))


def test_fifo_is_refused_without_hanging(tmp_path):
    fifo = tmp_path / "uv.lock"
    os.mkfifo(fifo)  # no writer: an open for reading would block forever
    code = textwrap.dedent(f"""
        from driftscan.lockfile.read import read_lock, LockError
        try:
            read_lock({str(fifo)!r})
        except LockError as exc:
            print(exc)
    """)
    proc = python_bounded(code, seconds=30, memory_mb=256)
    assert proc.returncode == 0, proc.stderr
    assert "not a regular file" in proc.stdout and str(fifo) in proc.stdout


def test_symlink_to_a_device_is_refused(tmp_path):
    link = tmp_path / "poetry.lock"
    link.symlink_to("/dev/zero")
    with pytest.raises(LockError, match="not a regular file"):
        read_lock(str(link))


def test_named_paths_and_urls_stay_data(tmp_path, monkeypatch):
    lock_path = tmp_path / "uv.lock"
    lock_path.write_text(textwrap.dedent('''
        version = 1
        revision = 3

        [[package]]
        name = "app"
        version = "0.1.0"
        source = { editable = "." }
        dependencies = [{ name = "passwd" }, { name = "up" }]

        [[package]]
        name = "passwd"
        version = "1"
        source = { url = "file:///etc/passwd" }
        wheels = [{ path = "/etc/shadow/passwd-1-py3-none-any.whl", hash = "sha256:%s" }]

        [[package]]
        name = "up"
        version = "1"
        source = { path = "../../../../../etc/hostname" }
    ''' % ("ab" * 32)))
    opened: list[str] = []
    real_open, real_os_open, real_io_open = builtins.open, os.open, io.open

    def watch(real):
        def opener(path, *args, **kwargs):
            opened.append(os.fspath(path) if not isinstance(path, int) else f"fd {path}")
            return real(path, *args, **kwargs)
        return opener

    monkeypatch.setattr(builtins, "open", watch(real_open))
    monkeypatch.setattr(io, "open", watch(real_io_open))
    monkeypatch.setattr(os, "open", watch(real_os_open))
    selection = select(read_lock(str(lock_path)), marker_environment("3.11.1"))
    monkeypatch.undo()
    assert opened == [str(lock_path)]
    passwd, up = selection.required["passwd"], selection.required["up"]
    assert (passwd.source, passwd.location) == (SourceKind.URL, "file:///etc/passwd")
    assert passwd.files[0].url == "/etc/shadow/passwd-1-py3-none-any.whl" and passwd.files[0].is_wheel
    assert (up.source, up.location) == (SourceKind.PATH, "../../../../../etc/hostname")


def test_requirements_never_follow_other_files(tmp_path, monkeypatch):
    path = tmp_path / "requirements.txt"
    path.write_text("-r /proc/self/mem\n--requirement=../../secret.txt\n-c /dev/zero\nsix==1.17.0\n")
    opened: list[str] = []
    real_os_open = os.open
    monkeypatch.setattr(os, "open", lambda p, *a, **k: opened.append(os.fspath(p)) or real_os_open(p, *a, **k))
    lock = read_lock(str(path))
    monkeypatch.undo()
    assert opened == [str(path)]
    assert [p.name for p in lock.packages] == ["six"]
    assert sum("not followed" in note for note in lock.notes) == 3


def test_notes_are_capped(tmp_path):
    path = tmp_path / "requirements.txt"
    path.write_text("".join(f"-r other{i}.txt\n" for i in range(1000)))
    lock = read_lock(str(path))
    assert len(lock.notes) == 201 and lock.notes[-1] == "... and 800 more notes"
