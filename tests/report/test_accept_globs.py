"""Accept entries' globs, found in review: a name from the tree is written as a literal, a bad or
pathological glob from a config is a one-line error or linear work, never a crash or a hang."""

from __future__ import annotations

import random
import re
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


def _reference(pattern: str) -> re.Pattern[str]:
    """The glob semantics as a (backtracking) regex: fine for the short cases below."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2:]:
            end = pattern.index("]", i + 2 if pattern[i + 1] in "!]" else i + 1)
            body = pattern[i + 1:end]
            body = "^" + body[1:] if body.startswith("!") else body
            out.append("(?!/)[" + body.replace("\\", "\\\\").replace("[", "\\[") + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out), re.S)


def test_the_matcher_agrees_with_the_glob_semantics_on_random_cases():
    rng = random.Random(7)
    pieces = ["a", "b", "/", "*", "**", "**/", "?", "[ab]", "[!a]", ".py"]
    for _ in range(3000):
        pattern = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 6)))
        subject = "".join(rng.choice("ab/.") for _ in range(rng.randint(0, 8)))
        assert glob_match(pattern, subject) == bool(_reference(pattern).fullmatch(subject)), (pattern, subject)


def test_a_long_subject_against_many_wildcards_is_linear_work():
    """A tree controls its paths' length: 20 entries of 16 wildcards against a 3,600-character
    path took 0.4 s each pair (an audit of 30 such drifts: 12.9 s); with the states as bits it
    is a few milliseconds."""
    subject = "/".join(["a" * 200] * 18) + "/a1.txt"
    started = time.perf_counter()
    for k in range(20):
        assert not glob_match("**a" * 8 + f"?!{k}", subject)  # the suffix check cannot settle it
    assert time.perf_counter() - started < 1.0


def test_a_glob_over_the_length_cap_is_a_config_error():
    with pytest.raises(ValidationError, match="at most 1024"):
        AcceptEntry(path="a" * 1100 + "*", reason="r")
    AcceptEntry(path="a" * 1100, reason="a plain path may be long")
