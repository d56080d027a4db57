"""Reports of one environment on one machine, taken at different times: before and after.

Two reports of the same target (``inputs.target_of``: hostname and every audited root) are not
two machines to find the odd one out of, but one machine's history. They are put in time order
(their ``generated_at``; where it is missing or two are equal, the order on the command line)
and each consecutive pair says what drift appeared, went away, changed (kind, content hash,
prediction, accepted, dump files) and stayed. A dump file listed by several reports in a row is
said to be still there since the first of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, Final, Literal

from .inputs import InputError, InputKind, Machine, VENV, kind_of, load
from .model import BeforeAfterOut, DriftStateOut, ReportAtOut, TimedChangeOut

BY_TIME: Final = "generated_at"
BY_COMMAND_LINE: Final = "command line"
_FIELDS = ("kind", "hash", "prediction", "accepted", "dumps")


def _when(m: Machine) -> datetime | None:
    try:
        when = datetime.fromisoformat(m.generated_at) if m.generated_at else None
    except ValueError:
        return None
    if when is not None and when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when


def in_time_order(group: Sequence[Machine]) -> list[Machine]:
    """``group`` (in command-line order) oldest first; on a missing or unreadable generated_at,
    all of them in command-line order."""
    times = [_when(m) for m in group]
    known = [t for t in times if t is not None]
    if len(known) < len(times):
        return list(group)
    return [m for _, m in sorted(zip(known, group), key=lambda pair: pair[0])]  # stable: ties keep their order


def _strs(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


class ReadAgainError(InputError):
    """A report that could not be read again for its before/after (``name``: the input's)."""

    def __init__(self, name: str, message: str):
        super().__init__(message)
        self.name = name


def _drifts(m: Machine) -> dict[str, tuple[DriftStateOut, str | None, dict[str, str] | None]]:
    """path -> (its state, scope, owner) for each drift of ``m``'s report (malformed ones skipped)."""
    try:
        doc = load(m.path)
        if kind_of(doc) is not InputKind.REPORT:
            raise InputError("changed while being compared")
    except InputError as exc:
        raise ReadAgainError(m.name, str(exc)) from None
    out = {}
    for drift in doc.get("drifts") or ():
        if not isinstance(drift, dict) or not isinstance(drift.get("path"), str) or \
                not isinstance(drift.get("kind"), str):
            continue
        actual = drift["actual"] if isinstance(drift.get("actual"), dict) else {}
        token = next((f"{k}:{actual[k]}" if k != "hash" else actual[k] for k in ("hash", "sha256", "xxh3_128")
                      if isinstance(actual.get(k), str)), None)
        if token is None and isinstance(actual.get("size"), int) and not isinstance(actual.get("size"), bool):
            token = f"size={actual['size']}"
        dumps = _strs(drift.get("artifacts")) or _strs(actual.get("possible_artifacts"))
        prediction = drift.get("prediction")
        state = DriftStateOut(kind=drift["kind"], hash=token,
                              prediction=prediction if isinstance(prediction, str) else None,
                              accepted=isinstance(drift.get("accepted"), dict), dumps=sorted(set(dumps)))
        dist = drift.get("distribution")
        owner = {"name": dist["name"], "version": dist["version"]} \
            if isinstance(dist, dict) and isinstance(dist.get("name"), str) and isinstance(dist.get("version"), str) \
            else None
        scope = drift.get("scope")
        out[drift["path"]] = (state, scope if isinstance(scope, str) else None, owner)
    return out


def before_after(chain: Sequence[Machine]) -> list[BeforeAfterOut]:
    """One entry per consecutive pair of ``chain`` (one target's reports, oldest first). Raises
    ReadAgainError when a report cannot be read again."""
    out: list[BeforeAfterOut] = []
    # (drift path, dump file) -> index in chain of the report from which it has been listed in every one
    since: dict[tuple[str, str], int] = {}
    earlier = _drifts(chain[0])
    for path, (state, _, _) in earlier.items():
        for dump in state.dumps:
            since[(path, dump)] = 0
    for i in range(1, len(chain)):
        a, b = chain[i - 1], chain[i]
        later = _drifts(b)
        ta, tb = _when(a), _when(b)
        order: Literal["generated_at", "command line"] = \
            BY_TIME if ta is not None and tb is not None and ta != tb else BY_COMMAND_LINE
        step = BeforeAfterOut(hostname=a.hostname or "", venv=a.roots.get(VENV), roots=dict(a.roots),
                              before=ReportAtOut(name=a.name, generated_at=a.generated_at),
                              after=ReportAtOut(name=b.name, generated_at=b.generated_at),
                              order=order)
        kept: dict[tuple[str, str], int] = {}
        for path in sorted(earlier.keys() | later.keys()):
            old = earlier.get(path)
            new = later.get(path)
            _, scope, owner = new or old  # type: ignore[misc]  # one of them is there
            item = TimedChangeOut(path=path, scope=scope, distribution=owner, dumps_still_there=0,
                                  before=old[0] if old else None, after=new[0] if new else None)
            if old is None:
                step.appeared.append(item)
            elif new is None:
                step.went_away.append(item)
            else:
                item.changes = [f for f in _FIELDS if getattr(old[0], f) != getattr(new[0], f)]  # type: ignore[misc]
                still = sorted(set(old[0].dumps) & set(new[0].dumps))
                if still:
                    item.dumps_still_there = len(still)
                    item.dumps_since = chain[max(since.get((path, d), i - 1) for d in still)].generated_at
                (step.changed if item.changes else step.stayed).append(item)
            for dump in new[0].dumps if new else ():
                kept[(path, dump)] = since.get((path, dump), i) if old and dump in old[0].dumps else i
        since = kept
        earlier = later
        out.append(step)
    return out
