"""The vocabulary of debug code on libcst nodes: marker words, per-call names, actions,
conditions and the reasons a call looks like debug code."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from driftscan.lint import analysis
from driftscan.lint.context import FileContext
from driftscan.lint.vocabulary import ActionKind, ReasonKind
from driftscan.lint.walker import walk


def expr(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


def at_calls(text: str, ask) -> list:
    """``ask(ctx, call)`` for every call of the file, in source order."""
    ctx = FileContext("m.py")
    out = []

    class Probe:
        def visit_Call(self, node):
            out.append(ask(ctx, node))

    walk(cst.parse_module(textwrap.dedent(text).lstrip("\n")), ctx.stack, [ctx, Probe()])
    return out


def actions(text: str) -> list:
    return [(a.kind, a.label) if a else None for a in at_calls(text, lambda ctx, c: analysis.classify_call(c, ctx))]


@pytest.mark.parametrize(("text", "marked"), [
    ("_nomla_debug", True), ("DEBUG_DUMP", True), ("_dumpedOnce", True), ("dbgCount", True),
    ("dumpling", False), ("undebuggable", False), ("debugger", False), ("", False),
])
def test_markers_are_whole_words(text, marked):
    assert analysis.has_marker(text) is marked


def test_words_are_lowercased():
    assert analysis.words("_nomlaDebugCount") == ["nomla", "debug", "count"]


@pytest.mark.parametrize(("name", "per_call"), [
    ("forward", True), ("_forward_prefill", True), ("forward_cuda", True), ("__call__", True),
    ("step", True), ("train_step", True), ("execute_model", True),
    ("stepper", False), ("__init__", False), ("execute", False),
])
def test_per_call_names(name, per_call):
    assert analysis.is_per_call_name(name) is per_call


def test_dotted_and_terminal_names():
    assert analysis.dotted_name(expr("a.b.c")) == "a.b.c"
    assert analysis.dotted_name(expr("f().b")) is None
    assert analysis.terminal_name(expr("self._n")) == "_n"
    assert analysis.terminal_name(expr("x[0]")) is None


def test_identifiers_include_fstring_parts_but_not_lambdas():
    assert analysis.identifiers(expr('f"/tmp/{self._n}_{x.shape[0]}"')) == {"self", "_n", "x", "shape"}
    assert analysis.identifiers(expr("g(lambda y: y + z)")) == {"g"}


def test_flags_set_true_skips_nested_functions():
    block = cst.parse_module(textwrap.dedent("""
        A.done = True
        setattr(self, "saved", True)
        other = False
        def later():
            self.inner = True
    """))
    assert analysis.flags_set_true(block) == {"done", "saved"}


def test_getattr_ref_needs_a_plain_object_and_a_literal_identifier():
    assert analysis.getattr_ref(expr('getattr(self, "_n", 0)')) == "_n"
    assert analysis.getattr_ref(expr('getattr(f(), "_n", 0)')) is None
    assert analysis.getattr_ref(expr('getattr(self, name, 0)')) is None
    assert analysis.getattr_ref(expr('getattr(self, "not valid", 0)')) is None


@pytest.mark.parametrize(("text", "main"), [
    ('__name__ == "__main__"', True), ("'__main__' == __name__", True),
    ('__name__ != "__main__"', False), ('__name__ == "main"', False),
])
def test_is_main_test(text, main):
    assert analysis.is_main_test(expr(text)) is main


def test_classify_call_kinds():
    text = """
    import torch, pdb
    from pathlib import Path
    torch.save(x, "/tmp/a.pt")
    arr.tofile("/tmp/a.bin")
    pdb.set_trace()
    obj.post_mortem()
    print(x)
    open("/tmp/a.txt", "w")
    open("/tmp/a.txt")
    Path("/tmp/a.txt").write_text(s)
    Path("/data/a.txt").write_text(s)
    torch. save(x, p)
    """
    assert actions(text) == [
        ("dump", "torch.save"),
        ("dump", "tofile"),
        ("debugger", "pdb.set_trace"),
        ("debugger", "obj.post_mortem"),
        ("print", "print"),
        ("tmp-write", "open"),
        None,  # open() to read
        ("tmp-write", "Path.write_text"),
        None,  # the Path(...) call inside it
        None,  # a write outside the temporary directories
        None,  # ... and its Path(...)
        None,  # ``torch. save``: a dot followed by a space is left alone
    ]
    assert {type(a[0]) for a in actions(text) if a} == {ActionKind}  # the members, equal to their words


def test_a_dump_into_memory_is_no_action():
    text = """
    import io, tempfile, torch
    buf = io.BytesIO()
    torch.save(x, buf)
    with tempfile.NamedTemporaryFile() as f:
        torch.save(x, f)
    torch.save(x, io.BytesIO())
    """
    kinds = [a for a in actions(text) if a and a[0] == "dump"]
    assert kinds == []


def test_print_counts_only_as_a_statement_and_only_the_builtin():
    assert actions("print(x)\n") == [("print", "print")]
    assert actions("y = print(x)\n") == [None]
    assert actions("(print(x))\n") == [None]
    assert actions("from rich import print\nprint(x)\n") == [None]


def test_a_dump_through_a_with_bound_file_uses_the_opened_path():
    text = """
    import pickle
    with open("/tmp/state.pkl", "wb") as f:
        pickle.dump(s, f)
    """
    paths = at_calls(text, lambda ctx, c: (a := analysis.classify_call(c, ctx)) and a.kind == "dump" and a.path.glob)
    assert "/tmp/state.pkl" in paths


def test_classify_condition():
    cond = analysis.classify_condition(expr('not Cls._dumped and x.size(0) == 7 and DEBUG'))
    assert cond.one_shot == ("_dumped",)
    assert cond.shape is True
    assert set(cond.markers) == {"_dumped", "DEBUG"}
    assert {"Cls", "_dumped", "x", "size", "DEBUG"} <= cond.names
    plain = analysis.classify_condition(expr("n > 3"))
    assert (plain.markers, plain.one_shot, plain.shape) == ((), (), False)


def test_a_switch_is_a_weak_reason_and_a_tmp_path_a_strong_one():
    text = """
    import torch
    if DEBUG:
        torch.save(x, "/tmp/a.pt")
    """
    (reasons,) = [r for r in at_calls(text, lambda ctx, c: analysis.debug_reasons(analysis.classify_call(c, ctx), ctx))]
    assert [(r.kind, r.strong) for r in reasons] == [(ReasonKind.TMP_PATH, True), (ReasonKind.SWITCH, False)]


def test_a_one_shot_flag_in_a_per_call_method_runs_once():
    text = """
    import torch
    class M:
        def forward(self, x):
            if not self._done:
                torch.save(x, p)
                self._done = True
    """
    (reasons,) = at_calls(text, lambda ctx, c: analysis.debug_reasons(analysis.classify_call(c, ctx), ctx))
    kinds = [r.kind for r in reasons]
    assert kinds == [ReasonKind.PER_CALL, ReasonKind.ONE_SHOT]
    assert "once per process" in reasons[0].text


def test_a_flag_that_is_also_a_marker_is_not_counted_as_a_switch():
    text = """
    import torch
    def f(self, x):
        if not self._dumped:
            torch.save(x, p)
            self._dumped = True
    """
    (reasons,) = at_calls(text, lambda ctx, c: analysis.debug_reasons(analysis.classify_call(c, ctx), ctx))
    assert [r.kind for r in reasons] == [ReasonKind.ONE_SHOT]


def test_in_debugging_helper_names_the_innermost_helper():
    text = """
    def install_pdb_hook():
        def run():
            go()
        return run
    def plain():
        stay()
    """
    assert at_calls(text, lambda ctx, c: analysis.in_debugging_helper(ctx)) == ["install_pdb_hook", None]
