"""Pure decisions of ``driftscan guard``: the predictions for a recognised command, the reasons to
refuse it, whether a checkpoint is whole, and — after the command — what happened to each drift.

Files are only looked at (lstat, and the content of drifted files hashed through ``fileio``,
never following a symlink); nothing here writes or runs anything.
"""

from __future__ import annotations

import os
import shlex
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..checkpoint import CheckpointIndex
from ...environment.reinstall_source import Relink, cache_entry, refetched, sync_relink
from ...pipeline.classify import uv_cache_clean, uv_cache_prune
from ...core.errors import DriftscanError, TargetError
from ...fs.reader import open_regular, os_error
from ...lint.artifacts import recheck
from ...core.values import Distribution, DriftKind, Origin, Scope
from ...core.values import Verdict
from ...core.units import count
from ..plan import Plan, PlanItem
from ...report.contract import DriftOut, Report
from ...environment.content import record_digest
from .command import Change, Recognised, Tool, normalize
from .model import (GuardCheckpoint, GuardExpectation, GuardPrediction, GuardReport, LeftArchive, LeftDump,
                    Leftovers, NewDrift, Outcome, Refusal, VersionMove)
from ...environment.uv.archives import audit_archives

HASH_MAX = 256 << 20  # a drifted file bigger than this is compared by size, mtime and inode
DEBUG_ARTIFACTS = DriftKind.DEBUG_ARTIFACTS.value


# ------------------------------------------------------------------------------ predictions

@dataclass(frozen=True)
class Predicted:
    item: PlanItem
    status: Verdict
    reason: str


def installed_versions(report: Report) -> dict[str, str]:
    return {normalize(d.name): d.version for d in report.distributions or []}


def reinstalled(command: Recognised, installed: dict[str, str]) -> tuple[list[str], list[str]]:
    """(installed distributions the command reinstalls for certain, those it may reinstall)."""
    if command.reinstall_all:
        return sorted(installed), []
    sure: list[str] = []
    maybe: list[str] = []
    for name in sorted(command.names() | (set(installed) if command.exact else set())):
        if name not in installed:
            continue
        change = command.change(name, installed[name])
        (sure if change is Change.REINSTALL else maybe if change is Change.MAYBE else []).append(name)
    return sure, maybe


def _uv_link(drift: DriftOut | None) -> dict[str, Any] | None:
    link = drift.actual.get("uv_cache") if drift is not None else None
    return link if isinstance(link, dict) else None


def predict(plan: Plan, command: Recognised, sure: Sequence[str], maybe: Sequence[str],
            from_given: bool) -> list[Predicted]:
    """The plan's statuses, made honest for what guard knows about the command."""
    drifts = {d.path: d for d in plan.audit.drifts}
    out = []
    others_may_change = (command.forced and not command.no_deps and command.tool in (Tool.PIP, Tool.UV_PIP)) \
        or bool(command.unnamed) or (command.tool is Tool.UV_SYNC and not command.exact) \
        or (command.tool is Tool.PIXI and command.upgrade)
    for item in plan.items:
        # guard runs the command alone, not the plan's steps (its uv cache clean) before it
        status = item.status_without_steps or item.status
        reason = item.reason_without_steps or item.reason
        dist = normalize(item.distribution) if item.distribution else None
        drift = drifts.get(item.path)
        if not command.recognised:
            before = status.value.lower()
            status, reason = Verdict.MAY_SURVIVE, ("guard does not know what this command changes (a reinstall of "
                                                   f"its distribution: {before}, {reason})")
        elif dist in maybe and status is Verdict.WIPED:
            status, reason = Verdict.MAY_SURVIVE, (f"wiped if the command reinstalls {item.distribution} (it may "
                                                   f"find nothing to do): {reason}")
        elif dist is not None and dist not in sure and dist not in maybe and item.scope == "package" \
                and status is Verdict.SURVIVES and others_may_change:
            why = ("the command installs requirements guard cannot name" if command.unnamed else
                   "uv sync changes what its lock file says" if command.tool is Tool.UV_SYNC else
                   "without --no-deps, the dependencies are reinstalled too")
            status, reason = Verdict.MAY_SURVIVE, f"{why}; if {item.distribution} is among them it is wiped"
        elif dist in sure and command.no_cache and command.tool in (Tool.UV_PIP, Tool.UV_SYNC) \
                and _uv_link(drift) and status in (Verdict.SURVIVES, Verdict.MAY_SURVIVE) \
                and item.kind == "modified":
            status, reason = Verdict.WIPED, ("uv --no-cache unpacks the wheel afresh into a temporary cache: the "
                                             "edited copy in uv's cache is not linked back")
        elif dist in sure and not from_given and command.tool is Tool.UV_SYNC and item.kind == "modified" \
                and (synced := _sync_outcome(drift, command)) is not None:
            status, reason = synced
        elif dist in sure and not from_given and command.source is None and command.source_why == "several sources" \
                and _uv_link(drift) and status is Verdict.SURVIVES:
            status, reason = Verdict.MAY_SURVIVE, ("the command installs from several sources; from a wheel file "
                                                   "uv unpacks afresh (wiped), from its cache it links the edit back: "
                                                   f"{reason}")
        out.append(Predicted(item, status, reason))
    return out


