"""driftscan.pristine.uvarchive: uv's unpacked wheels as sources, and why a copy is poisoned."""

from __future__ import annotations

import os
from pathlib import Path

from driftscan.pristine.base import SourceKind
from driftscan.pristine.uvarchive import ArchiveIndex, UvArchiveCopy
from fixtures.wheelfiles import as_bytes, entry, installed

FILES = {"pkg/core.py": "X = 1\n", "pkg/__init__.py": ""}


def archive(cache: Path, archive_id: str, info: str, files: dict[str, bytes | str], record: bool = True) -> Path:
    """``<cache>/archive-v0/<id>/`` as uv unpacks a wheel: its files and ``<info>/RECORD``."""
    root = cache / "archive-v0" / archive_id
    for path, content in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(as_bytes(content))
    (root / info).mkdir(parents=True, exist_ok=True)
    if record:
        (root / info / "RECORD").write_text("")
    return root


def test_archives_of_a_distribution(tmp_path):
    cache = tmp_path / "uv"
    exact = archive(cache, "b-exact", "pkg-1.0.dist-info", FILES)
    spelled = archive(cache, "a-spelled", "Pkg-1.0.0.dist-info", FILES)  # same release spelled otherwise
    archive(cache, "c-norecord", "pkg-1.0.dist-info", FILES, record=False)
    archive(cache, "d-other", "pkg-2.0.dist-info", FILES)
    (cache / "archive-v0" / "stray-file").write_text("x")
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES)
    assert list(ArchiveIndex(str(cache)).archives(dist)) == [
        (str(exact), "pkg-1.0.dist-info"), (str(spelled), "Pkg-1.0.0.dist-info")]  # the installed name first


def test_no_archive_directory_means_no_archives(tmp_path):
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES)
    assert list(ArchiveIndex(str(tmp_path / "nowhere")).archives(dist)) == []


def test_an_intact_cache_copy_is_read(tmp_path):
    root = archive(tmp_path / "uv", "x", "pkg-1.0.dist-info", {**FILES, "pkg-1.0.data/scripts/tool": "#!py\n"})
    os.chmod(root / "pkg-1.0.data/scripts/tool", 0o755)
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES)
    copy = UvArchiveCopy(str(root), "pkg-1.0.dist-info", dist)
    core = next(e for e in dist.entries if e.path == "pkg/core.py")
    assert copy.source is SourceKind.UV_CACHE and copy.path == str(root)
    assert copy.has(core) and copy.read(core) == b"X = 1\n"
    assert not copy.executable(core)
    assert copy.executable(entry("pkg-1.0.data/scripts/tool", "#!py\n"))
    assert not copy.has(entry("pkg/none.py", ""))
    assert copy.check(entry("pkg/none.py", "")) == "not in uv's cache"


def test_a_symlink_in_the_archive_is_not_followed(tmp_path):
    root = archive(tmp_path / "uv", "x", "pkg-1.0.dist-info", {"pkg/__init__.py": ""})
    (tmp_path / "outside.py").write_text("X = 1\n")
    os.symlink(tmp_path / "outside.py", root / "pkg" / "core.py")
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES)
    copy = UvArchiveCopy(str(root), "pkg-1.0.dist-info", dist)
    core = next(e for e in dist.entries if e.path == "pkg/core.py")
    assert not copy.has(core) and not copy.executable(core)
    why = copy.check(core)
    assert why is not None and why.startswith("unreadable: ")
    assert copy.read(core) is None


def test_an_edited_copy_shared_with_the_venv_is_called_poisoned(tmp_path):
    """uv hard-links the venv's files from its cache: an in-place edit edits the cache copy too."""
    root = archive(tmp_path / "uv", "x", "pkg-1.0.dist-info", FILES)
    dist = installed(tmp_path / "site", "pkg", "1.0", {"pkg/__init__.py": ""})
    core = entry("pkg/core.py", "X = 1\n")
    os.link(root / "pkg" / "core.py", tmp_path / "site" / "pkg" / "core.py")
    with open(tmp_path / "site" / "pkg" / "core.py", "a") as f:
        f.write("breakpoint()\n")
    copy = UvArchiveCopy(str(root), "pkg-1.0.dist-info", dist)
    [(row, why)] = copy.failures([core])
    assert copy.explain(row, why) == ("pkg/core.py does not match RECORD: the cached copy is edited (a hard link "
                                      "shared with a venv: poisoned; it shares its inode with the installed file)")


def test_an_edited_copy_linked_elsewhere_or_not_at_all(tmp_path):
    root = archive(tmp_path / "uv", "x", "pkg-1.0.dist-info", {**FILES, "pkg/core.py": "X = 2\n"})
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES)
    core = next(e for e in dist.entries if e.path == "pkg/core.py")
    copy = UvArchiveCopy(str(root), "pkg-1.0.dist-info", dist)
    why = copy.check(core)
    assert copy.explain(core, why) == ("pkg/core.py does not match RECORD: the cached copy is edited "
                                       "(its content does not match RECORD's sha256)")
    os.link(root / "pkg" / "core.py", tmp_path / "another-venv-core.py")
    copy = UvArchiveCopy(str(root), "pkg-1.0.dist-info", dist)
    why = copy.check(core)
    assert copy.explain(core, why).endswith("(a hard link shared with a venv (2 links): poisoned)")
    assert copy.explain(entry("pkg/x.py", ""), "not in uv's cache") == "pkg/x.py: not in uv's cache"
