"""environment/derived.py: caches tools derive from a module, and installer bookkeeping files."""

from __future__ import annotations

import os

from driftscan.environment.derived import DERIVED_CACHES, UV_TARGET_LOCK, derived_source, is_installer_bookkeeping


def test_numba_cache_files_derive_from_their_module():
    for name in ("m.f-3.py311.nbi", "m.f-3.py311.1.nbc", "m.Klass.method-120.py312d.2.nbc"):
        module, cache = derived_source(f"/s/pkg/__pycache__/{name}")
        assert module == "/s/pkg/m.py" and cache is DERIVED_CACHES[0]


def test_what_no_table_entry_matches():
    assert derived_source("/s/pkg/__pycache__/m.cpython-311.pyc") is None  # bytecode has its own rules
    assert derived_source("/s/pkg/m.f-3.py311.nbi") is None  # not in a __pycache__
    assert derived_source("/s/pkg/__pycache__/.f-3.py311.nbi") is None  # no module stem
    assert derived_source("/s/pkg/__pycache__/m.f.py311.nbi") is None  # no line number
    assert derived_source("/s/pkg/__pycache__/m") is None


def entry(directory, name):
    return next(e for e in os.scandir(directory) if e.name == name)


def test_uv_target_lock_is_bookkeeping_when_empty_at_the_top(tmp_path):
    site = tmp_path / "deps"
    (site / "pkg").mkdir(parents=True)
    (site / UV_TARGET_LOCK).write_text("")
    (site / "pkg" / UV_TARGET_LOCK).write_text("")
    assert is_installer_bookkeeping(str(site), entry(site, UV_TARGET_LOCK))
    assert not is_installer_bookkeeping(str(site), entry(site / "pkg", UV_TARGET_LOCK))  # not at the top
    (site / UV_TARGET_LOCK).write_text("pid 1234")
    assert not is_installer_bookkeeping(str(site), entry(site, UV_TARGET_LOCK))  # content: not uv's


def test_a_lock_that_is_a_symlink_or_another_name_is_not_bookkeeping(tmp_path):
    (tmp_path / "empty").write_text("")
    (tmp_path / "s").mkdir()
    os.symlink(tmp_path / "empty", tmp_path / "s" / UV_TARGET_LOCK)
    (tmp_path / "s" / "other.lock").write_text("")
    assert not is_installer_bookkeeping(str(tmp_path / "s"), entry(tmp_path / "s", UV_TARGET_LOCK))
    assert not is_installer_bookkeeping(str(tmp_path / "s"), entry(tmp_path / "s", "other.lock"))
