"""Group every path by its state across machines and name the machines that deviate.

Two passes over the inputs, one input in memory at a time:

1. each input's machine (hostname, distributions and versions, roots) is kept — O(machines ×
   distributions) — and each path's states are *counted*: memory grows with the distinct
   (path, state) pairs of the fleet, not with the number of machines (1,000 identical venvs
   cost what one does);
2. with the majority of every path known, each input is read again and its deviations listed.

A distribution whose version is not the majority's on some machine is a version skew: that
machine's files of it are not compared path by path (they would all differ), and the skew is
reported once. A file that holds its environment's own path (a venv's activate scripts, console
scripts, ``pyvenv.cfg``) is compared by its digest with that path taken out where both inputs give
one (``Machine.own_path``): two states are one when their plain digests match or their prefix-free
ones do. Where no state has a majority: with two states (two machines, say) each machine
is shown against the other ("both ways"); an audit report's "as RECORD says" wins a tie, since
RECORD is the reference every report was checked against.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..core.errors import DriftscanError
from ..core.units import count as n_of
from .inputs import (AS_REFERENCE, BY_NAME, EXTERNAL, Fact, InputError, InputKind, Key, Machine, State, canonical,
                     kind_of, load, target_of)
from .records import with_rewritten_records
from .model import (CompareReport, InputErrorOut, MachineOut, MissingRootOut, OutlierOut, SkewMachineOut,
                    VersionSkewOut)

_UNKNOWN = "?"  # a report of an older driftscan: its versions are not known
_T = TypeVar("_T")
# What pass 1 counts per path: (distribution, its version on the machine, state) -> machines.
_Slot = tuple[str | None, str, State]


class _OwnPath:
    """Which states of a path are one file but for the environment's own path: each state with a
    prefix-free digest stands for the first state seen with the same prefix-free digest. Only the
    files that hold their environment's path are here (a few per machine)."""

    def __init__(self) -> None:
        self.first: dict[Key, dict[State, State]] = {}  # prefix-free state -> the first plain state
        self.same: dict[Key, dict[State, State]] = {}  # plain state -> the state it counts as
        self.merged = 0  # paths where states that differ only by the path were taken as one

    def learn(self, machine: Machine) -> None:
        for key, state, free in machine.own_path:
            first = self.first.setdefault(key, {}).setdefault(free, state)
            self.same.setdefault(key, {}).setdefault(state, first)
        machine.own_path.clear()

    def of(self, key: Key, state: State) -> State:
        same = self.same.get(key)
        return state if same is None else same.get(state, state)

    def fold(self, counts: dict[Key, dict[_Slot, int]]) -> None:
        """``counts`` with each state counted as the one it stands for."""
        for key, same in self.same.items():
            bucket = counts.get(key)
            if bucket is None or not any(same.get(state, state) != state for _, _, state in bucket):
                continue
            folded: dict[_Slot, int] = {}
            for (dist, version, state), n in bucket.items():
                slot = (dist, version, same.get(state, state))
                folded[slot] = folded.get(slot, 0) + n
            if len({state for _, _, state in folded}) < len({state for _, _, state in bucket}):
                self.merged += 1
            counts[key] = folded


class CompareError(DriftscanError):
    """The inputs cannot be compared at all (a mix of reports and snapshots, fewer than two)."""


@dataclass
class _Verdict:
    """A path on which the comparable machines disagree."""

    dist: str | None
    counts: dict[State, int]  # state -> machines, the implicit state included
    reference: State | None  # the majority state; None on a tie
    pair: tuple[State, State] | None  # two states tied: each machine against the other
    group: int
    implicit: State
    scope: str | None


def _facts(machine: Machine, doc: dict[str, Any]) -> Iterator[Fact]:
    return BY_NAME[machine.source].facts(machine, doc)


def _machine(index: int, name: str, kind: InputKind, doc: dict[str, Any], display: dict[str, str]) -> Machine:
    return BY_NAME[kind].machine(index, name, doc, display)


def _majority(values: Counter[_T]) -> tuple[_T | None, bool]:
    """The most common value and whether it is strictly the most common."""
    ranked = values.most_common()
    if not ranked:
        return None, False
    return ranked[0][0], len(ranked) == 1 or ranked[0][1] > ranked[1][1]


