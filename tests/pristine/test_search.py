"""driftscan.pristine.search: each source tried in order, the first whose copy of every needed row
verifies is used, and a reason names everything tried when none does."""

from __future__ import annotations

import dataclasses
import hashlib
import os

from driftscan.core.values import MetadataKind, RecordEntry
from driftscan.pristine import NOT_A_WHEEL, PristineOptions, SourceKind, find_pristine
from fixtures.wheelfiles import entry, installed, wheel_file

FILES = {"pkg/__init__.py": "", "pkg/core.py": "X = 1\n"}


def options(tmp_path, **kw) -> PristineOptions:
    """Empty uv and pip caches of the test's own (never the user's)."""
    for name in ("no-uv", "no-pip"):
        (tmp_path / name).mkdir(exist_ok=True)
    kw.setdefault("uv_cache", str(tmp_path / "no-uv"))
    return PristineOptions(pip_cache=str(tmp_path / "no-pip"), **kw)


def dist_and_rows(tmp_path, **kw):
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES, **kw)
    return dist, list(dist.entries)


def test_a_wheels_directory_gives_every_needed_row(tmp_path):
    dist, rows = dist_and_rows(tmp_path)
    wheel = wheel_file(tmp_path / "house", "pkg", "1.0", FILES)
    said: list[str] = []
    with find_pristine([(dist, rows)], options(tmp_path, wheels=(str(tmp_path / "house"),)),
                       said.append) as found:
        lookup = found.get(dist)
        assert lookup.copy.source is SourceKind.WHEELS and lookup.copy.path == str(wheel)
        assert lookup.reason is None and lookup.rejected == () and lookup.lacking == ()
        assert lookup.verified == {"pkg/__init__.py", "pkg/core.py"}
        assert lookup.original(rows[1]).read(rows[1]) == b"X = 1\n"
        assert said == ["looking for the original files of pkg 1.0"]


def test_the_direct_url_wheel_comes_before_the_wheels_directory(tmp_path):
    named = wheel_file(tmp_path / "named", "pkg", "1.0", FILES)
    wheel_file(tmp_path / "house", "pkg", "1.0", FILES)
    digest = hashlib.sha256(named.read_bytes()).hexdigest()
    dist, rows = dist_and_rows(tmp_path, direct_url={"url": f"file://{named}",
                                                     "archive_info": {"hashes": {"sha256": digest}}})
    with find_pristine([(dist, rows)], options(tmp_path, wheels=(str(tmp_path / "house"),))) as found:
        assert found.get(dist).copy.source is SourceKind.DIRECT_URL


def test_a_source_that_does_not_verify_is_rejected_and_the_next_one_used(tmp_path):
    dist, rows = dist_and_rows(tmp_path)
    uv = tmp_path / "uv" / "archive-v0" / "id"
    (uv / "pkg-1.0.dist-info").mkdir(parents=True)
    (uv / "pkg-1.0.dist-info" / "RECORD").write_text("")
    (uv / "pkg").mkdir()
    (uv / "pkg" / "__init__.py").write_text("")
    (uv / "pkg" / "core.py").write_text("X = 2\n")  # edited
    good = tmp_path / "good"
    wheel_file(good, "pkg", "1.0", FILES)
    # uv's cache alone, then with a --wheels directory (tried before uv's cache)
    with find_pristine([(dist, rows)], options(tmp_path, uv_cache=str(tmp_path / "uv"))) as found:
        lookup = found.get(dist)
        # the uv copy is the closest (one of two files verifies): used, with what it lacks said
        assert lookup.copy.source is SourceKind.UV_CACHE
        assert lookup.lacking == ("pkg/core.py",) and lookup.verified == {"pkg/__init__.py"}
        assert lookup.reason.startswith(f"no source has every file: uv's cache {uv}, the closest, has no verified "
                                        "copy of 1 of the 2 (pkg/core.py)")
        assert lookup.original(rows[1]) is None and lookup.original(rows[0]) is lookup.copy
    with find_pristine([(dist, rows)], options(tmp_path, uv_cache=str(tmp_path / "uv"),
                                               wheels=(str(good),))) as found:
        lookup = found.get(dist)
        assert lookup.copy.source is SourceKind.WHEELS and lookup.reason is None


