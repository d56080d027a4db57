"""driftscan manifests: a snapshot of a directory that later audits compare against.

Format (``manifest_version`` "1")::

    {"manifest_version": "1", "tool": "driftscan", "created": "2026-01-01T00:00:00+00:00",
     "root": "/abs/dir",
     "files": {"config.json": {"xxh3_128": "<32 hex>", "size": 1234, "mode": 33188,
                               "mtime_ns": 1700000000000000000, "text": "{...}"},
               "model.safetensors": {...},
               "link": {..., "link": "../target"}}}

``mode`` is the full ``st_mode`` of the file (symlinks followed); ``link`` is present only when
the path was a symlink. A symlink to a directory, a dangling one, and one whose target is outside
the tree (a venv's ``bin/python``) are recorded by their target only: the hash is of the target
string, ``mode`` the link's own — what a tree points at elsewhere is never read, so a snapshot
cannot carry a copy of a file outside it. ``text`` embeds small text files (configs, tokenizer
settings, and in a model directory its code too) so an audit can say *what* changed, not only
*that* it changed. xxh3-128 is used because it runs at memory speed: a manifest of a multi-TB
checkpoint is limited by the disk, not the hash.

The tree walk and the list of bookkeeping paths live here too, so that a manifest written by
``driftscan snapshot`` and an audit against it agree on what belongs to the directory.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import xxhash

from .atomic import write_atomic
from .errors import DriftscanError
from .fileio import LIMITS, ByteProgress, NOFOLLOW, READ_FLAGS, check_inside, inside, map_by_size, read_pieces, read_regular, walk_relative
from .jsondiff import as_text
from .model import Problem
from .paths import printable

MANIFEST_NAME = ".driftscan-manifest.json"
MANIFEST_VERSION = "1"
EMBED_LIMIT = 64 << 10
TEXT_SUFFIXES = (".json", ".txt", ".yaml", ".yml", ".md", ".py", ".jinja", ".toml", ".cfg", ".ini", ".csv")
TEXT_NAMES = (".gitattributes", ".gitignore", "LICENSE", "README", "NOTICE")
# A model repository's code is part of its configuration (custom modeling files), a venv's is
# not: embedding every .py of a 40,000-file venv made a 168 MB snapshot and 0.8 GB of memory.
CODE_SUFFIXES = (".py",)
MAX_TREE_MANIFEST = 64 << 20  # a model directory's own manifest: a few hundred files, a few MB
MAX_MANIFEST = LIMITS["manifest"]  # embedded text is capped per file; a larger manifest is not one of ours



class ManifestError(DriftscanError):
    """A manifest that cannot be used; ``issues`` lists every problem found, not just the first."""

    def __init__(self, path: str, issues: list[str]):
        self.path = path
        self.issues = list(issues)
        super().__init__(f"{printable(path)}: " + "; ".join(self.issues))


@dataclass(frozen=True)
class ManifestEntry:
    xxh3_128: str
    size: int
    mode: int
    mtime_ns: int
    text: str | None = None
    link: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"xxh3_128": self.xxh3_128, "size": self.size, "mode": self.mode,
                                "mtime_ns": self.mtime_ns}
        if self.text is not None:
            data["text"] = self.text
        if self.link is not None:
            data["link"] = self.link
        return data


@dataclass(frozen=True)
class Manifest:
    path: str
    root: str
    created: str
    files: dict[str, ManifestEntry] = field(default_factory=dict)
    tool: str = "driftscan"


# ---- what belongs to a directory -------------------------------------------------------------

def is_bookkeeping(relpath: str) -> bool:
    """Download and version-control bookkeeping, never model content: not hashed, never "added"."""
    parts = relpath.split("/")
    return (relpath == MANIFEST_NAME or ".git" in parts
            or (len(parts) >= 2 and parts[0] == ".cache" and parts[1] == "huggingface"))


def walk_tree(root: str) -> tuple[list[str], list[Problem]]:
    """Every non-directory entry under ``root`` (symlinks not followed), sorted, bookkeeping left out."""
    return walk_relative(root, skip=is_bookkeeping)


def is_text_name(relpath: str, code: bool = True) -> bool:
    """Whether a file of this name is embedded when small: configs always, code if ``code``."""
    name = relpath.rsplit("/", 1)[-1]
    if not code and name.lower().endswith(CODE_SUFFIXES):
        return False
    return name.lower().endswith(TEXT_SUFFIXES) or name in TEXT_NAMES


# ---- building ----------------------------------------------------------------------------------

def link_only_entry(path: str, target: str) -> ManifestEntry:
    """A symlink to a directory, or a dangling one: only its target can be recorded."""
    st = os.lstat(path)
    raw = target.encode("utf-8", "surrogateescape")
    return ManifestEntry(xxhash.xxh3_128(raw).hexdigest(), len(raw), st.st_mode, st.st_mtime_ns, None, target)


def is_link_only(entry: ManifestEntry) -> bool:
    return stat.S_ISLNK(entry.mode)


def _entry(root: str, relpath: str, embed_limit: int, counter: Callable[[int], None],
           embed_code: bool = True, contain: str | None = None) -> ManifestEntry:
    path = os.path.join(root, relpath)
    st = os.lstat(path)
    link = None
    if stat.S_ISLNK(st.st_mode):
        link = os.readlink(path)
        real = os.path.realpath(path)
        if not os.path.isfile(real) or not inside(contain or root, real):
            # e.g. a venv's lib64 -> lib; and a link out of the tree (bin/python -> /usr/bin/python3):
            # only its target is recorded, its content is not the tree's and is never read.
            return link_only_entry(path, link)
        path, st = real, os.stat(real)  # a link inside the tree: its content is recorded
    if not stat.S_ISREG(st.st_mode):  # known before the open: a device node is never opened
        raise OSError(errno.EINVAL, f"not a regular file ({stat.filemode(st.st_mode)})")
    # O_NOFOLLOW: a file swapped for a symlink since the lstat is refused, not followed out.
    fd = os.open(path, READ_FLAGS | NOFOLLOW)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, f"not a regular file ({stat.filemode(st.st_mode)})")
        hasher = xxhash.xxh3_128()
        keep = st.st_size <= embed_limit and is_text_name(relpath, embed_code)
        kept = bytearray()
        for piece in read_pieces(fd, st.st_size):
            hasher.update(piece)
            counter(len(piece))
            if keep:
                kept += piece
    finally:
        os.close(fd)
    text = as_text(bytes(kept)) if keep and len(kept) <= embed_limit else None
    return ManifestEntry(hasher.hexdigest(), st.st_size, st.st_mode, st.st_mtime_ns, text, link)


def build_manifest(root: str, *, embed_limit: int = EMBED_LIMIT, embed_code: bool = True, jobs: int = 2,
                   progress: Callable[[int, int], None] | None = None,
                   on_error: Callable[[Problem], None] | None = None,
                   contain: str | None = None) -> Iterator[tuple[str, ManifestEntry]]:
    """Hash every file under ``root`` (in ``jobs`` threads); yield ``(relpath, entry)`` sorted by path.

    A symlink whose target is outside ``contain`` (default ``root``; a hub cache snapshot's is its
    repository folder) is recorded by its target only. Files that cannot be read go to
    ``on_error``; without it, a ManifestError listing them all is raised after the walk (a
    manifest silently missing files would later call them "added").
    """
    root = os.path.abspath(root)
    contain = os.path.abspath(contain) if contain else root
    relpaths, problems = walk_tree(root)
    sizes = {}
    for rel in relpaths:
        path = os.path.join(root, rel)
        try:
            # What will be hashed: a link out of the tree is not (its target's size is not ours).
            st: os.stat_result | None = os.lstat(path)
            if st is not None and stat.S_ISLNK(st.st_mode):
                st = os.stat(path) if inside(contain, path) else None
            sizes[rel] = st.st_size if st is not None else 0
        except OSError:
            sizes[rel] = 0
    meter = ByteProgress(progress, sum(sizes.values()))  # called from the hashing threads, one at a time

    def one(rel: str) -> tuple[str, ManifestEntry | None, str]:
        try:
            return rel, _entry(root, rel, embed_limit, meter.add, embed_code, contain), ""
        except OSError as exc:
            return rel, None, exc.strerror or str(exc)

    for rel, (_, entry, error) in zip(relpaths, map_by_size(one, relpaths, [sizes[r] for r in relpaths], jobs)):
        if entry is not None:
            yield rel, entry
        else:
            problems.append(Problem(os.path.join(root, rel), f"cannot read: {error}"))
    if on_error is not None:
        for problem in problems:
            on_error(problem)
    elif problems:
        raise ManifestError(root, [f"{printable(p.path)}: {p.message}" for p in problems])


def write_manifest(root: str, files_iter: Iterable[tuple[str, ManifestEntry]], output: str) -> Manifest:
    """Write a manifest atomically (temp file in the same directory, then ``os.replace``)."""
    root = os.path.abspath(root)
    files = dict(files_iter)
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    doc = {"manifest_version": MANIFEST_VERSION, "tool": "driftscan", "created": created, "root": root,
           "files": _LazyJson(files)}
    write_atomic(output, json_lines(doc), mode=0o644)
    return Manifest(os.path.abspath(output), root, created, files)


class _LazyJson(dict):
    """The manifest's files, each turned into its JSON form only when written."""

    def __getitem__(self, key):
        return super().__getitem__(key).to_json()


