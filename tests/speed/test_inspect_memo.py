"""A warm audit of a venv with drifted Python files takes their findings, and their
originals' findings, from memos in the user cache (lint/scancache.py ``OutcomeMemo`` and
``ContentMemo``) and never imports the rule engine — and reports exactly what ``--no-cache``
reports, before and after the drifted files change again."""

from __future__ import annotations

import json
import os
import time

from driftscan.caches import racy

from driftscan.lint import scancache
from driftscan.lint.scancache import OutcomeMemo
from driftscan.core.values import Finding, Severity
from fixtures import venvs
from fixtures.harness import run_cli_imports

DEBUG = "\nimport torch\n\ndef _dbg_dump(x):\n    torch.save(x, '/tmp/six_dbg_{n}.pt')\n    return x\n"


def _report(out: str) -> dict:
    report = json.loads(out)
    report.pop("generated_at")
    report.pop("duration_seconds")
    return report


def _settle():
    time.sleep(2.1)  # past the racy windows: the CLI uses the real ones


def test_warm_audit_with_drift_imports_no_rule_engine_and_equals_no_cache(index_venv, wheelhouse, tmp_path):
    site = venvs.site_packages_of(index_venv)
    with open(site / "six.py", "a") as f:
        f.write(DEBUG.format(n=1))
    (site / "requests" / "_dbg.py").write_text("def f(x):\n    breakpoint()\n    return x\n")
    cache = os.environ["DRIFTSCAN_CACHE_DIR"]
    args = ["audit", "--venv", str(index_venv), "--wheels", str(wheelhouse), "--format", "json"]
    _settle()
    cold, cold_exit, cold_heavy = run_cli_imports(args, cache)
    assert "libcst" in cold_heavy and cold_exit == 1
    report = _report(cold)
    six = next(d for d in report["drifts"] if d["relpath"] == "six.py")
    assert {f["code"] for f in six["findings"]} and all(f["origin"] == "injected" for f in six["findings"])
    assert six["pristine"] is not None  # the original was compared: its findings came from the rules
    warm, warm_exit, warm_heavy = run_cli_imports(args, cache)
    assert "libcst" not in warm_heavy and "driftscan.lint.engine" not in warm_heavy, warm_heavy
    assert (_report(warm), warm_exit) == (report, cold_exit)
    nocache, nocache_exit, _ = run_cli_imports([*args, "--no-cache"], cache)
    assert (_report(nocache), nocache_exit) == (report, cold_exit)

    # the drifted file changes again: its findings are the new ones, warm as without a cache
    with open(site / "six.py", "a") as f:
        f.write("\ndef _dbg2():\n    import pdb; pdb.set_trace()\n")
    _settle()
    again, _, again_heavy = run_cli_imports(args, cache)
    assert "libcst" in again_heavy
    nocache, _, _ = run_cli_imports([*args, "--no-cache"], cache)
    assert _report(again) == _report(nocache) != report
    six = next(d for d in _report(again)["drifts"] if d["relpath"] == "six.py")
    assert len(six["findings"]) > len(next(d for d in report["drifts"] if d["relpath"] == "six.py")["findings"])


def _files(tmp_path, n=2):
    paths = []
    for k in range(n):
        p = tmp_path / f"m{k}.py"
        p.write_text(f"x = {k}\n")
        paths.append(str(p))
    return paths


FINDING = Finding("DBG101", "torch-save-call", Severity.HIGH, 1, 1, "torch.save", "torch.save(x)", "/tmp/*.pt")


def test_outcome_memo_round_trip_and_what_breaks_it(tmp_path, monkeypatch):
    monkeypatch.setattr(racy, "RACY_NS", 0)
    paths = _files(tmp_path)
    guard = tmp_path / "rule.py"
    guard.write_text("# rule\n")
    memo_dir = str(tmp_path / "memo")
    memo = OutcomeMemo(memo_dir, "sel", paths)
    memo.store({paths[0]: [FINDING]}, [(paths[0], FINDING)], [], [str(guard)], plugins=False)
    assert OutcomeMemo(memo_dir, "sel", paths).recall() == ({paths[0]: [FINDING]}, [(paths[0], FINDING)], [])
    assert OutcomeMemo(memo_dir, "other", paths).recall() is None  # another selection
    assert OutcomeMemo(memo_dir, "sel", paths[:1]).recall() is None  # other files
    guard.write_text("# rule, edited\n")
    assert OutcomeMemo(memo_dir, "sel", paths).recall() is None  # a rule's source changed
    memo = OutcomeMemo(memo_dir, "sel", paths)
    memo.store({paths[0]: [FINDING]}, [], [], [str(guard)], plugins=False)
    assert OutcomeMemo(memo_dir, "sel", paths).recall() is not None
    with open(paths[1], "a") as f:
        f.write("y = 2\n")
    assert OutcomeMemo(memo_dir, "sel", paths).recall() is None  # a drifted file changed


def test_outcome_memo_is_not_stored_for_files_changed_within_the_racy_window(tmp_path):
    paths = _files(tmp_path)
    memo_dir = str(tmp_path / "memo")
    OutcomeMemo(memo_dir, "sel", paths).store({}, [], [], [], plugins=False)
    assert not os.path.exists(memo_dir) or not os.listdir(memo_dir)


def test_a_forged_outcome_memo_is_a_miss(tmp_path, monkeypatch):
    monkeypatch.setattr(racy, "RACY_NS", 0)
    paths = _files(tmp_path)
    memo_dir = str(tmp_path / "memo")
    OutcomeMemo(memo_dir, "sel", paths).store({paths[0]: [FINDING]}, [(paths[0], FINDING)], [], [], plugins=False)
    [name] = os.listdir(memo_dir)
    path = os.path.join(memo_dir, name)
    head, _, payload = open(path, "rb").read().partition(b"\n")
    doc = json.loads(payload)
    forged = [
        {**doc, "by_path": {"/etc/passwd": doc["by_path"][paths[0]]}},  # a file not audited
        {**doc, "writers": [["/elsewhere.py", doc["writers"][0][1]]]},
        {**doc, "writers": [[paths[0], [*doc["writers"][0][1][:7], None]]]},  # a writer without a pattern
        {**doc, "by_path": {paths[0]: [["DBG101"]]}},
        {**doc, "errors": [[1, 2]]},
        {**doc, "guards": "x"},
    ]
    import hashlib

    for bad in forged:
        data = json.dumps(bad).encode()
        with open(path, "wb") as f:
            f.write(scancache.FORMAT + b" " + hashlib.blake2b(data, digest_size=16).hexdigest().encode() + b"\n" + data)
        assert OutcomeMemo(memo_dir, "sel", paths).recall() is None, bad
    with open(path, "wb") as f:
        f.write(head + b"\n" + payload[:-3])  # damaged
    assert OutcomeMemo(memo_dir, "sel", paths).recall() is None
