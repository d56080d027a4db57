"""DBG103 reports a counter only when nothing but debug code reads its value: a counter that
kept code returns, passes on or tests is a fix, and removing it would change what the code does.
Every path agrees: libcst's rule, the decision on CPython's tree (astdump), and the prefilters
(the byte trigger and the AST check never drop a finding). The message of a dump behind a
one-shot flag in a per-call method says it runs once, not on every call."""

from __future__ import annotations

import textwrap

import pytest

from driftscan.lint.engine import exact_findings, inspect_source
from driftscan.lint.noqa import apply_noqa
from driftscan.lint.triggers import Memo
from driftscan.core.values import Severity
from driftscan.lint.rules.debug_counter import DebugCounter
from driftscan.lint.rules.debug_tensor_dump import DebugTensorDump
from driftscan.lint.rules.debugger_call import DebuggerCall
from driftscan.lint.rules.debugger_import import DebuggerImport
from driftscan.lint.rules.tensor_save_call import TensorSaveCall

EXACT = [DebugTensorDump, TensorSaveCall, DebuggerCall, DebuggerImport, DebugCounter]


def src(text: str) -> bytes:
    return textwrap.dedent(text).lstrip("\n").encode()


def both_paths(data: bytes, rules=EXACT):
    """libcst's findings, after checking that CPython's tree decides the file the same way."""
    found = inspect_source(data, "<test>", rules)
    exact = exact_findings(data, "<test>", rules, Memo())
    assert exact is not None, "CPython's tree did not decide"
    assert apply_noqa(data, exact, rules) == found
    return found


def counters(data: bytes):
    found = [f for f in both_paths(data) if f.code == "DBG103"]
    assert [f for f in both_paths(data, [DebugCounter])] == found
    if found:  # the prefilters keep every file with a finding
        memo = Memo()
        assert DebugCounter.TRIGGER.matches(data, memo)
        assert DebugCounter.AST_CHECK.matches(data, memo)
        assert inspect_source(data, "<test>", [DebugCounter], prefilter=True) == found
    return found


KEPT = {
    "returned and dumped": """
        import torch
        def bump(x, y):
            y = y + 1
            torch.save(x, f"/tmp/y_{y}.pt")
            return y
        """,
    "augmented, returned and dumped": """
        import torch
        class M:
            def forward(self, x, dbg_y):
                dbg_y += 1
                torch.save(x, f"/tmp/y_{dbg_y}.pt")
                return x, dbg_y
        """,
    "a global read by a kept function": """
        import torch
        _CALLS = 0

        def tick(x):
            global _CALLS
            _CALLS += 1
            torch.save(x, f"/tmp/calls_{_CALLS}.pt")

        def calls():
            return _CALLS
        """,
    "a module-level counter read by a kept function": """
        import torch
        dump_count = 0
        dump_count += 1
        torch.save(x, f"/tmp/x_{dump_count}.pt")

        def total():
            return dump_count * 2
        """,
    "an attribute another method reads": """
        import torch
        class M:
            def forward(self, x):
                self._nomla_debug += 1
                if self._nomla_debug < 3:
                    torch.save(x, f"/tmp/x_{self._nomla_debug}.pt")
                return x

            def stats(self):
                return {"calls": self._nomla_debug}
        """,
    "an argument of a kept call": """
        import torch
        class M:
            def forward(self, x):
                self._n = getattr(self, "_n", 0) + 1
                torch.save(x, f"/tmp/x_{self._n}.pt")
                return self.scale(x, self._n)
        """,
    "an operand of a kept expression": """
        import torch
        def step(x, dbg_i):
            dbg_i = dbg_i + 1
            torch.save(x, f"/tmp/x_{dbg_i}.pt")
            out = x * dbg_i
            return out
        """,
    "a condition guarding kept code": """
        import torch
        class M:
            def forward(self, x):
                self.calls += 1
                if self.calls > 3:
                    torch.save(x, "/tmp/x.pt")
                else:
                    x = x * 2
                return x
        """,
    "a closure's read": """
        import torch
        def outer(x):
            dbg_n = 0
            dbg_n += 1
            torch.save(x, f"/tmp/x_{dbg_n}.pt")
            def inner():
                return dbg_n
            return inner
        """,
    "a checkpoint's step": """
        import torch
        class Trainer:
            def save(self, state):
                self.global_step += 1
                torch.save(state, f"{self.output_dir}/checkpoint-{self.global_step}.pt")
        """,
}


@pytest.mark.parametrize("name", list(KEPT))
def test_a_counter_kept_code_reads_is_no_debug_counter(name):
    assert counters(src(KEPT[name])) == []


def test_a_local_counter_is_not_kept_by_a_name_alike_in_another_function():
    data = src(
        """
        import torch
        def bump(x):
            dbg_n = 0
            dbg_n += 1
            torch.save(x, f"/tmp/x_{dbg_n}.pt")

        def other(dbg_n):
            return dbg_n
        """
    )
    found = counters(data)
    assert [(f.line, f.severity) for f in found] == [(4, Severity.HIGH)]


