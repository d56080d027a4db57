"""git's ignore sources other than the work tree's ``.gitignore`` files, read here as data and
handed to git in the private ``info/exclude`` (git itself reads no global config)."""

from __future__ import annotations

import os
import stat

from ..fs.reader import read_regular
from .config import CONFIG_MAX, parse_config
from .errors import GitWouldBlock
from .files import INFO_MAX, describe


def exclude_file(own: bytes | None, values: dict[str, str], top: str) -> bytes | None:
    """The private ``info/exclude``: the repository's own (``own``), then its ``core.excludesFile``,
    then the auditing user's global ignore file; None when all are empty."""
    return b"\n".join(part for part in (own, _repo_excludes(values, top), _user_excludes()) if part) or None


def _user_excludes() -> bytes:
    """The auditing user's global ignore file (``core.excludesFile`` of their own git config, else
    ``$XDG_CONFIG_HOME/git/ignore``): theirs, so honoured, as data appended to ``info/exclude``
    (git itself runs with no global config)."""
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    path = os.path.join(xdg, "git", "ignore")
    for config in (os.path.join(xdg, "git", "config"), os.path.join(home, ".gitconfig")):  # the latter wins
        try:
            value = parse_config(read_regular(config, CONFIG_MAX).decode("utf-8", "replace")).get("core.excludesfile")
        except OSError:
            continue
        if value:
            path = os.path.join(home, value[2:]) if value.startswith("~/") else value
    try:
        return read_regular(path, INFO_MAX)
    except OSError:
        return b""


def _repo_excludes(values: dict[str, str], top: str) -> bytes:
    """The repository's own ``core.excludesFile``, when it is a regular file inside its work tree
    (data); one elsewhere is not read."""
    path = values.get("core.excludesfile", "")
    if not path:
        return b""
    path = path if os.path.isabs(path) else os.path.join(top, path)
    inside = os.path.normpath(path).startswith(os.path.join(os.path.normpath(top), ""))
    try:
        st = os.stat(path)  # never opens it
    except OSError:
        return b""
    if inside and not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        # Silently dropping it would list what it ignores as added files.
        raise GitWouldBlock(f"{path} (core.excludesFile) is {describe(path, os.lstat(path))}; the repository is not read")
    try:
        return read_regular(path, INFO_MAX, root=top)
    except OSError:
        return b""
