"""The library entry points: ``audit()`` and ``plan()`` wire discover → verify → classify → report."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from .cache import NoCache, StatCache
from .classify import classify
from .discover import resolve_target
from .discover.uvcache import default_uv_cache
from .expect import load_expectations
from .model import Drift, Target, Verification
from .plan import Plan, build_plan
from .report import Report, build_report
from .verify import verify


@dataclass(frozen=True)
class Run:
    """One pass of the pipeline, kept whole for commands that need more than the report."""

    target: Target
    verification: Verification
    drifts: list[Drift]
    report: Report


def run(venv: str | None = None, site_packages: Sequence[str] = (), *, jobs: int | None = None,
        uv_cache: str | None = None, installer: str | None = None, use_cache: bool = True) -> Run:
    started = time.perf_counter()
    target = resolve_target(venv, tuple(site_packages))
    cache = StatCache.for_target(target.venv or "\0".join(target.site_packages)) if use_cache else NoCache()
    verification = verify(target, jobs=jobs, uv_cache=uv_cache, stat_cache=cache)
    cache.save()
    drifts = [classify(check, target, installer) for check in verification.checks]
    report = build_report(verification, drifts, time.perf_counter() - started)
    return Run(target, verification, drifts, report)


def audit(
    venv: str | None = None,
    site_packages: Sequence[str] = (),
    *,
    jobs: int | None = None,
    uv_cache: str | None = None,
    use_cache: bool = True,
) -> Report:
    """Audit an environment. With no target, the environment driftscan runs in.

    ``use_cache=False`` re-hashes every file (see ``driftscan.cache`` for what the cache trusts).

    Raises ``TargetError`` when the target does not exist or is not an environment; every
    problem met while auditing a valid target is listed in ``Report.errors`` instead.
    """
    return run(venv, site_packages, jobs=jobs, uv_cache=uv_cache, use_cache=use_cache).report


def plan(
    reinstall: Sequence[str],
    venv: str | None = None,
    site_packages: Sequence[str] = (),
    *,
    installer: str | None = None,
    expect: str | None = None,
    jobs: int | None = None,
    uv_cache: str | None = None,
    use_cache: bool = True,
) -> Plan:
    """What reinstalling ``reinstall`` (distribution names) undoes and what survives it.

    ``installer`` ("pip" or "uv") asks "what if I used this installer"; by default each
    distribution's own INSTALLER decides. ``expect`` is a TOML file of expectations.
    """
    result = run(venv, site_packages, jobs=jobs, uv_cache=uv_cache, installer=installer, use_cache=use_cache)
    target = result.target
    placeholders = {"venv": target.venv or "", "site_packages": target.site_packages[0] if target.site_packages else ""}
    expectations = load_expectations(expect, placeholders) if expect else []
    return build_plan(result.report, result.drifts, target, result.verification.distributions, reinstall,
                      installer, expectations, uv_cache or default_uv_cache(),
                      referenced=result.verification.referenced.__contains__)
