"""Rule loading (built-ins, entry points, config modules) and ruff-style selection."""

from __future__ import annotations

import sys

import pytest

from driftscan.core.errors import ConfigError
from driftscan.lint import inspect_source, load_rules, scan_paths, select_rules
from driftscan.lint.registry import ENTRY_POINT_GROUP, validate
from driftscan.lint.testing import check_rule_examples

BUILTIN = load_rules(plugins=False)

PLUGIN_SOURCE = '''
from driftscan.lint import triggers
from driftscan.lint.rule import Invalid, Rule, Valid
from driftscan.core.values import Severity


class NoHardcodedCuda(Rule):
    """Calls .cuda() with a literal device index."""

    CODE = "ACME101"
    NAME = "hardcoded-cuda-index"
    MESSAGE = "hard-coded CUDA device index"
    SEVERITY = Severity.MEDIUM
    TRIGGER = triggers.Trigger(rb"\\.cuda\\(\\s*\\d", (b".cuda(",))
    VALID = [Valid("x.cuda()\\n"), Valid("x.cuda(device)\\n")]
    INVALID = [Invalid("y = x.cuda(1)\\n", line=1, column=5)]

    def visit_Call(self, node):
        import libcst as cst
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "cuda":
            if node.args and isinstance(node.args[0].value, cst.Integer):
                self.report(node)
'''


def selected(select=(), ignore=()):
    return [r.CODE for r in select_rules(BUILTIN, select, ignore)]


def test_builtin_rules_are_sorted_and_complete():
    assert [r.CODE for r in BUILTIN] == sorted(r.CODE for r in BUILTIN)
    assert len(BUILTIN) == 14


@pytest.mark.parametrize(
    ("select", "ignore", "expected"),
    [
        ((), (), "default"),  # every rule enabled by default: DBG109 (print) only when selected
        (("DBG1",), ("DBG105",), [c for c in "DBG101 DBG102 DBG103 DBG104 DBG106 DBG107 DBG108 DBG109".split()]),
        (("DBG105",), ("DBG1",), ["DBG105"]),  # the longer prefix wins
        (("DBG10",), ("DBG1",), "DBG101 DBG102 DBG103 DBG104 DBG105 DBG106 DBG107 DBG108 DBG109".split()),
        ((), ("DBG1",), ["DBG001", "DBG002", "DBG003", "DBG004"]),
        (("DBG1",), ("DBG1",), []),  # a tie: ignore wins
        (("print-call", "debugger-call"), (), ["DBG106", "DBG109"]),  # names
        (("DBG1",), ("print-call", "tensor-save-call"), "DBG101 DBG103 DBG104 DBG105 DBG106 DBG107 DBG108".split()),
        (("ALL",), ("DBG0",), "DBG101 DBG102 DBG103 DBG104 DBG105 DBG106 DBG107 DBG108 DBG109".split()),
        (("dbg106",), (), ["DBG106"]),  # codes are case-insensitive
    ],
)
def test_selection_longest_prefix_wins(select, ignore, expected):
    want = [r.CODE for r in BUILTIN if r.CODE not in ("DBG006", "DBG109")] if expected == "default" else expected
    assert selected(select, ignore) == want


def test_unknown_selectors_are_config_errors():
    with pytest.raises(ConfigError, match="DBG9, no-such-rule"):
        selected(("DBG9",), ("no-such-rule",))


def test_selection_applies_to_scan(tmp_path):
    (tmp_path / "m.py").write_text("import pdb\nbreakpoint()\nprint(1)\n")
    result = scan_paths([str(tmp_path)], select=["DBG1"], ignore=["DBG109", "debugger-import"], jobs=1)
    assert [f.code for _, f in result.findings] == ["DBG106"]
    assert result.rules == ("DBG101", "DBG102", "DBG103", "DBG104", "DBG105", "DBG106", "DBG108")


@pytest.fixture()
def plugin_module(tmp_path, monkeypatch):
    (tmp_path / "acme_rules.py").write_text(PLUGIN_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "acme_rules"
    sys.modules.pop("acme_rules", None)


def test_rules_from_a_config_module(plugin_module, tmp_path):
    rules = load_rules([plugin_module], plugins=False)
    assert [r.CODE for r in rules][0] == "ACME101"  # sorted by code with the built-ins
    rule = rules[0]
    check_rule_examples(rule)  # a plugin author's one-line test
    assert load_rules([f"{plugin_module}:NoHardcodedCuda"], plugins=False)[0] is rule
    (tmp_path / "t.py").write_text("a = b.cuda(0)\n")
    result = scan_paths([str(tmp_path)], select=["ACME"], extra_rule_modules=[plugin_module], jobs=2)
    assert [(p.endswith("t.py"), f.code, f.line, f.column) for p, f in result.findings] == [(True, "ACME101", 1, 5)]


def test_rules_from_entry_points(plugin_module, tmp_path, monkeypatch):
    dist = tmp_path / "acme_rules-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-rules\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nacme = acme_rules:NoHardcodedCuda\n")
    codes = [r.CODE for r in load_rules()]
    assert "ACME101" in codes
    assert "ACME101" not in [r.CODE for r in load_rules(plugins=False)]


def test_broken_plugin_is_a_config_error(tmp_path, monkeypatch):
    dist = tmp_path / "broken-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nbad = no_such_module_xyz:Rule\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match="rule plugin 'bad'"):
        load_rules()
    with pytest.raises(ConfigError, match="could not be loaded"):
        load_rules(["no_such_module_xyz"], plugins=False)


def test_malformed_and_clashing_rules_are_rejected(plugin_module):
    from acme_rules import NoHardcodedCuda

    class BadCode(NoHardcodedCuda):
        CODE = "acme-1"

    class SameCode(NoHardcodedCuda):
        NAME = "other-name"

    with pytest.raises(ConfigError, match="is not like 'DBG101'"):
        validate([BadCode])
    with pytest.raises(ConfigError, match="both use 'ACME101'"):
        validate([NoHardcodedCuda, SameCode])
    assert validate([NoHardcodedCuda, NoHardcodedCuda]) == [NoHardcodedCuda]


def test_rules_defined_in_a_function_scan_in_process(tmp_path, plugin_module):
    from acme_rules import NoHardcodedCuda

    class Local(NoHardcodedCuda):
        CODE = "LOC001"
        NAME = "local-rule"

    (tmp_path / "a.py").write_text("x.cuda(3)\n")
    (tmp_path / "b.py").write_text("y = 1\n")
    result = scan_paths([str(tmp_path)], rules=[Local], jobs=2)
    assert [f.code for _, f in result.findings] == ["LOC001"]
    assert [f.code for f in inspect_source("x.cuda(3)\n", rules=[Local])] == ["LOC001"]
