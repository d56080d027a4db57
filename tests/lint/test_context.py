"""The per-file facts every rule may ask: imports and aliases, assignments, enclosing functions
and guards, and the cached classifications."""

from __future__ import annotations

import textwrap

import libcst as cst

from driftscan.lint.context import FileContext
from driftscan.lint.walker import walk


def probe(text: str, on_call, path: str = "m.py") -> FileContext:
    """Walk ``text`` with a context and call ``on_call(ctx, call)`` at every call."""
    ctx = FileContext(path)

    class Probe:
        def visit_Call(self, node):
            on_call(ctx, node)

    module = cst.parse_module(textwrap.dedent(text).lstrip("\n"))
    walk(module, ctx.stack, [ctx, Probe()])
    return ctx


def collect(text: str, ask) -> dict[str, object]:
    """``{callee: ask(ctx, call)}`` for every call of the file."""
    out: dict[str, object] = {}

    def on_call(ctx, node):
        out[cst.Module([]).code_for_node(node.func)] = ask(ctx, node)

    probe(text, on_call)
    return out


def test_qualified_names_follow_imports_and_aliases():
    text = """
    import numpy as xp
    import torch.distributed
    from pickle import dump as pdump
    from . import local
    xp.save(a)
    torch.distributed.breakpoint()
    pdump(a)
    np.save(a)
    local.save(a)
    """
    names = collect(text, lambda ctx, call: ctx.qualified_name(call.func))
    assert names == {
        "xp.save": "numpy.save",
        "torch.distributed.breakpoint": "torch.distributed.breakpoint",
        "pdump": "pickle.dump",
        "np.save": "numpy.save",  # a conventional alias with no import seen
        "local.save": "local.save",  # a relative import binds nothing
    }


def test_names_resolve_through_the_imports_seen_so_far():
    seen = []
    probe("np.save(a)\nimport cupy as np\nnp.save(b)\n", lambda ctx, c: seen.append(ctx.qualified_name(c.func)))
    assert seen == ["numpy.save", "cupy.save"]


def test_only_string_like_assignments_are_remembered_and_a_rebinding_forgets():
    ctx = probe('p = "/tmp/a"\nq: str = f"/tmp/{i}"\nr = "/tmp/r"\nr = 3\ns = t = "/tmp/s"\n', lambda *a: None)
    assert set(ctx.assignments) == {"p", "q"}


def test_functions_and_per_call_method():
    text = """
    class M:
        def forward(self, x):
            def inner():
                helper()
            inner()
        def setup(self):
            build()
    """
    got = collect(text, lambda ctx, call: ([f.name.value for f in ctx.functions()], ctx.in_per_call_method()))
    assert got["helper"] == (["inner", "forward"], "forward")
    assert got["inner"] == (["forward"], "forward")
    assert got["build"] == (["setup"], None)


def test_guards_are_the_ifs_whose_body_holds_the_node():
    text = """
    if a:
        if b:
            body()
        else:
            orelse()
    elif c:
        elif_body()
    if test():
        pass
    """
    got = collect(text, lambda ctx, call: [cst.Module([]).code_for_node(g.test) for g in ctx.guards()])
    assert got["body"] == ["b", "a"]
    assert got["orelse"] == ["a"]  # the else branch is not guarded by ``b``
    assert got["elif_body"] == ["c"]
    assert got["test"] == []  # a call in the test is not guarded by its own if


def test_in_main_block():
    text = """
    if __name__ == "__main__":
        main()
    other()
    """
    assert collect(text, lambda ctx, call: ctx.in_main_block()) == {"main": True, "other": False}


def test_one_shot_flags_need_not_in_the_test_and_true_in_the_body():
    text = """
    if not self._done and not other:
        self._done = True
        once()
    if not getattr(self, "_saved", False):
        setattr(self, "_saved", True)
        twice()
    if not self._never:
        never()
    """
    got = collect(text, lambda ctx, call: [ctx.one_shot_flags(g) for g in ctx.guards()])
    assert got["once"] == [("_done",)]
    assert got["twice"] == [("_saved",)]
    assert got["never"] == [()]


def test_action_classification_is_cached_per_call():
    seen = []

    def on_call(ctx, call):
        first = ctx.action(call)
        assert ctx.action(call) is first
        seen.append(first.kind if first else None)

    probe('import torch\ntorch.save(x, "/tmp/a.pt")\nlen(x)\n', on_call)
    assert seen == ["dump", None]


def test_path_info_resolves_a_name_assigned_earlier():
    text = """
    import torch
    path = f"/tmp/dump_{i}.pt"
    torch.save(x, path)
    """
    got = collect(text, lambda ctx, call: ctx.path_info(call.args[1].value).glob)
    assert got["torch.save"] == "/tmp/dump_*.pt"


def test_add_report_records_the_node_and_fields():
    ctx = FileContext("m.py")
    node = cst.Name("x")
    ctx.add_report(node, code="X001", name="x", severity=None, message="m", artifact_pattern=None)
    (hit,) = ctx.reports
    assert hit.node is node and hit.code == "X001" and hit.message == "m"
