"""fs.atomic: writes that go to a symlink's target, never leave half a file, and refuse
anything but a regular file as an output."""

from __future__ import annotations

import os
import stat

import pytest

from driftscan.core.errors import ConfigError
from driftscan.fs import atomic
from driftscan.fs.atomic import output_path, write_atomic


def _leftovers(directory) -> list[str]:
    return [name for name in os.listdir(directory) if name.startswith(".driftscan-")]


def test_writes_str_bytes_and_pieces(tmp_path):
    target = tmp_path / "out.txt"
    write_atomic(str(target), "héllo\n")
    assert target.read_bytes() == "héllo\n".encode("utf-8")
    write_atomic(str(target), b"\x00\xffraw")
    assert target.read_bytes() == b"\x00\xffraw"
    write_atomic(str(target), (f"line {k}\n" for k in range(3)))
    assert target.read_text() == "line 0\nline 1\nline 2\n"
    assert _leftovers(tmp_path) == []


def test_symlink_is_kept_and_its_target_replaced(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert output_path(str(link)) == str(real.resolve())
    write_atomic(str(link), "new")
    assert link.is_symlink(), "the link itself must not be replaced by a regular file"
    assert os.readlink(link) == str(real)
    assert real.read_text() == "new"


def test_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "absent")
    write_atomic(str(link), "made")
    assert link.is_symlink()
    assert (tmp_path / "absent").read_text() == "made"


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_non_regular_outputs_are_refused(tmp_path, kind):
    if kind == "fifo":
        path = tmp_path / "pipe"
        os.mkfifo(path)
    elif kind == "directory":
        path = tmp_path / "dir"
        path.mkdir()
    else:
        path = tmp_path / "null"
        path.symlink_to("/dev/null")
    with pytest.raises(ConfigError, match="regular file|directory") as info:
        write_atomic(str(path), "x")
    assert str(path) in str(info.value)
    if kind == "fifo":
        assert stat.S_ISFIFO(os.lstat(path).st_mode), "the FIFO must still be a FIFO"
    if kind == "device":
        assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert _leftovers(tmp_path) == []


def test_failure_while_writing_keeps_old_content(tmp_path):
    target = tmp_path / "report.json"
    target.write_text("previous")

    def pieces():
        yield "half of "
        raise RuntimeError("generator broke")

    with pytest.raises(RuntimeError, match="generator broke"):
        write_atomic(str(target), pieces())
    assert target.read_text() == "previous"
    assert _leftovers(tmp_path) == [], "the temporary file must be removed"


def test_failure_at_replace_names_the_asked_path_and_keeps_old(tmp_path, monkeypatch):
    target = tmp_path / "report.json"
    target.write_text("previous")

    def fail(src, dst):
        raise PermissionError(13, "Permission denied", src)

    monkeypatch.setattr(atomic.os, "replace", fail)
    with pytest.raises(PermissionError) as info:
        write_atomic(str(target), "new")
    assert info.value.filename == str(target)
    assert ".tmp" not in str(info.value)
    assert target.read_text() == "previous"
    assert _leftovers(tmp_path) == []


def test_missing_directory_error_names_the_path(tmp_path):
    target = tmp_path / "no" / "such" / "out.txt"
    with pytest.raises(FileNotFoundError) as info:
        write_atomic(str(target), "x")
    assert info.value.filename == str(target)


def test_existing_mode_is_kept_new_file_gets_mode(tmp_path):
    old = tmp_path / "old"
    old.write_text("x")
    os.chmod(old, 0o640)
    write_atomic(str(old), "y", mode=0o600)
    assert stat.S_IMODE(os.stat(old).st_mode) == 0o640, "an existing file keeps its mode"

    new = tmp_path / "new"
    write_atomic(str(new), "y", mode=0o600)
    assert stat.S_IMODE(os.stat(new).st_mode) == 0o600


def test_new_file_without_mode_follows_umask(tmp_path):
    previous = os.umask(0o027)
    try:
        write_atomic(str(tmp_path / "f"), "y")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(os.stat(tmp_path / "f").st_mode) == 0o640, "0666 less the umask, not mkstemp's 0600"
