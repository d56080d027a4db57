"""`# noqa` on a finding's line (ruff's semantics), and unused codes under `scan --strict`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from driftscan.lint import inspect_source, load_rules, select_rules
from driftscan.lint.noqa import parse_comment
from fixtures.harness import run_cli
from fixtures.venvs import modern_pip_install, site_packages_of
from fixtures.wheels import build_wheel

RULES = select_rules(load_rules(plugins=False))  # the default selection: DBG006 is not in it
STRICT = [*RULES, *(r for r in load_rules(plugins=False) if r.CODE == "DBG006")]


def codes(source: str, rules=RULES) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in inspect_source(source, "<test>", rules)]


def test_a_code_suppresses_that_code_only():
    src = "import pdb; pdb.set_trace()  # noqa: DBG106\n"
    assert codes(src) == [(1, "DBG107")]  # the import on the same line still reported
    assert codes("import pdb; pdb.set_trace()\n") == [(1, "DBG107"), (1, "DBG106")]


def test_bare_noqa_suppresses_everything_on_its_line_only():
    src = "import pdb; pdb.set_trace()  # noqa\nbreakpoint()\n"
    assert codes(src) == [(2, "DBG106")]
    assert codes("breakpoint()  # NoQA   because\n") == []  # any case; text may follow


def test_a_wrong_code_suppresses_nothing():
    assert codes("breakpoint()  # noqa: DBG101\n") == [(1, "DBG106")]
    assert codes("breakpoint()  # noqa: dbg106\n") == [(1, "DBG106")]  # codes are exact, upper case
    assert codes("breakpoint()  # noqa: DBG10\n") == [(1, "DBG106")]  # ruff: no prefixes
    assert codes("breakpoint()  # noqa:\n") == [(1, "DBG106")]  # a colon and no code: not a directive


@pytest.mark.parametrize("comment", ["# noqa: DBG106,DBG107", "# noqa:DBG107 DBG106", "# noqa: DBG107, DBG106 pdb kept",
                                     "# type: ignore  # noqa: DBG106, DBG107"])
def test_several_codes_comma_or_space_separated(comment):
    assert codes(f"import pdb; pdb.set_trace()  {comment}\n") == []


def test_a_noqa_inside_a_string_is_not_a_comment():
    assert codes('x = "# noqa"; breakpoint()\n') == [(1, "DBG106")]
    assert codes('x = """\n# noqa\n"""; breakpoint()\n') == [(3, "DBG106")]


def test_multi_line_statement_takes_the_line_where_the_finding_starts():
    base = 'import torch\n\ndef forward(self, x):\n    torch.save(\n        x, "/tmp/x.pt"){}\n'
    first = 'import torch\n\ndef forward(self, x):\n    torch.save(  # noqa: DBG101\n        x, "/tmp/x.pt")\n'
    assert codes(base.format("")) == [(4, "DBG101")]
    assert codes(first) == []
    assert codes(base.format("  # noqa: DBG101")) == [(4, "DBG101")]  # the continuation line is not the finding's


def test_file_level_findings_cannot_be_suppressed():
    assert codes('print "x"  # noqa\n') == [(1, "DBG001")]
    assert codes('import torch\ntorch.save(x, "/tmp/a.pt"  # noqa: DBG001\n') == [(2, "DBG001")]


def test_unused_codes_are_reported_only_by_the_unused_noqa_rule():
    src = ("import pdb; pdb.set_trace()  # noqa: DBG106, DBG107\n"  # both used
           "breakpoint()  # noqa: DBG106, DBG101\n"  # DBG101 unused
           "x = 1  # noqa: DBG108, E501\n"  # DBG108 unused; E501 another linter's
           "y = 2  # noqa\n"  # bare: never reported
           "z = 3  # noqa: DBG199\n")  # no such rule
    assert codes(src) == []
    found = inspect_source(src, "<test>", STRICT)
    assert [(f.line, f.column, f.code) for f in found] == [(2, 15, "DBG006"), (3, 8, "DBG006"), (5, 8, "DBG006")]
    assert "DBG101: no DBG101 finding on this line" in found[0].message
    assert "DBG199 did not run" in found[2].message
    assert found[1].snippet == "x = 1  # noqa: DBG108, E501"


