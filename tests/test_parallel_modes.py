"""Threads and worker processes must give the same verdicts, and feed the stat cache alike."""

from __future__ import annotations

import os

from driftscan.cache import StatCache
from driftscan.discover import find_distributions, resolve_target
from driftscan.verify.ownership import build_ownership
from driftscan.verify.records import verify_records
from fixtures.harness import settle


def verdicts(outcome):
    return sorted((c.kind.value, c.path, c.distribution.name if c.distribution else None) for c in outcome.checks)


def test_processes_and_threads_agree(planted, tmp_path):
    venv, _ = planted
    settle(venv)
    target = resolve_target(str(venv))
    metadirs = list(find_distributions(target.site_packages))
    own = build_ownership(metadirs)
    caches = {mode: StatCache(str(tmp_path / f"{mode}.json")) for mode in ("threads", "processes")}
    results = {mode: verify_records(target, metadirs, own, 2, caches[mode], mode) for mode in caches}
    assert verdicts(results["threads"]) == verdicts(results["processes"])
    assert verdicts(results["threads"])  # the planted venv has package drift to agree on
    assert results["threads"].files_checked == results["processes"].files_checked
    assert caches["threads"]._entries.keys() == caches["processes"]._entries.keys()
    assert len(caches["processes"]._entries) > 100


def test_progress_reports_every_hashed_byte(planted):
    venv, _ = planted
    import threading

    from driftscan.verify import verify

    calls: list[tuple[int, int]] = []
    lock = threading.Lock()

    def progress(done: int, total: int) -> None:
        with lock:
            calls.append((done, total))

    verify(resolve_target(str(venv)), jobs=2, progress=progress)
    assert calls and all(d <= t for d, t in calls)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)  # monotonic
    assert calls[-1][0] == calls[-1][1] > 0  # ends at the total


def _verdicts_of(venv, walk_mode, monkeypatch):
    from driftscan.verify import verify

    monkeypatch.setenv("DRIFTSCAN_WALK", walk_mode)
    result = verify(resolve_target(str(venv)), jobs=2)
    return sorted((c.kind.value, c.path, c.distribution.name if c.distribution else None, tuple(sorted(c.actual)))
                  for c in result.checks), sorted(e.path for e in result.errors)


def test_forked_walk_agrees_with_the_inline_walk(planted, monkeypatch):
    venv, _ = planted
    inline = _verdicts_of(venv, "inline", monkeypatch)
    assert any(kind == "added" for kind, *_ in inline[0])  # the planted venv has unowned files
    assert _verdicts_of(venv, "fork", monkeypatch) == inline


def test_a_failing_walker_child_falls_back_to_walking_here(planted, monkeypatch):
    from driftscan.verify import unowned

    venv, _ = planted
    inline = _verdicts_of(venv, "inline", monkeypatch)
    parent = os.getpid()
    real_walk = unowned.UnownedWalk._walk

    def child_dies(self):
        if os.getpid() != parent:
            raise RuntimeError("the walker child fails")
        return real_walk(self)

    monkeypatch.setattr(unowned.UnownedWalk, "_walk", child_dies)
    assert _verdicts_of(venv, "fork", monkeypatch) == inline
