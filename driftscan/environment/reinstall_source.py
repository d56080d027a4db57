"""Where a reinstall takes its files from, and whether uv then relinks an edited cache archive.

uv keeps one cache entry per *source* of a wheel (docs/reinstall-matrix.md, measured with uv 0.13):
``wheels-v*/pypi/<name>/<version-tag>`` for the package registry, ``wheels-v*/index/<h>/…`` for
another index or a ``--find-links`` directory, ``wheels-v*/url/<h>/…`` for a wheel named by path or
URL. Each entry is a symlink to the unpacked wheel in ``archive-v0/<id>/``, beside a ``.rev`` file
recording the wheel file's ctime when it was unpacked. ``uv pip install --reinstall`` (and its alias
``--force-reinstall``) relinks the archive when the reinstall names the same source and, for a local
wheel, its ctime is unchanged; a registry wheel is fetched again (``--reinstall`` refreshes it), and
any other source gets a fresh archive. An edit made through a hard link into the archive survives
only the first case.

Nothing here runs an interpreter or an installer: the facts are read from the cache (a place
driftscan's own options and environment name) and from ``stat`` of the wheel files.
"""

from __future__ import annotations

import enum
import json
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, replace
from urllib.parse import unquote, urlsplit

from ..core.errors import ConfigError
from ..core.values import Distribution
from ..fs.reader import read_regular


class SourceKind(str, enum.Enum):
    """What a reinstall installs from (``plan --from``)."""

    WHEEL = "wheel"  # a wheel file
    FIND_LINKS = "find-links"  # a directory of wheels (--find-links DIR)
    INDEX = "index"  # the index the environment's installer is configured with
    UNKNOWN = "unknown"  # not told, and nothing on disk tells


class ToldBy(str, enum.Enum):
    """How driftscan knows the source it assumes."""

    FLAG = "--from"
    DIRECT_URL = "direct_url.json"
    INSTALLER = "INSTALLER"
    UV_CACHE = "uv-cache"
    UV_CACHE_JSON = "uv_cache.json"  # its timestamp is the ctime of the wheel file uv installed from
    NOTHING = "nothing"


class Bucket(str, enum.Enum):
    """The kind of uv cache entry an archive was unpacked for."""

    REGISTRY = "pypi"  # the package registry, fetched over HTTP
    INDEX = "index"  # another index or a find-links directory
    URL = "url"  # a wheel named by path or URL
    OTHER = "other"  # an entry of a layout driftscan does not know


class Relink(str, enum.Enum):
    """What ``uv pip install --reinstall`` from a source does with an edited cache archive."""

    RELINKS = "relinks"  # links the edited archive again: the edit survives
    UNPACKS = "unpacks"  # unpacks the wheel afresh: the edit is wiped (in this venv)
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class ReinstallSource:
    kind: SourceKind
    path: str | None = None  # the wheel file or find-links directory (absolute)
    told_by: tuple[ToldBy, ...] = ()
    detail: str = ""

    def as_json(self) -> dict[str, object]:
        return {"kind": self.kind.value, "path": self.path, "told_by": [t.value for t in self.told_by],
                "detail": self.detail}


@dataclass(frozen=True)
class CacheEntry:
    """The uv cache entry whose archive holds an installed file."""

    bucket: Bucket
    entry: str  # the entry's symlink in wheels-v*/…
    archive: str  # archive-v0/<id>
    ctime_ns: int | None  # the wheel's ctime the .rev recorded (local wheels), when readable
    filename: str | None  # the wheel's file name the .rev recorded
    http: bool = False  # fetched over HTTP (a ``.http`` cache policy beside the entry, no ``.rev``)


