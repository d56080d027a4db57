"""``driftscan reapply CHECKPOINT``: bring a checkpoint's patches back after a reinstall or upgrade.

For each patched file of the checkpoint, the original it was changed from is looked for and
verified against the checkpoint's ``hash_before``: the checkpoint's ``originals/`` copy (or the
reverse of its patch), the installed file when it is that very original (its RECORD row
matches it and carries that hash), an original kept from an earlier run (``keptoriginals``), or
the member of the checkpoint's release in ``--wheels DIR`` / a ``--fetch`` download. Every debug
rule (every DBG1 code, opt-in ones too) runs on the saved content and on that original *now*,
and each finding's origin is decided against it (the checkpoint's own findings list is not
trusted: it may be stale, unknown or tampered). Without a verified original the origin is
unknown, and the file is refused unless ``keep_findings``. A ``.py`` file is read and written in
the encoding it declares (BOM, PEP 263 cookie), never copied as binary.

By default (``exclude_findings``) the injected debug code is removed statement by statement
(``excise``): the statements that make up each finding, then what only they used — but a name
another module reads (the distribution's other modules, the checkpoint's saved files) stays
defined; every other added line stays, the result must parse, and the rules run once more on
the result: a file that would still carry injected debug code is refused. ``keep_findings``
writes it back, each such finding listed. The installed file must then be the verified original
of its distribution (it matches its RECORD row): the same original as the checkpoint's takes the
changes as they are; a new version gets them by a three-way merge. A file with a conflicting
hunk gets nothing, unless ``partial``: then its clean hunks are applied and the conflicting ones
are written as a ``.rej`` beside the checkpoint (``<CHECKPOINT>.rej/<relpath>.rej``); a file
holding the clean hunks without the conflicting ones is ``partial`` again on a later run. A file
that already carries the wanted changes is ``already`` — decided from its content alone (the
wanted result is the file, or merging it changes nothing); the ledger of what reapply wrote
(user cache dir) only words the answer. A file still holding the checkpoint's saved content (no
reinstall since) is ``already`` too.

Added files of the checkpoint that are gone are recreated (not when the rules find debug code in
them, unless they are a renamed original or ``keep_findings``; a ``.pth`` only when every module
its import lines name resolves afterwards); a package file the checkpoint recorded as missing is
deleted again when the installed file is its verified original (a RECORD of the environment
lists it and it matches). A file not applied (gone, its distribution not installed, its place
taken) is ``skipped`` with the reason: the report's ``not_applied`` lists it.
"""

from __future__ import annotations

import ast
import enum
import hashlib
import io
import json
import os
import re
import stat
import sys
import time
import tokenize
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, BinaryIO

from pydantic import BaseModel, Field

from ..caches.location import refuse_inside, user_cache_dir, write_cache_file
from ..pipeline.changes import record_rows
from .checkpoint import CheckpointFile, CheckpointIndex, environment_root, saved_path
from ..environment.target import environment_roots
from ..core.errors import ConfigError
from ..core.units import count, plural, size as readable
from .excise import excise, own_nodes, statement_blocks
from ..fs.reader import inside, os_error, read_regular
from ..pristine.kept import OriginalFinder, keep, kept, matches
from ..core.values import Distribution, DriftKind, Finding, Origin, RecordEntry, Target
from ..formats.patch import (MergeResult, PatchError, PatchTooLarge, added_line_numbers, apply_hunks, diff_hunks,
                             format_hunks, make_patch, merge3, parse_patch, reverse_hunks)
from ..lint.artifacts import recheck
from ..fs.paths import printable
from ..procs.model import RestartOut
from .plan import normalize
from .restore import (Bytecode, _missing_parents, close_journal, mode_for, open_journal, replace_file, verify_fd,
                      verify_file)
from ..fs.confined import read_below, rel_below, replace_below, unlink_below
from ..formats.record import hash_text, parse_hash

if TYPE_CHECKING:
    from ..lint import Rule

READ_MAX = 64 << 20
DIFF_MAX_LINES = 400  # lines of each resulting diff shown (the JSON's ``diff`` is cut there, and says so)
# File-level problems (not parsed, not read, too large, too complex): the findings are not known.
_PROBLEMS = ("DBG001", "DBG002", "DBG003", "DBG004")
# Files no RECORD lists, written again from the checkpoint's copy when absent: a startup .pth or
# sitecustomize is one (saved as its own kind, so reapply's report says what it is).
_ADDED = (DriftKind.ADDED, DriftKind.STARTUP_CODE)
# Edited package files, reapplied onto the new version: a record-rewritten one is an edit whose
# RECORD row was rewritten too (reapply writes the edit, never a RECORD row).
_EDITED = (DriftKind.MODIFIED, DriftKind.RECORD_REWRITTEN)


class Status(str, enum.Enum):
    """What became of one file (the same word in the dry run and after ``--yes``, except planned →
    applied or partial)."""

    PLANNED = "planned"
    APPLIED = "applied"
    PARTIAL = "partial"  # the clean hunks written, the conflicting ones in a .rej (--partial)
    ALREADY = "already"  # the installed file has the changes already
    UNCHANGED = "unchanged"  # nothing left to write once the debug code is left out
    CONFLICT = "conflict"
    SKIPPED = "skipped"
    REFUSED = "refused"
    FAILED = "failed"


class ConflictOut(BaseModel):
    hunk: int
    base_start: int
    reason: str


class FindingOut(BaseModel):
    code: str
    line: int
    origin: Origin | None = Field(default=None, description="injected | upstream, decided at reapply time against "
                                                          "the verified original; null: no original")


class RemovedOut(BaseModel):
    start_line: int = Field(description="first line of the statement in the saved content")
    end_line: int
    text: str = Field(description="its first line, whitespace collapsed")
    reason: str


class Action(str, enum.Enum):
    """What reapply does to one file (the word in the report's ``action``)."""

    APPLY = "apply"  # the same original
    MERGE = "merge"  # the version changed
    RECREATE = "recreate"  # an added file
    COPY = "copy"  # binary
    DELETE = "delete"  # a file the checkpoint recorded as missing


class LineRange(BaseModel):
    start_line: int
    end_line: int


class ReapplyFile(BaseModel):
    relpath: str
    path: str
    distribution: str | None = None
    version_then: str | None = None
    version_now: str | None = None
    action: Action = Field(description="apply (same original) | merge (the version changed) | recreate (an added "
                                    "file) | copy (binary) | delete (a file the checkpoint recorded as missing)")
    status: Status = Field(default=Status.PLANNED, description="planned | applied | partial | already | "
                                                              "unchanged | conflict | skipped | refused | failed")
    reason: str = ""
    hunks: int = 0
    dropped: int = Field(default=0, description="hunks left out entirely (debug code only)")
    conflicts: list[ConflictOut] = Field(default_factory=list)
    original: str | None = Field(default=None, description="where the verified original the changes are "
                                                           "measured from came from")
    findings: list[FindingOut] = Field(default_factory=list,
                                       description="debug findings of the saved content, origins decided now")
    removed: list[RemovedOut] = Field(default_factory=list,
                                      description="debug statements removed from the saved content")
    kept: list[LineRange] = Field(default_factory=list,
                                  description="lines the patch added that stay (numbered as in the saved content)")
    diff: str | None = Field(default=None, description="the change this file gets: current → result, a -p0 "
                                                       "unified diff (the dry run's preview; also after --yes)")
    rej: str | None = Field(default=None, description="the .rej file with the conflicting hunks (--partial)")
    written_findings: list[FindingOut] = Field(
        default_factory=list, description="injected debug findings this file gets back (--keep-findings)")
    excluded_debug: bool = Field(default=False, description="skipped because it is (or only serves) injected debug "
                                                            "code: left out on purpose, not a failure")
    encoding: str | None = Field(default=None, description="the source encoding it is read and written in, when "
                                                           "not UTF-8 (PEP 263)")
    creates: list[str] = Field(default_factory=list, description="directories written first (a recreated file's "
                                                                 "missing parents), outermost first")


