"""environment/reinstall_source.py: what a reinstall installs from, and whether uv then links an
edited cache archive back (the edit survives) or unpacks the wheel afresh (it is wiped)."""

from __future__ import annotations

import json
import os

import pytest

from driftscan.core.errors import ConfigError
from driftscan.core.values import Distribution
from driftscan.environment import reinstall_source as rs
from driftscan.environment.reinstall_source import Bucket, Relink, SourceKind, ToldBy


def dist(tmp_path=None, **kw):
    base = dict(name="demo-pkg", version="1.0", metadata_dir=str(tmp_path or "/m") + "/demo_pkg-1.0.dist-info",
                site_packages="/s", installer="uv")
    return Distribution(**{**base, **kw})


def test_parse_source(tmp_path):
    wheel = tmp_path / "demo_pkg-1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    assert rs.parse_source("index") == rs.ReinstallSource(SourceKind.INDEX, None, (ToldBy.FLAG,),
                                                           "the index, named by --from")
    assert rs.parse_source(str(tmp_path)).kind is SourceKind.FIND_LINKS
    assert rs.parse_source(str(wheel)) == rs.ReinstallSource(SourceKind.WHEEL, str(wheel), (ToldBy.FLAG,),
                                                            "a wheel file, named by --from")
    (tmp_path / "notes.txt").write_text("")
    with pytest.raises(ConfigError, match="neither a .whl file nor a directory"):
        rs.parse_source(str(tmp_path / "notes.txt"))
    with pytest.raises(ConfigError, match="give a wheel file"):
        rs.parse_source(str(tmp_path / "missing.whl"))


def test_installed_source_from_the_metadata():
    local = dist(direct_url={"url": "file:///w/demo_pkg-1.0-py3-none-any.whl", "archive_info": {}})
    assert rs.installed_source(local) == rs.ReinstallSource(
        SourceKind.WHEEL, "/w/demo_pkg-1.0-py3-none-any.whl", (ToldBy.DIRECT_URL,),
        "direct_url.json names the wheel file /w/demo_pkg-1.0-py3-none-any.whl")
    vcs = dist(direct_url={"url": "https://example.invalid/repo.git", "vcs_info": {}})
    assert rs.installed_source(vcs).kind is SourceKind.UNKNOWN
    assert rs.installed_source(dist(installer=None)).told_by == (ToldBy.NOTHING,)
    assert rs.installed_source(dist()).kind is SourceKind.INDEX
    entry = rs.CacheEntry(Bucket.REGISTRY, "/c/wheels-v5/pypi/demo-pkg/1.0", "/c/archive-v0/X", None, None)
    told = rs.installed_source(dist(), entry)
    assert ToldBy.UV_CACHE in told.told_by and "package registry" in told.detail


def test_wheel_names_versions_and_mismatches(tmp_path):
    for name in ("demo_pkg-1.0-py3-none-any.whl", "Demo_Pkg-1.0-cp311-cp311-linux_x86_64.whl",
                 "demo_pkg-1.1-py3-none-any.whl", "other-1.0-py3-none-any.whl"):
        (tmp_path / name).write_bytes(b"")
    d = dist()
    assert [os.path.basename(w) for w in rs.wheels_of(str(tmp_path), d)] == [
        "Demo_Pkg-1.0-cp311-cp311-linux_x86_64.whl", "demo_pkg-1.0-py3-none-any.whl"]
    assert rs.wheel_version("demo_pkg-1.1-py3-none-any.whl") == "1.1"
    assert rs.wheel_version("not-a-wheel.whl") is None
    newer = rs.ReinstallSource(SourceKind.WHEEL, str(tmp_path / "demo_pkg-1.1-py3-none-any.whl"))
    assert "a change of version, not a reinstall" in rs.mismatch(newer, d)
    same = rs.ReinstallSource(SourceKind.WHEEL, str(tmp_path / "demo_pkg-1.0-py3-none-any.whl"))
    assert rs.mismatch(same, d) is None
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "holds no wheel of demo-pkg 1.0" in rs.mismatch(rs.ReinstallSource(SourceKind.FIND_LINKS, str(empty)), d)


