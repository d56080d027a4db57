"""fs.paths: undecodable bytes shown as escapes, terminal control sequences and bidirectional
overrides made inert, line breaks escaped where a value must stay on one line."""

from __future__ import annotations

import dataclasses
import json
import os

from driftscan.fs.paths import inert, line_safe, one_line, printable, printable_tree, relpath


def test_printable_escapes_undecodable_bytes():
    name = os.fsdecode(b"caf\xe9.py")  # Latin-1 bytes: a lone surrogate after fsdecode
    shown = printable(name)
    assert shown == "caf\\xe9.py"
    shown.encode("utf-8")  # no surrogate left: JSON and terminals take it
    assert json.loads(json.dumps(shown)) == shown
    assert printable("café.py") == "café.py", "valid UTF-8 is left alone"


def test_printable_tree_reaches_keys_and_nested_values():
    bad = os.fsdecode(b"\xff")
    tree = {bad: [bad, ("x", bad)], "n": 3, "none": None}
    out = printable_tree(tree)
    assert out == {"\\xff": ["\\xff", ["x", "\\xff"]], "n": 3, "none": None}
    json.dumps(out).encode("utf-8")


def test_inert_neutralises_terminal_escapes():
    hostile = "evil\x1b]0;title\x07\x1b[2Jname\x9b31m\x7f"
    shown = inert(hostile)
    assert not any(ord(c) < 0x20 and c not in "\t\n" for c in shown)
    assert not any(0x7F <= ord(c) < 0xA0 for c in shown)
    assert "\\x1b" in shown and "\\x07" in shown and "\\x9b" in shown and "\\x7f" in shown
    assert inert("tab\tand\nnewline") == "tab\tand\nnewline", "tab and newline stay in inert"


def test_inert_escapes_bidi_overrides():
    trojan = "access\u202e level\u2066admin\u2069\u200f"
    shown = inert(trojan)
    for c in ("\u202e", "\u2066", "\u2069", "\u200f"):
        assert c not in shown
    assert "\\u202e" in shown and "\\u2066" in shown
    assert inert("naïve – ünïcode ✓") == "naïve – ünïcode ✓", "ordinary non-ASCII text is kept"


def test_one_line_escapes_every_line_break():
    value = "a\nb\rc\td\x0be\x0cf\x85g\u2028h\u2029i"
    shown = one_line(value)
    assert len(shown.splitlines()) == 1
    assert shown == "a\\x0ab\\x0dc\\x09d\\x0be\\x0cf\\x85g\\u2028h\\u2029i"


def test_relpath_uses_forward_slashes(tmp_path):
    assert relpath(str(tmp_path / "a" / "b.py"), str(tmp_path)) == "a/b.py"
    assert relpath(str(tmp_path), str(tmp_path / "x")) == ".."


@dataclasses.dataclass(frozen=True)
class _Inner:
    name: str
    diff: str


@dataclasses.dataclass(frozen=True)
class _Outer:
    title: str
    items: list
    extra: dict


def test_line_safe_cleans_a_dataclass_copy_but_keeps_diff():
    model = _Outer(title="x\ny", items=[_Inner(name="f\x1b[31m\n", diff="-a\n+b\n")],
                   extra={"path": "p\rq", "diff": "keep\n"})
    safe = line_safe(model)
    assert safe.title == "x\\x0ay"
    assert safe.items[0].name == "f\\x1b[31m\\x0a"
    assert safe.items[0].diff == "-a\n+b\n", "a diff is multi-line by nature"
    assert safe.extra == {"path": "p\\x0dq", "diff": "keep\n"}
    assert model.title == "x\ny", "the original is not changed"
