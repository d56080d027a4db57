"""find_wheel and check_provenance on wheel files written by the tests (no installer run)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

from driftscan.core.values import MetadataKind
from driftscan.pristine import PristineOptions
from driftscan.provenance.check import check_provenance
from driftscan.provenance.expected import Expected
from driftscan.provenance.find import find_wheel
from driftscan.provenance.model import ProvenanceSource
from driftscan.provenance.find import memo_path
from driftscan.pristine.search import NOT_A_WHEEL
from fixtures.harness import settle
from fixtures.wheelfiles import installed, wheel_file

FILES = {"pkg/__init__.py": "", "pkg/mod.py": "X = 1\n"}


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def options(tmp: Path, wheels=(), pip_cache: Path | None = None) -> PristineOptions:
    (tmp / "empty").mkdir(exist_ok=True)
    return PristineOptions(wheels=tuple(map(str, wheels)), uv_cache=str(tmp / "empty"),
                           pip_cache=str(pip_cache or tmp / "empty"))


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_a_wheel_digest_is_remembered_and_not_hashed_again(tmp_path):
    house = tmp_path / "house"
    wheel = wheel_file(house, "pkg", "1.0", FILES)
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES)
    wanted = Expected(sha256_of(wheel))
    settle(house)  # a wheel changed within the racy window is never remembered
    notes: list[str] = []
    copy = find_wheel(dist, wanted, options(tmp_path, [house]), notes)
    assert copy is not None and copy.path == str(wheel)
    copy.close()
    memo = json.loads(Path(memo_path()).read_text())
    assert memo[str(wheel)]["sha256"] == wanted.sha256
    # What the memo says for an unchanged file is what is used: a forged entry proves no re-hash.
    memo[str(wheel)]["sha256"] = "0" * 64
    Path(memo_path()).write_text(json.dumps(memo))
    notes = []
    assert find_wheel(dist, wanted, options(tmp_path, [house]), notes) is None
    assert any(f"its sha256 {'0' * 12}… differs" in n for n in notes)
    # A file changed since (a new mtime) is hashed again.
    os.utime(wheel, ns=(os.stat(wheel).st_atime_ns, os.stat(wheel).st_mtime_ns - 10**9))
    copy = find_wheel(dist, wanted, options(tmp_path, [house]), [])
    assert copy is not None
    copy.close()


def test_a_pip_cache_body_with_the_digest_is_found(tmp_path):
    wheel = wheel_file(tmp_path / "built", "pkg", "1.0", FILES)
    body = tmp_path / "pip" / "http-v2" / "a" / "b" / "c" / "d" / "e" / ("f" * 56 + ".body")
    body.parent.mkdir(parents=True)
    shutil.copy(wheel, body)  # pip 23.3+ keeps a downloaded wheel byte for byte as a body
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES)
    [found] = check_provenance([dist], {dist.metadata_dir: Expected(sha256_of(wheel), "uv.lock")},
                               options(tmp_path, pip_cache=tmp_path / "pip"))
    assert found.verified and found.source is ProvenanceSource.PIP_CACHE and found.wheel == body.name
    # This hand-made install has no METADATA: only the wheel's dist-info rows differ.
    assert sorted((r.path, r.kind.value) for r in found.rows) == \
        [("pkg-1.0.dist-info/METADATA", "removed"), ("pkg-1.0.dist-info/WHEEL", "removed")]


def test_the_digest_of_another_release_is_not_this_ones(tmp_path):
    house = tmp_path / "house"
    other = wheel_file(tmp_path / "other", "pkg", "2.0", FILES)
    house.mkdir()
    shutil.copy(other, house / "pkg-1.0-py3-none-any.whl")  # another release's wheel under this one's name
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES)
    [found] = check_provenance([dist], {dist.metadata_dir: Expected(sha256_of(other))}, options(tmp_path, [house]))
    assert not found.verified
    assert "its sha256 is the expected one, but it is not a wheel of pkg 1.0" in found.reason


def test_direct_urls_wheel_is_not_opened_through_a_symlink(tmp_path):
    wheel = wheel_file(tmp_path / "built", "pkg", "1.0", FILES)
    link = tmp_path / "link.whl"
    link.symlink_to(wheel)
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES,
                     direct_url={"url": link.as_uri(), "archive_info": {"hashes": {"sha256": sha256_of(wheel)}}})
    [found] = check_provenance([dist], {}, options(tmp_path))
    assert not found.verified and "reached through a symlink: not opened" in found.reason


def test_what_is_not_a_wheel_install_is_unverified_with_why(tmp_path):
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES)
    wanted = Expected("0" * 64, "poetry.lock")
    egg = replace(dist, kind=MetadataKind.EGG_INFO)
    empty = replace(dist, entries=())
    assert [(p.verified, p.reason) for p in check_provenance([egg], {dist.metadata_dir: wanted}, options(tmp_path))] \
        == [(False, NOT_A_WHEEL)]
    [found] = check_provenance([empty], {dist.metadata_dir: wanted}, options(tmp_path))
    assert not found.verified and found.reason == "the installed RECORD has no rows (missing or unreadable)"


def test_every_wheel_opened_is_closed(tmp_path):
    house = tmp_path / "house"
    wheels = [wheel_file(house, f"pkg{i}", "1.0", {f"pkg{i}/__init__.py": ""}) for i in range(3)]
    dists = [installed(tmp_path / "site", f"pkg{i}", "1.0", {f"pkg{i}/__init__.py": ""}) for i in range(3)]
    before = open_fds()
    results = check_provenance(dists, {d.metadata_dir: Expected(sha256_of(w)) for d, w in zip(dists, wheels)},
                               options(tmp_path, [house]))
    assert [p.verified for p in results] == [True, True, True]
    assert open_fds() <= before


def test_a_wheel_with_an_unreadable_record_is_unverified(tmp_path):
    import zipfile

    house = tmp_path / "house"
    wheel = wheel_file(house, "pkg", "1.0", FILES)
    with zipfile.ZipFile(wheel) as zf:
        members = [(info, zf.read(info)) for info in zf.infolist()]
    with zipfile.ZipFile(wheel, "w") as zf:
        for info, data in members:
            zf.writestr(info, b"" if info.filename.endswith("/RECORD") else data)
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES)
    [found] = check_provenance([dist], {dist.metadata_dir: Expected(sha256_of(wheel))}, options(tmp_path, [house]))
    assert not found.verified and found.reason == f"the wheel {wheel.name} has no readable RECORD"
    assert found.source is ProvenanceSource.WHEELS and found.rows == ()


def test_what_direct_url_names_is_data_never_a_crash(tmp_path):
    fifo = tmp_path / "pkg-1.0-py3-none-any.whl"
    os.mkfifo(fifo)
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES,
                     direct_url={"url": fifo.as_uri(), "archive_info": {"hashes": {"sha256": "0" * 64}}})
    [found] = check_provenance([dist], {}, options(tmp_path))
    assert not found.verified and f"direct_url.json's wheel {fifo} (rejected: not usable: not a regular file" \
        in found.reason


def test_one_run_indexes_pip_cache_and_lists_wheels_once_for_every_distribution(tmp_path, monkeypatch):
    """pip's cache index walks the whole cache when it refreshes: check_provenance does it once for
    all its distributions, not once each (and lists --wheels and writes the digest memo once)."""
    from driftscan.pristine.pipcache import PipCacheIndex
    from driftscan.pristine.wheelhouse import Wheelhouse
    import driftscan.provenance.find as find

    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))  # its own memo: other tests' wheels are not in it
    house, pip = tmp_path / "house", tmp_path / "pip"
    names = [f"pkg{i}" for i in range(4)]
    expected, dists = {}, []
    for i, name in enumerate(names):
        files = {f"{name}/__init__.py": f"X = {i}\n"}
        built = wheel_file(tmp_path / "built", name, "1.0", files)
        if i % 2:
            body = pip / "http-v2" / "a" / "b" / "c" / "d" / f"{i}" / ("f" * 56 + ".body")
            body.parent.mkdir(parents=True)
            shutil.copy(built, body)
        else:
            house.mkdir(exist_ok=True)
            shutil.copy(built, house / built.name)
        dist = installed(tmp_path / "site", name, "1.0", files)
        dists.append(dist)
        expected[dist.metadata_dir] = Expected(sha256_of(built), "requirements.txt")
    settle(house)
    calls = {"refresh": 0, "list": 0, "save": 0}

    def counted(key, real):
        def wrapper(*args, **kwargs):
            calls[key] += 1
            return real(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(PipCacheIndex, "refresh", counted("refresh", PipCacheIndex.refresh))
    monkeypatch.setattr(Wheelhouse, "_list", counted("list", Wheelhouse._list))
    monkeypatch.setattr(find, "write_cache_file", counted("save", find.write_cache_file))
    found = check_provenance(dists, expected, options(tmp_path, [house], pip_cache=pip))
    assert [(p.distribution, p.verified, p.source) for p in found] == \
        [(name, True, ProvenanceSource.PIP_CACHE if i % 2 else ProvenanceSource.WHEELS)
         for i, name in enumerate(names)]
    assert calls == {"refresh": 1, "list": 1, "save": 1}
    assert len(json.loads(Path(memo_path()).read_text())) == len(names)
