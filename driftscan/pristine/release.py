"""The files of a wheel of any NAME==VERSION, installed or not, each verified against that wheel's
own RECORD (what ``patch rebase`` merges onto).

The other sources of this package verify against an *installed* RECORD; a release that is not
installed has none, so the wheel's own RECORD is the promise here: a file is listed only from
it, and its bytes are handed out only when they match its row (hash and size), read no further
than the row's size or the caller's limit. The wheel is looked for as ``find_pristine`` looks
for an installed one's (``--wheels``, uv's cache, pip's cache, then ``--fetch``), through a
stand-in ``Distribution`` of that name and version whose dist-info does not exist; the tags to
fit are the installed distribution's, passed alongside.
"""

from __future__ import annotations

import io
import os
import shlex
from collections.abc import Callable, Iterator

from ..core.errors import DriftscanError
from ..core.values import Distribution, RecordEntry, SourceKind
from ..environment.uv.cache import default_uv_cache
from ..formats.record import hash_text, new_hash, parse_record
from ..fs.confined import read_below
from ..fs.reader import read_regular
from .base import PristineCopy, PristineOptions, Rejected, error_text
from .fetch import fetch_candidates
from .howto import download_line, wheels_dir
from .names import (
    is_name,
    is_version,
    normalize_name,
    parse_wheel_filename,
    wheel_file_tags,
)
from .pipcache import PipCacheIndex, default_pip_cache
from .search import PristineSet
from .uvarchive import ArchiveIndex, UvArchiveCopy
from .wheel import OWN_RECORD_MAX, ZipCopy
from .wheelhouse import Wheelhouse

READ_LIMIT = 16 << 20
_SCHEMES = ("purelib", "platlib")  # the *.data schemes an installer puts in site-packages
# A stand-in's dist-info lives below /dev/null: a path that can never exist, so nothing of an
# installed distribution is read for a release that is not installed.
_NOWHERE = os.devnull
_ISSUES_SHOWN = 20  # RECORD rows refused by its reader, named one by one before "and N more"


class ReleaseError(DriftscanError):
    """A file of a release's wheel that does not verify, or a name or version that is no release."""


class _RecordedFiles:
    """The files a release puts below site-packages, by install path, with their RECORD rows."""

    _rows: dict[str, RecordEntry]

    def files(self) -> list[str]:
        """What the release installs below site-packages, from its RECORD (sorted)."""
        return sorted(self._rows)

    def record_hash(self, rel: str) -> str | None:
        row = self._rows.get(rel)
        return hash_text(row.hash) if row is not None and row.hash is not None else None


class ReleaseWheel(_RecordedFiles):
    """One wheel of a release (a file, a pip cache body or a uv archive) with its own RECORD,
    mapped to the paths it installs below site-packages. A context manager: ``close()`` closes
    the wheel and removes a download."""

    name: str
    version: str
    where: str
    source: SourceKind

    def __init__(self, copy: ZipCopy | UvArchiveCopy, rows: dict[str, RecordEntry], notes: list[str],
                 pset: PristineSet | None = None) -> None:
        info = copy.dist_info or ""
        stem = info[:-len(".dist-info")] if info.endswith(".dist-info") else ""
        parsed = parse_wheel_filename(os.path.basename(copy.path))
        self.name = copy.distribution.name
        self.version = parsed.version if parsed is not None else stem.rpartition("-")[2] or copy.distribution.version
        self.where = copy.where
        self.source = copy.source
        self._copy = copy
        self._pset = pset
        self._rows: dict[str, RecordEntry] = {}  # install path → the row, its path the member's name
        for member, row in rows.items():
            rel, why = installed_path(member, info)
            if rel is None:
                if why:
                    notes.append(f"{self.where}: RECORD row {member!r} skipped ({why})")
            elif rel in self._rows:
                notes.append(f"{self.where}: {member} installs to {rel}, which another row installs too; "
                             "the first is kept")
            else:
                self._rows[rel] = row._replace(path=member)
        self.notes = notes  # what was said while finding and reading it (added freely)

    def __repr__(self) -> str:
        return f"<ReleaseWheel {self.name} {self.version} {self.source.value} {self.where!r}>"

    def __enter__(self) -> ReleaseWheel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self._copy.close()
        finally:
            if self._pset is not None:
                self._pset.close()

    def read(self, rel: str, limit: int = READ_LIMIT) -> bytes | None:
        row = self._rows.get(rel)
        if row is None:
            if installed_path(rel, "")[0] == rel and self._copy.has(RecordEntry(rel, None, None, 0)):
                raise ReleaseError(f"{self._named(rel)}: the wheel holds it, but its own RECORD does not list it")
            return None
        if row.hash is None:
            raise ReleaseError(f"{self._named(rel)}: the wheel's RECORD gives no hash for it, so it cannot be verified")
        out = io.BytesIO()
        why = self._copy.check(row, out, limit)
        if why is not None:
            if why.startswith("not in "):
                why = "its RECORD lists it, but the wheel has no such file"
            raise ReleaseError(f"{self._named(rel)}: {why}")
        return out.getvalue()

    def _named(self, rel: str) -> str:
        member = self._rows[rel].path if rel in self._rows else rel
        return f"{member} of {self.name} {self.version} ({self.where})"


