"""Audit speed, as ratios against baselines measured in the same run (these machines are noisy).

    python benchmarks/bench_audit.py --venv /tmp/bench/realenv [--git-copy DIR] [--synthetic 200000]

(a) cold audit (--no-cache) vs a plain sequential checker and vs the hashing floor
    (hashed bytes / (cores x single-core sha256 rate measured now));
(b) warm audit (stat cache filled, nothing changed) vs the sequential checker and `git status`
    on the same tree committed to git (--git-copy: made once with `cp -a` + `git add` if absent);
(c) synthetic venvs of many small files: time and peak RSS at growing sizes;
(d) the simple parallel checker (``pool_checker.py``: csv + ``hashlib.file_digest``,
    a ``multiprocessing.Pool`` of one worker per core) and the hashing floor measured now
    (hashlib over every RECORD-hashed file on all cores, a fresh process), with the peak RSS of
    both; the cold audit's ratios to them;
(e) a drifted copy of the venv (--drift-copy: made once with ``cp -a`` and planted with
    a few modified files and an added one), re-audited warm, against the clean warm audit; the
    warm report (and exit status) must equal a --no-cache audit's of the same copy, timing aside.
Each command runs in a fresh process; times are medians of --runs runs, peak RSS from wait4 (the
largest of the process and the helpers it waited for); the load average is sampled before each run.
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

# Peak RSS from wait4 counts what the child had mapped before exec: a child spawned by this
# process starts as a copy of it (vfork or fork), and Linux keeps that high-water mark across the
# exec. After this script has imported driftscan and listed 26,000 files that floor is ~40 MB,
# which every figure below it (the pool checker's, a warm audit's) would silently take. So every
# measured command is started by a launcher forked now, while this process is still small.
_LAUNCHER = r"""
import json, os, subprocess, sys, tempfile, time
for line in sys.stdin:
    job = json.loads(line)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(job["cmd"], stdout=out, stderr=err, env=job["env"], cwd=job["cwd"])
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - started
        out.seek(0); err.seek(0)
        reply = {"elapsed": elapsed, "code": os.waitstatus_to_exitcode(status), "maxrss": usage.ru_maxrss * 1024,
                 "stdout": out.read().decode("utf-8", "surrogateescape"),
                 "stderr": err.read()[-4000:].decode("utf-8", "replace")}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
"""
_launcher = subprocess.Popen([sys.executable, "-c", _LAUNCHER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, errors="surrogateescape")

sys.path.insert(0, os.path.dirname(HERE))

from driftscan.environment import find_distributions, resolve_target  # noqa: E402
from driftscan.fs.reader import default_jobs  # noqa: E402
from driftscan.environment.ownership import entry_path  # noqa: E402


LOADS: list[float] = []


def measure(cmd: list[str], env: dict[str, str] | None = None, cwd: str | None = None,
            outputs: list[bytes] | None = None) -> tuple[float, int]:
    """Wall time and peak RSS (bytes) of one fresh process. A driftscan run must print a report
    that checked files: a crash that exits 1 must not pass for a fast audit."""
    LOADS.append(os.getloadavg()[0])
    _launcher.stdin.write(json.dumps({"cmd": cmd, "env": env if env is not None else dict(os.environ),
                                      "cwd": cwd}) + "\n")
    _launcher.stdin.flush()
    reply = json.loads(_launcher.stdout.readline())
    elapsed, stdout = reply["elapsed"], reply["stdout"].encode("utf-8", "surrogateescape")
    if outputs is not None:
        outputs.append(stdout)
    if reply["code"] not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed: {reply['stderr'][-2000:]}")
    if "driftscan" in cmd and "audit" in cmd:
        try:
            checked = json.loads(stdout)["summary"]["files_checked"]
        except (ValueError, KeyError) as exc:
            raise SystemExit(f"{' '.join(cmd)} printed no report: {exc}: {reply['stderr'][-2000:]}")
        if not checked:
            raise SystemExit(f"{' '.join(cmd)} checked no file")
    return elapsed, reply["maxrss"]


def round_robin(runs: int, cmds: dict[str, tuple[list[str], dict[str, str]]]) -> dict[str, dict]:
    """Each command once per round, in turn, ``runs`` rounds: a slow patch of a shared machine
    hits them all alike. name -> {median, times, peak RSS (largest of the runs), outputs}."""
    out = {name: {"times": [], "rss": 0, "rss_runs": [], "outputs": []} for name in cmds}
    for _ in range(runs):
        for name, (cmd, env) in cmds.items():
            elapsed, rss = measure(cmd, env=env, outputs=out[name]["outputs"])
            out[name]["times"].append(elapsed)
            out[name]["rss_runs"].append(rss)
            out[name]["rss"] = max(out[name]["rss"], rss)
    for fig in out.values():
        fig["median"] = statistics.median(fig["times"])
    return out


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


# The hashing floor: every RECORD-hashed file through hashlib on all cores, largest first, in a
# fresh process (interpreter start included, as in an audit); prints the hashing time alone too.
_FLOOR = """
import hashlib, os, sys, time
from multiprocessing import Pool
def one(path):
    with open(path, "rb") as f:
        return len(hashlib.file_digest(f, "sha256").digest())
