"""Every finding the JSON report has appears in every other rendering of the same report: text
(but those also in the original file, which it counts instead of listing unless asked), markdown,
SARIF and GitHub annotations; and every drift is a line of the short listing. One report with
findings everywhere a renderer may lose one: in a modified file beside an upstream one, in an added
module no distribution owns, in an editable source tree, in an added file among more than a
listing shows."""

from __future__ import annotations

import html
import json
import re
from urllib.parse import unquote, urlparse

import pytest

from driftscan.render import OutputFormat, RenderOptions, render
from fixtures.reports import rich_report

Key = tuple[str, str, int]  # code, absolute path, line


@pytest.fixture(scope="module")
def report():
    return rich_report()


@pytest.fixture(scope="module")
def expected(report) -> dict[Key, tuple[str, bool]]:
    """Each finding of the JSON report: its key, with the drift's relpath and whether it is upstream."""
    doc = json.loads(render(report, OutputFormat.JSON))
    found = {(f["code"], d["path"], f["line"]): (d["relpath"], f["origin"] == "upstream")
             for d in doc["drifts"] for f in d["findings"]}
    assert len(found) == sum(len(d["findings"]) for d in doc["drifts"])  # no two share a key
    return found


def test_the_report_has_the_findings_a_renderer_may_lose(expected):
    paths = {path.rsplit("/", 1)[-1] for _, path, _ in expected}
    assert {"_nomla_debug_utils.py", "core.py", "train.py", "s07.py"} <= paths
    assert any(upstream for _, upstream in expected.values())


def _text_findings(text: str) -> tuple[set[tuple[str, str, int]], int]:
    """(code, relpath, line) of every finding line, and the upstream findings said to be hidden."""
    drift_row = re.compile(r"^  \S+\s+(?:WIPED|SURVIVES|MAY SURVIVE|PRISTINE)\s+(\S+)")
    finding_row = re.compile(r"^      (DBG\d{3}) \S+\s+(?:(\S+) )?line (\d+):")
    found, hidden, current = set(), 0, ""
    for line in text.splitlines():
        if m := drift_row.match(line):
            current = m.group(1)
        elif m := finding_row.match(line):
            found.add((m.group(1), m.group(2) or current, int(m.group(3))))
        elif m := re.match(r"^      \((\d+) findings? also in the original file not shown", line):
            hidden += int(m.group(1))
    return found, hidden


@pytest.mark.parametrize("show_upstream", [False, True])
def test_text_lists_every_finding_or_counts_it_as_upstream(report, expected, show_upstream):
    text = render(report, OutputFormat.TEXT, RenderOptions(show_upstream=show_upstream))
    found, hidden = _text_findings(text)
    want = {(c, rel, line) for (c, _, line), (rel, up) in expected.items() if show_upstream or not up}
    assert found == want
    assert hidden == (0 if show_upstream else sum(up for _, up in expected.values()))


def test_markdown_lists_every_finding(report, expected):
    markdown = html.unescape(render(report, OutputFormat.MARKDOWN))
    for (code, _, line), (rel, _) in expected.items():
        assert f"- <code>{rel}:{line}</code> **{code}**" in markdown, (code, rel, line)
    # a "Debug code found:" heading always has findings under it
    assert not re.search(r"Debug code found:\n\n(?!- <code>)", markdown)


def test_sarif_has_every_finding(report, expected):
    run = json.loads(render(report, OutputFormat.SARIF))["runs"][0]
    found = set()
    for r in run["results"]:
        if r["ruleId"].startswith("drift/"):
            continue
        physical = r["locations"][0]["physicalLocation"]
        artifact, uri = physical["artifactLocation"], physical["artifactLocation"]["uri"]
        if "uriBaseId" in artifact:
            uri = run["originalUriBaseIds"][artifact["uriBaseId"]]["uri"] + uri
        found.add((r["ruleId"], unquote(urlparse(uri).path), physical["region"]["startLine"]))
    assert found == set(expected)


@pytest.mark.parametrize("show_upstream", [False, True])
def test_github_annotates_every_finding(report, expected, show_upstream):
    text = render(report, OutputFormat.GITHUB, RenderOptions(show_upstream=show_upstream))
    found = set()
    for line in text.splitlines():
        m = re.match(r"^::\w+ (.*?)::", line)
        props = dict(p.split("=", 1) for p in m.group(1).split(",")) if m else {}
        if "line" in props:
            code = props["title"].split(" ", 1)[0]
            found.add((code, unquote(props["file"].replace("%3A", ":").replace("%2C", ",")), int(props["line"])))
    assert found == {k for k, (_, up) in expected.items() if show_upstream or not up}


def test_short_lists_every_drift_once(report):
    from driftscan.render.short import CODES, render_short

    doc = json.loads(render(report, OutputFormat.JSON))
    lines = render_short(report, cwd="/nonexistent").splitlines()
    assert sorted((line[0], line[3:]) for line in lines) == sorted(
        (CODES[d["kind"]], d["path"]) for d in doc["drifts"])


