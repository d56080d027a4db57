"""What `audit --lock` and `lock-check` cost, as ratios to a warm `audit` of the same venv measured
in the same run (target: at most 1.5x once the wheels are found in a cache), and the cold cost of
reading the wheels (a fresh driftscan cache: no wheel digest remembered, pip's cache not indexed).

    python benchmarks/bench_lock.py [--work DIR] [--runs 5] [--scenarios uv,pip,vllm] [--json OUT] [--profile]

Needs the package index (like the other benchmarks that download): each scenario is built once
under --work (default /tmp/driftscan-bench-lock) and reused by later runs.

- uv: a project depending on ~20 real packages (~50 distributions), ``uv lock`` + ``uv sync`` with
  its own UV_CACHE_DIR; the lock is its uv.lock, the wheels are found through uv's cache pointers.
- pip: the same set compiled to a hashed requirements file (``uv pip compile --generate-hashes``),
  installed with ``pip install --require-hashes -r`` (its own PIP_CACHE_DIR, no config file); the
  wheels are found in pip's HTTP cache, or (second variant) in a ``pip download`` directory given
  with ``--wheels``. Finding a wheel there means hashing the whole .whl file, once: the digest is
  remembered by its stat signature.
- vllm: /tmp/scen/V (the vLLM pip venv) when it exists, with a hashed requirements lock of what it
  holds (``uv pip compile --generate-hashes --no-deps`` of its distributions' names and versions);
  its wheels are downloaded into a --wheels directory unless they weigh more than --max-download.
  Its direct_url.json names the local wheel it was installed from by digest, so a plain audit
  checks that wheel's provenance too: the baseline already pays for it.

Each figure is a fresh process (``python -m driftscan ...``), timed round-robin with the others
of its scenario, median of --runs. Cold runs each get an empty DRIFTSCAN_CACHE_DIR (the OS page
cache stays warm: this is driftscan's cold, not the disk's). ``--profile`` prints cProfile's top
entries of a warm in-process ``lock-check`` run of each scenario.
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
sys.path.insert(0, os.path.dirname(HERE))
from fixtures.localindex import LocalIndex  # noqa: E402 - the repository root is on sys.path only now

# Real packages a service might depend on; with their dependencies ~50 distributions.
PACKAGES = ("requests", "numpy", "pandas", "jinja2", "pydantic", "rich", "click", "httpx", "fastapi", "uvicorn",
            "sqlalchemy", "pyyaml", "attrs", "typer", "boto3", "tqdm", "orjson", "aiohttp", "lxml", "pillow",
            "python-dateutil", "packaging")
VLLM = "/tmp/scen/V"
LOADS: list[float] = []


def uv_bin() -> str:
    here = os.path.join(os.path.dirname(sys.executable), "uv")
    found = here if os.path.exists(here) else shutil.which("uv")
    if not found:
        raise SystemExit("uv is needed (pip install uv)")
    return found


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without pip's and uv's settings (the machine's pip.conf, its
    find-links and constraints) so that the scenarios install what PyPI serves."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "VIRTUAL_ENV"))}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", UV_NO_CONFIG="1",
               PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


def sh(cmd: list[str], env: dict[str, str], cwd: str | None = None) -> str:
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def python_version() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


def build_uv(work: str) -> dict:
    """A uv project installed from its uv.lock, with a private uv cache."""
    root = os.path.join(work, "uv")
    project, cache = os.path.join(root, "project"), os.path.join(root, "uv-cache")
    env = clean_env(UV_CACHE_DIR=cache, UV_PYTHON=sys.executable)
    if not os.path.exists(os.path.join(root, ".complete")):
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(project)
        deps = ",\n".join(f'    "{p}"' for p in PACKAGES)
        with open(os.path.join(project, "pyproject.toml"), "w") as f:
            f.write(f'[project]\nname = "bench-service"\nversion = "0.1.0"\nrequires-python = ">={python_version()}"\n'
                    f'dependencies = [\n{deps},\n]\n\n[tool.uv]\npackage = false\n')
        sh([uv_bin(), "lock"], env, cwd=project)
        sh([uv_bin(), "sync", "--frozen", "--no-install-project"], env, cwd=project)
        settle(os.path.join(project, ".venv"))
        open(os.path.join(root, ".complete"), "w").close()
    return {"venv": os.path.join(project, ".venv"), "lock": os.path.join(project, "uv.lock"),
            "env": {"UV_CACHE_DIR": cache, "PIP_CACHE_DIR": os.path.join(root, "no-pip-cache")}, "wheels": None}


def build_pip(work: str) -> dict:
    """The same set as a hashed requirements file, installed by pip; pip's cache and a pip download.

    The wheels are downloaded from PyPI first, then installed from a local index serving them with
    the caching headers PyPI sends: a proxy in front of PyPI may strip them (seen on this project's
    machines), and pip then keeps no wheel in its cache at all. The bytes, hence the digests, are
    PyPI's either way."""
    root = os.path.join(work, "pip")
    venv, cache, wheels = os.path.join(root, "venv"), os.path.join(root, "pip-cache"), os.path.join(root, "wheels")
    lock = os.path.join(root, "requirements.txt")
    env = clean_env(PIP_CACHE_DIR=cache, UV_CACHE_DIR=os.path.join(root, "uv-cache"))
    if not os.path.exists(os.path.join(root, ".complete")):
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(root)
        with open(os.path.join(root, "requirements.in"), "w") as f:
            f.write("\n".join(PACKAGES) + "\n")
        sh([uv_bin(), "pip", "compile", "--generate-hashes", "--python-version", python_version(), "-q",
            os.path.join(root, "requirements.in"), "-o", lock], env)
        sh([sys.executable, "-m", "venv", "--upgrade-deps", venv], env)  # a pip that writes http-v2
        pip = os.path.join(venv, "bin", "pip")
        sh([pip, "download", "-q", "--no-cache-dir", "--require-hashes", "--only-binary", ":all:", "--no-deps",
            "-r", lock, "-d", wheels], env)
        with LocalIndex(wheels) as index:  # pip caches only what a trusted host serves with caching headers
            sh([pip, "install", "-q", "--require-hashes", "--only-binary", ":all:", *index.pip_args(cache),
                "-r", lock], env)
        settle(venv)
        open(os.path.join(root, ".complete"), "w").close()
    env = {"UV_CACHE_DIR": os.path.join(root, "no-uv-cache"), "PIP_CACHE_DIR": cache}
    return {"venv": venv, "lock": lock, "env": env, "wheels": wheels}


