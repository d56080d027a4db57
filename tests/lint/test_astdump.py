"""The rules decided on CPython's tree (lint/astdump.py: DBG101-DBG103, DBG106, DBG107) must
equal libcst's findings: on the rules' own examples, on hand-written corner cases (walk order,
bindings, paths, guards, counters, positions), on the test corpus, and — where it is on this
machine — on real files of the benchmark venv. Where CPython's tree cannot tell, the answer is
None (libcst decides)."""

from __future__ import annotations

import glob
import os
import random
import textwrap

import pytest

from driftscan.lint import astdump
from driftscan.lint.engine import exact_findings, inspect_source
from driftscan.lint.noqa import apply_noqa
from driftscan.lint.registry import builtin_rules
from driftscan.lint.testing import iter_examples, source_of
from driftscan.lint.triggers import Memo
from driftscan.lint.rules.debug_counter import DebugCounter
from driftscan.lint.rules.debug_tensor_dump import DebugTensorDump
from driftscan.lint.rules.debugger_call import DebuggerCall
from driftscan.lint.rules.debugger_import import DebuggerImport
from driftscan.lint.rules.tensor_save_call import TensorSaveCall
from fixtures.paths import DATA

RULES = [DebugTensorDump, TensorSaveCall, DebuggerCall, DebuggerImport, DebugCounter]
HERE = os.path.dirname(__file__)
VENV_SITE = "/tmp/bench/realenv/lib/python3.11/site-packages"


def src(text: str) -> bytes:
    return textwrap.dedent(text).lstrip("\n").encode()


def exact(data: bytes, rules=RULES):
    found = exact_findings(data, "<test>", rules, Memo())
    return None if found is None else apply_noqa(data, found, rules)


def libcst(data: bytes, rules=RULES):
    return inspect_source(data, "<test>", rules)


def assert_same(data: bytes, rules=RULES, *, must_decide: bool = True) -> None:
    got = exact(data, rules)
    if got is None:
        assert not must_decide, "CPython's tree did not decide"
        return
    assert got == libcst(data, rules)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.CODE)
def test_every_example_of_the_exact_rules_through_both_paths(rule):
    for example in iter_examples(rule):
        data = source_of(example)
        for rules in (RULES, [rule]):
            assert_same(data, rules)


def test_every_example_of_every_rule_through_both_paths():
    """Other rules' examples hold dump calls too (DBG105's shape guards, DBG104's one-shot flags)."""
    for rule in builtin_rules():
        for example in iter_examples(rule):
            assert_same(source_of(example), must_decide=False)