def json_lines(doc: dict[str, Any], nested: str = "files") -> Iterator[str]:
    """``doc`` as JSON, in pieces, with keys sorted and one member of ``doc[nested]`` per line,
    every piece written by json's C encoder (``indent=`` takes the pure-Python one: 1 s for
    40,000 files). ASCII escapes keep undecodable names intact."""
    yield "{\n"
    keys = sorted(doc)
    for i, key in enumerate(keys):
        comma = "," if i < len(keys) - 1 else ""
        value = doc[key]
        if key == nested and isinstance(value, dict) and value:
            yield f" {json.dumps(key)}: {{\n"
            members = sorted(value)
            for m in members[:-1]:
                yield f"  {json.dumps(m)}: {json.dumps(value[m], sort_keys=True)},\n"
            yield f"  {json.dumps(members[-1])}: {json.dumps(value[members[-1]], sort_keys=True)}\n"
            yield f" }}{comma}\n"
        else:
            yield f" {json.dumps(key)}: {json.dumps(value, sort_keys=True)}{comma}\n"
    yield "}\n"


# ---- reading -----------------------------------------------------------------------------------

def _check_relpath(rel: str) -> str | None:
    if not rel or rel.startswith("/") or "\\" in rel or not _os_string(rel):
        return "is not a relative '/'-separated path"
    if any(part in ("", ".", "..") for part in rel.split("/")):
        return "has an empty, '.' or '..' component"
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_HEX32 = re.compile(r"[0-9a-f]{32}")


