"""Where a configuration file is looked for (config.py's module docstring has the rules), without
pydantic: a command run where there is no configuration at all — the common case — gets
``NoConfig``'s defaults and never imports the configuration model."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import ConfigError
from ..fs.reader import read_regular

TOML_MAX = 16 << 20  # configuration files are a few lines; a pyproject.toml a few hundred
CONFIG_NAME = "driftscan.toml"
PYPROJECT = "pyproject.toml"
PYPROJECT_TABLE = "tool.driftscan"


def user_config_path() -> str:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "driftscan", "config.toml")


def is_pyproject(path: str) -> bool:
    return os.path.basename(path) == PYPROJECT


def _pyproject_table(path: str) -> dict[str, Any] | None:
    """The ``[tool.driftscan]`` table of a pyproject.toml, or None when it has none."""
    try:  # a quick look first: most pyproject.toml files on the way up never mention driftscan
        if b"driftscan" not in read_regular(path, TOML_MAX, what="configuration file"):
            return None
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror or exc}") from None
    from ..formats.tomlfile import read_toml  # pydantic's validation, for the rare pyproject that names driftscan

    tool = read_toml(path).get("tool")
    table = tool.get("driftscan") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{path}: {PYPROJECT_TABLE} is not a table")
    return table


def discover(start: str | None = None) -> tuple[str | None, dict[str, Any] | None]:
    """The nearest configuration from ``start`` (the working directory) upward: its path and, for
    a pyproject.toml, its ``[tool.driftscan]`` table (None: read the whole file)."""
    directory = os.path.abspath(start or os.getcwd())
    while True:
        candidate = os.path.join(directory, CONFIG_NAME)
        if os.path.isfile(candidate):
            return candidate, None
        candidate = os.path.join(directory, PYPROJECT)
        if os.path.isfile(candidate):
            table = _pyproject_table(candidate)
            if table is not None:
                return candidate, table
        parent = os.path.dirname(directory)
        if parent == directory:
            return None, None
        directory = parent


def nothing_to_read(explicit: str | None) -> bool:
    """True when no configuration applies: none named, none found upward, no user config file."""
    return not explicit and discover()[0] is None and not os.path.lexists(user_config_path())


@dataclass(frozen=True)
class NoConfig:
    """The configuration in effect when there is none: ``Config()``'s values (config.py)."""

    model_dirs: list[str] = field(default_factory=list)
    hf_cache: bool | str = False
    uv_cache: str | None = None
    rules_modules: list[str] = field(default_factory=list)
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    accept: list[Any] = field(default_factory=list)
    patches: dict[str, Any] = field(default_factory=dict)
    source: str | None = None
    table: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def hf_cache_arg(self) -> str | None:
        return None
