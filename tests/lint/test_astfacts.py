"""The second-stage prefilter (lint/astfacts.py): a rule's AST_CHECK, on CPython's syntax
tree, must hold wherever the rule reports something. Checked on the rules' own examples, on
hand-written cases where name resolution, bindings and walk order matter, on the test corpus
and (where it exists) on a sample of the benchmark venv's files."""

from __future__ import annotations

import glob
import os
import random
import textwrap

import pytest

from driftscan.lint import analysis, astfacts, context
from driftscan.lint.engine import MAX_FILE_BYTES, inspect_source
from driftscan.lint.registry import builtin_rules
from driftscan.lint.rule import Invalid
from driftscan.lint.testing import iter_examples, source_of
from driftscan.lint.triggers import Memo
from fixtures.paths import DATA

RULES = [r for r in builtin_rules() if r.CODE != "DBG006"]  # DBG109 (opt-in) included
CHECKED = [r for r in RULES if r.AST_CHECK is not None]
HERE = os.path.dirname(__file__)
VENV_SITE = "/tmp/bench/realenv/lib/python3.11/site-packages"


def src(text: str) -> bytes:
    return textwrap.dedent(text).lstrip("\n").encode()


def same_with_and_without(data: bytes, path: str = "<test>") -> bool:
    return inspect_source(data, path, RULES, prefilter=True) == inspect_source(data, path, RULES, prefilter=False)


def checks(data: bytes) -> dict[str, bool]:
    memo = Memo()
    return {r.CODE: r.AST_CHECK.matches(data, memo) for r in CHECKED}


def test_vocabulary_is_analysis_and_context_vocabulary():
    assert astfacts.MARKER_WORDS == analysis.MARKER_WORDS
    assert astfacts._WORD_RE.pattern == analysis._WORD_RE.pattern
    assert astfacts.DUMP_FUNCTIONS == analysis.DUMP_FUNCTIONS
    assert astfacts.DEBUGGER_FUNCTIONS == analysis.DEBUGGER_FUNCTIONS
    assert astfacts.DEBUGGER_METHODS == analysis.DEBUGGER_METHODS
    assert astfacts.DEBUGGER_MODULES == analysis.DEBUGGER_MODULES
    assert astfacts.OPEN_FUNCTIONS == analysis._OPEN_FUNCTIONS
    assert astfacts.EPHEMERAL == analysis._EPHEMERAL
    assert astfacts.SHAPE_ATTRS == analysis._SHAPE_ATTRS and astfacts.SHAPE_METHODS == analysis._SHAPE_METHODS
    assert astfacts.DEFAULT_ALIASES == context._DEFAULT_ALIASES
    from driftscan.lint.dumppaths import TMP_DIRS

    assert astfacts.TMP_DIRS == TMP_DIRS


@pytest.mark.parametrize("rule", CHECKED, ids=lambda r: r.CODE)
def test_every_invalid_example_passes_its_rules_check(rule):
    for example in iter_examples(rule):
        data = source_of(example)
        if isinstance(example, Invalid):
            assert rule.AST_CHECK.matches(data, Memo()), data.decode()
        assert same_with_and_without(data), data.decode()


def test_every_example_of_every_rule_is_the_same_with_the_checks():
    for rule in RULES:
        for example in iter_examples(rule):
            assert same_with_and_without(source_of(example)), (rule.CODE, source_of(example))


