"""The one registry of renderers, keyed by the result's type and the output format.

Every command renders its result with ``render(result, fmt, options)``: ``fmt`` an ``OutputFormat``
(a ``--format`` value), ``options`` one ``RenderOptions``. ``_TABLE`` below is the one place a renderer
is registered, and what ``formats(kind)`` (the command line's ``--format`` choices) reads.

Its entries name the result types by import path and import their renderer when called: the command
line imports this module at start-up, and it pulls in neither the renderers nor the result models
(pydantic, the rule engine): ``python -X importtime -c "import driftscan.cli"`` gives it about 1.2 ms
of its own (Python 3.11, bytecode cached), of the command line's 37 ms.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, NamedTuple

from ..core.errors import DriftscanError

if TYPE_CHECKING:
    from ..compare.model import CompareReport
    from ..lint.files import ScanResult
    from ..reinstall.checkpoint import Written
    from ..reinstall.guard.model import GuardReport
    from ..reinstall.plan import Plan
    from ..reinstall.reapply import ReapplyReport
    from ..reinstall.restore import RestoreReport
    from ..report.contract import Report


class OutputFormat(str, Enum):
    """An output format, spelled as ``--format`` takes it."""

    TEXT = "text"
    JSON = "json"
    SARIF = "sarif"
    MARKDOWN = "markdown"
    GITHUB = "github"


@dataclass(frozen=True)
class RenderOptions:
    """What the user chose of a rendering; a renderer reads the options that apply to it and ignores the rest."""

    verbose: bool = False  # text: every item, not the first ones (an audit's: its diffs too)
    diffs: bool = False  # audit text: each modified file's diff
    show_upstream: bool = False  # audit text and github: findings the original has too
    quiet: bool = False  # audit text: the summary line only
    statistics: bool = False  # scan text: one count per rule code instead of the findings
    allow_partial: bool = False  # checkpoint text: a partial checkpoint was allowed (--allow-partial)


#: A renderer: the result and the options, to the text written.
Renderer = Callable[[Any, RenderOptions], str]


class ResultType(NamedTuple):
    """A type of result, named by where it is defined (so that naming it imports nothing)."""

    module: str
    name: str
    noun: str  # for messages: "an audit report has no ... output"

    @property
    def path(self) -> str:
        return f"{self.module}.{self.name}"


REPORT = ResultType("driftscan.report.contract", "Report", "an audit report")
PLAN = ResultType("driftscan.reinstall.plan", "Plan", "a plan")
SCAN = ResultType("driftscan.lint.files", "ScanResult", "a scan result")
GUARD = ResultType("driftscan.reinstall.guard.model", "GuardReport", "a guard report")
RESTORE = ResultType("driftscan.reinstall.restore", "RestoreReport", "a restore report")
REAPPLY = ResultType("driftscan.reinstall.reapply", "ReapplyReport", "a reapply report")
CHECKPOINT = ResultType("driftscan.reinstall.checkpoint", "Written", "a written checkpoint")
COMPARE = ResultType("driftscan.compare.model", "CompareReport", "a comparison")
FLEET = ResultType("driftscan.fleet.model", "FleetResult", "a fleet result")


class NotRenderable(DriftscanError, ValueError):
    """No renderer for this result in this format (or for this kind of value at all)."""


# Each renderer below imports its module when called. Each takes the options of today's command line.

def _audit_text(report: Report, options: RenderOptions) -> str:
    from .text import render_text, summary_line

    if options.quiet:
        return summary_line(report) + "\n"
    return render_text(report, diffs=options.diffs or options.verbose, show_upstream=options.show_upstream,
                       verbose=options.verbose)


def _audit_json(report: Report, options: RenderOptions) -> str:
    from .json import render_json

    return render_json(report)


def _audit_sarif(report: Report, options: RenderOptions) -> str:
    from .sarif import render_sarif

    return render_sarif(report)


def _audit_markdown(report: Report, options: RenderOptions) -> str:
    from .markdown import render_markdown

    return render_markdown(report)


def _audit_github(report: Report, options: RenderOptions) -> str:
    from .github import render_github

    return render_github(report, show_upstream=options.show_upstream)


def _plan_text(plan: Plan, options: RenderOptions) -> str:
    from .planview import render_plan_text

    return render_plan_text(plan)


def _plan_json(plan: Plan, options: RenderOptions) -> str:
    from .planview import render_plan_json

    return render_plan_json(plan)


def _scan_text(result: ScanResult, options: RenderOptions) -> str:
    if options.statistics:
        from .statistics import render_statistics

        return render_statistics(result)
    from .scanview import render_scan_text

    return render_scan_text(result)


def _scan_json(result: ScanResult, options: RenderOptions) -> str:
    from .scanview import render_scan_json

    return render_scan_json(result)


def _scan_sarif(result: ScanResult, options: RenderOptions) -> str:
    from .sarif import render_scan_sarif

    return render_scan_sarif(result)


def _guard_text(report: GuardReport, options: RenderOptions) -> str:
    from .guardview import render_guard_text

    return render_guard_text(report)


def _guard_json(report: GuardReport, options: RenderOptions) -> str:
    from .guardview import render_guard_json

    return render_guard_json(report)


def _restore_text(report: RestoreReport, options: RenderOptions) -> str:
    from .restoreview import render_restore_text

    return render_restore_text(report)


def _reapply_text(report: ReapplyReport, options: RenderOptions) -> str:
    from .restoreview import render_reapply_text

    return render_reapply_text(report)


def _restore_json(report: RestoreReport | ReapplyReport, options: RenderOptions) -> str:
    from .restoreview import render_restore_json

    return render_restore_json(report)


def _checkpoint_text(written: Written, options: RenderOptions) -> str:
    from .restoreview import render_checkpoint_text

    return render_checkpoint_text(written, options.allow_partial)


def _compare_text(report: CompareReport, options: RenderOptions) -> str:
    from .compare import render_compare_text

    return render_compare_text(report, verbose=options.verbose)


def _compare_json(report: CompareReport, options: RenderOptions) -> str:
    from .compare import render_compare_json

    return render_compare_json(report, verbose=options.verbose)


def _compare_markdown(report: CompareReport, options: RenderOptions) -> str:
    from .compare import render_compare_markdown

    return render_compare_markdown(report, verbose=options.verbose)


def _fleet(name: str) -> Renderer:
    """fleet/render.py's ``name``: fleet sits above render/ (it needs Ray), so it is found by name."""

    def render_fleet(result: Any, options: RenderOptions) -> str:
        text: str = getattr(importlib.import_module("driftscan.fleet.render"), name)(result, verbose=options.verbose)
        return text

    return render_fleet


