"""DBG108 tmp-write: a file written under a hard-coded temporary directory."""

from __future__ import annotations

import textwrap

import pytest

from driftscan.core.values import Severity
from driftscan.lint.engine import inspect_source
from driftscan.lint.rules.tmp_write import TmpWrite


def findings(text: str, prefilter: bool = False):
    data = textwrap.dedent(text).lstrip("\n")
    return [f for f in inspect_source(data, "m.py", [TmpWrite], prefilter=prefilter) if f.code == "DBG108"]


@pytest.mark.parametrize("mode", ["w", "wb", "a", "x", "r+", "ab"])
def test_every_writing_mode_is_reported(mode):
    text = f'open("/tmp/out.txt", "{mode}")\n'
    found = findings(text)
    assert [(f.line, f.column, f.severity, f.artifact_pattern) for f in found] == [
        (1, 1, Severity.MEDIUM, "/tmp/out.txt")]
    assert findings(text, prefilter=True) == found


@pytest.mark.parametrize("text", [
    'open("/tmp/out.txt")\n',
    'open("/tmp/out.txt", "r")\n',
    'open("/tmp/out.txt", mode="rb")\n',
    'open("/home/u/out.txt", "w")\n',
    'open("tmp/out.txt", "w")\n',
    'open("/tmpfiles/out.txt", "w")\n',
])
def test_reads_and_paths_outside_temporary_directories_are_not_reported(text):
    assert findings(text) == []


def test_write_bytes_on_a_path_is_reported_with_the_method_name():
    (finding,) = findings('from pathlib import Path\nPath("/var/tmp/blob.bin").write_bytes(b)\n')
    assert finding.line == 2 and "Path.write_bytes()" in finding.message
    assert finding.artifact_pattern == "/var/tmp/blob.bin"


def test_under_a_one_shot_flag_or_a_shape_condition_it_is_high():
    one_shot = """
    def f(self, x):
        if not self._written:
            open("/tmp/a.txt", "w").write(str(x))
            self._written = True
    """
    shape = """
    def f(x):
        if x.shape[0] == 3:
            open("/tmp/a.txt", "w").write(str(x))
    """
    assert [f.severity for f in findings(one_shot)] == [Severity.HIGH]
    assert [f.severity for f in findings(shape)] == [Severity.HIGH]


def test_under_a_debug_switch_alone_it_stays_medium():
    text = """
    if DEBUG:
        open("/tmp/a.txt", "w").write("x")
    """
    (finding,) = findings(text)
    assert finding.severity == Severity.MEDIUM
    assert "DEBUG" in finding.message


def test_open_passed_straight_to_a_dump_is_left_to_the_dump_rule():
    assert findings('import torch\ntorch.save(x, open("/tmp/x.pt", "wb"))\n') == []


def test_open_inside_another_call_that_is_not_a_dump_is_reported():
    assert len(findings('json.dump(x, open("/tmp/x.json", "w"))\n')) == 1
