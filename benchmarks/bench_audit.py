"""Audit speed, as ratios against baselines measured in the same run (these machines are noisy).

    python benchmarks/bench_audit.py --venv /tmp/bench/realenv [--git-copy DIR] [--synthetic 200000]

(a) cold audit (--no-cache) vs a plain sequential checker and vs the hashing floor
    (hashed bytes / (cores x single-core sha256 rate measured now));
(b) warm audit (stat cache filled, nothing changed) vs the sequential checker and `git status`
    on the same tree committed to git (--git-copy: made once with `cp -a` + `git add` if absent);
(c) synthetic venvs of many small files: time and peak RSS at growing sizes.
Each command runs in a fresh process; times are medians of --runs runs, peak RSS from wait4.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
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
sys.path.insert(0, os.path.dirname(HERE))

from driftscan.discover import find_distributions, resolve_target  # noqa: E402
from driftscan.fileio import default_jobs  # noqa: E402
from driftscan.verify.env.ownership import entry_path  # noqa: E402


def measure(cmd: list[str], env: dict[str, str] | None = None, cwd: str | None = None) -> tuple[float, int]:
    """Wall time and peak RSS (bytes) of one fresh process. A driftscan run must print a report
    that checked files: a crash that exits 1 must not pass for a fast audit."""
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, env=env, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - started
        out.seek(0)
        stdout = out.read()
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.read().decode()[-2000:]}")
    if "driftscan" in cmd and "audit" in cmd:
        try:
            checked = json.loads(stdout)["summary"]["files_checked"]
        except (ValueError, KeyError) as exc:
            raise SystemExit(f"{' '.join(cmd)} printed no report: {exc}: {proc.stderr.read().decode()[-2000:]}")
        if not checked:
            raise SystemExit(f"{' '.join(cmd)} checked no file")
    return elapsed, usage.ru_maxrss * 1024


def median_of(runs: int, cmd: list[str], **kw) -> tuple[float, int]:
    results = [measure(cmd, **kw) for _ in range(runs)]
    return statistics.median(r[0] for r in results), max(r[1] for r in results)


_RATE = """
import hashlib, os, sys, time
from concurrent.futures import ProcessPoolExecutor
buf = os.urandom(1 << 20) * 128
def one(_):
    started = time.perf_counter(); hashlib.sha256(buf).digest(); return time.perf_counter() - started
single = min(one(0) for _ in range(3))
n = int(sys.argv[1])
with ProcessPoolExecutor(n) as pool:
    list(pool.map(one, range(n)))
    started = time.perf_counter(); list(pool.map(one, range(n))); together = time.perf_counter() - started
