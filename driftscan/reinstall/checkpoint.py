"""``driftscan checkpoint``: all drift saved as a self-contained, restorable folder.

Layout of a checkpoint directory (format "1", docs/checkpoint.md)::

    checkpoint.json   the index: target, distributions with their pristine source, and per file
                      its relpath, kind, scope, distribution, hashes before/after, mode, findings
    report.json       the audit report the checkpoint was taken from
    patches/<relpath>.patch     one -p0 unified diff per modified text file, relative to the
                                environment root (``git apply -p0`` / ``patch -p0`` from there)
    files/<area>/<relpath>      the current content of every drifted, added and model file
    originals/<area>/<relpath>  the verified original, where one was at hand (for a 3-way reapply)

``<area>`` is ``env`` for the environment (relative to its root) or ``model-<n>`` for the n-th
model directory. Written into a temporary sibling and renamed into place: a checkpoint is whole
or absent; an existing path is never replaced; it must lie outside every audited root.
"""

from __future__ import annotations

import enum
import hashlib
import os
import re
import shlex
import shutil
import socket
import stat
import tempfile
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from .._version import __version__
from ..environment.target import environment_roots
from ..core.errors import ConfigError
from ..core.units import count
from ..fs.reader import CHUNK, file_type, inside, open_regular, os_error, read_regular
from ..pipeline.changes import file_by_file, record_rows, wheel_row
from ..core.values import Area, Drift, DriftKind, FileCheck, Origin, RecordEntry, Scope, SourceKind, Target
from ..fs.paths import printable
from ..formats.patch import PatchTooLarge, make_patch
from ..pristine import PristineCopy, PristineSet, kept
from ..formats.record import hash_text
from ..report.contract import Report
from ..fs.confined import read_below
from ..pristine.howto import download_line, wheels_dir, why_no_original
from .dumpledger import record

FORMAT: Literal["1"] = "1"
INDEX = "checkpoint.json"
# Files larger than this are listed, not copied (a modified 4 GiB weight shard); --max-copy raises it.
DEFAULT_MAX_COPY = 1 << 30
PATCH_MAX = 16 << 20  # a text file beyond this gets its copy, not a patch


ENV_AREA = "env"  # a file of the environment; ``model-<n>``: of the n-th model directory
AREA_PATTERN = r"^(env|model-(0|[1-9][0-9]*))$"


class EntryType(str, enum.Enum):
    """What a checkpointed path was on disk when the checkpoint was taken (``fs.reader.file_type``'s
    words, and ``missing``)."""

    FILE = "file"
    DIRECTORY = "directory"
    SYMLINK = "symlink"
    FIFO = "fifo"
    SOCKET = "socket"
    DEVICE = "device"
    MISSING = "missing"


class FindingRef(BaseModel):
    code: str
    line: int
    origin: Origin | None = None


class CheckpointFile(BaseModel):
    path: str = Field(description="absolute path when the checkpoint was taken")
    relpath: str = Field(description="relative to its root: the environment root, or a model directory")
    relpath_hex: str | None = Field(default=None, description="the real relpath's bytes, when it is not UTF-8")
    area: str = Field(pattern=AREA_PATTERN,
                      description="env, or model-<n> (the n-th model directory in target.model_dirs)")
    kind: DriftKind
    scope: Scope
    distribution: str | None = None
    version: str | None = None
    record_path: str | None = Field(default=None, description="the RECORD row's path, for package files")
    hash_before: str | None = Field(default=None, description="the original's hash, as RECORD (or the reference) has it")
    hash_after: str | None = Field(default=None, description="sha256 of the content when the checkpoint was taken")
    size_after: int | None = None
    mode: int | None = Field(default=None, description="permission bits of the file (st_mode & 0o7777)")
    type: EntryType = EntryType.FILE
    symlink_target: str | None = None
    content: str | None = Field(default=None, description="files/…: the content when the checkpoint was taken")
    original: str | None = Field(default=None, description="originals/…: the verified original")
    patch: str | None = Field(default=None, description="patches/….patch: original → content, -p0 from the root")
    pristine: dict[str, str] | None = None
    findings: list[FindingRef] = Field(default_factory=list)
    not_copied: str | None = Field(default=None, description="why the content was not saved")
    link_resolves_to: str | None = Field(default=None, description="a symlink whose target's content the audit "
                                                                   "reports as edited (a hub blob edited through "
                                                                   "its snapshot link): what content is, relative to "
                                                                   "the tree it was read inside (blobs/<etag>)")
    has_patch: bool = Field(default=False, description="patch is set: an original → content diff is saved")
    has_original: bool = Field(default=False, description="original is set: the verified original is saved")
    no_original: str | None = Field(default=None, description="a modified package file without a saved original: "
                                                              "why, and how to get one")


    @property
    def in_env(self) -> bool:
        """A file of the environment (not of a model directory)."""
        return self.area == ENV_AREA


