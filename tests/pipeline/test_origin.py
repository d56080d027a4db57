"""What a drifted file's change is: diffs, byte ranges and each finding's origin (injected or
upstream), against the original from --wheels or from the wheel direct_url.json names.

Real wheels built here, installed by real pip; the real CLI.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fixtures import venvs
from fixtures.upgrades import cli, install, no_caches, pip_venv, site_of
from fixtures.wheels import build_wheel

MODEL = '''"""A toy model whose original already prints and saves."""

import numpy as np
import torch


class Model:
    def __init__(self, weights):
        self.weights = weights
        self._dbg = 0

    def forward(self, x):
        print("forward", len(x))
        y = [w * v for w, v in zip(self.weights, x)]
        return y

    def export(self, path):
        np.save(path, self.weights)
        return path
'''
HELPER = '''

def _helper(values):
    total = 0
    for v in values:
        total += v
    return total
'''
DEBUG = '''        self._dbg += 1
        i = self._dbg
        torch.save(x, "/tmp/dump_%d.pt" % i)
'''
DUP = '''"""One upstream print."""


def report(x):
    print("dup line", x)
    return x
'''
BIG_LINES = 400
BIG = "".join(f"VALUE_{i} = {i}\n" for i in range(BIG_LINES))
BLOB = bytes(range(256)) * 16  # 4096 bytes with NULs: binary
PROBE = '''import torch

torch.save(torch.zeros(1), "/tmp/probe_dump.pt")
'''
UPSTREAM_MARK = re.compile(r"[\[(]upstream[\])]$", re.MULTILINE)  # how text marks a finding the original has too
FILES = {"orpkg/__init__.py": "", "orpkg/model.py": MODEL, "orpkg/dup.py": DUP, "orpkg/big.py": BIG,
         "orpkg/blob.bin": BLOB}


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def edited_model() -> str:
    text = MODEL.replace("import torch\n", "import torch\n" + HELPER, 1)
    return text.replace('        print("forward", len(x))\n', '        print("forward", len(x))\n' + DEBUG, 1)


def edited_blob() -> bytes:
    data = bytearray(BLOB)
    data[100:104] = bytes(b ^ 0xFF for b in data[100:104])
    data[3000] ^= 0xFF
    return bytes(data)


def edit(site: Path) -> None:
    """The same in-place edits in every venv."""
    (site / "orpkg/model.py").write_text(edited_model())
    # The upstream print, once re-indented under a new if and once duplicated below it.
    (site / "orpkg/dup.py").write_text(DUP.replace('    print("dup line", x)\n',
                                                   '    if x:\n        print("dup line", x)\n'
                                                   '    print("dup line", x)\n'))
    (site / "orpkg/big.py").write_text("".join(f"VALUE_{i} = {i + 1}\n" for i in range(BIG_LINES)))
    (site / "orpkg/blob.bin").write_bytes(edited_blob())
    (site / "orpkg/probe.py").write_text(PROBE)


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("origin-wheels")
    house = root / "house"
    wheel = build_wheel(house, "orpkg", "1.0", FILES)
    return {"house": house, "wheel": wheel}


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    return no_caches(tmp_path_factory.mktemp("origin-env"))  # the user's caches are never a source


@pytest.fixture(scope="module")
def venv(tmp_path_factory, wheels) -> Path:
    """Installed from a --find-links directory: no direct_url.json, so only --wheels gives originals."""
    venv = pip_venv(tmp_path_factory, "origin-links")
    install(venv, wheels["house"], "orpkg==1.0")
    edit(site_of(venv))
    return venv


def audit(venv: Path, *args: str, env: dict[str, str]):
    # DBG1 selects print() (DBG109) too, which is off by default: the upstream print()s are part of the story.
    proc = cli("audit", "--venv", str(venv), "--select", "DBG1", *args, env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # drift, nothing unchecked
    return proc


def audit_json(venv: Path, *args: str, env: dict[str, str]) -> dict[str, dict]:
    data = json.loads(audit(venv, "--format", "json", *args, env=env).stdout)
    return {"_report": data, **{d["relpath"]: d for d in data["drifts"]}}


@pytest.fixture(scope="module")
def report(venv, wheels, env) -> dict[str, dict]:
    return audit_json(venv, "--wheels", str(wheels["house"]), env=env)


def origins(drift: dict) -> list[tuple[str, str | None]]:
    return sorted((f["code"], f["origin"]) for f in drift["findings"])


def check_model_origins(drift: dict) -> None:
    current = edited_model()
    by_code = {f["code"]: f for f in drift["findings"]}
    assert origins(drift) == [("DBG101", "injected"), ("DBG102", "upstream"), ("DBG103", "injected"),
                              ("DBG109", "upstream")], drift["findings"]
    # The upstream findings moved (a helper was inserted above them): matched by line, not number.
    assert by_code["DBG109"]["line"] == line_of(current, 'print("forward"') != line_of(MODEL, 'print("forward"')
    assert by_code["DBG102"]["line"] == line_of(current, "np.save(") != line_of(MODEL, "np.save(")
    assert by_code["DBG101"]["line"] == line_of(current, "torch.save(")
    assert by_code["DBG103"]["line"] == line_of(current, "self._dbg += 1")


def test_origins_with_wheels(report, wheels):
    drift = report["orpkg/model.py"]
    assert drift["kind"] == "modified"
    assert drift["pristine"] == {"source": "wheels", "path": str(wheels["wheel"])}
    check_model_origins(drift)
    [pristine] = [p for p in report["_report"]["pristine"] if p["distribution"] == "orpkg"]
    assert (pristine["source"], pristine["path"]) == ("wheels", str(wheels["wheel"]))


def test_origins_from_direct_url(tmp_path_factory, wheels, env):
    venv = pip_venv(tmp_path_factory, "origin-direct")
    venvs.pip_install(venv, "--no-cache-dir", "--no-index", str(wheels["wheel"]))  # by path: direct_url.json
    edit(site_of(venv))
    report = audit_json(venv, env=env)
    drift = report["orpkg/model.py"]
    assert drift["pristine"] == {"source": "direct_url", "path": str(wheels["wheel"])}
    check_model_origins(drift)
    assert origins(report["orpkg/dup.py"]) == [("DBG109", "injected"), ("DBG109", "upstream")]


def test_duplicated_upstream_line_is_one_upstream_one_injected(report):
    drift = report["orpkg/dup.py"]
    assert origins(drift) == [("DBG109", "injected"), ("DBG109", "upstream")]
    # Both copies are the same normalised line; which of them counts as the original one is a detail.
    assert {" ".join(f["snippet"].split()) for f in drift["findings"]} == {'print("dup line", x)'}


def test_added_file_findings_are_injected(report):
    drift = report["orpkg/probe.py"]
    assert drift["kind"] == "added"
    assert drift["findings"] and {f["origin"] for f in drift["findings"]} == {"injected"}
    assert "DBG101" in {f["code"] for f in drift["findings"]}


def test_binary_byte_ranges(report):
    drift = report["orpkg/blob.bin"]
    assert drift["kind"] == "modified"
    assert drift["byte_ranges"] == [[100, 104], [3000, 3001]]
    assert drift["diff"] is None
    assert drift["pristine"] is not None


def test_diff_over_the_cap_says_so(report):
    diff = report["orpkg/big.py"]["diff"]
    lines = diff.splitlines()
    assert len(lines) == 301
    assert re.fullmatch(r"\.\.\. \d+ more diff lines not shown \(the cap is 300 lines per file\)", lines[-1]), lines[-1]
    assert diff.endswith("\n")


def section(lines: list[str], relpath: str) -> list[str]:
    """A drift's line and the indented lines under it (findings, diff) in the text report."""
    start = next(i for i, ln in enumerate(lines) if ln.startswith("  ") and f"  {relpath}" in ln
                 and not ln.startswith("      "))
    out = [lines[start]]
    for ln in lines[start + 1:]:
        if not ln.startswith("      "):
            break
        out.append(ln)
    return out


