"""pip's install options as pip itself reads them: from its configuration files, its ``PIP_*``
environment variables and its command line, where optparse accepts an unambiguous prefix of a
long option. Every file is read as data, size-capped; nothing is run."""

from __future__ import annotations

import configparser
import os
import pwd
from dataclasses import dataclass, field

from ...fs.reader import read_regular

CONFIG_MAX = 1 << 20  # a pip.conf is a few lines
SYSTEM_CONFIG = "/etc/pip.conf"  # read after the XDG ones, as pip does on Linux

# pip 26's ``pip install`` option table (its general options included), for abbreviations.
PIP_FLAGS = frozenset({
    "--break-system-packages", "--check-build-dependencies", "--compile", "--debug", "--disable-pip-version-check",
    "--dry-run", "--force-reinstall", "--help", "--ignore-installed", "--ignore-requires-python", "--isolated",
    "--no-build-isolation", "--no-cache-dir", "--no-clean", "--no-color", "--no-compile", "--no-dependencies",
    "--no-deps", "--no-index", "--no-input", "--no-proxy-env", "--no-python-version-warning", "--no-require-hashes",
    "--no-user", "--no-warn-conflicts", "--no-warn-script-location", "--only-dependencies", "--only-deps", "--pre",
    "--prefer-binary", "--quiet", "--require-hashes", "--require-venv", "--require-virtualenv", "--upgrade",
    "--use-pep517", "--user", "--verbose", "--version"})
PIP_VALUES = frozenset({
    "--abi", "--all-releases", "--build-constraint", "--cache-dir", "--cert", "--client-cert", "--config-settings",
    "--constraint", "--default-timeout", "--editable", "--exists-action", "--extra-index-url", "--find-links",
    "--group", "--implementation", "--index-url", "--keyring-provider", "--local-log", "--log", "--log-file",
    "--no-binary", "--only-binary", "--only-final", "--platform", "--prefix", "--progress-bar", "--proxy",
    "--pypi-url", "--python", "--python-version", "--refresh-package", "--report", "--requirement",
    "--requirements-from-script", "--resume-retries", "--retries", "--root", "--root-user-action", "--source",
    "--source-dir", "--source-directory", "--src", "--target", "--timeout", "--trusted-host", "--upgrade-strategy",
    "--uploaded-prior-to", "--use-deprecated", "--use-feature", "--build-option", "--global-option",
    "--install-option"})
PIP_SHORT_FLAGS = frozenset({"-I", "-U", "-h", "-q", "-v", "-V"})
PIP_SHORT_VALUES = frozenset({"-C", "-c", "-e", "-f", "-i", "-r", "-t"})
# Options pip collects into a list: a configured value is split on whitespace.
_APPEND = frozenset({"--requirement", "--constraint", "--editable", "--find-links", "--extra-index-url",
                     "--trusted-host", "--config-settings", "--build-constraint", "--use-feature", "--use-deprecated",
                     "--group", "--no-binary", "--only-binary", "--build-option", "--global-option"})
_TRUE = frozenset({"y", "yes", "t", "true", "on", "1"})  # distutils' strtobool, which pip uses
_FALSE = frozenset({"n", "no", "f", "false", "off", "0"})
_COUNTS = frozenset({"--verbose", "--quiet"})
_FILES = frozenset({"--requirement", "--constraint", "--editable", "--find-links"})  # name files guard would open
# The configured options that change what guard reads of the command (the others are not noted).
_MATTERS = frozenset({"--force-reinstall", "--ignore-installed", "--upgrade", "--no-deps", "--no-dependencies",
                      "--user", "--no-user", "--target", "--prefix", "--root", "--python", "--requirement",
                      "--editable", "--find-links", "--no-index", "--index-url", "--extra-index-url"})


def expand(option: str) -> tuple[str | None, str]:
    """(the long option ``option`` stands for, "") — itself, or the one it is an unambiguous prefix
    of, as optparse reads it; (None, why) when it is ambiguous or no pip option."""
    known = PIP_FLAGS | PIP_VALUES
    if option in known:
        return option, ""
    matches = sorted(o for o in known if o.startswith(option))
    if len(matches) == 1:
        return matches[0], ""
    if matches:
        return None, f"{option}: an ambiguous abbreviation ({', '.join(matches)})"
    return None, f"{option}: not a pip install option guard knows"