class CheckpointDistribution(BaseModel):
    name: str
    version: str
    installer: str | None = None
    pristine: dict[str, str] | None = None
    reason: str | None = None


class DumpWriterRef(BaseModel):
    path: str
    line: int
    code: str


class CheckpointDump(BaseModel):
    """One file debug code left on disk (an audit's debug-artifacts drift), as it was when the
    checkpoint was taken: a later run re-checks it after the code that wrote it is gone."""

    path: str
    size: int | None = Field(default=None, description="bytes (lstat), null when it could not be read")
    mtime_ns: int | None = None
    pattern: str = Field(description="the dump call's path pattern the file matched")
    writer: DumpWriterRef | None = Field(default=None, description="the first line of code that writes it")
    writers: list[DumpWriterRef] = Field(default_factory=list, description="every line writing that pattern")
    possible: bool = Field(default=False, description="a possible dump (possible-debug-artifacts: older than the "
                                                      "last change of the code that writes it), never offered for "
                                                      "deletion")


class CheckpointIndex(BaseModel):
    format: Literal["1"] = FORMAT
    tool: str = f"driftscan {__version__}"
    created_at: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    hostname: str = Field(default_factory=socket.gethostname)
    root: str | None = Field(default=None, description="the environment root patches are relative to")
    venv: str | None = None
    site_packages: list[str] = Field(default_factory=list)
    python_version: str | None = None
    model_dirs: list[str] = Field(default_factory=list)
    distributions: list[CheckpointDistribution] = Field(default_factory=list)
    files: list[CheckpointFile] = Field(default_factory=list)
    dumps: list[CheckpointDump] = Field(default_factory=list, description="the dump files the audit found, and its "
                                                                          "possible dumps (possible: true)")
    partial: bool = Field(default=False, description="some modified package file has neither a patch nor an "
                                                     "original (see incomplete)")
    incomplete: list[str] = Field(default_factory=list, description="relpaths of those files")
    complete_with: list[str] = Field(default_factory=list, description="lines that would get the missing "
                                                                       "originals (pip download, then --wheels)")


@dataclass
class Written:
    path: str
    index: CheckpointIndex
    problems: list[str] = field(default_factory=list)
    # Originals also kept in driftscan's user cache (``pristine.kept``), for later audits and
    # reapplies of this environment without ``--wheels``; what could not be kept, with why.
    kept: int = 0
    kept_dir: str | None = None
    not_kept: list[str] = field(default_factory=list)


def checkpoints_base() -> str:
    """Where checkpoints go when no path is named (``DRIFTSCAN_CHECKPOINT_DIR``, else
    ``$XDG_STATE_HOME/driftscan/checkpoints``)."""
    # Deferred: modeldir and git.* (28 modules, 56 ms measured) would load with every import of
    # this module, guard's start and `schema --for guard` included.
    from ..modeldir.remedies import checkpoints_base as base

    return base()


def environment_root(target: Target) -> str | None:
    roots = environment_roots(target)
    return roots[0] if roots else None


def _under(path: str, root: str) -> bool:
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def check_destination(dest: str, audited: Sequence[str]) -> str:
    """The checkpoint's absolute path; ConfigError when it exists or lies inside an audited root."""
    dest = os.path.abspath(dest)
    if os.path.lexists(dest):
        raise ConfigError(f"{dest}: already exists; a checkpoint never replaces anything (choose a new path)")
    parent = os.path.dirname(dest)
    if not os.path.lexists(parent) and parent == os.path.abspath(checkpoints_base()):
        os.makedirs(parent, mode=0o700, exist_ok=True)  # the default place, as remedies name it
    if not os.path.isdir(parent):
        raise ConfigError(f"{parent}: no such directory for the checkpoint")
    for root in audited:
        if root and _under(dest, root):
            raise ConfigError(f"{dest}: inside the audited tree {root}; a checkpoint is written outside it")
    return dest


