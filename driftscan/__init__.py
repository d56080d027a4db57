"""driftscan: what drifted in a Python environment, what the drift is, what a reinstall will do."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._version import __version__
from .core.errors import ConfigError, DriftscanError, RecordError, TargetError

if TYPE_CHECKING:
    from .api import audit
    from .core.values import DriftKind, Scope, Severity
    from .report.contract import SCHEMA_VERSION, DriftOut as Drift, Report
    from .report.policy import FailOn, exit_status

__all__ = [
    "SCHEMA_VERSION",
    "ConfigError",
    "Drift",
    "DriftKind",
    "DriftscanError",
    "FailOn",
    "RecordError",
    "Report",
    "Scope",
    "Severity",
    "TargetError",
    "__version__",
    "audit",
    "exit_status",
]

# Imported on first use (PEP 562): `import driftscan.cli` or `driftscan.formats.record` must not pay for
# pydantic and the whole pipeline before it needs them.
_LAZY = {
    "audit": ("api", "audit"),
    "DriftKind": ("core.values", "DriftKind"),
    "Scope": ("core.values", "Scope"),
    "Severity": ("core.values", "Severity"),
    "SCHEMA_VERSION": ("report.contract", "SCHEMA_VERSION"),
    "Drift": ("report.contract", "DriftOut"),
    "Report": ("report.contract", "Report"),
    "FailOn": ("report.policy", "FailOn"),
    "exit_status": ("report.policy", "exit_status"),
}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module 'driftscan' has no attribute {name!r}")
    module, attr = _LAZY[name]
    value = getattr(importlib.import_module(f".{module}", __name__), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
