"""driftscan.pristine.base: a source's bytes are handed out only after they hash to the RECORD row."""

from __future__ import annotations

import io

import pytest

from driftscan.core.values import Distribution, Hash, RecordEntry
from driftscan.pristine.base import Lookup, PristineCopy, Rejected, SourceKind, error_text
from fixtures.wheelfiles import entry

DIST = Distribution("pkg", "1.0", "/site/pkg-1.0.dist-info", "/site")
ORIGINAL = b"X = 1\n" * 10


class CountingStream(io.BytesIO):
    """A member's stream that remembers how many bytes were read from it."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.taken = 0

    def read(self, n=-1):
        chunk = super().read(n)
        self.taken += len(chunk)
        return chunk


class MemoryCopy(PristineCopy):
    """A source whose members are bytes in memory, each with the size it declares (or None)."""

    def __init__(self, members: dict[str, bytes], declared: dict[str, int | None] | None = None,
                 broken: set[str] = frozenset()) -> None:
        super().__init__(SourceKind.WHEELS, "/house/pkg-1.0-py3-none-any.whl", DIST)
        self.members = members
        self.declared = declared or {}
        self.broken = broken
        self.opened: list[str] = []
        self.streams: list[CountingStream] = []

    def has(self, entry: RecordEntry) -> bool:
        return entry.path in self.members

    def _open(self, entry):
        self.opened.append(entry.path)
        if entry.path in self.broken:
            raise OSError(5, "Input/output error")
        if entry.path not in self.members:
            return None
        stream = CountingStream(self.members[entry.path])
        self.streams.append(stream)
        return stream, self.declared.get(entry.path, len(self.members[entry.path]))


def test_matching_bytes_are_read_copied_and_kept():
    row = entry("pkg/core.py", ORIGINAL)
    copy = MemoryCopy({"pkg/core.py": ORIGINAL})
    assert copy.check(row) is None
    assert copy.read(row) == ORIGINAL
    assert copy.opened == ["pkg/core.py"]  # verified once, then kept: small files are not read again
    out = io.BytesIO()
    assert copy.copy_to(row, out) and out.getvalue() == ORIGINAL
    assert copy.opened == ["pkg/core.py"]
    copy.close()
    assert copy.read(row) == ORIGINAL and copy.opened == ["pkg/core.py", "pkg/core.py"]  # close drops what was kept


def test_other_content_is_refused_even_with_the_same_size():
    row = entry("pkg/core.py", ORIGINAL)
    edited = ORIGINAL.replace(b"1", b"2")
    copy = MemoryCopy({"pkg/core.py": edited})
    assert copy.check(row) == "its content does not match RECORD's sha256"
    assert copy.read(row) is None
    out = io.BytesIO()
    assert not copy.copy_to(row, out)  # the caller discards what was streamed
    assert copy.failures([row, entry("pkg/other.py", b"")]) == [
        (row, "its content does not match RECORD's sha256"), (entry("pkg/other.py", b""), "not in --wheels")]


def test_a_row_without_hash_never_verifies_and_no_source_is_opened():
    row = RecordEntry("pkg/core.pyc", None, None, 3)
    copy = MemoryCopy({"pkg/core.pyc": b"anything"})
    assert copy.check(row) == "RECORD gives no hash for it, so no copy can be verified"
    assert copy.read(row) is None and copy.opened == []


def test_a_declared_size_that_differs_is_refused_before_reading():
    row = entry("pkg/core.py", ORIGINAL)
    copy = MemoryCopy({"pkg/core.py": ORIGINAL}, declared={"pkg/core.py": len(ORIGINAL) + 1})
    assert copy.check(row) == "its size differs from RECORD's"
    assert copy.streams[0].taken == 0


def test_a_stream_longer_than_its_row_is_read_one_byte_past_the_size_at_most():
    """A member whose declared size lies (None here, a forged header in a zip) is cut at size + 1."""
    row = entry("pkg/core.py", ORIGINAL)
    copy = MemoryCopy({"pkg/core.py": ORIGINAL + b"\0" * (4 << 20)}, declared={"pkg/core.py": None})
    assert copy.check(row) == f"more than the {len(ORIGINAL)} bytes RECORD says"
    assert copy.streams[0].taken == len(ORIGINAL) + 1


def test_a_short_stream_is_a_size_difference():
    row = entry("pkg/core.py", ORIGINAL)
    copy = MemoryCopy({"pkg/core.py": ORIGINAL[:-1]}, declared={"pkg/core.py": None})
    assert copy.check(row) == "its size differs from RECORD's"


def test_a_row_without_size_is_bounded_by_the_limit():
    row = entry("pkg/core.py", ORIGINAL)._replace(size=None)
    copy = MemoryCopy({"pkg/core.py": ORIGINAL})
    assert copy.read(row, limit=len(ORIGINAL)) == ORIGINAL
    assert copy.read(row, limit=len(ORIGINAL) - 1) is None
    assert copy.check(row, limit=4) == "more than 4 bytes"


def test_a_row_bigger_than_the_limit_is_not_opened():
    row = entry("pkg/core.py", ORIGINAL)
    copy = MemoryCopy({"pkg/core.py": ORIGINAL})
    assert copy.check(row, limit=10) == f"{len(ORIGINAL)} bytes, more than the 10 asked for"
    assert copy.read(row, limit=10) is None and copy.opened == []


def test_an_unknown_hash_algorithm_is_a_reason():
    row = RecordEntry("pkg/core.py", Hash("sha-unknown", b"\0" * 32), len(ORIGINAL), 0)
    assert MemoryCopy({"pkg/core.py": ORIGINAL}).check(row) == \
        "RECORD names a hash algorithm this Python lacks (sha-unknown)"


def test_a_source_that_raises_gives_a_reason_not_an_exception():
    row = entry("pkg/core.py", ORIGINAL)
    assert MemoryCopy({}, broken={"pkg/core.py"}).check(row) == "unreadable: Input/output error"


def test_big_files_are_not_kept(monkeypatch):
    from driftscan.pristine import base

    monkeypatch.setattr(base, "KEEP_MAX_FILE", 8)
    row = entry("pkg/core.py", ORIGINAL)
    copy = MemoryCopy({"pkg/core.py": ORIGINAL})
    assert copy.check(row) is None and copy.check(row) is None
    assert copy.opened == ["pkg/core.py", "pkg/core.py"]


def test_lookup_original_gives_the_copy_only_for_a_row_that_verifies():
    good, edited, lacking = (entry("pkg/a.py", b"a"), entry("pkg/b.py", b"b"), entry("pkg/c.py", b"c"))
    copy = MemoryCopy({"pkg/a.py": b"a", "pkg/b.py": b"B", "pkg/c.py": b"c"})
    lookup = Lookup(DIST, copy, (), None, lacking=("pkg/c.py",), verified=frozenset({"pkg/a.py"}))
    assert lookup.original(good) is copy and copy.opened == []  # verified in the search: not read again
    assert lookup.original(edited) is None  # checked now: the copy's bytes differ
    assert lookup.original(lacking) is None  # the search found the copy lacks it
    assert lookup.original(RecordEntry("pkg/d.pyc", None, None, 0)) is None
    assert Lookup(DIST, None, (), "none found").original(good) is None


def test_labels_and_error_text():
    assert {kind: kind.label for kind in SourceKind} == {
        SourceKind.DIRECT_URL: "direct_url.json's wheel", SourceKind.WHEELS: "--wheels",
        SourceKind.UV_CACHE: "uv's cache", SourceKind.PIP_CACHE: "pip's cache", SourceKind.FETCH: "--fetch",
        SourceKind.KEPT: "driftscan's kept originals", SourceKind.BACKUP: "backups beside the files"}
    assert error_text(OSError(2, "No such file or directory")) == "No such file or directory"
    assert error_text(ValueError("bad\n  zip")) == "ValueError: bad zip"
    assert error_text(KeyError()) == "KeyError"
    assert Rejected(SourceKind.FETCH, "x==1", "why") == Rejected(SourceKind.FETCH, "x==1", "why")


def test_repr_names_source_path_and_distribution():
    assert repr(MemoryCopy({})) == "<MemoryCopy wheels '/house/pkg-1.0-py3-none-any.whl' for " + DIST.key + ">"


@pytest.mark.parametrize("method", ["has", "_open"])
def test_the_base_class_is_abstract(method):
    with pytest.raises(NotImplementedError):
        getattr(PristineCopy(SourceKind.WHEELS, "/x", DIST), method)(entry("a", b""))
