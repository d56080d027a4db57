"""How fast `driftscan scan` is against plain libcst and, with ``--peers``, semgrep and ruff.

    python benchmarks/bench_scan.py TREE [TREE...] [--repeat R] [--jobs J] [--peers] [--peer-bin DIR]
                                    [--semgrep-runs N] [--sample N] [--seed S] [--no-unfiltered] [--no-libcst]
                                    [--json FILE]

Each TREE is measured on its own. In one run, per tree:

1. what the prefilter lets through: bytes of the files libcst parses (a selected rule's trigger
   and its AST check hold, and CPython's tree cannot decide the rule: astdump.py), and of those
   only CPython's parser sees (only the parse-error rules could report, or every rule left is
   decided on its tree);
2. ``--repeat`` rounds (default 3) of fresh processes, one of each tool per round, in turn, so
   that the machine's load falls on all of them alike; the median counts:
   - ``driftscan scan TREE --format json --no-cache`` (cold: nothing reused) — the ``driftscan``
     console script beside this interpreter, as users run it (``python -m driftscan`` only where
     there is none) — its peak memory
     summed over the process and its workers (sampled every 20 ms: RSS, which counts the pages
     forked workers share with the parent in each, and PSS, which splits them) and exit status;
   - the same with the result cache, filled by one scan before the rounds (the warm re-scan,
     timed without the memory sampler, as ruff's warm runs: exact wall time for a short run),
     and ``scan_paths`` with that cache in this process (the re-scan without interpreter start
     and imports; ``--repeat`` times);
   - with ``--peers``, where found (``--peer-bin DIR``, else PATH): semgrep with rules
     equivalent to driftscan's default ones (written next to the results; ``-j J``, files up to
     4 MiB as driftscan), ruff ``--select T10,T20`` with ``--no-cache`` and with a warm cache;
3. plain libcst: ``libcst.parse_module`` of every file (``--sample 0``, the default) or of a
   seeded sample of N files extrapolated by bytes, on J processes — once, it is the slowest
   (``--no-libcst`` skips it, and the ratio to it, when iterating on driftscan alone);
4. the identity check: ``scan_paths`` without the prefilter on the sample (600 files) and on
   every file a byte trigger of a tree rule holds for but whose AST checks, or the decisions on
   CPython's tree, keep it from libcst finds exactly what the prefiltered scan found there (skip
   with ``--no-unfiltered``).

It prints seconds, ratios taken within the run and the load average (before and after), and
writes all of it as JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from driftscan.fs.reader import default_jobs  # noqa: E402
from driftscan.lint import ParseLimits, scan_paths  # noqa: E402
from driftscan.lint.scan import collect_files  # noqa: E402

# Rules for semgrep doing what driftscan's default rules look for (DBG101-DBG108; DBG001-DBG004
# are semgrep's own parse errors and size limit).
SEMGREP_RULES = r"""
rules:
  - id: tensor-save-call
    languages: [python]
    severity: INFO
    message: serialisation call
    pattern-either:
      - pattern: torch.save(...)
      - pattern: torch.jit.save(...)
      - pattern: numpy.save(...)
      - pattern: numpy.savez(...)
      - pattern: numpy.savez_compressed(...)
      - pattern: numpy.savetxt(...)
      - pattern: pickle.dump(...)
      - pattern: cloudpickle.dump(...)
      - pattern: dill.dump(...)
      - pattern: joblib.dump(...)
      - pattern: safetensors.torch.save_file(...)
      - pattern: safetensors.numpy.save_file(...)
      - pattern: $X.tofile(...)
  - id: debug-tensor-dump
    languages: [python]
    severity: ERROR
    message: dump to a temporary path
    patterns:
      - pattern-either:
          - pattern: torch.save($T, "$P", ...)
          - pattern: numpy.save("$P", ...)
          - pattern: pickle.dump($T, open("$P", ...), ...)
      - metavariable-regex:
          metavariable: $P
          regex: ^/(tmp|var/tmp|dev/shm)
  - id: debug-counter
    languages: [python]
    severity: WARNING
    message: debug counter
    pattern-either:
      - patterns:
          - pattern-either:
              - pattern: $X += 1
              - pattern: $X = $X + 1
          - metavariable-regex:
              metavariable: $X
              regex: (?i).*(debug|dbg|dump).*
      - pattern: $X = getattr($O, $N, 0) + 1
  - id: one-shot-flag
    languages: [python]
    severity: WARNING
    message: one-shot flag
    patterns:
      - pattern: |
          if not $F:
              ...
              $F = True
      - metavariable-regex:
          metavariable: $F
          regex: (?i).*(debug|dbg|dump|saved|printed).*
  - id: shape-conditional-debug
    languages: [python]
    severity: ERROR
    message: shape condition guarding debug code
    pattern-either:
      - pattern: |
          if <... $X.shape ...>:
              ...
              torch.save(...)
      - pattern: |
          if <... $X.shape ...>:
              ...
              print(...)
      - pattern: |
          if <... $X.size(...) ...>:
              ...
              print(...)
      - pattern: |
          if <... $X.numel() ...>:
              ...
              print(...)
  - id: debugger-call
    languages: [python]
    severity: ERROR
    message: debugger call
    pattern-either:
      - pattern: breakpoint(...)
      - pattern: $X.set_trace(...)
      - pattern: $X.post_mortem(...)
      - pattern: pdb.pm()
      - pattern: debugpy.listen(...)
      - pattern: debugpy.wait_for_client()
      - pattern: IPython.embed(...)
      - pattern: code.interact(...)
      - pattern: torch.distributed.breakpoint(...)
  - id: debugger-import
    languages: [python]
    severity: ERROR
    message: debugger import
    pattern-either:
      - pattern: import pdb
      - pattern: import ipdb
      - pattern: import pudb
      - pattern: import debugpy
      - pattern: import pydevd
      - pattern: import wdb
      - pattern: from pdb import $X
      - pattern: from ipdb import $X
  - id: tmp-write
    languages: [python]
    severity: WARNING
    message: write to a temporary path
    patterns:
      - pattern-either:
          - pattern: open("$P", "w", ...)
          - pattern: open("$P", "wb", ...)
          - pattern: open("$P", "a", ...)
      - metavariable-regex:
          metavariable: $P
          regex: ^/(tmp|var/tmp|dev/shm)
