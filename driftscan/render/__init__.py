"""Renderers turn a Report into text for people or machines. One function per format."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..report import Report
from .github import render_github
from .json import render_json
from .markdown import render_markdown
from .sarif import render_sarif
from .text import render_text

RENDERERS: dict[str, Callable[[Report], str]] = {
    "text": render_text,
    "json": render_json,
    "sarif": render_sarif,
    "markdown": render_markdown,
    "github": render_github,
}

SCHEMA_KINDS = ("audit", "scan", "plan", "compare")


def json_schema(kind: str = "audit") -> dict[str, Any]:
    """The JSON Schema of ``audit``'s (and ``diff``'s) report, ``scan --format json`` or ``plan --format json``."""
    if kind == "audit":
        from ..report import report_schema

        return report_schema()
    if kind == "scan":
        from .scan import scan_schema

        return scan_schema()
    if kind == "plan":
        from ..plan import Plan

        return Plan.model_json_schema()
    if kind == "compare":
        from ..compare import compare_schema

        return compare_schema()
    raise ValueError(f"no schema for {kind!r}: one of {', '.join(SCHEMA_KINDS)}")


__all__ = ["RENDERERS", "SCHEMA_KINDS", "json_schema", "render_github", "render_json", "render_markdown",
           "render_text"]