def _copy_file(src: str, dst: str, limit: int) -> tuple[str | None, int | None, str | None]:
    """Copy a regular file (never following a symlink); (sha256, size, None) or (None, None, why)."""
    try:
        fd, st = open_regular(src, follow=False)
    except OSError as exc:
        return None, None, os_error(exc)
    try:
        if st.st_size > limit:
            return None, st.st_size, f"{st.st_size} bytes, more than the {limit} copied per file (--max-copy)"
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        digest = hashlib.sha256()
        size = 0
        with open(dst, "xb") as out:
            while chunk := os.read(fd, CHUNK):
                digest.update(chunk)
                out.write(chunk)
                size += len(chunk)
                if size > limit:
                    return None, size, "grew past the copy limit while being read"
        return digest.hexdigest(), size, None
    finally:
        os.close(fd)


def _area_of(check: FileCheck, env_root: str | None, model_dirs: Sequence[str]) -> tuple[str, str] | None:
    """(area, relpath) for a file of the environment or of a model directory; None otherwise."""
    if check.area is Area.MODEL:
        for i, root in enumerate(model_dirs):
            if check.path.startswith(root.rstrip(os.sep) + os.sep):
                return f"model-{i}", os.path.relpath(check.path, root).replace(os.sep, "/")
        return None
    if check.area is Area.PYTHON and env_root and check.path.startswith(env_root.rstrip(os.sep) + os.sep):
        return ENV_AREA, os.path.relpath(check.path, env_root).replace(os.sep, "/")
    return None


_SAVED = {DriftKind.MODIFIED, DriftKind.ADDED, DriftKind.STARTUP_CODE, DriftKind.TYPE_CHANGED, DriftKind.MISSING,
          DriftKind.CLOBBERED, DriftKind.ORPHANED_BYTECODE, DriftKind.STALE_METADATA, DriftKind.CORRUPT,
          DriftKind.RECORD_REWRITTEN}
# Edited package files: each needs its original (or a patch) for the checkpoint to be complete. A
# record-rewritten file's original is its wheel's, verified against the wheel's own row.
_EDITED = {DriftKind.MODIFIED, DriftKind.RECORD_REWRITTEN}


def write_checkpoint(dest: str, target: Target, drifts: Sequence[Drift], report: Report,
                     originals: PristineSet | None, model_dirs: Sequence[str] = (),
                     max_copy: int = DEFAULT_MAX_COPY) -> Written:
    """Save every drift of the environment and the model directories into ``dest`` (new)."""
    drifts = file_by_file(drifts)  # a directory's missing files are recorded one by one: reapply deletes each
    env_root = environment_root(target)
    audited = [r for r in (env_root, *target.site_packages, *model_dirs) if r]
    dest = check_destination(dest, audited)
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(dest)}.", suffix=".partial", dir=os.path.dirname(dest))
    try:
        written = _fill(tmp, target, env_root, drifts, report, originals, model_dirs, max_copy)
        _complete_with(written.index, target, drifts, model_dirs, dest)
        with open(os.path.join(tmp, "report.json"), "w", encoding="utf-8") as f:
            f.write(report.model_dump_json(indent=2))
        with open(os.path.join(tmp, INDEX), "w", encoding="utf-8") as f:
            f.write(written.index.model_dump_json(indent=2))
        _fsync_tree(tmp)
        if os.path.lexists(dest):  # appeared meanwhile
            raise ConfigError(f"{dest}: appeared while the checkpoint was written; not replaced")
        os.rename(tmp, dest)
        _fsync_dir(os.path.dirname(dest))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    written.path = dest
    if env_root:  # the dumps stay named after a reinstall removes the code that names them
        record(env_root, dest, written.index.created_at, written.index.dumps)
    return written


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _fsync_tree(top: str) -> None:
    for dirpath, _, names in os.walk(top):
        for name in names:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(dirpath)


