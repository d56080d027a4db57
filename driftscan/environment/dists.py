"""Find installed distributions (*.dist-info, *.egg-info) and read what verify needs from them."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..fs.reader import LIMITS, read_regular, read_regular_stat
from ..core.values import Distribution, MetadataKind, Problem, RecordEntry, RecordRows
from ..formats.record import parse_record
from ..fs.containment import Containment
from .target import is_prefix_site_packages, containment_for_site_packages

if TYPE_CHECKING:
    from ..caches.statcache import DigestCache

# The cap of each metadata file read here is its kind's (fileio.LIMITS); other files get this.
_OTHER_LIMIT = 1 << 20
MAX_ISSUES = 100  # malformed rows reported one by one per RECORD
# Installers whose RECORD is known to describe the installed files exactly (docs/installers.md §1, §4).
TRUSTED_INSTALLERS = frozenset({"pip", "uv", "poetry", "pdm", "installer", "pipx", "hatch"})


def trusted_installer(dist: Distribution) -> bool:
    return dist.installer is not None and dist.installer.lower() in TRUSTED_INSTALLERS


@dataclass(frozen=True)
class MetadataDir:
    """A *.dist-info or *.egg-info found in site-packages, with what was wrong reading it."""

    path: str
    site_packages: str
    distribution: Distribution | None  # None: orphaned (no METADATA or no RECORD)
    problems: tuple[Problem, ...] = ()
    missing: tuple[str, ...] = ()  # for orphaned dirs: which of METADATA/RECORD is absent
    has_file_list: bool = True  # egg-info: installed-files.txt present
    notes: tuple[Problem, ...] = ()  # what was checked against what, where not its own RECORD


@dataclass
class _Reading:
    containment: Containment
    problems: list[Problem] = field(default_factory=list)
    notes: list[Problem] = field(default_factory=list)

    def text(self, path: str) -> str | None:
        return self.read(path)[0]

    def read(self, path: str) -> tuple[str | None, os.stat_result | None]:
        """The file's text and its stat, both of one open descriptor: a regular file inside the
        environment (a symlink only into it or a known cache), capped by its kind's size."""
        name = os.path.basename(path)
        kind = name if name in LIMITS else None
        try:
            real = self.containment.readable(path)
            data, st = read_regular_stat(real, LIMITS[kind] if kind else _OTHER_LIMIT, what=kind or name,
                                         follow=False)
        except FileNotFoundError:
            return None, None
        except OSError as exc:
            self.problems.append(Problem(path, f"cannot read: {exc.strerror or exc}"))
            return None, None
        try:
            return data.decode("utf-8"), st
        except UnicodeDecodeError:
            self.problems.append(Problem(path, "not valid UTF-8; undecodable bytes kept as escapes"))
            return data.decode("utf-8", "surrogateescape"), st


_DIR_NAME = re.compile(r"^(?P<name>.+?)-(?P<version>[^-]+?)(?:-py\d.*)?\.(?:dist|egg)-info$")


def _header(text: str, wanted: str) -> str:
    """The first ``wanted:`` header (name compared case-insensitively) of an RFC 822 header block."""
    for line in text.split("\n"):
        if not line.strip():
            break  # the body starts here
        if line[0] in " \t":
            continue  # a folded continuation line
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == wanted:
            return value.strip()
    return ""


def _name_version(meta_text: str | None, dirname: str) -> tuple[str, str]:
    name = version = ""
    if meta_text:
        name, version = _header(meta_text, "name"), _header(meta_text, "version")
    match = _DIR_NAME.match(dirname)
    if match:
        name = name or match.group("name")
        version = version or match.group("version")
    return name or dirname, version or "unknown"


