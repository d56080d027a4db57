"""Configuration file: defaults the command line adds to or overrides. Read only by the CLI;
the library API takes everything as arguments. The reference is docs/configuration.md.

Which file (the first that applies; files are never merged):

1. ``--config FILE``: that file (a ``pyproject.toml`` by that name: its ``[tool.driftscan]``);
2. found from the working directory upward, as ruff finds its configuration: in each directory
   from the working directory to ``/``, a ``driftscan.toml``, else a ``pyproject.toml`` that has
   a ``[tool.driftscan]`` table (one without it is passed over). The nearest directory wins;
   in one directory ``driftscan.toml`` wins over ``pyproject.toml``;
3. ``$XDG_CONFIG_HOME/driftscan/config.toml`` (``~/.config/driftscan/config.toml``).

The keys (top level of a ``driftscan.toml``, inside ``[tool.driftscan]`` of a pyproject)::

    model_dirs = ["/shared/kimi-k2.5-nvfp4"]    # audited with every audit/plan (added to what is named)
    hf_cache = false                             # true: the default hub cache; or a path
    uv_cache = "/root/.cache/uv"
    rules_modules = ["mycompany.driftscan_rules"]  # extra rule modules (also: the driftscan.rules entry points)
    select = ["DBG1"]
    ignore = ["DBG109"]

    [[accept]]                                   # [[tool.driftscan.accept]] in a pyproject.toml
    path = "vllm/model_executor/model_loader/weight_utils.py"
    sha256 = "…"                                 # optional: only this content is accepted
    reason = "GGUF loader patch, kept on purpose"
    expires = 2027-03-01                         # optional

Trust (docs/security.md): a file named with ``--config``, and the user's own config file (owned
by the user, not writable by others), are the user's instructions. A file found from the
working directory upward may be part of a tree someone else controls (a CI checkout of a pull
request, the audited tree itself, when the working directory is inside it): from it,
``rules_modules`` are never imported and paths (``model_dirs``, ``hf_cache``, ``uv_cache``)
are kept only when they stay inside the file's directory; one that another user owns or may
write is not read at all. What was set aside is said in ``notes``. Configuration never makes
driftscan run a command. Driftscan never looks for configuration in the audited tree: only
upward from the working directory.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from typing import Any
import copy

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..report.accept import AcceptEntry
from ..core.errors import ConfigError
from ..fs.reader import read_regular
from .find import (  # noqa: F401 - user_config_path re-exported: where a configuration is looked for
    CONFIG_NAME, PYPROJECT, PYPROJECT_TABLE, TOML_MAX, NoConfig, _pyproject_table, discover, is_pyproject,
    nothing_to_read, user_config_path as user_config_path)
from ..formats.tomlfile import read_toml as _read_toml
from ..fs.atomic import write_atomic

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


class Config(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model_dirs: list[str] = Field(default_factory=list)
    hf_cache: bool | str = False
    uv_cache: str | None = None
    rules_modules: list[str] = Field(default_factory=list)
    select: list[str] = Field(default_factory=list)
    ignore: list[str] = Field(default_factory=list)
    accept: list[AcceptEntry] = Field(default_factory=list, description="accepted drift (docs/configuration.md)")
    patches: dict[str, Any] = Field(default_factory=dict, description="the patch manifest, which driftscan patch "
                                                                      "apply reads itself (docs/patches.md)")
    source: str | None = Field(default=None, exclude=True, description="the file this came from")
    table: str = Field(default="", exclude=True, description='where in the file: "" or "tool.driftscan"')
    notes: list[str] = Field(default_factory=list, exclude=True, description="settings set aside, and why")

    @field_validator("model_dirs", "hf_cache", "uv_cache")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        # No path holds a NUL byte: the operating system refuses it (Python raises ValueError).
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and "\0" in item:
                raise ValueError(f"{item!r} holds a NUL byte, which no path can hold")
        return value

    @property
    def hf_cache_arg(self) -> str | None:
        """In the API's terms: None (off), "" (the default cache) or a path."""
        if self.hf_cache is False:
            return None
        return "" if self.hf_cache is True else self.hf_cache


def read_toml(path: str) -> dict[str, Any]:
    """A TOML file's content; every failure one ConfigError line naming the file."""
    return _read_toml(path)


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


def _planted(path: str) -> str | None:
    """Why a found file may have been put there by someone else: owned by another user (not
    root), or writable by everyone (the file, or its directory unless sticky, as /tmp is)."""
    try:
        st = os.stat(path)
        parent = os.stat(os.path.dirname(path))
    except OSError as exc:
        return f"cannot stat: {exc.strerror or exc}"
    if st.st_uid not in (os.getuid(), 0):
        return f"owned by uid {st.st_uid}, not by you or root"
    if st.st_mode & 0o002:
        return "writable by every user"
    if parent.st_mode & 0o002 and not parent.st_mode & stat.S_ISVTX:
        return "in a directory every user may write"
    return None


