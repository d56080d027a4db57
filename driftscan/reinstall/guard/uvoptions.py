"""uv's reinstall settings beyond its command line: its ``UV_*`` environment variables and its
configuration files (``uv.toml``, ``pyproject.toml``'s ``[tool.uv]``), read as data, size-capped.
uv (clap) takes no abbreviations: ``--reinst`` is an error, not ``--reinstall``."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ...fs.paths import ancestors
from ...core.errors import ConfigError
from ...formats.tomlfile import read_toml


CONFIG_MAX = 1 << 20
_TRUE = frozenset({"y", "yes", "t", "true", "on", "1"})  # clap's boolish values
_FALSE = frozenset({"n", "no", "f", "false", "off", "0", ""})


@dataclass
class UvSettings:
    reinstall: bool = False
    reinstall_packages: list[str] = field(default_factory=list)
    no_cache: bool = False
    # Where uv installs from beyond the command line, as (option, value) pairs the command's own
    # options are read as: ``environment`` (UV_* variables: used for an option the command line
    # does not give, as clap does), ``configured`` (the configuration files: added after both,
    # as uv combines them; relative paths are relative to the file's directory).
    environment: list[tuple[str, str | None]] = field(default_factory=list)
    configured: list[tuple[str, str | None]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)


def boolish(env: dict[str, str], name: str, out: UvSettings) -> bool:
    value = env.get(name)
    if value is None:
        return False
    word = value.strip().lower()
    if word in _TRUE:
        out.notes.append(f"uv reads {name}={value[:40]}")
        return True
    if word not in _FALSE:
        out.unreadable.append(f"{name}={value[:40]!r} is not a yes or no")
    return False


def _project_file(start: str) -> str | None:
    """The uv.toml or pyproject.toml uv takes its project settings from: the nearest one upward."""
    for here in ancestors(start):
        for name in ("uv.toml", "pyproject.toml"):
            path = os.path.join(here, name)
            if os.path.isfile(path):
                return path
    return None


def config_files(project: str, env: dict[str, str], config_file: str | None, no_config: bool) -> list[str]:
    if no_config:
        return []
    home = env.get("HOME") or os.path.expanduser("~")
    user = os.path.join(env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"), "uv", "uv.toml")
    system = [os.path.join(d, "uv", "uv.toml") for d in env.get("XDG_CONFIG_DIRS", "/etc/xdg").split(os.pathsep) if d]
    files = [*system, "/etc/uv/uv.toml", user]
    if config_file:
        files.append(config_file)
    else:
        found = _project_file(project)
        if found:
            files.append(found)
    return list(dict.fromkeys(files))


def _config_sources(table: dict[str, Any], path: str, out: UvSettings) -> None:
    """``find-links``, ``no-index``, ``index-url``, ``extra-index-url`` and ``[[index]]`` of one table."""
    here = os.path.dirname(path)

    def local(value: str) -> str:
        return value if "://" in value else os.path.join(here, os.path.expanduser(value))

    links = table.get("find-links")
    for value in links if isinstance(links, list) else []:
        if isinstance(value, str) and value:
            out.configured.append(("--find-links", local(value)))
            out.notes.append(f"uv reads find-links {value[:200]} from {path}")
    if table.get("no-index") is True:
        out.configured.append(("--no-index", None))
        out.notes.append(f"uv reads no-index = true from {path}")
    for key in ("index-url", "extra-index-url"):
        values = table.get(key)
        for value in values if isinstance(values, list) else [values]:
            if isinstance(value, str) and value:
                out.configured.append(("--index-url", value))
    indexes = table.get("index")
    for index in indexes if isinstance(indexes, list) else []:
        url = index.get("url") if isinstance(index, dict) else None
        if not isinstance(url, str) or not url:
            continue
        if index.get("format") == "flat":  # a flat index is a find-links location
            out.configured.append(("--find-links", local(url.removeprefix("file://"))))
            out.notes.append(f"uv reads the flat index {url[:200]} from {path}")
        else:
            out.configured.append(("--index-url", url))


def _environment_sources(env: dict[str, str], out: UvSettings) -> None:
    """UV_FIND_LINKS (comma-separated), UV_DEFAULT_INDEX, UV_INDEX_URL, UV_INDEX and
    UV_EXTRA_INDEX_URL (space-separated; UV_INDEX entries may be ``name=url``). uv 0.13 does not
    read UV_NO_INDEX (measured: ``uv pip install`` still asks the registry)."""
    for value in env.get("UV_FIND_LINKS", "").split(","):
        if value.strip():
            out.environment.append(("--find-links", value.strip()))
    for name in ("UV_DEFAULT_INDEX", "UV_INDEX_URL"):
        if env.get(name, "").strip():
            out.environment.append(("--default-index" if name == "UV_DEFAULT_INDEX" else "--index-url",
                                    env[name].strip()))
    for name, key in (("UV_INDEX", "--index"), ("UV_EXTRA_INDEX_URL", "--extra-index-url")):
        for value in env.get(name, "").split():
            url = value.split("=", 1)[1] if key == "--index" and "=" in value and "://" not in value.split("=", 1)[0] \
                else value
            out.environment.append((key, url))
    named = sorted({n for n in ("UV_FIND_LINKS", "UV_DEFAULT_INDEX", "UV_INDEX_URL", "UV_INDEX", "UV_EXTRA_INDEX_URL")
                    if env.get(n, "").strip()})
    if named:
        out.notes.append(f"uv reads {', '.join(named)} (for what the command line does not give)")
    if env.get("UV_NO_INDEX", "").strip():
        out.notes.append("UV_NO_INDEX is set, but uv 0.13 does not read it: the index is used")


def settings(project: str, env: dict[str, str], *, pip: bool, config_file: str | None = None,
             no_config: bool = False) -> UvSettings:
    """uv's reinstall settings from its configuration files and environment (``pip``: a ``uv pip``
    command, which also reads the ``[pip]`` table)."""
    out = UvSettings()
    no_config = no_config or env.get("UV_NO_CONFIG", "").strip().lower() in _TRUE
    config_file = config_file or env.get("UV_CONFIG_FILE") or None
    for path in config_files(project, env, config_file, no_config):
        if not os.path.lexists(path):
            continue
        try:
            data = read_toml(path, CONFIG_MAX, what="uv configuration file")
        except ConfigError as exc:
            out.unreadable.append(f"cannot read this uv configuration: {str(exc)[:300]}")
            continue
        tool = data.get("tool") if path.endswith("pyproject.toml") else None
        table = (tool.get("uv", {}) if isinstance(tool, dict) else {}) if path.endswith("pyproject.toml") else data
        if not isinstance(table, dict):
            continue
        tables = [table] + ([table["pip"]] if pip and isinstance(table.get("pip"), dict) else [])
        for t in tables:
            value = t.get("reinstall")
            if value is True:
                out.reinstall = True
                out.notes.append(f"uv reads reinstall = true from {path}")
            elif value not in (None, False):
                out.unreadable.append(f"{path}: reinstall = {str(value)[:40]!r} is not true or false")
            packages = t.get("reinstall-package")
            if isinstance(packages, list):
                out.reinstall_packages += [p for p in packages if isinstance(p, str)]
                out.notes.append(f"uv reads reinstall-package from {path}")
            if t.get("no-cache") is True:
                out.no_cache = True
            _config_sources(t, path, out)
    if boolish(env, "UV_REINSTALL", out):
        out.reinstall = True
    if boolish(env, "UV_NO_CACHE", out):
        out.no_cache = True
    _environment_sources(env, out)
    return out
