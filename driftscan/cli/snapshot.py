"""``driftscan snapshot`` records every file as a baseline; ``driftscan diff`` reports drift against it."""

from __future__ import annotations

import sys

import click

from ..fs.paths import inert
from ..render.formats import REPORT_FORMATS
from .configuration import load_config
from .exits import EXIT_CLEAN, EXIT_INCOMPLETE, exit_status, fail_on_policies, guarded
from .options import (codes, config_option, jobs_option, no_cache_option, output_options, policy_options,
                      rule_options, target_options, text_options)
from .output import emit
from .progress import Progress
from .targets import default_venv, say_target
from ..api import diff as run_diff
from ..api import snapshot as take


@click.command()
@target_options("Record this virtual environment (every file, bin/ included).", "Record a bare site-packages.")
@click.option("--model-dir", "model_dirs", metavar="PATH", multiple=True, help="Record a model directory.")
@click.option("--output", "-o", metavar="FILE", required=True, help="Where to write the snapshot (atomically).")
@jobs_option("hashing threads")
@guarded
def snapshot(venv: str | None, site_packages: tuple[str, ...], model_dirs: tuple[str, ...], output: str,
             jobs: int | None) -> None:
    """Record every file (xxh3-128, size, mode, mtime; small text files embedded) as a baseline.

    With no target, records the environment audit would (VIRTUAL_ENV, CONDA_PREFIX, ...). One root gives a plain manifest (also
    usable as `audit --model-dir DIR --manifest FILE`); several give a bundle.
    """
    venv, chosen_because = default_venv(venv, site_packages, bool(model_dirs))
    say_target("snapshot", venv, chosen_because, model_dirs, alone=venv is None and bool(model_dirs))
    problems = take(output, venv=venv, site_packages=site_packages, model_dirs=model_dirs, jobs=jobs,
                    progress=Progress())
    for p in problems:
        click.echo(inert(f"driftscan: not recorded: {p.path}: {p.message}"), err=True)
    click.echo(inert(f"snapshot written to {output}"), err=True)
    sys.exit(EXIT_INCOMPLETE if problems else EXIT_CLEAN)


@click.command()
@click.argument("snapshot_file", metavar="SNAPSHOT")
@target_options("Compare only this venv's root.", None)
@click.option("--model-dir", "model_dirs", metavar="PATH", multiple=True, help="Compare only this model directory.")
@output_options(sorted(REPORT_FORMATS))
@click.option("--deep", is_flag=True, help="Hash large files too (default: size and mtime for files over 16 MiB).")
@jobs_option("hashing threads")
@click.option("--strict", is_flag=True, help="Unverifiable roots also set exit bit 2.")
@no_cache_option("Trust no signature or cache: hash every file, even one whose size, mtime and mode match the "
                 "snapshot, and parse every RECORD (paranoid mode).")
@rule_options
@text_options
@policy_options
@config_option
@guarded
def diff(snapshot_file: str, venv: str | None, site_packages: tuple[str, ...], model_dirs: tuple[str, ...], fmt: str,
         output: str | None, deep: bool, jobs: int | None, strict: bool, no_cache: bool, select: tuple[str, ...],
         ignore: tuple[str, ...], no_plugins: bool, show_diffs: bool, verbose: bool, quiet: bool,
         show_upstream: bool, fail_on: tuple[str, ...], exit_zero: bool, config_file: str | None) -> None:
    """Report drift against a snapshot, with audit's kinds and report format (exit 0: unchanged).

    A file whose size, mtime and mode match the snapshot is trusted by that signature, not hashed
    (the report counts them: summary.trusted_by_signature); --no-cache hashes every file."""
    config = load_config(config_file)
    policies = fail_on_policies(fail_on)  # a usage error before the audit runs
    report = run_diff(snapshot_file, venv=venv, site_packages=site_packages, model_dirs=model_dirs, jobs=jobs,
                      deep=deep, progress=Progress(), select=codes(select) or config.select,
                      ignore=codes(ignore) or config.ignore, rules_modules=config.rules_modules,
                      plugins=not no_plugins, use_cache=not no_cache, accept=config.accept, accept_source=config.source,
                      chosen_because=None if venv is not None or site_packages or model_dirs else
                      "every root the snapshot recorded (no --venv, --site-packages or --model-dir)")
    emit(report, fmt, output, diffs=show_diffs, show_upstream=show_upstream, verbose=verbose, quiet=quiet,
         fail_on=policies, exit_zero=exit_zero)
    if report.summary.trusted_by_signature and fmt == "text" and not quiet:
        click.echo(f"driftscan: {report.summary.trusted_by_signature} of {report.summary.files_checked} files trusted"
                   " by signature (size, mtime and mode as in the snapshot), not hashed; --no-cache hashes them",
                   err=True)
    sys.exit(exit_status(report, strict, policies, exit_zero))
