"""Hub cache repositories: a snapshot's symlinks against the blobs they name.

A blob's file name is its etag, so each blob carries its own expected hash. Two edits are common:

- writing through the symlink (``open(path, "w")``, most editors) changes the blob in place:
  its content no longer matches its name, and every snapshot linking it sees the edit;
- ``sed -i`` and other write-then-rename edits replace the symlink by a regular file and leave
  the blob intact, so the blob is the original to diff against.

The cache records no file list per snapshot, so a deleted symlink is invisible here; the weight
map of an ``*.index.json`` still catches deleted shards (see consistency.py).
"""

from __future__ import annotations

import difflib
import os
import shlex
import stat
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from ..hfcache import (Revision, blob_in_cache, find_cache_repos, is_cache_repo, repo_id_of, resolve_revision,
                       snapshot_parent, snapshots_of)
from ..layout import ModelDirLayout, etag_algorithm
from ...fs.reader import inside
from ...formats.jsondiff import as_text
from ...formats.manifest import walk_tree
from ...core.units import count
from ...core.values import Area, DriftKind, FileCheck, FileState, LayoutKind, Problem, Unverifiable
from ...fs.paths import relpath
from .interface import WayBack
from ..check import MODIFIED, OK, Context, Expect, KindResult, Outcome, added_check, iso, run, to_check
from ...fs.reader import file_type, os_error
from ..hashing import Meter, hash_file

STALE_TOLERANCE = 1.0
SIMILARITY = 0.5  # below this, an unreferenced blob is not taken for a replaced file's original
# A regular file in a snapshot is compared with a few blobs, not all of them (a repository can
# hold thousands): those of the same path in other snapshots and the unreferenced ones closest
# in size, and all regular files of a snapshot together read at most SEARCH_BUDGET of blobs.
MAX_CANDIDATES = 16
SEARCH_BUDGET = 32 << 20  # the similarity measure runs at ~10 MB/s


def _links(repo: str) -> dict[str, dict[str, str]]:
    """etag → {"<commit>/<relpath>": relpath} for every snapshot symlink into blobs/."""
    blobs = os.path.join(repo, "blobs")
    found: dict[str, dict[str, str]] = defaultdict(dict)
    for commit in snapshots_of(repo):
        snap = os.path.join(repo, "snapshots", commit)
        if not inside(repo, snap):
            continue  # a snapshot that is a symlink out of the repository is not walked
        for rel in walk_tree(snap)[0]:
            path = os.path.join(snap, rel)
            try:
                target = os.path.normpath(os.path.join(os.path.dirname(path), os.readlink(path)))
            except OSError:
                continue
            if os.path.dirname(target) == blobs:
                found[os.path.basename(target)][f"{commit}/{rel}"] = rel
    return found


def _blob_stale(blob: str, link_mtime: float) -> Callable[[os.stat_result], str | None]:
    def check(st: os.stat_result) -> str | None:
        # huggingface_hub moves a finished blob into place, then creates the link: a blob newer
        # than its link was written afterwards.
        if st.st_mtime - STALE_TOLERANCE <= link_mtime:
            return None
        return (f"blobs/{os.path.basename(blob)} was modified at {iso(st.st_mtime)}, after the snapshot"
                f" link to it was created ({iso(link_mtime)})")
    return check


