"""``hf download --local-dir`` directories: each file against the etag huggingface_hub recorded.

The etag is the git blob sha1 of a regular file and the sha256 of an LFS file. huggingface_hub
keeps no copy of the original, so the text of a drifted config comes from elsewhere when it can:
a hub cache blob named by the same etag (content-addressed, so any repository's will do) or the
embedded text of an in-tree driftscan manifest — each used only if it hashes to the etag.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from typing import Any

from ..hfcache import blob_in_cache
from ..layout import DownloadMetadata, ModelDirLayout, etag_algorithm, has_metadata, read_download_metadata
from ...formats.manifest import EMBED_LIMIT, ManifestError, read_manifest, walk_tree
from ...core.values import FileCheck, LayoutKind, Problem
from ...fs.paths import relpath
from ..check import Context, Expect, KindResult, added_check, iso, run
from ..hashing import hash_file, new_hasher
from .interface import WayBack
from .hubrepo import COMMIT, RepoId, find_repo_id

STALE_TOLERANCE = 1.0  # seconds; huggingface_hub's own allowance for imprecise mtimes
# What the remedy shows where no repository id was found: visibly not one, quoted (unquoted, its
# angle brackets would be redirections), and refused by hf as a repository id if pasted unread.
REPO_PLACEHOLDER = "'<ORG/NAME: see above>'"


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
    digest: str = hasher.hexdigest()
    return digest == etag


def original_finder(ctx: Context, etag: str, texts: dict[str, str], relpath: str) -> Callable[[], bytes | None]:
    def find() -> bytes | None:
        text = texts.get(relpath)
        if text is not None and matches_etag(text.encode("utf-8"), etag):
            return text.encode("utf-8")
        for repo in ctx.cache_repos:  # the first intact copy: one repository's may be edited
            blob = blob_in_cache([repo], etag)
            if blob is None:
                continue
            try:
                if os.path.getsize(blob) >= ctx.limit:
                    return None
                digests, content, _ = hash_file(blob, (etag_algorithm(etag) or "sha256",), ctx.meter, keep=True)
            except OSError:
                continue
            if etag in digests.values():
                return content  # an edited blob is no original
        return None
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


# --- the way back: the repository from hubrepo.py's ranking, the revision from the metadata ---

def _download_command(q_rel: str, q_root: str, commit: str | None, repo: RepoId | None) -> str:
    """The remedy: which evidence named the repository, then the download pinned to ``commit``; with
    no repository (or a guessed one and no commit to pin), the offline way and the command's shape."""
    pinned = commit is not None and COMMIT.match(commit) is not None
    rev = f" --revision {shlex.quote(commit)}" if commit else ""  # the commit comes from the tree
    if repo is not None and (repo.certain or pinned):
        kind = f" --repo-type {repo.repo_type}" if repo.repo_type != "model" else ""
        return (f"repository named by {repo.label}: "
                f"hf download {repo.repo_id}{kind} {q_rel}{rev} --local-dir {q_root} --force-download")
    recorded = f" {commit[:12]}" if commit else ""
    why = ("no repository is known: the download metadata records only the commit" + recorded + ", and no hub cache"
           " holds it, no git remote and no config.json _name_or_path names one") if repo is None else \
        (f"no repository is known for sure: {repo.label} names {repo.repo_id}, but with no commit to pin the"
         " download to, another repository's file could be fetched")
    # ", hf download" (not ": "): remedies.py then puts the checkpoint line before all of it.
    return (f"{why}; restore it offline from a copy of the original (the file's source, a backup, another download"
            f"{' of commit' + recorded if commit else ''}), or once you know the repository, "
            f"hf download {REPO_PLACEHOLDER} {q_rel}{rev} --local-dir {q_root} --force-download")


def _evidence(repo: RepoId | None, commit: str | None) -> str:
    """What named the repository in the remedy, for the drift's evidence."""
    if repo is None:
        return ("; no repository in the remedy: no hub cache holds the recorded commit, and no git remote or"
                " config.json _name_or_path names one (README.md's base_model is the model this one was derived"
                " from, not where it was downloaded)")
    said = f"; the repository {repo.repo_id} in the remedy: {repo.detail} (evidence: {repo.evidence.value})"
    if repo.certain:
        return said
    if commit is None or COMMIT.match(commit) is None:
        return (f"; no repository in the remedy: {repo.detail} (evidence: {repo.evidence.value}) names"
                f" {repo.repo_id}, not used without a recorded commit to pin the download to")
    return (said + f", not a record of the download; --revision {commit[:12]} is the commit the download metadata"
            " records, so a wrong name fails instead of fetching another repository's file")


# --- the provenance interface (provenance/interface.py) --------------------------------------------

KIND = LayoutKind.HF_LOCAL_DIR
ABSENT = "download metadata"
SELF_AUDITED = True


def recognise(path: str, revision: str | None, in_tree_manifest: str | None) -> ModelDirLayout | None:
    return ModelDirLayout(path, path, KIND, manifest=in_tree_manifest) if has_metadata(path) else None


audit = audit_local_dir


def way_back(check: FileCheck, root: str, commit: str | None, memo: dict[Any, Any]) -> WayBack:
    own = check.expected.get("commit")  # the commit this file was downloaded at, else the directory's
    commit = own if isinstance(own, str) and own else commit
    if commit not in memo:
        memo[commit] = find_repo_id(root, commit)
    repo: RepoId | None = memo[commit]
    rel = relpath(check.path, check.root)
    return WayBack(_download_command(shlex.quote(rel), shlex.quote(root), commit, repo), _evidence(repo, commit))
