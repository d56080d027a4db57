"""RECORD rows held column by column (``model.RecordRows``): they stand for the tuple of
``RecordEntry`` they replaced, for every row a RECORD, a package manager or the parse cache can
give; and what the cold audit's memory work changed on the way (chunked line splitting, the
streaming buffer, the unowned walk's answer, imports an audit no longer needs)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pickle
import socket
import subprocess
import sys

import pytest

from driftscan.formats import record
from driftscan.caches.statcache import StatCache
from driftscan.core.values import Distribution, Hash, RecordEntry, RecordRows
from driftscan.environment import files

SHA = hashlib.sha256(b"x").digest()

ROWS = (
    RecordEntry("a.py", Hash("sha256", SHA), 1, 1),
    RecordEntry("b/", None, None, 2),
    RecordEntry("c.py", Hash("md5", hashlib.md5(b"x").digest(), "hex"), None, 3),
    RecordEntry("d.py", Hash("sha256", SHA, "hex"), 7, 4),  # conda's sha256: hex, kept as given
    RecordEntry("e.py", Hash("sha512", hashlib.sha512(b"x").digest()), 0, 5),
    RecordEntry("f.py", None, 12, 6),  # a size without a hash
    RecordEntry("g.py", Hash("sha256", SHA), 10**19 - 1, 7),  # the largest size a RECORD row may give
    RecordEntry("h.py", None, 1 << 70, 8),  # sizes no column holds: a hostile package record's
    RecordEntry("i.py", None, -3, 9),
    RecordEntry("j.py", Hash("sha256", SHA), True, 10),
    RecordEntry("k\udcff.py", Hash("sha256", SHA), 2, 11),  # an undecodable name, kept as an escape
)


def test_rows_read_back_as_the_entries_they_were_built_from():
    rows = RecordRows(ROWS)
    assert tuple(rows) == ROWS and len(rows) == len(ROWS)
    assert [rows[i] for i in range(len(ROWS))] == list(ROWS)
    assert rows[-1] == ROWS[-1] and rows[2:5] == ROWS[2:5]
    assert [type(rows[i][3]) for i in range(len(ROWS))] == [int] * len(ROWS)
    assert rows[9].size is True  # a bool given as size stays what it was (not 1)
    with pytest.raises(IndexError):
        rows[len(ROWS)]
    for i, entry in enumerate(ROWS):
        assert rows.hash(i) == entry.hash and rows.size(i) == entry.size and (rows.hash(i) is not None) == (entry.hash is not None)
    assert rows.paths == [e.path for e in ROWS] and list(rows.lines) == [e.line for e in ROWS]


def test_rows_compare_and_hash_as_the_tuple_they_stand_for():
    rows = RecordRows(ROWS)
    assert rows == ROWS and rows == RecordRows(ROWS) and hash(rows) == hash(ROWS)
    assert rows != ROWS[:-1] and rows != RecordRows(ROWS[:-1]) and rows != list(ROWS)
    assert RecordRows() == () and not RecordRows()
    changed = RecordRows(ROWS[:-1] + (ROWS[-1]._replace(size=3),))
    assert changed != rows
    assert repr(rows) == repr(ROWS)
    assert pickle.loads(pickle.dumps(rows)) == rows


def test_appending_after_freezing_keeps_every_row():
    rows = RecordRows(ROWS[:2])
    rows.append_sha256("z.py", SHA, 4, 20)
    rows.append(ROWS[2])
    rows.freeze()
    assert tuple(rows) == ROWS[:2] + (RecordEntry("z.py", Hash("sha256", SHA), 4, 20), ROWS[2])
    assert type(rows.digest(2)) is bytes and rows.digest(2) == SHA


def test_a_distribution_holds_its_entries_as_rows():
    dist = Distribution("a", "1", "/x/a-1.dist-info", "/x", entries=ROWS)
    assert type(dist.entries) is RecordRows and dist.entries == ROWS
    assert Distribution("a", "1", "/x/a-1.dist-info", "/x") == Distribution("a", "1", "/x/a-1.dist-info", "/x",
                                                                             entries=())
    assert dist == Distribution("a", "1", "/x/a-1.dist-info", "/x", entries=RecordRows(ROWS))
    rows = RecordRows(ROWS)
    assert Distribution("a", "1", "/x/a-1.dist-info", "/x", entries=rows).entries is rows  # not copied


def _b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


@pytest.mark.parametrize("lines", [1, 1200, 5000])
def test_a_long_record_parses_as_the_csv_module_reads_it(lines):
    """Lines are split a chunk at a time: rows across a chunk's end, blank lines, CRLF and quoted
    paths come out as the csv module gives them, line numbers included."""
    body = []
    for n in range(lines):
        path = f"pkg/module_{n}.py" if n % 97 else f'"pkg/with,comma_{n}.py"'
        body.append(f"{path},sha256={_b64(hashlib.sha256(str(n).encode()).digest())},{n}" if n % 5 else f"{path},,")
        if n % 211 == 3:
            body.append("")
    text = "\r\n".join(body) + "\r\n"
    assert (len(text) > record._CHUNK) == (lines > 1)
    entries, issues = [], []
    record._parse_csv(text, False, entries, issues)
    parsed = record.parse_record(text)
    assert parsed == record.ParsedRecord(tuple(entries), tuple(issues)) and len(parsed.entries) == lines


def test_lines_split_by_chunks_are_the_lines_of_the_text():
    for text in ["", "\n", "a" * record._CHUNK, "a" * record._CHUNK + "\n", "x\n" * record._CHUNK,
                 "a" * (record._CHUNK + 1) + "\nb", "\n" * (3 * record._CHUNK + 1)]:
        assert list(record._numbered_lines(text)) == list(enumerate(text.split("\n"), 1))


def test_the_parse_cache_gives_back_rows_equal_to_a_fresh_parse(tmp_path):
    text = "".join(f"{e.path},{'' if e.hash is None else record.hash_text(e.hash)},{'' if e.size is None else e.size}\n"
                   for e in ROWS[:7] if e.hash is None or e.hash.encoding != "hex")
    path = tmp_path / "RECORD"
    path.write_text(text)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - 10**10))
    st = os.stat(path)
    parsed = record.parse_record(text, allow_hex=True)
    cache = StatCache(str(tmp_path / "cache.bin"))
    cache.remember_record(str(path), st, True, parsed, read_at=st.st_ctime_ns + 10**10)
    cache.save()
    loaded = StatCache(str(tmp_path / "cache.bin")).parsed_record(str(path), st, True)
    assert loaded == parsed and type(loaded.entries) is RecordRows


@pytest.mark.parametrize("row", [
    ("a.py", "sha256", SHA, "base64", "1", 1),
    ("a.py", None, None, None, None, 1 << 80),
    ("a.py", None, None, None, None, "1"),
    (1, None, None, None, None, 1),
])
def test_a_forged_parse_cache_row_drops_the_parse(tmp_path, row):
    cache = StatCache(str(tmp_path / "cache.bin"))
    st = os.stat(tmp_path)
    from driftscan.caches.statcache import signature

    cache._records_loaded = True
    cache._records_data = {"/x/RECORD": (signature(st), False, ([row], []))}
    assert cache.parsed_record("/x/RECORD", st, False) is None


def test_a_parse_cache_row_with_a_huge_size_reads_back_as_it_was(tmp_path):
    from driftscan.caches.statcache import signature

    cache = StatCache(str(tmp_path / "cache.bin"))
    st = os.stat(tmp_path)
    cache._records_loaded = True
    cache._records_data = {"/x/RECORD": (signature(st), False, ([("a.py", "sha256", SHA, "base64", 1 << 70, 1)], []))}
    assert cache.parsed_record("/x/RECORD", st, False).entries == (RecordEntry("a.py", Hash("sha256", SHA), 1 << 70, 1),)


@pytest.mark.parametrize("size", [0, 1, files.STREAM_BUFFER - 1, files.STREAM_BUFFER, files.STREAM_BUFFER + 1,
                                  3 * files.STREAM_BUFFER + 17])
def test_streamed_digests_equal_hashlib(tmp_path, size):
    data = os.urandom(size)
    path = tmp_path / "f"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert files.digest_fd(fd, "sha256", size) == hashlib.sha256(data).digest()
    finally:
        os.close(fd)
    entry = RecordEntry("f", Hash("sha256", hashlib.sha256(data).digest()), size, 1)
    assert files.quick_check(str(path), entry) is files._PLAIN_OK  # read whole or streamed alike
    assert files.check_entry(str(path), entry) is files._PLAIN_OK
    if size:
        wrong = entry._replace(hash=Hash("sha256", hashlib.sha256(data[:-1] + bytes([data[-1] ^ 1])).digest()))
        assert files.quick_check(str(path), wrong) is None
        assert files.check_entry(str(path), wrong).status == files.MODIFIED


def test_a_file_longer_than_said_is_not_its_digest(tmp_path):
    """digest_fd reads one byte more than the size it is told: a file that grew hashes otherwise."""
    data = os.urandom(files.STREAM_BUFFER * 2)
    path = tmp_path / "f"
    path.write_bytes(data + b"more")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert files.digest_fd(fd, "sha256", len(data)) != hashlib.sha256(data).digest()
    finally:
        os.close(fd)


def test_the_report_names_the_host_as_socket_does():
    from driftscan.report.contract import _hostname

    assert _hostname() == socket.gethostname()


# Imports an audit without editable installs does not need (git runs only for editable sources).
UNNEEDED = ["driftscan.git", "pickle", "socket"]


def test_a_cold_audit_of_a_venv_leaves_git_pickle_and_socket_unimported(pristine_pip_venv):
    code = ("import json, sys; import driftscan.api as api; "
            f"api.audit(venv={str(pristine_pip_venv)!r}, use_cache=False); "
            f"print(json.dumps([m for m in {UNNEEDED!r} if m in sys.modules]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []
