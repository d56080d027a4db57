"""The simple parallel checker (the speed targets' baseline): csv over each RECORD, sha256 through
``hashlib.file_digest``, a ``multiprocessing.Pool`` of one worker per core. No unowned-file walk,
no symlink or type checks: less work than driftscan, only the time (and memory) to beat.

    python benchmarks/pool_checker.py /path/to/site-packages
"""

import base64, csv, glob, hashlib, os, sys, time  # noqa: E401
from multiprocessing import Pool


def check(row):
    path, algorithm, expected = row
    try:
        with open(path, "rb") as f:
            digest = hashlib.file_digest(f, algorithm).digest()
    except OSError:
        return "missing"
    return "ok" if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == expected else "bad"


def rows(site):
    for record in sorted(glob.glob(os.path.join(site, "*.dist-info", "RECORD"))):
        with open(record, newline="") as f:
            for path, digest, *_ in csv.reader(f):
                if digest:
                    algorithm, _, value = digest.partition("=")
                    yield os.path.join(site, path), algorithm, value


if __name__ == "__main__":
    started = time.perf_counter()
    with Pool(os.cpu_count()) as pool:
        counts = {}
        for verdict in pool.imap_unordered(check, rows(sys.argv[1]), chunksize=64):
            counts[verdict] = counts.get(verdict, 0) + 1
    print(counts, f"{time.perf_counter() - started:.2f} s")
