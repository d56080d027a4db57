"""What auditing uv's cache archives costs: the archives alone, cold, warm (digests from the stat
cache) and settled (archives remembered clean, one lstat per file), and a warm audit of a
uv venv with ``--uv-cache`` naming its cache against one naming an empty directory, same run.

    python benchmarks/bench_uv_cache.py UV_CACHE VENV [--rounds 7]

UV_CACHE is a uv cache (``archive-v*/``) that VENV was installed from. Runs in a private driftscan
cache directory; prints JSON (milliseconds, best of the rounds, and the ratio).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time


def _best(func, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - started)
    return best * 1e3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("cache")
    parser.add_argument("venv")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="bench-uv-cache-")
    os.environ["DRIFTSCAN_CACHE_DIR"] = work
    os.environ.pop("UV_CACHE_DIR", None)
    from driftscan.api import audit
    from driftscan.caches.statcache import StatCache
    from driftscan.environment.uv.archives import CleanArchives, audit_archives

    stats = os.path.join(work, "archives.bin")
    first = StatCache(stats)
    found = audit_archives(args.cache, stat_cache=first)
    first.save()
    cold = _best(lambda: audit_archives(args.cache), args.rounds)
    warm = _best(lambda: audit_archives(args.cache, stat_cache=StatCache(stats)), args.rounds)
    memo = os.path.join(work, "clean.bin")
    remembered = CleanArchives(memo)
    audit_archives(args.cache, clean=remembered)
    remembered.save()
    settled = _best(lambda: audit_archives(args.cache, stat_cache=StatCache(stats), clean=CleanArchives(memo)),
                    args.rounds)
    empty = os.path.join(work, "empty-cache")
    os.mkdir(empty)
    audit(venv=args.venv, uv_cache=args.cache)
    audit(venv=args.venv, uv_cache=empty)
    without = _best(lambda: audit(venv=args.venv, uv_cache=empty), args.rounds)
    with_cache = _best(lambda: audit(venv=args.venv, uv_cache=args.cache), args.rounds)
    print(json.dumps({"archives": found.archives, "files": found.files_checked,
                      "archives_cold_ms": round(cold, 1), "archives_warm_ms": round(warm, 1),
                      "archives_settled_ms": round(settled, 1),
                      "warm_audit_empty_cache_ms": round(without, 1), "warm_audit_with_cache_ms": round(with_cache, 1),
                      "ratio": round(with_cache / without, 2)}, indent=2))


if __name__ == "__main__":
    main()
