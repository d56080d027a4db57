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

Trust (docs/security.md): a file named with ``--config``, and the user's own config file (owned
by the user, not writable by others), are the user's instructions. A ``./driftscan.toml`` found
in the working directory may be part of a tree someone else controls (a CI checkout of a pull
request, the audited tree itself): from it, ``rules_modules`` are never imported and paths
(``model_dirs``, ``hf_cache``, ``uv_cache``) are kept only when they stay inside the file's
directory. What was set aside is said in ``notes``.
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
    source: str | None = Field(default=None, exclude=True, description="the file this came from")
    notes: list[str] = Field(default_factory=list, exclude=True, description="settings set aside, and why")

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


def _owned_by_user(path: str) -> bool:
    """The file and its directory belong to this user (or root) and no one else may write them."""
    for where in (path, os.path.dirname(path)):
        try:
            st = os.stat(where)
        except OSError:
            return False
        if st.st_uid not in (os.getuid(), 0) or st.st_mode & 0o022:
            return False
    return True


def _trusted(path: str, explicit: str | None) -> bool:
    if explicit:
        return True
    return os.path.abspath(path) == os.path.abspath(user_config_path()) and _owned_by_user(path)


def _contained(config: Config, base: str, notes: list[str], path: str) -> Config:
    """A found config's paths, kept only inside its own directory; rule modules never."""
    def inside(value: str) -> bool:
        real = os.path.realpath(os.path.join(base, value))
        return real == os.path.realpath(base) or real.startswith(os.path.realpath(base) + os.sep)

    update: dict = {}
    if config.rules_modules:
        notes.append(f"{path}: rules_modules not imported from a config file that was found, not named; "
                     "pass it with --config, or the modules with --rules-module")
        update["rules_modules"] = []
    kept = [d for d in config.model_dirs if inside(d)]
    if len(kept) != len(config.model_dirs):
        notes.append(f"{path}: model_dirs outside {base} set aside (a found config names only its own tree)")
        update["model_dirs"] = kept
    if config.hf_cache is True:  # the user's own hub cache: not the found file's to name
        notes.append(f"{path}: hf_cache = true set aside (a found config names only its own tree)")
        update["hf_cache"] = False
    for key in ("hf_cache", "uv_cache"):
        value = getattr(config, key)
        if isinstance(value, str) and not inside(value):
            notes.append(f"{path}: {key} outside {base} set aside (a found config names only its own tree)")
            update[key] = False if key == "hf_cache" else None
    return config.model_copy(update=update)


def load_config(explicit: str | None = None) -> Config:
    path = find_config(explicit)
    if path is None:
        return Config()
    config = load_toml_model(path, Config)
    base = os.path.dirname(os.path.abspath(path))
    notes: list[str] = []
    trusted = _trusted(path, explicit)
    if not trusted:
        config = _contained(config, base, notes, path)
    # ``~`` is the user's own: expanded only in a file the user named or owns.
    dirs = [os.path.normpath(os.path.join(base, os.path.expanduser(d) if trusted else d)) for d in config.model_dirs]
    return config.model_copy(update={"model_dirs": dirs, "source": path, "notes": notes})