class _Fleet:
    def __init__(self, machines: list[Machine]):
        self.machines = machines
        self.major: dict[str, str | None] = {}  # dist -> majority version (None: not installed)
        self.tied: set[str] = set()
        self.group_size: dict[str, int] = {}
        self.root_count: Counter[str] = Counter(root for m in machines for root in m.roots)
        known = [m.versions for m in machines if m.versions is not None]
        names = {d for versions in known for d in versions}
        for dist in names:
            votes = Counter(versions.get(dist) for versions in known)
            version, strict = _majority(votes)
            self.major[dist] = version
            if not strict:
                self.tied.add(dist)
            self.group_size[dist] = sum(1 for m in machines if self.in_group(m, dist))

    def version(self, m: Machine, dist: str) -> str:
        if m.versions is None:
            return _UNKNOWN
        return m.versions.get(dist) or ""

    def in_group(self, m: Machine, dist: str | None, root: str | None = None) -> bool:
        if dist is None:
            return root is None or root == EXTERNAL or root in m.roots
        if dist in self.tied:
            return False
        if m.versions is None or dist not in self.major:
            return True
        return m.versions.get(dist) == self.major[dist]

    def size(self, dist: str | None, root: str) -> int:
        if dist is None:
            return len(self.machines) if root == EXTERNAL else self.root_count[root]
        return self.group_size.get(dist, len(self.machines))


def compare_files(paths: Sequence[str], *, names: Sequence[str] | None = None,
                  hostnames: Sequence[str | None] | None = None,
                  progress: Callable[[int, int], None] | None = None, before_after: bool = True) -> CompareReport:
    """Compare the audit reports or snapshots at ``paths`` (one machine each, named by its path as
    given, or by ``names``; ``hostnames`` stand in for what an input does not record). Raises
    CompareError for a mix of reports and snapshots; an input that cannot be read is listed in
    ``errors`` and the others are compared.

    Reports of one target (one hostname, the same venv and model directories) are that target's
    history, compared before/after in time order (``timeline``), unless ``before_after`` is false
    (fleet: each input is another node, whatever it says)."""
    total = 2 * len(paths)
    done = 0
    out = CompareReport(agree=0, compared=0)
    machines: list[Machine] = []
    kinds: dict[str, str] = {}
    counts: dict[Key, dict[_Slot, int]] = {}
    meta: dict[Key, tuple[str | None, State]] = {}
    display: dict[str, str] = {}  # distribution names as written, shared by every machine
    own_path = _OwnPath()
    for n, path in enumerate(paths):
        name = names[n] if names else path
        try:
            doc = load(path)
            kind = kind_of(doc)
            if kinds and kind not in kinds:
                other = next(iter(kinds.items()))
                raise CompareError(f"compare takes audit reports or snapshots, not a mix: {other[1]} is a "
                                   f"{other[0]}, {name} a {kind}")
            machine = _machine(len(machines), name, kind, doc, display)
        except InputError as exc:
            out.errors.append(InputErrorOut(path=name, message=str(exc)))
            continue
        finally:
            done += 1
            if progress:
                progress(done, total)
        kinds.setdefault(kind, name)
        machine.path = path
        if hostnames and hostnames[n] and not machine.hostname:
            machine.hostname = hostnames[n]
        machines.append(machine)
        versions = machine.versions
        for key, dist, state, scope, implicit, _ in _facts(machine, doc):
            version = "" if dist is None else _UNKNOWN if versions is None else versions.get(dist, "")
            bucket = counts.get(key)
            if bucket is None:
                counts[key] = {(dist, version, state): 1}
                meta[key] = (scope, implicit)
            else:
                slot = (dist, version, state)
                bucket[slot] = bucket.get(slot, 0) + 1
        own_path.learn(machine)
        del doc
    if len(machines) < 2:
        unread = "; ".join(f"{e.path}: {e.message}" for e in out.errors)
        raise CompareError("compare needs two reports or snapshots at least" + (f" (unreadable: {unread})" if unread else ""))
    if before_after and machines[0].source is InputKind.REPORT:
        groups: dict[object, list[Machine]] = {}
        for m in machines:
            groups.setdefault(target_of(m) or ("one input", m.index), []).append(m)
        if any(len(group) > 1 for group in groups.values()):
            counts.clear()
            meta.clear()
            if progress:
                progress(total, total)
            return _timelines(list(groups.values()), machines, out)
    own_path.fold(counts)
    fleet = _Fleet(machines)
    out.machines = [MachineOut(name=m.name, hostname=m.hostname, source=m.source,
                               python_version=m.python_version, files=m.files) for m in machines]
    out.version_skew = _skew(fleet)
    out.missing_roots = _missing_roots(fleet)
    verdicts = _verdicts(fleet, counts, meta, out)
    counts.clear()
    meta.clear()
    out.notes = _notes(machines)
    if own_path.merged:
        out.notes.append(f"{n_of(own_path.merged, 'file')} {'differs' if own_path.merged == 1 else 'differ'} only by "
                         "the environment's own path (compared with it taken out)")
    if verdicts:
        out.outliers = list(_second_pass(fleet, verdicts, out, progress, done, total, own_path))
    elif progress:
        progress(total, total)
    out.outliers, record_notes = with_rewritten_records(machines, out.outliers)
    out.notes += record_notes
    _skew_drift_counts(fleet, out)
    return out


