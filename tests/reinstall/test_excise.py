"""Statement-level removal of injected debug code (driftscan.reinstall.excise), on the rules' own findings."""

from __future__ import annotations

import ast

from driftscan.reinstall.excise import excise
from driftscan.lint import inspect_source


def cut(base: str, ours: str):
    found = [(f.line, f.column) for f in inspect_source(ours, "m.py") if f.code.startswith("DBG1")]
    assert found, "the rules find no debug code in the example"
    return excise(base, ours, found)


BASE = '''import torch


def forward(self, x):
    y = x * 2
    return y
'''


def test_the_finding_s_statement_and_what_only_it_used_go_the_rest_stays():
    ours = '''import os
import torch


def forward(self, x):
    path = os.path.join("/tmp", f"x_{self.step}.pt")
    y = x * 2
    y = y.clamp(0, 1)
    torch.save(y, path)
    return y
'''
    result = cut(BASE, ours)
    assert result.refused is None, result
    assert result.text == BASE.replace("    y = x * 2\n", "    y = x * 2\n    y = y.clamp(0, 1)\n")
    assert [(r.start, r.text) for r in result.removed] == [
        (1, "import os"), (6, 'path = os.path.join("/tmp", f"x_{self.step}.pt")'), (9, "torch.save(y, path)")]
    assert result.kept == ((8, 8),)


def test_an_assignment_with_an_effect_stays_even_if_only_debug_code_read_it():
    base = 'def load(cfg):\n    return cfg\n'
    ours = ('import json\n\n\ndef load(cfg):\n    scheme = cfg.pop("kv_cache_scheme", None)\n'
            '    json.dump(scheme, open("/tmp/scheme.json", "w"))\n    return cfg\n')
    result = cut(base, ours)
    assert result.text == 'def load(cfg):\n    scheme = cfg.pop("kv_cache_scheme", None)\n    return cfg\n', result
    assert 'cfg.pop("kv_cache_scheme", None)' in result.text and "json" not in result.text
    ast.parse(result.text)


def test_a_guard_whose_body_keeps_a_fix_stays_with_the_fix():
    ours = BASE.replace("    y = x * 2\n", '''    y = x * 2
    if x.shape[0] == 7:
        torch.save(x, "/tmp/a.pt")
        y = y.clamp(0, 1)
''')
    result = cut(BASE, ours)
    assert result.text is not None, result
    assert "torch.save" not in result.text and "y = y.clamp(0, 1)" in result.text and "if x.shape[0] == 7:" in result.text


def test_a_removed_helper_takes_its_calls_along():
    ours = BASE.replace("    return y\n", "    _dump(y)\n    return y\n") + '''

def _dump(t):
    torch.save(t, "/tmp/t.pt")
'''
    result = cut(BASE, ours)
    assert result.text == BASE, result


def test_a_statement_holding_an_original_line_is_never_removed():
    base = 'import torch\n\n\ndef f(x, path):\n    torch.save(\n        x,\n        path,\n    )\n'
    ours = base.replace("        path,\n", '        "/tmp/x.pt",\n')
    result = cut(base, ours)
    assert result.text is None and result.left and "holds lines of the original" in result.left[0][1]


def test_a_result_that_would_not_parse_is_refused():
    base = 'import torch\n\n\ndef f(x):\n    if x:\n        return 1\n    else:\n        pass\n'
    ours = base.replace("        pass\n", '        torch.save(x, "/tmp/x.pt")\n')
    result = cut(base, ours)
    assert result.text is None and "does not parse" in (result.refused or ""), result


def test_a_line_shared_by_debug_code_and_a_kept_statement_is_refused():
    ours = BASE.replace("    y = x * 2\n", '    y = x * 2; torch.save(x, "/tmp/a.pt")\n')
    result = cut(BASE, ours)
    assert result.text is None and "holds both" in (result.refused or ""), result


MODEL = 'import torch\n\n\nclass Model:\n    name = "m"\n\n    def forward(self, x):\n        y = x\n        return y\n'


def with_flag(body: str) -> str:
    """MODEL with a class-level one-shot flag and ``body`` in place of forward's first line."""
    return MODEL.replace('    name = "m"\n', '    name = "m"\n    _dumped_once = False\n').replace("        y = x\n", body)


def test_a_one_shot_guard_that_stays_keeps_the_flags_it_reads():
    base = MODEL
    ours = with_flag('''        y = x
        if not Model._dumped_once:
            torch.save(x, "/tmp/x.pt")
            Model._dumped_once = True
            y = y.clamp(0, 1)
''')
    result = cut(base, ours)
    assert result.text is not None, result
    assert "torch.save" not in result.text
    for stays in ("_dumped_once = False", "if not Model._dumped_once:", "Model._dumped_once = True", "y.clamp(0, 1)"):
        assert stays in result.text, stays


def test_a_one_shot_guard_of_only_debug_code_goes_with_its_flags():
    base = MODEL
    ours = with_flag('''        y = x
        # one dump, then never again
        if not Model._dumped_once:
            torch.save(x, "/tmp/x.pt")
            Model._dumped_once = True
''')
    result = cut(base, ours)
    assert result.text == base, result


