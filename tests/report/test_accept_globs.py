"""Accept entries' globs, found in review: a name from the tree is written as a literal, a bad or
pathological glob from a config is a one-line error or linear work, never a crash or a hang."""

from __future__ import annotations

import time

import pytest
from pydantic import ValidationError

from driftscan.report.accept import AcceptEntry, glob_match, literal
from fixtures.harness import run_cli


def test_a_name_with_glob_characters_is_written_as_a_literal():
    for name in ("toypkg/*.py", "x[z-a].py", "a?b/[c].py"):
        written = literal(name)
        assert glob_match(written, name)
        AcceptEntry(path=written, reason="kept")  # and it is a valid entry
    assert not glob_match(literal("toypkg/*.py"), "toypkg/core.py")


@pytest.mark.parametrize(("pattern", "subject", "expected"), [
    ("vllm/**/*.py", "vllm/a/b/c.py", True), ("vllm/**/*.py", "vllm/c.py", True),
    ("vllm/*.py", "vllm/a/c.py", False), ("**", "a/b/c", True), ("a?c", "abc", True), ("a?c", "a/c", False),
    ("x[ab].py", "xa.py", True), ("x[!ab].py", "xa.py", False), ("*.json", "config.json", True),
])
def test_glob_semantics(pattern, subject, expected):
    assert glob_match(pattern, subject) is expected


def test_a_pathological_glob_is_linear_work():
    started = time.perf_counter()
    assert not glob_match("**a" * 12 + "!", "a" * 200)
    assert time.perf_counter() - started < 5  # a backtracking regex takes hours here


def test_bad_globs_are_refused_when_the_entry_is_read(tmp_path):
    with pytest.raises(ValidationError, match="not a usable glob"):
        AcceptEntry(path="x[z-a].py", reason="r")
    with pytest.raises(ValidationError, match="wildcards"):
        AcceptEntry(path="*" * 40, reason="r")
    (tmp_path / "driftscan.toml").write_text('[[accept]]\npath = "x[z-a].py"\nreason = "r"\n')
    proc = run_cli("audit", "--model-dir", str(tmp_path), cwd=str(tmp_path))
    assert proc.returncode == 2 and "not a usable glob" in proc.stderr
    assert "internal error" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
