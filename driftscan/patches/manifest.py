"""Which patch applies to which installed distribution: the manifest, or a directory of patches.

A manifest is a table of patch-file path → spec, ``[tool.driftscan.patches]`` in pyproject.toml or
``[patches]`` in driftscan.toml (the caller finds the file as the configuration is found and hands it
over)::

    "patches/vllm@0.33.0.patch" = { distribution = "vllm", version = "==0.33.0", sha256 = "<hex>" }

Without one, every ``<dist>@<version>.patch`` of a directory is an exact-version entry. For one
installed distribution an exact version (``==X``) beats a range, which beats the name alone (as pnpm
does); two entries at the same level are an error. Everything here is data: the manifest is read
bounded (formats/tomlfile.py) and checked field by field, never run.
"""

from __future__ import annotations

import enum
import hashlib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ..core.errors import ConfigError
from ..formats.tomlfile import read_toml

__all__ = ["Entry", "Level", "ManifestError", "digest_mismatch", "from_directory", "from_table", "match",
           "patch_table", "read_manifest", "unused"]

PYPROJECT = "pyproject.toml"
MAX_ENTRIES = 10_000  # a manifest lists a team's patches: tens, not millions
_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_FILE = re.compile(r"^(?P<dist>[A-Za-z0-9][A-Za-z0-9._-]*)@(?P<version>[A-Za-z0-9][A-Za-z0-9.+!_-]*)\.patch$")
_KEYS = frozenset({"distribution", "version", "sha256"})


class ManifestError(ConfigError):
    """A manifest, or a patch directory, that cannot be used as it stands (one line)."""


class Level(enum.IntEnum):
    """How precisely an entry names its version; a higher level wins."""

    NAME = 0
    RANGE = 1
    EXACT = 2


@dataclass(frozen=True)
class Entry:
    path: str  # the patch file, absolute
    shown: str  # the path as the manifest (or the directory listing) writes it
    distribution: str  # canonical (PEP 503)
    specifier: str = ""  # "" for the name alone
    sha256: str | None = None  # the patch file's digest the manifest pins (hex)
    source: str = ""  # the manifest file, or the directory

    @property
    def level(self) -> Level:
        if not self.specifier:
            return Level.NAME
        exact = _exact(self.specifier)
        return Level.EXACT if exact is not None else Level.RANGE

    @property
    def exact_version(self) -> str | None:
        return _exact(self.specifier) if self.specifier else None

    def admits(self, version: str) -> bool:
        if not self.specifier:
            return True
        exact = _exact(self.specifier)
        if exact is not None:
            return _same_version(exact, version)
        try:
            return SpecifierSet(self.specifier).contains(version, prereleases=True)
        except InvalidVersion:
            return False


def _exact(specifier: str) -> str | None:
    """The version of a lone ``==X`` (no wildcard), else None."""
    text = specifier.strip()
    if text.startswith("==") and not text.startswith("===") and "," not in text and "*" not in text:
        return text[2:].strip()
    return None


def _same_version(a: str, b: str) -> bool:
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


def patch_table(path: str) -> dict[str, Any] | None:
    """The manifest table of the configuration file ``path`` (``[tool.driftscan.patches]`` of a
    pyproject.toml, ``[patches]`` of any other), or None when it has none."""
    doc = read_toml(path, what="patch manifest")
    if os.path.basename(path) == PYPROJECT:
        tool = doc.get("tool")
        ours = tool.get("driftscan") if isinstance(tool, dict) else None
        if not isinstance(ours, dict):
            return None
        doc = ours
    table = doc.get("patches")
    if table is None:
        return None
    if not isinstance(table, dict):
        where = "tool.driftscan.patches" if os.path.basename(path) == PYPROJECT else "patches"
        raise ManifestError(f"{path}: {where} is not a table of patch file = {{ distribution = ... }}")
    return table


def read_manifest(path: str) -> list[Entry]:
    """The entries of the manifest in the configuration file ``path``; ManifestError when it has none."""
    table = patch_table(path)
    if table is None:
        where = "[tool.driftscan.patches]" if os.path.basename(path) == PYPROJECT else "[patches]"
        raise ManifestError(f"{path}: no {where} table: no patch manifest there")
    return from_table(table, path)


