"""Which processes run an environment, and the evidence that they run code other than what is on disk.

A process runs the environment when its command line names a program, script or module of it by
an absolute path (argv[0], or a python's script or ``-m`` with the environment's own python), or
when it maps a file of it (an extension module, a shared library). Never found through PATH, the
process's working directory or its environment variables: those are the process's, not ours
(needrestart once ran a process's Python with its PYTHONPATH: CVE-2024-48990). Nothing is run.

The evidence, strongest first: a mapped file of the environment that is deleted or replaced
(exact: /proc/PID/maps gives the device and inode the process holds); files of the environment
whose ctime is after the process's start (likely: it may have imported the old content).
"""

from __future__ import annotations

import bisect
import datetime
import errno
import os
import pwd
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from ..core.values import Target
from ..environment.target import environment_roots
from ..fs.reader import walk
from .model import (EvidenceOut, HiddenOut, ProcessOut, ProcsReport, ProcsSummary, Source, Strength, Tie,
                    WhereOut)
from .proc import PROC, Gone, ProcEntry, boot_time, clock_ticks, own_mount_ns, pids, read_entry
from .where import remedy, where

WALK_FILES = 1_000_000  # names of the environment looked at, at most, for ctimes
FILES_SHOWN = 20  # files an evidence lists (its count says how many)
COMMAND_LIMIT = 4096  # characters of a command line a result keeps
NOT_VISIBLE = "not visible to this user (run as root or as its owner)"
_OPTIONS_WITH_VALUE = {"-W", "-X", "-Q"}


@dataclass(frozen=True)
class Environment:
    """The audited environment's directories as absolute paths (as named, and resolved in our view)."""

    prefixes: tuple[str, ...]  # the venv or prefix, and each site-packages' root
    programs: tuple[str, ...]  # bin/ and site-packages: where argv[0] or a script may be
    site_packages: tuple[str, ...]

    @property
    def shown(self) -> list[str]:
        return list(dict.fromkeys(self.prefixes + self.site_packages))


def _both(paths: Iterable[str]) -> tuple[str, ...]:
    out: list[str] = []
    for p in paths:
        out += [os.path.normpath(os.path.abspath(p)), os.path.realpath(p)]
    return tuple(dict.fromkeys(out))


def environment_of(target: Target) -> Environment:
    roots = environment_roots(target)
    bins = [target.bin_dir] if target.bin_dir else []
    # a venv's bin/, and a bare site-packages' prefix's (<prefix>/lib/pythonX.Y/site-packages)
    bins += [os.path.join(r, "bin") for r in roots if r not in target.site_packages]
    return Environment(prefixes=_both(roots), programs=_both([*dict.fromkeys(bins), *target.site_packages]),
                       site_packages=_both(target.site_packages))


