"""The library entry point: ``audit()`` wires discover → verify → inspect → classify → report."""

from __future__ import annotations

import time
from collections.abc import Sequence

from .classify import classify
from .discover import resolve_target
from .report import Report, build_report
from .verify import verify


def audit(
    venv: str | None = None,
    site_packages: Sequence[str] = (),
    *,
    jobs: int | None = None,
    uv_cache: str | None = None,
) -> Report:
    """Audit an environment. With no target, the environment driftscan runs in.

    Raises ``TargetError`` when the target does not exist or is not an environment; every
    problem met while auditing a valid target is listed in ``Report.errors`` instead.
    """
    started = time.perf_counter()
    target = resolve_target(venv, tuple(site_packages))
    verification = verify(target, jobs=jobs, uv_cache=uv_cache)
    drifts = [classify(check, target) for check in verification.checks]
    return build_report(verification, drifts, time.perf_counter() - started)
