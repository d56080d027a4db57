"""The engine: one parse and one walk per file, positions, file-level findings, errors."""

from __future__ import annotations

import os
import textwrap

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from driftscan.lint import RuleError, inspect_file, inspect_source, load_rules, select_rules
from driftscan.lint.positions import node_starts
from driftscan.lint.rule import Rule
from driftscan.core.values import Severity
from fixtures.paths import DATA as FIXTURE_DATA

DATA = os.path.join(FIXTURE_DATA, "inspect")

# print() (DBG109) runs only when selected: these tests select it.
WITH_PRINT = select_rules(load_rules(), ["DBG"])


def src(text: str) -> bytes:
    return textwrap.dedent(text).lstrip("\n").encode()


def codes(findings):
    return [(f.code, f.line, f.column) for f in findings]


def test_positions_match_libcst_position_provider():
    data = open(os.path.join(DATA, "deepseek_like.py"), "rb").read()
    module = cst.parse_module(data)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    expected = wrapper.resolve(PositionProvider)
    kinds = (cst.Call, cst.If, cst.Assign, cst.Attribute, cst.FunctionDef, cst.Comparison)
    wanted = [n for n in expected if isinstance(n, kinds)]
    assert len(wanted) > 50
    got = node_starts(module, wanted)
    assert {id(n): (expected[n].start.line, expected[n].start.column) for n in wanted} == got


def test_positions_with_crlf_and_multiline_strings():
    data = b'x = """a\r\nb"""\r\n\r\n\r\nif y:\r\n    print(1)\r\n'
    (finding,) = inspect_source(data, rules=[r for r in load_rules() if r.CODE == "DBG109"])
    assert (finding.line, finding.column, finding.snippet) == (6, 5, "print(1)")


def test_one_parse_and_one_walk_for_all_rules(monkeypatch):
    from driftscan.lint import engine

    parses, walks = [], []
    real_parse, real_walk = engine.cst.parse_module, engine.walk
    monkeypatch.setattr(engine.cst, "parse_module", lambda d: parses.append(1) or real_parse(d))
    monkeypatch.setattr(engine, "walk", lambda *a: walks.append(1) or real_walk(*a))
    findings = inspect_source(src("""
        import pdb, torch
        def forward(self, x):
            self._debug_n += 1
            breakpoint()
            torch.save(x, "/tmp/x.pt")
            print(x)
        """), rules=WITH_PRINT)
    assert {f.code for f in findings} >= {"DBG101", "DBG103", "DBG106", "DBG107", "DBG109"}
    assert (len(parses), len(walks)) == (1, 1)


def test_columns_are_one_based_and_snippets_stripped():
    (f,) = [f for f in inspect_source(b"if x:\n\tbreakpoint()\n") if f.code == "DBG106"]
    assert (f.line, f.column, f.snippet, f.severity) == (2, 2, "breakpoint()", Severity.HIGH)


def test_str_and_bytes_sources_agree():
    text = 'import torch\ntorch.save(x, "/tmp/é.pt")\n'
    assert inspect_source(text) == inspect_source(text.encode())


def test_inspect_file_reads_bytes_and_reports_unreadable(tmp_path):
    good = tmp_path / "m.py"
    good.write_bytes(b"breakpoint()\n")
    assert codes(inspect_file(str(good))) == [("DBG106", 1, 1)]
    missing = inspect_file(str(tmp_path / "nope.py"))
    assert [(f.code, f.severity) for f in missing] == [("DBG002", Severity.MEDIUM)]
    assert "could not read" in missing[0].message
    assert [f.code for f in inspect_file(str(tmp_path))] == ["DBG002"]  # a directory
    os.mkfifo(tmp_path / "pipe.py")
    (fifo,) = inspect_file(str(tmp_path / "pipe.py"))  # must not block
    assert (fifo.code, fifo.message) == ("DBG002", "could not read: not a regular file")


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b'print "x"\n', "DBG001"),  # Python 2
        (b"import pdb\nx = (1,\n", "DBG001"),  # syntax error where debug code could hide
        (b"breakpoint()\x00\n", "DBG001"),  # NUL byte
        (b"x = '\xff'\n", "DBG002"),  # not UTF-8
        (b"# coding: latin-9000\nx = 1\n", "DBG002"),  # unknown codec
        (b"\xef\xbb\xbfbreakpoint()\n", "DBG106"),  # a BOM is fine
        (b"\xef\xbb\xbfprint(1)\n", "DBG109"),  # ... and does not hide a print from the prefilter
    ],
)
def test_unusual_files_are_findings_not_crashes(data, code):
    for prefilter in (False, True):
        assert [f.code for f in inspect_source(data, prefilter=prefilter, rules=WITH_PRINT)] == [code]


def test_syntax_error_without_debug_patterns_is_not_reported():
    assert inspect_source(b"def f(:\n    return 1\n") == []


def test_size_cap(tmp_path):
    big = tmp_path / "big.py"
    big.write_bytes(b"x = 1\n" * 100)
    (f,) = inspect_file(str(big), max_bytes=100)
    assert (f.code, f.severity) == ("DBG003", Severity.LOW)
    assert "600 bytes" in f.message
    assert inspect_file(str(big), max_bytes=None) == []
    assert [g.code for g in inspect_source(b"x = 1\n" * 100, max_bytes=100)] == ["DBG003"]


def test_deep_nesting_does_not_exhaust_the_stack():
    deep = b"x = " + b"(" * 180 + b"breakpoint()" + b")" * 180 + b"\n"
    assert [f.code for f in inspect_source(deep)] in (["DBG106"], ["DBG001"])
    # Too deep for libcst's recursive code generation: found, position unknown.
    long_chain = b"import pdb\nx = " + b" + ".join(b"a" for _ in range(1500)) + b"\nprint(x)\n"
    findings = inspect_source(long_chain, rules=WITH_PRINT)
    assert [f.code for f in findings] == ["DBG107", "DBG109"]
    assert findings[0].line == 1 and "position unknown" not in findings[0].message
    assert "position unknown" in findings[1].message


def test_file_level_rules_only_when_selected():
    rules = [r for r in load_rules() if r.CODE != "DBG001"]
    assert inspect_source(b'print "x"\n', rules=rules) == []


class Exploding(Rule):
    CODE = "TST900"
    NAME = "exploding"
    MESSAGE = "boom"
    INVALID = ["x"]

    def visit_Name(self, node):
        raise ZeroDivisionError("boom")


def test_a_crashing_rule_raises_rule_error_naming_file_and_rule():
    with pytest.raises(RuleError, match=r"m\.py: a rule \(TST900\) failed: ZeroDivisionError"):
        inspect_source(b"x = 1\n", "m.py", rules=[Exploding])


def test_findings_sorted_by_position():
    findings = inspect_source(src("""
        print(1)
        import pdb
        breakpoint(); print(2)
        """), rules=WITH_PRINT)
    assert codes(findings) == sorted(codes(findings), key=lambda c: (c[1], c[2], c[0]))
    assert [c[:2] for c in codes(findings)] == [("DBG109", 1), ("DBG107", 2), ("DBG106", 3), ("DBG109", 3)]
