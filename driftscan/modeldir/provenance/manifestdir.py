"""A directory against a driftscan manifest (``driftscan.formats.manifest`` defines and writes the format).

The manifest records size, mode and mtime_ns for every file, so large files get a stricter cheap
check than huggingface_hub metadata allows: a different size is "modified" outright, and an
unchanged size with a different mtime is "stale-metadata" (content not read).

One walk of the tree (``manifest.scan_tree``: one lstat per file) settles every file that is a
regular file in the manifest and now: large ones as above, small ones by hashing — or, for
``diff`` without ``--no-cache``, by their signature (size, mtime and mode as recorded, outside the
snapshot's racy window: ``Manifest.trusted``), unread. What the walk cannot settle (a file
missing, a symlink then or now, another type) goes through engine's per-file checks as before;
the verdicts and their wording are engine's either way. ``diff --no-cache`` of a large tree
reads every file anyway: there a regular file's open and fstat stand for its lstat
(``SettleOpened``, on two cores: ``sharedwalk.settle_shared``).
"""

from __future__ import annotations

import errno
import itertools
import os
import stat
from collections.abc import Callable
from typing import Any

import xxhash

from ..layout import ModelDirLayout
from ...fs.reader import NOFOLLOW, file_type, os_error
from ...formats.manifest import (
    EMBED_LIMIT,
    MANIFEST_NAME,
    REDO,
    Manifest,
    ManifestEntry,
    ManifestError,
    hash_fd,
    Mapper,
    in_threads,
    is_link_only,
    read_manifest,
    scan_tree,
)
from ...core.units import size_change
from ...core.values import Area, DriftKind, FileCheck, FileState, LayoutKind, Problem, Unverifiable
from .interface import WayBack
from ..hashing import _NOATIME, OPEN_FLAGS, open_noatime
from ..check import (
    large_unread_outcome,
    mode_outcome,
    ERROR,
    MISSING,
    MODIFIED,
    Context,
    Expect,
    KindResult,
    Outcome,
    iso,
    run,
)


def _stale(entry: ManifestEntry) -> Callable[[os.stat_result], str | None]:
    def check(st: os.stat_result) -> str | None:
        if st.st_mtime_ns == entry.mtime_ns:
            return None
        return f"modified at {iso(st.st_mtime)}, not at {iso(entry.mtime_ns / 1e9)} as the manifest records"
    return check


def _original(entry: ManifestEntry) -> Callable[[], bytes | None] | None:
    if entry.text is None or len(entry.text) > EMBED_LIMIT:
        return None  # driftscan embeds no more than EMBED_LIMIT: longer text was put there by hand
    data = entry.text.encode("utf-8")
    if xxhash.xxh3_128(data).hexdigest() != entry.xxh3_128:
        return None  # embedded text that does not match its own hash is no original
    return lambda: data


def _link_check(ctx: Context, rel: str, entry: ManifestEntry, source: str) -> FileCheck | None:
    path = os.path.join(ctx.root, rel)
    try:
        st = os.lstat(path)
    except OSError:
        return None  # missing: the content check reports it
    actual = os.readlink(path) if stat.S_ISLNK(st.st_mode) else None
    if actual == entry.link:
        return None
    expected: FileState = {"type": "symlink", "symlink_target": entry.link} if entry.link else {"type": "file"}
    got: FileState = {"type": "symlink", "symlink_target": actual} if actual else {"type": "file"}
    kind = DriftKind.TYPE_CHANGED if (actual is None) != (entry.link is None) else DriftKind.MODIFIED
    now = f"a symlink to {actual}" if actual else "a regular file"
    then = f"a symlink to {entry.link}" if entry.link else "a regular file"
    return FileCheck(kind, path, ctx.root, None, expected, got, f"{now} where {source} has {then}", area=Area.MODEL)


def in_tree(ctx: Context, path: str) -> bool:
    """Whether ``path`` is the tree's own manifest: data like any file there, which must not lead
    outside. One the user named elsewhere (--manifest, a diff's snapshot) is the user's."""
    return os.path.abspath(path) == os.path.join(ctx.root, MANIFEST_NAME)