class InstalledRelease(_RecordedFiles):
    """An installed distribution as the release of its own version, for a rebase onto the version
    an upgrade already installed: each file read below its site-packages (no symlink followed) and
    handed out only when it matches the installed RECORD's row; a file edited since the install,
    or one RECORD gives no hash for, is read from the release's wheel instead (looked up on first
    need). The installed RECORD is the promise here, as it is for an audit without a lock."""

    def __init__(self, dist: Distribution, wheel: Callable[[], tuple[ReleaseWheel | None, list[str]]]) -> None:
        self.name = normalize_name(dist.name)
        self.version = dist.version
        self.where = f"the installed {dist.name} {dist.version} ({dist.site_packages})"
        self._dist = dist
        self._rows = {e.path: e for e in dist.entries if installed_path(e.path, "")[0] == e.path}
        self._find_wheel = wheel
        self._wheel: ReleaseWheel | None = None
        self._looked = False
        self.notes: list[str] = []

    def __enter__(self) -> InstalledRelease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._wheel is not None:
            self._wheel.close()

    def read(self, rel: str, limit: int = READ_LIMIT) -> bytes | None:
        row = self._rows.get(rel)
        if row is None:
            return None
        if row.hash is not None and (row.size is None or row.size <= limit):
            try:
                here = read_below(self._dist.site_packages, rel, limit + 1)
                if len(here) <= limit and new_hash(row.hash.algorithm, here).digest() == row.hash.digest:
                    return here
            except (OSError, ValueError):
                pass  # missing, unreadable, a symlink: the wheel's copy instead
        wheel = self._wheel_for(rel)
        data = wheel.read(rel, limit)  # verified against the wheel's own RECORD
        if data is None:
            raise ReleaseError(f"{rel}: the installed {self.name} {self.version} lists it, {wheel.where} has no such file")
        if row.hash is not None and wheel.record_hash(rel) != hash_text(row.hash):
            raise ReleaseError(f"{rel}: the installed {self.name} {self.version} lists it with {hash_text(row.hash)}, "
                               f"{wheel.where} with {wheel.record_hash(rel)}")
        return data

    def _wheel_for(self, rel: str) -> ReleaseWheel:
        if not self._looked:
            self._looked = True
            self._wheel, notes = self._find_wheel()
            self.notes += notes
            if self._wheel is not None:
                self.where += f", edited files from {self._wheel.where}"
        if self._wheel is None:
            raise ReleaseError(f"{rel}: the installed {self.name} {self.version}'s copy was edited since the install "
                               f"(it does not match its RECORD), and no wheel of {self.version} was found: "
                               + "; ".join(self.notes[-1:]))
        return self._wheel


def installed_path(member: str, dist_info: str) -> tuple[str | None, str | None]:
    """Where an installer puts the wheel member ``member`` below site-packages, and None when it
    is none of those: (None, None) for the wheel's own dist-info and for scripts, headers and
    data (installed outside site-packages); (None, why) for a path that is not plainly below it
    (absolute, ``..``, a control character, a backslash) or that would write into a dist-info."""
    if not member or any(ord(ch) < 0x20 or ch == "\x7f" for ch in member):
        return None, "an empty path or one with a control character"
    if "\\" in member or member.startswith("/"):
        return None, "an absolute path or one with a backslash"
    parts = member.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None, "a path that is not plainly below site-packages"
    if parts[0] == dist_info:
        return None, None
    if parts[0].endswith(".data"):
        if len(parts) < 3:
            return None, "a path in a .data directory outside its schemes"
        if parts[1] not in _SCHEMES:
            return None, None
        parts = parts[2:]
    if any(part.endswith(".dist-info") for part in parts[:-1]):
        return None, "a path into another .dist-info directory"
    return "/".join(parts), None


def find_release(name: str, version: str, options: PristineOptions,
                 like: Distribution | None = None) -> tuple[ReleaseWheel | None, list[str]]:
    """The first wheel of ``name``==``version`` (PEP 503 name, PEP 440-equal version) whose tags
    fit ``like``'s installed WHEEL tags (any tags when ``like`` is None or names none), from
    ``--wheels`` directories, uv's cache, pip's HTTP cache, then (only with ``options.fetch``)
    ``pip download``; and a note per source tried and why it gave nothing, ending, when nothing
    was found, with the line that gets the wheel. ReleaseError for a name or version that is
    not one; a bad source is only a note."""
    if not isinstance(name, str) or not is_name(name):
        raise ReleaseError(f"not a valid project name: {name!r}")
    if not isinstance(version, str) or not is_version(version):
        raise ReleaseError(f"not a PEP 440 version: {version!r}")
    version = version.strip()
    canonical = normalize_name(name)
    tags = wheel_file_tags(like.metadata_dir) if like is not None else None
    site = like.site_packages if like is not None else _NOWHERE
    stem = f"{canonical.replace('-', '_')}-{version}"
    probe = Distribution(canonical, version, os.path.join(_NOWHERE, f"{stem}.dist-info"), site)
    notes: list[str] = []
    pset = PristineSet()
    try:
        for candidate in _candidates(probe, options, tags, pset, notes):
            if isinstance(candidate, Rejected):
                notes.append(f"{candidate.source.label} {candidate.path} (rejected: {candidate.reason})")
                continue
            found = _release(candidate, tags, notes, pset)
            if found is not None:
                return found, notes
    except BaseException:
        pset.close()
        raise
    pset.close()
    dest = wheels_dir()
    line = download_line(probe, options.python_version, options.venv, dest, tags)
    if line is not None:
        notes.append(f"{line}, then --wheels {shlex.quote(dest)}")
    return None, notes


