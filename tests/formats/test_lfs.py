"""driftscan.formats.lfs: git LFS pointer files (spec v1) recognised, anything else refused."""

from __future__ import annotations

import hashlib

from driftscan.formats.lfs import LFS_POINTER_MAX, parse_lfs_pointer
from fixtures.modeldirs import lfs_pointer

WEIGHTS = b"\x00real weights\x00" * 100


def test_a_pointer_gives_the_sha256_and_size_of_the_real_content():
    assert parse_lfs_pointer(lfs_pointer(WEIGHTS)) == (hashlib.sha256(WEIGHTS).hexdigest(), len(WEIGHTS))


def test_the_spec_s_own_example_with_an_extension_line():
    pointer = (b"version https://git-lfs.github.com/spec/v1\n"
               b"ext-0-foo sha256:" + b"0" * 64 + b"\n"
               b"oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
               b"size 12345\n")
    assert parse_lfs_pointer(pointer) == ("4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393", 12345)


def test_what_is_not_a_pointer():
    digest = hashlib.sha256(WEIGHTS).hexdigest().encode()
    head = b"version https://git-lfs.github.com/spec/v1\n"
    for data in (
        WEIGHTS,  # the real content
        b"",
        b'{"a": 1}',
        head + b"oid md5:" + digest[:32] + b"\nsize 3\n",  # not sha256
        head + b"oid sha256:" + digest[:-1] + b"\nsize 3\n",  # a short digest
        head + b"oid sha256:" + digest + b"\nsize -3\n",  # not a size
        head + b"oid sha256:" + digest + b"\n",  # no size
        head + b"size 3\n",  # no oid
        b"version https://example.invalid/spec\noid sha256:" + digest + b"\nsize 3\n",  # another spec
        lfs_pointer(WEIGHTS) + b"x" * LFS_POINTER_MAX,  # too big to be a pointer
    ):
        assert parse_lfs_pointer(data) is None, data[:80]
