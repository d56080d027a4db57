"""Resolve a venv, a prefix or a bare site-packages directory without running its interpreter."""

from __future__ import annotations

import errno
import glob
import os
import re
import stat
import sys
import sysconfig
from collections.abc import Iterable
from typing import NamedTuple

from ..core.errors import TargetError
from ..fs.containment import Containment
from ..fs.reader import read_kind
from ..core.values import Problem, Target, TargetKind
from .uv.cache import default_uv_cache, default_virtualenv_app_data


def read_pyvenv_cfg(path: str, root: str | None = None) -> dict[str, str]:
    """Parse pyvenv.cfg (``key = value`` lines; venv, virtualenv and uv all write this form).
    Read through ``fileio`` (a regular file of at most 1 MiB, inside ``root``); TargetError otherwise."""
    values: dict[str, str] = {}
    try:
        text = read_kind(path, "pyvenv.cfg", root=root).decode("utf-8", "replace")
    except OSError as exc:
        raise TargetError(f"cannot read {path}: {exc.strerror or exc}") from None
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip().lower()] = value.strip()
    return values


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _inside_real(prefix: str, path: str) -> bool:
    """Whether ``path`` resolves to ``prefix``'s real location or under it."""
    return _under(os.path.realpath(path), os.path.realpath(prefix))


def _python_version(cfg: dict[str, str]) -> str | None:
    # venv writes "version", uv and virtualenv write "version_info" (e.g. 3.12.7 or 3.12.7.final.0).
    for key in ("version_info", "version"):
        match = re.match(r"(\d+)\.(\d+)", cfg.get(key, ""))
        if match:
            return f"{match.group(1)}.{match.group(2)}"
    return None


_PATTERNS = (
    "lib/python3*/site-packages",
    "lib64/python3*/site-packages",
    "lib/pypy3*/site-packages",
    "Lib/site-packages",  # Windows layout
)


def _site_packages_candidates(prefix: str) -> list[str]:
    return [p for pattern in _PATTERNS for p in sorted(glob.glob(os.path.join(glob.escape(prefix), pattern)))]


def _site_packages_under(prefix: str, version: str | None) -> list[str]:
    """Every site-packages of a prefix, deduplicated by real path (lib64 is often a symlink)."""
    patterns = []
    if version:
        patterns += [f"lib/python{version}*/site-packages", f"lib64/python{version}*/site-packages"]
    patterns += list(_PATTERNS)
    found: list[str] = []
    seen: set[str] = set()
    for pattern in patterns:
        for path in sorted(glob.glob(os.path.join(glob.escape(prefix), pattern))):
            real = os.path.realpath(path)
            # A site-packages that resolves out of the environment is the tree pointing driftscan
            # elsewhere: not audited (``target_problems`` reports it).
            if os.path.isdir(path) and real not in seen and _inside_real(prefix, path):
                seen.add(real)
                found.append(os.path.normpath(path))
        if found and version and pattern.startswith("lib64"):
            break  # the venv's own Python version settled it
    return found


def _bin_dir(prefix: str) -> str | None:
    for name in ("bin", "Scripts"):
        path = os.path.join(prefix, name)
        if os.path.isdir(path) and _inside_real(prefix, path):
            return path
    return None


def _existing(prefix: str, *names: str) -> tuple[str, ...]:
    return tuple(p for p in (os.path.join(prefix, n) for n in names)
                 if os.path.isdir(p) and _inside_real(prefix, p))


