"""The scan's scheduling: a shared queue by cost, whatever the order files are done in, gives the
result of a plain one-process scan; a file past its budget costs only itself; the prefilter's
syntax-tree checks keep to what the rules can report."""

from __future__ import annotations

import os
import random
import time

import pytest

import driftscan.lint.scan as scan_module
from driftscan.lint import ParseLimits, analysis, scan_paths, triggers
from driftscan.lint.registry import builtin_rules
from driftscan.lint.rule import Rule


def _corpus(root):
    """Files small and large (over DEFER_BYTES), with and without findings, a few broken."""
    root.mkdir()
    filler = "".join(f"\ndef helper_{i}(a, b):\n    return a * {i} + b\n" for i in range(900))  # ~40 KB
    assert len(filler) > scan_module.DEFER_BYTES
    for i in range(3):
        (root / f"big_dump_{i}.py").write_text(
            f"import torch\n{filler}\ndef forward(self, x):\n    if x.shape[0] == {i}:\n"
            f"        torch.save(x, '/tmp/d_{i}.pt')\n    return x\n")
        (root / f"big_clean_{i}.py").write_text(filler * (i % 3 + 1))
        (root / f"big_print_{i}.py").write_text(filler + "\nprint('hello')\n")  # only DBG001 could report
    for i in range(40):
        body = ["def f(x):\n    breakpoint()\n", "x = 1\n", "import pdb\n", "print 'old'\n",
                "def g(self):\n    self._debug_n += 1\n    torch.save(self, f'/tmp/x{self._debug_n}')\n"][i % 5]
        sub = root / f"pkg{i % 4}"
        sub.mkdir(exist_ok=True)
        (sub / f"m{i:02}.py").write_text(body)
    (root / "big_broken.py").write_text(filler + "\ndef broken(:\n    print(x)\n")
    return root


def _view(result):
    return (result.findings, [(p.path, p.message) for p in result.errors], result.files_scanned,
            result.bytes_scanned, result.files_parsed)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return _corpus(tmp_path_factory.mktemp("schedule") / "tree")


@pytest.fixture(scope="module")
def reference(corpus):
    return _view(scan_module.scan_paths([str(corpus)], jobs=1))


@pytest.mark.parametrize("knobs", [
    {},  # the defaults
    {"DEFER_BYTES": 0},  # every file that is parsed comes back and waits by its cost
    {"DEFER_BYTES": 1 << 30},  # none does
    {"BATCH_FILES": 1, "BATCH_BYTES": 1},  # one file at a time
    {"HEAVY_INFLIGHT_BYTES": 1},  # one deferred parse at a time
    {"RECYCLE_RSS": 1},  # a fresh worker after every parse
])
def test_any_schedule_gives_the_one_process_result(corpus, reference, monkeypatch, knobs, jobs=2):
    for name, value in knobs.items():
        monkeypatch.setattr(scan_module, name, value)
    if "RECYCLE_RSS" in knobs:
        monkeypatch.setenv("DRIFTSCAN_FORK", "fork")  # only forked workers are recycled
    result = scan_paths([str(corpus)], jobs=jobs)
    assert _view(result) == reference
    codes = {f.code for _, f in result.findings}
    assert {"DBG001", "DBG101", "DBG105", "DBG106", "DBG107"} <= codes


def test_three_workers_give_the_same_result(corpus, reference):
    assert _view(scan_paths([str(corpus)], jobs=3)) == reference


def test_the_queue_takes_the_largest_first_within_the_memory_in_flight(monkeypatch):
    monkeypatch.setattr(scan_module, "HEAVY_INFLIGHT_BYTES", 100)
    monkeypatch.setattr(scan_module, "BATCH_FILES", 2)
    queue = scan_module._Queue([("a", 5), ("b", 50), ("c", 20), ("d", 1)])
    assert queue.take(0) == ([("b", 50), ("c", 20)], scan_module.DEFER_BYTES, 0)  # largest first
    for path, nbytes in (("x", 90), ("y", 30), ("z", 60)):
        queue.defer(path, nbytes, nbytes)
    assert queue.take(0) == ([("x", 90)], None, 90)  # nothing in flight: the largest, whatever its size
    assert queue.take(90) == ([("a", 5), ("d", 1)], scan_module.DEFER_BYTES, 0)  # 30 and 60 do not fit
    assert queue.take(90) is None  # nothing fits yet: wait
    assert queue.take(40) == ([("z", 60)], None, 60)  # the largest that fits
    assert queue.take(0) == ([("y", 30)], None, 30)
    assert not queue


class StallOnMarker(Rule):
    """Test rule: stalls on a file marked for it (a file past its budget)."""

    CODE = "TST902"
    NAME = "stall-on-marker"
    MESSAGE = "never reported"

    def visit_Module(self, node):
        if "STALL_HERE" in self.context.path:
            time.sleep(60)


