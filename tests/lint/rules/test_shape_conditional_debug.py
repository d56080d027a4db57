"""DBG105 shape-conditional-debug: an ``if`` on a tensor shape guarding a debug action."""

from __future__ import annotations

import textwrap

import pytest

from driftscan.core.values import Severity
from driftscan.lint.engine import inspect_source
from driftscan.lint.rules.shape_conditional_debug import ShapeConditionalDebug


def findings(text: str, prefilter: bool = False):
    data = textwrap.dedent(text).lstrip("\n")
    return [f for f in inspect_source(data, "m.py", [ShapeConditionalDebug], prefilter=prefilter)
            if f.code == "DBG105"]


@pytest.mark.parametrize("test", ["x.ndim == 3", "x.dim() > 2", "x.shape[-1] == 128", "x.numel() == 0"])
def test_every_shape_accessor_counts(test):
    text = f"""
    def forward(self, x):
        if {test}:
            torch.save(x, "/tmp/x.pt")
    """
    found = findings(text)
    assert [(f.line, f.column, f.severity) for f in found] == [(2, 5, Severity.HIGH)]
    assert findings(text, prefilter=True) == found


def test_the_finding_is_on_the_if_not_on_the_call():
    text = """
    def forward(self, x):
        y = x
        if x.shape[0] == 7:
            y = y + 1
            breakpoint()
    """
    assert [f.line for f in findings(text)] == [3]


def test_a_guard_of_print_alone_is_medium_and_one_with_a_dump_is_high():
    only_print = """
    def forward(self, x):
        if x.shape[0] == 7:
            print(x)
    """
    print_and_dump = """
    def forward(self, x):
        if x.shape[0] == 7:
            print(x)
            torch.save(x, "/tmp/x.pt")
    """
    assert [f.severity for f in findings(only_print)] == [Severity.MEDIUM]
    (finding,) = findings(print_and_dump)
    assert finding.severity == Severity.HIGH
    assert "print()" in finding.message and "torch.save()" in finding.message


def test_one_finding_per_guard_however_many_actions():
    text = """
    def forward(self, x):
        if x.shape[0] == 7:
            torch.save(x, "/tmp/a.pt")
            torch.save(x, "/tmp/b.pt")
    """
    assert len(findings(text)) == 1


def test_shape_logic_without_a_debug_action_is_not_reported():
    text = """
    def forward(self, x):
        if x.shape[0] > 1024:
            x = self.chunked(x)
            logger.info("chunked %s", x.shape)
        return x
    """
    assert findings(text) == []


def test_a_debug_action_guarded_by_a_non_shape_condition_is_not_reported():
    text = """
    def forward(self, x, step):
        if step == 7:
            torch.save(x, "/tmp/x.pt")
    """
    assert findings(text) == []


def test_an_outer_shape_guard_is_reported_for_a_dump_in_a_nested_if():
    text = """
    def forward(self, x, step):
        if x.shape[0] == 7:
            if step > 3:
                torch.save(x, "/tmp/x.pt")
    """
    assert [f.line for f in findings(text)] == [2]
