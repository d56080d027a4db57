"""Where the team's patches come from, the same for ``patch apply``, ``plan`` and ``guard``:
``--manifest FILE``, ``--patches DIR``, the configuration's manifest table, else ``./patches``;
and which manifest ``--pin`` writes (``pin_manifest``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..config.find import PYPROJECT, discover
from ..core.errors import ConfigError
from .configuration import Settings

if TYPE_CHECKING:
    from ..patches.apply import Source

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_DIR = "patches"


def patch_source_options(func: F) -> F:
    """--patches DIR / --manifest FILE."""
    func = click.option("--manifest", metavar="FILE", type=click.Path(dir_okay=False),
                        help="The manifest: a pyproject.toml ([tool.driftscan.patches]) or driftscan.toml ([patches]) "
                             "(default: the configuration file found from here upward, if it has one).")(func)
    return click.option("--patches", "patches_dir", metavar="DIR",
                        help="Without a manifest: every <dist>@<version>.patch here, each for that exact version "
                             "(default: ./patches).")(func)


def patch_source(patches_dir: str | None, manifest: str | None, config: Settings) -> Source:
    """The patches named, else the configuration's manifest table, else ./patches (an error when
    it is missing). The configuration is found and trusted as every command finds it: a file
    planted by another user on the way up is not read (a note says so), so it cannot choose what is
    written."""
    # Imported here: plan and guard load the patch modules only when there are patches.
    from ..patches.apply import Source
    from ..patches.manifest import from_directory, from_table, read_manifest

    if manifest and patches_dir:
        raise click.UsageError("--manifest and --patches name two sources of patches: give one")
    if manifest:
        return Source(tuple(read_manifest(manifest)), manifest=manifest)
    if patches_dir:
        return Source(tuple(from_directory(patches_dir)), directory=patches_dir)
    if config.patches and config.source:
        return Source(tuple(from_table(config.patches, config.source)), manifest=config.source)
    return Source(tuple(from_directory(DEFAULT_DIR)), directory=DEFAULT_DIR)


def found_patch_source(patches_dir: str | None, manifest: str | None, config: Settings) -> Source | None:
    """``patch_source``, or None when none is named and neither default is there (plan, and guard's
    predictions, work without patches)."""
    if not (manifest or patches_dir or (config.patches and config.source)) and not os.path.isdir(DEFAULT_DIR):
        return None
    return patch_source(patches_dir, manifest, config)


def pin_option(func: F) -> F:
    return click.option("--pin", is_flag=True,
                        help="Write each new patch's line into the manifest (--manifest FILE, else the configuration "
                             "file found from here upward, else ./pyproject.toml): added, or its old line "
                             "replaced; the rest of the file kept byte for byte.")(func)


def pin_manifest(manifest: str | None) -> str:
    """The manifest ``--pin`` writes: the one named; else the configuration file found from the
    working directory upward, as the configuration is found (one another user could have planted
    is refused, as it is not read); else ./pyproject.toml. ConfigError when there is none."""
    if manifest:
        return manifest
    found, _ = discover()
    if found is None and os.path.isfile(PYPROJECT):
        found = os.path.abspath(PYPROJECT)
    if found is None:
        raise ConfigError("--pin: no configuration file from here upward and no ./pyproject.toml: name the "
                          "manifest with --manifest FILE")
    from ..config.settings import _planted  # pydantic's configuration model: only when a pin is written

    why = _planted(found)
    if why:
        raise ConfigError(f"--pin: {found} was found, not named, and is not written to ({why}); "
                          "name the manifest with --manifest FILE if it is yours")
    return found
