"""Which distribution owns which path, and which unowned files are nonetheless expected."""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field

from ...discover.dists import MetadataDir
from ...discover.target import Containment
from ...model import Distribution, MetadataKind, Problem, RecordEntry, Target


def entry_path(site: str, record_path: str) -> str:
    """Absolute, lexically normalised path of a RECORD row (``../../../bin/x`` included)."""
    if os.sep == "/" and not record_path.startswith("/") and "./" not in record_path and "//" not in record_path \
            and not record_path.endswith((".", "/")):
        return f"{site}/{record_path}"  # already normal: skip normpath on the hot path
    return os.path.normpath(os.path.join(site, record_path))


def is_bytecode(path: str) -> bool:
    return path.endswith((".pyc", ".pyo"))


def bytecode_source(path: str) -> str | None:
    """``pkg/__pycache__/mod.cpython-311.opt-1.pyc`` → ``pkg/mod.py`` (any tag); None outside __pycache__."""
    parent, _, name = path.rpartition(os.sep)
    if not name.endswith((".pyc", ".pyo")) or not parent.endswith(_PYCACHE):
        return None
    stem = name.split(".", 1)[0]  # module names cannot contain dots, so the tag starts at the first one
    return parent[: -len("__pycache__")] + stem + ".py"


_PYCACHE = os.sep + "__pycache__"


def is_virtualenv_style_row(record_path: str) -> bool:
    """Rows virtualenv writes that never exist on disk (docs/installers.md §6d)."""
    return (
        is_bytecode(record_path)
        or record_path.rstrip("/").endswith("__pycache__")
        or record_path.endswith(".virtualenv")
    )


# Files a venv creator writes into bin/ (venv, virtualenv, uv); never "added".
_VENV_BIN = re.compile(
    r"^(?:python[\d.]*t?w?(?:\.exe)?|pypy[\d.]*(?:\.exe)?|pythonw?\.exe|[Aa]ctivate(?:[._].*)?"
    r"|activate_this\.py|deactivate(?:\..*)?|pydoc\.bat)$"
)
# Unowned files at the top of site-packages that interpreters and tools leave there legitimately.
_LEGIT_SITE_TOP = re.compile(r"^(?:README(?:\.txt)?|easy-install\.pth|.*\.egg-link|_virtualenv\.(?:py|pth))$")


@dataclass
class Ownership:
    owners: dict[str, list[tuple[Distribution, RecordEntry]]] = field(default_factory=dict)
    # (site-packages, top-level name) claimed by a distribution that lists no files.
    claimed: set[tuple[str, str]] = field(default_factory=set)
    # metadata dir → its reading; orphaned ones are reported whole, not file by file
    metadata: dict[str, MetadataDir] = field(default_factory=dict)
    # every (distribution, entry, absolute path), in RECORD order: what verify checks
    rows: list[tuple[Distribution, RecordEntry, str]] = field(default_factory=list)
    # rows naming a path outside the environment (``/etc/shadow``, ``../../../../etc/shadow``):
    # neither owned nor checked, reported
    problems: list[Problem] = field(default_factory=list)

    def owns(self, path: str, stop: str) -> bool:
        """True when a RECORD lists ``path`` or a directory row above it (up to ``stop``)."""
        if path in self.owners:
            return True
        parent = os.path.dirname(path)
        while len(parent) > len(stop):
            if parent in self.owners:
                return True
            parent = os.path.dirname(parent)
        return False

    @functools.cached_property
    def dir_owner(self) -> dict[str, Distribution]:
        """Directory → the first distribution with a file in it (who reinstalls that package dir).
        Built on first use: only junk in a ``__pycache__`` asks."""
        owner: dict[str, Distribution] = {}
        for dist, _, path in self.rows:
            owner.setdefault(path.rpartition(os.sep)[0], dist)
        return owner

    def claimed_by_unlisted(self, site: str, relpath: str) -> bool:
        top = relpath.split(os.sep, 1)[0]
        if top == "__pycache__":
            top = relpath.split(os.sep)[-1]
        name = top.split(".", 1)[0]
        return (site, top) in self.claimed or (site, name) in self.claimed


def build_ownership(metadirs: list[MetadataDir], containment: Containment | None = None) -> Ownership:
    """``containment``: rows whose path is lexically outside its roots are left out and reported
    (verify checks the real location of the rest before reading anything)."""
    plain = os.sep == "/"
    own = Ownership()
    owners, rows = own.owners, own.rows
    for md in metadirs:
        own.metadata[md.path] = md
        dist = md.distribution
        if dist is None:
            continue
        site = dist.site_packages
        for entry in dist.entries:
            record_path = entry.path
            # entry_path's fast path, inlined (once per row of every audit): a plain relative path
            # is inside its site-packages; any other is normalised and checked.
            if plain and not record_path.startswith("/") and "./" not in record_path \
                    and "//" not in record_path and not record_path.endswith((".", "/")):
                path = f"{site}/{record_path}"
            else:
                path = os.path.normpath(os.path.join(site, record_path))
                if containment is not None and _outside(containment, path):
                    record = os.path.join(dist.metadata_dir, "RECORD")
                    own.problems.append(Problem(record, f"line {entry.line}: {record_path} is outside the environment "
                                                        f"({', '.join(containment.roots)}); not read"))
                    continue
            pair = (dist, entry)
            listed = owners.get(path)
            if listed is None:
                owners[path] = [pair]
            else:
                listed.append(pair)
            rows.append((dist, entry, path))
        if dist.kind is MetadataKind.DIST_INFO:
            # RECORD cannot hash itself; it is the distribution's own even when it does not list itself.
            owners.setdefault(os.path.join(dist.metadata_dir, "RECORD"), [])
        if not dist.entries:
            for name in dist.top_level:
                own.claimed.add((site, name))
    return own


def _outside(containment: Containment, path: str) -> bool:
    return not any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in containment.roots)


def is_venv_file(target: Target, path: str) -> bool:
    if target.bin_dir is not None and os.path.dirname(path) == target.bin_dir:
        return bool(_VENV_BIN.match(os.path.basename(path)))
    return False


def is_legit_site_file(site: str, path: str) -> bool:
    return os.path.dirname(path) == site and bool(_LEGIT_SITE_TOP.match(os.path.basename(path)))
