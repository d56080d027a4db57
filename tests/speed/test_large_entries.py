"""record.large_entries, the prehash child's look at a RECORD: exactly parse_record's large rows."""

from __future__ import annotations

import base64
import glob
import hashlib
import os
import sysconfig

import pytest

from driftscan.formats.record import large_entries, parse_record

BIG = 8 << 20


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def large_of(text: str, min_size: int, allow_hex: bool = False) -> list:
    return [e for e in parse_record(text, allow_hex=allow_hex).entries if e.size is not None and e.size >= min_size]


H = b64(b"x")
_ROWS = [
    f"small.py,sha256={H},120",
    f"a/lib.so,sha256={H},{BIG}",
    f"a/lib2.so,sha256={H},{BIG - 1}",  # as many digits, one byte short
    f"a/mid.so,sha256={H},1048576",
    f"a/huge.so,sha256={H},{1 << 40}",
    f"a/space.so,sha256={H}, {BIG}",  # the csv-like path strips spaces: still a size
    f"a/plus.so,sha256={H},+{BIG}",
    f"a/under.so,sha256={H},9_000_000",
    f"a/arabic.so,sha256={H},\u0669\u0669\u0669\u0669\u0669\u0669\u0669\u0669",  # non-ASCII digits
    f"a/bad.so,sha256=@@@,{BIG}",  # a bad hash: owned, not compared
    f"a/hex.so,sha256={hashlib.sha256(b'x').hexdigest()},{BIG}",
    f"a/four.so,sha256={H},{BIG},",
    f"a/nul\0.so,sha256={H},{BIG}",
    f"a/empty.so,,{BIG}",
    f"a/longlast,x,{'9' * 25}",
    "RECORD,,",
    "",
]


@pytest.mark.parametrize("allow_hex", [False, True])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("extra", [
    [],
    [f'"a/q,uoted.so",sha256={H},{BIG}', f'"a/q,small.py",sha256={H},1'],  # pip's quoting: the fast path
    [f'"a""b.py",sha256={H},1'],  # other quoting anywhere: the csv module for the whole text
    ['x",y,"z', f'w",sha256={H},{BIG}'],  # a quoted field over a line end
    [f"bare.so,sha256={H},{BIG}\rnext.so,sha256={H},{BIG}\rshort,,1"],  # bare CRs
    [f'"open.py,sha256={H},1'],  # a quote never closed: every row after it is part of its path
])
@pytest.mark.parametrize("min_size", [1, 1000, BIG])
def test_the_same_entries_as_parse_record(allow_hex, newline, extra, min_size):
    text = newline.join(extra + _ROWS) + newline
    expected = large_of(text, min_size, allow_hex)
    assert large_entries(text, min_size, allow_hex=allow_hex) == expected
    if min_size == BIG and not extra:
        assert {e.path for e in expected} >= {"a/lib.so", "a/huge.so", "a/space.so", "a/plus.so", "a/under.so"}


def test_the_same_entries_on_the_records_of_this_environment():
    records = glob.glob(os.path.join(sysconfig.get_paths()["purelib"], "*.dist-info", "RECORD"))
    assert len(records) > 10
    for path in records:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", "surrogateescape")
        for min_size in (1, 10_000, 1 << 20):
            assert large_entries(text, min_size) == large_of(text, min_size), path


def test_the_prehash_child_lists_large_rows_from_record_entries(tmp_path):
    from driftscan.environment.target import containment_for_site_packages
    from driftscan.environment.fast import prehash

    site = tmp_path / "site-packages"
    info = site / "pkg-1.0.dist-info"
    info.mkdir(parents=True)
    rows = [
        f"pkg/big.so,sha256={H},{BIG + 1}",
        f'"pkg/a,b.so",sha512={base64.urlsafe_b64encode(hashlib.sha512(b"x").digest()).rstrip(b"=").decode()},{BIG}',
        f"pkg/small.py,sha256={H},10",
        f"../escape.so,sha256={H},{BIG}",  # climbs out: left to the parent
        f"/abs/lib.so,sha256={H},{BIG}",
        f"pkg/hashless.so,,{BIG}",
        f"pkg/md5.so,md5=abc,{BIG}",  # refused by the parser
        "pkg-1.0.dist-info/RECORD,,",
    ]
    (info / "RECORD").write_text("\r\n".join(rows) + "\r\n")
    (site / "other-1.0.dist-info").mkdir()
    (site / "other-1.0.dist-info" / "RECORD").symlink_to(info / "RECORD")  # a symlinked RECORD is not read
    found = prehash._large_rows((str(site),), containment_for_site_packages((str(site),)))
    assert found == [(BIG + 1, str(site / "pkg" / "big.so"), "sha256"), (BIG, str(site / "pkg" / "a,b.so"), "sha512")]
