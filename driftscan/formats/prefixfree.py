"""A digest of a file with its environment's own path taken out: what makes two venvs at two
paths comparable.

A venv writes its own absolute path into some of its files: ``bin/activate*``
(``VIRTUAL_ENV=...``), console-script shebangs (``#!/srv/a/venv/bin/python``, or pip's ``/bin/sh``
launcher for a long path), ``pyvenv.cfg`` (``command = ... -m venv /srv/a/venv``). The same venv
built at ``/srv/b/venv`` has other bytes there and nothing else different. The *prefix-free
digest* hashes the content as if every occurrence of the prefix were one fixed placeholder
(``<PREFIX>``): the content is cut at each occurrence and the pieces are hashed with their lengths,
so no literal text in the file can stand in for the prefix, and a file that differs in anything
but the prefix gets another digest.

Only the exact prefix is taken out, and only where it stands as a whole path (the bytes around it
are not part of a longer name: ``/srv/a/venv2`` is not ``/srv/a/venv``). A prefix must be an
absolute, normalised path of at least ``MIN_PREFIX`` characters, never ``/``: anything shorter
would take out too much of any file. pip's ``/bin/sh`` launcher for a path too long for a shebang
line counts as the shebang it stands for (``_as_shebang``): whether a venv gets one depends on
the length of its path alone. A reader of someone else's snapshot or report checks the
prefix it declares with ``usable_prefix`` before trusting its prefix-free digests.
"""

from __future__ import annotations

import base64
import hashlib
import posixpath
import re

import xxhash

PLACEHOLDER = "<PREFIX>"  # how the docs and notes name what the prefix stands as
MIN_PREFIX = 4  # characters: "/srv" is the shortest prefix taken out
MAX_PREFIX = 4096
MAX_FILE = 1 << 20  # a bigger file gets no prefix-free digest
MAX_FILES = 4096  # per snapshot root: the files looked at for the prefix
# Bytes that may continue a path component: an occurrence next to one is part of a longer name.
_NAME_BYTE = re.compile(rb"[A-Za-z0-9._+~-]")


def usable_prefix(prefix: object) -> bool:
    """Whether ``prefix`` (from a snapshot's root or a report's target: data) may be taken out of
    files: an absolute, normalised POSIX path, not ``/``, of reasonable length."""
    if not isinstance(prefix, str) or not MIN_PREFIX <= len(prefix) <= MAX_PREFIX:
        return False
    if not prefix.startswith("/") or "\0" in prefix or "\n" in prefix:
        return False
    return posixpath.normpath(prefix) == prefix and prefix != "/" and not prefix.startswith("//")


# pip's (distlib's) launcher for an interpreter path too long for a shebang line (127 bytes):
# the same script as ``#!INTERPRETER`` but for these lines, which a venv gets or not by the length
# of its path alone.
_SH_LAUNCHER = re.compile(b"#!/bin/sh\n'''exec' ('[^'\n]*'|\"[^\"\n]*\"|[^'\"\\s]+) \"\\$0\" \"\\$@\"\n' '''\n")


def _as_shebang(data: bytes, prefixes: tuple[bytes, ...]) -> bytes:
    """A launcher of an interpreter under one of ``prefixes`` as the shebang it stands for."""
    m = _SH_LAUNCHER.match(data)
    if m is None:
        return data
    interpreter = m.group(1).strip(b"'\"")
    if not any(interpreter.startswith(p + b"/") for p in prefixes):
        return data
    return b"#!" + interpreter + b"\n" + data[m.end():]


def _pieces(data: bytes, prefixes: tuple[bytes, ...]) -> list[bytes] | None:
    """``data`` cut at each whole-path occurrence of any of ``prefixes`` (longest first); None
    when there is none."""
    data = _as_shebang(data, prefixes)
    cuts: list[tuple[int, int]] = []
    taken = bytearray(len(data)) if len(prefixes) > 1 else None
    for prefix in prefixes:
        start = 0
        while True:
            at = data.find(prefix, start)
            if at < 0:
                break
            end = at + len(prefix)
            start = at + 1
            if at > 0 and _NAME_BYTE.match(data, at - 1):
                continue
            if end < len(data) and _NAME_BYTE.match(data, end):
                continue
            if taken is not None:
                if any(taken[at:end]):
                    continue
                taken[at:end] = b"\1" * (end - at)
            cuts.append((at, end))
            start = end
    if not cuts:
        return None
    cuts.sort()
    pieces, last = [], 0
    for at, end in cuts:
        pieces.append(data[last:at])
        last = end
    pieces.append(data[last:])
    return pieces


def _encoded(pieces: list[bytes]) -> bytes:
    return b"".join(len(p).to_bytes(8, "big") + p for p in pieces)


def prefixes_of(prefix: str, *aliases: str) -> tuple[bytes, ...]:
    """The byte strings to take out for ``prefix`` (and the same directory by other names, a
    resolved symlink, say), the usable ones, longest first."""
    names = {p for p in (prefix, *aliases) if usable_prefix(p)}
    return tuple(sorted((p.encode("utf-8", "surrogateescape") for p in names), key=len, reverse=True))


def xxh3_prefix_free(data: bytes, prefixes: tuple[bytes, ...], *, always: bool = False) -> str | None:
    """The prefix-free xxh3-128 digest (hex, as a manifest's ``xxh3_128``) of ``data``; None when
    ``data`` holds no prefix (then its own digest is the one to compare), unless ``always``."""
    pieces = _pieces(data, prefixes) if prefixes else None
    if pieces is None:
        return xxhash.xxh3_128_hexdigest(_encoded([data])) if always else None
    return xxhash.xxh3_128_hexdigest(_encoded(pieces))


def sha256_prefix_free(data: bytes, prefixes: tuple[bytes, ...]) -> str | None:
    """The same in RECORD's notation (``sha256=<urlsafe base64>``), as a report's ``actual.hash``."""
    pieces = _pieces(data, prefixes) if prefixes else None
    if pieces is None:
        return None
    digest = hashlib.sha256(_encoded(pieces)).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