"""


def _mb(n: float) -> float:
    return n / 1e6


def _tree_rss(pid: int) -> tuple[int, int]:
    """Resident bytes of ``pid`` and all its descendants (Linux /proc), summed: RSS (pages
    shared by forked workers counted in each) and PSS (each shared page split between them)."""
    rss = pss = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/statm", "rb") as f:
                rss += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            with open(f"/proc/{p}/smaps_rollup", "rb") as f:
                for line in f:
                    if line.startswith(b"Pss:"):
                        pss += int(line.split()[1]) * 1024
                        break
            with open(f"/proc/{p}/task/{p}/children", "rb") as f:
                todo += [int(c) for c in f.read().split()]
        except (OSError, ValueError, IndexError):
            continue
    return rss, pss


def measured(cmd: list[str], env: dict | None = None, cwd: str | None = None, sample: bool = True) -> dict:
    """Wall seconds, exit status, peak RSS summed over the process tree (sampled) and the
    largest single process's peak (wait4) of one run of ``cmd``. ``sample=False``: no sampling,
    the wall time exact (a run of a tenth of a second would otherwise be timed in 20 ms steps,
    beside a sampler reading /proc on the same cores); peaks then 0 but the largest process's."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=cwd)
        peak = peak_pss = 0
        while True:
            pid, status, usage = os.wait4(proc.pid, 0 if not sample else os.WNOHANG)
            if pid:
                break
            rss, pss = _tree_rss(proc.pid)
            peak, peak_pss = max(peak, rss), max(peak_pss, pss)
            time.sleep(0.02)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    return {"seconds": seconds, "rc": proc.returncode, "peak_rss_total": peak, "peak_pss_total": peak_pss,
            "max_rss_single": usage.ru_maxrss * 1024, "stderr_tail": stderr[-300:]}


WARM = ("driftscan warm", "ruff warm")  # timed without memory sampling (measured)


def driftscan_command() -> list[str]:
    """What users run: the ``driftscan`` console script installed beside this interpreter (pip
    writes it), else ``python -m driftscan`` (which adds runpy's work to every run)."""
    script = os.path.join(os.path.dirname(sys.executable), "driftscan")
    if os.access(script, os.X_OK):
        return [script]
    return [sys.executable, "-m", "driftscan"]


def find_peer(name: str, peer_bin: str | None) -> str | None:
    if peer_bin:
        path = os.path.join(peer_bin, name)
        if os.access(path, os.X_OK):
            return path
    return shutil.which(name)


def _parse(path: str) -> tuple[int, int]:
    import libcst

    with open(path, "rb") as f:
        data = f.read()
    try:
        libcst.parse_module(data)
        return len(data), 0
    except Exception:
        return len(data), 1


