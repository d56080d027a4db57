"""The clean index settles a warm audit of an unchanged clean venv, and never hides a change.

Each case changes a copy of a real pip venv in one way, then audits it twice: once as a warm
audit that has a clean index to try, once with no cache at all. Both must report the same
drifts, and the index must not have settled the changed venv.
"""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest

import driftscan.api as api
from driftscan.caches import racy
from driftscan.caches import statcache as cache_mod
from driftscan.environment.fast import cleanindex
from driftscan.environment import verify as pipeline
from fixtures import venvs
from fixtures.harness import audit_and_whether_settled, offline


@pytest.fixture
def template(index_template):
    return index_template  # conftest.py: a pip venv with six and requests


@pytest.fixture
def venv(index_venv):
    return index_venv  # conftest.py: a fresh copy of it, racy window shrunk, private cache dir


def audit(venv, **kw):
    """(drifts as (kind, relpath), whether the clean index settled it, the report)."""
    report, settled = audit_and_whether_settled(venv, **kw)
    return sorted((d.kind.value, d.relpath) for d in report.drifts), settled, report


def settled_audit(venv):
    audit(venv)  # hashes and writes the index
    drifts, by_index, _ = audit(venv)
    assert drifts == [] and by_index
    return venv


def test_an_unchanged_clean_venv_is_settled_by_the_index_with_the_same_report(venv):
    _, by_index, full = audit(venv)
    assert not by_index
    _, by_index, fast = audit(venv)
    assert by_index
    plain = [json.loads(r.model_dump_json(exclude={"generated_at", "duration_seconds"})) for r in (full, fast)]
    assert plain[0] == plain[1]
    assert plain[1]["summary"]["files_checked"] > 100 and plain[1]["summary"]["distributions"] >= 6


def _site(venv):
    return venvs.site_packages_of(venv)


def edit_keeping_size_and_mtime(venv):
    path = _site(venv) / "six.py"
    st = path.stat()
    path.write_bytes(path.read_bytes().replace(b"import", b"imporT", 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def add_a_file_deep_down(venv):
    (_site(venv) / "requests" / "patched_by_hand.py").write_text("X = 1\n")


def delete_a_file(venv):
    (_site(venv) / "requests" / "help.py").unlink()


def delete_only_bytecode(venv):
    for pyc in (_site(venv) / "requests" / "__pycache__").glob("*.pyc"):
        pyc.unlink()


def grow_a_record(venv):
    record = next(_site(venv).glob("six-*.dist-info")) / "RECORD"
    record.write_text(record.read_text() + "six_extra.py,,\n")


def orphan_a_dist_info(venv):
    (_site(venv) / "ghost-1.0.dist-info").mkdir()
    (_site(venv) / "ghost-1.0.dist-info" / "METADATA").write_text("Name: ghost\nVersion: 1.0\n\n")


def add_a_script(venv):
    (venv / "bin" / "my-tool").write_text("#!/bin/sh\n")


def replace_by_rename(venv):
    path = _site(venv) / "six.py"
    tmp = path.with_name("six.py.tmp")
    tmp.write_bytes(path.read_bytes())
    os.replace(tmp, path)


def symlink_in_place_of_a_file(venv):
    path = _site(venv) / "requests" / "help.py"
    copy = path.with_name("help_copy.py")
    shutil.copy(path, copy)
    path.unlink()
    path.symlink_to(copy.name)


@pytest.mark.parametrize("change", [
    edit_keeping_size_and_mtime, add_a_file_deep_down, delete_a_file, delete_only_bytecode, grow_a_record,
    orphan_a_dist_info, add_a_script, replace_by_rename, symlink_in_place_of_a_file,
], ids=lambda f: f.__name__)
def test_any_change_sends_the_audit_down_the_full_path(venv, change):
    settled_audit(venv)
    time.sleep(0.01)  # timestamps must be able to differ
    change(venv)
    drifts, by_index, _ = audit(venv)
    # A hashed file whose signature changed is checked again against its RECORD row
    # without the full audit (the index carries the rest), unless it is a modified .py (its pyc
    # may be stale: the full pass decides); every other change takes the full path.
    assert not by_index or change is replace_by_rename
    assert drifts == audit(venv, use_cache=False)[0]


def test_each_case_above_is_visible_to_a_full_audit(venv):
    """The cases must be able to fail: most of them are drift, seen by the full audit."""
    settled_audit(venv)
    edit_keeping_size_and_mtime(venv)
    add_a_file_deep_down(venv)
    grow_a_record(venv)
    drifts, _, _ = audit(venv, use_cache=False)
    # six.py edited keeping its size and mtime: the pyc pip compiled still matches its header.
    assert {k for k, _ in drifts} == {"modified", "added", "missing", "stale-bytecode"}


def test_drift_is_carried_by_the_index_and_none_used_by_no_cache_or_plan(venv):
    settled_audit(venv)
    add_a_file_deep_down(venv)
    found = audit(venv)[0]
    assert found  # drift: the full path, which writes an index carrying it...
    assert audit(venv)[:2] == (found, True)  # ...and settles the next audit with the same drifts
    (_site(venv) / "requests" / "patched_by_hand.py").unlink()
    settled_audit(venv)
    assert audit(venv, use_cache=False)[1] is False  # --no-cache: the paranoid mode trusts no index
    full_runs = []
    real_verify = pipeline.verify
    pipeline.verify = lambda *a, **k: full_runs.append(1) or real_verify(*a, **k)
    try:
        api.plan(["six"], str(venv))
    finally:
        pipeline.verify = real_verify
    assert full_runs == [1]  # plan needs the RECORD entries: always the full path


def test_a_damaged_index_is_ignored(venv):
    settled_audit(venv)
    index = next((venv.parent / "cache" / "statcache").glob("*.clean.bin"))
    data = index.read_bytes()
    index.write_bytes(data[:-10])
    drifts, by_index, _ = audit(venv)
    assert drifts == [] and not by_index


def test_index_waits_out_the_racy_window(template, tmp_path, monkeypatch):
    copy = tmp_path / "v"
    shutil.copytree(template, copy, symlinks=True)  # every file changed just now
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))
    audit(copy)
    assert audit(copy)[1] is False  # nothing old enough to vouch for
    newest = max(os.lstat(os.path.join(d, n)).st_ctime_ns for d, dirs, names in os.walk(copy) for n in names + dirs)
    time.sleep(max(0.0, (newest + racy.RACY_NS) / 1e9 - time.time() + 0.2))
    audit(copy)
    assert audit(copy)[1] is True


