"""``driftscan guard``'s own cost over the bare command it wraps, and guard + reapply against the
reinstall alone, measured in one run.

    python benchmarks/bench_guard.py [--installer uv|pip] [--packages 4] [--files 1500] [--rounds 3]
    python benchmarks/bench_guard.py --venv V --wheel W [--wheel W2 ...]   # your own (patched) venv

Without ``--venv`` it builds toy wheels (``--packages`` distributions of ``--files`` small modules
each, fixtures/wheels.py), a venv installed from them (uv in hard-link mode with a private cache,
or pip), and patches each distribution as a user does (a rename-edit adding a torch.save to a
scratch directory, a deleted module, an added file, a dump file). Each round copies the venv twice
(``cp -a``) and times, on copy A, the bare ``--force-reinstall --no-deps`` of the wheels and, on
copy B (audited once first, untimed, so its stat cache is warm as after a user's audit): a warm
``driftscan audit``, ``driftscan checkpoint``, ``driftscan guard -- <the same reinstall>`` and
``driftscan reapply CP --yes``. The order of A and B alternates between rounds;
one untimed reinstall before the rounds fills the installer's cache (the first unpack of each wheel).

Prints JSON: the medians, ``guard / bare``, guard's overhead (guard − bare) against its budget
(two warm audits plus the checkpoint: ``overhead / budget`` ≤ 1 meets it), and
``(guard + reapply) / bare``. driftscan's caches live in the scratch directory.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fixtures import venvs  # noqa: E402
from fixtures.harness import replace_by_rename  # noqa: E402
from fixtures.wheels import build_wheel  # noqa: E402


def _timed(cmd: list[str], env: dict[str, str], ok=(0,)) -> float:
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - started
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return took


def _module(i: int) -> str:
    return "".join(f"def f{i}_{k}(x):\n    return x + {k}\n\n\n" for k in range(40))


def build(scratch: Path, installer: str, packages: int, files: int) -> tuple[Path, list[Path], Path]:
    house = scratch / "wheels"
    wheels = [build_wheel(house, f"benchpkg{p}", "1.0",
                          {f"benchpkg{p}/__init__.py": "", **{f"benchpkg{p}/m{i:05d}.py": _module(i)
                                                               for i in range(files)}})
              for p in range(packages)]
    cache = scratch / "uv-cache"
    if installer == "uv":
        venv = venvs.make_uv_venv(scratch / "template", cache)
        venvs.uv_install(venv, cache, "--no-index", "--find-links", str(house), *[f"benchpkg{p}" for p in
                                                                                   range(packages)])
    else:
        venv = venvs.make_pip_venv(scratch / "template")
        venvs.pip_install(venv, "--no-cache-dir", "--no-index", "--find-links", str(house),
                          *[f"benchpkg{p}" for p in range(packages)])
    return venv, wheels, house


def patch(venv: Path, packages: int, dumps: Path) -> None:
    site = venvs.site_packages_of(venv)
    dumps.mkdir(parents=True, exist_ok=True)
    for p in range(packages):
        pkg = site / f"benchpkg{p}"
        edited = pkg / "m00001.py"
        replace_by_rename(edited, "import torch\n\n" + edited.read_text()
                          + f"\n\ndef _dump(x):\n    torch.save(x, '{dumps}/bench{p}_probe.pt')\n")
        (pkg / "m00002.py").unlink()
        (pkg / "local_helper.py").write_text("H = 1\n")
        (dumps / f"bench{p}_probe.pt").write_bytes(b"\x80\x02" * 4096)


def reinstall(installer: str, venv: Path, wheels: list[str]) -> list[str]:
    if installer == "uv":
        return [venvs.uv_bin(), "pip", "install", "--quiet", "--python", str(venv / "bin/python"),
                "--force-reinstall", "--no-deps", *wheels]
    return [str(venv / "bin/python"), "-m", "pip", "install", "-q", "--no-cache-dir", "--force-reinstall",
            "--no-deps", *wheels]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--venv", help="a (patched) venv to copy instead of building one")
    parser.add_argument("--wheel", action="append", default=[], help="with --venv: the wheel(s) to reinstall")
    parser.add_argument("--installer", choices=["uv", "pip"], default="uv")
    parser.add_argument("--packages", type=int, default=4)
    parser.add_argument("--files", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.venv and not args.wheel:
        parser.error("--venv needs --wheel (what the reinstall installs)")
    scratch = Path(tempfile.mkdtemp(prefix="bench-guard-"))
    env = dict(os.environ, DRIFTSCAN_CACHE_DIR=str(scratch / "driftscan-cache"), PIP_DISABLE_PIP_VERSION_CHECK="1",
               DRIFTSCAN_CHECKPOINT_DIR=str(scratch / "auto-checkpoints"), **venvs.uv_env(scratch / "uv-cache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    times: dict[str, list[float]] = {k: [] for k in ("bare", "audit", "checkpoint", "guard", "reapply")}
    held = []
    try:
        if args.venv:
            template, wheels, house = Path(args.venv), [os.path.abspath(w) for w in args.wheel], None
        else:
            template, built, house = build(scratch, args.installer, args.packages, args.files)
            wheels = [str(w) for w in built]
        driftscan = [sys.executable, "-m", "driftscan"]
        warm = scratch / "warm"  # the installer's first unpack of each wheel into its cache is not either side's cost
        subprocess.run(["cp", "-a", str(template), str(warm)], check=True)
        _timed(reinstall(args.installer, warm, wheels), env)
        shutil.rmtree(warm, ignore_errors=True)
        for round_ in range(args.rounds):
            a, b = scratch / f"a{round_}", scratch / f"b{round_}"
            for copy in (a, b):
                subprocess.run(["cp", "-a", str(template), str(copy)], check=True)
                if not args.venv:
                    patch(copy, args.packages, scratch / f"dumps-{copy.name}")
            wheels_opt = ["--wheels", str(house)] if house else []
            _timed([*driftscan, "audit", "--venv", str(b)], env, ok=(0, 1))  # warm B's stat cache (untimed)

            def run_b() -> None:
                times["audit"].append(_timed([*driftscan, "audit", "--venv", str(b)], env, ok=(0, 1)))
                times["checkpoint"].append(_timed([*driftscan, "checkpoint", "--venv", str(b), *wheels_opt,
                                                   "-o", str(scratch / f"cp-plain-{round_}")], env))
                report = scratch / f"guard-{round_}.json"
                times["guard"].append(_timed([*driftscan, "guard", "--venv", str(b), *wheels_opt, "--checkpoint",
                                              str(scratch / f"cp-guard-{round_}"), "--format", "json", "-o",
                                              str(report), "--", *reinstall(args.installer, b, wheels)], env,
                                             ok=(0, 1)))
                result = json.loads(report.read_text())
                held.append(result["summary"])
                if result["reapply"]:
                    times["reapply"].append(_timed([*driftscan, *shlex.split(result["reapply"])[1:]], env))

            def run_a() -> None:
                times["bare"].append(_timed(reinstall(args.installer, a, wheels), env))

            for step in ((run_a, run_b) if round_ % 2 == 0 else (run_b, run_a)):
                step()
            shutil.rmtree(a, ignore_errors=True)
            shutil.rmtree(b, ignore_errors=True)
        med = {k: round(statistics.median(v), 3) for k, v in times.items() if v}
        overhead = med["guard"] - med["bare"]
        budget = 2 * med["audit"] + med["checkpoint"]
        print(json.dumps({
            "installer": args.installer, "venv": args.venv or f"{args.packages} toy packages x {args.files} files",
            "rounds": args.rounds, "median_seconds": med, "runs": {k: [round(x, 3) for x in v] for k, v in
                                                                  times.items()},
            "guard_over_bare": round(med["guard"] / med["bare"], 2),
            "guard_overhead_seconds": round(overhead, 3),
            "budget_two_audits_plus_checkpoint_seconds": round(budget, 3),
            "overhead_over_budget": round(overhead / budget, 2),
            "guard_plus_reapply_over_bare": round((med["guard"] + med.get("reapply", 0.0)) / med["bare"], 2),
            "predictions": held,
        }, indent=2))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
