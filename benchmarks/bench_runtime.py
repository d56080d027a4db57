"""What ``driftscan.runtime.start()`` costs the process it records: importing a large set of modules
with the recorder started against the same imports without it, measured in one run.

    python benchmarks/bench_runtime.py [--rounds 15] [--hash-limit BYTES] [--modules m1,m2,...]

Each round runs two fresh interpreters, in alternating order: both import the driftscan.runtime
package (so its own import is outside the comparison); one calls ``start()`` first (recording into a
scratch runtime directory), then each times, in CPU time (``process_time``: the machine's other load counts less), the import of the module set
(the standard library's heavier packages, and driftscan's dependencies and torch/transformers when
the interpreter has them). One untimed round first writes the bytecode caches.

Prints JSON: the median import time of each side, ``recorded / baseline`` (the overhead; the
target is ≤ 1.02; on a loaded machine the two sides' noise is larger than the difference), the
recorder's own share of the recorded side's import time (its work, timed from inside: the steadier
number), the median cost of ``start()`` itself (recording what was imported before it),
and how many modules a recorded run wrote.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

STDLIB = ["asyncio", "email.mime.multipart", "email.policy", "json", "http.client", "http.server", "xml.etree.ElementTree",
          "xml.dom.minidom", "unittest", "unittest.mock", "logging.handlers", "argparse", "decimal", "fractions",
          "statistics", "sqlite3", "csv", "urllib.request", "concurrent.futures", "multiprocessing.pool", "subprocess",
          "tarfile", "zipfile", "pydoc", "difflib", "inspect", "dataclasses", "typing", "ctypes", "ssl",
          "xmlrpc.client", "html.parser", "pickletools", "shelve", "smtplib", "imaplib", "ftplib", "mailbox",
          "configparser", "tomllib", "wave", "zoneinfo", "ipaddress", "uuid", "secrets", "pdb", "trace", "cProfile",
          "importlib.metadata", "importlib.resources", "compileall", "py_compile", "doctest", "turtledemo"]
OPTIONAL = ["click", "pydantic", "libcst", "git", "tomlkit", "xxhash", "jsonschema", "torch", "transformers"]

CHILD = r"""
import json, sys, time, importlib
import driftscan.runtime as runtime, driftscan.runtime.recorder as recorder
mode, directory, limit, names = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(",")
started = 0.0
inside = [0.0]
scan = recorder._scan


def timed_scan():  # the recording thread's own CPU time: the main thread runs meanwhile
    t = time.thread_time()
    try:
        scan()
    finally:
        inside[0] += time.thread_time() - t


recorder._scan = timed_scan
if mode == "recorded":
    t = time.perf_counter()
    assert runtime.start(directory, hash_limit=limit)
    started = time.perf_counter() - t
    runtime.flush()  # the first look at what was imported before start(): not the imports' cost
    inside[0] = 0.0
t = time.process_time()
for name in names:
    importlib.import_module(name)
runtime.flush()  # what the recording thread has yet to write, in the timed part
took = time.process_time() - t
lines = 0
if mode == "recorded":
    with open(runtime.record_path()) as f:
        lines = sum(1 for _ in f) - 1
print(json.dumps({"took": took, "start": started, "inside": inside[0], "records": lines, "modules": len(sys.modules)}))
"""


def available(python: str, names: list[str]) -> list[str]:
    code = ("import importlib.util, json, sys; print(json.dumps([n for n in sys.argv[1:] "
            "if importlib.util.find_spec(n) is not None]))")
    return json.loads(subprocess.run([python, "-c", code, *names], capture_output=True, text=True,
                                     check=True).stdout)


def run(python: str, mode: str, directory: str, limit: int, names: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([python, "-c", CHILD, mode, directory, str(limit), ",".join(names)],
                          capture_output=True, text=True, env=env, cwd="/")
    if proc.returncode != 0:
        raise SystemExit(f"{mode} run failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--hash-limit", type=int, default=None, help="hash files up to this size (default: none)")
    parser.add_argument("--modules", default="")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    limit = -1 if args.hash_limit is None else args.hash_limit
    names = args.modules.split(",") if args.modules else STDLIB + available(args.python, OPTIONAL)
    with tempfile.TemporaryDirectory() as scratch:
        directory = os.path.join(scratch, "runtime")
        run(args.python, "recorded", directory, limit, names)  # bytecode caches written
        base, recorded, starts, inside, records = [], [], [], [], 0
        for i in range(args.rounds):
            order = ("baseline", "recorded") if i % 2 == 0 else ("recorded", "baseline")
            for mode in order:
                out = run(args.python, mode, directory, limit, names)
                (base if mode == "baseline" else recorded).append(out["took"])
                if mode == "recorded":
                    starts.append(out["start"])
                    inside.append(out["inside"] / out["took"])
                    records = out["records"]
    print(json.dumps({
        "python": args.python, "modules_named": len(names), "records_written": records, "hash_limit": limit,
        "rounds": args.rounds, "baseline_s": round(statistics.median(base), 5),
        "recorded_s": round(statistics.median(recorded), 5),
        "recorded / baseline": round(statistics.median(recorded) / statistics.median(base), 4),
        "recorder's share of the recorded imports": round(statistics.median(inside), 4),
        "start_s": round(statistics.median(starts), 5),
    }, indent=2))


if __name__ == "__main__":
    main()