def _timelines(groups: list[list[Machine]], machines: list[Machine], out: CompareReport) -> CompareReport:
    """Before/after for each target with several reports; with more than one target, the majority
    view across targets too, over the newest report of each."""
    from .timeline import BY_COMMAND_LINE, ReadAgainError, before_after, in_time_order

    out.machines = [MachineOut(name=m.name, hostname=m.hostname, source=m.source,
                               python_version=m.python_version, files=m.files) for m in machines]
    newest = []
    for group in groups:
        chain = in_time_order(group)
        newest.append(chain[-1])
        if len(chain) < 2:
            continue
        try:
            out.before_after += before_after(chain)
        except ReadAgainError as exc:  # that environment's before/after is left out, and said so
            out.errors.append(InputErrorOut(path=exc.name, message=f"second read: {exc}"))
            continue
        for a, b in zip(chain, chain[1:]):
            moved = _versions_moved(a, b)
            if moved:
                out.notes.append(f"{a.name} → {b.name}: {moved}")
    for step in out.before_after:
        if step.order == BY_COMMAND_LINE:
            out.notes.append(f"{step.before.name} and {step.after.name}: generated_at missing or equal, taken in "
                             f"the order given on the command line")
    if len(groups) == 1:
        out.mode = "before-after"
        out.compared = sum(len(s.appeared) + len(s.went_away) + len(s.changed) + len(s.stayed)
                           for s in out.before_after)
        out.agree = sum(len(s.stayed) for s in out.before_after)
        return out
    out.mode = "mixed"
    out.notes.append(f"{len(groups)} environments compared with each other by their newest reports: "
                     + ", ".join(m.name for m in newest))
    fleet = compare_files([m.path for m in newest], names=[m.name for m in newest],
                          hostnames=[m.hostname for m in newest], before_after=False)
    out.outliers, out.version_skew, out.missing_roots = fleet.outliers, fleet.version_skew, fleet.missing_roots
    out.agree, out.compared = fleet.agree, fleet.compared
    out.notes += fleet.notes
    out.errors += fleet.errors
    return out


def _versions_moved(a: Machine, b: Machine, shown: int = 5) -> str:
    if a.versions is None or b.versions is None:
        return ""
    names = sorted(a.versions.keys() | b.versions.keys())
    moved = [f"{b.display.get(d) or a.display.get(d) or d} {a.versions.get(d) or 'not installed'} → "
             f"{b.versions.get(d) or 'not installed'}" for d in names if a.versions.get(d) != b.versions.get(d)]
    if not moved:
        return ""
    more = f", and {len(moved) - shown} more" if len(moved) > shown else ""
    return f"{n_of(len(moved), 'distribution')} changed version: " + ", ".join(moved[:shown]) + more