def audit_manifest(ctx: Context, layout: ModelDirLayout, revision: str | None) -> KindResult:
    path = layout.manifest or os.path.join(ctx.root, MANIFEST_NAME)
    try:
        manifest: Manifest = read_manifest(path, root=ctx.contain if in_tree(ctx, path) else None)
    except ManifestError as exc:
        why = f"the driftscan manifest cannot be used: {'; '.join(exc.issues)}"
        return KindResult(problems=[Problem(path, why)], unverifiable=[Unverifiable(layout.path, why)])
    result = KindResult()
    if revision:
        result.problems.append(Problem(path, f"revision {revision} was not checked: a manifest has no revisions"))
    compare_manifest(ctx, manifest, path, result)
    return result


def walk_inside(ctx: Context) -> bool:
    """The walk never follows a symlink, so a file it found is under the root's real location:
    inside the containment directory whenever the root itself is."""
    return ctx.containment.parent_inside(os.path.join(ctx.root, "-"))


def _expect(ctx: Context, rel: str, entry: ManifestEntry, source: str) -> Expect:
    return Expect(
        rel, os.path.join(ctx.root, rel), "xxh3_128", entry.xxh3_128, entry.size,
        expected={"xxh3_128": entry.xxh3_128, "size": entry.size, "mode": oct(stat.S_IMODE(entry.mode)),
                  "mtime": iso(entry.mtime_ns / 1e9)},
        source=source, stale=_stale(entry), original=_original(entry), follow=True,
        mode=(entry.mode, 0o7777))




def _open_walked(path: str) -> int:
    """engine's open (hashing.open_readonly, follow=False) without its lstat: the walk took that
    one. O_NOFOLLOW refuses a file swapped for a symlink since; the fstat anything else."""
    return open_noatime(path, OPEN_FLAGS | NOFOLLOW)


def _read_walked(path: str, keep: bool) -> tuple[str, bytes | None, os.stat_result]:
    fd = _open_walked(path)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file (replaced while being opened)")
        digest, content = hash_fd(fd, st.st_size, None, keep=keep)
    finally:
        os.close(fd)
    return digest, content, st


def _hash_walked(ctx: Context, rel: str, entry: ManifestEntry, source: str, count: bool = True) -> Outcome | None:
    """One small file the walk found regular: None when its content matches (mode included),
    else the outcome, exactly as engine's hash phase words it. ``count``: add its bytes to the
    meter (not in a forked child: the parent's meter is the one that shows)."""
    path = os.path.join(ctx.root, rel)
    try:
        digest, content, st = _read_walked(path, False)
        if digest != entry.xxh3_128:
            # Drift: read it again, keeping the content this time for its diff (matching files,
            # nearly all of them, go through the small buffer alone); the verdict is this read's.
            digest, content, st = _read_walked(path, st.st_size < ctx.limit)
        if count:
            ctx.meter.note_hashed(st.st_size)
    except FileNotFoundError:
        return Outcome(_expect(ctx, rel, entry, source), MISSING, evidence=f"listed in {source}; vanished during the audit")
    except (OSError, ValueError) as exc:
        return Outcome(_expect(ctx, rel, entry, source), ERROR,
                       evidence=f"cannot read: {os_error(exc) if isinstance(exc, OSError) else exc}")
    if digest == entry.xxh3_128:
        if (st.st_mode & 0o7777) == (entry.mode & 0o7777):
            return None
        return mode_outcome(_expect(ctx, rel, entry, source), st)
    exp = _expect(ctx, rel, entry, source)
    actual: FileState = {"xxh3_128": digest, "size": st.st_size, "mtime": iso(st.st_mtime)}
    evidence = f"xxh3-128 differs from {source}"
    if st.st_size != entry.size:
        evidence += f" (size {size_change(entry.size, st.st_size)})"
    return Outcome(exp, MODIFIED, actual, evidence, content)


def _added(ctx: Context, rel: str, st: os.stat_result | None, reason: str) -> FileCheck:
    """engine.added_check with the walk's lstat (None: it vanished, or could not be stat'ed)."""
    path = os.path.join(ctx.root, rel)
    actual: FileState = {}
    if st is not None:
        actual = {"type": file_type(st.st_mode), "size": st.st_size, "mtime": iso(st.st_mtime)}
        if stat.S_ISLNK(st.st_mode):
            try:
                actual["symlink_target"] = os.readlink(path)
            except OSError:
                pass
    return FileCheck(DriftKind.ADDED, path, ctx.root, None, {}, actual, reason, area=Area.MODEL)


