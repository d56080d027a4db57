"""``--format github``: workflow-command annotations, escaped as @actions/core escapes them,
at the right level, with paths relative to ``GITHUB_WORKSPACE``."""

from __future__ import annotations

import re

import pytest

from driftscan.render import RENDERERS
from driftscan.render.github import command, escape_data, escape_property, render_github, workspace_path
from fixtures.formats import HOSTILE_NAMES, NAME, audit, make_scenario
from fixtures.harness import run_cli

# ::level key=value,key=value::message — a value holds no "," or ":" once escaped, no line a break
LINE = re.compile(r"^::(error|warning|notice)(?: ((?:[a-z]+=[^,:\r\n]*)(?:,[a-z]+=[^,:\r\n]*)*))?::([^\r\n]*)$")


def parse(line: str) -> tuple[str, dict[str, str], str]:
    m = LINE.match(line)
    assert m, line
    props = dict(p.split("=", 1) for p in m.group(2).split(",")) if m.group(2) else {}
    return m.group(1), props, m.group(3)


def unescape(value: str) -> str:
    return value.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    return make_scenario(tmp_path_factory.mktemp("gh"))


@pytest.fixture(scope="module")
def report(scenario):
    return audit(scenario)


def test_escaping_follows_actions_core():
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert escape_data("a:b,c") == "a:b,c"  # the message may hold ":" and ","
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    assert escape_property("%3A") == "%253A"  # an escape in a name is not taken for one
    line = command("error", "line one\nline two: 50%", file="x,y:z.py", line=3, title="T, with: colon")
    assert line == "::error file=x%2Cy%3Az.py,line=3,title=T%2C with%3A colon::line one%0Aline two: 50%25"
    assert command("notice", "m") == "::notice::m"
    assert command("warning", "m", file=None, line=None) == "::warning::m"


def test_workspace_relative_paths():
    assert workspace_path("/ws/repo/.venv/lib/x.py", "/ws/repo") == ".venv/lib/x.py"
    assert workspace_path("/ws/repo/.venv/lib/x.py", "/ws/repo/") == ".venv/lib/x.py"
    assert workspace_path("/ws/repository/x.py", "/ws/repo") == "/ws/repository/x.py"  # a prefix is not a parent
    assert workspace_path("/other/x.py", "/ws/repo") == "/other/x.py"
    assert workspace_path("/ws/repo/x.py", None) == "/ws/repo/x.py"


def test_one_well_formed_line_per_drift_and_finding(report, scenario):
    out = render_github(report, workspace=str(scenario.venv.parent))
    lines = out.splitlines()
    assert out.endswith("\n") and all(line.startswith("::") for line in lines)  # no name started a line
    parsed = [parse(line) for line in lines]
    shown_findings = [f for d in report.drifts for f in d.findings if f.origin != "upstream"]
    assert len(lines) == len(report.drifts) + len(shown_findings) + len(report.errors)
    files = {unescape(p["file"]) for _, p, _ in parsed if "file" in p}
    for name in HOSTILE_NAMES:
        rel = str((scenario.site / NAME / name).relative_to(scenario.venv.parent))
        assert rel in files, (name, files)
    assert all(not f.startswith("/") for f in files)  # all under the workspace


def test_levels(report, scenario):
    parsed = [parse(line) for line in render_github(report, workspace=str(scenario.venv.parent)).splitlines()]
    by_title: dict[str, list[tuple[str, dict[str, str], str]]] = {}
    for level, props, message in parsed:
        by_title.setdefault(unescape(props.get("title", "")).split(":")[0].split(" (")[0], []).append(
            (level, props, message))
    # the default policy (drift): every drift not accepted makes the run fail; a finding does not by itself
    assert {lv for lv, _, _ in by_title["driftscan modified"]} == {"error"}  # package drift
    assert {lv for lv, _, _ in by_title["driftscan added"]} == {"error"}  # environment drift
    assert {lv for lv, _, _ in by_title["driftscan debug-artifacts"]} == {"error"}  # external
    breakpoint_ = by_title["DBG106 debugger-call"]
    assert [lv for lv, _, _ in breakpoint_] == ["warning"]  # the upstream one in util.py is not shown
    level, props, message = breakpoint_[0]
    model = next(d for d in report.drifts if d.relpath == f"{NAME}/model.py")
    f = next(f for f in model.findings if f.code == "DBG106")
    assert props["line"] == str(f.line) and props["col"] == str(f.column)
    assert unescape(props["file"]).endswith(f"{NAME}/model.py") and message.startswith("debugger call")
    # a glob is no file: the dumps drift is on the dump it found, the glob in its message
    _, props, message = by_title["driftscan debug-artifacts"][0]
    assert unescape(props["file"]).endswith("dumps/nomla_in_1.pt") and "nomla_in_*.pt" in message


def test_upstream_findings_are_notices_when_shown(report, scenario):
    lines = render_github(report, workspace=str(scenario.venv.parent), show_upstream=True).splitlines()
    upstream = [parse(line) for line in lines if "(upstream)" in line]
    assert upstream and {lv for lv, _, _ in upstream} == {"notice"}
    assert all(unescape(p["file"]).endswith(f"{NAME}/util.py") for _, p, _ in upstream)


def test_newlines_in_names_are_escaped_in_file_and_message(report):
    out = render_github(report, workspace="/nonexistent-workspace")
    line = next(line for line in out.splitlines() if "onerror" in line)
    level, props, message = parse(line)
    assert "n`l%0A<img" in props["file"] and "n`l%0A<img" in message
    assert props["file"].startswith("/")  # not under the workspace: absolute
    comma = next(parse(line) for line in out.splitlines() if "e%25f.py" in line)
    assert comma[1]["file"].endswith("c%2Cd%3Ae%25f.py") and "c,d:e%25f.py" in comma[2]


def test_github_workspace_environment(report, scenario, monkeypatch):
    monkeypatch.setenv("GITHUB_WORKSPACE", str(scenario.venv))
    files = [unescape(parse(line)[1].get("file", "")) for line in render_github(report).splitlines()]
    assert any(f.startswith("lib/python") for f in files)
    assert any(f == str(scenario.dump_dir / "nomla_in_1.pt") for f in files)  # outside the workspace
    monkeypatch.delenv("GITHUB_WORKSPACE")
    assert all(unescape(parse(line)[1].get("file", "/")).startswith("/") for line in render_github(report).splitlines())


def test_cli_github_format(scenario):
    assert "github" in RENDERERS
    proc = run_cli("audit", "--venv", str(scenario.venv), "--format", "github",
                   env={"GITHUB_WORKSPACE": str(scenario.venv.parent)})
    assert proc.returncode & 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines and all(LINE.match(line) for line in lines), proc.stdout
    assert any(line.startswith("::error file=venv/lib/") for line in lines)