def _read_dist_info(path: str, site: str, containment: Containment, cache: DigestCache | None = None,
                    records: bool = True) -> MetadataDir:
    absent = tuple(n for n in ("METADATA", "RECORD") if not os.path.lexists(os.path.join(path, n)))
    if absent:
        return MetadataDir(path, site, None, missing=absent)
    reading = _Reading(containment)
    if not records:  # who is installed, not what: name, version and installer
        name, version = _name_version(reading.text(os.path.join(path, "METADATA")), os.path.basename(path))
        installer_text = reading.text(os.path.join(path, "INSTALLER"))
        dist = Distribution(name=name, version=version, metadata_dir=path, site_packages=site,
                            kind=MetadataKind.DIST_INFO,
                            installer=installer_text.strip() if installer_text is not None else None)
        return MetadataDir(path, site, dist, tuple(reading.problems))
    record_path = os.path.join(path, "RECORD")
    read_at = time.time_ns()
    record, record_stat = reading.read(record_path)
    # METADATA may be a dangling link into a cleaned uv cache (--link-mode symlink): the directory
    # name still says who this is, and METADATA's own RECORD row reports it missing.
    meta = reading.text(os.path.join(path, "METADATA"))
    if record is None:
        if not reading.problems:
            reading.problems.append(Problem(record_path, "cannot read: dangling symlink"))
        name, version = _name_version(meta, os.path.basename(path))
        dist = Distribution(name=name, version=version, metadata_dir=path, site_packages=site)
        return MetadataDir(path, site, dist, tuple(reading.problems), has_file_list=False)
    assert record_stat is not None  # read() gives the text and its stat together
    linked = _app_data_record(path, record, reading) if os.path.islink(path) else None
    if linked is not None:
        record, cache = linked, None  # (the merged text is not the file the cache would key on)
    installer_text = reading.text(os.path.join(path, "INSTALLER"))
    installer = installer_text.strip() if installer_text is not None else None
    # Hex digests are tolerated only where no installer vouches for the RECORD (Debian style).
    allow_hex = installer is None
    parsed = cache.parsed_record(record_path, record_stat, allow_hex) if cache is not None else None
    if parsed is None:
        parsed = parse_record(record, allow_hex=allow_hex)
        if cache is not None:
            cache.remember_record(record_path, record_stat, allow_hex, parsed, read_at)
    problems = list(reading.problems)
    problems += [
        Problem(record_path, f"line {i.line}: {i.message}" + (f" ({i.path})".replace("\0", "\\0") if i.path else ""))
        for i in parsed.issues[:MAX_ISSUES]
    ]
    if len(parsed.issues) > MAX_ISSUES:  # a binary file read as a RECORD: its first lines say enough
        problems.append(Problem(record_path, f"{len(parsed.issues) - MAX_ISSUES} more malformed rows"))
    direct_url = None
    direct_path = os.path.join(path, "direct_url.json")
    direct_text = reading.text(direct_path)
    if direct_text is not None:
        direct_url, why = _direct_url(direct_text)
        if why:
            problems.append(Problem(direct_path, why))
    entries, duplicates = _dedupe(_target_rows(parsed.entries, site))
    problems += [Problem(record_path, message) for message in duplicates]
    name, version = _name_version(meta, os.path.basename(path))
    dist = Distribution(
        name=name,
        version=version,
        metadata_dir=path,
        site_packages=site,
        kind=MetadataKind.DIST_INFO,
        installer=installer,
        entries=entries,
        direct_url=direct_url,
        requested=os.path.exists(os.path.join(path, "REQUESTED")),
    )
    # A RECORD with not one well-formed row (binary junk) lists nothing to check: unverifiable, not clean.
    has_list = not parsed.issues or bool(set(parsed.entries.lines) - {i.line for i in parsed.issues})
    return MetadataDir(path, site, dist, tuple(problems), has_file_list=has_list, notes=tuple(reading.notes))


