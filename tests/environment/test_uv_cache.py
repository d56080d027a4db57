"""environment/uv/cache.py: where uv's cache is, its archives and wheel index, and which cache
file a venv file is linked to. Caches laid out here as uv 0.13 lays them out."""

from __future__ import annotations

import os

import pytest

from driftscan.environment.uv import cache as c


def test_default_uv_cache_follows_uvs_rule(monkeypatch):
    monkeypatch.setattr(c.sys, "platform", "linux")
    assert c.default_uv_cache({"UV_CACHE_DIR": "rel/cache", "XDG_CACHE_HOME": "/x"}) == os.path.abspath("rel/cache")
    assert c.default_uv_cache({"XDG_CACHE_HOME": "/x", "HOME": "/h"}) == "/x/uv"
    assert c.default_uv_cache({"HOME": "/h"}) == "/h/.cache/uv"
    assert c.default_virtualenv_app_data({"HOME": "/h"}) == "/h/.local/share/virtualenv"
    assert c.default_virtualenv_app_data({"XDG_DATA_HOME": "/d"}) == "/d/virtualenv"
    monkeypatch.setattr(c.sys, "platform", "win32")
    assert c.default_uv_cache({"LOCALAPPDATA": "C:/L"}) == os.path.join("C:/L", "uv", "cache")
    assert c.default_uv_cache({}) is None


@pytest.fixture
def cache(tmp_path):
    root = tmp_path / "uv-cache"
    for archive, files in {"AAA": {"six.py": b"six\n"}, "BBB": {"pkg/mod.py": b"mod\n"}}.items():
        for rel, data in files.items():
            (root / "archive-v0" / archive / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / "archive-v0" / archive / rel).write_bytes(data)
    (root / "archive-v0/not-a-dir").write_text("")
    pypi = root / "wheels-v5/pypi/six"
    pypi.mkdir(parents=True)
    (pypi / "1.17.0-py2.py3-none-any").symlink_to("../../../archive-v0/AAA")
    (pypi / "1.16.0-py2.py3-none-any").symlink_to("../../../archive-v0/AAA")
    url = root / "wheels-v5/url/0123abcd/pkg"
    url.mkdir(parents=True)
    (url / "2.0-py3-none-any").symlink_to("../../../../archive-v0/BBB")
    (url / "2.0-py3-none-any.rev").write_bytes(b"")
    (url / "2.0-py3-escape").symlink_to("/etc")  # not one of the cache's archives: never taken
    return root


def test_list_archives_and_archive_dirs(cache):
    assert c.archive_dirs(str(cache)) == [str(cache / "archive-v0")]
    archives, truncated = c.list_archives(str(cache))
    assert archives == [str(cache / "archive-v0/AAA"), str(cache / "archive-v0/BBB")] and not truncated
    assert c.list_archives(str(cache), limit=1)[1] is True


def test_indexed_archives_by_name_and_version(cache):
    six = c.indexed_archives(str(cache), "Six", "1.17.0")  # names compared normalised
    assert six == [c.IndexedArchive(str(cache / "archive-v0/AAA"),
                                    str(cache / "wheels-v5/pypi/six/1.17.0-py2.py3-none-any"))]
    pkg = c.indexed_archives(str(cache), "pkg", "2.0")
    assert [i.archive for i in pkg] == [str(cache / "archive-v0/BBB")]  # the link to /etc is not an archive
    assert c.indexed_archives(str(cache), "six", "9.9") == []
    assert c.indexed_archives(None, "six", "1.17.0") == []


def test_all_indexed_archives(cache):
    found = c.all_indexed_archives(str(cache))
    assert [(os.path.basename(i.archive), os.path.basename(i.entry)) for i in found] == [
        ("AAA", "1.16.0-py2.py3-none-any"), ("AAA", "1.17.0-py2.py3-none-any"), ("BBB", "2.0-py3-none-any")]


def test_find_cache_copy_by_inode(cache, tmp_path):
    venv_file = tmp_path / "six.py"
    os.link(cache / "archive-v0/AAA/six.py", venv_file)
    found = c.find_cache_copy(str(cache), str(venv_file), "six.py")
    assert found == c.CacheCopy(str(cache / "archive-v0/AAA/six.py"), True)
    (tmp_path / "copy.py").write_bytes(b"six\n")  # same content, another inode: not the cache's
    assert c.find_cache_copy(str(cache), str(tmp_path / "copy.py"), "six.py") is None


def test_a_record_path_cannot_climb_out_of_the_archive(cache, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("")
    climbing = os.path.relpath(secret, cache / "archive-v0/AAA")
    assert c.find_cache_copy(str(cache), str(secret), climbing) is None
    assert c.find_pristine_copy(str(cache), climbing, lambda p: True) is None
    assert c.find_pristine_copy(str(cache), str(secret), lambda p: True) is None  # absolute


def test_find_pristine_copy_takes_a_regular_file_whose_digest_matches(cache):
    seen = []
    found = c.find_pristine_copy(str(cache), "six.py", lambda p: seen.append(p) or True)
    assert found == str(cache / "archive-v0/AAA/six.py") and seen == [found]
    os.unlink(cache / "archive-v0/AAA/six.py")
    os.symlink("/etc/hostname", cache / "archive-v0/AAA/six.py")
    assert c.find_pristine_copy(str(cache), "six.py", lambda p: True) is None  # a link inside is not followed


def test_archive_holding(cache):
    assert c.archive_holding(str(cache), str(cache / "archive-v0/BBB/pkg/mod.py")) == str(cache / "archive-v0/BBB")
    assert c.archive_holding(str(cache), "/elsewhere/pkg/mod.py") is None
    assert c.archive_holding(None, str(cache / "archive-v0/BBB/pkg/mod.py")) is None
