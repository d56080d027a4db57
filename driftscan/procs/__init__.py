"""``driftscan procs``: the processes that run an environment, read from /proc as data, and the
evidence that they run code other than what is now on disk (docs/procs.md)."""

from __future__ import annotations

from .model import ProcsReport, Source, Strength, Tie
from .scan import Environment, Recorder, environment_of, scan

__all__ = ["Environment", "ProcsReport", "Recorder", "Source", "Strength", "Tie", "environment_of", "scan"]