MAX_ISSUES = 20


def _shown(value: str, limit: int = 120) -> str:
    return repr(value) if len(value) <= limit else repr(value[:limit]) + "…"


def _value(value: Any) -> str:
    """A value from the document, for an error message: short, and never a recursive repr."""
    if isinstance(value, str):
        return _shown(value)
    if value is None or isinstance(value, (int, float)):
        return repr(value)
    return f"a JSON {'object' if isinstance(value, dict) else 'array' if isinstance(value, list) else 'value'}"


def _short(exc: BaseException) -> str:
    """An error message for one line: RecursionError's says nothing a user can act on."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc)


def _os_string(value: str) -> bool:
    """Whether a path or link target from a manifest can be handed to the OS: lone surrogates
    other than os.fsdecode's escapes (U+DC80..U+DCFF), and NUL, cannot."""
    if "\0" in value:
        return False
    try:
        value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return False
    return True


def _utf8(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _entry_from(rel: str, raw: Any, issues: list[str]) -> ManifestEntry | None:
    where = f"files[{_shown(rel)}]"
    if not isinstance(raw, dict):
        issues.append(f"{where} is not an object")
        return None
    before = len(issues)
    digest: Any = raw.get("xxh3_128")
    if not (isinstance(digest, str) and _HEX32.fullmatch(digest)):
        issues.append(f"{where}.xxh3_128 is not 32 lowercase hex digits")
    for key, bound in (("size", 1 << 63), ("mode", 1 << 32), ("mtime_ns", 1 << 63)):
        # Bounded as the OS's own fields are: stat.S_IFMT and float() refuse larger ones.
        if not _is_int(raw.get(key)) or not 0 <= raw[key] < bound:
            issues.append(f"{where}.{key} is not an integer from 0 to {bound - 1}")
    for key in ("text", "link"):
        if key in raw and not isinstance(raw[key], str):
            issues.append(f"{where}.{key} is not a string")
    if isinstance(raw.get("text"), str) and not _utf8(raw["text"]):
        issues.append(f"{where}.text is not valid Unicode text (lone surrogates)")
    if isinstance(raw.get("link"), str) and not _os_string(raw["link"]):
        issues.append(f"{where}.link is not a path the OS can take")
    if len(issues) > before:
        return None
    return ManifestEntry(digest, raw["size"], raw["mode"], raw["mtime_ns"], raw.get("text"), raw.get("link"))


def read_manifest(path: str, doc: Any = None, *, root: str | None = None) -> Manifest:
    """Read and validate a manifest; raises ManifestError listing every problem found.
    ``doc``: the file's JSON, if the caller has parsed it already. ``root``: for a manifest found
    in an audited tree, the directory it must not lead out of (a symlink elsewhere is not read).

    The last few manifests read are kept, keyed by the file's identity (device, inode, size,
    mtime): ``diff`` asks for the same one as a snapshot and again as a model directory's
    reference, and a 40,000-file manifest takes ~0.4 s to parse and check."""
    if root is not None:
        try:
            check_inside(root, path)  # before the memo: it may hold what a user named through this path
        except OSError as exc:
            raise ManifestError(path, [f"cannot read: {exc.strerror or exc}"]) from None
    try:
        st = os.stat(path)
        key = (os.path.abspath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    except OSError:
        key = None
    if key is not None and key in _READ:
        return _READ[key]
    if doc is None:
        try:
            # One found in the tree is the tree's: it may not make the audit parse a GiB of JSON.
            limit, what = (MAX_MANIFEST, "manifest") if root is None else (MAX_TREE_MANIFEST, "manifest in a tree")
            data = read_regular(path, limit, what=what, root=root)
        except OSError as exc:
            raise ManifestError(path, [f"cannot read: {exc.strerror or exc}"]) from None
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise ManifestError(path, [f"not valid JSON: {_short(exc)}"]) from None
    manifest = manifest_from(path, doc)
    if key is not None:
        while len(_READ) >= 2:
            _READ.pop(next(iter(_READ)))
        _READ[key] = manifest
    return manifest


_READ: dict[tuple, Manifest] = {}


def manifest_from(path: str, doc: Any) -> Manifest:
    """Validate a parsed manifest document (read from ``path``); raises ManifestError."""
    if not isinstance(doc, dict):
        raise ManifestError(path, ["not a JSON object"])
    issues: list[str] = []
    if doc.get("manifest_version") != MANIFEST_VERSION:
        issues.append(f"manifest_version is {_value(doc.get('manifest_version'))}, this driftscan reads"
                      f" {MANIFEST_VERSION!r}")
    if doc.get("tool") != "driftscan":
        issues.append(f"tool is {_value(doc.get('tool'))}, not 'driftscan'")
    for key in ("created", "root"):
        if not isinstance(doc.get(key), str):
            issues.append(f"{key} is missing or not a string")
    if isinstance(doc.get("created"), str) and not (len(doc["created"]) <= 64 and doc["created"].isprintable()):
        issues.append(f"created {_shown(doc['created'], 64)} is not a timestamp")  # it is quoted in evidence
    if isinstance(doc.get("root"), str) and not (_os_string(doc["root"]) and os.path.isabs(doc["root"])):
        issues.append("root is not an absolute path the OS can take")
    raw_files = doc.get("files")
    files: dict[str, ManifestEntry] = {}
    if not isinstance(raw_files, dict):
        issues.append("files is missing or not an object")
    else:
        for rel, raw in raw_files.items():
            bad = _check_relpath(rel)
            if bad:
                issues.append(f"files key {_shown(rel)} {bad}")
                continue
            entry = _entry_from(rel, raw, issues)
            if entry is not None:
                files[rel] = entry
    if issues:
        if len(issues) > MAX_ISSUES:  # one line for the CLI, not one per hostile entry
            issues = issues[:MAX_ISSUES] + [f"{len(issues) - MAX_ISSUES} more problems"]
        raise ManifestError(path, issues)
    return Manifest(os.path.abspath(path), doc["root"], doc["created"], files, doc["tool"])
