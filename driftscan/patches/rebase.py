"""``driftscan patch rebase``: a team's patch for one version of a distribution carried onto another.

For each file of the patch, three texts: the base (the old release's original, verified against the
header's ``sha256=``), ours (the base with the patch's hunks applied exactly: a patch that does not
apply to its own base is a conflict) and theirs (the new release's file, read from its verified
wheel through ``pristine/release.py``). ``formats/patch.py``'s three-way merge decides each file:

* ``carried`` — merged, at least one hunk applied: the file goes into the new patch;
* ``obsolete`` — the merge is the new version's file: it already does it, the file is left out;
* ``conflict`` — the new version changed what a hunk changes (or has no such file).

With no conflict the new patch ``<dist>@<to>.patch`` is written beside the old one (which stays).
With a conflict a work directory ``<dist>@<to>.rebase/`` is made instead: ``files/`` (every file as
the merge leaves it, conflicts between diff3-style markers), ``upstream/`` (the new version's files,
what the new patch is diffed against) and ``state.json``; ``continue_rebase`` writes the patch from
it once the markers are gone. Everything in a work directory is read back as data: bounded, every
field checked, every path through ``patchfile.check_path``, nothing below it followed, the upstream
copies hashed again against the new wheel's RECORD.
"""

from __future__ import annotations

import enum
import errno
import hashlib
import json
import os
import re
import shutil
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, BinaryIO, Final, Literal, Protocol

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from .._version import __version__
from ..core.datamodel import DataModel, InlineEnum, datamodel, describe
from ..core.errors import DriftscanError
from ..core.values import Distribution
from ..formats.patch import Hunk, PatchError, apply_hunks, blocks, marker_line, merge3, merge3_marked, merge3_parts, resolve
from ..fs.atomic import write_atomic
from ..fs.confined import read_below, replace_below
from ..fs.reader import os_error, read_regular
from ..pristine.kept import kept, matches
from .export import manifest_line
from .manifest import Entry, digest_mismatch, match
from .pin import PinResult, pin_patch
from .patchfile import (Change, PatchedFile, PatchFile, PatchFormatError, PatchHeader, check_path, file_diff,
                        file_patches, is_record_hash, parse, render)
from .samecode import ParseBudget, is_python, same_code

SCHEMA_VERSION: Final = "1"
STATE_FORMAT: Final = 1
STATE_MAX = 1 << 20  # state.json: a few hundred bytes per file
STATE_FILES_MAX = 10_000
PATCH_MAX = 64 << 20
FILE_MAX = 16 << 20  # a file of the patch: ReleaseWheel.read's own default bound
WORK_SUFFIX = ".rebase"
PATCH_SUFFIX = ".patch"
SHOWN_LINES = 40
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]*")
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_WORKDIR = re.compile(r"(?P<dist>[a-z0-9]+(?:-[a-z0-9]+)*)@(?P<version>[A-Za-z0-9][A-Za-z0-9.+!_-]*)\.rebase")


class RebaseState(str, enum.Enum):
    WRITTEN = "written"  # the new patch written
    UNCHANGED = "unchanged"  # the same new patch was already there
    OBSOLETE = "obsolete"  # the new version carries every change: no patch written
    CONFLICT = "conflict"  # a work directory left to resolve (exit 1)
    MARKERS = "markers"  # --continue: conflict markers are left in the work directory (exit 1)
    ABORTED = "aborted"  # --abort: the work directory removed
    REFUSED = "refused"  # cannot: nothing written (exit 2)


class FileState(str, enum.Enum):
    CARRIED = "carried"
    OBSOLETE = "obsolete"
    CONFLICT = "conflict"


class HunkState(str, enum.Enum):
    APPLIED = "applied"  # carried onto the new version
    ALREADY = "already"  # the new version already makes this change
    CONFLICT = "conflict"


class BaseSource(str, enum.Enum):
    KEPT = "kept"  # driftscan's store of verified originals (pristine/kept.py)
    INSTALLED = "installed"  # the installed file, the installed distribution being the old version
    RELEASE = "release"  # the old version's wheel


@datamodel
class HunkOut(DataModel):
    number: int = field(metadata=describe("1-based, in the file's part of the old patch"))
    header: str = field(metadata=describe("the hunk's @@ line in the old patch"))
    state: Annotated[HunkState, InlineEnum(HunkState)]
    reason: str = field(default="", metadata=describe(
        "a conflict: why; already: why, when the new version makes the change in other words"))
    region_start: int = field(default=0, metadata=describe("a conflict: the region's first line in the old version"))
    base: list[str] = field(default_factory=list, metadata=describe("a conflict: the region in the old version"))
    ours: list[str] = field(default_factory=list, metadata=describe("a conflict: the region with the patch applied"))
    theirs: list[str] = field(default_factory=list, metadata=describe("a conflict: the region in the new version"))