def venv_target(path: str) -> Target:
    """A virtual environment (pyvenv.cfg) or a conda prefix (conda-meta/)."""
    prefix = os.path.abspath(path)
    if not os.path.exists(prefix):
        raise TargetError(f"{path}: no such file or directory")
    if not os.path.isdir(prefix):
        raise TargetError(f"{path}: not a directory")
    cfg_path = os.path.join(prefix, "pyvenv.cfg")
    if os.path.lexists(cfg_path):
        # An unreadable pyvenv.cfg (a FIFO, 10 GiB, a link out of the tree) costs only the Python
        # version, found from the lib/pythonX.Y name instead; ``target_problems`` reports it.
        try:
            version = _python_version(read_pyvenv_cfg(cfg_path, root=prefix))
        except TargetError:
            version = None
        kind = TargetKind.VENV
    elif os.path.isdir(os.path.join(prefix, "conda-meta")):
        kind, version = TargetKind.PREFIX, None
    else:
        raise TargetError(
            f"{path}: not a virtual environment (no pyvenv.cfg); "
            "to audit a bare directory use --site-packages DIR"
        )
    conda = kind is TargetKind.PREFIX and is_conda_prefix(prefix)
    site = _site_packages_under(prefix, version)
    if not site:
        outside = [p for p in _site_packages_candidates(prefix) if not _inside_real(prefix, p)]
        if outside:
            raise TargetError(f"{path}: its site-packages {outside[0]} resolves outside the environment "
                              f"(to {os.path.realpath(outside[0])}); not audited")
        raise TargetError(f"{path}: no lib/python3.*/site-packages inside this environment")
    if version is None:
        match = re.search(r"python(\d+\.\d+)", site[0])
        version = match.group(1) if match else None
    return Target(
        kind=kind,
        venv=prefix,
        site_packages=tuple(site),
        # A venv's bin/ holds only what installers put there; a conda prefix's holds the whole
        # distribution (python, openssl, ...), which its conda records list: walked when they exist.
        bin_dir=_bin_dir(prefix) if kind is TargetKind.VENV or conda else None,
        python_version=version,
        extra_roots=_existing(prefix, "include", "share", "etc") if kind is TargetKind.VENV
        else _existing(prefix, "etc") if conda else (),
    )


def is_conda_prefix(prefix: str) -> bool:
    """Whether ``prefix`` has a ``conda-meta/`` directory with a ``history`` file or ``*.json``
    records. A ``conda-meta`` that is a symlink counts (``read_conda_prefix`` then says whether
    it may be read); only its names are looked at, and only while none is a record yet."""
    meta = os.path.join(prefix, "conda-meta")
    try:
        st = os.lstat(meta)
    except OSError:
        return False
    if stat.S_ISLNK(st.st_mode):
        return True
    if not stat.S_ISDIR(st.st_mode):
        return False
    if os.path.lexists(os.path.join(meta, "history")):
        return True
    try:
        with os.scandir(meta) as entries:
            return any(e.name.endswith(".json") for e in entries)
    except OSError:
        return False


def _named_through_link(path: str) -> bool:
    """Whether the user named a site-packages through a symlink that would otherwise cost the
    audit: the named directory is itself a link, or it is laid out as
    ``<prefix>/lib/pythonX.Y/site-packages`` but resolves outside ``<prefix>``."""
    if os.path.islink(path):
        return True
    layout = site_packages_prefix(path)
    return layout is not None and not _inside_real(layout[0], path)


def site_packages_target(paths: list[str]) -> Target:
    resolved = []
    links = []
    for path in paths:
        if not os.path.exists(path):
            raise TargetError(f"{path}: no such file or directory")
        if not os.path.isdir(path):
            raise TargetError(f"{path}: not a directory")
        named = os.path.abspath(path)
        # A link on the command line is the user's choice, not the tree's: the directory it names
        # is audited, rooted where that directory lies, and the report names the link.
        if _named_through_link(named):
            real = os.path.realpath(named)
            links.append((named, real))
            named = real
        resolved.append(named)
    match = re.search(r"python(\d+\.\d+)", resolved[0]) if resolved else None
    return Target(
        kind=TargetKind.SITE_PACKAGES,
        venv=None,
        site_packages=tuple(dict.fromkeys(resolved)),
        python_version=match.group(1) if match else _version_from_tags(resolved[0]) if resolved else None,
        named_links=tuple(links),
    )


_CPYTHON_TAG = re.compile(r"\.cpython-3(\d{1,2})")


def _version_from_tags(directory: str, limit: int = 5000) -> str | None:
    """A --target directory's Python version, from the tags of the bytecode and extension
    modules in it (``six.cpython-311.pyc``, ``_x.cpython-312-x86_64-linux-gnu.so``): names only."""
    for where in (os.path.join(directory, "__pycache__"), directory):
        try:
            with os.scandir(where) as it:
                for n, entry in enumerate(it):
                    found = _CPYTHON_TAG.search(entry.name)
                    if found:
                        return f"3.{found.group(1)}"
                    if n >= limit:
                        break
        except OSError:
            continue
    return None


def current_target() -> Target:
    """The environment driftscan itself runs in."""
    if os.path.isfile(os.path.join(sys.prefix, "pyvenv.cfg")):
        return venv_target(sys.prefix)
    paths = sysconfig.get_paths()
    site = [p for p in dict.fromkeys([paths["purelib"], paths["platlib"]]) if os.path.isdir(p)]
    # A base interpreter's bin/ holds CPython's own tools, which no RECORD owns: not walked.
    return Target(
        kind=TargetKind.INTERPRETER,
        venv=None,
        site_packages=tuple(site),
        python_version=f"{sys.version_info.major}.{sys.version_info.minor}",
    )


