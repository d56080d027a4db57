"""The values PEP 508 markers are evaluated against, for an environment whose interpreter is
never run: its Python version comes from the caller (pyvenv.cfg, the lib/pythonX.Y directory),
the platform values from this process, which runs on the same machine."""

from __future__ import annotations

import os
import platform
import sys
from functools import lru_cache

from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName
from packaging.version import InvalidVersion, Version

from .model import LockError

MarkerEnvironment = dict[str, str]

_IMPLEMENTATIONS = {"cpython": "CPython", "pypy": "PyPy", "graalpy": "GraalVM", "ironpython": "IronPython",
                    "jython": "Jython"}


def marker_environment(python_full_version: str, implementation: str = "cpython") -> MarkerEnvironment:
    """The marker environment of a target whose Python is ``python_full_version`` ("3.11.7";
    "3.11" is read as "3.11.0")."""
    try:
        version = Version(python_full_version)
    except InvalidVersion:
        raise LockError(f"not a Python version: {python_full_version!r}") from None
    if len(version.release) < 2:
        raise LockError(f"not a Python version: {python_full_version!r} (expected X.Y or X.Y.Z)")
    major, minor = version.release[:2]
    micro = version.release[2] if len(version.release) > 2 else 0
    full = f"{major}.{minor}.{micro}" + ("".join(str(part) for part in version.pre) if version.pre else "")
    implementation = implementation.lower()
    return {
        "implementation_name": implementation,
        "implementation_version": full,
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_full_version": full,
        "platform_python_implementation": _IMPLEMENTATIONS.get(implementation, implementation),
        "python_version": f"{major}.{minor}",
        "sys_platform": sys.platform,
    }


def marker_holds(marker: str, env: MarkerEnvironment, extra: str = "") -> bool | None:
    """Whether ``marker`` holds in ``env`` with ``extra`` selected (default: none); None when it
    cannot be evaluated (not a PEP 508 marker, or a name or comparison packaging does not know)."""
    parsed = _parsed(marker)
    if parsed is None:
        return None
    try:
        return parsed.evaluate({**env, "extra": extra})
    except (UndefinedComparison, UndefinedEnvironmentName):
        return None


def lock_marker_holds(marker: str, env: MarkerEnvironment, extras: frozenset[str],
                      groups: frozenset[str]) -> bool | None:
    """Whether a pylock.toml marker holds in ``env`` with ``extras`` and dependency ``groups``
    selected (PEP 751's ``extras`` and ``dependency_groups`` marker names); None when it cannot
    be evaluated (this needs packaging 25 or later)."""
    parsed = _parsed(marker)
    if parsed is None:
        return None
    try:
        return parsed.evaluate({**env, "extras": extras, "dependency_groups": groups},  # type: ignore[call-arg,dict-item,unused-ignore]
                               context="lock_file")
    except (TypeError, UndefinedComparison, UndefinedEnvironmentName):
        return None


@lru_cache(maxsize=4096)  # a large lock repeats a few markers on thousands of edges
def _parsed(marker: str) -> Marker | None:
    try:
        return Marker(marker)
    except InvalidMarker:
        return None