def _trusted(path: str, explicit: str | None) -> bool:
    if explicit:
        return True
    return os.path.abspath(path) == os.path.abspath(user_config_path()) and _owned_by_user(path)


def _contained(config: Config, base: str, notes: list[str], path: str) -> Config:
    """A found config's paths, kept only inside its own directory; rule modules never."""
    def inside(value: str) -> bool:
        real = os.path.realpath(os.path.join(base, value))
        return real == os.path.realpath(base) or real.startswith(os.path.realpath(base) + os.sep)

    update: dict[str, Any] = {}
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


def _where(loc: tuple[int | str, ...], table: str) -> str:
    """A pydantic error location as the file spells it: ``tool.driftscan.accept[2].reason``."""
    parts: list[str] = [table] if table else []
    for item in loc:
        if isinstance(item, int) and parts:
            parts[-1] += f"[{item}]"
        else:
            parts.append(str(item))
    return ".".join(parts)


def parse_config(data: dict[str, Any], path: str, table: str = "") -> Config:
    """Validate a config table; a malformed key or accept entry is one ConfigError line naming
    the file and where in it (``accept[1].reason: Field required``)."""
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = _where(tuple(first["loc"]), table) or table or "(top level)"
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] == "missing" and "accept" in first["loc"]:
            message += " (an accept entry needs path and reason)"
        raise ConfigError(f"{path}: {where}: {message}") from None


def load_config(explicit: str | None = None) -> Config:
    """The configuration in effect (see the module docstring), with ``source``, ``table`` and
    ``notes`` set."""
    table: dict[str, Any] | None
    notes: list[str] = []
    if explicit:
        path: str | None = explicit
        data = read_toml(explicit)
        if is_pyproject(explicit):
            tool = data.get("tool")
            table = tool.get("driftscan") if isinstance(tool, dict) else None
            data = table if isinstance(table, dict) else {}
    else:
        path, table = discover()
        if path is not None:
            why = _planted(path)
            if why:
                notes.append(f"{path}: not read ({why}); pass it with --config if it is yours")
                path = None
        if path is None:
            user = user_config_path()
            path = user if os.path.isfile(user) else None
        if path is None:
            return Config(notes=notes)
        data = table if table is not None else read_toml(path)
    assert path is not None
    where = PYPROJECT_TABLE if is_pyproject(path) else ""
    config = parse_config(data, path, where)
    base = os.path.dirname(os.path.abspath(path))
    trusted = _trusted(path, explicit)
    if not trusted:
        config = _contained(config, base, notes, path)
    # ``~`` is the user's own: expanded only in a file the user named or owns.
    dirs = [os.path.normpath(os.path.join(base, os.path.expanduser(d) if trusted else d)) for d in config.model_dirs]
    return config.model_copy(update={"model_dirs": dirs, "source": path, "table": where, "notes": notes})


# -- writing accept entries (driftscan accept) -----------------------------------------------------

_HEADER = re.compile(r"^[ \t]*\[(\[?)[ \t]*([^\[\]\r\n]+?)[ \t]*\]\]?[ \t]*(?:#[^\r\n]*)?$")


def default_accept_file(explicit: str | None, start: str | None = None) -> str:
    """Where ``driftscan accept`` writes: ``--config FILE``; else the configuration found from the
    working directory upward (a driftscan.toml, or a pyproject.toml with ``[tool.driftscan]``);
    else a new ``./driftscan.toml``."""
    if explicit:
        return explicit
    found, _ = discover(start)
    return found or os.path.join(os.path.abspath(start or os.getcwd()), CONFIG_NAME)


def _key(header: str) -> str:
    return re.sub(r"\s+", "", header).replace('"', "").replace("'", "")


def _entry_dict(entry: AcceptEntry) -> dict[str, Any]:
    out: dict[str, Any] = {"path": entry.path}
    if entry.root is not None:
        out["root"] = entry.root
    if entry.sha256:
        out["sha256"] = entry.sha256
    out["reason"] = entry.reason
    if entry.expires is not None:
        out["expires"] = entry.expires
    return out


def _entries_text(header: str, entries: list[AcceptEntry], nl: str) -> str:
    import tomlkit  # only when `driftscan accept` writes entries: 85-140 ms (python -X importtime, cumulative)

    blocks = []
    for entry in entries:
        body = tomlkit.document()
        for key, value in _entry_dict(entry).items():
            body.add(key, value)
        blocks.append(f"[[{header}]]\n" + tomlkit.dumps(body))
    return "\n".join(blocks).replace("\n", nl)


