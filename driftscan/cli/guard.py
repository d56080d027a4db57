"""``driftscan guard -- COMMAND``: an install command run with the checkpoint before it and the check after it."""

from __future__ import annotations

import os
import sys

import click

from ..fs.paths import inert
from ..render.registry import GUARD, OutputFormat, format_names, render
from .configuration import load_config
from .exits import guarded
from .options import (codes, config_option, jobs_option, model_options, no_cache_option, output_options,
                      pristine_options, rule_options, target_options, uv_cache_option)
from .output import for_text, write
from .patchsource import found_patch_source, patch_source, patch_source_options
from .targets import config_targets, default_venv, say_empty_cache, wheel_dirs
from ..api import Invocation, guard as run_guard


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- COMMAND [ARGS]...")
@target_options("The environment the command changes (default: the one the command names, else as for audit).")
@model_options
@click.option("--from", "source", metavar="WHEEL|DIR|index",
              help="Where the reinstall comes from (default: read from the command; else as installed).")
@click.option("--checkpoint", "checkpoint_path", metavar="DIR",
              help="Where to write the checkpoint (default: where restore --yes puts its own).")
@click.option("--expect", "expect", metavar="FILE", help="TOML expectations to check before and after.")
@pristine_options
@uv_cache_option
@click.option("--reapply-patches", is_flag=True,
              help="After the command exits 0 (and the audit after it): apply the team's patches, as driftscan patch "
                   "apply --yes does; a conflict or an unused patch makes the exit status non-zero.")
@patch_source_options
@click.option("--allow-unused", is_flag=True, help="With --reapply-patches: an unused patch does not fail the run.")
@click.option("--allow-conflicts", is_flag=True,
              help="With --reapply-patches: a file that conflicts (left as the command wrote it) does not fail the run.")
@click.option("--force", is_flag=True,
              help="Run the command even when guard would refuse (debug code would come back, a partial "
                   "checkpoint, another environment); the report lists what was overridden.")
@output_options(format_names(GUARD))
@jobs_option()
@no_cache_option("Trust no cache: re-hash every file (paranoid mode).")
@rule_options
@config_option
@guarded
def guard(command: tuple[str, ...], venv: str | None, site_packages: tuple[str, ...], model_dirs: tuple[str, ...],
          hf_cache: str | None, source: str | None, checkpoint_path: str | None, expect: str | None,
          wheels: tuple[str, ...], fetch: bool, uv_cache: str | None, reapply_patches: bool, patches_dir: str | None,
          manifest: str | None, allow_unused: bool, allow_conflicts: bool, force: bool, fmt: str, output: str | None,
          jobs: int | None, no_cache: bool, select: tuple[str, ...], ignore: tuple[str, ...], no_plugins: bool,
          config_file: str | None) -> None:
    """Run an install command with the checkpoint before it and the check after it.

    Audits and predicts for the command (pip, uv pip, uv sync, conda/mamba/micromamba, pixi;
    anything else: every drift may survive), writes a whole checkpoint, refuses to start when the
    command would bring debug code back or the checkpoint could not undo it (--force overrides),
    runs the command without a shell (its output passed through; with --format json and no
    --output, its stdout goes to stderr), audits again and reports each prediction against what
    happened. With the team's patches (--patches, --manifest, the configuration's manifest, or
    ./patches) a patched distribution's patch is predicted re-applied by `driftscan patch apply`, or
    unused on the version after; --reapply-patches runs it (patches are not applied after a
    failed command). Exit status: the command's own when it fails; else bit 1 when a prediction did
    not hold or a patch did not apply (a conflict, an unused patch, unless allowed), bit 2 when
    guard refused to start it or something could not be checked.
    """
    if command[0].startswith("-"):  # click hands unknown options on as the command: a typo must not run
        raise click.UsageError(f"no such option: {command[0]} (the command guard runs goes after --)")
    from ..reinstall.guard import exit_status as guard_status, recognise  # pydantic, the pristine package

    config = load_config(config_file)
    if (allow_unused or allow_conflicts) and not reapply_patches:
        raise click.UsageError("--allow-unused and --allow-conflicts go with --reapply-patches")
    patches = (patch_source if reapply_patches else found_patch_source)(patches_dir, manifest, config)
    wheels = wheel_dirs(wheels)
    dirs, hub, _ = config_targets(config, venv, site_packages, model_dirs, hf_cache)
    say_empty_cache("guard", hub)
    chosen_because = None
    if venv is None and not site_packages:  # none named: where the command installs, else as for audit
        where = recognise(list(command)).environment
        if where and (os.path.isfile(os.path.join(where, "pyvenv.cfg")) or os.path.isdir(os.path.join(where,
                                                                                                     "conda-meta"))):
            venv, chosen_because = where, "the command installs into it"
    if chosen_because is None:
        venv, chosen_because = default_venv(venv, site_packages)  # model directories add to it, never replace it

    def say(text: str) -> None:
        click.echo(inert(f"driftscan guard: {text}"), err=True)

    to_file = bool(output and output != "-")
    call = Invocation(tuple(command), stdout=2 if fmt == "json" and not to_file else None)
    report = run_guard(call, venv, site_packages, model_dirs=dirs, hf_cache=hub, source=source,
                       checkpoint_path=checkpoint_path, expect=expect, wheels=wheels, fetch=fetch,
                       uv_cache=uv_cache or config.uv_cache, jobs=jobs, use_cache=not no_cache, force=force,
                       select=codes(select) or config.select, ignore=codes(ignore) or config.ignore,
                       rules_modules=config.rules_modules, plugins=not no_plugins, chosen_because=chosen_because,
                       on_event=say, patches=patches, reapply_patches=reapply_patches, allow_unused=allow_unused,
                       allow_conflicts=allow_conflicts)
    if write(render(for_text(report, fmt), OutputFormat(fmt)), fmt, output):
        s = report.summary
        say(f"report written to {output}: {s.held} held, {s.failed} failed, {s.unjudged} not judged")
    sys.exit(guard_status(report))
