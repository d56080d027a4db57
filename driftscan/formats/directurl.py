"""direct_url.json's ``archive_info`` (PEP 610): the digests an installer recorded of the archive it
installed, read as data. Pure: no file is opened here."""

from __future__ import annotations

import re
from typing import Any

from .record import ACCEPTED_ALGORITHMS, new_hash

_HEX = re.compile(r"[0-9a-fA-F]{16,256}")


def archive_hashes(direct_url: dict[str, Any]) -> tuple[dict[str, bytes] | None, str | None]:
    """The digests ``archive_info`` records, by algorithm: ({}, None) when none are recorded,
    (None, why) when what is recorded is malformed."""
    info = direct_url.get("archive_info")
    if not isinstance(info, dict):
        return {}, None
    found: dict[str, str] = {}
    hashes = info.get("hashes")
    if isinstance(hashes, dict):
        found.update((str(k).lower(), v) for k, v in hashes.items() if isinstance(v, str))
    single = info.get("hash")
    if isinstance(single, str):
        algorithm, sep, value = single.partition("=")
        if not sep:
            return None, "direct_url.json's archive hash is not algorithm=digest"
        found.setdefault(algorithm.lower(), value)
    digests: dict[str, bytes] = {}
    for algorithm, value in found.items():
        if algorithm not in ACCEPTED_ALGORITHMS or algorithm.startswith("shake"):
            continue  # md5 (some indexes give it) proves nothing
        if not _HEX.fullmatch(value) or len(value) != 2 * new_hash(algorithm).digest_size:
            return None, f"direct_url.json's archive {algorithm} is not a hex digest"
        digests[algorithm] = bytes.fromhex(value)
    return digests, None


