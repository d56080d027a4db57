"""fs.reader: the one way a tree-controlled file is read: type checked before the open, a FIFO
refused without blocking, size caps named in the error, nothing read outside a root."""

from __future__ import annotations

import errno
import os
import socket
import stat
import sys
import threading

import pytest

from driftscan.fs import reader
from driftscan.fs.reader import (LIMITS, ByteProgress, check_inside, file_type, inside, map_by_size,
                                 open_regular, os_error, read_kind, read_opened, read_pieces, read_regular,
                                 read_regular_stat, walk)


def test_reads_a_regular_file_and_its_stat(tmp_path):
    f = tmp_path / "METADATA"
    f.write_bytes(b"Name: demo\n")
    data, st = read_regular_stat(str(f), 100)
    assert data == b"Name: demo\n"
    assert st.st_size == len(data) and stat.S_ISREG(st.st_mode)
    assert read_kind(str(f), "METADATA") == data


def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "RECORD"
    os.mkfifo(fifo)
    result: dict = {}

    def attempt():
        try:
            read_regular(str(fifo), 100)
        except OSError as exc:
            result["error"] = exc

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(5)
    assert not thread.is_alive(), "reading a FIFO with no writer blocked"
    assert result["error"].errno == errno.EINVAL
    assert "not a regular file" in str(result["error"])


def test_fifo_through_a_followed_symlink_is_refused(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        read_regular(str(link), 100, follow=True)


def test_device_node_never_opened(tmp_path, monkeypatch):
    opened = []
    real_open = os.open
    monkeypatch.setattr(reader.os, "open", lambda p, *a, **k: (opened.append(p), real_open(p, *a, **k))[1])
    with pytest.raises(OSError, match="not a regular file") as info:
        read_regular("/dev/null", 100)
    assert info.value.errno == errno.EINVAL
    assert opened == [], "a device node is refused from its stat, before any open"


def test_directory_and_socket_refused(tmp_path):
    with pytest.raises(OSError, match="not a regular file"):
        read_regular(str(tmp_path), 100)
    sock_path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(sock_path))
        with pytest.raises(OSError, match="not a regular file"):
            read_regular(str(sock_path), 100)


def test_symlink_refused_when_not_following(tmp_path):
    target = tmp_path / "target"
    target.write_text("secret")
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(OSError) as info:
        read_regular(str(link), 100, follow=False)
    assert info.value.errno == errno.ELOOP
    assert str(target) in str(info.value), "the refusal names where the link points"
    assert read_regular(str(link), 100, follow=True) == b"secret"


def test_size_cap_names_the_limit_and_the_kind(tmp_path):
    f = tmp_path / "INSTALLER"
    f.write_bytes(b"x" * (LIMITS["INSTALLER"] + 1))
    with pytest.raises(OSError) as info:
        read_kind(str(f), "INSTALLER")
    assert info.value.errno == errno.EFBIG
    assert str(LIMITS["INSTALLER"]) in str(info.value) and "INSTALLER" in str(info.value)
    exact = tmp_path / "exact"
    exact.write_bytes(b"y" * 10)
    assert read_regular(str(exact), 10) == b"y" * 10
    with pytest.raises(OSError, match="more than the 9 expected"):
        read_regular(str(exact), 9)


def test_read_opened_refuses_a_file_that_grew(tmp_path):
    f = tmp_path / "growing"
    f.write_bytes(b"abc")
    fd, st = open_regular(str(f))
    try:
        with open(f, "ab") as grow:
            grow.write(b"d" * 100)
        with pytest.raises(OSError, match="grew past") as info:
            read_opened(fd, st, 10, what="RECORD")
        assert info.value.errno == errno.EFBIG
    finally:
        os.close(fd)


