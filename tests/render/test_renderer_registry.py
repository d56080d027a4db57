"""render.registry: one renderer per result type and format, looked up by ``render``; each gives the
bytes the format's own renderer gives, and a format that does not apply is said, with the ones that do."""

from __future__ import annotations

import importlib
import json

import click
import pytest

from driftscan.core.values import Finding, Problem, Severity
from driftscan.fleet.model import FleetResult, NodeOut
from driftscan.lint.files import ScanResult
from driftscan.reinstall.plan import Audited, build_plan
from driftscan.render import RENDERERS
from driftscan.render.registry import (CHECKPOINT, COMPARE, FLEET, GUARD, LOCK_CHECK, PATCH_APPLY, PATCH_EXPORT, PATCH_REBASE, PLAN, PROCS,
                                       REAPPLY, REPORT, RESTORE, SCAN, NotRenderable, OutputFormat, RenderOptions,
                                       format_names, formats, render,
                                       result_type, result_types)
from driftscan.render.text import render_text, summary_line
from fixtures.reports import DEMO, OTHER, PROJ, TARGET, drift_of, every_kind_checks, every_kind_report

OPTION_SETS = [RenderOptions(), RenderOptions(verbose=True), RenderOptions(diffs=True),
               RenderOptions(show_upstream=True), RenderOptions(quiet=True),
               RenderOptions(diffs=True, show_upstream=True, verbose=True)]


def _scan_result() -> ScanResult:
    return ScanResult(
        findings=[("/t/a.py", Finding("DBG101", "breakpoint-call", Severity.HIGH, 3, 5, "breakpoint()", "  breakpoint()")),
                  ("/t/a.py", Finding("DBG109", "print-call", Severity.LOW, 4, 1, "print", "print(x)")),
                  ("/t/b.py", Finding("DBG109", "print-call", Severity.LOW, 1, 1, "print", ""))],
        errors=[Problem("/t/c.py", "cannot read: c.py")], files_scanned=3, bytes_scanned=1234, files_parsed=2,
        rules=("DBG101", "DBG109"))


def test_each_type_names_the_class_it_is_looked_up_by():
    for kind in result_types():
        cls = getattr(importlib.import_module(kind.module), kind.name)
        assert f"{cls.__module__}.{cls.__qualname__}" == kind.path, kind


@pytest.mark.parametrize("options", OPTION_SETS)
def test_an_audit_report_renders_as_each_format_did(options):
    report = every_kind_report()
    from driftscan.render.github import render_github

    expected = {
        OutputFormat.TEXT: summary_line(report) + "\n" if options.quiet else
        render_text(report, diffs=options.diffs or options.verbose, show_upstream=options.show_upstream,
                    verbose=options.verbose),
        OutputFormat.GITHUB: render_github(report, show_upstream=options.show_upstream),
        **{OutputFormat(f): RENDERERS[f](report) for f in ("json", "sarif", "markdown", "short", "cyclonedx")},
    }
    assert set(formats(REPORT)) == set(expected)
    for fmt, text in expected.items():
        assert render(report, fmt, options) == text, fmt


def test_a_scan_renders_as_each_format_did_and_its_statistics_as_text():
    from driftscan.render.sarif import render_scan_sarif
    from driftscan.render.scan import SCAN_RENDERERS
    from driftscan.render.statistics import render_statistics

    result = _scan_result()
    for name, function in SCAN_RENDERERS.items():
        assert render(result, OutputFormat(name)) == function(result), name
    statistics = render(result, OutputFormat.TEXT, RenderOptions(statistics=True))
    assert statistics == render_statistics(result) and statistics.splitlines()[0].endswith("DBG109  print-call")
    assert json.loads(render(result, OutputFormat.SARIF)) == json.loads(render_scan_sarif(result))


