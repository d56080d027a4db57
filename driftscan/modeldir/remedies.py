"""The way back for a drifted model-directory file, by the kind of provenance that caught it."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from dataclasses import dataclass, replace

from .hfcache import REPO_PREFIXES, default_hf_cache, find_cache_repos, repo_id_of
from ..fs.reader import open_regular, read_regular
from ..core.values import DriftKind, FileCheck, LayoutKind
from ..fs.paths import relpath

# A Hub repository id as ``hf download`` takes it: ``org/name``, ASCII word characters, dots and
# dashes, never starting with one (an option) nor holding ".." or "--" (the Hub allows neither).
_REPO_ID = re.compile(r"[A-Za-z0-9_][\w.-]{0,95}/[A-Za-z0-9_][\w.-]{0,95}\Z", re.ASCII)
_COMMIT = re.compile(r"[0-9a-f]{40}\Z")
README_HEAD = 64 << 10  # the front matter opens a model card: only this much of README.md is read
CONFIG_MAX = 4 << 20
# What the remedy shows where no repository id was found: visibly not one, quoted (unquoted, its
# angle brackets would be redirections), and refused by hf as a repository id if pasted unread.
REPO_PLACEHOLDER = "'<ORG/NAME: see above>'"


def checkpoints_base() -> str:
    """Where checkpoints go when no path is named: ``DRIFTSCAN_CHECKPOINT_DIR``, else
    ``$XDG_STATE_HOME/driftscan/checkpoints`` (``~/.local/state``). ``driftscan checkpoint``
    creates it when a path inside it is asked for."""
    return os.environ.get("DRIFTSCAN_CHECKPOINT_DIR") or os.path.join(
        os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state"), "driftscan", "checkpoints")


# A remedy that deletes or replaces a file destroys the edit in it: before that part, the exact
# line that saves it, chained with && so that nothing is deleted when the checkpoint fails.
CHECKPOINT_FIRST = "checkpoint first: "


def checkpoint_line(model_root: str, check: FileCheck) -> str:
    """``driftscan checkpoint --model-dir ROOT -o DIR`` saving this drift (and the directory's
    others) before a remedy destroys it. DIR is new for each state of the file (named by the
    path and what is on disk now), in ``checkpoints_base()``: run again after another edit, the
    line names another checkpoint; the same line twice refuses to replace the first."""
    state = json.dumps([check.path, check.kind.value, check.actual], sort_keys=True, default=str)
    name = os.path.basename(model_root.rstrip(os.sep)) or "model"
    repo = os.path.dirname(os.path.dirname(model_root.rstrip(os.sep)))
    if os.path.basename(os.path.dirname(model_root.rstrip(os.sep))) == "snapshots" and repo:
        name = f"{os.path.basename(repo)}-{name[:12]}"  # models--org--name-<commit>, not the bare commit
    dest = os.path.join(checkpoints_base(), f"{name}-{hashlib.sha256(state.encode()).hexdigest()[:12]}")
    return f"driftscan checkpoint --model-dir {shlex.quote(model_root)} -o {shlex.quote(dest)}"


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


def _local_dir(q_rel: str, q_root: str, commit: str | None, repo: RepoId | None) -> str:
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


def _remedy(kind: LayoutKind, root: str, repo_dir: str | None, commit: str | None, check: FileCheck,
            repo: RepoId | None = None) -> str:
    """The way back, with the checkpoint line first wherever it deletes or replaces content."""
    way = _way_back(kind, root, repo_dir, commit, check, repo)
    if check.kind in (DriftKind.MISSING, DriftKind.STALE_METADATA):
        return way  # nothing on disk to lose (a dangling link, a file only re-read)
    if kind not in _SELF_AUDITED:
        return way  # a checkpoint of the directory alone would not see this drift (a snapshot's diff)
    first = checkpoint_line(root, check)
    command = _DESTRUCTIVE.search(way)  # the destructive part, wherever the text puts it
    if command is not None:
        at = command.start(1)
        return f"{way[:at]}{CHECKPOINT_FIRST}{first} && {way[at:]}"
    return f"{CHECKPOINT_FIRST}{first}; then {way}"


# Layouts whose own provenance an audit finds (so ``driftscan checkpoint --model-dir`` sees the
# same drift); a manifest given to ``diff`` is not one of them.
_SELF_AUDITED = {LayoutKind.HF_CACHE_REPO, LayoutKind.HF_LOCAL_DIR, LayoutKind.GIT}

# The command a remedy's text starts with, or that follows its explanation's ": ".
_DESTRUCTIVE = re.compile(r"(?:\A|: )(rm |git -C |hf download )")


def _way_back(kind: LayoutKind, root: str, repo_dir: str | None, commit: str | None, check: FileCheck,
              repo: RepoId | None = None) -> str:
    rel = relpath(check.path, check.root)
    q_rel, q_root, q_path = shlex.quote(rel), shlex.quote(root), shlex.quote(check.path)
    if check.kind is DriftKind.ADDED:
        return f"no download or reinstall removes it; if it is not needed: rm {q_path}"
    if check.kind is DriftKind.STALE_METADATA:
        return "its content was not read (large file newer than its download metadata): rerun with --deep to hash it"
    rev = f" --revision {shlex.quote(commit)}" if commit else ""  # the commit comes from the tree
    if kind is LayoutKind.GIT:
        return f"git -C {q_root} checkout HEAD -- {q_rel}  (LFS weights: git -C {q_root} lfs pull --include {q_rel})"
    if kind is LayoutKind.HF_CACHE_REPO and repo_dir:
        repo_id = shlex.quote(repo_id_of(repo_dir))
        etag = check.expected.get("blob")
        blob = os.path.join(repo_dir, "blobs", etag) if etag and check.kind is DriftKind.MODIFIED else None
        first = f"rm {shlex.quote(blob)} {q_path} && " if blob else f"rm {q_path} && "
        return f"{first}hf download {repo_id} {q_rel}{rev}"
    if kind is LayoutKind.HF_LOCAL_DIR:
        return _local_dir(q_rel, q_root, commit, repo)
    if kind is LayoutKind.MANIFEST:
        return "restore it from a copy: the manifest holds its hash (and the text of small configs: see json_changes/diff)"
    return "restore it from its source"


def _file_commit(check: FileCheck, commit: str | None) -> str | None:
    """The commit a local-dir file was downloaded at (its own metadata), else the directory's."""
    own = check.expected.get("commit")
    return own if isinstance(own, str) and own else commit