class ReapplyReport(BaseModel):
    dry_run: bool
    source: str = Field(description="the checkpoint re-applied")
    keep_findings: bool = Field(default=False, description="injected debug code is written back (--keep-findings)")
    target: str | None = Field(default=None, description="the environment written to")
    other_target: str | None = Field(default=None, description="set when the target is not the environment the "
                                                               "checkpoint was taken of: that one")
    checkpoint: str | None = Field(default=None, description="the checkpoint written first (with --yes)")
    files: list[ReapplyFile] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    bytecode_not_removed: list[str] = Field(default_factory=list, description=(
        "bytecode files of a file written that Python may run instead of it and that could not be checked "
        "or removed (exit bit 2)"))
    duration_seconds: float | None = None
    restart_needed: list[RestartOut] | None = Field(default=None, description=(
        "after the writes: the processes of the environment that still run the old code, each with what to "
        "restart (docs/procs.md); null when nothing was written or /proc could not be read (notes say why)"))

    @property
    def failed(self) -> list[ReapplyFile]:
        return [f for f in self.files if f.status in (Status.CONFLICT, Status.FAILED, Status.REFUSED, Status.PARTIAL)]

    @property
    def not_applied(self) -> list[ReapplyFile]:
        """What was (or, in a dry run, would be) left undone: a conflict, a partial write (planned
        or done), a file skipped for any reason but being injected debug code."""
        return [f for f in self.files if f.status in (Status.CONFLICT, Status.PARTIAL)
                or (f.status is Status.PLANNED and f.rej)
                or (f.status is Status.SKIPPED and not f.excluded_debug)]

    @property
    def refused_or_failed(self) -> list[ReapplyFile]:
        return [f for f in self.files if f.status in (Status.FAILED, Status.REFUSED)]


@dataclass(frozen=True)
class Write:
    item: ReapplyFile
    path: str
    data: bytes | None  # None: delete the file (it must still be ``original``'s verified bytes)
    mode: int
    ledger: tuple[str, str] | None = None  # (relpath, digest of what was wanted)
    rej: tuple[str, str] | None = None  # (path of the .rej, its text)
    entry: RecordEntry | None = None  # the RECORD row a deletion verifies against first


@dataclass(frozen=True)
class Options:
    exclude_findings: bool = True
    partial: bool = False
    wheels: tuple[str, ...] = ()
    fetch: bool = False
    finder: OriginalFinder | None = None  # --wheels / --fetch, when given
    sites: tuple[str, ...] = ()  # the target's site-packages: where a .pth's imports must resolve
    # Set when the environment is the one the checkpoint names (not the user): the directories a
    # RECORD of it lists files in, the only places an added file is recreated.
    record_dirs: frozenset[str] | None = None


@dataclass
class ReapplyPlan:
    report: ReapplyReport
    writes: list[Write] = field(default_factory=list)
    ledger_key: str = ""
    roots: tuple[str, ...] = ()  # the environment written to: every write stays below one of them


def _text(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return None if "\0" in text else text


def _is_py(path: str) -> bool:
    return path.endswith((".py", ".pyw"))


def source_encoding(data: bytes) -> str | None:
    """The encoding Python reads ``data`` in (BOM, PEP 263 cookie; default UTF-8), or None when
    the declaration is invalid. Only the bytes are looked at; nothing is run."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except (SyntaxError, LookupError):
        return None
    return encoding


def _decode(data: bytes, path: str) -> tuple[str | None, str]:
    """(``data`` as text, its encoding): a Python source by its declared encoding, else UTF-8."""
    encoding = (source_encoding(data) or "") if _is_py(path) else "utf-8"
    if not encoding:
        return None, ""
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return None, encoding
    return (None if "\0" in text else text), encoding


def _encode(text: str, path: str, encoding: str) -> tuple[bytes | None, str]:
    """``text`` encoded as Python will read it back: the encoding its own BOM/cookie declares
    (``encoding`` tells whether it had a BOM); (None, why) when it cannot be."""
    if _is_py(path):
        bom = b"\xef\xbb\xbf" if encoding == "utf-8-sig" else b""
        head = "".join(text.splitlines(keepends=True)[:2]).encode("utf-8", "replace")
        declared = source_encoding(bom + head)
        if declared is None:
            return None, "the result declares an encoding Python does not accept: not written"
        encoding = declared
    try:
        return text.encode(encoding), ""
    except (UnicodeEncodeError, LookupError) as exc:
        return None, f"the result cannot be encoded in {encoding} (its declared encoding): {exc}; not written"


def _read_saved(checkpoint: str, rel: str | None) -> bytes | None:
    """A file of the checkpoint, opened below its directory without following any symlink
    (``files/`` a link to ``~/.ssh`` reads nothing); None when absent, outside or unreadable."""
    try:
        path = saved_path(checkpoint, rel)
    except ConfigError:
        return None  # an index naming a place outside the checkpoint: that entry is unusable
    if path is None:
        return None
    try:
        return read_below(checkpoint, rel or "", READ_MAX)
    except (OSError, ValueError):
        return None


def _parses(path: str, text: str) -> str | None:
    if not path.endswith((".py", ".pyw")):
        return None
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return f"the result does not parse ({type(exc).__name__}: {exc})"
    return None


def _dist_now(name: str | None, dists: Sequence[Distribution]) -> Distribution | None:
    if name is None:
        return None
    return next((d for d in dists if normalize(d.name) == normalize(name)), None)


def _begin(plan: ReapplyPlan, item: ReapplyFile, f: CheckpointFile, root: str, roots: Sequence[str]) -> str | None:
    """List ``item`` in the report and return the path it would write, or None (failed: outside)."""
    plan.report.files.append(item)
    try:
        path = _target_path(root, roots, _real_rel(f))
    except ConfigError as exc:
        item.status, item.reason = Status.FAILED, str(exc)
        return None
    item.path = printable(path)
    return path


def _real_rel(f: CheckpointFile) -> str:
    if not f.relpath_hex:
        return f.relpath
    try:
        return os.fsdecode(bytes.fromhex(f.relpath_hex))
    except ValueError:
        raise ConfigError(f"checkpoint names {f.relpath!r} with a malformed relpath_hex") from None


def _target_path(root: str, roots: Sequence[str], rel: str) -> str:
    parts = rel.split("/")
    if rel.startswith("/") or ".." in parts or "\0" in rel or not rel:
        raise ConfigError(f"checkpoint names {rel!r}: not a path inside the environment")
    path = os.path.join(root, *parts)
    if not any(inside(r, os.path.dirname(path)) for r in roots):
        raise ConfigError(f"{path}: resolves outside the environment root; not written")
    return path


# ---- findings and origins ------------------------------------------------------------------


def _debug_rules() -> list[type[Rule]]:
    """Every DBG1 rule, opt-in ones too (a debug ``print`` is injected code to leave out even
    though audit does not report it by default), and the file-level problem rules."""
    # Deferred: the rule engine loads libcst (73 modules, 195 ms measured); a refused or empty
    # reapply, and rendering a reapply report, never run a rule.
    from ..lint import default_rules

    return [r for r in default_rules() if r.CODE.startswith("DBG1") or r.CODE in _PROBLEMS]


def findings_of(data: bytes | str, path: str, encoding: str = "utf-8") -> list[Finding] | None:
    """Every debug rule's findings on ``data`` (text: encoded in ``encoding`` first, so its
    cookie reads true); None when the file could not be inspected (does not parse, too large, a
    rule failed): its findings are unknown."""
    from ..lint import RuleError, inspect_source  # deferred: libcst, 270 ms (see _debug_rules)

    if isinstance(data, str):
        try:
            data = data.encode(encoding)
        except (UnicodeEncodeError, LookupError):
            return None
    # One reapply asks about a saved file twice (its own plan, and what other modules read): once.
    key = (_sha(data), path)
    if key in _FINDINGS_MEMO:
        cached = _FINDINGS_MEMO[key]
        return None if cached is None else list(cached)
    try:
        found = inspect_source(data, path, _debug_rules(), prefilter=True)
    except RuleError:
        return None
    result = None if any(f.code in _PROBLEMS for f in found) else [f for f in found if f.code.startswith("DBG1")]
    if len(_FINDINGS_MEMO) >= _FINDINGS_MEMO_MAX:
        _FINDINGS_MEMO.clear()
    _FINDINGS_MEMO[key] = result
    return None if result is None else list(result)


_FINDINGS_MEMO: dict[tuple[str, str], list[Finding] | None] = {}
_FINDINGS_MEMO_MAX = 512  # entries (findings, not file contents)


def decide_origins(current: Sequence[Finding], original: Sequence[Finding], added: set[int]) -> list[Finding]:
    """Each finding ``upstream`` while the original has as many of the same code and normalised
    line, else ``injected`` — the extra ones counted on lines the patch added first, so a copy
    of an upstream line pasted elsewhere is the injected one, not the original's."""
    def norm(f: Finding) -> tuple[str, str]:
        return f.code, " ".join(f.snippet.split())

    have = Counter(norm(f) for f in original)
    wanted = Counter(norm(f) for f in current)
    extra = {k: max(0, n - have[k]) for k, n in wanted.items()}
    order = sorted(range(len(current)), key=lambda i: (current[i].line not in added, current[i].line))
    origin: dict[int, Origin] = {}
    for i in order:
        k = norm(current[i])
        if extra[k] > 0:
            extra[k] -= 1
            origin[i] = Origin.INJECTED
        else:
            origin[i] = Origin.UPSTREAM
    return [replace(f, origin=origin[i]) for i, f in enumerate(current)]


