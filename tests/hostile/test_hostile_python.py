"""Pathological Python cannot crash or stall a scan or an audit.

libcst's native parser overflows its stack on 100,000 nested parentheses (a segfault) and takes
seconds on 5,000 chained operators; the byte scan of lint/complexity.py refuses such files
before libcst sees them (DBG004), a worker that crashes or runs out of time costs one file, and
every other file's findings and drifts stay.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import signal
import time

import pytest

from driftscan import audit
from driftscan.lint import scan as scan_module
from driftscan.lint import ParseLimits, scan_paths
from driftscan.lint.complexity import MAX_CHAIN, MAX_DEPTH, measure
from driftscan.lint.registry import builtin_rules
from driftscan.lint.rule import Rule
from fixtures import venvs
from fixtures.harness import run_cli
from fixtures.wheels import build_wheel

PARENS = "x = " + "(" * 100_000 + "1" + ")" * 100_000 + "\n"
CHAIN = "x = " + " + ".join(["a"] * 5_000) + "\n"
DEBUG = "import pdb\n"  # a trigger: the scan parses only files that could hide debug code


def _tree(root):
    (root / "pkg").mkdir(parents=True)
    (root / "pkg/parens.py").write_text(DEBUG + PARENS)
    (root / "pkg/chain.py").write_text(DEBUG + CHAIN)
    (root / "pkg/dbg.py").write_text("def forward(x):\n    breakpoint()\n    return x\n")
    (root / "pkg/counter.py").write_text("class M:\n    def forward(self, x):\n        self._debug_calls += 1\n")
    return root


def _by_file(result):
    out: dict[str, set[str]] = {}
    for path, finding in result.findings:
        out.setdefault(os.path.basename(path), set()).add(finding.code)
    return out


@pytest.mark.parametrize(
    "source",
    [PARENS, CHAIN, "x = a" + ".b" * 5000 + "\n", "x = f" + "()" * 5000 + "\n", "x = " + "not " * 5000 + "a\n",
     "x = " + "-" * 20000 + "a\n", "x = " + 'f"{' * 5000 + "1" + '}"' * 5000 + "\n",
     "x = " + "lambda:" * 5000 + "1\n", ("y = " + "+".join(["a"] * 1900) + "\n") * 50,
     # a name ending in f, then a string: not an f-string, so the parentheses are code
     'x = ff"{" + ' + "(" * 5000 + "1" + ")" * 5000 + ' + "}"\n',
     # a nested quote in an f-string field (PEP 701) does not end the f-string
     'x = f"{d["k"]}" + ' + "(" * 5000 + "1" + ")" * 5000 + "\n"],
    ids=["parens", "chain", "attributes", "calls", "not", "unary", "fstrings", "lambdas", "many-chains",
         "ff-name", "pep701"],
)
def test_the_byte_scan_refuses_parser_bombs_fast(source):
    started = time.perf_counter()
    assert measure(source.encode()).refused
    assert time.perf_counter() - started < 0.5


def test_the_byte_scan_passes_real_code_and_skips_strings():
    assert measure(("x = '" + "(" * 500 + "'  # " + "[" * 500 + "\n").encode()).refused is None
    assert measure(('s = """' + "{" * 500 + '"""\n').encode()).refused is None
    assert measure(('s = f"{{" "' + "(" * 500 + '"\n').encode()).refused is None  # "{{" is a literal brace
    assert measure(("x = " + "(" * (MAX_DEPTH - 1) + "1" + ")" * (MAX_DEPTH - 1) + "\n").encode()).refused is None
    assert measure(("x = " + "+".join(["a"] * (MAX_CHAIN // 3)) + "\n").encode()).refused is None
    # Files of the interpreter's own library: none refused, none near the limits.
    checked = 0
    for name in ("typing.py", "ast.py", "argparse.py", "inspect.py", "tokenize.py", "pydoc.py"):
        path = os.path.join(os.path.dirname(os.__file__), name)
        with open(path, "rb") as f:
            c = measure(f.read())
        assert c.refused is None and c.depth < MAX_DEPTH // 4 and c.chain < MAX_CHAIN // 2, (name, c)
        checked += 1
    assert checked == 6


@pytest.mark.parametrize("jobs", [1, 2])
def test_scan_survives_parser_bombs(tmp_path, jobs):
    root = _tree(tmp_path)
    started = time.perf_counter()
    result = scan_paths([str(root)], jobs=jobs)
    assert time.perf_counter() - started < 20
    by_file = _by_file(result)
    assert by_file["parens.py"] == {"DBG004"} and by_file["chain.py"] == {"DBG004"}
    assert "DBG106" in by_file["dbg.py"] and "DBG103" in by_file["counter.py"]
    message = next(f.message for p, f in result.findings if p.endswith("parens.py"))
    assert "nested more than 200 levels" in message
    assert not result.errors


def test_scan_cli_j1_does_not_crash(tmp_path):
    root = _tree(tmp_path)
    proc = run_cli("scan", str(root), "-j1")
    assert proc.returncode == 1, (proc.returncode, proc.stderr)  # findings, not a crash (-11)
    assert "DBG004" in proc.stdout and "DBG106" in proc.stdout


# -- a crashed or stalled worker costs one file ----------------------------------------------


class CrashOnMarker(Rule):
    """Test rule: kills its process, as a native-code crash would, on a file marked for it."""

    CODE = "TST901"
    NAME = "crash-on-marker"
    MESSAGE = "never reported"

    def visit_Module(self, node):
        if self.context.path.endswith("crash_me.py"):
            os.kill(os.getpid(), signal.SIGSEGV)


class StallOnMarker(Rule):
    """Test rule: stalls on a file marked for it."""

    CODE = "TST902"
    NAME = "stall-on-marker"
    MESSAGE = "never reported"

    def visit_Module(self, node):
        if self.context.path.endswith("stall_me.py"):
            time.sleep(60)


def _many(root, marked: str):
    root.mkdir()
    for i in range(12):
        (root / f"ok_{i:02}.py").write_text(f"def forward(x):\n    breakpoint()  # {i}\n")
    (root / marked).write_text("x = 1\n")
    return root


@pytest.mark.parametrize("fork", ["fork", "inline"])  # forked workers, fresh interpreters
def test_a_crashing_worker_costs_one_file(tmp_path, monkeypatch, fork):
    monkeypatch.setenv("DRIFTSCAN_FORK", fork)
    root = _many(tmp_path / "t", "crash_me.py")
    result = scan_paths([str(root)], rules=[*builtin_rules(), CrashOnMarker], jobs=2)
    by_file = _by_file(result)
    assert by_file["crash_me.py"] == {"DBG004"}
    assert all(by_file[f"ok_{i:02}.py"] == {"DBG106"} for i in range(12))
    (crash,) = [f for p, f in result.findings if p.endswith("crash_me.py")]
    assert "crashed" in crash.message and "signal 11" in crash.message


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_stalled_worker_costs_one_file(tmp_path, monkeypatch, jobs):
    monkeypatch.setattr(scan_module, "FILE_BUDGET", 1.0)
    monkeypatch.setattr(scan_module, "FILE_BUDGET_PER_MB", 0.0)
    # With one job, files over IN_PROCESS_BYTES go to one worker: all of them here.
    monkeypatch.setattr(scan_module, "IN_PROCESS_BYTES", 0)
    root = _many(tmp_path / "t", "stall_me.py")
    started = time.perf_counter()
    result = scan_paths([str(root)], rules=[*builtin_rules(), StallOnMarker], jobs=jobs)
    assert time.perf_counter() - started < 20
    by_file = _by_file(result)
    assert by_file["stall_me.py"] == {"DBG004"}
    assert all(by_file[f"ok_{i:02}.py"] == {"DBG106"} for i in range(12))
    (stall,) = [f for p, f in result.findings if p.endswith("stall_me.py")]
    assert "longer than" in stall.message


def test_a_lost_file_without_dbg004_selected_is_an_error(tmp_path):
    root = _many(tmp_path / "t", "crash_me.py")
    rules = [r for r in builtin_rules() if r.CODE != "DBG004"] + [CrashOnMarker]
    result = scan_paths([str(root)], rules=rules, jobs=2)
    assert [(os.path.basename(e.path), "crashed" in e.message) for e in result.errors] == [("crash_me.py", True)]
    assert len(result.findings) == 12


# -- in a real audit -------------------------------------------------------------------------


def _record_row(site, rel: str) -> str:
    data = (site / rel).read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{rel},sha256={digest},{len(data)}"


def _site(tmp_path):
    """A bare site-packages with one distribution whose files its RECORD describes."""
    site = tmp_path / "site"
    (site / "modelpkg").mkdir(parents=True)
    files = {
        "modelpkg/__init__.py": "",
        "modelpkg/layers.py": "class L:\n    def forward(self, x):\n        return x\n",
        "modelpkg/bomb.py": "X = 1\n",
        "modelpkg/gone.py": "Y = 2\n",
    }
    for rel, text in files.items():
        (site / rel).write_text(text)
    info = site / "modelpkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: modelpkg\nVersion: 1.0\n")
    (info / "INSTALLER").write_text("pip\n")
    rows = [_record_row(site, rel) for rel in files]
    rows += [_record_row(site, "modelpkg-1.0.dist-info/METADATA"), _record_row(site, "modelpkg-1.0.dist-info/INSTALLER"),
             "modelpkg-1.0.dist-info/RECORD,,"]
    (info / "RECORD").write_text("\n".join(rows) + "\n")
    # The drifts: a debug counter edited in, a file deleted, a bomb edited in, a bomb added.
    (site / "modelpkg/layers.py").write_text(
        "class L:\n    def forward(self, x):\n        self._debug_calls += 1\n        return x\n")
    (site / "modelpkg/gone.py").unlink()
    (site / "modelpkg/bomb.py").write_text(PARENS)  # no trigger at all: the syntax check sees it
    (site / "modelpkg/added_bomb.py").write_text(CHAIN)
    (site / "modelpkg/added_ok.py").write_text("Z = 3\n")
    return site


@pytest.mark.parametrize("jobs", [1, 2])
def test_audit_keeps_every_drift_beside_parser_bombs(tmp_path, jobs):
    site = _site(tmp_path)
    started = time.perf_counter()
    report = audit(site_packages=[str(site)], jobs=jobs)
    assert time.perf_counter() - started < 30
    drifts = {d.relpath: d for d in report.drifts}
    assert {rel: drifts[rel].kind.value for rel in drifts} == {
        "modelpkg/layers.py": "modified", "modelpkg/gone.py": "missing", "modelpkg/bomb.py": "modified",
        "modelpkg/added_bomb.py": "added", "modelpkg/added_ok.py": "added"}
    assert [f.code for f in drifts["modelpkg/bomb.py"].findings] == ["DBG004"]
    assert [f.code for f in drifts["modelpkg/added_bomb.py"].findings] == ["DBG004"]
    assert "DBG103" in {f.code for f in drifts["modelpkg/layers.py"].findings}
    assert drifts["modelpkg/added_ok.py"].findings == []
    assert not report.errors


def test_cli_audit_of_a_real_venv_keeps_its_drift_beside_parser_bombs(tmp_path):
    """A pip-installed distribution, the command line (whose workers are forked)."""
    wheel = build_wheel(tmp_path / "wheels", "bombpkg", "1.0", {
        "bombpkg/__init__.py": "", "bombpkg/layers.py": "class L:\n    def forward(self, x):\n        return x\n",
        "bombpkg/bomb.py": "X = 1\n", "bombpkg/gone.py": "Y = 2\n"})
    venv = venvs.make_pip_venv(tmp_path / "venv")
    venvs.pip_install(venv, "--no-index", "--find-links", str(wheel.parent), "bombpkg")
    site = venvs.site_packages_of(venv)
    (site / "bombpkg/layers.py").write_text(
        "class L:\n    def forward(self, x):\n        self._debug_calls += 1\n        return x\n")
    (site / "bombpkg/gone.py").unlink()
    (site / "bombpkg/bomb.py").write_text(PARENS)
    (site / "bombpkg/added_bomb.py").write_text(CHAIN)
    started = time.perf_counter()
    proc = run_cli("audit", "--venv", str(venv), "--format", "json")
    assert time.perf_counter() - started < 30
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    drifts = {d["relpath"]: d for d in json.loads(proc.stdout)["drifts"]}
    assert {r: drifts[r]["kind"] for r in drifts if r.startswith("bombpkg/")} == {
        "bombpkg/layers.py": "modified", "bombpkg/gone.py": "missing", "bombpkg/bomb.py": "modified",
        "bombpkg/added_bomb.py": "added"}
    assert [f["code"] for f in drifts["bombpkg/bomb.py"]["findings"]] == ["DBG004"]
    assert [f["code"] for f in drifts["bombpkg/added_bomb.py"]["findings"]] == ["DBG004"]
    assert "DBG103" in {f["code"] for f in drifts["bombpkg/layers.py"]["findings"]}


def test_a_scan_budget_ends_the_parsing_and_names_every_file_left(tmp_path):
    """Each file has its own budget, but many slow-but-legal files add up: the audit's scan has a
    budget for all of them (lint/drifts.py PARSE_BUDGET), past which files get DBG004."""
    from driftscan.lint import ParseLimits, scan_paths

    for i in range(4):
        (tmp_path / f"m{i}.py").write_text(f"import torch\ntorch.save(x, '/tmp/nomla_{i}_a.pt')\n")
    full = scan_paths([str(tmp_path)], jobs=2)
    assert {f.code for _, f in full.findings} >= {"DBG101"}
    cut = scan_paths([str(tmp_path)], jobs=2, limits=ParseLimits(budget=0.0))
    by_file = {os.path.basename(p): f for p, f in cut.findings}
    assert set(by_file) == {f"m{i}.py" for i in range(4)}
    assert all(f.code == "DBG004" and "budget ran out" in f.message for f in by_file.values())
