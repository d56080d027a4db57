"""DBG002 unreadable-file: bytes not valid in the declared encoding, and files that cannot be read."""

from __future__ import annotations

import os


from driftscan.lint.engine import inspect_file, inspect_source
from driftscan.lint.rules.debugger_call import DebuggerCall
from driftscan.lint.rules.unreadable_file import UnreadableFile


def codes(data, rules=(UnreadableFile,)):
    return [(f.code, f.line) for f in inspect_source(data, "m.py", list(rules))]


def test_invalid_utf8_is_reported_on_the_line_of_the_bad_byte():
    assert codes(b"a = 1\nb = 2\nc = '\xc3('\n") == [("DBG002", 3)]


def test_a_declared_latin1_file_decodes():
    assert codes(b"# coding: latin-1\nx = '\xff'\n") == []


def test_a_utf8_bom_is_accepted():
    assert codes(b"\xef\xbb\xbfx = 1\n") == []


def test_an_unknown_codec_is_reported():
    found = codes(b"# -*- coding: klingon -*-\nx = 1\n")
    assert [c for c, _ in found] == ["DBG002"]


def test_an_undecodable_file_is_not_inspected_by_other_rules():
    data = b"breakpoint()\nx = '\xff'\n"
    assert [c for c, _ in codes(data, (UnreadableFile, DebuggerCall))] == ["DBG002"]


def test_valid_utf8_text_is_not_reported():
    assert codes("name = 'été ☃'\n") == []


def test_a_fifo_named_as_a_file_is_reported_without_blocking(tmp_path):
    """Root reads any file whatever its mode, so the unreadable case every user meets is a path
    that is not a regular file: a FIFO would block a plain open() forever."""
    path = tmp_path / "pipe.py"
    os.mkfifo(path)
    (finding,) = inspect_file(str(path), [UnreadableFile])
    assert finding.code == "DBG002" and "not a regular file" in finding.message


def test_a_directory_named_as_a_file_is_reported(tmp_path):
    (finding,) = inspect_file(str(tmp_path), [UnreadableFile])
    assert finding.code == "DBG002"