# virtualenv --symlink-app-data links a venv's seed packages (pip, setuptools) from an unpacked
# "image" of each wheel in its app-data, and writes the image a RECORD of the links only
# ("pip,,", "pip-26.3.dist-info,,", "../../../bin/pip,,"). The wheel itself is kept beside the
# images, in <app-data>/wheel/house/: its RECORD has every file's hash (docs/environments.md).
_IMAGE = re.compile(r"^(?P<wheel>.+)[\\/]\d+\.\d+[\\/]image[\\/]\d+[\\/]SymlinkPipInstall[\\/](?P<stem>[^\\/]+)$")


_WHEEL_LIMIT = 256 << 20  # pip's and setuptools' wheels are 1-2 MB


_SHA256_HEX = re.compile(r"[0-9a-f]{64}\Z")


def _house_wheel(house: str, dist_info: str, digest: str, reading: _Reading) -> str:
    """The wheel an image is made of, for virtualenv versions that name an image by the wheel's
    sha256 and keep the wheel as ``house/<index>/<name>-<version>-<tags>.whl``: the one wheel of
    that name and version there (its digest is checked by the caller)."""
    name_version = dist_info[: -len(".dist-info")] if dist_info.endswith(".dist-info") else dist_info
    try:
        indexes = sorted(os.listdir(house))
    except OSError as exc:
        raise OSError(f"{house}: {exc.strerror or exc}") from None
    for index in indexes[:64]:
        folder = os.path.join(house, index)
        if reading.containment.resolve(folder) is None:
            continue
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            if name.startswith(name_version + "-") and name.endswith(".whl"):
                return os.path.join(folder, name)
    raise OSError(f"no {name_version} wheel in {house} (the image is named by its sha256 {digest})")


def _embed_dirs() -> Iterator[str]:
    """Where virtualenv keeps the wheels it embeds (``virtualenv/seed/wheels/embed``): the
    virtualenv of driftscan's own environment, one installed by ``uv tool`` or pipx, and those
    unpacked in uv's cache (``uv tool run``, UV_CACHE_DIR or uv's default). Places
    driftscan's own environment names, never the audited tree; a wheel found here is used only
    when its sha256 is the image's name."""
    import importlib.util
    import glob

    spec = importlib.util.find_spec("virtualenv")  # found, not imported
    if spec is not None and spec.origin:
        yield os.path.join(os.path.dirname(spec.origin), "seed", "wheels", "embed")
    home = os.path.expanduser("~")
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
    venvs = [os.path.join(os.environ.get("UV_TOOL_DIR") or os.path.join(data, "uv", "tools"), "virtualenv"),
             os.path.join(os.environ.get("PIPX_HOME") or os.path.join(data, "pipx"), "venvs", "virtualenv"),
             os.path.join(home, ".local", "pipx", "venvs", "virtualenv")]
    embed = os.path.join("virtualenv", "seed", "wheels", "embed")
    for venv in venvs:
        yield from sorted(glob.glob(os.path.join(glob.escape(venv), "lib", "python3*", "site-packages", embed)))[:8]
    # `uv tool run --from virtualenv ...` runs a virtualenv unpacked in uv's cache (archive-v0/<id>/).
    from .uv.cache import default_uv_cache

    uv_cache = default_uv_cache()
    if uv_cache:
        archives = os.path.join(glob.escape(uv_cache), "archive-v*", "*")
        for pattern in (os.path.join(archives, embed), os.path.join(archives, "lib", "python3*", "site-packages", embed)):
            yield from sorted(glob.glob(pattern))[:32]


def _embedded_wheel(dist_info: str, digest: str) -> tuple[str, bytes] | None:
    """The wheel virtualenv embeds that an image named ``digest`` was unpacked from (virtualenv
    before its periodic update keeps none in ``house/``): one of that name and version whose
    sha256 is the image's name."""
    name_version = dist_info[: -len(".dist-info")] if dist_info.endswith(".dist-info") else dist_info
    for folder in dict.fromkeys(_embed_dirs()):
        try:
            names = sorted(os.listdir(folder))[:256]
        except OSError:
            continue
        for name in names:
            if not (name.startswith(name_version + "-") and name.endswith(".whl")):
                continue
            wheel = os.path.join(folder, name)
            try:
                data = read_regular(wheel, _WHEEL_LIMIT, what="wheel")
            except OSError:
                continue
            if hashlib.sha256(data).hexdigest() == digest:
                return wheel, data
    return None