def plain_libcst(paths: list[str], jobs: int) -> tuple[int, float, int]:
    """(bytes, seconds, parse failures) of ``libcst.parse_module`` on every path, on ``jobs`` processes."""
    start = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        results = pool.map(_parse, sorted(paths, key=lambda p: -os.path.getsize(p)), chunksize=1)
    return sum(r[0] for r in results), time.perf_counter() - start, sum(r[1] for r in results)


def prefilter_stats(paths: list[str]) -> dict:
    """Bytes the prefilter sends to libcst, and to CPython's parser only (engine.py): a file
    goes to libcst when a tree rule's byte trigger and its check on CPython's tree (AST_CHECK)
    hold, or when CPython cannot parse a file some trigger holds for. ``trigger_*``: the files
    some byte trigger holds for (what reached libcst before the AST checks)."""
    from driftscan.lint.engine import exact_findings
    from driftscan.lint.registry import load_rules, select_rules
    from driftscan.lint.triggers import Memo, python_ast

    rules = select_rules(load_rules(()), (), ())
    out = {"files": len(paths), "bytes": 0, "libcst_files": 0, "libcst_bytes": 0, "cpython_files": 0,
           "cpython_bytes": 0, "trigger_files": 0, "trigger_bytes": 0, "exact_files": 0, "exact_bytes": 0}
    cut: list[str] = []  # a tree rule's byte trigger holds, its AST check does not or astdump decides
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        out["bytes"] += len(data)
        memo = Memo()
        tree = [r for r in rules if not r.FILE_PROBLEM and r.TRIGGER.matches(data, memo)]
        if not tree and not any(r.FILE_PROBLEM in ("parse", "read", "complexity") and r.TRIGGER.matches(data, memo)
                                for r in rules):
            continue
        out["trigger_files"] += 1
        out["trigger_bytes"] += len(data)
        checked = [r for r in tree if r.AST_CHECK is None or r.AST_CHECK.matches(data, memo)]
        if checked and exact_findings(data, path, checked, memo) is not None:
            cut.append(path)  # decided on CPython's tree (astdump.py): no libcst
            out["exact_files"] += 1
            out["exact_bytes"] += len(data)
            kind = "cpython"
        elif checked:
            kind = "libcst"
        else:
            if tree:
                cut.append(path)
            kind = "libcst" if python_ast(data, memo) is None else "cpython"
        out[kind + "_files"] += 1
        out[kind + "_bytes"] += len(data)
    return out, cut


