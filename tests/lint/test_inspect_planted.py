"""The seed scenario: tensor-dump debug blocks planted into an MLA attention model file.

The pristine file is a lookalike in fixtures/data/inspect (ordinary shape conditions, logging);
``plant_debug_blocks`` inserts what the seed describes — a per-forward counter, one-shot
class-level flags, shape-conditional ``torch.save`` to f-string /tmp paths — and
``plant_benign_patch`` an ordinary edit. The same functions plant into the real vLLM file
for the benchmark report.
"""

from __future__ import annotations

import os
import re

from driftscan.lint import inspect_source
from driftscan.core.values import Severity
from fixtures.paths import DATA as FIXTURE_DATA

DATA = os.path.join(FIXTURE_DATA, "inspect")
CLASS = "DeepseekV2MLAAttention"

CLASS_ATTRS = """\
    _nomla_debug = 0
    _dumped_once = False
    _dumped_out_once = False
"""
FORWARD_HEAD = f"""\
        self._nomla_debug += 1
        if not {CLASS}._dumped_once and hidden_states.shape[0] in (7, 13):
            torch.save(hidden_states.detach().cpu(),
                       f"/tmp/nomla_hidden_{{self._nomla_debug}}_{{hidden_states.shape[0]}}.pt")
            torch.save(positions.detach().cpu(), f"/tmp/nomla_positions_{{self._nomla_debug}}.pt")
            {CLASS}._dumped_once = True
"""
FORWARD_TAIL = f"""\
        if not {CLASS}._dumped_out_once:
            if out.shape[0] == 7:
                torch.save(out.detach().float().cpu(), "/tmp/nomla_out_%d.pt" % self._nomla_debug)
                {CLASS}._dumped_out_once = True
        return out
"""
# (code, unique text of the line it must be reported on, artifact pattern)
EXPECTED = [
    ("DBG103", "self._nomla_debug += 1", None),
    ("DBG104", f"if not {CLASS}._dumped_once and", None),
    ("DBG105", f"if not {CLASS}._dumped_once and", None),
    ("DBG101", "torch.save(hidden_states.detach()", "/tmp/nomla_hidden_*_*.pt"),
    ("DBG101", "torch.save(positions.detach()", "/tmp/nomla_positions_*.pt"),
    ("DBG104", f"if not {CLASS}._dumped_out_once:", None),
    ("DBG105", "if out.shape[0] == 7:", None),
    ("DBG101", "torch.save(out.detach()", "/tmp/nomla_out_*.pt"),
]


def plant_debug_blocks(source: str) -> str:
    """Insert the seed's debug code into ``CLASS``: class flags, then the forward body."""
    lines = source.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith(f"class {CLASS}("))
    lines.insert(start + 1, CLASS_ATTRS)
    forward = next(i for i in range(start, len(lines)) if lines[i].startswith("    def forward("))
    body = next(i for i in range(forward, len(lines)) if re.search(r"\)( -> .*)?:\s*$", lines[i])) + 1
    lines.insert(body, FORWARD_HEAD)
    ret = next(i for i in range(body + 1, len(lines)) if lines[i].startswith("        return self.mla_attn("))
    lines[ret] = lines[ret].replace("return self.mla_attn(", "out = self.mla_attn(", 1)
    end = next(i for i in range(ret, len(lines)) if lines[i].rstrip().endswith(")"))
    lines.insert(end + 1, FORWARD_TAIL)
    return "".join(lines)


def plant_benign_patch(source: str) -> str:
    """An ordinary edit: a dict of overrides and a helper using it, after the imports."""
    patch = '''
_MLA_OVERRIDES = {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "rope_theta": 10000.0}


def apply_mla_overrides(config):
    """Fill in MLA settings that older checkpoints do not carry."""
    for key, value in _MLA_OVERRIDES.items():
        if getattr(config, key, None) is None:
            setattr(config, key, value)
    return config

'''
    anchor = source.index("\nlogger = ")
    return source[:anchor] + "\n" + patch + source[anchor:]


def line_of(source: str, text: str) -> int:
    (index,) = [i for i, line in enumerate(source.splitlines(), 1) if text in line]
    return index


def pristine() -> str:
    with open(os.path.join(DATA, "deepseek_like.py"), encoding="utf-8") as f:
        return f.read()


def test_planted_debug_blocks_are_found_at_their_lines():
    planted = plant_debug_blocks(pristine())
    compile(planted, "planted.py", "exec")  # the planted file is valid Python
    findings = inspect_source(planted, "deepseek_v2.py")
    got = {(f.code, f.line): f for f in findings}
    for code, text, pattern in EXPECTED:
        finding = got.get((code, line_of(planted, text)))
        assert finding is not None, f"{code} not reported at {text!r}: {findings}"
        assert finding.severity is Severity.HIGH
        assert finding.artifact_pattern == pattern
    assert {f.code for f in findings} == {"DBG101", "DBG103", "DBG104", "DBG105"}


def test_pristine_and_benign_patch_have_no_debug_findings():
    clean = inspect_source(pristine(), "deepseek_v2.py")
    assert clean == []
    patched = plant_benign_patch(pristine())
    assert patched != pristine()
    assert inspect_source(patched, "deepseek_v2.py") == []
    # The benign patch next to the debug blocks adds nothing either.
    both = plant_benign_patch(plant_debug_blocks(pristine()))
    assert sorted(f.code for f in inspect_source(both)) == sorted(c for c, _, _ in EXPECTED)