def stamp(info, ns):
    info.mkdir(exist_ok=True)
    (info / "uv_cache.json").write_text(json.dumps(
        {"timestamp": {"secs_since_epoch": ns // 10**9, "nanos_since_epoch": ns % 10**9}}))


def test_installed_ctime_and_confirmed(tmp_path):
    wheel = tmp_path / "demo_pkg-1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    d = dist(tmp_path)
    info = tmp_path / "demo_pkg-1.0.dist-info"
    assert rs.installed_ctime(d) is None
    source = rs.ReinstallSource(SourceKind.WHEEL, str(wheel), (ToldBy.FLAG,), "named")
    assert rs.confirmed(source, d) == source  # nothing recorded: nothing to say
    stamp(info, os.stat(wheel).st_ctime_ns)
    assert rs.installed_ctime(d) == os.stat(wheel).st_ctime_ns
    same = rs.confirmed(source, d)
    assert same.told_by == (ToldBy.FLAG, ToldBy.UV_CACHE_JSON) and "the very file" in same.detail
    stamp(info, os.stat(wheel).st_ctime_ns - 1)
    other = rs.confirmed(source, d)
    assert other.told_by == (ToldBy.FLAG,) and "not the file uv installed it from" in other.detail
    (info / "uv_cache.json").write_text('{"timestamp": {"secs_since_epoch": -1, "nanos_since_epoch": 0}}')
    assert rs.installed_ctime(d) is None


def rev(ctime_ns: int, filename: str) -> bytes:
    """An entry's .rev as uv writes it: msgpack [[secs, nanos], id, filename]."""
    secs, nanos = divmod(ctime_ns, 10**9)
    name = filename.encode()
    return (b"\x93\x92\xcf" + secs.to_bytes(8, "big") + b"\xce" + nanos.to_bytes(4, "big")
            + b"\xa4abcd" + bytes([0xa0 | len(name)]) + name)


@pytest.fixture
def uv_cache(tmp_path):
    cache = tmp_path / "uv-cache"
    (cache / "archive-v0/ARCH/demo_pkg").mkdir(parents=True)
    (cache / "archive-v0/ARCH/demo_pkg/core.py").write_text("")
    entries = cache / "wheels-v5/url/h1/demo-pkg"
    entries.mkdir(parents=True)
    (entries / "1.0-py3-none-any").symlink_to("../../../../archive-v0/ARCH")
    return cache, entries


def test_cache_entry_found_from_a_copy_with_its_rev(uv_cache):
    cache, entries = uv_cache
    (entries / "1.0-py3-none-any.rev").write_bytes(rev(1_700_000_000_123_456_789, "demo_pkg-1.0-py3-none-any.whl"))
    found = rs.cache_entry(str(cache), str(cache / "archive-v0/ARCH/demo_pkg/core.py"), "demo_pkg")
    assert found == rs.CacheEntry(Bucket.URL, str(entries / "1.0-py3-none-any"), str(cache / "archive-v0/ARCH"),
                                  1_700_000_000_123_456_789, "demo_pkg-1.0-py3-none-any.whl", False)
    assert rs.cache_entry(str(cache), "/elsewhere/core.py", "demo_pkg") is None
    assert rs.cache_entry(str(cache), str(cache / "archive-v0/ARCH/demo_pkg/core.py"), "other") is None


def test_cache_entry_of_an_http_index_and_a_garbled_rev(uv_cache):
    cache, entries = uv_cache
    (entries / "1.0-py3-none-any.rev").write_bytes(b"garbage")
    found = rs.cache_entry(str(cache), str(cache / "archive-v0/ARCH/demo_pkg/core.py"), "demo-pkg")
    assert (found.ctime_ns, found.filename, found.http) == (None, None, False)
    os.unlink(entries / "1.0-py3-none-any.rev")
    (entries / "1.0-py3-none-any.http").write_bytes(b"")
    assert rs.cache_entry(str(cache), str(cache / "archive-v0/ARCH/demo_pkg/core.py"), "demo-pkg").http


def entry(bucket, ctime=None, filename=None, http=False):
    return rs.CacheEntry(bucket, "/c/wheels-v5/x", "/c/archive-v0/A", ctime, filename, http)


def test_relink_from_an_index():
    index = rs.ReinstallSource(SourceKind.INDEX)
    assert rs.relink(entry(Bucket.REGISTRY), index)[0] is Relink.UNPACKS  # --reinstall fetches again
    assert rs.relink(entry(Bucket.INDEX), index)[0] is Relink.UNKNOWN  # depends on what the index is then
    assert rs.relink(entry(Bucket.INDEX, http=True), index)[0] is Relink.UNKNOWN
    assert rs.relink(entry(Bucket.URL), index)[0] is Relink.UNPACKS
    assert rs.relink(None, index)[0] is Relink.UNKNOWN
    assert "--from" in rs.relink(entry(Bucket.URL), rs.ReinstallSource(SourceKind.UNKNOWN))[1]


def test_relink_from_the_same_wheel_file_only_when_its_ctime_is_unchanged(tmp_path):
    wheel = tmp_path / "demo_pkg-1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    ctime = os.stat(wheel).st_ctime_ns
    source = rs.ReinstallSource(SourceKind.WHEEL, str(wheel))
    assert rs.relink(entry(Bucket.URL, ctime), source)[0] is Relink.RELINKS
    assert rs.relink(entry(Bucket.URL, ctime - 1), source)[0] is Relink.UNPACKS
    assert rs.relink(entry(Bucket.URL, None), source)[0] is Relink.UNKNOWN
    assert rs.relink(entry(Bucket.REGISTRY, ctime), source)[0] is Relink.UNPACKS  # another cache entry


def test_relink_from_a_find_links_directory(tmp_path):
    wheel = tmp_path / "demo_pkg-1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    ctime = os.stat(wheel).st_ctime_ns
    source = rs.ReinstallSource(SourceKind.FIND_LINKS, str(tmp_path))
    assert rs.relink(entry(Bucket.INDEX, ctime, wheel.name), source)[0] is Relink.RELINKS
    assert rs.relink(entry(Bucket.INDEX, ctime, "other-1.0-py3-none-any.whl"), source)[0] is Relink.UNPACKS
    assert rs.relink(entry(Bucket.URL, ctime, wheel.name), source)[0] is Relink.UNPACKS


def test_pip_installed_reads_the_listing(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    os.utime(site, ns=(1, 1))
    assert not rs.pip_installed(str(site))
    (site / "pip-24.0.dist-info").mkdir()
    (site / "pip-24.0.txt").write_text("")  # a file of that name is no distribution
    os.utime(site, ns=(2, 2))  # a new entry moves the directory's mtime: the answer is not the remembered one
    assert rs.pip_installed(str(site))
    assert not rs.pip_installed(str(tmp_path / "missing"))