def test_an_editable_install_always_takes_the_full_path(venv, tmp_path, wheelhouse):
    """Its source tree lives outside the venv, in git: no signature here can vouch for it."""
    from fixtures.demo import make_project

    project = make_project(tmp_path / "proj")
    venvs.pip_install(venv, *offline(wheelhouse), "-e", str(project))
    assert audit(venv)[0] == []
    assert audit(venv)[1] is False
    assert not list((tmp_path / "cache" / "statcache").glob("*.clean.bin"))
    (project / "src/mypkg/util.py").write_text("CHANGED = True\n")
    assert ("modified", "src/mypkg/util.py") in audit(venv)[0]


def test_presence_rows_outside_the_walked_tree_are_checked_one_by_one(venv, tmp_path):
    """Hashless rows that point outside site-packages and bin/ (``../../../share/...``) are not
    covered by any listed directory: the index names them, and each must still be a file."""
    from driftscan.caches.statcache import StatCache
    from driftscan.environment import resolve_target

    settled_audit(venv)
    target = resolve_target(str(venv))
    index = StatCache.for_target(str(venv)).clean_index()
    outside = tmp_path / "share" / "doc.txt"
    outside.parent.mkdir()
    outside.write_text("x")
    index = {**index, "present": [*index["present"], str(outside)]}
    assert cleanindex.still_clean(target, index) is not None
    outside.unlink()
    assert cleanindex.still_clean(target, index) is None
    outside.mkdir()
    assert cleanindex.still_clean(target, index) is None
    assert cleanindex.still_clean(target, {**index, "roots": ["/elsewhere"]}) is None
    assert cleanindex.still_clean(target, {**index, "paths": index["paths"][:-1]}) is None


@pytest.mark.parametrize("where", ["first half", "second half"])
def test_the_forked_half_of_the_check_counts(venv, monkeypatch, where):
    """Half of the signatures are compared by a forked child: a change on either side is seen."""
    from driftscan.caches.statcache import StatCache
    from driftscan.environment import resolve_target

    monkeypatch.setenv("DRIFTSCAN_FORK", "fork")  # fork even beside the test runner's threads
    settled_audit(venv)
    target = resolve_target(str(venv))
    index = StatCache.for_target(str(venv)).clean_index()
    many = 9000 // len(index["paths"]) + 1  # above the 8,192 signatures at which the check forks
    index = {**index, "paths": index["paths"] * many, "signatures": index["signatures"] * many}
    assert cleanindex.still_clean(target, index) is not None
    paths = index["paths"]
    victim = paths[len(paths) // 4] if where == "first half" else paths[-1]
    os.utime(victim)  # mtime and ctime move
    assert cleanindex.still_clean(target, index) is None