class _Snapshot:
    def __init__(self, ctx: Context, layout: ModelDirLayout):
        self.ctx = ctx
        self.repo = layout.repo_dir or ""
        self.blobs = os.path.join(self.repo, "blobs")
        self.commit = layout.revision.commit if layout.revision else None
        self.links = _links(self.repo)
        self.result = KindResult(commit=self.commit)
        self.expects: list[Expect] = []
        self.replaced: list[str] = []
        self.sizes: dict[str, int | None] = {}
        self.budget = SEARCH_BUDGET  # bytes of blobs the search for originals may still read

    def blob_names(self) -> set[str]:
        try:
            return {n for n in os.listdir(self.blobs) if not n.endswith(".incomplete")}
        except OSError:
            return set()

    def link(self, rel: str, path: str, st: os.stat_result) -> None:
        try:
            target = os.readlink(path)
        except OSError as exc:
            self.result.problems.append(Problem(path, f"cannot read symlink: {os_error(exc)}"))
            return
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), target))
        expected: FileState = {"type": "symlink", "symlink_target": target, "commit": self.commit}
        if os.path.dirname(resolved) != self.blobs:
            self.foreign_link(rel, path, target, expected)
            return
        etag = os.path.basename(resolved)
        expected["blob"] = etag
        away = self.ctx.outside(resolved)
        if away is not None:  # blobs/ or the blob itself is a symlink out of the repository
            self.result.files_checked += 1
            self.result.checks.append(FileCheck(
                DriftKind.MODIFIED, path, self.ctx.root, None, expected, {"type": "symlink", "symlink_target": target,
                                                                         "resolves_to": away},
                f"blobs/{etag} resolves outside the repository (to {away}); not followed", area=Area.MODEL))
            return
        if not os.path.lexists(resolved):
            self.result.files_checked += 1
            self.result.checks.append(FileCheck(
                DriftKind.MISSING, path, self.ctx.root, None, expected, {"type": "symlink", "dangling": True},
                f"the snapshot symlink points at blobs/{etag}, which does not exist", area=Area.MODEL))
            return
        algorithm = etag_algorithm(etag)
        lfs = "LFS " if algorithm == "sha256" else ""
        self.expects.append(Expect(
            rel, resolved, algorithm, etag if algorithm else None, expected=expected,
            source=f"its blob name (the {lfs}etag recorded at download)",
            stale=_blob_stale(resolved, st.st_mtime), follow=True, original=self.same_blob_elsewhere(etag)))

    def same_blob_elsewhere(self, etag: str) -> Callable[[], bytes | None]:
        """The original of a blob edited in place (read only when it differs): the same blob in
        another repository of the cache, read and checked against its etag in one pass."""
        def read() -> bytes | None:
            algorithm = etag_algorithm(etag)
            if algorithm is None:
                return None
            for other in find_cache_repos(os.path.dirname(self.repo)):
                if os.path.realpath(other) == os.path.realpath(self.repo):
                    continue
                blob = blob_in_cache([other], etag)
                if blob is None or not inside(other, blob):
                    continue
                try:
                    if os.path.islink(blob) or os.lstat(blob).st_size >= self.ctx.limit:
                        continue
                    digests, data, _ = hash_file(blob, (algorithm,), self.ctx.meter, keep=True, follow=False)
                except OSError:
                    continue
                if digests[algorithm] == etag and data is not None:
                    return data
            return None
        return read

    def foreign_link(self, rel: str, path: str, target: str, expected: FileState) -> None:
        try:
            os.stat(path)
        except FileNotFoundError:
            kind, why = DriftKind.MISSING, f"the snapshot symlink points at {target}, which does not exist"
        except OSError as exc:
            self.result.problems.append(Problem(path, f"cannot follow symlink: {os_error(exc)}"))
            return
        else:
            kind, why = DriftKind.MODIFIED, f"the snapshot symlink was re-pointed at {target}, outside blobs/"
        self.result.files_checked += 1
        self.result.checks.append(FileCheck(kind, path, self.ctx.root, None, {"type": "symlink"},
                                            {"type": "symlink", "symlink_target": target}, why, area=Area.MODEL))

    def outcome_check(self, outcome: Outcome) -> FileCheck:
        exp = outcome.expect
        if outcome.status != MODIFIED:
            return to_check(self.ctx, outcome)
        etag = exp.expected["blob"]
        others = sorted(k for k in self.links.get(etag, {}) if k != f"{self.commit}/{exp.relpath}")
        evidence = (f"{outcome.evidence}: blobs/{etag} was edited in place (through the snapshot symlink)"
                    + (f"; {count(len(others), 'other snapshot link')} {'sees' if len(others) == 1 else 'see'} "
                       "the same edit" if others else ""))
        extra: FileState | None = {"also_linked_by": others} if others else None
        return to_check(self.ctx, outcome, evidence=evidence, extra_actual=extra)

    # -- a regular file where huggingface_hub put a symlink -------------------------------------

    def candidates(self, rel: str, referenced: set[str], names: set[str], size: int) -> tuple[list[str], int]:
        """Blobs that could be this file's original: the same path in other snapshots, then
        unreferenced blobs of a similar size (within a factor of two), closest first, at most
        MAX_CANDIDATES of them; and how many similar-sized ones were left out."""
        same_path = sorted(etag for etag, where in self.links.items() if rel in where.values() and etag in names)
        same_path = same_path[:MAX_CANDIDATES]
        sized = []
        for etag in names - referenced - set(same_path):
            blob_size = self.blob_size(etag)
            if blob_size is not None and etag_algorithm(etag) and size // 2 <= blob_size <= 2 * size + 64:
                sized.append((abs(blob_size - size), etag))
        sized.sort()
        return same_path + [e for _, e in sized[:MAX_CANDIDATES]], max(0, len(sized) - MAX_CANDIDATES)

    def replaced_file(self, rel: str, path: str, referenced: set[str], names: set[str]) -> None:
        ctx, result = self.ctx, self.result
        result.files_checked += 1
        try:
            size = os.lstat(path).st_size
            readable = size < ctx.limit or ctx.deep
            digests, content, _ = (hash_file(path, ("git-sha1", "sha256"), ctx.meter, keep=size < ctx.limit,
                                             follow=False) if readable else ({}, None, None))
        except OSError as exc:
            result.problems.append(Problem(path, f"cannot read: {os_error(exc)}"))
            return
        actual: FileState = {"type": "file", "size": size}
        same = next((d for d in digests.values() if d in names), None)
        if same is not None:
            result.checks.append(FileCheck(
                DriftKind.TYPE_CHANGED, path, ctx.root, None, {"type": "symlink", "blob": same}, actual,
                f"the snapshot symlink was replaced by a regular copy of blobs/{same} (content identical)",
                area=Area.MODEL))
            return
        pool, left_out = self.candidates(rel, referenced, names, size)
        if not readable:
            sized = [e for e in pool if self.blob_size(e) == size]
            if sized:
                result.checks.append(FileCheck(
                    DriftKind.TYPE_CHANGED, path, ctx.root, None, {"type": "symlink", "blob": sized[0]}, actual,
                    f"the snapshot symlink was replaced by a regular file the size of blobs/{sized[0]};"
                    " its content was not read (deep=True hashes it)", area=Area.MODEL))
                return
        original = self.best_original(content, pool) if content is not None else None
        searched = ""
        if left_out:
            searched = (f" (compared with the {MAX_CANDIDATES} blobs closest in size; {left_out} more of a"
                        " similar size were not)")
        if self.budget <= 0 and content is not None:
            searched = f" (the search for originals stopped after {SEARCH_BUDGET} bytes of blobs were compared)"
        if original is None:
            result.checks.append(added_check(ctx, rel, "a regular file in a snapshot, where huggingface_hub writes"
                                             " only symlinks, and no blob of this repository is its original"
                                             + searched))
            return
        etag, data = original
        exp = Expect(rel, path, None, None, expected={"type": "symlink", "blob": etag},
                     source=f"blobs/{etag}", original=lambda: data)
        result.checks.append(to_check(ctx, Outcome(exp, MODIFIED, actual, (
            f"the snapshot symlink was replaced by a regular file that differs from blobs/{etag}"
            " (the blob is intact)"), content)))

    def blob_size(self, etag: str) -> int | None:
        if etag not in self.sizes:
            try:
                self.sizes[etag] = os.stat(os.path.join(self.blobs, etag)).st_size
            except OSError:
                self.sizes[etag] = None
        return self.sizes[etag]

    def best_original(self, content: bytes, pool: list[str]) -> tuple[str, bytes] | None:
        text = as_text(content)
        if text is None:
            return None
        matcher = difflib.SequenceMatcher(None, autojunk=False)
        matcher.set_seq2(text)  # the file's side is analysed once, not once per blob
        best: tuple[float, str, bytes] | None = None
        for etag in pool:
            algorithm = etag_algorithm(etag)
            size = self.blob_size(etag)
            if algorithm is None or size is None or size >= self.ctx.limit or size > self.budget:
                continue
            blob = os.path.join(self.blobs, etag)
            if self.ctx.outside(blob) is not None:
                continue  # a blob that is a symlink out of the repository is nobody's original
            self.budget -= size
            try:
                digests, data, _ = hash_file(blob, (algorithm,), self.ctx.meter, keep=True)
            except OSError:
                continue
            if digests[algorithm] != etag or data is None:
                continue  # an edited blob is nobody's original
            old = as_text(data)
            if old is None:
                continue
            matcher.set_seq1(old)
            ratio = matcher.quick_ratio()
            if ratio >= SIMILARITY and (best is None or ratio > best[0]):
                best = (ratio, etag, data)
        return (best[1], best[2]) if best else None