def test_parse_comment():
    assert parse_comment("# noqa") == (0, None)
    assert parse_comment("#noqa:DBG101,DBG102") == (0, ("DBG101", "DBG102"))
    assert parse_comment("# keep  # noqa: DBG101 because") == (8, ("DBG101",))
    assert parse_comment("# noqa: ") is None
    assert parse_comment("# noqanope") is None
    assert parse_comment("# noqa DBG101") == (0, None)  # no colon: bare, as ruff and flake8 read it


def test_scan_strict_reports_unused_codes_and_exits_1(tmp_path):
    code = tmp_path / "mod.py"
    code.write_text("import pdb\n\n\ndef f():\n    pdb.set_trace()  # noqa: DBG106\n    return 1  # noqa: DBG101, F401\n"
                    "import pdb  # noqa: DBG107\n")
    plain = run_cli("scan", str(code), "--format", "json")
    assert plain.returncode == 1, plain.stderr  # line 1's import is not excused
    assert [(f["line"], f["code"]) for f in json.loads(plain.stdout)["findings"]] == [(1, "DBG107")]
    strict = run_cli("scan", str(code), "--format", "json", "--strict")
    assert strict.returncode == 1, strict.stderr
    found = [(f["line"], f["code"], f["message"]) for f in json.loads(strict.stdout)["findings"]]
    assert found == [(1, "DBG107", "debugger module pdb imported"),
                     (6, "DBG006", "unused noqa code DBG101: no DBG101 finding on this line")]
    same = run_cli("scan", str(code), "--format", "json", "--strict", "--no-prefilter", "-j", "2")
    assert json.loads(same.stdout)["findings"] == json.loads(strict.stdout)["findings"]
    ignored = run_cli("scan", str(code), "--format", "json", "--strict", "--ignore", "DBG006")
    assert [f["code"] for f in json.loads(ignored.stdout)["findings"]] == ["DBG107"]


def test_scan_strict_on_a_clean_file_with_a_stale_noqa(tmp_path):
    code = tmp_path / "clean.py"
    code.write_text("def f(x):\n    return x  # noqa: DBG101\n")
    assert run_cli("scan", str(code)).returncode == 0
    proc = run_cli("scan", str(code), "--strict")
    assert proc.returncode == 1 and "DBG006" in proc.stdout and "clean.py:2:" in proc.stdout, proc.stdout


@pytest.fixture(scope="module")
def dumping_venv(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("noqa-venv")
    house = base / "house"
    build_wheel(house, "noqapkg", "1.0", {"noqapkg/__init__.py": "", "noqapkg/model.py":
                                          "def forward(self, x):\n    return x\n"})
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    modern_pip_install(venv, "--no-index", "--find-links", str(house), "noqapkg")
    return venv


def test_audit_honours_noqa_in_a_drifted_file_but_still_reports_the_drift(dumping_venv, tmp_path):
    venv = tmp_path / "venv"
    shutil.copytree(dumping_venv, venv, symlinks=True)
    model = site_packages_of(venv) / "noqapkg" / "model.py"
    model.write_text("import torch\n\n\ndef forward(self, x):\n"
                     "    torch.save(x, '/tmp/noqa_x.pt')  # noqa: DBG101\n"
                     "    torch.save(x, '/tmp/noqa_y.pt')\n    return x\n")
    proc = run_cli("audit", "--venv", str(venv), "--format", "json", "--no-pristine", cwd=str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    drift = next(d for d in json.loads(proc.stdout)["drifts"] if d["relpath"] == "noqapkg/model.py")
    assert drift["kind"] == "modified"
    assert [(f["line"], f["code"]) for f in drift["findings"]] == [(6, "DBG101")]