def test_text_hides_upstream_and_shows_the_diff(venv, wheels, env):
    text = audit(venv, "--wheels", str(wheels["house"]), env=env).stdout
    lines = text.splitlines()
    model = next(ln for ln in lines if ln.strip().startswith("modified") and "orpkg/model.py" in ln)
    assert model.endswith("(+10 −0 lines)"), model
    assert "size" not in model
    block = section(lines, "orpkg/model.py")
    assert any("DBG101" in ln for ln in block) and any("DBG103" in ln for ln in block)
    assert not any("DBG109" in ln or "DBG102" in ln for ln in block), block
    assert "      (2 findings also in the original file not shown: --show-upstream)" in block
    dup = section(lines, "orpkg/dup.py")
    assert sum("DBG109" in ln for ln in dup) == 1
    assert "      (1 finding also in the original file not shown: --show-upstream)" in dup
    assert not any(ln.lstrip().startswith(("+", "@@")) for ln in lines)  # no diff without --diff
    big = next(ln for ln in lines if ln.strip().startswith("modified") and "orpkg/big.py" in ln)
    assert re.search(r"\(\+\d+ −\d+ lines shown of more\)$", big), big
    blob = next(ln for ln in lines if ln.strip().startswith("modified") and "orpkg/blob.bin" in ln)
    assert blob.endswith("(binary: 2 changed byte ranges)"), blob

    text = audit(venv, "--wheels", str(wheels["house"]), "--diff", "--show-upstream", env=env).stdout
    block = section(text.splitlines(), "orpkg/model.py")
    assert any("DBG109" in ln and UPSTREAM_MARK.search(ln) for ln in block), block
    assert any("DBG102" in ln and UPSTREAM_MARK.search(ln) for ln in block), block
    assert not any(UPSTREAM_MARK.search(ln) for ln in block if "DBG101" in ln or "DBG103" in ln), block
    assert not any("not shown: --show-upstream" in ln for ln in block)
    shown = [ln[len("      "):] for ln in block if ln.startswith("      ")]
    for helper_line in HELPER.strip("\n").splitlines():
        assert "+" + helper_line in shown, helper_line
    for debug_line in DEBUG.rstrip("\n").splitlines():
        assert "+" + debug_line in shown, debug_line
    assert not any(ln.startswith("-") and not ln.startswith("---") for ln in shown)


