"""What an install command will reinstall, and from where: read from its argv, never run.

``pip install``, ``python -m pip install``, ``uv pip install``, ``uv sync``, ``conda`` / ``mamba``
/ ``micromamba install``, ``pixi reinstall``: the distributions named (``name``, ``name==ver``, a
wheel file, the names in a ``-r`` file), whether the command forces a reinstall, and its source
as ``--from`` takes it (a wheel file, a find-links directory, or ``index``). A requirements file
is read as data for its names and source options only (a size cap, a depth cap, nothing in it is
run or followed to the network). Anything else is ``Tool.OTHER``: guard predicts nothing certain
for it.

The words are read as the installer reads them: pip's abbreviations and configuration
(``pipoptions``), uv's variables and configuration (``uvoptions``), the environment the
interpreter really installs into (``interpreter``). What cannot be read for certain is read as a
forced reinstall, and said in ``notes``.
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ...fs.paths import ancestors
from ...fs.reader import read_regular
from ...pristine.names import normalize_name
from .interpreter import Resolved, interpreter_environment, script_environment, which
from .pipoptions import PIP_SHORT_FLAGS, PIP_SHORT_VALUES, PIP_VALUES, configured, expand
from .uvlock import project_root, read_lock
from .uvoptions import settings as uv_settings

REQUIREMENTS_MAX = 4 << 20  # a requirements file is a list of names, not a data set
REQUIREMENTS_DEPTH = 8  # -r inside -r inside ...


class Tool(str, enum.Enum):
    PIP = "pip"
    UV_PIP = "uv pip"
    UV_SYNC = "uv sync"
    CONDA = "conda"  # conda, mamba, micromamba
    PIXI = "pixi"
    OTHER = "other"


class Change(str, enum.Enum):
    """What the command does to one installed distribution it names."""

    REINSTALL = "reinstall"  # certain: a forced reinstall, or another version asked for
    MAYBE = "maybe"  # --upgrade (only if a newer one is found), a wheel file of the installed version
    NONE = "none"  # already satisfied: the installer leaves it as it is


def normalize(name: str) -> str:
    return normalize_name(name)


@dataclass(frozen=True)
class Requested:
    """One requirement the command names."""

    name: str  # normalized
    version: str | None = None  # an exact pin (==), or the wheel file's version
    wheel: str | None = None  # the wheel file, absolute, when the requirement is one


@dataclass(frozen=True)
class Recognised:
    tool: Tool
    requested: tuple[Requested, ...] = ()
    forced: bool = False  # --force-reinstall / --reinstall: every requested distribution
    upgrade: bool = False  # -U / --upgrade
    reinstall_all: bool = False  # uv sync --reinstall, pixi reinstall with no names: everything installed
    reinstall_packages: tuple[str, ...] = ()  # --reinstall-package NAME (normalized)
    upgrade_packages: tuple[str, ...] = ()  # uv's --upgrade-package NAME
    no_deps: bool = False
    no_cache: bool = False  # uv --no-cache: a temporary cache, every wheel unpacked afresh
    offline: bool = False  # uv --offline / UV_OFFLINE: served from uv's cache, nothing fetched again
    exact: bool = False  # uv sync with its lock read: installed distributions it does not name are removed
    source: str | None = None  # as --from takes it: a .whl path, a directory, "index"; None: as installed
    source_why: str = ""
    wheel_dirs: tuple[str, ...] = ()  # local directories the command installs from (originals may be there)
    environment: str | None = None  # the environment the command names (a venv or prefix), when it names one
    environment_why: str = ""
    environment_unsure: str = ""  # why guard cannot tell for certain which environment the command changes
    unnamed: tuple[str, ...] = ()  # requirements whose distribution guard cannot tell (a project dir, an sdist)
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def recognised(self) -> bool:
        return self.tool is not Tool.OTHER

    def names(self) -> set[str]:
        return {r.name for r in self.requested} | set(self.reinstall_packages) | set(self.upgrade_packages)

    def change(self, name: str, installed_version: str | None) -> Change:
        """What the command does to the installed distribution ``name`` (normalized)."""
        if self.reinstall_all or name in self.reinstall_packages:
            return Change.REINSTALL
        wanted = [r for r in self.requested if r.name == name]
        if not wanted:
            if self.exact:
                return Change.REINSTALL  # uv sync removes what its lock does not list: every file goes
            return Change.MAYBE if name in self.upgrade_packages else Change.NONE
        if self.forced:
            return Change.REINSTALL
        if any(r.version is not None and installed_version is not None and r.version != installed_version
               for r in wanted):
            return Change.REINSTALL
        if self.upgrade or name in self.upgrade_packages:
            return Change.MAYBE
        if any(r.wheel for r in wanted):
            return Change.MAYBE  # the same version from a file: installers differ on reinstalling it
        return Change.NONE


_WHEEL = re.compile(r"(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._]*[A-Za-z0-9])?)-(?P<version>[A-Za-z0-9_.!+]+)"
                    r"(?:-[0-9][^-]*)?-[^-]+-[^-]+-[^-]+\.whl\Z")
_REQ = re.compile(r"\s*(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[[^\]]*\])?\s*(?P<rest>.*)\Z", re.S)
_PIN = re.compile(r"\s*===?\s*(?P<version>[A-Za-z0-9_.!+-]+)\s*\Z")
_PYTHON = re.compile(r"python(?:\d+(?:\.\d+)?)?\Z")


def wheel_name(path: str) -> tuple[str, str] | None:
    """(normalized name, version) from a wheel's file name (PEP 427), or None."""
    m = _WHEEL.match(os.path.basename(path))
    if not m:
        return None
    return normalize(m["name"]), m["version"].replace("_", "-")


