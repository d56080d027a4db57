"""``--wheels DIR``: wheelhouses and ``pip download`` directories, matched by file name alone."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

from ..core.values import Distribution
from .base import Rejected, SourceKind
from .names import WheelName, installed_tags, parse_wheel_filename, same_release
from .wheel import ZipCopy, open_wheel, wheel_members_error

MAX_LISTED = 200_000  # names looked at per directory


class Wheelhouse:
    """The ``*.whl`` names of some directories, listed once (no wheel is opened to list them)."""

    def __init__(self, dirs: Sequence[str]) -> None:
        self.dirs = tuple(dirs)
        self._names: list[tuple[str, WheelName]] | None = None
        self.problems: list[str] = []

    def _list(self) -> list[tuple[str, WheelName]]:
        found = []
        for directory in self.dirs:
            try:
                with os.scandir(directory) as entries:
                    names = sorted(e.name for _, e in zip(range(MAX_LISTED), entries))
            except OSError as exc:
                self.problems.append(f"cannot list {directory}: {exc.strerror or exc}")
                continue
            for name in names:
                parsed = parse_wheel_filename(name)
                if parsed is not None:
                    found.append((os.path.join(directory, name), parsed))
        return found

    def matching(self, dist: Distribution, tags: frozenset[str] | None = None) -> tuple[list[str], list[str]]:
        """Wheel paths of ``dist``'s name and version whose tags fit the installed WHEEL's (all
        of that name and version when WHEEL names no tag), and those set aside for their tags.
        ``tags``: the tags to fit instead of ``dist``'s own WHEEL's (a release not installed)."""
        if self._names is None:
            self._names = self._list()
        same = [(path, parsed) for path, parsed in self._names if same_release(dist, parsed.name, parsed.version)]
        if same and tags is None:
            tags = installed_tags(dist)
        if tags is None:
            return [path for path, _ in same], []
        return [p for p, w in same if w.tags & tags], [p for p, w in same if not w.tags & tags]

    def candidates(self, dist: Distribution, notes: list[str], tags: frozenset[str] | None = None
                   ) -> Iterator[ZipCopy | Rejected]:
        if not self.dirs:
            notes.append("--wheels (not given)")
            return
        paths, other_tags = self.matching(dist, tags)
        # auditwheel renames a wheel's platform tag (linux_x86_64 → manylinux_2_28_x86_64) in the
        # file name only: the WHEEL file inside, which the installer copied, keeps the original.
        inside = (tags if tags is not None else installed_tags(dist)) or frozenset()
        renamed = []
        for path in other_tags:
            try:
                wheel = open_wheel(path, SourceKind.WHEELS, dist)
            except Exception:  # noqa: BLE001 - a corrupt wheel is simply not a candidate
                continue
            if wheel.wheel_tags() & inside:
                renamed.append(wheel)
            else:
                wheel.close()
        yield from renamed
        other_tags = [p for p in other_tags if p not in {w.path for w in renamed}]
        if not paths and not renamed:
            why = f"no {dist.name} {dist.version} wheel in {', '.join(self.dirs)}"
            if other_tags:
                why += f" with the installed tags (set aside for their tags: {', '.join(map(os.path.basename, other_tags))})"
            notes.append(f"--wheels ({why})")
            return
        for path in paths:
            try:
                yield open_wheel(path, SourceKind.WHEELS, dist)
            except Exception as exc:  # noqa: BLE001 - a corrupt wheel is a reason
                yield Rejected(SourceKind.WHEELS, path, wheel_members_error(exc))
