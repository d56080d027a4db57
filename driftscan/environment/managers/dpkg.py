"""Debian's dpkg database, read as data: which dpkg package owns which file of a dist-packages
directory, and the md5 Debian recorded for it (what ``debsums`` checks).

The database of a system is part of that system (docs/security.md): for
``<root>/usr/lib/python3/dist-packages`` it is ``<root>/var/lib/dpkg``, on a live system
(``<root>`` is ``/``) as in an unpacked image, a debootstrap or a container rootfs. It is the one
place read outside the directory the user named, and only these files of it are read, each a
regular file (never a symlink, FIFO or device) whose real location is inside the database (for
the thousands of ``.list`` files: ``info/`` is checked once to be a real directory inside it,
and each name comes from its listing), with a size cap (``LIMITS``): ``status``, ``updates/NNNN`` (dpkg's journal of status changes not yet folded
into ``status``), ``diversions``, ``info/<pkg>[:<arch>].list`` and ``info/<pkg>[:<arch>].md5sums``.
Maintainer scripts and the rest of ``info/`` are never read; ``dpkg``, ``dpkg-query`` and
``debsums`` are never run. A path written in the database is only compared with other paths:
the files under the dist-packages are opened by verify, through the environment's containment,
never here (here at most an ``lstat`` of a listed path that has no md5, to tell an empty
directory or a symlink from a file, and only where the containment allows reading).

Facts relied on (docs/installers.md §4, checked on Debian 12 with dpkg 1.21):

- ``status`` is RFC 822-style paragraphs; ``Status: <want> <flag> <state>``; ``Conffiles:`` lines
  are `` <path> <md5>[ obsolete][ remove-on-upgrade]``.
- ``info/<pkg>.list`` lists every path the package installed, directories included (``/.``
  first), absolute, one a line, as bytes (not necessarily UTF-8); a ``Multi-Arch: same``
  package's files are named ``<pkg>:<arch>.list`` (``info/format`` is ``1``).
- ``info/<pkg>.md5sums`` has ``<32 hex>  <path>`` lines, paths relative to ``/`` without the
  leading slash; regular files only: no directories, no symlinks, no conffiles. Some packages
  have none (then only presence can be checked).
- ``diversions`` is groups of three lines: the diverted path, where it lives instead, and the
  package that holds the diversion (``:`` for a local one made by the administrator). The
  holder's own file stays at the original path; every other package's file of that path is
  installed at the diverted one, while its ``.list`` and ``.md5sums`` keep the original path.
- Two packages list the same file path only for directories, or for co-installed
  ``Multi-Arch: same`` packages (identical files); ``Replaces:`` takes a file off the old
  package's list.
"""

from __future__ import annotations

import errno
import os
import re
import shlex
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace

from ...fs.reader import inside, read_regular
from ...core.values import Distribution, Hash, MetadataKind, Problem, RecordEntry, Target, Unverifiable
from ...fs.containment import Containment
from ..dists import MetadataDir
from .interface import Owned

INSTALLER = "dpkg"
HASH_EVIDENCE = "md5, as Debian records it"

# Caps per database file. Against real ones (Debian 12, 710 packages): status 620 KB, the largest
# .list 4.0 MB and .md5sums 5.1 MB (google-cloud-cli); a 3,000-package system's status is a few MB.
LIMITS = {
    "dpkg status": 64 << 20,
    "dpkg status update": 64 << 20,
    "dpkg diversions": 16 << 20,
    "dpkg file list": 64 << 20,
    "dpkg md5sums": 64 << 20,
}
LIST_BUDGET = 1 << 30  # bytes of .list files read in all; 7.3 MB here for 710 packages
MAX_UPDATES = 1000  # journal files in updates/ (dpkg folds them into status every 50 or so)
MAX_PROBLEMS = 100  # per database file, and per kind of refusal across files

# Debian policy §5.6.1, §5.6.12; architecture names are dpkg's (amd64, arm64, musl-linux-i386, all).
_PACKAGE = re.compile(r"[a-z0-9][a-z0-9+.-]+")
_VERSION = re.compile(r"(?:[0-9]+:)?[0-9A-Za-z][0-9A-Za-z.+~:-]*")
_ARCH = re.compile(r"[a-z0-9][a-z0-9-]*")
_MD5 = re.compile(rb"[0-9a-fA-F]{32}")
# <root>/usr/lib/python3/dist-packages or <root>/usr/lib/python3.X/dist-packages; /usr/local is pip's.
_DIST_PACKAGES = re.compile(r"(?P<root>.*)/usr/lib/python3(?:\.\d+)?/dist-packages")
_DATABASE = ("var", "lib", "dpkg")

