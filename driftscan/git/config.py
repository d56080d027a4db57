"""The repository's own ``.git/config``, read as data: parsed here (``parse_config``; includes
are never followed), checked for a format driftscan reads (``check_format``) and cut down to the
inert keys of ``WHITELIST``, the only ones the private ``GIT_DIR``'s config gets."""

from __future__ import annotations

import os

from .errors import GitRefused
from .files import read_optional

CONFIG_MAX = 4 << 20

# Keys copied from the repository's config: each only changes how git reads data already in the
# tree. Values are validated; anything else (include.path, includeIf, drivers, helpers) is dropped.
_BOOL = ("true", "false")
WHITELIST: dict[str, tuple[str, ...] | None] = {
    "core.filemode": _BOOL,
    "core.symlinks": _BOOL,
    "core.ignorecase": _BOOL,
    "core.precomposeunicode": _BOOL,
    "core.trustctime": _BOOL,
    "core.autocrlf": ("true", "false", "input"),
    "core.eol": ("lf", "crlf", "native"),
    "core.checkstat": ("default", "minimal"),
    "extensions.objectformat": ("sha1", "sha256"),
}
_TRUE = {"true", "yes", "on", "1", ""}
_FALSE = {"false", "no", "off", "0"}
# Extensions of repository format 1 that change nothing for reading (or are copied above).
_HARMLESS_EXTENSIONS = {"objectformat", "noop", "preciousobjects", "worktreeconfig", "partialclone"}


def _bool(value: str) -> str | None:
    low = value.strip().lower()
    return "true" if low in _TRUE else "false" if low in _FALSE else None


def parse_config(text: str) -> dict[str, str]:
    """``section.key`` → last value, for sections without a subsection (all this module copies).

    git's syntax: ``[section]``, ``[section "sub"]``, ``key = value``, a bare ``key`` (true),
    ``#``/``;`` comments, double quotes, backslash escapes and line continuations. Includes are
    not followed: they are only keys here, and not copied."""
    values: dict[str, str] = {}
    section: str | None = None
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n":
            i += 1
        elif c in "#;":
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif c == "[":
            end = text.find("]", i)
            if end < 0:
                break
            header = text[i + 1:end].strip()
            # A subsection ([filter "lfs"], [a.b]) is never whitelisted: remember that only.
            section = None if ('"' in header or "." in header) else header.lower()
            i = end + 1
        else:
            start = i
            while i < n and (text[i].isalnum() or text[i] == "-"):
                i += 1
            key = text[start:i].lower()
            while i < n and text[i] in " \t":
                i += 1
            value, i = (_config_value(text, i + 1) if i < n and text[i] == "=" else ("", i))
            if not key:  # not a key line: skip it
                i = text.find("\n", i)
                i = n if i < 0 else i
                continue
            if section is not None:
                values[f"{section}.{key}"] = value
    return values


def _config_value(text: str, i: int) -> tuple[str, int]:
    out: list[str] = []
    quoted = False
    pending = ""  # whitespace kept only if more value follows
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\n":  # git refuses a newline inside quotes; the value ends here either way
            break
        if c == "\\" and i + 1 < n:
            nxt = text[i + 1]
            i += 2
            if nxt == "\n":
                continue  # a line continuation
            out.append(pending + {"n": "\n", "t": "\t", "b": "\b"}.get(nxt, nxt))
            pending = ""
            continue
        if c == '"':
            quoted = not quoted
        elif not quoted and c in "#;":
            i = text.find("\n", i)
            i = n if i < 0 else i
            break
        elif not quoted and c in " \t":
            if out:
                pending += c
        else:
            out.append(pending + c)
            pending = ""
        i += 1
    return "".join(out), i


def read_config(git_dir: str) -> dict[str, str]:
    data = read_optional(os.path.join(git_dir, "config"), CONFIG_MAX, "git config")
    return parse_config(data.decode("utf-8", "replace")) if data else {}


def check_format(values: dict[str, str], path: str) -> dict[str, str]:
    """The whitelisted keys of ``values``, validated; GitRefused for a bare repository or a
    repository format driftscan does not read."""
    if _bool(values.get("core.bare", "false")) == "true":
        raise GitRefused("a bare git repository has no work tree")
    version = values.get("core.repositoryformatversion", "0").strip()
    if version not in ("0", "1"):
        raise GitRefused(f"{path}: repository format version {version!r} is not one driftscan reads")
    if version == "1":
        unknown = sorted(k for k in values if k.startswith("extensions.")
                         and k.split(".", 1)[1] not in _HARMLESS_EXTENSIONS)
        if unknown:
            raise GitRefused(f"{path}: uses {', '.join(f'{k}={values[k]}' for k in unknown)}, "
                             "which driftscan does not read")
    config = {}
    for key, allowed in WHITELIST.items():
        if key not in values:
            continue
        value = values[key].strip().lower()
        if allowed == _BOOL:
            value = _bool(value) or ""
        if allowed is None or value in allowed:
            config[key] = value
    if "extensions.objectformat" in config and version != "1":
        del config["extensions.objectformat"]  # git ignores extensions in format 0
    config["core.repositoryformatversion"] = version
    return config