def inside(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def is_python(path: str) -> bool:
    return os.path.basename(path).startswith("python")


def _script_or_module(argv: tuple[str, ...]) -> tuple[str | None, str | None]:
    """A python command line's script or ``-m`` module (what the interpreter runs), read as data."""
    k = 1
    while k < len(argv):
        arg = argv[k]
        if arg == "-m" or (arg.startswith("-m") and not arg.startswith("--")):
            return None, (argv[k + 1] if arg == "-m" and k + 1 < len(argv) else arg[2:]) or None
        if arg == "-c" or (arg.startswith("-c") and not arg.startswith("--")) or arg in ("-", "--"):
            return None, None
        if arg in _OPTIONS_WITH_VALUE:
            k += 2
            continue
        if arg.startswith("-"):
            k += 1
            continue
        return arg, None
    return None, None


def tie_of(entry: ProcEntry, env: Environment) -> tuple[Tie, str | None]:
    """How ``entry`` runs the environment, and the module it runs with ``-m``."""
    argv = entry.argv
    first = os.path.normpath(argv[0]) if argv and os.path.isabs(argv[0]) else None
    script, module = _script_or_module(argv) if argv and is_python(argv[0]) else (None, None)
    ours = first is not None and inside(first, env.programs)
    if module is not None and ours:
        return Tie.MODULE, module
    if script is not None and os.path.isabs(script) and inside(os.path.normpath(script), env.programs):
        return Tie.SCRIPT, None
    if ours:
        return Tie.EXECUTABLE, None
    if entry.maps and any(inside(m.path, env.prefixes) for m in entry.maps):
        return Tie.MAPS, None
    return Tie.NONE, None


class ChangedFiles:
    """The environment's code files (.py, .so, sourceless .pyc) by ctime, walked once, bounded.

    A .pyc in __pycache__ is left out: a process writes it itself when it imports a module whose
    cache is missing, which is no new code."""

    def __init__(self, env: Environment, limit: int = WALK_FILES) -> None:
        self.times: list[int] = []
        self.paths: list[str] = []
        self.looked = 0
        self.truncated = False
        found: list[tuple[int, str]] = []
        seen: set[str] = set()
        for site in env.site_packages:
            real = os.path.realpath(site)
            if real in seen or not os.path.isdir(real):
                continue
            seen.add(real)
            for dirpath, _dirs, files in walk(site):
                cache = os.path.basename(dirpath) == "__pycache__"
                for name in files:
                    self.looked += 1
                    if self.looked > limit:
                        self.truncated = True
                        break
                    if not (name.endswith((".py", ".so")) or ".so." in name or (name.endswith(".pyc") and not cache)):
                        continue
                    path = os.path.join(dirpath, name)
                    try:
                        found.append((os.lstat(path).st_ctime_ns, path))
                    except OSError:
                        continue
                if self.truncated:
                    break
            if self.truncated:
                break
        found.sort()
        self.times = [t for t, _ in found]
        self.paths = [p for _, p in found]

    def after(self, ns: int) -> list[str]:
        """The files changed after ``ns`` (ctime, nanoseconds since the epoch), newest first."""
        return self.paths[bisect.bisect_right(self.times, ns):][::-1]


def _view(entry: ProcEntry, path: str) -> str:
    """``path`` as the process sees it: through /proc/PID/root when it has its own mount namespace
    (asked only for paths inside the environment)."""
    return f"{PROC}/{entry.pid}/root{path}" if entry.other_mount_ns else path


def _same_tree(entry: ProcEntry, env: Environment) -> bool | None:
    """Whether a process in another mount namespace sees the environment's directory as we do
    (the same device and inode): None when that is not visible to us."""
    for prefix in env.prefixes[:1]:
        prefix = os.path.realpath(prefix)  # no link of ours followed inside its root
        try:
            theirs = os.lstat(_view(entry, prefix))
            ours = os.lstat(prefix)
        except OSError as exc:
            return None if exc.errno in (errno.EACCES, errno.EPERM) else False
        return (theirs.st_dev, theirs.st_ino) == (ours.st_dev, ours.st_ino)
    return False


def _mapped_evidence(entry: ProcEntry, env: Environment) -> list[EvidenceOut]:
    deleted: list[str] = []
    replaced: list[str] = []
    for m in entry.maps or ():
        if not inside(m.path, env.prefixes):
            continue
        try:
            # maps names the file by its resolved path: nothing to follow (in another mount
            # namespace, an absolute link would be followed from our root, not the process's)
            st = os.lstat(_view(entry, m.path))
        except FileNotFoundError:
            deleted.append(m.path)
            continue
        except OSError:
            continue
        # The kernel marks a mapped inode no path names any more "(deleted)": a file replaced by
        # rename (as installers do) reads so too, while its path names the new file. Another
        # device (an overlay's upper or lower layer) says nothing either way: ctime decides then.
        if m.deleted or (st.st_dev == m.dev and st.st_ino != m.inode):
            replaced.append(m.path)
    out = []
    for reason, files in (("deleted", deleted), ("replaced", replaced)):
        files = sorted(set(files))
        if files:
            out.append(EvidenceOut(strength=Strength.EXACT, source=Source.MAPS, reason=reason,
                                   files=files[:FILES_SHOWN], count=len(files)))
    return out


class Recorder(Protocol):
    """Where exact evidence of what a process imported comes from (``procs/recorded.py`` reads
    ``driftscan.runtime``'s record files): its evidence (``Source.RECORDER``) comes first, before
    what maps and ctimes say."""

    def evidence(self, entry: ProcEntry, started_at: float, env: Environment) -> list[EvidenceOut]: ...


_ORDER = {(Strength.EXACT, Source.RECORDER): 0, (Strength.EXACT, Source.MAPS): 1, (Strength.LIKELY, Source.RECORDER): 2,
          (Strength.LIKELY, Source.MAPS): 3, (Strength.EXACT, Source.CTIME): 4, (Strength.LIKELY, Source.CTIME): 5}


class _Users:
    def __init__(self) -> None:
        self.names: dict[int | None, str] = {None: "?"}

    def __call__(self, uid: int | None) -> str:
        name = self.names.get(uid)
        if name is None:
            assert uid is not None
            try:
                name = pwd.getpwuid(uid).pw_name
            except KeyError:
                name = str(uid)
            self.names[uid] = name
        return name


def _evidence(entry: ProcEntry, env: Environment, started_at: float, tick: float, changed: ChangedFiles,
              recorder: Recorder | None) -> list[EvidenceOut]:
    """What says ``entry`` (started at ``started_at``) runs old code, strongest first."""
    evidence = (recorder.evidence(entry, started_at, env) if recorder is not None else []) \
        + _mapped_evidence(entry, env)
    # start_ticks is truncated to the tick: a file written in the tick the process started in may
    # look later than it; two ticks' margin.
    files = changed.after(int((started_at + 2 * tick) * 1e9))
    if files:
        evidence.append(EvidenceOut(strength=Strength.LIKELY, source=Source.CTIME, reason="changed-after-start",
                                    files=files[:FILES_SHOWN], count=len(files)))
    return sorted(evidence, key=lambda e: _ORDER[(e.strength, e.source)])


def _command(argv: tuple[str, ...]) -> str:
    text = " ".join(argv)
    return text if len(text) <= COMMAND_LIMIT else text[:COMMAND_LIMIT - 1] + "…"


def scan(env: Environment, *, all_python: bool = False, proc: str = PROC, skip: Iterable[int] = (),
         recorder: Recorder | None = None) -> ProcsReport:
    """Every process /proc shows that runs ``env`` (``all_python``: every Python process, those
    not tied marked ``none``), with its evidence, strongest first. ``skip``: pids left out
    (driftscan's own always is); ``recorder``: where exact evidence of imports comes from, if any."""
    skipped = {os.getpid(), *skip}
    own_ns = own_mount_ns(proc)
    boot, ticks = boot_time(), clock_ticks()
    wanted = tuple(p.encode() for p in env.prefixes) or None
    users = _Users()
    changed: ChangedFiles | None = None
    processes: list[ProcessOut] = []
    hidden: list[HiddenOut] = []
    exited = scanned = 0
    for pid in sorted(pids(proc)):
        if pid in skipped:
            continue
        scanned += 1
        try:
            entry = read_entry(pid, proc=proc, own_ns=own_ns, maps_wanted=wanted)
        except Gone:
            exited += 1
            continue
        if not entry.argv:
            continue  # a kernel thread
        tie, module = tie_of(entry, env)
        not_checked: list[str] = []
        if entry.maps is None:
            not_checked.append(f"its mapped files: {NOT_VISIBLE}")
        elif entry.maps_truncated:
            not_checked.append("its mapped files past the first 16 MiB or 200,000 lines of /proc/PID/maps")
        if tie is not Tie.NONE and entry.other_mount_ns:
            same = _same_tree(entry, env)
            if same is None:
                not_checked.append(f"its view of the environment (another mount namespace): {NOT_VISIBLE}")
            elif not same:
                tie = Tie.NONE  # the same path names another directory in its namespace
        python = is_python(entry.exe or (entry.argv[0] if entry.argv else ""))
        if tie is Tie.NONE:
            if python and entry.maps is None:
                hidden.append(HiddenOut(pid=pid, user=users(entry.uid), command=_command(entry.argv),
                                        reason=f"its mapped files are {NOT_VISIBLE}"))
                continue
            if not (all_python and python):
                continue
        started_at = boot + entry.start_ticks / ticks
        evidence: list[EvidenceOut] = []
        if tie is not Tie.NONE:
            changed = changed or ChangedFiles(env)  # walked once, when a first process runs the environment
            evidence = _evidence(entry, env, started_at, 1 / ticks, changed, recorder)
        if tie is Tie.NONE and entry.argv and not os.path.isabs(entry.argv[0]) and "/" in entry.argv[0]:
            not_checked.append("started by a relative path: never resolved against its working directory, so "
                               "only its mapped files could tie it to the environment")
        place: WhereOut = where(entry.cgroup, entry.argv, bool(entry.other_mount_ns))
        stale = bool(evidence)
        command = _command(entry.argv)
        processes.append(ProcessOut(
            pid=pid, user=users(entry.uid), uid=entry.uid,
            started=datetime.datetime.fromtimestamp(started_at, datetime.timezone.utc).isoformat(timespec="seconds"),
            started_at=round(started_at, 2), command=command, tie=tie,
            module=module if tie is Tie.MODULE else None, where=place, stale=stale,
            evidence=evidence, remedy=remedy(place, pid, entry.argv) if stale else None,
            argv=list(entry.argv), not_checked=not_checked))
    restart = list(dict.fromkeys(p.remedy for p in processes if p.remedy))
    summary = ProcsSummary(scanned=scanned, running=sum(p.tie is not Tie.NONE for p in processes),
                           stale=sum(p.stale for p in processes), exited=exited, hidden=len(hidden),
                           files_walked=changed.looked if changed else 0,
                           walk_truncated=changed.truncated if changed else False)
    errors = [f"the walk of the environment's files stopped after {WALK_FILES} names"] if summary.walk_truncated else []
    return ProcsReport(environment=env.shown, processes=processes, hidden=hidden, restart=restart, summary=summary,
                       errors=errors)
