"""Resolve a venv, a prefix or a bare site-packages directory without running its interpreter."""

from __future__ import annotations

import glob
import os
import re
import sys
import sysconfig

from ..errors import TargetError
from ..model import Target


def read_pyvenv_cfg(path: str) -> dict[str, str]:
    """Parse pyvenv.cfg (``key = value`` lines; venv, virtualenv and uv all write this form)."""
    values: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, sep, value = line.partition("=")
                if sep:
                    values[key.strip().lower()] = value.strip()
    except OSError as exc:
        raise TargetError(f"cannot read {path}: {exc.strerror or exc}") from None
    return values


def _python_version(cfg: dict[str, str]) -> str | None:
    # venv writes "version", uv and virtualenv write "version_info" (e.g. 3.12.7 or 3.12.7.final.0).
    for key in ("version_info", "version"):
        match = re.match(r"(\d+)\.(\d+)", cfg.get(key, ""))
        if match:
            return f"{match.group(1)}.{match.group(2)}"
    return None


def _site_packages_under(prefix: str, version: str | None) -> list[str]:
    """Every site-packages of a prefix, deduplicated by real path (lib64 is often a symlink)."""
    patterns = []
    if version:
        patterns += [f"lib/python{version}*/site-packages", f"lib64/python{version}*/site-packages"]
    patterns += [
        "lib/python3*/site-packages",
        "lib64/python3*/site-packages",
        "lib/pypy3*/site-packages",
        "Lib/site-packages",  # Windows layout
    ]
    found: list[str] = []
    seen: set[str] = set()
    for pattern in patterns:
        for path in sorted(glob.glob(os.path.join(glob.escape(prefix), pattern))):
            real = os.path.realpath(path)
            if os.path.isdir(path) and real not in seen:
                seen.add(real)
                found.append(os.path.normpath(path))
        if found and version and pattern.startswith("lib64"):
            break  # the venv's own Python version settled it
    return found


def _bin_dir(prefix: str) -> str | None:
    for name in ("bin", "Scripts"):
        path = os.path.join(prefix, name)
        if os.path.isdir(path):
            return path
    return None


def _existing(prefix: str, *names: str) -> tuple[str, ...]:
    return tuple(p for p in (os.path.join(prefix, n) for n in names) if os.path.isdir(p))


def venv_target(path: str) -> Target:
    """A virtual environment (pyvenv.cfg) or a conda prefix (conda-meta/)."""
    prefix = os.path.abspath(path)
    if not os.path.exists(prefix):
        raise TargetError(f"{path}: no such file or directory")
    if not os.path.isdir(prefix):
        raise TargetError(f"{path}: not a directory")
    cfg_path = os.path.join(prefix, "pyvenv.cfg")
    if os.path.isfile(cfg_path):
        kind, version = "venv", _python_version(read_pyvenv_cfg(cfg_path))
    elif os.path.isdir(os.path.join(prefix, "conda-meta")):
        kind, version = "prefix", None
    else:
        raise TargetError(
            f"{path}: not a virtual environment (no pyvenv.cfg); "
            "to audit a bare directory use --site-packages DIR"
        )
    site = _site_packages_under(prefix, version)
    if not site:
        raise TargetError(f"{path}: no lib/python3.*/site-packages inside this environment")
    if version is None:
        match = re.search(r"python(\d+\.\d+)", site[0])
        version = match.group(1) if match else None
    return Target(
        kind=kind,
        venv=prefix,
        site_packages=tuple(site),
        # A venv's bin/ holds only what installers put there; a conda prefix's holds the whole
        # distribution (python, openssl, ...), which no RECORD lists: not walked.
        bin_dir=_bin_dir(prefix) if kind == "venv" else None,
        python_version=version,
        extra_roots=_existing(prefix, "include", "share") if kind == "venv" else (),
    )


def site_packages_target(paths: list[str]) -> Target:
    resolved = []
    for path in paths:
        if not os.path.exists(path):
            raise TargetError(f"{path}: no such file or directory")
        if not os.path.isdir(path):
            raise TargetError(f"{path}: not a directory")
        resolved.append(os.path.abspath(path))
    match = re.search(r"python(\d+\.\d+)", resolved[0]) if resolved else None
    return Target(
        kind="site-packages",
        venv=None,
        site_packages=tuple(dict.fromkeys(resolved)),
        python_version=match.group(1) if match else None,
    )


def current_target() -> Target:
    """The environment driftscan itself runs in."""
    if os.path.isfile(os.path.join(sys.prefix, "pyvenv.cfg")):
        return venv_target(sys.prefix)
    paths = sysconfig.get_paths()
    site = [p for p in dict.fromkeys([paths["purelib"], paths["platlib"]]) if os.path.isdir(p)]
    # A base interpreter's bin/ holds CPython's own tools, which no RECORD owns: not walked.
    return Target(
        kind="interpreter",
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
    )