def parse_source(value: str) -> ReinstallSource:
    """``--from``'s value: a path to a ``.whl``, a directory of wheels, or the literal ``index``."""
    if value == "index":
        return ReinstallSource(SourceKind.INDEX, None, (ToldBy.FLAG,), "the index, named by --from")
    path = os.path.abspath(value)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise ConfigError(f"--from {value}: {exc.strerror or exc} (give a wheel file, a directory of wheels, "
                          "or index)") from None
    if stat.S_ISDIR(st.st_mode):
        return ReinstallSource(SourceKind.FIND_LINKS, path, (ToldBy.FLAG,), "a find-links directory, named by --from")
    if stat.S_ISREG(st.st_mode) and path.endswith(".whl"):
        return ReinstallSource(SourceKind.WHEEL, path, (ToldBy.FLAG,), "a wheel file, named by --from")
    raise ConfigError(f"--from {value}: neither a .whl file nor a directory (give a wheel file, a directory of "
                      "wheels, or index)")


def _wheel_path(dist: Distribution) -> str | None:
    url = (dist.direct_url or {}).get("url")
    if not isinstance(url, str) or not url.startswith("file://") or "archive_info" not in (dist.direct_url or {}):
        return None
    path = unquote(urlsplit(url).path)
    return path if path.endswith(".whl") and os.path.isabs(path) else None


def installed_source(dist: Distribution, entry: CacheEntry | None = None) -> ReinstallSource:
    """The source ``dist`` was installed from, as far as its metadata and uv's cache tell."""
    installer = (dist.installer or "").lower() or None
    if dist.direct_url is not None:
        wheel = _wheel_path(dist)
        if wheel is not None:
            return ReinstallSource(SourceKind.WHEEL, wheel, (ToldBy.DIRECT_URL,),
                                   f"direct_url.json names the wheel file {wheel}")
        return ReinstallSource(SourceKind.UNKNOWN, None, (ToldBy.DIRECT_URL,),
                               "direct_url.json names a URL or a directory, not a local wheel file")
    if installer is None:
        return ReinstallSource(SourceKind.UNKNOWN, None, (ToldBy.NOTHING,), "no INSTALLER and no direct_url.json")
    told = (ToldBy.INSTALLER, ToldBy.DIRECT_URL)
    if entry is not None and entry.bucket in (Bucket.REGISTRY, Bucket.INDEX):
        what = "the package registry" if entry.bucket is Bucket.REGISTRY else \
            "an index fetched over HTTP" if entry.http else "a find-links directory (or a local index)"
        return ReinstallSource(SourceKind.INDEX, None, (*told, ToldBy.UV_CACHE),
                               f"INSTALLER {installer}, no direct_url.json, and uv's cache entry is for {what}")
    return ReinstallSource(SourceKind.INDEX, None, told,
                           f"INSTALLER {installer} and no direct_url.json: an index or a find-links directory")