# ---- originals -----------------------------------------------------------------------------


def _find_original(checkpoint: str, f: CheckpointFile, ours: str | None, path: str, dist: Distribution | None,
                   finder: OriginalFinder | None) -> tuple[bytes | None, str, list[str]]:
    """(the verified original the checkpoint's file was changed from, where it came from, what was
    tried). Every candidate is checked against ``hash_before``; a file without one has none."""
    tried: list[str] = []
    if not f.hash_before:
        return None, "", ["the checkpoint gives no hash of the original (hash_before)"]
    saved = _read_saved(checkpoint, f.original)
    if saved is not None:
        if matches(f.hash_before, saved):
            keep(f.hash_before, saved)
            return saved, "the checkpoint's originals/", tried
        tried.append("the checkpoint's originals/ copy (does not match hash_before: not used)")
    else:
        tried.append("the checkpoint's originals/ (none saved)")
    if ours is not None:
        patch_data = _read_saved(checkpoint, f.patch)
        if patch_data is not None and (patch := _text(patch_data)) is not None:
            try:
                (file_patch,) = parse_patch(patch)
                base = apply_hunks(ours, reverse_hunks(file_patch.hunks)).encode("utf-8")
            except (PatchError, ValueError):
                base = None
            if base is not None and matches(f.hash_before, base):
                keep(f.hash_before, base)
                return base, "the checkpoint's patch, reversed", tried
    if _same_original(path, f, dist):
        try:
            current = read_regular(path, READ_MAX, follow=False)
        except OSError:
            current = None
        if current is not None and matches(f.hash_before, current):
            keep(f.hash_before, current)
            return current, f"the installed file (the verified original of {dist.key if dist else '?'})", tried
    tried.append("the installed file (not the original it was changed from)")
    found = kept(f.hash_before)
    if found is not None:
        return found, "an original kept from an earlier run (driftscan's cache)", tried
    tried.append("originals kept by earlier runs (none)")
    if f.distribution and f.version and f.record_path and finder is not None:
        data, where, notes = finder.find(f.distribution, f.version, f.record_path, f.hash_before, like=dist)
        if data is not None:
            return data, where, tried
        tried += notes
    else:
        tried += ["--wheels (not given)", "--fetch (not asked for)"]
    return None, "", tried


def _how_to_get(f: CheckpointFile) -> str:
    if f.distribution and f.version:
        return (f"pass --wheels DIR holding {f.distribution} {f.version}'s wheel (pip download --no-deps "
                f"{f.distribution}=={f.version} -d DIR) or --fetch")
    return "pass --wheels DIR or --fetch"


def _same_original(path: str, f: CheckpointFile, dist: Distribution | None) -> bool:
    """The installed file is the verified original and the very one the checkpoint's file was
    changed from (its RECORD hash is the checkpoint's hash_before)."""
    if dist is None or not f.hash_before:
        return False
    entry = record_rows(dist).get(os.path.normpath(path))
    return entry is not None and entry.hash is not None and hash_text(entry.hash) == f.hash_before \
        and verify_file(path, entry)


def _listed(path: str, dists: Sequence[Distribution]) -> RecordEntry | None:
    """The RECORD row of this environment listing ``path`` (any distribution), or None."""
    key = os.path.normpath(path)
    for d in dists:
        entry = record_rows(d).get(key)
        if entry is not None:
            return entry
    return None


