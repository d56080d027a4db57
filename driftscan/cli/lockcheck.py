"""``driftscan lock-check FILE``: does this environment match this lockfile? One line per mismatch."""

from __future__ import annotations

import sys

import click

from ..render.registry import LOCK_CHECK, OutputFormat, RenderOptions, format_names, render
from .configuration import load_config
from .exits import FAIL_ON, fail_on_policies, guarded
from .options import (config_option, lock_group_option, output_options, pristine_options, target_options,
                      uv_cache_option)
from .output import for_text, write
from .targets import default_venv, say_target, wheel_dirs
from ..api import Need, run
from ..report.lockcheck import DEFAULT_FAIL_ON, lock_check_exit_status, lock_check_of


@click.command("lock-check")
@click.argument("locks", metavar="LOCKFILE...", nargs=-1, required=True, type=click.Path(dir_okay=False))
@target_options("The environment to check (default: the active or nearest one, as audit finds it).")
@output_options(format_names(LOCK_CHECK), "result")
@lock_group_option
@uv_cache_option
@pristine_options
@click.option("--strict", is_flag=True, help="A wheel the lock names that is not found also sets exit bit 2.")
@click.option("--fail-on", "fail_on", metavar="POLICY[,POLICY]", multiple=True,
              help="What sets exit bit 1: " + ", ".join(FAIL_ON) + " (default: lock-mismatch,record-rewritten; "
                   "drift: either; never: nothing).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 whatever is found (what could not be checked still sets bit 2).")
@click.option("--verbose", "-v", is_flag=True, help="Each mismatch's remedy, and why a wheel was not verified.")
@config_option
@guarded
def lock_check(locks: tuple[str, ...], venv: str | None, site_packages: tuple[str, ...], fmt: str,
               output: str | None, lock_groups: tuple[str, ...], uv_cache: str | None, wheels: tuple[str, ...], fetch: bool, strict: bool,
               fail_on: tuple[str, ...], exit_zero: bool, verbose: bool, config_file: str | None) -> None:
    """Check that the environment is what LOCKFILE pins (uv.lock, pylock.toml, pdm.lock, poetry.lock,
    or requirements with --hash; several: their union).

    Each installed distribution's version and source against the lock's entry for this environment
    (its markers, the environment's Python and this platform applied), the distributions the lock
    lacks, and those it requires that are not installed; then, for each wheel the lock names by
    sha256 and driftscan finds (uv's or pip's cache, --wheels, --fetch), the installed RECORD row by
    row against the wheel's own: a file edited with its RECORD row rewritten to match is found only
    so. One line per mismatch. Exit status: bit 1 a mismatch (--fail-on), bit 2 something could
    not be checked (a lock unreadable; with --strict also a wheel not found).
    """
    config = load_config(config_file)
    policies = fail_on_policies(fail_on) if fail_on else DEFAULT_FAIL_ON
    venv, why = default_venv(venv, site_packages)
    say_target("lock-check", venv, why)
    result = run(venv, site_packages, uv_cache=uv_cache or config.uv_cache, need=Need.REPORT,
                 wheels=wheel_dirs(wheels), fetch=fetch, locks=locks, lock_groups=lock_groups, accept=config.accept,
                 accept_source=config.source, rules_modules=config.rules_modules)
    checked = lock_check_of(result.report)
    write(render(for_text(checked, fmt), OutputFormat(fmt), RenderOptions(verbose=verbose)), fmt, output)
    sys.exit(lock_check_exit_status(checked, policies, exit_zero, strict))