# Options of each installer that take a value (--opt VALUE or --opt=VALUE); every other option is a flag.
_PIP_VALUES = {"-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-i", "--index-url",
               "--extra-index-url", "-f", "--find-links", "-t", "--target", "--prefix", "--root", "--python",
               "--platform", "--python-version", "--implementation", "--abi", "--src", "--upgrade-strategy",
               "--progress-bar", "--log", "--cache-dir", "--trusted-host", "--cert", "--client-cert", "--proxy",
               "--timeout", "--retries", "--exists-action", "--global-option", "--config-settings", "-C",
               "--report", "--no-binary", "--only-binary", "--root-user-action", "--keyring-provider",
               "--use-feature", "--use-deprecated", "--group", "--log-file", "--local-log", "--build-option",
               "--install-option", "--resume-retries"}
_UV_VALUES = {"-r", "--requirement", "--requirements", "-c", "--constraint", "--constraints", "--override",
              "--overrides", "-e", "--editable", "--extra", "-i", "--index-url", "--extra-index-url", "--index",
              "--default-index", "-f", "--find-links", "-p", "--python", "--target", "--prefix",
              "--reinstall-package", "-P", "--upgrade-package", "--no-build-package", "--no-binary-package",
              "--no-binary", "--only-binary", "--only-binary-package", "--python-version", "--python-platform",
              "--index-strategy", "--keyring-provider", "--resolution", "--prerelease", "--exclude-newer",
              "--link-mode", "-C", "--config-setting", "--config-settings", "--cache-dir", "--color",
              "--config-file", "--directory", "--project", "-b", "--build-constraint", "--build-constraints",
              "--torch-backend", "--group", "--refresh-package", "--no-sources-package", "--package",
              "--no-install-package", "--only-group", "--no-group", "--allow-insecure-host",
              "--trusted-host", "--fork-strategy", "--dependency-metadata", "--build-constraints",
              "--exclude", "--excludes", "--no-extra", "--only-extra"}
_CONDA_VALUES = {"-n", "--name", "-p", "--prefix", "-c", "--channel", "--file", "--repodata-fn", "--solver",
                 "--experimental", "--strict-channel-priority"}


