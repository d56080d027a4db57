"""A re-scan of an unchanged tree is settled from the result cache without the rule engine
(lint/warmscan.py): same result, no libcst, no pydantic — and anything that could change the
rules (their sources, the selection, a plugin installed) sends it back to the full scan."""

from __future__ import annotations

import hashlib
import json
import os
import textwrap
import time

import pytest

import driftscan.lint.scan as scan_module
from driftscan.caches import racy
from driftscan.lint import scancache
from driftscan.lint.scancache import FORMAT, ResultCache
from fixtures.scantrees import view as _view, write_tree as _tree
from driftscan.lint.files import ParseLimits
from driftscan.lint.warmscan import scan_paths
from fixtures.harness import run_cli_imports

@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(racy, "RACY_NS", 0)  # files made now may be stored
    return str(tmp_path / "cache")


@pytest.fixture
def full_scans(monkeypatch):
    """Counts the scans that went to the full engine (scan.py)."""
    calls = []
    real = scan_module.scan_paths

    def counting(*args, **kwargs):
        calls.append(kwargs.get("walked") is not None)
        return real(*args, **kwargs)

    monkeypatch.setattr(scan_module, "scan_paths", counting)
    return calls


def test_an_unchanged_tree_is_settled_without_the_full_scan(tmp_path, cache_dir, full_scans):
    tree = _tree(tmp_path / "tree")
    cold = scan_paths([str(tree)], jobs=1)
    first = scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir))
    assert full_scans == [False, False] and _view(first) == _view(cold)
    second = scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir))
    assert full_scans == [False, False], "the warm scan went to the engine"
    assert _view(second) == _view(cold)
    assert {f.code for _, f in second.findings} >= {"DBG001", "DBG101", "DBG106", "DBG107"}


def test_a_changed_or_new_file_goes_to_the_full_scan_with_the_walk_made(tmp_path, cache_dir, full_scans):
    tree = _tree(tmp_path / "tree")
    scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir))
    (tree / "clean.py").write_text("def g(y):\n    breakpoint()\n")
    (tree / "new.py").write_text("import pdb; pdb.set_trace()\n")
    warm = scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir))
    assert full_scans == [False, True]  # the second was handed the walk
    assert _view(warm) == _view(scan_paths([str(tree)], jobs=1))
    assert {p.rsplit("/", 1)[-1] for p, f in warm.findings} >= {"clean.py", "new.py"}
    # and now that is the cached state
    again = scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir))
    assert full_scans == [False, True, False] and _view(again) == _view(warm)  # (the third: uncached, above)


def test_a_removed_file_leaves_the_warm_result(tmp_path, cache_dir, full_scans):
    tree = _tree(tmp_path / "tree")
    scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir))
    os.unlink(tree / "dbg.py")
    warm = scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir))
    assert full_scans == [False]
    assert not any(p.endswith("dbg.py") for p, _ in warm.findings) and warm.files_scanned == 4


@pytest.mark.parametrize("other", [
    {"select": ["DBG101"]}, {"ignore": ["DBG106"]}, {"limits": ParseLimits(prefilter=False)}, {"unused_noqa": True},
    {"plugins": False}, {"limits": ParseLimits(max_bytes=10)},
])
def test_another_selection_is_not_recalled(tmp_path, cache_dir, full_scans, other):
    tree = _tree(tmp_path / "tree")
    scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir))
    result = scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir), **other)
    assert len(full_scans) == 2
    assert _view(result) == _view(scan_paths([str(tree)], jobs=1, **other))  # (a third full scan, uncached)
    again = scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir), **other)
    assert len(full_scans) == 3 and _view(again) == _view(result)  # this selection is remembered now


def _rewrite(path, edit):
    """Change the cache file's document with ``edit`` and give it a valid checksum again (forgery,
    not damage: the checksum is no defence against it, the type checks are)."""
    head, _, payload = open(path, "rb").read().partition(b"\n")
    document = edit(json.loads(payload))
    payload = json.dumps(document).encode()
    with open(path, "wb") as f:
        f.write(FORMAT + b" " + hashlib.blake2b(payload, digest_size=16).hexdigest().encode() + b"\n" + payload)


