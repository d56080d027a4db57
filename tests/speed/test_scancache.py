"""The scan's result cache: hits give the same rows unread; a change, other rules, damage or
forgery never make it give a row for a file it does not describe."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time

import pytest

import driftscan.lint.scan as scan_module
from driftscan.caches import racy
from driftscan.lint import ParseLimits, scan_paths
from driftscan.lint import scancache
from driftscan.lint.scancache import FORMAT, ResultCache
from fixtures.scantrees import FILES, view as _view, write_tree as _tree

@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    # Files made by a test have a ctime of now: without a racy window they may be stored
    # (the racy-window test puts it back).
    monkeypatch.setattr(racy, "RACY_NS", 0)
    return str(tmp_path / "cache")


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_hit_gives_the_same_result_without_reading_the_file(tmp_path, cache_dir, monkeypatch, jobs):
    tree = _tree(tmp_path / "tree")
    uncached = scan_paths([str(tree)], jobs=jobs)
    first = scan_paths([str(tree)], jobs=jobs, cache=ResultCache(cache_dir))
    assert _view(first) == _view(uncached)
    assert {f.code for _, f in first.findings} >= {"DBG001", "DBG101", "DBG106", "DBG107"}

    def no_reading(*args, **kwargs):
        raise AssertionError("a cached file was inspected again")

    monkeypatch.setattr(scan_module, "inspect_path", no_reading)
    cache = ResultCache(cache_dir)
    second = scan_paths([str(tree)], jobs=1, cache=cache)
    assert _view(second) == _view(uncached)
    assert (cache.hits, cache.misses) == (len(FILES), 0)
    assert not any(name.startswith(".") or "cache" in name for name in os.listdir(tree))  # nothing in the tree


def test_a_changed_file_is_scanned_again(tmp_path, cache_dir):
    tree = _tree(tmp_path / "tree")
    scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir))
    clean = tree / "clean.py"
    before = os.stat(clean)
    # Same size, mtime put back: only ctime (and the content) tell.
    text = "def g(y):\n    return breakpoint()\n"
    text = text + "#" * (before.st_size - len(text) - 1) + "\n"
    assert len(text) == before.st_size
    time.sleep(0.01)
    clean.write_text(text)
    os.utime(clean, ns=(before.st_atime_ns, before.st_mtime_ns))
    cache = ResultCache(cache_dir)
    result = scan_paths([str(tree)], jobs=1, cache=cache)
    assert ("DBG106" in {f.code for p, f in result.findings if p.endswith("clean.py")})
    assert _view(result) == _view(scan_paths([str(tree)], jobs=1))
    assert cache.misses == 1 and cache.hits == len(FILES) - 1


def test_a_file_changed_within_the_racy_window_is_not_stored(tmp_path, cache_dir, monkeypatch):
    monkeypatch.setattr(racy, "RACY_NS", 2_000_000_000)
    tree = _tree(tmp_path / "tree", mtime=time.time())
    scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir))
    cache = ResultCache(cache_dir)
    scan_paths([str(tree)], jobs=1, cache=cache)
    assert cache.hits == 0


def test_other_rules_or_options_do_not_hit(tmp_path, cache_dir):
    tree = _tree(tmp_path / "tree")
    scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir))
    for kwargs in ({"select": ["DBG106"]}, {"limits": ParseLimits(prefilter=False)}, {"limits": ParseLimits(max_bytes=10)},
                   {"unused_noqa": True}):
        cache = ResultCache(cache_dir)
        result = scan_paths([str(tree)], jobs=1, cache=cache, **kwargs)
        assert cache.hits == 0, kwargs
        assert _view(result) == _view(scan_paths([str(tree)], jobs=1, **kwargs)), kwargs
    cache = ResultCache(cache_dir, version="other")
    scan_paths([str(tree)], jobs=1, cache=cache)
    assert cache.hits == 0


def _cache_file(cache_dir):
    (name,) = os.listdir(cache_dir)
    return os.path.join(cache_dir, name)


def _forge(path, payload: dict) -> None:
    data = json.dumps(payload).encode()
    with open(path, "wb") as f:
        f.write(FORMAT + b" " + hashlib.blake2b(data, digest_size=16).hexdigest().encode() + b"\n" + data)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "flipped", "empty", "directory", "wrong-types",
                                    "deep", "fifo"])
def test_a_damaged_or_hostile_cache_is_ignored(tmp_path, cache_dir, damage):
    tree = _tree(tmp_path / "tree")
    expected = _view(scan_paths([str(tree)], jobs=1))
    scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir))
    path = _cache_file(cache_dir)
    data = open(path, "rb").read()
    os.unlink(path)
    if damage == "garbage":
        open(path, "wb").write(os.urandom(4096))
    elif damage == "truncated":
        open(path, "wb").write(data[: len(data) // 2])
    elif damage == "flipped":
        i = len(data) - 40
        open(path, "wb").write(data[:i] + bytes([data[i] ^ 0x20]) + data[i + 1:])
    elif damage == "empty":
        open(path, "wb").close()
    elif damage == "directory":
        os.mkdir(path)
    elif damage == "fifo":
        os.mkfifo(path)
    elif damage == "deep":
        _forge(path, {"key": "x", "entries": {"a": [[[[[[[[[[[]]]]]]]]]]]}})
        data = open(path, "rb").read()
        open(path, "wb").write(data.replace(b"[[[[[[[[[[[]]]]]]]]]]]", b"[" * 100000 + b"]" * 100000))
    elif damage == "wrong-types":
        payload = json.loads(data.partition(b"\n")[2])
        for i, (p, entry) in enumerate(payload["entries"].items()):
            # Keep the signature, so that only the type checks stand between the entry and use.
            entry[1] = [["DBG999", "x", "nope", 1, 1, "m", "", None]] if i % 3 == 0 else \
                [[1, 2, 3, 4, 5, 6, 7, 8]] if i % 3 == 1 else "findings"
        _forge(path, payload)
    cache = ResultCache(cache_dir)
    assert _view(scan_paths([str(tree)], jobs=1, cache=cache)) == expected
    assert cache.hits == 0
    if damage != "directory":
        assert _view(scan_paths([str(tree)], jobs=2, cache=ResultCache(cache_dir))) == expected


def test_a_forged_entry_for_another_signature_changes_nothing(tmp_path, cache_dir):
    """An entry whose checksum is right and types are right, but whose signature is not the
    file's, is not used: a forged finding does not appear, a real one is not hidden."""
    tree = _tree(tmp_path / "tree")
    expected = _view(scan_paths([str(tree)], jobs=1))
    scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir))
    path = _cache_file(cache_dir)
    payload = json.loads(open(path, "rb").read().partition(b"\n")[2])
    for entry in payload["entries"].values():
        entry[0][1] += 1  # another mtime
        entry[1] = [["DBG106", "debugger-call", "high", 1, 1, "forged", "", None]]
    for p in list(payload["entries"]):
        if p.endswith("dbg.py"):
            payload["entries"][p][1] = []  # would hide the real finding
    _forge(path, payload)
    cache = ResultCache(cache_dir)
    result = scan_paths([str(tree)], jobs=1, cache=cache)
    assert _view(result) == expected
    assert cache.hits == 0 and not any(f.message == "forged" for _, f in result.findings)


