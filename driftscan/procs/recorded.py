"""Exact evidence from ``driftscan.runtime``'s record files: the module files a process imported
that are no longer the ones on disk.

A record file is another process's data: ``driftscan.runtime.records`` reads it bounded and
checked (owner, 0700 directory, the same PID, start time and user), and a forged or damaged one
only costs its own process its evidence. The directories looked in are the standard places the
recorder writes to for each user — ``$XDG_RUNTIME_DIR/driftscan`` (``/run/user/UID/driftscan``)
and ``~/.cache/driftscan/runtime`` — never read from the process's own environment.
"""

from __future__ import annotations

import os
import pwd
from dataclasses import replace
from collections.abc import Sequence

from ..runtime import location
from ..runtime.records import ChangeKind, changed, read_records
from .model import EvidenceOut, Source, Strength
from .proc import ProcEntry
from .scan import FILES_SHOWN, Environment


def _under(path: str, roots: Sequence[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def _inside(path: str, roots: Sequence[str]) -> bool:
    """A recorded path that is the environment's, as written and as it resolves (no ``..``, no
    symlink out of it): a record is its process's data."""
    return os.path.normpath(path) == path and _under(path, roots) and _under(os.path.realpath(path), roots)


class RuntimeRecords:
    """A ``Recorder`` for ``procs.scan``: the evidence of each process's record file, if it has one."""

    def __init__(self, directories: Sequence[str] = ()) -> None:
        self.directories = tuple(directories)  # given: only these (tests, a chosen directory)
        self.untrusted: list[str] = []  # "PID n: why" for record files that could not be used

    def _candidates(self, uid: int) -> list[str]:
        if self.directories:
            return list(self.directories)
        found = []
        if uid == os.getuid():
            found.append(location.default_directory())
        found.append(f"/run/user/{uid}/driftscan")
        try:
            home = pwd.getpwuid(uid).pw_dir
        except KeyError:
            home = ""
        if home and os.path.isabs(home):
            found.append(os.path.join(home, ".cache", "driftscan", "runtime"))
        return list(dict.fromkeys(found))

    def evidence(self, entry: ProcEntry, started_at: float, env: Environment) -> list[EvidenceOut]:
        if entry.uid is None:
            return []
        for directory in self._candidates(entry.uid):
            records = read_records(entry.pid, entry.start_ticks, entry.uid, directory)
            if records is None:
                continue
            if records.error is not None:
                self.untrusted.append(f"PID {entry.pid}: {records.error.detail}")
                return []
            # Only the environment's files are looked at: a record names paths of its process's
            # choosing, and nothing outside what the user named is statted or read.
            ours = replace(records, modules=tuple(m for m in records.modules if _inside(m.path, env.prefixes)))
            # A file replaced by the same bytes (a reinstall of the same release) runs the same code.
            gone = sorted({c.module.path for c in changed(ours)
                           if c.kind is not ChangeKind.UNREADABLE and c.same_content is not True})
            if not gone:
                return []
            return [EvidenceOut(strength=Strength.EXACT, source=Source.RECORDER, reason="recorded",
                                files=gone[:FILES_SHOWN], count=len(gone))]
        return []
