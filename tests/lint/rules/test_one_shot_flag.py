"""DBG104 one-shot-flag: ``if not flag:`` whose body sets the flag, around debug code."""

from __future__ import annotations

import textwrap

import pytest

from driftscan.core.values import Severity
from driftscan.lint.engine import inspect_source
from driftscan.lint.rules.one_shot_flag import OneShotFlag


def findings(text: str, prefilter: bool = False):
    data = textwrap.dedent(text).lstrip("\n")
    return [f for f in inspect_source(data, "m.py", [OneShotFlag], prefilter=prefilter) if f.code == "DBG104"]


def test_a_flag_around_a_tmp_write_is_reported_on_the_if():
    text = """
    class M:
        def f(self, x):
            y = x
            if not self._done:
                open("/tmp/x.txt", "w").write(str(x))
                self._done = True
    """
    found = findings(text)
    assert [(f.line, f.column, f.severity) for f in found] == [(4, 9, Severity.HIGH)]
    assert "_done" in found[0].message and "open()" in found[0].message
    assert findings(text, prefilter=True) == found


def test_a_debugger_call_under_a_flag_is_reported():
    text = """
    def f(self):
        if not self.stopped:
            self.stopped = True
            breakpoint()
    """
    (finding,) = findings(text)
    assert "breakpoint()" in finding.message


def test_a_debug_named_flag_is_reported_without_an_action():
    text = """
    def f(self):
        if not self.dumped_state:
            self.write_state()
            self.dumped_state = True
    """
    (finding,) = findings(text)
    assert "debug switch" in finding.message


def test_an_action_is_named_in_preference_to_the_flags_name():
    text = """
    def f(self, x):
        if not self._dbg_saved:
            torch.save(x, "/tmp/x.pt")
            self._dbg_saved = True
    """
    (finding,) = findings(text)
    assert "guards torch.save()" in finding.message


@pytest.mark.parametrize("text", [
    # The flag is never set: not one-shot.
    'def f(self, x):\n    if not self._done:\n        torch.save(x, "/tmp/x.pt")\n',
    # A "warn once" around a print: prints do not count.
    "def f(self):\n    if not self._warned:\n        print('slow')\n        self._warned = True\n",
    # Set to False, not True.
    'def f(self, x):\n    if not self._done:\n        torch.save(x, "/tmp/x.pt")\n        self._done = False\n',
    # A positive test is not a one-shot guard.
    'def f(self, x):\n    if self._done:\n        torch.save(x, "/tmp/x.pt")\n        self._done = True\n',
])
def test_guards_that_do_not_run_debug_code_once_are_not_reported(text):
    assert findings(text) == []


def test_one_finding_per_if_however_many_actions():
    text = """
    def f(self, x):
        if not self._done:
            torch.save(x, "/tmp/a.pt")
            torch.save(x, "/tmp/b.pt")
            self._done = True
    """
    assert len(findings(text)) == 1
