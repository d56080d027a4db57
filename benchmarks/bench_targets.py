"""The speed targets in one run: every target as a ratio measured in that run, with the load noted.

    flock /tmp/bench.lock python benchmarks/bench_targets.py --venv /tmp/bench/realenv \
        --peer-bin /tmp/peers-venv/bin --json benchmarks/results-2026-12-01-issue16.json

Runs, one after the other (never side by side: each measures against its own baseline, in the
same rounds, in fresh processes), ``bench_scan.py --peers`` on the venv's torch and vllm,
``bench_snapshot.py --floor``, ``bench_deep.py`` and ``bench_audit.py --parallel-and-drift``, each writing its own
JSON, then reads the figures the issue names out of them and prints one table: target, figure,
met or not. Nothing is computed here that the benchmarks do not measure; a figure a benchmark
did not produce (a peer not installed) is reported as missing, never as met.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load() -> list[float]:
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def run(name: str, args: list[str], out: str) -> dict:
    cmd = [sys.executable, os.path.join(HERE, name), *args, "--json", out]
    print("+", " ".join(cmd), flush=True)
    before, started = load(), time.perf_counter()
    proc = subprocess.run(cmd)
    if proc.returncode != 0:
        raise SystemExit(f"{name} exited {proc.returncode}")
    with open(out) as f:
        data = json.load(f)
    return {"data": data, "load_before": before, "load_after": load(), "seconds": round(time.perf_counter() - started, 1)}


def tree(scan: dict, suffix: str) -> dict:
    return next((t for t in scan["trees"] if t["tree"].rstrip("/").endswith(suffix)), {})


def targets(scan: dict, snap: dict, deep: dict, audit: dict) -> list[dict]:
    torch, vllm = tree(scan, "/torch"), tree(scan, "/vllm")
    tm, vm = torch.get("medians", {}), vllm.get("medians", {})
    sm = snap.get("medians", {})
    dm = deep.get("medians", {})
    a = audit.get("parallel_and_drift", {})

    def ratio(num, den):
        return None if num is None or not den else num / den

    rows = [
        ("scan: torch, semgrep / driftscan cold", ratio(tm.get("semgrep"), tm.get("driftscan cold")), ">=", 3.0),
        ("scan: torch, plain libcst / driftscan cold", ratio(tm.get("plain libcst"), tm.get("driftscan cold")), ">=", 8.0),
        ("scan: vLLM, driftscan cold / ruff T10,T20 cold", ratio(vm.get("driftscan cold"), vm.get("ruff cold")), "<=", 4.0),
        ("scan: vLLM warm re-scan, CLI process (s)", vm.get("driftscan warm"), "<=", 0.2),
        ("scan: torch peak memory, RSS summed over processes (MB)",
         torch["driftscan_peak_rss_total"] / 1e6 if torch.get("driftscan_peak_rss_total") else None, "<=", 300.0),
        ("snapshot / xxh128sum", ratio(sm.get("driftscan snapshot"), sm.get("xxh128sum")), "<=", 1.2),
        ("diff cold / xxh128sum -c", ratio(sm.get("driftscan diff --no-cache (cold)"), sm.get("xxh128sum -c")), "<=", 1.5),
        ("diff warm (s)", sm.get("driftscan diff (warm)"), "<=", 0.3),
        ("--deep / max(disk read, hash)",
         ratio(dm.get("driftscan"), max(dm.get("read") or 0, dm.get("hash") or 0)), "<=", 1.2),
        ("warm audit with drift / clean warm audit", a.get("drifted_warm_vs_clean_warm"), "<=", 1.5),
        ("cold audit / hashing floor", a.get("cold_vs_hash_floor"), "<=", 1.1),
        ("cold audit peak RSS / pool checker's", a.get("cold_rss_vs_pool_checker"), "<=", 2.0),
    ]
    out = []
    for name, value, op, bound in rows:
        met = None if value is None else (value >= bound if op == ">=" else value <= bound)
        out.append({"target": f"{name} {op} {bound:g}", "value": None if value is None else round(value, 3),
                    "met": met})
    identity = {
        "scan torch: warm output identical to cold": torch.get("warm_output_identical"),
        "scan vLLM: warm output identical to cold": vllm.get("warm_output_identical"),
        "scan torch: prefilter identity": (torch.get("identity") or {}).get("same"),
        "scan vLLM: prefilter identity": (vllm.get("identity") or {}).get("same"),
        "audit: warm report with drift equals --no-cache": a.get("warm_report_equals_no_cache"),
    }
    return out + [{"target": k, "value": v, "met": v} for k, v in identity.items()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--venv", default="/tmp/bench/realenv")
    ap.add_argument("--peer-bin", default="/tmp/peers-venv/bin")
    ap.add_argument("--deep-file", default="/tmp/deepbench/shard.bin")
    ap.add_argument("--scan-repeat", type=int, default=3)
    ap.add_argument("--runs", type=int, default=7, help="rounds for snapshot/diff and audit")
    ap.add_argument("--json", help="write every figure here")
    args = ap.parse_args()
    site = next(os.path.join(args.venv, "lib", d, "site-packages") for d in sorted(os.listdir(os.path.join(args.venv, "lib")))
                if d.startswith("python"))
    work = tempfile.mkdtemp(prefix="bench16-")
    parts = {
        "scan": run("bench_scan.py", [os.path.join(site, "torch"), os.path.join(site, "vllm"), "--peers",
                                      "--peer-bin", args.peer_bin, "--repeat", str(args.scan_repeat),
                                      "--semgrep-runs", "1"], os.path.join(work, "scan.json")),
        "snapshot": run("bench_snapshot.py", ["--venv", args.venv, "--runs", str(args.runs), "--floor"],
                        os.path.join(work, "snapshot.json")),
        "deep": run("bench_deep.py", ["--file", args.deep_file, "--runs", "5"], os.path.join(work, "deep.json")),
        "audit": run("bench_audit.py", ["--venv", args.venv, "--parallel-and-drift", "--runs", str(args.runs)],
                     os.path.join(work, "audit.json")),
    }
    table = targets(*(parts[k]["data"] for k in ("scan", "snapshot", "deep", "audit")))
    width = max(len(r["target"]) for r in table)
    print("\nSpeed targets, this run (loads before/after each part: "
          + "; ".join(f"{k} {p['load_before'][0]:.2f}/{p['load_after'][0]:.2f}" for k, p in parts.items()) + ")")
    for r in table:
        verdict = {True: "met", False: "NOT met", None: "missing"}[r["met"]]
        print(f"  {r['target']:<{width}}  {r['value']!s:>10}  {verdict}")
    floor = {k: round(v, 3) for k, v in parts["snapshot"]["data"].get("ratios", {}).items()
             if "python hash loop" in k}
    start = parts["snapshot"]["data"].get("medians", {}).get("python start + snapshot imports")
    if floor:  # not targets: where the snapshot's ratio comes from (bench_snapshot.py --floor)
        print("  the Python floor, same run: " + "; ".join(f"{k} {v}" for k, v in floor.items())
              + (f"; interpreter start + snapshot imports {start:.3f} s" if start else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d %H:%M:%S"), "cores": os.cpu_count(), "targets": table,
                       "floor": floor, "parts": parts}, f, indent=1)


if __name__ == "__main__":
    main()
