"""Which __pycache__ files Python would run instead of a modified source, decided from their
header as importlib's source loader decides (pycs made by this interpreter's py_compile)."""

from __future__ import annotations

import os
import py_compile
import sys

import pytest

from driftscan.core.values import DriftKind, FileCheck
from driftscan.environment.bytecode import (Basis, PycKind, parse_header, remove_stale_after_write,
                                            stale_bytecode)

TAG = sys.implementation.cache_tag
SECOND = 1_700_000_000 * 10**9


@pytest.fixture
def module(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    source = pkg / "mod.py"
    source.write_text("X = 1\n")
    return source


def _pyc(source):
    return source.parent / "__pycache__" / f"mod.{TAG}.pyc"


def _compile(source, mode=py_compile.PycInvalidationMode.TIMESTAMP):
    py_compile.compile(str(source), cfile=str(_pyc(source)), invalidation_mode=mode, doraise=True)
    return _pyc(source)


def _found(source):
    return stale_bytecode([FileCheck(DriftKind.MODIFIED, str(source), str(source.parent))])


def _rewrite_keeping_stat(source, text="X = 2\n"):
    st = os.stat(source)
    source.write_text(text)
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_header_kinds_follow_pep_552(module):
    assert parse_header(_compile(module).read_bytes()).kind is PycKind.TIMESTAMP
    assert parse_header(_compile(module, py_compile.PycInvalidationMode.CHECKED_HASH).read_bytes()).kind \
        is PycKind.CHECKED_HASH
    assert parse_header(_compile(module, py_compile.PycInvalidationMode.UNCHECKED_HASH).read_bytes()).kind \
        is PycKind.UNCHECKED_HASH
    data = bytearray(_pyc(module).read_bytes())
    data[4] = 4  # a flag bit PEP 552 does not define: Python rejects the file
    assert parse_header(bytes(data)).kind is None
    assert parse_header(b"\x00" * 15) is None


def test_a_same_second_rewrite_is_stale_and_an_ordinary_edit_is_not(module):
    os.utime(module, ns=(SECOND, SECOND + 100))
    pyc = _compile(module)
    os.utime(pyc, ns=(SECOND, SECOND + 200_000_000))
    module.write_text("X = 2\n")
    os.utime(module, ns=(SECOND, SECOND + 700_000_000))
    (check,) = _found(module)
    assert check.kind is DriftKind.STALE_BYTECODE and check.path == str(pyc)
    assert check.actual["basis"] == Basis.SAME_SECOND.value and check.expected["source"] == str(module)
    assert check.actual["header_mtime"] == SECOND // 10**9 and check.actual["header_size"] == 6

    os.utime(module, ns=(SECOND, SECOND + 1_700_000_000))  # a later second: Python recompiles it
    assert _found(module) == []


def test_a_source_dated_in_the_future_is_not_taken_for_the_race(module):
    future = (1_900_000_000 * 10**9)
    os.utime(module, ns=(future, future + 500))
    _compile(module)  # written now, long before the source's mtime
    _rewrite_keeping_stat(module)
    assert _found(module) == []  # nothing proves what it was compiled from


def test_wrong_magic_is_not_run(module):
    os.utime(module, ns=(SECOND, SECOND + 100))
    pyc = _compile(module)
    os.utime(pyc, ns=(SECOND, SECOND + 200_000_000))
    data = bytearray(pyc.read_bytes())
    data[0] ^= 0xFF
    pyc.write_bytes(bytes(data))
    os.utime(pyc, ns=(SECOND, SECOND + 200_000_000))
    _rewrite_keeping_stat(module)
    os.utime(module, ns=(SECOND, SECOND + 700_000_000))
    assert _found(module) == []


def test_hash_pycs(module):
    _compile(module, py_compile.PycInvalidationMode.CHECKED_HASH)
    module.write_text("X = 2\n")
    assert _found(module) == []  # Python checks the hash itself and recompiles

    module.write_text("X = 1\n")
    pyc = _compile(module, py_compile.PycInvalidationMode.UNCHECKED_HASH)
    assert _found(module) == []  # compiled from exactly this content
    module.write_text("X = 2\n")
    (check,) = _found(module)
    assert check.path == str(pyc) and check.actual["basis"] == Basis.SOURCE_HASH.value
    assert check.actual["bytecode"] == "unchecked-hash"


def test_only_modified_python_sources_are_looked_at(module):
    os.utime(module, ns=(SECOND, SECOND + 100))
    _compile(module)
    assert stale_bytecode([FileCheck(DriftKind.ADDED, str(module), str(module.parent))]) == []


def test_after_a_write_only_the_pycs_python_would_still_run_are_removed(module):
    other = module.parent / "__pycache__" / "mod.cpython-99.opt-1.pyc"
    _compile(module)
    other.write_bytes(_pyc(module).read_bytes())  # another tag, header matching too
    keep = module.parent / "__pycache__" / "modx.cpython-311.pyc"  # another module's
    keep.write_bytes(b"junk")
    removed, failed = remove_stale_after_write(str(module.parent.parent), "pkg/mod.py")
    assert sorted(removed) == sorted([str(_pyc(module)), str(other)]) and failed == []
    assert keep.exists()

    _compile(module)
    st = os.stat(module)
    os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns + 3 * 10**9))  # the header no longer matches
    assert remove_stale_after_write(str(module.parent.parent), "pkg/mod.py") == ([], [])
    _compile(module, py_compile.PycInvalidationMode.CHECKED_HASH)
    assert remove_stale_after_write(str(module.parent.parent), "pkg/mod.py") == ([], [])
    assert _pyc(module).exists()


def test_a_pycache_symlinked_out_is_never_followed(tmp_path, module):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    _compile(module)
    os.replace(_pyc(module), elsewhere / _pyc(module).name)
    (module.parent / "__pycache__").rmdir()
    (module.parent / "__pycache__").symlink_to(elsewhere)
    assert remove_stale_after_write(str(module.parent.parent), "pkg/mod.py") == ([], [])
    assert (elsewhere / _pyc(module).name).exists()


def test_the_audit_reads_no_pyc_outside_the_checked_root(tmp_path, module):
    os.utime(module, ns=(SECOND, SECOND + 100))
    pyc = _compile(module)
    os.utime(pyc, ns=(SECOND, SECOND + 200_000_000))
    _rewrite_keeping_stat(module)
    os.utime(module, ns=(SECOND, SECOND + 700_000_000))
    assert len(_found(module)) == 1
    elsewhere = tmp_path / "elsewhere"
    os.replace(module.parent / "__pycache__", elsewhere)
    (module.parent / "__pycache__").symlink_to(elsewhere)
    assert _found(module) == []


def test_a_fifo_or_a_symlink_named_like_a_pyc_is_never_opened(tmp_path, module):
    os.utime(module, ns=(SECOND, SECOND + 100))
    cache = module.parent / "__pycache__"
    cache.mkdir()
    os.mkfifo(cache / f"mod.{TAG}.pyc")  # opening it for reading would block
    (cache / f"mod.{TAG}.opt-1.pyc").symlink_to("/dev/zero")
    _rewrite_keeping_stat(module)
    assert _found(module) == []
    removed, failed = remove_stale_after_write(str(module.parent.parent), "pkg/mod.py")
    assert removed == [] and len(failed) == 2 and all("not deleted" in f for f in failed)
    assert (cache / f"mod.{TAG}.pyc").exists() and (cache / f"mod.{TAG}.opt-1.pyc").is_symlink()