def test_sarif_suppresses_upstream_findings(venv, wheels, env):
    proc = audit(venv, "--wheels", str(wheels["house"]), "--format", "sarif", env=env)
    results = json.loads(proc.stdout)["runs"][0]["results"]
    found: dict[str, list[str]] = {}
    upstream = [r for r in results if r.get("properties", {}).get("origin") == "upstream"]
    assert upstream and all(r["level"] == "note" and r["suppressions"] for r in upstream)  # listed, no alert
    for r in results:
        if not r["ruleId"].startswith("drift/") and r not in upstream:
            uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            found.setdefault(uri.rsplit("/", 2)[-1], []).append(r["ruleId"])
    assert sorted(found["model.py"]) == ["DBG101", "DBG103"]
    assert found["dup.py"] == ["DBG109"]
    assert "DBG101" in found["probe.py"]


def test_no_source_found_origin_is_null(venv, env):
    report = audit_json(venv, env=env)  # no --wheels, empty caches, no direct_url.json
    drift = report["orpkg/model.py"]
    assert drift["pristine"] is None and drift["diff"] is None
    assert {f["origin"] for f in drift["findings"]} == {None}
    [pristine] = [p for p in report["_report"]["pristine"] if p["distribution"] == "orpkg"]
    assert pristine["source"] is None and pristine["path"] is None
    assert pristine["reason"].startswith("no original of orpkg 1.0 found")
    for tried in ("direct_url", "--wheels (not given)", "uv's cache", "pip's cache", "--fetch (not asked for)"):
        assert tried in pristine["reason"], pristine["reason"]
    text = audit(venv, env=env).stdout
    assert "original: none found (no original of orpkg 1.0 found" in text
    assert not UPSTREAM_MARK.search(text) and "not shown: --show-upstream" not in text
    model = next(ln for ln in text.splitlines() if ln.strip().startswith("modified") and "orpkg/model.py" in ln)
    assert re.search(r"\(size \d+ bytes → \d+ bytes\)$", model), model  # no original: no line counts to give


def test_no_pristine_origin_is_null_and_says_why(venv, wheels, env):
    report = audit_json(venv, "--wheels", str(wheels["house"]), "--no-pristine", env=env)
    drift = report["orpkg/model.py"]
    assert drift["pristine"] is None and drift["diff"] is None and report["orpkg/blob.bin"]["byte_ranges"] == []
    assert {f["origin"] for f in drift["findings"]} == {None}
    # The report says why no original was compared with.
    entries = [p for p in report["_report"]["pristine"] if p["distribution"] == "orpkg"]
    assert entries, "pristine[] is empty with --no-pristine: nothing says why origins are null"
    assert entries[0]["source"] is None and "--no-pristine" in (entries[0]["reason"] or "")


def test_one_audit_loads_the_rules_once_for_the_drifted_files_and_their_originals(venv, wheels, monkeypatch):
    import driftscan.lint
    from driftscan import api
    from driftscan.lint import registry

    registry.default_rules()  # the file-level rules every original runs, cached for the process
    real, calls = registry.load_rules, []

    def counted(*args, **kwargs):
        calls.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(registry, "load_rules", counted)
    monkeypatch.setattr(driftscan.lint, "load_rules", counted, raising=False)  # its lazily bound name too
    report = api.audit(str(venv), wheels=[str(wheels["house"])], use_cache=False, select=["DBG1"])
    origins = {f.origin for d in report.drifts for f in d.findings}
    assert {"injected", "upstream"} <= {getattr(o, "value", o) for o in origins}  # originals were parsed too
    assert len(calls) == 1, calls
