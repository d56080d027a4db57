"""The configuration file as the commands read it: its notes said on stderr, its accepted drift applied."""

from __future__ import annotations

from typing import TYPE_CHECKING, Union

import click

from ..config.find import NoConfig, nothing_to_read
from ..fs.paths import inert

if TYPE_CHECKING:
    from ..config.settings import Config
    from ..report.contract import Report

# What a command reads its settings from: a configuration file, or the defaults when there is none.
Settings = Union["Config", NoConfig]


def load_config(config_file: str | None) -> Settings:
    if nothing_to_read(config_file):
        return NoConfig()
    from ..config.settings import load_config as load  # pydantic: only when there is a file to read

    config = load(config_file)
    for note in config.notes:
        click.echo(inert(f"driftscan: note: {note}"), err=True)
    return config


def apply_accepted(report: Report, config: Settings) -> Report:
    """The config's accept entries applied to a report (accept.py): accepted drift marked, stale
    and unused entries listed. Called before emit and exit_status."""
    if not config.accept:
        return report
    from ..report.accept import apply_accepted as apply  # pydantic: only with entries

    return apply(report, config.accept, source=config.source)