# Cases where a check must hold (or the findings would differ): each is run through the engine
# with and without the prefilter, and the named check must hold.
MUST_HOLD = [
    ("DBG102", "from torch import save as keep\nkeep(x, path)\n"),
    ("DBG102", "import torch as t\nt.save(x, path)\n"),
    ("DBG102", "import numpy\nnumpy.savez(path, x)\n"),
    ("DBG102", "np.save(path, x)\n"),  # a conventional alias without an import
    ("DBG102", "def f(m):\n    (m.weight).numpy().tofile(path)\n"),
    ("DBG102", "a().tofile(path)\n"),
    ("DBG102", "import pickle\n@pickle.dump(x, f)\ndef g():\n    pass\n"),  # a call in a decorator
    ("DBG102", "import pickle\nx = [pickle.dump(y, f) for y in ys]\n"),
    ("DBG102", "import torch\nf'{torch.save(x, p)}'\n"),  # inside an f-string
    # Serialising to memory is no dump — unless the name is bound to something else first.
    ("DBG102", "import io, torch\ndef f(b):\n    torch.save(x, b)\nb = io.BytesIO()\n"),
    ("DBG102", "import io, torch\nb = io.BytesIO()\nb = open('x', 'wb')\ntorch.save(x, b)\n"),
    ("DBG102", "import io, torch\nb = io.BytesIO()\nwith open('x', 'wb') as b:\n    torch.save(x, b)\n"),
    ("DBG102", "import torch\nimport foo as io\nb = io.BytesIO()\ntorch.save(x, b)\n"),
    ("DBG102", "import io, torch\nb = io.BytesIO()\ny = torch.save(x, b)\n"),  # not a statement
    ("DBG102", "import io, torch\nb = io.BytesIO()\ntorch.save(x, f=b) if c else torch.save(x, b2)\n"),
    ("DBG102", "import io, torch\ntorch.save(x, f=b, g=io.BytesIO())\n"),
    ("DBG102", "import io, torch\n\n@deco\ndef f():\n    b = io.BytesIO()\n\n"
               "class A(torch.save(x, b)):\n    pass\n"),
    ("DBG101", "import torch\ndef forward(self, x):\n    torch.save(x, self.path)\n"),
    ("DBG103", "class A:\n    def forward(self):\n        self._nomla_debug += 1\n"),
    ("DBG103", "def f(self):\n    self.n = getattr(self, 'n', 0) + 1\n"),
    ("DBG103", "def f(self):\n    self.n = 1 + getattr(self, 'n', 0)\n"),
    ("DBG103", "import numpy as np\nn = 0\ndef f(x):\n    global n\n    n += 1\n    np.save(f'/tmp/x{n}.npy', x)\n"),
    ("DBG103", "def f(self):\n    self.k = self.k + 1\n    if self.k > 3:\n        import pdb; pdb.set_trace()\n"),
    ("DBG103", "def f(self):\n    c = c + 1\n    if c == 3:\n        @deco\n        def g():\n            breakpoint()\n"),
    ("DBG104", "def f(self):\n    if not self._dbg_done:\n        self._dbg_done = True\n"),
    ("DBG104", "def f(self, x):\n    if not getattr(self, 'done', False):\n        setattr(self, 'done', True)\n"
               "        open('/tmp/a', 'w').write(x)\n"),
    ("DBG104", "def f(self, x):\n    if x and not A.once:\n        A.once = B.other = True\n        breakpoint()\n"),
    ("DBG105", "def f(x):\n    if x.shape[0] == 3:\n        print(x)\n"),
    ("DBG105", "def f(x):\n    if x.dim() == 3:\n        for y in x:\n            torch.save(y, p)\n"),
    ("DBG106", "from pdb import set_trace as st\nst()\n"),
    ("DBG106", "from IPython import embed\nembed()\n"),
    ("DBG106", "import torch.distributed as dist\ndist.breakpoint()\n"),
    ("DBG106", "x.y.post_mortem()\n"),
    ("DBG107", "import os.path, pudb.remote\n"),
    ("DBG107", "from debugpy.server import api\n"),
    ("DBG108", "P = '/tmp/out.txt'\nwith open(P, 'w') as f:\n    f.write(x)\n"),
    ("DBG108", "from pathlib import Path\nd = Path('/dev/shm')\n(d / 'x').write_text(s)\n"),
    ("DBG108", "import io\nio.open(file='/var/tmp/x', mode='a')\n"),
    ("DBG108", "open(f'/tmp/{name}.log', 'w+')\n"),
    ("DBG108", "import os\nopen(os.path.join('/tmp', 'a'), mode='x')\n"),
    ("DBG109", "if x: print(x); print(y)\n"),
]


@pytest.mark.parametrize(("code", "text"), MUST_HOLD, ids=[f"{c}-{i}" for i, (c, _) in enumerate(MUST_HOLD)])
def test_check_holds_where_the_rule_reports(code, text):
    data = text.encode()
    (rule,) = [r for r in RULES if r.CODE == code]
    findings = inspect_source(data, "<test>", [rule])
    assert rule.AST_CHECK.matches(data, Memo()), text
    assert same_with_and_without(data), text
    # Most of these are findings; the rest are there for walk-order and binding corner cases.
    assert findings or code in ("DBG102", "DBG103", "DBG104", "DBG108"), text


