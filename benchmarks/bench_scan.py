"""How much faster `driftscan scan` is than parsing every file with libcst.

    python benchmarks/bench_scan.py TREE [--sample N] [--jobs J] [--seed S] [--no-unfiltered]

In one process run:

1. baseline: ``libcst.parse_module`` on files of TREE, sequentially. With ``--sample N`` (the
   default is 600 files, ``0`` means every file) a seeded random sample is parsed and the
   rate (bytes per second) is taken as the rate for the whole tree — libcst's cost is close
   to linear in bytes, so this extrapolates the full-tree time by bytes;
2. ``scan_paths(TREE, jobs=J)`` with the prefilter, over the whole tree, ``--repeat`` times
   (default 3; the median time counts — the machine may be shared);
3. ``scan_paths`` without the prefilter on the sampled files (skip with
   ``--no-unfiltered``), and whether it found exactly what the prefiltered scan found there.

It prints MB/s for each, the ratio scan/baseline, and the findings per rule.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import statistics
import sys
import time

import libcst

from driftscan.inspect import scan_paths
from driftscan.fileio import default_jobs
from driftscan.inspect.scan import collect_files


def _mb(n: int) -> float:
    return n / 1e6


def baseline(paths: list[str]) -> tuple[int, float, int]:
    """(bytes, seconds, parse failures) of parsing ``paths`` one after the other."""
    total = failures = 0
    elapsed = 0.0
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        total += len(data)
        start = time.perf_counter()
        try:
            libcst.parse_module(data)
        except Exception:
            failures += 1
        elapsed += time.perf_counter() - start
    return total, elapsed, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", nargs="+", help="directories (or files) to scan")
    parser.add_argument("--sample", type=int, default=600, help="files for the baseline (0: all)")
    parser.add_argument("--jobs", type=int, default=None, help=f"worker processes (default {default_jobs()})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3, help="scans with the prefilter (median counts)")
    parser.add_argument("--no-unfiltered", action="store_true", help="skip step 3")
    args = parser.parse_args(argv)

    errors: list = []
    files = collect_files(args.tree, errors)
    tree_bytes = sum(size for _, size in files)
    paths = [p for p, _ in files]
    sample = paths
    if 0 < args.sample < len(paths):
        sample = random.Random(args.seed).sample(paths, args.sample)
    jobs = args.jobs or default_jobs()
    trees = ", ".join(args.tree)
    print(f"tree: {trees}: {len(files)} files, {_mb(tree_bytes):.1f} MB; jobs={jobs}; cores={os.cpu_count()}")

    base_bytes, base_time, failures = baseline(sample)
    base_rate = base_bytes / base_time
    what = "all files" if sample is paths else f"sample of {len(sample)} files, {_mb(base_bytes):.1f} MB"
    print(f"1. baseline libcst.parse_module ({what}): {base_time:.1f} s, {_mb(base_rate):.2f} MB/s"
          f" -> whole tree ~{tree_bytes / base_rate:.0f} s; {failures} parse failures")

    times = []
    for _ in range(max(1, args.repeat)):
        start = time.perf_counter()
        result = scan_paths(args.tree, jobs=jobs)
        times.append(time.perf_counter() - start)
    scan_time = statistics.median(times)
    scan_rate = tree_bytes / scan_time
    runs = ", ".join(f"{t:.1f}" for t in times)
    print(f"2. scan_paths (prefilter, jobs={jobs}): median {scan_time:.1f} s of [{runs}], {_mb(scan_rate):.2f} MB/s; "
          f"{result.files_parsed}/{result.files_scanned} files parsed; {len(result.findings)} findings; "
          f"{len(result.errors)} errors")
    print(f"   ratio scan/baseline: {scan_rate / base_rate:.1f}x")

    if not args.no_unfiltered:
        start = time.perf_counter()
        unfiltered = scan_paths(sample, jobs=jobs, prefilter=False)
        unfiltered_time = time.perf_counter() - start
        in_sample = set(sample)
        same = [pf for pf in result.findings if pf[0] in in_sample] == unfiltered.findings
        print(f"3. scan_paths (no prefilter, jobs={jobs}) on the sample: {unfiltered_time:.1f} s, "
              f"{_mb(unfiltered.bytes_scanned / unfiltered_time):.2f} MB/s; "
              f"same findings as with the prefilter: {'yes' if same else 'NO'}")

    counts = collections.Counter((f.code, f.name, f.severity.value) for _, f in result.findings)
    print("findings per rule:")
    for (code, name, severity), n in sorted(counts.items()):
        print(f"   {code} {name:<24} {severity:<6} {n}")
    for path, finding in result.findings:
        if finding.severity.value == "high":
            print(f"   high: {path}:{finding.line}:{finding.column} {finding.code} {finding.message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
