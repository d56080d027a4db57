"""What a command works on: the environment meant when none is named, the model directories the
command line and the configuration add, where originals come from, and the line that says so."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from ..core.errors import DriftscanError
from ..fs.paths import inert
from ..environment.default import default_environment

if TYPE_CHECKING:
    from .configuration import Settings


def config_targets(config: Settings, venv: str | None, site_packages: Sequence[str], model_dirs: Sequence[str],
                   hf_cache: str | None) -> tuple[list[str], str | None, bool]:
    """Command-line targets plus the config's model directories and caches. Config model
    directories add to the default target instead of replacing it."""
    named = venv is not None or bool(site_packages) or bool(model_dirs) or hf_cache is not None
    dirs = list(dict.fromkeys([*model_dirs, *config.model_dirs]))
    hub = hf_cache if hf_cache is not None else config.hf_cache_arg
    include_environment = not named and bool(config.model_dirs or hub is not None)
    return dirs, hub, include_environment


def wheel_dirs(wheels: Sequence[str]) -> tuple[str, ...]:
    """The --wheels directories, each one checked to be a directory."""
    for directory in wheels:
        if not os.path.isdir(directory):
            raise DriftscanError(f"--wheels {directory}: not a directory")
    return tuple(wheels)


def default_venv(venv: str | None, site_packages: Sequence[str], models: bool = False,
                 include_environment: bool = False) -> tuple[str | None, str | None]:
    """(venv, why): the environment a command means when none is named (environment/default.py).
    Model directories named (``models``) add to that environment; only when the one found is
    driftscan's own do they stay alone (venv None), unless ``include_environment`` (the configuration's)."""
    if venv is not None or site_packages:
        return venv, None
    venv, why = default_environment()
    if models and not include_environment:
        if venv is None:
            return None, ("the model directories alone: no environment of yours found (" + why.split(": ", 1)[-1]
                          + "); driftscan's own is not audited")
        if os.path.realpath(venv) == os.path.realpath(sys.prefix):  # e.g. driftscan's venv activated
            return None, f"the model directories alone: the environment found ({why}) is driftscan's own, not audited"
    return venv, why


def empty_cache(hf_cache: str | None) -> str | None:
    """What to say of a Hugging Face cache asked for that holds no repository (None: not asked
    for, holds one, or is no directory at all, which the run refuses on its own)."""
    if hf_cache is None:
        return None
    from ..modeldir.hfcache import default_hf_cache, no_repository  # only when a cache is named

    cache = os.path.abspath(hf_cache or default_hf_cache())
    return no_repository(cache) if os.path.isdir(cache) else None


def say_empty_cache(command: str, hf_cache: str | None) -> None:
    """An empty cache asked for, said on stderr before the run (the report says it too: what could
    not be checked when nothing else is audited, else a note)."""
    message = empty_cache(hf_cache)
    if message:
        click.echo(inert(f"driftscan {command}: {message}"), err=True)


def say_target(command: str, venv: str | None, why: str | None, models: Sequence[str] = (), hf_cache: str | None = None,
               alone: bool = False) -> None:
    """The first line of a command run on an environment nobody named: what it covers (the
    environment and why that one, plus the model directories), the same rule for every command
    (environment/default.py)."""
    if not why:
        return
    names = [f"model directory {m}" for m in models]
    if hf_cache is not None:
        names.append(f"the Hugging Face cache {hf_cache or '(the default one)'}")
    if alone and names:
        click.echo(inert(f"driftscan {command}: target {', '.join(names)} ({why})"), err=True)
        return
    also = (" + " + ", ".join(names)) if names else ""
    click.echo(inert(f"driftscan {command}: target {venv or sys.prefix} ({why}){also}"), err=True)