def audit_cache_repo(ctx: Context, layout: ModelDirLayout) -> KindResult:
    revision = layout.revision
    if revision is None or revision.problem or not revision.commit:
        why = (revision.problem if revision else None) or "no snapshot chosen"
        where = layout.path
        if revision and revision.ref:
            where = os.path.join(layout.repo_dir or layout.path, "refs", revision.ref)
        return KindResult(problems=[Problem(where, why)], unverifiable=[Unverifiable(layout.path, why)])
    away = ctx.outside(ctx.root) if ctx.root != ctx.contain else None
    if away is not None:  # snapshots/<commit> (or snapshots/) is a symlink out of the repository
        why = f"the snapshot {revision.commit} resolves outside the repository (to {away}); not followed"
        return KindResult(problems=[Problem(ctx.root, why)], unverifiable=[Unverifiable(layout.path, why)])
    snap = _Snapshot(ctx, layout)
    relpaths, walk_problems = walk_tree(ctx.root)
    snap.result.problems.extend(walk_problems)
    for rel in relpaths:
        path = os.path.join(ctx.root, rel)
        try:
            st = os.lstat(path)
        except OSError as exc:
            snap.result.problems.append(Problem(path, f"cannot stat: {os_error(exc)}"))
            continue
        if stat.S_ISLNK(st.st_mode):
            snap.link(rel, path, st)
        elif stat.S_ISREG(st.st_mode):
            snap.replaced.append(rel)
        else:
            snap.result.checks.append(added_check(ctx, rel, f"a {file_type(st.st_mode)} in a snapshot"))
    for outcome in run(snap.expects, ctx):
        if outcome.status == "error":
            snap.result.problems.append(Problem(os.path.join(ctx.root, outcome.expect.relpath), outcome.evidence))
            continue
        snap.result.files_checked += 1
        if outcome.status != OK:
            snap.result.checks.append(snap.outcome_check(outcome))
    if snap.replaced:
        names = snap.blob_names()
        referenced = set(snap.links)
        for rel in snap.replaced:
            snap.replaced_file(rel, os.path.join(ctx.root, rel), referenced, names)
    return snap.result