_UV_SHORT_VALUES = frozenset(o for o in _UV_VALUES if len(o) == 2)


def _options(argv: Sequence[str], takes_value: set[str] | frozenset[str], *, pip: bool = False,
             problems: list[str] | None = None, interspersed: bool = True
             ) -> tuple[list[tuple[str, str | None]], list[str]]:
    """(options with their values, positional arguments); ``--`` ends the options. ``pip``: read
    as pip's optparse does, a long option by its unambiguous prefix too; what cannot be read for
    certain goes to ``problems``. Short flags combine (``-Ir reqs.txt``): one that takes a value
    takes the rest of the word, or the next word. ``interspersed`` False: stop at the first
    positional argument (pip's options before its command name)."""
    problems = [] if problems is None else problems
    short_values = PIP_SHORT_VALUES if pip else {o for o in takes_value if len(o) == 2}
    opts: list[tuple[str, str | None]] = []
    args: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            args += argv[i + 1:]
            break
        if word.startswith("--"):
            key, eq, value = word.partition("=")
            if pip:
                full, why = expand(key)
                if full is None:
                    problems.append(why)
                    opts.append((key, value if eq else None))
                    i += 1
                    continue
                key, takes = full, full in PIP_VALUES
            else:
                takes = key in takes_value
            if eq:
                opts.append((key, value))
            elif takes:
                opts.append((key, argv[i + 1] if i + 1 < len(argv) else None))
                i += 1
            else:
                opts.append((key, None))
        elif word.startswith("-") and word != "-":
            for j in range(1, len(word)):
                key = "-" + word[j]
                if key in short_values:
                    rest = word[j + 1:]
                    if rest:
                        opts.append((key, rest))  # -rreqs.txt, -Irreqs.txt
                    else:
                        opts.append((key, argv[i + 1] if i + 1 < len(argv) else None))
                        i += 1
                    break
                if pip and key not in PIP_SHORT_FLAGS:
                    problems.append(f"{key}: not a pip install option guard knows")
                opts.append((key, None))
        else:
            if not interspersed:
                args += argv[i:]
                break
            args.append(word)
        i += 1
    return opts, args


