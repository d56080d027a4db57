"""The dumps checkpoints recorded, per environment, so they stay named after the code that named
them is gone (a reinstall or an upgrade).

An audit finds dumps through the dump calls of drifted code; once a reinstall removes that code
nothing names the files any more. So each checkpoint that lists dumps also records them here: one
small JSON file per environment root in the user cache directory (``checkpoint-dumps/``; a cache
never goes in the audited tree), mapping the root to the checkpoints and the dump paths each
recorded. An audit of that environment reads it and reports each recorded dump still on disk that
it did not name itself, as a ``debug-artifacts`` drift (``possible-debug-artifacts`` for a
possible dump) saying which checkpoint recorded it.

The file is untrusted data (anyone who can write the cache directory can write it): its size,
types and counts are bounded, a malformed file is ignored with a note, and a path it names is only
ever ``lstat``-ed through ``inspect.artifacts.recheck`` (the rules a dump search applies), never
read, followed out or run.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, TypedDict

from ..caches.location import user_cache_dir, write_cache_file
from ..core.values import Area, DriftKind, DumpFiles, DumpWriter, FileCheck, FileState, Problem
from ..lint.drifts import DumpLister
from ..fs.reader import read_regular
from ..core.units import count, size as readable
from ..lint.artifacts import recheck

FORMAT = 1
MAX_BYTES = 4 << 20  # the whole file
MAX_CHECKPOINTS = 32  # the newest are kept
MAX_DUMPS = 1_000  # per checkpoint (inspect.artifacts.MAX_FILES)
MAX_TEXT = 4096  # any one string (a path, a pattern)
INLINE = 3  # up to this many files named in the remedy itself (lint/drifts.py's INLINE_DUMPS)


class _WriterRow(TypedDict):
    path: str
    line: int
    code: str


class _DumpRow(TypedDict):
    path: str
    pattern: str
    possible: bool
    writer: _WriterRow | None


class _Entry(TypedDict):
    """One checkpoint's dumps, as the file holds them."""

    checkpoint: str
    created_at: str
    dumps: list[_DumpRow]


class _Writer(Protocol):
    @property
    def path(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def code(self) -> str: ...


class RecordedDump(Protocol):
    """What is recorded of a dump (``checkpoint.CheckpointDump``, a later layer)."""

    @property
    def path(self) -> str: ...
    @property
    def pattern(self) -> str: ...
    @property
    def possible(self) -> bool: ...
    @property
    def writer(self) -> _Writer | None: ...


def ledger_path(root: str) -> str:
    key = hashlib.sha256(os.fsencode(os.path.abspath(root))).hexdigest()[:32]
    return os.path.join(user_cache_dir(), "checkpoint-dumps", f"{key}.json")


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and 0 < len(value) <= MAX_TEXT and "\0" not in value else None


def _load(root: str) -> tuple[list[_Entry], str | None]:
    """(the valid checkpoint entries, newest last; why the file was ignored, or None)."""
    path = ledger_path(root)
    try:
        data = read_regular(path, MAX_BYTES, what="checkpoint dump list", follow=False)
    except FileNotFoundError:
        return [], None
    except OSError as exc:
        return [], f"cannot read it ({exc.strerror or exc})"
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return [], "not JSON"
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("checkpoints"), list):
        return [], "not a checkpoint dump list of this driftscan"
    if doc.get("root") != os.path.abspath(root):
        return [], "it is another environment's"
    out: list[_Entry] = []
    for entry in doc["checkpoints"][-MAX_CHECKPOINTS:]:
        if not isinstance(entry, dict) or _text(entry.get("checkpoint")) is None \
                or not isinstance(entry.get("dumps"), list):
            return [], "a malformed checkpoint entry"
        dumps: list[_DumpRow] = []
        for d in entry["dumps"][:MAX_DUMPS]:
            if not isinstance(d, dict) or _text(d.get("path")) is None or not isinstance(d.get("possible"), bool):
                return [], "a malformed dump entry"
            writer = d.get("writer")
            ok_writer = isinstance(writer, dict) and _text(writer.get("path")) is not None \
                and isinstance(writer.get("line"), int) and not isinstance(writer.get("line"), bool) \
                and _text(writer.get("code")) is not None
            dumps.append({"path": d["path"], "pattern": _text(d.get("pattern")) or "", "possible": d["possible"],
                          "writer": {"path": writer["path"], "line": writer["line"], "code": writer["code"]}
                          if ok_writer and isinstance(writer, dict) else None})
        out.append({"checkpoint": entry["checkpoint"], "created_at": _text(entry.get("created_at")) or "",
                    "dumps": dumps})
    return out, None