# --- the provenance interface (provenance/interface.py) --------------------------------------------

KIND = LayoutKind.HF_CACHE_REPO
ABSENT = None  # recognised by its place in the cache, not by a record
SELF_AUDITED = True


def recognise(path: str, revision: str | None, in_tree_manifest: str | None) -> ModelDirLayout | None:
    """``models--ORG--NAME`` (the snapshot of ``revision``, default refs/main) or one of its
    ``snapshots/<commit>``."""
    repo = snapshot_parent(path)
    if repo is not None:
        return ModelDirLayout(path, path, KIND, repo_dir=repo, revision=Revision(os.path.basename(path), None))
    if is_cache_repo(path):
        chosen = resolve_revision(path, revision)
        root = os.path.join(path, "snapshots", chosen.commit) if chosen.commit and not chosen.problem else path
        return ModelDirLayout(path, root, KIND, repo_dir=path, revision=chosen)
    return None


def audit(ctx: Context, layout: ModelDirLayout, revision: str | None) -> KindResult:
    return audit_cache_repo(ctx, layout)


def _repo_dir(root: str) -> str | None:
    """The ``models--ORG--NAME`` folder above a snapshot (the one holding ``blobs/``)."""
    parent = root
    while os.path.basename(parent):
        if os.path.isdir(os.path.join(parent, "blobs")):
            return parent
        parent = os.path.dirname(parent)
    return None


