"""``driftscan compare`` (and ``driftscan fleet``) for people: text and markdown; JSON is the model's.

Text lists each deviating machine with its paths, then the version skews. Every value came from
another machine's report and is shown through ``one_line`` (text) or ``esc``/``code`` (markdown).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from itertools import groupby

from ..compare import CompareReport, OutlierOut
from ..compare.model import BeforeAfterOut, DriftStateOut, TimedChangeOut
from ..compare.records import weighs_a_record
from ..fs.paths import one_line
from ..core.units import count
from .markdown import code, esc

SHOWN_PER_MACHINE = 50


def _state(state: Mapping[str, Any] | None) -> str:
    if not state:
        return "no majority"
    text: str = state.get("state", "?")
    for key in ("hash", "xxh3_128", "target"):
        if state.get(key):
            value = str(state[key])
            text += f" {key}:{value[:19]}…" if len(value) > 20 and key != "target" else f" {key}:{value}"
            break
    if "size" in state and state["size"] is not None and "hash" not in state:
        text += f" {state['size']} B"
    return text


def _rewritten_files(o: OutlierOut, shown: int = 10) -> str:
    """What a record-rewritten outlier says of the files its RECORD vouches for."""
    if o.files is None:
        return "which files: a report cannot say (its RECORD vouches for them); snapshots of each machine name them"
    if not o.files:
        return "no file of it differs from the majority's: only its RECORD does"
    more = f", and {len(o.files) - shown} more" if len(o.files) > shown else ""
    return f"files unlike the majority's: {', '.join(o.files[:shown])}{more}"


def _where(o: OutlierOut) -> str:
    parts = [o.scope or "?"]
    if o.distribution:
        parts.append(f"{o.distribution['name']} {o.distribution['version']}")
    return ", ".join(parts)


def _headline(r: CompareReport) -> str:
    odd = len({o.machine for o in r.outliers})
    what = " and ".join(f"{source}s" for source in sorted({m.source.value for m in r.machines}))  # reports, snapshots
    machines = f"{len(r.machines)} machines" if r.mode == "majority" else \
        f"{len(r.machines) - len(r.before_after)} environments (the newest report of each)"
    return (f"{machines} compared ({what}): {odd} with paths unlike the majority's "
            f"({len(r.outliers)} path{'s' if len(r.outliers) != 1 else ''}); {len(r.version_skew)} version "
            f"skew{'s' if len(r.version_skew) != 1 else ''}; {r.agree} of {r.compared} paths agree")


def _host(r: CompareReport) -> dict[str, str]:
    return {m.name: m.hostname or "?" for m in r.machines}


def _drift_state(d: DriftStateOut | None) -> str:
    if d is None:
        return "no drift"
    text = d.kind + (f" {_state({'state': '', 'hash': d.hash}).strip()}" if d.hash else "")
    if d.prediction:
        text += f", {d.prediction}"
    if d.accepted:
        text += ", accepted"
    if d.dumps:
        text += f", {count(len(d.dumps), 'dump file')}"
    return text


def _timed(item: TimedChangeOut) -> str:
    where = ", ".join([item.scope or "?"] + ([f"{item.distribution['name']} {item.distribution['version']}"]
                                             if item.distribution else []))
    if item.before is None or item.after is None or not item.changes:
        state = _drift_state(item.after or item.before)
    else:  # the earlier state first, the newest last
        state = "; ".join(f"{f} {_field(item.before, f)} → {_field(item.after, f)}" for f in item.changes)
    shown = item.after or item.before
    kind = shown.kind if shown else "?"
    line = f"  {kind:<9} {item.path}  [{where}]  {state}"
    if item.dumps_still_there:
        line += f"; {count(item.dumps_still_there, 'dump file')} still there since {item.dumps_since or 'the first report'}"
    return one_line(line)


def _field(d: DriftStateOut, f: str) -> str:
    value = getattr(d, f)
    if f == "dumps":
        return count(len(value), "file")
    if f == "accepted":
        return "accepted" if value else "not accepted"
    return str(value) if value is not None else "none"


def before_after_headline(step: BeforeAfterOut) -> str:
    return (f"{count(len(step.appeared), 'drift')} appeared, {len(step.went_away)} went away, {len(step.changed)} "
            f"changed, {len(step.stayed)} stayed")


def _before_after_lines(r: CompareReport, verbose: bool) -> list[str]:
    lines: list[str] = []
    for step in r.before_after:
        where = step.venv or next(iter(step.roots.values()), "?")
        lines.append(one_line(f"{where} on {step.hostname}, before/after: {before_after_headline(step)}"))
        lines.append(one_line(f"  before: {step.before.name} ({step.before.generated_at or 'no time'})"))
        lines.append(one_line(f"  after:  {step.after.name} ({step.after.generated_at or 'no time'})"
                              + ("" if step.order == "generated_at" else "  (order as given on the command line)")))
        for title, items in (("went away", step.went_away), ("stayed", step.stayed), ("changed", step.changed),
                             ("appeared", step.appeared)):
            if not items:
                continue
            lines.append(f"{title} ({count(len(items), 'drift')}):")
            shown = items if verbose else items[:SHOWN_PER_MACHINE]
            lines += [_timed(item) for item in shown]
            if len(shown) < len(items):
                lines.append(f"  … {len(items) - len(shown)} more (-v shows all, --format json lists them)")
        if not step.differs:
            lines.append("nothing changed between the two reports")
        lines.append("")
    return lines


def render_compare_text(r: CompareReport, verbose: bool = False, label: Callable[[str], str] | None = None,
                        headline: bool = True) -> str:
    """``label``: how a machine is named (fleet: a short node id); by default its name as given."""
    host = _host(r)
    name = label or (lambda m: m)
    lines = _before_after_lines(r, verbose)
    if r.mode == "before-after":
        for e in r.errors:
            lines.append(one_line(f"error: {e.path}: {e.message}"))
        lines += [one_line(f"note: {note}") for note in r.notes]
        return "\n".join(lines).rstrip("\n") + "\n"
    if headline:
        lines.append(_headline(r))
    for machine, group in groupby(r.outliers, key=lambda o: o.machine):
        items = list(group)
        lines.append("")
        lines.append(one_line(f"{name(machine)} ({host.get(machine, '?')}): {count(len(items), 'path')} unlike the "
                              f"majority"))
        shown = items if verbose else items[:SHOWN_PER_MACHINE]
        for o in shown:
            against = f"majority {o.majority['machines']} of {o.majority['of']}: {_state(o.majority)}" \
                if o.majority and "machines" in o.majority else ("tie, no majority" if o.tie else "")
            lines.append(one_line(f"  {o.kind:<9} {o.path}  [{_where(o)}]  this: {_state(o.this)}; {against}"))
            if weighs_a_record(o):
                lines.append(one_line(f"    {_rewritten_files(o)}"))
        if len(shown) < len(items):
            lines.append(f"  … {len(items) - len(shown)} more (-v shows all, --format json lists them)")
    if r.version_skew:
        lines.append("")
        lines.append("version skew (these machines' files of it are not compared path by path):")
        for s in r.version_skew:
            major = f"majority {s.majority['version'] or 'not installed'} on {s.majority['machines']}" \
                if s.majority else "no majority"
            odd = ", ".join(f"{name(m.machine)} ({m.hostname or '?'}): {m.version or 'not installed'}"
                            + (f", {count(m.drifts, 'drift')} in its own report" if m.drifts else "") for m in s.machines)
            lines.append(one_line(f"  {s.distribution}: {major}; {odd}"))
    for m in r.missing_roots:
        lines.append(one_line(f"{name(m.machine)}: has no {m.root}, which most machines have"))
    for e in r.errors:
        lines.append(one_line(f"error: {e.path}: {e.message}"))
    for note in r.notes:
        lines.append(one_line(f"note: {note}"))
    if not (r.outliers or r.version_skew or r.missing_roots):
        lines.append("every machine agrees with the majority")
    return "\n".join(lines) + "\n"


def render_compare_markdown(r: CompareReport, verbose: bool = False) -> str:
    host = _host(r)
    lines = [f"## driftscan compare", ""]
    for step in r.before_after:
        lines += [esc(f"{step.venv or '?'} on {step.hostname}: {step.before.name} → {step.after.name}: "
                      f"{before_after_headline(step)}"), ""]
        changed = [("appeared", i) for i in step.appeared] + [("went away", i) for i in step.went_away] + \
            [("changed", i) for i in step.changed]
        if changed:
            lines += ["| what | path | before | after |", "|---|---|---|---|"]
            lines += [f"| {what} | {code(i.path)} | {esc(_drift_state(i.before))} | {esc(_drift_state(i.after))} |"
                      for what, i in changed]
            lines.append("")
    if r.mode != "before-after":
        lines += [esc(_headline(r)), ""]
    if r.outliers:
        lines += ["| machine | host | kind | path | owner | this | majority |", "|---|---|---|---|---|---|---|"]
        for o in r.outliers:
            majority = f"{o.majority['machines']}/{o.majority['of']} {_state(o.majority)}" \
                if o.majority and "machines" in o.majority else "tie"
            path = code(o.path) + (f"<br>{esc(_rewritten_files(o))}" if weighs_a_record(o) else "")
            lines.append(f"| {code(o.machine)} | {esc(host.get(o.machine, '?'))} | {esc(o.kind)} | {path} | "
                         f"{esc(_where(o))} | {esc(_state(o.this))} | {esc(majority)} |")
        lines.append("")
    if r.version_skew:
        lines += ["### Version skew", "", "| distribution | majority | machines that differ |", "|---|---|---|"]
        for s in r.version_skew:
            major = f"{s.majority['version'] or 'not installed'} ({s.majority['machines']})" if s.majority else "tie"
            odd = "<br>".join(f"{code(m.machine)} {esc(m.version or 'not installed')}" for m in s.machines)
            lines.append(f"| {esc(s.distribution)} | {esc(major)} | {odd} |")
        lines.append("")
    for e in r.errors:
        lines.append(f"- error: {code(e.path)}: {esc(e.message)}")
    for note in r.notes:
        lines.append(f"- note: {esc(note)}")
    return "\n".join(lines) + "\n"


def render_compare_json(r: CompareReport, verbose: bool = False) -> str:
    return r.model_dump_json(indent=2) + "\n"


COMPARE_RENDERERS: dict[str, Callable[..., str]] = {
    "text": render_compare_text,
    "json": render_compare_json,
    "markdown": render_compare_markdown,
}
