"""Which distribution owns which path, and which unowned files are nonetheless expected."""

from __future__ import annotations

import functools
import os
import re
from array import array
from collections.abc import Iterator, Mapping, Sequence, Set as AbstractSet
from typing import cast

from .dists import MetadataDir
from ..fs.containment import Containment
from ..core.values import Distribution, Hash, MetadataKind, Problem, RecordEntry, RecordRows, Target


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


# A RECORD this long is looked at directory by directory before its rows are checked one by one
# (``rows_in_absent_directories``): a million rows under a deleted tree cost a pass, not a million
# opens.
ABSENT_PASS_MIN = 50_000


class Ownership:
    """Which RECORD rows there are and who owns each path, compactly (a cold audit of a 40,000-row
    venv kept 15 MB here as one absolute path string, a one-item list and a pair per row).

    A row is its number: ``entries[i]`` (its RecordEntry, made on demand from its distribution's
    ``RecordRows``; ``record_path(i)``, ``size(i)``, ``hash(i)`` read the columns without one),
    ``dist(i)``, ``path(i)`` (absolute, lexically normal; built on demand from the row's
    site-packages, stored only for the rare row that needed normalising). Paths are indexed
    relative to a site-packages (the RECORD's own path string is the key: nothing new is
    allocated for it), the rest by absolute path; a path several rows name keeps its first
    row in the index and the others in ``_more``. ``rows`` and ``owners`` are the old views:
    ``rows[i]`` is ``(dist, entry, path)``, ``owners`` maps a path to its (dist, entry) pairs."""

    def __init__(self) -> None:
        # (site-packages, top-level name) claimed by a distribution that lists no files.
        self.claimed: set[tuple[str, str]] = set()
        # metadata dir → its reading; orphaned ones are reported whole, not file by file
        self.metadata: dict[str, MetadataDir] = {}
        # rows naming a path outside the environment (``/etc/shadow``, ``../../../../etc/shadow``):
        # neither owned nor checked, reported
        self.problems: list[Problem] = []
        self.dists: list[Distribution] = []  # distribution number → distribution
        self._tables: list[RecordRows] = []  # distribution number → its rows (``dist.entries``)
        self._prefix: list[str] = []  # distribution number → its site-packages + os.sep
        self._dist_of = array("I")  # row → distribution number
        self._index = array("I")  # row → its number in its distribution's rows
        # every checked row, in RECORD order: what verify checks (a view: entries[i] is made on demand)
        self.entries = _Entries(self)
        self._odd: dict[int, str] = {}  # row → absolute path, where it is not prefix + entry.path
        # Index buckets, longest prefix first: (site-packages + os.sep, relative path → first row).
        self._buckets: list[tuple[str, dict[str, int]]] = []
        self._by_site: dict[str, dict[str, int]] = {}
        self._elsewhere: dict[str, int] = {}  # absolute path → first row, for paths outside every bucket
        self._more: dict[int, list[int]] = {}  # first row → the other rows naming the same path
        self.rows = _Rows(self)
        self.owners = _Owners(self)

    # -- rows -------------------------------------------------------------------------------
    def path(self, i: int) -> str:
        odd = self._odd.get(i)
        if odd is not None:
            return odd
        k = self._dist_of[i]
        return self._prefix[k] + self._tables[k].paths[self._index[i]]

    def dist(self, i: int) -> Distribution:
        return self.dists[self._dist_of[i]]

    def dist_number(self, i: int) -> int:
        return self._dist_of[i]

    def entry(self, i: int) -> RecordEntry:
        return self._tables[self._dist_of[i]].entry(self._index[i])

    def record_path(self, i: int) -> str:
        """The row's path as its RECORD writes it."""
        return self._tables[self._dist_of[i]].paths[self._index[i]]

    def size(self, i: int) -> int | None:
        return self._tables[self._dist_of[i]].size(self._index[i])

    def hash(self, i: int) -> Hash | None:
        return self._tables[self._dist_of[i]].hash(self._index[i])

    def columns(self) -> Iterator[tuple[int, RecordRows, int]]:
        """(distribution number, its rows, the row's number in them) for every row, in order."""
        tables = self._tables
        for k, j in zip(self._dist_of, self._index):
            yield k, tables[k], j

    def rows_in_absent_directories(self, containment: Containment | None = None) -> array:
        """Rows whose file's directory does not exist: missing without a look of their own. One
        lstat per directory rows name (not per row), relative paths split without building the
        absolute path of each row: a RECORD of a million rows under a deleted ``torch/`` costs a
        pass over its columns. Rows with a path of their own (``_odd``) are left to the checks.
        Only RECORDs of ``ABSENT_PASS_MIN`` rows or more are looked at: for the others (a torch
        RECORD has some 15,000) the pass would cost a full audit more than the checks it saves.
        A directory ``containment`` refuses (reached through a symlink that leaves the roots) is
        not looked at: its rows get the refusal the checks give them."""
        out = array("I")
        tables, prefix, odd = self._tables, self._prefix, self._odd
        big = [len(t.paths) >= ABSENT_PASS_MIN for t in tables]
        if not any(big):
            return out
        gone: dict[tuple[int, str], bool] = {}
        lstat = os.lstat
        for i, (k, j) in enumerate(zip(self._dist_of, self._index)):
            if not big[k]:
                continue
            directory = tables[k].paths[j].rpartition("/")[0]
            if not directory:
                continue  # at the top of its site-packages, which is there
            key = (k, directory)
            absent = gone.get(key)
            if absent is None:
                if containment is not None and containment.row_problem(prefix[k] + directory + os.sep + "-") is not None:
                    gone[key] = False
                    continue
                try:
                    lstat(prefix[k] + directory)
                    absent = False
                except FileNotFoundError:
                    absent = True
                except OSError:
                    absent = False  # not a directory, no access...: each row's own check says
                gone[key] = absent
            if absent and i not in odd:
                out.append(i)
        return out

    def shared_rows(self) -> set[int]:
        """Rows whose path another row names too."""
        out: set[int] = set()
        for first, others in self._more.items():
            out.add(first)
            out.update(others)
        return out

    # -- the index ----------------------------------------------------------------------------
    def _locate(self, path: str) -> tuple[dict[str, int], str]:
        for prefix, bucket in self._buckets:
            if path.startswith(prefix):
                return bucket, path[len(prefix):]
        return self._elsewhere, path

    def first_row(self, path: str) -> int | None:
        """The first row naming ``path``; -1 for a RECORD file no row lists (its distribution's
        own all the same); None for a path no one owns."""
        bucket, key = self._locate(path)
        return bucket.get(key)

    def rows_of(self, path: str) -> list[int]:
        first = self.first_row(path)
        if first is None or first < 0:
            return []
        more = self._more.get(first)
        return [first, *more] if more else [first]

    def _add(self, path: str, bucket: dict[str, int], key: str, row: int) -> None:
        first = bucket.get(key)
        if first is None or first < 0:
            bucket[key] = row
        else:
            self._more.setdefault(first, []).append(row)

    def owns(self, path: str, stop: str) -> bool:
        """True when a RECORD lists ``path`` or a directory row above it (up to ``stop``)."""
        if self.first_row(path) is not None:
            return True
        parent = os.path.dirname(path)
        while len(parent) > len(stop):
            if self.first_row(parent) is not None:
                return True
            parent = os.path.dirname(parent)
        return False

    def paths(self, skip: tuple[str, ...] = ()) -> Iterator[str]:
        """Every owned path, absolute (built one by one); buckets whose prefix starts with one of
        ``skip`` are left out (all their paths would start with it too)."""
        for prefix, bucket in self._buckets:
            if skip and prefix.startswith(skip):
                continue
            yield from (prefix + key for key in bucket)
        yield from self._elsewhere

    def owned_paths(self) -> frozenset[str]:
        """The owned paths as ``Verification.referenced`` holds them: a set view over this index
        (membership, iteration, length), not 40,000 new strings."""
        return cast("frozenset[str]", OwnedView(self))

    @functools.cached_property
    def dir_owner(self) -> dict[str, Distribution]:
        """Directory → the first distribution with a file in it (who reinstalls that package dir).
        Built on first use: only junk in a ``__pycache__`` asks."""
        owner: dict[str, Distribution] = {}
        for i in range(len(self._dist_of)):
            owner.setdefault(self.path(i).rpartition(os.sep)[0], self.dist(i))
        return owner

    def claimed_by_unlisted(self, site: str, relpath: str) -> bool:
        top = relpath.split(os.sep, 1)[0]
        if top == "__pycache__":
            top = relpath.split(os.sep)[-1]
        name = top.split(".", 1)[0]
        return (site, top) in self.claimed or (site, name) in self.claimed


