"""Renderers turn a result (an audit report, a plan, a scan, ...) into text for people or machines.

``render(result, fmt, options)`` (registry.py) is the one way in: one table of renderers keyed by the
result's type and the ``OutputFormat``. Importing this package imports no renderer (the command line
imports it at start-up): each is imported when first used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .formats import REPORT_FORMATS
from .registry import NotRenderable, OutputFormat, RenderOptions, Renderer, render

if TYPE_CHECKING:
    from ..report.contract import Report


class _ReportRenderers(Mapping[str, "Callable[[Report], str]"]):
    """``RENDERERS``: each report format's one-argument function ``render_FMT`` of render/FMT.py, by
    name, imported when looked up (as it always was; ``render`` is the way in that takes options)."""

    def __getitem__(self, fmt: str) -> Callable[[Report], str]:
        if fmt not in REPORT_FORMATS:
            raise KeyError(fmt)
        function: Callable[[Report], str] = getattr(importlib.import_module(f".{fmt}", __name__), f"render_{fmt}")
        return function

    def __iter__(self) -> Iterator[str]:
        return iter(REPORT_FORMATS)

    def __len__(self) -> int:
        return len(REPORT_FORMATS)


RENDERERS: Mapping[str, Callable[[Report], str]] = _ReportRenderers()


def _imported(module: str, name: str) -> Callable[..., str]:
    """render/``module``.py's ``name``, imported when first called (the report renderers by their
    names here, as they always were)."""

    def call(*args: Any, **kwargs: Any) -> str:
        function: Callable[..., str] = getattr(importlib.import_module(f".{module}", __name__), name)
        return function(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


render_text = _imported("text", "render_text")
render_json = _imported("json", "render_json")
render_sarif = _imported("sarif", "render_sarif")
render_markdown = _imported("markdown", "render_markdown")
render_github = _imported("github", "render_github")
render_short = _imported("short", "render_short")
render_cyclonedx = _imported("cyclonedx", "render_cyclonedx")


SCHEMA_KINDS = ("audit", "scan", "plan", "compare", "fleet", "guard", "procs", "lock-check", "patch-export",
                "patch-apply", "patch-rebase")
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def schema_id(kind: str, version: str) -> str:
    """A published schema's ``$id``: ``urn:driftscan:schema:<kind>:<schema_version>`` (a URN: it names
    the schema and resolves nowhere, so no validator fetches it)."""
    return f"urn:driftscan:schema:{kind}:{version}"


def _model_schema(kind: str) -> dict[str, Any]:
    if kind == "audit":
        from ..report.contract import report_schema

        schema: dict[str, Any] = report_schema()
        return schema
    if kind == "scan":
        from .scanmodel import scan_schema

        scan: dict[str, Any] = scan_schema()
        return scan
    if kind == "plan":
        from ..reinstall.plan import Plan

        return Plan.model_json_schema()
    if kind == "compare":
        from ..compare import compare_schema

        return compare_schema()
    if kind == "fleet":
        from ..fleet.model import FleetResult  # pydantic only: Ray is not imported

        return FleetResult.model_json_schema()
    if kind == "guard":
        from ..reinstall.guard import GuardReport

        return GuardReport.model_json_schema()
    if kind == "procs":
        from ..procs.model import procs_schema

        return procs_schema()
    if kind == "lock-check":
        from ..report.lockcheck import lock_check_schema

        return lock_check_schema()
    if kind == "patch-export":
        from ..patches.export import patch_export_schema

        return patch_export_schema()
    if kind == "patch-apply":
        from ..patches.apply import patch_apply_schema

        return patch_apply_schema()
    if kind == "patch-rebase":
        from ..patches.rebase import patch_rebase_schema

        return patch_rebase_schema()
    raise ValueError(f"no schema for {kind!r}: one of {', '.join(SCHEMA_KINDS)}")


def json_schema(kind: str = "audit") -> dict[str, Any]:
    """The published JSON Schema of ``audit``'s (and ``diff``'s) report or of ``scan``, ``plan``,
    ``compare``, ``fleet``, ``guard``, ``procs``, ``lock-check``, ``patch export``, ``patch apply`` or ``patch rebase --format json``: the model's schema with ``$schema`` (the
    2020-12 dialect pydantic writes) and ``$id`` (``schema_id``) first."""
    schema = _model_schema(kind)
    version = schema.get("properties", {}).get("schema_version", {}).get("const", "1")
    return {"$schema": SCHEMA_DIALECT, "$id": schema_id(kind, str(version)), **schema}


__all__ = ["NotRenderable", "OutputFormat", "REPORT_FORMATS", "RENDERERS", "RenderOptions", "Renderer", "SCHEMA_KINDS",
           "json_schema", "render", "render_github", "render_json", "render_markdown", "render_sarif", "render_text"]