def _locked_version(command: Recognised, name: str) -> str | None:
    return next((r.version for r in command.requested if r.name == normalize(name) and r.version), None)


def _sync_outcome(drift: DriftOut | None, command: Recognised) -> tuple[Verdict, str] | None:
    """What ``uv sync`` that reinstalls a distribution does to a file of it hard-linked to an edited
    archive of uv's cache: (status, reason), or None when not known here."""
    link = _uv_link(drift)
    copy, cache_dir = (link.get("copy"), link.get("dir")) if link else (None, None)
    if drift is None or drift.distribution is None or not isinstance(copy, str) or not isinstance(cache_dir, str):
        return None
    locked = _locked_version(command, drift.distribution.name)
    if command.exact and locked is None and normalize(drift.distribution.name) not in {r.name for r in
                                                                                      command.requested}:
        return Verdict.WIPED, "uv sync removes it: the lock file does not list it"
    if locked is not None and locked != drift.distribution.version:
        return Verdict.WIPED, (f"uv sync installs {drift.distribution.name} {locked} from the lock file: the files of "
                       f"another archive replace this one")
    entry = cache_entry(cache_dir, copy, drift.distribution.name)
    if entry is None:
        return None
    outcome, why = sync_relink(entry, command.offline)
    return (Verdict.SURVIVES if outcome is Relink.RELINKS else Verdict.WIPED), why


def debug_comes_back(predicted: Sequence[Predicted], plan: Plan, sure: Sequence[str], command: Recognised,
                     uv_cache: str | None) -> list[Refusal]:
    """A drift carrying debug code (injected, or of unknown origin) that the reinstall links back from
    uv's edited cache: the command would bring it back. One refusal per distribution, with its
    ``uv cache clean`` line."""
    if command.tool not in (Tool.UV_PIP, Tool.UV_SYNC):
        return []
    drifts = {d.path: d for d in plan.audit.drifts}
    found: dict[str, tuple[DriftOut, list[str]]] = {}
    for p in predicted:
        drift = drifts.get(p.item.path)
        link = _uv_link(drift)
        if drift is None or link is None or drift.distribution is None \
                or p.status not in (Verdict.SURVIVES, Verdict.MAY_SURVIVE):
            continue
        if normalize(drift.distribution.name) not in sure:
            continue
        debug = [f for f in drift.findings if f.origin is not Origin.UPSTREAM]
        if not debug:
            continue
        key = drift.distribution.name
        found.setdefault(key, (drift, []))[1].append(f"{drift.relpath} ({', '.join(sorted({f.code for f in debug}))})")
    out = _edited_archives(predicted, drifts, sure, command, set(found), plan)
    for name, (drift, files) in sorted(found.items()):
        assert drift.distribution is not None
        dist = Distribution(name=drift.distribution.name, version=drift.distribution.version, metadata_dir="",
                            site_packages="")
        link = _uv_link(drift)  # found holds only drifts with one
        cache_dir = (link.get("dir") if link else None) or uv_cache
        out.append(Refusal(reason=(f"the command would bring debug code back: uv links {name}'s edited cache copy "
                                   f"back ({'; '.join(files)}); clean it from uv's cache first"),
                           command=uv_cache_clean(dist, cache_dir if isinstance(cache_dir, str) else None)))
    return out