_T, _J, _S, _M, _G = (OutputFormat.TEXT, OutputFormat.JSON, OutputFormat.SARIF, OutputFormat.MARKDOWN,
                      OutputFormat.GITHUB)

#: Every renderer, by result type then format; a type's formats in the order ``--format`` has listed them.
_TABLE: dict[ResultType, dict[OutputFormat, Renderer]] = {
    REPORT: {_T: _audit_text, _J: _audit_json, _S: _audit_sarif, _M: _audit_markdown, _G: _audit_github},
    PLAN: {_T: _plan_text, _J: _plan_json},
    SCAN: {_T: _scan_text, _J: _scan_json, _S: _scan_sarif},
    GUARD: {_T: _guard_text, _J: _guard_json},
    RESTORE: {_T: _restore_text, _J: _restore_json},
    REAPPLY: {_T: _reapply_text, _J: _restore_json},
    CHECKPOINT: {_T: _checkpoint_text},
    COMPARE: {_T: _compare_text, _J: _compare_json, _M: _compare_markdown},
    FLEET: {_T: _fleet("render_fleet_text"), _J: _fleet("render_fleet_json"), _M: _fleet("render_fleet_markdown")},
}
_BY_PATH = {kind.path: kind for kind in _TABLE}


def result_types() -> tuple[ResultType, ...]:
    return tuple(_TABLE)


def formats(kind: ResultType) -> tuple[OutputFormat, ...]:
    """The formats ``kind`` renders to, in ``--format``'s order."""
    return tuple(_TABLE[kind])


def format_names(kind: ResultType) -> list[str]:
    """``formats(kind)`` as ``--format`` spells them (the command line's choices)."""
    return [fmt.value for fmt in _TABLE[kind]]


def result_type(result: object) -> ResultType:
    """The registered type ``result`` is an instance of (a subclass of one counts as it)."""
    for cls in type(result).__mro__:
        kind = _BY_PATH.get(f"{cls.__module__}.{cls.__qualname__}")
        if kind is not None:
            return kind
    raise NotRenderable(f"no renderer takes a {type(result).__name__}: driftscan renders "
                        + ", ".join(kind.name for kind in _TABLE))


def renderer(kind: ResultType, fmt: OutputFormat) -> Renderer:
    """The renderer of ``kind`` in ``fmt``; NotRenderable, naming the formats that apply, when there is none."""
    try:
        fmt = OutputFormat(fmt)
    except ValueError:
        raise NotRenderable(f"no output format {fmt!r}: one of {', '.join(f.value for f in OutputFormat)}") from None
    found = _TABLE[kind].get(fmt)
    if found is None:
        raise NotRenderable(f"{kind.noun} has no {fmt.value} output: {', '.join(format_names(kind))}")
    return found


def render(result: object, fmt: OutputFormat, options: RenderOptions = RenderOptions()) -> str:
    """``result`` rendered in ``fmt``: the text to write, as is (the command line makes it inert where needed)."""
    return renderer(result_type(result), fmt)(result, options)
