"""``driftscan accept``: keep the current drift of named files, as entries in the configuration."""

from __future__ import annotations

import os
import sys
import datetime

import click

from ..core.errors import DriftscanError
from ..fs.paths import inert, one_line
from .configuration import apply_accepted, load_config
from .exits import EXIT_CLEAN, guarded
from .options import (app_data_option, jobs_option, model_options, no_cache_option, target_options,
                      uv_cache_option)
from .targets import config_targets, default_venv, say_empty_cache
from ..api import Need, run


@click.command()
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--reason", required=True, help="Why this drift is kept (written into each entry; required).")
@click.option("--any-content", is_flag=True,
              help="Accept whatever the file holds (no sha256): the entry survives further edits.")
@click.option("--any-root", is_flag=True,
              help="Do not pin a model directory's drift to its directory (no root): the entry's relpath "
                   "then names that file in every model directory.")
@click.option("--expires", metavar="DATE", help="From this date (YYYY-MM-DD) on the entries are stale.")
@target_options("The virtual environment (default: as for audit).")
@model_options
@uv_cache_option
@app_data_option
@jobs_option()
@no_cache_option()
@click.option("--config", "config_file", metavar="FILE",
              help="The file to add the entries to (default: the configuration found from here upward, a "
                   "driftscan.toml or a pyproject.toml with [tool.driftscan]; else a new ./driftscan.toml).")
@guarded
def accept(paths: tuple[str, ...], reason: str, any_content: bool, any_root: bool, expires: str | None,
           venv: str | None, site_packages: tuple[str, ...], model_dirs: tuple[str, ...], hf_cache: str | None,
           uv_cache: str | None, jobs: int | None, no_cache: bool, config_file: str | None) -> None:
    """Accept the current drift of PATH...: one entry per drifted file, with its content's sha256
    (and, in a model directory, the directory: root).

    Runs the audit, finds the drifts PATH names (the relpath the report shows, or the file's
    path), and appends `[[accept]]` entries (`[[tool.driftscan.accept]]` in a pyproject.toml) to
    the configuration, keeping the rest of the file byte for byte. Written atomically. An
    accepted drift stays in the report and does not count toward the exit status; once the file
    changes again (or the entry expires), the entry is stale and the drift counts again. A file
    whose content cannot be read is refused (nothing is written) unless --any-content.
    """
    from ..report.accept import new_entries
    from ..config.settings import Config, append_entries, default_accept_file, user_config_path

    if not reason.strip():
        raise click.UsageError("--reason must say why the drift is kept")
    until = None
    if expires:
        try:
            until = datetime.date.fromisoformat(expires)
        except ValueError:
            raise click.UsageError(f"--expires {expires}: not a date (YYYY-MM-DD)") from None
    # --config naming a file that does not exist yet: it is created, with the defaults until then.
    config = load_config(config_file) if not config_file or os.path.lexists(config_file) else Config()
    dirs, hub, include_environment = config_targets(config, venv, site_packages, model_dirs, hf_cache)
    venv, _ = default_venv(venv, site_packages, bool(dirs) or hub is not None, include_environment)
    say_empty_cache("accept", hub)
    report = run(venv, site_packages, jobs=jobs, uv_cache=uv_cache or config.uv_cache, use_cache=not no_cache,
                 model_dirs=dirs, hf_cache=hub, select=config.select, ignore=config.ignore,
                 rules_modules=config.rules_modules, include_environment=include_environment, need=Need.REPORT,
                 compare=False).report
    try:
        wanted = new_entries(report, paths, reason, any_content=any_content, any_root=any_root, expires=until)
    except ValueError as exc:
        raise DriftscanError(str(exc)) from None
    target = default_accept_file(config_file)
    same_file = config.source is not None and os.path.abspath(config.source) == os.path.abspath(target)
    already = {d.path: d.accepted for d in apply_accepted(report, config).drifts if d.accepted} if same_file else {}
    entries = []
    for entry, drift, note in wanted:
        if drift.path in already:
            click.echo(one_line(f"driftscan: note: {drift.relpath}: already accepted by entry {already[drift.path]['entry']} "
                             f"of {target}"), err=True)
            continue
        if note:
            click.echo(one_line(f"driftscan: note: {drift.relpath}: {note}"), err=True)
        entries.append(entry)
    if not entries:
        sys.exit(EXIT_CLEAN)
    created = not os.path.lexists(target)
    append_entries(target, entries)
    for entry in entries:
        pinned = f"sha256 {entry.sha256[:16]}…" if entry.sha256 else "any content"
        under = f" in {entry.root}" if entry.root else ""
        click.echo(one_line(f"accepted {entry.path}{under} ({pinned})"
                            + (f", until {entry.expires}" if entry.expires else "")))
    click.echo(inert(f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'} added to {target}"
                     + (" (created)" if created else "")), err=True)
    if created and config.source and os.path.abspath(config.source) == os.path.abspath(user_config_path()):
        click.echo(inert(f"driftscan: note: from here on {target} is the configuration in this directory, not "
                         f"{config.source} (configuration files are not merged)"), err=True)
    sys.exit(EXIT_CLEAN)
