"""Snapshot and diff speed, as ratios against peers measured in the same run (these machines are noisy).

    flock /tmp/bench.lock python benchmarks/bench_snapshot.py --venv /tmp/bench/realenv [--runs 7] [--json out.json]

- snapshot: ``driftscan snapshot --venv V`` against ``find V -type f -print0 | xargs -0 -P<cores> xxh128sum``
  (the same files, both cores);
- diff, cold: ``driftscan diff --no-cache`` (every file hashed, no signature trusted, no cache;
  the page cache is warm) against ``xxh128sum -c`` of the same files' checksums, the list split
  into one part per core, run side by side;
- diff, warm: ``driftscan diff`` with the snapshot's signatures trusted (nothing changed since),
  from the diff index (``snapshot/treeindex.py``) that the warm-up round's warm diff wrote:
  no directory listed, one stat a directory and one lstat a file;
- AIDE (``aide --init`` / ``aide --check``, sha256 and the usual attributes) where installed;
- with ``--floor``, what the snapshot could cost at best in Python, over the same files: the
  interpreter's start with the snapshot command's imports, and ``hash_floor.py`` (open, fstat,
  read, xxh3, close a file, nothing else) in one process and in one per core, beside
  ``xxh128sum`` in one process: which part of the snapshot's ratio is Python's own per-file
  cost and start-up, and which is driftscan's work around the hashing.

Every command runs in a fresh process, round-robin (one run of each per round), after one
warm-up round that also fills the page cache; the figures are medians. The load average is
noted before and after: on a shared machine only ratios from one run compare. Each diff must
report the clean tree it was given (0 drifts), the cold one with no file trusted by signature.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def driftscan_exe() -> list[str]:
    exe = os.path.join(os.path.dirname(sys.executable), "driftscan")
    return [exe] if os.path.exists(exe) else [sys.executable, "-m", "driftscan"]


def measure(cmd: list[str], check=None, ok=(0,), cwd: str | None = None) -> tuple[float, int]:
    """Wall time and peak RSS (bytes, from wait4) of one fresh process. stderr goes to a file, not
    a terminal: driftscan's progress bar (drawn on a terminal only) is not part of the figures."""
    with tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - started
        err.seek(0)
        if os.waitstatus_to_exitcode(status) not in ok:
            raise SystemExit(f"{' '.join(cmd)} exited {os.waitstatus_to_exitcode(status)}: {err.read().decode()[-2000:]}")
    if check is not None:
        check()
    return elapsed, usage.ru_maxrss * 1024


def regular_files(root: str) -> tuple[list[str], int]:
    """What xxh128sum is given: every regular file under root (find -type f), and their bytes."""
    files, total = [], 0
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            path = os.path.join(dirpath, name)
            if os.path.isfile(path) and not os.path.islink(path):
                files.append(path)
                total += os.path.getsize(path)
    return files, total


def aide_config(work: str, venv: str) -> str:
    conf = os.path.join(work, "aide.conf")
    with open(conf, "w") as f:
        f.write(f"database_in=file:{work}/aide.db\ndatabase_out=file:{work}/aide.db.new\ngzip_dbout=no\n"
                f"report_url=stdout\nChecks = p+i+n+u+g+s+m+c+sha256\n{venv} Checks\n")
    return conf