def test_a_cache_directory_inside_the_scanned_tree_is_not_used(tmp_path):
    tree = _tree(tmp_path / "tree")
    cache = ResultCache(str(tree / "cache"))
    expected = _view(scan_paths([str(tree)], jobs=1))
    assert _view(scan_paths([str(tree)], jobs=1, cache=cache)) == expected
    assert not (tree / "cache").exists()


def test_files_gone_from_the_tree_leave_the_cache(tmp_path, cache_dir):
    tree = _tree(tmp_path / "tree")
    scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir))
    os.unlink(tree / "dbg.py")
    scan_paths([str(tree)], jobs=1, cache=ResultCache(cache_dir))
    payload = json.loads(open(_cache_file(cache_dir), "rb").read().partition(b"\n")[2])
    assert not any(p.endswith("dbg.py") for p in payload["entries"])
    assert len(payload["entries"]) == len(FILES) - 1


def _cli(*args, cache_dir):
    env = dict(os.environ, DRIFTSCAN_CACHE_DIR=cache_dir)
    return subprocess.run([sys.executable, "-m", "driftscan", "scan", *args], capture_output=True, text=True, env=env)


def test_cli_caches_unless_no_cache(tmp_path, cache_dir):
    tree = _tree(tmp_path / "tree")
    time.sleep(2.1)  # the CLI keeps the racy window: the files' ctime must be older than it
    bare = _cli(str(tree), "--format", "json", "--no-cache", cache_dir=cache_dir)
    assert bare.returncode == 1, bare.stderr
    assert not os.path.exists(cache_dir)  # --no-cache writes nothing
    first = _cli(str(tree), "--format", "json", cache_dir=cache_dir)
    assert os.listdir(os.path.join(cache_dir, "scan"))
    second = _cli(str(tree), "--format", "json", cache_dir=cache_dir)
    third = _cli(str(tree), "--format", "json", "--no-cache", cache_dir=cache_dir)
    assert bare.stdout == first.stdout == second.stdout == third.stdout
    assert {bare.returncode, first.returncode, second.returncode, third.returncode} == {1}