def _app_data_record(path: str, image_record: str, reading: _Reading) -> str | None:
    """A symlinked dist-info's RECORD taken from the wheel virtualenv's image was made of: the
    wheel's rows, plus the image's rows outside site-packages (bin/ scripts) and its
    ``*.virtualenv`` marker, which virtualenv wrote. None when ``path`` is no virtualenv image
    or the wheel cannot be read (then a problem says so)."""
    real = reading.containment.resolve(path)
    match = _IMAGE.match(os.path.dirname(real)) if real else None
    if match is None:
        return None
    import zipfile  # ~7 ms at start-up; only virtualenv app-data links need it

    house, stem = os.path.join(match.group("wheel"), "house"), match.group("stem")
    wheel = os.path.join(house, stem + ".whl")
    member = f"{os.path.basename(path)}/RECORD"
    embedded = None
    try:
        if not os.path.lexists(wheel) and _SHA256_HEX.match(stem):
            try:
                wheel = _house_wheel(house, os.path.basename(path), stem, reading)
            except OSError as exc:
                # No wheel in house/: the image was unpacked from the wheel virtualenv embeds
                # (before its periodic update has run). The image's own RECORD lists only links.
                embedded = _embedded_wheel(os.path.basename(path), stem)
                if embedded is None:
                    raise OSError(f"{exc}, nor among the wheels the virtualenv driftscan can find embeds; the "
                                  "image's own RECORD lists only the links, without hashes") from None
                wheel = embedded[0]
        if embedded is not None:
            data = embedded[1]  # its sha256 is the image's name: these are the bytes unpacked
        else:
            if reading.containment.resolve(wheel) is None:
                raise OSError(f"{wheel} resolves outside the environment and the caches driftscan knows")
            data = read_regular(wheel, _WHEEL_LIMIT, what="wheel")
        if _SHA256_HEX.match(stem) and os.path.basename(os.path.dirname(wheel)) != "house" \
                and hashlib.sha256(data).hexdigest() != stem:
            raise OSError(f"its sha256 is not the image's name {stem}")
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            info = archive.getinfo(member)
            if info.file_size > LIMITS["RECORD"]:
                raise OSError(f"{member} is {info.file_size} bytes, over the RECORD limit")
            text = archive.read(info).decode("utf-8")
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        reading.problems.append(Problem(path, f"linked from virtualenv's app-data, but its wheel {wheel} cannot be "
                                              f"read ({exc}); only the links are checked"))
        return None
    source = ("the wheel virtualenv embeds" if embedded is not None
              else "the wheel in virtualenv's app-data wheel/house/")
    reading.notes.append(Problem(path, f"linked from virtualenv's app-data image {os.path.dirname(real or path)}: "
                                       f"checked against {source}, {wheel} (the image's own RECORD lists only "
                                       "the links, without hashes)"))
    outside = [line for line in image_record.splitlines()
               if line.startswith("../") or line.split(",", 1)[0].endswith(".virtualenv")]
    return text.rstrip("\n") + "\n" + "\n".join(outside) + ("\n" if outside else "")


# pip install --target DIR installs into a temporary prefix, then moves its site-packages' content
# and bin/ into DIR without rewriting RECORD: script rows stay "../../bin/NAME" (relative to the
# temporary lib/python/site-packages) while the file is DIR/bin/NAME (docs/environments.md).
_PIP_TARGET_BIN = "../../bin/"