def bench_tree(tree: str, args, jobs: int, peers: dict[str, str], work: str) -> dict:
    errors: list = []
    files = collect_files([tree], errors)
    paths = [p for p, _ in files]
    tree_bytes = sum(size for _, size in files)
    out: dict = {"tree": tree, "files": len(files), "bytes": tree_bytes, "jobs": jobs,
                 "load_before": os.getloadavg()}
    print(f"\ntree: {tree}: {len(files)} files, {_mb(tree_bytes):.1f} MB; jobs={jobs}; cores={os.cpu_count()}; "
          f"load {' '.join(f'{x:.2f}' for x in out['load_before'])}")

    stats, cut = prefilter_stats(paths)
    out["prefilter"] = stats
    print(f"1. prefilter: {stats['libcst_files']} files, {_mb(stats['libcst_bytes']):.2f} MB "
          f"({100 * stats['libcst_bytes'] / max(1, tree_bytes):.1f} % of the bytes) reach libcst; "
          f"{stats['cpython_files']} files, {_mb(stats['cpython_bytes']):.2f} MB only CPython's parser "
          f"({stats['exact_files']} files, {_mb(stats['exact_bytes']):.2f} MB of them with rules decided on its tree) "
          f"(a byte trigger holds for {stats['trigger_files']} files, {_mb(stats['trigger_bytes']):.2f} MB)")

    cache_dir = tempfile.mkdtemp(prefix="cache-", dir=work)
    env = dict(os.environ, DRIFTSCAN_CACHE_DIR=cache_dir)
    driftscan = [*driftscan_command(), "scan", tree, "--format", "json", "-o", "-", "--jobs", str(jobs)]
    out["driftscan_command"] = driftscan[0]
    tools: dict[str, list[str]] = {"driftscan cold": [*driftscan, "--no-cache"], "driftscan warm": driftscan}
    cwd = {}
    if "semgrep" in peers:
        rules = os.path.join(work, "semgrep-rules.yml")
        with open(rules, "w") as f:
            f.write(SEMGREP_RULES)
        tools["semgrep"] = [peers["semgrep"], "scan", "--config", rules, "--metrics=off", "--disable-version-check",
                            "--quiet", "--json", "-o", os.devnull, "-j", str(jobs), "--max-target-bytes",
                            str(4 * 1024 * 1024), "--no-git-ignore", tree]
    if "ruff" in peers:
        ruff = [peers["ruff"], "check", "--isolated", "--select", "T10,T20", "--exit-zero", "--quiet",
                "--output-format", "json"]
        tools["ruff cold"] = [*ruff, "--no-cache", tree]
        ruff_cache = os.path.join(work, "ruff-cache")
        tools["ruff warm"] = [*ruff, "--cache-dir", ruff_cache, tree]
        cwd["ruff cold"] = cwd["ruff warm"] = work  # nothing is written into the tree
        measured(tools["ruff warm"], cwd=work)  # fills its cache
    # Fills the result cache; then the cached scan's output is compared with a cold one's.
    outputs = [os.path.join(work, f"scan-{kind}.json") for kind in ("fill", "cold", "warm")]
    for output, cmd in zip(outputs, (tools["driftscan warm"], tools["driftscan cold"], tools["driftscan warm"])):
        measured([*cmd, "-o", output], env=env)
    texts = []
    for output in outputs:
        with open(output, "rb") as f:
            texts.append(f.read())
    out["warm_output_identical"] = texts[0] == texts[1] == texts[2]
    print(f"   JSON of a cached scan identical to a cold one: {'yes' if out['warm_output_identical'] else 'NO'}")

    runs: dict[str, list[dict]] = {name: [] for name in tools}
    semgrep_runs = args.repeat if args.semgrep_runs is None else args.semgrep_runs
    for round_ in range(max(1, args.repeat)):
        for name, cmd in tools.items():
            if name == "semgrep" and round_ >= semgrep_runs:
                continue
            # The warm runs take a tenth of a second: timed exactly, their memory is not the question.
            runs[name].append(measured(cmd, env=env, cwd=cwd.get(name), sample=name not in WARM))
        print(f"   round {round_ + 1}: " + ", ".join(f"{n} {runs[n][-1]['seconds']:.2f} s" for n in tools
                                                   if len(runs[n]) > round_), flush=True)
    medians = {name: statistics.median(r["seconds"] for r in rs) for name, rs in runs.items() if rs}
    # The warm re-scan without interpreter start and imports: scan_paths with the cache, here.
    from driftscan._version import __version__
    from driftscan.lint.scancache import ResultCache

    inproc = []
    for _ in range(max(1, args.repeat)):
        start = time.perf_counter()
        scan_paths([tree], jobs=jobs, cache=ResultCache(os.path.join(cache_dir, "scan"), __version__))
        inproc.append(time.perf_counter() - start)
    medians["driftscan warm in-process"] = statistics.median(inproc)
    runs["driftscan warm in-process"] = [{"seconds": t} for t in inproc]
    out["runs"] = runs
    out["medians"] = medians
    cold = runs["driftscan cold"]
    out["driftscan_exit_status"] = sorted({r["rc"] for r in cold})
    out["driftscan_peak_rss_total"] = max(r["peak_rss_total"] for r in cold)
    out["driftscan_max_rss_single"] = max(r["max_rss_single"] for r in cold)
    out["driftscan_peak_pss_total"] = max(r["peak_pss_total"] for r in cold)
    print(f"2. medians of {args.repeat}: " + ", ".join(f"{n} {m:.2f} s" for n, m in medians.items()))
    print(f"   driftscan cold: peak RSS {_mb(out['driftscan_peak_rss_total']):.0f} MB summed over its processes, "
          f"PSS {_mb(out['driftscan_peak_pss_total']):.0f} MB "
          f"(largest single process {_mb(out['driftscan_max_rss_single']):.0f} MB); exit status "
          f"{out['driftscan_exit_status']}")

    sample = paths
    if 0 < args.sample < len(paths):
        sample = random.Random(args.seed).sample(paths, args.sample)
    ratios = {}
    if not args.no_libcst:
        base_bytes, base_time, failures = plain_libcst(sample, jobs)
        full = base_time * tree_bytes / max(1, base_bytes)
        what = "every file" if sample is paths else f"a sample of {len(sample)} files, extrapolated by bytes"
        out["libcst"] = {"files": len(sample), "bytes": base_bytes, "seconds": base_time, "tree_seconds": full,
                         "failures": failures}
        medians["plain libcst"] = full
        print(f"3. plain libcst.parse_module on {jobs} processes ({what}): {full:.1f} s, {failures} parse failures")
        ratios["plain libcst / driftscan cold"] = full / medians["driftscan cold"]
    if "semgrep" in medians:
        ratios["semgrep / driftscan cold"] = medians["semgrep"] / medians["driftscan cold"]
    if "ruff cold" in medians:
        ratios["driftscan cold / ruff cold"] = medians["driftscan cold"] / medians["ruff cold"]
        ratios["driftscan warm / ruff warm"] = medians["driftscan warm"] / medians["ruff warm"]
    ratios["driftscan warm / driftscan cold"] = medians["driftscan warm"] / medians["driftscan cold"]
    if "ruff warm" in medians:
        ratios["driftscan warm in-process / ruff warm"] = medians["driftscan warm in-process"] / medians["ruff warm"]
    out["ratios"] = ratios
    print("   ratios (this run): " + "; ".join(f"{k} = {v:.2f}" for k, v in ratios.items()))

    if not args.no_unfiltered:
        check = sample if len(sample) <= 600 else random.Random(args.seed).sample(paths, 600)
        # and every file the AST checks or astdump's exact decisions keep from libcst although a
        # byte trigger holds
        check = sorted(set(check) | set(cut))
        result = scan_paths([tree], jobs=jobs)
        start = time.perf_counter()
        unfiltered = scan_paths(check, jobs=jobs, limits=ParseLimits(prefilter=False))
        in_check = set(check)
        same = [pf for pf in result.findings if pf[0] in in_check] == unfiltered.findings
        differ = sorted({p for p, _ in result.findings if p in in_check} ^ {p for p, _ in unfiltered.findings}
                        | {p for p in in_check if [f for q, f in result.findings if q == p]
                           != [f for q, f in unfiltered.findings if q == p]})
        out["identity"] = {"files": len(check), "ast_cut_files": len(cut), "same": same,
                           "seconds": time.perf_counter() - start,
                           "differ": [{"path": p, "filtered": [repr(f) for q, f in result.findings if q == p],
                                       "unfiltered": [repr(f) for q, f in unfiltered.findings if q == p]}
                                      for p in differ[:20]]}
        for d in out["identity"]["differ"]:
            print(f"   differs: {d['path']}: {d['filtered']} / without the prefilter {d['unfiltered']}")
        print(f"4. no prefilter on {len(check)} files (600 sampled and the {len(cut)} the AST checks or the "
              f"decisions on CPython's tree keep from libcst): same findings as with the prefilter: "
              f"{'yes' if same else 'NO'}")
    out["load_after"] = os.getloadavg()
    print(f"   load after: {' '.join(f'{x:.2f}' for x in out['load_after'])}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", nargs="+", help="directories (or files) to scan, each measured on its own")
    parser.add_argument("--sample", type=int, default=0, help="files for plain libcst (0, the default: all)")
    parser.add_argument("--jobs", type=int, default=None, help=f"processes for every tool (default {default_jobs()})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3, help="rounds of fresh processes (the median counts)")
    parser.add_argument("--no-unfiltered", action="store_true", help="skip the identity check")
    parser.add_argument("--peers", action="store_true", help="also semgrep and ruff, where installed")
    parser.add_argument("--peer-bin", metavar="DIR", help="where semgrep and ruff are (default: PATH)")
    parser.add_argument("--json", metavar="FILE", help="write every figure here")
    parser.add_argument("--semgrep-runs", type=int, metavar="N", help="semgrep in the first N rounds only (slow)")
    parser.add_argument("--no-libcst", action="store_true",
                        help="skip plain libcst (minutes; for iterating on driftscan alone: no ratio to it)")
    args = parser.parse_args(argv)

    jobs = args.jobs or default_jobs()
    peers = {}
    if args.peers:
        for name in ("semgrep", "ruff"):
            found = find_peer(name, args.peer_bin)
            if found:
                peers[name] = found
            else:
                print(f"note: {name} not found (--peer-bin DIR or PATH): left out")
    work = tempfile.mkdtemp(prefix="bench-scan-")
    try:
        results = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "python": sys.version.split()[0],
                   "cores": os.cpu_count(), "repeat": args.repeat, "peers": peers,
                   "trees": [bench_tree(tree, args, jobs, peers, work) for tree in args.tree]}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
