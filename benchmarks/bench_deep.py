"""``--deep`` hashing of large files against the disk and the hash alone, measured in one run.

    flock /tmp/bench.lock python benchmarks/bench_deep.py --file /tmp/deepbench/shard.bin --size 2G --runs 5

Every figure is the median of ``--runs`` rounds; each round runs every measurement once, in a
fresh process, round-robin (so a slow patch of the shared disk hits them all alike):

- ``read``: ``dd if=FILE of=/dev/null bs=16M iflag=direct`` (the disk, no page cache);
- ``hash``: sha256 over the file's content already in memory (read with O_DIRECT first, not timed);
- ``sequential``: O_DIRECT reads and hashing one after the other (driftscan before its parallel hashing);
- ``fadvise``: buffered reads with ``posix_fadvise(POSIX_FADV_DONTNEED)`` after each chunk (the
  alternative the issue names; it also drops pages *other* processes had cached);
- ``driftscan``: ``driftscan.modeldir.hashing.hash_file`` (O_DIRECT, reading overlapped
  with hashing);
- with ``--files N`` (default 2), ``driftscan xN``: N copies hashed by ``map_by_size`` with
  ``jobs`` threads, as a ``--deep`` audit of a model directory does, against ``read xN`` (dd of
  the N files one after the other) and ``hash xN`` (N hashes in memory on all cores).

The target: ``driftscan`` ≤ 1.2 × max(read, hash). Every digest is compared with
hashlib's. The load average and the kernel's I/O pressure are printed with the results.
"""

from __future__ import annotations

import argparse
import errno
import hashlib
import json
import mmap
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHUNK = 16 << 20


def _size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def _direct_read_all(path: str) -> mmap.mmap:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        size = os.fstat(fd).st_size
        buf = mmap.mmap(-1, size + CHUNK)
        view = memoryview(buf)
        offset = 0
        while offset < size:
            n = os.preadv(fd, [view[offset:offset + CHUNK]], offset)
            if not n:
                break
            offset += n
        view.release()
        return buf
    finally:
        os.close(fd)


def child(mode: str, paths: list[str], jobs: int) -> None:
    """One measurement, in this fresh process: prints {"seconds": ..., "digests": [...]}."""
    sys.path.insert(0, str(ROOT))
    digests: list[str] = []
    if mode == "hash":
        bufs = [(_direct_read_all(p), os.path.getsize(p)) for p in paths]

        def one(item):
            buf, size = item
            h = hashlib.sha256()
            view = memoryview(buf)
            for start in range(0, size, CHUNK):
                h.update(view[start:min(size, start + CHUNK)])
            view.release()
            return h.hexdigest()

        started = time.perf_counter()
        if len(bufs) > 1:
            from concurrent.futures import ThreadPoolExecutor
            with ThreadPoolExecutor(jobs) as pool:
                digests = list(pool.map(one, bufs))
        else:
            digests = [one(bufs[0])]
    elif mode == "sequential":
        started = time.perf_counter()
        for p in paths:
            fd = os.open(p, os.O_RDONLY | os.O_DIRECT)
            buf = mmap.mmap(-1, CHUNK)
            view = memoryview(buf)
            h, offset = hashlib.sha256(), 0
            while n := os.preadv(fd, [buf], offset):
                h.update(view[:n])
                offset += n
            view.release()
            os.close(fd)
            digests.append(h.hexdigest())
    elif mode == "fadvise":
        started = time.perf_counter()
        for p in paths:
            fd = os.open(p, os.O_RDONLY)
            buf = bytearray(CHUNK)
            view = memoryview(buf)
            h, offset = hashlib.sha256(), 0
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
            while n := os.readv(fd, [buf]):
                h.update(view[:n])
                os.posix_fadvise(fd, offset, n, os.POSIX_FADV_DONTNEED)
                offset += n
            os.close(fd)
            digests.append(h.hexdigest())
    elif mode == "driftscan":
        from driftscan.fs.reader import map_by_size
        from driftscan.modeldir.hashing import Meter, hash_file

        meter = Meter()
        started = time.perf_counter()
        if len(paths) > 1:
            digests = map_by_size(lambda p: hash_file(p, ("sha256",), meter, keep=False)[0]["sha256"],
                                  paths, [os.path.getsize(p) for p in paths], jobs)
        else:
            digests = [hash_file(paths[0], ("sha256",), meter, keep=False)[0]["sha256"]]
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps({"seconds": time.perf_counter() - started, "digests": digests}))


