"""JSON pointer changes (RFC 6901) and the unified-diff fallback."""

from __future__ import annotations

import json

from driftscan.formats import jsondiff
from fixtures.modeldirs import CONFIG, KV_CACHE_SCHEME, dump_json


def changes(old, new):
    return list(jsondiff.iter_changes(old, new))


def test_removed_nested_key_is_one_change_with_its_old_value():
    new = json.loads(json.dumps(CONFIG))
    del new["quantization_config"]["kv_cache_scheme"]
    assert changes(CONFIG, new) == [
        {"pointer": "/quantization_config/kv_cache_scheme", "op": "removed", "old": KV_CACHE_SCHEME}]


def test_added_and_changed_keys():
    assert changes({"a": 1, "b": {"c": "x"}}, {"a": 2, "b": {"c": "x", "d": None}}) == [
        {"pointer": "/a", "op": "changed", "old": 1, "new": 2},
        {"pointer": "/b/d", "op": "added", "new": None},
    ]


def test_pointer_escaping_follows_rfc_6901():
    old = {"a/b": {"m~n": 1}}
    new = {"a/b": {"m~n": 2}}
    [change] = changes(old, new)
    assert change["pointer"] == "/a~1b/m~0n"
    assert [t.replace("~1", "/").replace("~0", "~") for t in change["pointer"].split("/")[1:]] == ["a/b", "m~n"]


def test_arrays_by_index():
    assert changes({"x": [1, 2, 3]}, {"x": [1, 5]}) == [
        {"pointer": "/x/1", "op": "changed", "old": 2, "new": 5},
        {"pointer": "/x/2", "op": "removed", "old": 3},
    ]
    assert changes([], ["lm_head"]) == [{"pointer": "/0", "op": "added", "new": "lm_head"}]


def test_types_matter_even_where_python_says_equal():
    # 1 == 1.0 == True in Python; a config loader sees three different values.
    assert [c["op"] for c in changes({"v": 1}, {"v": 1.0})] == ["changed"]
    assert [c["op"] for c in changes({"v": 1}, {"v": True})] == ["changed"]
    assert changes({"v": float("nan")}, {"v": float("nan")}) == []


def test_whole_document_type_change_uses_the_root_pointer():
    assert changes({"a": 1}, [1]) == [{"pointer": "", "op": "changed", "old": {"a": 1}, "new": [1]}]


def test_changes_are_capped_but_counted():
    kept, total = jsondiff.json_changes({str(i): i for i in range(500)}, {}, limit=10)
    assert len(kept) == 10 and total == 500


def test_describe_json_gives_changes_not_a_diff():
    change = jsondiff.describe(dump_json({"a": 1}), dump_json({"a": 2}), "config.json")
    assert change.json_changes == ({"pointer": "/a", "op": "changed", "old": 1, "new": 2},)
    assert change.diff is None and change.total == 1
    assert jsondiff.summary(change) == "1 JSON change: changed /a"


def test_unparsable_json_falls_back_to_a_diff():
    change = jsondiff.describe(b'{"a": 1}\n', b'{"a": 1,,}\n', "config.json")
    assert change.json_changes == ()
    assert change.diff is not None and '-{"a": 1}' in change.diff and '+{"a": 1,,}' in change.diff


def test_reformatted_json_with_equal_content_shows_a_diff():
    change = jsondiff.describe(b'{"a": 1}', b'{\n  "a": 1\n}\n', "x.json")
    assert change.total == 0 and change.diff and change.diff.startswith("--- a/x.json\n+++ b/x.json\n")


def test_text_diff_is_unified_and_capped():
    old = "".join(f"line {i}\n" for i in range(1000))
    new = "".join(f"line {i} edited\n" for i in range(1000))
    change = jsondiff.describe(old.encode(), new.encode(), "vocab.txt")
    lines = change.diff.splitlines()
    assert lines[0] == "--- a/vocab.txt" and lines[1] == "+++ b/vocab.txt"
    assert len(lines) == jsondiff.MAX_DIFF_LINES + 1
    assert lines[-1].endswith("more diff lines not shown (the cap is 300 lines per file)")


def test_binary_content_gets_neither():
    assert jsondiff.describe(b"\x00\x01", b"\x00\x02", "tiktoken.model") == jsondiff.Change()
    assert jsondiff.describe(b"\xff\xfe", b"ok", "a.txt") == jsondiff.Change()