def _fill(tmp: str, target: Target, env_root: str | None, drifts: Sequence[Drift], report: Report,
          originals: PristineSet | None, model_dirs: Sequence[str], max_copy: int) -> Written:
    from ..modeldir.hfcache import containment_root  # deferred, as in checkpoints_base (56 ms)

    index = CheckpointIndex(root=env_root, venv=target.venv, site_packages=list(target.site_packages),
                            python_version=target.python_version, model_dirs=list(model_dirs))
    written = Written(tmp, index)
    # What a symlink may be read through to, per area: never out of the tree audited (a hub
    # cache snapshot's links lead into its repository's blobs/, which is that tree).
    contain = {ENV_AREA: env_root, **{f"model-{i}": containment_root(root) for i, root in enumerate(model_dirs)}}
    index.dumps = _dumps(drifts)
    rows: dict[str, dict[str, RecordEntry]] = {}
    dists: dict[str, CheckpointDistribution] = {}
    used: dict[str, set[str]] = defaultdict(set)
    for drift in drifts:
        check = drift.check
        where = _area_of(check, env_root, model_dirs)
        if where is None or check.kind not in _SAVED:
            continue
        area, real_rel = where
        if ".." in real_rel.split("/"):  # never a name that leaves the checkpoint
            written.problems.append(f"{printable(check.path)}: not saved: its path climbs out of its root")
            continue
        rel = printable(real_rel)  # names inside the checkpoint are always text ...
        # ... and cannot collide: a name that is not UTF-8 (whose printable form could be another
        # file's real name, or a directory where another needs a file) is stored by number apart.
        plain = rel == real_rel
        store_area, store = (area, rel) if plain else (f"{area}.escaped", str(len(used[area])))
        used[area].add(store)
        dist = check.distribution
        entry = None
        if dist is not None and drift.scope is Scope.PACKAGE:
            by_path = rows.get(dist.metadata_dir)
            if by_path is None:
                by_path = rows[dist.metadata_dir] = record_rows(dist)
            entry = wheel_row(check) if check.kind is DriftKind.RECORD_REWRITTEN \
                else by_path.get(os.path.normpath(check.path))
            if dist.key not in dists:
                lookup = originals.get(dist) if originals is not None else None
                copy = lookup.copy if lookup else None
                dists[dist.key] = CheckpointDistribution(
                    name=dist.name, version=dist.version, installer=dist.installer,
                    pristine={"source": copy.source.value, "path": copy.where} if copy else None,
                    reason=lookup.reason if lookup else "not looked up")
        item = CheckpointFile(
            path=printable(check.path), relpath=rel, area=area, kind=check.kind,
            scope=drift.scope, distribution=dist.name if dist else None, version=dist.version if dist else None,
            relpath_hex=os.fsencode(real_rel).hex() if rel != real_rel else None,
            record_path=entry.path if entry else None,
            hash_before=hash_text(entry.hash) if entry is not None and entry.hash is not None
            else _reference_hash(check.expected),
            pristine=check.pristine.as_json() if check.pristine else None,
            findings=[FindingRef(code=f.code, line=f.line, origin=f.origin) for f in check.findings])
        original = None
        lookup = originals.get(dist) if originals is not None and dist is not None else None
        try:
            _save_content(tmp, item, check, store_area, store, max_copy, contain.get(area))
            copy = lookup.original(entry) if lookup is not None and entry is not None else None
            if copy is not None and entry is not None:
                original = _save_original(tmp, item, copy, entry, store_area, store)
                if original is not None:
                    _keep_original(written, original, copy, entry)
            if original is not None and item.content and area == ENV_AREA and item.size_after is not None \
                    and item.size_after <= PATCH_MAX and plain:
                _save_patch(tmp, item, original, os.path.join(tmp, item.content), rel)
        except OSError as exc:  # one file that cannot be saved costs that file, said in the index
            item.not_copied = item.not_copied or f"cannot save it in the checkpoint: {os_error(exc)}"
        item.has_patch, item.has_original = item.patch is not None, item.original is not None
        if dist is not None and check.kind in _EDITED and drift.scope is Scope.PACKAGE \
                and not item.has_original:
            uv_edited = check.uv_cache is not None and bool(check.uv_cache.copy)
            item.no_original = printable(why_no_original(lookup, entry, uv_edited) if entry is not None
                                         else "RECORD does not list it")
            if not item.has_patch:
                index.incomplete.append(rel)
        if item.not_copied:
            written.problems.append(f"{check.path}: not copied: {item.not_copied}")
        index.files.append(item)
    index.partial = bool(index.incomplete)
    index.distributions = sorted(dists.values(), key=lambda d: d.name.lower())
    return written


