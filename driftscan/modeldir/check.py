"""Check model files against what their provenance promises: cheap by default, exact on demand.

Every kind of model directory (download metadata, cache snapshot, git, manifest) turns its
records into ``Expect`` values; this module checks them all the same way:

1. stat: missing, wrong type, wrong size (when the size is known) need no read;
2. small files (< ``limit``) are always hashed and kept in memory, so a drift can be shown as
   JSON changes or a diff;
3. large files are hashed only with ``deep``; otherwise the provenance's own freshness rule
   decides (huggingface_hub's "mtime later than the metadata timestamp"), and a file that fails
   it is reported as ``stale-metadata`` — its content was not read, and the report says so.

Hashing runs in threads (hashlib and xxhash release the GIL on large buffers); reading is in
hashing.py.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, cast

from ..formats import jsondiff
from ..fs.paths import backup_names
from ..fs.reader import file_type, os_error
from ..fs.reader import map_by_size
from ..core.units import size_change
from ..core.values import Area, DriftKind, FileCheck, FileState, Problem, Unverifiable
from .hashing import Meter as Meter, hash_file  # Meter re-exported: snapshot.run

SMALL_FILE_LIMIT = 16 << 20  # tokenizer.json of a large-vocabulary model is ~10 MB and is a config

OK, MODIFIED, MISSING, TYPE_CHANGED, STALE, ERROR = "ok", "modified", "missing", "type-changed", "stale", "error"
KIND = {MODIFIED: DriftKind.MODIFIED, MISSING: DriftKind.MISSING, TYPE_CHANGED: DriftKind.TYPE_CHANGED,
        STALE: DriftKind.STALE_METADATA}
# The key under which a digest appears in ``expected``/``actual``, and its name in evidence.
DIGEST_KEY = {"git-sha1": "git_blob_sha1", "sha256": "sha256", "xxh3_128": "xxh3_128"}
DIGEST_NAME = {"git-sha1": "git blob sha1", "sha256": "sha256", "xxh3_128": "xxh3-128"}


def iso(seconds: float) -> str:
    try:
        return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):  # an mtime or timestamp past what a date can say
        return f"{seconds!r} (not a representable time)"


@dataclass(frozen=True)
class Expect:
    """What one file should be, according to the directory's provenance."""

    relpath: str
    path: str  # the file whose content is checked: a cache blob for a snapshot symlink
    algorithm: str | None  # "git-sha1" | "sha256" | "xxh3_128"; None checks presence only
    digest: str | None
    size: int | None = None
    expected: FileState = field(default_factory=lambda: FileState())
    source: str = ""  # evidence wording: "the LFS etag recorded at download (commit abc123)"
    # For a large unread file: why its freshness cannot be trusted, or None when it can.
    stale: Callable[[os.stat_result], str | None] | None = None
    original: Callable[[], bytes | None] | None = None
    follow: bool = False  # False: a symlink where a file should be is a type change
    mode: tuple[int, int] | None = None  # (expected st_mode bits, mask) when provenance records them


@dataclass
class Outcome:
    expect: Expect
    status: str
    actual: FileState = field(default_factory=lambda: FileState())
    evidence: str = ""
    content: bytes | None = None  # current content of a small file that differs


class Containment:
    """Whether a path's real location stays inside the directory nothing may be read outside of.

    The real location of each parent directory is computed once (a 40,000-file tree has a few
    thousand); only a path whose last component is a symlink costs a realpath of its own."""

    def __init__(self, root: str):
        self.root = root
        self.real_root = os.path.realpath(root)
        self._dirs: dict[str, bool] = {}

    def _under(self, real: str) -> bool:
        return real == self.real_root or real.startswith(self.real_root.rstrip(os.sep) + os.sep)

    def parent_inside(self, path: str) -> bool:
        parent = os.path.dirname(path)
        ok = self._dirs.get(parent)
        if ok is None:
            ok = self._dirs[parent] = self._under(os.path.realpath(parent))
        return ok

    def outside(self, path: str) -> str | None:
        """The real location of ``path`` when it is outside the root, else None."""
        if self.parent_inside(path) and not os.path.islink(path):
            return None
        real = os.path.realpath(path)
        return None if self._under(real) else real


@dataclass
class Context:
    root: str
    deep: bool
    limit: int
    jobs: int
    meter: Meter
    cache_repos: list[str] = field(default_factory=list)  # hub cache repositories to find originals in
    # Nothing is read from outside this directory: the model directory, or for a hub cache
    # snapshot its repository folder (snapshot symlinks lead into ../../blobs).
    contain: str = ""
    containment: Containment = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.contain = self.contain or self.root
        self.containment = Containment(self.contain)

    def outside(self, path: str) -> str | None:
        return self.containment.outside(path)