def _target_rows(entries: RecordRows, site: str) -> RecordRows:
    """RECORD rows of a ``pip install --target`` directory, pointed at where pip put the files.
    Only in a directory that is no interpreter's site-packages (whose ../../bin is the prefix's
    bin/), and only rows whose file is in DIR/bin and not where the row says."""
    if not any(p.startswith(_PIP_TARGET_BIN) for p in entries.paths) or is_prefix_site_packages(site):
        return entries
    out = []
    for e in entries:
        name = e.path[len(_PIP_TARGET_BIN):] if e.path.startswith(_PIP_TARGET_BIN) else ""
        if name and "/" not in name and name not in (".", "..") and os.path.lexists(os.path.join(site, "bin", name)):
            e = e._replace(path="bin/" + name)
        out.append(e)
    return RecordRows(out)


def _agree(a: RecordEntry, b: RecordEntry) -> bool:
    """Two rows of one path that do not contradict each other (one may say less)."""
    return (a.hash is None or b.hash is None or a.hash[:2] == b.hash[:2]) and \
        (a.size is None or b.size is None or a.size == b.size)


def _dedupe(entries: RecordRows) -> tuple[RecordRows, list[str]]:
    """One entry per path, and the contradictions. A path listed hashless and hashed (pip writes
    a wheel-shipped .pyc so) keeps the hashed row; listed with two different hashes or sizes it
    is reported, and only its presence is checked: neither row can be trusted over the other."""
    if len(set(entries.paths)) == len(entries.paths):
        return entries, []  # the common case: every path once, the rows as parsed
    by_path: dict[str, RecordEntry] = {}
    conflicts: dict[str, list[RecordEntry]] = {}
    for entry in entries:
        kept = by_path.get(entry.path)
        if kept is None:
            by_path[entry.path] = entry
        elif not _agree(kept, entry):
            conflicts.setdefault(entry.path, [kept]).append(entry)
        elif kept.hash is None and entry.hash is not None:
            by_path[entry.path] = entry
    messages = []
    for path, rows in conflicts.items():
        by_path[path] = RecordEntry(path, None, None, rows[0].line)
        lines = ", ".join(str(r.line) for r in rows)
        messages.append(f"lines {lines}: {path} is listed {len(rows)} times with different hashes or sizes; "
                        "its content is not checked")
    return RecordRows(by_path.values()), messages


