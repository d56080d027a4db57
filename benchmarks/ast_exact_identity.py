"""Whether the findings astdump.py decides on CPython's tree equal libcst's, file by file.

    python benchmarks/ast_exact_identity.py DIR [DIR...] [--jobs J] [--all] [--json FILE]

For every ``*.py`` file under the directories (collected as a scan collects them) that the byte
trigger of one of those rules holds for (``--all``: every file), both ways:

* libcst: ``inspect_source`` with every rule that declares ``AST_EXACT`` (DBG101, DBG102, DBG103, DBG106,
  DBG107) and no prefilter (parse, walk, positions);
* CPython: ``engine.exact_findings`` with the same rules, when it gives an answer (None: the file
  would go to libcst, counted as *fallback*);

then ``# noqa`` applied to both. Prints the files whose findings differ (there must be none),
how many answered exactly and how many fell back, and the seconds each way. Exit status 1 when
any file differs.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from driftscan.lint.engine import exact_findings, inspect_source  # noqa: E402
from driftscan.lint.noqa import apply_noqa  # noqa: E402
from driftscan.lint.scan import collect_files  # noqa: E402
from driftscan.lint.triggers import Memo  # noqa: E402
from driftscan.lint.registry import builtin_rules  # noqa: E402

#: Every rule decided on CPython's tree where it can tell (astdump.exact_kind).
RULES = [r for r in builtin_rules() if r.__dict__.get("AST_EXACT")]
MAX_BYTES = 4 * 1024 * 1024


def compare(path: str, every: bool = False) -> dict:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        return {"path": path, "skipped": str(e)}
    if len(data) > MAX_BYTES or (not every and not any(r.TRIGGER.matches(data) for r in RULES)):
        return {"path": path, "skipped": "no trigger"}
    start = time.perf_counter()
    exact = exact_findings(data, path, RULES, Memo())
    exact_seconds = time.perf_counter() - start
    if exact is not None:
        exact = apply_noqa(data, exact, RULES)
    start = time.perf_counter()
    try:
        reference = inspect_source(data, path, RULES)
    except Exception as e:  # noqa: BLE001
        return {"path": path, "skipped": f"libcst: {type(e).__name__}: {e}"}
    libcst_seconds = time.perf_counter() - start
    out = {"path": path, "bytes": len(data), "exact": exact is not None, "findings": len(reference),
           "exact_seconds": exact_seconds, "libcst_seconds": libcst_seconds}
    if exact is not None and exact != reference:
        out["differ"] = {"exact": [repr(f) for f in exact], "libcst": [repr(f) for f in reference]}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dirs", nargs="+")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--all", action="store_true", help="every file, not only those the trigger holds for")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    errors: list = []
    paths = [p for p, _ in collect_files(args.dirs, errors)]
    paths.sort(key=lambda p: -os.path.getsize(p))
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        results = pool.starmap(compare, [(p, args.all) for p in paths], chunksize=4)
    checked = [r for r in results if "skipped" not in r]
    exact = [r for r in checked if r["exact"]]
    differ = [r for r in checked if "differ" in r]
    for r in differ:
        print(f"DIFFERS: {r['path']}\n  exact:  {r['differ']['exact']}\n  libcst: {r['differ']['libcst']}")
    with_findings = [r for r in checked if r["findings"]]
    print(f"{len(paths)} files; {len(checked)} checked ({sum(r['bytes'] for r in checked) / 1e6:.1f} MB); "
          f"{len(exact)} decided on CPython's tree, {len(checked) - len(exact)} fell back to libcst; "
          f"{len(with_findings)} with findings ({sum(1 for r in with_findings if r['exact'])} of them decided exactly); "
          f"{len(differ)} differ")
    print(f"seconds: CPython's tree {sum(r['exact_seconds'] for r in checked):.1f}, "
          f"libcst {sum(r['libcst_seconds'] for r in checked):.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results}, f, indent=1)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