def test_nothing_found_names_everything_tried(tmp_path):
    dist, rows = dist_and_rows(tmp_path)
    house = tmp_path / "house"
    wheel = wheel_file(house, "pkg", "1.0", {"pkg/__init__.py": "#", "pkg/core.py": "X = 2\n"})
    with find_pristine([(dist, rows)], options(tmp_path, wheels=(str(house),))) as found:
        lookup = found.get(dist)
        assert lookup.copy is None and set(lookup.lacking) == {"pkg/__init__.py", "pkg/core.py"}
        [rejected] = lookup.rejected
        assert rejected.path == str(wheel)
        assert rejected.reason == "pkg/__init__.py: its size differs from RECORD's (and 1 more of the 2 files)"
        assert lookup.reason == (
            "no original of pkg 1.0 found; tried direct_url (no direct_url.json); "
            f"uv's cache {tmp_path / 'no-uv'} (no archive of pkg-1.0.dist-info); "
            f"pip's cache {tmp_path / 'no-pip'} (no http-v2 directory); "
            "backups beside the files (no *.bak, *.orig, *~, *.backup of the same size); "
            f"driftscan's kept originals {os.path.join(os.environ['DRIFTSCAN_CACHE_DIR'], 'originals')} "
            "(none of its files kept); --fetch (not asked for); "
            f"--wheels {wheel} (rejected: {rejected.reason})")


def test_missing_caches_are_said(tmp_path):
    dist, rows = dist_and_rows(tmp_path)
    opts = PristineOptions(uv_cache=str(tmp_path / "none-uv"), pip_cache=str(tmp_path / "none-pip"))
    with find_pristine([(dist, rows)], opts) as found:
        reason = found.get(dist).reason
        assert f"uv's cache ({tmp_path / 'none-uv'}: no such directory)" in reason
        assert f"pip's cache ({tmp_path / 'none-pip'}: no such directory)" in reason
        assert "--wheels (not given)" in reason


def test_rows_no_wheel_has_are_not_looked_for(tmp_path):
    dist, rows = dist_and_rows(tmp_path)
    script = entry("../../../bin/tool", "#!python\n")
    written = entry("pkg-1.0.dist-info/INSTALLER", "pip\n")
    unhashed = RecordEntry("pkg/__pycache__/core.cpython-312.pyc", None, None, 9)
    with find_pristine([(dist, [script, written, unhashed])], options(tmp_path)) as found:
        lookup = found.get(dist)
        assert lookup.copy is None and lookup.rejected == ()
        assert lookup.lacking == (script.path, written.path, unhashed.path)
        assert lookup.reason == (
            "../../../bin/tool: installed outside site-packages (rewritten at install), no pristine copy; "
            "pkg-1.0.dist-info/INSTALLER: written by the installer, in no wheel; "
            "pkg/__pycache__/core.cpython-312.pyc: no hash in RECORD, so no copy can be verified")
    wheel_file(tmp_path / "house", "pkg", "1.0", FILES)
    with find_pristine([(dist, [rows[1], script])], options(tmp_path, wheels=(str(tmp_path / "house"),))) as found:
        lookup = found.get(dist)  # found for the rows a wheel has, the others said
        assert lookup.copy is not None and lookup.lacking == (script.path,)
        assert lookup.reason.startswith("../../../bin/tool: installed outside site-packages")


def test_a_distribution_that_is_no_wheel_install(tmp_path):
    dist, rows = dist_and_rows(tmp_path)
    egg = dataclasses.replace(dist, kind=MetadataKind.EGG_INFO)
    with find_pristine([(egg, rows)], options(tmp_path)) as found:
        assert found.get(egg).copy is None and found.get(egg).reason == NOT_A_WHEEL


def test_rows_of_one_distribution_are_looked_up_together_and_the_set_closes(tmp_path):
    dist, rows = dist_and_rows(tmp_path)
    wheel_file(tmp_path / "house", "pkg", "1.0", FILES)
    found = find_pristine([(dist, rows[:1]), (dist, rows[1:]), (dist, rows[1:])],
                          options(tmp_path, wheels=(str(tmp_path / "house"),)))
    [lookup] = found.lookups()
    assert lookup.verified == {"pkg/__init__.py", "pkg/core.py"}
    work = found.workdir()
    assert os.path.isdir(work)
    found.close()
    assert not os.path.exists(work)
    assert lookup.copy.read(rows[1]) is None  # closed: the wheel is no longer read
