"""environment/uv/links.py: drifted files that share their inode with uv's cache or link into it,
and distributions linked from virtualenv's app-data."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from driftscan.core.values import Distribution, DriftKind, FileCheck, UvCacheLink
from driftscan.environment.uv.links import annotate_app_data, annotate_uv_cache, unknown_app_data


@pytest.fixture
def layout(tmp_path):
    cache = tmp_path / "uv-cache"
    archive = cache / "archive-v0/ID1"
    archive.mkdir(parents=True)
    (archive / "mod.py").write_text("edited through the link\n")
    site = tmp_path / "v/lib/python3.11/site-packages"
    site.mkdir(parents=True)
    dist = Distribution("mod", "1.0", str(site / "mod-1.0.dist-info"), str(site), installer="uv")
    return cache, archive, site, dist


def test_a_hard_linked_edit_names_its_cache_copy(layout):
    cache, archive, site, dist = layout
    os.link(archive / "mod.py", site / "mod.py")
    check = FileCheck(DriftKind.MODIFIED, str(site / "mod.py"), str(site), dist, actual={"nlink": 2})
    [out] = annotate_uv_cache([check], str(cache))
    assert out.uv_cache == UvCacheLink(str(cache), str(archive / "mod.py"), 2, False)


def test_a_symlink_into_the_named_cache_names_it_and_one_elsewhere_does_not(layout, tmp_path):
    cache, archive, site, dist = layout
    os.symlink(archive / "mod.py", site / "mod.py")
    check = FileCheck(DriftKind.MODIFIED, str(site / "mod.py"), str(site), dist,
                      actual={"symlink_target": str(archive / "mod.py")})
    [out] = annotate_uv_cache([check], str(cache))
    assert out.uv_cache == UvCacheLink(str(cache), str(archive / "mod.py"), 1, True)
    # The same link, but driftscan was told of another cache: the tree's word alone names no copy.
    [other] = annotate_uv_cache([check], str(tmp_path / "another-cache"))
    assert other.uv_cache.copy is None and other.uv_cache.symlink


def test_only_linked_edits_of_a_distribution_are_annotated(layout):
    cache, archive, site, dist = layout
    (site / "mod.py").write_text("x")
    checks = [
        FileCheck(DriftKind.MODIFIED, str(site / "mod.py"), str(site), dist, actual={"nlink": 1}),  # not linked
        FileCheck(DriftKind.MISSING, str(site / "mod.py"), str(site), dist, actual={"nlink": 2}),
        FileCheck(DriftKind.ADDED, str(site / "mod.py"), str(site), None, actual={"nlink": 2}),
    ]
    assert annotate_uv_cache(checks, str(cache)) == checks


def test_a_linked_file_not_found_in_the_cache(layout):
    cache, _, site, dist = layout
    (site / "mod.py").write_text("x")
    os.link(site / "mod.py", site / "other-name")  # linked, but not with the cache
    check = FileCheck(DriftKind.CLOBBERED, str(site / "mod.py"), str(site), dist, actual={"nlink": 2})
    [out] = annotate_uv_cache([check], str(cache))
    assert out.uv_cache == UvCacheLink(str(cache), None, 2, False)


def test_app_data_linked_distributions_say_so(tmp_path):
    app_data = tmp_path / "app-data"
    image = app_data / "wheel/3.11/image/1/SymlinkPipInstall/pip-24.0-py3-none-any"
    (image / "pip-24.0.dist-info").mkdir(parents=True)
    site = tmp_path / "v/lib/python3.11/site-packages"
    site.mkdir(parents=True)
    (site / "pip-24.0.dist-info").symlink_to(image / "pip-24.0.dist-info")
    (site / "own-1.0.dist-info").mkdir()
    linked = Distribution("pip", "24.0", str(site / "pip-24.0.dist-info"), str(site))
    own = Distribution("own", "1.0", str(site / "own-1.0.dist-info"), str(site))
    checks = [FileCheck(DriftKind.MODIFIED, str(site / "pip/__init__.py"), str(site), linked, evidence="size"),
              FileCheck(DriftKind.MODIFIED, str(site / "own.py"), str(site), own),
              FileCheck(DriftKind.MISSING, str(site / "pip/x.py"), str(site), linked)]
    out = annotate_app_data(checks, str(app_data))
    assert out[0].evidence.startswith("size; linked from virtualenv's app-data image " + str(image))
    assert "--reset-app-data" in out[0].evidence
    assert out[1:] == checks[1:]  # not linked; not an edit
    assert annotate_app_data(checks, None) is checks
    assert annotate_app_data(checks, str(tmp_path / "other-app-data")) == checks


def test_uv_cache_annotation_keeps_everything_else(layout):
    cache, archive, site, dist = layout
    os.link(archive / "mod.py", site / "mod.py")
    check = FileCheck(DriftKind.MODIFIED, str(site / "mod.py"), str(site), dist, actual={"nlink": 2}, evidence="e")
    [out] = annotate_uv_cache([check], str(cache))
    assert replace(out, uv_cache=None) == check


def _added_link(site: str, name: str, target: str) -> FileCheck:
    return FileCheck(DriftKind.ADDED, f"{site}/{name}", site, None, {}, {"type": "symlink", "target": target},
                     "no RECORD lists this file")


def test_links_into_an_app_data_driftscan_does_not_know_say_how_to_name_it():
    site = "/v/lib/python3.11/site-packages"
    image = "/data/ad/wheel/3.11/image/1/SymlinkPipInstall/f3b6"
    copied = "../../../../data/ad/wheel/3.11/image/1/CopyPipInstall/ca14/setuptools"  # relative: from the link
    checks = [_added_link(site, "pip", f"{image}/pip"), _added_link(site, "pip-26.3.dist-info", f"{image}/pip-26.3.dist-info"),
              _added_link(site, "setuptools", copied), _added_link(site, "other", "/data/elsewhere/other"),
              FileCheck(DriftKind.ADDED, f"{site}/stray.py", site, None, {}, {"type": "file"}, "no RECORD lists this file")]
    out, notes = unknown_app_data(checks, "/home/u/.local/share/virtualenv")
    assert [c.path for c in out] == [c.path for c in checks]
    hinted = {os.path.basename(c.path) for c in out if "--app-data /data/ad" in c.evidence}
    assert hinted == {"pip", "pip-26.3.dist-info", "setuptools"}  # not a link elsewhere, not a file
    assert len(notes) == 1 and notes[0].path == "/data/ad"
    assert notes[0].message.startswith("3 symlinks of this environment lead into this directory")
    assert "(pip-26.3.dist-info)" in notes[0].message and "VIRTUALENV_OVERRIDE_APP_DATA=/data/ad" in notes[0].message
    # the app-data driftscan knows: nothing to say (its links are followed where the RECORD lists them)
    assert unknown_app_data(checks, "/data/ad") == (checks, [])
    assert unknown_app_data(checks, None)[1][0].path == "/data/ad"


def test_a_quoted_app_data_name_in_the_hint():
    site = "/v/lib/python3.11/site-packages"
    checks = [_added_link(site, "pip", "/data/my ad/wheel/3.12/image/1/SymlinkPipInstall/x/pip")]
    _, notes = unknown_app_data(checks, None)
    assert "--app-data '/data/my ad'" in notes[0].message
