"""environment/uv/links.py: drifted files that share their inode with uv's cache or link into it,
and distributions linked from virtualenv's app-data."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from driftscan.core.values import Distribution, DriftKind, FileCheck, UvCacheLink
from driftscan.environment.uv.links import annotate_app_data, annotate_uv_cache


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
