"""render.statistics: scan --statistics, one line per rule code, most frequent first."""

from __future__ import annotations

from driftscan.core.values import Finding, Severity
from driftscan.lint.files import ScanResult
from driftscan.render.statistics import render_statistics


def _finding(code: str, name: str) -> Finding:
    return Finding(code, name, Severity.HIGH, 1, 1, f"{name} found")


def test_counts_most_frequent_first_ties_by_code():
    result = ScanResult(findings=[("a.py", _finding("DBG105", "print")), ("b.py", _finding("DBG101", "breakpoint")),
                                  ("a.py", _finding("DBG105", "print")), ("c.py", _finding("DBG102", "pdb")),
                                  ("c.py", _finding("DBG105", "print"))] + [("d.py", _finding("DBG110", "x"))] * 10)
    assert render_statistics(result).splitlines() == [
        "10  DBG110  x",
        " 3  DBG105  print",
        " 1  DBG101  breakpoint",
        " 1  DBG102  pdb",
    ]


def test_no_findings():
    assert render_statistics(ScanResult()) == "no findings\n"
