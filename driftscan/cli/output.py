"""Where a command's rendered result goes: stdout or a file written atomically, made inert where the
format does not escape text itself, coloured only for a terminal."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, TypeVar

import click

from ..fs.atomic import write_atomic
from ..fs.paths import inert, line_safe
from ..render.registry import OutputFormat, RenderOptions, render
from ..report.policy import FailOn

if TYPE_CHECKING:
    from ..report.contract import Report

M = TypeVar("M")

# Start-up stays light: the renderers and the report models (pydantic) are imported by the
# commands that build a report, so a command settled from its cache (a warm scan) never pays for them.

# Formats that escape control characters themselves (JSON strings: json, sarif, cyclonedx; short's C-quoted paths); the
# others are shown as written, so a file name from the audited tree is made inert first (paths.inert).
ESCAPED_FORMATS = {"json", "sarif", "short", "cyclonedx"}


def write(text: str, fmt: str, output: str | None, color: bool = False) -> bool:
    """Write a rendered report to ``output`` (atomically; ``-`` is stdout) or stdout; True if to a file."""
    if fmt not in ESCAPED_FORMATS:
        text = inert(text)
    if color:
        from ..render.text import colorize  # the report classes: 6-9 ms a warm scan does not pay

        text = colorize(text)
    if output and output != "-":
        write_atomic(output, text)
        return True
    click.echo(text, nl=False, color=True if color else None)  # click strips ANSI off a terminal
    return False


def for_text(model: M, fmt: str) -> M:
    """Text output shows every value from the tree on one line (paths.line_safe)."""
    return model if fmt in ESCAPED_FORMATS else line_safe(model)


def emit(report: Report, fmt: str, output: str | None, *, diffs: bool = False, show_upstream: bool = False,
         verbose: bool = False, quiet: bool = False, fail_on: tuple[FailOn, ...] = (FailOn.DRIFT,),
         exit_zero: bool = False) -> None:
    """``fail_on``, ``exit_zero``: the policy the command exits by (GitHub annotations' levels follow it)."""
    options = RenderOptions(diffs=diffs, show_upstream=show_upstream, verbose=verbose, quiet=quiet,
                            fail_on=fail_on, exit_zero=exit_zero)
    if write(render(for_text(report, fmt), OutputFormat(fmt), options), fmt, output,
             color=fmt == "text" and use_color(output)):
        from ..render.text import summary_line

        click.echo(inert(summary_line(report)), err=True)


def use_color(output: str | None) -> bool:
    """Colour only for a terminal, and never with NO_COLOR set (https://no-color.org)."""
    if output and output != "-":
        return False
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return sys.stdout.isatty() and os.environ.get("TERM") != "dumb"
