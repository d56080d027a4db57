"""What a model directory is (``ModelDirLayout``), and the download metadata huggingface_hub left in it.

Which kind a directory is, is decided by ``provenance.detect_layout``, each kind's ``recognise``
in the registry's order.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from ..fs.reader import inside, read_kind, walk
from ..core.values import LayoutKind, Problem
from ..fs.paths import ancestors, printable
from .hfcache import Revision

METADATA_DIR = os.path.join(".cache", "huggingface", "download")
METADATA_SUFFIX = ".metadata"
# Timestamps past the year 9999 cannot be shown as a date (datetime refuses them): no download
# happened then, so they are refused as junk rather than crashing whatever prints them.
MAX_TIMESTAMP = 253402300799.0
MAX_FIELD = 128  # a commit is 40 hex digits, an etag 40 or 64


@dataclass(frozen=True)
class DownloadMetadata:
    """One ``<path>.metadata``: written by huggingface_hub as ``commit\\netag\\ntimestamp\\n``."""

    relpath: str
    commit: str
    etag: str
    timestamp: float
    metadata_path: str


def etag_algorithm(etag: str) -> str | None:
    """"git-sha1" for a regular file's etag (40 hex), "sha256" for an LFS file's (64 hex)."""
    if all(c in "0123456789abcdef" for c in etag):
        return {40: "git-sha1", 64: "sha256"}.get(len(etag))
    return None


def parse_download_metadata(relpath: str, metadata_path: str, text: str) -> DownloadMetadata:
    """Raises ValueError with a user-facing message for anything huggingface_hub would not have written."""
    lines = text.splitlines()
    if len(lines) != 3:
        raise ValueError(f"has {len(lines)} lines, expected 3 (commit, etag, timestamp)")
    commit, etag, stamp = (line.strip() for line in lines)
    if not commit or not etag:
        raise ValueError("empty commit or etag line")
    for name, value in (("commit", commit), ("etag", etag)):
        # Both end up in evidence and remedies: no control characters, no spaces, no essays.
        if len(value) > MAX_FIELD or not value.isascii() or not value.isprintable() or " " in value:
            raise ValueError(f"the {name} line {value[:MAX_FIELD]!r} is not a {name}")
    try:
        timestamp = float(stamp)
    except ValueError:
        raise ValueError(f"timestamp {stamp[:MAX_FIELD]!r} is not a number") from None
    if not math.isfinite(timestamp) or not 0 <= timestamp <= MAX_TIMESTAMP:
        raise ValueError(f"timestamp {stamp[:MAX_FIELD]!r} is not a Unix time")
    return DownloadMetadata(relpath, commit, etag, timestamp, metadata_path)


def read_download_metadata(root: str) -> tuple[dict[str, DownloadMetadata], set[str], list[Problem]]:
    """Every metadata file under ``root``: the parsed ones, the relpaths of broken ones, and why."""
    base = os.path.join(root, METADATA_DIR)
    parsed: dict[str, DownloadMetadata] = {}
    broken: set[str] = set()
    problems: list[Problem] = []

    def onerror(exc: OSError) -> None:
        problems.append(Problem(exc.filename or base, f"cannot list download metadata: {exc.strerror or exc}"))

    if not inside(root, base):  # .cache, huggingface or download is a symlink out of the tree
        problems.append(Problem(base, "download metadata not read: it resolves outside the model directory"
                                f" (to {printable(os.path.realpath(base))})"))
        return parsed, broken, problems
    for dirpath, _dirnames, filenames in walk(base, onerror=onerror):
        for name in filenames:
            if not name.endswith(METADATA_SUFFIX):
                continue  # <path>.lock and <path>.<etag>.incomplete are huggingface_hub's working files
            path = os.path.join(dirpath, name)
            relpath = os.path.relpath(path, base)[: -len(METADATA_SUFFIX)].replace(os.sep, "/")
            try:
                # huggingface_hub writes each metadata file itself: a symlink is never followed.
                text = read_kind(path, "hf metadata", follow=False).decode("utf-8")
                parsed[relpath] = parse_download_metadata(relpath, path, text)
            except (OSError, ValueError, OverflowError) as exc:  # each file fails alone
                broken.add(relpath)
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                problems.append(Problem(path, f"unreadable download metadata for {printable(relpath)}: {reason}"))
    return parsed, broken, problems


def has_metadata(root: str) -> bool:
    """Whether ``root`` holds huggingface_hub's download metadata of at least one file."""
    base = os.path.join(root, METADATA_DIR)
    if os.path.isdir(base) and not inside(root, base):
        return True  # not walked (it could be /); read_download_metadata reports it
    for _dirpath, _dirnames, filenames in walk(base):
        if any(name.endswith(METADATA_SUFFIX) for name in filenames):
            return True
    return False


def find_git_top(path: str) -> str | None:
    """The nearest directory at or above ``path`` holding ``.git`` (a directory, or a file for worktrees)."""
    return next((d for d in ancestors(path) if os.path.exists(os.path.join(d, ".git"))), None)


@dataclass(frozen=True)
class ModelDirLayout:
    path: str  # absolute form of what the user named
    root: str  # relpaths are relative to this
    kind: LayoutKind
    repo_dir: str | None = None  # cache repository folder
    revision: Revision | None = None  # the cache snapshot chosen
    git_top: str | None = None
    manifest: str | None = None  # the explicit manifest, else the in-tree one if present