def _same(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def checked_environment(target: Target, index: CheckpointIndex, dists: Sequence[Distribution]) -> frozenset[str]:
    """The environment the checkpoint names, checked to be that environment before anything is
    written into it: the target's prefix is the checkpoint's (by real path), it is a Python
    environment (a venv's ``pyvenv.cfg``) with installed distributions whose RECORD lists files.
    Returns the directories those RECORDs list files in; ConfigError saying what failed."""
    if index.venv:
        if not (target.venv and _same(target.venv, index.venv)):
            raise ConfigError(f"the checkpoint names {printable(index.venv)} as its environment, but it resolves to "
                              f"another prefix: nothing written (name the environment with --venv)")
        try:
            cfg = os.lstat(os.path.join(target.venv, "pyvenv.cfg"))
        except OSError:
            cfg = None
        if cfg is None or not stat.S_ISREG(cfg.st_mode):
            raise ConfigError(f"the checkpoint names {printable(index.venv)} as its environment, but it is not a "
                              "virtual environment (no pyvenv.cfg): nothing written (name the environment with --venv)")
    dirs = frozenset(os.path.dirname(p) for d in dists for p in record_rows(d))
    if not dirs:
        raise ConfigError(f"the checkpoint names {printable(index.venv or ', '.join(index.site_packages))} as its "
                          "environment, but no installed distribution there has a RECORD: nothing written (name the "
                          "environment with --venv)")
    return dirs


def _is_original(path: str, dist: Distribution | None) -> bool:
    if dist is None:
        return False
    entry = record_rows(dist).get(os.path.normpath(path))
    return entry is not None and verify_file(path, entry)


# ---- the ledger of what reapply wrote ------------------------------------------------------


def _sha(data: str | bytes) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def ledger_path(root: str) -> str:
    key = hashlib.sha256(os.fsencode(os.path.realpath(root))).hexdigest()[:24]
    return os.path.join(user_cache_dir(), "reapply", f"{key}.json")


def _load_ledger(root: str) -> dict[str, object]:
    try:
        data = json.loads(read_regular(ledger_path(root), 16 << 20, follow=False))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save_ledger(root: str, rows: dict[str, object]) -> str | None:
    return write_cache_file(ledger_path(root), json.dumps(rows, sort_keys=True).encode("utf-8"), prefix=".ledger-")


# ---- names other modules read --------------------------------------------------------------

NAMES_FILE_MAX = 1 << 20  # bytes of one module read for the names it reads elsewhere
NAMES_FILES_MAX = 5000  # modules of one distribution read
NAMES_TOTAL_MAX = 32 << 20  # bytes read for one distribution


def names_read(data: bytes) -> set[str]:
    """The names a module reads from another one: attributes (``a.RETRIES``, ``obj.enabled``)
    and ``from … import NAME``. Tokens only (data, never run; strings and comments are no use)."""
    out: set[str] = set()
    prev, state = "", ""  # state: "from" (a from-import's module), "import" (its names)
    try:
        for tok in tokenize.tokenize(io.BytesIO(data).readline):
            if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                state = ""
            elif tok.type == tokenize.NAME:
                if tok.string == "from" and prev in ("", "\n", ";", ":"):  # a statement's start, not yield/raise
                    state = "from"
                elif tok.string == "import" and state == "from":
                    state = "import"
                elif state == "import" and prev in ("import", ",", "("):
                    out.add(tok.string)
                elif prev == "." and state != "from":
                    out.add(tok.string)
            if tok.type not in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING):
                prev = "\n" if tok.type == tokenize.NEWLINE else tok.string
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError, LookupError, RecursionError):
        pass  # what was read up to there counts
    return out


def names_read_by_kept_code(data: bytes, path: str) -> set[str]:
    """``names_read`` of a saved file of the checkpoint, without what its own debug code reads: a
    statement holding a debug finding (and a guard whose test holds one) is skipped, and an
    assignment's target is no read. Another file's ``LlamaDecoderLayer._dumped_once`` flag
    is then no reason to keep this file's flag. None of it is run."""
    encoding = source_encoding(data) or "utf-8"
    try:
        tree = ast.parse(data.decode(encoding))
    except (SyntaxError, ValueError, RecursionError, MemoryError, UnicodeDecodeError, LookupError):
        return names_read(data)
    found = findings_of(data, path, encoding)
    if found is None:
        return names_read(data)
    debug_lines = {f.line for f in found}
    out: set[str] = set()

    def visit(stmts: list[ast.stmt]) -> None:
        for node in stmts:
            inner = statement_blocks(node)
            last = max(node.lineno, inner[0][0].lineno - 1) if inner else node.end_lineno or node.lineno  # header
            if not debug_lines.intersection(range(node.lineno, last + 1)):
                out.update(n.attr for n in own_nodes(node) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load))
                if isinstance(node, ast.ImportFrom):
                    out.update(a.name for a in node.names)
            for block in inner:
                visit(block)

    visit(tree.body)
    return out


def names_defined(text: str, lines: set[int]) -> set[str]:
    """The names statements starting on ``lines`` of ``text`` define that another module could
    read: module-level and class-level names (assigned, functions, classes, ``for``/``with``
    targets), a function's ``global`` names, and attributes (``self.enabled = True``). A
    function's locals and an import's module name are no other module's business: counting them
    would keep ``import json`` for every ``response.json()`` in the distribution."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    out: set[str] = set()

    def target(node: ast.AST, names: bool, globals_: set[str]) -> None:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and (names or sub.id in globals_):
                out.add(sub.id)
            elif isinstance(sub, ast.Attribute):
                out.add(sub.attr)

    def visit(stmts: list[ast.stmt], in_function: bool, globals_: set[str]) -> None:
        for node in stmts:
            here = node.lineno in lines
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if here and not in_function:
                    out.add(node.name)
                declared = {n for sub in ast.walk(node) if isinstance(sub, ast.Global) for n in sub.names}
                visit(node.body, True, declared)
                continue
            if isinstance(node, ast.ClassDef):
                if here and not in_function:
                    out.add(node.name)
                visit(node.body, in_function, globals_)
                continue
            if here:
                if isinstance(node, ast.Assign):
                    for t in node.targets:
                        target(t, not in_function, globals_)
                elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
                    target(node.target, not in_function, globals_)
                elif isinstance(node, (ast.With, ast.AsyncWith)):
                    for item in node.items:
                        if item.optional_vars is not None:
                            target(item.optional_vars, not in_function, globals_)
            for block in statement_blocks(node):
                visit(block, in_function, globals_)

    visit(tree.body, False, set())
    return out


class NameIndex:
    """The names other modules read, for ``excise``'s ``keep_names``: every other ``.py`` of the
    file's installed distribution (its RECORD list) and every saved or added ``.py`` of the
    checkpoint but added files of debug code. Read as data, bounded: files over NAMES_FILE_MAX,
    or past NAMES_FILES_MAX / NAMES_TOTAL_MAX per distribution, are not read; only the modules a
    plain byte search finds a candidate name in are tokenized."""

    def __init__(self, checkpoint: str, index: CheckpointIndex, root: str, roots: Sequence[str] = ()) -> None:
        self._checkpoint = checkpoint
        self._index = index
        self._root = root
        self._roots = tuple(roots) or (root,)  # a RECORD row naming a file elsewhere is not read
        self._by_dist: dict[str, dict[str, bytes]] = {}
        self._saved: dict[str, bytes] | None = None
        self._read: dict[tuple[str, int], set[str]] = {}

    def _dist_files(self, dist: Distribution) -> dict[str, bytes]:
        got = self._by_dist.get(dist.metadata_dir)
        if got is None:
            got, total = {}, 0
            for path in record_rows(dist):
                if not _is_py(path) or len(got) >= NAMES_FILES_MAX or total >= NAMES_TOTAL_MAX:
                    continue
                if not any(inside(r, os.path.dirname(path)) for r in self._roots):
                    continue
                try:
                    data = read_regular(path, NAMES_FILE_MAX, follow=False)
                except (OSError, ConfigError):
                    continue
                total += len(data)
                got[path] = data
            self._by_dist[dist.metadata_dir] = got
        return got

    def _saved_files(self) -> dict[str, bytes]:
        if self._saved is None:
            self._saved = {}
            for f in self._index.files:
                if not f.in_env or not f.content or not _is_py(f.relpath):
                    continue
                data = _read_saved(self._checkpoint, f.content)
                if data is None or len(data) > NAMES_FILE_MAX:
                    continue
                if f.kind in _ADDED and findings_of(data, f.relpath) != []:
                    continue  # a debug helper left out: what it reads is no reason to keep anything
                self._saved[os.path.normpath(os.path.join(self._root, *f.relpath.split("/")))] = data
        return self._saved

    def read_elsewhere(self, path: str, dist: Distribution | None, candidates: set[str]) -> set[str]:
        """Those of ``candidates`` another module reads."""
        if not candidates:
            return set()
        here = os.path.normpath(path)
        hit = re.compile(rb"\b(?:" + b"|".join(re.escape(n.encode()) for n in sorted(candidates)) + rb")\b")
        out: set[str] = set()
        sources = [self._saved_files()] + ([self._dist_files(dist)] if dist is not None else [])
        for i, files in enumerate(sources):
            for other, data in files.items():
                if other == here or not hit.search(data):
                    continue
                found = self._read.get((other, i))
                if found is None:
                    found = self._read[(other, i)] = names_read_by_kept_code(data, other) if i == 0 \
                        else names_read(data)
                out |= found & candidates
        return out


# ---- .pth files ------------------------------------------------------------------------------


def pth_imports(text: str) -> list[str] | None:
    """The modules the ``import`` lines of a .pth import (site.py runs those lines); None when one
    of them is not plain Python. Parsed as data, never run."""
    mods: list[str] = []
    for line in text.splitlines():
        if not line.startswith(("import ", "import\t")):
            continue
        try:
            tree = ast.parse(line)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                mods.append(node.module)
    return mods


def _module_resolves(name: str, roots: Sequence[str], coming: set[str]) -> bool:
    """``name`` found on disk in the environment's site directories ``roots`` (or about to be
    written there: ``coming``), or a standard-library / built-in module."""
    top = name.split(".")[0]
    if top in sys.builtin_module_names or top in getattr(sys, "stdlib_module_names", ()):
        return True
    parts = name.split(".")
    for root in roots:
        base = os.path.join(root, *parts)
        if os.path.isdir(base) or os.path.isfile(base + ".py") or base + ".py" in coming \
                or os.path.join(base, "__init__.py") in coming:
            return True
        folder = os.path.dirname(base)
        try:
            listing = os.listdir(folder)
        except OSError:
            listing = []
        if any(n.startswith(parts[-1] + ".") and n.endswith((".so", ".pyd", ".pyc")) for n in listing):
            return True
    return False


# ---- planning ------------------------------------------------------------------------------


def _other_environment(target: Target, index: CheckpointIndex) -> str | None:
    """The checkpoint's environment when ``target`` is another one, else None."""
    if index.venv:
        return None if target.venv and _same(target.venv, index.venv) else index.venv
    if index.site_packages:
        mine = environment_roots(target)
        return None if any(_same(s, m) for s in index.site_packages for m in mine) else ", ".join(index.site_packages)
    return None


