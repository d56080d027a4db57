"""caches.racy: the one rule by which every cache trusts a file's timestamps."""

from __future__ import annotations

import os
import time

from driftscan.caches.racy import RACY_NS, settled, settled_stat


def test_a_file_changed_more_than_the_window_before_the_read_is_settled():
    started = 10 * RACY_NS
    assert settled(started - RACY_NS - 1, started - RACY_NS - 1, started)
    assert not settled(started - RACY_NS, started - RACY_NS - 1, started), "the window's edge is not settled"


def test_the_later_of_mtime_and_ctime_decides():
    """An edit that sets the mtime back (touch -d, os.utime) still moves the ctime."""
    started = 10 * RACY_NS
    assert not settled(0, started, started)
    assert not settled(started, 0, started)


def test_a_file_written_just_now_is_not_settled_and_is_once_the_window_passes(tmp_path):
    path = tmp_path / "f"
    path.write_text("x")
    st = os.lstat(path)
    assert not settled_stat(st, time.time_ns())
    assert settled_stat(st, max(st.st_mtime_ns, st.st_ctime_ns) + RACY_NS + 1)
