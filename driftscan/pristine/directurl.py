"""The wheel direct_url.json names: the tree chooses this path, so it is read with suspicion.

Only a ``file://`` URL of an absolute local path ending in ``.whl`` is considered; the file is
opened only if it is a regular file (type checked before the open, which is non-blocking, and
again on the descriptor), of bounded size; when pip recorded the archive's hash the whole file
must match it. Its content is used only where it hashes to what RECORD says.
"""

from __future__ import annotations

import json
import os

import re
import urllib.parse
from typing import Any

from ..caches.location import write_cache_file
from ..caches.statcache import user_cache_dir
from ..core.values import Distribution
from ..formats.directurl import archive_hashes  # noqa: F401 - re-exported: its readers import it from here
from ..formats.record import new_hash
from ..fs.reader import read_regular
from .base import CHUNK, Rejected, SourceKind, error_text
from .wheel import MAX_WHEEL, ZipCopy, open_file, wheel_members_error

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def wheel_path(direct_url: Any) -> tuple[str | None, str]:
    """The local wheel path a direct_url.json value names, or (None, why not)."""
    if direct_url is None:
        return None, "no direct_url.json"
    if not isinstance(direct_url, dict):
        return None, f"direct_url.json is not an object but {type(direct_url).__name__}"
    url = direct_url.get("url")
    if not isinstance(url, str):
        return None, "direct_url.json has no url string"
    if "dir_info" in direct_url or "vcs_info" in direct_url:
        return None, "direct_url.json names a directory or a repository, not a wheel"
    if _CONTROL.search(url) or len(url) > 4096:
        return None, "direct_url.json's url has control characters or is too long"
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return None, "direct_url.json's url is not a URL"
    if parts.scheme.lower() != "file":
        return None, f"direct_url.json's url is not a local file:// URL (scheme {parts.scheme or 'none'!r})"
    if parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
        return None, "direct_url.json's file URL names a host, a query or a fragment"
    path = urllib.parse.unquote(parts.path)
    if not path.startswith("/") or "\0" in path:
        return None, "direct_url.json's file URL is not an absolute path"
    if not path.endswith(".whl"):
        return None, "direct_url.json's file URL is not a wheel (.whl)"
    return path, ""


def open_direct_url(dist: Distribution) -> tuple[ZipCopy | Rejected | None, str]:
    """The wheel direct_url.json names (a ZipCopy), a Rejected when it is there but unusable,
    or None with why there is nothing to try; the second value is a note for the reason."""
    path, why = wheel_path(dist.direct_url)
    if path is None:
        return None, why
    assert isinstance(dist.direct_url, dict)
    digests, bad = archive_hashes(dist.direct_url)
    if digests is None:
        return Rejected(SourceKind.DIRECT_URL, path, bad or "bad archive hash"), ""
    # The tree wrote this path: a wheel reached through a symlink (one it may have planted to point
    # at a file of someone else's) is not opened at all.
    if os.path.realpath(path) != os.path.normpath(path):
        return Rejected(SourceKind.DIRECT_URL, path, "reached through a symlink: not opened"), ""
    try:
        file, size = open_file(path, follow=False, max_size=MAX_WHEEL)
    except FileNotFoundError:
        return None, f"the wheel direct_url.json names is gone ({path})"
    except OSError as exc:
        return Rejected(SourceKind.DIRECT_URL, path, f"not usable: {error_text(exc)}"), ""
    try:
        signature = _signature(os.fstat(file.fileno()))
        if digests and _known(path, signature, digests):
            pass  # hashed before, unchanged since (same inode, size, mtime and ctime)
        elif digests:
            hashers = {a: new_hash(a) for a in digests}
            left = size  # what fstat said: a file that grows while it is read is not followed
            while left > 0 and (chunk := file.read(min(CHUNK, left))):
                left -= len(chunk)
                for hasher in hashers.values():
                    hasher.update(chunk)
            for algorithm, hasher in hashers.items():
                if hasher.digest() != digests[algorithm]:
                    file.close()
                    return Rejected(SourceKind.DIRECT_URL, path,
                                    f"the wheel's {algorithm} differs from the one direct_url.json recorded at "
                                    "install: it was replaced or edited"), ""
            _remember(path, signature, digests)
        copy = ZipCopy(SourceKind.DIRECT_URL, path, dist, file, size)
    except Exception as exc:  # noqa: BLE001 - a corrupt or hostile file is a reason, never a crash
        file.close()
        return Rejected(SourceKind.DIRECT_URL, path, wheel_members_error(exc)), ""
    if not digests:
        copy.note = "direct_url.json recorded no archive hash (uv writes none): each file is verified against RECORD"
    return copy, ""


# A wheel's whole-file digest, remembered by its signature: a drifted venv installed from a local
# 800 MB torch wheel would otherwise pay for hashing it on every audit. The same trust as the stat
# cache (docs/performance.md): a file rewritten in place keeps none of inode, size, mtime and ctime.
def _memo_path() -> str:
    return os.path.join(user_cache_dir(), "pristine", "archive-digests.json")


def _signature(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _load_memo() -> dict[str, Any]:
    try:
        memo = json.loads(read_regular(_memo_path(), 16 << 20, what="cache"))
    except (OSError, ValueError):
        return {}
    return memo if isinstance(memo, dict) else {}


def _known(path: str, signature: str, digests: dict[str, bytes]) -> bool:
    row = _load_memo().get(path)
    return isinstance(row, dict) and row.get("signature") == signature and \
        all(row.get(a) == d.hex() for a, d in digests.items())


def _remember(path: str, signature: str, digests: dict[str, bytes]) -> None:
    memo = _load_memo()
    memo[path] = {"signature": signature, **{a: d.hex() for a, d in digests.items()}}
    if len(memo) > 4096:  # keep the newest entries
        memo = dict(list(memo.items())[-4096:])
    write_cache_file(_memo_path(), json.dumps(memo).encode(), prefix=".memo-")  # unwritten: it only costs time