def installed_ctime(dist: Distribution) -> int | None:
    """The ctime (ns) of the wheel file uv installed ``dist`` from, as its ``uv_cache.json`` records
    it (``{"timestamp": {"secs_since_epoch", "nanos_since_epoch"}}``); None without one."""
    try:
        data = json.loads(read_regular(os.path.join(dist.metadata_dir, "uv_cache.json"), 64 << 10,
                                       what="uv_cache.json"))
        stamp = data["timestamp"]
        secs, nanos = stamp["secs_since_epoch"], stamp["nanos_since_epoch"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if type(secs) is not int or type(nanos) is not int or not 0 <= nanos < 10**9 or secs < 0:
        return None
    return secs * 1_000_000_000 + nanos


def wheels_of(directory: str, dist: Distribution) -> list[str]:
    """The wheels of ``dist`` (its name and installed version) in ``directory``."""
    stem = f"{re.sub(r'[-_.]+', '_', dist.name).lower()}-{str(dist.version).lower()}-"
    try:
        return sorted(e.path for e in os.scandir(directory) if e.name.lower().startswith(stem)
                      and e.name.endswith(".whl") and e.is_file())
    except OSError:
        return []


def _wheel_of(directory: str, dist: Distribution) -> str | None:
    """The wheel of ``dist`` in ``directory``, when there is exactly one."""
    found = wheels_of(directory, dist)
    return found[0] if len(found) == 1 else None


def wheel_version(path: str) -> str | None:
    """The version a wheel file's name gives (``name-version-…whl``)."""
    parts = os.path.basename(path).split("-")
    return parts[1] if len(parts) >= 5 else None


def mismatch(source: ReinstallSource, dist: Distribution) -> str | None:
    """Why the reinstall from ``source`` is not a reinstall of ``dist`` as installed (another
    version, no wheel of it in the directory), or None."""
    if source.kind is SourceKind.WHEEL and source.path:
        version = wheel_version(source.path)
        if version is not None and version.lower() != str(dist.version).lower():
            return (f"{os.path.basename(source.path)} is version {version}, and {dist.name} {dist.version} is "
                    "installed: that is a change of version, not a reinstall, and these predictions are for a "
                    "reinstall of the same version (the new version's files replace the old ones)")
    if source.kind is SourceKind.FIND_LINKS and source.path and not wheels_of(source.path, dist):
        return (f"{source.path} holds no wheel of {dist.name} {dist.version}: the reinstall below fails as given "
                "(it changes nothing); put the wheel there or name another source with --from")
    return None


def confirmed(source: ReinstallSource, dist: Distribution) -> ReinstallSource:
    """``source``, with ``uv_cache.json`` among what told when its wheel is the very file uv
    installed ``dist`` from (the same ctime, to the nanosecond), and said so when it is not."""
    if source.kind not in (SourceKind.WHEEL, SourceKind.FIND_LINKS) or source.path is None:
        return source
    stamp = installed_ctime(dist)
    if stamp is None:
        return source
    wheel = source.path if source.kind is SourceKind.WHEEL else _wheel_of(source.path, dist)
    ctime = _ctime_ns(wheel) if wheel else None
    if ctime is None:
        return source
    if ctime == stamp:
        return replace(source, told_by=(*source.told_by, ToldBy.UV_CACHE_JSON),
                       detail=f"{source.detail}; {os.path.basename(wheel or '')} is the very file uv installed it "
                              "from (uv_cache.json records its ctime)")
    return replace(source, detail=f"{source.detail}; {os.path.basename(wheel or '')} is not the file uv installed "
                                  "it from, or changed since (uv_cache.json records another ctime)")


_REV_INT = {0xcc: 1, 0xcd: 2, 0xce: 4, 0xcf: 8}


def _read_rev(path: str) -> tuple[int | None, str | None]:
    """(ctime in ns, wheel file name) from an entry's ``.rev`` (msgpack ``[[secs, nanos], id, …,
    filename, …]``); (None, None) for anything else."""
    try:
        with open(path, "rb") as f:
            data = f.read(4096)
    except OSError:
        return None, None
    pos = 0

    def integer() -> int | None:
        nonlocal pos
        if pos >= len(data):
            return None
        tag = data[pos]
        if tag < 0x80:
            pos += 1
            return tag
        width = _REV_INT.get(tag)
        if width is None or pos + 1 + width > len(data):
            return None
        value = int.from_bytes(data[pos + 1:pos + 1 + width], "big")
        pos += 1 + width
        return value

    if data[:2] != b"\x92\x92" and not (len(data) > 1 and 0x90 <= data[0] <= 0x9f and data[1] == 0x92):
        return None, None
    pos = 2
    secs, nanos = integer(), integer()
    ctime = secs * 1_000_000_000 + nanos if secs is not None and nanos is not None and nanos < 10**9 else None
    names = re.findall(rb"[A-Za-z0-9_.+!-]+\.whl", data)
    return ctime, names[0].decode() if names else None


def _name_forms(name: str) -> list[str]:
    base = re.sub(r"[-_.]+", "-", name).lower()
    return list(dict.fromkeys((base, base.replace("-", "_"))))


def cache_entry(cache_dir: str | None, copy_path: str, dist_name: str) -> CacheEntry | None:
    """The ``wheels-v*`` entry linking to the archive ``copy_path`` (a file in
    ``<cache>/archive-v0/<id>/``) is in; None when no entry of ``dist_name`` links to it."""
    if not cache_dir:
        return None
    archives = os.path.join(cache_dir, "archive-v0")
    rel = os.path.relpath(copy_path, archives)
    archive_id = rel.split(os.sep, 1)[0]
    if rel.startswith("..") or not archive_id:
        return None
    archive = os.path.join(archives, archive_id)
    try:
        versions = sorted(e.path for e in os.scandir(cache_dir) if e.name.startswith("wheels-v") and e.is_dir())
    except OSError:
        return None
    for wheels in versions:
        try:
            buckets = [e for e in os.scandir(wheels) if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        for bucket in buckets:
            kind = next((b for b in Bucket if b.value == bucket.name), Bucket.OTHER)
            parents = [bucket.path] if kind is Bucket.REGISTRY else _subdirs(bucket.path)
            for parent in parents:
                for name in _name_forms(dist_name):
                    found = _linking(os.path.join(parent, name), archive_id)
                    if found is not None:
                        ctime, filename = _read_rev(found + ".rev")
                        http = not os.path.exists(found + ".rev") and os.path.exists(found + ".http")
                        return CacheEntry(kind, found, archive, ctime, filename, http)
    return None


def _subdirs(path: str) -> list[str]:
    try:
        return [e.path for e in os.scandir(path) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _linking(directory: str, archive_id: str) -> str | None:
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return None
    for entry in entries:
        if entry.is_symlink():
            try:
                target = os.readlink(entry.path)
            except OSError:
                continue
            if os.path.basename(os.path.normpath(target)) == archive_id:
                return entry.path
    return None


def _ctime_ns(path: str) -> int | None:
    try:
        return os.stat(path).st_ctime_ns
    except OSError:
        return None


def _wheel_in(directory: str, filename: str | None) -> str | None:
    return os.path.join(directory, filename) if filename and os.path.isfile(os.path.join(directory, filename)) \
        else None


def relink(entry: CacheEntry | None, source: ReinstallSource) -> tuple[Relink, str]:
    """Whether ``uv pip install --reinstall`` from ``source`` links the archive ``entry`` is for again
    (the edit survives) or unpacks the wheel afresh (it is wiped), with the reason."""
    if entry is None:
        return Relink.UNKNOWN, ("no entry of uv's cache links to the edited archive that driftscan could read, so "
                                "which sources reuse it is not known")
    where = f"uv's cache entry {entry.entry}"
    if source.kind is SourceKind.UNKNOWN:
        return Relink.UNKNOWN, (f"the reinstall's source is not known ({source.detail}): from the source the edited "
                                f"archive was unpacked for ({where}) uv links it back and the edit survives; from "
                                "any other (a wheel file, another find-links directory) uv unpacks the wheel afresh "
                                "and the edit is wiped; say which with --from")
    if source.kind is SourceKind.INDEX:
        if entry.bucket is Bucket.REGISTRY:
            return Relink.UNPACKS, (f"the edited archive is the package registry's ({where}): --reinstall fetches "
                                    "the wheel again and unpacks it afresh (with --offline uv would link the "
                                    "edited archive back)")
        if entry.bucket is Bucket.INDEX and entry.http:
            return Relink.UNKNOWN, (f"the edited archive was fetched from an index over HTTP ({where}): measured for "
                                    "the package registry, --reinstall fetches the wheel again and unpacks it "
                                    "afresh (wiped), while a reinstall uv serves from its cache (--offline) links "
                                    "the edited archive back (survives); not measured for other indexes")
        if entry.bucket is Bucket.INDEX:
            # "The index" is whatever the installer is set up with when the command runs: the same
            # find-links directory, or the package registry (a real reinstall from PyPI of a
            # distribution installed from a find-links directory unpacked afresh).
            return Relink.UNKNOWN, (f"the edited archive was unpacked from a local find-links directory or index "
                                    f"({where}): if the reinstall's index is that same source, uv links it back "
                                    "and the edit survives; from the package registry or another directory or "
                                    "index uv unpacks the wheel afresh and the edit is wiped; name the directory "
                                    "with --from DIR to know")
        return Relink.UNPACKS, (f"the edited archive was unpacked for a wheel file or URL ({where}); a reinstall "
                                "from an index uses another cache entry and unpacks the wheel afresh")
    assert source.path is not None
    if source.kind is SourceKind.WHEEL:
        if entry.bucket is not Bucket.URL:
            return Relink.UNPACKS, (f"the edited archive was unpacked for an index or find-links source ({where}); "
                                    f"a reinstall from the wheel file {source.path} uses another cache entry and "
                                    "unpacks the wheel afresh")
        return _same_file(entry, source.path, where, "the wheel file")
    if entry.bucket is not Bucket.INDEX:
        return Relink.UNPACKS, (f"the edited archive was unpacked for a wheel file or URL ({where}); a reinstall "
                                f"from the directory {source.path} uses another cache entry and unpacks afresh")
    wheel = _wheel_in(source.path, entry.filename)
    if wheel is None:
        return Relink.UNPACKS, (f"{source.path} has no {entry.filename or 'wheel the edited archive came from'}: "
                                f"the reinstall installs another wheel, not the edited archive ({where})")
    return _same_file(entry, wheel, where, "the find-links wheel")


def refetched(entries: Sequence[str], offline: bool) -> bool:
    """Whether uv fetches the wheel these index entries name again on a reinstall: fetched over
    HTTP (a ``.http`` cache policy beside the entry, no ``.rev``) and not ``--offline``. uv then
    unpacks it into a new archive and repoints the entry; a local wheel (``.rev``: a find-links
    directory or a ``file://`` index), or any wheel offline, is served from the archive it has
    (measured: uv sync --reinstall-package, uv 0.13)."""
    return not offline and bool(entries) and all(
        os.path.lexists(e + ".http") and not os.path.lexists(e + ".rev") for e in entries)


def sync_relink(entry: CacheEntry, offline: bool) -> tuple[Relink, str]:
    """What ``uv sync`` that reinstalls a distribution (``--reinstall-package``, or a forced sync)
    does with the edited archive ``entry`` names: the lock fixes the source, so the archive of that
    source is the one uv installs from. Used by ``plan`` (its ``uv sync`` step) and ``guard``."""
    if refetched([entry.entry], offline):
        return Relink.UNPACKS, (f"uv sync fetches the wheel again over HTTP ({entry.entry}) and unpacks it into a new "
                                "archive: the venv gets a clean copy, while the edited archive stays in uv's cache "
                                "(no longer indexed)")
    why = "uv runs --offline" if offline else f"the wheel is a local file ({entry.entry})"
    return Relink.RELINKS, (f"{why}: uv sync links the edited archive {entry.archive} back, and the edit with it "
                            "(clean it from uv's cache first)")


def _same_file(entry: CacheEntry, wheel: str, where: str, what: str) -> tuple[Relink, str]:
    ctime = _ctime_ns(wheel)
    if entry.ctime_ns is None or ctime is None:
        return Relink.UNKNOWN, (f"cannot compare {what} {wheel} with {where} (its .rev is unreadable): if it is the "
                                "file the archive was unpacked from, uv links the edited archive back, otherwise it "
                                "unpacks afresh")
    if ctime == entry.ctime_ns:
        return Relink.RELINKS, (f"{what} {wheel} is the one the edited archive was unpacked from ({where}: same "
                                "ctime, to the nanosecond): uv links the edited archive back")
    return Relink.UNPACKS, (f"{what} {wheel} changed since the archive was unpacked ({where} recorded another "
                            "ctime): uv unpacks it afresh")


_PIP_SEEN: dict[tuple[str, int], bool] = {}


def pip_installed(site_packages: str) -> bool:
    """Whether a pip distribution is installed in ``site_packages``: a ``pip-*.dist-info`` there
    (read from the directory listing, never by running the environment's interpreter; remembered
    while the directory's mtime stays the same)."""
    try:
        key = (os.path.abspath(site_packages), os.stat(site_packages).st_mtime_ns)
    except OSError:
        return False
    known = _PIP_SEEN.get(key)
    if known is None:
        try:
            with os.scandir(site_packages) as entries:
                known = any(re.fullmatch(r"pip-[0-9][^/]*\.dist-info", e.name, re.IGNORECASE) is not None
                            and e.is_dir() for e in entries)
        except OSError:
            return False
        if len(_PIP_SEEN) > 256:
            _PIP_SEEN.clear()
        _PIP_SEEN[key] = known
    return known