def _edited_archives(predicted: Sequence[Predicted], drifts: dict[str, DriftOut], sure: Sequence[str], command: Recognised,
                     named: set[str], plan: Plan) -> list[Refusal]:
    """Edited archives of uv's cache (the cache audit's drifts) of a distribution the command
    reinstalls, whose edited modules hold debug code: an install from the source they were
    unpacked for links them into the venv, even one whose own files are clean. A wheel file as the
    source is unpacked afresh (docs/reinstall-matrix.md), so it is not refused here."""
    if command.no_cache or (command.source or "").endswith(".whl"):
        return []
    from ...lint.scan import scan_paths  # deferred: libcst, 294 ms measured; only when an edited archive is there

    out = []
    for p in predicted:
        drift = drifts.get(p.item.path)
        if drift is None or drift.kind.value != "cache-modified" or drift.distribution is None:
            continue
        name = drift.distribution.name
        if normalize(name) not in sure or name in named or p.status not in (Verdict.SURVIVES, Verdict.MAY_SURVIVE):
            continue
        entries = [e for e in (drift.actual or {}).get("index_entries") or () if isinstance(e, str)]
        if refetched(entries, command.offline):
            continue  # uv fetches the wheel again into a new archive: this one is not linked
        installs = _locked_version(command, name) or next(
            (d.version for d in plan.audit.distributions or [] if normalize(d.name) == normalize(name)), None)
        if installs is not None and installs != drift.distribution.version:
            continue  # the archive of another version: not what the command installs
        edited = (drift.actual or {}).get("edited") or []
        modules = [os.path.join(drift.path, e["path"]) for e in edited
                   if isinstance(e, dict) and isinstance(e.get("path"), str) and e["path"].endswith(".py")
                   and ".." not in e["path"].split("/") and not e["path"].startswith("/")]
        if not modules:
            continue
        try:
            result = scan_paths(modules, jobs=1)
        except DriftscanError:
            continue
        hits = sorted({f"{os.path.relpath(path, drift.path)} ({f.code})" for path, f in result.findings})
        if not hits:
            continue
        dist = Distribution(name=name, version=drift.distribution.version, metadata_dir="", site_packages="")
        out.append(Refusal(reason=(f"the command may bring debug code back: uv's cache holds an edited archive of "
                                   f"{name} ({'; '.join(hits)}), and uv links it into the venv when it installs "
                                   "from the source it was unpacked for; clean it from uv's cache first"),
                           command=uv_cache_clean(dist, os.path.dirname(os.path.dirname(drift.path)))))
    return out


@dataclass(frozen=True)
class MissingSource:
    word: str  # as the command wrote it
    why: str
    wheel: bool  # a wheel file (else a --find-links directory)


def missing_source(command: Recognised, argv: Sequence[str], cwd: str | None) -> MissingSource | None:
    """The wheel file or local --find-links directory the command installs from, when it is not
    there, named as the command wrote it."""
    source = command.source
    if not source or source == "index":
        return None
    try:
        os.stat(source)
        return None
    except OSError as exc:
        why = os_error(exc)
    base = cwd or os.getcwd()
    said = [w.partition("=")[2] if w.startswith("--") and "=" in w else w for w in argv]
    word = next((w for w in said if w and os.path.abspath(os.path.join(base, w)) == source), source)
    return MissingSource(word, why, any(r.wheel == source for r in command.requested))


def other_environment(command: Recognised, target_root: str | None) -> Refusal | None:
    """The command installs into another environment than the one guard audits, or guard cannot
    tell for certain which one it installs into (protect the work: refuse unless --force)."""
    if command.environment_unsure and command.tool in (Tool.PIP, Tool.UV_PIP, Tool.UV_SYNC):
        return Refusal(reason=(f"guard cannot tell for certain which environment the command installs into "
                               f"({command.environment_unsure}): the predictions may be for the wrong environment; "
                               "pass --force to run it anyway"), command=None)
    if command.environment is None or target_root is None:
        return None
    if os.path.realpath(command.environment) == os.path.realpath(target_root):
        return None
    return Refusal(reason=(f"the command installs into {command.environment} ({command.environment_why}), but "
                           f"guard audits {target_root}: the predictions would be for the wrong environment"),
                   command=f"driftscan guard --venv {shlex.quote(command.environment)} -- …")


# ------------------------------------------------------------------------------ checkpoint