@datamodel
class FileOut(DataModel):
    path: str = field(metadata=describe("relative to the install root, as in the patch"))
    change: Annotated[Change, InlineEnum(Change)]
    state: Annotated[FileState, InlineEnum(FileState)]
    base_from: str | None = field(default=None, metadata=describe(
        "where the old version's original came from: kept, installed or release (null: a new file, or --continue)"))
    upstream: str | None = field(default=None, metadata=describe(
        "the new version's RECORD hash of the file (null: the new version has no such file)"))
    message: str = ""
    marker_line: int = field(default=0, metadata=describe("--continue: the first conflict-marker line left (0: none)"))
    hunks: list[HunkOut] = field(default_factory=list)


@datamodel
class PatchRebase(DataModel):
    schema_version: Literal["1"] = SCHEMA_VERSION
    state: Annotated[RebaseState, InlineEnum(RebaseState)]
    distribution: str = ""
    from_version: str | None = field(default=None, metadata=describe("the version the old patch was made on"))
    to_version: str | None = field(default=None, metadata=describe("the version the new patch is for"))
    patch: str | None = field(default=None, metadata=describe("the old patch file (left in place)"))
    patch_sha256: str | None = None
    output: str | None = field(default=None, metadata=describe("the new patch file"))
    sha256: str | None = field(default=None, metadata=describe("hex digest of the new patch file"))
    manifest_line: str | None = field(default=None, metadata=describe(
        "the [tool.driftscan.patches] line that pins the new patch"))
    workdir: str | None = field(default=None, metadata=describe("the work directory (made, read or removed)"))
    workdir_removed: bool = False
    continued: bool = field(default=False, metadata=describe("the result of --continue"))
    release: str | None = field(default=None, metadata=describe("where the new version's wheel was found"))
    message: str = field(default="", metadata=describe(
        "why nothing was written (refused), or why --pin wrote no line though the patch was written"))
    notes: list[str] = field(default_factory=list, metadata=describe(
        "where the wheels were looked for, and how to get a missing one"))
    files: list[FileOut] = field(default_factory=list)
    pinned: PinResult | None = field(default=None, metadata=describe(
        "--pin: the manifest the new patch's line was written to, and how; null when not pinned"))

    def count(self, state: FileState) -> int:
        return sum(f.state is state for f in self.files)


def patch_rebase_schema() -> dict[str, object]:
    return PatchRebase.model_json_schema()


def exit_status(result: PatchRebase) -> int:
    """0 the new patch written (or the same one there, or nothing to keep), or a work directory
    aborted; 1 conflicts (the work directory left) or markers left; 2 could not (or --pin wrote no line)."""
    if result.state in (RebaseState.CONFLICT, RebaseState.MARKERS):
        return 1
    if result.state is RebaseState.REFUSED or result.message:
        return 2
    return 0


class RebaseError(DriftscanError):
    """A rebase that cannot be done (one line): the result is ``refused``."""


class Release(Protocol):
    """What rebase takes of ``pristine.release.ReleaseWheel``."""

    name: str
    version: str
    where: str

    def record_hash(self, rel: str) -> str | None: ...

    def read(self, rel: str, limit: int = ...) -> bytes | None: ...

    def close(self) -> None: ...


#: ``find_release`` with the options bound: (wheel or None, notes).
Releases = Callable[[str, str], "tuple[Release | None, list[str]]"]


# ------------------------------------------------------------------------------------------ helpers


def _same(a: str, b: str) -> bool:
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


