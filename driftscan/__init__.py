"""driftscan: what drifted in a Python environment, what the drift is, what a reinstall will do."""

from ._version import __version__
from .api import audit
from .errors import ConfigError, DriftscanError, RecordError, TargetError
from .model import DriftKind, Scope, Severity
from .report import SCHEMA_VERSION, DriftOut as Drift, Report

__all__ = [
    "SCHEMA_VERSION",
    "ConfigError",
    "Drift",
    "DriftKind",
    "DriftscanError",
    "RecordError",
    "Report",
    "Scope",
    "Severity",
    "TargetError",
    "__version__",
    "audit",
]
