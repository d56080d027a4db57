"""``scan_paths`` with the result cache consulted first: the same result as the full scan,
settled from the cache only when the cache can vouch for every file."""

from __future__ import annotations

import pytest

import driftscan.lint.scan as scan_module
from driftscan.caches import racy
from driftscan.lint import scancache
from driftscan.lint.rules.debugger_call import DebuggerCall
from driftscan.lint.scancache import ResultCache
from driftscan.lint.warmscan import scan_paths


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "tree"
    root.mkdir()
    (root / "dbg.py").write_text("def f(x):\n    breakpoint()\n    return x\n")
    (root / "clean.py").write_text("x = 1\n")
    return root


@pytest.fixture
def full_scans(monkeypatch):
    """Calls that reached the full scan, each as whether it was handed the walk."""
    monkeypatch.setattr(racy, "RACY_NS", 0)  # files written just now may be stored
    calls = []
    real = scan_module.scan_paths

    def counting(*args, **kwargs):
        calls.append(kwargs.get("walked") is not None)
        return real(*args, **kwargs)

    monkeypatch.setattr(scan_module, "scan_paths", counting)
    return calls


def view(result):
    return ([(p.rsplit("/", 1)[-1], f.code, f.line) for p, f in result.findings], result.files_scanned,
            result.bytes_scanned, result.rules, [(e.path, e.message) for e in result.errors])


def test_without_a_cache_it_is_the_full_scan(tree, full_scans):
    result = scan_paths([str(tree)], jobs=1)
    assert full_scans == [False]
    assert [(p.rsplit("/", 1)[-1], f.code) for p, f in result.findings] == [("dbg.py", "DBG106")]


def test_a_second_scan_is_settled_from_the_cache_with_the_same_result(tree, tmp_path, full_scans):
    cache_dir = str(tmp_path / "cache")
    first = scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir))
    ticks = []
    second = scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir), progress=lambda d, t: ticks.append((d, t)))
    assert full_scans == [False]  # only the first scan reached the engine
    assert view(second) == view(first)
    assert ticks == [(2, 2)]


def test_a_changed_file_sends_the_scan_to_the_engine_with_the_walk(tree, tmp_path, full_scans):
    cache_dir = str(tmp_path / "cache")
    scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir))
    (tree / "clean.py").write_text("import pdb\npdb.set_trace()\n")
    result = scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir))
    assert full_scans == [False, True]
    assert ("clean.py", "DBG106", 2) in view(result)[0]


def test_explicit_rules_bypass_the_cache(tree, tmp_path, full_scans):
    cache_dir = str(tmp_path / "cache")
    scan_paths([str(tree)], jobs=1, rules=[DebuggerCall], cache=ResultCache(cache_dir))
    scan_paths([str(tree)], jobs=1, rules=[DebuggerCall], cache=ResultCache(cache_dir))
    assert full_scans == [False, False]


def test_another_selection_is_not_settled_from_the_cache(tree, tmp_path, full_scans):
    cache_dir = str(tmp_path / "cache")
    scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir))
    narrowed = scan_paths([str(tree)], jobs=1, select=["DBG107"], cache=ResultCache(cache_dir))
    assert full_scans == [False, False]
    assert narrowed.findings == [] and narrowed.rules == ("DBG107",)