@dataclass(frozen=True)
class _ToHash:
    """What the stat phase found for a file that must be hashed."""

    path: str  # where to open it: a followed symlink's resolved location (opened with O_NOFOLLOW)
    st: os.stat_result


def _stat_phase(exp: Expect, ctx: Context) -> Outcome | _ToHash:
    """An outcome decided without reading, or what to hash."""
    path = exp.path
    try:
        lst = os.lstat(path)
        link = stat.S_ISLNK(lst.st_mode)
        if (link and exp.follow) or not ctx.containment.parent_inside(path):
            # A symlink to follow, or a folder above the file that is one: it must not lead out of
            # the tree (its target is not the tree's to vouch for, and is never opened).
            real = os.path.realpath(path)
            if ctx.outside(real) is not None:
                return Outcome(exp, ERROR, evidence=f"resolves outside the model directory (to {real}); not followed")
            if link and exp.follow:
                path = real
        st = os.stat(path) if path != exp.path else lst
    except FileNotFoundError:
        return Outcome(exp, MISSING, evidence=f"listed in {exp.source} but not on disk")
    except (OSError, ValueError) as exc:  # ValueError: a name the OS cannot take (NUL, lone surrogate)
        return Outcome(exp, ERROR, evidence=f"cannot stat: {os_error(exc) if isinstance(exc, OSError) else exc}")
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(exp.path)
        except OSError as exc:
            return Outcome(exp, ERROR, evidence=f"cannot read symlink: {os_error(exc)}")
        return Outcome(exp, TYPE_CHANGED, {"type": "symlink", "symlink_target": target},
                       f"a symlink to {target} where {exp.source} has a regular file")
    if not stat.S_ISREG(st.st_mode):
        kind = file_type(st.st_mode)
        return Outcome(exp, TYPE_CHANGED, {"type": kind}, f"a {kind} where {exp.source} has a regular file")
    if exp.algorithm is None:
        return Outcome(exp, OK)
    if st.st_size < ctx.limit or ctx.deep:
        return _ToHash(path, st)
    ctx.meter.unread_large += 1
    return large_unread_outcome(exp, st)


def large_unread_outcome(exp: Expect, st: os.stat_result) -> Outcome:
    """The verdict on a large file left unread (no --deep): its size, then its mtime, then its mode."""
    actual: FileState = {"size": st.st_size, "mtime": iso(st.st_mtime)}
    if exp.size is not None and st.st_size != exp.size:
        return Outcome(exp, MODIFIED, actual, f"size differs from {exp.source}: {size_change(exp.size, st.st_size)}"
                       " (content not read)")
    reason = exp.stale(st) if exp.stale is not None else None
    if reason:
        return Outcome(exp, STALE, actual, f"{reason}; its content was not read (deep=True hashes it)")
    return mode_outcome(exp, st) or Outcome(exp, OK)


def mode_outcome(exp: Expect, st: os.stat_result) -> Outcome | None:
    if exp.mode is None:
        return None
    want, mask = exp.mode
    if (st.st_mode & mask) == (want & mask):
        return None
    return Outcome(exp, MODIFIED, {"mode": oct(stat.S_IMODE(st.st_mode))},
                   f"permissions changed from {oct(stat.S_IMODE(want))} to {oct(stat.S_IMODE(st.st_mode))}"
                   f" (content matches {exp.source})")


def _hash_phase(exp: Expect, todo: _ToHash, ctx: Context) -> Outcome:
    try:
        # O_NOFOLLOW always: the path is a regular file's (a followed link's resolved one), so a
        # swap for a symlink since the stat phase is refused rather than followed out of the tree.
        digests, content, st = hash_file(todo.path, (exp.algorithm,), ctx.meter,  # type: ignore[arg-type]
                                         keep=todo.st.st_size < ctx.limit, follow=False)
    except FileNotFoundError:
        return Outcome(exp, MISSING, evidence=f"listed in {exp.source}; vanished during the audit")
    except (OSError, ValueError) as exc:
        return Outcome(exp, ERROR, evidence=f"cannot read: {os_error(exc) if isinstance(exc, OSError) else exc}")
    digest = digests[exp.algorithm]  # type: ignore[index]
    if digest == exp.digest:
        return mode_outcome(exp, st) or Outcome(exp, OK)
    # DIGEST_KEY names one of FileState's digest keys; first, as the report has always shown it
    actual = cast(FileState, {DIGEST_KEY[exp.algorithm]: digest, "size": st.st_size,  # type: ignore[index]
                              "mtime": iso(st.st_mtime)})
    evidence = f"{DIGEST_NAME[exp.algorithm]} differs from {exp.source}"  # type: ignore[index]
    if exp.size is not None and st.st_size != exp.size:
        evidence += f" (size {size_change(exp.size, st.st_size)})"
    return Outcome(exp, MODIFIED, actual, evidence, content)