def resolve_target(venv: str | None = None, site_packages: list[str] | tuple[str, ...] = ()) -> Target:
    """Named targets replace the default (the running environment)."""
    if venv is None and not site_packages:
        return current_target()
    base = venv_target(venv) if venv is not None else None
    if not site_packages:
        assert base is not None
        return base
    extra = site_packages_target(list(site_packages))
    if base is None:
        return extra
    merged = tuple(dict.fromkeys(base.site_packages + extra.site_packages))
    return Target(
        kind=base.kind,
        venv=base.venv,
        site_packages=merged,
        bin_dir=base.bin_dir,
        python_version=base.python_version,
        extra_roots=base.extra_roots,
        named_links=extra.named_links,
    )


def target_problems(target: Target) -> list[Problem]:
    """What resolving ``target`` left out, as report errors: an unreadable pyvenv.cfg, and parts
    of the environment that resolve outside it (a site-packages or bin/ linked elsewhere)."""
    if target.venv is None or target.kind not in (TargetKind.VENV, TargetKind.PREFIX):
        return []
    prefix = target.venv
    problems = []
    cfg_path = os.path.join(prefix, "pyvenv.cfg")
    if target.kind is TargetKind.VENV:
        try:
            read_pyvenv_cfg(cfg_path, root=prefix)
        except TargetError as exc:
            problems.append(Problem(cfg_path, str(exc).replace(f"cannot read {cfg_path}: ", "cannot read: ", 1)))
    names = [*_site_packages_candidates(prefix), *(os.path.join(prefix, n) for n in ("bin", "Scripts", "include", "share"))]
    for path in names:
        if os.path.isdir(path) and not _inside_real(prefix, path):
            problems.append(Problem(path, f"resolves outside the environment (to {os.path.realpath(path)}); not audited"))
    return problems


# <prefix>/lib/pythonX.Y/site-packages (or dist-packages, lib64, pypy, Windows' Lib/site-packages)
_LAYOUT = re.compile(r"^(?P<prefix>.+?)[\\/](?:lib(?:64)?[\\/](?:python|pypy)\d[^\\/]*|Lib)[\\/](?:site|dist)-packages$")


def is_prefix_site_packages(site: str) -> bool:
    """Laid out as ``<prefix>/lib/pythonX.Y/site-packages``: an interpreter's (or --prefix/--user) directory."""
    return _LAYOUT.match(os.path.abspath(site)) is not None


def site_packages_prefix(site: str) -> tuple[str, str | None] | None:
    """``<prefix>/lib/pythonX.Y/site-packages`` → (prefix, "X.Y"); None for a directory of its own."""
    match = _LAYOUT.match(os.path.abspath(site))
    if match is None:
        return None
    version = re.search(r"python(\d+\.\d+)", site)
    return match.group("prefix"), version.group(1) if version else None


def user_base() -> str:
    """Where ``pip install --user`` installs for the user running driftscan (PYTHONUSERBASE, else
    ~/.local): driftscan's own environment, never the tree's."""
    return os.path.abspath(os.path.expanduser(os.environ.get("PYTHONUSERBASE") or "~/.local"))


# What a remedy says where driftscan found no interpreter: visibly not a path of this machine, and
# one that pip and uv refuse (no such file), so a remedy pasted unread cannot pick some Python.
PYTHON_PLACEHOLDER = "/path/to/python"


class InstallLocation(NamedTuple):
    python: str  # what runs pip
    pip: tuple[str, ...]  # ``pip install``'s location options
    uv: tuple[str, ...]  # ``uv pip install``'s location and interpreter options
    pip_global: tuple[str, ...] = ()  # pip's options before ``install`` (``--python``)
    note: str | None = None  # what to know before running it (no interpreter was found)


def interpreter_in(prefix: str, version: str | None) -> str | None:
    """The interpreter of a ``<prefix>/lib/pythonX.Y/site-packages`` tree: ``<prefix>/bin/pythonX.Y``,
    ``python3`` or ``python`` that is a regular file, or a symlink to one, in a ``bin/`` inside the
    prefix. Looked up, never run."""
    bin_dir = os.path.join(prefix, "bin")
    if not os.path.isdir(bin_dir) or not _inside_real(prefix, bin_dir):
        return None
    for name in (f"python{version}" if version else None, "python3", "python"):
        if name is None:
            continue
        path = os.path.join(bin_dir, name)
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if stat.S_ISREG(mode) or (stat.S_ISLNK(mode) and os.path.isfile(path)):
            return path
    return None