# States whose files dpkg has finished unpacking (``installed``, or configured but for triggers,
# or unpacked and not yet configured): their md5sums describe the files on disk. Others are not
# trusted: ``half-installed`` (an unpack or removal was interrupted: some files old, some new,
# some gone), ``config-files`` and ``not-installed`` (removed: what is left is not owned).
_VERIFIED_STATES = frozenset({"installed", "triggers-pending", "triggers-awaited", "unpacked", "half-configured"})
_REMOVED_STATES = frozenset({"config-files", "not-installed"})


def valid_package_name(name: str) -> bool:
    """A Debian package name (policy §5.6.1): what a remedy may name."""
    return _PACKAGE.fullmatch(name) is not None


def valid_version(version: str) -> bool:
    """A Debian version (policy §5.6.12), epoch included."""
    return _VERSION.fullmatch(version) is not None


def valid_architecture(arch: str) -> bool:
    return _ARCH.fullmatch(arch) is not None


@dataclass(frozen=True)
class DpkgOwnership:
    """What dpkg's database says about one dist-packages directory."""

    database: str
    site_packages: str
    # One per package that owns a file under site_packages and whose files are trusted: entries
    # are hashed by md5 (hex) where the package's .md5sums records the file, else presence only.
    distributions: tuple[Distribution, ...] = ()
    problems: tuple[Problem, ...] = ()
    # The *.dist-info / *.egg-info under site_packages (absolute paths) that dpkg packages own:
    # their RECORD does not describe the installed files (docs/installers.md §4), dpkg's lists do.
    python_metadata_dirs: frozenset[str] = frozenset()
    # Packages that own files under site_packages but whose files are not trusted (half-installed,
    # reinstall required): entries presence only; each is also in ``unverifiable``.
    untrusted: tuple[Distribution, ...] = ()
    # Why a package's files cannot be verified by content: not trusted, or no .md5sums at all.
    unverifiable: tuple[Unverifiable, ...] = ()
    # Paths (relative to site_packages) that are dpkg conffiles: the administrator's to edit, kept
    # by a reinstall; presence only, as debsums does without -a/-e.
    conffiles: frozenset[str] = frozenset()
    # Listed without an md5 and a symlink on disk when read: dpkg records no link target.
    symlinks: frozenset[str] = frozenset()
    # Relative path on disk → the path the package lists, for files moved by dpkg-divert.
    diverted: Mapping[str, str] = field(default_factory=dict)
    # Relative path → the packages that all list that file (co-installed Multi-Arch: same).
    shared: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def package_spec(dist: Distribution) -> str:
    """How apt-get and dpkg name the package of ``dist``: ``pkg``, or ``pkg:arch`` for a
    Multi-Arch: same package (its database files carry the architecture)."""
    name = os.path.basename(dist.metadata_dir)
    return name[: -len(".list")] if name.endswith(".list") else dist.name


def md5sums_path(dist: Distribution) -> str:
    """The ``.md5sums`` file the hashes of ``dist`` come from (it may be absent)."""
    return dist.metadata_dir.removesuffix(".list") + ".md5sums"


def hash_evidence(dist: Distribution) -> str:
    """What a dpkg-recorded hash is, for a drift's evidence."""
    return f"{HASH_EVIDENCE} ({md5sums_path(dist)})"


# --- where the database is ---------------------------------------------------------------------

def _system_root(site_packages: str) -> str | None:
    match = _DIST_PACKAGES.fullmatch(os.path.normpath(os.path.abspath(site_packages)))
    return None if match is None else (match.group("root") or os.sep)


