"""A directory against a driftscan manifest (``driftscan.manifest`` defines and writes the format).

The manifest records size, mode and mtime_ns for every file, so large files get a stricter cheap
check than huggingface_hub metadata allows: a different size is "modified" outright, and an
unchanged size with a different mtime is "stale-metadata" (content not read).

One walk of the tree (``manifest.scan_tree``: one lstat per file) settles every file that is a
regular file in the manifest and now: large ones as above, small ones by hashing — or, for
``diff`` without ``--no-cache``, by their signature (size, mtime and mode as recorded, outside the
snapshot's racy window: ``Manifest.trusted``), unread. What the walk cannot settle (a file
missing, a symlink then or now, another type) goes through engine's per-file checks as before;
the verdicts and their wording are engine's either way.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable

import xxhash

from ...discover.modeldir import ModelDirLayout
from ...fileio import NOFOLLOW, file_type, os_error
from ...manifest import (
    EMBED_LIMIT,
    MANIFEST_NAME,
    REDO,
    Manifest,
    ManifestEntry,
    ManifestError,
    hash_fd,
    in_threads,
    is_link_only,
    read_manifest,
    scan_tree,
)
from ...model import Area, DriftKind, FileCheck, Problem, Unverifiable
from .hashing import OPEN_FLAGS, open_noatime
from .engine import (
    large_unread_outcome,
    mode_outcome,
    ERROR,
    MISSING,
    MODIFIED,
    OK,
    STALE,
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
    expected = {"type": "symlink", "symlink_target": entry.link} if entry.link else {"type": "file"}
    got = {"type": "symlink", "symlink_target": actual} if actual else {"type": "file"}
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
    actual = {"xxh3_128": digest, "size": st.st_size, "mtime": iso(st.st_mtime)}
    evidence = f"xxh3-128 differs from {source}"
    if st.st_size != entry.size:
        evidence += f" (size {entry.size} → {st.st_size})"
    return Outcome(exp, MODIFIED, actual, evidence, content)


def _added(ctx: Context, rel: str, st: os.stat_result | None, reason: str) -> FileCheck:
    """engine.added_check with the walk's lstat (None: it vanished, or could not be stat'ed)."""
    path = os.path.join(ctx.root, rel)
    actual: dict = {}
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


def settle(ctx: Context, manifest: Manifest, rel: str, st, trust: bool) -> object | None:
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


def settled_by_signature(manifest: Manifest, entry: ManifestEntry | None, st, limit: int) -> bool:
    """Whether the walk's lstat ``st`` settles ``entry`` without reading the file: a regular file
    then and now, small (a large one is settled by size and mtime anyway), its signature trusted
    (``Manifest.trusted``). For a tree whose root is inside its containment directory, with trust on."""
    return (entry is not None and st is not None and entry.link is None and stat.S_ISREG(st.st_mode)
            and not stat.S_ISLNK(entry.mode) and st.st_size < limit and manifest.trusted(entry, st))


def compare_manifest(ctx: Context, manifest: Manifest, path: str, result: KindResult, *,
                     walked: dict[str, os.stat_result | None] | None = None,
                     walk_problems: list[Problem] | None = None, trust: bool = False,
                     mapper: Callable = in_threads) -> int:
    """Compare the tree with ``manifest`` (read from ``path``) into ``result``; returns how many
    files were trusted by signature.

    One walk (``walked``: ``manifest.scan_tree``'s, if the caller took it), one lstat per file
    (the walk's). A file that is a regular file in the manifest and now is settled from that
    lstat: a large one (no ``deep``) by size, mtime and mode as engine does; with ``trust``, a
    small one whose signature matches (``Manifest.trusted``) without reading it; any other is
    opened and hashed. Anything else (missing, a symlink then or now, another type) goes through
    engine's checks, as every file did before."""
    if walked is None:
        walked, walk_problems = scan_tree(ctx.root)
    source = f"the driftscan manifest ({manifest.created})"
    fast = walk_inside(ctx)
    expects = []
    to_hash: list[tuple[str, ManifestEntry]] = []
    sizes: list[int] = []
    trusted = 0
    limit, deep = ctx.limit, ctx.deep
    isreg, islnk = stat.S_ISREG, stat.S_ISLNK
    for rel, entry in manifest.files.items():
        st = walked.get(rel)
        if st is TRUSTED or st is MATCHED:  # ``settle`` decided it already, where the file was walked
            trusted += st is TRUSTED
            result.files_checked += 1
            continue
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

    def decode(value: int):
        if type(value) is not int or value <= 0:
            return REDO
        ctx.meter.note_hashed(value - 1)
        return None

    hashed = mapper(lambda item: _hash_walked(ctx, item[0], item[1], source), settled, decode, to_hash, sizes, ctx.jobs)
    ctx.meter.note_hashed(0, final=True)
    for outcome in hashed:
        if outcome is None:
            result.files_checked += 1
        else:
            result.add_outcomes(ctx, [outcome])
    for outcome in run(expects, ctx):
        if outcome.expect.path in flagged and outcome.status != "missing":
            result.files_checked += 1
            continue  # the symlink change is the drift; do not report the path twice
        result.add_outcomes(ctx, [outcome])
    own = os.path.abspath(path)
    result.problems.extend(walk_problems or ())
    files = manifest.files
    for rel, st in walked.items():
        if rel not in files and os.path.join(ctx.root, rel) != own:
            result.checks.append(_added(ctx, rel, st, f"not in {source}"))
    return trusted


def diff_manifest(ctx: Context, layout: ModelDirLayout, manifest: Manifest | None,
                  walked: dict[str, os.stat_result | None], walk_problems: list[Problem], *,
                  trust: bool = False, mapper: Callable = in_threads) -> tuple[KindResult, int]:
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
                               mapper=mapper)
    return result, trusted
