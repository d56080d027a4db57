"""DBG003 file-too-large: a file over the byte limit is reported once and not parsed."""

from __future__ import annotations

from driftscan.core.values import Severity
from driftscan.lint.engine import inspect_file, inspect_source
from driftscan.lint.rules.debugger_call import DebuggerCall
from driftscan.lint.rules.file_too_large import FileTooLarge

BIG = "import pdb\npdb.set_trace()\n" + "x = 1\n" * 20


def test_a_file_over_the_limit_is_one_finding_at_its_start():
    (finding,) = inspect_source(BIG, "m.py", [FileTooLarge], max_bytes=64)
    assert (finding.code, finding.line, finding.column) == ("DBG003", 1, 1)
    assert finding.severity == Severity.LOW


def test_a_file_over_the_limit_is_not_inspected_by_other_rules():
    codes = [f.code for f in inspect_source(BIG, "m.py", [FileTooLarge, DebuggerCall], max_bytes=64)]
    assert codes == ["DBG003"]


def test_a_file_at_the_limit_is_inspected():
    data = "import pdb\npdb.set_trace()\n"
    codes = [f.code for f in inspect_source(data, "m.py", [FileTooLarge, DebuggerCall], max_bytes=len(data))]
    assert codes == ["DBG106"]


def test_no_limit_means_no_finding():
    assert inspect_source(BIG, "m.py", [FileTooLarge], max_bytes=None) == []


def test_a_large_file_on_disk_is_reported_without_the_rule_seeing_its_code(tmp_path):
    path = tmp_path / "big.py"
    path.write_text(BIG)
    assert [f.code for f in inspect_file(str(path), [FileTooLarge, DebuggerCall], max_bytes=64)] == ["DBG003"]


def test_without_the_rule_a_large_file_gives_nothing():
    assert inspect_source(BIG, "m.py", [DebuggerCall], max_bytes=64) == []
