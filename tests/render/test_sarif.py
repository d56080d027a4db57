"""SARIF output validates against the SARIF 2.1.0 schema (a copy lives in fixtures/data/sarif), with
locations relative to declared uriBaseIds, rules described by the rule catalogue, help links into
the docs, no glob in any URI, and fingerprints that survive a second run and a line shift."""

from __future__ import annotations

import inspect as pyinspect
import json
import os
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import jsonschema
import pytest

from driftscan.core.values import DriftKind
from driftscan.render.sarif import DRIFT_KINDS_DOC, RULES_DOC, github_anchor, render_sarif
from fixtures.formats import NAME, audit, make_scenario
from fixtures.harness import run_cli
from fixtures.modeldirs import build_local_dir
from fixtures.paths import REPO, DATA

SCHEMA = os.path.join(DATA, "sarif", "sarif-schema-2.1.0.json")
DOCS = REPO / "docs"


@pytest.fixture(scope="module")
def validator():
    with open(SCHEMA) as f:
        schema = json.load(f)
    return jsonschema.validators.validator_for(schema)(schema)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    return make_scenario(tmp_path_factory.mktemp("sarif"))


@pytest.fixture(scope="module")
def sarif(scenario, validator):
    doc = json.loads(render_sarif(audit(scenario)))
    validator.validate(doc)
    return doc


def uris(node, found=None) -> list[str]:
    """Every ``uri`` anywhere in the document."""
    found = [] if found is None else found
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "uri" and isinstance(value, str):
                found.append(value)
            else:
                uris(value, found)
    elif isinstance(node, list):
        for value in node:
            uris(value, found)
    return found


def resolve(run: dict, artifact: dict) -> str:
    """An artifactLocation as the absolute path it names."""
    uri = artifact["uri"]
    if "uriBaseId" in artifact:
        base = run["originalUriBaseIds"][artifact["uriBaseId"]]["uri"]
        assert base.startswith("file:///") and base.endswith("/"), base
        uri = base + ("" if uri == "./" else uri)
    parsed = urlparse(uri)
    assert parsed.scheme == "file", uri
    return unquote(parsed.path)


