"""HEAD, refs, ``packed-refs`` and HEAD's reflog, read here as data (never by git): HEAD resolved
to a commit, every ref copied into the private ``GIT_DIR`` when a name must be resolved."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..fs.reader import read_regular, walk
from .errors import GitRefused, NotARepository
from .files import read_optional

OBJECT_ID = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")  # sha1 or sha256, in hex
# A conservative subset of git's refname rules: nothing that could break a packed-refs line.
_REFNAME = re.compile(r"^refs/(?:[^\x00-\x20\x7f~^:?*\[\\]+)$")
REF_MAX = 4 << 10
PACKED_REFS_MAX = 256 << 20
REFLOG_MAX = 64 << 20
REFS_MAX = 200_000


@dataclass
class RefLogEntry:
    old: str
    new: str
    time: int


def valid_ref(name: str) -> bool:
    """A ref name safe to use as a path under .git and as a packed-refs line."""
    parts = name.split("/")
    return bool(_REFNAME.match(name)) and not name.endswith((".lock", "/", ".")) and "@{" not in name and all(
        p and not p.startswith(".") for p in parts)


def resolve_head(git_dir: str, data: bytes) -> tuple[str | None, str | None]:
    """(commit, ref) HEAD names, following symbolic refs here (loose file, then packed-refs)."""
    text = data.decode("ascii", "replace").strip()
    ref = None
    packed: dict[str, str] | None = None
    for _ in range(5):
        if OBJECT_ID.match(text):
            return text, ref
        if not text.startswith("ref: ") or not valid_ref(text[5:].strip()):
            raise NotARepository(f"not a git repository: {os.path.join(git_dir, 'HEAD')} is not a valid HEAD")
        name = text[5:].strip()
        ref = ref or name
        loose = read_optional(os.path.join(git_dir, *name.split("/")), REF_MAX, "git ref")
        if loose is not None:
            text = loose.decode("ascii", "replace").strip()
            continue
        if packed is None:
            packed = {}
            raw = read_optional(os.path.join(git_dir, "packed-refs"), PACKED_REFS_MAX, "packed-refs")
            for line in (raw or b"").decode("utf-8", "replace").splitlines():
                sha, _, refname = line.partition(" ")
                if OBJECT_ID.match(sha):
                    packed[refname] = sha
        return packed.get(name), ref
    return None, ref


def read_reflog(git_dir: str) -> list[RefLogEntry]:
    """HEAD's reflog, read here (oldest first); empty when there is none or it is unreadable."""
    try:
        data = read_optional(os.path.join(git_dir, "logs", "HEAD"), REFLOG_MAX, "reflog")
    except GitRefused:
        return []
    entries = []
    for line in (data or b"").decode("utf-8", "replace").splitlines():
        meta = line.split("\t", 1)[0]
        parts = meta.split(" ", 2)
        tail = meta.rsplit(" ", 2)
        if len(parts) < 3 or len(tail) < 3 or not tail[1].isdigit():
            continue
        entries.append(RefLogEntry(parts[0], parts[1], int(tail[1])))
    return entries


def copy_refs(git_dir: str, into: str) -> None:
    """Every ref of the repository at ``git_dir`` into the private GIT_DIR ``into``, read here as
    data: direct refs into ``packed-refs``, symbolic ones as loose files."""
    direct: dict[str, str] = {}
    symbolic: dict[str, str] = {}
    packed = read_optional(os.path.join(git_dir, "packed-refs"), PACKED_REFS_MAX, "packed-refs")
    for line in (packed or b"").decode("utf-8", "replace").splitlines():
        sha, _, name = line.partition(" ")
        if OBJECT_ID.match(sha) and valid_ref(name):
            direct[name] = sha
    base = os.path.join(git_dir, "refs")
    count = 0
    for dirpath, _dirnames, filenames in walk(base):  # does not follow symlinked directories
        for name in filenames:
            path = os.path.join(dirpath, name)
            ref = "refs/" + os.path.relpath(path, base).replace(os.sep, "/")
            count += 1
            if count > REFS_MAX or not valid_ref(ref) or ref.endswith(".lock"):
                continue
            try:
                value = read_regular(path, REF_MAX, what="git ref", follow=False).decode("ascii").strip()
            except (OSError, UnicodeDecodeError):
                continue  # a symlink, FIFO or garbage is not a ref
            if OBJECT_ID.match(value):
                direct[ref] = value
                symbolic.pop(ref, None)
            elif value.startswith("ref: ") and valid_ref(value[5:]):
                symbolic[ref] = value[5:]
                direct.pop(ref, None)
    with open(os.path.join(into, "packed-refs"), "w", encoding="utf-8") as f:
        f.writelines(f"{sha} {name}\n" for name, sha in sorted(direct.items()) if name not in symbolic)
    for name, target in symbolic.items():
        path = os.path.join(into, *name.split("/"))
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(f"ref: {target}\n")
        except OSError:
            continue  # a name that clashes with a directory: git would not have it either