@dataclass
class _Reading:
    """What a pip or uv command says, gathered over its argv and its requirements files."""

    cwd: str
    requested: list[Requested] = field(default_factory=list)
    unnamed: list[str] = field(default_factory=list)
    find_links: list[str] = field(default_factory=list)
    index: bool = True  # --no-index turns it off
    custom_index: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def outside(self, what: str, path: str, top: str | None) -> bool:
        """A path a requirements file names outside its own directory: not opened (data does not
        steer reads), recorded as not known."""
        if top is None or _under(path, top):
            return False
        self.notes.append(f"{path}: {what} named by a requirements file, outside its directory: not read; "
                          "what it installs is not known")
        self.unnamed.append(path)
        return True

    def requirement(self, text: str, base: str, top: str | None = None) -> None:
        """``top``: the directory of the requirements file that names it, which a file it names must be in."""
        text = text.strip()[:300]  # a name, a path or a URL; never more than a line of a report
        if not text:
            return
        if text.endswith(".whl"):
            path = text if "://" in text else os.path.abspath(os.path.join(base, text.removeprefix("file:")))
            if "://" not in text and self.outside("a wheel file", path, top):
                return
            named = wheel_name(text)
            if named is None:
                self.unnamed.append(text)
                return
            self.requested.append(Requested(named[0], named[1], path if "://" not in text else None))
            return
        at = text.split(";", 1)[0]
        if " @ " in at:  # name @ url: a direct reference, named
            name = at.split(" @ ", 1)[0].strip()
            m = _REQ.match(name)
            if m:
                url = at.split(" @ ", 1)[1].strip()
                named = wheel_name(url) if url.endswith(".whl") else None
                self.requested.append(Requested(normalize(m["name"]), named[1] if named else None))
                return
        looks_like_path = os.sep in text or text.startswith(".") or "://" in text or \
            text.endswith((".tar.gz", ".zip", ".tar.bz2", ".tgz"))
        m = _REQ.match(at)
        if m and not looks_like_path:
            pin = _PIN.match(m["rest"]) if m["rest"] else None
            self.requested.append(Requested(normalize(m["name"]), pin["version"] if pin and "*" not in pin["version"]
                                            else None))
            return
        self.unnamed.append(text)

    def requirements_file(self, path: str, base: str, depth: int = 0, seen: set[str] | None = None,
                          top: str | None = None) -> None:
        """``top``: the directory of the file the command names, which the files it names must be in."""
        seen = set() if seen is None else seen
        full = os.path.abspath(os.path.join(base, path))
        if "://" in path:
            self.notes.append(f"{path}: a requirements file at a URL is not read; its requirements are not known")
            self.unnamed.append(path)
            return
        if full in seen or depth > REQUIREMENTS_DEPTH:
            return
        if depth == 0 or top is None:
            top = os.path.dirname(full)  # a file the command names: read, and the one directory read from
        elif not _under(full, top):
            # a file a requirements file names outside its own directory: data does not steer reads
            self.notes.append(f"{full}: named by a requirements file, outside its directory: not read; its "
                              "requirements are not known")
            self.unnamed.append(full)
            return
        seen.add(full)
        try:
            text = read_regular(full, REQUIREMENTS_MAX, what="requirements file").decode("utf-8", "replace")
        except OSError as exc:
            self.notes.append(f"{full}: cannot read the requirements file ({exc.strerror or exc}); its "
                              "requirements are not known")
            self.unnamed.append(full)
            return
        here = os.path.dirname(full)
        lines = re.sub(r"\\\r?\n", " ", text).splitlines()
        for line in lines:
            line = re.sub(r"(^|\s)#.*", "", line).strip()
            if not line:
                continue
            if line.startswith("-"):
                problems: list[str] = []
                opts, args = _options(line.split(), _PIP_VALUES | _UV_VALUES, pip=True, problems=problems)
                self.notes += [f"{full}: {p}" for p in problems]
                self.options(opts, here, depth + 1, seen, top)
                for arg in args:
                    self.requirement(arg, here, top)
            else:
                self.requirement(line, here, top)

    def options(self, opts: list[tuple[str, str | None]], base: str, depth: int = 0,
                seen: set[str] | None = None, top: str | None = None) -> None:
        for key, value in opts:
            if key in ("-r", "--requirement", "--requirements") and value:
                self.requirements_file(value, base, depth, seen, top)
            elif key in ("-e", "--editable") and value:
                self.unnamed.append(f"-e {value}")
            elif key in ("-f", "--find-links") and value:
                path = value if "://" in value else os.path.abspath(os.path.join(base, value.removeprefix("file:")))
                if "://" in value or not self.outside("a --find-links directory", path,
                                                      top if depth > 0 else None):
                    self.find_links.append(path)
            elif key == "--no-index":
                self.index = False
            elif key in ("-i", "--index-url", "--extra-index-url", "--index", "--default-index") and value:
                self.custom_index.append(value)


def _under(path: str, root: str) -> bool:
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _source(reading: _Reading, user_said: list[str]) -> tuple[str | None, str, tuple[str, ...]]:
    """(the --from string, why, local directories to look for originals in)."""
    wheels = [r.wheel for r in reading.requested if r.wheel]
    local_links = [f for f in reading.find_links if "://" not in f]
    dirs = tuple(dict.fromkeys([os.path.dirname(w) for w in wheels] + [d for d in local_links if os.path.isdir(d)]))
    if len(wheels) == 1 and len(reading.requested) == 1:
        return wheels[0], "the command installs this wheel file", dirs
    if wheels:
        user_said.append("several requirements, some of them wheel files: the predictions are for the source each "
                         "was installed from (pass --from to choose one)")
        return None, "several sources", dirs
    if local_links and not reading.index:
        if len(local_links) > 1:
            user_said.append("several --find-links directories: the prediction is for the first")
        return local_links[0], "--find-links with --no-index", dirs
    if local_links:
        user_said.append(f"--find-links {local_links[0]} and the index: either may provide a wheel")
        return local_links[0], "--find-links (the index may provide it too)", dirs
    if not reading.index:
        return None, "--no-index without --find-links: only what is installed satisfies it", dirs
    return "index", ("the index" + (f" ({reading.custom_index[0]})" if reading.custom_index else "")), dirs