class _RowView(Sequence):
    """A sequence with one item per ownership row, made on demand by ``_item``."""

    def __init__(self, own: Ownership) -> None:
        self._own = own

    def __len__(self) -> int:
        return len(self._own._dist_of)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._item(i)

    def _item(self, i: int):
        raise NotImplementedError


class _Entries(_RowView):
    """``Ownership.entries``: row → its RecordEntry, made on demand from its distribution's rows."""

    def _item(self, i: int) -> RecordEntry:
        own = self._own
        return own._tables[own._dist_of[i]].entry(own._index[i])

    def __iter__(self) -> Iterator[RecordEntry]:
        tables = self._own._tables
        for k, j in zip(self._own._dist_of, self._own._index):
            yield tables[k].entry(j)


class _Rows(_RowView):
    """``Ownership.rows`` as it was: (distribution, entry, absolute path) per row, made on demand."""

    def _item(self, i: int):
        own = self._own
        return own.dist(i), own.entry(i), own.path(i)

    def __iter__(self):
        own = self._own
        dists, prefixes, odd = own.dists, own._prefix, own._odd
        for i, (k, table, j) in enumerate(own.columns()):
            entry = table.entry(j)
            path = odd.get(i) if odd else None
            yield dists[k], entry, path if path is not None else prefixes[k] + entry.path


