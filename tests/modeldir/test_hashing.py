"""modeldir/hashing.py: one pass, several algorithms, regular files only, the meter's counters."""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path

import pytest
import xxhash

from driftscan.modeldir.hashing import (
    DIRECT_MIN, PROGRESS_STEP, Meter, hash_file, new_hasher, open_readonly,
)
from fixtures.modeldirs import git_blob_sha1, seed_files, sha256_hex


def test_git_sha1_is_gits_blob_hash_and_sha256_the_lfs_etag(tmp_path):
    data = seed_files()["config.json"]
    path = tmp_path / "config.json"
    path.write_bytes(data)
    digests, content, st = hash_file(str(path), ("git-sha1", "sha256", "xxh3_128"), Meter(), keep=True)
    assert digests == {"git-sha1": git_blob_sha1(data), "sha256": sha256_hex(data),
                       "xxh3_128": xxhash.xxh3_128(data).hexdigest()}
    assert content == data and st.st_size == len(data)


def test_an_empty_file_hashes_as_git_and_hashlib_do(tmp_path):
    path = tmp_path / "empty"
    path.write_bytes(b"")
    digests, content, _ = hash_file(str(path), ("git-sha1", "sha256"), Meter(), keep=True)
    assert digests["git-sha1"] == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"  # git's empty blob
    assert digests["sha256"] == hashlib.sha256(b"").hexdigest() and content == b""


def test_content_is_kept_only_when_asked(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 1000)
    meter = Meter()
    _, content, _ = hash_file(str(path), ("sha256",), meter, keep=False)
    assert content is None and meter.hashed == meter.read == 1000


def test_unknown_algorithm_is_refused():
    with pytest.raises(ValueError, match="unknown algorithm 'md5'"):
        new_hasher("md5", 0)


def test_a_fifo_is_refused_before_it_is_opened(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file \\(fifo\\)") as info:
        hash_file(str(fifo), ("sha256",), Meter(), keep=True)  # would block forever if opened
    assert info.value.errno == errno.EINVAL


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(OSError, match="not a regular file"):
        open_readonly(str(tmp_path))


def test_a_symlink_is_followed_only_when_asked(tmp_path):
    (tmp_path / "real").write_bytes(b"data")
    (tmp_path / "link").symlink_to("real")
    digests, _, _ = hash_file(str(tmp_path / "link"), ("sha256",), Meter(), keep=False, follow=True)
    assert digests["sha256"] == sha256_hex(b"data")
    with pytest.raises(OSError, match="not a regular file \\(symlink\\)"):
        hash_file(str(tmp_path / "link"), ("sha256",), Meter(), keep=False, follow=False)


def test_a_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        hash_file(str(tmp_path / "absent"), ("sha256",), Meter(), keep=True)


def test_meter_counts_reads_apart_from_hashes_and_throttles_progress():
    calls = []
    meter = Meter(lambda done, total: calls.append((done, total)))
    meter.total = 2 * PROGRESS_STEP  # what check.run plans before hashing
    meter.note_read(100)  # a safetensors header: read, not hashed
    assert (meter.read, meter.hashed) == (100, 0)
    meter.note_hashed(PROGRESS_STEP // 2)
    assert calls == []  # under one step: no call yet
    meter.note_hashed(0, final=True)  # the end of a file is always reported
    assert calls == [(PROGRESS_STEP // 2, 2 * PROGRESS_STEP)]
    meter.note_hashed(PROGRESS_STEP)  # a whole step since the last call: reported
    assert calls[-1] == (PROGRESS_STEP + PROGRESS_STEP // 2, 2 * PROGRESS_STEP)
    assert (meter.read, meter.hashed) == (100 + 3 * PROGRESS_STEP // 2, 3 * PROGRESS_STEP // 2)


@pytest.mark.parametrize("where", ["tmp", "shm"])
def test_large_file_hashes_agree_with_hashlib(tmp_path, where):
    """Large files are read with O_DIRECT where the filesystem allows it, buffered otherwise."""
    base = tmp_path if where == "tmp" else Path("/dev/shm")
    if not base.is_dir():
        pytest.skip("no /dev/shm")
    path = base / f"driftscan-test-{os.getpid()}-{where}.bin"
    try:
        with open(path, "wb") as f:
            f.truncate(DIRECT_MIN + 12345)  # not a multiple of any block size
            f.seek(DIRECT_MIN)
            f.write(b"tail data that is not a hole")
        data = path.read_bytes()
        meter = Meter()
        digests, content, st = hash_file(str(path), ("sha256", "git-sha1", "xxh3_128"), meter, keep=False)
        assert digests == {"sha256": hashlib.sha256(data).hexdigest(),
                           "git-sha1": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest(),
                           "xxh3_128": xxhash.xxh3_128(data).hexdigest()}
        assert content is None and meter.hashed == len(data) == st.st_size
        _, kept, _ = hash_file(str(path), ("sha256",), Meter(), keep=True)
        assert kept == data
    finally:
        path.unlink(missing_ok=True)


@pytest.mark.parametrize("refuse", ["open", "read"])
def test_direct_io_refused_falls_back_to_buffered_reads(tmp_path, monkeypatch, refuse):
    """Some FUSE and network filesystems refuse O_DIRECT at open, others only at the first read."""
    import errno

    from driftscan.modeldir import hashing as modeldir_hash

    path = tmp_path / "shard.bin"
    with open(path, "wb") as f:
        f.truncate(DIRECT_MIN)
        f.write(b"head")
    real_open, attempts = os.open, []

    def fake_open(p, flags, *args):
        if flags & modeldir_hash._DIRECT:
            attempts.append(p)
            if refuse == "open":
                raise OSError(errno.EINVAL, "Invalid argument")
        return real_open(p, flags, *args)

    def fake_preadv(*_args):
        raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(modeldir_hash.os, "open", fake_open)
    monkeypatch.setattr(modeldir_hash.os, "preadv", fake_preadv)
    meter = Meter()
    digests, _, _ = hash_file(str(path), ("sha256",), meter, keep=False)
    assert attempts == [str(path)]
    assert digests["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert meter.hashed == DIRECT_MIN