TRUSTED = object()  # in a walk's results: a file already settled by its signature (``settle``)
MATCHED = object()  # in a walk's results: a file already hashed by ``settle``, content and mode as recorded


def settle(ctx: Context, manifest: Manifest, rel: str, st: os.stat_result | None, trust: bool) -> object | None:
    """What compare_manifest would conclude for a small regular file the walk found, when that is
    "unchanged": TRUSTED (its signature, with ``trust``) or MATCHED (hashed: its content and mode
    as recorded); None for anything else, which compare_manifest then checks and words itself.
    For a walk of a tree whose root is inside its containment directory (``walk_inside``), in
    whichever process walked the file."""
    entry = manifest.files.get(rel)
    if (entry is None or st is None or entry.link is not None or not stat.S_ISREG(st.st_mode)
            or stat.S_ISLNK(entry.mode) or st.st_size >= ctx.limit):
        return None
    if trust and manifest.trusted(entry, st):
        return TRUSTED
    try:
        digest, _, now = _read_walked(os.path.join(ctx.root, rel), False)
    except (OSError, ValueError):
        return None
    if digest == entry.xxh3_128 and stat.S_IMODE(now.st_mode) == stat.S_IMODE(entry.mode):
        return MATCHED
    return None


class SettleOpened:
    """``settle`` without trust, for a file the listing says is regular, without its lstat:
    opened (``O_NOFOLLOW | O_NONBLOCK``, as ``_open_walked``) and checked with fstat before a
    byte is read, as the walk's lstat and ``_read_walked`` would have. Called with the file's
    relative path and path, it returns MATCHED when its content and mode are as recorded (its
    bytes counted in ``hashed``); else its fstat (what the walk's lstat would have said of a
    regular file); None for a path that is not a small regular file in the manifest, or that
    cannot be opened as a regular file (the walk lstats it, and the comparison words it)."""

    def __init__(self, ctx: Context, manifest: Manifest) -> None:
        self.files, self.limit = manifest.files, ctx.limit
        self.flags = OPEN_FLAGS | NOFOLLOW | _NOATIME
        self.hashed = 0

    def __call__(self, rel: str, path: str) -> object | None:
        entry = self.files.get(rel)
        if entry is None or entry.link is not None or stat.S_ISLNK(entry.mode):
            return None
        try:
            try:
                fd = os.open(path, self.flags)
            except PermissionError:
                if not _NOATIME:
                    raise
                fd = os.open(path, OPEN_FLAGS | NOFOLLOW)  # O_NOATIME needs ownership of the file
        except (OSError, ValueError):
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None
            size = st.st_size
            if size >= self.limit:
                return st  # a large file: compared by size and mtime, or read by engine (--deep)
            digest = hash_fd(fd, size, None, keep=False)[0]
        except OSError:
            return None
        finally:
            os.close(fd)
        if digest == entry.xxh3_128 and stat.S_IMODE(st.st_mode) == stat.S_IMODE(entry.mode):
            self.hashed += size
            return MATCHED
        return st


def settled_by_signature(manifest: Manifest, entry: ManifestEntry | None, st: os.stat_result, limit: int) -> bool:
    """Whether the walk's lstat ``st`` settles ``entry`` without reading the file: a regular file
    then and now, small (a large one is settled by size and mtime anyway), its signature trusted
    (``Manifest.trusted``). For a tree whose root is inside its containment directory, with trust on."""
    return (entry is not None and st is not None and entry.link is None and stat.S_ISREG(st.st_mode)
            and not stat.S_ISLNK(entry.mode) and st.st_size < limit and manifest.trusted(entry, st))