def checkpoint_summary(path: str, index: CheckpointIndex, problems: Sequence[str],
                       predicted: Sequence[Predicted] = ()) -> GuardCheckpoint:
    """Whether the checkpoint holds every edited byte, and how to complete it when it does not;
    ``at_risk``: the files it lacks that the command may wipe (``predicted`` not to survive it)."""
    lacking = [f for f in index.files if f.in_env and f.scope is Scope.PACKAGE and f.kind is DriftKind.MODIFIED
               and not f.patch and not f.original]
    not_saved = [f"{f.relpath}: {f.not_copied}" for f in index.files if f.not_copied]
    surviving = {p.item.path for p in predicted if p.status is Verdict.SURVIVES}
    at_risk = [f.relpath for f in index.files if (f in lacking or f.not_copied) and f.path not in surviving]
    complete = []
    if lacking:
        wanted = sorted({(f.distribution or "?", f.version or "?") for f in lacking})
        specs = " ".join(shlex.quote(f"{n}=={v}") for n, v in wanted)
        complete.append(f"pip download --no-deps --only-binary :all: --dest WHEELS {specs}")
        complete.append("then run guard again with --wheels WHEELS (or with --fetch, which runs that download "
                        "itself)")
    if not_saved:
        complete.append("files over --max-copy are not saved; raise it (--max-copy BYTES) to save them")
    return GuardCheckpoint(path=path, files=len(index.files), patches=sum(1 for f in index.files if f.patch),
                           partial=bool(lacking or not_saved), without_original=[f.relpath for f in lacking],
                           not_saved=not_saved + [p for p in problems if p not in not_saved],
                           at_risk=at_risk, complete_with=complete)


def reapply_line(checkpoint: str, index: CheckpointIndex, target_venv: str | None,
                 site_packages: Sequence[str], yes: bool = True) -> str | None:
    """``driftscan reapply CP --venv V --yes`` (debug code left out by default) when the checkpoint
    holds work to bring back; without ``yes``, its dry run."""
    if not any(f.patch for f in index.files):
        return None
    where = f" --venv {shlex.quote(target_venv)}" if target_venv else "".join(
        f" --site-packages {shlex.quote(s)}" for s in site_packages)
    return f"driftscan reapply {shlex.quote(checkpoint)}{where}" + (" --yes" if yes else "")


# ------------------------------------------------------------------------------ what happened

@dataclass(frozen=True)
class Fingerprint:
    """What a path held at one moment: type, and a digest (or size, mtime and inode for a big file)."""

    type: str  # absent | file | symlink | dir | other | error
    value: str = ""

    @property
    def exists(self) -> bool:
        return self.type not in ("absent", "error")


def fingerprint(path: str, root: str | None = None) -> Fingerprint:
    """``root``: a symlink is also hashed through, when what it leads to is a regular file inside
    ``root`` (a hub snapshot's link to its blob: an edit through the link changes the blob)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return Fingerprint("absent")
    except OSError as exc:
        return Fingerprint("error", os_error(exc))
    if stat.S_ISLNK(st.st_mode):
        try:
            link = os.readlink(path)
        except OSError as exc:
            return Fingerprint("error", os_error(exc))
        through = ""
        if root is not None:
            try:
                fd, fst = open_regular(path, follow=True, root=root)
            except OSError:
                pass  # dangling, outside the root, or not a file: the link's own target says it
            else:
                try:
                    through = " -> " + (record_digest(fd, fst.st_size) if fst.st_size <= HASH_MAX else
                                        f"size={fst.st_size} mtime={fst.st_mtime_ns} ino={fst.st_ino}")
                except OSError:
                    pass
                finally:
                    os.close(fd)
        return Fingerprint("symlink", link + through)
    if stat.S_ISDIR(st.st_mode):
        return Fingerprint("dir")
    if not stat.S_ISREG(st.st_mode):
        return Fingerprint("other", stat.filemode(st.st_mode))
    if st.st_size > HASH_MAX:
        return Fingerprint("file", f"size={st.st_size} mtime={st.st_mtime_ns} ino={st.st_ino}")
    try:
        fd, fst = open_regular(path, follow=False)
    except OSError as exc:
        return Fingerprint("error", os_error(exc))
    try:
        return Fingerprint("file", record_digest(fd, fst.st_size))
    except OSError as exc:
        return Fingerprint("error", os_error(exc))
    finally:
        os.close(fd)


def dump_files(drift: DriftOut) -> tuple[str, ...] | None:
    """The files a dump drift lists — its dumps, or its possible dumps (found through the code, or
    recorded by a checkpoint) —; None for any other drift. A dump drift's path is its pattern, no
    file: what happened to the dumps is only ever said from these files."""
    if drift.kind is DriftKind.DEBUG_ARTIFACTS:
        return tuple(drift.artifacts)
    if drift.kind is DriftKind.POSSIBLE_DEBUG_ARTIFACTS:
        listed = (drift.actual or {}).get("possible_artifacts")
        return tuple(p for p in listed if isinstance(p, str)) if isinstance(listed, list) else ()
    return None


def fingerprints(predicted: Iterable[Predicted], plan: Plan) -> dict[str, Fingerprint | tuple[str, ...]]:
    """Before the command: every drifted path's fingerprint; for a dump drift (of either kind), the
    dump files that exist."""
    drifts = {d.path: d for d in plan.audit.drifts}
    out: dict[str, Fingerprint | tuple[str, ...]] = {}
    for p in predicted:
        drift = drifts.get(p.item.path)
        files = dump_files(drift) if drift is not None else None
        if files is not None:
            out[p.item.path] = tuple(a for a in files if os.path.lexists(a))
        else:
            out[p.item.path] = fingerprint(p.item.path, _root(p.item))
    return out


def _root(item: PlanItem) -> str | None:
    """The directory an item's relpath is relative to."""
    tail = "/" + item.relpath
    return item.path[:-len(tail)] if item.path.endswith(tail) else None


