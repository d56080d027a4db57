"""``hf download --local-dir`` directories: each file against the etag huggingface_hub recorded.

The etag is the git blob sha1 of a regular file and the sha256 of an LFS file. huggingface_hub
keeps no copy of the original, so the text of a drifted config comes from elsewhere when it can:
a hub cache blob named by the same etag (content-addressed, so any repository's will do) or the
embedded text of an in-tree driftscan manifest — each used only if it hashes to the etag.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ..hfcache import blob_in_cache
from ..layout import DownloadMetadata, ModelDirLayout, etag_algorithm, read_download_metadata
from ...formats.manifest import EMBED_LIMIT, ManifestError, read_manifest, walk_tree
from ...core.values import Problem
from ..check import Context, Expect, KindResult, added_check, iso, run
from ..hashing import hash_file, new_hasher

STALE_TOLERANCE = 1.0  # seconds; huggingface_hub's own allowance for imprecise mtimes


def _stale(meta: DownloadMetadata) -> Callable[[os.stat_result], str | None]:
    def check(st: os.stat_result) -> str | None:
        # huggingface_hub trusts its metadata only while st_mtime - 1 <= timestamp.
        if st.st_mtime - STALE_TOLERANCE <= meta.timestamp:
            return None
        return (f"modified at {iso(st.st_mtime)}, after its download metadata was written"
                f" ({iso(meta.timestamp)}); huggingface_hub itself no longer trusts that metadata")
    return check


def matches_etag(data: bytes, etag: str) -> bool:
    algorithm = etag_algorithm(etag)
    if algorithm is None:
        return False
    hasher = new_hasher(algorithm, len(data))
    hasher.update(data)
    return hasher.hexdigest() == etag


def original_finder(ctx: Context, etag: str, texts: dict[str, str], relpath: str) -> Callable[[], bytes | None]:
    def find() -> bytes | None:
        text = texts.get(relpath)
        if text is not None and matches_etag(text.encode("utf-8"), etag):
            return text.encode("utf-8")
        blob = blob_in_cache(ctx.cache_repos, etag)
        if blob is None:
            return None
        try:
            if os.path.getsize(blob) >= ctx.limit:
                return None
            digests, content, _ = hash_file(blob, (etag_algorithm(etag) or "sha256",), ctx.meter, keep=True)
        except OSError:
            return None
        return content if etag in digests.values() else None  # an edited blob is no original
    return find


def manifest_texts(path: str | None, problems: list[Problem], root: str | None = None) -> dict[str, str]:
    if path is None:
        return {}
    try:
        manifest = read_manifest(path, root=root)
    except ManifestError as exc:
        problems.append(Problem(path, f"in-tree manifest not used: {'; '.join(exc.issues)}"))
        return {}
    # driftscan embeds at most EMBED_LIMIT per file: longer text was not written by it.
    return {rel: e.text for rel, e in manifest.files.items() if e.text is not None and len(e.text) <= EMBED_LIMIT}


def audit_local_dir(ctx: Context, layout: ModelDirLayout, revision: str | None) -> KindResult:
    result = KindResult()
    metas, broken, problems = read_download_metadata(ctx.root)
    result.problems.extend(problems)
    texts = manifest_texts(layout.manifest, result.problems, ctx.contain)
    expects = []
    for rel, meta in sorted(metas.items()):
        algorithm = etag_algorithm(meta.etag)
        if algorithm is None:
            result.problems.append(Problem(meta.metadata_path, f"etag {meta.etag!r} is neither a git blob sha1"
                                           " (40 hex) nor a sha256 (64 hex): only presence was checked"))
        lfs = "LFS " if algorithm == "sha256" else ""
        expects.append(Expect(
            rel, os.path.join(ctx.root, rel), algorithm, meta.etag if algorithm else None,
            expected={"etag": meta.etag, "commit": meta.commit, "metadata_timestamp": iso(meta.timestamp)},
            source=f"the {lfs}etag recorded at download (commit {meta.commit[:12]})",
            stale=_stale(meta), original=original_finder(ctx, meta.etag, texts, rel)))
    result.add_outcomes(ctx, run(expects, ctx))
    commits = sorted({m.commit for m in metas.values()})
    result.commit = commits[0] if len(commits) == 1 else None
    if revision and not all(c.startswith(revision) for c in commits):
        result.problems.append(Problem(ctx.root, f"revision {revision} was not checked: this directory's files were"
                                       f" downloaded at commit {', '.join(commits)}"))
    known = set(metas) | broken
    relpaths, walk_problems = walk_tree(ctx.root)
    result.problems.extend(walk_problems)
    why = "not in the download metadata: huggingface_hub did not write it"
    result.checks.extend(added_check(ctx, rel, why) for rel in relpaths if rel not in known)
    return result
