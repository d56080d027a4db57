"""The plain baseline driftscan is measured against: importlib.metadata + hashlib.file_digest, one file
after another (the baseline's definition; on Python 3.10, which lacks file_digest, one read() per file).

This is what a careful person writes in ten minutes. It trusts ``Distribution.files`` (which on
3.12+ silently drops missing files) and does no unowned-file scan, so it does *less* than
driftscan; it only sets the time to beat.

    python benchmarks/sequential_checker.py /path/to/site-packages
"""

from __future__ import annotations

import base64
import hashlib
import sys
import time
from importlib.metadata import distributions


def _file_digest(fh, algorithm: str) -> bytes:
    if hasattr(hashlib, "file_digest"):
        return hashlib.file_digest(fh, algorithm).digest()
    return hashlib.new(algorithm, fh.read()).digest()


def check(site: str) -> dict[str, int]:
    counts = {"dists": 0, "entries": 0, "nohash": 0, "ok": 0, "bad": 0, "missing": 0}
    for dist in distributions(path=[site]):
        counts["dists"] += 1
        for f in dist.files or ():
            counts["entries"] += 1
            if f.hash is None:
                counts["nohash"] += 1
                continue
            path = f.locate()
            try:
                with open(path, "rb") as fh:
                    digest = _file_digest(fh, f.hash.mode)
            except FileNotFoundError:
                counts["missing"] += 1
                continue
            ok = base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == f.hash.value
            counts["ok" if ok else "bad"] += 1
    return counts


if __name__ == "__main__":
    started = time.perf_counter()
    result = check(sys.argv[1])
    print(result, f"{time.perf_counter() - started:.2f} s")
