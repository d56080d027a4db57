"""The configuration file as the commands read it: its notes said on stderr, its accepted drift applied."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ..fs.paths import inert
from ..config.find import NoConfig, nothing_to_read

if TYPE_CHECKING:
    from ..report.contract import Report


def load_config(config_file: str | None):
    if nothing_to_read(config_file):
        return NoConfig()
    from ..config.settings import load_config as load

    config = load(config_file)
    for note in config.notes:
        click.echo(inert(f"driftscan: note: {note}"), err=True)
    return config


def apply_accepted(report: Report, config) -> Report:
    """The config's accept entries applied to a report (accept.py): accepted drift marked, stale
    and unused entries listed. Called before emit and exit_status."""
    if not config.accept:
        return report
    from ..report.accept import apply_accepted as apply

    return apply(report, config.accept, source=config.source)
