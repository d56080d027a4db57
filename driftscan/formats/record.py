"""RECORD files: parse rows (syntax), then build entries (meaning), collecting every issue.

A malformed row never aborts the parse: the path it names is still returned as owned (so the
file is not later mistaken for an added one), with ``hash``/``size`` left out and an issue
describing what was wrong. ``importlib.metadata`` is deliberately not used: it drops missing
files on Python 3.12+ and does no validation (see docs/installers.md §5).
"""

from __future__ import annotations

import base64
import binascii
import csv
import hashlib
import io
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import os

from ..core.values import Distribution, Hash, MetadataKind, RecordEntry, RecordRows

# Files installers write into the dist-info they create: no wheel has them (FACTS §1).
INSTALLER_FILES = frozenset({"INSTALLER", "REQUESTED", "RECORD", "direct_url.json", "uv_cache.json", "uv_build.json"})

# Algorithms a RECORD may name. md5 and sha1 are refused by the wheel spec.
ACCEPTED_ALGORITHMS = frozenset(hashlib.algorithms_guaranteed) - {"md5", "sha1"}
_BARE_CR = re.compile("\r(?!\n)")  # a CR that does not end a line: the csv module's job
# Digest sizes, looked up once: RECORDs have tens of thousands of rows.
_DIGEST_SIZE = {name: hashlib.new(name).digest_size for name in ACCEPTED_ALGORITHMS if not name.startswith("shake")}


@dataclass(frozen=True)
class RecordIssue:
    line: int
    message: str
    path: str | None = None


@dataclass(frozen=True)
class ParsedRecord:
    entries: RecordRows  # (compares equal to the tuple of RecordEntry it holds)
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
    return _parse(text, _numbered_lines(text), allow_hex)


_CHUNK = 1 << 16  # characters of a RECORD split into lines at a time


def _numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    """``enumerate(text.split("\n"), 1)``, a chunk at a time: the lines of a 20,000-row RECORD
    all alive at once (~3 MB) would leave that much resident after the parse, in holes between
    the path strings kept."""
    if len(text) <= _CHUNK:
        yield from enumerate(text.split("\n"), 1)
        return
    number, start = 1, 0
    while True:
        end = text.find("\n", start + _CHUNK)
        if end < 0:
            lines = text[start:].split("\n")
        else:
            lines = text[start:end].split("\n")
        yield from enumerate(lines, number)
        if end < 0:
            return
        number += len(lines)
        start = end + 1


def large_entries(text: str, min_size: int, *, allow_hex: bool = False) -> list[RecordEntry]:
    """The entries of ``parse_record(text)`` of at least ``min_size`` bytes (> 0), without the
    cost of parsing the others: the only lines parsed are those whose last column is long enough
    to hold such a size, and every quoted line (quoting decides how the whole text is parsed).
    Issues of the rows skipped are not collected: this is for a quick look, not a verdict."""
    digits = len(str(min_size))
    quoted = '"' in text
    lines = [(number, line) for number, line in enumerate(text.split("\n"), 1)
             if len(line) - line.rfind(",") > digits or quoted and '"' in line]  # cheap: most lines stop here
    # A CRLF line's last column counted its CR: the few left, without it
    lines = [(number, line) for number, line in lines
             if len(line) - line.rfind(",") - (line[-1:] == "\r") > digits or quoted and '"' in line]
    return [e for e in _parse(text, lines, allow_hex).entries if e.size is not None and e.size >= min_size]


def _parse(text: str, lines: Iterable[tuple[int, str]], allow_hex: bool) -> ParsedRecord:
    """``lines``: (line number, line) of ``text``, all of them or a selection holding every quoted line."""
    entries = RecordRows()
    issues: list[RecordIssue] = []
    if _BARE_CR.search(text) or not _parse_plain(lines, allow_hex, entries, issues):
        entries = RecordRows()
        issues.clear()
        _parse_csv(text, allow_hex, entries, issues)  # unusual quoting, bare CRs: the csv module's job
    if "\0" in text:  # binary junk: no file has a NUL in its name (and os calls refuse one)
        issues += [RecordIssue(e.line, "the path has a NUL byte: not a file name", e.path.replace("\0", "\\0"))
                   for e in entries if "\0" in e.path]
        entries = RecordRows(e for e in entries if "\0" not in e.path)
    return ParsedRecord(entries.freeze(), tuple(issues))


def _parse_csv(text: str, allow_hex: bool, entries: RecordRows, issues: list[RecordIssue]) -> None:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        for row in reader:
            line = reader.line_num
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            _add_row(row, line, allow_hex, entries, issues)
    except csv.Error as exc:
        issues.append(RecordIssue(reader.line_num, f"unreadable csv: {exc}"))