print(len(buf) / single, n * len(buf) / together)
"""


def sha256_rates(cores: int) -> tuple[float, float]:
    """(single-core, all-cores aggregate) sha256 bytes/s, measured in a child process so that the
    256 MiB buffers do not inflate the peak RSS later children inherit from this process."""
    out = subprocess.run([sys.executable, "-c", _RATE, str(cores)], capture_output=True, text=True, check=True)
    single, aggregate = (float(x) for x in out.stdout.split())
    return single, aggregate


def hashed_bytes(venv: str) -> tuple[int, int, int]:
    target = resolve_target(venv)
    total = files = rows = 0
    for md in find_distributions(target.site_packages):
        if md.distribution is None:
            continue
        for entry in md.distribution.entries:
            rows += 1
            if entry.hash is not None:
                try:
                    total += os.stat(entry_path(md.distribution.site_packages, entry.path)).st_size
                    files += 1
                except OSError:
                    pass
    return total, files, rows


def driftscan_cmd(venv: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "driftscan", "audit", "--venv", venv, "--format", "json", *extra]


def ensure_git_copy(venv: str, dest: str) -> str:
    if not os.path.isdir(os.path.join(dest, ".git")):
        shutil.rmtree(dest, ignore_errors=True)
        subprocess.run(["cp", "-a", venv, dest], check=True)
        git = ["git", "-C", dest, "-c", "user.name=bench", "-c", "user.email=bench@invalid"]
        subprocess.run([*git, "init", "-q"], check=True)
        subprocess.run([*git, "add", "-A", "-f"], check=True)
        subprocess.run([*git, "commit", "-q", "-m", "snapshot"], check=True)
        subprocess.run([*git, "status", "--porcelain"], check=True, capture_output=True)  # refresh the index
    return dest


def make_synthetic(root: str, n_files: int, per_dist: int = 500) -> str:
    """A venv layout with ``n_files`` small files in RECORD-described distributions."""
    marker = os.path.join(root, ".complete")
    if os.path.exists(marker):
        return root
    shutil.rmtree(root, ignore_errors=True)
    site = os.path.join(root, "lib", "python3.11", "site-packages")
    os.makedirs(site)
    with open(os.path.join(root, "pyvenv.cfg"), "w") as f:
        f.write("home = /usr/bin\nversion = 3.11.7\n")
    payload = os.urandom(4096)
    for d in range(0, n_files, per_dist):
        name = f"synth{d // per_dist:05d}"
        rows = []
        for i in range(min(per_dist, n_files - d)):
            rel = f"{name}/sub{i % 10}/m{i}.py"
            data = payload[: 200 + (i * 37) % 3800] + str(i).encode()
            os.makedirs(os.path.join(site, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(site, rel), "wb") as f:
                f.write(data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            rows.append(f"{rel},sha256={digest},{len(data)}")
        info = os.path.join(site, f"{name}-1.0.dist-info")
        os.makedirs(info)
        with open(os.path.join(info, "METADATA"), "w") as f:
            f.write(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n\n")
        with open(os.path.join(info, "INSTALLER"), "w") as f:
            f.write("pip\n")
        rows += [f"{name}-1.0.dist-info/METADATA,,", f"{name}-1.0.dist-info/INSTALLER,,",
                 f"{name}-1.0.dist-info/RECORD,,"]
        with open(os.path.join(info, "RECORD"), "w") as f:
            f.write("\n".join(rows) + "\n")
    old = time.time() - 60  # installed a while ago: outside the stat cache's racy window
    for dirpath, _, names in os.walk(root):
        for n in names:
            os.utime(os.path.join(dirpath, n), (old, old))
    open(marker, "w").close()
    return root


def warm(venv: str, env: dict[str, str], runs: int) -> tuple[float, int]:
    subprocess.run(driftscan_cmd(venv), env=env, capture_output=True)
    time.sleep(2.2)  # entries written within the racy window are re-hashed once more
    subprocess.run(driftscan_cmd(venv), env=env, capture_output=True)
    return median_of(runs, driftscan_cmd(venv), env=env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--venv", required=True)
    ap.add_argument("--git-copy", help="where to keep a git-committed copy of the venv for (b)")
    ap.add_argument("--synthetic", type=int, nargs="*", default=[], help="synthetic sizes, e.g. 50000 200000")
    ap.add_argument("--synthetic-root", default=os.path.join(tempfile.gettempdir(), "driftscan-synth"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()

    cache_dir = tempfile.mkdtemp(prefix="driftscan-bench-cache-")
    env = {**os.environ, "DRIFTSCAN_CACHE_DIR": cache_dir, "PYTHONDONTWRITEBYTECODE": "1"}
    site = resolve_target(args.venv).site_packages[0]
    cores = default_jobs()
    rate, aggregate = sha256_rates(cores)
    nbytes, nfiles, nrows = hashed_bytes(args.venv)
    floor = nbytes / (cores * rate)
    measured_floor = nbytes / aggregate
    fig: dict[str, object] = {"machine": f"{platform.machine()}, {cores} cores, Python {platform.python_version()}",
                              "hashed_bytes": nbytes, "hashed_files": nfiles, "record_rows": nrows,
                              "sha256_rate_GBps": round(rate / 1e9, 2),
                              "sha256_all_cores_GBps": round(aggregate / 1e9, 2),
                              "floor_s": round(floor, 3), "measured_floor_s": round(measured_floor, 3)}
    seq, seq_rss = median_of(args.runs, [sys.executable, os.path.join(HERE, "sequential_checker.py"), site], env=env)
    cold, cold_rss = median_of(args.runs, driftscan_cmd(args.venv, "--no-cache"), env=env)
    # The design choices, each against its alternative in the same run.
    one_job, _ = median_of(args.runs, driftscan_cmd(args.venv, "--no-cache", "--jobs", "1"), env=env)
    hot, hot_rss = warm(args.venv, env, args.runs)
    # Without the clean index: the stat-cache path, which every audit of a venv with drift takes.
    no_index = {**env, "DRIFTSCAN_CLEAN_INDEX": "off"}
    stat_path, stat_path_rss = median_of(args.runs, driftscan_cmd(args.venv), env=no_index)
    inline_walk, _ = median_of(args.runs, driftscan_cmd(args.venv), env={**no_index, "DRIFTSCAN_FORK": "inline"})
    fig.update(cold_one_thread_s=round(one_job, 3),
               warm_without_clean_index_s=round(stat_path, 3),
               warm_without_clean_index_vs_sequential=round(stat_path / seq, 3),
               warm_without_clean_index_rss_MB=round(stat_path_rss / 1e6, 1),
               warm_without_clean_index_no_forks_s=round(inline_walk, 3))
    fig.update(sequential_s=round(seq, 3), cold_s=round(cold, 3), warm_s=round(hot, 3),
               cold_vs_sequential=round(cold / seq, 3), cold_vs_floor=round(cold / floor, 3),
               cold_vs_measured_floor=round(cold / measured_floor, 3),
               cold_peak_rss_MB=round(cold_rss / 1e6, 1), warm_peak_rss_MB=round(hot_rss / 1e6, 1),
               warm_vs_sequential=round(hot / seq, 3), peak_rss_MB=round(max(cold_rss, hot_rss) / 1e6, 1))
    if args.git_copy:
        repo = ensure_git_copy(args.venv, args.git_copy)
        git, _ = median_of(args.runs, ["git", "-C", repo, "status", "--porcelain"], env=env)
        fig.update(git_status_s=round(git, 3), warm_vs_git_status=round(hot / git, 2))
    synth = []
    for n in args.synthetic:
        root = make_synthetic(os.path.join(args.synthetic_root, str(n)), n)
        c, c_rss = median_of(max(1, args.runs // 2), driftscan_cmd(root, "--no-cache"), env=env)
        w, w_rss = warm(root, env, max(1, args.runs // 2))
        s, s_rss = median_of(max(1, args.runs // 2), driftscan_cmd(root), env={**env, "DRIFTSCAN_CLEAN_INDEX": "off"})
        synth.append({"files": n, "cold_s": round(c, 3), "warm_s": round(w, 3), "cold_us_per_file": round(c / n * 1e6, 1),
                      "warm_without_clean_index_s": round(s, 3),
                      "peak_rss_MB": round(max(c_rss, w_rss, s_rss) / 1e6, 1)})
    fig["synthetic"] = synth
    shutil.rmtree(cache_dir, ignore_errors=True)
    print(json.dumps(fig, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(fig, f, indent=2)


if __name__ == "__main__":
    main()
