"""The shared words of the debug-code rules: marker words, dump and debugger names, and their
agreement with the byte triggers that must stay sound for them."""

from __future__ import annotations

import pytest

from driftscan.lint import triggers, vocabulary
from driftscan.lint.triggers import Memo


@pytest.mark.parametrize(("text", "words"), [
    ("_nomlaDebugCount", ["nomla", "Debug", "Count"]),
    ("DEBUG_DUMP", ["DEBUG", "DUMP"]),
    ("HTTPServer2", ["HTTP", "Server", "2"]),
    ("dumped_once", ["dumped", "once"]),
])
def test_word_re_splits_identifiers_into_words(text, words):
    assert vocabulary.WORD_RE.findall(text) == words


def test_marker_words_are_lowercase_whole_words():
    assert all(w == w.lower() for w in vocabulary.MARKER_WORDS)
    assert "dumpling" not in vocabulary.MARKER_WORDS


@pytest.mark.parametrize("name", sorted(vocabulary.DUMP_FUNCTIONS))
def test_every_dump_function_is_seen_by_the_dump_trigger(name):
    module, _, func = name.rpartition(".")
    assert triggers.DUMP.matches(f"{name}(x, p)\n".encode(), Memo())
    assert triggers.DUMP.matches(f"from {module} import {func}\n".encode(), Memo())


def test_dump_functions_name_a_path_argument_position_and_keyword():
    for position, keyword in vocabulary.DUMP_FUNCTIONS.values():
        assert position in (0, 1) and keyword.isidentifier()
    assert vocabulary.DUMP_FUNCTIONS["torch.save"] == (1, "f")


@pytest.mark.parametrize("name", sorted(vocabulary.DEBUGGER_FUNCTIONS | vocabulary.DEBUGGER_METHODS))
def test_every_debugger_name_is_seen_by_the_debugger_trigger(name):
    assert triggers.DEBUGGER.matches(f"{name}()\n".encode(), Memo())


@pytest.mark.parametrize("module", sorted(vocabulary.DEBUGGER_MODULES))
def test_every_debugger_module_is_seen_by_the_module_trigger(module):
    assert triggers.DEBUGGER_MODULES.matches(f"import {module}\n".encode(), Memo())


def test_shape_words_are_the_ones_the_shape_guard_uses():
    assert vocabulary.SHAPE_ATTRS == triggers.SHAPE_ATTRS
    assert vocabulary.SHAPE_METHODS == triggers.SHAPE_METHODS


def test_every_debug_action_callee_is_in_the_shape_guards_list():
    last = {n.rpartition(".")[2] for n in set(vocabulary.DUMP_FUNCTIONS) | vocabulary.DEBUGGER_FUNCTIONS}
    assert last | vocabulary.DEBUGGER_METHODS | {"open", "print"} <= triggers.ACTION_CALLEES


def test_each_file_problem_has_one_built_in_rule_and_a_string_one_is_still_looked_up():
    """The file-level rules name their problem with the enum; a rule that names it with the plain
    word (a plug-in written against earlier driftscan) is found by the engine all the same."""
    from driftscan.lint import default_rules
    from driftscan.lint.engine import _file_rules
    from driftscan.lint.vocabulary import NOT_INSPECTED, FileProblem

    built_in = [r for r in default_rules() if r.FILE_PROBLEM]
    assert sorted(r.FILE_PROBLEM for r in built_in) == sorted(FileProblem)
    assert all(type(r.FILE_PROBLEM) is FileProblem for r in built_in)
    assert set(NOT_INSPECTED) == set(FileProblem) - {FileProblem.NOQA}
    [parse] = [r for r in built_in if r.FILE_PROBLEM is FileProblem.PARSE]
    plain = type("PlainParse", (parse,), {"FILE_PROBLEM": "parse"})
    assert _file_rules([plain])[FileProblem.PARSE] is plain
