"""System package managers' records as the authority for the files they installed.

A conda prefix's ``conda-meta/*.json`` and a Debian system's dpkg database list every file their
packages installed, with a hash; a Python distribution those packages carry (its dist-info) is
theirs, and its RECORD, written at build time by a tool nobody ran here, is not what the
installer checked. So the package records replace those dist-infos: each record becomes one
distribution whose rows ``records.py`` verifies like any RECORD's (sha256 for conda, md5 as
Debian records it), and files rewritten at link time (conda's prefix placeholders) are
settled by substituting the placeholder back (``placeholders.py``). docs/environments.md.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..dists import MetadataDir
from ...fs.containment import Containment
from ...fs.reader import file_type
from ...core.values import (Distribution, DriftKind, FileCheck, MetadataKind, Problem, RecordEntry, Target, TargetKind,
                      Unverifiable)
from ..files import MISSING, MODIFIED, OK, TYPE_CHANGED

if TYPE_CHECKING:
    from .conda import CondaPrefix

# The readers are imported only where a conda prefix or a dist-packages is audited: a venv's
# audit (and a warm one above all) does not pay for them (tests/contract/test_imports.py).
_DIST_PACKAGES = os.sep + "dist-packages"


@dataclass
class ManagedFiles:
    """What the package managers of a target own, ready for the RECORD pipeline."""

    metadirs: list[MetadataDir] = field(default_factory=list)  # one per conda record / dpkg package
    replaced: set[str] = field(default_factory=set)  # dist-info dirs whose files a package record owns
    problems: list[Problem] = field(default_factory=list)
    unverifiable: list[Unverifiable] = field(default_factory=list)
    conda: CondaPrefix | None = None
    evidence: dict[str, str] = field(default_factory=dict)  # metadata_dir -> how its hashes are recorded


def find_managed(target: Target, containment: Containment) -> ManagedFiles:
    """The conda records of a conda prefix, and the dpkg packages owning files in each
    dist-packages of the target. Never raises for the tree's sake."""
    found = ManagedFiles()
    conda_meta = os.path.join(target.venv, "conda-meta") if target.venv else ""
    if target.venv and target.kind is TargetKind.PREFIX and os.path.isdir(conda_meta):
        from .conda import is_conda_prefix, read_conda_prefix

        if is_conda_prefix(target.venv):
            conda = read_conda_prefix(target.venv, containment)
            found.conda = conda
            found.problems += conda.problems
            found.replaced |= set(conda.python_metadata_dirs)
            for dist in conda.distributions:
                dist = replace(dist, kind=MetadataKind.CONDA, installer=conda.tool)
                found.metadirs.append(MetadataDir(dist.metadata_dir, target.venv, dist))
                found.evidence[dist.metadata_dir] = f"sha256 in the conda record {dist.metadata_dir}"
    for site in target.site_packages:
        if not site.rstrip(os.sep).endswith(_DIST_PACKAGES):
            continue  # only Debian's layout is dpkg's
        from .dpkg import dpkg_database_for, dpkg_database_problem, hash_evidence, read_dpkg

        refused = dpkg_database_problem(site)
        if refused is not None:
            found.problems.append(refused)
        database = dpkg_database_for(site)
        if database is None:
            continue
        owned = read_dpkg(database, site, containment)
        found.problems += owned.problems
        found.unverifiable += owned.unverifiable
        found.replaced |= set(owned.python_metadata_dirs)
        for dist in (*owned.distributions, *owned.untrusted):
            dist = replace(dist, kind=MetadataKind.DPKG)
            found.metadirs.append(MetadataDir(dist.metadata_dir, site, dist))
            found.evidence[dist.metadata_dir] = hash_evidence(dist)
    return found


_KINDS = {MODIFIED: DriftKind.MODIFIED, MISSING: DriftKind.MISSING, TYPE_CHANGED: DriftKind.TYPE_CHANGED}