def _locate(site_packages: str) -> tuple[str | None, str | None]:
    root = _system_root(site_packages)
    if root is None:
        return None, None
    database = os.path.join(root, *_DATABASE)
    try:
        is_db = stat.S_ISDIR(os.stat(os.path.join(database, "info")).st_mode) and \
            os.path.lexists(os.path.join(database, "status"))
    except OSError:
        is_db = False
    if not is_db:
        return None, None
    # An image's var/ or var/lib/dpkg that is a symlink to /var/lib/dpkg would make the host's
    # database describe the image; its usr/ linked to /usr, the image's database the host's files.
    for path in (database, site_packages):
        if not inside(root, path):
            return None, f"{path} resolves outside {root} (to {os.path.realpath(path)}); dpkg's database not used"
    return database, None


def dpkg_database_for(site_packages: str) -> str | None:
    """The dpkg database that owns ``site_packages``: ``<root>/var/lib/dpkg`` for
    ``<root>/usr/lib/python3/dist-packages`` (or ``python3.X/dist-packages``), if it has
    ``status`` and ``info/`` and both it and the site-packages resolve inside ``<root>``;
    None otherwise (``/usr/local/lib/python3.X/dist-packages`` is pip's, never dpkg's)."""
    return _locate(site_packages)[0]


def dpkg_database_problem(site_packages: str) -> Problem | None:
    """Why a database that is there was not used for ``site_packages`` (it or the site-packages
    resolve outside the system root), as a report error; None if there is none or it is used."""
    why = _locate(site_packages)[1]
    return None if why is None else Problem(site_packages, why)


# --- reading ----------------------------------------------------------------------------------

class _Problems:
    """Problems with a cap per key (a database file, or a kind of refusal), so that a database
    of 3,000 FIFOs gives a hundred lines and a count, not 3,000."""

    def __init__(self) -> None:
        self.items: list[Problem] = []
        self._counts: dict[str, int] = {}
        self._first: dict[str, str] = {}

    def add(self, path: str, message: str, key: str | None = None) -> None:
        key = key or path
        n = self._counts.get(key, 0) + 1
        self._counts[key] = n
        if n <= MAX_PROBLEMS:
            self.items.append(Problem(path, message))
        self._first.setdefault(key, path)

    def done(self) -> tuple[Problem, ...]:
        more = [Problem(self._first[k], f"{n - MAX_PROBLEMS} more problems like these")
                for k, n in self._counts.items() if n > MAX_PROBLEMS]
        return (*self.items, *more)


def _read(path: str, kind: str, database: str | None, problems: _Problems, *, missing_ok: bool = False) -> bytes | None:
    """A database file: regular, not a symlink, capped, inside ``database`` (None: the caller
    checked the directory it is in, and its name has no slash)."""
    try:
        return read_regular(path, LIMITS[kind], what=kind, follow=False, root=database)
    except FileNotFoundError:
        if not missing_ok:
            problems.add(path, "cannot read: no such file", key=f"read {kind}")
        return None
    except OSError as exc:
        problems.add(path, f"cannot read: {exc.strerror or exc}", key=f"read {kind}")
        return None


@dataclass
class _Package:
    name: str
    arch: str
    version: str
    want: str
    eflag: str
    state: str
    multi_arch: str
    conffiles: dict[bytes, bytes | None]


def _decode(value: bytes) -> str:
    return value.decode("utf-8", "surrogateescape")


# Paragraphs are separated by blank lines; of each, only the fields read here are looked at
# (a Description is most of a status file), a value running on over continuation lines.
NEWLINE = b"\n"
_BLANK = re.compile(rb"\n(?:[ \t]*\n)+")
_FIELD = re.compile(rb"^(Package|Status|Architecture|Version|Multi-Arch|Conffiles):[ \t]*(.*(?:\n[ \t].*)*)",
                    re.MULTILINE | re.IGNORECASE)
_NOT_A_FIELD = re.compile(rb"^[^ \t:\n][^:\n]*$", re.MULTILINE)  # neither "Name: value" nor a continuation line


def _paragraphs(data: bytes, path: str, problems: _Problems) -> Iterator[tuple[int, dict[str, bytes]]]:
    """(first line number, {field: value}) of each paragraph, field names lower-cased."""
    pos, line = 0, 1
    for start, stop in [*(m.span() for m in _BLANK.finditer(data)), (len(data), len(data))]:
        raw = data[pos:start]
        paragraph = raw.lstrip(b"\n")
        if paragraph.strip():
            first = line + len(raw) - len(paragraph)
            bad = _NOT_A_FIELD.search(paragraph)
            if bad is not None:
                problems.add(path, f"line {first + paragraph.count(NEWLINE, 0, bad.start())}: not a status field; "
                                   "ignored")
            fields = {m.group(1).decode("ascii").lower(): m.group(2).strip() for m in _FIELD.finditer(paragraph)}
            yield first, fields
        line += data.count(NEWLINE, pos, stop)
        pos = stop


