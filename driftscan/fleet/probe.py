"""What a node has: run on every node before its audit, with the standard library only.

This module is sent to the nodes *by value* (its code travels with the task), so it works on a
node where driftscan is not installed: it must import nothing but the standard library.
"""

from __future__ import annotations

from typing import TypedDict


class NodeFacts(TypedDict):
    """What ``probe_node`` sends back (the driver checks it whole: ``answers.probe_answer``)."""

    hostname: str
    python: str
    machine: str
    system: str
    executable: str
    prefix: str
    venv: str | None
    driftscan: str | None  # its version; None: not installed
    driftscan_error: str
    missing: list[str]
    sys_path: list[str]


def probe_node(modules: list[str]) -> NodeFacts:
    """The node's hostname, Python, driftscan version (None: not installed) and which of
    ``modules`` (top-level import names driftscan needs) it cannot import."""
    import importlib.util
    import os
    import platform
    import socket
    import sys

    driftscan: str | None = None
    why = ""
    try:
        spec = importlib.util.find_spec("driftscan")
        if spec is None:
            why = "driftscan is not importable"
        else:
            from importlib.metadata import version

            driftscan = version("driftscan")
    except Exception as exc:  # noqa: BLE001 - a probe reports, it never fails
        why = f"{type(exc).__name__}: {exc}"
    missing: list[str] = []
    for name in modules:
        try:
            if importlib.util.find_spec(name) is None:
                missing.append(name)
        except (ImportError, ValueError):
            missing.append(name)
    return {"hostname": socket.gethostname(), "python": platform.python_version(),
            "machine": platform.machine(), "system": platform.system(), "executable": sys.executable,
            "prefix": sys.prefix, "venv": os.environ.get("VIRTUAL_ENV"), "driftscan": driftscan,
            "driftscan_error": why, "missing": missing, "sys_path": list(sys.path)[:20]}