@pytest.mark.parametrize("where", ["deferred", "in-batch"])
def test_a_file_past_its_budget_is_reported_and_the_rest_goes_on(tmp_path, monkeypatch, where):
    monkeypatch.setattr(scan_module, "FILE_BUDGET", 1.0)
    monkeypatch.setattr(scan_module, "FILE_BUDGET_PER_MB", 0.0)
    monkeypatch.setattr(scan_module, "BATCH_FILES", 64)
    monkeypatch.setattr(scan_module, "BATCH_BYTES", 1 << 30)
    root = tmp_path / "t"
    root.mkdir()
    for i in range(12):
        (root / f"ok_{i:02}.py").write_text(f"def forward(x):\n    breakpoint()  # {i}\n")
    marked = root / "STALL_HERE.py"
    # Deferred: larger than DEFER_BYTES, parsed alone; in a batch: small, among the others.
    marked.write_text("x = 1\n" * (scan_module.DEFER_BYTES // 6 + 10) if where == "deferred" else "x = 1\n")
    result = scan_paths([str(root)], rules=[*builtin_rules(), StallOnMarker], jobs=2)
    by_file: dict[str, set] = {}
    for p, f in result.findings:
        by_file.setdefault(os.path.basename(p), set()).add(f.code)
    assert by_file["STALL_HERE.py"] == {"DBG004"}
    (stall,) = [f for p, f in result.findings if p.endswith("STALL_HERE.py")]
    assert "longer than its 1 s budget" in stall.message
    assert all(by_file[f"ok_{i:02}.py"] == {"DBG106"} for i in range(12))
    assert result.files_scanned == 13 and not result.errors


def test_the_syntax_tree_checks_know_every_action_and_shape(monkeypatch):
    """ShapeGuard's names are the analysis's: an action or a shape it did not know would be a
    finding the prefilter hides."""
    callees = {k.rpartition(".")[2] for k in (*analysis.DUMP_FUNCTIONS, *analysis.DEBUGGER_FUNCTIONS,
                                                *analysis._OPEN_FUNCTIONS)}
    callees |= set(analysis.DEBUGGER_METHODS) | {"tofile", "write_text", "write_bytes", "print"}
    assert callees <= triggers.ACTION_CALLEES
    assert triggers.SHAPE_ATTRS == analysis._SHAPE_ATTRS and triggers.SHAPE_METHODS == analysis._SHAPE_METHODS


@pytest.mark.parametrize("source, hit", [
    ("if x.shape[0] == 2:\n    torch.save(x, p)\n", True),
    ("if x.size(0) > 4:\n    print(x)\n", True),
    ("if x.numel() == 0:\n    import pdb; pdb.set_trace()\n", True),
    ("from torch import save as keep\nif x.ndim:\n    keep(x, p)\n", True),  # an alias can be anything
    ("if a:\n    pass\nelif x.dim() == 3:\n    breakpoint()\n", True),
    (("class A:\n    def f(self, x):\n        for y in x:\n            try:\n                pass\n"
      "            except E:\n                if y.shape:\n                    open(p, 'w')\n"), True),
    ("def f(x:\n", True),  # CPython cannot parse it: the trigger cannot tell, so it matches
    ("if x.shape[0] == 2:\n    y = x + 1\nprint(x.shape)\n", False),  # the print is not guarded
    ("if x.shape[0] == 2:\n    pass\nelse:\n    print(x)\n", False),  # else is not the guarded body
    ("if flag:\n    print(x.shape)\n", False),  # the shape is not in the test
])
def test_the_shape_guard_trigger(source, hit):
    assert triggers.SHAPE_GUARD.matches(source.encode(), triggers.Memo()) is hit


def test_a_file_only_the_parse_rules_look_at_is_parsed_by_cpython_and_reported_the_same(tmp_path):
    (tmp_path / "ok.py").write_text("def f():\n    print('x')\n")
    (tmp_path / "bad.py").write_text("def f(:\n    print('x')\n")
    fast = scan_paths([str(tmp_path)], jobs=1)
    slow = scan_paths([str(tmp_path)], jobs=1, limits=ParseLimits(prefilter=False))
    assert fast.findings == slow.findings
    assert [(os.path.basename(p), f.code) for p, f in fast.findings] == [("bad.py", "DBG001")]
    assert fast.files_parsed == 2


def _searched_triggers():
    found = []

    def leaves(t):
        for child in getattr(t, "triggers", ()):
            leaves(child)
        if isinstance(t, triggers.Trigger) and t.search is not None and t not in found:
            found.append(t)

    for value in vars(triggers).values():
        if hasattr(value, "matches"):
            leaves(value)
    return found


def test_every_fast_search_answers_as_its_regex():
    """The triggers' faster searches (words_then, preceded) against the regexes the catalogue
    shows, on random text made of the pieces those regexes are about."""
    searched = _searched_triggers()
    assert len(searched) >= 7
    pieces = [b"\n", b"\r", b" ", b"\t", b"\\", b"\\\n", b"+", b"+=", b"=", b"==", b"1", b"x", b"_", b".", b",", b":",
              b"(", b")", b"'", b'"', b">>", b"#", b"print", b"exec", b"except", b"raise", b"getattr", b"debug",
              b"DBG", b"dump", b"true", b"True", b"pdb", b"pydevd", b"wdb", b"breakpoint", b"interact", b"IPython",
              b"set_trace", b"a", b"E"]
    rng = random.Random(16)
    checked = 0
    for _ in range(6000):
        text = b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 14)))
        for trigger in searched:
            hay = text.lower() if trigger.ignore_case else text
            assert (trigger._regex.search(hay) is not None) == trigger.search(hay, None), (trigger.pattern, text)
            assert trigger.matches(text, triggers.Memo()) == trigger.matches(text), (trigger.pattern, text)
            checked += 1
    assert checked == 6000 * len(searched)