def _measure(mode: str, paths: list[str], jobs: int) -> tuple[float, list[str]]:
    if mode == "read":
        started = time.perf_counter()
        for p in paths:
            subprocess.run(["dd", f"if={p}", "of=/dev/null", "bs=16M", "iflag=direct"], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - started, []
    out = subprocess.run([sys.executable, __file__, "--child", mode, "--jobs", str(jobs), *paths],
                         check=True, capture_output=True, text=True).stdout
    result = json.loads(out)
    return result["seconds"], result["digests"]


def _pressure() -> str:
    try:
        return Path("/proc/pressure/io").read_text().splitlines()[0]
    except OSError:
        return "n/a"


def _make(path: Path, size: int) -> None:
    if path.exists() and path.stat().st_size == size:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, CHUNK)
            f.write(os.urandom(n))
            left -= n
        f.flush()
        os.fsync(f.fileno())
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # written pages out of the page cache
    os.close(fd)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", default="/tmp/deepbench/shard.bin")
    parser.add_argument("--size", default="2G", help="created with random bytes if missing (e.g. 2G)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--files", type=int, default=2, help="copies for the several-files rows (0: none)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", help="write the raw figures here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("paths", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.paths, args.jobs)
        return
    main_file = Path(args.file)
    size = _size(args.size)
    _make(main_file, size)
    copies = []
    for k in range(args.files if args.files > 1 else 0):
        copy = main_file.with_name(f"{main_file.stem}.part{k}{main_file.suffix}")
        _make(copy, size // args.files)
        copies.append(str(copy))
    truth = {}
    for p in [str(main_file), *copies]:
        h = hashlib.sha256()
        buf = _direct_read_all(p)
        h.update(memoryview(buf)[:os.path.getsize(p)])
        buf.close()
        truth[p] = h.hexdigest()

    single = ["read", "hash", "sequential", "fadvise", "driftscan"]
    plans = [(m, [str(main_file)]) for m in single]
    if copies:
        plans += [(f"{m} x{len(copies)}", copies) for m in ("read", "hash", "driftscan")]
    times: dict[str, list[float]] = {name: [] for name, _ in plans}
    loads: list[float] = []
    pressures: list[str] = []
    for round_ in range(args.runs):
        for name, paths in plans:
            loads.append(os.getloadavg()[0])
            seconds, digests = _measure(name.split(" ")[0], paths, args.jobs)
            if digests and digests != [truth[p] for p in paths]:
                raise SystemExit(f"{name}: digests differ from hashlib's: {digests}")
            times[name].append(seconds)
        pressures.append(_pressure())
        print(f"round {round_ + 1}: " + ", ".join(f"{n} {t[-1]:.2f}" for n, t in times.items()), file=sys.stderr)

    med = {name: statistics.median(t) for name, t in times.items()}
    gib = size / (1 << 30)
    print(f"{main_file} ({gib:.2f} GiB), {args.runs} rounds, jobs {args.jobs}, cores {os.cpu_count()}; "
          f"load average during the runs: median {statistics.median(loads):.2f}, max {max(loads):.2f}")
    print(f"I/O pressure after each round: {pressures}")
    print(f"{'':14} {'median s':>9} {'GB/s':>6}  all runs")
    for name, t in times.items():
        total = size if " x" not in name else sum(os.path.getsize(p) for p in copies)
        print(f"{name:14} {med[name]:9.3f} {total / med[name] / 1e9:6.2f}  {' '.join(f'{x:.2f}' for x in t)}")
    floor = max(med["read"], med["hash"])
    print(f"driftscan / max(read, hash) = {med['driftscan']:.3f} / {floor:.3f} = {med['driftscan'] / floor:.3f}"
          f" (target <= 1.2); sequential / max = {med['sequential'] / floor:.3f}; "
          f"fadvise / max = {med['fadvise'] / floor:.3f}")
    if copies:
        n = len(copies)
        floor_n = max(med[f"read x{n}"], med[f"hash x{n}"])
        print(f"driftscan x{n} / max(read x{n}, hash x{n}) = {med[f'driftscan x{n}']:.3f} / {floor_n:.3f} = "
              f"{med[f'driftscan x{n}'] / floor_n:.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"times": times, "medians": med, "loads": loads,
                                               "pressure": pressures, "size": size}, indent=1))


if __name__ == "__main__":
    try:
        main()
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            raise SystemExit(f"{exc}: O_DIRECT refused here; put --file on a disk filesystem") from exc
        raise