# Cases the checks rule out (the point of them): each must be a file the rule reports nothing on.
MUST_NOT_HOLD = [
    ("DBG102", "import json\njson.dump(x, f)\nyaml.dump(x)\nmodel.save(path)\n"),
    ("DBG102", "import io, torch\nb = io.BytesIO()\ntorch.save(x, b)\n"),
    ("DBG102", "import io, torch\ndef f():\n    b = io.BytesIO()\n    torch.save(x, b)\n"),
    ("DBG102", "import tempfile, torch\nwith tempfile.TemporaryFile() as f:\n    torch.save(x, f)\n"),
    ("DBG102", "import io, torch\ntorch.save(x, io.BytesIO())\n"),
    ("DBG103", "def f(self):\n    self.count += 1\n    total = total + 1\n"),
    ("DBG104", "def f(self):\n    if not self._warned:\n        log.warning('x')\n        self._warned = True\n"),
    ("DBG105", "def f(x):\n    if x.shape[0] == 3:\n        y = torch.zeros(3)\n    print(x)\n"),
    ("DBG106", "tracer.start_trace()\nset_breakpoint = 1\n"),
    ("DBG107", "from .pdb import parse\nimport pdbx\n"),
    ("DBG108", "with open('/tmp/config.json') as f:\n    cfg = f.read()\nopen(path, 'w')\n"),
    ("DBG109", "x = print(y)\n"),
]


@pytest.mark.parametrize(("code", "text"), MUST_NOT_HOLD, ids=[f"{c}-{i}" for i, (c, _) in enumerate(MUST_NOT_HOLD)])
def test_check_rules_out_files_the_rule_is_silent_on(code, text):
    data = text.encode()
    (rule,) = [r for r in RULES if r.CODE == code]
    assert not rule.AST_CHECK.matches(data, Memo()), text
    assert inspect_source(data, "<test>", [rule]) == []
    assert same_with_and_without(data), text


def test_a_file_cpython_cannot_parse_passes_every_check():
    data = b"match x:\n    case 1:\n        torch.save(x, p)\nprint 'py2'\n"
    assert all(checks(data).values())


def test_a_file_only_cpython_parses_counts_as_parsed(tmp_path):
    from driftscan.lint.engine import inspect_path

    path = tmp_path / "m.py"
    path.write_bytes(b"import json\njson.dump(x, f)\n")  # DUMP's byte trigger: yes; the check: no
    findings, nbytes, parsed = inspect_path(str(path), RULES, True, MAX_FILE_BYTES)
    assert (findings, parsed) == ([], True)


def _corpus() -> list[str]:
    return sorted(glob.glob(os.path.join(DATA, "inspect", "**", "*.py"), recursive=True))


@pytest.mark.parametrize("path", _corpus(), ids=os.path.basename)
def test_corpus_files_are_the_same_with_the_checks(path):
    with open(path, "rb") as f:
        assert same_with_and_without(f.read(), path)


@pytest.mark.skipif(not os.path.isdir(VENV_SITE), reason="the benchmark venv is not on this machine")
def test_a_sample_of_real_files_is_the_same_with_the_checks():
    """60 files whose byte triggers hold and whose checks rule some rule out (the whole venv,
    13,182 files, was compared the same way once: benchmarks/results and docs/performance.md)."""
    paths = sorted(glob.glob(os.path.join(VENV_SITE, "torch", "**", "*.py"), recursive=True))
    random.Random(16).shuffle(paths)
    tried = 0
    for path in paths:
        if os.path.getsize(path) > 64 * 1024:
            continue
        with open(path, "rb") as f:
            data = f.read()
        memo = Memo()
        cut = [r for r in CHECKED if r.TRIGGER.matches(data, memo) and not r.AST_CHECK.matches(data, memo)]
        if not cut:
            continue
        assert same_with_and_without(data, path), path
        tried += 1
        if tried == 60:
            break
    assert tried == 60