def _dumps(drifts: Sequence[Drift]) -> list[CheckpointDump]:
    """Every dump file of the audit's debug-artifacts drifts, and every possible one of its
    possible-debug-artifacts drifts (marked ``possible``), with its size and mtime now."""
    out: list[CheckpointDump] = []
    seen: set[str] = set()
    for drift in drifts:
        check = drift.check
        if check.kind is DriftKind.DEBUG_ARTIFACTS and check.dumps is not None:
            found = check.dumps
            paths, pattern, possible = found.paths, found.pattern, False
            writers = [DumpWriterRef(path=printable(w.path), line=w.line, code=w.code) for w in found.writers]
        elif check.kind is DriftKind.POSSIBLE_DEBUG_ARTIFACTS:
            listed = check.actual.get("possible_artifacts")
            paths = tuple(p for p in listed if isinstance(p, str)) if isinstance(listed, list) else ()
            pattern, possible = check.path, True
            writers = [DumpWriterRef(path=printable(w["path"]), line=w["line"], code=w["code"])
                       for w in check.actual.get("written_by") or () if isinstance(w, dict)]
        else:
            continue
        for path in paths:
            if path in seen:
                continue
            seen.add(path)
            try:
                st = os.lstat(path)
                size, mtime = st.st_size, st.st_mtime_ns
            except OSError:
                size, mtime = None, None
            out.append(CheckpointDump(path=printable(path), size=size, mtime_ns=mtime, pattern=printable(pattern),
                                      writer=writers[0] if writers else None, writers=writers, possible=possible))
    return out


def _target_args(target: Target, model_dirs: Sequence[str]) -> list[str]:
    args = ["--venv", target.venv] if target.venv else [a for s in target.site_packages for a in ("--site-packages", s)]
    return [shlex.quote(a) for a in args] + [a for m in model_dirs for a in ("--model-dir", shlex.quote(m))]


def _complete_with(index: CheckpointIndex, target: Target, drifts: Sequence[Drift], model_dirs: Sequence[str],
                   dest: str) -> None:
    """The lines that would give a partial checkpoint its missing originals: each distribution's
    ``pip download`` into driftscan's wheels directory, then the checkpoint again (to a new
    path) with ``--wheels`` that directory, or with ``--fetch``."""
    if not index.incomplete:
        return
    lacking = {f.distribution for f in index.files if f.relpath in index.incomplete and f.in_env}
    wheels = wheels_dir()
    seen: set[str] = set()
    for drift in drifts:
        dist = drift.check.distribution
        if dist is None or dist.name not in lacking or dist.key in seen:
            continue
        seen.add(dist.key)
        line = download_line(dist, target.python_version, target.venv, wheels)
        if line:
            index.complete_with.append(line)
    again = " ".join(["driftscan checkpoint", *_target_args(target, model_dirs), "-o", shlex.quote(dest + "-whole")])
    index.complete_with.append(f"{again} --wheels {shlex.quote(wheels)}")
    index.complete_with.append(f"{again} --fetch")


def _reference_hash(expected: Mapping[str, Any]) -> str | None:
    """A model file's reference digest as its verifier recorded it (``algorithm=value``)."""
    for key in ("hash", "sha256", "xxh3_128", "git_blob_sha1", "lfs_oid", "blob"):
        value = expected.get(key)
        if isinstance(value, str) and value:
            return value if key == "hash" else f"{key}={value}"
    return None