@pytest.mark.parametrize("forge", [
    lambda memo: {**memo, "codes": "DBG101"},
    lambda memo: {**memo, "codes": [1, 2]},
    lambda memo: {**memo, "guards": [["/", "x"]]},
    lambda memo: {**memo, "guards": [[1, 2, 3]]},
    lambda memo: {**memo, "guards": None},
    lambda memo: {**memo, "guards": [[g[0], [0, 0, 0, 0, 0]] for g in memo["guards"]]},  # guards now changed
    lambda memo: [],
])
def test_a_forged_or_damaged_memo_is_a_miss(tmp_path, cache_dir, full_scans, forge):
    tree = _tree(tmp_path / "tree")
    expected = scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir))
    [name] = os.listdir(cache_dir)
    _rewrite(os.path.join(cache_dir, name),
             lambda doc: {**doc, "memos": {k: forge(v) for k, v in doc["memos"].items()}})
    result = scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir))
    assert len(full_scans) == 2 and _view(result) == _view(expected)


# -- the command line, in fresh interpreters ----------------------------------------------------

def _cli(args, cache, extra_path=()):
    return run_cli_imports(args, cache, extra_path)


def _settle():
    time.sleep(2.1)  # past the racy window: the files' ctimes are now


def test_cli_warm_scan_imports_neither_libcst_nor_pydantic(tmp_path):
    tree = _tree(tmp_path / "tree")
    cache = str(tmp_path / "cache")
    _settle()
    cold_out, cold_exit, cold_heavy = _cli(["scan", str(tree), "--format", "json"], cache)
    warm_out, warm_exit, warm_heavy = _cli(["scan", str(tree), "--format", "json"], cache)
    assert "libcst" in cold_heavy
    assert warm_heavy == [], warm_heavy
    assert (warm_out, warm_exit) == (cold_out, cold_exit) and cold_exit == 1
    nocache_out, nocache_exit, _ = _cli(["scan", str(tree), "--format", "json", "--no-cache"], cache)
    assert (nocache_out, nocache_exit) == (cold_out, cold_exit)
    text, _, heavy = _cli(["scan", str(tree)], cache)
    assert heavy == [] and "dbg.py:2:5: DBG" in text
    # run from a project whose pyproject.toml names driftscan (no [tool.driftscan]): the search for
    # a configuration reads it, with tomllib alone
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["driftscan"]\n')
    out, _, heavy = run_cli_imports(["scan", str(tree), "--format", "json"], cache, cwd=str(project))
    assert heavy == [] and out == cold_out


RULE = textwrap.dedent('''
    import libcst as cst
    from driftscan.lint import Rule, Valid, Invalid
    from driftscan.core.values import Severity

    class Shout(Rule):
        CODE = "{code}"
        NAME = "shout-call"
        SEVERITY = Severity.LOW
        MESSAGE = "{message}"
        VALID = [Valid("print(1)\\n")]
        INVALID = [Invalid("shout()\\n")]

        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == "shout":
                self.report(node)
''')


def _rule_module(directory, code="XDBG901", message="a shout"):
    directory.mkdir(exist_ok=True)
    path = directory / "shoutrule.py"
    path.write_text(RULE.format(code=code, message=message))
    return path


def test_cli_an_edited_rule_module_is_run_again(tmp_path):
    tree = _tree(tmp_path / "tree", {"a.py": "shout()\n", "b.py": "x = 1\n"})
    lib = tmp_path / "lib"
    _rule_module(lib)
    cache = str(tmp_path / "cache")
    _settle()
    args = ["scan", str(tree), "--format", "json", "--rules-module", "shoutrule"]
    first, _, _ = _cli(args, cache, [str(lib)])
    assert "a shout" in first
    _, _, heavy = _cli(args, cache, [str(lib)])
    assert heavy == []
    _rule_module(lib, message="a louder shout")
    again, _, heavy = _cli(args, cache, [str(lib)])
    assert "a louder shout" in again and "libcst" in heavy


def test_cli_a_plugin_installed_between_scans_is_run(tmp_path):
    tree = _tree(tmp_path / "tree", {"a.py": "shout()\n"})
    site = tmp_path / "site"
    site.mkdir()
    cache = str(tmp_path / "cache")
    _settle()
    args = ["scan", str(tree), "--format", "json"]
    before, _, _ = _cli(args, cache, [str(site)])
    _, _, heavy = _cli(args, cache, [str(site)])
    assert heavy == [] and "XDBG901" not in before
    _rule_module(site)
    info = site / "shoutplugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shoutplugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[driftscan.rules]\nshout = shoutrule\n")
    after, _, heavy = _cli(args, cache, [str(site)])
    assert "libcst" in heavy
    assert "XDBG901" in json.loads(after)["summary"]["rules"]
    assert any(f["code"] == "XDBG901" for f in json.loads(after)["findings"])
