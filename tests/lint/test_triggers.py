"""The byte-level prefilter: triggers match where their rules could report, and are combinable."""

from __future__ import annotations

import pytest

from driftscan.lint import triggers
from driftscan.lint.triggers import AllOf, AnyOf, Memo, Trigger


def test_a_trigger_needs_a_needle_and_the_pattern():
    t = Trigger(rb"foo\(", (b"foo",))
    assert t.matches(b"x = foo(1)")
    assert not t.matches(b"x = foo")  # needle, no pattern
    assert not Trigger(rb"o\(", (b"zzz",)).matches(b"foo(")  # pattern, no needle


def test_a_case_insensitive_trigger_must_be_written_in_lowercase():
    with pytest.raises(ValueError):
        Trigger(rb"Debug", (b"debug",), ignore_case=True)
    t = Trigger(rb"debug", (b"debug",), ignore_case=True)
    assert t.matches(b"DEBUG = 1") and t.matches(b"Debug")


def test_a_memo_gives_the_same_answer_and_remembers_it():
    t = Trigger(rb"foo", (b"foo",))
    memo = Memo()
    assert t.matches(b"foo", memo) is True
    # The memo answers for that file from now on, whatever the bytes.
    assert t.matches(b"bar", memo) is True
    assert t.matches(b"bar", Memo()) is False


def test_any_of_and_all_of():
    a, b = Trigger(rb"a", (b"a",)), Trigger(rb"b", (b"b",))
    assert AnyOf(a, b).matches(b"b") and not AnyOf(a, b).matches(b"c")
    assert AllOf(a, b).matches(b"ab") and not AllOf(a, b).matches(b"a")


def test_descriptions_use_labels_and_regexes():
    a = Trigger(rb"a\(", label="call of a")
    b = Trigger(rb"b\(")
    assert a.describe() == "call of a"
    assert b.describe() == r"b\("
    assert triggers.describe_trigger(AnyOf(a, b)) == r"*call of a* or `b\(`"
    assert Trigger(rb"x", ignore_case=True).regex_text() == "(?i)x"


def test_named_triggers_lists_labelled_parts_outermost_first():
    inner = Trigger(rb"x", label="inner")
    outer = AnyOf(inner, Trigger(rb"y"), label="outer")
    assert triggers.named_triggers(outer) == [outer, inner]
    assert triggers.named_triggers(Trigger(rb"z")) == []


@pytest.mark.parametrize(("trigger", "yes", "no"), [
    (triggers.DUMP, b"torch.save(x, p)", b"torch.load(p)"),
    (triggers.DUMP, b"from torch import save\n", b"import torch\n"),
    (triggers.DUMP, b"np.savez (\\\n  f, x)", b"savings = 1"),
    (triggers.TMP, b"'/var/tmp/x'", b"'/home/x'"),
    (triggers.DEBUGGER, b"breakpoint()", b"breakpoints_total = 1"),
    (triggers.DEBUGGER_MODULES, b"import pydevd_pycharm", b"import pdbx"),
    (triggers.PRINT, b"if x: print(1)", b"x = print(1)"),
    (triggers.PRINT, b"\xef\xbb\xbfprint(1)", b"pprint(1)"),
    (triggers.SHAPE, b"x.shape[0]", b"shape = 1"),
    (triggers.SHAPE, b"x.size (0)", b"x.size"),
    (triggers.MARKER_ASSIGN, b"self._DEBUG_n += 1", b"self.debug_n = 0"),
    (triggers.MARKER_ASSIGN, b"dbg_i = dbg_i + 1", b"dbg == x + 1"),
    (triggers.INCREMENT, b"n += 1", b"n -= 1"),
    (triggers.INCREMENT, b"n = 1 + n", b"s = '+'"),
    (triggers.MARKER_TRUE, b"Cls._dumped = True", b"Cls._dumped = False"),
    (triggers.MARKER_TRUE, b"setattr(self, '_debug_done', True)", b"self.done = True"),
    (triggers.LAZY_COUNTER, b"getattr(self, 'n', 0) + 1", b"getattr(self, 'n', 0)"),
    (triggers.LAZY_COUNTER, b"1 + getattr(self, 'n', 0)", b"x + getattr"),
    (triggers.PYTHON2, b"x = 1\nprint 'hi'\n", b"x = 1\nprint('hi')\n"),
    (triggers.PYTHON2, b"try:\n    f()\nexcept ValueError, e:\n    pass\n", b"except (A, B) as e:\n"),
    (triggers.NUL, b"x\x00", b"x"),
])
def test_shared_triggers_match_what_they_stand_for(trigger, yes, no):
    assert trigger.matches(yes, Memo())
    assert not trigger.matches(no, Memo())


def test_the_start_of_a_file_counts_as_a_line_start_for_python2_statements():
    assert triggers.PYTHON2.matches(b'print "x"\n')


def test_python_ast_parses_once_per_memo_and_rejects_broken_or_too_deep_code():
    memo = Memo()
    tree = triggers.python_ast(b"x = 1\n", memo)
    assert tree is not None and triggers.python_ast(b"ignored", memo) is tree
    assert memo["refusal"] is None
    assert triggers.python_ast(b"def f(:\n") is None
    deep = b"x = " + b"(" * 300 + b"1" + b")" * 300 + b"\n"
    memo = Memo()
    assert triggers.python_ast(deep, memo) is None and memo["refusal"]


def test_shape_guard_needs_a_shape_test_and_an_action_call_in_its_body():
    guard = triggers.SHAPE_GUARD
    assert guard.matches(b"if x.shape[0] == 1:\n    torch.save(x, p)\n")
    assert guard.matches(b"if x.numel():\n    open(p, 'w')\n")
    assert guard.matches(b"from m import writer\nif x.ndim:\n    writer(x)\n")  # an imported name may be anything
    assert not guard.matches(b"if x.shape[0] == 1:\n    y = f(x)\n")
    assert not guard.matches(b"if n == 1:\n    torch.save(x, p)\n")
    # The action in the else branch is not guarded by the shape test.
    assert not guard.matches(b"if x.shape[0] == 1:\n    pass\nelse:\n    torch.save(x, p)\n")


def test_shape_guard_finds_nested_ifs_and_matches_what_cpython_cannot_parse():
    nested = b"def f(x):\n    for i in y:\n        if x.dim() == 2:\n            print(x)\n"
    assert triggers.SHAPE_GUARD.matches(nested)
    assert triggers.SHAPE_GUARD.matches(b"def f(:\n")


def test_shape_guard_is_optimistic_when_the_memo_says_so():
    memo = Memo({triggers.OPTIMISTIC: True})
    assert triggers.SHAPE_GUARD.matches(b"x = 1\n", memo)
    assert "ast" not in memo


@pytest.mark.parametrize(("data", "bad"), [
    (b"x = 1\n", False),
    (b"x = '\xff'\n", True),
    (b"# coding: latin-1\nx = '\xff'\n", False),
    (b"# coding: nope\nx = 1\n", True),
    (b"\xef\xbb\xbf# coding: latin-1\n", True),  # a BOM and a non-UTF-8 declaration disagree
])
def test_undecodable_follows_the_declared_encoding(data, bad):
    assert triggers.Undecodable().matches(data) is bad