def record(root: str, checkpoint: str, created_at: str, dumps: Iterable[RecordedDump]) -> None:
    """Add ``checkpoint``'s dumps (``checkpoint.CheckpointDump`` values) to ``root``'s list.
    Checkpoints none of whose dumps is still on disk are dropped; a list that cannot be written
    is skipped (it is a cache)."""
    entries, _ = _load(root)  # a malformed list is replaced
    entries = [e for e in entries if e["checkpoint"] != checkpoint and any(os.path.lexists(d["path"])
                                                                          for d in e["dumps"])]
    new = [_row(d) for d in dumps if _text(d.path) is not None][:MAX_DUMPS]
    if new:
        entries.append({"checkpoint": checkpoint, "created_at": created_at, "dumps": new})
    if not entries and not os.path.lexists(ledger_path(root)):
        return
    doc = {"format": FORMAT, "root": os.path.abspath(root), "checkpoints": entries[-MAX_CHECKPOINTS:]}
    write_cache_file(ledger_path(root), json.dumps(doc, indent=1).encode())


def _row(d: RecordedDump) -> _DumpRow:
    w = d.writer
    return {"path": d.path, "pattern": d.pattern, "possible": bool(d.possible),
            "writer": {"path": w.path, "line": w.line, "code": w.code} if w else None}


def recorded_checks(root: str, named: set[str], owned: Callable[[str], bool] | None, exclude: Sequence[str],
                    dump_list: DumpLister | None = None) -> tuple[list[FileCheck], list[Problem]]:
    """The drifts of the dumps ``root``'s checkpoints recorded that are still on disk and not in
    ``named`` (the dump paths the audit found itself), and a note when the list was ignored."""
    entries, why = _load(root)
    notes = [Problem(ledger_path(root), f"the dumps recorded by checkpoints ignored: {why}")] if why else []
    seen = set(named)
    checks: list[FileCheck] = []
    for entry in reversed(entries):  # the newest checkpoint names a dump first
        groups: dict[tuple[str, bool], list[_DumpRow]] = {}
        for d in entry["dumps"]:
            if d["path"] not in seen:
                groups.setdefault((d["pattern"], d["possible"]), []).append(d)
        for (pattern, possible), dumps in groups.items():
            left = recheck([d["path"] for d in dumps], owned=owned, exclude=exclude)
            if not left.paths:
                continue
            seen.update(left.paths)
            writers = tuple(dict.fromkeys(DumpWriter(w["path"], w["line"], w["code"])
                                          for w in (d["writer"] for d in dumps) if w))
            checks.append(_check(entry, pattern, possible, left.paths, left.total_bytes, writers, dump_list))
    return checks, notes


def _check(entry: _Entry, pattern: str, possible: bool, paths: tuple[str, ...], size: int,
           writers: tuple[DumpWriter, ...], dump_list: DumpLister | None) -> FileCheck:
    cp = entry["checkpoint"]
    where = pattern or os.path.dirname(paths[0])
    by = ", ".join(f"{w.path}:{w.line} ({w.code})" for w in writers) or "code no longer installed"
    recorded: FileState = {"recorded_by": cp}
    if entry["created_at"]:
        recorded["recorded_at"] = entry["created_at"]
    list_file = dump_list(paths, ()) if dump_list is not None and len(paths) > INLINE else None
    quoted = shlex.quote(list_file) if list_file else None
    what = "possible dump file" if possible else "file"
    evidence = (f"{count(len(paths), what)}, {readable(size)}, that the checkpoint {cp} recorded as dumps of {by}"
                f"{f' (matching {pattern})' if pattern else ''}; the code that named them is gone or no longer names "
                "them (a reinstall or an upgrade), and they are still on disk, owned by no distribution; no reinstall "
                "removes them")
    if possible:
        listing = f"xargs -0 ls -l -- < {quoted}" if quoted else "ls -l -- " + " ".join(shlex.quote(p) for p in paths)
        remedy = (f"review them ({listing}); if they are the debug code's dumps, remove them yourself: driftscan "
                  "does not offer to delete possible dumps")
        actual: FileState = {"possible_artifacts": list(paths), "count": len(paths), "bytes": size,
                             "written_by": [{"path": w.path, "line": w.line, "code": w.code} for w in writers]}
        if list_file:
            actual["list_file"] = list_file
        actual.update(recorded)
        return FileCheck(DriftKind.POSSIBLE_DEBUG_ARTIFACTS, where, os.path.dirname(where), None, {}, actual,
                         evidence + "; driftscan does not offer to delete possible dumps", area=Area.EXTERNAL,
                         remedy_hint=remedy)
    remedy = (f"{len(paths)} files; list in {list_file} (review them: xargs -0 ls -l -- < {quoted}), then: "
              f"xargs -0 rm -- < {quoted}") if quoted else "rm -- " + " ".join(shlex.quote(p) for p in paths)
    found = DumpFiles(where, paths, size, writers, list_file=list_file)
    return FileCheck(DriftKind.DEBUG_ARTIFACTS, where, os.path.dirname(where), None, {}, recorded,
                     evidence + "; review them, then remove them", area=Area.EXTERNAL, remedy_hint=remedy, dumps=found)
