"""DBG002 unreadable-file: bytes not valid in the declared encoding, and files that cannot be read."""

from __future__ import annotations

import os

import pytest

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


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_a_file_without_read_permission_is_reported(tmp_path):
    path = tmp_path / "secret.py"
    path.write_text("x = 1\n")
    path.chmod(0)
    try:
        (finding,) = inspect_file(str(path), [UnreadableFile])
    finally:
        path.chmod(0o644)
    assert finding.code == "DBG002" and "could not read" in finding.message


def test_a_directory_named_as_a_file_is_reported(tmp_path):
    (finding,) = inspect_file(str(tmp_path), [UnreadableFile])
    assert finding.code == "DBG002"
