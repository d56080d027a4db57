"""The prefix-free digest: what is taken out of a file, and what never is."""

from __future__ import annotations

import pytest

from driftscan.formats.prefixfree import (MAX_FILE, prefixes_of, sha256_prefix_free, usable_prefix,
                                          xxh3_prefix_free)

A, B = "/srv/a/venv", "/srv/node-b/venv"


def free(data: bytes, prefix: str) -> str | None:
    return xxh3_prefix_free(data, prefixes_of(prefix))


@pytest.mark.parametrize("prefix", ["", "/", "//", "/a", "/ab", "srv/a/venv", "/srv/../etc", "/srv/a/", "/srv//a",
                                    "/srv/a\nb", None, 7])
def test_a_prefix_that_would_take_out_too_much_is_not_used(prefix):
    assert not usable_prefix(prefix)
    if isinstance(prefix, str):
        assert prefixes_of(prefix) == ()
        assert free(b"#!" + prefix.encode() + b"/bin/python\n", prefix) is None


def test_the_same_file_at_two_paths_has_one_digest():
    a = f"#!{A}/bin/python\nVIRTUAL_ENV='{A}'\n".encode()
    b = f"#!{B}/bin/python\nVIRTUAL_ENV='{B}'\n".encode()
    assert usable_prefix(A) and usable_prefix(B)
    assert free(a, A) == free(b, B) is not None
    assert sha256_prefix_free(a, prefixes_of(A)) == sha256_prefix_free(b, prefixes_of(B))
    assert sha256_prefix_free(a, prefixes_of(A)).startswith("sha256=")
    assert free(b"no path here\n", A) is None


def test_anything_but_the_prefix_still_differs():
    a = f"#!{A}/bin/python\nimport x\n".encode()
    assert free(a, A) != free(f"#!{B}/bin/python\nimport y\n".encode(), B)
    # The placeholder's name written literally is not the prefix.
    assert free(f"#!{A}/bin/python\n<PREFIX>\n".encode(), A) != free(f"#!{B}/bin/python\n{B}\n".encode(), B)
    # Another venv's path in a file is content, not its own path.
    assert free(f"#!{A}/bin/python\n# {B}\n".encode(), A) != free(f"#!{B}/bin/python\n# {B}\n".encode(), B)


def test_only_the_whole_path_is_taken_out():
    assert free(f"{A}2/bin/python\n".encode(), A) is None
    assert free(f"/x{A}/bin/python\n".encode(), A) is None
    assert free(f"file://{A}/lib\n".encode(), A) is not None
    assert free(f"command = python -m venv {A}".encode(), A) is not None


def test_pips_long_path_launcher_is_the_shebang_it_stands_for():
    body = b"import sys\nfrom pkg import main\n"
    short = f"#!{A}/bin/python\n".encode() + body
    launcher = f"#!/bin/sh\n'''exec' {B}/bin/python \"$0\" \"$@\"\n' '''\n".encode() + body
    assert free(short, A) == free(launcher, B)
    quoted = f"#!/bin/sh\n'''exec' '{B}/bin/python' \"$0\" \"$@\"\n' '''\n".encode() + body
    assert free(quoted, B) == free(short, A)
    # A launcher of an interpreter elsewhere is left as it is.
    other = b"#!/bin/sh\n'''exec' /usr/bin/python3 \"$0\" \"$@\"\n' '''\n" + f"# {B}\n".encode() + body
    assert free(other, B) != free(b"#!/usr/bin/python3\n" + f"# {A}\n".encode() + body, A)


def test_a_prefix_and_its_resolved_name_are_both_taken_out():
    prefixes = prefixes_of("/srv/link/venv", "/data/real/venv")
    assert xxh3_prefix_free(b"a=/srv/link/venv b=/data/real/venv", prefixes) == \
        xxh3_prefix_free(b"a=/data/real/venv b=/srv/link/venv", prefixes)
    assert len(prefixes) == 2


def test_always_gives_a_digest_without_the_prefix():
    assert xxh3_prefix_free(b"plain", prefixes_of(A)) is None
    assert xxh3_prefix_free(b"plain", prefixes_of(A), always=True) is not None
    assert MAX_FILE >= 1 << 20