def _save_content(tmp: str, item: CheckpointFile, check: FileCheck, area: str, rel: str, max_copy: int,
                  contain: str | None = None) -> None:
    try:
        st = os.lstat(check.path)
    except FileNotFoundError:
        item.type = EntryType.MISSING
        return
    except OSError as exc:
        item.not_copied = os_error(exc)
        return
    item.mode = stat.S_IMODE(st.st_mode)
    item.type = EntryType(file_type(st.st_mode))
    source = check.path
    if stat.S_ISLNK(st.st_mode):
        try:
            item.symlink_target = printable(os.readlink(check.path))
        except OSError as exc:
            item.not_copied = os_error(exc)
            return
        if not _content_edited_behind(check):
            return
        # The audit followed this link and found the content behind it edited (a hub blob edited
        # through its snapshot link): that content is the edit, saved too — read only where the
        # link resolves inside the audited tree, never following it out.
        real = os.path.realpath(check.path)
        if contain is None or not inside(contain, real):
            item.not_copied = ("the content it links to is edited, but the link resolves outside the audited tree "
                               f"(to {printable(real)}): not followed")
            return
        item.link_resolves_to = printable(os.path.relpath(real, os.path.realpath(contain)).replace(os.sep, "/"))
        source = real
    elif not stat.S_ISREG(st.st_mode):
        item.not_copied = f"a {item.type.value}, not a regular file"
        return
    copy_rel = f"files/{area}/{rel}"
    digest, size, why = _copy_file(source, os.path.join(tmp, copy_rel), max_copy)
    item.size_after = size
    if digest is None:
        item.not_copied = why
        return
    item.content, item.hash_after = copy_rel, f"sha256={digest}"


def _content_edited_behind(check: FileCheck) -> bool:
    """A drift of the content a symlink leads to (the audit followed the link: its ``actual`` is
    about the content), not of the link itself (re-pointed, dangling, a link where a file was)."""
    if check.kind is DriftKind.MODIFIED and check.uv_cache is not None and check.uv_cache.symlink:
        return True  # uv --link-mode symlink: the edited content is the cache's file the link names
    return check.kind in (DriftKind.MODIFIED, DriftKind.CORRUPT, DriftKind.STALE_METADATA) \
        and check.expected.get("type") == "symlink" and check.actual.get("type") != "symlink" \
        and "dangling" not in check.actual and "resolves_to" not in check.actual


def _save_original(tmp: str, item: CheckpointFile, copy: PristineCopy, entry: RecordEntry, area: str,
                   rel: str) -> str | None:
    dst_rel = f"originals/{area}/{rel}"
    dst = os.path.join(tmp, dst_rel)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with open(dst, "xb") as out:
        ok = copy.copy_to(entry, out)
    if not ok:
        os.unlink(dst)
        return None
    item.original = dst_rel
    return dst


def _keep_original(written: Written, saved: str, copy: PristineCopy, entry: RecordEntry) -> None:
    """Keep the original just saved (and verified) in the user cache's store as well."""
    written.kept_dir = kept.store_dir()
    if entry.hash is None:
        return
    if copy.source is SourceKind.KEPT:
        written.kept += 1  # it came from there
        return
    try:
        with open(saved, "rb") as f:
            data = f.read(kept.READ_MAX + 1)
    except OSError as exc:
        written.not_kept.append(f"{entry.path}: {os_error(exc)}")
        return
    if len(data) > kept.READ_MAX:
        written.not_kept.append(f"{entry.path}: larger than {kept.READ_MAX} bytes")
    elif kept.keep(hash_text(entry.hash), data, f"{copy.source.label} {copy.where}"):
        written.kept += 1
    else:
        written.not_kept.append(f"{entry.path}: the user cache could not be written")


def _save_patch(tmp: str, item: CheckpointFile, original_path: str, current_path: str, rel: str) -> None:
    try:
        with open(original_path, "rb") as f:
            old = f.read().decode("utf-8")
        with open(current_path, "rb") as f:
            new = f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return  # binary or undecodable: the copy is the record of it
    if "\0" in old or "\0" in new:
        return
    try:
        patch = make_patch(old, new, rel)
    except PatchTooLarge:
        return  # the diff is past its budget: the content and the original saved are the record of it
    if not patch:
        return
    patch_rel = f"patches/{rel}.patch"
    dst = os.path.join(tmp, patch_rel)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with open(dst, "x", encoding="utf-8", newline="") as f:
        f.write(patch)
    item.patch = patch_rel