def _unknown_python(where: tuple[str, ...], uv_where: tuple[str, ...], why: str) -> InstallLocation:
    """No interpreter found and none can be named by version: the form with ``--python``, the
    interpreter left for the user to name."""
    return InstallLocation("python3", where, (*uv_where, "--python", PYTHON_PLACEHOLDER),
                           ("--python", PYTHON_PLACEHOLDER), f"{why}; name the Python it belongs to")


def install_location(target: Target, site: str | None) -> InstallLocation:
    """How to reinstall into the directory a distribution is in: the venv, an interpreter's prefix,
    a --user or --prefix tree, or a --target directory (docs/environments.md). An interpreter is
    looked up, never run; where none is found the location says so (``note``)."""
    if target.venv and (site is None or _under(os.path.abspath(site), os.path.abspath(target.venv))):
        python = os.path.join(target.venv, "bin", "python")
        return InstallLocation(python, (), ("--python", target.venv))
    if target.kind is TargetKind.INTERPRETER:
        return InstallLocation(sys.executable, (), ("--python", sys.executable))
    if site is None:
        return _unknown_python((), (), "no interpreter is known for this environment")
    layout = site_packages_prefix(site)
    if layout is None:  # a directory of its own: pip install --target (which needs --upgrade to replace)
        where = ("--target", site, "--upgrade")
        known = target.python_version or ""
        if not re.fullmatch(r"3\.\d+", known):
            return _unknown_python(where, ("--target", site),
                                   f"no interpreter belongs to the --target directory {site}, and nothing in it "
                                   "names its Python version")
        name = f"python{known}"
        return InstallLocation(name, where, ("--target", site, "--python", name),
                               note=f"no interpreter belongs to a --target directory; with a Python {known} "
                                    "(the version its bytecode names)")
    prefix, version = layout
    interpreter = interpreter_in(prefix, version)
    if interpreter is not None:
        return InstallLocation(interpreter, (), ("--python", interpreter))
    if version is None:
        return _unknown_python(("--prefix", prefix), ("--prefix", prefix),
                               f"no interpreter found in {os.path.join(prefix, 'bin')}")
    name = f"python{version}"
    if os.path.abspath(prefix) == user_base():  # any Python X.Y of this user reads its user site
        return InstallLocation(name, ("--user",), ("--prefix", prefix, "--python", name))  # uv pip has no --user
    return InstallLocation(name, ("--prefix", prefix), ("--prefix", prefix, "--python", name),
                           note=f"no interpreter found in {os.path.join(prefix, 'bin')}; any Python {version} "
                                "installs there with --prefix")


def site_packages_root(site: str) -> str:
    """The environment root of a bare site-packages: its prefix when the layout is
    ``<prefix>/lib/pythonX.Y/site-packages`` (RECORD rows then reach ``<prefix>/bin``), else the
    directory itself."""
    match = _LAYOUT.match(os.path.abspath(site))
    return match.group("prefix") if match else os.path.abspath(site)


def environment_roots(target: Target) -> tuple[str, ...]:
    """The directories an audit of ``target`` may read under: the venv prefix, and the root of
    each site-packages not inside it (``site_packages_root``)."""
    roots = [target.venv] if target.venv else []
    for site in target.site_packages:
        if not any(_under(site, r) for r in roots):
            roots.append(site_packages_root(site))
    return tuple(dict.fromkeys(roots))


def containment_for(target: Target, link_roots: tuple[str, ...] | list[str] = ()) -> Containment:
    """The read boundary of ``target``: its environment roots, and ``link_roots`` (known caches)."""
    return Containment(environment_roots(target), link_roots)


def audit_containment(target: Target, uv_cache: str | None = None
                      ) -> tuple[Containment, str | None, str | None]:
    """(the read boundary an audit of ``target`` keeps, uv's cache, virtualenv's app-data): the
    environment's roots, and symlinks followed only into the uv cache named (``uv_cache``, else uv's
    default) and virtualenv's app-data directory (--link-mode symlink, --symlink-app-data venvs)."""
    uv_cache = uv_cache or default_uv_cache()
    app_data = default_virtualenv_app_data()
    return containment_for(target, tuple(r for r in (uv_cache, app_data) if r)), uv_cache, app_data


def containment_for_site_packages(site_packages: Iterable[str], link_roots: tuple[str, ...] | list[str] = ()
                                  ) -> Containment:
    """The read boundary of bare site-packages directories."""
    return Containment(tuple(dict.fromkeys(site_packages_root(s) for s in site_packages)), link_roots)
