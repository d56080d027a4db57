"""The digest a distribution's wheel must have, as given from outside the tree: a lockfile's
hash, or the one pip recorded in direct_url.json at install (``archive_info``)."""

from __future__ import annotations

import posixpath
import re
import urllib.parse
from dataclasses import dataclass

from ..core.values import Distribution
from ..formats.directurl import archive_hashes

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Expected:
    sha256: str  # hex, lower case: the digest of the whole .whl file
    lock: str | None = None  # the lockfile that gave it; None for direct_url.json
    filename: str | None = None  # the wheel's file name, when the source names it
    # Other digests the source accepts as well: a requirements line's ``--hash`` values name no
    # file, so any of them may be this platform's wheel.
    also: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        for digest in (self.sha256, *self.also):
            if not _SHA256_HEX.fullmatch(digest.lower()):
                raise ValueError(f"not a sha256 hex digest: {digest[:80]!r}")
        object.__setattr__(self, "sha256", self.sha256.lower())
        object.__setattr__(self, "also", frozenset(d.lower() for d in self.also) - {self.sha256})

    def accepts(self, digest: str) -> bool:
        return digest == self.sha256 or digest in self.also


def from_direct_url(dist: Distribution, notes: list[str] | None = None) -> Expected | None:
    """The sha256 direct_url.json's ``archive_info`` records for the archive installed, or None
    (with why in ``notes``: none recorded, only other algorithms, a malformed value)."""
    direct = dist.direct_url
    if not isinstance(direct, dict) or not isinstance(direct.get("archive_info"), dict):
        return None
    digests, bad = archive_hashes(direct)
    if digests is None:
        _note(notes, bad or "direct_url.json's archive hash is malformed")
        return None
    if "sha256" not in digests:
        _note(notes, "direct_url.json records no archive sha256" +
              (f" (only {', '.join(sorted(digests))})" if digests else ""))
        return None
    return Expected(digests["sha256"].hex(), None, _filename(direct.get("url")))


def _filename(url: object) -> str | None:
    if not isinstance(url, str) or len(url) > 4096:
        return None
    try:
        name = posixpath.basename(urllib.parse.unquote(urllib.parse.urlsplit(url).path))
    except ValueError:
        return None
    return name if name.endswith(".whl") and name.isprintable() else None


def _note(notes: list[str] | None, text: str) -> None:
    if notes is not None:
        notes.append(text)
