"""environment/uv/archives.py: each archive of uv's cache checked against its own RECORD."""

from __future__ import annotations

import os

import pytest

from driftscan.caches import racy
from driftscan.core.values import Area, Distribution, DriftKind
from driftscan.environment.uv import archives as a
from fixtures.envtree import install
from fixtures.wheels import record_hash


def archive(cache, archive_id, name="demo", version="1.0", files=None, **kw):
    """An archive as uv unpacks a wheel: the package's files and one dist-info with its RECORD."""
    root = cache / "archive-v0" / archive_id
    root.mkdir(parents=True)
    install(root, name, version, files or {f"{name}/__init__.py": "", f"{name}/core.py": "X = 1\n"}, installer="uv",
            **kw)
    return root


@pytest.fixture
def cache(tmp_path):
    return tmp_path / "uv-cache"


def test_a_clean_cache(cache):
    one, two = archive(cache, "A1"), archive(cache, "B2", "other")
    result = a.audit_archives(str(cache))
    assert result.checks == () and result.errors == () and result.skipped == ()
    assert result.archives == 2 and result.files_checked == 2 * 4  # RECORD itself is not a file to check
    assert result.archive_paths == (str(one), str(two))


def test_an_edited_archive_is_one_cache_modified_drift(cache):
    root = archive(cache, "A1")
    (root / "demo/core.py").write_text("X = 2  # edited through a hard link\n")
    (root / "demo/__init__.py").unlink()
    link = cache / "wheels-v5/pypi/demo/1.0-py3-none-any"
    link.parent.mkdir(parents=True)
    link.symlink_to("../../../archive-v0/A1")
    index = a.archives_of(str(cache), [Distribution("demo", "1.0", "/m", "/s", installer="uv")])[1]
    [check] = a.audit_archives(str(cache), index=index).checks
    assert check.kind is DriftKind.CACHE_MODIFIED and check.area is Area.EXTERNAL
    assert check.path == str(root) and check.root == str(cache)
    assert (check.distribution.name, check.distribution.version) == ("demo", "1.0")
    assert {(e["path"], e["kind"]) for e in check.actual["edited"]} == {("demo/core.py", "modified"),
                                                                       ("demo/__init__.py", "missing")}
    assert check.actual["index_entries"] == [str(link)] and "so a new venv installed from that source" in check.evidence


def test_a_symlink_in_the_archive_is_reported_not_followed(cache, tmp_path):
    root = archive(cache, "A1")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere/core.py").write_text("X = 1\n")  # the very content RECORD names
    os.unlink(root / "demo/core.py")
    os.symlink(tmp_path / "elsewhere/core.py", root / "demo/core.py")
    [check] = a.audit_archives(str(cache)).checks
    assert [e["kind"] for e in check.actual["edited"]] == ["type-changed"]


def test_a_directory_leading_out_of_the_archive_is_not_followed(cache, tmp_path):
    root = archive(cache, "A1")
    outside = tmp_path / "outside"
    os.rename(root / "demo", outside)
    os.symlink(outside, root / "demo")
    [check] = a.audit_archives(str(cache)).checks
    edited = {e["path"]: e for e in check.actual["edited"]}
    assert set(edited) == {"demo/__init__.py", "demo/core.py"}
    assert all(e["kind"] == "type-changed" and "not followed" in e["why"] for e in edited.values())


def test_rows_naming_paths_outside_the_archive_are_not_opened(cache):
    digest = record_hash(b"root:x:0:0\n")
    archive(cache, "A1", extra_rows=(f"../../../../etc/passwd,{digest},11", "/etc/shadow,,"))
    result = a.audit_archives(str(cache))
    assert result.checks == ()
    [problem] = result.errors
    assert "2 RECORD rows of the uv cache archive name a path outside it" in problem.message


def test_archives_that_cannot_be_checked_are_problems_and_the_rest_goes_on(cache):
    (cache / "archive-v0/EMPTY").mkdir(parents=True)
    two = archive(cache, "TWO")
    install(two, "second", "1.0", {"second.py": ""})  # two dist-infos in one archive
    bad = archive(cache, "BAD")
    (bad / "demo-1.0.dist-info/RECORD").write_text("only,two\n")
    good = archive(cache, "GOOD", "good")
    (good / "good/core.py").write_text("edited\n")
    result = a.audit_archives(str(cache))
    messages = {os.path.relpath(p.path, cache): p.message for p in result.errors}
    assert "no .dist-info directory" in messages["archive-v0/EMPTY"]
    assert "2 .dist-info directories" in messages["archive-v0/TWO"]
    assert "malformed RECORD" in messages["archive-v0/BAD/demo-1.0.dist-info/RECORD"]
    assert [c.path for c in result.checks] == [str(good)]