def build_vllm(work: str, max_download: int) -> dict | None:
    """A hashed requirements lock of what /tmp/scen/V holds, and its wheels when small enough."""
    if not os.path.isdir(VLLM):
        return None
    root = os.path.join(work, "vllm")
    lock, wheels = os.path.join(root, "requirements.txt"), os.path.join(root, "wheels")
    env = clean_env(PIP_CACHE_DIR=os.path.join(root, "pip-cache"), UV_CACHE_DIR=os.path.join(root, "uv-cache"))
    info: dict = {"venv": VLLM, "lock": lock, "env": {"UV_CACHE_DIR": os.path.join(root, "no-uv-cache"),
                                                      "PIP_CACHE_DIR": os.path.join(root, "no-pip-cache")},
                  "wheels": None}
    if not os.path.exists(os.path.join(root, ".complete")):
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(root)
        # What pip freeze lists, pinned by name and version (freeze itself prints `NAME @ file://...`
        # for a wheel installed by path, as vllm here was).
        from driftscan.environment import find_distributions, resolve_target
        pins = sorted(f"{md.distribution.name}=={md.distribution.version}"
                      for md in find_distributions(resolve_target(VLLM).site_packages)
                      if md.distribution is not None and md.distribution.name not in ("pip", "setuptools", "wheel"))
        with open(os.path.join(root, "requirements.in"), "w") as f:
            f.write("\n".join(pins) + "\n")
        sh([uv_bin(), "pip", "compile", "--generate-hashes", "--no-deps", "--python-version", python_version(), "-q",
            os.path.join(root, "requirements.in"), "-o", lock], env)
        open(os.path.join(root, ".complete"), "w").close()
    sized = os.path.join(root, "download-size.json")
    if not os.path.exists(sized):
        with open(sized, "w") as f:
            json.dump(_release_size(lock), f)
    with open(sized) as f:
        total = json.load(f)
    info["wheel_bytes_to_download"] = total
    if total is not None and total <= max_download:
        if not os.path.exists(os.path.join(wheels, ".complete")):
            sh([sys.executable, "-m", "pip", "download", "-q", "--require-hashes", "--only-binary", ":all:",
                "--no-deps", "-r", lock, "-d", wheels, "--python-version", python_version()], env)
            open(os.path.join(wheels, ".complete"), "w").close()
        info["wheels"] = wheels
    else:
        info["skipped_wheels"] = (f"the wheels weigh {total / 1e9:.1f} GB, over --max-download" if total else
                                  "their size could not be read from the index")
    return info