def not_run(predicted: Iterable[Predicted]) -> list[GuardPrediction]:
    return [_prediction(p, Outcome.NOT_RUN, "the command was not run", None) for p in predicted]


def unchecked(predicted: Iterable[Predicted], why: str) -> list[GuardPrediction]:
    return [_prediction(p, Outcome.UNCHECKED, why, None) for p in predicted]


def _prediction(p: Predicted, outcome: Outcome, detail: str, held: bool | None) -> GuardPrediction:
    i = p.item
    return GuardPrediction(path=i.path, relpath=i.relpath, kind=i.kind, scope=i.scope, distribution=i.distribution,
                           prediction=p.status, reason=p.reason, outcome=outcome, detail=detail,
                           held=held)


def _held(status: Verdict, outcome: Outcome) -> bool | None:
    if outcome in (Outcome.UNCHECKED, Outcome.NOT_RUN):
        return None
    if status is Verdict.MAY_SURVIVE:
        return True
    if status is Verdict.WIPED:
        return outcome is Outcome.WIPED
    return outcome is Outcome.SURVIVED


def judge(predicted: Sequence[Predicted], before: dict[str, Fingerprint | tuple[str, ...]], after: Report,
          judged: bool) -> list[GuardPrediction]:
    """Each prediction against the files after the command. ``judged``: the command succeeded
    (after a failed command, what happened is said, and no prediction is held to it)."""
    after_drifts = {d.path: d for d in after.drifts}
    errors = {e.path for e in after.errors}
    out = []
    for p in predicted:
        path = p.item.path
        was = before.get(path)
        # Dumps (and possible dumps): each listed file, by lstat, whatever the audit after finds — the
        # code that named them may be gone or edited, or name another tree (a cp -a copy of a venv).
        if isinstance(was, tuple):
            still = [a for a in was if os.path.lexists(a)]
            if not was:
                outcome, detail = Outcome.UNCHECKED, "no dump file was there before the command"
            elif len(still) == len(was):
                outcome, detail = Outcome.SURVIVED, f"all {count(len(was), 'dump file')} still there"
            elif not still:
                outcome, detail = Outcome.WIPED, f"all {count(len(was), 'dump file')} gone"
            else:
                outcome, detail = Outcome.CHANGED, f"{len(still)} of {count(len(was), 'dump file')} still there"
        elif p.item.kind == "cache-modified":
            outcome, detail = _archive_now(path)
        else:
            now = fingerprint(path, _root(p.item))
            assert isinstance(was, Fingerprint)
            if was.type == "error" or now.type == "error":
                outcome, detail = Outcome.UNCHECKED, f"cannot read it: {now.value or was.value}"
            elif path in errors:
                outcome, detail = Outcome.UNCHECKED, "the audit after the command could not check it"
            elif path in after_drifts:
                same = now == was
                outcome = Outcome.SURVIVED if same else Outcome.CHANGED
                detail = ("still drifted, the same content" if same else
                          f"still drifted ({after_drifts[path].kind.value}), other content than before")
            elif now.exists and now == was and p.item.kind == "added":
                # no longer a drift (a RECORD now lists it), with the same content: it survived
                outcome, detail = Outcome.SURVIVED, "the same content; a RECORD lists it now"
            else:
                outcome = Outcome.WIPED
                detail = "absent, as its reference says" if not now.exists else "matches its reference again"
        out.append(_prediction(p, outcome, detail, _held(p.status, outcome) if judged else None))
    return out


