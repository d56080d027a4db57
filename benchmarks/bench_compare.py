"""How `driftscan compare`'s time and peak memory grow with the number of machines.

    python benchmarks/bench_compare.py [--reports 10 100 1000] [--snapshots 10 50 200]
                                       [--files 40000] [--dists 160] [--root DIR] [--json OUT]

Synthetic inputs of one fleet, written once per size under ``--root``:

- *reports*: audit reports (the real schema, ``driftscan schema``) of a venv of ``--files``
  files in ``--dists`` distributions. 1 % of the machines carry the same 3-file hotfix, 1 % another
  version of one distribution, one machine 500 added files; the rest are clean;
- *snapshots*: a venv snapshot per machine (``--files`` entries, one per line, as ``driftscan
  snapshot`` writes them), the same variations.

Each comparison runs in its own process (``python -m driftscan compare … --format json``): wall
time and the child's peak RSS (``ru_maxrss``). The baseline, measured in the same run, is a
loader that keeps every input it has parsed (what comparing "all in memory" costs at least) —
its RSS grows with the machines; compare's should stay flat.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _dists(n: int) -> list[tuple[str, str]]:
    return [(f"pkg{i:03d}", f"{1 + i % 7}.{i % 13}.0") for i in range(n)]


def _files(files: int, dists: list[tuple[str, str]]) -> list[tuple[str, int]]:
    """(site-packages relpath, owning distribution index)."""
    per = max(1, files // len(dists))
    out = []
    for d, (name, version) in enumerate(dists):
        out.append((f"{name}-{version}.dist-info/METADATA", d))
        out += [(f"{name}/mod{j:04d}.py", d) for j in range(per - 1)]
    return out[:files]


def _role(i: int, n: int) -> str:
    if i == n // 2:
        return "added"
    if i % 100 == 7:
        return "hotfix"
    if i % 100 == 13:
        return "skew"
    return "clean"


def write_reports(root: str, n: int, files: int, ndists: int) -> list[str]:
    dists = _dists(ndists)
    site = "/root/ml-env/lib/python3.12/site-packages"
    paths = []
    for i in range(n):
        role = _role(i, n)
        versions = list(dists)
        drifts = []
        if role == "skew":
            versions[5] = (versions[5][0], "0.0.1")
        if role == "hotfix":
            for j in range(3):
                rel = f"pkg010/mod{j:04d}.py"
                drifts.append({"path": f"{site}/{rel}", "relpath": rel, "kind": "modified", "scope": "package",
                               "distribution": {"name": "pkg010", "version": dists[10][1], "installer": "pip"},
                               "survives_reinstall": False, "remedy": "reinstall",
                               "expected": {"hash": "sha256=" + "A" * 43, "size": 100},
                               "actual": {"hash": "sha256=" + "B" * 43, "size": 120, "type": "file"}})
        if role == "added":
            for j in range(500):
                rel = f"scratch/dump{j:04d}.py"
                drifts.append({"path": f"{site}/{rel}", "relpath": rel, "kind": "added", "scope": "environment",
                               "distribution": None, "survives_reinstall": True, "remedy": "rm",
                               "actual": {"hash": f"sha256={j:043d}", "size": 10, "type": "file"}})
        doc = {"schema_version": "1", "tool": {"name": "driftscan", "version": "0.1.0"},
               "target": {"venv": "/root/ml-env", "site_packages": [site], "model_dirs": [], "kind": "venv",
                          "python_version": "3.12"},
               "summary": {"distributions": ndists, "files_checked": files, "drifts": len(drifts),
                           "unverifiable": 0, "errors": 0},
               "drifts": drifts, "hostname": f"gpu-{i:04d}",
               "distributions": [{"name": a, "version": b, "installer": "pip"} for a, b in versions]}
        path = os.path.join(root, f"gpu-{i:04d}.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        paths.append(path)
    return paths


def write_snapshots(root: str, n: int, files: int, ndists: int) -> list[str]:
    dists = _dists(ndists)
    listing = _files(files, dists)
    rng = random.Random(0)
    digests = {rel: "%032x" % rng.getrandbits(128) for rel, _ in listing}
    paths = []
    for i in range(n):
        role = _role(i, n)
        lines = []
        entries = dict(digests)
        if role == "hotfix":
            for j in range(3):
                entries[f"pkg010/mod{j:04d}.py"] = "f" * 32
        if role == "skew":
            name, version = dists[5]
            for rel, d in listing:
                if d == 5:
                    del entries[rel]
                    entries[rel.replace(f"{name}-{version}", f"{name}-0.0.1")] = "e" * 32
        if role == "added":
            for j in range(500):
                entries[f"scratch/dump{j:04d}.py"] = "%032x" % j
        lines.append('  "pyvenv.cfg": {"mode": 33188, "mtime_ns": 1700000000000000000, "size": 200, '
                     '"xxh3_128": "%032x"}' % 1)
        for rel in sorted(entries):
            entry = {"mode": 33188, "mtime_ns": 1700000000000000000 + i, "size": 1000, "xxh3_128": entries[rel]}
            lines.append(f"  {json.dumps('lib/python3.12/site-packages/' + rel)}: {json.dumps(entry, sort_keys=True)}")
        text = ('{\n "created": "2026-12-01T00:00:00+00:00",\n "files": {\n' + ",\n".join(lines) +
                f'\n }},\n "hostname": "gpu-{i:04d}",\n "manifest_version": "1",\n "root": "/root/ml-env",\n'
                ' "tool": "driftscan"\n}\n')
        path = os.path.join(root, f"gpu-{i:04d}.snap.json")
        with open(path, "w") as f:
            f.write(text)
        paths.append(path)
    return paths


KEEP_ALL = """
import json, sys
kept = []
for p in sys.argv[1:]:
    with open(p) as f:
        kept.append(json.load(f))
