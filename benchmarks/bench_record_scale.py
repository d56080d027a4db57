"""How an audit grows with the size of a RECORD whose files are not there, as ratios in one run.

    python benchmarks/bench_record_scale.py [--small 100000] [--large 1000000] [--runs 3] [--json FILE]

Two venvs are made (in a temporary directory), each with one distribution whose RECORD lists
``--small`` and ``--large`` files that do not exist: a deleted tree (``torch/``-like, a thousand
directories) and, separately, one directory that is there with every file gone from it. Each is
audited in a fresh process (``driftscan audit --no-cache --format json``); times are medians of
``--runs``, peak RSS from wait4. What the figures must show: the large/small time ratio near the
size ratio (linear growth, not quadratic), the large run's peak RSS within 500 MB, and a report of
one drift with the right count.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

DIGEST = "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"  # of b"", size 0
LAYOUTS = {
    "deleted-tree": lambda i: f"torch/lib{i // 1000}/part{(i // 50) % 20}/f{i}.py",
    "one-directory": lambda i: f"big/f{i}.py",
}


def make_venv(root: str, rows: int, layout) -> str:
    site = os.path.join(root, "lib", "python3.11", "site-packages")
    os.makedirs(os.path.join(site, "big"))
    os.makedirs(os.path.join(root, "bin"))
    with open(os.path.join(root, "pyvenv.cfg"), "w") as f:
        f.write("home = /usr/bin\nversion = 3.11.7\n")
    open(os.path.join(site, "big", "__init__.py"), "w").close()
    info = os.path.join(site, "big-1.0.dist-info")
    os.makedirs(info)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: big\nVersion: 1.0\n")
    with open(os.path.join(info, "INSTALLER"), "w") as f:
        f.write("pip\n")
    with open(os.path.join(info, "RECORD"), "w") as f:
        f.write(f"big/__init__.py,{DIGEST},0\n")
        f.writelines(f"{layout(i)},{DIGEST},0\n" for i in range(rows))
        f.write("big-1.0.dist-info/METADATA,,\nbig-1.0.dist-info/INSTALLER,,\nbig-1.0.dist-info/RECORD,,\n")
    return root


def audit(venv: str) -> tuple[float, int, dict]:
    """(seconds, peak RSS in bytes, the report) of one audit in a fresh process."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen([sys.executable, "-m", "driftscan", "audit", "--venv", venv, "--no-cache",
                                 "--format", "json"], stdout=out, stderr=subprocess.PIPE, cwd="/")
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - started
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1):
            raise SystemExit(f"audit of {venv} failed with exit {code}: {proc.stderr.read()[-2000:]!r}")
        out.seek(0)
        return elapsed, usage.ru_maxrss * 1024, json.load(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", type=int, default=100_000)
    ap.add_argument("--large", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="driftscan-record-scale-")
    figures: dict = {"small": args.small, "large": args.large, "runs": args.runs, "layouts": {}}
    try:
        for name, layout in LAYOUTS.items():
            venvs = {size: make_venv(os.path.join(work, f"{name}-{size}"), size, layout)
                     for size in (args.small, args.large)}
            runs: dict[int, list[tuple[float, int]]] = {args.small: [], args.large: []}
            for _ in range(args.runs):  # round robin: both sizes see the same load
                for size, venv in venvs.items():
                    seconds, rss, report = audit(venv)
                    [drift] = report["drifts"]
                    assert drift["expected"]["files"] == size, drift
                    assert report["summary"]["files_checked"] == size + 4, report["summary"]
                    runs[size].append((seconds, rss))
            small_s = statistics.median(s for s, _ in runs[args.small])
            large_s = statistics.median(s for s, _ in runs[args.large])
            small_rss = max(r for _, r in runs[args.small])
            large_rss = max(r for _, r in runs[args.large])
            figures["layouts"][name] = {
                "small_s": round(small_s, 2), "large_s": round(large_s, 2),
                "time_ratio": round(large_s / small_s, 2), "size_ratio": round(args.large / args.small, 2),
                "small_peak_rss_MB": round(small_rss / 2**20, 1), "large_peak_rss_MB": round(large_rss / 2**20, 1),
                "rss_ratio": round(large_rss / small_rss, 2),
            }
            for venv in venvs.values():
                shutil.rmtree(venv)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    figures["load_average"] = os.getloadavg()[0]
    text = json.dumps(figures, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