def test_no_cache_and_named_archives(cache, tmp_path):
    assert a.audit_archives(str(tmp_path / "none")).errors[0].message == "no uv cache here: its archives were not checked"
    one = archive(cache, "A1")
    (one / "demo/core.py").write_text("edited\n")
    archive(cache, "B2", "other")
    result = a.audit_archives(str(cache), archives=[str(cache / "archive-v0/B2"), str(cache / "archive-v0/B2")])
    assert result.archives == 1 and result.checks == ()  # only what was named, once
    (cache / "archive-v0/FILE").write_text("")
    assert "not a directory" in a.audit_archives(str(cache), archives=[str(cache / "archive-v0/FILE")]).errors[0].message


def test_a_clean_archive_is_settled_by_its_signatures_next_time(cache, tmp_path, monkeypatch):
    monkeypatch.setattr(racy, "RACY_NS", 0)
    root = archive(cache, "A1")
    past = 1_600_000_000
    for dirpath, _, names in os.walk(root):
        for n in names:
            os.utime(os.path.join(dirpath, n), (past, past))
    clean = a.CleanArchives(str(tmp_path / "memo"))
    assert a.audit_archives(str(cache), clean=clean).files_checked == 4
    clean.save()
    again = a.CleanArchives(str(tmp_path / "memo"))
    assert again.still_clean(str(root)) == 4
    (root / "demo/core.py").write_text("X = 2\n")
    assert again.still_clean(str(root)) is None  # a changed signature: checked again
    assert len(a.audit_archives(str(cache), clean=again).checks) == 1


def test_archives_of_uv_installed_distributions(cache):
    archive(cache, "A1")
    link = cache / "wheels-v5/pypi/demo/1.0-py3-none-any"
    link.parent.mkdir(parents=True)
    link.symlink_to("../../../archive-v0/A1")
    dists = [Distribution("demo", "1.0", "/m/d", "/s", installer="uv"),
             Distribution("lost", "2.0", "/m/l", "/s", installer="uv"),
             Distribution("pipped", "1.0", "/m/p", "/s", installer="pip")]
    assert a.uv_installed(dists) == dists[:2]
    found, index, unfound = a.archives_of(str(cache), dists, linked=["/c/archive-v0/X"])
    assert found == [str(cache / "archive-v0/A1"), "/c/archive-v0/X"]
    assert [i.entry for i in index] == [str(link)]
    assert unfound == [dists[1]]
    note = a.unchecked_note(str(cache), unfound, exists=True)
    assert "has no archive in its wheel index for it: the cache copies of 1 uv-installed distribution (" \
        in note.message and "lost 2.0" in note.message and "the cache it was installed from" in note.message
    assert a.unchecked_note(str(cache), [], exists=True) is None


def test_an_archive_directory_linked_inside_the_cache_is_followed(cache):
    root = archive(cache, "A1")
    (root / "demo/core.py").write_text("X = 2  # edited\n")
    os.rename(cache / "archive-v0", cache / "moved")
    os.symlink("moved", cache / "archive-v0")
    result = a.audit_archives(str(cache))
    assert [c.path for c in result.checks] == [str(cache / "archive-v0/A1")] and result.errors == ()


def test_an_archive_linked_inside_the_cache_is_followed(cache):
    root = archive(cache, "A1")
    (root / "demo/core.py").write_text("X = 2  # edited\n")
    os.rename(root, cache / "elsewhere-A1")
    os.symlink("../elsewhere-A1", root)
    [check] = a.audit_archives(str(cache)).checks
    assert check.path == str(root) and check.actual["edited"][0]["path"] == "demo/core.py"


@pytest.mark.parametrize("which", ["archive-v0", "archive-v0/A1"])
def test_a_link_out_of_the_cache_is_not_followed_and_said(cache, tmp_path, which):
    root = archive(cache, "A1")
    (root / "demo/core.py").write_text("X = 2  # edited\n")
    outside = tmp_path / "other-disk" / "x"
    outside.parent.mkdir()
    os.rename(cache / which, outside)
    os.symlink(outside, cache / which)
    result = a.audit_archives(str(cache))
    assert result.checks == ()
    assert [e.path for e in result.errors] == [str(cache / which)]
    assert "not checked" in result.errors[0].message and str(outside) in result.errors[0].message
