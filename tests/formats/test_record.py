"""RECORD parsing: syntax first, then meaning; every issue collected, never an exception."""

from __future__ import annotations

import base64
import hashlib

import pytest

from driftscan.formats.record import parse_hash, parse_record, record_hash_text


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def test_crlf_and_quoted_commas():
    text = f'a.py,sha256={b64(b"x")},1\r\n"d/ro,1.s1p",sha256={b64(b"y")},1\r\nRECORD,,\r\n'
    parsed = parse_record(text)
    assert [e.path for e in parsed.entries] == ["a.py", "d/ro,1.s1p", "RECORD"]
    assert parsed.issues == ()
    assert parsed.entries[0].hash.digest == hashlib.sha256(b"x").digest()
    assert parsed.entries[2].hash is None and parsed.entries[2].size is None


def test_spaces_are_not_quoted_and_lines_are_numbered():
    parsed = parse_record(f"jaraco/text/Lorem ipsum.txt,sha256={b64(b'z')},1\n\nbad,sha256={b64(b'z')}\n")
    assert parsed.entries[0].path == "jaraco/text/Lorem ipsum.txt"
    assert [(i.line, i.path) for i in parsed.issues] == [(3, "bad")]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("a.py,md5=abc,1", "refused hash algorithm 'md5'"),
        ("a.py,whirlpool9=abc,1", "unknown or refused hash algorithm"),
        ("a.py,sha256,1", "not of the form algorithm=digest"),
        ("a.py,sha256=@@@,1", "not urlsafe base64"),
        ("a.py,sha256=YWJj,1", "digest has 3 bytes, expected 32"),
        (f"a.py,sha256={b64(b'q')},-1", "non-negative integer"),
        (f"a.py,sha256={b64(b'q')},1.5", "non-negative integer"),
        ("a.py,,,", "4 columns"),
        (",sha256=x,1", "empty path"),
    ],
)
def test_malformed_rows_are_collected(row, message):
    parsed = parse_record(f"ok.py,sha256={b64(b'o')},1\n{row}\n")
    assert len(parsed.issues) == 1 and message in parsed.issues[0].message
    assert parsed.entries[0].path == "ok.py"
    kept = [e for e in parsed.entries if e.path == "a.py"]
    assert all(e.hash is None and e.size is None for e in kept)  # owned, never compared


def test_hex_digest_only_where_allowed():
    hexdigest = hashlib.sha256(b"abc").hexdigest()
    assert parse_hash(f"sha256={hexdigest}", allow_hex=True).encoding == "hex"
    with pytest.raises(ValueError):
        parse_hash(f"sha256={hexdigest}", allow_hex=False)


def test_other_algorithms_and_roundtrip():
    h = parse_hash("SHA512=" + base64.urlsafe_b64encode(hashlib.sha512(b"a").digest()).decode().rstrip("="),
                   allow_hex=False)
    assert h.algorithm == "sha512" and h.digest == hashlib.sha512(b"a").digest()
    assert record_hash_text(hashlib.sha256(b"x").digest()) == b64(b"x")


def test_unterminated_quote_is_an_issue_not_a_crash():
    parsed = parse_record('"a.py,sha256=x,1\n')
    assert parsed.entries == () or parsed.issues


_TRICKY_ROWS = [
    f"a.py,sha256={b64(b'x')},1",
    f"b.py,sha256={b64(b'x')[:-1]}A,1",  # non-canonical trailing bits: the strict path decides
    f"c.py,sha256={b64(b'x')[:-1]}+,1",  # "+" is not urlsafe
    f"c2.py,sha256={b64(b'x')[:-2]}/A,1",
    f"d.py,sha256={b64(b'x')}=,1",  # padded
    f"e.py,SHA256={b64(b'x')},1",
    f"f.py,sha256={b64(b'x')},007",
    f"g.py,sha256={b64(b'x')},\u0663",  # a non-ASCII digit
    f"h.py,sha256={b64(b'x')}, 1",
    f"i.py, sha256={b64(b'x')},1",
    f"j.py,sha256={b64(b'x')},",
    "k.py,,1",
    "l.py,,",
    ",,",
    "m.py",
    "n.py,a,b,c",
    "   ",
    "",
    f"o é.py,sha512={base64.urlsafe_b64encode(hashlib.sha512(b'x').digest()).rstrip(b'=').decode()},1",
    f"p.py,sha256={'é' * 43},1",
    f"q.py,sha256={hashlib.sha256(b'x').hexdigest()},1",
]


@pytest.mark.parametrize("allow_hex", [False, True])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_fast_path_agrees_with_the_csv_module(allow_hex, newline):
    """The quote-free fast path must give exactly what the csv path gives, issues included."""
    from driftscan.formats import record

    text = newline.join(_TRICKY_ROWS) + newline
    fast = record.parse_record(text, allow_hex=allow_hex)
    entries, issues = [], []
    record._parse_csv(text, allow_hex, entries, issues)
    assert fast == record.ParsedRecord(tuple(entries), tuple(issues))
    assert len(fast.entries) > 10 and fast.issues  # the rows above exercise both outcomes


def test_bare_carriage_returns_go_through_the_csv_module():
    parsed = parse_record(f"a.py,sha256={b64(b'x')},1\rb.py,,\r")
    assert [(e.path, e.line) for e in parsed.entries] == [("a.py", 1), ("b.py", 2)]


@pytest.mark.parametrize("rows", [
    ['"a,b.json",sha256={h},1', "c.py,,"],  # what pip and uv write: the fast path
    ['"a""b.py",sha256={h},1'],  # an escaped quote
    ['x",y,"z', 'w",sha256={h},1'],  # a quoted field that runs over a line end
    ['"a"b,sha256={h},1'],
    ['"a,b",sha256={h},"1"'],
])
def test_quoting_agrees_with_the_csv_module(rows):
    from driftscan.formats import record

    text = "\n".join(r.format(h=b64(b"x")) for r in rows) + "\n"
    entries, issues = [], []
    record._parse_csv(text, False, entries, issues)
    assert record.parse_record(text) == record.ParsedRecord(tuple(entries), tuple(issues))