def plan_reapply(checkpoint: str, index: CheckpointIndex, target: Target, dists: Sequence[Distribution],
                 only: Sequence[str] = (), exclude_findings: bool = True, *, keep_findings: bool = False,
                 partial: bool = False, wheels: Sequence[str] = (), fetch: bool = False,
                 from_checkpoint: bool = False) -> ReapplyPlan:
    """Plan the reapply. Injected debug code is left out unless ``keep_findings`` (or the older
    ``exclude_findings=False``). ``from_checkpoint``: the environment is the one the checkpoint
    names, not one the user named: it is checked to be that environment first
    (``checked_environment``), and added files go only where a RECORD of it lists files."""
    root = environment_root(target)
    if root is None:
        raise ConfigError("reapply needs an environment (--venv or --site-packages)")
    roots = environment_roots(target)
    exclude = exclude_findings and not keep_findings
    refuse_inside(roots)
    record_dirs = checked_environment(target, index, dists) if from_checkpoint else None
    finder = OriginalFinder(wheels, fetch, target.python_version, target.venv) if wheels or fetch else None
    options = Options(exclude, partial, tuple(wheels), fetch, finder, tuple(target.site_packages), record_dirs)
    plan = ReapplyPlan(ReapplyReport(dry_run=True, source=checkpoint, keep_findings=not exclude,
                                     target=printable(target.venv or root),
                                     other_target=_other_environment(target, index)))
    plan.roots = tuple(roots)
    if record_dirs is not None:
        plan.report.notes.append(
            f"the environment written to is the one the checkpoint names, {printable(target.venv or root)}: checked "
            f"to be that environment (same prefix{', a pyvenv.cfg' if target.venv else ''}, "
            f"{count(sum(1 for d in dists if d.entries), 'distribution')} with a RECORD); only files a RECORD of it "
            "lists, and added files that are absent in a directory a RECORD of it lists, are written")
    ledger = _load_ledger(root)
    names = NameIndex(checkpoint, index, root, roots)
    wanted = [o.strip("/") for o in only]
    chosen = [f for f in index.files if f.in_env
              and (not wanted or any(f.relpath == w or f.relpath.startswith(w + "/") for w in wanted))]
    # A .pth last: whether what it imports is there after the reapply depends on the other files.
    chosen.sort(key=lambda f: f.relpath.endswith(".pth"))
    # A rename is a missing package file plus an added file with its very content.
    originals_moved = {f.hash_before: f for f in index.files if f.kind is DriftKind.MISSING and f.hash_before}
    try:
        for f in chosen:
            _plan_one(plan, checkpoint, f, root, roots, dists, options, ledger, originals_moved, index, names)
    finally:
        if finder is not None:
            finder.close()
    skipped_model = sum(1 for f in index.files if not f.in_env)
    if skipped_model:
        copies = "its copy is" if skipped_model == 1 else "their copies are"
        plan.report.notes.append(f"{count(skipped_model, 'model-directory file')} not re-applied: no reinstall "
                                 f"touches a model directory ({copies} in the checkpoint's files/)")
    if index.dumps:
        # The code that wrote them may be gone since the reinstall: the checkpoint's list says where.
        left = recheck(d.path for d in index.dumps)
        if left.paths:
            shown = ", ".join(printable(p) for p in left.paths[:3]) + (", …" if len(left.paths) > 3 else "")
            are, them = ("is", "it") if len(left.paths) == 1 else ("are", "them")
            plan.report.notes.append(f"{len(left.paths):,} of the {count(len(index.dumps), 'dump file')} the "
                                     f"checkpoint lists {are} still on disk ({readable(left.total_bytes)}: "
                                     f"{shown}); no reinstall or reapply removes {them} (review, then delete)")
    return plan


def _plan_one(plan: ReapplyPlan, checkpoint: str, f: CheckpointFile, root: str, roots: Sequence[str],
              dists: Sequence[Distribution], options: Options, ledger: dict[str, object], moved: dict[str, CheckpointFile],
              index: CheckpointIndex, names: NameIndex) -> None:
    saved = _read_saved(checkpoint, f.content) if f.content else None
    # A Python source in any declared encoding takes the statement-level path, never the copy.
    if f.patch or (f.kind in _EDITED and saved is not None and _decode(saved, f.relpath)[0] is not None):
        _plan_patched(plan, checkpoint, f, root, roots, dists, options, ledger, names)
    elif f.kind in _ADDED and f.content:
        _plan_added(plan, checkpoint, f, root, roots, options, moved)
    elif f.kind in _EDITED and f.content:
        _plan_copied(plan, checkpoint, f, root, roots, dists)
    elif f.kind is DriftKind.MISSING:
        _plan_missing(plan, f, root, roots, dists, index)
    elif f.kind in _EDITED:
        plan.report.files.append(ReapplyFile(
            relpath=f.relpath, path="", action=Action.COPY, distribution=f.distribution, version_then=f.version,
            status=Status.SKIPPED, reason=f"its content was not saved in the checkpoint ({f.not_copied or 'no copy'})"))


