"""Which environment ``driftscan audit`` means when none is named.

driftscan installed with pipx or ``uv tool`` lives in a venv of its own; auditing that venv by
default answers a question nobody asked. So, in order: the activated venv (``VIRTUAL_ENV``), the
activated conda prefix (``CONDA_PREFIX``), the environment of the uv project the working directory
is in, the environment of the first ``python3`` on ``PATH`` when that is a venv or conda prefix
other than driftscan's own, else driftscan's own. Nothing is run: the interpreter on PATH is only
located, the project's files are only looked at (docs/environments.md).

The uv project's environment is found as uv finds it, approximately: the project root is the
nearest directory, from the working directory upward, holding a ``pyproject.toml`` beside a
``uv.lock`` or beside the environment itself (uv's workspace rules are not followed: the nearest
such ``pyproject.toml`` wins); its environment is ``UV_PROJECT_ENVIRONMENT`` (relative to that
root) when set, else ``<root>/.venv``, and counts only when it is a venv other than driftscan's own.
"""

from __future__ import annotations

import os
import shutil
import sys


def _same(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _is_venv(prefix: str) -> bool:
    return os.path.isfile(os.path.join(prefix, "pyvenv.cfg"))


def _is_conda(prefix: str) -> bool:
    return os.path.isdir(os.path.join(prefix, "conda-meta"))


# How far up a uv project is looked for: a bound on what a deep working directory costs.
MAX_PARENTS = 64


def uv_project_environment(env: dict[str, str], cwd: str) -> tuple[str, str] | None:
    """(the environment of the uv project ``cwd`` is in, its project root), or None. Only stats:
    no file of the project is read or run."""
    here = os.path.abspath(cwd)
    for _ in range(MAX_PARENTS):
        if os.path.isfile(os.path.join(here, "pyproject.toml")):
            chosen = env.get("UV_PROJECT_ENVIRONMENT")
            venv = os.path.join(here, chosen) if chosen else os.path.join(here, ".venv")  # join: absolute wins
            venv = os.path.normpath(venv)
            if _is_venv(venv) and (chosen or os.path.isfile(os.path.join(here, "uv.lock"))
                                   or os.path.isdir(os.path.join(here, ".venv"))):
                return venv, here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
    return None


def default_environment(env: dict[str, str] | None = None, own_prefix: str | None = None,
                        cwd: str | None = None) -> tuple[str | None, str]:
    """(the prefix to audit, or None for driftscan's own environment; why, in a report's words)."""
    env = dict(os.environ) if env is None else env
    own = own_prefix or sys.prefix
    virtual = env.get("VIRTUAL_ENV")
    if virtual and _is_venv(virtual):
        return os.path.abspath(virtual), "VIRTUAL_ENV is set"
    conda = env.get("CONDA_PREFIX")
    if conda and _is_conda(conda):
        return os.path.abspath(conda), "CONDA_PREFIX is set"
    try:
        project = uv_project_environment(env, cwd or os.getcwd())
    except OSError:  # the working directory is gone
        project = None
    if project is not None and not _same(project[0], own):  # driftscan's own: said as such below
        venv, root = project
        how = "UV_PROJECT_ENVIRONMENT" if env.get("UV_PROJECT_ENVIRONMENT") else ".venv"
        return venv, f"the environment ({how}) of the uv project at {root}, the working directory's"
    python = shutil.which("python3", path=env.get("PATH", os.defpath))
    if python:
        # bin/python3 of a venv is often a symlink to the base interpreter: its own location counts.
        prefix = os.path.dirname(os.path.dirname(os.path.abspath(python)))
        if (_is_venv(prefix) or _is_conda(prefix)) and not _same(prefix, own):
            return prefix, f"the first python3 on PATH ({python}) is that environment's"
    return None, ("driftscan's own environment: no VIRTUAL_ENV, no CONDA_PREFIX, no uv project here, no other python3 "
                  "environment on PATH")