def test_every_renderer_shows_a_wrong_upstream_row_for_what_it_is(report):
    """The rich report's ``upstream-record-mismatch``: its kind and the wheel's evidence in every
    format, and never as something that fails the default policy."""
    doc = json.loads(render(report, OutputFormat.JSON))
    (drift,) = [d for d in doc["drifts"] if d["kind"] == "upstream-record-mismatch"]
    assert "the row is wrong upstream" in drift["evidence"] and drift["pristine"]["source"] == "wheels"
    text = render(report, OutputFormat.TEXT)
    (line,) = [x for x in text.splitlines() if x.startswith("  upstream-record-mismatch ")]
    assert line.rstrip().endswith(f"{drift['relpath']}  (as its wheel ships it; the wheel's own RECORD row is wrong)")
    assert drift["evidence"] in text
    markdown = html.unescape(render(report, OutputFormat.MARKDOWN))
    assert "upstream-record-mismatch" in markdown and drift["relpath"] in markdown
    run = json.loads(render(report, OutputFormat.SARIF))["runs"][0]
    (result,) = [r for r in run["results"] if r["ruleId"] == "drift/upstream-record-mismatch"]
    assert result["level"] == "note"
    assert "drift/upstream-record-mismatch" in {r["id"] for r in run["tool"]["driver"]["rules"]}
    github = [x for x in render(report, OutputFormat.GITHUB).splitlines() if drift["relpath"] in x]
    assert github and all(x.startswith("::notice ") for x in github)


def test_every_drift_kind_appears_in_every_rendering(report):
    """Each kind of drift the JSON report has is named in every other rendering."""
    kinds = {d["kind"] for d in json.loads(render(report, OutputFormat.JSON))["drifts"]}
    assert "startup-code" in kinds
    text = render(report, OutputFormat.TEXT)
    markdown = html.unescape(render(report, OutputFormat.MARKDOWN))
    sarif = {r["ruleId"] for r in json.loads(render(report, OutputFormat.SARIF))["runs"][0]["results"]}
    github = render(report, OutputFormat.GITHUB)
    for kind in kinds:
        assert re.search(rf"^  {re.escape(kind)}\s", text, re.M), kind
        assert f"| {kind} |" in markdown, kind
        assert f"drift/{kind}" in sarif, kind
        assert f"title=driftscan {kind}%3A" in github, kind


def test_startup_code_says_what_it_runs_everywhere(report):
    """A startup-code drift's evidence (the line it runs) is in every rendering, its content in
    JSON always, in text under -v, in markdown in a block; SARIF and GitHub mark it an error."""
    drift = next(d for d in report.drifts if d.kind.value == "startup-code")
    line = drift.content_preview
    assert line and line in drift.evidence
    assert json.loads(render(report, OutputFormat.JSON))["drifts"][report.drifts.index(drift)]["content_preview"] == line
    text = render(report, OutputFormat.TEXT)
    assert f"      {drift.evidence}" in text.splitlines() and f"      | {line}" not in text.splitlines()
    assert f"      | {line}" in render(report, OutputFormat.TEXT, RenderOptions(verbose=True)).splitlines()
    markdown = html.unescape(render(report, OutputFormat.MARKDOWN))
    assert drift.evidence in markdown and f"```text\n{line}\n```" in markdown
    run = json.loads(render(report, OutputFormat.SARIF))["runs"][0]
    result = next(r for r in run["results"] if r["ruleId"] == "drift/startup-code")
    assert result["level"] == "error" and drift.evidence in result["message"]["text"]
    github = [ln for ln in render(report, OutputFormat.GITHUB).splitlines() if "title=driftscan startup-code" in ln]
    assert len(github) == 1 and github[0].startswith("::error ")


def test_stale_bytecode_names_its_source_everywhere(report):
    """A stale-bytecode drift: the pyc's path, the source Python no longer reads, its rm remedy."""
    drift = next(d for d in report.drifts if d.kind.value == "stale-bytecode")
    assert drift.remedy == f"rm {drift.path}"
    text = render(report, OutputFormat.TEXT)
    (line,) = [x for x in text.splitlines() if x.startswith("  stale-bytecode ")]
    assert line.rstrip().endswith(f"{drift.relpath}  (Python runs it instead of core.py: compiled from other content)")
    assert f"  remedy: rm {drift.path}" in text.splitlines()
    markdown = html.unescape(render(report, OutputFormat.MARKDOWN))
    assert "Python runs it instead of core.py" in markdown
    run = json.loads(render(report, OutputFormat.SARIF))["runs"][0]
    result = next(r for r in run["results"] if r["ruleId"] == "drift/stale-bytecode")
    assert drift.relpath in json.dumps(result["locations"])
    from driftscan.render.short import render_short

    assert f"Y  {drift.path}" in render_short(report, cwd="/nonexistent").splitlines()