def _parse_status(data: bytes, path: str, problems: _Problems, packages: dict[tuple[str, str], _Package]) -> None:
    """Add the paragraphs of a status file (or an update of it) to ``packages``, later ones
    replacing earlier ones, as dpkg reads ``status`` then ``updates/*``."""
    for line, fields in _paragraphs(data, path, problems):
        name = _decode(fields.get("package", b""))
        status = _decode(fields.get("status", b"")).split()
        arch = _decode(fields.get("architecture", b"")) or "all"
        version = _decode(fields.get("version", b""))
        if not valid_package_name(name):
            problems.add(path, f"line {line}: package name {name!r} is not a Debian package name; ignored")
            continue
        if len(status) != 3:
            problems.add(path, f"line {line}: {name}: Status {' '.join(status)!r} is not '<want> <flag> <state>'; "
                               "its files are not trusted")
            status = ["unknown", "unknown", "unknown"]
        if not valid_architecture(arch):
            problems.add(path, f"line {line}: {name}: architecture {arch!r} is not valid; ignored")
            continue
        if status[2] not in _REMOVED_STATES and version and not valid_version(version):
            problems.add(path, f"line {line}: {name}: version {version!r} is not a Debian version")
            version = "unknown"
        conffiles: dict[bytes, bytes | None] = {}
        for conf in fields.get("conffiles", b"").split(b"\n"):
            conf = conf.strip()
            for flag in (b" remove-on-upgrade", b" obsolete", b" remove-on-upgrade"):
                if conf.endswith(flag):
                    conf = conf[: -len(flag)].rstrip()
            conffile, _, digest = conf.rpartition(b" ")
            if conffile.startswith(b"/"):
                conffiles[conffile.rstrip()] = digest if _MD5.fullmatch(digest) else None  # "newconffile"
        want, eflag, state = status
        packages[(name, arch)] = _Package(name, arch, version or "unknown", want, eflag, state,
                                          _decode(fields.get("multi-arch", b"")), conffiles)


def _read_packages(database: str, problems: _Problems) -> dict[tuple[str, str], _Package] | None:
    status_path = os.path.join(database, "status")
    data = _read(status_path, "dpkg status", database, problems)
    if data is None:
        return None
    packages: dict[tuple[str, str], _Package] = {}
    _parse_status(data, status_path, problems, packages)
    updates = os.path.join(database, "updates")
    try:
        names = sorted((n for n in os.listdir(updates) if n.isdigit()), key=int)  # "tmp.i" is not one yet
    except FileNotFoundError:
        names = []
    except OSError as exc:
        problems.add(updates, f"cannot list: {exc.strerror or exc}; status changes recorded there are not seen")
        names = []
    if len(names) > MAX_UPDATES:
        problems.add(updates, f"{len(names)} journal files; the last {MAX_UPDATES} are read")
        names = names[-MAX_UPDATES:]
    for name in names:
        path = os.path.join(updates, name)
        data = _read(path, "dpkg status update", database, problems, missing_ok=True)
        if data is not None:
            _parse_status(data, path, problems, packages)
    return packages


@dataclass(frozen=True)
class _Diversion:
    to: bytes
    holder: str  # ":" for a local diversion


def _read_diversions(database: str, problems: _Problems) -> dict[bytes, _Diversion]:
    path = os.path.join(database, "diversions")
    data = _read(path, "dpkg diversions", database, problems, missing_ok=True)
    if not data:
        return {}
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    if len(lines) % 3:
        problems.add(path, f"{len(lines)} lines, not groups of three; the last {len(lines) % 3} ignored")
    diversions: dict[bytes, _Diversion] = {}
    for i in range(0, len(lines) - len(lines) % 3, 3):
        source, to, holder = lines[i:i + 3]
        if not source.startswith(b"/") or not to.startswith(b"/"):
            problems.add(path, f"line {i + 1}: a diversion of {_decode(source)!r} to {_decode(to)!r} "
                               "is not between absolute paths; ignored")
            continue
        diversions[source] = _Diversion(to, _decode(holder))
    return diversions


