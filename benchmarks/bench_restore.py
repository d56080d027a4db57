"""``driftscan restore`` against ``pip install --force-reinstall`` of the same wheel, same run.

    python benchmarks/bench_restore.py SEED_WORK WHEEL_DIR [--rounds 3]

SEED_WORK is what ``benchmarks/seed_scenario.py`` made (WORK/venv with the seed's patches);
WHEEL_DIR holds the installed vLLM's wheel (``pip download --no-deps vllm==0.33.0``). Each round
copies the patched venv twice and, in alternating order, times ``driftscan restore --dist vllm
--wheels WHEEL_DIR --yes`` on one copy (the audit, the checkpoint and the restore: what a user
waits for) and ``python -m pip install --force-reinstall --no-deps WHEEL`` on the other. Prints
the medians and the ratio as JSON; both copies are audited afterwards to show both are clean.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def _timed(cmd: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def _package_drift(venv: str, env: dict[str, str]) -> int:
    out = subprocess.run([sys.executable, "-m", "driftscan", "audit", "--venv", venv, "--format", "json"],
                         env=env, capture_output=True, text=True)
    return sum(1 for d in json.loads(out.stdout)["drifts"] if d["scope"] == "package")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("work")
    parser.add_argument("wheels")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    source = os.path.join(args.work, "venv")
    (wheel,) = glob.glob(os.path.join(args.wheels, "vllm-*.whl"))
    scratch = tempfile.mkdtemp(prefix="bench-restore-", dir=os.path.dirname(os.path.abspath(args.work)))
    env = dict(os.environ, DRIFTSCAN_CHECKPOINT_DIR=os.path.join(scratch, "checkpoints"),
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    restore_s, reinstall_s = [], []
    try:
        for round_ in range(args.rounds):
            a, b = os.path.join(scratch, "a"), os.path.join(scratch, "b")
            for copy in (a, b):
                shutil.rmtree(copy, ignore_errors=True)
                subprocess.run(["cp", "-a", source, copy], check=True)
            restore = [sys.executable, "-m", "driftscan", "restore", "--dist", "vllm", "--venv", a,
                       "--wheels", args.wheels, "--yes"]
            reinstall = [os.path.join(b, "bin", "python"), "-m", "pip", "install", "-q", "--force-reinstall",
                         "--no-deps", wheel]
            order = [(restore, restore_s), (reinstall, reinstall_s)]
            for cmd, into in (order if round_ % 2 == 0 else order[::-1]):
                into.append(_timed(cmd, env))
        result = {
            "restore_s": round(statistics.median(restore_s), 2),
            "force_reinstall_s": round(statistics.median(reinstall_s), 2),
            "ratio": round(statistics.median(restore_s) / statistics.median(reinstall_s), 3),
            "rounds": args.rounds, "restore_runs": [round(x, 2) for x in restore_s],
            "reinstall_runs": [round(x, 2) for x in reinstall_s],
            "package_drift_after": {"restore": _package_drift(a, env), "force_reinstall": _package_drift(b, env)},
        }
        print(json.dumps(result, indent=2))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
