"""pip's HTTP cache (``<cache>/http-v2/**/<sha224>.body``) as a source of wheels.

Since pip 23.3 a cached response body is a file of its own, byte for byte what was downloaded:
for a wheel, the wheel (docs/pristine-sources.md). Bodies are named by a hash of their URL, so
which wheel each is comes from its zip central directory alone — the end record at the file's
end, then the directory, bounded; nothing is decompressed to index. The index is kept in
driftscan's user cache, keyed by each cache directory's signature: an unchanged directory is
not listed again, and an unchanged body is never opened again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..caches.location import write_cache_file
from ..caches.racy import RACY_NS  # a directory changed this recently is listed again next time
from ..caches.statcache import user_cache_dir
from ..fs.reader import LIMITS, read_regular
from ..core.values import Distribution
from .base import Rejected, SourceKind
from .names import canonical_version, normalize_name
from .wheel import (
    MAX_WHEEL,
    ZipCopy,
    central_directory,
    member_names,
    open_file,
    open_wheel,
    wheel_members_error,
)

FORMAT = "driftscan-pip-http-v2-index-1"
# One directory of the index, as JSON keeps it: [signature ("" when incomplete), subdirectories,
# {body name: [body signature, name, version] or [body signature]}].
_Listing = list[Any]
MAX_INDEXED = 5000  # bodies whose central directory one run reads (the rest wait for the next run)
CD_INDEX_CAP = 16 << 20  # bytes of one central directory read for the index
MAX_DIRS = 500_000  # directories of the cache looked at
MAX_DEPTH = 8  # pip's http-v2 is five levels deep
_RECORD = re.compile(r"([^/]+)-([^/]+)\.dist-info/RECORD")
_LOCAL_HEADER = b"PK\x03\x04"


def default_pip_cache(env: dict[str, str] | None = None) -> str | None:
    """PIP_CACHE_DIR, else pip's platform default ($XDG_CACHE_HOME/pip or ~/.cache/pip on Linux)."""
    env = dict(os.environ) if env is None else env
    if env.get("PIP_CACHE_DIR"):
        return os.path.abspath(os.path.expanduser(env["PIP_CACHE_DIR"]))
    if sys.platform == "win32":
        base = env.get("LOCALAPPDATA")
        return os.path.join(base, "pip", "Cache") if base else None
    home = env.get("HOME") or os.path.expanduser("~")
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Caches", "pip") if home != "~" else None
    if env.get("XDG_CACHE_HOME"):
        return os.path.join(env["XDG_CACHE_HOME"], "pip")
    return os.path.join(home, ".cache", "pip") if home != "~" else None