def headings(markdown: Path) -> set[str]:
    return {github_anchor(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", markdown.read_text(), re.M)}


def test_audit_sarif_is_valid_and_carries_drifts_and_findings(planted, validator, tmp_path):
    venv, expected = planted
    site = next(venv.glob("lib/python3*/site-packages"))
    (site / "dbg_added.py").write_text("import pdb\n\ndef forward(x):\n    breakpoint()\n    return x\n")
    try:
        proc = run_cli("audit", "--venv", str(venv), "--format", "sarif")
    finally:
        (site / "dbg_added.py").unlink()
    assert proc.returncode == 1, proc.stderr
    sarif = json.loads(proc.stdout)
    validator.validate(sarif)
    run = sarif["runs"][0]
    results = run["results"]
    drift_results = [r for r in results if r["ruleId"].startswith("drift/")]
    assert len(drift_results) == len(expected) + 1
    breakpoint_result = next(r for r in results if r["ruleId"] == "DBG106")
    region = breakpoint_result["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == 4 and breakpoint_result["level"] == "error"
    rule_ids = {r["id"] for r in run["tool"]["driver"]["rules"]}
    assert {r["ruleId"] for r in results} == rule_ids
    # bin/ is relative to the venv, package files to site-packages
    located = {resolve(run, r["locations"][0]["physicalLocation"]["artifactLocation"]) for r in drift_results}
    assert str(venv / "bin" / "demo-cli") in located and str(site / "six.py") in located
    cli = next(r for r in drift_results if r["properties"]["relpath"] == "bin/demo-cli")
    assert cli["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"] == "VENV"


def test_locations_are_relative_to_declared_roots(scenario, sarif):
    run = sarif["runs"][0]
    bases = run["originalUriBaseIds"]
    assert bases["VENV"]["uri"] == f"file://{scenario.venv}/"
    assert bases["SITE_PACKAGES"]["uri"] == f"file://{scenario.site}/"
    assert bases["EXTERNAL_0"]["uri"] == f"file://{scenario.dump_dir}/"
    report = audit(scenario)
    expected = {d.path for d in report.drifts if d.kind.value != "debug-artifacts"}
    expected |= {a for d in report.drifts for a in d.artifacts}
    seen = set()
    for result in run["results"]:
        for location in result["locations"]:
            artifact = location["physicalLocation"]["artifactLocation"]
            assert "uriBaseId" in artifact and not artifact["uri"].startswith(("file:", "/")), artifact
            seen.add(resolve(run, artifact))
    assert seen == expected
    added = {r["properties"]["relpath"]: r for r in run["results"] if r["ruleId"] == "drift/added"}
    hostile = added[f"{NAME}/a|b<script>.py"]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert hostile == {"uri": f"{NAME}/a%7Cb%3Cscript%3E.py", "uriBaseId": "SITE_PACKAGES"}


def test_no_glob_in_any_uri_and_the_glob_in_the_message(sarif, scenario):
    run = sarif["runs"][0]
    found = uris(sarif)
    assert found and not [u for u in found if "*" in u or "%2A" in u.upper()]
    dumps = next(r for r in run["results"] if r["ruleId"] == "drift/debug-artifacts")
    assert f"{scenario.dump_dir}/nomla_in_*.pt" in dumps["message"]["text"]
    assert resolve(run, dumps["locations"][0]["physicalLocation"]["artifactLocation"]) == \
        str(scenario.dump_dir / "nomla_in_1.pt")


def test_rules_are_described_by_the_catalogue(sarif):
    from driftscan.lint.rules.one_shot_flag import OneShotFlag

    run = sarif["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    dbg104 = rules["DBG104"]
    messages = [r["message"]["text"] for r in run["results"] if r["ruleId"] == "DBG104"]
    assert messages and messages[0].startswith("one-shot flag _dump_saved")
    assert dbg104["shortDescription"]["text"] == OneShotFlag.MESSAGE == "one-shot flag guarding debug code"
    assert dbg104["shortDescription"]["text"] not in messages
    assert dbg104["fullDescription"]["text"].startswith("An ``if not Cls.flag:``")
    assert "run once per process" in dbg104["fullDescription"]["text"]
    assert pyinspect.cleandoc(OneShotFlag.__doc__ or "").split()[:6] == dbg104["fullDescription"]["text"].split()[:6]
    assert dbg104["name"] == "one-shot-flag" and dbg104["defaultConfiguration"]["level"] == "error"
    for rule_id, rule in rules.items():
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"], rule_id
        assert rule["fullDescription"]["text"] != rule["shortDescription"]["text"], rule_id


def test_help_links_point_at_existing_anchors(sarif):
    rules = {r["id"]: r for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["DBG104"]["helpUri"] == RULES_DOC + "#dbg104-one-shot-flag"
    assert RULES_DOC == "https://github.com/driftscan/driftscan/blob/main/docs/rules.md"
    rules_anchors = headings(DOCS / "rules.md")
    plan_anchors = headings(DOCS / "scopes-and-plan.md")
    for rule_id, rule in rules.items():
        page, _, anchor = rule["helpUri"].partition("#")
        if rule_id.startswith("DBG"):
            assert page == RULES_DOC and anchor in rules_anchors, rule["helpUri"]
        else:
            assert rule["helpUri"] == DRIFT_KINDS_DOC and anchor in plan_anchors, rule["helpUri"]


def test_every_drift_kind_is_in_the_linked_docs_section():
    text = (DOCS / "scopes-and-plan.md").read_text()
    section = text.split("## Drift kinds", 1)[1].split("\n## ", 1)[0]
    assert [k.value for k in DriftKind if f"| `{k.value}` |" not in section] == []


def test_wording_of_predictions(sarif):
    texts = {r["properties"]["relpath"]: r["message"]["text"] for r in sarif["runs"][0]["results"]
             if r["ruleId"].startswith("drift/")}
    assert "by a reinstall" not in " ".join(t for t in texts.values() if "survive" in t.split("reinstall")[0])
    assert all("survives by" not in t for t in texts.values())
    assert "wiped by a reinstall" in texts[f"{NAME}/model.py"]
    assert "survives a reinstall" in texts[f"{NAME}/a|b<script>.py"]


def test_upstream_findings_are_suppressed_notes(sarif, scenario):
    run = sarif["runs"][0]
    util = [r for r in run["results"] if not r["ruleId"].startswith("drift/")
            and resolve(run, r["locations"][0]["physicalLocation"]["artifactLocation"]).endswith("/util.py")]
    assert util and all(r["properties"]["origin"] == "upstream" and r["level"] == "note" for r in util)
    assert all(r["suppressions"][0]["status"] == "accepted" for r in util)


def fingerprints(doc: dict) -> dict[tuple[str, str], str]:
    run = doc["runs"][0]
    out = {}
    for r in run["results"]:
        where = resolve(run, r["locations"][0]["physicalLocation"]["artifactLocation"])
        out[(r["ruleId"], where)] = r["partialFingerprints"]["driftscan/v1"]
    return out


def lines(doc: dict) -> dict[str, int]:
    return {r["ruleId"]: r["locations"][0]["physicalLocation"]["region"]["startLine"]
            for r in doc["runs"][0]["results"] if r["ruleId"].startswith("DBG")
            and r.get("properties", {}).get("origin") != "upstream"}  # (in util.py, which does not move)


def test_fingerprints_are_stable_across_runs_and_line_shifts(tmp_path, validator):
    scenario = make_scenario(tmp_path)
    first = json.loads(render_sarif(audit(scenario)))
    again = json.loads(render_sarif(audit(scenario)))
    assert fingerprints(first) == fingerprints(again)
    values = list(fingerprints(first).values())
    assert len(values) == len(set(values)) == len(first["runs"][0]["results"])  # each result its own
    scenario.shift_model(3)
    shifted = json.loads(render_sarif(audit(scenario)))
    validator.validate(shifted)
    assert {k: v + 3 for k, v in lines(first).items()} == lines(shifted)
    assert fingerprints(first) == fingerprints(shifted)
    # a different snippet is a different finding
    (scenario.site / NAME / "model.py").write_text(
        (scenario.site / NAME / "model.py").read_text().replace("breakpoint()", "breakpoint()  # here"))
    edited = fingerprints(json.loads(render_sarif(audit(scenario))))
    changed = {k for k in edited if edited[k] != fingerprints(first).get(k)}
    assert {rule for rule, _ in changed} == {"DBG106"}


def test_model_directories_get_their_own_base(tmp_path, validator):
    model = build_local_dir(tmp_path / "kimi", {"config.json": b'{"a": 1}\n', "README.md": b"# m\n"})
    (model / "config.json").write_text('{"a": 2}\n')
    from driftscan import api

    report = api.audit(model_dirs=[str(model)])
    doc = json.loads(render_sarif(report))
    validator.validate(doc)
    run = doc["runs"][0]
    assert run["originalUriBaseIds"]["MODEL_DIR_0"]["uri"] == f"file://{model}/"
    result = next(r for r in run["results"] if r["ruleId"] == "drift/modified")
    assert result["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "config.json",
                                                                               "uriBaseId": "MODEL_DIR_0"}


def test_accepted_drift_is_a_suppressed_result(scenario, validator):
    report = audit(scenario)
    if "accepted" not in type(report.drifts[0]).model_fields:
        pytest.skip("the report has no accepted drift yet")
    drifts = [d.model_copy(update={"accepted": {"reason": "kept on purpose", "entry": 0}})
              if d.relpath == f"{NAME}/model.py" else d for d in report.drifts]
    doc = json.loads(render_sarif(report.model_copy(update={"drifts": drifts})))
    validator.validate(doc)
    suppressed = [r for r in doc["runs"][0]["results"] if r.get("suppressions")
                  and r.get("properties", {}).get("origin") != "upstream"]  # (suppressed as upstream)
    assert {r["ruleId"] for r in suppressed} == {"drift/modified", "DBG101", "DBG104", "DBG106"}
    assert all(s["justification"].endswith("kept on purpose") for r in suppressed for s in r["suppressions"])


def test_scan_sarif_is_valid(tmp_path, validator):
    (tmp_path / "m.py").write_text("import torch\n\ndef forward(x):\n    torch.save(x, '/tmp/dbg_x.pt')\n")
    proc = run_cli("scan", str(tmp_path), "--format", "sarif")
    assert proc.returncode == 1, proc.stderr
    sarif = json.loads(proc.stdout)
    validator.validate(sarif)
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["DBG101"]
    uri = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "file://" + str(tmp_path / "m.py")  # an absolute path given: an absolute URI
    rule = sarif["runs"][0]["tool"]["driver"]["rules"][0]
    assert rule["shortDescription"]["text"] == "tensor dump in a debugging context"
    assert rule["helpUri"].endswith("rules.md#dbg101-debug-tensor-dump")


def test_scan_sarif_of_a_relative_path_is_relative_to_srcroot(tmp_path, validator):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text("def forward(x):\n    breakpoint()\n")
    proc = run_cli("scan", "src", "--format", "sarif", cwd=str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    sarif = json.loads(proc.stdout)
    validator.validate(sarif)
    run = sarif["runs"][0]
    artifact = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": "src/m.py", "uriBaseId": "SRCROOT"}
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == f"file://{tmp_path}/"