print(len(kept))
"""


def measure(cmd: list[str]) -> tuple[float, float, int]:
    """Wall seconds, peak RSS of the child in MB, exit status."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    return elapsed, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def run(kind: str, sizes: list[int], args) -> list[dict]:
    rows = []
    for n in sizes:
        root = os.path.join(args.root, f"{kind}-{n}")
        os.makedirs(root, exist_ok=True)
        started = time.perf_counter()
        paths = (write_reports if kind == "reports" else write_snapshots)(root, n, args.files, args.dists)
        made = time.perf_counter() - started
        compare = [sys.executable, "-m", "driftscan", "compare", *paths, "--format", "json", "-o",
                   os.path.join(root, "out.json")]
        t, rss, code = measure(compare)
        out = json.load(open(os.path.join(root, "out.json")))
        input_mb = sum(os.path.getsize(p) for p in paths) / 1e6
        # Keeping every parsed snapshot costs ~10x its size in Python objects: not beyond this.
        bt, brss, _ = measure([sys.executable, "-c", KEEP_ALL, *paths]) if input_mb <= args.keep_all_max_mb \
            else (float("nan"), float("nan"), 0)
        row = {"kind": kind, "machines": n, "input_MB": round(input_mb, 1),
               "compare_s": round(t, 2), "compare_peak_rss_MB": round(rss, 1), "exit": code,
               "outliers": len(out["outliers"]), "version_skew": len(out["version_skew"]),
               "keep_all_s": round(bt, 2), "keep_all_peak_rss_MB": round(brss, 1),
               "rss_vs_keep_all": round(rss / brss, 3), "written_s": round(made, 1)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reports", type=int, nargs="*", default=[10, 100, 1000])
    ap.add_argument("--snapshots", type=int, nargs="*", default=[10, 50, 200])
    ap.add_argument("--files", type=int, default=40000)
    ap.add_argument("--dists", type=int, default=160)
    ap.add_argument("--root", default=os.path.join(tempfile.gettempdir(), "driftscan-bench-compare"))
    ap.add_argument("--keep-all-max-mb", type=float, default=300, help="skip the baseline over more input")
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    rows = run("reports", args.reports, args) + run("snapshots", args.snapshots, args)
    result = {"load_avg": os.getloadavg(), "cpus": os.cpu_count(), "files": args.files, "dists": args.dists,
              "rows": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
