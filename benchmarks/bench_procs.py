"""``driftscan procs``' cost on 1,000 processes, against the floor of reading their /proc files.

    python benchmarks/bench_procs.py [--processes 1000] [--tied 100] [--files 5000] [--rounds 5] [--json OUT]

Builds, in a scratch directory, a /proc-shaped tree of ``--processes`` entries (each with the
``stat``, ``cmdline``, ``status``, ``cgroup`` and ``maps`` of this very process, read from the real
/proc once, and ``exe`` and ``ns/mnt`` links), ``--tied`` of them started from a scratch
environment's bin/python, whose site-packages holds ``--files`` modules (half of them touched after
the processes "started", so each tied process has evidence). Each round times, in this process:

- floor: reading the same files of every entry the way the scan does (open, bounded read, readlink),
  nothing parsed, no environment walked;
- procs: ``driftscan.procs.scan`` on the tree (parsing, ties, evidence, the environment's walk, the model).

Prints JSON: the medians, ``procs / floor``, and the median seconds of a scan against the target
(1,000 processes in at most 1 s on 2 cores: ``procs_seconds`` ≤ 1 meets it), with the load average
before and after. The real /proc is scanned once too, for its process count and time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

from driftscan.procs.proc import CMDLINE_LIMIT, MAPS_LIMIT, SMALL_LIMIT, pids
from driftscan.procs.scan import Environment, scan

FILES = (("stat", SMALL_LIMIT), ("cmdline", CMDLINE_LIMIT), ("status", SMALL_LIMIT), ("cgroup", SMALL_LIMIT),
         ("maps", MAPS_LIMIT))


def load() -> list[float]:
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def build(scratch: str, processes: int, tied: int, files: int) -> tuple[str, Environment]:
    prefix = os.path.join(scratch, "env")
    site = os.path.join(prefix, "lib", "python3.11", "site-packages")
    for k in range(files):
        d = os.path.join(site, f"pkg{k // 100}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"m{k}.py"), "w") as f:
            f.write("x = 1\n")
    own = {name: open(f"/proc/self/{name}", "rb").read() for name, _ in FILES}
    proc = os.path.join(scratch, "proc")
    os.makedirs(os.path.join(proc, "self", "ns"))
    os.symlink("mnt:[4026531840]", os.path.join(proc, "self", "ns", "mnt"))
    for pid in range(1000, 1000 + processes):
        d = os.path.join(proc, str(pid))
        os.makedirs(os.path.join(d, "ns"))
        for name, _ in FILES:
            data = own[name]
            if name == "cmdline" and pid - 1000 < tied:
                data = f"{prefix}/bin/python\0-m\0pkg0.m0\0".encode()
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
        os.symlink(sys.executable, os.path.join(d, "exe"))
        os.symlink("mnt:[4026531840]", os.path.join(d, "ns", "mnt"))
    # After the entries' start (boot + their start ticks, long ago): every module changed since.
    for k in range(0, files, 2):
        os.utime(os.path.join(site, f"pkg{k // 100}", f"m{k}.py"))
    env = Environment(prefixes=(prefix,), programs=(os.path.join(prefix, "bin"), site), site_packages=(site,))
    return proc, env


def floor(proc: str) -> None:
    for pid in pids(proc):
        for name, limit in FILES:
            fd = os.open(f"{proc}/{pid}/{name}", os.O_RDONLY | os.O_CLOEXEC)
            try:
                os.read(fd, limit)
            finally:
                os.close(fd)
        os.readlink(f"{proc}/{pid}/exe")
        os.readlink(f"{proc}/{pid}/ns/mnt")


def timed(func) -> float:
    started = time.perf_counter()
    func()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--processes", type=int, default=1000)
    parser.add_argument("--tied", type=int, default=100)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", help="write the result here too")
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="bench-procs-")
    try:
        proc, env = build(scratch, args.processes, args.tied, args.files)
        before = load()
        floors, scans = [], []
        report = None
        for _ in range(args.rounds):
            floors.append(timed(lambda: floor(proc)))
            started = time.perf_counter()
            report = scan(env, proc=proc)
            scans.append(time.perf_counter() - started)
        assert report is not None and report.summary.stale == args.tied, report.summary
        real_started = time.perf_counter()
        real = scan(env)
        result = {
            "processes": args.processes, "tied": args.tied, "files": args.files, "rounds": args.rounds,
            "medians": {"floor": statistics.median(floors), "procs": statistics.median(scans)},
            "procs / floor": statistics.median(scans) / statistics.median(floors),
            "procs_seconds": statistics.median(scans), "target_seconds": 1.0,
            "met": statistics.median(scans) <= 1.0,
            "real_proc": {"processes": real.summary.scanned, "seconds": time.perf_counter() - real_started},
            "load_before": before, "load_after": load(), "cpus": os.cpu_count(),
        }
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
