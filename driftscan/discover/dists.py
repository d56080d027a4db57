"""Find installed distributions (*.dist-info, *.egg-info) and read what verify needs from them."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..fileio import read_regular_stat
from ..model import Distribution, Problem, RecordEntry
from ..record import parse_record

MAX_METADATA = 1 << 30  # a RECORD of ten million rows; anything larger is not one
# Installers whose RECORD is known to describe the installed files exactly (FACTS.md rule 6).
TRUSTED_INSTALLERS = frozenset({"pip", "uv", "poetry", "pdm", "installer", "pipx", "hatch"})


@dataclass(frozen=True)
class MetadataDir:
    """A *.dist-info or *.egg-info found in site-packages, with what was wrong reading it."""

    path: str
    site_packages: str
    distribution: Distribution | None  # None: orphaned (no METADATA or no RECORD)
    problems: tuple[Problem, ...] = ()
    missing: tuple[str, ...] = ()  # for orphaned dirs: which of METADATA/RECORD is absent
    has_file_list: bool = True  # egg-info: installed-files.txt present


@dataclass
class _Reading:
    problems: list[Problem] = field(default_factory=list)

    def text(self, path: str) -> str | None:
        return self.read(path)[0]

    def read(self, path: str) -> tuple[str | None, os.stat_result | None]:
        """The file's text and its stat, both of one open descriptor."""
        try:
            data, st = read_regular_stat(path, MAX_METADATA)
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


def _read_dist_info(path: str, site: str, cache=None) -> MetadataDir:
    absent = tuple(n for n in ("METADATA", "RECORD") if not os.path.lexists(os.path.join(path, n)))
    if absent:
        return MetadataDir(path, site, None, missing=absent)
    reading = _Reading()
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
        Problem(record_path, f"line {i.line}: {i.message}" + (f" ({i.path})" if i.path else ""))
        for i in parsed.issues
    ]
    direct_url = None
    direct_text = reading.text(os.path.join(path, "direct_url.json"))
    if direct_text is not None:
        try:
            loaded = json.loads(direct_text)
            direct_url = loaded if isinstance(loaded, dict) else None
        except ValueError:
            problems.append(Problem(os.path.join(path, "direct_url.json"), "not valid JSON"))
    name, version = _name_version(meta, os.path.basename(path))
    dist = Distribution(
        name=name,
        version=version,
        metadata_dir=path,
        site_packages=site,
        kind="dist-info",
        installer=installer,
        entries=_dedupe(parsed.entries),
        direct_url=direct_url,
        requested=os.path.exists(os.path.join(path, "REQUESTED")),
    )
    return MetadataDir(path, site, dist, tuple(problems))


def _dedupe(entries: tuple[RecordEntry, ...]) -> tuple[RecordEntry, ...]:
    """One entry per path; when a path is listed twice (pip + wheel-shipped .pyc), keep the hashed row."""
    by_path: dict[str, RecordEntry] = {}
    for entry in entries:
        kept = by_path.get(entry.path)
        if kept is None or (kept.hash is None and entry.hash is not None):
            by_path[entry.path] = entry
    return tuple(by_path.values())


def _read_egg_info(path: str, site: str) -> MetadataDir:
    reading = _Reading()
    is_dir = os.path.isdir(path)
    pkg_info = reading.text(os.path.join(path, "PKG-INFO") if is_dir else path)
    name, version = _name_version(pkg_info, os.path.basename(path))
    entries: tuple[RecordEntry, ...] = ()
    top_level: tuple[str, ...] = ()
    has_list = False
    if is_dir:
        listing = reading.text(os.path.join(path, "installed-files.txt"))
        if listing is not None:
            has_list = True
            # Paths are relative to the egg-info directory; presence is all that can be checked.
            rel = os.path.basename(path)
            entries = tuple(
                RecordEntry(os.path.normpath(os.path.join(rel, line.strip())).replace(os.sep, "/"), None, None, n)
                for n, line in enumerate(listing.splitlines(), 1)
                if line.strip()
            )
        top = reading.text(os.path.join(path, "top_level.txt"))
        if top:
            top_level = tuple(t.strip() for t in top.splitlines() if t.strip())
    dist = Distribution(
        name=name,
        version=version,
        metadata_dir=path,
        site_packages=site,
        kind="egg-info",
        entries=entries,
        top_level=top_level,
    )
    return MetadataDir(path, site, dist, tuple(reading.problems), has_file_list=has_list)


def find_distributions(site_packages: tuple[str, ...], cache=None) -> Iterator[MetadataDir]:
    """Yield every metadata directory in the given site-packages, sorted for stable output.
    ``cache``: a ``driftscan.cache.StatCache`` that remembers parsed RECORDs between runs."""
    for site in site_packages:
        try:
            names = sorted(os.listdir(site))
        except OSError as exc:
            yield MetadataDir(site, site, None, (Problem(site, f"cannot list: {exc.strerror or exc}"),))
            continue
        for name in names:
            path = os.path.join(site, name)
            if name.endswith(".dist-info") and os.path.isdir(path) and not os.path.islink(path):
                yield _read_dist_info(path, site, cache)
            elif name.endswith(".egg-info"):
                yield _read_egg_info(path, site)