def run(expects: list[Expect], ctx: Context) -> list[Outcome]:
    """Check every expectation; outcomes come back in the order given."""
    outcomes: list[Outcome | None] = []
    pending: list[tuple[int, _ToHash]] = []
    for exp in expects:
        found = _stat_phase(exp, ctx)
        if isinstance(found, _ToHash):
            pending.append((len(outcomes), found))
            outcomes.append(None)
        else:
            outcomes.append(found)
    ctx.meter.total += sum(todo.st.st_size for _, todo in pending)
    # Large files in a pool, largest first (one big shard must not start last), small ones here.
    hashed = map_by_size(lambda item: _hash_phase(expects[item[0]], item[1], ctx), pending,
                         [todo.st.st_size for _, todo in pending], ctx.jobs)
    for (i, _), outcome in zip(pending, hashed):
        outcomes[i] = outcome
    return [o for o in outcomes if o is not None]


def to_check(ctx: Context, outcome: Outcome, *, evidence: str | None = None,
             kind: DriftKind | None = None, extra_actual: FileState | None = None) -> FileCheck:
    """The FileCheck for a drifted outcome, with JSON changes or a diff when the original is at hand."""
    exp = outcome.expect
    json_changes: tuple[dict[str, Any], ...] = ()
    diff = None
    text = evidence if evidence is not None else outcome.evidence
    if outcome.status == MODIFIED and outcome.content is not None:
        original = exp.original() if exp.original is not None else None
        backup = None
        if original is None:
            original, backup = _backup_original(ctx, exp)
        if original is not None:
            change = _describe(original, outcome.content, exp.relpath)
            json_changes, diff = change.json_changes, change.diff
            if change.total:
                text += f"; {jsondiff.summary(change)}"
            if backup is not None:
                text += f"; original: {backup}, a backup beside it whose content hashes to {exp.source}"
    return FileCheck(kind or KIND[outcome.status], os.path.join(ctx.root, exp.relpath), ctx.root, None,
                     exp.expected.copy(), {**outcome.actual, **(extra_actual or FileState())}, text, area=Area.MODEL,
                     json_changes=json_changes, diff=diff)


def _backup_original(ctx: Context, exp: Expect) -> tuple[bytes | None, str | None]:
    """The content of a backup beside the file (``config.json.bak``, ``.orig``, ``~``) that hashes
    to what the provenance expects, and its name; never a symlink, nothing outside the directory."""
    if exp.algorithm is None or exp.digest is None:
        return None, None
    for name in backup_names(os.path.join(ctx.root, exp.relpath)):
        try:
            st = os.lstat(name)
            if (not stat.S_ISREG(st.st_mode) or st.st_size >= ctx.limit
                    or (exp.size is not None and st.st_size != exp.size) or ctx.outside(name) is not None):
                continue
            digests, data, _ = hash_file(name, (exp.algorithm,), Meter(), keep=True, follow=False)
        except OSError:
            continue
        if digests.get(exp.algorithm) == exp.digest and data is not None:
            return data, os.path.relpath(name, ctx.root)
    return None, None


def _describe(original: bytes, content: bytes, relpath: str) -> jsondiff.Change:
    """jsondiff.describe, safe against documents nested deep enough to exhaust the stack."""
    try:
        return jsondiff.describe(original, content, relpath)  # deep documents: a text diff
    except RecursionError:
        return jsondiff.Change()


def added_check(ctx: Context, relpath: str, reason: str) -> FileCheck:
    path = os.path.join(ctx.root, relpath)
    actual: FileState = {}
    try:
        st = os.lstat(path)
        actual = {"type": file_type(st.st_mode), "size": st.st_size, "mtime": iso(st.st_mtime)}
        if stat.S_ISLNK(st.st_mode):
            actual["symlink_target"] = os.readlink(path)
    except OSError:
        pass
    return FileCheck(DriftKind.ADDED, path, ctx.root, None, {}, actual, reason, area=Area.MODEL)


@dataclass
class KindResult:
    """What one kind of directory contributed: drifts, how many files were compared, what was not."""

    checks: list[FileCheck] = field(default_factory=list)
    files_checked: int = 0
    problems: list[Problem] = field(default_factory=list)
    unverifiable: list[Unverifiable] = field(default_factory=list)
    commit: str | None = None  # the revision audited, when there is one

    def add_outcomes(self, ctx: Context, outcomes: list[Outcome]) -> None:
        for outcome in outcomes:
            if outcome.status == ERROR:
                self.problems.append(Problem(outcome.expect.path, outcome.evidence))
                continue
            self.files_checked += 1
            if outcome.status != OK:
                self.checks.append(to_check(ctx, outcome))
