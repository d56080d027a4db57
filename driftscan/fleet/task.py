"""The work one node does: audit (or snapshot) one environment and send the result back.

Runs in a Ray worker on the node, with the node's own Python. What it audits is decided here,
from the options the driver sent and the node's own state (its interpreter, its ``VIRTUAL_ENV``);
the same safety rules as a local audit apply, because it *is* a local audit (``driftscan.api``).
Any failure comes back as one line, never a traceback.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
from typing import Any


def chosen_venv(venv: str | None, venv_from_env: bool) -> tuple[str | None, str]:
    """The environment to audit on this node, and why."""
    if venv:
        return venv, "--venv"
    if venv_from_env:
        env = os.environ.get("VIRTUAL_ENV")
        if not env:
            raise LookupError("VIRTUAL_ENV is not set on this node (--venv-from-env)")
        return env, "the node's VIRTUAL_ENV"
    return sys.prefix, "the Ray worker's interpreter"


def run_on_node(options: dict[str, Any]) -> dict[str, Any]:
    """``options``: venv, venv_from_env, model_dirs, snapshot. Returns {hostname, kind, data (the
    report or snapshot as JSON text), target, why} or {hostname, error}."""
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    out: dict[str, Any] = {"hostname": socket.gethostname(), "python": sys.version.split()[0]}
    try:
        from .. import __version__
        from ..core.errors import DriftscanError

        out["driftscan"] = __version__
        venv, why = chosen_venv(options.get("venv"), bool(options.get("venv_from_env")))
        out["target"], out["why"] = venv, why
        models = list(options.get("model_dirs") or ())
        if options.get("snapshot"):
            from ..api import snapshot

            with tempfile.TemporaryDirectory(prefix="driftscan-fleet-") as tmp:
                path = os.path.join(tmp, "snapshot.json")
                problems = snapshot(path, venv=venv, model_dirs=models)
                with open(path, encoding="utf-8") as f:
                    out["data"] = f.read()
            out["kind"] = "snapshot"
            out["unreadable"] = len(problems)
        else:
            from ..api import Need, run

            report = run(venv, model_dirs=models, need=Need.REPORT).report
            out["data"] = report.model_dump_json()
            out["kind"] = "report"
    except LookupError as exc:
        out["error"] = str(exc)
    except Exception as exc:  # noqa: BLE001 - a node's failure is reported, the others go on
        try:
            known = isinstance(exc, DriftscanError)
        except NameError:
            known = False
        out["error"] = str(exc) if known else f"{type(exc).__name__}: {exc}"
    return out
