"""Verify a conda file rewritten at link time by substituting the placeholder back.

A conda package built in ``/home/conda/.../_h_env_placehold_placehold_...`` ships files holding
that build prefix (``prefix_placeholder``); the installer replaces it with the environment's
prefix while linking, so the installed file's hash is not the package's. Records written by
current conda (4.4 on) and rattler hold the installed file's hash (``sha256_in_prefix``): then
the plain RECORD-style check applies. Without it, or when the prefix was moved since it was
linked, this module undoes the substitution in memory and compares the result with the
package's ``sha256``. How the installers substitute (conda ``conda/core/portability.py``, rattler
``crates/rattler/src/install/link.rs``):

- **text** mode: every occurrence of the placeholder is replaced by the prefix (conda does it for
  the UTF-8, UTF-16-LE/BE and UTF-32-LE/BE encodings of both; rattler for UTF-8). Undone by
  replacing every occurrence of the prefix, in each of those encodings, by the placeholder.
  A shebang first line gets special treatment: when ``#!<prefix>/bin/x`` would be longer than
  127 bytes (512 on macOS) or the prefix holds a space, conda writes ``#!/usr/bin/env x`` and
  rattler ``#!/usr/bin/env x`` or, for a Python interpreter, ``#!/bin/sh`` followed by
  ``'''exec' "<prefix>/bin/pythonX.Y" "$0" "$@" #'''``. Both forms are undone too (the
  interpreter's directory is taken to be ``<placeholder>/bin`` for the ``env`` form, the one a
  conda-build prefix has).
- **binary** mode: a C string keeps its length. From each occurrence of the placeholder to the
  string's NUL terminator, every occurrence is replaced by the prefix and the string is padded
  with NULs to its old length (``len(placeholder) - len(prefix)`` NULs per occurrence, written
  just before the terminator; rattler pads a string that runs to the end of the file too). A
  prefix longer than the placeholder cannot be linked. Undone by finding each occurrence of the
  prefix, the end of its string, and — only where the padding the installer leaves follows it —
  putting the placeholder back and dropping the padding; an occurrence without the padding is
  left alone (a path that was in the package's file already, such as ``/usr/local``).

Verdicts, as ``(status, detail)``; ``detail`` is the report's evidence and says which check was
made: ``ok`` when the file matches ``sha256_in_prefix`` or the package's file once substituted
back (for the prefix, its real path, or the prefix pixi recorded); ``modified`` when the
substitution was possible and the result differs (binary mode: also a size that differs, since
linking keeps the length); ``ok`` with a detail starting "presence only" when it cannot be
decided — no package hash in the record, a file over ``PLACEHOLDER_LIMIT``, or a file in which
the prefix does not occur at all (the prefix was moved or renamed after linking: undoing the
substitution needs the prefix it was linked to). A prefix that also occurs in the package's
file on its own (text mode) makes a pristine file look modified; records with
``sha256_in_prefix`` do not have that problem.

The checker also serves a file whose ``sha256_in_prefix`` does not match: a prefix relocated
with its files rewritten for the new path (conda-pack's ``conda-unpack``) keeps records hashed
for the old one. On macOS, rewritten Mach-O binaries are re-signed after linking; substituting
back cannot undo a signature, so there only ``sha256_in_prefix`` decides.

The file is read through ``fileio`` (a regular file, not through a symlink, inside the prefix,
at most ``PLACEHOLDER_LIMIT`` bytes). The record is the prefix's data: text mode is substituted
back in one pass and hashed piece by piece (a 40 KB placeholder over a file full of the prefix
would otherwise be gigabytes in memory), binary mode finds each string's end and padding once
(linear, not once per occurrence). A placeholder longer than ``MAX_PLACEHOLDER``, a binary-mode
one longer than the package's file, or a substitution past ``PLACEHOLDER_LIMIT`` bytes is an
``ERROR`` verdict: one problem for that file.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterable, Iterator
from itertools import chain
from dataclasses import dataclass
from typing import NamedTuple

from ...fs.reader import file_type, os_error, read_regular_stat
from ...core.units import size_change
from ...core.values import RecordEntry
from ..files import ERROR, MISSING, MODIFIED, OK, TYPE_CHANGED

PLACEHOLDER_LIMIT = 256 << 20  # a rewritten file is held in memory twice while it is checked
# conda-build pads its build prefix to 255 characters; rattler-build's is shorter. A longer one in
# a record is not a build prefix, and substituting it back could grow the file a thousandfold.
MAX_PLACEHOLDER = 1024
ENCODINGS = ("utf-8", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")
PRESENCE_ONLY = "presence only"
_ENV_SHEBANG = re.compile(rb"^#!/usr/bin/env (?P<exe>[^ \n\r\t]+)(?P<rest>[^\n]*)$")
_EXEC_SHEBANG = re.compile(rb"^'''exec' \"(?P<path>[^\"\n]*)\"(?P<rest>[^\n]*) \"\$0\" \"\$@\" #'''$")


@dataclass(frozen=True)
class Placeholder:
    """What verifying a file rewritten at link time needs: the package's file held
    ``placeholder`` where the installed one holds the prefix (``file_mode`` says how it was
    substituted), and hashed ``original_sha256`` (the record's ``sha256``). ``original_size`` is
    known only in binary mode (substitution keeps the length; a text file's recorded size is
    the package's in conda records and the installed one in rattler's)."""

    placeholder: str
    file_mode: str  # "text" | "binary"
    original_sha256: bytes | None
    original_size: int | None


class PlaceholderResult(NamedTuple):
    status: str  # environment.files: OK, MODIFIED, MISSING, TYPE_CHANGED or ERROR
    detail: str

    @property
    def content_checked(self) -> bool:
        return self.status != OK or not self.detail.startswith(PRESENCE_ONLY)


def _candidates(prefix: str, also: tuple[str, ...]) -> list[str]:
    found = []
    for p in (prefix, os.path.realpath(prefix), *also):
        p = p.rstrip("/") if p not in ("", "/") else p
        if p and p not in found:
            found.append(p)
    return found


def _text_pattern(placeholder: str, prefix: str) -> tuple[re.Pattern[bytes], tuple[bytes, ...]]:
    """The prefix in every encoding as one alternation, and what each alternative becomes."""
    news = [prefix.encode(e) for e in ENCODINGS]
    return (re.compile(b"|".join(b"(" + re.escape(n) + b")" for n in news)),
            tuple(placeholder.encode(e) for e in ENCODINGS))


def _text_pieces(data: bytes, pattern: re.Pattern[bytes], olds: tuple[bytes, ...], pos: int = 0,
                 end: int | None = None) -> Iterator[bytes | memoryview]:
    """``data[pos:end]`` with every occurrence of the prefix replaced, in pieces: one pass over the
    file and nothing held but the pieces (a long placeholder over a file full of the prefix would
    otherwise build a file hundreds of times the size in memory)."""
    view = memoryview(data)
    end = len(data) if end is None else end
    last = pos
    for m in pattern.finditer(data, pos, end):
        yield view[last:m.start()]
        yield olds[(m.lastindex or 1) - 1]
        last = m.end()
    yield view[last:end]


def _text_forms(data: bytes, placeholder: str, prefix: str) -> Iterator[tuple[Iterator[bytes | memoryview], str]]:
    pattern, olds = _text_pattern(placeholder, prefix)
    yield _text_pieces(data, pattern, olds), "text mode"
    cut = data.find(b"\n")
    first, after = (data, len(data)) if cut == -1 else (data[:cut], cut + 1)
    newline = b"" if cut == -1 else b"\n"
    env = _ENV_SHEBANG.match(first)
    if env:
        shebang = b"#!" + placeholder.encode() + b"/bin/" + env.group("exe") + env.group("rest")
        yield (chain((shebang, newline), _text_pieces(data, pattern, olds, after)),
               "text mode, shebang shortened to /usr/bin/env")
    if first == b"#!/bin/sh":
        cut2 = data.find(b"\n", after)
        second, after2 = (data[after:], len(data)) if cut2 == -1 else (data[after:cut2], cut2 + 1)
        exec_line = _EXEC_SHEBANG.match(second)
        if exec_line:
            path = b"".join(_text_pieces(exec_line.group("path"), pattern, olds))
            shebang = b"#!" + path + exec_line.group("rest")
            yield (chain((shebang, b"" if cut2 == -1 else b"\n"), _text_pieces(data, pattern, olds, after2)),
                   "text mode, shebang rewritten to /bin/sh exec")


def restore_text(data: bytes, placeholder: str, prefix: str) -> Iterator[tuple[bytes, str]]:
    """The package's text file that linking at ``prefix`` turned into ``data``: the plain
    substitution, then the shebang forms conda and rattler write for long prefixes."""
    for pieces, how in _text_forms(data, placeholder, prefix):
        yield b"".join(pieces), how


_NULS = re.compile(b"\0*")


def restore_binary(data: bytes, placeholder: str, prefix: str) -> bytes:
    """The package's binary file that linking at ``prefix`` turned into ``data`` (C strings
    padded with NULs to their length; see the module docstring). Linear in the file: each
    string's end, occurrence count and NUL padding are found once, not once per occurrence."""
    for encoding in ENCODINGS:
        old, new, zero = placeholder.encode(encoding), prefix.encode(encoding), "\0".encode(encoding)
        grow = len(old) - len(new)
        if grow < 0 or new not in data:
            continue
        out = bytearray()
        at = search = 0
        end = left = nuls = -1  # the current string: its end, occurrences from here on, NULs after it
        while (start := data.find(new, search)) != -1:
            if end < start + len(new):  # a string not seen yet
                end = data.find(zero, start + len(new))  # where the string ends: its padding, or its terminator
                end = len(data) if end == -1 else end
                left = data.count(new, start, end)
                match = _NULS.match(data, end, min(len(data), end + grow * left))
                nuls = match.end() - end if match else 0
            if grow * left <= nuls:  # the padding the installer writes after the string
                out += data[at:start]
                out += data[start:end].replace(new, old)
                at = search = end + grow * left
                end = -1
            else:  # not the installer's: left as it is
                search = start + len(new)
                left -= 1
        out += data[at:]
        data = bytes(out)
    return data


