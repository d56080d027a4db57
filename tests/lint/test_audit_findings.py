"""The seed scenario end to end: debug code planted into an installed model file, dumps on disk."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

from driftscan import audit
from driftscan.api import plan
from fixtures import venvs
from fixtures.harness import run_cli
from fixtures.wheels import build_wheel
from fixtures.paths import DATA

HERE = os.path.dirname(__file__)
MODEL_FILE = "fakevllm/model_executor/models/deepseek_v2.py"


def _planting():
    spec = importlib.util.spec_from_file_location("planting", os.path.join(HERE, "test_inspect_planted.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def seeded(tmp_path, wheelhouse):
    planting = _planting()
    pristine = open(os.path.join(DATA, "inspect/deepseek_like.py")).read()
    wheel = build_wheel(tmp_path / "wheels", "fakevllm", "0.33.0",
                        {"fakevllm/__init__.py": "", MODEL_FILE: pristine})
    venv = venvs.make_pip_venv(tmp_path / "venv")
    venvs.pip_install(venv, "--no-index", "--find-links", str(wheel.parent), "fakevllm")
    site = venvs.site_packages_of(venv)
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    planted = planting.plant_debug_blocks(pristine).replace('"/tmp/', f'"{dumps}/')
    (site / MODEL_FILE).write_text(planted)
    (site / "fakevllm/overrides.py").write_text(  # a benign added module: no findings expected
        "OVERRIDES = {'max_model_len': 4096}\n\n\ndef apply(config):\n    config.update(OVERRIDES)\n    return config\n")
    for name, size in [("nomla_hidden_1_7.pt", 1000), ("nomla_hidden_2_13.pt", 2000),
                       ("nomla_positions_1.pt", 300), ("nomla_out_3.pt", 700), ("unrelated.txt", 5)]:
        (dumps / name).write_bytes(b"\0" * size)
    return venv, site, dumps, planted


def test_audit_finds_the_debug_block_and_its_dumps(seeded):
    venv, site, dumps, planted = seeded
    report = audit(venv=str(venv))
    by_rel = {d.relpath: d for d in report.drifts if d.scope.value != "external"}
    model = by_rel[MODEL_FILE]
    assert model.kind.value == "modified"
    codes = {f.code for f in model.findings}
    assert {"DBG101", "DBG103", "DBG104", "DBG105"} <= codes
    counter = next(f for f in model.findings if f.code == "DBG103")
    assert planted.splitlines()[counter.line - 1].strip() == "self._nomla_debug += 1"
    assert by_rel["fakevllm/overrides.py"].kind.value == "added"
    assert by_rel["fakevllm/overrides.py"].findings == []  # a benign patch gets no findings

    dumps_found = {d.actual["pattern"]: d for d in report.drifts if d.kind.value == "debug-artifacts"}
    assert set(dumps_found) == {f"{dumps}/nomla_hidden_*_*.pt", f"{dumps}/nomla_positions_*.pt",
                                f"{dumps}/nomla_out_*.pt"}
    hidden = dumps_found[f"{dumps}/nomla_hidden_*_*.pt"]
    assert hidden.scope.value == "external" and hidden.survives_reinstall is True
    assert hidden.artifacts == [f"{dumps}/nomla_hidden_1_7.pt", f"{dumps}/nomla_hidden_2_13.pt"]
    assert hidden.actual["bytes"] == 3000
    assert hidden.actual["written_by"][0]["path"] == str(site / MODEL_FILE)
    assert hidden.remedy.startswith("rm ")


def test_plan_wipes_the_model_file_and_keeps_the_dumps(seeded):
    venv, site, dumps, _ = seeded
    result = plan(["fakevllm"], venv=str(venv))
    status = {i.relpath: i.status for i in result.items}
    assert status[MODEL_FILE] == "WIPED"
    assert status["fakevllm/overrides.py"] == "SURVIVES"
    assert [i.status for i in result.items if i.kind == "debug-artifacts"] == ["SURVIVES"] * 3
    deletes = [s for s in result.steps if s.step.startswith("review, then delete")]
    assert len(deletes) == 3 and all(s.command.startswith("rm ") for s in deletes)


def test_select_and_ignore_apply_to_audit_findings(seeded):
    venv, *_ = seeded
    report = audit(venv=str(venv), select=["DBG103"])
    model = next(d for d in report.drifts if d.relpath == MODEL_FILE)
    assert {f.code for f in model.findings} == {"DBG103"}
    # Selection picks the findings shown, not the drift: the dumps are still found.
    assert len([d for d in report.drifts if d.kind.value == "debug-artifacts"]) == 3


def test_scan_cli_json_and_exit_bits(seeded):
    venv, site, dumps, _ = seeded
    proc = run_cli("scan", str(site / "fakevllm"), "--format", "json")
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data) >= {"findings", "errors"}
    assert set(data["findings"][0]) >= {"path", "code", "name", "severity", "line", "column", "message"}
    assert {f["code"] for f in data["findings"]} >= {"DBG101", "DBG103"}
    high_only = run_cli("scan", str(site / "fakevllm/overrides.py"), "--fail-on", "high")
    assert high_only.returncode == 0
    ignored = run_cli("scan", str(site / "fakevllm"), "--ignore", "DBG")
    assert ignored.returncode == 0 and ignored.stdout.startswith("0 findings")
    missing = run_cli("scan", str(site / "nope"))
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_a_drifted_file_that_no_longer_parses_is_a_finding(seeded):
    venv, site, *_ = seeded
    (site / "fakevllm/__init__.py").write_text("def broken(:\n    pass\n")  # no debug-like tokens at all
    report = audit(venv=str(venv))
    init = next(d for d in report.drifts if d.relpath == "fakevllm/__init__.py")
    assert [f.code for f in init.findings] == ["DBG001"]
    assert "will not import" in init.findings[0].message
    ignored = audit(venv=str(venv), ignore=["DBG001"])
    assert all(f.code != "DBG001" for d in ignored.drifts for f in d.findings)


def test_added_files_beyond_the_limit_skip_only_the_syntax_check(tmp_path, monkeypatch):
    from driftscan.lint import drifts as findings

    site = tmp_path / "site"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg/broken.py").write_text("def broken(:\n")
    (site / "pkg/dump.py").write_text("import torch\ndef forward(x):\n    torch.save(x, '/tmp/x.pt')\n")
    (site / "pkg/ok.py").write_text("X = 1\n")
    by_rel = {d.relpath: d for d in audit(site_packages=[str(site)]).drifts}
    assert [f.code for f in by_rel["pkg/broken.py"].findings] == ["DBG001"]

    monkeypatch.setattr(findings, "SYNTAX_CHECK_ADDED_LIMIT", 2)
    report = audit(site_packages=[str(site)])
    by_rel = {d.relpath: d for d in report.drifts}
    assert by_rel["pkg/broken.py"].findings == []  # not syntax-checked...
    assert "DBG101" in {f.code for f in by_rel["pkg/dump.py"].findings}  # ...but the rules still ran
    assert [s.message for s in report.skipped] == [
        "syntax check skipped for 3 added .py files (more than 2); the debug rules still ran on them"]
