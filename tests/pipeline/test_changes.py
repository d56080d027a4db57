"""driftscan.pipeline.changes on its own: origin matching, byte ranges, and the original of a large file
parsed in a worker (the path the small test wheels never take)."""

from __future__ import annotations

from driftscan.pipeline.changes import _original_findings, changed_ranges, mark_origins
from driftscan.lint import inspect_source, select_rules, load_rules
from driftscan.lint.scan import IN_PROCESS_BYTES

RULES = select_rules(load_rules(plugins=False), ["DBG1"])  # print() (DBG109, opt-in) included
UPSTREAM = "import numpy as np\n\n\ndef keep(f, a):\n    np.save(f, a)\n    print('loaded')\n"
INJECTED = "import torch\n\n\ndef forward(x):\n    torch.save(x, '/tmp/x.pt')\n    return x\n"


def test_origin_is_matched_by_code_and_line_text_not_by_line_number():
    original = UPSTREAM
    current = "\n\n# moved down\n" + UPSTREAM + "\n" + INJECTED
    marked = mark_origins(inspect_source(current, "m.py", RULES), inspect_source(original, "m.py", RULES))
    by_origin = {(f.code, f.origin) for f in marked}
    assert by_origin == {("DBG102", "upstream"), ("DBG109", "upstream"), ("DBG101", "injected")}
    assert all(f.origin in ("upstream", "injected") for f in marked)


def test_changed_ranges_join_close_bytes_and_report_a_length_change():
    old = bytes(1000)
    new = bytearray(old)
    new[10] = 1
    new[20] = 1  # within 16 bytes of the first: one range
    new[500] = 1
    ranges, cut = changed_ranges(old, bytes(new) + b"tail")
    assert ranges == [(10, 21), (500, 501), (1000, 1004)] and not cut
    many = bytes(b if i % 100 else 1 for i, b in enumerate(bytes(100_000)))
    ranges, cut = changed_ranges(bytes(100_000), many, limit=5)
    assert len(ranges) == 5 and cut


def test_a_large_original_is_parsed_in_a_worker_with_the_same_findings():
    filler = "".join(f"\n\ndef f{i}(a):\n    return a + {i}\n" for i in range(IN_PROCESS_BYTES // 30))
    big = UPSTREAM + filler
    assert len(big.encode()) > IN_PROCESS_BYTES
    found = _original_findings(big.encode(), "big.py", RULES)
    assert found is not None
    assert [(f.code, f.line) for f in found] == [(f.code, f.line) for f in inspect_source(big, "big.py", RULES)]
    assert any(f.code == "DBG102" for f in found)


def test_an_original_too_complex_to_parse_leaves_the_origin_unknown():
    bomb = ("x = " + "(" * 5000 + "1" + ")" * 5000 + "\nimport numpy as np\nnp.save('/tmp/a', x)\n").encode()
    assert _original_findings(bomb, "bomb.py", RULES) is None
