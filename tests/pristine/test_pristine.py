"""driftscan.pristine on real wheels installed by real pip and real uv (offline)."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import shutil
import threading
import zipfile
from pathlib import Path

import pytest

from driftscan.environment import find_distributions
from driftscan.core.values import Distribution, MetadataKind, RecordEntry
from driftscan.pristine import NOT_A_WHEEL, PristineOptions, SourceKind, find_pristine
from fixtures import venvs
from fixtures.harness import replace_by_rename
from fixtures.wheels import build_wheel

PIP_PACKAGES = ("prdirect", "prgone", "prswap", "prhostile", "prbomb", "prtag")
UV_PACKAGES = ("pruvclean", "pruvpoison", "pruvdirect")
CORE = "X = {name!r}\n" + "# padding\n" * 20


def files(name: str, version: str) -> dict[str, str]:
    return {f"{name}/__init__.py": f"__version__ = {version!r}\n",
            f"{name}/core.py": CORE.format(name=f"{name} {version}")}


def dist_of(site: Path, name: str) -> Distribution:
    for meta in find_distributions((str(site),)):
        if meta.distribution is not None and meta.distribution.name == name:
            return meta.distribution
    raise AssertionError(f"{name} is not installed in {site}")


def row(dist: Distribution, path: str) -> RecordEntry:
    return next(e for e in dist.entries if e.path == path)


def no_caches(tmp: Path, **kw) -> PristineOptions:
    """Options whose uv and pip caches are empty directories (never the user's own)."""
    (tmp / "no-uv").mkdir(exist_ok=True)
    (tmp / "no-pip").mkdir(exist_ok=True)
    return PristineOptions(uv_cache=str(tmp / "no-uv"), pip_cache=str(tmp / "no-pip"), **kw)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """Each pip package's wheel in a directory of its own (direct_url.json names it), and a
    wheelhouse with versions 1.0 and 2.0 of every package."""
    root = tmp_path_factory.mktemp("pristine-wheels")
    paths = {}
    for name in PIP_PACKAGES + UV_PACKAGES:
        paths[name] = build_wheel(root / "installed" / name, name, "1.0", files(name, "1.0"))
        for version in ("1.0", "2.0"):
            build_wheel(root / "house", name, version, files(name, version))
    paths["house"] = root / "house"
    paths["root"] = root
    return paths


@pytest.fixture(scope="module")
def pip_site(tmp_path_factory, built) -> Path:
    venv = venvs.make_pip_venv(tmp_path_factory.mktemp("pristine-pip") / "venv")
    venvs.pip_install(venv, "--no-index", *(str(built[name]) for name in PIP_PACKAGES))
    return venvs.site_packages_of(venv)


@pytest.fixture(scope="module")
def uv_site(tmp_path_factory, built) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("pristine-uv")
    cache = root / "uv-cache"  # private, on the venv's filesystem: uv hard-links from it
    venv = venvs.make_uv_venv(root / "venv", cache)
    venvs.uv_install(venv, cache, "--no-index", "--find-links", str(built["house"]), "pruvclean==1.0",
                     "pruvpoison==1.0")
    venvs.uv_install(venv, cache, "--no-index", str(built["pruvdirect"]))  # by path: a direct_url.json
    return venvs.site_packages_of(venv), cache


def test_direct_url_wheel_is_used(pip_site, built, tmp_path):
    dist = dist_of(pip_site, "prdirect")
    assert dist.direct_url["archive_info"]["hashes"]["sha256"]  # pip 23 records the wheel's hash
    core = row(dist, "prdirect/core.py")
    original = (pip_site / "prdirect/core.py").read_bytes()
    with open(pip_site / "prdirect/core.py", "a") as f:
        f.write("breakpoint()\n")
    with find_pristine([(dist, [core])], no_caches(tmp_path)) as found:
        lookup = found.get(dist)
        assert lookup is not None and lookup.copy is not None, lookup
        assert lookup.copy.source is SourceKind.DIRECT_URL
        assert lookup.copy.path == str(built["prdirect"])
        assert lookup.rejected == () and lookup.reason is None
        assert lookup.copy.read(core) == original
        out = io.BytesIO()
        assert lookup.copy.copy_to(core, out) and out.getvalue() == original
        assert lookup.copy.read(core, limit=len(original) - 1) is None  # bigger than asked for
        # A row promising other bytes never gets these
        forged = core._replace(hash=row(dist, "prdirect/__init__.py").hash)
        assert lookup.copy.read(forged) is None and not lookup.copy.copy_to(forged, io.BytesIO())
        # A no-hash row (pip's compiled bytecode) never verifies, though the wheel has no such member
        pyc = next(e for e in dist.entries if e.path.endswith(".pyc"))
        assert pyc.hash is None
        assert lookup.copy.read(pyc) is None and not lookup.copy.has(pyc)
        assert lookup.copy.has(core)
        assert [lk.distribution.name for lk in found.lookups()] == ["prdirect"]


def test_only_unhashed_rows_needed(pip_site, tmp_path):
    dist = dist_of(pip_site, "prdirect")
    pycs = [e for e in dist.entries if e.path.endswith(".pyc")]
    with find_pristine([(dist, pycs)], no_caches(tmp_path)) as found:
        lookup = found.get(dist)
        assert lookup.copy is None and "no hash in RECORD" in lookup.reason
        assert set(lookup.lacking) == {e.path for e in pycs}


def test_deleted_wheel_falls_through_to_wheels_dir(pip_site, built, tmp_path):
    dist = dist_of(pip_site, "prgone")
    core = row(dist, "prgone/core.py")
    original = (pip_site / "prgone/core.py").read_bytes()
    built["prgone"].unlink()
    (pip_site / "prgone/core.py").unlink()  # a missing file wants its original too
    with find_pristine([(dist, [core])], no_caches(tmp_path)) as found:
        lookup = found.get(dist)
        assert lookup.copy is None
        assert "is gone" in lookup.reason and "--wheels (not given)" in lookup.reason
        assert "--fetch (not asked for)" in lookup.reason
    with find_pristine([(dist, [core])], no_caches(tmp_path, wheels=(str(built["house"]),))) as found:
        lookup = found.get(dist)
        assert lookup.copy.source is SourceKind.WHEELS
        assert os.path.basename(lookup.copy.path) == "prgone-1.0-py3-none-any.whl"  # not 2.0
        assert lookup.copy.read(core) == original


def test_replaced_wheel_is_rejected(pip_site, built, tmp_path):
    dist = dist_of(pip_site, "prswap")
    core = row(dist, "prswap/core.py")
    shutil.copy(built["house"] / "prswap-2.0-py3-none-any.whl", built["prswap"])  # another release, same name
    with find_pristine([(dist, [core])], no_caches(tmp_path)) as found:
        lookup = found.get(dist)
        assert lookup.copy is None
        [rejected] = lookup.rejected
        assert rejected.source is SourceKind.DIRECT_URL and rejected.path == str(built["prswap"])
        assert "differs from the one direct_url.json recorded" in rejected.reason
    with find_pristine([(dist, [core])], no_caches(tmp_path, wheels=(str(built["house"]),))) as found:
        lookup = found.get(dist)
        assert lookup.copy.source is SourceKind.WHEELS and lookup.rejected[0].source is SourceKind.DIRECT_URL
        assert lookup.copy.read(core) == CORE.format(name="prswap 1.0").encode()


def _in_time(func, seconds: float = 30.0):
    """``func()``, failing (instead of hanging the suite) if it does not return in time."""
    result: list = []
    thread = threading.Thread(target=lambda: result.append(func()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "find_pristine hung"
    return result[0]


def test_hostile_direct_url(pip_site, tmp_path):
    site = pip_site
    info = next(site.glob("prhostile-1.0.dist-info"))
    os.mkfifo(tmp_path / "fifo.whl")
    (tmp_path / "dir.whl").mkdir()
    (tmp_path / "zero.whl").symlink_to("/dev/zero")
    cases = {
        f"file://{tmp_path}/fifo.whl": "not a regular file",
        f"file://{tmp_path}/zero.whl": "reached through a symlink",  # a link is not even opened
        "file:///dev/zero": "not a wheel",
        f"file://{tmp_path}/dir.whl": "not a regular file",
        "file:relative/x.whl": "not an absolute path",
        "file://evil.example/tmp/x.whl": "names a host",
        "https://example.invalid/x.whl": "not a local file:// URL",
    }
    for url, why in cases.items():
        (info / "direct_url.json").write_text(json.dumps({"url": url, "archive_info": {}}))
        dist = dist_of(site, "prhostile")
        assert dist.direct_url["url"] == url
        core = row(dist, "prhostile/core.py")
        found = _in_time(lambda d=dist, c=core: find_pristine([(d, [c])], no_caches(tmp_path)))
        with found:
            lookup = found.get(dist)
            assert lookup.copy is None
            assert why in lookup.reason, (url, lookup.reason)
    (info / "direct_url.json").write_text("[1, 2]")  # discovery sets aside JSON that is no object
    assert dist_of(site, "prhostile").direct_url is None
    for value in ([1, 2], "file:///x.whl", {"url": ["x"]}, {"url": f"file://{tmp_path}/fifo.whl", "archive_info": []}):
        dist = dataclasses.replace(dist_of(site, "prhostile"), direct_url=value)  # an API caller's any-JSON
        found = _in_time(lambda d=dist: find_pristine([(d, [row(d, "prhostile/core.py")])], no_caches(tmp_path)))
        with found:
            assert found.get(dist).copy is None and found.get(dist).reason


def _lying_zip(path: Path, member: str, declared: int) -> None:
    """Rewrite ``member``'s size fields (local header and central directory) to ``declared``."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        offset = zf.getinfo(member).header_offset
    data[offset + 22:offset + 26] = declared.to_bytes(4, "little")
    central = data.rfind(b"PK\x01\x02", 0, data.rfind(member.encode()) + 1)
    data[central + 24:central + 28] = declared.to_bytes(4, "little")
    path.write_bytes(bytes(data))


def test_zip_bomb_is_not_read_beyond_bound(pip_site, built, tmp_path, monkeypatch):
    dist = dist_of(pip_site, "prbomb")
    core = row(dist, "prbomb/core.py")
    built["prbomb"].unlink()
    big = build_wheel(tmp_path / "honest", "prbomb", "1.0", {"prbomb/core.py": b"\0" * (64 << 20)})
    lying = build_wheel(tmp_path / "lying", "prbomb", "1.0", {"prbomb/core.py": b"\0" * (64 << 20)})
    _lying_zip(lying, "prbomb/core.py", core.size)
    read = 0
    real_read = zipfile.ZipExtFile.read

    def counting(self, n=-1):
        nonlocal read
        data = real_read(self, n)
        read += len(data)
        return data

    monkeypatch.setattr(zipfile.ZipExtFile, "read", counting)
    for house, why in ((big, "size differs from RECORD"), (lying, "unreadable")):
        read = 0
        with find_pristine([(dist, [core])], no_caches(tmp_path, wheels=(str(house.parent),))) as found:
            lookup = found.get(dist)
            assert lookup.copy is None
            assert lookup.rejected[-1].source is SourceKind.WHEELS and why in lookup.rejected[-1].reason
        assert read <= core.size + 1


def test_wheels_dir_tag_must_match(pip_site, built, tmp_path):
    dist = dist_of(pip_site, "prtag")
    core = row(dist, "prtag/core.py")
    built["prtag"].unlink()
    other = build_wheel(tmp_path / "windows", "prtag", "1.0", files("prtag", "1.0"), tag="cp311-cp311-win_amd64")
    with find_pristine([(dist, [core])], no_caches(tmp_path, wheels=(str(other.parent),))) as found:
        lookup = found.get(dist)
        assert lookup.copy is None and "set aside for their tags" in lookup.reason
    # A compressed tag set that holds the installed tag (py3-none-any) fits
    both = build_wheel(tmp_path / "universal", "prtag", "1.0", files("prtag", "1.0"), tag="py2.py3-none-any")
    with find_pristine([(dist, [core])], no_caches(tmp_path, wheels=(str(other.parent), str(both.parent)))) as found:
        assert found.get(dist).copy.path == str(both)


def test_uv_cache_is_used(uv_site, tmp_path):
    site, cache = uv_site
    dist = dist_of(site, "pruvclean")
    assert dist.direct_url is None  # installed from --find-links: no direct_url.json
    core = row(dist, "pruvclean/core.py")
    original = (site / "pruvclean/core.py").read_bytes()
    replace_by_rename(site / "pruvclean/core.py", "X = 'edited'\n")  # breaks the hard link
    options = PristineOptions(uv_cache=str(cache), pip_cache=str(tmp_path))
    with find_pristine([(dist, [core])], options) as found:
        lookup = found.get(dist)
        assert lookup.copy.source is SourceKind.UV_CACHE
        assert Path(lookup.copy.path).parent == cache / "archive-v0"
        assert lookup.copy.read(core) == original


def test_poisoned_uv_cache_is_rejected(uv_site, tmp_path):
    """(That the next source is then used: test_pristine_pipcache.py, where pip's cache follows.)"""
    site, cache = uv_site
    dist = dist_of(site, "pruvpoison")
    core = row(dist, "pruvpoison/core.py")
    assert os.stat(site / "pruvpoison/core.py").st_nlink > 1  # hard-linked from the cache
    with open(site / "pruvpoison/core.py", "a") as f:  # an in-place edit: the cache copy changes too
        f.write("import pdb; pdb.set_trace()\n")
    options = PristineOptions(uv_cache=str(cache), pip_cache=str(tmp_path))
    with find_pristine([(dist, [core])], options) as found:
        lookup = found.get(dist)
        assert lookup.copy is None
        [poisoned] = lookup.rejected
        assert poisoned.source is SourceKind.UV_CACHE and Path(poisoned.path).parent == cache / "archive-v0"
        assert poisoned.reason.startswith("pruvpoison/core.py does not match RECORD: the cached copy is edited")
        assert "poisoned" in poisoned.reason and "shares its inode with the installed file" in poisoned.reason
        assert "rejected: pruvpoison/core.py does not match RECORD" in lookup.reason


def test_uv_direct_url_without_archive_hash(uv_site, built, tmp_path):
    site, _ = uv_site
    dist = dist_of(site, "pruvdirect")
    assert dist.direct_url["archive_info"] == {}  # uv records no hash of the wheel
    core = row(dist, "pruvdirect/core.py")
    (site / "pruvdirect/core.py").unlink()
    with find_pristine([(dist, [core])], no_caches(tmp_path)) as found:
        lookup = found.get(dist)
        assert lookup.copy.source is SourceKind.DIRECT_URL and lookup.copy.path == str(built["pruvdirect"])
        assert "recorded no archive hash" in lookup.reason
        assert lookup.copy.read(core) == CORE.format(name="pruvdirect 1.0").encode()


def test_corrupt_wheels_are_reasons(pip_site, tmp_path):
    dist = dist_of(pip_site, "prdirect")
    core = row(dist, "prdirect/core.py")
    dist = dataclasses.replace(dist, direct_url=None)
    wheel = build_wheel(tmp_path / "src", "prdirect", "1.0", files("prdirect", "1.0"))
    data = wheel.read_bytes()
    (tmp_path / "truncated").mkdir()
    (tmp_path / "truncated" / wheel.name).write_bytes(data[:len(data) // 2])
    with zipfile.ZipFile(wheel) as zf:
        info = zf.getinfo("prdirect/core.py")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    damaged = bytearray(data)
    damaged[start + info.compress_size // 2] ^= 0xFF  # inside core.py's deflated bytes
    (tmp_path / "damaged").mkdir()
    (tmp_path / "damaged" / wheel.name).write_bytes(bytes(damaged))
    forged = bytearray(data)  # an end record claiming a 2 GiB central directory
    forged[-22 + 12:-22 + 16] = (0x7FFFFFFF).to_bytes(4, "little")
    (tmp_path / "forged").mkdir()
    (tmp_path / "forged" / wheel.name).write_bytes(bytes(forged))
    for house, why in (("truncated", "not a zip file"), ("damaged", "unreadable"),
                       ("forged", "central directory has 2147483647 bytes, more than")):
        options = no_caches(tmp_path, wheels=(str(tmp_path / house),))
        with find_pristine([(dist, [core])], options) as found:
            lookup = found.get(dist)
            assert lookup.copy is None
            [rejected] = lookup.rejected
            assert rejected.source is SourceKind.WHEELS and why in rejected.reason, rejected


def test_best_partial_copy(pip_site, built, tmp_path):
    dist = dataclasses.replace(dist_of(pip_site, "prgone"), direct_url=None)
    core, init = row(dist, "prgone/core.py"), row(dist, "prgone/__init__.py")
    # Two wheels of the release, neither whole: one has core.py right, the other neither file
    both_wrong = build_wheel(tmp_path / "a", "prgone", "1.0", {"prgone/__init__.py": "x", "prgone/core.py": "y"})
    core_right = build_wheel(tmp_path / "b", "prgone", "1.0", {**files("prgone", "1.0"), "prgone/__init__.py": "z"})
    options = no_caches(tmp_path, wheels=(str(both_wrong.parent), str(core_right.parent)))
    with find_pristine([(dist, [core, init])], options) as found:
        lookup = found.get(dist)
        assert lookup.copy is not None and lookup.copy.path == str(core_right)
        assert lookup.reason.startswith(f"no source has every file: --wheels {core_right}, the closest, has no "
                                        "verified copy of 1 of the 2 (prgone/__init__.py)")
        assert lookup.lacking == ("prgone/__init__.py",)
        assert [r.path for r in lookup.rejected] == [str(both_wrong), str(core_right)]
        assert "and 1 more of the 2 files" in lookup.rejected[0].reason
        assert lookup.copy.read(core) == CORE.format(name="prgone 1.0").encode()
        assert lookup.copy.read(init) is None


def test_not_a_wheel_install(pip_site, tmp_path):
    dist = dataclasses.replace(dist_of(pip_site, "prdirect"), kind=MetadataKind.EGG_INFO)
    with find_pristine([(dist, dist.entries)], no_caches(tmp_path)) as found:
        assert found.get(dist).copy is None and found.get(dist).reason == NOT_A_WHEEL