def _archive_now(archive: str) -> tuple[Outcome, str]:
    """An edited archive of uv's cache judged by its content after the command: checked again
    against its own RECORD (whether or not the audit after the command still looked at it: uv may
    have repointed its index to a new archive and left this one, edited, in the cache)."""
    if not os.path.lexists(archive):
        return Outcome.WIPED, "removed from uv's cache"
    found = audit_archives(os.path.dirname(os.path.dirname(archive)), [archive])
    if found.errors:
        return Outcome.UNCHECKED, f"cannot check it: {found.errors[0].message}"
    if not found.checks:
        return Outcome.WIPED, "matches its own RECORD again"
    edited = found.checks[0].actual.get("edited") or []
    return Outcome.SURVIVED, (f"still edited: {count(len(edited), 'file')} {'differs' if len(edited) == 1 else 'differ'} from its own RECORD (an install from the "
                              "source it was unpacked for links them)")


def new_drifts(before: Report, after: Report) -> list[NewDrift]:
    known = {d.path for d in before.drifts}
    return [NewDrift(path=d.path, relpath=d.relpath, kind=d.kind.value, scope=d.scope.value,
                     distribution=d.distribution.name if d.distribution else None,
                     findings=sum(1 for f in d.findings if f.origin is not Origin.UPSTREAM), evidence=d.evidence)
            for d in after.drifts if d.path not in known]


def versions(before: Report, after: Report, asked: set[str]) -> list[VersionMove]:
    old, new = installed_versions(before), installed_versions(after)
    names = {n: d.name for d in (before.distributions or []) + (after.distributions or []) for n in [normalize(d.name)]}
    return [VersionMove(name=names[n], before=old.get(n), after=new.get(n), asked=n in asked)
            for n in sorted(set(old) | set(new)) if old.get(n) != new.get(n)]


def _archive_of(copy: str) -> str | None:
    parts = copy.split(os.sep)
    for i, part in enumerate(parts[:-1]):
        if part.startswith("archive-v"):
            return os.sep.join(parts[:i + 2])
    return None


def leftovers(plan: Plan, after: Report, uv_cache: str | None) -> Leftovers:
    """What is left on disk after the command: the dumps and possible dumps listed before, uv's
    edited cache copies, files no RECORD lists."""
    left = Leftovers()
    for drift in plan.audit.drifts:
        files = dump_files(drift)
        if files:
            # Re-checked by the rules the audit applied to each file (the code that wrote them may be
            # gone): a listed path that is now a link, executable or owned is no dump to remove.
            group = recheck(files)
            still = list(group.paths)
            if still:
                left.dumps.append(LeftDump(pattern=drift.path, files=still, gone=len(files) - len(still),
                                           bytes=group.total_bytes, remedy=drift.remedy or None,
                                           possible=drift.kind is DriftKind.POSSIBLE_DEBUG_ARTIFACTS))
    seen: set[str] = set()
    for drift in [*plan.audit.drifts, *after.drifts]:
        link = _uv_link(drift)
        copy = link.get("copy") if link else None
        if not isinstance(copy, str) or copy in seen or drift.distribution is None:
            continue
        seen.add(copy)
        expected = drift.expected.get("hash")
        now = fingerprint(copy)
        if not now.exists or (isinstance(expected, str) and now.value == expected):
            continue  # cleaned, or back to what RECORD says
        dist = Distribution(name=drift.distribution.name, version=drift.distribution.version, metadata_dir="",
                            site_packages="")
        cache_dir = link.get("dir") if link else None
        cache_dir = cache_dir if isinstance(cache_dir, str) else uv_cache
        # No index entry names the archive any more (uv fetched the wheel again into a new one):
        # `uv cache clean NAME` leaves it, `uv cache prune` removes it.
        indexed = cache_entry(cache_dir, copy, drift.distribution.name) is not None
        left.uv_cache.append(LeftArchive(distribution=drift.distribution.name, relpath=drift.relpath, edited_copy=copy,
                                         archive=_archive_of(copy),
                                         command=uv_cache_clean(dist, cache_dir) if indexed
                                         else uv_cache_prune(cache_dir)))
    left.added = sorted(d.path for d in after.drifts if d.kind.value in ("added", "startup-code"))
    return left