def test_a_plan_and_a_fleet_result_render_as_they_did():
    from driftscan.fleet.render import FLEET_RENDERERS
    from driftscan.render.planview import PLAN_RENDERERS

    plan = build_plan(Audited(every_kind_report(), [drift_of(c) for c in every_kind_checks().values()], TARGET,
                              [DEMO, OTHER, PROJ]), ["demo"], None)
    for name, function in PLAN_RENDERERS.items():
        assert render(plan, OutputFormat(name)) == function(plan), name
    fleet = FleetResult(kind="report", notes=["1 node answered"], nodes=[
        NodeOut(node_id="0123456789abcdef", hostname="gpu-01", status="ok", summary={"drifts": 0})])
    for verbose in (False, True):
        for name, function in FLEET_RENDERERS.items():
            assert render(fleet, OutputFormat(name), RenderOptions(verbose=verbose)) == function(fleet, verbose=verbose)


def test_every_old_table_has_the_registry_s_formats_in_its_order():
    from driftscan.fleet.render import FLEET_RENDERERS
    from driftscan.render.compare import COMPARE_RENDERERS
    from driftscan.render.guardview import GUARD_RENDERERS
    from driftscan.render.lockview import LOCK_CHECK_RENDERERS
    from driftscan.render.patchapplyview import PATCH_APPLY_RENDERERS
    from driftscan.render.patchrebaseview import PATCH_REBASE_RENDERERS
    from driftscan.render.patchview import PATCH_EXPORT_RENDERERS
    from driftscan.render.planview import PLAN_RENDERERS
    from driftscan.render.procsview import PROCS_RENDERERS
    from driftscan.render.restoreview import REAPPLY_RENDERERS, RESTORE_RENDERERS
    from driftscan.render.scan import SCAN_RENDERERS

    tables = {PROCS: PROCS_RENDERERS, REPORT: RENDERERS, PLAN: PLAN_RENDERERS, SCAN: SCAN_RENDERERS, GUARD: GUARD_RENDERERS,
              RESTORE: RESTORE_RENDERERS, REAPPLY: REAPPLY_RENDERERS, COMPARE: COMPARE_RENDERERS,
              FLEET: FLEET_RENDERERS, CHECKPOINT: {"text": None}, LOCK_CHECK: LOCK_CHECK_RENDERERS,
              PATCH_APPLY: PATCH_APPLY_RENDERERS, PATCH_EXPORT: PATCH_EXPORT_RENDERERS,
              PATCH_REBASE: PATCH_REBASE_RENDERERS}
    assert {kind: format_names(kind) for kind in result_types()} == {kind: list(t) for kind, t in tables.items()}


def test_a_format_that_does_not_apply_is_said_with_the_ones_that_do():
    result = _scan_result()
    with pytest.raises(NotRenderable, match=r"^a scan result has no markdown output: text, json, sarif$"):
        render(result, OutputFormat.MARKDOWN)
    with pytest.raises(NotRenderable, match=r"^no output format 'yaml': one of text, json, sarif, markdown, github, short, cyclonedx$"):
        render(result, "yaml")  # type: ignore[arg-type]
    with pytest.raises(NotRenderable, match=r"^no renderer takes a dict: driftscan renders Report, Plan, ScanResult"):
        render({"drifts": []}, OutputFormat.JSON)
    assert result_type(result) is SCAN


def test_every_format_choice_of_the_command_line_is_the_registry_s():
    from driftscan.cli import main

    kinds = {"audit": REPORT, "diff": REPORT, "plan": PLAN, "scan": SCAN, "guard": GUARD, "restore": RESTORE,
             "reapply": REAPPLY, "compare": COMPARE, "fleet": FLEET, "procs": PROCS,
             "lock-check": LOCK_CHECK, "patch export": PATCH_EXPORT, "patch apply": PATCH_APPLY,
             "patch rebase": PATCH_REBASE}
    seen = {}
    ctx = click.Context(main)
    commands = []
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):  # a family of subcommands: ``patch export``
            sub_ctx = click.Context(command)
            commands += [(f"{name} {sub}", command.get_command(sub_ctx, sub)) for sub in command.list_commands(sub_ctx)]
        else:
            commands.append((name, command))
    for name, command in commands:
        assert command is not None
        for param in command.params:
            if param.name == "fmt":
                assert isinstance(param.type, click.Choice)
                seen[name] = sorted(param.type.choices)
    assert "patch export" in seen and "patch apply" in seen
    assert seen == {name: sorted(format_names(kinds[name])) for name in seen}
    assert set(seen) >= {"audit", "plan", "scan", "guard", "restore", "reapply", "compare", "fleet"}

