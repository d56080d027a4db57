"""``--deep`` hashing (modeldir/hashing.py): O_DIRECT reads overlapped with hashing give the
same digests as a plain read at every size around the buffer boundaries (with one reader thread
and with several), and a file that changes or vanishes while it is read gets an error, never a
hash."""

from __future__ import annotations

import hashlib
import os

import pytest
import xxhash

from driftscan.modeldir import hashing
from driftscan.modeldir.hashing import ChangedWhileRead, Meter, hash_file

SMALL_CHUNK = 64 << 10  # page- and block-aligned, so O_DIRECT accepts the buffers
SMALL_MIN = 4 * SMALL_CHUNK


@pytest.fixture
def small_buffers(monkeypatch):
    """The direct path with 64 KiB buffers from 256 KiB on: every boundary case in a few MB."""
    monkeypatch.setattr(hashing, "DIRECT_CHUNK", SMALL_CHUNK)
    monkeypatch.setattr(hashing, "DIRECT_MIN", SMALL_MIN)


def _expected(data: bytes) -> dict[str, str]:
    return {"sha256": hashlib.sha256(data).hexdigest(),
            "git-sha1": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest(),
            "xxh3_128": xxhash.xxh3_128(data).hexdigest()}


def _count_direct_reads(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = os.preadv

    def counting(fd, buffers, offset, *rest):
        calls.append(offset)
        return real(fd, buffers, offset, *rest)

    monkeypatch.setattr(hashing.os, "preadv", counting)
    return calls


SIZES = [SMALL_MIN, SMALL_MIN + 1, SMALL_MIN - 1 + SMALL_CHUNK, SMALL_MIN + SMALL_CHUNK,
         SMALL_MIN + SMALL_CHUNK + 1, 5 * SMALL_CHUNK - 512, 5 * SMALL_CHUNK + 512, 7 * SMALL_CHUNK + 4095,
         8 * SMALL_CHUNK]


@pytest.mark.parametrize("readers", [1, 2, 3])
@pytest.mark.parametrize("size", SIZES)
def test_overlapped_direct_reads_hash_like_a_plain_read(tmp_path, small_buffers, monkeypatch, size, readers):
    monkeypatch.setattr(hashing, "DIRECT_READERS", readers)
    path = tmp_path / "shard.bin"
    data = os.urandom(size)
    path.write_bytes(data)
    calls = _count_direct_reads(monkeypatch)
    meter = Meter()
    digests, content, st = hash_file(str(path), ("sha256", "git-sha1", "xxh3_128"), meter, keep=False)
    assert digests == _expected(data)
    assert content is None and st.st_size == size and meter.hashed == size
    if calls:  # the filesystem took O_DIRECT: every chunk read once (the readers take turns)
        assert sorted(calls) == [k * SMALL_CHUNK for k in range(len(calls))]
        assert size // SMALL_CHUNK + 1 <= len(calls) <= size // SMALL_CHUNK + hashing.DIRECT_READERS
    _, kept, _ = hash_file(str(path), ("sha256",), Meter(), keep=True)  # the buffered path
    assert kept == data


def test_real_buffer_sizes_across_a_chunk_boundary(tmp_path):
    size = hashing.DIRECT_MIN + hashing.DIRECT_CHUNK + 1
    path = tmp_path / "big.bin"
    with open(path, "wb") as f:
        f.truncate(size - 4096)
        f.write(os.urandom(4096))
    data = path.read_bytes()
    digests, _, _ = hash_file(str(path), ("sha256",), Meter(), keep=False)
    assert digests["sha256"] == hashlib.sha256(data).hexdigest()


def _direct_taken(path) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECT", 0))
    except OSError:
        return False
    os.close(fd)
    return bool(getattr(os, "O_DIRECT", 0))


def _after_first_read(monkeypatch, action):
    """Run ``action`` once, right after the first O_DIRECT read (in the reader thread)."""
    real, done = os.preadv, []

    def preadv(fd, buffers, offset, *rest):
        n = real(fd, buffers, offset, *rest)
        if not done:
            done.append(True)
            action()
        return n

    monkeypatch.setattr(hashing.os, "preadv", preadv)
    return done


def _after_first_piece(monkeypatch, action):
    """The same for the buffered path (``read_pieces``)."""
    real = hashing.read_pieces

    def pieces(fd, size, chunk):
        for k, piece in enumerate(real(fd, size, chunk)):
            yield piece
            if k == 0:
                action()

    monkeypatch.setattr(hashing, "read_pieces", pieces)


def _shrink(path):
    def action():
        with open(path, "r+b") as f:
            f.truncate(3 * SMALL_CHUNK + 100)
    return action


def _grow(path):
    def action():
        with open(path, "ab") as f:
            f.write(b"x" * 5000)
    return action


@pytest.mark.parametrize("change", [_shrink, _grow])
@pytest.mark.parametrize("keep", [False, True])
def test_a_file_changed_while_read_has_no_hash(tmp_path, small_buffers, monkeypatch, change, keep):
    path = tmp_path / "shard.bin"
    path.write_bytes(os.urandom(6 * SMALL_CHUNK + 123))
    if keep or not _direct_taken(path):
        monkeypatch.setattr(hashing, "CHUNK", SMALL_CHUNK)  # read_pieces in several pieces
        _after_first_piece(monkeypatch, change(path))
    else:
        _after_first_read(monkeypatch, change(path))
    with pytest.raises(ChangedWhileRead):
        hash_file(str(path), ("sha256",), Meter(), keep=keep)


@pytest.mark.parametrize("keep", [False, True])
def test_a_file_that_vanishes_while_read_is_not_found(tmp_path, small_buffers, monkeypatch, keep):
    path = tmp_path / "shard.bin"
    path.write_bytes(os.urandom(6 * SMALL_CHUNK + 123))
    if keep or not _direct_taken(path):
        monkeypatch.setattr(hashing, "CHUNK", SMALL_CHUNK)
        _after_first_piece(monkeypatch, path.unlink)
    else:
        _after_first_read(monkeypatch, path.unlink)
    with pytest.raises(FileNotFoundError):
        hash_file(str(path), ("sha256",), Meter(), keep=keep)


def test_a_file_replaced_while_read_has_no_hash(tmp_path, small_buffers, monkeypatch):
    path = tmp_path / "shard.bin"
    data = os.urandom(6 * SMALL_CHUNK + 123)
    path.write_bytes(data)
    other = tmp_path / "other.bin"
    other.write_bytes(data)  # the same bytes: only the identity differs
    if not _direct_taken(path):
        monkeypatch.setattr(hashing, "CHUNK", SMALL_CHUNK)
        _after_first_piece(monkeypatch, lambda: os.replace(other, path))
    else:
        _after_first_read(monkeypatch, lambda: os.replace(other, path))
    with pytest.raises(ChangedWhileRead):
        hash_file(str(path), ("sha256",), Meter(), keep=False)


def test_a_read_error_midway_is_raised_and_the_reader_stops(tmp_path, small_buffers, monkeypatch):
    import errno
    import threading

    path = tmp_path / "shard.bin"
    path.write_bytes(os.urandom(6 * SMALL_CHUNK))
    if not _direct_taken(path):
        pytest.skip("no O_DIRECT on this filesystem")
    real, calls = os.preadv, []

    def failing(fd, buffers, offset, *rest):
        calls.append(offset)
        if offset >= 2 * SMALL_CHUNK:
            raise OSError(errno.EIO, "Input/output error")
        return real(fd, buffers, offset, *rest)

    monkeypatch.setattr(hashing.os, "preadv", failing)
    with pytest.raises(OSError) as raised:
        hash_file(str(path), ("sha256",), Meter(), keep=False)
    assert raised.value.errno == errno.EIO
    assert not [t for t in threading.enumerate() if t.name == "driftscan-direct-read"]


@pytest.mark.parametrize("what", ["vanish", "shrink"])
def test_engine_reports_a_file_changed_mid_read_without_a_hash(tmp_path, small_buffers, monkeypatch, what):
    """Through the tree engine, with --deep: a shard gone mid-read is MISSING ("vanished during the
    audit"), one truncated mid-read an ERROR; neither is MODIFIED with the hash of a partial read."""
    from driftscan.modeldir import check as engine

    path = tmp_path / "shard.bin"
    data = os.urandom(6 * SMALL_CHUNK + 123)
    path.write_bytes(data)
    action = path.unlink if what == "vanish" else _shrink(path)
    if not _direct_taken(path):
        monkeypatch.setattr(hashing, "CHUNK", SMALL_CHUNK)
        _after_first_piece(monkeypatch, action)
    else:
        _after_first_read(monkeypatch, action)
    exp = engine.Expect(relpath="shard.bin", path=str(path), algorithm="sha256",
                        digest=hashlib.sha256(data).hexdigest(), size=len(data), source="the test")
    ctx = engine.Context(root=str(tmp_path), deep=True, limit=1024, jobs=1, meter=Meter())
    [outcome] = engine.run([exp], ctx)
    if what == "vanish":
        assert outcome.status == engine.MISSING and "vanished" in outcome.evidence
    else:
        assert outcome.status == engine.ERROR and "changed while being read" in outcome.evidence