def _user_base(env: dict[str, str]) -> str:
    base = env.get("PYTHONUSERBASE")
    return os.path.abspath(base) if base else os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local")


def _path(value: str, cwd: str) -> str:
    return os.path.abspath(os.path.join(cwd, os.path.expanduser(value)))


def _interpreter_value(value: str, cwd: str, what: str) -> Resolved:
    """``--python VALUE`` given as a path: an interpreter, or an environment directory."""
    path = _path(value, cwd)
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "pyvenv.cfg")):
            return Resolved(path, f"{what}: the venv {path}")
        return Resolved(path, f"{what}: the directory {path}", f"{what}: {path} is a directory without pyvenv.cfg")
    return interpreter_environment(path, what)


def _pip(words: Sequence[str], resolved: Resolved, cwd: str, env: dict[str, str]) -> Recognised:
    """``pip [general options] install ...``, with the options pip takes from its configuration
    files and ``PIP_*`` variables; ``resolved``: the environment the pip that runs belongs to."""
    problems: list[str] = []
    before, rest = _options(list(words), _PIP_VALUES, pip=True, problems=problems, interspersed=False)
    if not rest or rest[0] != "install":
        return Recognised(Tool.OTHER, notes=(f"pip {rest[0] if rest else ''}: not an install",))
    opts, args = _options(rest[1:], _PIP_VALUES, pip=True, problems=problems)
    given = before + opts
    isolated = any(k == "--isolated" for k, _ in given)
    python = next((v for k, v in reversed(given) if k == "--python" and v), None)
    if python:  # pip runs itself again under that interpreter, which installs into its own environment
        resolved = _interpreter_value(python, cwd, f"pip --python {python}")
    conf = configured(resolved.environment, env, isolated, cwd)
    configured_python = next((v for k, v in reversed(conf.options) if k == "--python" and v), None)
    if not python and configured_python:  # PIP_PYTHON: the pip it starts reads that environment's pip.conf
        resolved = _interpreter_value(configured_python, cwd, f"pip's configured --python {configured_python}")
        conf = configured(resolved.environment, env, isolated, cwd)
    everything = conf.options + given  # the command line wins over the configuration
    environment, why, unsure = resolved.environment, resolved.why, resolved.unsure
    user = False
    for key, value in everything:
        if key in ("--prefix", "--root", "--target", "-t") and value:
            name = "--target" if key == "-t" else key
            environment, why, unsure = _path(value, cwd), f"pip {name} {value}", ""
        elif key == "--user":
            user = True
        elif key == "--no-user":
            user = False
    if user:
        environment, why, unsure = _user_base(env), "pip --user installs into the user's site-packages", ""
    reading = _Reading(cwd)
    reading.options(given, cwd)  # the command's own sources first: the prediction is for the first
    reading.options(conf.options, cwd)
    for named in conf.not_opened:
        reading.unnamed.append(named)
        reading.notes.append(f"{named}: named by the environment's own pip.conf: not opened; what it installs "
                             "is not known")
    for arg in args:
        reading.requirement(arg, cwd)
    keys = {k for k, _ in everything}
    notes: list[str] = list(conf.notes) + list(reading.notes)
    doubts = problems + conf.unreadable
    if doubts:
        notes += [f"{d}: read as a forced reinstall of everything the command names" for d in doubts]
    source, source_why, dirs = _source(reading, notes)
    forced = bool(keys & {"--force-reinstall", "--ignore-installed", "-I"}) or bool(doubts)
    return Recognised(Tool.PIP, tuple(reading.requested), forced=forced,
                      upgrade=bool(keys & {"-U", "--upgrade"}), no_deps=bool(keys & {"--no-deps", "--no-dependencies"}),
                      source=source, source_why=source_why, wheel_dirs=dirs, environment=environment,
                      environment_why=why, environment_unsure=unsure, unnamed=tuple(reading.unnamed),
                      notes=tuple(notes))