def index_file(root: str) -> str:
    name = hashlib.sha256(os.path.realpath(root).encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return os.path.join(user_cache_dir(), "pristine", f"pip-http-v2-{name}.json")


def _dir_signature(st: os.stat_result) -> str:
    if time.time_ns() - st.st_mtime_ns < RACY_NS:
        return ""  # it may still change within its timestamp's tick: list it again next time
    return f"{st.st_mtime_ns}:{st.st_ino}:{st.st_size}"


def _file_signature(st: os.stat_result) -> str:
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"


def _plain(name: object) -> bool:
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\0" not in name


def _index_body(path: str) -> list[str] | None:
    """[normalized name, canonical version] of the wheel a body is, from its central directory
    only; None for any other body (an index page, an sdist)."""
    file, size = open_file(path, follow=False, max_size=MAX_WHEEL)
    with file:
        if file.read(4) != _LOCAL_HEADER:
            return None  # not a zip: JSON and HTML index pages, tarballs
        for name in member_names(central_directory(file, size, CD_INDEX_CAP)):
            match = _RECORD.fullmatch(name)
            if match and "/" not in match[1]:
                return [normalize_name(match[1]), canonical_version(match[2])]
    return None


class PipCacheIndex:
    """Which ``.body`` files of one pip cache are which wheels."""

    def __init__(self, cache_dir: str, progress: Callable[[str], None] | None = None) -> None:
        self.cache_dir = cache_dir
        self.root = os.path.join(cache_dir, "http-v2")
        self.path = index_file(self.root)
        self.progress = progress
        self.indexed = 0  # bodies opened by the last refresh
        self.incomplete = False  # the last refresh hit a cap
        self._by_key: dict[tuple[str, str], list[str]] | None = None

    def _load(self) -> dict[str, _Listing]:
        try:
            data = json.loads(read_regular(self.path, LIMITS["cache"], what="cache"))
        except (OSError, ValueError, RecursionError):
            return {}
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("root") != self.root \
                or not isinstance(data.get("dirs"), dict):
            return {}
        # Only names that stay inside the cache: the file is ours, but is read like any other
        return {rel: [entry[0], [d for d in entry[1] if _plain(d)],
                      {b: v for b, v in entry[2].items() if _plain(b) and b.endswith(".body")}]
                for rel, entry in data["dirs"].items()
                if isinstance(rel, str) and (rel == "" or all(_plain(p) for p in rel.split("/")))
                and isinstance(entry, list) and len(entry) == 3
                and isinstance(entry[0], str) and isinstance(entry[1], list) and isinstance(entry[2], dict)}

    def _save(self, dirs: dict[str, _Listing]) -> None:
        write_cache_file(self.path, json.dumps({"format": FORMAT, "root": self.root, "dirs": dirs},
                                               separators=(",", ":")).encode(), prefix=".pipcache-")  # only a cache

    def refresh(self) -> None:
        self.indexed, self.incomplete = 0, False
        old = self._load()
        dirs: dict[str, _Listing] = {}
        stack = [""]
        changed = False
        while stack:
            rel = stack.pop()
            if len(dirs) >= MAX_DIRS:
                self.incomplete = True
                break
            path = os.path.join(self.root, *rel.split("/")) if rel else self.root
            try:
                st = os.lstat(path) if rel else os.stat(path)  # no link followed inside the cache
            except OSError:
                changed = changed or rel in old
                continue
            if not stat.S_ISDIR(st.st_mode):
                continue
            known = old.get(rel)
            signature = _dir_signature(st)
            if known is not None and signature and known[0] == signature:
                dirs[rel] = known
                stack.extend(f"{rel}/{d}" if rel else d for d in known[1] if isinstance(d, str))
                continue
            changed = True
            dirs[rel] = entry = self._list(path, rel, signature, known[2] if known else {})
            stack.extend(f"{rel}/{d}" if rel else d for d in entry[1])
        if changed or set(dirs) != set(old):
            self._save(dirs)
        by_key: dict[tuple[str, str], list[str]] = {}
        for rel, (_, _, bodies) in sorted(dirs.items()):
            for name, body in sorted(bodies.items()):
                if isinstance(body, list) and len(body) == 3 and all(isinstance(x, str) for x in body):
                    by_key.setdefault((body[1], body[2]), []).append(os.path.join(self.root, *rel.split("/"), name)
                                                                     if rel else os.path.join(self.root, name))
        self._by_key = by_key

    def _list(self, path: str, rel: str, signature: str, known: dict[str, Any]) -> _Listing:
        subdirs: list[str] = []
        bodies: dict[str, list[str]] = {}
        complete = True
        try:
            with os.scandir(path) as entries:
                for e in entries:
                    if e.is_dir(follow_symlinks=False):
                        if rel.count("/") + 1 < MAX_DEPTH:
                            subdirs.append(e.name)
                    elif e.name.endswith(".body") and e.is_file(follow_symlinks=False):
                        try:
                            body_sig = _file_signature(e.stat(follow_symlinks=False))
                        except OSError:  # gone since the listing (pip cache remove)
                            continue
                        before = known.get(e.name)
                        if isinstance(before, list) and before[:1] == [body_sig]:
                            bodies[e.name] = before
                        elif self.indexed >= MAX_INDEXED:
                            self.incomplete = True
                            complete = False
                        else:
                            self.indexed += 1
                            if self.progress is not None and self.indexed % 500 == 1:
                                done = f": {self.indexed - 1} bodies read" if self.indexed > 1 else ""
                                self.progress(f"indexing pip's cache {self.cache_dir}{done}")
                            try:
                                found = _index_body(e.path)
                            except (OSError, ValueError, EOFError):
                                found = None
                            bodies[e.name] = [body_sig, *found] if found else [body_sig]
        except OSError:
            complete = False
        return [signature if complete else "", sorted(subdirs), bodies]

    def bodies(self, dist: Distribution) -> list[str]:
        if self._by_key is None:
            self.refresh()
        assert self._by_key is not None
        return list(self._by_key.get((normalize_name(dist.name), canonical_version(dist.version)), []))

    def candidates(self, dist: Distribution, notes: list[str]) -> Iterator[ZipCopy | Rejected]:
        paths = self.bodies(dist)
        if not paths:
            where = f"no {dist.name} {dist.version} wheel among its http-v2 bodies"
            if not os.path.isdir(self.root):
                where = "no http-v2 directory" + (" (only pip < 23.3's http/, whose header-framed entries are not "
                                                   "read)" if os.path.isdir(os.path.join(self.cache_dir, "http")) else "")
            elif self.incomplete:
                where += f" (indexed {MAX_INDEXED} new bodies this run; the rest next time)"
            notes.append(f"pip's cache {self.cache_dir} ({where})")
            return
        for path in paths:
            try:
                yield open_wheel(path, SourceKind.PIP_CACHE, dist, follow=False)
            except Exception as exc:  # noqa: BLE001 - a body that changed or is corrupt is a reason
                yield Rejected(SourceKind.PIP_CACHE, path, wheel_members_error(exc))