def _list_name(pkg: _Package, names: set[str]) -> str | None:
    """The stem of the package's files in info/: ``pkg:arch`` for Multi-Arch: same (dpkg's
    multiarch database, info/format 1), else ``pkg``; the other spelling if only that exists."""
    qualified, plain = f"{pkg.name}:{pkg.arch}", pkg.name
    order = (qualified, plain) if pkg.multi_arch == "same" else (plain, qualified)
    return next((stem for stem in order if f"{stem}.list" in names), None)


def _normal(rel: bytes) -> bool:
    return b"\0" not in rel and all(part not in (b"", b".", b"..") for part in rel.split(b"/"))


@dataclass
class _Owned:
    pkg: _Package
    stem: str
    trusted: bool
    # relative path on disk (bytes) → (the path the package lists, line in .list)
    paths: dict[bytes, tuple[bytes, int]] = field(default_factory=dict)


def _scan_list(data: bytes, owned: _Owned, prefix: bytes, diversions: dict[bytes, _Diversion],
               list_path: str, problems: _Problems) -> None:
    name = owned.pkg.name
    for number, listed in enumerate(data.split(b"\n"), 1):
        if not listed:
            continue
        actual = listed
        diversion = diversions.get(listed)
        if diversion is not None and diversion.holder != name:
            actual = diversion.to
        if not actual.startswith(prefix):
            continue
        rel = actual[len(prefix):]
        if not _normal(rel):
            problems.add(list_path, f"line {number}: {_decode(listed)!r} is not a normal path; ignored")
            continue
        owned.paths.setdefault(rel, (listed, number))


def _read_md5sums(path: str, wanted: set[bytes], database: str,
                  problems: _Problems) -> dict[bytes, bytes | None] | None:
    """md5 digests of the ``wanted`` listed paths (absolute, as in .list) that the file records;
    None when there is no .md5sums or it cannot be read. A path given two different digests gets
    None: neither can be trusted over the other."""
    data = _read(path, "dpkg md5sums", database, problems, missing_ok=True)
    if data is None:
        return None
    digests: dict[bytes, bytes | None] = {}
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        digest, sep, rest = line[:32], line[32:34], line[34:]
        if not _MD5.fullmatch(digest) or sep not in (b"  ", b" *") or not rest:
            problems.add(path, f"line {number}: not '<md5>  <path>'; ignored")
            continue
        listed = b"/" + (rest[2:] if rest.startswith(b"./") else rest).lstrip(b"/")
        if listed not in wanted:
            continue
        value = bytes.fromhex(_decode(digest))
        if listed in digests and digests[listed] != value:
            problems.add(path, f"line {number}: {_decode(listed)} has two different md5s; its content is not checked")
            digests[listed] = None
            continue
        digests.setdefault(listed, value)
    return digests


