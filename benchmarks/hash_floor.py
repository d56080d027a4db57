"""The floor of hashing a file list in Python: what `driftscan snapshot` could cost at best.

    python benchmarks/hash_floor.py LIST [--procs N]

LIST holds NUL-separated paths (as `find -print0` writes them). Each file is opened
(`O_NOFOLLOW|O_NONBLOCK`, as driftscan opens a file it has not lstat'ed), fstat'ed, read in
one read below 128 KiB or through one reused 128 KiB buffer above, hashed with xxh3-128 and
closed: the system calls driftscan makes for a file, and nothing else (no walk, no entry, no
JSON member, no output, no cross-process answer, no start-up beyond `import xxhash`). With
``--procs N`` the list is cut into N contiguous parts (as `xargs -P` hands them out), one
forked process each. `bench_snapshot.py --floor` times it beside `xxh128sum` over the same
files, so that the part of the snapshot's ratio that is Python's and the part that is
driftscan's own work can be told apart.
"""

from __future__ import annotations

import argparse
import os

import xxhash

BUFFER = 128 << 10
FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def hash_files(paths: list[bytes]) -> int:
    """Hash every file; the number hashed (a file that vanished is skipped)."""
    digest = xxhash.xxh3_128_hexdigest
    buffer = bytearray(BUFFER)
    view = memoryview(buffer)
    done = 0
    for path in paths:
        try:
            fd = os.open(path, FLAGS)
        except OSError:
            continue
        try:
            size = os.fstat(fd).st_size
            if size < BUFFER:
                digest(os.read(fd, size + 1))
            else:
                hasher = xxhash.xxh3_128()
                while n := os.readv(fd, [buffer]):
                    hasher.update(view[:n])
                hasher.hexdigest()
            done += 1
        finally:
            os.close(fd)
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("listing")
    parser.add_argument("--procs", type=int, default=1)
    args = parser.parse_args()
    with open(args.listing, "rb") as f:
        paths = [p for p in f.read().split(b"\0") if p]
    per = -(-len(paths) // args.procs)
    children = []
    for k in range(1, args.procs):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                hash_files(paths[k * per:(k + 1) * per])
                code = 0
            finally:
                os._exit(code)
        children.append(pid)
    hash_files(paths[:per])
    failed = [pid for pid in children if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0]
    if failed:
        raise SystemExit(f"{len(failed)} hashing process(es) failed")


if __name__ == "__main__":
    main()