def _plan_added(plan: ReapplyPlan, checkpoint: str, f: CheckpointFile, root: str, roots: Sequence[str],
                options: Options, moved: dict[str, CheckpointFile]) -> None:
    item = ReapplyFile(relpath=f.relpath, path="", action=Action.RECREATE, distribution=f.distribution)
    path = _begin(plan, item, f, root, roots)
    if path is None:
        return
    data = _read_saved(checkpoint, f.content)
    if data is None:
        item.status, item.reason = Status.FAILED, "its copy in the checkpoint is unreadable"
        return
    renamed = next((m for h, m in moved.items() if matches(h, data)), None)
    if renamed is not None:
        item.reason = f"renamed from {renamed.relpath} (its original content)"
    if renamed is None and _is_py(path):
        found = findings_of(data, path)
        if found is None and options.exclude_findings:
            item.status, item.reason = Status.REFUSED, ("an added file the debug rules cannot inspect (it does not parse "
                                                   "or is too large): not recreated (--keep-findings brings it back)")
            return
        item.findings = [FindingOut(code=x.code, line=x.line, origin=Origin.INJECTED) for x in found or []]
        if found and options.exclude_findings:
            item.status, item.reason = Status.SKIPPED, "an added file with debug findings: left out (--keep-findings " \
                                                  "brings it back)"
            item.excluded_debug = True
            return
    if options.record_dirs is not None and os.path.dirname(os.path.normpath(path)) not in options.record_dirs:
        item.status, item.reason = Status.REFUSED, ("the environment is the one the checkpoint names, and no RECORD of it "
                                               "lists a file in this directory: not recreated (name the environment "
                                               "with --venv to recreate it there)")
        return
    if os.path.lexists(path):
        try:
            same = read_regular(path, READ_MAX, follow=False) == data
        except OSError:
            same = False
        note = f"{item.reason}; " if item.reason else ""
        item.status, item.reason = (Status.ALREADY, note + "present with the saved content") if same else \
            (Status.SKIPPED, note + "a different file is there now; not replaced")
        return
    if renamed is None and path.endswith(".pth"):
        text = _text(data)
        mods = pth_imports(text) if text is not None else None
        if mods is None:
            item.status, item.reason = Status.REFUSED, "a .pth whose import lines are not plain Python: not recreated"
            return
        coming = {os.path.normpath(w.path) for w in plan.writes if w.data is not None}
        missing = [m for m in mods if not _module_resolves(m, options.sites, coming)]
        if missing:
            debug = [p.relpath for p in plan.report.files if p.excluded_debug]
            item.status = Status.SKIPPED
            # Not a failure when every missing module is an added file left out as debug code.
            item.excluded_debug = all(any(r.endswith((m.replace(".", "/") + ".py", m.replace(".", "/") +
                                                      "/__init__.py")) for r in debug) for m in missing)
            item.reason = (f"it imports {', '.join(missing)}, which will not be in the environment"
                           + (" (it only served injected debug code left out)" if item.excluded_debug else "")
                           + ": not recreated (each interpreter start would print ModuleNotFoundError)")
            return
    text = _decode(data, path)[0]
    if text is not None:
        item.diff = _diff("", text, f.relpath)
    item.written_findings = list(item.findings)  # what --keep-findings brings back with it
    item.creates = [printable(d) for d in _missing_parents(path)]
    # The mode the index gives, without setuid/setgid/sticky or group/other write (replace_file).
    plan.writes.append(Write(item, path, data, f.mode if f.mode is not None else 0o644))


def _plan_missing(plan: ReapplyPlan, f: CheckpointFile, root: str, roots: Sequence[str],
                  dists: Sequence[Distribution], index: CheckpointIndex) -> None:
    """A package file the user deleted (or renamed): deleted again only when the installed file
    is the verified original of a RECORD of this environment, a regular file inside it."""
    dist = _dist_now(f.distribution, dists)
    item = ReapplyFile(relpath=f.relpath, path="", action=Action.DELETE, distribution=f.distribution,
                       version_then=f.version, version_now=dist.version if dist else None)
    path = _begin(plan, item, f, root, roots)
    if path is None:
        return
    moved_to = [a.relpath for a in index.files if a.kind in _ADDED and _same_hash(a.hash_after, f.hash_before)]
    why = f"renamed to {', '.join(moved_to)}" if moved_to else "deleted in the checkpoint"
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        item.status, item.reason = Status.ALREADY, f"{why}; already absent"
        return
    except OSError as exc:
        item.status, item.reason = Status.FAILED, f"cannot look at it: {os_error(exc)}"
        return
    entry = record_rows(dist).get(os.path.normpath(path)) if dist is not None else None
    if entry is None or entry.hash is None:
        item.status, item.reason = Status.SKIPPED, (f"{why}; no RECORD of this environment lists it with a hash now: "
                                               "not deleted")
        return
    if not stat.S_ISREG(st.st_mode):
        item.status, item.reason = Status.SKIPPED, f"{why}; now a {stat.filemode(st.st_mode)}, not a regular file: not deleted"
        return
    if not verify_file(path, entry):
        item.status, item.reason = Status.CONFLICT, (f"{why}; the installed file is not the original of {dist.key if dist else '?'}"
                                                " (changed since the reinstall): not deleted")
        return
    version = f" (the version changed {f.version} → {dist.version})" if dist and f.version and f.version != dist.version else ""
    item.reason = f"{why}: the installed file is the verified original{version}"
    plan.writes.append(Write(item, path, None, 0, entry=entry))


