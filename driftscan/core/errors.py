"""Typed errors raised by the library. The CLI turns them into one-line messages."""

from __future__ import annotations


class DriftscanError(Exception):
    """Base class for every error driftscan raises on purpose."""


class TargetError(DriftscanError):
    """The thing to audit does not exist or is not what it was said to be."""


class ConfigError(DriftscanError):
    """Options or configuration that cannot be honoured."""


class RecordError(DriftscanError):
    """A RECORD file that could not be read at all (row-level problems are collected, not raised)."""

    def __init__(self, path: str, issues: list[str]):
        self.path = path
        self.issues = list(issues)
        super().__init__(f"{path}: " + "; ".join(self.issues))