def _venv_upward(start: str) -> str | None:
    return next((os.path.join(d, ".venv") for d in ancestors(start)
                 if os.path.isfile(os.path.join(d, ".venv", "pyvenv.cfg"))), None)


def _uv_environment(opts: list[tuple[str, str | None]], env: dict[str, str], cwd: str, project: str) -> Resolved:
    """The environment ``uv pip`` installs into: --python / UV_PYTHON, --prefix / --target, --system,
    VIRTUAL_ENV, CONDA_PREFIX, else the .venv found upward from the project directory."""
    python = next((v for k, v in reversed(opts) if k in ("-p", "--python") and v), None)
    said = "uv --python"
    if python is None and env.get("UV_PYTHON"):
        python, said = env["UV_PYTHON"], "UV_PYTHON"
    for key, value in reversed(opts):
        if key in ("--prefix", "--target") and value:
            return Resolved(_path(value, cwd), f"uv {key} {value}")
    if python is not None:
        if os.sep in python or os.path.exists(os.path.join(cwd, python)):
            return _interpreter_value(python, cwd, f"{said} {python}")
        return Resolved(None, f"{said} {python}",
                        f"{said} {python} is an interpreter request: uv picks the interpreter when it runs")
    if any(k == "--system" for k, _ in opts) or env.get("UV_SYSTEM_PYTHON", "").lower() in ("1", "true", "yes", "on"):
        return Resolved(None, "uv --system", "uv --system: uv picks a system interpreter when it runs")
    for name in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        if env.get(name):
            return Resolved(_path(env[name], cwd), f"uv uses {name}")
    found = _venv_upward(project)
    if found:
        return Resolved(found, "uv uses the .venv it finds from " + ("the working directory" if project == cwd
                                                                      else project))
    return Resolved(None, "uv finds no environment from here", f"uv finds no .venv from {project}")




_SAME_OPTION = {"-f": "--find-links", "-i": "--index-url"}


def _not_given(environment: list[tuple[str, str | None]], keys: set[str]) -> list[tuple[str, str | None]]:
    """The UV_* variables' options the command line does not give itself (clap: an option given
    replaces its variable)."""
    given = {_SAME_OPTION.get(k, k) for k in keys}
    return [(k, v) for k, v in environment if _SAME_OPTION.get(k, k) not in given]