def _release_size(lock: str) -> int | None:
    """The bytes of the wheels the lock pins, from the index's JSON simple API (PEP 691): of each
    pinned release, the largest wheel whose sha256 the lock lists (an upper bound)."""
    import re
    import urllib.request
    with open(lock) as f:
        text = f.read().replace("\\\n", " ")
    total = 0
    for line in text.splitlines():
        pin = re.match(r"\s*([A-Za-z0-9._-]+)==([^\s;]+)", line)
        if pin is None:
            continue
        hashes = set(re.findall(r"--hash=sha256:([0-9a-f]{64})", line))
        request = urllib.request.Request(f"https://pypi.org/simple/{pin[1]}/",
                                         headers={"Accept": "application/vnd.pypi.simple.v1+json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                files = json.load(r)["files"]
        except Exception:  # noqa: BLE001 - an unknown size skips the download
            return None
        total += max((f.get("size") or 0 for f in files
                      if f["filename"].endswith(".whl") and f.get("hashes", {}).get("sha256") in hashes), default=0)
    return total


def settle(venv: str) -> None:
    time.sleep(2.2)  # out of the racy window: the stat cache trusts what it records after this


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, dict]:
    """Wall time of one fresh process and the JSON it printed (exit 0 or 1: a crash is not a figure)."""
    LOADS.append(os.getloadavg()[0])
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    try:
        return elapsed, json.loads(done.stdout)
    except ValueError as exc:
        raise SystemExit(f"{' '.join(cmd)} printed no JSON: {exc}: {done.stderr.decode()[-2000:]}")


def commands(sc: dict, wheels: bool) -> dict[str, list[str]]:
    base = [sys.executable, "-m", "driftscan"]
    extra = ["--wheels", sc["wheels"]] if wheels else []
    return {"audit": [*base, "audit", "--venv", sc["venv"], "--format", "json"],
            "audit_lock": [*base, "audit", "--venv", sc["venv"], "--format", "json", "--lock", sc["lock"], *extra],
            "lock_check": [*base, "lock-check", sc["lock"], "--venv", sc["venv"], "--format", "json", *extra]}


def verified_of(name: str, out: dict) -> tuple[int, int]:
    prov = out.get("provenance") or []
    return sum(bool(p.get("verified")) for p in prov), len(prov)


def run_scenario(sc: dict, wheels: bool, runs: int, profile: bool) -> dict:
    cmds = commands(sc, wheels)
    warm_dir = tempfile.mkdtemp(prefix="driftscan-bench-lock-")
    env = {**clean_env(**sc["env"]), "DRIFTSCAN_CACHE_DIR": warm_dir}
    fig: dict = {}
    try:
        # Cold: each run in a fresh driftscan cache, round-robin.
        cold: dict[str, list[float]] = {k: [] for k in cmds}
        for _ in range(runs):
            for name, cmd in cmds.items():
                fresh = tempfile.mkdtemp(prefix="driftscan-bench-lock-cold-")
                try:
                    cold[name].append(measure(cmd, {**env, "DRIFTSCAN_CACHE_DIR": fresh})[0])
                finally:
                    shutil.rmtree(fresh, ignore_errors=True)
        # Warm: the cache filled (twice, out of the racy window between), then round-robin.
        for _ in range(2):
            for cmd in cmds.values():
                measure(cmd, env)
            time.sleep(2.2)
        warm: dict[str, list[float]] = {k: [] for k in cmds}
        outputs: dict[str, dict] = {}
        for _ in range(runs):
            for name, cmd in cmds.items():
                elapsed, outputs[name] = measure(cmd, env)
                warm[name].append(elapsed)
        med = {k: statistics.median(v) for k, v in warm.items()}
        cmed = {k: statistics.median(v) for k, v in cold.items()}
        verified, total = verified_of("audit_lock", outputs["audit_lock"])
        lc_verified = outputs["lock_check"].get("verified")
        fig.update({
            "distributions": outputs["audit"]["summary"]["distributions"],
            "files_checked": outputs["audit"]["summary"]["files_checked"],
            "wheels_verified": verified, "wheels_expected": total, "lock_check_verified": lc_verified,
            "sources": sorted({p.get("source") for p in outputs["audit_lock"].get("provenance") or []}),
            "rows_compared": sum(p.get("rows_compared", 0) for p in outputs["audit_lock"].get("provenance") or []),
            "lock_mismatches": sum(d["kind"] == "lock-mismatch" for d in outputs["audit_lock"]["drifts"]),
            "warm_s": {k: round(v, 3) for k, v in med.items()},
            "cold_s": {k: round(v, 3) for k, v in cmed.items()},
            "warm_audit_lock_vs_warm_audit": round(med["audit_lock"] / med["audit"], 2),
            "warm_lock_check_vs_warm_audit": round(med["lock_check"] / med["audit"], 2),
            "cold_audit_lock_vs_warm_audit": round(cmed["audit_lock"] / med["audit"], 2),
            "cold_lock_check_vs_warm_audit": round(cmed["lock_check"] / med["audit"], 2),
            "cold_audit_lock_minus_cold_audit_s": round(cmed["audit_lock"] - cmed["audit"], 3),
            "warm_runs_s": {k: [round(t, 3) for t in v] for k, v in warm.items()},
            "cold_runs_s": {k: [round(t, 3) for t in v] for k, v in cold.items()},
        })
        if sc.get("wheel_bytes"):
            fig["wheel_MB"] = round(sc["wheel_bytes"] / 1e6, 1)
        fig.update(wheel_reading(sc, wheels, env, runs))
        if profile:
            fig["profile"] = profile_lock_check(sc, wheels, env)
    finally:
        shutil.rmtree(warm_dir, ignore_errors=True)
    return fig


_READING = """
import json, os, shutil, statistics, sys, tempfile, time
from driftscan.environment import find_distributions, resolve_target
from driftscan.pipeline.locks import check_locks
from driftscan.pipeline.stages import pristine_options
from driftscan.provenance.check import check_provenance
from driftscan.provenance.expected import Expected
venv, lock, wheels, rounds = sys.argv[1], sys.argv[2], sys.argv[3:-1], int(sys.argv[-1])
target = resolve_target(venv)
dists = [md.distribution for md in find_distributions(target.site_packages) if md.distribution is not None]
outcome = check_locks([lock], dists, target)
expected = {md: Expected(min(w.digests), w.lock, w.filename, also=w.digests) for md, w in outcome.wheels.items()}
options = pristine_options(target, wheels, False, None)
warm_dir = tempfile.mkdtemp()
def timed(cache):
    os.environ["DRIFTSCAN_CACHE_DIR"] = cache
    started = time.perf_counter()
    found = check_provenance(dists, expected, options, remember=False)  # the wheels read, not a verdict recalled
    assert found and all(p.verified for p in found), [p.reason for p in found if not p.verified][:3]
    return time.perf_counter() - started
timed(warm_dir)
time.sleep(2.2)  # digests of wheels changed within the racy window are not remembered
timed(warm_dir)
cold, warm = [], []
for _ in range(rounds):
    fresh = tempfile.mkdtemp()
    cold.append(timed(fresh))
    shutil.rmtree(fresh)
    warm.append(timed(warm_dir))
shutil.rmtree(warm_dir)
print(json.dumps({"cold": statistics.median(cold), "warm": statistics.median(warm), "wheels": len(expected)}))
"""


def wheel_reading(sc: dict, wheels: bool, env: dict[str, str], rounds: int) -> dict:
    """The provenance step alone, in one process: with an empty driftscan cache (every wheel hashed
    whole, pip's cache indexed) and with the digests remembered, alternating."""
    out = json.loads(sh([sys.executable, "-c", _READING, sc["venv"], sc["lock"],
                         *([sc["wheels"]] if wheels else []), str(rounds)], env))
    fig = {"provenance_step_cold_s": round(out["cold"], 3), "provenance_step_warm_s": round(out["warm"], 3)}
    extra = out["cold"] - out["warm"]
    if sc.get("wheel_bytes") and extra > 0:
        fig["cold_wheel_reading_s"] = round(extra, 3)
        fig["cold_wheel_reading_MBps"] = round(sc["wheel_bytes"] / 1e6 / extra, 1)
    return fig


def profile_lock_check(sc: dict, wheels: bool, env: dict[str, str]) -> str:
    """cProfile of a warm in-process run of lock-check's pipeline (api.run with the lock)."""
    code = f"""
import cProfile, io, pstats, sys
from driftscan.api import run, Need
kw = dict(need=Need.REPORT, locks=({sc['lock']!r},), wheels=(({sc['wheels']!r},) if {wheels!r} else ()))
run({sc['venv']!r}, **kw)
prof = cProfile.Profile()
prof.enable()
run({sc['venv']!r}, **kw)
prof.disable()
out = io.StringIO()
pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(30)
print(out.getvalue())
"""
    return sh([sys.executable, "-c", code], env)


def direct_url_wheel_bytes(venv: str) -> int:
    """The bytes of the local wheels the venv's direct_url.json files name (that exist)."""
    from urllib.parse import unquote, urlparse
    from driftscan.environment import find_distributions, resolve_target
    total = 0
    for md in find_distributions(resolve_target(venv).site_packages):
        try:
            with open(os.path.join(md.path, "direct_url.json")) as f:
                url = json.load(f).get("url", "")
        except (OSError, ValueError):
            continue
        path = unquote(urlparse(url).path) if url.startswith("file://") else ""
        if path.endswith(".whl") and os.path.isfile(path):
            total += os.path.getsize(path)
    return total


def wheel_dir_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(path, n)) for n in os.listdir(path) if n.endswith(".whl"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "driftscan-bench-lock"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--scenarios", default="uv,pip,vllm")
    ap.add_argument("--max-download", type=float, default=3e9, help="bytes of vLLM wheels to download at most")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    wanted = args.scenarios.split(",")
    fig: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
                 "runs": args.runs, "scenarios": {}}
    if "uv" in wanted:
        sc = build_uv(args.work)
        fig["scenarios"]["uv: uv.lock, wheels through uv's cache"] = run_scenario(sc, False, args.runs, args.profile)
    if "pip" in wanted:
        sc = build_pip(args.work)
        sc["wheel_bytes"] = wheel_dir_bytes(sc["wheels"])
        fig["scenarios"]["pip: hashed requirements, wheels in pip's cache"] = run_scenario(sc, False, args.runs,
                                                                                           args.profile)
        fig["scenarios"]["pip: hashed requirements, wheels in a --wheels dir"] = run_scenario(sc, True, args.runs,
                                                                                              args.profile)
    if "vllm" in wanted:
        sc = build_vllm(args.work, int(args.max_download))
        if sc is None:
            fig["scenarios"]["vllm"] = {"skipped": f"{VLLM} does not exist"}
        else:
            # direct_url.json's wheel is looked at before --wheels: that file is the one hashed.
            sc["wheel_bytes"] = direct_url_wheel_bytes(sc["venv"]) or (wheel_dir_bytes(sc["wheels"]) if sc["wheels"]
                                                                       else None)
            out = run_scenario(sc, bool(sc["wheels"]), max(3, args.runs // 2), args.profile)
            out.update({k: sc[k] for k in ("wheel_bytes_to_download", "skipped_wheels") if k in sc})
            fig["scenarios"]["vllm: /tmp/scen/V, hashed requirements" + (", --wheels" if sc["wheels"] else "")] = out
    fig["load_average"] = {"median": round(statistics.median(LOADS), 2), "max": round(max(LOADS), 2),
                           "min": round(min(LOADS), 2)} if LOADS else None
    profiles = {name: s.pop("profile") for name, s in fig["scenarios"].items() if "profile" in s}
    table(fig)
    for name, text in profiles.items():
        print(f"\n== profile: {name}\n{text}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(fig, f, indent=2)
            f.write("\n")


def table(fig: dict) -> None:
    print(f"{fig['machine']}; median of {fig['runs']} runs; load {fig['load_average']}")
    head = ("scenario", "dists", "verified", "audit", "audit --lock", "lock-check", "cold audit",
            "cold --lock", "cold lock-check")
    print(" | ".join(head))
    for name, s in fig["scenarios"].items():
        if "warm_s" not in s:
            print(f"{name} | {s}")
            continue
        w, c, a = s["warm_s"], s["cold_s"], s["warm_s"]["audit"]
        print(" | ".join([name, str(s["distributions"]), f"{s['wheels_verified']}/{s['wheels_expected']}",
                          f"{a:.3f}s", f"{w['audit_lock']:.3f}s ({w['audit_lock'] / a:.2f}x)",
                          f"{w['lock_check']:.3f}s ({w['lock_check'] / a:.2f}x)", f"{c['audit']:.3f}s",
                          f"{c['audit_lock']:.3f}s ({c['audit_lock'] / a:.2f}x)",
                          f"{c['lock_check']:.3f}s ({c['lock_check'] / a:.2f}x)"]))
        if "provenance_step_cold_s" in s:
            line = (f"    provenance step in-process: cold {s['provenance_step_cold_s']}s, "
                    f"warm {s['provenance_step_warm_s']}s")
            if "cold_wheel_reading_MBps" in s:
                line += (f"; the wheels' {s['wheel_MB']} MB read cold in {s['cold_wheel_reading_s']}s "
                         f"({s['cold_wheel_reading_MBps']} MB/s)")
            print(line)


if __name__ == "__main__":
    main()