def _direct_url(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """direct_url.json as verify and classify use it (PEP 610): a dict whose ``url`` is a string
    and whose ``dir_info``, ``vcs_info`` and ``archive_info`` are dicts; (None, why) otherwise.
    The file is the tree's: any JSON at all, 100,000 levels deep included."""
    try:
        loaded = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
        return None, "not valid JSON"
    if not isinstance(loaded, dict):
        return None, f"not a JSON object but {type(loaded).__name__}: ignored"
    if not isinstance(loaded.get("url"), str):
        return None, f"its url is not a string but {type(loaded.get('url')).__name__}: ignored"
    for key in ("dir_info", "vcs_info", "archive_info"):
        if key in loaded and not isinstance(loaded[key], dict):
            return None, f"its {key} is not an object but {type(loaded[key]).__name__}: ignored"
    return loaded, None


def _read_egg_info(path: str, site: str, containment: Containment) -> MetadataDir:
    reading = _Reading(containment)
    is_dir = os.path.isdir(path)
    pkg_info = reading.text(os.path.join(path, "PKG-INFO") if is_dir else path)
    name, version = _name_version(pkg_info, os.path.basename(path))
    entries = RecordRows()
    top_level: tuple[str, ...] = ()
    has_list = False
    if is_dir:
        listing = reading.text(os.path.join(path, "installed-files.txt"))
        if listing is not None:
            has_list = True
            # Paths are relative to the egg-info directory; presence is all that can be checked.
            rel = os.path.basename(path)
            for n, line in enumerate(listing.splitlines(), 1):
                if line.strip() and "\0" not in line:  # no file has a NUL in its name
                    entries.append_bare(os.path.normpath(os.path.join(rel, line.strip())).replace(os.sep, "/"), n)
            entries.freeze()
        top = reading.text(os.path.join(path, "top_level.txt"))
        if top:
            top_level = tuple(t.strip() for t in top.splitlines() if t.strip())
    dist = Distribution(
        name=name,
        version=version,
        metadata_dir=path,
        site_packages=site,
        kind=MetadataKind.EGG_INFO,
        entries=entries,
        top_level=top_level,
    )
    return MetadataDir(path, site, dist, tuple(reading.problems), has_file_list=has_list)


def find_distributions(site_packages: tuple[str, ...], cache: DigestCache | None = None,
                       containment: Containment | None = None, records: bool = True) -> Iterator[MetadataDir]:
    """Yield every metadata directory in the given site-packages, sorted for stable output.
    ``cache``: a ``driftscan.caches.statcache.StatCache`` that remembers parsed RECORDs between runs;
    ``containment``: where metadata may be read from (default: under each site-packages' root);
    ``records=False``: dist-info directories without their RECORD rows (who is installed, for a
    diff that found nothing to attribute)."""
    if containment is None:
        containment = containment_for_site_packages(site_packages)
    for site in site_packages:
        try:
            names = sorted(os.listdir(site))
        except OSError as exc:
            yield MetadataDir(site, site, None, (Problem(site, f"cannot list: {exc.strerror or exc}"),))
            continue
        for name in names:
            path = os.path.join(site, name)
            try:
                # A symlinked dist-info (virtualenv --symlink-app-data) is read where it points, if
                # that is inside the environment or a tool's directory driftscan knows.
                if name.endswith(".dist-info") and os.path.isdir(path) \
                        and (not os.path.islink(path) or containment.resolve(path) is not None):
                    yield _read_dist_info(path, site, containment, cache, records)
                elif name.endswith(".egg-info"):
                    yield _read_egg_info(path, site, containment)
            except Exception as exc:  # noqa: BLE001 - one distribution fails alone, the audit goes on
                dist_name, version = _name_version(None, name)
                dist = Distribution(name=dist_name, version=version, metadata_dir=path, site_packages=site)
                yield MetadataDir(path, site, dist, (Problem(path, f"cannot read: {type(exc).__name__}: {exc}"),),
                                  has_file_list=False)


def read_distribution(metadata_dir: str, site: str, containment: Containment,
                      cache: DigestCache | None = None) -> tuple[Distribution | None, tuple[Problem, ...]]:
    """One dist-info read as ``find_distributions`` reads it, with its RECORD rows (for a caller
    that holds the light distribution a warm audit gives)."""
    try:
        md = _read_dist_info(metadata_dir, site, containment, cache)
    except Exception as exc:  # noqa: BLE001 - one distribution fails alone, as in find_distributions
        return None, (Problem(metadata_dir, f"cannot read: {type(exc).__name__}: {exc}"),)
    return md.distribution, tuple(md.problems)


def has_direct_url(dist: Distribution) -> bool:
    """Installed from a URL or a file (direct_url.json), so it may name its archive's digest: one
    lstat for a warm audit's light distributions, which do not carry direct_url.json."""
    if dist.kind is not MetadataKind.DIST_INFO:
        return False
    return dist.direct_url is not None or os.path.lexists(os.path.join(dist.metadata_dir, "direct_url.json"))


def with_direct_url(dist: Distribution, containment: Containment) -> Distribution:
    """A warm audit's light distribution with its direct_url.json read (where it came from), its
    RECORD rows still unread; the distribution as it is when there is nothing to add."""
    if dist.direct_url is not None or not has_direct_url(dist):
        return dist
    text = _Reading(containment).text(os.path.join(dist.metadata_dir, "direct_url.json"))
    loaded = _direct_url(text)[0] if text is not None else None
    return replace(dist, direct_url=loaded) if loaded is not None else dist
