"""scan_paths: walking, parallelism, and the prefilter never changing the findings."""

from __future__ import annotations

import os
import shutil

import pytest

import driftscan.lint
from driftscan.lint import ParseLimits, scan_paths
from driftscan.lint.registry import builtin_rules
from driftscan.lint.testing import iter_examples, source_of
from fixtures.paths import DATA

CORPUS = os.path.join(DATA, "inspect")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The static corpus, every rule example as a file, and files made at test time."""
    root = tmp_path_factory.mktemp("corpus")
    shutil.copytree(CORPUS, root / "static")
    examples = root / "examples"
    examples.mkdir()
    for rule in builtin_rules():
        if rule.EXAMPLE_MAX_BYTES:
            continue  # needs a different size cap
        for i, example in enumerate(iter_examples(rule)):
            (examples / f"{rule.CODE}_{i}.py").write_bytes(source_of(example))
    made = root / "made"
    made.mkdir()
    (made / "nul.py").write_bytes(b"x = 1\x00\n")
    (made / "nul_clean.py").write_bytes(b"\x00\x00\x00")
    (made / "bad_utf8.py").write_bytes(b"x = '\xff'\n")
    (made / "unknown_codec.py").write_bytes(b"# coding: nope\n")
    (made / "syntax_no_debug.py").write_bytes(b"def f(:\n")
    (made / "empty.py").write_bytes(b"")
    return root


def test_prefilter_changes_nothing_but_the_work(corpus):
    inspect_dir = os.path.dirname(driftscan.lint.__file__)
    real_code = [inspect_dir, os.path.join(os.path.dirname(inspect_dir), "rules")]  # code full of trigger words
    fast = scan_paths([str(corpus), *real_code], jobs=1)
    slow = scan_paths([str(corpus), *real_code], jobs=1, limits=ParseLimits(prefilter=False))
    assert fast.findings == slow.findings
    assert len({f.code for _, f in fast.findings}) >= 11
    assert (fast.files_scanned, fast.bytes_scanned) == (slow.files_scanned, slow.bytes_scanned)
    assert slow.files_parsed == slow.files_scanned
    assert fast.files_parsed < fast.files_scanned


def test_parallel_scan_gives_the_same_sorted_result(corpus):
    one = scan_paths([str(corpus)], jobs=1)
    two = scan_paths([str(corpus)], jobs=2)
    assert one.findings == two.findings
    order = sorted(one.findings, key=lambda pf: (pf[0], pf[1].line, pf[1].column, pf[1].code, pf[1].message))
    assert one.findings == order
    counts = (one.files_scanned, one.bytes_scanned, one.files_parsed)
    assert counts == (two.files_scanned, two.bytes_scanned, two.files_parsed)


def test_walk_rules(tmp_path):
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pkg" / "a.py").write_text("breakpoint()\n")
    (tmp_path / "pkg" / "__pycache__" / "b.py").write_text("breakpoint()\n")
    (tmp_path / "pkg" / "notes.txt").write_text("breakpoint()\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "c.py").write_text("breakpoint()\n")
    os.symlink(tmp_path / "elsewhere", tmp_path / "pkg" / "linked")
    os.symlink(tmp_path / "elsewhere" / "c.py", tmp_path / "pkg" / "d.py")
    script = tmp_path / "script"
    script.write_text("breakpoint()\n")
    result = scan_paths([str(tmp_path / "pkg"), str(script), str(tmp_path / "missing"), str(tmp_path / "pkg")], jobs=1)
    paths = [os.path.relpath(p, tmp_path) for p, _ in result.findings]
    # No __pycache__, no symlinked directory, no .txt while walking; symlinked files and
    # explicitly named files are scanned; a path named twice is scanned once.
    assert paths == ["pkg/a.py", "pkg/d.py", "script"]
    assert result.files_scanned == 3
    assert [(os.path.basename(p.path), p.message) for p in result.errors] == [("missing", "no such file or directory")]


def test_counts_and_rules(tmp_path):
    (tmp_path / "a.py").write_bytes(b"x = 1\n")
    (tmp_path / "b.py").write_bytes(b"print(1)\n")
    result = scan_paths([str(tmp_path)], jobs=1)
    assert (result.files_scanned, result.bytes_scanned, result.files_parsed) == (2, 15, 1)
    assert "DBG109" not in result.rules and "DBG101" in result.rules  # print() is off by default (as ruff's T20)
    selected = scan_paths([str(tmp_path)], jobs=1, select=["DBG1"])
    assert "DBG109" in selected.rules and [f.code for _, f in selected.findings] == ["DBG109"]


def test_a_crashing_rule_is_a_problem_and_the_scan_goes_on(tmp_path):
    from driftscan.lint.rule import Rule

    class Fragile(Rule):
        CODE = "TST901"
        NAME = "fragile"
        MESSAGE = "fragile"
        INVALID = ["x"]

        def visit_Name(self, node):
            if node.value == "boom":
                raise KeyError(node.value)
            self.report(node)

    (tmp_path / "a.py").write_text("boom\n")
    (tmp_path / "b.py").write_text("fine\n")
    result = scan_paths([str(tmp_path)], rules=[Fragile], jobs=2)
    assert [(os.path.basename(p), f.code) for p, f in result.findings] == [("b.py", "TST901")]
    (problem,) = result.errors
    assert problem.path.endswith("a.py") and "TST901" in problem.message and "KeyError" in problem.message
    assert result.files_scanned == 2


def test_nothing_selected_reads_but_parses_nothing(tmp_path):
    (tmp_path / "a.py").write_text("breakpoint()\n")
    result = scan_paths([str(tmp_path)], rules=[], limits=ParseLimits(prefilter=False), jobs=1)
    assert (result.findings, result.files_scanned, result.files_parsed) == ([], 1, 0)