def test_crlf_lines_are_matched_and_a_lone_carriage_return_is_refused():
    ours = BASE.replace("    y = x * 2\n", '    y = x * 2\n    torch.save(y, "/tmp/y.pt")\n')
    result = cut(BASE.replace("\n", "\r\n"), ours.replace("\n", "\r\n"))
    assert result.text == BASE.replace("\n", "\r\n"), result
    lone = ours.replace("import torch\n", "import torch\r# a comment after a lone CR\n")
    result = cut(BASE, lone)
    assert result.text is None and "carriage return" in (result.refused or "")


def test_a_name_in_prose_or_a_pattern_is_no_use_but_a_name_string_is():
    """Kept code that mentions "config.json" in a message does not keep the ``import json`` and the
    copy only the removed dump used; ``getattr(self, "_calls")`` does keep the flag it names."""
    base = 'def load(cfg):\n    print("reading the model\'s config.json")\n    return cfg\n'
    ours = ('import json\n\n\ndef load(cfg):\n    print("reading the model\'s config.json")\n'
            '    cfg.pop("kv_cache_scheme", None)\n    snapshot = dict(cfg)\n'
            '    json.dump(snapshot, open("/tmp/cfg.json", "w"))\n    return cfg\n')
    result = cut(base, ours)
    assert result.text == base.replace("    return cfg\n", '    cfg.pop("kv_cache_scheme", None)\n    return cfg\n'), \
        result
    base2 = "class A:\n    def f(self, x):\n        return x\n"
    ours2 = ('class A:\n    _calls = 0\n\n    def f(self, x):\n        n = getattr(self, "_calls")\n'
             '        torch.save(x, "/tmp/x.pt")\n        return x\n')
    result2 = cut(base2, ours2)
    assert result2.text is not None and "_calls = 0" in result2.text and "torch.save" not in result2.text, result2


def test_a_definition_another_module_reads_stays():
    ours = BASE.replace("    return y\n", '    RETRIES = 5\n    torch.save(y, f"/tmp/y_{RETRIES}.pt")\n    return y\n')
    assert "RETRIES" not in cut(BASE, ours).text
    found = [(f.line, f.column) for f in inspect_source(ours, "m.py") if f.code.startswith("DBG1")]
    kept = excise(BASE, ours, found, keep_names={"RETRIES"})
    assert kept.text is not None and "RETRIES = 5" in kept.text and "torch.save" not in kept.text, kept


def test_a_whole_one_shot_block_goes_directory_flag_and_all():
    base = 'import torch\n\n\nclass L:\n    def forward(self, h, r):\n        h = r + h\n        return h\n'
    ours = ('import os\nimport torch\n\n\nclass L:\n    _dumped_once = False\n\n    def forward(self, h, r):\n'
            '        h = r + h.to(r.dtype)  # wanted fix\n'
            '        if not L._dumped_once and h.shape[1] > 1:\n'
            '            os.makedirs("/tmp/dumps", exist_ok=True)\n'
            '            torch.save(h.detach().cpu(), f"/tmp/dumps/layer{self.layer_idx}.pt")\n'
            '            L._dumped_once = True\n'
            '        return h\n')
    result = cut(base, ours)
    assert result.text == base.replace("h = r + h\n", "h = r + h.to(r.dtype)  # wanted fix\n"), result
    assert any("guard" in r.reason for r in result.removed)


def test_a_global_one_shot_at_module_level_goes_with_its_declaration():
    base = 'def f(x):\n    return x\n'
    ours = ('import json\n\n_DUMPED = False\n\n\ndef f(x):\n    global _DUMPED\n    if not _DUMPED:\n'
            '        _DUMPED = True\n        json.dump(x, open("/tmp/x.json", "w"))\n    return x\n')
    assert cut(base, ours).text == base


def test_a_counter_a_finding_points_at_that_kept_code_reads_is_left_never_deleted():
    base = 'import torch\n\n\ndef f(x, y):\n    return y\n'
    ours = base.replace("    return y\n", '    y = y + 1\n    torch.save(x, f"/tmp/x_{y}.pt")\n    return y\n')
    assert "y = y + 1" in cut(base, ours).text  # the rules call it no debug counter: kept code returns it
    result = excise(base, ours, [(5, 5), (6, 5)])  # were a finding to point at it all the same
    assert result.text is None and result.left, result
    assert any("code that stays reads" in why for _, why in result.left)
    assert "y = y + 1" not in " ".join(r.text for r in result.removed)


def test_definitions_kept_code_in_the_file_reads_stay():
    base = 'import torch\n\n\nclass A:\n    def f(self, x):\n        return x\n'
    ours = base.replace("        return x\n", '        self.enabled = True\n        RETRIES = 5\n'
                        '        torch.save(x, f"/tmp/x_{self.enabled}_{RETRIES}.pt")\n'
                        '        return x if self.enabled else RETRIES\n')
    result = cut(base, ours)
    assert result.text is not None and "torch.save" not in result.text, result
    assert "self.enabled = True" in result.text and "RETRIES = 5" in result.text


