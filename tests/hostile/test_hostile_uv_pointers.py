"""environment/uv/pointers.py on caches written by hand: every layout uv 0.13 uses, and pointer
files that lie, are not files, or are far too large — each skipped with its reason, never a hang
or a traceback."""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from driftscan.environment.uv import pointers as p
from driftscan.environment.uv.pointers import Rejected
from fixtures.bounded import python_bounded
from fixtures.uvpointers import cache_entry, encode, http_pointer, rev_pointer
from fixtures.wheels import record_hash

DIGEST = "4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274"


@pytest.fixture
def cache(tmp_path):
    return tmp_path / "uv-cache"


def reasons(scan: p.PointerScan) -> dict[str, str]:
    return {os.path.basename(r.pointer): r.reason for r in scan.rejected}


@pytest.mark.parametrize(("source", "suffix"), [("pypi", ".http"), ("url/78a49034bb26bd96", ".http"),
                                                ("index/e1776917174dae1d", ".rev"),
                                                ("url/78a49034bb26bd96", ".rev")])
def test_each_source_of_the_index_gives_its_pointer(cache, source, suffix):
    archive, entry, pointer = cache_entry(cache, "six", "1.17.0", "WcNbN0c1JST41H4Y", digest=DIGEST.upper(),
                                          source=source, suffix=suffix)
    scan = p.scan_pointers(str(cache), "six", "1.17.0")
    assert scan.rejected == ()
    assert scan.pointers == (p.WheelPointer(str(archive), str(entry), str(pointer), "1.17.0-py3-none-any",
                                            {"sha256": DIGEST}, "six-1.17.0-py3-none-any.whl",
                                            1234 if suffix == ".http" else None),)
    assert p.wheel_pointers(str(cache), "six", "1.17.0") == list(scan.pointers)


def test_a_pointer_without_hashes_is_a_pointer_with_no_digest(cache):
    cache_entry(cache, "localpkg", "1.0", "znSDZWErzMXIGjUz", digest=None, suffix=".rev")
    [pointer] = p.wheel_pointers(str(cache), "localpkg", "1.0")
    assert pointer.digests == {} and pointer.archive.endswith("znSDZWErzMXIGjUz")


@pytest.mark.parametrize("shape", ["map", "pair", "struct", "index"])
def test_other_serialisations_of_an_archive_and_its_hashes(cache, shape):
    hashes = {"map": [{"sha256": DIGEST}], "pair": [["Sha256", DIGEST]],
              "struct": [{"algorithm": "Sha256", "digest": DIGEST}], "index": [[1, DIGEST]]}[shape]
    record = {"id": "A1", "hashes": hashes, "filename": "six-1.17.0-py3-none-any.whl", "version": 0, "size": 9}
    cache_entry(cache, "six", "1.17.0", "A1", pointer=http_pointer(record))
    [pointer] = p.wheel_pointers(str(cache), "six", "1.17.0")
    assert pointer.digests == {"sha256": DIGEST} and pointer.size == 9


def test_versions_names_and_none(cache):
    cache_entry(cache, "six", "1.16.0", "A1")
    cache_entry(cache, "six", "1.17.0", "B2")
    cache_entry(cache, "Foo_Bar", "1.0", "C3")
    assert [x.filename_stem for x in p.wheel_pointers(str(cache), "six", None)] == ["1.16.0-py3-none-any",
                                                                                   "1.17.0-py3-none-any"]
    assert p.wheel_pointers(str(cache), "six", "1.1") == []
    assert p.wheel_pointers(None, "six", None) == [] and p.wheel_pointers(str(cache / "nowhere"), "six", None) == []


def test_a_pointer_naming_another_archive_is_skipped(cache):
    cache_entry(cache, "six", "1.17.0", "A1", pointer=http_pointer(["B2", [{"Sha256": DIGEST}],
                                                                     "six-1.17.0-py3-none-any.whl", 0, 1]))
    (cache / "archive-v0/B2").mkdir()  # the one it names exists, but the index does not lead there
    scan = p.scan_pointers(str(cache), "six", "1.17.0")
    assert scan.pointers == ()
    assert reasons(scan) == {"1.17.0-py3-none-any.http": "names archive 'B2', but its index symlink leads to 'A1'"}


