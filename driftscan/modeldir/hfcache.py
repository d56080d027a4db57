"""The Hugging Face hub cache: where it is, which repositories it holds, which snapshot a ref names.

Layout (docs/installers.md §7)::

    <cache>/models--ORG--NAME/refs/main            the commit "main" points at (no trailing newline)
    <cache>/models--ORG--NAME/snapshots/<commit>/  symlinks, ../../blobs/<etag> (deeper for subfolders)
    <cache>/models--ORG--NAME/blobs/<etag>         content, named by its etag (git sha1 or LFS sha256)
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..fs.reader import inside, read_kind

REPO_PREFIXES = ("models--", "datasets--", "spaces--")
_HEX = re.compile(r"[0-9a-f]+")


def default_hf_cache() -> str:
    """Where huggingface_hub puts its cache: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):  # the second is the deprecated spelling
        if os.environ.get(var):
            return os.path.expanduser(os.environ[var])
    if os.environ.get("HF_HOME"):
        return os.path.join(os.path.expanduser(os.environ["HF_HOME"]), "hub")
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, "huggingface", "hub")


def find_cache_repos(cache_dir: str) -> list[str]:
    """Every ``models--*``, ``datasets--*`` and ``spaces--*`` folder of a cache, sorted."""
    try:
        names = os.listdir(cache_dir)
    except OSError:
        return []
    return sorted(os.path.join(os.path.abspath(cache_dir), name) for name in names
                  if name.startswith(REPO_PREFIXES) and os.path.isdir(os.path.join(cache_dir, name)))


def no_repository(cache_dir: str) -> str | None:
    """What to say when a cache asked for holds no repository (None: it holds one): an empty or
    wrong directory must not pass as a clean cache."""
    if find_cache_repos(cache_dir):
        return None
    return f"the Hugging Face cache {cache_dir} holds no repository (models--*/, datasets--*/, spaces--*/)"


def repo_id_of(repo_dir: str) -> str:
    """``models--org--name`` → ``org/name`` (the form ``hf download`` takes)."""
    name = os.path.basename(repo_dir.rstrip(os.sep))
    for prefix in REPO_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):].replace("--", "/")
    return name


def is_cache_repo(path: str) -> bool:
    name = os.path.basename(os.path.abspath(path))
    has_snapshots = os.path.isdir(os.path.join(path, "snapshots"))
    if name.startswith(REPO_PREFIXES):
        return has_snapshots or os.path.isdir(os.path.join(path, "refs")) or os.path.isdir(os.path.join(path, "blobs"))
    return has_snapshots and os.path.isdir(os.path.join(path, "blobs"))


def snapshot_parent(path: str) -> str | None:
    """For ``<repo>/snapshots/<commit>``, the repository folder; otherwise None."""
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    if os.path.basename(parent) != "snapshots":
        return None
    repo = os.path.dirname(parent)
    return repo if is_cache_repo(repo) else None


@dataclass(frozen=True)
class Revision:
    commit: str | None
    ref: str | None  # the ref that named it, when one did
    problem: str | None = None  # why no snapshot could be chosen

    @property
    def label(self) -> str:
        return f"{self.ref} ({self.commit})" if self.ref else str(self.commit)


def snapshots_of(repo_dir: str) -> list[str]:
    try:
        return sorted(n for n in os.listdir(os.path.join(repo_dir, "snapshots"))
                      if os.path.isdir(os.path.join(repo_dir, "snapshots", n)))
    except OSError:
        return []


def resolve_revision(repo_dir: str, revision: str | None) -> Revision:
    """Which snapshot to audit: a ref (``main``, ``refs/pr/1``), a commit, or a unique commit prefix."""
    wanted = revision or "main"
    snapshots = snapshots_of(repo_dir)
    if wanted in snapshots:
        return Revision(wanted, None)
    ref = wanted.removeprefix("refs/")
    if ".." in ref.split("/") or ref.startswith("/"):
        return Revision(None, None, f"{wanted!r} is not a valid ref name")
    ref_path = os.path.join(repo_dir, "refs", *ref.split("/"))
    if os.path.lexists(ref_path) and not os.path.isdir(ref_path):
        try:
            # Capped (a ref is 40 hex digits), regular files only, never read from outside the repository.
            raw = read_kind(ref_path, "git ref", root=repo_dir)
        except OSError as exc:
            return Revision(None, ref, f"cannot read refs/{ref}: {exc.strerror or exc}")
        commit = raw.decode("ascii", "replace").strip()
        if not commit:
            return Revision(None, ref, f"refs/{ref} is empty")
        if not (_HEX.fullmatch(commit) and len(commit) <= 64):
            return Revision(None, ref, f"refs/{ref} does not hold a commit hash: {commit[:80]!r}")
        if commit not in snapshots:
            return Revision(commit, ref, f"refs/{ref} names commit {commit}, but snapshots/{commit} does not exist")
        return Revision(commit, ref)
    if 7 <= len(wanted) <= 40 and _HEX.fullmatch(wanted):
        matches = [s for s in snapshots if s.startswith(wanted)]
        if len(matches) == 1:
            return Revision(matches[0], None)
        if len(matches) > 1:
            return Revision(None, None, f"commit prefix {wanted} is ambiguous: {', '.join(matches)}")
    if revision is None and len(snapshots) == 1:
        # No refs/main (downloaded by commit hash): the only snapshot is the only candidate.
        return Revision(snapshots[0], None)
    known = ", ".join(snapshots) or "none"
    return Revision(None, None, f"no ref or snapshot named {wanted!r} (snapshots: {known})")


def containment_root(path: str) -> str:
    """The directory nothing may be read from outside of when auditing ``path``: the repository
    folder for a hub cache repository or anything inside one of its snapshots (their symlinks
    lead into ``../../blobs``), else ``path`` itself."""
    path = os.path.abspath(path)
    if is_cache_repo(path) and os.path.basename(path).startswith(REPO_PREFIXES):
        return path
    current = path
    for _ in range(64):  # a snapshot's subfolders are a few levels deep at most
        parent = os.path.dirname(current)
        if parent == current:
            break
        if os.path.basename(parent) == "snapshots" and is_cache_repo(os.path.dirname(parent)):
            return os.path.dirname(parent)
        current = parent
    return path


def blob_in_cache(repos: list[str], etag: str) -> str | None:
    """A blob named ``etag`` in any of ``repos`` (blobs are content-addressed, so any repo's will do)."""
    if not etag or "/" in etag or etag.startswith("."):
        return None
    for repo in repos:
        candidate = os.path.join(repo, "blobs", etag)
        if os.path.isfile(candidate) and inside(repo, candidate):
            return candidate
    return None
