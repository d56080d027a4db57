"""``driftscan scan``: injected debug code in Python files and directories, linter-style."""

from __future__ import annotations

import os
import sys

import click

from .._version import __version__
from ..core.errors import DriftscanError
from ..render.formats import SCAN_FORMATS
from ..render.registry import OutputFormat, RenderOptions, render
from .configuration import load_config
from .exits import EXIT_CLEAN, EXIT_DRIFT, EXIT_INCOMPLETE, guarded
from .options import (SEVERITIES, codes, config_option, jobs_option, no_cache_option, output_options,
                      rule_options)
from .output import write
from .progress import ScanProgress
from ..caches.location import user_cache_dir
from ..lint.files import ParseLimits
from ..lint.scancache import ResultCache
from ..lint.warmscan import scan_paths



@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@rule_options
@output_options(sorted(SCAN_FORMATS), "findings")
@jobs_option("parser processes")
@click.option("--rules-module", "rules_modules", metavar="MODULE", multiple=True,
              help="Also load rules from this importable module (repeatable).")
@click.option("--no-prefilter", is_flag=True, help="Parse every file (slow; the findings are the same).")
@click.option("--strict", is_flag=True,
              help="Also report unused `# noqa: CODE` codes (DBG006 unused-noqa; --ignore DBG006 leaves it out).")
@click.option("--fail-on", type=click.Choice(SEVERITIES), default="medium", show_default=True,
              help="Lowest severity that sets exit bit 1.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 whatever is found (a file not scanned still sets bit 2).")
@click.option("--statistics", is_flag=True, help="Print one count per rule code instead of the findings.")
@no_cache_option("Inspect every file again instead of reusing the results of files unchanged since the last scan.")
@config_option
@guarded
def scan(paths: tuple[str, ...], select: tuple[str, ...], ignore: tuple[str, ...], no_plugins: bool, fmt: str,
         output: str | None, jobs: int | None, rules_modules: tuple[str, ...], no_prefilter: bool, strict: bool,
         fail_on: str, exit_zero: bool, statistics: bool, no_cache: bool, config_file: str | None) -> None:
    """Find injected debug code in Python files and directories (linter-style).

    Exit status as for audit: bit 1 when a finding at or above --fail-on, bit 2 when a file
    could not be scanned or for a usage error.
    """
    missing = [p for p in paths if not os.path.lexists(p)]
    if missing:
        raise DriftscanError(f"{missing[0]}: no such file or directory")
    config = load_config(config_file)
    cache = None
    if not no_cache:
        cache = ResultCache(os.path.join(user_cache_dir(), "scan"), __version__)
    result = scan_paths(paths, select=codes(select) or config.select, ignore=codes(ignore) or config.ignore,
                        jobs=jobs, limits=ParseLimits(prefilter=not no_prefilter), plugins=not no_plugins, unused_noqa=strict,
                        progress=ScanProgress(), cache=cache,
                        extra_rule_modules=[*rules_modules, *config.rules_modules])
    if statistics:  # one count per rule code, as text whatever the --format
        write(render(result, OutputFormat.TEXT, RenderOptions(statistics=True)), "text", output)
    else:
        write(render(result, OutputFormat(fmt)), fmt, output)
    threshold = SEVERITIES.index(fail_on) + 1
    found = any(f.severity.rank >= threshold for _, f in result.findings)
    status = EXIT_DRIFT if found and not exit_zero else EXIT_CLEAN
    if result.errors:
        status |= EXIT_INCOMPLETE
    sys.exit(status)
