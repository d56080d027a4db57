"""A directory against a driftscan manifest (``driftscan.manifest`` defines and writes the format).

The manifest records size, mode and mtime_ns for every file, so large files get a stricter cheap
check than huggingface_hub metadata allows: a different size is "modified" outright, and an
unchanged size with a different mtime is "stale-metadata" (content not read).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable

import xxhash

from ...discover.modeldir import ModelDirLayout
from ...manifest import EMBED_LIMIT, MANIFEST_NAME, Manifest, ManifestEntry, ManifestError, is_link_only, read_manifest, walk_tree
from ...model import Area, DriftKind, FileCheck, Problem, Unverifiable
from .engine import Context, Expect, KindResult, added_check, iso, run


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
    source = f"the driftscan manifest ({manifest.created})"
    expects = []
    for rel, entry in sorted(manifest.files.items()):
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
        expects.append(Expect(
            rel, os.path.join(ctx.root, rel), "xxh3_128", entry.xxh3_128, entry.size,
            expected={"xxh3_128": entry.xxh3_128, "size": entry.size, "mode": oct(stat.S_IMODE(entry.mode)),
                      "mtime": iso(entry.mtime_ns / 1e9)},
            source=source, stale=_stale(entry), original=_original(entry), follow=True,
            mode=(entry.mode, 0o7777)))
    flagged = {c.path for c in result.checks}
    for outcome in run(expects, ctx):
        if outcome.expect.path in flagged and outcome.status != "missing":
            result.files_checked += 1
            continue  # the symlink change is the drift; do not report the path twice
        result.add_outcomes(ctx, [outcome])
    own = os.path.abspath(path)
    relpaths, walk_problems = walk_tree(ctx.root)
    result.problems.extend(walk_problems)
    for rel in relpaths:
        if rel not in manifest.files and os.path.join(ctx.root, rel) != own:
            result.checks.append(added_check(ctx, rel, f"not in {source}"))
    return result
