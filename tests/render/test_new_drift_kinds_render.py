"""Every renderer shows an edited uv cache archive, possible dumps and a restored file for what
they are: no delete command for possible dumps, the uv cache clean line, no reinstall for restored."""

from __future__ import annotations

import json

from driftscan.pipeline.classify import classify
from driftscan.core.values import Area, Distribution, DriftKind, FileCheck, Target, TargetKind, Verification
from driftscan.render import RENDERERS
from driftscan.report.contract import build_report
from driftscan.snapshot.run import restored_drift


def _report():
    target = Target(TargetKind.VENV, "/v", ("/v/lib/python3.11/site-packages",))
    six = Distribution("six", "1.17.0", "/c/archive-v0/abc/six-1.17.0.dist-info", "/c/archive-v0/abc",
                       installer="uv")
    cache = FileCheck(DriftKind.CACHE_MODIFIED, "/c/archive-v0/abc", "/c", six, {"record": "six-1.17.0.dist-info/RECORD"},
                      {"type": "directory", "edited": [{"path": "six.py", "kind": "modified"}], "index_entries": [],
                       "links": 1}, "uv's cache archive of six 1.17.0 differs from its own RECORD",
                      area=Area.EXTERNAL, remedy_hint="uv cache clean --cache-dir /c six")
    possible = FileCheck(DriftKind.POSSIBLE_DEBUG_ARTIFACTS, "/tmp/d/nomla_*.pt", "/tmp/d", None, {},
                         {"possible_artifacts": ["/tmp/d/nomla_1.pt"], "count": 1, "bytes": 10, "why": "older"},
                         "1 possible dump file; driftscan does not offer to delete files older than the code",
                         area=Area.EXTERNAL, remedy_hint="review them (ls -l -- /tmp/d/nomla_1.pt)")
    installed = Distribution("six", "1.17.0", "/v/lib/python3.11/site-packages/six-1.17.0.dist-info",
                             "/v/lib/python3.11/site-packages", installer="uv")
    restored = FileCheck(DriftKind.RESTORED, "/v/lib/python3.11/site-packages/six.py", "/v/lib/python3.11/site-packages",
                         installed, {}, {"matches_record": True}, "modified in the snapshot; now matches the RECORD")
    drifts = [classify(cache, target), classify(possible, target), restored_drift(restored)]
    return build_report(Verification(target, (installed,), (cache, possible, restored), 3, (), ()), drifts)


def test_every_format_renders_the_new_kinds():
    report = _report()
    for name, render in RENDERERS.items():
        out = render(report)
        assert out, name
        assert not any("rm " in line and "nomla_1.pt" in line for line in out.splitlines()), name
    text = RENDERERS["text"](report)
    assert "remedy: uv cache clean --cache-dir /c six" in text
    assert any("restored" in line and "PRISTINE" in line and line.endswith("six.py") for line in text.splitlines())
    assert "uv pip install" not in text  # a restored file gets no reinstall
    drifts = {d["kind"]: d for d in json.loads(RENDERERS["json"](report))["drifts"]}
    assert drifts["restored"]["remedy"].startswith("nothing to do")
    assert drifts["possible-debug-artifacts"]["artifacts"] == []  # never among the files to delete
    sarif = json.loads(RENDERERS["sarif"](report))
    levels = {r["ruleId"]: r["level"] for r in sarif["runs"][0]["results"]}
    assert levels["drift/restored"] == "note"