def _same_hash(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    try:
        x, y = parse_hash(a, allow_hex=True), parse_hash(b, allow_hex=True)
    except ValueError:
        return False
    return (x.algorithm, x.digest) == (y.algorithm, y.digest)


def _plan_copied(plan: ReapplyPlan, checkpoint: str, f: CheckpointFile, root: str, roots: Sequence[str],
                 dists: Sequence[Distribution]) -> None:
    """A modified file with no patch (binary): its saved content goes back only over the very
    original it was changed from; a new version of it is not merged."""
    item = ReapplyFile(relpath=f.relpath, path="", action=Action.COPY, distribution=f.distribution, version_then=f.version)
    path = _begin(plan, item, f, root, roots)
    if path is None:
        return
    if _listed(path, dists) is None:
        # The checkpoint's own originals/ copy matching the file proves nothing about the file.
        item.status, item.reason = Status.SKIPPED, ("no RECORD of this environment lists it: reapply writes back only "
                                               "package files and added files that are absent; not replaced")
        return
    saved, original = _read_saved(checkpoint, f.content), _read_saved(checkpoint, f.original)
    if original is not None and f.hash_before and not matches(f.hash_before, original):
        original = None  # not the original the checkpoint says: not trusted
    try:
        current = read_regular(path, READ_MAX, follow=False)
    except OSError as exc:
        item.status, item.reason = Status.SKIPPED, f"cannot read it: {os_error(exc)}"
        return
    if original is None and _same_original(path, f, _dist_now(f.distribution, dists)):
        original = current  # no original was saved, but the installed file is that very original
    if saved is None:
        item.status, item.reason = Status.FAILED, "its saved copy in the checkpoint is unreadable"
    elif current == saved:
        item.status, item.reason = Status.ALREADY, "the installed file already has the saved content"
    elif original is None:
        item.status, item.reason = Status.CONFLICT, ("no original was saved and the installed file is not the one it was "
                                                "changed from: not replaced; its saved copy is in the checkpoint")
    elif current != original:
        item.status, item.reason = Status.CONFLICT, ("binary, and not the original it was changed from (a new version?): "
                                                "not merged; its saved copy is in the checkpoint")
    else:
        plan.writes.append(Write(item, path, saved, mode_for(path)))


def _diff(old: str, new: str, rel: str) -> str:
    try:
        text = make_patch(old, new, rel)
    except PatchError:
        text = make_patch(old, new, "file")
    lines = text.splitlines(keepends=True)
    if len(lines) > DIFF_MAX_LINES:
        return "".join(lines[:DIFF_MAX_LINES]) + f"... ({len(lines) - DIFF_MAX_LINES} more diff lines not shown)\n"
    return text


def rej_path(checkpoint: str, rel: str) -> str:
    """Where ``--partial`` writes a file's conflicting hunks: beside the checkpoint, never in it."""
    return os.path.join(os.path.abspath(checkpoint).rstrip(os.sep) + ".rej", *rel.split("/")) + ".rej"


def _plan_patched(plan: ReapplyPlan, checkpoint: str, f: CheckpointFile, root: str, roots: Sequence[str],
                  dists: Sequence[Distribution], options: Options, ledger: dict[str, object], names: NameIndex) -> None:
    dist = _dist_now(f.distribution, dists)
    item = ReapplyFile(relpath=f.relpath, path="", distribution=f.distribution, version_then=f.version,
                       version_now=dist.version if dist else None, action=Action.APPLY)
    writes = len(plan.writes)
    try:
        _plan_patched_item(plan, item, dist, checkpoint, f, root, roots, options, ledger, names)
    except PatchTooLarge as exc:
        # Any diff of this file (original, saved content, installed file) past its budget.
        del plan.writes[writes:]
        item.status, item.reason = Status.REFUSED, (f"{exc}: nothing written; merge by hand from the checkpoint's "
                                               "saved copy")


def _plan_patched_item(plan: ReapplyPlan, item: ReapplyFile, dist: Distribution | None, checkpoint: str,
                       f: CheckpointFile, root: str, roots: Sequence[str], options: Options, ledger: dict[str, object],
                       names: NameIndex) -> None:
    path = _begin(plan, item, f, root, roots)
    if path is None:
        return
    ours_data = _read_saved(checkpoint, f.content)
    ours, encoding = _decode(ours_data, path) if ours_data is not None else (None, "")
    if ours is None or ours_data is None:
        item.status, item.reason = Status.FAILED, ("the saved content is missing or not text (in its declared "
                                              "encoding)")
        return
    if encoding != "utf-8":
        item.encoding = encoding
    if f.hash_after and not matches(f.hash_after, ours_data):
        item.status, item.reason = Status.FAILED, "the saved content does not match the checkpoint's hash_after (changed?)"
        return
    if f.distribution and dist is None:
        item.status, item.reason = Status.SKIPPED, (f"{f.distribution} is not installed in this environment: nothing "
                                               "to apply the changes to")
        return
    try:
        current_data = read_regular(path, READ_MAX, follow=False)
    except FileNotFoundError:
        item.status, item.reason = Status.SKIPPED, (f"the file is gone from the installed version"
                                               f"{f' ({dist.key})' if dist else ''}: its changes are not applied")
        return
    except OSError as exc:
        item.status, item.reason = Status.FAILED, f"cannot read it: {os_error(exc)}"
        return
    current, current_encoding = _decode(current_data, path)
    if current is None:
        item.status, item.reason = Status.FAILED, "the installed file is not text (in its declared encoding) now"
        return
    if current_data == ours_data:
        # No reinstall since the checkpoint: its debug code, if any, is the user's to remove.
        item.status, item.reason = Status.ALREADY, "the file still holds the checkpoint's content: nothing to do"
        return
    base_data, where, tried = _find_original(checkpoint, f, ours, path, dist, options.finder)
    base = _decode(base_data, path)[0] if base_data is not None else None
    if base is None:
        why = "; ".join(tried)
        if options.exclude_findings:
            item.status = Status.REFUSED
            item.reason = (f"the origin of its debug findings cannot be decided: no verified original of "
                           f"{f.distribution or 'it'} {f.version or ''} {f.relpath} (tried: {why}); "
                           f"{_how_to_get(f)}")
        else:
            item.status = Status.CONFLICT
            item.reason = ("no original was saved and the installed file is not the one it was changed from: merge "
                           f"by hand from the checkpoint's saved copy, or {_how_to_get(f)} (tried: {why})")
        return
    item.original = where
    is_py = _is_py(path)
    added = added_line_numbers(base, ours)
    wanted = ours
    if is_py:
        found_ours = findings_of(ours_data, path)
        found_base = findings_of(base_data or b"", path)
        if found_ours is None or found_base is None:
            if options.exclude_findings:
                item.status = Status.REFUSED
                item.reason = ("the debug rules cannot inspect the " + ("saved content" if found_ours is None
                               else "original") + " (it does not parse, or is too large): the origin of its "
                               "findings cannot be decided")
                return
            decided: list[Finding] = []
        else:
            decided = decide_origins(found_ours, found_base, added)
        item.findings = [FindingOut(code=x.code, line=x.line, origin=x.origin) for x in decided]
        injected = [x for x in decided if x.origin is Origin.INJECTED]
        if options.exclude_findings and injected:
            cut = excise(base, ours, [(x.line, x.column) for x in injected],
                         keep_names=names.read_elsewhere(path, dist, names_defined(ours, added)))
            item.removed = [RemovedOut(start_line=r.start, end_line=r.end, text=r.text, reason=r.reason)
                            for r in cut.removed]
            item.kept = [LineRange(start_line=a, end_line=b) for a, b in cut.kept]
            if cut.left:
                item.status = Status.REFUSED
                item.reason = "debug code that cannot be removed statement by statement: " + "; ".join(
                    f"line {line}: {why}" for line, why in cut.left) + " (nothing written; merge by hand)"
                return
            if cut.text is None:
                item.status, item.reason = Status.REFUSED, cut.refused or "the debug code could not be removed"
                return
            wanted = cut.text
            still = {n for a, b in cut.kept for n in range(a, b + 1)}
            item.dropped = sum(1 for h in diff_hunks(base, ours)
                               if (mine := added & set(h.added_range())) and not mine & still)
        elif injected:
            item.written_findings = [FindingOut(code=x.code, line=x.line, origin=x.origin) for x in injected]
    item.hunks = len(diff_hunks(base, ours))
    key = _sha(ours) + ("-x" if options.exclude_findings else "")
    done = ledger.get(f.relpath)
    # The ledger only words the answer: "already" is decided by the content alone.
    by_us = isinstance(done, dict) and done.get("key") == key and done.get("written") == _sha(current_data)
    if wanted == base:
        item.status, item.reason = Status.UNCHANGED, "every change is injected debug code: nothing to apply"
        return
    if current == wanted:
        item.status, item.reason = Status.ALREADY, ("the installed file is what an earlier reapply of these changes wrote"
                                               if by_us else "the installed file already has these changes")
        return
    merged = merge3(base, wanted, current) if current != base else None
    if merged is not None and merged.text == current and not merged.conflicts:
        item.status, item.reason = Status.ALREADY, "the installed file already carries these changes"
        return
    split = _split(checkpoint, f, base, ours, wanted, current, merged) if merged is not None and \
        merged.text is None else None
    if split is not None and split.partial_text is not None and split.partial_text == current:
        # The clean hunks are in, the conflicting ones not: what a --partial write leaves.
        item.action, item.conflicts = Action.MERGE, split.conflicts
        item.status = Status.PARTIAL
        there = os.path.exists(split.rej_file)
        item.rej = printable(split.rej_file) if there else None
        one = len(split.conflicts) == 1
        item.reason = (f"the file already holds the {count(split.clean, 'clean hunk')} (an earlier --partial); the "
                       f"{count(len(split.conflicts), 'conflicting hunk')} {'is' if one else 'are'} not applied: "
                       + (f"{'it is' if one else 'they are'} in {printable(split.rej_file)}" if there else
                          f"the .rej is gone (the checkpoint's patch has {'it' if one else 'them'})"))
        return
    if not _is_original(path, dist):
        item.status = Status.CONFLICT
        item.reason = (f"the installed file is not the original of {dist.key if dist else f.distribution} "
                       "(changed since the reinstall): not touched")
        return
    rej: tuple[str, str] | None = None
    if merged is None:
        result = wanted
    else:
        item.action = Action.MERGE
        if split is not None:
            item.conflicts = split.conflicts
            n = len(split.conflicts)
            if not options.partial or split.partial_text is None:
                item.status = Status.CONFLICT
                if split.partial_text is not None:
                    item.reason = (f"{count(n, 'conflicting hunk')}: nothing applied to this file; --partial "
                                   f"would apply the {count(split.clean, 'clean hunk')} and write the conflicting "
                                   f"{plural(n, 'one')} to {printable(split.rej_file)}")
                else:
                    item.reason = f"{count(n, 'conflicting hunk')} and no clean one: nothing applied"
                return
            result = split.partial_text
            rej = (split.rej_file, split.rej_text)
            item.rej = printable(split.rej_file)
            item.reason = (f"--partial: the {count(split.clean, 'clean hunk')} "
                           f"{'goes' if split.clean == 1 else 'go'} into the file, the {n:,} conflicting "
                           f"{plural(n, 'one')} to {printable(split.rej_file)}")
        else:
            result = merged.text or ""
    if result == current:
        item.status, item.reason = Status.UNCHANGED, "every hunk was left out"
        return
    broken = _parses(path, result)
    if broken:
        item.status, item.reason = Status.FAILED, broken
        return
    out, why = _encode(result, path, current_encoding)
    if out is None:
        item.status, item.reason = Status.REFUSED, why
        return
    if is_py and options.exclude_findings:
        # The rules once more, on what would be written, against the installed original now.
        after, now = findings_of(out, path), findings_of(current_data, path)
        if after is None or now is None:
            item.status, item.reason = Status.REFUSED, "the result cannot be inspected by the debug rules: not written"
            return
        left = [x for x in decide_origins(after, now, added_line_numbers(current, result)) if x.origin is Origin.INJECTED]
        if left:
            item.status = Status.REFUSED
            item.reason = ("the result would still carry injected debug code (" + ", ".join(
                f"{x.code} line {x.line}" for x in left) + "): not written")
            return
    item.diff = _diff(current, result, f.relpath)
    plan.writes.append(Write(item, path, out, mode_for(path), ledger=(f.relpath, key), rej=rej))


@dataclass
class _Split:
    conflicts: list[ConflictOut]
    clean: int
    partial_text: str | None  # the clean hunks merged onto the installed file; None: none applies
    rej_file: str
    rej_text: str


def _split(checkpoint: str, f: CheckpointFile, base: str, ours: str, wanted: str, current: str,
           merged: MergeResult) -> _Split:
    """A conflicting merge split into its clean hunks (merged onto ``current``) and the
    conflicting ones (the .rej's text)."""
    # Numbered as in the checkpoint's patch (base → saved content), not the filtered one.
    numbers = {h.old_start: i for i, h in enumerate(diff_hunks(base, ours), 1)}
    kept_hunks = diff_hunks(base, wanted)
    conflicts = [ConflictOut(hunk=numbers.get(kept_hunks[c.hunk - 1].old_start, c.hunk)
                             if c.hunk <= len(kept_hunks) else c.hunk, base_start=c.base_start, reason=c.reason)
                 for c in merged.conflicts]
    bad = {c.hunk for c in merged.conflicts}
    clean = [h for i, h in enumerate(kept_hunks, 1) if i not in bad]
    partial_text = None
    if clean:
        try:
            partial_text = merge3(base, apply_hunks(base, clean, allow_offset=False), current).text
        except PatchError:
            partial_text = None
    try:
        rej_text = format_hunks(f.relpath, [h for i, h in enumerate(kept_hunks, 1) if i in bad])
    except PatchError:
        rej_text = "".join(h.text() for i, h in enumerate(kept_hunks, 1) if i in bad)
    return _Split(conflicts, len(clean), partial_text, rej_path(checkpoint, f.relpath), rej_text)


# ---- applying ------------------------------------------------------------------------------


def _write_rej(path: str, text: str, checkpoint: str) -> str | None:
    """Write a .rej file beside the checkpoint: ``<CHECKPOINT>.rej/<relpath>.rej`` opened one
    component at a time below the checkpoint's parent directory, nothing followed (``fs.confined``):
    a ``.rej`` directory or a subdirectory that is a symlink fails this file, never written through."""
    top = os.path.abspath(checkpoint).rstrip(os.sep)
    base = os.path.dirname(top)
    rel = rel_below(base, path)
    if rel is None or not rel.startswith(os.path.basename(top) + ".rej/"):
        return f"{path}: not below {top}.rej; not written"
    data = text.encode("utf-8")

    def fill(out: BinaryIO) -> bool:
        out.write(data)
        return True

    why = replace_below(base, rel, fill, 0o644, create_dirs=True, temp_prefix=".driftscan-rej-")
    return f"cannot write {path}: {why}" if why else None


def _delete(w: Write, roots: Sequence[str]) -> str | None:
    """Delete a package file again: still a regular file matching its RECORD row, reached
    without following a symlink below the environment root."""
    base = next((r for r in sorted(roots, key=len, reverse=True) if rel_below(r, w.path)), None)
    if base is None:
        return "outside the environment: not deleted"

    entry = w.entry  # always set on a deletion

    def check(fd: int) -> str | None:
        if entry is None or not verify_fd(fd, entry):
            return "no longer the verified original (changed meanwhile): not deleted"
        return None

    return unlink_below(base, rel_below(base, w.path) or "", check)


def apply_reapply(plan: ReapplyPlan, root: str) -> ReapplyReport:
    started = time.perf_counter()
    report = plan.report
    report.dry_run = False
    roots = plan.roots or ((root,) if root else ())
    journal = open_journal(root, report.notes, roots)
    ledger = _load_ledger(root)
    bytecode = Bytecode()
    for w in plan.writes:
        if w.data is None:
            why = _delete(w, roots)
            w.item.status, w.item.reason = (Status.FAILED, why) if why else (Status.APPLIED, w.item.reason)
            continue
        if w.rej is not None:
            why = _write_rej(w.rej[0], w.rej[1], report.source)
            if why:
                w.item.status, w.item.reason = Status.FAILED, why + " (so the clean hunks were not applied either)"
                continue
        data = w.data

        def fill(out: BinaryIO, data: bytes = data) -> bool:
            out.write(data)
            return True

        why = replace_file(w.path, fill, w.mode, journal, roots, bytecode, data)
        if why:
            w.item.status, w.item.reason = Status.FAILED, why
            continue
        w.item.status = Status.PARTIAL if w.rej is not None else Status.APPLIED
        if w.ledger is not None and w.rej is None:  # a partial write does not carry all the changes
            ledger[w.ledger[0]] = {"key": w.ledger[1], "written": _sha(data)}
    close_journal(journal)
    report.notes += bytecode.notes()
    report.bytecode_not_removed = [printable(p) for p in bytecode.failed]
    why = _save_ledger(root, ledger)
    if why:
        report.notes.append(f"the reapply ledger (what was written, for the next reapply) was not saved: {why}")
    report.duration_seconds = round(time.perf_counter() - started, 3)
    return report
