"""RECORD parsing: syntax first, then meaning; every issue collected, never an exception."""

from __future__ import annotations

import base64
import hashlib

import pytest

from driftscan.record import parse_hash, parse_record, record_hash_text


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
