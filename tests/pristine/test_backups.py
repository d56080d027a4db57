"""driftscan.pristine.backups: a backup beside an edited file (x.bak, x.orig, x~) is its original
only when its bytes match the installed RECORD row."""

from __future__ import annotations

import os

from driftscan.pristine import PristineOptions, SourceKind, find_pristine
from fixtures.wheelfiles import installed

FILES = {"pkg/__init__.py": "", "pkg/core.py": "X = 1\n", "pkg/util.py": "Y = 2\n"}


def options(tmp_path) -> PristineOptions:
    for name in ("no-uv", "no-pip"):
        (tmp_path / name).mkdir(exist_ok=True)
    return PristineOptions(uv_cache=str(tmp_path / "no-uv"), pip_cache=str(tmp_path / "no-pip"))


def edited(tmp_path, *names):
    """pkg 1.0 installed, ``names`` edited after a backup of each was taken the way people do."""
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES)
    site = tmp_path / "site"
    for name in names:
        (site / name).write_text((site / name).read_text().replace("= ", "= 10 + "))
    rows = [r for r in dist.entries if r.path in names]
    return dist, rows, site


def test_backups_with_the_recorded_bytes_are_the_originals(tmp_path):
    dist, rows, site = edited(tmp_path, "pkg/core.py", "pkg/util.py")
    (site / "pkg/core.py.bak").write_text("X = 1\n")
    (site / "pkg/util.py~").write_text("Y = 2\n")
    with find_pristine([(dist, rows)], options(tmp_path)) as found:
        lookup = found.get(dist)
        assert lookup.copy.source is SourceKind.BACKUP and lookup.reason is None
        by_path = {r.path: r for r in rows}
        assert lookup.original(by_path["pkg/core.py"]).read(by_path["pkg/core.py"]) == b"X = 1\n"
        assert lookup.original(by_path["pkg/util.py"]).read(by_path["pkg/util.py"]) == b"Y = 2\n"
        assert "pkg/core.py.bak" in lookup.copy.where and "pkg/util.py~" in lookup.copy.where


def test_a_backup_taken_after_the_edit_is_never_the_original(tmp_path):
    dist, rows, site = edited(tmp_path, "pkg/core.py")
    (site / "pkg/core.py.bak").write_bytes((site / "pkg/core.py").read_bytes()[:6])  # same size as RECORD's, other bytes
    assert os.path.getsize(site / "pkg/core.py.bak") == 6
    with find_pristine([(dist, rows)], options(tmp_path)) as found:
        lookup = found.get(dist)
        assert lookup.copy is None
        assert any(r.source is SourceKind.BACKUP and "does not match RECORD" in r.reason for r in lookup.rejected)


def test_the_first_backup_that_verifies_is_used(tmp_path):
    dist, rows, site = edited(tmp_path, "pkg/core.py")
    (site / "pkg/core.py.bak").write_text("X = 9\n")  # right size, wrong bytes
    (site / "pkg/core.py.orig").write_text("X = 1\n")
    with find_pristine([(dist, rows)], options(tmp_path)) as found:
        lookup = found.get(dist)
        assert lookup.copy.source is SourceKind.BACKUP
        assert lookup.original(rows[0]).read(rows[0]) == b"X = 1\n"
        assert lookup.copy.chosen_paths() == [str(site / "pkg/core.py.orig")]


def test_a_backup_that_is_a_symlink_or_a_fifo_is_not_read(tmp_path):
    dist, rows, site = edited(tmp_path, "pkg/core.py")
    outside = tmp_path / "outside.py"
    outside.write_text("X = 1\n")  # the right bytes, but outside the tree: a link is never followed
    os.symlink(outside, site / "pkg/core.py.bak")
    os.mkfifo(site / "pkg/core.py.orig")  # opening it would block
    with find_pristine([(dist, rows)], options(tmp_path)) as found:
        lookup = found.get(dist)
        assert lookup.copy is None
        assert "backups beside the files (no *.bak" in lookup.reason


def test_a_backup_swapped_for_a_symlink_after_the_search_is_refused(tmp_path):
    dist, rows, site = edited(tmp_path, "pkg/core.py")
    (site / "pkg/core.py.bak").write_text("X = 1\n")
    with find_pristine([(dist, rows)], options(tmp_path)) as found:
        copy = found.get(dist).copy
        copy._kept.clear()  # nothing held from the search: the next read opens the file again
        os.unlink(site / "pkg/core.py.bak")
        os.symlink(tmp_path / "elsewhere", site / "pkg/core.py.bak")
        assert copy.read(rows[0]) is None