if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        paths = f.read().split("\\0")
    started = time.perf_counter()
    with Pool(int(sys.argv[2])) as pool:
        n = sum(pool.imap_unordered(one, paths, chunksize=16))
    print(time.perf_counter() - started, len(paths))
"""


def hashed_paths(venv: str) -> list[str]:
    """Every RECORD-hashed file of the venv that exists, largest first."""
    target = resolve_target(venv)
    sized = []
    for md in find_distributions(target.site_packages):
        if md.distribution is None:
            continue
        for entry in md.distribution.entries:
            if entry.hash is not None:
                path = entry_path(md.distribution.site_packages, entry.path)
                try:
                    sized.append((os.stat(path).st_size, path))
                except OSError:
                    pass
    return [p for _, p in sorted(set(sized), reverse=True)]


def plant_drift(venv: str, dest: str) -> tuple[list[str], str]:
    """A copy of ``venv`` with a few drifted files, made once: four RECORD-hashed .py files of
    2-60 KB (of four distributions, the first of each by path) get a debug line appended, one
    file is added. Returns (modified relpaths, added relpath)."""
    marker = os.path.join(dest, ".driftscan-bench-drift")
    target = resolve_target(venv)
    site = target.site_packages[0]
    chosen: list[str] = []
    for md in find_distributions(target.site_packages):
        dist = md.distribution
        if dist is None or len(chosen) >= 4:
            continue
        for entry in sorted(dist.entries, key=lambda e: e.path):
            if entry.hash is not None and entry.path.endswith(".py") and entry.size and 2000 < entry.size < 60000 \
                    and "/" in entry.path:
                chosen.append(entry.path)
                break
    added = os.path.join(os.path.dirname(chosen[0]), "_bench_added_debug.py")
    if not os.path.exists(marker):
        shutil.rmtree(dest, ignore_errors=True)
        subprocess.run(["cp", "-a", venv, dest], check=True)
        dsite = os.path.join(dest, os.path.relpath(site, venv))
        for rel in chosen:
            with open(os.path.join(dsite, rel), "a") as f:
                f.write("\nimport torch\n_DEBUG_STEP = 0\ntorch.save({}, '/tmp/bench-dump.pt')\n")
        with open(os.path.join(dsite, added), "w") as f:
            f.write("import pdb\n\n\ndef probe(x):\n    breakpoint()\n    return x\n")
        open(marker, "w").close()
        time.sleep(2.2)  # out of the racy window before the first audit
    return chosen, added


_STAGE = """
import os, sys, time
from driftscan.fs.helpers import allow_fork
allow_fork()
import driftscan.api as api
from driftscan.caches.statcache import StatCache
from driftscan.environment import resolve_target
from driftscan.environment.verify import verify
from driftscan.environment.fast.cleanindex import still_clean
# The verification stage alone, as api.run does it for `driftscan audit`: the index, or the full path.
started = time.perf_counter()
target = resolve_target(sys.argv[1], ())
cache = StatCache.for_target(target.venv)
index_on = os.environ.get("DRIFTSCAN_CLEAN_INDEX") != "off"
verification = still_clean(target, cache.clean_index(), cache, None) if index_on else None
by_index = verification is not None
if verification is None:
    verification = verify(target, stat_cache=cache, clean_index=index_on)
