"""Which environment ``driftscan audit`` means when none is named.

driftscan installed with pipx or ``uv tool`` lives in a venv of its own; auditing that venv by
default answers a question nobody asked. So, in order: the activated venv (``VIRTUAL_ENV``), the
activated conda prefix (``CONDA_PREFIX``), the environment of the first ``python3`` on ``PATH``
when that is a venv or conda prefix other than driftscan's own, else driftscan's own. Nothing is
run: the interpreter on PATH is only located (docs/environments.md).
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


def default_environment(env: dict[str, str] | None = None, own_prefix: str | None = None) -> tuple[str | None, str]:
    """(the prefix to audit, or None for driftscan's own environment; why, in a report's words)."""
    env = dict(os.environ) if env is None else env
    own = own_prefix or sys.prefix
    virtual = env.get("VIRTUAL_ENV")
    if virtual and _is_venv(virtual):
        return os.path.abspath(virtual), "VIRTUAL_ENV is set"
    conda = env.get("CONDA_PREFIX")
    if conda and _is_conda(conda):
        return os.path.abspath(conda), "CONDA_PREFIX is set"
    python = shutil.which("python3", path=env.get("PATH", os.defpath))
    if python:
        # bin/python3 of a venv is often a symlink to the base interpreter: its own location counts.
        prefix = os.path.dirname(os.path.dirname(os.path.abspath(python)))
        if (_is_venv(prefix) or _is_conda(prefix)) and not _same(prefix, own):
            return prefix, f"the first python3 on PATH ({python}) is that environment's"
    return None, "driftscan's own environment: no VIRTUAL_ENV, no CONDA_PREFIX, no other python3 environment on PATH"
