"""The private ``GIT_DIR`` git runs with, in a temporary directory outside the audited work tree:
a ``config`` of validated keys, the ``HEAD`` resolved here, copies of ``info/*``, and symlinks to
the real object directories (never ``objects/info``, so alternates are not followed)."""

from __future__ import annotations

import os
import shutil
import tempfile

from ..fs.reader import inside
from .errors import GitRefused
from .files import INFO_MAX, describe, read_optional

_FANOUT = frozenset(f"{i:02x}" for i in range(256))  # loose object directories


def git_dir(private: str) -> str:
    """The private GIT_DIR inside ``private`` (which also holds git's empty ``home``)."""
    return os.path.join(private, "git")


def make(top: str) -> str:
    """A new private directory for the repository whose work tree is ``top``; fill it with
    ``populate``, remove it with ``remove``."""
    return tempfile.mkdtemp(prefix="driftscan-git-", dir=_private_base(top))


def populate(private: str, real: str, config: dict[str, str], head: str | None, head_ref: str | None,
             info: dict[str, bytes | None], index: str) -> str:
    """Writes the private GIT_DIR for the real ``.git`` directory ``real``; returns the index git
    is to read: the real ``index``, else (none) an empty one in the private GIT_DIR."""
    os.makedirs(os.path.join(private, "home"))
    gd = git_dir(private)
    os.makedirs(os.path.join(gd, "refs"))
    os.makedirs(os.path.join(gd, "info"))
    _link_objects(os.path.join(real, "objects"), os.path.join(gd, "objects"))
    with open(os.path.join(gd, "config"), "w", encoding="utf-8") as f:
        sections: dict[str, list[str]] = {}
        for key, value in config.items():
            section, name = key.split(".", 1)
            sections.setdefault(section, []).append(f"\t{name} = {value}\n")
        for section, lines in sections.items():
            f.write(f"[{section}]\n{''.join(lines)}")
    with open(os.path.join(gd, "HEAD"), "w", encoding="ascii") as f:
        # Detached at the commit resolved here; an unborn branch stays unborn.
        f.write(f"{head}\n" if head else f"ref: {head_ref}\n")
    for name, data in info.items():
        if data is not None:
            with open(os.path.join(gd, "info", name), "wb") as f:
                f.write(data)
    if index:
        for name in os.listdir(real):  # a split index names its shared part by file name
            path = os.path.join(real, name)
            if name.startswith("sharedindex.") and os.path.isfile(path) and not os.path.islink(path):
                os.symlink(path, os.path.join(gd, name))
    return index or os.path.join(gd, "index")  # absent: an empty index


def remove(private: str) -> None:
    objects = os.path.join(git_dir(private), "objects")
    try:  # hundreds of symlinks: unlinked directly, shutil.rmtree costs ~20 us a file more
        for name in os.listdir(objects):
            os.unlink(objects + os.sep + name)
    except OSError:
        pass
    shutil.rmtree(private, ignore_errors=True)


def _private_base(top: str) -> str:
    """A temporary directory outside the audited work tree (git would list it as untracked)."""
    for base in ("/dev/shm", tempfile.gettempdir(), os.path.expanduser("~/.cache")):
        if os.path.isdir(base) and not inside(top, base):
            return base
    raise GitRefused(f"no temporary directory outside {top} for git's private configuration")


def _link_objects(real: str, private: str) -> None:
    """``private`` gets a symlink to each real object directory (loose fan-out and pack), and
    nothing of ``objects/info``: alternates and commit-graph chains are not followed."""
    alternates = read_optional(os.path.join(real, "info", "alternates"), INFO_MAX, "alternates")
    borrowed = [line for line in (alternates or b"").decode("utf-8", "replace").splitlines()
                if line.strip() and not line.startswith("#")]
    if borrowed:
        raise GitRefused(f"the repository borrows objects from {borrowed[0].strip()[:200]!r} "
                         "(objects/info/alternates): not followed")
    os.makedirs(private)
    into = private + os.sep
    with os.scandir(real) as entries:
        for entry in entries:
            if (entry.name in _FANOUT or entry.name == "pack") and entry.is_dir(follow_symlinks=False):
                os.symlink(entry.path, into + entry.name)
    pack = os.path.join(real, "pack")
    if os.path.isdir(pack) and not os.path.islink(pack):
        with os.scandir(pack) as entries:
            for entry in entries:
                if not entry.is_file(follow_symlinks=False):
                    raise GitRefused(f"{entry.path}: {describe(entry.path, entry.stat(follow_symlinks=False))}; "
                                     "the repository is not read")
