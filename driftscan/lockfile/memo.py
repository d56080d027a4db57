"""What a lockfile pins for one environment, remembered in the user cache between runs: parsing a
large ``uv.lock`` costs more than a warm audit of a small venv (65 ms of tomllib for 556 KB).

The memo is keyed by the lock's path and the marker environment, and trusted only while the lock
file's signature (size, mtime, ctime, inode, device) is the one it had when it was read, settled
by the racy-timestamp rule (caches/racy.py). It holds the selection alone — the required and
optional packages and the excluded names — never the lock's other packages: the ``Lock`` it gives
back has those as ``packages`` and no graph. A memo that does not read back whole, in every type,
is not used (it is the user cache's: data, never trusted for its shape)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from typing import Any

from ..caches.keys import cache_key
from ..caches.location import user_cache_dir, write_cache_file
from ..caches.racy import settled_stat, signature
from ..fs.reader import read_regular
from .model import Lock, LockedFile, LockedPackage, LockFormat, Selection, SourceKind
from .read import read_lock
from .select import select

VERSION = 1
MAX_MEMO = 64 << 20


def _path(lock: str, env: dict[str, str], groups: tuple[str, ...]) -> str:
    key = cache_key("selection", os.path.abspath(lock), env, *(("groups", *groups) if groups else ()))
    return os.path.join(user_cache_dir(), "locks", key[:32] + ".json")


def _package(p: LockedPackage) -> list[Any]:
    return [p.name, p.version, p.source.value, p.location, p.marker, p.optional,
            [[f.filename, f.url, f.sha256, f.size, f.is_wheel] for f in p.files]]


def _str(value: Any, none: bool = True) -> str | None:
    if isinstance(value, str) or (none and value is None):
        return value
    raise ValueError("not a string")


def _from_package(row: Any) -> LockedPackage:
    name, version, source, location, marker, optional, files = row
    if not isinstance(optional, bool) or not isinstance(files, list):
        raise ValueError("malformed")
    out = []
    for f in files:
        filename, url, sha256, size, is_wheel = f
        if not (size is None or type(size) is int) or not isinstance(is_wheel, bool):
            raise ValueError("malformed")
        out.append(LockedFile(_str(filename), _str(url), _str(sha256), size, is_wheel))
    return LockedPackage(_str(name, False) or "", _str(version), SourceKind(source), _str(location), tuple(out),
                         _str(marker), optional)


def _load(path: str, lock: str, known: list[int]) -> Selection | None:
    try:
        doc = json.loads(read_regular(path, MAX_MEMO, what="cache"))
        if not isinstance(doc, dict) or doc.get("version") != VERSION or doc.get("signature") != known \
                or doc.get("lock") != lock:
            return None
        required = {p.name: p for p in map(_from_package, doc["required"])}
        optional = {p.name: p for p in map(_from_package, doc["optional"])}
        excluded = doc["excluded"]
        notes = doc["notes"]
        if not isinstance(excluded, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                     for k, v in excluded.items()):
            return None
        if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
            return None
        kept = Lock(lock, LockFormat(doc["format"]), (*required.values(), *optional.values()),
                    _str(doc["requires_python"]), tuple(notes))
        return Selection(kept, required, optional, excluded)
    except (OSError, ValueError, TypeError, KeyError):
        return None


def select_remembered(lock: str, env: dict[str, str], use_cache: bool = True,
                      groups: Sequence[str] = ()) -> Selection:
    """``select(read_lock(lock), env, groups)``, from the memo when the lock is unchanged since it
    was remembered (a memo per set of groups). Raises what ``read_lock`` raises."""
    lock = os.path.abspath(lock)
    groups = tuple(sorted(set(groups)))
    if not use_cache:
        return select(read_lock(lock), env, groups)
    try:
        st = os.stat(lock)
    except OSError:
        return select(read_lock(lock), env, groups)  # read_lock says what is wrong, in its words
    path = _path(lock, env, groups)
    known = signature(st)
    found = _load(path, lock, known)
    if found is not None:
        return found
    started = time.time_ns()
    chosen = select(read_lock(lock), env, groups)
    try:
        unchanged = signature(os.stat(lock)) == known  # not rewritten while it was read
    except OSError:
        unchanged = False
    if unchanged and settled_stat(st, started):
        doc = {"version": VERSION, "lock": lock, "signature": known, "format": chosen.lock.format.value,
               "requires_python": chosen.lock.requires_python, "notes": list(chosen.lock.notes),
               "required": [_package(p) for p in chosen.required.values()],
               "optional": [_package(p) for p in chosen.optional.values()], "excluded": chosen.excluded}
        write_cache_file(path, json.dumps(doc).encode(), prefix=".lock-")  # unwritten: it only costs time
    return chosen
