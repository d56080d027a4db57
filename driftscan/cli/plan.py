"""``driftscan plan``: what a reinstall will undo and what will survive it."""

from __future__ import annotations

import sys

import click

from ..render.formats import PLAN_FORMATS
from ..render.registry import OutputFormat, render
from .configuration import load_config
from .exits import EXIT_DRIFT, exit_status, fail_on_policies, guarded
from .options import (app_data_option, codes, config_option, jobs_option, model_options, no_cache_option,
                      output_options, policy_options, pristine_options, rule_options, target_options, uv_cache_option)
from .output import for_text, write
from .patchsource import found_patch_source, patch_source_options
from .targets import config_targets, default_venv, say_empty_cache, say_target, wheel_dirs
from ..api import plan as run_plan


def _names(values: tuple[str, ...]) -> list[str]:
    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    if not names:
        raise click.UsageError("--reinstall needs at least one distribution name")
    return names


@click.command()
@click.option("--reinstall", "reinstall", metavar="NAME[,NAME...]", multiple=True, required=True,
              help="The distributions you are about to reinstall (repeatable, comma-separated).")
@click.option("--installer", type=click.Choice(["pip", "uv"]),
              help="Predict for this installer (default: each distribution's INSTALLER).")
@click.option("--from", "source", metavar="WHEEL|DIR|index",
              help="Where the reinstall installs from: a wheel file, a find-links directory, or the index "
                   "(default: the source each distribution was installed from, as direct_url.json, INSTALLER "
                   "and uv's cache tell).")
@click.option("--checkpoint", "checkpoint", metavar="DIR",
              help="A checkpoint already taken: no checkpoint step for the content it holds.")
@target_options()
@click.option("--expect", "expect", metavar="FILE", help="TOML expectations to check now and after the reinstall.")
@output_options(sorted(PLAN_FORMATS), "plan")
@jobs_option()
@uv_cache_option
@app_data_option
@no_cache_option("Trust no cache: re-hash every file (paranoid mode).")
@model_options
@pristine_options
@patch_source_options
@rule_options
@policy_options
@config_option
@guarded
def plan(reinstall: tuple[str, ...], installer: str | None, source: str | None, checkpoint: str | None,
         venv: str | None, site_packages: tuple[str, ...], expect: str | None, fmt: str, output: str | None,
         jobs: int | None, uv_cache: str | None, no_cache: bool, model_dirs: tuple[str, ...], hf_cache: str | None,
         wheels: tuple[str, ...], fetch: bool, select: tuple[str, ...], ignore: tuple[str, ...], no_plugins: bool,
         patches_dir: str | None, manifest: str | None, fail_on: tuple[str, ...], exit_zero: bool,
         config_file: str | None) -> None:
    """What will reinstalling NAME undo, and what will survive it?

    Each drift is marked WIPED, SURVIVES or MAY SURVIVE with the reason, for a reinstall from
    --from (default: where each distribution was installed from), followed by the steps: a
    checkpoint first when the reinstall destroys content, `uv cache clean` first where the
    reinstall would link an edited file back, the exact reinstall command, dumps to delete, and the
    expectations that already hold and survive (steps you can skip). With the team's patches
    (--patches, --manifest, the configuration's manifest, or ./patches), each patched file's
    distribution says whether its patch is re-applied by `driftscan patch apply` after the
    reinstall or, on another version, unused (with the `driftscan patch rebase` line).
    Exit status: bit 1 when an expectation is not known to hold after the reinstall, or when what
    survives (or may survive) the reinstall meets --fail-on (default: any drift); bit 2 as for audit.
    """
    config = load_config(config_file)
    dirs, hub, include_environment = config_targets(config, venv, site_packages, model_dirs, hf_cache)
    venv, chosen_because = default_venv(venv, site_packages)  # a reinstall is always of an environment
    say_target("plan", venv, chosen_because, dirs, hub)
    say_empty_cache("plan", hub)
    result = run_plan(_names(reinstall), venv=venv, site_packages=site_packages, installer=installer,
                      expect=expect, jobs=jobs, uv_cache=uv_cache or config.uv_cache, use_cache=not no_cache,
                      model_dirs=dirs, hf_cache=hub, include_environment=True,  # model directories add to it
                      wheels=wheel_dirs(wheels), fetch=fetch,
                      select=codes(select) or config.select, ignore=codes(ignore) or config.ignore,
                      rules_modules=config.rules_modules, plugins=not no_plugins, source=source,
                      checkpoint=checkpoint, chosen_because=chosen_because,
                      accept=config.accept, accept_source=config.source,  # accepted drift never counts
                      patches=found_patch_source(patches_dir, manifest, config))
    write(render(for_text(result, fmt), OutputFormat(fmt)), fmt, output)
    # The policy looks at what the reinstall leaves: the drifts that survive or may survive it.
    left = set(result.survives) | set(result.may_survive)
    remaining = result.audit.model_copy(update={"drifts": [d for d in result.audit.drifts if d.path in left]})
    status = exit_status(remaining, False, fail_on_policies(fail_on), exit_zero)
    if not exit_zero and any(e.holds_after is not True for e in result.expectations):
        status |= EXIT_DRIFT
    sys.exit(status)