def _insertion_point(lines: list[str], pyproject: bool) -> int:
    """The line before which new ``[[…accept]]`` tables go: after the last line of content of the
    last table of driftscan's (comments and blank lines just before the next header belong to
    that header); the end of the file when driftscan has no table there (or owns the file)."""
    if not pyproject:
        return len(lines)
    last_region_end = None
    inside = False
    last_content = None
    for i, line in enumerate(lines):
        header = _HEADER.match(line.rstrip("\r\n"))
        if header:
            key = _key(header.group(2))
            if inside and not (key == PYPROJECT_TABLE or key.startswith(PYPROJECT_TABLE + ".")):
                last_region_end = last_content
            inside = key == PYPROJECT_TABLE or key.startswith(PYPROJECT_TABLE + ".")
            if inside:
                last_content = i
            continue
        stripped = line.strip()
        if inside and stripped and not stripped.startswith("#"):
            last_content = i
    if inside:
        last_region_end = last_content
    return len(lines) if last_region_end is None else last_region_end + 1


def _with_entries(data: dict[str, Any], entries: list[AcceptEntry], pyproject: bool) -> dict[str, Any]:
    expected = copy.deepcopy(data)
    table = expected
    if pyproject:
        table = expected.setdefault("tool", {}).setdefault("driftscan", {})
    table.setdefault("accept", []).extend(_entry_dict(e) for e in entries)
    return expected


def _by_tomlkit(text: str, entries: list[AcceptEntry], pyproject: bool) -> str:
    """The fallback: tomlkit's own placement (correct, if not always where a person would put it)."""
    import tomlkit  # as in _entries_text

    AoT, Array = tomlkit.items.AoT, tomlkit.items.Array
    doc = tomlkit.parse(text)
    table: Any = doc
    if pyproject:
        if "tool" not in doc:
            doc.append("tool", tomlkit.table(is_super_table=True))
        if "driftscan" not in doc["tool"]:
            doc["tool"].append("driftscan", tomlkit.table(is_super_table=True))
        table = doc["tool"]["driftscan"]
    if "accept" not in table:
        table.append("accept", tomlkit.aot())
    accept = table["accept"]
    for entry in entries:
        if isinstance(accept, AoT):
            item = tomlkit.table()
            for key, value in _entry_dict(entry).items():
                item.add(key, value)
            accept.append(item)
        elif isinstance(accept, Array):
            inline = tomlkit.inline_table()
            inline.update(_entry_dict(entry))
            accept.append(inline)
        else:
            raise ConfigError("accept is neither an array of tables nor an array")
    return tomlkit.dumps(doc)


def append_entries(path: str, entries: list[AcceptEntry]) -> str:
    """Append accept entries to a configuration file (created if missing), keeping every byte of
    it but the entries added: they go after driftscan's last table (``[tool.driftscan]`` of a
    pyproject.toml, created if needed), or at the end. The result is checked to mean exactly
    the old file plus the entries, and written atomically with the file's permissions. Returns
    the new text."""
    pyproject = is_pyproject(path)
    exists = os.path.lexists(path)
    text = ""
    if exists:
        try:
            raw = read_regular(path, TOML_MAX, what="configuration file")
            text = raw.decode("utf-8")
        except OSError as exc:
            raise ConfigError(f"{path}: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{path}: not UTF-8 (byte {exc.start}): TOML files are UTF-8") from None
    data = read_toml(path) if exists else {}
    tool = data.get("tool") if pyproject else None
    if pyproject and tool is not None and not isinstance(tool, dict):
        raise ConfigError(f"{path}: tool is not a table")
    table = (tool or {}).get("driftscan", {}) if pyproject else data
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: {PYPROJECT_TABLE} is not a table")
    parse_config(table, path, PYPROJECT_TABLE if pyproject else "")  # a broken file is not extended
    nl = "\r\n" if "\r\n" in text else "\n"
    header = f"{PYPROJECT_TABLE}.accept" if pyproject else "accept"
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += nl
    at = _insertion_point(lines, pyproject)
    block = _entries_text(header, entries, nl)
    before = "".join(lines[:at])
    after = "".join(lines[at:])
    sep = nl if before.strip() else ""
    new = before + sep + block + (nl if after and after.strip() and not after.startswith(("\n", "\r\n")) else "") + after
    expected = _with_entries(data, entries, pyproject)
    if _loads(new) != expected:
        new = _by_tomlkit(text, entries, pyproject)
        if _loads(new) != expected:
            raise ConfigError(f"{path}: could not add the entries without changing what the file says; "
                              "add them by hand")
    mode = stat.S_IMODE(os.stat(path).st_mode) if exists else _default_mode()
    write_atomic(path, new, mode=mode)
    return new


def _loads(text: str) -> dict[str, Any] | None:
    try:
        doc: dict[str, Any] = tomllib.loads(text)  # (tomli, on 3.10, is untyped)
        return doc
    except (tomllib.TOMLDecodeError, RecursionError):
        return None


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
