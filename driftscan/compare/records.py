"""A RECORD rewritten to match an edit: the machine whose RECORD is not the fleet's.

An audit of one machine checks its files against its own RECORD, a file inside the tree: an edit
followed by a re-hashed RECORD row passes it. Across machines it does not: every machine with the
same wheel installed has the same RECORD rows, bar the ones installers write. So, per distribution
and version, the machines' RECORD states (a report's ``record_digest``, a snapshot's RECORD entry)
are counted, and one that is not the state of more than half of them is ``record-rewritten``.

It takes three machines at least: with two, either could be the rewritten one. A tie has no verdict
either. Machines at another version are compared among themselves (a version skew is no rewrite),
and for snapshots, whose RECORD digest covers the installer's own rows, only machines whose
INSTALLER file is the same are compared (pip's RECORD and uv's differ without anyone's edit).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from ..core.units import count as n_of
from ..formats.record import INSTALLER_FILES
from .inputs import PREFIX_FREE, SITE_PACKAGES, InputKind, Machine, RecordState
from .model import OutlierOut

RECORD_REWRITTEN = "record-rewritten"
MIN_MACHINES = 3  # fewer, and no one RECORD can stand out
SHOWN = 5  # distributions a note names

_Group = tuple[str, str, str]  # (distribution, version, installer)


def with_rewritten_records(machines: list[Machine], outliers: list[OutlierOut]) -> tuple[list[OutlierOut], list[str]]:
    """``outliers`` with a ``record-rewritten`` outlier for each machine whose RECORD of a
    distribution is not the majority's (in place of that RECORD's own file outlier, if any), and
    the notes that say where no verdict could be given and why."""
    groups: dict[_Group, list[tuple[Machine, RecordState]]] = {}
    for m in machines:
        for dist, record in m.records.items():
            if record.state and (m.versions is None or m.versions.get(dist) == record.version):
                groups.setdefault((dist, record.version, record.installer), []).append((m, record))
    found: list[tuple[Machine, OutlierOut]] = []
    few: list[str] = []
    tied: list[str] = []
    for (dist, version, _), members in sorted(groups.items()):
        states = Counter(record.state for _, record in members)
        name = f"{members[0][0].display.get(dist, dist)} {version}"
        if len(members) < MIN_MACHINES:
            if len(states) > 1:
                few.append(name)
            continue
        (top, n), *rest = states.most_common()
        if n * 2 <= len(members):
            tied.append(f"{name} ({len(states)} RECORDs among {len(members)} machines)")
            continue
        if not rest:
            continue
        majority = next(record for _, record in members if record.state == top)
        for m, record in members:
            if record.state != top and _comparable(record.state, top):
                found.append((m, _outlier(m, dist, version, record, majority, n, len(members), outliers)))
    notes = _notes(machines, groups, few, tied)
    if not found:
        return outliers, notes
    replaced = {(m.name, o.relpath) for m, o in found}
    by_machine: dict[str, list[OutlierOut]] = {}
    for m, o in found:
        by_machine.setdefault(m.name, []).append(o)
    merged: list[OutlierOut] = []
    for m in machines:  # outliers stay grouped by machine, in the machines' order
        merged += by_machine.get(m.name, [])
        merged += [o for o in outliers if o.machine == m.name and not (
            o.root == SITE_PACKAGES and (o.machine, o.relpath) in replaced)]
    return merged, notes


def weighs_a_record(o: OutlierOut) -> bool:
    """Whether ``o`` is this module's: a RECORD unlike the majority's (a report's own
    ``record-rewritten`` drift of a file, from a lockfile's wheel, is a file outlier)."""
    return o.kind == RECORD_REWRITTEN and o.relpath.endswith(".dist-info/RECORD")


def _outlier(m: Machine, dist: str, version: str, record: RecordState, majority: RecordState, n: int, of: int,
             outliers: list[OutlierOut]) -> OutlierOut:
    relpath = record.relpath or f"{_wheel_name(m.display.get(dist, dist))}-{version}.dist-info/RECORD"
    site = m.roots.get(SITE_PACKAGES)
    files = None
    if m.source is InputKind.SNAPSHOT:
        info = relpath.rsplit("/", 1)[0]
        files = sorted(o.relpath for o in outliers
                       if o.machine == m.name and o.root == SITE_PACKAGES and o.distribution is not None
                       and o.distribution.get("name") == m.display.get(dist, dist)
                       and not _installer_written(o.relpath, info))
    this: dict[str, Any] = {"state": "record", **record.shown}
    shown: dict[str, Any] = {"state": "record", **majority.shown, "machines": n, "of": of}
    return OutlierOut(machine=m.name, path=f"{site.rstrip('/')}/{relpath}" if site else relpath, root=SITE_PACKAGES,
                      relpath=relpath, kind=RECORD_REWRITTEN, scope="package",
                      distribution={"name": m.display.get(dist, dist), "version": version},
                      majority=shown, this=this, tie=False, files=files)


def _comparable(state: str, majority: str) -> bool:
    """A snapshot's RECORD that lists a console script holds the venv's path in that row's hash:
    compared without it (prefix-free) where its row matches the script, as it is where it does not
    (the script was edited, RECORD was not: both are file outliers already). Such a plain digest
    cannot be weighed against the majority's prefix-free one: it differs by the path alone."""
    return state.startswith(PREFIX_FREE) or not majority.startswith(PREFIX_FREE)


def _wheel_name(name: str) -> str:
    """The name part of a dist-info directory as the wheel spec writes it: runs of ``-_.`` as one
    ``_``, lower case (a report names no directory: this is where it is for a wheel built to the
    spec; an older wheel's may keep the name's case)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _installer_written(relpath: str, info: str) -> bool:
    parent, _, leaf = relpath.rpartition("/")
    return parent == info and leaf in INSTALLER_FILES


def _notes(machines: list[Machine], groups: dict[_Group, list[tuple[Machine, RecordState]]], few: list[str],
           tied: list[str]) -> list[str]:
    notes = []
    if tied:
        notes.append("RECORD differs with no majority (no verdict on which was rewritten) for "
                     f"{n_of(len(tied), 'distribution')}: " + ", ".join(tied[:SHOWN]) + (", …" if len(tied) > SHOWN else ""))
    if few:
        notes.append(f"RECORD differs between the machines that have it, fewer than {MIN_MACHINES} (no verdict on "
                     f"which was rewritten), for {n_of(len(few), 'distribution')}: "
                     + ", ".join(few[:SHOWN]) + (", …" if len(few) > SHOWN else ""))
    split = sorted({f"{members[0][0].display.get(dist, dist)} {version}" for (dist, version, installer), members
                    in groups.items() if installer and sum(1 for g in groups if g[:2] == (dist, version)) > 1})
    if split:
        notes.append(f"{n_of(len(split), 'distribution')} installed by different installers: RECORDs compared only "
                     "between machines whose INSTALLER is the same, e.g. " + ", ".join(split[:SHOWN]))
    reports = [m for m in machines if m.source is InputKind.REPORT and m.versions is not None]
    without = [m.name for m in reports if not m.records]
    if without and len(without) < len(machines):
        notes.append(f"{n_of(len(without), 'report')} {'gives' if len(without) == 1 else 'give'} no record_digest "
                     f"(an older driftscan, or an audit that did not read its RECORDs): not weighed for a "
                     f"rewritten RECORD, e.g. {without[0]}")
    return notes