def _verdicts(fleet: _Fleet, counts: dict[Key, dict[_Slot, int]], meta: dict[Key, tuple[str | None, State]],
              out: CompareReport) -> dict[Key, _Verdict]:
    verdicts = {}
    compared = agree = 0
    for key, bucket in counts.items():
        if len(bucket) == 1:  # the common case: one state on every machine that lists the path
            ((dist, version, state), n), = bucket.items()
            if dist is None or (dist not in fleet.tied and (version in (fleet.major.get(dist), _UNKNOWN)
                                                            or dist not in fleet.major)):
                if n == fleet.size(dist, key[0]):
                    compared += 1
                    agree += 1
                    continue
        by_dist: Counter[str | None] = Counter()
        for (dist, _, _), n in bucket.items():
            by_dist[dist] += n
        dist = max(by_dist, key=lambda d: (d is not None, by_dist[d]))
        if dist is not None and (dist in fleet.tied):
            continue  # its versions have no majority: reported as a skew only
        major = fleet.major.get(dist) if dist is not None else None
        explicit: Counter[State] = Counter()
        for (d, version, state), n in bucket.items():
            if d == dist and (dist is None or version in (major, _UNKNOWN) or dist not in fleet.major):
                explicit[state] += n
        scope, implicit = meta[key]
        group = fleet.size(dist, key[0])
        rest = group - sum(explicit.values())
        states = Counter(explicit)
        if rest > 0:
            states[implicit] += rest
        if not states:
            continue
        compared += 1
        if len(states) == 1:
            agree += 1
            continue
        ranked = states.most_common()
        top = [s for s, n in ranked if n == ranked[0][1]]
        reference, pair = None, None
        if len(top) == 1:
            reference = top[0]
        elif AS_REFERENCE in top:
            reference = AS_REFERENCE
        elif len(states) == 2:
            pair = (ranked[0][0], ranked[1][0])
        verdicts[key] = _Verdict(dist, dict(states), reference, pair, group, implicit, scope)
    out.compared, out.agree = compared, agree
    return verdicts


def _present(state: State) -> bool:
    return isinstance(state, str) or state[0] not in ("absent", "missing")


def _state_out(state: State, source: InputKind) -> dict[str, Any]:
    if isinstance(state, str):  # a snapshot's entry
        if state.startswith("link:"):
            return {"state": "symlink", "target": state[5:]}
        return {"state": "present", "xxh3_128": state}
    tag = state[0]
    if state == AS_REFERENCE:
        return {"state": "recorded"}
    if tag in ("absent", "missing"):
        return {"state": tag}
    shown: dict[str, Any] = {"state": tag}
    token = state[1] if len(state) > 1 else None
    if isinstance(token, str):
        if token.startswith("size="):
            shown["size"] = int(token[5:])
        else:
            shown["hash"] = token
    return shown


def _kind(this: State, reference: State | None) -> str:
    if reference is not None and _present(reference) and not _present(this):
        return "missing"
    if reference is not None and not _present(reference) and _present(this):
        return "added"
    if isinstance(this, str):
        return "modified"
    if this[0] not in ("file", "link", "recorded", "modified", "added", "absent", "missing"):
        return this[0]  # a drift of its own kind: type-changed, debug-artifacts, corrupt ...
    return "modified"


def _outlier(fleet: _Fleet, m: Machine, key: Key, path: str, this: State, v: _Verdict,
             scope: str | None, counted: State | None = None) -> OutlierOut | None:
    """``counted``: the state ``this`` was counted as (``_OwnPath``), when another."""
    same = this if counted is None else counted
    if v.reference is not None:
        if same == v.reference:
            return None
        reference = v.reference
    elif v.pair is not None:
        reference = v.pair[1] if same == v.pair[0] else v.pair[0]
    else:
        reference = None
    majority = None
    if reference is not None:
        majority = {**_state_out(reference, m.source), "machines": v.counts.get(reference, 0), "of": v.group}
    dist = None
    if v.dist is not None:
        version = (m.versions or {}).get(v.dist) or fleet.major.get(v.dist) or ""
        dist = {"name": m.display.get(v.dist, v.dist), "version": version}
    return OutlierOut(machine=m.name, path=path, root=key[0], relpath=key[1], kind=_kind(this, reference),
                      scope=scope or v.scope, distribution=dist, majority=majority, this=_state_out(this, m.source),
                      tie=v.reference is None)


def _path_on(m: Machine, root: str, rel: str) -> str:
    directory = m.roots.get(root)
    return rel if directory is None or root == EXTERNAL else directory.rstrip("/") + "/" + rel