CASES = [
    # imports seen so far: the alias made after the call does not count...
    """
    def f(x):
        p.dump(x, "/tmp/a.pkl")
    import pickle as p
    """,
    # ...but a decorator is walked after its function's body
    """
    @p.dump(1, "/tmp/d.pkl")
    def f():
        import pickle as p
    """,
    # an except clause's type after its body; a class's bases after its body
    """
    import torch
    class A(torch.save(1, "/tmp/b.pt")):
        import numpy as torch
    """,
    # the path of `with open(p)` is computed when the open call is met (cached per node)
    """
    import pickle
    p = "/tmp/first.pkl"
    with open(p, "wb") as f:
        p = "/data/second.pkl"
        pickle.dump(1, f)
    """,
    """
    import pickle
    p = "/tmp/first.pkl"
    with open(p) as f:
        p = "/data/second.pkl"
        pickle.dump(1, f)
    """,
    # an assignment is seen by the calls in its own value
    """
    import torch
    path = torch.save(x, path)
    """,
    """
    import torch, os
    d = "/tmp"
    path = os.path.join(d, "dbg", f"x_{i}.pt")
    torch.save(x, path)
    """,
    # ephemeral targets: direct, through with, through assignment; and not
    """
    import io, torch, tempfile
    buf = io.BytesIO()
    torch.save(x, buf)
    with tempfile.NamedTemporaryFile() as f:
        torch.save(x, f)
    torch.save(x, io.BytesIO())
    buf = make()
    torch.save(x, buf)
    """,
    # guards: switches, one-shot flags, shapes, nesting, elif/else
    """
    import torch
    def run(x):
        if DEBUG_DUMP and x.shape[0] > 1:
            if not run._done:
                torch.save(x, "/data/out.pt")
                run._done = True
        elif debug:
            torch.save(x, "/data/y.pt")
        else:
            torch.save(x, "/data/z.pt")
    """,
    """
    import numpy as np
    class M:
        def forward_train(self, x):
            if getattr(self, "debug", False):
                np.save(f"/tmp/{self.name}_x.npy", x)
        def __call__(self, x):
            if self.config.get(dump=True):
                np.savez_compressed("out_%d.npz" % self.step, x=x)
    """,
    # paths: concatenation, bytes, %, format, join, Path, joinpath, with_suffix, str()
    """
    import pickle, os
    from pathlib import Path
    pickle.dump(a, open("/tmp/" "dbg_" "x.pkl", "wb"))
    pickle.dump(a, open(b"/var/tmp/y.pkl", "wb"))
    pickle.dump(a, open("/tmp/%s_%d.pkl" % (n, i), "wb"))
    pickle.dump(a, open("/tmp/{}_{{x}}.pkl".format(n), "wb"))
    pickle.dump(a, open(os.path.join("/dev/shm", name, "z.pkl"), "wb"))
    pickle.dump(a, open(str(Path("/tmp") / "dump" / "w.pkl"), "wb"))
    pickle.dump(a, open(Path(base).joinpath("debug", "v").with_suffix(".pkl"), "wb"))
    """,
    # keyword arguments, the file argument by keyword, star arguments
    """
    import torch, joblib
    torch.save(obj=x, f="/tmp/k.pt")
    joblib.dump(x, filename=f"/tmp/dump_{i}.joblib")
    torch.save(*args)
    torch.save(x, *rest)
    """,
    # tofile, a dotted receiver, a spaced dot (left alone), parenthesised calls
    """
    import torch
    arr.tofile("/tmp/t.bin")
    torch. save(x, "/tmp/s.pt")
    (torch.save)(x, "/tmp/p.pt")
    y = (torch.save(x, "/tmp/q.pt"))
    torch.jit.save(m, path)
    """,
    # default aliases, from-imports, relative and star imports
    """
    from torch import save as keep
    from . import pickle
    from numpy import *
    keep(x, "/tmp/a.pt")
    np.save("/tmp/b.npy", x)
    pickle.dump(x, f)
    """,
    # non-ASCII that no identifier can hold, anywhere (an f-string's text too)
    """
    import torch
    torch.save(x, f"/tmp/✅_{i}.pt"); print(f"done ⚠️ {i}")
    """,
    # a non-ASCII identifier NFKC leaves as it is
    """
    import torch
    chemin_é = "/tmp/é.pt"
    torch.save(x, chemin_é)
    """,
    # code points: a column after non-ASCII text in a string
    """
    import torch
    s = "héllo"; torch.save(x, "/tmp/ü.pt")
    """,
    """
    import torch  # a comment — with non-ASCII text
    def f(x):
        'A docstring — too.'
        torch.save(x, "/data/x.pt")  # and here: é
    """,
    # noqa
    """
    import torch
    torch.save(x, "/tmp/a.pt")  # noqa: DBG101
    torch.save(x, path)  # noqa
    """,
    # per-call names, nested functions, lambdas
    """
    import torch
    def training_step(batch):
        def inner():
            torch.save(batch, "b.pt")
        f = lambda: torch.save(batch, "c.pt")
    """,
    # debugger calls and imports: helpers, a module's own breakpoint, aliases
    """
    import pdb, ipdb
    from debugpy import listen as attach
    import torch.distributed as dist
    def _debug_hook():
        pdb.set_trace()
    def run():
        ipdb.post_mortem()
        attach(5678)
        dist.breakpoint()
        breakpoint()
        x.set_trace()
    """,
    """
    def breakpoint():
        import pdb
        pdb.set_trace()
    breakpoint()
    """,
    """
    import os, pdb, ipdb
    if x:
        from pdb import set_trace; set_trace()
    """,
    # counters: named, lazy, feeding a dump or its guard, reset, per call, one per function
    """
    import torch
    class M:
        def forward(self, x):
            self._dbg_count += 1
            self._n = getattr(self, "_n", 0) + 1
            self.k = self.k + 1
            self.j = 1 + self.j
            if self.k > 3 and not self.done(flag=True):
                torch.save(x, f"/tmp/x_{self.j}.pt")
            self._dbg_count += 1
        def step(self):
            idx += 1
            idx = 0
            dump_total += 1
            dump_total += (1)
            with open("/tmp/log.txt", "w") as f:
                f.write(str(written))
            written += 1
            calls += 1
            breakpoint(calls)
    """,
    """
    import pickle
    def run(xs):
        n_debug = 0
        for x in xs:
            n_debug += 1
            if DEBUG:
                pickle.dump(x, open("out.pkl", "wb"))
        flag = (lambda debug_items: debug_items)(xs)
        debug_items += 1
        if (lambda debug_items: 1)(0):
            pickle.dump(x, open("/tmp/a.pkl", "wb"))
    """,
    # match statements and async code
    """
    import torch
    async def forward(x):
        async with lock as f:
            torch.save(x, f)
        match x:
            case 1:
                torch.save(x, "/tmp/m.pt")
    """,
]


