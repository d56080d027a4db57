"""The venv files that carry the venv's own path, with their prefix-free digests
(``formats/prefixfree.py``): what lets ``compare`` see two venvs at two paths as equal.

Only the files a venv writes its path into are looked at, never the whole tree: ``pyvenv.cfg``,
the scripts directly in ``bin/`` (``Scripts/`` on Windows: activate scripts, console-script
launchers), and in each site-packages the ``.pth`` files and the ``direct_url.json`` of each
distribution. Each is read again (at most ``MAX_FILE`` bytes, ``MAX_FILES`` files, no symlink
followed, nothing outside the root); its plain digest is kept beside the prefix-free one, so a
reader uses the prefix-free digest only when the plain one is the manifest entry's (the file did
not change between the two reads).

A distribution's RECORD lists its console scripts with their sha256, which differs with the
shebang: its prefix-free digest is taken with each such row's hash and size standing for the
script's prefix-free digest, but only for a row whose hash is the script's as it is on disk (a
RECORD out of step with its script stays itself).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import os
import re
from collections.abc import Iterator

import xxhash

from ..formats.prefixfree import MAX_FILE, MAX_FILES, prefixes_of, xxh3_prefix_free
from ..fs.reader import open_regular, read_opened

MAX_RECORD = 8 << 20  # a RECORD read for its console scripts' rows
_SITE = re.compile(r"^(?:lib|lib64)/python\d+\.\d+t?/site-packages$|^Lib/site-packages$")


def _listing(root: str, rel: str) -> list[str]:
    try:
        with os.scandir(os.path.join(root, rel) if rel else root) as it:
            return sorted(e.name for e in it)
    except OSError:
        return []


def _sites(root: str) -> list[str]:
    sites = []
    for lib in ("lib", "lib64"):
        for py in _listing(root, lib):
            if _SITE.match(f"{lib}/{py}/site-packages"):
                sites.append(f"{lib}/{py}/site-packages")
    return sites + ["Lib/site-packages"]


def _candidates(root: str, sites: list[str]) -> Iterator[str]:
    yield "pyvenv.cfg"
    for scripts in ("bin", "Scripts"):
        for name in _listing(root, scripts):
            yield f"{scripts}/{name}"
    for site in sites:
        for name in _listing(root, site):
            if name.endswith(".pth"):
                yield f"{site}/{name}"
            elif name.endswith(".dist-info"):
                yield f"{site}/{name}/direct_url.json"


def _read(root: str, rel: str, limit: int) -> bytes | None:
    try:
        fd, st = open_regular(os.path.join(root, rel), follow=False, root=root)
    except OSError:
        return None
    try:
        return read_opened(fd, st, limit) if st.st_size <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _sha256(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


def _record_rows(root: str, site: str, record: bytes, scripts: dict[str, tuple[str, int, str]]) -> bytes | None:
    """``record`` with each row of a script in ``scripts`` (relative path → sha256, size,
    prefix-free digest) whose hash and size are the script's, as ``<path>,prefix-free=<digest>,``;
    None when no row is."""
    lines = record.decode("utf-8", "surrogateescape").splitlines(keepends=True)
    needles = {"/" + rel for rel in scripts}  # "../../../bin/vllm" holds "/bin/vllm"
    changed = False
    for n, line in enumerate(lines):
        if not line.startswith(("../", "/", '"')):
            continue  # a script's row leads out of site-packages
        if not any(needle in line for needle in needles):
            continue  # names none of the scripts: not parsed (a large RECORD has thousands of rows)
        try:
            row = next(csv.reader([line.rstrip("\r\n")]))
        except (csv.Error, StopIteration):
            continue
        if len(row) != 3:
            continue
        where = os.path.normpath(os.path.join(root, site, row[0]))
        rel = os.path.relpath(where, root).replace(os.sep, "/")
        known = scripts.get(rel)
        if known is None or (row[1], row[2]) != (known[0], str(known[1])):
            continue
        ending = line[len(line.rstrip("\r\n")):]
        lines[n] = f"{line[:len(line) - len(ending)].rsplit(',', 2)[0]},prefix-free={known[2]},{ending}"
        changed = True
    return "".join(lines).encode("utf-8", "surrogateescape") if changed else None


def prefix_free_entries(root: str) -> dict[str, dict[str, str]]:
    """relative path → ``{"xxh3_128": digest as read, "prefix_free_xxh3_128": digest without
    the root's path}`` for each of the venv ``root``'s files above that holds its own path, and
    each RECORD that lists such a script; empty for a root whose path cannot be taken out
    (``usable_prefix``)."""
    root = os.path.abspath(root)
    prefixes = prefixes_of(root, os.path.realpath(root))
    out: dict[str, dict[str, str]] = {}
    if not prefixes:
        return out
    sites = _sites(root)
    scripts: dict[str, tuple[str, int, str]] = {}
    budget = MAX_FILES
    for rel in dict.fromkeys(_candidates(root, sites)):
        if budget <= 0:
            return out
        budget -= 1
        data = _read(root, rel, MAX_FILE)
        free = xxh3_prefix_free(data, prefixes) if data is not None else None
        if data is None or free is None:
            continue
        out[rel] = {"xxh3_128": xxhash.xxh3_128_hexdigest(data), "prefix_free_xxh3_128": free}
        if rel.startswith(("bin/", "Scripts/")):
            scripts[rel] = (_sha256(data), len(data), free)
    if not scripts:
        return out
    for site in sites:
        for name in _listing(root, site):
            if not name.endswith(".dist-info"):
                continue
            if budget <= 0:
                return out
            budget -= 1
            rel = f"{site}/{name}/RECORD"
            data = _read(root, rel, MAX_RECORD)
            rows = _record_rows(root, site, data, scripts) if data is not None else None
            if data is not None and rows is not None:
                out[rel] = {"xxh3_128": xxhash.xxh3_128_hexdigest(data),
                            "prefix_free_xxh3_128": str(xxh3_prefix_free(rows, prefixes, always=True))}
    return out