class _Owners(Mapping):
    """``Ownership.owners`` as it was: absolute path → [(distribution, entry)] of the rows naming it."""

    def __init__(self, own: Ownership) -> None:
        self._own = own

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self._own.first_row(path) is not None

    def __getitem__(self, path: str) -> list[tuple[Distribution, RecordEntry]]:
        own = self._own
        if not isinstance(path, str) or own.first_row(path) is None:
            raise KeyError(path)
        return [(own.dist(i), own.entry(i)) for i in own.rows_of(path)]

    def get(self, path: str, default: None = None) -> list[tuple[Distribution, RecordEntry]] | None:  # type: ignore[override]
        try:
            return self[path]
        except KeyError:
            return default

    def __iter__(self) -> Iterator[str]:
        return self._own.paths()

    def __len__(self) -> int:
        own = self._own
        return sum(len(bucket) for _, bucket in own._buckets) + len(own._elsewhere)


class OwnedView(AbstractSet):
    """The owned paths of an ``Ownership``, as a read-only set."""

    def __init__(self, own: Ownership) -> None:
        self._own = own

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self._own.first_row(path) is not None

    def __iter__(self) -> Iterator[str]:
        return self._own.paths()

    def __len__(self) -> int:
        return len(self._own.owners)

    __hash__ = AbstractSet._hash

    def __reduce__(self):  # pickled (a fleet's report, multiprocessing) as the plain set it stands for
        return frozenset, (frozenset(self),)


def build_ownership(metadirs: list[MetadataDir], containment: Containment | None = None) -> Ownership:
    """``containment``: rows whose path is lexically outside its roots are left out and reported
    (verify checks the real location of the rest before reading anything)."""
    plain = os.sep == "/"
    own = Ownership()
    dists = [md.distribution for md in metadirs if md.distribution is not None]
    # One bucket per site-packages, longest first: a path is indexed in the first whose prefix it
    # starts with, so that every path has exactly one place whoever looks for it.
    sites = sorted({d.site_packages for d in dists}, key=len, reverse=True)
    for site in sites:
        bucket: dict[str, int] = {}
        own._buckets.append((site + os.sep, bucket))
        own._by_site[site] = bucket
    # A site-packages with another inside it (rare): its rows may belong to the inner one's bucket.
    nested = {site: tuple(other[len(site) + 1:] + os.sep for other in sites
                          if other != site and other.startswith(site + os.sep)) for site in sites}
    dist_of, index, odd, add = own._dist_of, own._index, own._odd, own._add
    for md in metadirs:
        own.metadata[md.path] = md
        dist = md.distribution
        if dist is None:
            continue
        number = len(own.dists)
        own.dists.append(dist)
        table = RecordRows.of(dist.entries)
        own._tables.append(table)
        site = dist.site_packages
        own._prefix.append(site + os.sep)
        home, inner = own._by_site[site], nested[site]
        for j, record_path in enumerate(table.paths):
            # entry_path's fast path, inlined (once per row of every audit): a plain relative path
            # is inside its site-packages; any other is normalised and checked.
            if plain and not record_path.startswith("/") and "./" not in record_path \
                    and "//" not in record_path and not record_path.endswith((".", "/")):
                row = len(dist_of)
                if inner and record_path.startswith(inner):
                    path = f"{site}/{record_path}"
                    add(path, *own._locate(path), row)
                else:
                    first = home.get(record_path)  # _add, inlined
                    if first is None or first < 0:
                        home[record_path] = row
                    else:
                        own._more.setdefault(first, []).append(row)
            else:
                path = os.path.normpath(os.path.join(site, record_path))
                if containment is not None and _outside(containment, path):
                    record = os.path.join(dist.metadata_dir, "RECORD")
                    own.problems.append(Problem(record, f"line {table.lines[j]}: {record_path} is outside the "
                                                        f"environment ({', '.join(containment.roots)}); not read"))
                    continue
                row = len(dist_of)
                if path != f"{site}/{record_path}":
                    odd[row] = path
                add(path, *own._locate(path), row)
            index.append(j)
            dist_of.append(number)
        if dist.kind is MetadataKind.DIST_INFO:
            # RECORD cannot hash itself; it is the distribution's own even when it does not list itself.
            record = os.path.join(dist.metadata_dir, "RECORD")
            bucket, key = own._locate(record)
            bucket.setdefault(key, -1)
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
