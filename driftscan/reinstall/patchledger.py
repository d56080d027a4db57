"""The record ``driftscan patch apply`` keeps of what it wrote into an environment (one file per
environment in the user cache), and what an audit takes from it: each file a patch wrote, with
the sha256 it wrote — so that file, while it still has those bytes, is the drift the team chose
(``patched``, with the patch named), and any further edit is drift again.

The record is the user cache's: read as data, bounded, every field's type checked; an entry that
does not read back is not used (the file is then reported as what it is, ``modified``)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..caches.keys import cache_key
from ..caches.location import user_cache_dir
from ..fs.reader import read_regular

LEDGER_VERSION: Final = 1
MAX_LEDGER = 16 << 20
_HEX = re.compile(r"[0-9a-f]{64}")


def ledger_path(site_packages: Sequence[str]) -> str:
    """The user-cache file recording what ``patch apply`` wrote into this environment."""
    key = cache_key("patch-apply", [os.path.realpath(s) for s in site_packages])
    return os.path.join(user_cache_dir(), "patches", f"{key[:32]}.json")


def read_ledger(path: str) -> dict[str, Any]:
    """The record at ``path`` as written, or {} when there is none or it is not one."""
    try:
        doc = json.loads(read_regular(path, MAX_LEDGER, what="patch record"))
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict) or doc.get("version") != LEDGER_VERSION or not isinstance(doc.get("patches"), dict):
        return {}
    return doc


@dataclass(frozen=True)
class Patched:
    """One file a patch wrote: the patch file, its sha256, and what the file then held."""

    patch: str
    patch_sha256: str
    distribution: str
    version: str
    sha256: str | None  # hex; None: the patch deleted the file
    applied_at: str


def patched_files(site_packages: Sequence[str]) -> dict[str, Patched]:
    """Each file ``patch apply`` wrote into the environment of ``site_packages``, by its path as the
    record names it (relative to the site-packages it was written into), the latest patch's."""
    doc = read_ledger(ledger_path(site_packages))
    out: dict[str, Patched] = {}
    for patch, entry in (doc.get("patches") or {}).items():
        if not isinstance(patch, str) or not isinstance(entry, dict) or not isinstance(entry.get("files"), dict):
            continue
        fields = [entry.get(k) for k in ("sha256", "distribution", "version", "applied_at")]
        texts = [v for v in fields if isinstance(v, str)]
        if len(texts) != len(fields):
            continue
        for path, digest in entry["files"].items():
            if isinstance(path, str) and (digest is None or (isinstance(digest, str) and _HEX.fullmatch(digest))):
                out[path] = Patched(patch, texts[0], texts[1], texts[2], digest, texts[3])
    return out