def test_a_pointer_naming_another_distribution_or_bucket_is_skipped(cache):
    cache_entry(cache, "six", "1.17.0", "A1", pointer=http_pointer(["A1", [], "evil-1.0-py3-none-any.whl", 0, 1]))
    cache_entry(cache, "six", "1.16.0", "B2", pointer=http_pointer(["B2", [], "six-1.16.0-py3-none-any.whl", 7, 1]))
    cache_entry(cache, "six", "1.15.0", "C3", pointer=http_pointer(["C3", [], "six-1.17.0-py3-none-any.whl", 0, 1]))
    scan = p.scan_pointers(str(cache), "six", None)
    assert scan.pointers == ()
    assert reasons(scan) == {
        "1.15.0-py3-none-any.http": "names the wheel 'six-1.17.0-py3-none-any.whl', not one of version 1.15.0",
        "1.17.0-py3-none-any.http": "names the wheel 'evil-1.0-py3-none-any.whl', not one of six",
        "1.16.0-py3-none-any.http": "names an archive of archive-v7, but its index symlink leads into archive-v0"}


def test_a_missing_archive_and_a_missing_pointer(cache):
    archive, entry, pointer = cache_entry(cache, "six", "1.17.0", "A1")
    archive2, entry2, pointer2 = cache_entry(cache, "six", "1.16.0", "B2")
    for path in sorted(archive.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    archive.rmdir()
    pointer2.unlink()
    scan = p.scan_pointers(str(cache), "six", None)
    assert scan.pointers == ()
    assert reasons(scan) == {
        "1.17.0-py3-none-any.http": "the index symlink leads to '../../../archive-v0/A1', not to an archive "
                                    "directory of this cache (missing, or elsewhere)",
        "1.16.0-py3-none-any": "no pointer file (.http or .rev) beside this index entry"}


def test_an_index_symlink_leading_out_of_the_cache_is_not_taken(cache, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    archive, entry, pointer = cache_entry(cache, "six", "1.17.0", "A1")
    entry.unlink()
    entry.symlink_to(elsewhere)
    scan = p.scan_pointers(str(cache), "six", "1.17.0")
    assert scan.pointers == () and "not to an archive directory of this cache" in reasons(scan)[pointer.name]


@pytest.mark.parametrize(("data", "reason"), [
    (encode(["A1", [{"Sha256": DIGEST}], "six-1.17.0-py3-none-any.whl", 0, 1])[:30],
     "not a pointer uv writes: truncated"),
    (b"", "not a pointer uv writes: truncated"),
    (b"\xc1junk", "not a pointer uv writes: byte 0xc1"),
    (encode("just a string"), "not a pointer uv writes: str where a struct belongs"),
    (encode(["A1"]), "not a pointer uv writes: no hashes"),
    (encode(["../../etc", [], "six-1.17.0-py3-none-any.whl", 0, 1]), "its archive id is not one uv writes"),
    (encode(["A1", [{"Sha256": "zz" * 32}], "six-1.17.0-py3-none-any.whl", 0, 1]),
     "its sha256 digest is not 64 hex digits"),
    (encode(["A1", [{"Crc32": "00"}], "six-1.17.0-py3-none-any.whl", 0, 1]), "unknown algorithm 'Crc32'"),
    (encode(["A1", [{"Sha256": DIGEST}, {"Sha256": "0" * 64}], "six-1.17.0-py3-none-any.whl", 0, 1]),
     "two different sha256 digests"),
    (encode(["A1", "hashes", "six-1.17.0-py3-none-any.whl", 0, 1]), "its hashes are not a list"),
    (encode(["A1", [], "six-1.17.0-py3-none-any.whl", 0, -5]), "its wheel size is not a count of bytes"),
    (b"\x91" * 50 + b"\xc0", "nested deeper than 8"),
])
def test_malformed_pointers_are_skipped_with_the_reason(cache, data, reason):
    cache_entry(cache, "six", "1.17.0", "A1", pointer=data)
    scan = p.scan_pointers(str(cache), "six", "1.17.0")
    assert scan.pointers == ()
    [(name, why)] = reasons(scan).items()
    assert name == "1.17.0-py3-none-any.http" and reason in why


def test_a_rev_pointer_is_read_as_timestamp_and_archive(cache):
    cache_entry(cache, "six", "1.17.0", "A1", suffix=".rev",
                pointer=http_pointer(["A1", [], "six-1.17.0-py3-none-any.whl", 0, 1]))  # a .http's layout
    scan = p.scan_pointers(str(cache), "six", "1.17.0")
    assert scan.pointers == () and len(scan.rejected) == 1


def test_a_symlink_pointer_is_not_followed(cache, tmp_path):
    archive, entry, pointer = cache_entry(cache, "six", "1.17.0", "A1")
    real = tmp_path / "real.http"
    real.write_bytes(pointer.read_bytes())
    pointer.unlink()
    pointer.symlink_to(real)
    scan = p.scan_pointers(str(cache), "six", "1.17.0")
    assert scan.pointers == () and "a symlink" in reasons(scan)[pointer.name]


def test_fifo_and_huge_pointers_are_refused_within_bounds(cache):
    """A FIFO is never opened (it would block), a 100 MB pointer never read: in a child process
    with a time and memory bound, so a regression fails instead of hanging."""
    _, _, fifo = cache_entry(cache, "six", "1.17.0", "A1")
    fifo.unlink()
    os.mkfifo(fifo)
    _, _, huge = cache_entry(cache, "six", "1.16.0", "B2")
    with open(huge, "r+b") as f:
        f.truncate(100 << 20)  # sparse: the size is what matters
    code = textwrap.dedent(f"""
        import json
        from driftscan.environment.uv.pointers import scan_pointers
        scan = scan_pointers({str(cache)!r}, "six", None)
        print(json.dumps([len(scan.pointers), {{r.pointer: r.reason for r in scan.rejected}}]))
    """)
    done = python_bounded(code, seconds=60, memory_mb=64)
    assert done.returncode == 0, done.stderr
    found, rejected = json.loads(done.stdout)
    assert found == 0 and "Traceback" not in done.stderr
    assert "not a regular file" in rejected[str(fifo)]
    assert f"{100 << 20} bytes, more than the {p.MAX_POINTER} bytes a uv pointer may have" in rejected[str(huge)]


def test_archive_record_is_the_archives_own_record(cache):
    archive, _, _ = cache_entry(cache, "six", "1.17.0", "A1", files={"six.py": "X = 1\n"})
    record = p.archive_record(str(archive), "six", "1.17.0")
    assert record is not None and record["six.py"].hash is not None
    assert record["six.py"].size == 6 and "six-1.17.0.dist-info/RECORD" in record
    assert p.archive_record(str(archive), "six", "1.16.0") is None
    assert p.archive_record(str(archive), "other", "1.17.0") is None
    assert p.archive_record_or_reason(str(archive), "six", "1.16.0")[1] == (
        "no single dist-info of six 1.16.0 in the archive (found: six-1.17.0.dist-info)")
    assert p.archive_record(str(cache / "nowhere"), "six", "1.17.0") is None


def test_archive_record_refuses_links_and_malformed_records(cache, tmp_path):
    archive, _, _ = cache_entry(cache, "six", "1.17.0", "A1")
    record = archive / "six-1.17.0.dist-info/RECORD"
    outside = tmp_path / "RECORD"
    outside.write_text(f"six.py,{record_hash(b'X')},1\n")
    record.unlink()
    record.symlink_to(outside)
    assert p.archive_record(str(archive), "six", "1.17.0") is None
    assert "not followed" in p.archive_record_or_reason(str(archive), "six", "1.17.0")[1]
    record.unlink()
    record.symlink_to("../six/__init__.py")  # inside the archive: still not followed
    assert "a symlink (to ../six/__init__.py), not followed" in p.archive_record_or_reason(
        str(archive), "six", "1.17.0")[1]
    record.unlink()
    record.write_text("six.py,md5=abc,1\n")
    assert "malformed RECORD, line 1" in p.archive_record_or_reason(str(archive), "six", "1.17.0")[1]
    record.unlink()
    os.mkfifo(record)
    assert "not a regular file" in p.archive_record_or_reason(str(archive), "six", "1.17.0")[1]


def test_a_dist_info_that_is_a_symlink_is_not_read(cache, tmp_path):
    archive, _, _ = cache_entry(cache, "six", "1.17.0", "A1")
    info = archive / "six-1.17.0.dist-info"
    moved = tmp_path / "moved.dist-info"
    info.rename(moved)
    info.symlink_to(moved)
    assert p.archive_record(str(archive), "six", "1.17.0") is None


def test_a_name_directory_too_large_is_not_looked_at(cache, monkeypatch):
    _, entry, _ = cache_entry(cache, "six", "1.17.0", "A1")
    for i in range(5):
        (entry.parent / f"junk{i}").write_text("")
    monkeypatch.setattr(p, "MAX_ENTRIES", 4)
    scan = p.scan_pointers(str(cache), "six", None)
    assert scan.pointers == ()
    assert Rejected(str(entry.parent), "more than 4 entries: not looked at") in scan.rejected
    monkeypatch.setattr(p, "MAX_ENTRIES", 100)
    assert len(p.wheel_pointers(str(cache), "six", None)) == 1