def _parse_plain(lines: Iterable[tuple[int, str]], allow_hex: bool, entries: RecordRows,
                 issues: list[RecordIssue]) -> bool:
    """The common RECORD: a row is its line split at commas, the path alone quoted when it holds a
    comma (what pip and uv write). Gives exactly what the csv module gives (a test compares them),
    several times faster on a 40,000-row venv; False, having given up, at any other quoting."""
    append_sha256, append_bare = entries.append_sha256, entries.append_bare
    sha256 = _sha256_digest
    for number, line in lines:
        if line.endswith("\r"):
            line = line[:-1]
        if '"' in line:
            end = line.find('"', 1)
            if line[0] != '"' or line.count('"') != 2 or line[end + 1:end + 2] != ",":
                return False
            row = [line[1:end], *line[end + 2:].split(",")]
        else:
            row = line.split(",")
        if len(row) == 3:
            path, hash_text, size_text = row
            if path and len(hash_text) == 50 and hash_text.startswith("sha256=") and size_text.isdigit() \
                    and size_text.isascii() and len(size_text) < 20:  # int() refuses 4,300 digits
                digest = sha256(hash_text[7:])
                if digest is not None:
                    append_sha256(path, digest, int(size_text), number)
                    continue
            elif path and not hash_text and not size_text:
                append_bare(path, number)
                continue
        elif not line.strip():
            continue
        _add_row(row, number, allow_hex, entries, issues)
    return True


def _sha256_digest(value: str) -> bytes | None:
    """The digest of a canonical 43-character urlsafe-base64 sha256 value; None for anything else."""
    try:
        digest = binascii.a2b_base64(value.replace("-", "+").replace("_", "/") + "=")
        # a2b_base64 skips stray characters: only the round trip proves the text canonical (and urlsafe)
        if len(digest) == 32 and binascii.b2a_base64(digest, newline=False)[:43].translate(_TO_URLSAFE) == \
                value.encode("ascii"):
            return digest
    except (binascii.Error, ValueError):  # UnicodeEncodeError included
        pass
    return None


_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")


def _add_row(row: list[str], line: int, allow_hex: bool, entries: RecordRows,
             issues: list[RecordIssue]) -> None:
    entry, problems = _build_entry(row, line, allow_hex)
    if problems:
        issues.extend(RecordIssue(line, p, row[0] or None) for p in problems)
    if entry is not None:
        entries.append(entry)


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
            size = int(size_text) if len(size_text) < 20 else -1  # no file has 10**19 bytes
            if size < 0:
                raise ValueError
        except ValueError:
            problems.append(f"size {size_text!r} is not a non-negative integer")
            size = None
    if problems:
        # Half-valid rows are not trusted at all: the path stays owned, nothing is compared.
        return RecordEntry(path, None, None, line), problems
    return RecordEntry(path, digest, size, line), problems


def hash_text(h: Hash) -> str:
    """``algorithm=digest`` as the record that promised it spells it: RECORD's urlsafe base64,
    or hex for conda's sha256 and Debian's md5 (comparable with sha256sum / md5sum output)."""
    return f"{h.algorithm}={h.digest.hex() if h.encoding == 'hex' else record_hash_text(h.digest)}"


def new_hash(algorithm: str, data: bytes = b"") -> hashlib._Hash:
    """A hashlib object; md5 (Debian's choice) is asked for as a checksum, so a FIPS build allows it."""
    return hashlib.new(algorithm, data, usedforsecurity=False) if algorithm == "md5" else hashlib.new(algorithm, data)


def record_hash_text(digest: bytes) -> str:
    """The RECORD spelling of a digest: urlsafe base64 without padding."""
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def shipped_rows_digest(rows: Iterable[RecordEntry], dist_info_name: str) -> str | None:
    """``sha256=…`` over the rows of a RECORD the wheel itself ships — (path, hash, size), sorted by
    path — or None when there is none. Left out: the files installers write into the dist-info
    (``INSTALLER_FILES``), rows outside site-packages (console scripts, headers: rewritten at install)
    and ``__pycache__`` rows (pip compiles, uv does not). What is left does not depend on the
    environment's path, the installer or its row order, so every machine with the same wheel
    installed gives the same digest; a row rewritten to match an edited file gives another.
    In memory only: the rows as the audit parsed them."""
    table = RecordRows.of(rows)
    paths, kinds, digests = table.paths, table.kinds, table.digests
    installer_rows = {f"{dist_info_name}/{name}" for name in INSTALLER_FILES}
    picked = sorted((path, i) for i, path in enumerate(paths)
                    if path not in installer_rows and "__pycache__" not in path and ".." not in path
                    and not path.startswith("/"))
    if not picked:
        return None
    sha = hashlib.sha256()
    update = sha.update
    for path, i in picked:
        if kinds[i] == 1:  # a sha256 digest (RecordRows' kind 1), the common row: its 32 bytes as they are
            shown = bytes(digests[32 * i:32 * (i + 1)])
        else:
            h = table.hash(i)
            shown = hash_text(h).encode("ascii", "backslashreplace") if h is not None else b""
        size = table.size(i)
        # each field's length first: a hostile path cannot make two lists of rows read as one
        encoded = path.encode("utf-8", "surrogatepass")
        update(b"%d:%s%d:%s%s\n" % (len(encoded), encoded, len(shown), shown, b"" if size is None else b"%d" % size))
    return "sha256=" + record_hash_text(sha.digest())


def distribution_digest(dist: Distribution) -> str | None:
    """A distribution's ``shipped_rows_digest``: the digest a warm audit kept, or its rows'; None
    for what no wheel ships alike everywhere — an editable install (its ``.pth`` or finder names
    the machine's own source tree) and distributions that are not dist-infos."""
    if dist.kind is not MetadataKind.DIST_INFO or dist.editable:
        return None
    if dist.record_digest is not None or not dist.entries:
        return dist.record_digest
    return shipped_rows_digest(dist.entries, os.path.basename(dist.metadata_dir.rstrip("/")))