def _unusable(ph: Placeholder) -> str | None:
    """Why the record's placeholder cannot be what the package's file held, or None."""
    size = len(ph.placeholder.encode())
    if size > MAX_PLACEHOLDER:
        return (f"its prefix_placeholder has {size} bytes, more than the {MAX_PLACEHOLDER} a build prefix "
                "is given")
    if ph.file_mode == "binary" and ph.original_size is not None and size > ph.original_size:
        return (f"its binary-mode prefix_placeholder has {size} bytes, more than the package's file "
                f"({ph.original_size} bytes) can hold")
    return None


def _digest(pieces: Iterable[bytes | memoryview], limit: int) -> bytes | None:
    """The sha256 of the pieces joined, or None past ``limit`` bytes."""
    hasher = hashlib.sha256()
    total = 0
    for piece in pieces:
        total += len(piece)
        if total > limit:
            return None
        hasher.update(piece)
    return hasher.digest()


def _length_changed(original: int, size: int) -> PlaceholderResult:
    return PlaceholderResult(MODIFIED, f"size {size_change(original, size)}: "
                                       "linking a binary-mode file keeps its length")


def check_placeholder(path: str, entry: RecordEntry, ph: Placeholder, prefix: str,
                      also: tuple[str, ...] = ()) -> PlaceholderResult:
    """Whether the file at ``path``, which linking into ``prefix`` rewrote (``ph``), is as the
    installer left it. ``entry.hash``, when set, is the record's ``sha256_in_prefix``; ``also``:
    other prefixes the environment may have been linked at (``CondaPrefix.recorded_prefix``).
    Never raises for the file's sake."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return PlaceholderResult(MISSING, "missing")
    except OSError as exc:
        return PlaceholderResult(ERROR, f"cannot stat: {os_error(exc)}")
    if not stat.S_ISREG(st.st_mode):
        return PlaceholderResult(TYPE_CHANGED, f"a {file_type(st.st_mode)} where the package installs a file "
                                               f"rewritten at link time ({ph.file_mode} mode)")
    original = ph.original_size if ph.file_mode == "binary" else None  # only binary mode keeps the length
    if original is not None and st.st_size != original and entry.hash is None:  # settled without reading
        return _length_changed(original, st.st_size)
    if st.st_size > PLACEHOLDER_LIMIT:
        return PlaceholderResult(OK, f"{PRESENCE_ONLY}: {st.st_size} bytes, more than the {PLACEHOLDER_LIMIT} "
                                     "a file rewritten at link time is substituted back in memory")
    try:
        data, _ = read_regular_stat(path, PLACEHOLDER_LIMIT, what="file rewritten at link time", follow=False,
                                    root=prefix)
    except FileNotFoundError:
        return PlaceholderResult(MISSING, "missing")
    except OSError as exc:
        return PlaceholderResult(ERROR, f"cannot read: {os_error(exc)}")
    actual = hashlib.sha256(data).digest()
    if entry.hash is not None and entry.hash.algorithm == "sha256" and actual == entry.hash.digest:
        return PlaceholderResult(OK, "matches the record's sha256_in_prefix")
    if original is not None and st.st_size != original:
        return _length_changed(original, len(data))
    if ph.original_sha256 is None:
        return PlaceholderResult(OK, f"{PRESENCE_ONLY}: the record has no sha256 of the package's file to "
                                     "substitute the placeholder back against")
    if actual == ph.original_sha256:
        return PlaceholderResult(OK, "identical to the package's file (no placeholder to substitute)")
    unusable = _unusable(ph)
    if unusable:
        return PlaceholderResult(ERROR, f"{unusable}: not substituted back")
    occurs = too_big = False
    tried = []
    for candidate in _candidates(prefix, also):
        if ph.file_mode == "binary" and len(candidate.encode()) > len(ph.placeholder.encode()):
            continue  # no installer links a binary-mode file at a prefix longer than its placeholder
        tried.append(candidate)
        occurs = occurs or any(candidate.encode(e) in data for e in ENCODINGS)
        restored = (_text_forms(data, ph.placeholder, candidate) if ph.file_mode == "text"
                    else iter([((restore_binary(data, ph.placeholder, candidate),), "binary mode, NUL padding")]))
        for pieces, how in restored:
            digest = _digest(pieces, PLACEHOLDER_LIMIT)
            too_big = too_big or digest is None
            if digest == ph.original_sha256:
                stale = ("; the record's sha256_in_prefix is of the file as linked at another prefix (the prefix was "
                         "relocated, as conda-pack's conda-unpack does)") if entry.hash else ""
                return PlaceholderResult(OK, f"matches the package's file with {candidate} substituted back "
                                             f"by the placeholder ({how}){stale}")
    shown = ", ".join(tried) or prefix
    if too_big:
        return PlaceholderResult(ERROR, f"with {shown} substituted back by the placeholder it would hold more than "
                                        f"the {PLACEHOLDER_LIMIT} bytes a package's file is checked up to: "
                                        "not checked")
    if not occurs:
        return PlaceholderResult(OK, f"{PRESENCE_ONLY}: the prefix ({shown}) does not occur in this file rewritten at "
                                     "link time; the environment may have been moved since it was linked")
    return PlaceholderResult(MODIFIED, f"differs from the package's file with {shown} substituted back by the "
                                       f"placeholder ({ph.file_mode} mode)")
