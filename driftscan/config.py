"""Configuration file: defaults the command line adds to or overrides. Read only by the CLI;
the library API takes everything as arguments.

Looked up as ``--config FILE``, else ``./driftscan.toml``, else
``$XDG_CONFIG_HOME/driftscan/config.toml`` (``~/.config/driftscan/config.toml``)::

    model_dirs = ["/shared/kimi-k2.5-nvfp4"]    # audited with every audit/plan (added to what is named)
    hf_cache = false                             # true: the default hub cache; or a path
    uv_cache = "/root/.cache/uv"
    rules_modules = ["mycompany.driftscan_rules"]  # extra rule modules (also: the driftscan.rules entry points)
    select = ["DBG1"]
    ignore = ["DBG109"]
"""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field

from .tomlfile import load_toml_model


class Config(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model_dirs: list[str] = Field(default_factory=list)
    hf_cache: bool | str = False
    uv_cache: str | None = None
    rules_modules: list[str] = Field(default_factory=list)
    select: list[str] = Field(default_factory=list)
    ignore: list[str] = Field(default_factory=list)
    source: str | None = Field(None, exclude=True, description="the file this came from")

    @property
    def hf_cache_arg(self) -> str | None:
        """In the API's terms: None (off), "" (the default cache) or a path."""
        if self.hf_cache is False:
            return None
        return "" if self.hf_cache is True else self.hf_cache


def user_config_path() -> str:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "driftscan", "config.toml")


def find_config(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    for candidate in (os.path.join(os.getcwd(), "driftscan.toml"), user_config_path()):
        if os.path.isfile(candidate):
            return candidate
    return None


def load_config(explicit: str | None = None) -> Config:
    path = find_config(explicit)
    if path is None:
        return Config()
    config = load_toml_model(path, Config)
    base = os.path.dirname(os.path.abspath(path))
    dirs = [os.path.normpath(os.path.join(base, os.path.expanduser(d))) for d in config.model_dirs]
    return config.model_copy(update={"model_dirs": dirs, "source": path})
