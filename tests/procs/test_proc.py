"""/proc files parsed as data: maps, stat, cmdline, status; bounded reads."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from driftscan.procs.proc import CMDLINE_LIMIT, parse_argv, parse_maps, parse_start_ticks, parse_uid, read_entry

MAPS = b"""\
55d0c0a00000-55d0c0a01000 r--p 00000000 fd:01 1234 /usr/bin/python3.11
7f0000000000-7f0000001000 r-xp 00001000 08:12 777 /venv/lib/python3.11/site-packages/a b/x.so (deleted)
7f0000001000-7f0000002000 r--p 00002000 08:12 777 /venv/lib/python3.11/site-packages/a b/x.so (deleted)
7f0000003000-7f0000004000 rw-p 00000000 00:00 0 
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]
7f0000005000-7f0000006000 r--p 00000000 103:02 99 /venv/lib/python3.11/site-packages/y.so
"""


def test_maps_give_each_file_once_with_its_device_inode_and_deletion():
    maps, truncated = parse_maps(MAPS)
    assert not truncated
    assert [(m.path, m.dev, m.inode, m.deleted) for m in maps] == [
        ("/usr/bin/python3.11", os.makedev(0xfd, 1), 1234, False),
        ("/venv/lib/python3.11/site-packages/a b/x.so", os.makedev(8, 0x12), 777, True),
        ("/venv/lib/python3.11/site-packages/y.so", os.makedev(0x103, 2), 99, False)]
    wanted, _ = parse_maps(MAPS, wanted=(b"/venv/",))
    assert [m.path for m in wanted] == [m.path for m in maps[1:]]
    cut, truncated = parse_maps(MAPS, lines=2)
    assert truncated and [m.path for m in cut] == ["/usr/bin/python3.11", maps[1].path]


def test_stat_start_time_is_read_past_a_hostile_comm():
    fields = " ".join(str(n) for n in range(3, 60))  # field 22 holds 22
    assert parse_start_ticks(f"42 (a) (b ) 19) {fields}".encode()) == 22


def test_cmdline_and_status():
    assert parse_argv(b"python\0-m\0pkg.mod\0") == ("python", "-m", "pkg.mod")
    assert parse_argv(b"") == ()
    assert parse_argv(b"ray::Worker rewrote its title") == ("ray::Worker rewrote its title",)
    assert parse_uid(b"Name:\tx\nUid:\t1000\t1000\t1000\t1000\n") == 1000
    assert parse_uid(b"Name:\tx\n") is None


def test_a_huge_command_line_is_read_bounded():
    proc = subprocess.Popen([sys.executable, "-c", "import sys; print('ready', flush=True); sys.stdin.read()",
                             *["x" * (60 << 10)] * 4],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"  # exec'd: its own command line is in place
        entry = read_entry(proc.pid)
        assert sum(len(a) + 1 for a in entry.argv) <= CMDLINE_LIMIT + 1
        assert entry.argv[0] == sys.executable and entry.exe is not None and entry.start_ticks > 0
        assert entry.maps is not None and len(entry.argv) < 6
    finally:
        proc.kill()
        proc.wait()


def test_our_own_entry_maps_our_interpreter():
    entry = read_entry(os.getpid())
    assert entry.uid == os.getuid() and entry.maps
    assert any(m.path == os.path.realpath(sys.executable) for m in entry.maps) or entry.exe


@pytest.mark.parametrize("name", ["stat", "cmdline", "status"])
def test_unreadable_entries_are_gone_not_errors(tmp_path, name):
    from driftscan.procs.proc import Gone

    fake = tmp_path / "7"
    fake.mkdir()
    for f in ("stat", "cmdline", "status"):
        if f != name:
            (fake / f).write_bytes(b"7 (x) S " + b"0 " * 30 if f == "stat" else b"x\0")
    with pytest.raises(Gone):
        read_entry(7, proc=str(tmp_path))
