"""``hf download --local-dir`` directories: each file against the etag huggingface_hub recorded.

The etag is the git blob sha1 of a regular file and the sha256 of an LFS file. huggingface_hub
keeps no copy of the original, so the text of a drifted config comes from elsewhere when it can:
a hub cache blob named by the same etag (content-addressed, so any repository's will do) or the
embedded text of an in-tree driftscan manifest — each used only if it hashes to the etag.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..hfcache import REPO_PREFIXES, blob_in_cache, default_hf_cache, find_cache_repos, repo_id_of
from ..layout import DownloadMetadata, ModelDirLayout, etag_algorithm, has_metadata, read_download_metadata
from ...formats.manifest import EMBED_LIMIT, ManifestError, read_manifest, walk_tree
from ...core.values import FileCheck, LayoutKind, Problem
from ...fs.paths import relpath
from ...fs.reader import open_regular, read_regular
from ..check import Context, Expect, KindResult, added_check, iso, run
from ..hashing import hash_file, new_hasher
from .interface import WayBack

STALE_TOLERANCE = 1.0  # seconds; huggingface_hub's own allowance for imprecise mtimes
# A Hub repository id as ``hf download`` takes it: ``org/name``, ASCII word characters, dots and
# dashes, never starting with one (an option) nor holding ".." or "--" (the Hub allows neither).
_REPO_ID = re.compile(r"[A-Za-z0-9_][\w.-]{0,95}/[A-Za-z0-9_][\w.-]{0,95}\Z", re.ASCII)
_COMMIT = re.compile(r"[0-9a-f]{40}\Z")
README_HEAD = 64 << 10  # the front matter opens a model card: only this much of README.md is read
CONFIG_MAX = 4 << 20
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


# --- where a local directory came from: the Hub repository, for the way back ---------------------

def valid_repo_id(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    if not _REPO_ID.match(value) or ".." in value or "--" in value or value.endswith((".", "-")):
        return None
    return value


@dataclass(frozen=True)
class RepoId:
    """A local directory's Hub repository, and where it was read: the hub cache holding that
    commit (certain), or the model card or config (a guess the pinned revision checks)."""

    repo_id: str
    source: str
    repo_type: str = "model"
    certain: bool = False


def _front_matter(root: str) -> list[str]:
    """The lines of README.md's YAML front matter (``---`` … ``---`` at its start), read bounded:
    a regular file inside the directory, its first README_HEAD bytes."""
    path = os.path.join(root, "README.md")
    try:
        fd, _ = open_regular(path, root=root)
    except OSError:
        return []
    try:
        head = os.read(fd, README_HEAD)
    except OSError:
        return []
    finally:
        os.close(fd)
    lines = head.decode("utf-8", "replace").lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return []
    for n, line in enumerate(lines[1:], 1):
        if line.strip() in ("---", "..."):
            return lines[1:n]
    return []  # not closed within the head: not read as front matter


def _scalar(text: str) -> str:
    text = text.split(" #", 1)[0].strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]
    return text


def _card_ids(lines: list[str]) -> list[tuple[str, str]]:
    """(repo id, which key) from the front matter: the ``name`` of ``model-index`` entries (the
    card's own model; a dataset's ``name`` deeper down is not one), then ``base_model`` (a scalar
    or a list: the model this one was made from). A line reader, not YAML: only these keys'
    plain values count."""
    index: list[tuple[str, str]] = []
    base: list[tuple[str, str]] = []
    section, item_indent = None, None
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        text = line.strip()
        if indent == 0 and not text.startswith("- "):
            key, _, value = text.partition(":")
            section, item_indent = key.strip(), None
            if section == "base_model" and _scalar(value):
                base.append((_scalar(value), "README.md's base_model"))
            continue
        if section == "base_model" and text.startswith("- "):
            base.append((_scalar(text[2:]), "README.md's base_model"))
        elif section == "model-index":
            if text.startswith("- ") and item_indent is None:
                item_indent = indent
            if text.startswith("- ") and indent == item_indent:
                text = text[2:].lstrip()
            elif item_indent is None or indent != item_indent + 2:
                continue
            if text.startswith("name:"):
                index.append((_scalar(text[len("name:"):]), "README.md's model-index name"))
    return index + base


def _config_id(root: str) -> list[tuple[str, str]]:
    try:
        data = json.loads(read_regular(os.path.join(root, "config.json"), CONFIG_MAX, root=root))
    except (OSError, ValueError, RecursionError):
        return []
    value = data.get("_name_or_path") if isinstance(data, dict) else None
    return [(value, "config.json's _name_or_path")] if isinstance(value, str) else []


def _in_hub_cache(commit: str) -> RepoId | None:
    """The hub cache repository holding a snapshot of ``commit``: that commit is this repository's."""
    cache = default_hf_cache()
    for repo in find_cache_repos(cache) if cache else []:
        if os.path.isdir(os.path.join(repo, "snapshots", commit)):
            name = os.path.basename(repo)
            kind = next((p[:-3] for p in REPO_PREFIXES if name.startswith(p)), "model")
            found = valid_repo_id(repo_id_of(repo))
            if found:
                return RepoId(found, f"the hub cache holds commit {commit[:12]} in {repo}", kind, certain=True)
    return None


def find_repo_id(root: str, commit: str | None) -> RepoId | None:
    """The repository a ``hf download --local-dir`` directory came from, from what is on disk.
    huggingface_hub's ``.cache/huggingface/download/*.metadata`` record the commit, the etag and
    a time, never the repository (docs/model-directories.md), so: the hub cache holding that
    commit, else the model card's front matter, else config.json's ``_name_or_path``."""
    if commit and _COMMIT.match(commit):
        cached = _in_hub_cache(commit)
        if cached is not None:
            return cached
    for value, source in (*_card_ids(_front_matter(root)), *_config_id(root)):
        found = valid_repo_id(value)
        if found:
            return RepoId(found, source)
    return None


def _download_command(q_rel: str, q_root: str, commit: str | None, repo: RepoId | None) -> str:
    pinned = commit is not None and _COMMIT.match(commit) is not None
    rev = f" --revision {shlex.quote(commit)}" if commit else ""  # the commit comes from the tree
    if repo is not None and (repo.certain or pinned):
        kind = f" --repo-type {repo.repo_type}" if repo.repo_type != "model" else ""
        return f"hf download {repo.repo_id}{kind} {q_rel}{rev} --local-dir {q_root} --force-download"
    why = (f"the repository id is recorded nowhere here (the download metadata holds only the commit"
           f"{' ' + commit[:12] if commit else ''}; no model card or config names one)") if repo is None else \
        (f"{repo.source} names {repo.repo_id}, but with no commit to pin the download to, another repository's "
         "file could be fetched")
    return (f"{why}: find the id (the model's Hub page, or the hf download command in your shell history), then: "
            f"hf download {REPO_PLACEHOLDER} {q_rel}{rev} --local-dir {q_root} --force-download")


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
    evidence = ""
    if repo is not None and not repo.certain:
        evidence = (f"; the repository id {repo.repo_id} in the remedy comes from {repo.source}, a guess: "
                    "the pinned --revision makes a wrong one fail instead of fetching another repository's file")
    rel = relpath(check.path, check.root)
    return WayBack(_download_command(shlex.quote(rel), shlex.quote(root), commit, repo), evidence)
