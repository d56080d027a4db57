"""formats/msgpack.py: a bounded msgpack decoder; everything malformed or too large is refused."""

from __future__ import annotations

import math
import struct

import pytest

from driftscan.formats.msgpack import MsgpackError, decode, decode_prefix


@pytest.mark.parametrize(("data", "expected"), [
    (b"\xc0", None), (b"\xc2", False), (b"\xc3", True),
    (b"\x00", 0), (b"\x7f", 127), (b"\xff", -1), (b"\xe0", -32),
    (b"\xcc\xff", 255), (b"\xcd\x01\x00", 256), (b"\xce\x00\x01\x00\x00", 65536),
    (b"\xcf" + (2**64 - 1).to_bytes(8, "big"), 2**64 - 1),
    (b"\xd0\x80", -128), (b"\xd1\x80\x00", -32768), (b"\xd2\xff\xff\xff\xfe", -2),
    (b"\xd3" + (-(2**63)).to_bytes(8, "big", signed=True), -(2**63)),
    (b"\xca" + struct.pack(">f", 1.5), 1.5), (b"\xcb" + struct.pack(">d", -0.25), -0.25),
    (b"\xa0", ""), (b"\xa3six", "six"), (b"\xd9\x03abc", "abc"), (b"\xda\x00\x02\xc3\xa9", "é"),
    (b"\xdb\x00\x00\x00\x01z", "z"),
    (b"\xc4\x02\x00\xff", b"\x00\xff"), (b"\xc5\x00\x01x", b"x"), (b"\xc6\x00\x00\x00\x00", b""),
    (b"\x90", []), (b"\x93\x01\xa1a\xc0", [1, "a", None]), (b"\xdc\x00\x02\xc2\xc3", [False, True]),
    (b"\xdd\x00\x00\x00\x01\x05", [5]),
    (b"\x80", {}), (b"\x82\xa2id\xa3abc\x01\x92\x02\x03", {"id": "abc", 1: [2, 3]}),
    (b"\xde\x00\x01\xa1k\xc0", {"k": None}), (b"\xdf\x00\x00\x00\x01\x00\x00", {0: 0}),
])
def test_hand_encoded_values_decode(data, expected):
    assert decode(data) == expected


def test_a_uv_archive_pointer_as_uv_0_13_writes_it():
    digest = "4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274"
    data = (b"\x95\xb0WcNbN0c1JST41H4Y\x91\x81\xa6Sha256\xd9\x40" + digest.encode()
            + b"\xbfsix-1.17.0-py2.py3-none-any.whl\x00\xcd\x2b\x2a")
    assert decode(data) == ["WcNbN0c1JST41H4Y", [{"Sha256": digest}], "six-1.17.0-py2.py3-none-any.whl", 0, 11050]
    value, end = decode_prefix(data + b"\x00\x01policy bytes that are not msgpack")
    assert end == len(data) and value[4] == 11050


def test_nan_float():
    assert math.isnan(decode(b"\xcb" + struct.pack(">d", float("nan"))))


@pytest.mark.parametrize(("data", "message"), [
    (b"", "truncated"), (b"\xa3ab", "truncated"), (b"\xcd\x01", "truncated"), (b"\x92\x01", "longer than"), (b"\x92\x01\xa1", "truncated"),
    (b"\xdb\xff\xff\xff\xff", "truncated"),  # a 4 GiB string in 5 bytes
    (b"\xdd\xff\xff\xff\xff\x00", "longer than"),  # a 4-billion-element array
    (b"\xdf\xff\xff\xff\xff\x00\x00", "longer than"),
    (b"\xc6\x7f\xff\xff\xff", "truncated"),
    (b"\xc1", "starts no msgpack value"),
    (b"\xd4\x01\x00", "extension"), (b"\xc7\x01\x05\x00", "extension"),
    (b"\xa2\xff\xfe", "not UTF-8"),
    (b"\x81\x91\x01\x02", "array or a map"),
    (b"\x82\xa1a\x01\xa1a\x02", "repeats the key"),
    (b"\x01\x02", "follow the value"),
])
def test_malformed_input_is_refused(data, message):
    with pytest.raises(MsgpackError, match=message):
        decode(data)


def test_error_is_a_value_error():
    with pytest.raises(ValueError):
        decode(b"\xc1")


def test_deep_nesting_is_refused_quickly():
    deep = b"\x91" * 100_000 + b"\xc0"  # would overflow a naive recursive decoder
    with pytest.raises(MsgpackError, match="nested deeper than 32"):
        decode(deep)
    assert decode(b"\x91" * 32 + b"\xc0") is not None
    with pytest.raises(MsgpackError, match="nested deeper than 3"):
        decode(b"\x91\x91\x91\x91\xc0", max_depth=3)


def test_the_item_bound_counts_every_value():
    flat = b"\xdc" + (20_000).to_bytes(2, "big") + b"\x00" * 20_000
    with pytest.raises(MsgpackError, match="more values than the bound"):
        decode(flat)
    assert decode(flat, max_items=20_000) == [0] * 20_000
    nested = b"\x92" + (b"\x92" + b"\x00" * 2) * 2  # 2 + 4 values
    assert decode(nested, max_items=6) == [[0, 0], [0, 0]]
    with pytest.raises(MsgpackError):
        decode(nested, max_items=5)


def test_a_huge_input_claiming_more_than_it_has_costs_no_allocation():
    # 100k maps each claiming 65535 pairs: refused at the first, not built.
    with pytest.raises(MsgpackError):
        decode(b"\xde\xff\xff" * 100_000)


def test_bytearray_and_memoryview_inputs():
    assert decode(bytearray(b"\x91\x01")) == [1]
    assert decode(memoryview(b"\xa1x")) == "x"
