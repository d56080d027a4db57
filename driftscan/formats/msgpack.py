"""MessagePack, decoded as data and within stated bounds (uv's cache pointers are msgpack).

Only decoding, and only what a cache file needs: nil, booleans, integers, floats, strings (UTF-8),
binary, arrays and maps. Every length is checked against the bytes that remain before anything is
built, so a header claiming four billion elements costs nothing; nesting deeper than ``max_depth``
or more than ``max_items`` values in all is refused. Extension types are refused (no uv pointer
uses one), as are map keys that are arrays or maps and keys that repeat. Anything malformed or
over a bound raises ``MsgpackError``, a ValueError, never another exception.
"""

from __future__ import annotations

import struct

MAX_DEPTH = 32
MAX_ITEMS = 10_000

_FLOAT32 = struct.Struct(">f")
_FLOAT64 = struct.Struct(">d")
# First byte → (bytes of the length or value that follow, signed) for the fixed-width integers.
_INTS = {0xCC: (1, False), 0xCD: (2, False), 0xCE: (4, False), 0xCF: (8, False),
         0xD0: (1, True), 0xD1: (2, True), 0xD2: (4, True), 0xD3: (8, True)}
_STR = {0xD9: 1, 0xDA: 2, 0xDB: 4}
_BIN = {0xC4: 1, 0xC5: 2, 0xC6: 4}
_ARRAY = {0xDC: 2, 0xDD: 4}
_MAP = {0xDE: 2, 0xDF: 4}
_EXT = {0xC7, 0xC8, 0xC9, 0xD4, 0xD5, 0xD6, 0xD7, 0xD8}


class MsgpackError(ValueError):
    """Bytes that are not one well-formed msgpack value within the bounds asked for."""


class _Reader:
    def __init__(self, data: bytes, max_depth: int, max_items: int) -> None:
        self.data = memoryview(data)
        self.pos = 0
        self.max_depth = max_depth
        self.items_left = max_items

    def take(self, n: int) -> memoryview:
        if n > len(self.data) - self.pos:
            raise MsgpackError(f"truncated: {n} bytes needed at offset {self.pos}, "
                               f"{len(self.data) - self.pos} left")
        piece = self.data[self.pos:self.pos + n]
        self.pos += n
        return piece

    def uint(self, width: int) -> int:
        return int.from_bytes(self.take(width), "big")

    def count(self, n: int, min_bytes_each: int, what: str) -> None:
        """Refuse a container of ``n`` elements before building it: each needs at least
        ``min_bytes_each`` of the bytes left, and all of them count against ``max_items``."""
        if n * min_bytes_each > len(self.data) - self.pos:
            raise MsgpackError(f"{what} of {n} elements at offset {self.pos} is longer than the "
                               f"{len(self.data) - self.pos} bytes left")
        self.items_left -= n
        if self.items_left < 0:
            raise MsgpackError("more values than the bound allows")

    def value(self, depth: int) -> object:
        if depth > self.max_depth:
            raise MsgpackError(f"nested deeper than {self.max_depth}")
        at = self.pos
        head = self.take(1)[0]
        if head <= 0x7F:
            return head
        if head >= 0xE0:
            return head - 0x100
        if 0xA0 <= head <= 0xBF:
            return self.text(head & 0x1F, at)
        if 0x90 <= head <= 0x9F:
            return self.array(head & 0x0F, depth)
        if 0x80 <= head <= 0x8F:
            return self.mapping(head & 0x0F, depth, at)
        if head == 0xC0:
            return None
        if head in (0xC2, 0xC3):
            return head == 0xC3
        if head in _INTS:
            width, signed = _INTS[head]
            return int.from_bytes(self.take(width), "big", signed=signed)
        if head == 0xCA:
            return _FLOAT32.unpack(self.take(4))[0]
        if head == 0xCB:
            return _FLOAT64.unpack(self.take(8))[0]
        if head in _STR:
            return self.text(self.uint(_STR[head]), at)
        if head in _BIN:
            return bytes(self.take(self.uint(_BIN[head])))
        if head in _ARRAY:
            return self.array(self.uint(_ARRAY[head]), depth)
        if head in _MAP:
            return self.mapping(self.uint(_MAP[head]), depth, at)
        if head in _EXT:
            raise MsgpackError(f"extension type at offset {at}: not supported")
        raise MsgpackError(f"byte 0x{head:02x} at offset {at} starts no msgpack value")

    def text(self, n: int, at: int) -> str:
        try:
            return str(self.take(n), "utf-8")
        except UnicodeDecodeError:
            raise MsgpackError(f"string at offset {at} is not UTF-8") from None

    def array(self, n: int, depth: int) -> list[object]:
        self.count(n, 1, "array")
        return [self.value(depth + 1) for _ in range(n)]

    def mapping(self, n: int, depth: int, at: int) -> dict[object, object]:
        self.count(n, 2, "map")
        out: dict[object, object] = {}
        for _ in range(n):
            key = self.value(depth + 1)
            if isinstance(key, (list, dict)):
                raise MsgpackError(f"map at offset {at} has a key that is an array or a map")
            if key in out:
                raise MsgpackError(f"map at offset {at} repeats the key {key!r}")
            out[key] = self.value(depth + 1)
        return out


def decode(data: bytes, *, max_depth: int = MAX_DEPTH, max_items: int = MAX_ITEMS) -> object:
    """The one msgpack value ``data`` holds (all of it: trailing bytes are an error), as Python
    values: None, bool, int, float, str, bytes, list, dict."""
    value, end = decode_prefix(data, max_depth=max_depth, max_items=max_items)
    if end != len(data):
        raise MsgpackError(f"{len(data) - end} bytes follow the value")
    return value


def decode_prefix(data: bytes, *, max_depth: int = MAX_DEPTH, max_items: int = MAX_ITEMS) -> tuple[object, int]:
    """(the msgpack value ``data`` starts with, the offset just after it)."""
    reader = _Reader(bytes(data), max_depth, max_items)
    try:
        return reader.value(0), reader.pos
    except RecursionError:  # a max_depth above the interpreter's own limit
        raise MsgpackError("nested too deeply") from None
