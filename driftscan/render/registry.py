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
from ..report.policy import FailOn

if TYPE_CHECKING:
    from ..lint.files import ScanResult
    from ..report.contract import Report


class OutputFormat(str, Enum):
    """An output format, spelled as ``--format`` takes it."""

    TEXT = "text"
    JSON = "json"
    SARIF = "sarif"
    MARKDOWN = "markdown"
    GITHUB = "github"
    SHORT = "short"
    CYCLONEDX = "cyclonedx"


@dataclass(frozen=True)
class RenderOptions:
    """What the user chose of a rendering; a renderer reads the options that apply to it and ignores the rest."""

    verbose: bool = False  # text: every item, not the first ones (an audit's: its diffs too)
    diffs: bool = False  # audit text: each modified file's diff
    show_upstream: bool = False  # audit text and github: findings the original has too
    quiet: bool = False  # audit text: the summary line only
    statistics: bool = False  # scan text: one count per rule code instead of the findings
    allow_partial: bool = False  # checkpoint text: a partial checkpoint was allowed (--allow-partial)
    fail_on: tuple[FailOn, ...] = (FailOn.DRIFT,)  # audit github: the fail policy the run exits by (--fail-on)
    exit_zero: bool = False  # audit github: nothing fails the run (--exit-zero)


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
PROCS = ResultType("driftscan.procs.model", "ProcsReport", "a procs result")
LOCK_CHECK = ResultType("driftscan.report.lockcheck", "LockCheck", "a lock check")
PATCH_EXPORT = ResultType("driftscan.patches.export", "PatchExport", "a patch export")
PATCH_APPLY = ResultType("driftscan.patches.apply", "PatchApplyReport", "a patch apply result")
PATCH_REBASE = ResultType("driftscan.patches.rebase", "PatchRebase", "a patch rebase result")


class NotRenderable(DriftscanError, ValueError):
    """No renderer for this result in this format (or for this kind of value at all)."""


def _lazy(module: str, name: str, call: Callable[[Callable[..., str], Any, RenderOptions], str] | None = None,
          ) -> Renderer:
    """The renderer ``name`` of ``module`` (under driftscan/), imported when first called: the one
    place a renderer module is imported. ``call`` hands it the options it takes (default: none)."""

    def render_lazily(result: Any, options: RenderOptions) -> str:
        function: Callable[..., str] = getattr(importlib.import_module(f"driftscan.{module}"), name)
        return call(function, result, options) if call is not None else function(result)

    render_lazily.__qualname__ = f"{module}.{name}"
    return render_lazily


def _audit_text(report: Report, options: RenderOptions) -> str:
    if options.quiet:
        return _lazy("render.text", "summary_line")(report, options) + "\n"
    return _lazy("render.text", "render_text", lambda f, r, o: f(r, diffs=o.diffs or o.verbose,
                                                                 show_upstream=o.show_upstream,
                                                                 verbose=o.verbose))(report, options)


def _scan_text(result: ScanResult, options: RenderOptions) -> str:
    if options.statistics:
        return _lazy("render.statistics", "render_statistics")(result, options)
    return _lazy("render.scanview", "render_scan_text")(result, options)


def _verbose(function: Callable[..., str], result: Any, options: RenderOptions) -> str:
    return function(result, verbose=options.verbose)


_T, _J, _S, _M, _G, _SH, _CDX = (OutputFormat.TEXT, OutputFormat.JSON, OutputFormat.SARIF, OutputFormat.MARKDOWN,
                                 OutputFormat.GITHUB, OutputFormat.SHORT, OutputFormat.CYCLONEDX)

#: Every renderer, by result type then format; a type's formats in the order ``--format`` has listed them.
#: Fleet's renderers live in fleet/render.py: fleet sits above render/ (it needs Ray), so it is named.
_TABLE: dict[ResultType, dict[OutputFormat, Renderer]] = {
    REPORT: {_T: _audit_text, _J: _lazy("render.json", "render_json"), _S: _lazy("render.sarif", "render_sarif"),
             _M: _lazy("render.markdown", "render_markdown"),
             _G: _lazy("render.github", "render_github", lambda f, r, o: f(r, show_upstream=o.show_upstream,
                                                                             fail_on=o.fail_on,
                                                                             exit_zero=o.exit_zero)),
             _SH: _lazy("render.short", "render_short"),
             _CDX: _lazy("render.cyclonedx", "render_cyclonedx")},  # cyclonedx-python-lib: imported here only
    PLAN: {_T: _lazy("render.planview", "render_plan_text"), _J: _lazy("render.planview", "render_plan_json")},
    SCAN: {_T: _scan_text, _J: _lazy("render.scanview", "render_scan_json"),
           _S: _lazy("render.sarif", "render_scan_sarif")},
    GUARD: {_T: _lazy("render.guardview", "render_guard_text"), _J: _lazy("render.guardview", "render_guard_json")},
    RESTORE: {_T: _lazy("render.restoreview", "render_restore_text"),
              _J: _lazy("render.restoreview", "render_restore_json")},
    REAPPLY: {_T: _lazy("render.restoreview", "render_reapply_text"),
              _J: _lazy("render.restoreview", "render_restore_json")},
    CHECKPOINT: {_T: _lazy("render.restoreview", "render_checkpoint_text", lambda f, r, o: f(r, o.allow_partial))},
    COMPARE: {_T: _lazy("render.compare", "render_compare_text", _verbose),
              _J: _lazy("render.compare", "render_compare_json", _verbose),
              _M: _lazy("render.compare", "render_compare_markdown", _verbose)},
    PROCS: {_T: _lazy("render.procsview", "render_procs_text", _verbose),
            _J: _lazy("render.procsview", "render_procs_json")},
    LOCK_CHECK: {_T: _lazy("render.lockview", "render_lock_check_text", _verbose),
                 _J: _lazy("render.lockview", "render_lock_check_json")},
    PATCH_EXPORT: {_T: _lazy("render.patchview", "render_patch_export_text", _verbose),
                   _J: _lazy("render.patchview", "render_patch_export_json")},
    PATCH_APPLY: {_T: _lazy("render.patchapplyview", "render_patch_apply_text", _verbose),
                  _J: _lazy("render.patchapplyview", "render_patch_apply_json")},
    PATCH_REBASE: {_T: _lazy("render.patchrebaseview", "render_patch_rebase_text", _verbose),
                   _J: _lazy("render.patchrebaseview", "render_patch_rebase_json")},
    FLEET: {_T: _lazy("fleet.render", "render_fleet_text", _verbose),
            _J: _lazy("fleet.render", "render_fleet_json", _verbose),
            _M: _lazy("fleet.render", "render_fleet_markdown", _verbose)},
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
