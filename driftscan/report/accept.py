"""Accepted drift: configuration entries that keep an intentional change from failing a run.

An entry (``[[tool.driftscan.accept]]`` in a ``pyproject.toml``, ``[[accept]]`` in a
``driftscan.toml``; docs/configuration.md) names a path, optionally the root it is under and
the sha256 of the accepted content, a required reason and an optional expiry date.
``apply_accepted`` marks each drift an entry accepts (``accepted``: the reason and the entry),
and lists the entries that no longer accept what they name (``stale_accepted``: expired, or the
file's content changed) and those that match no drift (``unused_accepted``). An accepted drift
stays in the report; ``counted`` gives the drifts that count toward the exit status.

Paths: an absolute ``path`` is compared with a drift's absolute path, any other with its
``relpath`` (as the report shows it). A path with ``*``, ``?`` or ``[`` is a glob, matched
against the whole path: ``*`` and ``?`` never match ``/``, ``**`` matches anything including
``/`` (``**/`` also no directory at all), ``[abc]`` / ``[!abc]`` are character classes.

Roots: an entry with ``root`` names only drifts whose root (the directory their relpath is
relative to: a model directory, site-packages, the venv) is that directory — an absolute path
compared as such, or a glob matched against the root's whole absolute path. Without ``root`` a
relpath names its file in every root (a ``config.json`` in each model directory). ``driftscan
accept`` pins a model directory's drifts to their directory (``new_entries``); environment
drifts keep a relpath only, which travels to the same environment at another prefix.

The sha256 is of the file's current bytes, read through ``fs.reader`` (a regular file only, at
most ``HASH_MAX`` bytes, never through a symlink at the file itself — except in a hub cache
snapshot, whose files are links into ``../../blobs``: followed there, and only within the cache
repository's folder). A drift whose file cannot be hashed — missing, a directory, a symlink, a
dump pattern — is accepted only by an entry without ``sha256``.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import re
import stat
from collections.abc import Iterable, Sequence
from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..fs.reader import open_regular, read_pieces
from ..modeldir.hfcache import containment_root
from .contract import DriftOut, Report, StaleAcceptedOut, UnusedAcceptedOut

#: Files larger than this are not hashed for an accept entry (a model shard of 100 GB would
#: take minutes): accept them without ``sha256``.
HASH_MAX = 64 << 30
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class AcceptEntry(BaseModel):
    """One ``[[accept]]`` entry, as validated from the configuration file."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, description="relpath as in the report, an absolute path, or a glob")
    root: str | None = Field(default=None, description=(
        "the drift's root directory (absolute, or a glob of it); omitted: the path in any root"))
    sha256: str | None = Field(default=None, description="hex digest of the accepted content; omitted: any content")
    reason: str = Field(description="why this drift is kept (required)")
    expires: datetime.date | None = Field(default=None, description="from this date on the entry is stale")

    @field_validator("sha256")
    @classmethod
    def _hex(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip().lower()
        if not _SHA256.match(value):
            raise ValueError("not a sha256 hex digest (64 hexadecimal digits)")
        return value

    @field_validator("path")
    @classmethod
    def _glob(cls, value: str) -> str:
        return _usable_glob(value)

    @field_validator("root")
    @classmethod
    def _root(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith("/") and not (is_glob(value) and value.startswith("*")):
            raise ValueError("an absolute directory, or a glob of one (starting with / or **/)")
        return _usable_glob(value)

    @field_validator("reason")
    @classmethod
    def _reason(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the reason must not be empty")
        return value

    @field_validator("expires", mode="before")
    @classmethod
    def _date_only(cls, value: object) -> object:
        if isinstance(value, datetime.datetime):  # a TOML datetime: only a date is meant here
            raise ValueError("a date (expires = 2027-03-01), not a date and time")
        return value


def _usable_glob(value: str) -> str:
    if is_glob(value):
        if len(value) > MAX_GLOB:
            raise ValueError(f"a glob of {len(value)} characters; at most {MAX_GLOB}")
        if sum(value.count(c) for c in "*?[") > MAX_WILDCARDS:
            raise ValueError(f"more than {MAX_WILDCARDS} wildcards in one glob")
        try:
            _glob_tokens(value)
        except re.error as exc:
            raise ValueError(f"not a usable glob ({exc})") from None
    return value


MAX_WILDCARDS = 16  # each costs the matcher a round per subject character: they stay few
MAX_GLOB = 1024  # characters: a path pattern, not a program


def is_glob(path: str) -> bool:
    return any(c in path for c in "*?[")


def literal(path: str) -> str:
    """``path`` as a glob that matches only itself: a file the tree named ``*.py`` must not become
    an entry accepting every .py file (``driftscan accept`` writes paths through this)."""
    return re.sub(r"[*?[]", lambda m: f"[{m.group(0)}]", path)


# A glob compiles to tokens matched by simulating all positions at once as the bits of one integer
# (time linear in the subject), never by a backtracking regex: a config's `**a**a**a…!` must not hang.
_Token = tuple[str, object]  # ("lit", char) ("one", None) ("set", compiled class) ("star", None) ("any", None)
# ("entry", None): takes no character


@lru_cache(maxsize=256)
def _glob_tokens(pattern: str) -> tuple[list[_Token], dict[int, int]]:
    """``*`` and ``?`` within one path component, ``**`` across components (``**/``: also none).
    Returns the tokens and the extra epsilon edges (``**/`` may be skipped whole from its entry)."""
    tokens: list[_Token] = []
    skips: dict[int, int] = {}
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            # An entry point of its own: "**/" is skipped whole only before its "**" took anything
            # (else "a/**/b" would match "a/xb").
            skips[len(tokens)] = len(tokens) + 3
            tokens += [("entry", None), ("any", None), ("lit", "/")]
            i += 3
        elif pattern.startswith("**", i):
            tokens.append(("any", None))
            i += 2
        elif c == "*":
            tokens.append(("star", None))
            i += 1
        elif c == "?":
            tokens.append(("one", None))
            i += 1
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "]") else i + 1)
            if end < 0:
                tokens.append(("lit", c))
                i += 1
                continue
            body = pattern[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            # A "[" inside the set is a literal to the glob; escaped, the regex reads it so too.
            body = body.replace("\\", "\\\\").replace("[", "\\[")
            tokens.append(("set", re.compile("[" + body + "]")))  # re.error: a bad set
            i = end + 1
        else:
            tokens.append(("lit", c))
            i += 1
    return tokens, skips


class _Program:
    """A glob's tokens as bit masks (bit t: "before token t"; bit len(tokens): matched), run by
    shifting every live state at once: a few integer operations per subject character, whatever
    the wildcards."""

    def __init__(self, tokens: list[_Token], skips: dict[int, int]):
        self.tokens = tokens
        self.accept = 1 << len(tokens)
        self.star = sum(1 << t for t, (kind, _) in enumerate(tokens) if kind == "star")  # loops on all but "/"
        self.any = sum(1 << t for t, (kind, _) in enumerate(tokens) if kind == "any")  # loops on everything
        entry = sum(1 << t for t, (kind, _) in enumerate(tokens) if kind == "entry")
        self.empty = self.star | self.any | entry  # t -> t+1 on no character (a run may be empty)
        self.skip = sum(1 << t for t in skips)  # "**/" skipped whole: t -> t+3
        self.advance: dict[str, int] = {}  # character -> the tokens it takes one step
        # The literal text before the first and after the last token that is not a literal: a
        # subject without it is refused before any stepping.
        kinds = [kind for kind, _ in tokens]
        for t in skips:
            kinds[t + 2] = "skippable"  # the "/" of "**/" need not be there
        head = next((t for t, kind in enumerate(kinds) if kind != "lit"), len(tokens))
        tail = next((t for t in range(len(tokens) - 1, -1, -1) if kinds[t] != "lit"), -1) + 1
        self.prefix = "".join(str(data) for _, data in tokens[:head])
        self.suffix = "".join(str(data) for _, data in tokens[max(tail, head):])

    def advance_on(self, ch: str) -> int:
        mask = self.advance.get(ch)
        if mask is None:
            mask = 0
            for t, (kind, data) in enumerate(self.tokens):
                if (kind == "lit" and ch == data) or (kind == "one" and ch != "/") or \
                        (kind == "set" and ch != "/" and data.fullmatch(ch)):  # type: ignore[attr-defined]  # a set's data: a Pattern
                    mask |= 1 << t
            if len(self.advance) < 4096:  # a subject's alphabet; a bound all the same
                self.advance[ch] = mask
        return mask

    def closure(self, states: int) -> int:
        while True:  # at most one round per consecutive wildcard
            grown = states | ((states & self.empty) << 1) | ((states & self.skip) << 3)
            if grown == states:
                return states
            states = grown


@lru_cache(maxsize=256)
def _program(pattern: str) -> _Program:
    return _Program(*_glob_tokens(pattern))


def glob_match(pattern: str, subject: str) -> bool:
    program = _program(pattern)
    if len(subject) < len(program.prefix) + len(program.suffix) or not subject.startswith(program.prefix) or \
            not subject.endswith(program.suffix):
        return False
    states = program.closure(1)
    loop_all, loop_name, advance_on, closure = program.any, program.star | program.any, program.advance_on, \
        program.closure
    for ch in subject:
        states = (states & (loop_all if ch == "/" else loop_name)) | ((states & advance_on(ch)) << 1)
        if not states:
            return False
        states = closure(states)
    return bool(states & program.accept)


def _path_matches(pattern: str, subject: str) -> bool:
    if is_glob(pattern):
        return glob_match(pattern, subject)
    return os.path.normpath(pattern) == os.path.normpath(subject)


def matches(entry_path: str, drift: DriftOut, root: str | None = None) -> bool:
    """Whether an entry's ``path`` (and ``root``, when it has one) names this drift (see the
    module docstring)."""
    absolute = entry_path.startswith("/")
    if not _path_matches(entry_path, drift.path if absolute else drift.relpath):
        return False
    if root is None:
        return True
    where = drift_root(drift)
    return where is not None and _path_matches(root, where)


def drift_root(drift: DriftOut) -> str | None:
    """The directory the drift's relpath is relative to (None where the two do not fit)."""
    relpath = drift.relpath.strip("/")
    if not relpath or relpath == "." or not drift.path.endswith("/" + relpath):
        return None
    return drift.path[: -len(relpath) - 1] or "/"


def _links_within(drift: DriftOut) -> str | None:
    """Where symlinks at the drifted file may be followed for its content: a hub cache
    snapshot's repository folder (its files are links to ``../../blobs/<etag>``); None elsewhere."""
    root = drift_root(drift)
    if root is None:
        return None
    repo = containment_root(root)
    return repo if repo != os.path.abspath(root) else None


def entry_root(drift: DriftOut) -> str | None:
    """The ``root`` ``driftscan accept`` writes for a model directory's drift: the directory,
    absolute; for a hub cache snapshot ``**/models--ORG--NAME/snapshots/REV`` (the cache is
    elsewhere on every machine, the repository and revision are not)."""
    root = drift_root(drift)
    if root is None:
        return None
    repo = _links_within(drift)
    if repo is None:
        return literal(root)
    return "**/" + literal(os.path.basename(repo) + "/" + os.path.relpath(root, repo))


def drift_sha256(drift: DriftOut) -> tuple[str | None, str]:
    """The drifted file's sha256 as an entry pins it (``file_sha256``, through a hub snapshot's
    link within its repository folder)."""
    if drift.kind.value == "debug-artifacts":
        return None, "a dump pattern has no content to hash"
    return file_sha256(drift.path, links_within=_links_within(drift))


def file_sha256(path: str, *, links_within: str | None = None) -> tuple[str | None, str]:
    """``(hex digest, "")`` of a regular file, or ``(None, why it cannot be hashed)``. A symlink
    at the file is refused, unless ``links_within``: then followed, if it resolves inside it."""
    try:
        fd, st = open_regular(path, follow=links_within is not None, root=links_within)
    except FileNotFoundError:
        return None, "the file is missing"
    except OSError as exc:
        return None, f"cannot hash it: {exc.strerror or exc}"
    try:
        if st.st_size > HASH_MAX:
            return None, f"cannot hash it: {st.st_size} bytes is over the {HASH_MAX}-byte limit"
        digest = hashlib.sha256()
        for piece in read_pieces(fd, st.st_size):
            digest.update(piece)
        return digest.hexdigest(), ""
    except OSError as exc:
        return None, f"cannot hash it: {exc.strerror or exc}"
    finally:
        os.close(fd)


def _verdict(entry: AcceptEntry, drift: DriftOut, today: datetime.date,
             hashes: dict[str, tuple[str | None, str]]) -> str | None:
    """None when ``entry`` accepts ``drift`` (its path matching), else why it no longer does."""
    if entry.expires is not None and today >= entry.expires:
        return f"expired {entry.expires.isoformat()}"
    if entry.sha256 is None:
        return None
    if drift.path not in hashes:
        hashes[drift.path] = drift_sha256(drift)
    digest, why = hashes[drift.path]
    if digest is None:
        return f"{why}; an entry with sha256 accepts only that content"
    if digest != entry.sha256:
        return f"the file no longer has that sha256 (now {digest})"
    return None


def apply_accepted(report: Report, entries: Sequence[AcceptEntry], today: datetime.date | None = None, *,
                   source: str | None = None) -> Report:
    """The report with accepted drifts marked, stale and unused entries listed, and
    ``summary.accepted`` counted. ``entries`` in the order of the config file (their index is
    what ``entry`` names); ``source``: the config file, named in each ``accepted``.

    The first entry that accepts a drift is the one named. An entry is stale for a drift it
    matches when it expired, or when it pins a sha256 the file no longer has — unless another
    entry accepts that drift (two entries for one relpath in two roots, a newer entry for new
    content), in which case it is simply not about that file. Expired entries are stale even
    when they match nothing (expiry is news either way); other entries that accept nothing are
    unused."""
    if not entries:
        return report
    today = today or datetime.date.today()
    hashes: dict[str, tuple[str | None, str]] = {}
    used: set[int] = set()
    stale: list[StaleAcceptedOut] = []
    stale_entries: set[int] = set()
    drifts = []
    for drift in report.drifts:
        verdicts = [(i, e, _verdict(e, drift, today, hashes)) for i, e in enumerate(entries)
                    if matches(e.path, drift, e.root)]
        accepting = next(((i, e) for i, e, why in verdicts if why is None), None)
        if accepting is not None:
            i, entry = accepting
            used.add(i)
            mark = {"reason": entry.reason, "entry": i, "path": entry.path}
            if entry.root is not None:
                mark["root"] = entry.root
            if source:
                mark["source"] = source
            drifts.append(drift.model_copy(update={"accepted": mark}))
            continue
        for i, entry, why in verdicts:
            assert why is not None
            stale.append(StaleAcceptedOut(entry=i, path=entry.path, reason=entry.reason, why=why, file=drift.path))
            stale_entries.add(i)
        drifts.append(drift.model_copy(update={"accepted": None}) if drift.accepted is not None else drift)
    for i, entry in enumerate(entries):
        if i not in used and i not in stale_entries and entry.expires is not None and today >= entry.expires:
            stale.append(StaleAcceptedOut(entry=i, path=entry.path, reason=entry.reason,
                                          why=f"expired {entry.expires.isoformat()}"))
            stale_entries.add(i)
    unused = [UnusedAcceptedOut(entry=i, path=e.path, reason=e.reason) for i, e in enumerate(entries)
              if i not in used and i not in stale_entries]
    summary = report.summary.model_copy(update={"accepted": sum(1 for d in drifts if d.accepted is not None)})
    return report.model_copy(update={"drifts": drifts, "summary": summary, "stale_accepted": stale,
                                     "unused_accepted": unused})


def counted(report: Report) -> list[DriftOut]:
    """The drifts that count toward the exit status: those no entry accepts."""
    return [d for d in report.drifts if d.accepted is None]


def drifts_for(report: Report, path: str, cwd: str | None = None) -> list[DriftOut]:
    """The drifts a path given on the command line names: its relpath as in the report, or a
    filesystem path (absolute or relative to ``cwd``) to the drifted file."""
    cwd = cwd or os.getcwd()
    on_disk = os.path.normpath(os.path.join(cwd, path))
    real = os.path.realpath(on_disk)
    found = []
    as_relpath = None if os.path.isabs(path) else os.path.normpath(path)
    for d in report.drifts:
        if as_relpath == os.path.normpath(d.relpath) or os.path.normpath(d.path) == on_disk or \
                (os.path.isabs(d.path) and os.path.realpath(d.path) == real):
            found.append(d)
    return found


def new_entries(report: Report, paths: Iterable[str], reason: str, *, any_content: bool = False,
                any_root: bool = False, expires: datetime.date | None = None,
                cwd: str | None = None) -> list[tuple[AcceptEntry, DriftOut, str]]:
    """One entry per drifted file the paths name: ``(entry, drift, note)``; the note says why an
    entry has no sha256. A path that names no drift is a ``ValueError``, and so is a file whose
    content cannot be read to pin it (unless ``any_content``): nothing is half accepted.

    Each entry pins the file's current sha256 (``any_content``: none) and, for a model
    directory's drift, its ``root`` (``any_root``: none, the relpath in any root). A file with
    no content to pin — missing, a directory, a dump pattern — gets an entry without sha256."""
    out: list[tuple[AcceptEntry, DriftOut, str]] = []
    seen: set[str] = set()
    relpaths: dict[str, int] = {}
    for d in report.drifts:
        relpaths[d.relpath] = relpaths.get(d.relpath, 0) + 1
    model_dirs = {os.path.normpath(m) for m in report.target.model_dirs}
    for path in paths:
        found = drifts_for(report, path, cwd)
        if not found:
            raise ValueError(f"{path}: no drift there (give the relpath the report shows, or the file's path)")
        for drift in found:
            if drift.path in seen:
                continue
            seen.add(drift.path)
            where = drift_root(drift)
            in_model_dir = where is not None and (os.path.normpath(where) in model_dirs or
                                                  _links_within(drift) is not None)
            root = entry_root(drift) if in_model_dir and not any_root else None
            # The relpath travels (CI audits the same environment elsewhere); the absolute path
            # only where the relpath would also name another drifted file and no root tells them apart.
            named_by_relpath = not os.path.isabs(path) and os.path.normpath(path) == os.path.normpath(drift.relpath)
            written = drift.relpath if root is not None or relpaths.get(drift.relpath, 0) == 1 or named_by_relpath \
                else drift.path
            digest, note = (None, "") if any_content else drift_sha256(drift)
            if digest is None and not any_content and _has_content(drift):
                raise ValueError(f"{drift.relpath}: {note}: not accepted (an entry pins the content it accepts; "
                                 "--any-content accepts whatever the file holds)")
            entry = AcceptEntry(path=literal(written), root=root, sha256=digest, reason=reason, expires=expires)
            out.append((entry, drift, "" if digest or any_content else f"{note}: accepted with any content"))
    return out


def _has_content(drift: DriftOut) -> bool:
    """Whether there is a file at the drift's path whose content could be pinned (not missing,
    not a directory, not a dump pattern), read or not."""
    if drift.kind.value == "debug-artifacts" or drift.kind.value.startswith("missing"):
        return False
    try:
        st = os.lstat(drift.path)
    except OSError:
        return False
    return not stat.S_ISDIR(st.st_mode)