def test_a_file_is_deferred_only_when_libcst_must_parse_it(tmp_path):
    from driftscan.lint.engine import inspect_path

    cut = tmp_path / "cut.py"
    cut.write_bytes(b"import json\n" + b"x = 1\n" * 100 + b"json.dump(x, f)\n")
    assert inspect_path(str(cut), RULES, True, MAX_FILE_BYTES, defer_over=10) == ([], cut.stat().st_size, True)
    # decided on CPython's tree (astdump.py): no libcst, so nothing to defer
    decided = tmp_path / "decided.py"
    decided.write_bytes(b"import torch\n" + b"x = 1\n" * 100 + b"torch.save(x, '/tmp/x.pt')\n")
    findings, size, parsed = inspect_path(str(decided), RULES, True, MAX_FILE_BYTES, defer_over=10)
    assert (size, parsed) == (decided.stat().st_size, True) and [f.code for f in findings] == ["DBG101"]
    # an f-string concatenated with a plain string: only libcst can tell
    kept = tmp_path / "kept.py"
    kept.write_bytes(b"import torch\n" + b"x = 1\n" * 100 + b"torch.save(x, '/tmp/' f'{x}.pt')\n")
    assert inspect_path(str(kept), RULES, True, MAX_FILE_BYTES, defer_over=10) == (None, kept.stat().st_size, True)
    findings, _, parsed = inspect_path(str(kept), RULES, True, MAX_FILE_BYTES)
    assert parsed and [f.code for f in findings] == ["DBG101"]


@pytest.mark.parametrize("text", [t for _, t in MUST_HOLD + MUST_NOT_HOLD])
def test_without_the_ast_checks_the_findings_are_the_same(tmp_path, text):
    """A deferred file is parsed without the checks (they passed already): running the rules
    they rule out changes nothing."""
    from driftscan.lint.engine import inspect_path

    path = tmp_path / "m.py"
    path.write_text(text)
    with_checks = inspect_path(str(path), RULES, True, MAX_FILE_BYTES)
    without = inspect_path(str(path), RULES, True, MAX_FILE_BYTES, ast_checks=False)
    assert with_checks == without


SHUFFLED_CASES = [
    b"x = 1\n", b"DEBUG = 1\nprint(x)\n", b"import pdb\n", b"Dump = 2\nx.dump(y)\n", b"n += 1  # DeBuG\n",
    b"from torch import save\n", b"\nprint 'x'\n", b"\n  exec 'x'\n", b"except E, e:\n", b"x = getattr(a, 'b', 0) + 1\n",
    b"open('/tmp/x', 'w')\n", b"IPython.embed()\ndebugpy.listen()\n", b"if x.shape[0]:\n    print(x)\n",
    b"PRINT(x)\nprint (x)\n", b"self.DBG_count = self.DBG_count + 1\n", b"y = x.tofile\n",
]


def test_shared_memo_gives_each_trigger_its_own_answer():
    """The memo lets one trigger's searches answer another's (a word missing from the lowered
    bytes is missing from the bytes): each trigger must still answer as it does alone."""
    files = [*SHUFFLED_CASES, *(open(p, "rb").read() for p in _corpus())]
    for r in RULES:
        for example in iter_examples(r):
            files.append(source_of(example))
    triggers = [r.TRIGGER for r in builtin_rules() if r.TRIGGER is not None]
    for data in files:
        alone = [t.matches(data, None) for t in triggers]
        for order in (triggers, triggers[::-1]):
            memo = Memo()
            shared = [t.matches(data, memo) for t in order]
            assert shared == (alone if order is triggers else alone[::-1]), data


def test_a_big_file_is_deferred_before_its_tree_is_built(tmp_path, monkeypatch):
    from driftscan.lint import engine, triggers
    from driftscan.lint.engine import AST_DEFER_BYTES, inspect_path

    big = tmp_path / "big.py"
    body = b"def forward(self, x):\n    if x.shape[0] == 2:\n        y = 1\n" + b"z = [1, 2, 3]\n" * (AST_DEFER_BYTES // 14)
    big.write_bytes(b"import json\njson.dump(x, f)\n" + body)
    built = []
    real = triggers.python_ast
    monkeypatch.setattr(triggers, "python_ast", lambda d, m=None: built.append(1) or real(d, m))
    monkeypatch.setattr(engine, "python_ast", triggers.python_ast)
    assert inspect_path(str(big), RULES, True, MAX_FILE_BYTES, defer_over=1024) == (None, big.stat().st_size, True)
    assert built == []
    # Parsed later, as a deferred file: its checks run although ast_checks is off.
    assert inspect_path(str(big), RULES, True, MAX_FILE_BYTES, ast_checks=False) == ([], big.stat().st_size, True)
    assert built
