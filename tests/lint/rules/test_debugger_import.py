"""DBG107 debugger-import: imports of debugger modules, absolute only, by top-level package."""

from __future__ import annotations

import pytest

from driftscan.core.values import Severity
from driftscan.lint.engine import inspect_source
from driftscan.lint.rules.debugger_import import DebuggerImport


def findings(text: str, prefilter: bool = False):
    return [f for f in inspect_source(text, "m.py", [DebuggerImport], prefilter=prefilter) if f.code == "DBG107"]


@pytest.mark.parametrize("module", ["pdb", "ipdb", "pudb", "debugpy", "pydevd", "wdb", "web_pdb", "remote_pdb"])
def test_every_documented_module_is_reported(module):
    text = f"import {module}\n"
    (finding,) = findings(text)
    assert (finding.line, finding.column, finding.severity) == (1, 1, Severity.MEDIUM)
    assert module in finding.message
    assert findings(text, prefilter=True) == [finding]


def test_a_submodule_is_reported_by_its_top_level_package():
    (finding,) = findings("from debugpy.server import api\n")
    assert "debugpy" in finding.message and "server" not in finding.message


def test_an_aliased_import_is_still_reported():
    assert [f.line for f in findings("import os\nimport pdb as debugger\n")] == [2]


@pytest.mark.parametrize("text", [
    "from . import pdb\n",
    "from .pdb import parse\n",
    "from ..ipdb import x\n",
    "import pdbx\n",
    "import mypdb\n",
    "from mypkg import pdb\n",
    "x = 'import pdb'\n",
])
def test_relative_lookalike_and_quoted_imports_are_not_reported(text):
    assert findings(text) == []