def _second_pass(fleet: _Fleet, verdicts: dict[Key, _Verdict], out: CompareReport,
                 progress: Callable[[int, int], None] | None, done: int, total: int,
                 own_path: _OwnPath | None = None) -> Iterator[OutlierOut]:
    # Paths where a machine that does not list them deviates (the majority lists them).
    lacking = {key: v for key, v in verdicts.items()
               if v.counts.get(v.implicit, 0) and (v.reference is None or v.reference != v.implicit)}
    for m in fleet.machines:
        try:
            doc = load(m.path)
            if kind_of(doc) is not m.source:
                raise InputError("changed while being compared")
        except InputError as exc:
            out.errors.append(InputErrorOut(path=m.name, message=f"second read: {exc}"))
            continue
        finally:
            done += 1
            if progress:
                progress(done, total)
        seen = set()
        for key, dist, state, scope, _, path in _facts(m, doc):
            v = verdicts.get(key)
            if v is None or dist != v.dist or not fleet.in_group(m, v.dist, key[0]):
                continue
            seen.add(key)
            counted = own_path.of(key, state) if own_path is not None else state
            found = _outlier(fleet, m, key, path or _path_on(m, *key), state, v, scope, counted)
            if found is not None:
                yield found
        m.own_path.clear()
        del doc
        for key, v in lacking.items():
            if key in seen or not fleet.in_group(m, v.dist, key[0]):
                continue
            found = _outlier(fleet, m, key, _path_on(m, *key), v.implicit, v, None)
            if found is not None:
                yield found


def _skew(fleet: _Fleet) -> list[VersionSkewOut]:
    out = []
    known = [m for m in fleet.machines if m.versions is not None]
    for dist in sorted(fleet.major):
        version = fleet.major[dist]
        tied = dist in fleet.tied
        odd = [m for m in known if tied or fleet.version(m, dist) != (version or "")]
        if not odd:
            continue
        names = [known[0].display[dist]] if known and dist in known[0].display else []
        majority = None if tied else {"version": version,
                                      "machines": sum(1 for m in known if fleet.version(m, dist) == (version or ""))}
        out.append(VersionSkewOut(distribution=names[0] if names else dist, majority=majority, machines=[
            SkewMachineOut(machine=m.name, hostname=m.hostname, version=fleet.version(m, dist) or None) for m in odd]))
    pythons: Counter[str] = Counter(m.python_version for m in fleet.machines if m.python_version)
    if len(pythons) > 1:
        found = _majority(pythons)  # bound first: mypy infers Counter[str | None] when unpacked at once
        python, strict = found  # strict: a most common version, so not None
        odd = [m for m in fleet.machines if m.python_version and (not strict or m.python_version != python)]
        out.append(VersionSkewOut(distribution="python", kind="python",
                                  majority={"version": python, "machines": pythons[python]}
                                  if strict and python is not None else None,
                                  machines=[SkewMachineOut(machine=m.name, hostname=m.hostname,
                                                           version=m.python_version) for m in odd]))
    return out


def _skew_drift_counts(fleet: _Fleet, out: CompareReport) -> None:
    """For reports: how many drifts each skewed machine's own report lists for that distribution
    (read off pass 1's facts would cost memory per machine; the skew list is short)."""
    if not out.version_skew or fleet.machines[0].source is not InputKind.REPORT:
        return
    wanted = {sm.machine for s in out.version_skew if s.kind == "distribution" for sm in s.machines if sm.version}
    by_machine: dict[str, Counter[str]] = {}
    for m in fleet.machines:
        if m.name not in wanted:
            continue
        try:
            doc = load(m.path)
        except InputError:
            continue
        by_machine[m.name] = Counter(f[1] for f in BY_NAME[InputKind.REPORT].facts(m, doc) if f[1])
        m.own_path.clear()

    for skew in out.version_skew:
        if skew.kind != "distribution":
            continue
        for sm in skew.machines:
            if sm.machine in by_machine:
                sm.drifts = by_machine[sm.machine].get(canonical(skew.distribution), 0)


def _missing_roots(fleet: _Fleet) -> list[MissingRootOut]:
    n = len(fleet.machines)
    out = []
    for root, count in sorted(fleet.root_count.items()):
        if count * 2 > n and count < n:
            out += [MissingRootOut(machine=m.name, root=root) for m in fleet.machines if root not in m.roots]
    return out


def _notes(machines: list[Machine]) -> list[str]:
    notes = []
    old = [m.name for m in machines if m.source is InputKind.REPORT and m.versions is None]
    if old:
        notes.append(f"{n_of(len(old), 'report')} {'lists' if len(old) == 1 else 'list'} no distributions (an older "
                     "driftscan): their versions are not "
                     f"compared, e.g. {old[0]}")
    for m in machines:
        if m.skipped_entries:
            notes.append(f"{m.name}: {m.skipped_entries} malformed entries skipped")
    if machines and machines[0].source is InputKind.SNAPSHOT:
        notes.append("bytecode (__pycache__/*.pyc) is not compared: it embeds each machine's install time")
    return notes