def expectations(plan: Plan, after: Sequence[tuple[bool | None, str]], judged: bool,
                 predicted: Sequence[Predicted] = (), recognised: bool = True) -> list[GuardExpectation]:
    """Each expectation now, as predicted for after the command, and after it (``after``: (holds, why)
    per expectation, in order). A file whose drift guard made MAY SURVIVE (or any file, around a
    command guard does not recognise) has no predicted state after."""
    uncertain = {os.path.normpath(p.item.path) for p in predicted
                 if p.status is Verdict.MAY_SURVIVE and p.item.status is not Verdict.MAY_SURVIVE}
    out = []
    for e, (holds, why) in zip(plan.expectations, after):
        predicted_after, reason = e.holds_after, e.reason
        if not recognised or os.path.normpath(e.file) in uncertain:
            predicted_after = None
            reason += ("; but guard does not know what this command changes" if not recognised
                       else "; but the command may or may not reinstall it")
        held = None if not judged or predicted_after is None or holds is None else predicted_after == holds
        out.append(GuardExpectation(name=e.name, file=e.file, check=e.check, before=e.holds_now,
                                    predicted_after=predicted_after, after=holds, held=held,
                                    reason=f"before: {reason}; after: {why}"))
    return out


def summarise(report: GuardReport) -> None:
    s = report.summary
    s.predictions = len(report.predictions)
    s.held = sum(1 for p in report.predictions if p.held is True)
    s.failed = sum(1 for p in report.predictions if p.held is False)
    s.unjudged = sum(1 for p in report.predictions if p.held is None)
    s.unchecked = sum(1 for p in report.predictions if p.outcome is Outcome.UNCHECKED)


EXIT_FAILED_PREDICTION = 1
EXIT_INCOMPLETE = 2


def exit_status(report: GuardReport) -> int:
    """The command's own status when it ran and failed; else bit 1 when a prediction (or an
    expectation's) did not hold or the team's patches did not all apply (--reapply-patches), bit 2
    when guard refused to start it or could not check something."""
    if report.ran and report.exit_code:
        return report.exit_code
    status = 0
    if not report.ran:
        return EXIT_INCOMPLETE
    if report.summary.failed or any(e.held is False for e in report.expectations):
        status |= EXIT_FAILED_PREDICTION
    if report.summary.unchecked or report.errors:
        status |= EXIT_INCOMPLETE
    # patch apply's own bits (1: a conflict, an unused or refused patch; 2: not done): never silent
    return status | (report.patch_apply_exit or 0)


def valid_source(source: str) -> str:
    """``--from``: a wheel file, a directory of wheels, or ``index``, checked."""
    if source == "index":
        return source
    path = os.path.abspath(source)
    if source.endswith(".whl") and os.path.isfile(path):
        return path
    if os.path.isdir(path):
        return path
    raise TargetError(f"--from {source}: not a wheel file, a directory, or 'index'")


def command_source(recognised: Recognised, command: Sequence[str], cwd: str | None) -> tuple[str | None, str, str | None]:
    """(the source the command itself names, why, a note) — a wheel file it names that is missing is an
    error in the user's own words (the command would fail); a missing --find-links directory is
    ignored by pip and uv (with a warning), so the predictions are for the sources the
    distributions were installed from, and a note says so."""
    missing = missing_source(recognised, command, cwd)
    if missing is None:
        return recognised.source, recognised.source_why, None
    if missing.wheel:
        raise TargetError(f"the command's wheel file {missing.word}: {missing.why}; nothing was run (the command "
                          "would fail)")
    return None, "the command's --find-links directory is missing", (
        f"the command's --find-links directory {missing.word}: {missing.why} (pip and uv ignore it); the "
        "predictions are for the source each distribution was installed from")