def from_table(table: Mapping[str, Any], source: str) -> list[Entry]:
    """The entries of a manifest table read from ``source``; patch paths are relative to its directory."""
    if len(table) > MAX_ENTRIES:
        raise ManifestError(f"{source}: {len(table)} patch entries, more than {MAX_ENTRIES}")
    base = os.path.dirname(os.path.abspath(source))
    entries = []
    for key, spec in table.items():
        where = f"{source}: patch {key!r}"
        if not key or "\0" in key:
            raise ManifestError(f"{source}: a patch entry needs a file name")
        if not isinstance(spec, dict):
            raise ManifestError(f"{where}: expected {{ distribution = \"name\", version = \"...\", sha256 = \"...\" }}")
        unknown = sorted(set(spec) - _KEYS)
        if unknown:
            raise ManifestError(f"{where}: unknown key {unknown[0]!r} (known: distribution, version, sha256)")
        name = spec.get("distribution")
        if not isinstance(name, str) or not _NAME.match(name):
            raise ManifestError(f"{where}: distribution must be a distribution name, not {name!r}")
        version = spec.get("version", "")
        if not isinstance(version, str):
            raise ManifestError(f"{where}: version must be a string such as \"==1.2\" or \">=1.1,<2\"")
        version = version.strip()
        if version:
            if not version.startswith(("=", "<", ">", "!", "~")):
                version = "==" + version  # a bare version is that version
            try:
                SpecifierSet(version)
            except InvalidSpecifier:
                raise ManifestError(f"{where}: version {version!r} is not a version specifier") from None
        digest = spec.get("sha256")
        if digest is not None and (not isinstance(digest, str) or not _SHA256.match(digest.lower())):
            raise ManifestError(f"{where}: sha256 must be 64 hex digits")
        entries.append(Entry(path=os.path.normpath(os.path.join(base, key)), shown=key,
                             distribution=canonicalize_name(name), specifier=version,
                             sha256=digest.lower() if isinstance(digest, str) else None, source=source))
    return entries


def from_directory(directory: str) -> list[Entry]:
    """Every ``<dist>@<version>.patch`` of ``directory``, each an exact-version entry. A missing
    directory is an error; other files there are not patches and are left alone."""
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        raise ManifestError(f"{directory}: no such directory (name one with --patches DIR, or a manifest "
                            "with --manifest FILE)") from None
    except OSError as exc:
        raise ManifestError(f"{directory}: cannot list: {exc.strerror or exc}") from None
    entries: list[Entry] = []
    for name in names:
        found = _FILE.match(name)
        if found is None:
            continue
        if len(entries) >= MAX_ENTRIES:
            raise ManifestError(f"{directory}: more than {MAX_ENTRIES} patch files")
        entries.append(Entry(path=os.path.join(os.path.abspath(directory), name),
                             shown=os.path.join(directory, name), distribution=canonicalize_name(found["dist"]),
                             specifier="==" + found["version"], source=directory))
    return entries


def match(entries: Iterable[Entry], name: str, version: str) -> Entry | None:
    """The entry for the installed distribution ``name`` at ``version``: an exact version beats a
    range, which beats the name alone; ManifestError when two tie at the best level."""
    wanted = canonicalize_name(name)
    best: list[Entry] = []
    for entry in entries:
        if entry.distribution != wanted or not entry.admits(version):
            continue
        if best and entry.level < best[0].level:
            continue
        if best and entry.level > best[0].level:
            best = []
        best.append(entry)
    if len(best) > 1:
        raise ManifestError(f"{wanted} {version}: two patches at the same level ({best[0].level.name.lower()}): "
                            f"{best[0].shown} and {best[1].shown}; keep one")
    return best[0] if best else None


def digest_mismatch(entry: Entry, data: bytes) -> str | None:
    """Why the patch file's bytes ``data`` are refused (the manifest pins another sha256), else None."""
    if entry.sha256 is None:
        return None
    actual = hashlib.sha256(data).hexdigest()
    if actual == entry.sha256:
        return None
    return (f"{entry.shown}: sha256 {actual} is not the manifest's {entry.sha256} "
            "(the patch file was edited since it was pinned): refused")


def unused(entries: Sequence[Entry], used: Iterable[Entry]) -> list[Entry]:
    """The entries no installed distribution matched."""
    taken = set(used)
    return [e for e in entries if e not in taken]