@dataclass
class Configured:
    """What pip's configuration adds before its command line."""

    options: list[tuple[str, str | None]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # sources guard could not read for certain
    not_opened: list[str] = field(default_factory=list)  # files the environment's own pip.conf names


def _home(env: dict[str, str]) -> str:
    if env.get("HOME"):
        return env["HOME"]
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return os.path.expanduser("~")


def config_files(prefix: str | None, env: dict[str, str], isolated: bool, cwd: str) -> list[tuple[str, str]]:
    """(level, path) of each file pip reads, in the order it lets later ones override earlier ones."""
    xdg_dirs = [d for d in env.get("XDG_CONFIG_DIRS", "/etc/xdg").split(os.pathsep) if d] or ["/etc/xdg"]
    files = [("global", os.path.join(d, "pip", "pip.conf")) for d in xdg_dirs] + [("global", SYSTEM_CONFIG)]
    env_file = env.get("PIP_CONFIG_FILE")
    env_file = os.path.join(cwd, env_file) if env_file else None
    if not isolated and not (env_file and os.path.exists(env_file)):
        home = _home(env)
        user_dir = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
        files += [("user", os.path.join(home, ".pip", "pip.conf")), ("user", os.path.join(user_dir, "pip", "pip.conf"))]
    if prefix:
        files.append(("site", os.path.join(prefix, "pip.conf")))
    if env_file:
        files.append(("PIP_CONFIG_FILE", env_file))
    return files


def _read_config(path: str, inside: str | None) -> configparser.RawConfigParser:
    """``inside``: the environment a site pip.conf belongs to (tree content: no link followed out)."""
    text = read_regular(path, CONFIG_MAX, what="pip configuration file", follow=inside is None,
                        root=inside).decode("utf-8")
    parser = configparser.RawConfigParser()
    parser.read_string(text, source=path)
    return parser


def _key(name: str) -> str:
    return "--" + name.lower().replace("_", "-").removeprefix("--")


def configured(prefix: str | None, env: dict[str, str], isolated: bool, cwd: str) -> Configured:
    """The options pip takes from its configuration files (sections [global] then [install]) and
    from ``PIP_<OPTION>`` environment variables (unless ``--isolated``), later ones winning, as
    (--option, value) pairs to read before the command line."""
    out = Configured()
    merged: dict[str, dict[str, tuple[str, str, str]]] = {"global": {}, "install": {}}
    for level, path in config_files(prefix, env, isolated, cwd):
        if not os.path.lexists(path) or path == os.devnull:  # PIP_CONFIG_FILE=/dev/null: nothing
            continue
        try:
            parser = _read_config(path, prefix if level == "site" else None)
        except (OSError, UnicodeDecodeError, configparser.Error) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).splitlines()[0][:200]
            out.unreadable.append(f"{path} ({level} pip configuration): cannot read it ({why})")
            continue
        for section in ("global", "install"):
            if parser.has_section(section):
                for name, value in parser.items(section):
                    merged[section][_key(name)] = (value, f"{path} [{section}]", level)
    values: dict[str, tuple[str, str, str]] = {**merged["global"], **merged["install"]}
    if not isolated:
        for name, value in env.items():
            if name.startswith("PIP_") and name[4:].lower() not in ("version", "help", "config_file"):
                values[_key(name[4:])] = (value, name, "env")
    for key, (value, where, level) in values.items():
        if key in _COUNTS or key not in PIP_FLAGS | PIP_VALUES:
            continue  # pip ignores a name it has no option for
        if key in PIP_FLAGS:
            word = value.strip().lower()
            if word in _TRUE:
                out.options.append((key, None))
                if key in _MATTERS:
                    out.notes.append(f"pip reads {key} from {where}")
            elif word not in _FALSE:
                out.unreadable.append(f"{where}: {key.removeprefix('--')} = {value[:80]!r} is not a yes or no")
        elif key in _APPEND and level == "site" and key in _FILES:
            # the environment's own file is tree content: it does not steer what guard opens
            out.options += [(key, v) for v in value.split() if "://" in v]
            out.not_opened += [f"{key} {v}" for v in value.split() if "://" not in v]
        elif key in _APPEND:
            out.options += [(key, v) for v in value.split()]
        else:
            out.options.append((key, value.strip()))
        if key in _MATTERS:
            out.notes.append(f"pip reads {key} {value.strip()[:200]} from {where}")
    return out