def _release(copy: PristineCopy, tags: frozenset[str] | None, notes: list[str],
             pset: PristineSet) -> ReleaseWheel | None:
    """``copy`` as a ReleaseWheel when its own WHEEL tags fit and its own RECORD reads; else None,
    the copy closed and a note saying why."""
    assert isinstance(copy, (ZipCopy, UvArchiveCopy))
    label = f"{copy.source.label} {copy.where}"
    try:
        # --wheels matched the tags already (by file name, or inside for a renamed wheel), and
        # --fetch asked pip for them; a cache's wheel says its tags only inside.
        own = _wheel_tags(copy) if copy.source in (SourceKind.UV_CACHE, SourceKind.PIP_CACHE) else frozenset()
        if tags and own and not own & tags:
            notes.append(f"{label} (its tags {', '.join(sorted(own))} do not fit the installed "
                         f"{', '.join(sorted(tags))})")
            copy.close()
            return None
        rows = _own_record(copy, notes)
    except Exception as exc:  # noqa: BLE001 - a corrupt wheel or archive is a note
        notes.append(f"{label} (unreadable: {error_text(exc)})")
        copy.close()
        return None
    if rows is None:
        notes.append(f"{label} (no readable RECORD of its own)")
        copy.close()
        return None
    return ReleaseWheel(copy, rows, notes, pset if copy.source is SourceKind.FETCH else None)


def _wheel_tags(copy: ZipCopy | UvArchiveCopy) -> frozenset[str]:
    if isinstance(copy, ZipCopy):
        return copy.wheel_tags()
    return wheel_file_tags(os.path.join(copy.path, copy.dist_info), root=copy.path) or frozenset()


def _own_record(copy: ZipCopy | UvArchiveCopy, notes: list[str]) -> dict[str, RecordEntry] | None:
    """The wheel's own RECORD rows by member name, read bounded; None when there is none. A row
    the RECORD reader refuses (a NUL in its path, a malformed hash) is a note."""
    if isinstance(copy, ZipCopy):
        data = copy.own_record_bytes()
    else:
        try:
            data = read_regular(os.path.join(copy.path, copy.dist_info, "RECORD"), OWN_RECORD_MAX,
                                what="RECORD", follow=False, root=copy.path)
        except OSError:
            data = None
    if data is None:
        return None
    parsed = parse_record(data.decode("utf-8", "replace"))
    for issue in parsed.issues[:_ISSUES_SHOWN]:
        notes.append(f"{copy.where}: RECORD row {issue.path!r} skipped ({issue.message})")
    if len(parsed.issues) > _ISSUES_SHOWN:
        notes.append(f"{copy.where}: {len(parsed.issues) - _ISSUES_SHOWN} more RECORD rows skipped")
    return {e.path: e for e in parsed.entries}


def _candidates(probe: Distribution, options: PristineOptions, tags: frozenset[str] | None, pset: PristineSet,
                notes: list[str]) -> Iterator[PristineCopy | Rejected]:
    yield from Wheelhouse(options.wheels).candidates(probe, notes, tags)
    uv_dir = options.uv_cache or default_uv_cache()
    if not uv_dir or not os.path.isdir(uv_dir):
        notes.append(f"uv's cache ({_absent(options.uv_cache)})")
    else:
        archives = list(ArchiveIndex(uv_dir).archives(probe))
        if not archives:
            notes.append(f"uv's cache {uv_dir} (no archive of {probe.name}-{probe.version})")
        for archive, info in archives:
            yield UvArchiveCopy(archive, info, probe)
    pip_dir = options.pip_cache or default_pip_cache()
    if not pip_dir or not os.path.isdir(pip_dir):
        notes.append(f"pip's cache ({_absent(options.pip_cache)})")
    else:
        yield from PipCacheIndex(pip_dir).candidates(probe, notes)
    if not options.fetch:
        notes.append("--fetch (not asked for)")
    else:
        yield from fetch_candidates(probe, options.python_version, options.venv, pset.workdir, notes, tags=tags)


def _absent(given: str | None) -> str:
    return f"{given}: no such directory" if given else "none found"


__all__ = ["ReleaseError", "ReleaseWheel", "find_release", "installed_path"]
