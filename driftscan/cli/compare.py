"""``driftscan compare``: audit reports or snapshots of several machines, against the majority."""

from __future__ import annotations

import sys

import click

from ..render.registry import COMPARE, OutputFormat, RenderOptions, format_names, render
from .exits import EXIT_CLEAN, EXIT_DRIFT, EXIT_INCOMPLETE, guarded
from .options import output_options
from .output import write


@click.command()
@click.argument("inputs", metavar="REPORT_OR_SNAPSHOT...", nargs=-1, required=True)
@output_options(format_names(COMPARE), "comparison")
@click.option("--verbose", "-v", is_flag=True, help="Text: every path of every machine, not the first 50.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when machines differ.")
@guarded
def compare(inputs: tuple[str, ...], fmt: str, output: str | None, verbose: bool, exit_zero: bool) -> None:
    """Compare audit reports (or snapshots) of several machines; name each machine that deviates
    from the majority, and how. Reports of one environment on one machine (same hostname, venv and
    model directories) are compared before/after in time order: what drift appeared, went away,
    changed, stayed (exit 1: some machine differs, or something changed; 2: an input could not be
    read)."""
    from ..compare import compare_files
    result = compare_files(list(inputs))
    write(render(result, OutputFormat(fmt), RenderOptions(verbose=verbose)), fmt, output)
    status = EXIT_DRIFT if result.differs and not exit_zero else EXIT_CLEAN
    if result.errors:
        status |= EXIT_INCOMPLETE
    sys.exit(status)