def compare_manifest(ctx: Context, manifest: Manifest, path: str, result: KindResult, *,
                     walked: dict[str, os.stat_result | None] | None = None,
                     walk_problems: list[Problem] | None = None, trust: bool = False,
                     mapper: Mapper = in_threads, from_index: tuple[int, list[str]] | None = None) -> int:
    """Compare the tree with ``manifest`` (read from ``path``) into ``result``; returns how many
    files were trusted by signature.

    One walk (``walked``: ``manifest.scan_tree``'s, if the caller took it), one lstat per file
    (the walk's). A file that is a regular file in the manifest and now is settled from that
    lstat: a large one (no ``deep``) by size, mtime and mode as engine does; with ``trust``, a
    small one whose signature matches (``Manifest.trusted``) without reading it; any other is
    opened and hashed. Anything else (missing, a symlink then or now, another type) goes through
    engine's checks, as every file did before.

    ``from_index``: from the diff index (``treeindex.walk``), how many files are trusted by their
    signature and are not in ``walked``, and the manifest's paths left to compare (every other)."""
    if walked is None:
        walked, walk_problems = scan_tree(ctx.root)
    source = f"the driftscan manifest ({manifest.created})"
    own_manifest = in_tree(ctx, path)
    fast = walk_inside(ctx)
    expects = []
    to_hash: list[tuple[str, ManifestEntry]] = []
    sizes: list[int] = []
    trusted = 0
    limit, deep = ctx.limit, ctx.deep
    isreg, islnk = stat.S_ISREG, stat.S_ISLNK
    # What ``settle`` decided already, where the file was walked (nearly every file of a warm
    # diff), counted in C; the loop below sees the rest.
    files = manifest.files
    if from_index is not None:  # by path alone: a loaded manifest builds only the entries asked for
        trusted += from_index[0]
        result.files_checked += from_index[0]
        items = [((rel, files[rel]), walked.get(rel)) for rel in from_index[1]]
    else:
        # a stat, None, TRUSTED or MATCHED (``settle`` leaves the last two in the walk)
        found: list[Any] = list(map(walked.get, files))
        done = found.count(TRUSTED) + found.count(MATCHED)
        trusted += found.count(TRUSTED)
        result.files_checked += done
        if done:
            rest = itertools.compress(files, [st is not TRUSTED and st is not MATCHED for st in found])
            items = [((rel, files[rel]), walked.get(rel)) for rel in rest]
        else:
            items = list(zip(files.items(), found))
    for (rel, entry), st in items:
        if fast and st is not None and entry.link is None and isreg(st.st_mode) and not islnk(entry.mode):
            if st.st_size >= limit and not deep:
                ctx.meter.unread_large += 1
                outcome = large_unread_outcome(_expect(ctx, rel, entry, source), st)
                result.add_outcomes(ctx, [outcome])
            elif trust and settled_by_signature(manifest, entry, st, limit):
                trusted += 1
                result.files_checked += 1
            elif st.st_size >= limit:  # --deep on a large file: engine's reading (O_DIRECT, not cached)
                expects.append(_expect(ctx, rel, entry, source))
            else:
                to_hash.append((rel, entry))
                sizes.append(st.st_size)
            continue
        link = _link_check(ctx, rel, entry, source)
        if link is not None:
            result.checks.append(link)
        if link is None and entry.link is not None and ctx.outside(os.path.join(ctx.root, rel)) is not None:
            # The same symlink out of the tree as recorded: its target is all that is compared
            # (whatever the manifest says of the content, the file out there is never read).
            if own_manifest:
                # The tree's own manifest vouching for its own link out is the tree choosing what
                # lies outside: what it points to is not checked, and the audit says so.
                result.problems.append(Problem(os.path.join(ctx.root, rel),
                                               f"a symlink to {entry.link}, outside the model directory; the "
                                               "manifest inside the directory cannot vouch for it: not checked"))
                continue
            result.files_checked += 1
            continue
        if link is not None and ctx.outside(os.path.join(ctx.root, rel)) is not None:
            result.files_checked += 1
            continue  # the changed symlink is the drift; its target is not read
        if is_link_only(entry):  # a symlink to a directory: its target is all there is to compare
            result.files_checked += 1
            if link is None and not os.path.lexists(os.path.join(ctx.root, rel)):
                result.checks.append(FileCheck(DriftKind.MISSING, os.path.join(ctx.root, rel), ctx.root, None,
                                               {"type": "symlink", "symlink_target": entry.link}, {},
                                               f"not found; {source} has a symlink to {entry.link}", area=Area.MODEL))
            continue
        expects.append(_expect(ctx, rel, entry, source))
    flagged = {c.path for c in result.checks}  # the symlink changes found above
    ctx.meter.total += sum(sizes)
    def settled(item: tuple[str, ManifestEntry]) -> int:
        """In a forked child: 1 + the size for a match, else 0 (and the parent looks again)."""
        return 1 + item[1].size if _hash_walked(ctx, item[0], item[1], source, count=False) is None else 0

    def decode(value: int) -> object:
        if type(value) is not int or value <= 0:
            return REDO
        ctx.meter.note_hashed(value - 1)
        return None

    hashed = mapper(lambda item: _hash_walked(ctx, item[0], item[1], source), settled, decode, to_hash, sizes, ctx.jobs)
    ctx.meter.note_hashed(0, final=True)
    for hashed_outcome in hashed:
        if hashed_outcome is None:
            result.files_checked += 1
        else:
            result.add_outcomes(ctx, [hashed_outcome])
    for outcome in run(expects, ctx):
        if outcome.expect.path in flagged and outcome.status != "missing":
            result.files_checked += 1
            continue  # the symlink change is the drift; do not report the path twice
        result.add_outcomes(ctx, [outcome])
    own = os.path.abspath(path)
    result.problems.extend(walk_problems or ())
    if from_index is not None or len(walked) < 64:
        added = [rel for rel in walked if rel not in files]
    else:
        extra = walked.keys() - files.keys()  # in C
        added = [rel for rel in walked if rel in extra] if extra else []  # in walk order
    missed = manifest.unreadable if not own_manifest else {}  # the tree's own claims hide nothing
    for rel in added:
        if os.path.join(ctx.root, rel) != own:
            why = _unread_then(missed, rel) if missed else None
            if why is not None:
                result.problems.append(Problem(os.path.join(ctx.root, rel),
                                               f"not compared: it could not be read when {source} was taken ({why})"))
                continue
            result.checks.append(_added(ctx, rel, walked[rel], f"not in {source}"))
    return trusted