DEBUG = {
    "the seed's counter": (
        """
        import torch
        class DeepseekV2MLAAttention:
            def __init__(self):
                self._nomla_debug = 0

            def forward(self, positions, hidden_states):
                self._nomla_debug += 1
                if self._nomla_debug <= 2:
                    torch.save(hidden_states, f"/tmp/nomla_{self._nomla_debug}.pt")
                return hidden_states
        """,
        7,
        "feeds a debug dump",
    ),
    "only in a dump's file name": (
        """
        import numpy as np
        class Probe:
            def step(self, x):
                self.calls += 1
                np.save(f"/tmp/probe_{self.calls}.npy", x)
                return x * 2
        """,
        4,
        "feeds a debug dump",
    ),
    "only in a one-shot guard": (
        """
        import torch
        class M:
            def forward(self, x):
                self.calls += 1
                if not self._saved and self.calls == 10:
                    self._saved = True
                    torch.save(x, "/tmp/x.pt")
                return x
        """,
        4,
        "feeds a debug dump",
    ),
    "only in a debug print": (
        """
        class M:
            def forward(self, x):
                self._dbg_calls += 1
                if self._dbg_calls % 100 == 0:
                    print("calls", self._dbg_calls)
                return x
        """,
        3,
        "named as a debug counter",
    ),
    "x = x + 1 only in a /tmp write": (
        """
        def run(x, n):
            n = n + 1
            with open(f"/tmp/run_{n}.txt", "w") as f:
                f.write(str(x))
            return x
        """,
        2,
        "feeds a debug dump",
    ),
}


@pytest.mark.parametrize("name", list(DEBUG))
def test_a_counter_only_debug_code_reads_is_reported(name):
    text, line, words = DEBUG[name]
    found = counters(src(text))
    assert [(f.line, f.severity) for f in found] == [(line, Severity.HIGH)]
    assert words in found[0].message


def test_a_dump_behind_a_one_shot_flag_in_forward_runs_once():
    data = src(
        """
        import torch
        class M:
            def forward(self, x):
                if not self._dumped:
                    self._dumped = True
                    torch.save(x, "/tmp/x.pt")
                return x
        """
    )
    (dump,) = [f for f in both_paths(data) if f.code == "DBG101"]
    assert "in forward(), behind a one-shot flag: runs once per process" in dump.message
    assert "every call" not in dump.message


def test_a_dump_in_forward_without_a_flag_still_runs_on_every_call():
    data = src(
        """
        import torch
        class M:
            def forward(self, x):
                torch.save(x, "/tmp/x.pt")
                return x
        """
    )
    (dump,) = [f for f in both_paths(data) if f.code == "DBG101"]
    assert "runs on every call of forward()" in dump.message


AGREE = [
    # a print in parentheses is no print statement: its read is kept code's
    """
    class M:
        def forward(self, x):
            self._dbg_calls += 1
            (print(self._dbg_calls))
            print(self._dbg_calls)
            return x
    """,
    # reads in targets, comprehensions, lambdas, with, except, del, walrus, decorators, defaults
    """
    import torch
    class M:
        @deco(dbg_a)
        def forward(self, x, k=dbg_b, *, j: dbg_c = 1):
            dbg_a += 1
            dbg_b += 1
            dbg_c += 1
            dbg_d += 1
            dbg_e += 1
            dbg_f = dbg_f + 1
            self.dbg_g += 1
            dbg_h += 1
            torch.save(x, f"/tmp/{dbg_a}{dbg_b}{dbg_c}{dbg_d}{dbg_e}{dbg_f}{self.dbg_g}{dbg_h}.pt")
            out[dbg_d] = [y for y in x if y > dbg_e]
            with ctx(dbg_f) as (p, q):
                pass
            try:
                pass
            except Err as dbg_h:
                pass
            del self.dbg_g
            f = lambda z=dbg_h: z
            if (w := dbg_h):
                pass
            return x
    """,
    # a nonlocal counter the enclosing function reads
    """
    import torch
    def outer(x):
        dbg_n = 0
        def inner():
            nonlocal dbg_n
            dbg_n += 1
            torch.save(x, f"/tmp/x_{dbg_n}.pt")
        inner()
        return dbg_n
    """,
    # elif and nested guards
    """
    import torch
    def f(x, dbg_n, dbg_m):
        dbg_n += 1
        dbg_m += 1
        if x:
            pass
        elif dbg_n > 2:
            if dbg_m:
                torch.save(x, "/tmp/x.pt")
    """,
]


@pytest.mark.parametrize("text", AGREE, ids=[f"agree-{i}" for i in range(len(AGREE))])
def test_kept_reads_alike_on_both_paths(text):
    counters(src(text))


def test_a_match_statement_goes_to_libcst_when_a_counters_reads_decide():
    data = src(
        """
        import torch
        class M:
            def forward(self, x):
                self._dbg_n += 1
                match x:
                    case 1:
                        pass
                return x
        """
    )
    assert exact_findings(data, "<test>", [DebugCounter], Memo()) is None
    assert [f.line for f in inspect_source(data, "<test>", [DebugCounter])] == [4]


def test_a_counter_copied_into_a_name_only_a_dump_reads_is_still_debug():
    data = src(
        """
        import torch
        class M:
            def forward(self, x):
                self._dbg += 1
                i = self._dbg
                j = i
                torch.save(x, "/tmp/dump_%d.pt" % j)
                return x
        """
    )
    assert [f.line for f in counters(data)] == [4]


def test_a_counter_copied_into_a_name_kept_code_reads_is_kept():
    data = src(
        """
        import torch
        class M:
            def forward(self, x):
                self._dbg += 1
                i = self._dbg
                torch.save(x, "/tmp/dump_%d.pt" % i)
                return x * i
        """
    )
    assert counters(data) == []