print(time.perf_counter() - started, len(verification.checks), by_index)
"""


def report_of(cmd: list[str], env: dict[str, str]) -> tuple[int, dict]:
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    report = json.loads(done.stdout)
    for key in ("generated_at", "duration_seconds"):
        report.pop(key, None)
    return done.returncode, report


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


def parallel_and_drift(args, env: dict[str, str], site: str, cores: int) -> dict:
    """(d) cold against the pool checker and the hashing floor; (e) warm with drift."""
    paths = hashed_paths(args.venv)
    with tempfile.NamedTemporaryFile("w", delete=False, suffix=".list") as f:
        f.write("\0".join(paths))
        listing = f.name
    cold_env = {**env, "DRIFTSCAN_CACHE_DIR": tempfile.mkdtemp(prefix="driftscan-bench-cold-")}
    d = round_robin(args.runs, {
        "cold": (driftscan_cmd(args.venv, "--no-cache"), cold_env),
        "pool_checker": ([sys.executable, os.path.join(HERE, "pool_checker.py"), site], env),
        "hash_floor": ([sys.executable, "-c", _FLOOR, listing, str(cores)], env),
    })
    os.unlink(listing)
    hashing_only = statistics.median(float(o.split()[0]) for o in d["hash_floor"]["outputs"])
    out: dict = {
        "hashed_files": len(paths),
        "cold_s": round(d["cold"]["median"], 3), "cold_runs": [round(t, 3) for t in d["cold"]["times"]],
        "pool_checker_s": round(d["pool_checker"]["median"], 3),
        "pool_checker_runs": [round(t, 3) for t in d["pool_checker"]["times"]],
        "hash_floor_s": round(d["hash_floor"]["median"], 3),
        "hash_floor_runs": [round(t, 3) for t in d["hash_floor"]["times"]],
        "hash_floor_hashing_only_s": round(hashing_only, 3),
        "cold_vs_pool_checker": round(d["cold"]["median"] / d["pool_checker"]["median"], 3),
        "cold_vs_hash_floor": round(d["cold"]["median"] / d["hash_floor"]["median"], 3),
        "cold_peak_rss_MB": round(d["cold"]["rss"] / 1e6, 1),
        "pool_checker_peak_rss_MB": round(d["pool_checker"]["rss"] / 1e6, 1),
        "hash_floor_peak_rss_MB": round(d["hash_floor"]["rss"] / 1e6, 1),
        "cold_rss_vs_pool_checker": round(d["cold"]["rss"] / d["pool_checker"]["rss"], 2),
        # (the peak of the largest process: driftscan's own, or one of its forked helpers)
        "cold_peak_rss_runs_MB": [round(r / 1e6, 1) for r in d["cold"]["rss_runs"]],
        "pool_checker_peak_rss_runs_MB": [round(r / 1e6, 1) for r in d["pool_checker"]["rss_runs"]],
    }
    # (e) warm with drift: the copy, its index written by two audits, then round-robin.
    modified, added = plant_drift(args.venv, args.drift_copy)
    warm_env = {**env, "DRIFTSCAN_CACHE_DIR": tempfile.mkdtemp(prefix="driftscan-bench-warm-")}
    for venv in (args.venv, args.drift_copy):
        for _ in range(2):
            subprocess.run(driftscan_cmd(venv), env=warm_env, capture_output=True)
    off = {**warm_env, "DRIFTSCAN_CLEAN_INDEX": "off"}
    stage = [sys.executable, "-c", _STAGE]
    e = round_robin(args.runs, {
        "clean_warm": (driftscan_cmd(args.venv), warm_env),
        "drifted_warm": (driftscan_cmd(args.drift_copy), warm_env),
        "drifted_warm_no_pristine": (driftscan_cmd(args.drift_copy, "--no-pristine"), warm_env),
        "drifted_warm_without_index": (driftscan_cmd(args.drift_copy), off),
        "clean_verify_stage": ([*stage, args.venv], warm_env),
        "drifted_verify_stage": ([*stage, args.drift_copy], warm_env),
        "drifted_verify_stage_without_index": ([*stage, args.drift_copy], off),
    })
    stage_s = {k: statistics.median(float(o.split()[0]) for o in e[k]["outputs"])
               for k in ("clean_verify_stage", "drifted_verify_stage", "drifted_verify_stage_without_index")}
    warm_report = report_of(driftscan_cmd(args.drift_copy), warm_env)
    cold_report = report_of(driftscan_cmd(args.drift_copy, "--no-cache"), warm_env)
    clean = e["clean_warm"]["median"]
    out.update({
        "drift_planted": {"modified": modified, "added": added},
        "drifts_reported": len(cold_report[1]["drifts"]),
        **{f"{k}_s": round(v["median"], 3) for k, v in e.items()},
        **{f"{k}_in_process_s": round(v, 3) for k, v in stage_s.items()},
        "drifted_warm_vs_clean_warm": round(e["drifted_warm"]["median"] / clean, 3),
        "drifted_warm_no_pristine_vs_clean_warm": round(e["drifted_warm_no_pristine"]["median"] / clean, 3),
        "drifted_warm_without_index_vs_clean_warm": round(e["drifted_warm_without_index"]["median"] / clean, 3),
        "drifted_vs_clean_verify_stage_process": round(e["drifted_verify_stage"]["median"]
                                                       / e["clean_verify_stage"]["median"], 3),
        "drifted_vs_clean_verify_stage_in_process": round(stage_s["drifted_verify_stage"]
                                                          / stage_s["clean_verify_stage"], 3),
        "warm_peak_rss_MB": round(e["clean_warm"]["rss"] / 1e6, 1),
        "drifted_warm_peak_rss_MB": round(e["drifted_warm"]["rss"] / 1e6, 1),
        "warm_report_equals_no_cache": warm_report == cold_report,
        "exit_status": {"warm": warm_report[0], "no_cache": cold_report[0]},
    })
    for k in e:
        out[f"{k}_runs"] = [round(t, 3) for t in e[k]["times"]]
    return out


def _finish(fig: dict, cache_dir: str, out: str | None) -> None:
    """The load seen during the run, the private cache removed, the figures printed (and written)."""
    fig["load_average"] = {"median": round(statistics.median(LOADS), 2), "max": round(max(LOADS), 2),
                           "min": round(min(LOADS), 2)}
    shutil.rmtree(cache_dir, ignore_errors=True)
    print(json.dumps(fig, indent=2))
    if out:
        with open(out, "w") as f:
            json.dump(fig, f, indent=2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--venv", required=True)
    ap.add_argument("--git-copy", help="where to keep a git-committed copy of the venv for (b)")
    ap.add_argument("--synthetic", type=int, nargs="*", default=[], help="synthetic sizes, e.g. 50000 200000")
    ap.add_argument("--synthetic-root", default=os.path.join(tempfile.gettempdir(), "driftscan-synth"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--parallel-and-drift", action="store_true", help="(d) and (e) only, round-robin (skips (a)-(c))")
    ap.add_argument("--drift-copy", default=os.path.join(tempfile.gettempdir(), "driftscan-bench-drifted"),
                    help="where the drifted copy of the venv for (e) is kept")
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
    if args.parallel_and_drift:
        fig["parallel_and_drift"] = parallel_and_drift(args, env, site, cores)
        _finish(fig, cache_dir, args.json)
        return
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
    if args.parallel_and_drift:
        fig["parallel_and_drift"] = parallel_and_drift(args, env, site, cores)
    _finish(fig, cache_dir, args.json)


if __name__ == "__main__":
    main()
