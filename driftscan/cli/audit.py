"""``driftscan audit``: installed files against their RECORDs, model directories against their provenance."""

from __future__ import annotations

import sys

import click

from ..render.formats import REPORT_FORMATS
from .configuration import load_config
from .exits import exit_status, fail_on_policies, guarded
from .options import (app_data_option, codes, config_option, jobs_option, lock_group_option, model_options, no_cache_option,
                      output_options, policy_options, pristine_options, rule_options, target_options, text_options, uv_cache_option)
from .output import emit
from .progress import Progress
from .targets import config_targets, default_venv, say_empty_cache, wheel_dirs
from ..api import Need, add_processes, run


@click.command()
@target_options("Audit this virtual environment (its interpreter is not run).",
                "Audit a bare site-packages directory (repeatable).")
@output_options(sorted(REPORT_FORMATS))
@click.option("--strict", is_flag=True, help="Distributions that cannot be verified also set exit bit 2.")
@jobs_option()
@uv_cache_option
@app_data_option
@no_cache_option("Trust no cache (stat cache, parsed RECORDs, clean index): re-hash every file (paranoid mode).")
@model_options
@rule_options
@click.option("--deep", is_flag=True, help="Hash large model files too (default: presence, size and mtime).")
@click.option("--revision", metavar="REV", help="Model directories: the ref or commit to compare against.")
@click.option("--manifest", metavar="FILE", help="Model directories: compare against this driftscan manifest.")
@pristine_options
@click.option("--no-pristine", is_flag=True,
              help="Do not look for originals (no diffs, no injected/upstream origin for findings).")
@click.option("--lock", "locks", metavar="FILE", multiple=True, type=click.Path(dir_okay=False),
              help="Check the environment against this lockfile (uv.lock, pylock.toml, pdm.lock, poetry.lock, "
                   "requirements with --hash; repeatable): versions and sources (lock-mismatch), and the RECORD "
                   "of each wheel it names by digest, when found, against the installed one (record-rewritten).")
@lock_group_option
@click.option("--processes", is_flag=True,
              help="After the audit, also list the processes that run the environment and whether they run what "
                   "is on disk (driftscan procs; --fail-on stale-process sets bit 1 for one that does not).")
@text_options
@policy_options
@config_option
@guarded
def audit(venv: str | None, site_packages: tuple[str, ...], fmt: str, output: str | None, strict: bool,
          jobs: int | None, uv_cache: str | None, no_cache: bool, model_dirs: tuple[str, ...], hf_cache: str | None,
          select: tuple[str, ...], ignore: tuple[str, ...], no_plugins: bool, deep: bool, revision: str | None,
          manifest: str | None, wheels: tuple[str, ...], fetch: bool, no_pristine: bool, show_diffs: bool,
          verbose: bool, quiet: bool, show_upstream: bool, locks: tuple[str, ...], lock_groups: tuple[str, ...], processes: bool, fail_on: tuple[str, ...], exit_zero: bool,
          config_file: str | None) -> None:
    """Check installed files against their RECORDs and model directories against their provenance.

    Lists files no RECORD owns, debug code in drifted Python files and the dumps it left. With no
    --venv or --site-packages: the activated venv (VIRTUAL_ENV), CONDA_PREFIX, the uv project's
    .venv, the python3 on PATH, else driftscan's own; --model-dir and --hf-cache add to it. Exit
    status: bit 1 drift found, bit 2 something could not be checked (or a usage error).
    """
    config = load_config(config_file)
    policies = fail_on_policies(fail_on)  # a usage error before the audit runs
    dirs, hub, include_environment = config_targets(config, venv, site_packages, model_dirs, hf_cache)
    for flag, value in (("--revision", revision), ("--manifest", manifest)):
        if value and not dirs and hub is None:
            raise click.UsageError(f"{flag} applies to model directories: give --model-dir (or --hf-cache) too")
    if lock_groups and not locks:
        raise click.UsageError("--lock-group applies to a lockfile: give --lock too")
    venv, chosen_because = default_venv(venv, site_packages, bool(dirs) or hub is not None, include_environment)
    say_empty_cache("audit", hub)
    wheels = wheel_dirs(wheels)
    result = run(venv, site_packages, jobs=jobs, uv_cache=uv_cache or config.uv_cache, use_cache=not no_cache,
                 model_dirs=dirs, hf_cache=hub, deep=deep, revision=revision, manifest=manifest, progress=Progress(),
                 select=codes(select) or config.select, ignore=codes(ignore) or config.ignore,
                 rules_modules=config.rules_modules, include_environment=include_environment,
                 need=Need.REPORT, plugins=not no_plugins, compare=not no_pristine, wheels=wheels, fetch=fetch,
                 chosen_because=chosen_because, accept=config.accept, accept_source=config.source, locks=locks,
                 lock_groups=lock_groups)
    report = add_processes(result) if processes else result.report
    emit(report, fmt, output, diffs=show_diffs, show_upstream=show_upstream, verbose=verbose, quiet=quiet,
         fail_on=policies, exit_zero=exit_zero)
    sys.exit(exit_status(report, strict, policies, exit_zero))