def test_root_refuses_a_symlink_out_of_the_tree(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    outside = tmp_path / "outside"
    outside.write_text("secret")
    (tree / "escape").symlink_to(outside)
    (tree / "inside").write_text("ok")
    with pytest.raises(OSError) as info:
        read_regular(str(tree / "escape"), 100, root=str(tree))
    assert info.value.errno == errno.EXDEV
    assert str(outside) in str(info.value)
    with pytest.raises(OSError, match="outside the audited tree"):
        read_regular(str(tree / ".." / "outside"), 100, root=str(tree))
    assert read_regular(str(tree / "inside"), 100, root=str(tree)) == b"ok"


def test_inside_compares_real_locations(tmp_path):
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    sibling = tmp_path / "root-other"
    sibling.mkdir()
    assert inside(str(root), str(root))
    assert inside(str(root), str(root / "sub" / "f"))
    assert not inside(str(root), str(sibling)), "a common prefix is not containment"
    link_root = tmp_path / "linkroot"
    link_root.symlink_to(root)
    assert inside(str(link_root), str(root / "sub"))
    check_inside(str(root), str(root / "sub"))
    with pytest.raises(OSError):
        check_inside(str(root), str(sibling))


def test_file_type_and_os_error(tmp_path):
    os.mkfifo(tmp_path / "p")
    (tmp_path / "l").symlink_to("nowhere")
    assert file_type(os.lstat(tmp_path).st_mode) == "directory"
    assert file_type(os.lstat(tmp_path / "p").st_mode) == "fifo"
    assert file_type(os.lstat(tmp_path / "l").st_mode) == "symlink"
    assert file_type(os.lstat("/dev/null").st_mode) == "device"
    assert os_error(OSError(errno.ELOOP, "Too many levels")) == "symlink loop"
    assert os_error(OSError(errno.ENOENT, "No such file")) == "No such file"


@pytest.mark.parametrize("size,chunk", [(0, 8), (5, 8), (20, 8), (64, 8)])
def test_read_pieces_returns_the_whole_content(tmp_path, size, chunk):
    content = bytes(range(256))[:size]
    f = tmp_path / "f"
    f.write_bytes(content)
    fd = os.open(f, os.O_RDONLY)
    try:
        got = b"".join(bytes(piece) for piece in read_pieces(fd, size, chunk))
    finally:
        os.close(fd)
    assert got == content


def test_walk_does_not_follow_directory_symlinks_and_goes_deep(tmp_path):
    deep = tmp_path
    for _ in range(300):
        deep = deep / "d"
        deep.mkdir()
    (deep / "leaf").write_text("x")
    (tmp_path / "loop").symlink_to(tmp_path)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(150)  # a recursive walk of 300 levels fails under this
    try:
        seen = list(walk(str(tmp_path)))
    finally:
        sys.setrecursionlimit(limit)
    top = seen[0]
    assert top[0] == str(tmp_path)
    assert "loop" in top[1], "a symlinked directory is listed"
    assert not any(dirpath.startswith(str(tmp_path / "loop")) for dirpath, _, _ in seen), "but not entered"
    assert any("leaf" in files for _, _, files in seen)
    errors = []
    assert list(walk(str(tmp_path / "absent"), onerror=errors.append)) == []
    assert len(errors) == 1 and isinstance(errors[0], FileNotFoundError)


def test_walk_dirnames_can_be_pruned(tmp_path):
    (tmp_path / "keep").mkdir()
    (tmp_path / "skip").mkdir()
    (tmp_path / "skip" / "f").write_text("x")
    visited = []
    for dirpath, dirnames, _ in walk(str(tmp_path)):
        visited.append(dirpath)
        if "skip" in dirnames:
            dirnames.remove("skip")
    assert str(tmp_path / "skip") not in visited
    assert str(tmp_path / "keep") in visited


@pytest.mark.parametrize("jobs", [1, 4])
def test_map_by_size_keeps_order(jobs):
    items = list(range(10))
    sizes = [1 << 20 if k % 3 == 0 else 10 for k in items]
    assert map_by_size(lambda k: k * k, items, sizes, jobs, pool_min=100) == [k * k for k in items]


def test_byte_progress_steps_and_final():
    calls = []
    progress = ByteProgress(lambda done, total: calls.append((done, total)), total=100, step=40)
    for _ in range(5):
        progress.add(10)
    assert calls == [(40, 100)]
    progress.add(70, final=True)
    assert calls[-1] == (100, 100), "done is capped at total"
    assert progress.done == 120
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