@pytest.mark.parametrize("text", CASES, ids=[f"case-{i}" for i in range(len(CASES))])
def test_corner_cases_through_both_paths(text):
    data = src(text)
    assert_same(data)
    assert_same(data, [DebugTensorDump])
    assert_same(data, [TensorSaveCall])
    assert_same(data, [DebuggerCall, DebuggerImport])
    assert_same(data, [DebugCounter])


UNDECIDED = [
    # a marker order only libcst's traversal gives
    """
    import torch
    if DEBUG or dump_now:
        torch.save(x, "/data/a.pt")
    """,
    # an f-string concatenated with a plain string, in a path
    """
    import torch
    torch.save(x, "/tmp/" f"{i}.pt")
    """,
    # an identifier CPython normalises (NFKC) and libcst does not
    """
    import torch
    torch.ｓave(x, "/tmp/a.pt")
    """,
    # an integer on its own line after a parenthesis: parenthesised or not
    """
    dbg_count += (
        1)
    """,
    # an identifier NFKC changes, in an f-string's field
    """
    import torch
    torch.save(x, f"/tmp/{ｓ}.pt")
    """,
    # ...or a combining sequence NFKC composes
    """
    import torch
    torch.save(x, é)
    """,
    # carriage returns
    "import torch\r\ntorch.save(x, '/tmp/a.pt')\r\n",
]


@pytest.mark.parametrize("text", UNDECIDED, ids=[f"undecided-{i}" for i in range(len(UNDECIDED))])
def test_what_cpythons_tree_cannot_tell_goes_to_libcst(text):
    data = src(text) if not text.startswith("import") else text.encode()
    assert exact(data) is None


def test_a_subclass_that_changes_a_rule_is_not_decided_on_cpythons_tree():
    class Quieter(TensorSaveCall):
        def visit_Call(self, node):
            return None

    assert astdump.exact_kind(TensorSaveCall) == astdump.DUMP_PLAIN
    assert astdump.exact_kind(Quieter) is None
    data = src("""
    import torch
    torch.save(x, path)
    """)
    assert exact(data, [Quieter]) is None
    assert exact(data, [TensorSaveCall, Quieter]) is None
    assert inspect_source(data, "<test>", [Quieter], prefilter=True) == []


def test_the_prefiltered_scan_uses_the_exact_path_and_finds_the_same(tmp_path, monkeypatch):
    import libcst

    data = src("""
    import torch
    def forward(x):
        torch.save(x, "/tmp/a.pt")
    """)
    calls = []
    real = libcst.parse_module
    monkeypatch.setattr(libcst, "parse_module", lambda *a, **k: calls.append(1) or real(*a, **k))
    rules = [r for r in builtin_rules() if r.DEFAULT_ENABLED]
    with_prefilter = inspect_source(data, "<test>", rules, prefilter=True)
    assert calls == []  # decided without libcst
    assert with_prefilter == inspect_source(data, "<test>", rules, prefilter=False)
    assert [f.code for f in with_prefilter] == ["DBG101"]


def _corpus() -> list[str]:
    return sorted(glob.glob(os.path.join(DATA, "**", "*.py"), recursive=True))


@pytest.mark.parametrize("path", _corpus(), ids=os.path.basename)
def test_corpus_files_through_both_paths(path):
    with open(path, "rb") as f:
        assert_same(f.read(), must_decide=False)


@pytest.mark.skipif(not os.path.isdir(VENV_SITE), reason="the benchmark venv is not on this machine")
def test_real_files_with_serialisation_calls_through_both_paths():
    paths = sorted(glob.glob(os.path.join(VENV_SITE, "torch", "**", "*.py"), recursive=True))
    candidates = []
    for path in random.Random(16).sample(paths, min(600, len(paths))):
        with open(path, "rb") as f:
            data = f.read()
        if len(data) < 60_000 and any(r.TRIGGER.matches(data) for r in RULES):
            candidates.append(data)
    for data in random.Random(16).sample(candidates, min(25, len(candidates))):
        assert_same(data, must_decide=False)