def read_dpkg(database: str, site_packages: str, containment: Containment | None = None) -> DpkgOwnership:
    """Every dpkg package that owns a file under ``site_packages``, from the database
    ``database`` (``dpkg_database_for``), as driftscan distributions. Never raises for the
    database's sake: what cannot be read or parsed is a Problem, the rest is read.
    ``containment``: where a listed path may be looked at (``lstat`` of a path without an md5,
    to tell an empty directory or a symlink from a file); default: under the site-packages."""
    site = os.path.normpath(os.path.abspath(site_packages))
    database = os.path.normpath(os.path.abspath(database))
    problems = _Problems()
    empty = DpkgOwnership(database, site)
    root = _system_root(site)
    if root is None:
        return DpkgOwnership(database, site, problems=(Problem(site, "not a <root>/usr/lib/python3/dist-packages "
                                                                     "directory; dpkg's database not used"),))
    if containment is None:
        containment = Containment((site,))
    info = os.path.join(database, "info")
    try:
        if stat.S_ISLNK(os.lstat(info).st_mode) or not inside(database, info):
            raise OSError(errno.EXDEV, f"a symlink (to {os.path.realpath(info)}), not followed")
        names = set(os.listdir(info))
    except OSError as exc:
        return DpkgOwnership(database, site, problems=(Problem(info, f"cannot list: {exc.strerror or exc}"),))
    packages = _read_packages(database, problems)
    if packages is None:
        return DpkgOwnership(database, site, problems=problems.done())
    diversions = _read_diversions(database, problems)

    in_db = "/" + os.path.relpath(site, root).replace(os.sep, "/") if root != os.sep else site
    prefix = os.fsencode(in_db).rstrip(b"/") + b"/"
    # A .list that names no path under the site-packages owns nothing there, unless a path it
    # lists is diverted into it: one bytes search per needle before any line is split.
    needles = [prefix] + [source for source, d in diversions.items()
                          if d.to.startswith(prefix) and not source.startswith(prefix)]
    owned: list[_Owned] = []
    budget = LIST_BUDGET
    claimed: dict[str, str] = {}  # stem → the package (name:arch) whose .list it was read as
    again: dict[str, list[str]] = {}  # stem → the other paragraphs that name it
    for pkg in sorted(packages.values(), key=lambda p: (p.name, p.arch)):
        if pkg.state in _REMOVED_STATES:
            continue  # removed: dpkg owns none of its files any more (config-files keeps conffiles)
        stem = _list_name(pkg, names)
        if stem is None:
            continue  # dpkg itself: "files list file ... missing; assuming package has no files"
        list_path = os.path.join(info, f"{stem}.list")
        # One .list is one installed instance: dpkg never gives two paragraphs the same one. A
        # status naming a package in many architectures without Multi-Arch: same would otherwise
        # read, scan and verify the same list once per paragraph.
        if stem in claimed:
            again.setdefault(stem, []).append(f"{pkg.name}:{pkg.arch}")
            continue
        claimed[stem] = f"{pkg.name}:{pkg.arch}"
        if budget <= 0:
            problems.add(list_path, f"not read: the file lists read so far hold {LIST_BUDGET} bytes, "
                                    "more than any real system's", key="list budget")
            continue
        # info/ is checked once above (a real directory inside the database) and names come from
        # its listing, so with the symlink refused no .list can lead elsewhere: the root check
        # per file (two realpath walks, 40% of the time on a 2,900-package database) is not redone.
        data = _read(list_path, "dpkg file list", None, problems)
        if data is None:
            continue
        budget -= len(data)
        if not any(needle in data for needle in needles):
            continue
        trusted = pkg.state in _VERIFIED_STATES and pkg.eflag == "ok"
        one = _Owned(pkg, stem, trusted)
        _scan_list(data, one, prefix, diversions, list_path, problems)
        if one.paths:
            owned.append(one)
    for stem, others in sorted(again.items()):
        shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        problems.add(os.path.join(info, f"{stem}.list"), f"status names {len(others) + 1} packages for this one file "
                                                          f"list: read once, as {claimed[stem]}'s, not for {shown}")
    if not owned:
        return DpkgOwnership(database, site, problems=problems.done()) if problems.items else empty
    return _build(database, site, info, prefix, owned, containment, problems)