def with_remedies(result) -> tuple[FileCheck, ...]:
    """``result``: a ModelDirResult. Fills each check's ``remedy_hint``."""
    repo_dir = None
    if result.kind is LayoutKind.HF_CACHE_REPO:
        parent = result.root
        while parent and os.path.basename(parent) and not os.path.isdir(os.path.join(parent, "blobs")):
            parent = os.path.dirname(parent)
        repo_dir = parent or None
    if result.kind is not LayoutKind.HF_LOCAL_DIR:
        return tuple(replace(c, remedy_hint=c.remedy_hint or _remedy(result.kind, result.root, repo_dir,
                                                                     result.commit, c))
                     for c in result.checks)
    out = []
    found: dict[str | None, RepoId | None] = {}
    for c in result.checks:
        if c.remedy_hint:
            out.append(c)
            continue
        commit = _file_commit(c, result.commit)
        if commit not in found:
            found[commit] = find_repo_id(result.root, commit)
        repo = found[commit]
        evidence = c.evidence
        if repo is not None and not repo.certain and c.kind not in (DriftKind.ADDED, DriftKind.STALE_METADATA):
            evidence += (f"; the repository id {repo.repo_id} in the remedy comes from {repo.source}, a guess: "
                         "the pinned --revision makes a wrong one fail instead of fetching another repository's file")
        out.append(replace(c, evidence=evidence, remedy_hint=_remedy(result.kind, result.root, repo_dir, commit, c,
                                                                     repo)))
    return tuple(out)
