"""Renderers turn a Report into text for people or machines. One function per format."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..report.contract import Report
    from .github import render_github
    from .json import render_json
    from .markdown import render_markdown
    from .sarif import render_sarif
    from .text import render_text

    RENDERERS: dict[str, Callable[[Report], str]]

#: The report formats, by name (the keys of ``RENDERERS``). A module of its own (formats.py) so
#: that the command line names them without importing the renderers, and with them pydantic.
from .formats import REPORT_FORMATS  # noqa: E402

# A report format FMT is the function render_FMT of the module render/FMT.py: REPORT_FORMATS is
# the one registration.
_LAZY = {f"render_{fmt}": fmt for fmt in REPORT_FORMATS}


def __getattr__(name: str) -> Any:  # the lazily imported names, of their own types
    if name == "RENDERERS":
        value: Any = {fmt: __getattr__(f"render_{fmt}") for fmt in REPORT_FORMATS}
    elif name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


SCHEMA_KINDS = ("audit", "scan", "plan", "compare")


def json_schema(kind: str = "audit") -> dict[str, Any]:
    """The JSON Schema of ``audit``'s (and ``diff``'s) report, ``scan --format json`` or ``plan --format json``."""
    if kind == "audit":
        from ..report.contract import report_schema

        schema: dict[str, Any] = report_schema()
        return schema
    if kind == "scan":
        from .scan import scan_schema

        scan: dict[str, Any] = scan_schema()
        return scan
    if kind == "plan":
        from ..reinstall.plan import Plan

        return Plan.model_json_schema()
    if kind == "compare":
        from ..compare import compare_schema

        return compare_schema()
    raise ValueError(f"no schema for {kind!r}: one of {', '.join(SCHEMA_KINDS)}")


__all__ = ["REPORT_FORMATS", "RENDERERS", "SCHEMA_KINDS", "json_schema", "render_github", "render_json", "render_markdown",
           "render_text"]