def _build(database: str, site: str, info: str, prefix: bytes, owned: list[_Owned], containment: Containment,
           problems: _Problems) -> DpkgOwnership:
    # A listed path under which another listed path lies is a directory (no package's .list says
    # which of its lines are directories): skipped, as the site-packages walk skips directories.
    directories: set[bytes] = set()
    for one in owned:
        for rel in one.paths:
            cut = rel.rfind(b"/")
            while cut > 0 and rel[:cut] not in directories:
                directories.add(rel[:cut])
                cut = rel.rfind(b"/", 0, cut)
    listers: dict[bytes, list[str]] = {}
    distributions: list[Distribution] = []
    untrusted: list[Distribution] = []
    unverifiable: list[Unverifiable] = []
    conffiles: set[str] = set()
    symlinks: set[str] = set()
    diverted: dict[str, str] = {}
    metadata_dirs: set[str] = set()
    for one in owned:
        pkg = one.pkg
        list_path = os.path.join(info, f"{one.stem}.list")
        files = {rel: v for rel, v in one.paths.items() if rel not in directories}
        if not files:
            continue  # only directories here (a namespace package's, shared with others)
        digests, why = None, None
        if one.trusted:
            md5_path = os.path.join(info, f"{one.stem}.md5sums")
            digests = _read_md5sums(md5_path, {listed for listed, _ in files.values()}, database, problems)
            if digests is None:
                why = f"{md5_path} cannot be read" if os.path.lexists(md5_path) else "dpkg recorded no md5sums for it"
        else:
            why = (f"dpkg status '{pkg.want} {pkg.eflag} {pkg.state}': its files are not trusted "
                   "(an install or removal did not finish)")
        entries = []
        for rel, (listed, line) in sorted(files.items()):
            relpath = os.fsdecode(rel)
            digest = digests.get(listed) if digests is not None else None
            if listed in pkg.conffiles:
                conffiles.add(relpath)
                digest = None  # the administrator's to change; a reinstall keeps it
            elif digest is None:
                kind = _kind_on_disk(os.path.join(site, relpath), containment)
                if kind == "directory":
                    continue  # an empty directory the package ships
                if kind == "symlink":
                    symlinks.add(relpath)
            entries.append(RecordEntry(relpath, Hash("md5", digest, "hex") if digest is not None else None, None, line))
            listers.setdefault(rel, []).append(one.stem)
            if listed != prefix + rel:
                diverted[relpath] = os.fsdecode(listed)
            top = relpath.split("/", 1)[0]
            if top.endswith((".dist-info", ".egg-info")):
                metadata_dirs.add(os.path.join(site, top))
        if not entries:
            continue
        if why is not None:
            unverifiable.append(Unverifiable(pkg.name, f"{why}: presence checked only"))
        dist = Distribution(name=pkg.name, version=pkg.version, metadata_dir=list_path, site_packages=site,
                            kind=MetadataKind.DIST_INFO, installer=INSTALLER, entries=tuple(entries),
                            build=pkg.arch)
        (distributions if one.trusted else untrusted).append(dist)
    shared = {os.fsdecode(rel): tuple(names) for rel, names in sorted(listers.items()) if len(names) > 1}
    return DpkgOwnership(
        database=database, site_packages=site, distributions=tuple(distributions), problems=problems.done(),
        python_metadata_dirs=frozenset(metadata_dirs), untrusted=tuple(untrusted),
        unverifiable=tuple(unverifiable), conffiles=frozenset(conffiles), symlinks=frozenset(symlinks),
        diverted=diverted, shared=shared)


def _kind_on_disk(path: str, containment: Containment) -> str | None:
    """``file_type`` of a listed path, by ``lstat``, if the containment lets it be looked at."""
    if containment.row_problem(path) is not None:
        return None
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None  # absent: verify reports it missing
    return "directory" if stat.S_ISDIR(mode) else "symlink" if stat.S_ISLNK(mode) else "file"


# --- the manager interface (registry.py, interface.py) -----------------------------------------

def read(root: str, target: Target, containment: Containment) -> Owned:
    """The dpkg packages owning files in the dist-packages ``root``, as distributions whose md5
    hashes the RECORD pass checks."""
    owned = Owned()
    refused = dpkg_database_problem(root)
    if refused is not None:
        owned.problems.append(refused)
    database = dpkg_database_for(root)
    if database is None:
        return owned
    found = read_dpkg(database, root, containment)
    owned.records = found
    owned.problems += found.problems
    owned.unverifiable += found.unverifiable
    owned.replaced |= set(found.python_metadata_dirs)
    for dist in (*found.distributions, *found.untrusted):
        dist = replace(dist, kind=MetadataKind.DPKG)
        owned.metadirs.append(MetadataDir(dist.metadata_dir, root, dist))
        owned.evidence[dist.metadata_dir] = hash_evidence(dist)
    return owned


def installer(dists: list[Distribution]) -> str:
    return "apt-get"


_DPKG_INFO = os.sep + os.path.join(*_DATABASE, "info") + os.sep


def reinstall_command(dists: list[Distribution], prefix: str | None) -> str:
    """apt-get reinstalls the packages (names validated when read, quoted again here), inside
    the image or container root the database belongs to."""
    names = " ".join(shlex.quote(package_spec(d)) for d in dists)
    root = dists[0].metadata_dir.partition(_DPKG_INFO)[0]  # <root>/var/lib/dpkg/info/<pkg>.list
    inside_root = f"chroot {shlex.quote(root)} " if root else ""  # an image or container rootfs
    return f"{inside_root}apt-get install --reinstall {names}"
