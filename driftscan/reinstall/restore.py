"""``driftscan restore``: put package-scope drift back to its verified original, file by file.

Only package scope is touched: a RECORD row of a selected distribution whose verified original
is at hand (``driftscan.pristine``). Each file is written as a new file next to it (a temporary
name, fsync, the original's mode bits) and renamed over the old one: a new inode, so a uv hard
link is broken instead of written through into uv's cache, and a kill at any moment leaves the
file either as it was or restored. The temporary name of the file in flight is journaled in
driftscan's own cache directory first, so the next restore removes what a killed one left (and
nothing else: the journal, not a name pattern from the tree, says what is driftscan's).
Environment, data, source and external drift is listed with how to handle it, never touched.
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
import stat
import time
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from ..caches.statcache import user_cache_dir
from ..environment.bytecode import remove_stale_after_write
from ..environment.target import environment_roots
from ..core.errors import ConfigError
from ..core.units import count, size
from ..fs.reader import inside, open_regular, os_error, read_pieces
from ..pipeline.changes import file_by_file, record_rows
from ..pipeline.classify import uv_cache_clean
from ..core.values import Distribution, Drift, DriftKind, FileCheck, MetadataKind, RecordEntry, Scope, Target
from ..fs.paths import printable, relpath
from .plan import normalize, select_distributions
from ..pristine import PristineCopy, PristineSet
from ..procs.model import RestartOut
from ..formats.record import new_hash
from ..report.contract import ErrorOut
from .checkpoint import CheckpointIndex, EntryType
from ..caches.location import below_cache, refuse_inside
from ..fs.confined import (append_below, lstat_below, open_dir, parts_of, read_below, rel_below, replace_below,
                           unlink_below)
from ..pristine.howto import ways_to_original, why_no_original

class Action(str, enum.Enum):
    """What restore does to one file (the word in the report's ``action``)."""

    REWRITE = "rewrite"  # modified or retyped
    RECREATE = "recreate"  # missing
    REMOVE = "remove"  # added, --remove-added


REWRITE, RECREATE, REMOVE = Action.REWRITE, Action.RECREATE, Action.REMOVE
_RESTORABLE = {DriftKind.MODIFIED, DriftKind.MISSING, DriftKind.TYPE_CHANGED}


class Status(str, enum.Enum):
    """What became of one action (the same word in the dry run and after ``--yes``, except
    planned → restored/removed)."""

    PLANNED = "planned"
    RESTORED = "restored"
    REMOVED = "removed"
    FAILED = "failed"
    NO_ORIGINAL = "no-original"  # no verified original of this very file: never touched
    UNSAVED = "unsaved"  # its content cannot be saved in the checkpoint: never touched


NOT_DONE = {Status.FAILED, Status.NO_ORIGINAL, Status.UNSAVED}


class RestoreAction(BaseModel):
    path: str
    relpath: str
    action: Action = Field(description="rewrite (modified or retyped) | recreate (missing) | remove (added, "
                                       "--remove-added)")
    kind: str
    distribution: str | None = None
    version: str | None = None
    source: str | None = Field(default=None, description="the pristine source the bytes come from")
    status: Status = Field(default=Status.PLANNED, description="planned | restored | removed | failed | no-original "
                                                              "(no verified original of this file: not touched) | "
                                                              "unsaved (its content cannot be saved in the "
                                                              "checkpoint: not touched)")
    error: str | None = None
    get_original: str | None = Field(default=None, description="no-original: how to get one (--wheels DIR, --fetch, "
                                                               "the pip download line)")
    creates: list[str] = Field(default_factory=list, description="directories written first (a recreated file's "
                                                                 "missing parents), outermost first")


class Remaining(BaseModel):
    path: str
    relpath: str
    kind: str
    scope: str
    distribution: str | None = None
    reason: str = Field(description="why restore leaves it, and how to handle it")


class RestoreReport(BaseModel):
    dry_run: bool
    checkpoint: str | None = None
    distributions: list[str] = Field(default_factory=list)
    actions: list[RestoreAction] = Field(default_factory=list)
    remaining: list[Remaining] = Field(default_factory=list)
    refused: list[Remaining] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    bytecode_not_removed: list[str] = Field(default_factory=list, description=(
        "bytecode files of a file written that Python may run instead of it and that could not be checked "
        "or removed (exit bit 2)"))
    errors: list[str] = Field(default_factory=list, description="what the audit behind the plan could not check")
    duration_seconds: float | None = None
    checkpoint_in: str | None = Field(default=None, description="dry run: where --yes writes its checkpoint first "
                                                                "(the --checkpoint path, or the directory a new one "
                                                                "is made in)")
    restart_needed: list[RestartOut] | None = Field(default=None, description=(
        "after the writes: the processes of the environment that still run the old code, each with what to "
        "restart (docs/procs.md); null when nothing was written or /proc could not be read (notes say why)"))

    @property
    def failed(self) -> list[RestoreAction]:
        return [a for a in self.actions if a.status is Status.FAILED]

    @property
    def not_done(self) -> list[RestoreAction]:
        """Actions asked for and not carried out (or, in a dry run, that would not be)."""
        return [a for a in self.actions if a.status in NOT_DONE]


@dataclass(frozen=True)
class Planned:
    action: RestoreAction
    path: str  # the real (possibly non-UTF-8) path
    entry: RecordEntry | None = None
    copy: PristineCopy | None = None


@dataclass
class RestorePlan:
    report: RestoreReport
    planned: list[Planned] = field(default_factory=list)
    roots: tuple[str, ...] = ()  # the environment the user named: every write stays below one of them


def _package_dirs(dist: Distribution, others: Sequence[Distribution]) -> list[str]:
    """The top-level package directories ``dist`` installs that no other distribution's RECORD
    reaches into (a shared namespace such as ``google/`` is nobody's own)."""
    def tops(d: Distribution) -> set[str]:
        out = set()
        for e in d.entries:
            top, sep, _ = e.path.partition("/")
            if sep and top not in ("", ".", "..", "__pycache__") and not top.endswith((".dist-info", ".data")):
                out.add(top)
        return out

    mine = tops(dist)
    for other in others:
        if other.metadata_dir != dist.metadata_dir and other.site_packages == dist.site_packages:
            mine -= tops(other)
    return sorted(os.path.join(dist.site_packages, t) for t in mine)


def _inside_any(path: str, roots: Sequence[str]) -> bool:
    # The parent's real location decides: the file itself may be a symlink restore replaces.
    parent = os.path.dirname(os.path.abspath(path))
    return any(inside(root, parent) for root in roots)


def _matches(paths: Sequence[str], check: FileCheck, env_root: str | None = None) -> bool:
    """A PATH names the file or a directory above it: absolute, or relative to its root
    (site-packages) or to the environment root (as checkpoints spell them)."""
    real = os.path.normpath(check.path)
    rels = [relpath(check.path, check.root)]
    if env_root and real.startswith(env_root.rstrip(os.sep) + os.sep):
        rels.append(os.path.relpath(real, env_root).replace(os.sep, "/"))
    for p in paths:
        if os.path.isabs(p):
            if real == p or real.startswith(p.rstrip(os.sep) + os.sep):
                return True
        elif any(r == p or r.startswith(p.rstrip("/") + "/") for r in rels):
            return True
    return False


def plan_restore(target: Target, drifts: Sequence[Drift], dists: Sequence[Distribution], originals: PristineSet,
                 names: Sequence[str] = (), paths: Sequence[str] = (), remove_added: bool = False) -> RestorePlan:
    """What restoring would do: the actions, what stays (with how to handle it), what is refused."""
    drifts = file_by_file(drifts)  # a directory's missing files are recreated one by one
    roots = environment_roots(target)
    refuse_inside(roots)  # its journal must not be written into the environment it restores
    chosen = select_distributions(names, dists) if names else []
    chosen_names = {normalize(d.name) for d in chosen}
    env_root = roots[0] if roots else None
    # A PATH that exists from here is taken as it resolves from here; else as relative to the roots.
    wanted_paths = [os.path.normpath(os.path.abspath(p)) if os.path.isabs(p) or os.path.lexists(p)
                    else os.path.normpath(p).replace(os.sep, "/") for p in paths]
    report = RestoreReport(dry_run=True, distributions=[d.name for d in chosen])
    plan = RestorePlan(report, roots=tuple(roots))
    for p in wanted_paths:
        if os.path.isabs(p) and not any(inside(r, os.path.dirname(p)) or inside(r, p) for r in roots):
            report.refused.append(Remaining(path=printable(p), relpath=printable(p), kind="-", scope="-",
                                            reason="outside the environment root: restore never writes there"))
    removable: dict[str, list[str]] = {}
    rows: dict[str, dict[str, RecordEntry]] = {}
    later: list[tuple[Drift, dict[str, Any]]] = []
    for drift in drifts:
        check = drift.check
        dist = check.distribution
        item: dict[str, Any] = dict(path=printable(check.path), relpath=printable(relpath(check.path, check.root)),
                                    kind=check.kind.value, scope=drift.scope.value,
                                    distribution=dist.name if dist else None)
        if not (drift.scope is Scope.PACKAGE and check.kind in _RESTORABLE and dist is not None):
            later.append((drift, item))
            continue
        if (names and normalize(dist.name) not in chosen_names) or (paths and not _matches(wanted_paths, check, env_root)):
            report.remaining.append(Remaining(**item, reason=f"{dist.key} not selected"))
            continue
        planned = _plan_file(check, dist, originals, roots, rows, item, target)
        if isinstance(planned, Remaining):
            (report.refused if "outside" in planned.reason else report.remaining).append(planned)
            continue
        if isinstance(planned, RestoreAction):  # asked for, but no verified original: listed, never written
            report.actions.append(planned)
            continue
        plan.planned.append(planned)
        report.actions.append(planned.action)
        if check.uv_cache is not None and check.uv_cache.copy:
            report.notes.append(f"{printable(check.path)}: uv's cache copy {printable(check.uv_cache.copy)} stays "
                                f"edited; clean it ({uv_cache_clean(dist, check.uv_cache.cache_dir)}) before uv installs "
                                f"{dist.name} again")
    # Added files go only with --remove-added, and only from the package directories of a
    # distribution this restore restores (named with --dist, or with restored files).
    restored = chosen or [d for d in dists if any(p.action.distribution == d.name for p in plan.planned)]
    written = {p.path for p in plan.planned}
    for drift, item in later:
        check = drift.check
        owner = None
        if remove_added and check.kind in (DriftKind.ADDED, DriftKind.ORPHANED_BYTECODE) and check.regular_file \
                and check.area.value == "python" and (not paths or _matches(wanted_paths, check, env_root)):
            owner = _owning_package_dir(check.path, restored, dists, removable)
        if owner is None:
            why = _why_left(drift, remove_added)
            if check.kind is DriftKind.STALE_BYTECODE and check.expected.get("source") in written:
                why = ("its source is restored: the new file's modification time no longer matches this pyc's "
                       "header, so Python compiles the source again (a pyc still matching it is removed)")
            report.remaining.append(Remaining(**item, reason=why))
            continue
        if not _inside_any(check.path, roots):
            report.refused.append(Remaining(**item, reason="outside the environment root"))
            continue
        action = RestoreAction(path=item["path"], relpath=item["relpath"], kind=item["kind"], action=REMOVE,
                               distribution=owner.name, version=owner.version)
        plan.planned.append(Planned(action, check.path))
        report.actions.append(action)
    for p in wanted_paths:
        hit = any(_matches([p], d.check, env_root) for d in drifts)
        if not hit and not any(r.path == printable(p) for r in report.refused):
            report.notes.append(f"{printable(p)}: no drift there; nothing to restore")
    return plan


def _owning_package_dir(path: str, candidates: Sequence[Distribution], dists: Sequence[Distribution],
                        memo: dict[str, list[str]]) -> Distribution | None:
    for dist in candidates:
        if dist.kind is not MetadataKind.DIST_INFO:
            continue
        dirs = memo.get(dist.metadata_dir)
        if dirs is None:
            dirs = memo[dist.metadata_dir] = _package_dirs(dist, dists)
        if any(path.startswith(d + os.sep) for d in dirs):
            return dist
    return None


def _plan_file(check: FileCheck, dist: Distribution, originals: PristineSet, roots: Sequence[str],
               rows: dict[str, dict[str, RecordEntry]], item: dict[str, Any],
               target: Target | None = None) -> Planned | Remaining | RestoreAction:
    if not _inside_any(check.path, roots):
        return Remaining(**item, reason="outside the environment root: restore never writes there")
    if check.kind is DriftKind.TYPE_CHANGED and check.actual.get("type") == "directory":
        return Remaining(**item, reason="a directory where RECORD lists a file: restore removes no directory; "
                                        f"move it away, then restore, or {check.remedy_hint or 'reinstall'}")
    by_path = rows.get(dist.metadata_dir)
    if by_path is None:
        by_path = rows[dist.metadata_dir] = record_rows(dist)
    entry = by_path.get(os.path.normpath(check.path))
    lookup = originals.get(dist)
    if entry is None or entry.hash is None:
        return Remaining(**item, reason="RECORD gives no hash for it: nothing to verify an original against")
    copy = lookup.original(entry) if lookup is not None else None
    verb = RECREATE if check.kind is DriftKind.MISSING else REWRITE
    if copy is None:
        ways = ways_to_original(dist, target.python_version if target else None, target.venv if target else None)
        why = why_no_original(lookup, entry, uv_edited=check.uv_cache is not None and bool(check.uv_cache.copy))
        return RestoreAction(path=item["path"], relpath=item["relpath"], kind=item["kind"], distribution=dist.name,
                             version=dist.version, action=verb, status=Status.NO_ORIGINAL,
                             error=printable(f"no verified original of this file: {why}"),
                             get_original=printable(ways.text()))
    action = RestoreAction(path=item["path"], relpath=item["relpath"], kind=item["kind"], distribution=dist.name,
                           version=dist.version, source=copy.source.value, action=verb,
                           creates=[printable(d) for d in _missing_parents(check.path)] if verb == RECREATE else [])
    return Planned(action, check.path, entry, copy)


def _missing_parents(path: str) -> list[str]:
    """The directories above ``path`` that do not exist (outermost first): what writing it creates."""
    missing = []
    parent = os.path.dirname(path)
    while parent and not os.path.lexists(parent) and os.path.dirname(parent) != parent:
        missing.append(parent)
        parent = os.path.dirname(parent)
    return missing[::-1]


def _why_left(drift: Drift, remove_added: bool) -> str:
    check = drift.check
    if drift.scope is Scope.PACKAGE:
        return (f"{check.kind.value}: restore rewrites only modified, missing and retyped files; "
                f"{drift.remedy}")
    if check.kind is DriftKind.STARTUP_CODE:  # never removed by restore, --remove-added or not
        return f"no RECORD lists it, so there is no original: kept, and it runs at every start of the interpreter; " \
               f"{drift.remedy}"
    if drift.scope is Scope.ENVIRONMENT:
        hint = "" if remove_added else "; --remove-added removes such files inside a restored distribution's own " \
                                       "package directories"
        return f"no RECORD lists it, so there is no original: kept{hint}"
    if drift.scope is Scope.DATA:
        return f"a model directory file: restore leaves data alone; {drift.remedy}"
    if drift.scope is Scope.SOURCE:
        return f"an editable source tree: {drift.remedy}"
    if check.dumps is not None:
        return (f"{count(len(check.dumps.paths), 'dump file')}, {size(check.dumps.total_bytes)}, outside the "
                "environment: review, then remove them (driftscan plan gives the rm command)")
    return f"outside the environment: {drift.remedy}"


# ---- applying ----------------------------------------------------------------------------


def journal_path(root: str) -> str:
    key = hashlib.sha256(os.fsencode(os.path.realpath(root))).hexdigest()[:24]
    return os.path.join(user_cache_dir(), "restore", f"{key}.jsonl")


def _journal_lines(journal: str) -> list[str] | None:
    """The journal's lines, read below the cache directory without following a link; None when absent."""
    try:
        return read_below(*below_cache(journal), 64 << 20).decode("utf-8", "replace").splitlines()
    except (OSError, ValueError):
        return None


def _unlink_journal(journal: str) -> None:
    unlink_below(*below_cache(journal))


def clean_leftovers(journal: str, dry_run: bool = False, roots: Sequence[str] = ()) -> list[str]:
    """Remove the temporary files a killed restore left, as its journal names them. Each name is
    journaled (a random name driftscan chose) before the file is created with O_EXCL, so a
    regular file at that exact path is the killed run's own; with the device and inode recorded
    too, only that very file is removed. Each is reached below the environment root it lies in
    (``roots``), every directory opened without following a symlink (``fs.confined``): a package
    directory swapped for a link since the kill leads nowhere, and a name below no root is left
    alone. ``dry_run``: only say which (nothing is removed)."""
    removed: list[str] = []
    lines = _journal_lines(journal)
    if lines is None:
        return removed
    inodes: dict[str, tuple[int, int]] = {}
    names: list[str] = []
    for line in lines:
        try:
            row = json.loads(line)
            temp = os.fsdecode(bytes.fromhex(row["temp"]))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        if "ino" in row:
            try:
                inodes[temp] = (int(row["dev"]), int(row["ino"]))
            except (ValueError, TypeError):
                continue
        elif temp not in names:
            names.append(temp)
    ordered = sorted((os.path.abspath(r) for r in roots if r), key=len, reverse=True)
    for temp in names:
        base = next((r for r in ordered if rel_below(r, temp)), None)
        if base is None:
            continue
        rel = rel_below(base, temp) or ""
        known = inodes.get(temp)
        try:
            st = lstat_below(base, rel)
        except (OSError, ValueError):
            continue
        if not stat.S_ISREG(st.st_mode) or (known is not None and known != (st.st_dev, st.st_ino)):
            continue
        if not dry_run:

            def same(fd: int, known: tuple[int, int] | None = known) -> str | None:
                got = os.fstat(fd)
                return None if known is None or known == (got.st_dev, got.st_ino) else "another file now"

            try:
                if unlink_below(base, rel, same) is not None:
                    continue
            except ValueError:
                continue
        removed.append(temp)
    if not dry_run:
        _unlink_journal(journal)
    return removed


def open_journal(root: str, notes: list[str], roots: Sequence[str] = ()) -> str:
    """The journal of writes into ``root``, after removing what a killed run left (said in ``notes``)."""
    journal = journal_path(root)
    leftovers = clean_leftovers(journal, roots=roots or ((root,) if root else ()))
    if leftovers:
        notes.append(f"removed {count(len(leftovers), 'temporary file')} an interrupted run left: "
                     + ", ".join(printable(p) for p in leftovers))
    return journal


def close_journal(journal: str) -> None:
    """Every journaled temporary file is renamed or removed: the journal has nothing left to say."""
    try:
        _unlink_journal(journal)
    except (OSError, ValueError):
        pass


def _journal(journal: str, row: dict[str, Any]) -> None:
    """Append ``row``; the journal is opened below the cache directory without following a link
    (a ``restore/`` swapped for a link into the environment fails the write it would precede)."""
    append_below(*below_cache(journal), (json.dumps(row) + "\n").encode("utf-8"), create_dirs=True)


def verify_file(path: str, entry: RecordEntry) -> bool:
    """The file at ``path`` (not followed if a symlink) matches its RECORD row."""
    if entry.hash is None:
        return False
    try:
        fd, st = open_regular(path, follow=False)
    except OSError:
        return False
    try:
        return verify_fd(fd, entry)
    finally:
        os.close(fd)


def verify_fd(fd: int, entry: RecordEntry) -> bool:
    """The open regular file ``fd`` matches its RECORD row."""
    if entry.hash is None:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (entry.size is not None and st.st_size != entry.size):
            return False
        h = new_hash(entry.hash.algorithm)
        for piece in read_pieces(fd, st.st_size):
            h.update(piece)
    except OSError:
        return False
    return h.digest() == entry.hash.digest


def mode_for(path: str, executable: bool = False) -> int:
    """The mode bits a rewritten file keeps (the old file's), or a recreated one gets: 0o755 for
    an executable original, else 0o644 (what pip and uv give wheel members)."""
    try:
        st = os.lstat(path)
    except OSError:
        st = None
    if st is not None and stat.S_ISREG(st.st_mode):
        return stat.S_IMODE(st.st_mode)
    return 0o755 if executable else 0o644


def replace_file(path: str, fill: Callable[[BinaryIO], bool], mode: int, journal: str,
                 roots: Sequence[str] = (), bytecode: Bytecode | None = None, data: bytes | None = None) -> str | None:
    """Write a new file next to ``path`` with ``fill(out)`` (False: what it wrote is not to be
    trusted), fsync it with ``mode``, and rename it over ``path``; None on success, else why not
    (``path`` is then as it was). ``path`` must lie below one of ``roots`` (the environment the
    user named): every directory below that root is opened without following a symlink
    (``fs.confined``), so a directory swapped for a link meanwhile fails this one file. Missing
    parent directories are created the same way. The temporary name is journaled first (see
    clean_leftovers). A ``.py`` written: the pycs of it Python would still run instead of the
    new content are removed (``environment.bytecode.remove_stale_after_write``), said in
    ``bytecode`` (``data``: the written bytes, when the caller has them)."""
    base = next((r for r in sorted(roots, key=len, reverse=True) if rel_below(r, path)), None)
    if base is None:
        return "outside the environment: not written"
    # Never a setuid, setgid or sticky bit, nor group/other write, whatever the tree's file had:
    # the new file may be root's now.
    mode &= 0o755

    def note(temp: str, dev: int | None, ino: int | None) -> None:
        row: dict[str, Any] = {"temp": os.fsencode(temp).hex()}
        if ino is not None:
            row.update(dev=dev, ino=ino)
        _journal(journal, row)  # before it exists: a kill leaves no stranger

    rel = rel_below(base, path) or ""
    why = replace_below(base, rel, fill, mode, note, create_dirs=True)
    if why is None and bytecode is not None:
        removed, failed = remove_stale_after_write(base, rel, data)
        bytecode.removed += removed
        bytecode.failed += failed
    return why


@dataclass
class Bytecode:
    """The bytecode files writes removed because Python would have run them instead of what was
    written (docs/environments.md, "Bytecode that does not match its source"), and those it could not."""

    removed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def notes(self) -> list[str]:
        out = []
        if self.removed:
            out.append(f"removed {count(len(self.removed), 'stale bytecode file')} Python would have run instead "
                       f"of the file written (its header still matched it): "
                       + ", ".join(printable(p) for p in self.removed))
        if self.failed:
            out.append(f"could not check or remove {count(len(self.failed), 'bytecode file')} of a file written "
                       f"(if Python can read it, it may run it instead; rm it): "
                       + "; ".join(printable(p) for p in self.failed))
        return out


def _write_one(p: Planned, journal: str, roots: Sequence[str], bytecode: Bytecode | None = None) -> str | None:
    """Restore one file from its verified original, then check it against RECORD."""
    assert p.entry is not None and p.copy is not None
    copy, entry = p.copy, p.entry
    why = replace_file(p.path, lambda out: copy.copy_to(entry, out), mode_for(p.path, copy.executable(entry)),
                       journal, roots, bytecode)
    if why == "the content to write did not verify":
        return f"the original from {copy.source.value} {copy.where} no longer matches RECORD"
    if why is None and not verify_file(p.path, entry):
        return "written, but it does not verify against RECORD afterwards (changed meanwhile?)"
    return why


def _remove_one(p: Planned, roots: Sequence[str]) -> str | None:
    base = next((r for r in sorted(roots, key=len, reverse=True) if rel_below(r, p.path)), None)
    if base is None:
        return "outside the environment: not removed"
    parts = parts_of(rel_below(base, p.path) or "")
    try:
        st = lstat_below(base, "/".join(parts))
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
            return f"now a {stat.filemode(st.st_mode)}, not removed"
        parent = open_dir(base, parts[:-1])
        try:
            os.unlink(parts[-1], dir_fd=parent)
        finally:
            os.close(parent)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return os_error(exc)
    return None


def apply_restore(plan: RestorePlan, root: str, progress: Callable[[int, int], None] | None = None) -> RestoreReport:
    """Carry out ``plan`` (after the caller wrote its checkpoint)."""
    started = time.perf_counter()
    report = plan.report
    report.dry_run = False
    roots = plan.roots or ((root,) if root else ())
    journal = open_journal(root, report.notes, roots)
    bytecode = Bytecode()
    for i, p in enumerate(plan.planned):
        why = _remove_one(p, roots) if p.action.action == REMOVE else _write_one(p, journal, roots, bytecode)
        p.action.status = Status.FAILED if why else (
            Status.REMOVED if p.action.action == REMOVE else Status.RESTORED)
        p.action.error = printable(why) if why else None
        if progress:
            progress(i + 1, len(plan.planned))
    close_journal(journal)
    report.notes += bytecode.notes()
    report.bytecode_not_removed = [printable(p) for p in bytecode.failed]
    report.duration_seconds = round(time.perf_counter() - started, 3)
    return report


def check_names(names: Sequence[str], dists: Sequence[Distribution]) -> None:
    if names:
        select_distributions(names, dists)  # ConfigError naming what is not installed


__all__ = ["ConfigError", "RestorePlan", "RestoreReport", "apply_restore", "plan_restore"]


def keep_unsaved(plan: RestorePlan, index: CheckpointIndex) -> None:
    """Take out of ``plan`` every file whose current content the checkpoint could not save (too
    large, unreadable): restoring it would destroy an edit that exists nowhere else."""
    unsaved = {f.path: f.not_copied for f in index.files if f.not_copied and f.type is EntryType.FILE}
    kept = []
    for p in plan.planned:
        why = unsaved.get(p.action.path)
        if why and p.action.action != RECREATE:
            p.action.status = Status.UNSAVED
            p.action.error = (f"not restored: its content could not be saved in the checkpoint ({why}); "
                              "raise --max-copy or save it by hand")
            continue
        kept.append(p)
    plan.planned = kept


def predict(plan: RestorePlan, max_copy: int, root: str | None = None) -> None:
    """For the dry run: mark what ``--yes`` would not do, found the way ``--yes`` finds it — a
    file the checkpoint could not save (bigger than ``max_copy``, unreadable) is left unsaved, a
    file in a directory restore cannot write to would fail — and name the temporary files of an
    interrupted run ``--yes`` removes first, so that the dry run lists exactly the paths
    ``--yes`` writes."""
    left = clean_leftovers(journal_path(root), dry_run=True, roots=plan.roots or (root,)) \
        if root and plan.planned else []
    if left:
        plan.report.notes.append(f"--yes first removes {count(len(left), 'temporary file')} an interrupted run left: "
                                 + ", ".join(printable(p) for p in left))
    kept = []
    for p in plan.planned:
        why = _unsavable(p.path, max_copy) if p.action.action != RECREATE else None
        if why is not None:
            p.action.status = Status.UNSAVED
            p.action.error = (f"would not be restored: its content cannot be saved in the checkpoint ({why}); "
                              "raise --max-copy or save it by hand")
            continue
        blocked = _unwritable(p.path)
        if blocked is not None:
            p.action.status = Status.FAILED
            p.action.error = f"would fail: {blocked}"
            continue
        kept.append(p)
    plan.planned = kept


def _unsavable(path: str, max_copy: int) -> str | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None  # gone: nothing to save (recreated)
    if not stat.S_ISREG(st.st_mode):
        return None  # a symlink or directory is recorded, not copied
    if st.st_size > max_copy:
        return f"{st.st_size} bytes, more than the {max_copy} copied per file (--max-copy)"
    if not os.access(path, os.R_OK):
        return "not readable"
    return None


def _unwritable(path: str) -> str | None:
    parent = os.path.dirname(path)
    while parent and not os.path.lexists(parent) and os.path.dirname(parent) != parent:
        parent = os.path.dirname(parent)
    if parent and not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot write in {printable(parent)} (permission denied)"
    return None


def refuse_unchecked(plan: RestorePlan, errors: Sequence[ErrorOut], env_root: str | None) -> None:
    """List what the audit could not check inside the environment (a package directory that is a
    symlink out of it, an unreadable RECORD) as refused: restore cannot vouch for it, writes
    nothing there, and says why."""
    if not env_root:
        return
    prefix = env_root.rstrip(os.sep) + os.sep
    for e in errors:
        if e.path == env_root or e.path.startswith(prefix):
            plan.report.refused.append(Remaining(path=e.path, relpath=os.path.relpath(e.path, env_root), kind="-",
                                                 scope="-", reason=f"not checked ({e.message}): restore writes "
                                                                    "nothing there"))