def load_index(path: str) -> CheckpointIndex:
    """A checkpoint's index; ConfigError with one line when it is not a checkpoint."""
    index_path = os.path.join(path, INDEX)
    try:
        data = read_below(path, INDEX, 256 << 20)  # the index itself is not followed out of the checkpoint
    except OSError as exc:
        raise ConfigError(f"{path}: not a driftscan checkpoint ({INDEX}: {os_error(exc)})") from None
    try:
        return CheckpointIndex.model_validate_json(data)
    except ValidationError as exc:
        raise ConfigError(f"{index_path}: not a valid checkpoint index ({_first_error(exc)})") from None
    except ValueError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"{index_path}: not a valid checkpoint index ({first})") from None


def _first_error(exc: ValidationError) -> str:
    """The first thing wrong in an index, in one line: where, and what (``files[3].kind: Input
    should be 'modified', 'missing', ...``), the value shown shortened and printable."""
    errors = exc.errors(include_url=False)
    if not errors:
        return "invalid"
    first = errors[0]
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]).lstrip(".")
    got = printable(repr(first["input"])[:80]) if first["type"] not in ("missing", "json_invalid") else ""
    more = f"; {count(len(errors) - 1, 'more problem')}" if len(errors) > 1 else ""
    return f"{where or 'index'}: {printable(first['msg'])}" + (f" (found {got})" if got else "") + more


def saved_path(checkpoint: str, rel: str | None) -> str | None:
    """The absolute path of a file inside a checkpoint, refusing anything that leaves it."""
    if not rel:
        return None
    parts = rel.split("/")
    if rel.startswith("/") or ".." in parts or "\0" in rel:
        raise ConfigError(f"{checkpoint}: index names {rel!r}, outside the checkpoint")
    return os.path.join(checkpoint, *parts)


# A checkpoint's default name keeps at most this many characters of its environment's path.
NAME_MAX = 96


def checkpoint_name(root: str | None) -> str:
    """A checkpoint's default name, before its time: the environment's absolute path as a slug
    (``/home/me/proj/.venv`` → ``home-me-proj-.venv``): never hidden, and two projects' ``.venv``
    differ. Safe characters only; a longer path keeps its tail and gains a hash of the whole."""
    path = os.path.abspath(root) if root else "environment"
    slug = re.sub(r"-{2,}", "-", re.sub(r"[^A-Za-z0-9_.+-]+", "-", path)).strip("-.") or "root"
    if len(slug) > NAME_MAX:
        digest = hashlib.sha256(os.fsencode(path)).hexdigest()[:10]
        slug = digest + "-" + slug[-(NAME_MAX - 11):].lstrip("-.")
    return slug


def default_checkpoint_path(target: Target) -> str:
    """Where ``restore --yes`` / ``reapply --yes`` put the checkpoint they write first when not
    told: ``$XDG_STATE_HOME/driftscan/checkpoints/<env path slug>-<UTC time>`` (~/.local/state)."""
    base = checkpoints_base()
    os.makedirs(base, mode=0o700, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    return os.path.join(base, f"{checkpoint_name(environment_root(target))}-{stamp}")


def held_by(path: str, drifts: Sequence[Drift]) -> frozenset[str]:
    """The drifted paths whose current content ``path`` (a checkpoint) holds byte for byte."""
    def digest(file: str) -> bytes | None:
        try:
            return hashlib.sha256(read_regular(file, 1 << 36, what="checkpointed file")).digest()
        except OSError:
            return None

    index = load_index(path)
    saved = {os.path.normpath(f.path): f.content for f in index.files if f.content}
    held = set()
    for drift in drifts:
        rel = saved.get(os.path.normpath(drift.check.path))
        if rel is None:
            continue
        copy = saved_path(path, rel)
        now = digest(drift.check.path)
        if copy is not None and now is not None and digest(copy) == now:
            held.add(drift.check.path)
    return frozenset(held)


def suggested_path(target: Target) -> str:
    """Where ``plan`` suggests the checkpoint goes: the place ``restore --yes`` writes its own
    (``default_checkpoint_path``), named without creating anything."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return os.path.join(checkpoints_base(), f"{checkpoint_name(environment_root(target))}-{stamp}")
