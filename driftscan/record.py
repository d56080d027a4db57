"""RECORD files: parse rows (syntax), then build entries (meaning), collecting every issue.

A malformed row never aborts the parse: the path it names is still returned as owned (so the
file is not later mistaken for an added one), with ``hash``/``size`` left out and an issue
describing what was wrong. ``importlib.metadata`` is deliberately not used: it drops missing
files on Python 3.12+ and does no validation (see FACTS.md §5).
"""

from __future__ import annotations

import base64
import binascii
import csv
import hashlib
import io
from dataclasses import dataclass

from .model import Hash, RecordEntry

# Algorithms a RECORD may name. md5 and sha1 are refused by the wheel spec.
ACCEPTED_ALGORITHMS = frozenset(hashlib.algorithms_guaranteed) - {"md5", "sha1"}
# Digest sizes, looked up once: RECORDs have tens of thousands of rows.
_DIGEST_SIZE = {name: hashlib.new(name).digest_size for name in ACCEPTED_ALGORITHMS if not name.startswith("shake")}


@dataclass(frozen=True)
class RecordIssue:
    line: int
    message: str
    path: str | None = None


@dataclass(frozen=True)
class ParsedRecord:
    entries: tuple[RecordEntry, ...]
    issues: tuple[RecordIssue, ...]


def parse_hash(text: str, *, allow_hex: bool) -> Hash:
    """Parse ``algo=digest``. Raises ValueError with a user-facing message."""
    algorithm, sep, value = text.partition("=")
    if not sep or not value:
        raise ValueError(f"hash {text!r} is not of the form algorithm=digest")
    algorithm = algorithm.strip().lower()
    size = _DIGEST_SIZE.get(algorithm)
    if size is None:
        raise ValueError(f"unknown or refused hash algorithm {algorithm!r}")
    if allow_hex and len(value) == 2 * size:
        try:
            return Hash(algorithm, bytes.fromhex(value), encoding="hex")
        except ValueError:
            pass
    try:
        digest = base64.b64decode(value + "=" * (-len(value) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"hash value {value!r} is not urlsafe base64") from None
    if len(digest) != size:
        raise ValueError(f"{algorithm} digest has {len(digest)} bytes, expected {size}")
    return Hash(algorithm, digest)


def parse_record(text: str, *, allow_hex: bool = False) -> ParsedRecord:
    """Parse the text of a RECORD (CRLF or LF, csv-quoted paths)."""
    entries: list[RecordEntry] = []
    issues: list[RecordIssue] = []
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        for row in reader:
            line = reader.line_num
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            entry, problems = _build_entry(row, line, allow_hex)
            if problems:
                issues.extend(RecordIssue(line, p, row[0] or None) for p in problems)
            if entry is not None:
                entries.append(entry)
    except csv.Error as exc:
        issues.append(RecordIssue(reader.line_num, f"unreadable csv: {exc}"))
    return ParsedRecord(tuple(entries), tuple(issues))


def _build_entry(row: list[str], line: int, allow_hex: bool) -> tuple[RecordEntry | None, list[str]]:
    problems: list[str] = []
    path = row[0]
    if not path:
        return None, ["row has an empty path"]
    if len(row) != 3:
        problems.append(f"row has {len(row)} columns, expected 3")
        return RecordEntry(path, None, None, line), problems
    hash_text, size_text = row[1].strip(), row[2].strip()
    digest: Hash | None = None
    size: int | None = None
    if hash_text:
        try:
            digest = parse_hash(hash_text, allow_hex=allow_hex)
        except ValueError as exc:
            problems.append(str(exc))
    if size_text:
        try:
            size = int(size_text)
            if size < 0:
                raise ValueError
        except ValueError:
            problems.append(f"size {size_text!r} is not a non-negative integer")
            size = None
    if problems:
        # Half-valid rows are not trusted at all: the path stays owned, nothing is compared.
        return RecordEntry(path, None, None, line), problems
    return RecordEntry(path, digest, size, line), problems


CHUNK = 1 << 20


def hash_stream(fileobj: io.BufferedIOBase, algorithm: str) -> tuple[bytes, int]:
    """Stream ``fileobj`` through ``algorithm``; returns (digest, bytes read)."""
    hasher = hashlib.new(algorithm)
    buffer = bytearray(CHUNK)
    view = memoryview(buffer)
    total = 0
    while True:
        n = fileobj.readinto(buffer)
        if not n:
            break
        hasher.update(view[:n])
        total += n
    return hasher.digest(), total


def record_hash_text(digest: bytes) -> str:
    """The RECORD spelling of a digest: urlsafe base64 without padding."""
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
