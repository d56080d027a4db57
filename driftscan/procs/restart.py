"""The processes other commands end with: after ``restore``, ``reapply`` and ``guard`` wrote an
environment, those that still run its old code; before a reinstall (``plan``), every process that
runs it — each will run old code once its files change. One scan of /proc (docs/procs.md)."""

from __future__ import annotations

import os

from ..core.units import count
from .model import ProcessOut, ProcsReport, RestartOut, Tie
from .proc import PROC
from .recorded import RuntimeRecords
from .scan import Environment, scan
from .where import remedy, shown_command

NO_PROC = "processes not checked: no /proc here (Linux only)"
_WHAT = {"deleted": "mapped and since deleted", "replaced": "mapped and since replaced on disk",
         "changed-after-start": "changed after it started", "recorded": "imported and since changed on disk"}


def available(proc: str = PROC) -> bool:
    """Whether this system has a /proc to read processes from."""
    return os.path.isdir(os.path.join(proc, "self"))


def evidence_summary(p: ProcessOut) -> str:
    """``exact: 1 file mapped and since replaced on disk; likely: 2 files changed after it started``."""
    return "; ".join(f"{e.strength.value}: {count(e.count, 'file')} {_WHAT.get(e.reason, e.reason)}"
                     for e in p.evidence)


def restart_of(p: ProcessOut) -> RestartOut:
    """``p`` as another command lists it; a process not stale is listed with the restart it will need."""
    return RestartOut(pid=p.pid, command=shown_command(tuple(p.argv)), where=p.where, stale=p.stale,
                      evidence=evidence_summary(p) if p.stale else "runs the environment",
                      files=list(p.evidence[0].files) if p.evidence else [],
                      remedy=p.remedy or remedy(p.where, p.pid, tuple(p.argv)))


def stale_of(report: ProcsReport) -> list[RestartOut]:
    """The processes that still run old code (after a command wrote the environment)."""
    return [restart_of(p) for p in report.processes if p.stale]


def running_of(report: ProcsReport) -> list[RestartOut]:
    """Every process that runs the environment (before a reinstall: each will need a restart)."""
    return [restart_of(p) for p in report.processes if p.tie is not Tie.NONE]


def scan_if_possible(env: Environment, proc: str = PROC) -> tuple[ProcsReport | None, str | None]:
    """The scan of ``env``, or (None, why not) where there is no /proc."""
    if not available(proc):
        return None, NO_PROC
    return scan(env, proc=proc, recorder=RuntimeRecords()), None