def _verified(blob: str, etag: str, repo: str, memo: dict[Any, Any]) -> bool:
    """Whether ``blob`` is a regular file inside ``repo`` whose content hashes to its name (the
    etag: git blob sha1, or sha256 for an LFS file); hashed once per run (``memo``)."""
    key = ("verified blob", blob)
    if key not in memo:
        algorithm = etag_algorithm(etag)
        ok = False
        if algorithm and os.path.isfile(blob) and not os.path.islink(blob) and inside(repo, blob):
            try:
                digests, _, _ = hash_file(blob, (algorithm,), Meter(), keep=False, follow=False)
            except OSError:
                pass
            else:
                ok = digests[algorithm] == etag
        memo[key] = ok
    return bool(memo[key])


def _verified_elsewhere(repo_dir: str, etag: str, memo: dict[Any, Any]) -> str | None:
    """The same blob in another repository of the cache, verified against its etag: blobs are
    content-addressed, so an identical one is this repository's original too."""
    for other in find_cache_repos(os.path.dirname(repo_dir)):
        if os.path.realpath(other) == os.path.realpath(repo_dir):
            continue
        candidate = blob_in_cache([other], etag)
        if candidate is not None and _verified(candidate, etag, other, memo):
            return candidate
    return None


def _offline(check: FileCheck, repo_dir: str, etag: str, memo: dict[Any, Any]) -> WayBack | None:
    """The way back without the network, when a verified copy of the file's blob is here: the
    snapshot's link re-made to ``blobs/<etag>`` (``ln -sfn``, the relative target huggingface_hub
    writes), after copying the blob from another repository of the cache when this one's is gone
    or edited. None when no verified copy is found."""
    if etag_algorithm(etag) is None:
        return None
    blob = os.path.join(repo_dir, "blobs", etag)
    q_path, q_blob = shlex.quote(check.path), shlex.quote(blob)
    relink = f"ln -sfn {shlex.quote(os.path.relpath(blob, os.path.dirname(check.path)))} {q_path}"
    if not os.path.islink(check.path) and _verified(blob, etag, repo_dir, memo):
        return WayBack(relink, evidence=(
            f"; blobs/{etag} is intact (its content hashes to its name): re-linking the snapshot file"
            " to it restores the original without a download"))
    other = _verified_elsewhere(repo_dir, etag, memo)
    if other is None:
        return None
    copy = f"cp {shlex.quote(other)} {q_blob} && {relink}"
    if os.path.lexists(blob):
        copy = f"rm {q_blob} && {copy}"  # the edited blob: removed, not written through (hard links)
    return WayBack(copy, evidence=(
        f"; {other} is the same blob, verified against its etag: a verified original in another"
        " repository of the cache, copied without a download"))


def way_back(check: FileCheck, root: str, commit: str | None, memo: dict[Any, Any]) -> WayBack:
    repo_dir = _repo_dir(root)
    if not repo_dir:
        return WayBack("restore it from its source")
    q_rel, q_path = shlex.quote(relpath(check.path, check.root)), shlex.quote(check.path)
    rev = f" --revision {shlex.quote(commit)}" if commit else ""  # the commit comes from the tree
    etag = check.expected.get("blob")
    if etag and check.kind in (DriftKind.MODIFIED, DriftKind.TYPE_CHANGED, DriftKind.MISSING):
        offline = _offline(check, repo_dir, etag, memo)
        if offline is not None:
            return offline
    # Edited through the snapshot's link, the blob itself changed and goes too; a link replaced by
    # a file (sed -i, an editor's save) left the blob intact: the original other snapshots link to.
    through_link = os.path.islink(check.path)
    blob = os.path.join(repo_dir, "blobs", etag) if etag and check.kind is DriftKind.MODIFIED and through_link else None
    first = f"rm {shlex.quote(blob)} {q_path} && " if blob else f"rm {q_path} && "
    return WayBack(f"{first}hf download {shlex.quote(repo_id_of(repo_dir))} {q_rel}{rev}")