def settle_managed(checks: list[FileCheck], managed: ManagedFiles) -> list[FileCheck]:
    """The RECORD pass's checks, settled for what conda records say beyond file hashes: files
    rewritten at link time are judged by substituting the placeholder back (the pass's verdict on
    them is replaced: its hash is of the package's bytes or of the prefix they were linked at),
    softlinks and directories as such; and each package-record drift says how its hash was
    recorded."""
    conda = managed.conda
    out: list[FileCheck] = []
    judged: set[str] = set()
    if conda is not None:
        rows = {os.path.normpath(os.path.join(conda.prefix, e.path)): (d, e)
                for d in (md.distribution for md in managed.metadirs if md.distribution) for e in d.entries}
        out += _placeholder_files(conda, rows, judged, managed)
        out += _special_paths(conda, rows, checks, judged, managed)
    for check in checks:
        if check.path in judged:
            continue
        owner = check.distribution
        how = managed.evidence.get(owner.metadata_dir) if owner is not None else None
        if how and check.kind in (DriftKind.MODIFIED, DriftKind.MISSING, DriftKind.TYPE_CHANGED):
            check = replace(check, evidence=f"{check.evidence}; {how}" if check.evidence else f"checked against {how}")
        out.append(check)
    return out


def _placeholder_files(conda: CondaPrefix, rows: dict[str, tuple[Distribution, RecordEntry]], judged: set[str],
                       managed: ManagedFiles) -> list[FileCheck]:
    if not conda.placeholders:
        return []
    from .placeholders import check_placeholder

    also = (conda.recorded_prefix,) if conda.recorded_prefix else ()
    out = []
    for path, ph in sorted(conda.placeholders.items()):
        if path not in rows:
            continue
        dist, entry = rows[path]
        result = check_placeholder(path, entry, ph, conda.prefix, also)
        judged.add(path)
        if result.status == OK:
            continue
        kind = _KINDS.get(result.status)
        if kind is None:  # could not be read
            managed.problems.append(Problem(path, result.detail))
            continue
        out.append(FileCheck(kind, path, conda.prefix, dist,
                             {"type": "file", "placeholder": ph.placeholder, "file_mode": ph.file_mode},
                             {"type": "file"}, f"{result.detail} (a file conda rewrote at link time, checked by "
                                               "substituting the placeholder back)"))
    return out


def _special_paths(conda: CondaPrefix, rows: dict[str, tuple[Distribution, RecordEntry]], checks: list[FileCheck],
                   judged: set[str], managed: ManagedFiles) -> list[FileCheck]:
    """Softlinks and directories a conda record lists: checked as such (the RECORD pass, which
    knows files only, saw a link where its row has no type), the link's text against its sha256
    when the record has one."""
    flagged = {c.path: c for c in checks}
    out = []
    for path, special in sorted(conda.special.items()):
        prior = flagged.get(path)
        if prior is not None and prior.kind is DriftKind.MISSING:
            continue  # reported as it is
        judged.add(path)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue  # the RECORD pass reported it missing (a presence-only row)
        except OSError as exc:
            managed.problems.append(Problem(path, f"cannot stat: {exc.strerror or exc}"))
            continue
        want = stat.S_ISLNK if special.path_type == "softlink" else stat.S_ISDIR
        kind, why, actual = None, "", {"type": file_type(st.st_mode)}
        if not want(st.st_mode):
            kind, why = DriftKind.TYPE_CHANGED, f"the package installs a {special.path_type} here"
        elif special.path_type == "softlink" and special.link_sha256 is not None:
            target = os.readlink(path)
            actual["symlink_target"] = target
            if hashlib.sha256(os.fsencode(target)).digest() != special.link_sha256:
                kind, why = DriftKind.MODIFIED, "the symlink points elsewhere than the package's"
        if kind is not None:
            out.append(FileCheck(kind, path, conda.prefix, rows[path][0] if path in rows else None, {"type": special.path_type}, actual,
                                 f"{why} (conda record)"))
    return out
