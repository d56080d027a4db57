"""driftscan.runtime's reader: record files read as untrusted data (one bad file is an error value
for its own process only) and recorded modules compared with the files on disk now."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from driftscan.runtime import location
from driftscan.runtime.records import (
    READ_LIMIT, ChangeKind, ErrorKind, RecorderState, changed, read_records, remove_stale,
)

UID = os.getuid()


def header(pid: int, ticks: int, uid: int = UID) -> dict:
    return {"format": "driftscan-runtime", "version": 1, "pid": pid, "start_ticks": ticks, "uid": uid,
            "executable": "/usr/bin/python3", "max_records": 20000, "max_bytes": 4194304}


def module_line(name: str, path, digest: bool = False) -> dict:
    st = os.stat(path)
    data = open(path, "rb").read()
    return {"name": name, "path": str(path), "dev": st.st_dev, "ino": st.st_ino, "size": st.st_size,
            "mtime_ns": st.st_mtime_ns,
            "blake2b": hashlib.blake2b(data, digest_size=32).hexdigest() if digest else None}


def write(directory, pid: int, ticks: int, lines: list, raw: bytes | None = None):
    path = directory / location.file_name(pid, ticks)
    path.write_bytes(raw if raw is not None else "".join(json.dumps(x) + "\n" for x in lines).encode())
    return path


@pytest.fixture
def rundir(tmp_path):
    d = tmp_path / "runtime"
    d.mkdir(mode=0o700)
    return d


@pytest.fixture
def module_file(tmp_path):
    f = tmp_path / "site" / "pkg" / "mod.py"
    f.parent.mkdir(parents=True)
    f.write_text("VALUE = 1\n")
    return f


def test_a_valid_file_reads_back_every_module(rundir, module_file):
    write(rundir, 100, 5, [header(100, 5), module_line("pkg.mod", module_file)])
    records = read_records(100, 5, UID, str(rundir))
    assert records.error is None and records.state is RecorderState.RECORDING
    assert [(m.name, m.path) for m in records.modules] == [("pkg.mod", str(module_file))]
    assert changed(records) == []


def test_no_file_is_none(rundir):
    assert read_records(4242, 7, UID, str(rundir)) is None
    assert read_records(4242, 7, UID, str(rundir / "absent")) is None


def test_a_line_being_written_is_left_out_and_statuses_are_read(rundir, module_file):
    good = "".join(json.dumps(x) + "\n" for x in (header(101, 5), module_line("pkg.mod", module_file),
                                                  {"status": "truncated", "records": 1}))
    write(rundir, 101, 5, [], raw=good.encode() + b'{"name": "half')
    records = read_records(101, 5, UID, str(rundir))
    assert records.error is None and records.state is RecorderState.TRUNCATED and len(records.modules) == 1


FORGED = {
    "garbage": b"\x00\xff garbage\n",
    "not json": b"{nope\n",
    "no header": b'{"status": "disabled", "reason": "x"}\n',
    "wrong start time": None,
    "relative path": "relative",
    "nul in path": "nul",
    "bool as a count": "bool",
    "float mtime": "float",
    "duplicate key": "dup",
    "bad digest": "digest",
    "after a status": "after",
    "deep nesting": b"[" * 5000 + b"\n",
}


@pytest.mark.parametrize("kind", sorted(FORGED))
def test_a_forged_file_is_an_error_for_its_own_process_only(rundir, module_file, kind):
    valid = module_line("pkg.mod", module_file)
    forged = FORGED[kind]
    if isinstance(forged, bytes):
        write(rundir, 200, 9, [], raw=forged)
    elif forged is None:
        write(rundir, 200, 9, [header(200, 8), valid])
    elif forged == "dup":
        line = json.dumps(valid)[:-1] + ', "size": 1}\n'
        write(rundir, 200, 9, [], raw=(json.dumps(header(200, 9)) + "\n" + line).encode())
    else:
        bad = dict(valid)
        extra = []
        if forged == "relative":
            bad["path"] = "pkg/mod.py"
        elif forged == "nul":
            bad["path"] = str(module_file) + "\0.py"
        elif forged == "bool":
            bad["size"] = True
        elif forged == "float":
            bad["mtime_ns"] = 1.5
        elif forged == "digest":
            bad["blake2b"] = "zz" * 32
        elif forged == "after":
            extra, bad = [{"status": "truncated", "records": 0}], valid
        write(rundir, 200, 9, [header(200, 9), *extra, bad])
    write(rundir, 201, 9, [header(201, 9), valid])
    records = read_records(200, 9, UID, str(rundir))
    assert records is not None and records.modules == () and records.error is not None
    expected = ErrorKind.WRONG_PROCESS if forged is None else ErrorKind.MALFORMED
    assert records.error.kind is expected, records.error
    neighbour = read_records(201, 9, UID, str(rundir))
    assert neighbour.error is None and len(neighbour.modules) == 1


def test_a_huge_file_is_refused_unread(rundir):
    path = rundir / location.file_name(300, 1)
    with open(path, "wb") as f:
        f.truncate(READ_LIMIT + 1)
    records = read_records(300, 1, UID, str(rundir))
    assert records.error.kind is ErrorKind.TOO_LARGE


def test_a_symlinked_or_foreign_file_is_unsafe(rundir, tmp_path, module_file):
    target = tmp_path / "elsewhere.jsonl"
    target.write_text(json.dumps(header(301, 1)) + "\n")
    (rundir / location.file_name(301, 1)).symlink_to(target)
    assert read_records(301, 1, UID, str(rundir)).error.kind is ErrorKind.UNSAFE
    write(rundir, 302, 1, [header(302, 1, uid=UID + 1)])
    assert read_records(302, 1, UID + 1, str(rundir)).error.kind is ErrorKind.UNSAFE


def test_a_directory_others_may_enter_or_a_symlinked_one_is_unsafe(tmp_path, module_file):
    open_dir = tmp_path / "open"
    open_dir.mkdir(mode=0o755)
    open_dir.chmod(0o755)
    write(open_dir, 303, 1, [header(303, 1)])
    assert read_records(303, 1, UID, str(open_dir)).error.kind is ErrorKind.UNSAFE
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    write(real, 304, 1, [header(304, 1)])
    (tmp_path / "link").symlink_to(real)
    assert read_records(304, 1, UID, str(tmp_path / "link")).error.kind is ErrorKind.UNSAFE


def test_changed_tells_an_edit_a_rename_a_removal_and_a_same_stat_content_change(rundir, module_file, tmp_path):
    others = {}
    for name in ("edited", "renamed", "same", "removed", "hashed"):
        f = module_file.parent / f"{name}.py"
        f.write_text(f"NAME = {name!r}\n")
        others[name] = f
    write(rundir, 400, 3, [header(400, 3), module_line("pkg.mod", module_file, digest=True),
                           *(module_line(f"pkg.{n}", f, digest=True) for n, f in others.items())])
    records = read_records(400, 3, UID, str(rundir))
    assert records.error is None and changed(records) == []

    with open(others["edited"], "a") as f:
        f.write("breakpoint()\n")
    fresh = others["renamed"].with_suffix(".tmp")
    fresh.write_text("NAME = 'other'\n")
    os.replace(fresh, others["renamed"])
    same = others["same"].with_suffix(".tmp")
    same.write_bytes(others["same"].read_bytes())
    os.replace(same, others["same"])
    others["removed"].unlink()
    st = os.stat(others["hashed"])
    others["hashed"].write_text("NAME = 'HASHED'\n")  # same length
    os.utime(others["hashed"], ns=(st.st_atime_ns, st.st_mtime_ns))

    found = {c.module.name: c for c in changed(records)}
    assert {n: c.kind for n, c in found.items()} == {
        "pkg.edited": ChangeKind.MODIFIED, "pkg.renamed": ChangeKind.REPLACED, "pkg.same": ChangeKind.REPLACED,
        "pkg.removed": ChangeKind.MISSING, "pkg.hashed": ChangeKind.CONTENT}
    assert found["pkg.same"].same_content is True and found["pkg.renamed"].same_content is False


def test_a_forged_path_to_a_fifo_is_not_read(rundir, tmp_path):
    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)
    line = {"name": "x", "path": str(fifo), "dev": 0, "ino": 0, "size": 1, "mtime_ns": 0, "blake2b": "0" * 64}
    write(rundir, 401, 3, [header(401, 3), line])
    [change] = changed(read_records(401, 3, UID, str(rundir)))
    assert change.kind is ChangeKind.UNREADABLE


def test_start_ticks_and_file_names():
    ticks = location.start_ticks()
    with open(f"/proc/{os.getpid()}/stat") as f:
        assert ticks == int(f.read().rsplit(")", 1)[1].split()[19])
    assert location.parse_file_name(location.file_name(12, ticks)) == (12, ticks)
    for name in ("12.jsonl", "a-1.jsonl", "1-2.txt", "-1-2.jsonl", "１-2.jsonl"):
        assert location.parse_file_name(name) is None


def test_remove_stale_removes_only_gone_processes(rundir):
    mine = write(rundir, os.getpid(), location.start_ticks(), [header(os.getpid(), location.start_ticks())])
    reused = write(rundir, os.getpid(), location.start_ticks() + 1, [])
    with open("/proc/sys/kernel/pid_max") as f:
        gone = write(rundir, int(f.read()) + 1, 1, [])
    other = rundir / "notes.txt"
    other.write_text("kept")
    assert sorted(remove_stale(str(rundir))) == sorted([reused.name, gone.name])
    assert mine.exists() and other.exists() and not reused.exists() and not gone.exists()
