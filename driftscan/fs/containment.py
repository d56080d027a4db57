"""The read boundary: where an audit may read, and where it may follow a symlink (``Containment``).

Everything the audited tree names (a RECORD row, a symlink) is checked here before it is opened:
only paths under the environment's roots, by their real location, are read; symlinks are followed
only to those roots or to caches driftscan knows from its own flags. ``environment.target`` builds one
for a target (``containment_for``).
"""

from __future__ import annotations

import errno
import os
import stat


_UNSET = "\0not decided"  # a verdict no path can have (a NUL): the memo's "no entry"


class Containment:
    """Where an audit may read, and where it may follow a symlink.

    Reads: only under the environment's roots (``environment_roots``), by their real location:
    a RECORD row ``/etc/shadow`` or ``../../../../etc/shadow``, or a path through a symlinked
    directory that leaves the roots, is refused. Symlinks are followed only to a place under the
    roots or under ``link_roots``: caches driftscan knows from its own flags and environment (uv's
    cache, for ``--link-mode symlink`` venvs), never from the tree. Verdicts on directories are
    memoized, so checking every row costs one lstat per directory, not per file."""

    def __init__(self, roots: tuple[str, ...] | list[str], link_roots: tuple[str, ...] | list[str] = ()) -> None:
        self.roots = tuple(dict.fromkeys(os.path.abspath(r) for r in roots if r))
        self.link_roots = tuple(dict.fromkeys(os.path.abspath(r) for r in link_roots if r))
        self._real = tuple(dict.fromkeys(os.path.realpath(r) for r in self.roots + self.link_roots))
        # directory -> None (safe) or why not; anchored at the roots (and their real locations)
        self._env: dict[str, str | None] = {r: None for r in (*self.roots, *(os.path.realpath(r) for r in self.roots))}
        self._links: dict[str, str | None] = {**self._env, **{r: None for r in self.link_roots},
                                              **{os.path.realpath(r): None for r in self.link_roots}}

    def real_inside(self, real: str) -> bool:
        return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in self._real)

    def _dir_problem(self, directory: str, memo: dict[str, str | None]) -> str | None:
        chain = []
        cur = directory
        verdict = memo.get(cur, _UNSET)
        while verdict is _UNSET:
            parent = os.path.dirname(cur)
            if parent == cur:  # the filesystem's root, and no anchor on the way
                verdict = f"outside the environment ({', '.join(self.roots)}); not read"
                break
            chain.append(cur)
            cur = parent
            verdict = memo.get(cur, _UNSET)
        for path in reversed(chain):
            if verdict is None:
                try:
                    is_link = stat.S_ISLNK(os.lstat(path).st_mode)
                except OSError:
                    is_link = False  # absent: the files under it are reported missing
                if is_link:
                    real = os.path.realpath(path)
                    if not self.real_inside(real):
                        verdict = f"{path} is a symlink to {real}, outside the environment; not followed"
            memo[path] = verdict
        return verdict

    def row_problem(self, path: str) -> str | None:
        """Why the file at ``path`` (a RECORD row, absolute and normalised) may not be read, or None:
        it is outside the roots, or reached through a symlinked directory that leaves them. Once
        its directory is known, one dict lookup."""
        directory = path[:path.rfind(os.sep)] or os.sep
        verdict = self._env.get(directory, _UNSET)
        return self._dir_problem(directory, self._env) if verdict is _UNSET else verdict

    def follow(self, path: str, link: str | None = None) -> str | None:
        """Where to read the symlink at ``path`` (target ``link``), if it may be followed: a path
        to open without following (its last part may be a link again: then ``resolve``); None when
        it leads outside the roots and the known caches."""
        if link is not None and ".." not in link.split(os.sep):
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), link))
            if self._dir_problem(os.path.dirname(resolved), self._links) is None:
                return resolved
        return self.resolve(path)

    def resolve(self, path: str) -> str | None:
        """``path`` with every symlink resolved, if that is inside the roots or a known cache."""
        real = os.path.realpath(path)
        return real if self.real_inside(real) else None

    def readable(self, path: str) -> str:
        """The path to open, without following, to read the tree's file ``path``; OSError (EXDEV)
        naming the reason if it may not be read, FileNotFoundError if it is absent."""
        path = os.path.abspath(path)
        problem = self.row_problem(path)
        if problem is not None:
            raise OSError(errno.EXDEV, problem)
        if not stat.S_ISLNK(os.lstat(path).st_mode):
            return path
        link = os.readlink(path)
        resolved = self.follow(path, link)
        if resolved is not None and os.path.islink(resolved):
            resolved = self.resolve(path)
        if resolved is None:
            raise OSError(errno.EXDEV, f"a symlink to {link}, outside the environment; not followed")
        return resolved
