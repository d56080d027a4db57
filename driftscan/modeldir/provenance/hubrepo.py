"""Which Hub repository a ``hf download --local-dir`` directory came from, and what says so.

huggingface_hub's download metadata records a commit, an etag and a time per file, never the
repository (docs/model-directories.md). What else is on disk is ranked, best first:

1. the hub cache holding a snapshot of the commit the download metadata records: that commit is
   this repository's (certain);
2. a Hugging Face remote in the directory's own ``.git/config`` (a directory that is also a clone);
3. ``config.json``'s ``_name_or_path`` when it has the ``owner/name`` form;
4. nothing: no repository is named, and none is guessed.

README.md's ``base_model`` is never evidence: it names the model this one was derived from (a
quantization's or a fine-tune's base), a different repository, where the recorded commit does not
exist. The revision a remedy pins is always the commit the download metadata records for the
file: the hub-cache evidence is found *by* that commit, and for the other two a wrong name then
fails in hf instead of fetching another repository's file.
"""

from __future__ import annotations

import enum
import json
import os
import re
from dataclasses import dataclass

from ...fs.reader import read_regular
from ..hfcache import REPO_PREFIXES, default_hf_cache, find_cache_repos, repo_id_of
from .gitclone import remote_urls

# A Hub repository id as ``hf download`` takes it: ``org/name``, ASCII word characters, dots and
# dashes, never starting with one (an option) nor holding ".." or "--" (the Hub allows neither).
_REPO_ID = re.compile(r"[A-Za-z0-9_][\w.-]{0,95}/[A-Za-z0-9_][\w.-]{0,95}\Z", re.ASCII)
COMMIT = re.compile(r"[0-9a-f]{40}\Z")
CONFIG_MAX = 4 << 20
_HUB_HOSTS = ("huggingface.co", "hf.co")
# https://[user[:token]@]host[:port]/PATH, ssh://[user@]host[:port]/PATH, or scp-like user@host:PATH
_REMOTE = re.compile(r"(?:(?:https?|ssh)://(?:[^@/]*@)?(?P<host>[^/:@]+)(?::\d+)?/|[^@/:]+@(?P<scp>[^/:@]+):)"
                     r"(?P<path>[^?#]*)\Z", re.IGNORECASE)


class RepoEvidence(enum.Enum):
    """What named a local directory's repository, best first."""

    HUB_CACHE = "hub-cache"  # the download metadata's commit is a snapshot of this hub-cache repository
    GIT_REMOTE = "git-remote"  # a Hugging Face remote in the directory's .git/config
    NAME_OR_PATH = "name-or-path"  # config.json's _name_or_path, in owner/name form


def valid_repo_id(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    if not _REPO_ID.match(value) or ".." in value or "--" in value or value.endswith((".", "-")):
        return None
    return value


@dataclass(frozen=True)
class RepoId:
    """A local directory's Hub repository and the evidence that named it (``detail``: where, in
    the report's words)."""

    repo_id: str
    evidence: RepoEvidence
    detail: str
    repo_type: str = "model"

    @property
    def certain(self) -> bool:
        return self.evidence is RepoEvidence.HUB_CACHE

    @property
    def label(self) -> str:
        """The evidence in a few words, for the remedy."""
        return _LABELS[self.evidence]


_LABELS = {RepoEvidence.HUB_CACHE: "the hub cache holding the recorded commit",
           RepoEvidence.GIT_REMOTE: "the git remote in .git/config",
           RepoEvidence.NAME_OR_PATH: "config.json's _name_or_path"}


def _in_hub_cache(commit: str) -> RepoId | None:
    """The hub cache repository holding a snapshot of ``commit``: that commit is this repository's."""
    cache = default_hf_cache()
    for repo in find_cache_repos(cache) if cache else []:
        if os.path.isdir(os.path.join(repo, "snapshots", commit)):
            name = os.path.basename(repo)
            kind = next((p[:-3] for p in REPO_PREFIXES if name.startswith(p)), "model")
            found = valid_repo_id(repo_id_of(repo))
            if found:
                return RepoId(found, RepoEvidence.HUB_CACHE, f"the hub cache holds the download metadata's commit "
                              f"{commit[:12]} in {repo}", kind)
    return None


def hub_repo_of_url(url: str) -> tuple[str, str] | None:
    """(repo id, repo type) of a Hugging Face git URL, else None. Credentials in the URL are dropped,
    never shown."""
    found = _REMOTE.match(url)
    if found is None or (found.group("host") or found.group("scp") or "").lower() not in _HUB_HOSTS:
        return None
    path = found.group("path").rstrip("/").removesuffix(".git")
    kind, _, rest = path.partition("/")
    repo_type = {"datasets": "dataset", "spaces": "space"}.get(kind)
    repo_id = valid_repo_id(rest if repo_type else path)
    return (repo_id, repo_type or "model") if repo_id else None


def _git_remote(root: str) -> RepoId | None:
    urls = remote_urls(root)
    for name, url in sorted(urls, key=lambda u: u[0] != "origin"):  # origin first, then file order
        found = hub_repo_of_url(url)
        if found:
            return RepoId(found[0], RepoEvidence.GIT_REMOTE, f"the git remote {name!r} in .git/config", found[1])
    return None


def _name_or_path(root: str) -> RepoId | None:
    try:
        data = json.loads(read_regular(os.path.join(root, "config.json"), CONFIG_MAX, root=root))
    except (OSError, ValueError, RecursionError):
        return None
    found = valid_repo_id(data.get("_name_or_path") if isinstance(data, dict) else None)
    return RepoId(found, RepoEvidence.NAME_OR_PATH, "config.json's _name_or_path") if found else None


def find_repo_id(root: str, commit: str | None) -> RepoId | None:
    """The best evidence of the repository a local directory came from (the module's ranking),
    None when nothing names it. ``commit``: the one the download metadata records."""
    if commit and COMMIT.match(commit):
        cached = _in_hub_cache(commit)
        if cached is not None:
            return cached
    return _git_remote(root) or _name_or_path(root)