def test_to_is_pure_only_on_a_chain_that_already_copied():
    ours = BASE.replace("    return y\n", '    moved = self.model.to("cuda")\n    t = y.detach().cpu().to(torch.float32)\n'
                        '    torch.save((moved, t), "/tmp/t.pt")\n    return y\n')
    result = cut(BASE, ours)
    assert result.text == BASE.replace("    return y\n", '    moved = self.model.to("cuda")\n    return y\n'), result


def test_a_scaffolding_only_change_is_put_back_to_the_original_lines():
    base = 'import torch\n\n\ndef f(self, x):\n    x = x + 1\n    return self.attn(x)\n'
    ours = base.replace("    return self.attn(x)\n", '    out = self.attn(x)\n    torch.save(out, "/tmp/o.pt")\n'
                        '    return out\n')
    result = cut(base, ours)
    assert result.text == base, result
    assert [r.start for r in result.removed if "scaffolding" in r.reason] == [6], result.removed
    assert result.kept == ()


def test_a_temporary_that_is_not_read_first_is_not_inlined():
    """``out = g(x); return h(y) + out``: inlining would call g after h: not the original."""
    base = 'import torch\n\n\ndef f(x, y):\n    return h(y) + g(x)\n'
    ours = base.replace("    return h(y) + g(x)\n", '    out = g(x)\n    torch.save(out, "/tmp/o.pt")\n'
                        '    return h(y) + out\n')
    result = cut(base, ours)
    assert result.text is not None and "out = g(x)" in result.text, result


def test_an_if_with_an_effect_in_its_test_is_not_removed():
    base = 'import torch\n\n\ndef f(cfg, x):\n    return x\n'
    ours = base.replace("    return x\n", '    if cfg.pop("dump", False):\n        torch.save(x, "/tmp/x.pt")\n'
                        '    return x\n')
    result = cut(base, ours)
    assert result.text is None or 'cfg.pop("dump", False)' in result.text, result


def chain(n: int) -> str:
    body = "".join(f"    a{i} = a{i - 1} + 1\n" if i else "    a0 = x\n" for i in range(n))
    return BASE.replace("    return y\n", body + f'    torch.save(a{n - 1}, "/tmp/a.pt")\n    return y\n')


def test_a_thousand_statement_chain_feeding_one_dump_goes_whole():
    ours = chain(1000)
    result = cut(BASE, ours)
    assert result.text == BASE, result.refused
    assert len(result.removed) == 1001


def test_beyond_the_budget_the_file_is_refused(monkeypatch):
    import driftscan.reinstall.excise as module

    monkeypatch.setattr(module, "MAX_WORK", 200)
    result = cut(BASE, chain(300))
    assert result.text is None and "more than the 200 steps" in (result.refused or ""), result
    monkeypatch.setattr(module, "MAX_STATEMENTS", 100)
    result = cut(BASE, chain(300))
    assert result.text is None and "more than the 100" in (result.refused or ""), result


def test_a_module_level_name_is_no_temporary():
    """``OUT = t`` after ``t = f()`` at module level also makes ``t`` an attribute of the module."""
    base = 'import torch\n\nOUT = f()\n'
    ours = 'import torch\n\nt = f()\ntorch.save(t, "/tmp/t.pt")\nOUT = t\n'
    result = cut(base, ours)
    assert result.text == 'import torch\n\nt = f()\nOUT = t\n', result


def test_a_debug_loop_goes_with_its_break_an_if_with_an_else_is_refused():
    base = 'import torch\n\n\ndef f(x):\n    return x\n'
    loop = base.replace("    return x\n", '    while x.shape[0] == 7:\n        torch.save(x, "/tmp/a.pt")\n'
                        '        break\n    return x\n')
    assert cut(base, loop).text == base
    branches = base.replace("    return x\n", '    if x.shape[0] == 7:\n        torch.save(x, "/tmp/a.pt")\n'
                            '    else:\n        x = x.clamp(0, 1)\n    return x\n')
    result = cut(base, branches)
    assert result.text is None and result.refused, result


def test_an_added_if_on_a_read_only_test_goes_with_the_dump_it_guards():
    base = 'import torch\n\n\ndef rename(name):\n    return name\n'
    ours = base.replace("    return name\n", '    if name.endswith(".weight"):\n        torch.save(name, "/tmp/n.pt")\n'
                        '    return name\n')
    assert cut(base, ours).text == base


def test_a_file_name_in_a_string_is_no_use_of_its_extension_s_module():
    base = 'NAME = "params.json"\n\n\ndef load(cfg):\n    return cfg\n'
    ours = ('import json\nNAME = "params.json"\n\n\ndef load(cfg):\n    cfg.pop("kv_cache_scheme", None)\n'
            '    json.dump(cfg, open("/tmp/cfg.json", "w"))\n    return cfg\n')
    result = cut(base, ours)
    assert result.text == base.replace("    return cfg\n", '    cfg.pop("kv_cache_scheme", None)\n    return cfg\n'), result