def report_check(path: str, trusted: bool):
    def check() -> None:
        with open(path) as f:
            summary = json.load(f)["summary"]
        if summary["drifts"] or not summary["files_checked"]:
            raise SystemExit(f"{path}: expected a clean diff, got {summary}")
        if trusted != bool(summary.get("trusted_by_signature")):
            raise SystemExit(f"{path}: trusted_by_signature {summary.get('trusted_by_signature')} in a"
                             f" {'warm' if trusted else 'cold'} diff")
    return check


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv", default="/tmp/bench/realenv")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--aide-runs", type=int, default=1, help="AIDE takes 10-100 s a run: fewer rounds of it")
    parser.add_argument("--json", metavar="FILE", help="write every figure here")
    parser.add_argument("--no-aide", action="store_true")
    parser.add_argument("--floor", action="store_true", help="also time the Python hashing floor (hash_floor.py)")
    parser.add_argument("--baseline-code", metavar="DIR",
                        help="a copy of an older driftscan package's parent directory (e.g. `git archive` of a commit):"
                             " its snapshot and diffs (warm and --no-cache) run in the same rounds, for paired ratios")
    args = parser.parse_args()
    venv = os.path.abspath(args.venv)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    work = tempfile.mkdtemp(prefix="bench-snapshot-")
    cache = os.path.join(work, "cache")  # driftscan's own cache directory, fresh for this run
    os.environ["DRIFTSCAN_CACHE_DIR"] = cache
    ds = driftscan_exe()
    snap = os.path.join(work, "snap.json")
    files, total = regular_files(venv)
    listing = os.path.join(work, "files.txt")
    with open(listing, "wb") as f:
        f.write(b"".join(os.fsencode(p) + b"\0" for p in files))
    # The checksum list for -c, made once, split round-robin into one part per core.
    sums = subprocess.run(["sh", "-c", f"xargs -0 xxh128sum < '{listing}'"], capture_output=True, check=True).stdout
    lines = sums.splitlines(keepends=True)
    parts = []
    for n in range(cores):
        part = os.path.join(work, f"sums.{n}")
        with open(part, "wb") as f:
            f.write(b"".join(lines[n::cores]))
        parts.append(part)
    check_cmd = " & ".join(f"xxh128sum -c --quiet '{p}'" for p in parts) + "; wait"

    # ``python -m driftscan`` imports from the working directory first: the baseline runs in its own.
    baseline = os.path.abspath(args.baseline_code) if args.baseline_code else None
    commands: dict[str, tuple[list[str], object, tuple]] = {
        "xxh128sum": (["sh", "-c", f"find '{venv}' -type f -print0 | xargs -0 -P{cores} -n 2000 xxh128sum > /dev/null"],
                      None, (0,)),
        "driftscan snapshot": ([*ds, "snapshot", "--venv", venv, "-o", snap], None, (0,)),
        "xxh128sum -c": (["sh", "-c", check_cmd], None, (0,)),
        "driftscan diff --no-cache (cold)": ([*ds, "diff", snap, "--no-cache", "--format", "json", "-o",
                                              os.path.join(work, "cold.json")],
                                             report_check(os.path.join(work, "cold.json"), False), (0,)),
        "driftscan diff (warm)": ([*ds, "diff", snap, "--format", "json", "-o", os.path.join(work, "warm.json")],
                                  report_check(os.path.join(work, "warm.json"), True), (0,)),
    }
    if args.floor:
        floor = [sys.executable, os.path.join(HERE, "hash_floor.py"), listing]
        commands["python start + snapshot imports"] = ([sys.executable, "-c", "import driftscan.cli, driftscan.api,"
                                                        " driftscan.snapshot.run"], None, (0,))
        commands["xxh128sum, 1 process"] = (["sh", "-c", f"xargs -0 -n 2000 xxh128sum < '{listing}' > /dev/null"],
                                            None, (0,))
        commands["python hash loop, 1 process"] = ([*floor, "--procs", "1"], None, (0,))
        commands[f"python hash loop, {cores} processes"] = ([*floor, "--procs", str(cores)], None, (0,))
    if args.baseline_code:
        old_ds = ["env", f"PYTHONPATH={baseline}", sys.executable, "-m", "driftscan"]
        old_snap = os.path.join(work, "snap-old.json")
        commands["baseline snapshot"] = ([*old_ds, "snapshot", "--venv", venv, "-o", old_snap], None, (0,))
        old_report = os.path.join(work, "old.json")

        def baseline_check() -> None:  # the older code's report of the clean tree
            with open(old_report) as f:
                summary = json.load(f)["summary"]
            if summary["drifts"] or not summary["files_checked"]:
                raise SystemExit(f"the baseline diff did not report the clean tree: {summary}")

        # The baseline's diffs (warm: with whatever its code trusts; cold: --no-cache), in its own
        # cache directory: the two codes' caches may not share a format.
        old_env = ["env", f"DRIFTSCAN_CACHE_DIR={cache}-baseline"]
        commands["baseline diff"] = ([*old_env, *old_ds[1:], "diff", snap, "--format", "json", "-o", old_report],
                                     baseline_check, (0,))
        commands["baseline diff --no-cache"] = ([*old_env, *old_ds[1:], "diff", snap, "--no-cache", "--format", "json",
                                                 "-o", old_report], baseline_check, (0,))
    aide = shutil.which("aide") if not args.no_aide else None
    if aide:
        conf = aide_config(work, venv)
        db = os.path.join(work, "aide.db")
        commands["aide --init"] = ([aide, "-c", conf, "--init"], lambda: os.replace(db + ".new", db), (0,))
        commands["aide --check"] = ([aide, "-c", conf, "--check"], None, (0,))

    load_before = os.getloadavg()
    times: dict[str, list[float]] = {name: [] for name in commands}
    rss: dict[str, int] = {name: 0 for name in commands}
    # Warm-up round: fills the page cache, writes the snapshot the diffs compare with (it must
    # be older than the racy window for its signatures to be trusted: wait that out), AIDE's database.
    for name, (cmd, check, ok) in commands.items():
        if name == "aide --check":
            continue  # AIDE is slow (tens of seconds): its database is all the warm-up needs
        measure(cmd, check, ok, cwd=baseline if name.startswith("baseline") else None)
        if name == "driftscan snapshot":
            time.sleep(2.5)
    for round_ in range(args.runs):
        for name, (cmd, check, ok) in commands.items():
            if name.startswith("aide") and round_ >= args.aide_runs:
                continue
            if name == "driftscan snapshot":  # a fresh snapshot is racy for 2 s: write it elsewhere
                cmd = [*cmd[:-1], os.path.join(work, "snap-timed.json")]
            elapsed, peak = measure(cmd, check, ok, cwd=baseline if name.startswith("baseline") else None)
            times[name].append(elapsed)
            rss[name] = max(rss[name], peak)
    load_after = os.getloadavg()
    med = {name: statistics.median(t) for name, t in times.items() if t}
    ratios = {
        "snapshot / xxh128sum": med["driftscan snapshot"] / med["xxh128sum"],
        "diff cold / xxh128sum -c": med["driftscan diff --no-cache (cold)"] / med["xxh128sum -c"],
        "diff warm (s)": med["driftscan diff (warm)"],
    }
    if args.baseline_code:
        ratios["snapshot / baseline snapshot"] = med["driftscan snapshot"] / med["baseline snapshot"]
        ratios["diff cold / baseline diff --no-cache"] = (med["driftscan diff --no-cache (cold)"]
                                                          / med["baseline diff --no-cache"])
        ratios["diff warm / baseline diff"] = med["driftscan diff (warm)"] / med["baseline diff"]
    if args.floor:
        ratios["python hash loop / xxh128sum, 1 process each"] = (med["python hash loop, 1 process"]
                                                                 / med["xxh128sum, 1 process"])
        ratios[f"python hash loop on {cores} / xxh128sum"] = med[f"python hash loop, {cores} processes"] / med["xxh128sum"]
        ratios["snapshot / python hash loop (same cores)"] = (med["driftscan snapshot"]
                                                              / med[f"python hash loop, {cores} processes"])
    if aide:
        ratios["aide --init / snapshot"] = med["aide --init"] / med["driftscan snapshot"]
        ratios["aide --check / diff cold"] = med["aide --check"] / med["driftscan diff --no-cache (cold)"]
    targets = {
        "snapshot / xxh128sum": 1.2,
        "diff cold / xxh128sum -c": 1.5,
        "diff warm (s)": 0.3,
    }
    print(f"{venv}: {len(files)} regular files, {total / 1e9:.2f} GB; {cores} cores; {args.runs} rounds"
          f" (AIDE {min(args.runs, args.aide_runs) if aide else 0}); load average before"
          f" {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f},"
          f" after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    for name, t in times.items():
        if t:
            print(f"  {name:36s} median {med[name]:7.3f} s  (min {min(t):.3f}, max {max(t):.3f}; peak RSS"
                  f" {rss[name] / 2**20:.0f} MB)")
    for name, value in ratios.items():
        target = targets.get(name)
        verdict = "" if target is None else ("  met" if value <= target else "  NOT met") + f" (target ≤ {target})"
        print(f"  {name:44s} {value:7.3f}{' s' if name.endswith('(s)') else ' ×'}{verdict}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"venv": venv, "files": len(files), "bytes": total, "cores": cores, "runs": args.runs,
                       "python": platform.python_version(), "load_before": load_before, "load_after": load_after,
                       "times": times, "medians": med, "peak_rss": rss, "ratios": ratios, "targets": targets,
                       "date": time.strftime("%Y-%m-%d %H:%M:%S")}, f, indent=1)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
