"""environment/fast/smallfiles.py: a share of the small files checked in a forked child."""

from __future__ import annotations

import os

import pytest

from driftscan.caches import racy
from driftscan.caches import statcache
from driftscan.environment import files
from driftscan.environment.fast.smallfiles import CHILD_MIN_FILES, SmallFilesChild, child_share
from fixtures.wheelfiles import entry


@pytest.fixture(autouse=True)
def forking(monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_FORK", "fork")


def test_no_child_below_its_worth():
    many = [100] * (3 * CHILD_MIN_FILES)
    assert child_share(many, 1 << 20, jobs=1) == (0, 0)  # one core: nobody to share with
    assert child_share([100] * (CHILD_MIN_FILES - 1), 1 << 20, jobs=2) == (0, 0)  # a fork costs more


def test_no_child_without_fork(monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_FORK", "inline")
    assert child_share([100] * (3 * CHILD_MIN_FILES), 1 << 20, jobs=2) == (0, 0)


def test_the_child_takes_the_small_files_the_caller_leaves():
    n = 3 * CHILD_MIN_FILES
    start, stop = child_share([100] * n, 1 << 20, jobs=2)
    assert (start, stop) == (n // 2, n)  # two cores, small files only: half each
    # A large file (hashed by the caller's helper threads) shifts the balance: the caller's fair
    # share of small files grows, the child's shrinks.
    start_big, stop_big = child_share([100] * n + [100 << 20], 1 << 20, jobs=2)
    assert stop_big == n and n // 2 < start_big < n - CHILD_MIN_FILES // 2
    # Large files enough to keep the helpers busy while the caller does every small file: no child.
    assert child_share([100] * n + [2 << 30], 1 << 20, jobs=2) == (0, 0)


def test_the_child_matches_rows_and_earns_cache_entries(tmp_path, monkeypatch):
    monkeypatch.setattr(racy, "RACY_NS", 0)
    rows = []
    for i in range(6):
        path = tmp_path / f"f{i}.py"
        path.write_bytes(f"X = {i}\n".encode())
        rows.append((entry(f"f{i}.py", f"X = {i}\n"), str(path)))
    (tmp_path / "f1.py").write_bytes(b"X = 9\n")  # modified
    os.unlink(tmp_path / "f2.py")  # missing
    (tmp_path / "f3.py").unlink()
    os.symlink(tmp_path / "f4.py", tmp_path / "f3.py")  # a symlink where a file was
    os.utime(tmp_path / "f0.py", (1_600_000_000, 1_600_000_000))
    child = SmallFilesChild(rows)
    assert child.started
    matched, entries = child.collect()
    assert matched == bytes([1, 0, 0, 0, 1, 1])
    assert str(tmp_path / "f0.py") in entries and str(tmp_path / "f1.py") not in entries


def test_without_a_stat_cache_the_child_earns_no_entries(tmp_path):
    (tmp_path / "a.py").write_bytes(b"A\n")
    matched, entries = SmallFilesChild([(entry("a.py", "A\n"), str(tmp_path / "a.py"))], record=False).collect()
    assert matched == b"\1" and entries == {}


def test_a_failed_child_leaves_every_row_to_the_parent(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("the child fails")

    monkeypatch.setattr(files, "quick_check", broken)
    (tmp_path / "a.py").write_bytes(b"A\n")
    matched, entries = SmallFilesChild([(entry("a.py", "A\n"), str(tmp_path / "a.py"))] * 3).collect()
    assert matched == b"\0\0\0" and entries == {}