def _unread_then(missed: dict[str, str], rel: str) -> str | None:
    """Why the snapshot could not read ``rel`` or a directory above it; None: it could."""
    if "." in missed:
        return missed["."]
    while rel:
        if rel in missed:
            return missed[rel]
        rel = rel.rpartition("/")[0]
    return None


def diff_manifest(ctx: Context, layout: ModelDirLayout, manifest: Manifest | None,
                  walked: dict[str, os.stat_result | None], walk_problems: list[Problem], *,
                  trust: bool = False, mapper: Mapper = in_threads,
                  from_index: tuple[int, list[str]] | None = None) -> tuple[KindResult, int]:
    """``audit_manifest`` for ``diff``: the tree walked already, the manifest read already (None:
    read it from ``layout.manifest``); also returns how many files were trusted by signature."""
    path = layout.manifest or os.path.join(ctx.root, MANIFEST_NAME)
    if manifest is None:
        try:
            manifest = read_manifest(path, root=ctx.contain if in_tree(ctx, path) else None)
        except ManifestError as exc:
            why = f"the driftscan manifest cannot be used: {'; '.join(exc.issues)}"
            return KindResult(problems=[Problem(path, why)], unverifiable=[Unverifiable(layout.path, why)]), 0
    result = KindResult()
    trusted = compare_manifest(ctx, manifest, path, result, walked=walked, walk_problems=walk_problems, trust=trust,
                               mapper=mapper, from_index=from_index)
    return result, trusted

# --- the provenance interface (provenance/interface.py) --------------------------------------------

KIND = LayoutKind.MANIFEST
ABSENT = "driftscan manifest"
SELF_AUDITED = False  # a manifest named to ``diff`` is not the directory's own: a checkpoint would not see it


def recognise(path: str, revision: str | None, in_tree_manifest: str | None) -> ModelDirLayout | None:
    """``<dir>/.driftscan-manifest.json``."""
    return None if in_tree_manifest is None else ModelDirLayout(path, path, KIND, manifest=in_tree_manifest)


audit = audit_manifest


def way_back(check: FileCheck, root: str, commit: str | None, memo: dict[Any, Any]) -> WayBack:
    return WayBack("restore it from a copy: the manifest holds its hash (and the text of small configs: see "
                   "json_changes/diff)")
