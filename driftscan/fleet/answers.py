"""A node's answers, checked whole before the driver uses any part of them.

A node answers twice: the probe (``probe.probe_node``) and the audit (``task.run_on_node``). Both
answers come from another machine and are data: each is checked against the exact shape those
functions return — a dict with those keys and no other, each value of its type, each string of a
bounded length — and a ``missing`` list may only name modules the driver asked about. An answer
that is not that shape is refused with one line saying why; the node is then ``failed`` and the
other nodes are reported. Nothing an answer names is imported, opened or sent anywhere.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

# Caps on what one node may make the driver hold or show (beyond them the answer is refused).
SHORT = 4096            # a hostname, a version, a path
LONG = 64 * 1024        # an error message, a reason
PATH_ENTRIES = 64       # sys_path (the probe sends at most 20)


class BadAnswer(ValueError):
    """The answer is not the shape its function returns; the message says how, in one line."""


@dataclass(frozen=True)
class ProbeAnswer:
    hostname: str
    python: str
    driftscan: str | None
    missing: tuple[str, ...]


@dataclass(frozen=True)
class TaskAnswer:
    hostname: str
    python: str | None
    driftscan: str | None
    target: str | None
    why: str | None
    kind: str | None  # "report" | "snapshot"; None with an error
    data: str | None
    unreadable: int | None
    error: str | None


def _describe(value: object) -> str:
    return type(value).__name__


def _dict(answer: object, required: Collection[str], optional: Collection[str]) -> Mapping[str, Any]:
    if type(answer) is not dict:
        raise BadAnswer(f"the answer is a {_describe(answer)}, not a dict")
    keys = list(answer)
    if not all(type(k) is str for k in keys):
        raise BadAnswer("the answer has a key that is not a string")
    unknown = sorted(set(keys) - set(required) - set(optional))
    if unknown:
        raise BadAnswer(f"the answer has keys it should not: {', '.join(repr(k[:40]) for k in unknown[:5])}")
    lacking = sorted(set(required) - set(keys))
    if lacking:
        raise BadAnswer(f"the answer lacks {', '.join(lacking)}")
    return answer


def _text(answer: Mapping[str, Any], key: str, cap: int, optional: bool = False) -> str | None:
    value = answer.get(key)
    if value is None and optional:
        return None
    if type(value) is not str:
        raise BadAnswer(f"{key} is a {_describe(value)}, not a string")
    if len(value) > cap:
        raise BadAnswer(f"{key} is {len(value)} characters long (at most {cap})")
    return value


def probe_answer(answer: object, asked: Collection[str]) -> ProbeAnswer:
    """The probe's answer, checked; ``asked``: the module names the driver sent it."""
    d = _dict(answer, required=("hostname", "python", "machine", "system", "executable", "prefix", "venv",
                                "driftscan", "driftscan_error", "missing", "sys_path"), optional=())
    for key in ("machine", "system", "executable", "prefix"):
        _text(d, key, SHORT)
    _text(d, "venv", SHORT, optional=True)
    _text(d, "driftscan_error", LONG)
    sys_path = d["sys_path"]
    if type(sys_path) is not list or len(sys_path) > PATH_ENTRIES or \
            not all(type(p) is str and len(p) <= SHORT for p in sys_path):
        raise BadAnswer(f"sys_path is not a list of at most {PATH_ENTRIES} strings")
    missing = d["missing"]
    if type(missing) is not list:
        raise BadAnswer(f"missing is a {_describe(missing)}, not a list")
    wanted = set(asked)
    names: list[str] = []
    for name in missing[:len(wanted) + 1]:
        if type(name) is not str:
            raise BadAnswer(f"missing names a {_describe(name)}, not a module name")
        if name not in wanted:
            # Only the driver's own list is meaningful: what else a node names is never looked up.
            raise BadAnswer(f"missing names {name[:80]!r}, which the driver did not ask about")
        if name not in names:
            names.append(name)
    if len(missing) > len(wanted):
        raise BadAnswer(f"missing names {len(missing)} modules; the driver asked about {len(wanted)}")
    return ProbeAnswer(hostname=_text(d, "hostname", SHORT) or "", python=_text(d, "python", SHORT) or "",
                       driftscan=_text(d, "driftscan", SHORT, optional=True), missing=tuple(names))


def task_answer(answer: object) -> TaskAnswer:
    """The audit's answer, checked: {hostname, python, driftscan, target, why} and either the
    result (kind, data, and for a snapshot unreadable) or error."""
    d = _dict(answer, required=("hostname",),
              optional=("python", "driftscan", "target", "why", "kind", "data", "unreadable", "error"))
    hostname, python = _text(d, "hostname", SHORT) or "", _text(d, "python", SHORT, optional=True)
    driftscan = _text(d, "driftscan", SHORT, optional=True)
    target, why = _text(d, "target", SHORT, optional=True), _text(d, "why", SHORT, optional=True)
    error = _text(d, "error", LONG, optional=True)
    kind = data = None
    unreadable = None
    if not error:
        kind = _text(d, "kind", SHORT)
        if kind not in ("report", "snapshot"):
            raise BadAnswer(f"kind is {kind!r:.40}, not 'report' or 'snapshot'")
        # The report itself is parsed (and so type-checked) by Report.model_validate_json, the
        # snapshot by compare's reader: here it only has to be text.
        value = d.get("data")
        if type(value) is not str:
            raise BadAnswer(f"data is a {_describe(value)}, not a string")
        data = value
        if kind == "snapshot":
            count = d.get("unreadable")
            if type(count) is not int or count < 0:
                raise BadAnswer(f"unreadable is a {_describe(count)}, not a count")
            unreadable = count
    return TaskAnswer(hostname=hostname, python=python, driftscan=driftscan, target=target, why=why, kind=kind,
                      data=data, unreadable=unreadable, error=error)
