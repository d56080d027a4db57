"""``driftscan procs``' output: text for people (every value from /proc on one line, inert) and JSON."""

from __future__ import annotations

from ..core.units import count, size
from ..fs.paths import line_safe
from ..procs.model import CacheSignal, Placement, ProcessOut, ProcsReport, RestartOut, Tie
from ..procs.restart import evidence_summary
from ..procs.where import shown_command

_TIE = {Tie.EXECUTABLE: "runs a program of it", Tie.SCRIPT: "runs a script of it", Tie.MODULE: "runs a module of it",
        Tie.MAPS: "maps files of it", Tie.NONE: "not this environment"}


def _where(p: ProcessOut) -> str:
    w = p.where
    text = {Placement.SYSTEMD: f"systemd unit {w.unit}", Placement.SYSTEMD_USER: f"systemd user unit {w.unit}",
            Placement.DOCKER: f"docker container {(w.container or '')[:12]}",
            Placement.PODMAN: f"podman container {(w.container or '')[:12]}",
            Placement.CONTAINERD: f"containerd container {(w.container or '')[:12]}",
            Placement.RAY: "a Ray worker", Placement.PROCESS: "a process"}[w.placement]
    return text + (", another mount namespace" if w.other_mount_namespace else "")


def _process(p: ProcessOut, verbose: bool) -> list[str]:
    state = "STALE" if p.stale else ("ok" if p.tie is not Tie.NONE else "other")
    lines = [f"{state:5} PID {p.pid}  user {p.user}  started {p.started}  ({_where(p)}; {_TIE[p.tie]})",
             f"      {p.command}"]
    for e in p.evidence:
        what = {"deleted": "mapped and since deleted", "replaced": "mapped and since replaced on disk",
                "changed-after-start": "changed after it started: may run old code",
                "recorded": "imported and since changed on disk"}.get(e.reason, e.reason)
        lines.append(f"      {e.strength.value} ({e.source.value}): {count(e.count, 'file')} {what}")
        shown = e.files if verbose else e.files[:5]
        lines += [f"        {f}" for f in shown]
        if e.count > len(shown):
            lines.append(f"        … and {e.count - len(shown)} more")
    lines += [f"      not checked: {n}" for n in p.not_checked]
    if p.remedy:
        lines.append(f"      restart: {p.remedy}")
    return lines


def _compile_caches(report: ProcsReport, verbose: bool) -> list[str]:
    caches = report.compile_caches
    if caches is None or not (caches.entries or caches.not_checked):
        return []
    lines = [""]
    if caches.entries:
        total = sum(e.bytes for e in caches.entries)
        lines.append(f"compile cache entries built from changed files: {count(len(caches.entries), 'entry')}, "
                     f"{size(total)} (not deleted; each may be removed with its rm line)")
    for e in caches.entries:
        what = ("built from files since deleted" if e.signal is CacheSignal.DELETED
                else "built before its files changed: may hold code other than what is on disk")
        name = f" kernel {e.kernel}" if e.kernel else ""
        lines.append(f"  {e.cache.value}{name}: {size(e.bytes)}{'' if e.size_complete else ' or more'}, {what}")
        shown = e.files if verbose else e.files[:3]
        lines += [f"    {f}" for f in shown]
        if e.count > len(shown):
            lines.append(f"    … and {e.count - len(shown)} more")
        lines.append(f"    {e.remedy}")
    lines += [f"  compile caches not checked: {n}" for n in caches.not_checked]
    return lines


def render_procs_text(report: ProcsReport, verbose: bool = False) -> str:
    report = line_safe(report)
    s = report.summary
    lines = [f"environment: {', '.join(report.environment)}",
             f"{count(s.running, 'process')} run it, {s.stale} with evidence of old code"
             f" ({count(s.scanned, 'process')} read"
             + (f", {s.exited} exited while read" if s.exited else "") + ")"]
    for p in report.processes:
        lines += ["", *_process(p, verbose)]
    if report.hidden:
        lines += ["", f"{count(len(report.hidden), 'Python process')} not visible to this user "
                      "(run as root or as its owner): whether they run the environment is unknown"]
        lines += [f"  PID {h.pid}  user {h.user}  {h.command}" for h in report.hidden]
    if report.restart:
        lines += ["", "to run what is on disk now, restart:"] + [f"  {r}" for r in report.restart]
    lines += _compile_caches(report, verbose)
    lines += [f"error: {e}" for e in report.errors]
    return "\n".join(lines) + "\n"


def render_procs_json(report: ProcsReport) -> str:
    return report.model_dump_json(indent=2) + "\n"


def audit_section(report: ProcsReport | None) -> list[str]:
    """``audit --processes``' section: each stale process, its evidence and what to restart; the
    others counted."""
    if report is None:
        return []
    report = line_safe(report)
    s = report.summary
    stale = report.stale
    lines = [f"processes ({count(s.running, 'process')} run the environment, {s.stale} with evidence of old code)"]
    for p in stale:
        lines.append(f"  STALE  PID {p.pid}  {shown_command(tuple(p.argv))}")
        lines.append(f"      {evidence_summary(p)}")
        lines += [f"        {f}" for f in (p.evidence[0].files[:5] if p.evidence else [])]
        lines.append(f"      restart: {p.remedy}")
    others = s.running - len(stale)
    if others:
        lines.append(f"  {count(others, 'other process')} {'runs' if others == 1 else 'run'} what is on disk")
    if report.hidden:
        lines.append(f"  {count(len(report.hidden), 'Python process')} not visible to this user: whether "
                     f"{'it runs' if len(report.hidden) == 1 else 'they run'} the environment is unknown")
    lines += [f"  error: {e}" for e in report.errors]
    return lines + [""]


def restart_lines(restarts: list[RestartOut] | None, *, after: bool = True) -> list[str]:
    """Text lines for a result's end: ``1 process still runs the old code: PID 1234 (…): systemctl restart x``."""
    if not restarts:
        return []
    n = len(restarts)
    head = (f"{count(n, 'process')} still {'runs' if n == 1 else 'run'} the old code:" if after
            else f"{count(n, 'process')} to restart after the reinstall ({'it runs' if n == 1 else 'they run'} "
                 "the environment):")
    lines = ["", head]
    for r in (line_safe(r) for r in restarts):
        # A bare process's remedy names the PID and command itself: not said twice.
        lines.append(f"  {r.remedy}" if r.remedy.startswith(f"restart PID {r.pid} ")
                     else f"  PID {r.pid} ({r.command}): {r.remedy}")
        if r.stale:
            lines.append(f"      {r.evidence}" + (f": {', '.join(r.files[:3])}" + (" …" if len(r.files) > 3 else "")
                                                  if r.files else ""))
    return lines


PROCS_RENDERERS = {"text": render_procs_text, "json": render_procs_json}