def _uv(words: Sequence[str], env: dict[str, str], cwd: str) -> Recognised:
    opts, args = _options(list(words), _UV_VALUES)
    keys = {k for k, _ in opts}
    directory = next((v for k, v in reversed(opts) if k == "--directory" and v), None)
    if directory:  # uv runs as if started there: every relative path, the .venv, the project
        cwd = _path(directory, cwd)
    project_opt = next((v for k, v in reversed(opts) if k == "--project" and v), None) or env.get("UV_PROJECT")
    project = _path(project_opt, cwd) if project_opt else cwd
    config_file = next((v for k, v in reversed(opts) if k == "--config-file" and v), None)
    pip = args[:2] == ["pip", "install"]
    conf = uv_settings(project, env, pip=pip, config_file=_path(config_file, cwd) if config_file else None,
                       no_config="--no-config" in keys)
    doubts = list(conf.unreadable)
    no_cache = "--no-cache" in keys or "-n" in keys or conf.no_cache
    forced = "--reinstall" in keys or "--force-reinstall" in keys or conf.reinstall or bool(doubts)
    reinstall_packages = tuple(normalize(v) for k, v in opts if k == "--reinstall-package" and v) + \
        tuple(normalize(p) for p in conf.reinstall_packages)
    upgrade_packages = tuple(normalize(v) for k, v in opts if k in ("-P", "--upgrade-package") and v)
    notes: list[str] = list(conf.notes) + [f"{d}: read as a forced reinstall" for d in doubts]
    if directory:
        notes.append(f"uv --directory {directory}: uv runs in {cwd}")
    if pip:
        resolved = _uv_environment(opts, env, cwd, project)
        reading = _Reading(cwd)
        reading.options(opts, cwd)  # the command line first: the prediction is for its first source
        reading.options(_not_given(conf.environment, keys), cwd)
        reading.options(conf.configured, cwd)
        for arg in args[2:]:
            reading.requirement(arg, cwd)
        notes += reading.notes
        source, source_why, dirs = _source(reading, notes)
        return Recognised(Tool.UV_PIP, tuple(reading.requested), forced=forced,
                          upgrade="-U" in keys or "--upgrade" in keys, reinstall_packages=reinstall_packages,
                          upgrade_packages=upgrade_packages, no_deps="--no-deps" in keys, no_cache=no_cache,
                          source=source, source_why=source_why, wheel_dirs=dirs, environment=resolved.environment,
                          environment_why=resolved.why, environment_unsure=resolved.unsure,
                          unnamed=tuple(reading.unnamed), notes=tuple(notes))
    if args[:1] == ["sync"]:
        root = project_root(project) or project
        unsure = ""
        if "--active" in keys:
            if env.get("VIRTUAL_ENV"):
                environment, why = _path(env["VIRTUAL_ENV"], cwd), "uv sync --active uses VIRTUAL_ENV"
            else:
                environment, why = os.path.join(root, ".venv"), "uv sync --active without VIRTUAL_ENV"
        elif env.get("UV_PROJECT_ENVIRONMENT"):
            environment, why = _path(env["UV_PROJECT_ENVIRONMENT"], root), "UV_PROJECT_ENVIRONMENT"
        else:
            environment, why = os.path.join(root, ".venv"), "uv sync installs into the project's .venv"
        found = project_root(root)
        lock = read_lock(found) if found else None
        if conf.environment:  # measured (uv 0.13): a locked uv sync installs from the lock's sources
            notes.append("uv sync installs from the sources its uv.lock records: UV_FIND_LINKS and the UV_*INDEX* "
                         "variables do not change what a locked sync installs")
        exact = lock is not None and lock.path is not None and not upgrade_packages and not {"-U", "--upgrade"} & keys
        if lock and lock.note and exact:
            notes.append(lock.note)
        else:
            notes.append("uv sync installs what the lock file says and removes what it does not list: which "
                         "distributions change is not known before it runs" + (f" ({lock.note})" if lock and lock.note
                                                                               else ""))
        return Recognised(Tool.UV_SYNC, tuple(Requested(p.name, p.version) for p in lock.packages) if exact and lock
                          else (), forced=forced, reinstall_all=forced,
                          reinstall_packages=reinstall_packages, upgrade_packages=upgrade_packages,
                          upgrade="-U" in keys or "--upgrade" in keys, no_cache=no_cache, source="index",
                          offline="--offline" in keys or env.get("UV_OFFLINE", "").lower() in ("1", "true", "yes"),
                          exact=exact, source_why="uv sync installs from the lock file's index",
                          wheel_dirs=tuple(d for d in (lock.local_registries if lock else ()) if os.path.isdir(d)),
                          environment=environment, environment_why=why, environment_unsure=unsure,
                          notes=tuple(notes))
    return Recognised(Tool.OTHER, notes=(f"uv {' '.join(args[:2])}: not an install guard knows",))


