"""Renderers turn a Report into text for people or machines. One function per format."""

from __future__ import annotations

from collections.abc import Callable

from ..report import Report
from .json import render_json
from .sarif import render_sarif
from .text import render_text

RENDERERS: dict[str, Callable[[Report], str]] = {
    "text": render_text,
    "json": render_json,
    "sarif": render_sarif,
}

__all__ = ["RENDERERS", "render_json", "render_text"]
