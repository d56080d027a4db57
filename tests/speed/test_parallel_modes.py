"""Threads and forked helpers must give the same verdicts, and feed the stat cache alike."""

from __future__ import annotations

import hashlib
import os
import time

import pytest

from driftscan.caches import racy
from driftscan.caches.statcache import StatCache
from driftscan.environment import resolve_target
from fixtures.harness import settle


def test_progress_reports_every_hashed_byte(planted):
    venv, _ = planted
    import threading

    from driftscan.environment.verify import verify

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
    from driftscan.environment.verify import verify

    monkeypatch.setenv("DRIFTSCAN_FORK", walk_mode)
    result = verify(resolve_target(str(venv)), jobs=2)
    return sorted((c.kind.value, c.path, c.distribution.name if c.distribution else None, tuple(sorted(c.actual)))
                  for c in result.checks), sorted(e.path for e in result.errors)


def test_forked_walk_agrees_with_the_inline_walk(planted, monkeypatch):
    venv, _ = planted
    inline = _verdicts_of(venv, "inline", monkeypatch)
    assert any(kind == "added" for kind, *_ in inline[0])  # the planted venv has unowned files
    assert _verdicts_of(venv, "fork", monkeypatch) == inline


def test_a_failing_walker_child_falls_back_to_walking_here(planted, monkeypatch):
    from driftscan.environment import unowned

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


def _cold(venv, monkeypatch, jobs):
    from driftscan.caches.statcache import NoCache
    from driftscan.environment.verify import verify

    result = verify(resolve_target(str(venv)), jobs=jobs, stat_cache=NoCache())
    return sorted((c.kind.value, c.path, c.distribution.name if c.distribution else None) for c in result.checks)


@pytest.fixture
def prehash_everything(monkeypatch):
    """Every hashed file through the prehash child: size threshold and racy window at nothing,
    forking allowed beside the test runner's threads."""
    from driftscan.environment.fast import prehash

    monkeypatch.setattr(prehash, "LARGE", 1)
    monkeypatch.setattr(racy, "RACY_NS", 0)
    monkeypatch.setenv("DRIFTSCAN_FORK", "fork")
    return prehash


def test_prehashed_digests_give_the_same_verdicts(planted, monkeypatch, prehash_everything):
    venv, _ = planted
    taken = []
    real_take = prehash_everything.Prehasher.take

    def take_later(self):
        time.sleep(1.0)  # let the child get through this small venv first
        taken.append(real_take(self))
        return taken[-1]

    monkeypatch.setattr(prehash_everything.Prehasher, "take", take_later)
    with_child = _cold(venv, monkeypatch, 2)
    assert len(taken[0][0]) > 20  # the parent used the child's digests
    monkeypatch.setenv("DRIFTSCAN_FORK", "inline")  # and no child at all
    assert with_child == _cold(venv, monkeypatch, 1)
    assert any(kind == "modified" for kind, _, _ in with_child)


def test_prehashed_digests_are_used_only_for_unchanged_files(tmp_path):
    from driftscan.caches.statcache import signature
    from driftscan.core.values import Hash, RecordEntry
    from driftscan.environment import files, records

    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 100)
    st = os.lstat(path)
    good = hashlib.sha256(b"x" * 100).digest()
    row = (None, RecordEntry("f.bin", Hash("sha256", good), 100, 1), str(path))
    cases = {
        "as read": (signature(st), "sha256", good, 0),
        "changed since": (signature(st)[:-1] + b"\x01", "sha256", good, 0),
        "other content": (signature(st), "sha256", b"\0" * 32, 0),
        "other algorithm": (signature(st), "sha512", good, 0),
    }
    for name, found in cases.items():
        results = [None]
        rest = records._settle_prehashed([row], [0], {str(path): found}, None, results)
        assert (results[0] is files._PLAIN_OK) == (name == "as read"), name
        assert list(rest) == ([] if name == "as read" else [0]), name


@pytest.fixture
def small_files_child(monkeypatch):
    """A forked child takes half of the small files, whatever their number."""
    from driftscan.environment.fast import smallfiles

    monkeypatch.setattr(smallfiles, "CHILD_MIN_FILES", 2)
    monkeypatch.setattr(smallfiles, "LARGE_BYTES_PER_S", 1e15)  # as if there were no large files
    monkeypatch.setenv("DRIFTSCAN_FORK", "fork")
    return smallfiles


def test_the_small_files_child_gives_the_same_verdicts(planted, monkeypatch, small_files_child):
    venv, _ = planted
    answers = []
    real_collect = small_files_child.SmallFilesChild.collect
    monkeypatch.setattr(small_files_child.SmallFilesChild, "collect",
                        lambda self: answers.append(real_collect(self)) or answers[-1])
    with_child = _cold(venv, monkeypatch, 2)
    assert answers and answers[0][0].count(1) > 10  # the child settled a share of the files
    monkeypatch.setenv("DRIFTSCAN_FORK", "inline")
    assert with_child == _cold(venv, monkeypatch, 1)
    assert any(kind == "modified" for kind, _, _ in with_child)


@pytest.mark.parametrize("helper", ["prehash_everything", "small_files_child"])
def test_a_failing_helper_child_costs_nothing_but_time(planted, monkeypatch, request, helper):
    """The prehash child and the small-files child failing: the parent hashes their share."""
    module = request.getfixturevalue(helper)
    venv, _ = planted

    def dies(*args):
        raise RuntimeError(f"the {helper} child fails")

    monkeypatch.setattr(module, "_child", dies)
    expected = _cold(venv, monkeypatch, 1)
    assert _cold(venv, monkeypatch, 2) == expected


def test_the_small_files_child_feeds_the_stat_cache(planted, tmp_path, monkeypatch, small_files_child):
    from driftscan.environment.verify import verify

    venv, _ = planted
    settle(venv)
    answers = []
    real_collect = small_files_child.SmallFilesChild.collect
    monkeypatch.setattr(small_files_child.SmallFilesChild, "collect",
                        lambda self: answers.append(real_collect(self)) or answers[-1])
    caches = {}
    for jobs in (1, 2):
        caches[jobs] = StatCache(str(tmp_path / f"{jobs}.bin"))
        verify(resolve_target(str(venv)), jobs=jobs, stat_cache=caches[jobs])
    assert len(answers) == 1 and len(answers[0][1]) > 10  # the child's entries...
    assert caches[2].entries == caches[1].entries  # ...are in the cache, as if hashed here