def _version_key(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _text(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise RebaseError(f"{what}: not UTF-8 text: a patch carries text files only") from None


def _trim(lines: Sequence[str]) -> list[str]:
    out = [line.rstrip("\n") for line in lines[:SHOWN_LINES]]
    return out + ([f"... {len(lines) - SHOWN_LINES} more lines"] if len(lines) > SHOWN_LINES else [])


def _paths(directory: str, name: str, to: str) -> tuple[str, str]:
    """The new patch and the work directory for ``name`` at ``to`` in ``directory``."""
    return (os.path.join(directory, f"{name}@{to}{PATCH_SUFFIX}"),
            os.path.join(directory, f"{name}@{to}{WORK_SUFFIX}"))


def _choose(entries: Sequence[Entry], name: str, to: str, from_version: str | None) -> Entry:
    mine = [e for e in entries if e.distribution == name]
    if not mine:
        raise RebaseError(f"no patch for {name} in the manifest or patch directory")
    if from_version is not None:
        chosen = match(mine, name, from_version)
        if chosen is None:
            listed = ", ".join(e.shown for e in mine)
            raise RebaseError(f"no patch for {name} {from_version} (there are: {listed})")
        return chosen
    wanted = _version_key(to)
    below = [(key, e) for e in mine if e.exact_version is not None
             and (key := _version_key(e.exact_version)) is not None and wanted is not None and key < wanted]
    if below:
        return max(below, key=lambda pair: pair[0])[1]
    if len(mine) == 1 and mine[0].exact_version is None:
        return mine[0]
    raise RebaseError(f"no patch for {name} below {to} to rebase ({', '.join(e.shown for e in mine)}): "
                      "--from VERSION chooses one")


def _read_patch(entry: Entry) -> tuple[PatchFile, str]:
    try:
        data = read_regular(entry.path, PATCH_MAX, what="patch file")
    except OSError as exc:
        raise RebaseError(f"{entry.shown}: {os_error(exc)}") from None
    why = digest_mismatch(entry, data)
    if why:
        raise RebaseError(why)
    try:
        return parse(_text(data, entry.shown)), hashlib.sha256(data).hexdigest()
    except PatchFormatError as exc:
        raise RebaseError(f"{entry.shown}: {exc}") from None


# ------------------------------------------------------------------------------------------ merging


@dataclass
class _File:
    """One file of the patch as the rebase sees it."""

    out: FileOut
    upstream: str | None  # the new version's text (None: it has no such file)
    merged: str | None  # what the file becomes (None: deleted / absent)
    marked: str | None = None  # a conflict: the merge with markers (files/<rel>)


class _Bases:
    """The old version's originals, verified against the patch header's hashes: the kept store,
    then the installed file (when the installed distribution is the old version), then the old
    version's wheel (looked up once, on first need)."""

    def __init__(self, name: str, old: str, installed: Distribution | None, releases: Releases) -> None:
        self.name, self.old, self.installed, self.releases = name, old, installed, releases
        self.release: Release | None = None
        self.looked = False
        self.notes: list[str] = []

    def close(self) -> None:
        if self.release is not None:
            self.release.close()

    def get(self, rel: str, digest: str) -> tuple[bytes, BaseSource]:
        data = kept(digest)
        if data is not None:
            return data, BaseSource.KEPT
        tried = ["driftscan's store of originals (none kept)"]
        dist = self.installed
        if dist is not None and _same(dist.version, self.old):
            try:
                data = read_below(dist.site_packages, rel, FILE_MAX)
            except (OSError, ValueError):
                data = None
            if data is not None and matches(digest, data):
                return data, BaseSource.INSTALLED
            tried.append(f"the installed {self.name} {dist.version} (its {rel} is not the original)")
        elif dist is not None:
            tried.append(f"the installed {self.name} is {dist.version}, not {self.old}")
        if not self.looked:
            self.looked = True
            self.release, self.notes = self.releases(self.name, self.old)
        if self.release is not None:
            try:
                data = self.release.read(rel, FILE_MAX)
            except DriftscanError as exc:
                raise RebaseError(f"{rel}: {exc}") from None
            if data is not None and matches(digest, data):
                return data, BaseSource.RELEASE
            tried.append(f"{self.release.where} ({'no such file' if data is None else 'another file'})")
        else:
            tried += self.notes
        raise RebaseError(f"{rel}: no original of {self.name} {self.old} matching the patch's {digest}: "
                          + "; ".join(tried))


def _hunk_conflict(number: int, hunk: Hunk, reason: str) -> HunkOut:
    return HunkOut(number=number, header=hunk.header, state=HunkState.CONFLICT, reason=reason)


def _same_code(base: str, ours: str, theirs: str, budget: ParseBudget) -> bool:
    """Every region where ``ours`` and ``theirs`` conflict is the same code on both sides (samecode.py)."""
    parts = merge3_parts(base, ours, theirs)
    return len(same_code(parts, budget)) == len(blocks(parts))


def _judge_hunks(base: str, hunks: Sequence[Hunk], theirs: str, budget: ParseBudget | None, to: str) -> list[HunkOut]:
    """Each hunk alone, carried onto ``theirs``: applied, already there, or in conflict (with the regions)."""
    out = []
    for number, hunk in enumerate(hunks, 1):
        single = apply_hunks(base, [hunk], allow_offset=False)
        result = merge3(base, single, theirs)
        if result.conflicts and budget is not None and _same_code(base, single, theirs, budget):
            out.append(HunkOut(number=number, header=hunk.header, state=HunkState.ALREADY,
                               reason=f"{to} makes the same change, formatted differently"))
        elif result.conflicts:
            c = result.conflicts[0]
            out.append(HunkOut(number=number, header=hunk.header, state=HunkState.CONFLICT, reason=c.reason,
                               region_start=c.region_start, base=_trim(c.base), ours=_trim(c.ours),
                               theirs=_trim(c.theirs)))
        elif result.already and not result.applied:
            out.append(HunkOut(number=number, header=hunk.header, state=HunkState.ALREADY))
        else:
            out.append(HunkOut(number=number, header=hunk.header, state=HunkState.APPLIED))
    return out


def _all(hunks: Sequence[Hunk], state: HunkState, reason: str = "") -> list[HunkOut]:
    return [HunkOut(number=n, header=h.header, state=state, reason=reason) for n, h in enumerate(hunks, 1)]


def _rebase_file(rel: str, change: Change, hunks: Sequence[Hunk], base: str | None, theirs: str | None,
                 labels: tuple[str, str, str], to: str) -> _File:
    out = FileOut(path=rel, change=change, state=FileState.CONFLICT)
    try:
        ours = apply_hunks(base or "", hunks, allow_offset=False)
    except PatchError as exc:
        out.message = f"the patch does not apply to its own base: {exc}"
        out.hunks = [_hunk_conflict(n, h, _own_base_why(base or "", h)) for n, h in enumerate(hunks, 1)]
        return _File(out, theirs, theirs, theirs)
    if change is Change.DELETE:
        if ours:
            out.message = "the patch deletes the file, yet its hunks leave text"
            return _File(out, theirs, theirs, theirs)
        if theirs is None:
            out.state, out.message, out.hunks = FileState.OBSOLETE, f"{to} has no such file", \
                _all(hunks, HunkState.ALREADY)
            return _File(out, None, None)
        if theirs == base:
            out.state, out.hunks = FileState.CARRIED, _all(hunks, HunkState.APPLIED)
            return _File(out, theirs, None)
        why = f"the patch deletes the file, {to} changed it"
        out.message, out.hunks = why, _all(hunks, HunkState.CONFLICT, why)
        return _File(out, theirs, theirs, merge3_marked(base or "", "", theirs, labels).text)
    if change is Change.CREATE:
        if theirs is None:
            out.state, out.hunks = FileState.CARRIED, _all(hunks, HunkState.APPLIED)
            return _File(out, None, ours)
        if theirs == ours:
            out.state, out.message, out.hunks = FileState.OBSOLETE, f"{to} ships the same file", \
                _all(hunks, HunkState.ALREADY)
            return _File(out, theirs, theirs)
        why = f"the patch creates the file, {to} ships another one"
        out.message, out.hunks = why, _all(hunks, HunkState.CONFLICT, why)
        return _File(out, theirs, theirs, merge3_marked("", ours, theirs, labels).text)
    assert base is not None
    if theirs is None:
        why = f"{to} has no such file"
        out.message, out.hunks = why, _all(hunks, HunkState.CONFLICT, why)
        return _File(out, None, None, merge3_marked(base, ours, "", labels).text)
    result = merge3(base, ours, theirs)
    budget = ParseBudget() if is_python(rel) else None  # None: not Python, no same-code check
    out.hunks = _judge_hunks(base, hunks, theirs, budget, to)
    if result.text is None:
        parts = merge3_parts(base, ours, theirs)
        same = same_code(parts, budget) if budget is not None else set()
        if not same or len(same) < len(blocks(parts)):
            out.message = result.conflicts[0].reason if result.conflicts else "the merge conflicts"
            if same:
                out.message += f" ({len(same)} of {len(blocks(parts))} regions are the same code as {to} has, taken as {to} has them)"
            return _File(out, theirs, theirs, merge3_marked(base, ours, theirs, labels, settled=same).text)
        merged = resolve(parts, lambda i: False)
        for h in out.hunks:
            if h.state is HunkState.CONFLICT:
                h.state, h.reason = HunkState.ALREADY, f"{to} makes the same change, formatted differently"
                h.region_start, h.base, h.ours, h.theirs = 0, [], [], []
        if merged == theirs:
            out.state, out.message = FileState.OBSOLETE, \
                f"{to} already makes this change, formatted differently (the same Python syntax, every comment kept)"
            return _File(out, theirs, theirs)
        out.state = FileState.CARRIED
        out.message = f"a region {to} also changed is the same code as the patch's, taken as {to} has it"
        return _File(out, theirs, merged)
    for h in out.hunks:
        if h.state is HunkState.CONFLICT:  # alone it clashes, with the others it is what the new version has
            out.hunks[h.number - 1] = HunkOut(number=h.number, header=h.header, state=HunkState.ALREADY)
    if result.text == theirs:
        out.state, out.message = FileState.OBSOLETE, f"{to} already makes this change"
        for h in out.hunks:
            if h.state is HunkState.APPLIED:  # part of a change the new version makes whole
                h.state = HunkState.ALREADY
        return _File(out, theirs, theirs)
    out.state = FileState.CARRIED
    return _File(out, theirs, result.text)


def _own_base_why(base: str, hunk: Hunk) -> str:
    try:
        apply_hunks(base, [hunk], allow_offset=False)
    except PatchError as exc:
        return str(exc)
    return "applies alone, not after the hunks before it"


# ------------------------------------------------------------------------------------------ writing


@dataclass(frozen=True)
class _NewFile:
    rel: str
    upstream: str | None  # the new version's text
    upstream_hash: str | None
    mine: str | None  # what the file should be


def _description(old: str, old_version: str) -> str:
    return f"{old}\nRebased from {old_version} by driftscan patch rebase"


def _new_patch(name: str, to: str, description: str, files: Sequence[_NewFile]) -> str | None:
    """The new patch's text (None: nothing differs from the new version)."""
    sections, listed = [], []
    for f in sorted(files, key=lambda f: f.rel):
        if f.mine == f.upstream:
            continue
        if f.upstream is not None and f.upstream_hash is None:
            raise RebaseError(f"{f.rel}: the new version's RECORD gives no hash for it")
        try:
            sections.append(file_diff(f.rel, f.upstream, f.mine))
        except PatchError as exc:
            raise RebaseError(f"{f.rel}: {exc}") from None
        listed.append(PatchedFile(f.rel, f.upstream_hash if f.upstream is not None else None))
    if not listed:
        return None
    try:
        return render(PatchFile(PatchHeader(description, name, to, __version__, tuple(listed)), "".join(sections)))
    except PatchFormatError as exc:
        raise RebaseError(f"the new patch cannot be written: {exc}") from None


def _pin(result: PatchRebase, pin: str, path: str, *, write: bool) -> None:
    """Pin the new patch in the manifest ``pin``; ``write=False``: only learn that it can be."""
    try:
        pinned = pin_patch(pin, path, result.distribution, result.to_version or "", result.sha256 or "", write=write)
    except DriftscanError as exc:
        if not write:
            raise RebaseError(f"{exc}; the new patch was not written either") from None
        result.message = f"not pinned: {exc}"  # the patch is written (exit 2): the file changed since it was checked
        return
    if write:
        result.pinned = pinned


def _write_patch(result: PatchRebase, path: str, text: str, force: bool, pin: str | None = None) -> None:
    data = text.encode("utf-8")
    result.output, result.sha256 = path, hashlib.sha256(data).hexdigest()
    result.manifest_line = manifest_line(path, result.distribution, result.to_version or "", result.sha256)
    if pin is not None:  # learn it can be pinned before anything is written
        _pin(result, pin, path, write=False)
    try:
        there: bytes | None = read_regular(path, len(data) + 1, follow=False)
    except FileNotFoundError:
        there = None
    except OSError as exc:
        if exc.errno == errno.EFBIG:  # larger than ours, so another file
            there = b""
        elif exc.errno == errno.ELOOP:
            raise RebaseError(f"{path}: a symlink: not followed, nothing written") from None
        else:
            raise RebaseError(f"{path}: {os_error(exc)}") from None
    if there == data:
        result.state = RebaseState.UNCHANGED
    elif there is not None and not force:
        raise RebaseError(f"{path}: a different file is already there: kept (--force replaces it)")
    else:
        try:
            write_atomic(path, data)
        except OSError as exc:
            raise RebaseError(f"{path}: not written: {os_error(exc)}") from None
        result.state = RebaseState.WRITTEN
    if pin is not None:
        _pin(result, pin, path, write=True)


def _state_doc(result: PatchRebase, description: str, files: Sequence[_File], pin: str | None) -> dict[str, Any]:
    return {
        "format": STATE_FORMAT,
        "distribution": result.distribution,
        "from": result.from_version,
        "to": result.to_version,
        "patch": result.patch,
        "patch_sha256": result.patch_sha256,
        "output": result.output,
        "description": description,
        "pin": os.path.abspath(pin) if pin is not None else None,
        "files": [{"rel": f.out.path, "upstream": f.out.upstream, "deleted": f.out.change is Change.DELETE,
                   "new": f.out.change is Change.CREATE, "conflicted": f.out.state is FileState.CONFLICT}
                  for f in files],
    }


def _ensure_dir(directory: str) -> None:
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise RebaseError(f"{directory}: cannot create the directory: {os_error(exc)}") from None


def _put(workdir: str, rel: str, data: bytes) -> None:
    def fill(out: BinaryIO) -> bool:
        out.write(data)
        return True

    why = replace_below(workdir, rel, fill, 0o644, create_dirs=True, temp_prefix=".driftscan-rebase-")
    if why:
        raise OSError(f"{rel}: {why}")


def _make_workdir(workdir: str, state: dict[str, Any], files: Sequence[_File]) -> None:
    os.mkdir(workdir, 0o755)  # FileExistsError: checked before, so a race: refused by the caller
    try:
        for f in files:
            shown = f.marked if f.out.state is FileState.CONFLICT else f.merged
            if shown is not None:
                _put(workdir, "files/" + f.out.path, shown.encode("utf-8"))
            if f.upstream is not None:
                _put(workdir, "upstream/" + f.out.path, f.upstream.encode("utf-8"))
        _put(workdir, "state.json", (json.dumps(state, indent=1) + "\n").encode("utf-8"))
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise


# ------------------------------------------------------------------------------------------ rebase


def rebase(entries: Sequence[Entry], name: str, to: str, releases: Releases, *, from_version: str | None = None,
           output_dir: str | None = None, installed: Distribution | None = None,
           force: bool = False, pin: str | None = None) -> PatchRebase:
    """Carry the patch of ``name`` (chosen among ``entries``: ``from_version``, else the highest
    version below ``to``) onto ``to``. ``releases(name, version)`` finds a version's wheel;
    ``installed``: the installed distribution of that name, if any (an original may come from it);
    ``pin``: a manifest file the new patch's line is written into (kept for ``--continue``)."""
    result = PatchRebase(state=RebaseState.REFUSED, distribution=canonicalize_name(name), to_version=to)
    bases: _Bases | None = None
    new: Release | None = None
    try:
        if not _NAME.fullmatch(result.distribution):
            raise RebaseError(f"{name!r} is not a distribution name")
        if not _VERSION.fullmatch(to) or _version_key(to) is None:
            raise RebaseError(f"--to {to!r} is not a version")
        entry = _choose(entries, result.distribution, to, from_version)
        result.patch = entry.path
        patch, result.patch_sha256 = _read_patch(entry)
        header = patch.header
        old = result.from_version = header.version
        if header.distribution != result.distribution:
            raise RebaseError(f"{entry.shown}: made for {header.distribution}, not {result.distribution}")
        if from_version is not None and not _same(from_version, old):
            raise RebaseError(f"{entry.shown}: made on {old}, not --from {from_version}")
        if _same(old, to):
            raise RebaseError(f"{entry.shown}: already made on {to}")
        directory = os.path.abspath(output_dir or os.path.dirname(entry.path))  # --continue may run elsewhere
        out_path, workdir = _paths(directory, result.distribution, to)
        if os.path.lexists(workdir):
            raise RebaseError(f"{workdir}: a rebase to {to} is under way: finish it with "
                              f"`driftscan patch rebase --continue {workdir}` or drop it with --abort")
        try:
            files = file_patches(patch)
        except PatchError as exc:
            raise RebaseError(f"{entry.shown}: {exc}") from None
        originals = {f.path: f.original for f in header.files}

        new, notes = releases(result.distribution, to)
        result.notes += notes
        if new is None:
            raise RebaseError(f"no wheel of {result.distribution} {to} found")
        result.release = new.where
        bases = _Bases(result.distribution, old, installed, releases)
        labels = (f"{result.distribution} {old} + patch", f"{result.distribution} {old}", f"{result.distribution} {to}")
        done: list[_File] = []
        for fp in files:
            rel = fp.path
            change = Change.CREATE if fp.created else Change.DELETE if fp.deleted else Change.MODIFY
            base: str | None = None
            source: BaseSource | None = None
            digest = originals.get(rel)
            if change is not Change.CREATE:
                if digest is None:
                    raise RebaseError(f"{entry.shown}: {rel} has no original hash")
                data, source = bases.get(rel, digest)
                base = _text(data, f"{rel} ({old})")
            try:
                upstream_bytes = new.read(rel, FILE_MAX)
            except DriftscanError as exc:
                raise RebaseError(f"{rel} of {to}: {exc}") from None
            theirs = None if upstream_bytes is None else _text(upstream_bytes, f"{rel} ({to})")
            try:
                f = _rebase_file(rel, change, fp.hunks, base, theirs, labels, to)
            except PatchError as exc:  # a merge past its budget of work
                raise RebaseError(f"{rel}: {exc}") from None
            f.out.base_from = source.value if source else None
            f.out.upstream = new.record_hash(rel) if theirs is not None else None
            done.append(f)
        result.notes += bases.notes
        result.files = [f.out for f in done]
        description = _description(header.description, old)
        if any(f.out.state is FileState.CONFLICT for f in done):
            result.output = out_path
            result.workdir = workdir
            doc = _state_doc(result, description, done, pin)
            _ensure_dir(directory)
            try:
                _make_workdir(workdir, doc, done)
            except OSError as exc:
                result.workdir = None
                raise RebaseError(f"{workdir}: not made: {os_error(exc)}") from None
            result.state = RebaseState.CONFLICT
            return result
        text = _new_patch(result.distribution, to, description,
                          [_NewFile(f.out.path, f.upstream, f.out.upstream, f.merged) for f in done])
        if text is None:
            result.state = RebaseState.OBSOLETE
            return result
        _ensure_dir(directory)
        _write_patch(result, out_path, text, force, pin)
        return result
    except DriftscanError as exc:  # RebaseError, or a release lookup that could not be made
        result.message = str(exc)
        result.state = RebaseState.REFUSED
        return result
    finally:
        if bases is not None:
            bases.close()
        if new is not None:
            new.close()


# ------------------------------------------------------------------------------------------ continue


@dataclass(frozen=True)
class _StateFile:
    rel: str
    upstream: str | None
    deleted: bool
    new: bool
    conflicted: bool


@dataclass(frozen=True)
class _State:
    distribution: str
    from_version: str
    to: str
    patch: str
    patch_sha256: str
    output: str
    description: str
    files: tuple[_StateFile, ...]
    pin: str | None = None


def _check_workdir(workdir: str) -> re.Match[str]:
    """The work directory's name, parsed; RebaseError for one that is not a real rebase directory."""
    found = _WORKDIR.fullmatch(os.path.basename(os.path.normpath(workdir)))
    if found is None:
        raise RebaseError(f"{workdir}: not a rebase work directory (<dist>@<version>{WORK_SUFFIX})")
    try:
        st = os.lstat(workdir)
    except OSError as exc:
        raise RebaseError(f"{workdir}: {os_error(exc)}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise RebaseError(f"{workdir}: not a directory (a symlink is not followed)")
    return found


def _field(doc: dict[str, Any], key: str, kind: type, where: str) -> Any:
    value = doc.get(key)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise RebaseError(f"{where}: {key!r} must be {kind.__name__}, not {type(value).__name__}")
    return value


def _read_state(workdir: str, found: re.Match[str]) -> _State:
    where = os.path.join(workdir, "state.json")
    try:
        raw = read_below(workdir, "state.json", STATE_MAX)
    except OSError as exc:
        raise RebaseError(f"{where}: {exc.strerror or exc}: refused") from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise RebaseError(f"{where}: not JSON: refused") from None
    if not isinstance(doc, dict):
        raise RebaseError(f"{where}: not a JSON object: refused")
    if doc.get("format") != STATE_FORMAT:
        raise RebaseError(f"{where}: format {str(doc.get('format'))[:20]!r}, not {STATE_FORMAT}: refused")
    name = _field(doc, "distribution", str, where)
    old = _field(doc, "from", str, where)
    to = _field(doc, "to", str, where)
    if name != found["dist"] or to != found["version"]:
        raise RebaseError(f"{where}: names {name[:80]!r} {to[:40]!r}, the directory {found['dist']}@{found['version']}: refused")
    if not _VERSION.fullmatch(old):
        raise RebaseError(f"{where}: 'from' is not a version: refused")
    patch = _field(doc, "patch", str, where)
    digest = _field(doc, "patch_sha256", str, where)
    if not _SHA256.fullmatch(digest):
        raise RebaseError(f"{where}: 'patch_sha256' is not a sha256: refused")
    # The output is where this work directory's patch goes, whatever the state says.
    output = _paths(os.path.dirname(os.path.abspath(workdir)), name, to)[0]
    said = _field(doc, "output", str, where)
    if os.path.abspath(said) != output:
        raise RebaseError(f"{where}: 'output' is not {output}, beside the work directory: refused")
    description = _field(doc, "description", str, where)
    pin = doc.get("pin")  # the manifest --pin named at rebase time: a path, checked again before writing
    if pin is not None and (not isinstance(pin, str) or not os.path.isabs(pin) or "\0" in pin or len(pin) > 4096
                            or not pin.endswith(".toml")):
        raise RebaseError(f"{where}: 'pin' is not the absolute path of a .toml file or null: refused")
    files = _field(doc, "files", list, where)
    if not files or len(files) > STATE_FILES_MAX:
        raise RebaseError(f"{where}: 'files' must list 1 to {STATE_FILES_MAX} files: refused")
    seen: set[str] = set()
    out = []
    for item in files:
        if not isinstance(item, dict):
            raise RebaseError(f"{where}: a file entry is not an object: refused")
        rel = _field(item, "rel", str, where)
        try:
            check_path(rel)
        except PatchFormatError as exc:
            raise RebaseError(f"{where}: {exc}: refused") from None
        if rel in seen:
            raise RebaseError(f"{where}: {rel} listed twice: refused")
        seen.add(rel)
        upstream = item.get("upstream")
        if upstream is not None and (not isinstance(upstream, str) or not is_record_hash(upstream)):
            raise RebaseError(f"{where}: {rel}: 'upstream' is not a RECORD hash or null: refused")
        flags = [_field(item, key, bool, where) for key in ("deleted", "new", "conflicted")]
        out.append(_StateFile(rel, upstream, *flags))
    return _State(name, old, to, patch, digest, output, description, tuple(out), pin)


def _state_path(workdir: str) -> str:
    return os.path.join(workdir, "state.json")


def _read_work_file(workdir: str, rel: str) -> str | None:
    try:
        data = read_below(workdir, rel, FILE_MAX)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RebaseError(f"{os.path.join(workdir, rel)}: {exc.strerror or exc}: refused") from None
    return _text(data, os.path.join(workdir, rel))


def continue_rebase(workdir: str, force: bool = False, pin: str | Callable[[], str] | None = None,
                    planted: Callable[[str], str | None] | None = None) -> PatchRebase:
    """Write the new patch from a work directory whose conflicts are resolved, and remove it. The
    new patch is pinned in the manifest the rebase was started with ``--pin`` for, checked again
    with ``planted`` (why a file may have been put there by another user, else None: the rule a
    found configuration is read by; without it such a state is refused), else in ``pin`` when
    given (a path, or a function that finds one: called only then)."""
    result = PatchRebase(state=RebaseState.REFUSED, continued=True, workdir=workdir)
    try:
        found = _check_workdir(workdir)
        state = _read_state(workdir, found)
        result.distribution, result.from_version, result.to_version = state.distribution, state.from_version, state.to
        result.patch, result.patch_sha256 = state.patch, state.patch_sha256
        news = []
        for f in state.files:
            out = FileOut(path=f.rel, change=Change.CREATE if f.new else Change.DELETE if f.deleted else Change.MODIFY,
                          state=FileState.CARRIED, upstream=f.upstream)
            upstream = _read_work_file(workdir, "upstream/" + f.rel)
            if f.upstream is None and upstream is not None:
                raise RebaseError(f"{os.path.join(workdir, 'upstream', f.rel)}: state.json says {state.to} has no "
                                  "such file: refused")
            if f.upstream is not None:
                if upstream is None:
                    raise RebaseError(f"{os.path.join(workdir, 'upstream', f.rel)}: missing: refused")
                if not matches(f.upstream, upstream.encode("utf-8")):
                    raise RebaseError(f"{os.path.join(workdir, 'upstream', f.rel)}: edited (it is not {state.to}'s "
                                      f"file, {f.upstream}): refused")
            mine = _read_work_file(workdir, "files/" + f.rel)
            line = marker_line(mine) if mine is not None else None
            if line is not None:
                out.state, out.marker_line = FileState.CONFLICT, line
                out.message = f"a conflict marker is left at line {line}"
            elif mine == upstream:
                out.state = FileState.OBSOLETE
            result.files.append(out)
            news.append(_NewFile(f.rel, upstream, f.upstream, mine))
        if any(f.state is FileState.CONFLICT for f in result.files):
            result.state = RebaseState.MARKERS
            return result
        if state.pin is not None:
            why = planted(state.pin) if planted is not None else "which cannot be checked here"
            if why:
                raise RebaseError(f"{_state_path(workdir)}: 'pin' names {state.pin}, {why}: refused, nothing written")
            manifest: str | None = state.pin
        else:
            try:
                manifest = pin() if callable(pin) else pin
            except DriftscanError as exc:
                raise RebaseError(f"{exc}; nothing written") from None
        text = _new_patch(state.distribution, state.to, state.description, news)
        if text is None:
            result.state = RebaseState.OBSOLETE
        else:
            _write_patch(result, state.output, text, force, manifest)
        shutil.rmtree(workdir)
        result.workdir_removed = True
        return result
    except RebaseError as exc:
        result.message = str(exc)
        result.state = RebaseState.REFUSED
        return result
    except OSError as exc:
        result.message = f"{workdir}: {os_error(exc)}"
        result.state = RebaseState.REFUSED
        return result


def abort_rebase(workdir: str) -> PatchRebase:
    """Remove a work directory (nothing else is touched)."""
    result = PatchRebase(state=RebaseState.REFUSED, workdir=workdir)
    try:
        found = _check_workdir(workdir)
        result.distribution, result.to_version = found["dist"], found["version"]
        shutil.rmtree(workdir)
    except RebaseError as exc:
        result.message = str(exc)
        return result
    except OSError as exc:
        result.message = f"{workdir}: not removed: {os_error(exc)}"
        return result
    result.state, result.workdir_removed = RebaseState.ABORTED, True
    return result


def find_workdir(directory: str = "patches") -> str:
    """The one rebase work directory in ``directory``; RebaseError when there is none or several."""
    try:
        names = sorted(n for n in os.listdir(directory) if _WORKDIR.fullmatch(n)
                       and stat.S_ISDIR(os.lstat(os.path.join(directory, n)).st_mode))
    except OSError as exc:
        raise RebaseError(f"{directory}: {os_error(exc)} (name the work directory)") from None
    if not names:
        raise RebaseError(f"no rebase under way in {directory} (name the work directory)")
    if len(names) > 1:
        raise RebaseError(f"{len(names)} rebases under way in {directory} ({', '.join(names)}): name one")
    return os.path.join(directory, names[0])


__all__ = ["BaseSource", "Change", "FileOut", "FileState", "HunkOut", "HunkState", "PatchRebase", "RebaseError",
           "RebaseState", "Release", "Releases", "abort_rebase", "continue_rebase", "exit_status", "find_workdir",
           "patch_rebase_schema", "rebase"]