_CONDA_SPEC = re.compile(r"(?:[^:\s]+::)?(?P<name>[A-Za-z0-9_][A-Za-z0-9._-]*)(?:\s*(?P<op>==|=)\s*"
                         r"(?P<version>[A-Za-z0-9_.!+]+)(?:=[^\s]*)?)?\Z")


def _conda(words: Sequence[str], cwd: str) -> Recognised:
    opts, args = _options(list(words), _CONDA_VALUES)
    if not args or args[0] not in ("install", "update", "upgrade"):
        return Recognised(Tool.OTHER, notes=(f"conda {args[0] if args else ''}: not an install",))
    keys = {k for k, _ in opts}
    environment, why = None, ""
    for key, value in opts:
        if key in ("-p", "--prefix") and value:
            environment, why = os.path.abspath(value), f"{key} {value}"
    requested, unnamed = [], []
    for spec in args[1:]:
        m = _CONDA_SPEC.match(spec)
        if m:
            requested.append(Requested(normalize(m["name"]), m["version"] if m["version"] and "*" not in
                                       m["version"] else None))
        else:
            unnamed.append(spec)
    unnamed += [f"--file {v}" for k, v in opts if k == "--file" and v]
    upgrade = args[0] != "install" or "--update-all" in keys or "--all" in keys
    return Recognised(Tool.CONDA, tuple(requested), forced="--force-reinstall" in keys, upgrade=upgrade,
                      no_deps="--no-deps" in keys, source=None, source_why="the channels (as installed)",
                      environment=environment, environment_why=why, unnamed=tuple(unnamed))


def _pixi(words: Sequence[str]) -> Recognised:
    opts, args = _options(list(words), {"-e", "--environment", "--manifest-path"})
    if args[:1] == ["reinstall"]:
        names = tuple(Requested(normalize(a)) for a in args[1:])
        return Recognised(Tool.PIXI, names, forced=True, reinstall_all=not names,
                          source_why="pixi reinstalls from its lock file")
    if args[:1] in (["install"], ["update"], ["upgrade"], ["add"]):
        return Recognised(Tool.PIXI, tuple(Requested(normalize(a)) for a in args[1:] if _CONDA_SPEC.match(a)),
                          upgrade=True, source_why="pixi installs from its lock file",
                          notes=(f"pixi {args[0]}: which packages change is not known before it runs",))
    return Recognised(Tool.OTHER, notes=(f"pixi {' '.join(args[:1])}: not an install guard knows",))


def recognise(argv: Sequence[str], env: dict[str, str] | None = None, cwd: str | None = None) -> Recognised:
    """What ``argv`` installs. Only its words (and the requirements files it names) are read."""
    env = dict(os.environ) if env is None else env
    cwd = os.path.abspath(cwd or os.getcwd())
    if not argv:
        return Recognised(Tool.OTHER, notes=("no command",))
    words = list(argv)
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):  # FOO=bar cmd: not a shell here
        return Recognised(Tool.OTHER, notes=(f"{words[0]}: guard runs the command without a shell; "
                                             "set variables in guard's own environment",))
    head = os.path.basename(words[0])
    if re.fullmatch(r"pip(?:3(?:\.\d+)?)?", head):
        return _pip(words[1:], script_environment(words[0], env, cwd), cwd, env)
    if _PYTHON.match(head) and words[1:3] == ["-m", "pip"]:
        located = which(words[0], env, cwd)
        resolved = interpreter_environment(located, f"{words[0]} -m pip") if located else \
            Resolved(None, f"{words[0]} not found", f"{words[0]} is not on PATH")
        return _pip(words[3:], resolved, cwd, env)
    if head == "uv" or (_PYTHON.match(head) and words[1:3] == ["-m", "uv"]):
        return _uv(words[1:] if head == "uv" else words[3:], env, cwd)
    if head in ("conda", "mamba", "micromamba"):
        return _conda(words[1:], cwd)
    if head == "pixi":
        return _pixi(words[1:])
    return Recognised(Tool.OTHER, notes=(f"{head}: not an installer guard knows",))
