"""``driftscan patch apply``: the team's patch files applied to an installed environment, hunk by hunk.

For each installed distribution a patch matches (``manifest.py``), every file of the patch is checked
before anything is written: its path (relative, below the distribution's site-packages, never through
a ``*.dist-info`` directory, a symlink or ``..``; a modified or deleted file must be one the
distribution's RECORD lists, a created one must sit in a top-level directory it lists), then the
original's hash in the patch header against the hash RECORD gives, then each hunk against the file as
it is now, exactly (``formats/patch.py``: an offset search, no fuzz):

* ``applied`` — the hunk applies to the current content;
* ``already`` — its reverse applies: the environment carries the change;
* ``obsolete`` — the installed version is not the patch's and the file as upstream ships it (its RECORD
  hash) already has the hunk's result;
* ``conflict`` — neither: the hunk and the lines the file has there are shown.

A file with a conflict is written not at all (all or nothing per file); a patch whose file is hostile
is refused whole. Writes (``--yes`` only) are atomic, below the site-packages root, never through a
symlink (``fs/confined.py``), never RECORD. What was written is recorded in the user cache
(``ledger_path``), so that a later audit can tell the team's patched files from drift.
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
import stat
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, BinaryIO, Final, Literal

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ..caches.keys import cache_key
from ..caches.location import user_cache_dir, write_cache_file
from ..core.datamodel import DataModel, InlineEnum, datamodel, describe
from ..core.errors import DriftscanError
from ..core.values import Distribution, Hash, MetadataKind
from ..environment.bytecode import remove_stale_after_write
from ..environment.dists import find_distributions, read_distribution
from ..environment.target import containment_for_site_packages
from ..formats.patch import FilePatch, Hunk, PatchError, apply_hunks, reverse_hunks, split_lines
from ..formats.record import parse_hash
from ..pristine.kept import keep
from ..reinstall.patchledger import LEDGER_VERSION, ledger_path, read_ledger
from ..fs.confined import lstat_below, open_dir, parts_of, read_below, replace_below, unlink_below
from ..fs.reader import read_regular
from .manifest import Entry, ManifestError, digest_mismatch, match, unused
from .patchfile import Change, PatchFile, PatchFormatError, file_patches, parse

SCHEMA_VERSION: Final = "1"
PATCH_MAX = 64 << 20  # a patch file: the format's own bound
FILE_MAX = 64 << 20  # a file a patch edits: source files are far smaller
HUNK_MAX_LINES = 100_000  # lines of one hunk: an edit to a source file is far smaller
SHOWN_LINES = 40  # lines of a conflicting hunk and of the file there kept in the result


class HunkState(str, enum.Enum):
    APPLIED = "applied"  # applies to the current content (written with --yes)
    ALREADY = "already"  # the reverse applies: the environment carries it
    OBSOLETE = "obsolete"  # another version, whose upstream file already has the hunk's result
    CONFLICT = "conflict"  # neither


class FileState(str, enum.Enum):
    APPLIED = "applied"  # changed (or, in a dry run, would be)
    ALREADY = "already"
    OBSOLETE = "obsolete"
    CONFLICT = "conflict"  # nothing of this file written
    FAILED = "failed"  # the write itself failed: the file is as it was
    LEFT = "left"  # would apply, but left to a checkpoint's reapply (guard --reapply-patches): not written here


class PatchState(str, enum.Enum):
    APPLIED = "applied"  # some file changed (or would)
    ALREADY = "already"  # everything already there
    OBSOLETE = "obsolete"  # everything already upstream
    CONFLICT = "conflict"  # a file conflicts (the others applied)
    LEFT = "left"  # every file it would write is left to a checkpoint's reapply (guard --reapply-patches)
    UNUSED = "unused"  # no installed distribution matches it
    REFUSED = "refused"  # not read, not trusted or not usable: nothing of it written


@datamodel
class HunkOut(DataModel):
    number: int = field(metadata=describe("1-based, in the file's part of the patch"))
    header: str = field(metadata=describe("the hunk's @@ line"))
    state: Annotated[HunkState, InlineEnum(HunkState)]
    reason: str = field(default="", metadata=describe("a conflict: why the hunk does not apply"))
    hunk: list[str] = field(default_factory=list, metadata=describe("a conflict: the hunk's lines (at most 40)"))
    found_at: int = field(default=0, metadata=describe("a conflict: the 1-based line where the file was compared"))
    found: list[str] = field(default_factory=list, metadata=describe("a conflict: the lines the file has there"))


@datamodel
class FileOut(DataModel):
    path: str = field(metadata=describe("relative to the distribution's site-packages, as in the patch"))
    change: Annotated[Change, InlineEnum(Change)]
    state: Annotated[FileState, InlineEnum(FileState)]
    base_matches: bool = field(default=True, metadata=describe(
        "the original's hash in the patch header is the hash the installed RECORD gives"))
    written: bool = False
    sha256: str | None = field(default=None, metadata=describe("hex digest of the file after the patch "
                                                               "(null: deleted, or not computed)"))
    message: str = ""
    hunks: list[HunkOut] = field(default_factory=list)
    bytecode_removed: list[str] = field(default_factory=list, metadata=describe(
        "pycs of this file Python would have run instead of what was written, removed (absolute paths)"))


@datamodel
class PatchOut(DataModel):
    patch: str = field(metadata=describe("the patch file as the manifest or directory names it"))
    path: str = field(metadata=describe("the patch file, absolute"))
    state: Annotated[PatchState, InlineEnum(PatchState)]
    distribution: str = ""
    version: str | None = field(default=None, metadata=describe("the version the patch was made on"))
    installed: str | None = field(default=None, metadata=describe("the installed version it was applied to"))
    specifier: str = field(default="", metadata=describe("the manifest's version specifier (\"\": any)"))
    sha256: str | None = field(default=None, metadata=describe("hex digest of the patch file"))
    message: str = ""
    files: list[FileOut] = field(default_factory=list)


@datamodel
class PatchApplyReport(DataModel):
    schema_version: Literal["1"] = SCHEMA_VERSION
    site_packages: list[str] = field(default_factory=list)
    dry_run: bool = True
    manifest: str | None = field(default=None, metadata=describe("the manifest read (null: a patch directory)"))
    patches_dir: str | None = None
    patches: list[PatchOut] = field(default_factory=list)
    written: list[str] = field(default_factory=list, metadata=describe("files written or deleted, absolute"))
    record: str | None = field(default=None, metadata=describe("the user-cache file recording what was written"))
    errors: list[str] = field(default_factory=list, metadata=describe("what could not be done (exit bit 2)"))

    def count(self, state: PatchState) -> int:
        return sum(p.state is state for p in self.patches)

    @property
    def would_write(self) -> bool:
        return any(f.state is FileState.APPLIED for p in self.patches for f in p.files)


def patch_apply_schema() -> dict[str, object]:
    return PatchApplyReport.model_json_schema()


@dataclass(frozen=True)
class Allow:
    unused: bool = False
    conflicts: bool = False


def exit_status(report: PatchApplyReport, allow: Allow = Allow()) -> int:
    """0: nothing left to do. Bit 1: a dry run that would write, a patch refused, a conflict (unless
    allowed), a patch unused (unless allowed), a write that failed. Bit 2: something not checked."""
    status = 0
    states = {p.state for p in report.patches}
    if report.dry_run and report.would_write:
        status |= 1
    if PatchState.REFUSED in states or any(f.state is FileState.FAILED for p in report.patches for f in p.files):
        status |= 1
    if not allow.conflicts and any(f.state is FileState.CONFLICT for p in report.patches for f in p.files):
        status |= 1
    if not allow.unused and PatchState.UNUSED in states:
        status |= 1
    if report.errors:
        status |= 2
    return status


# --------------------------------------------------------------------------------------------- checking


class Refused(DriftscanError):
    """A patch that is not applied at all (one line)."""


@dataclass
class _FilePlan:
    out: FileOut
    new_text: str | None = None  # what to write (CREATE / MODIFY); None with DELETE
    # The installed file's bytes when they are the original RECORD names: kept in the store of
    # originals before they are overwritten, so export and rebase have their base without a wheel.
    original: tuple[str, bytes] | None = None


def _sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check_path(rel: str) -> list[str]:
    try:
        parts = parts_of(rel)
    except ValueError:
        raise Refused(f"{rel!r}: not a plain relative path below site-packages (absolute, '..' or empty)") from None
    if rel != "/".join(parts) or "\\" in rel:
        raise Refused(f"{rel!r}: not a plain relative path below site-packages")
    if any(p.endswith((".dist-info", ".egg-info")) for p in parts):
        raise Refused(f"{rel}: inside a distribution's metadata directory: a patch never edits RECORD or METADATA")
    return parts


def _record_hash(dist: Distribution) -> dict[str, Hash | None]:
    return {e.path: e.hash for e in dist.entries}


def _top_dirs(dist: Distribution) -> set[str]:
    tops = set()
    for e in dist.entries:
        parts = e.path.split("/")
        if len(parts) > 1 and parts[0] not in ("..", "") and not parts[0].endswith((".dist-info", ".data")):
            tops.add(parts[0])
    return tops


def _trim(lines: Iterable[str]) -> list[str]:
    listed = list(lines)
    return [line.rstrip("\n") for line in listed[:SHOWN_LINES]] + ([f"... {len(listed) - SHOWN_LINES} more lines"]
                                                                  if len(listed) > SHOWN_LINES else [])


def _conflict(number: int, hunk: Hunk, current: str, why: str) -> HunkOut:
    lines = split_lines(current)
    at = max(hunk.old_start - 1 if hunk.old_len else hunk.old_start, 0)
    found = lines[at: at + max(hunk.old_len, 1)]
    return HunkOut(number=number, header=hunk.header, state=HunkState.CONFLICT, reason=why,
                   hunk=_trim(hunk.lines), found_at=at + 1, found=_trim(found))


def _applies(text: str, hunks: Sequence[Hunk]) -> str | None:
    try:
        return apply_hunks(text, hunks)
    except PatchError:
        return None


def _why(text: str, hunk: Hunk) -> str:
    try:
        apply_hunks(text, [hunk])
    except PatchError as exc:
        return str(exc).split("does not apply: ", 1)[-1]  # the hunk's own header is shown beside it
    return ""  # pragma: no cover - only asked for a hunk that does not apply


def _judge_hunks(current: str, hunks: Sequence[Hunk], upstream: bool) -> list[HunkOut]:
    """Each hunk against ``current``; ``upstream``: the file is as its (other) version ships it, so a
    change already there is ``obsolete``, not ``already``."""
    out = []
    for number, hunk in enumerate(hunks, 1):
        if _applies(current, [hunk]) is not None:
            out.append(HunkOut(number=number, header=hunk.header, state=HunkState.APPLIED))
        elif _applies(current, reverse_hunks([hunk])) is not None:
            out.append(HunkOut(number=number, header=hunk.header,
                               state=HunkState.OBSOLETE if upstream else HunkState.ALREADY))
        else:
            out.append(_conflict(number, hunk, current, _why(current, hunk)))
    return out


def _file_state(hunks: Sequence[HunkOut]) -> FileState:
    states = {h.state for h in hunks}
    if HunkState.CONFLICT in states:
        return FileState.CONFLICT
    if HunkState.APPLIED in states:
        return FileState.APPLIED
    if HunkState.ALREADY in states:
        return FileState.ALREADY
    return FileState.OBSOLETE


def _read_current(site: str, rel: str) -> bytes | None:
    """The file now, None when absent; Refused for anything a patch may not edit (a symlink on the
    way or at the end, not a regular file, too large)."""
    try:
        return read_below(site, rel, FILE_MAX)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Refused(f"{rel}: {exc.strerror or exc}") from None


def _check_new_parent(site: str, parts: list[str]) -> None:
    """A file to create: the deepest directory on its way that exists, opened without following a
    symlink (each missing one is made the same way when the file is written); Refused when a
    symlink or a file stands on the way."""
    for depth in range(len(parts) - 1, -1, -1):
        try:
            fd = open_dir(site, parts[:depth])
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise Refused(f"{'/'.join(parts)}: {exc.strerror or exc}") from None
        os.close(fd)
        return


def _decode(data: bytes, rel: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused(f"{rel}: not UTF-8 text: a patch edits text files only") from None


def _plan_file(site: str, dist: Distribution, fp: FilePatch, header_hash: str | None, version_differs: bool,
               record: dict[str, Hash | None], tops: set[str]) -> _FilePlan:
    rel = fp.path
    parts = _check_path(rel)
    for number, hunk in enumerate(fp.hunks, 1):
        if len(hunk.lines) > HUNK_MAX_LINES:
            raise Refused(f"{rel}: hunk {number} has {len(hunk.lines):,} lines, more than {HUNK_MAX_LINES:,}: refused")
    change = Change.CREATE if fp.created else Change.DELETE if fp.deleted else Change.MODIFY
    row = record.get(rel)
    if change is not Change.CREATE and rel not in record:
        raise Refused(f"{rel}: not a file of {dist.name} {dist.version} (its RECORD does not list it)")
    if change is Change.CREATE and rel not in record and parts[0] not in tops:
        raise Refused(f"{rel}: a new file outside {dist.name}'s own directories "
                      f"({', '.join(sorted(tops)) or 'none'}): not created")
    if change is Change.CREATE:
        _check_new_parent(site, parts)
    data = _read_current(site, rel)
    base_matches = True
    if header_hash is not None:
        try:
            wanted = parse_hash(header_hash, allow_hex=False)
        except ValueError as exc:
            raise Refused(f"{rel}: the header's original hash: {exc}") from None
        base_matches = row is not None and row.algorithm == wanted.algorithm and row.digest == wanted.digest
    elif change is Change.CREATE:
        base_matches = row is None
    # The file as upstream ships it: its content is the one RECORD names (another version's file).
    pristine = data is not None and row is not None and row.algorithm == "sha256" \
        and hashlib.sha256(data).digest() == row.digest
    upstream = version_differs and pristine

    if change is Change.CREATE:
        created = "".join(fp.hunks[0].new_lines()) if fp.hunks else ""
        if data is None:
            hunks = [HunkOut(number=1, header=fp.hunks[0].header, state=HunkState.APPLIED)]
        elif _decode(data, rel) == created:
            hunks = [HunkOut(number=1, header=fp.hunks[0].header,
                             state=HunkState.OBSOLETE if upstream else HunkState.ALREADY)]
        else:
            hunks = [_conflict(1, fp.hunks[0], _decode(data, rel), "the file the patch creates exists, with other content")]
        out = FileOut(path=rel, change=change, state=_file_state(hunks), base_matches=base_matches, hunks=hunks,
                      sha256=_sha256_hex(created.encode("utf-8")))
        return _FilePlan(out, created)
    if change is Change.DELETE:
        old_text = "".join(fp.hunks[0].old_lines()) if fp.hunks else ""
        if data is None:
            hunks = [HunkOut(number=1, header=fp.hunks[0].header, state=HunkState.ALREADY)]
        elif _decode(data, rel) == old_text:
            hunks = [HunkOut(number=1, header=fp.hunks[0].header, state=HunkState.APPLIED)]
        else:
            hunks = [_conflict(1, fp.hunks[0], _decode(data, rel), "the file to delete has other content")]
        return _FilePlan(FileOut(path=rel, change=change, state=_file_state(hunks), base_matches=base_matches,
                                 hunks=hunks), original=(str(row), data) if pristine and row and data else None)
    if data is None:
        hunks = [_conflict(n, h, "", "the file is not there") for n, h in enumerate(fp.hunks, 1)]
        return _FilePlan(FileOut(path=rel, change=change, state=FileState.CONFLICT, base_matches=base_matches,
                                 message="missing from the environment", hunks=hunks))
    current = _decode(data, rel)
    hunks = _judge_hunks(current, fp.hunks, upstream)
    state = _file_state(hunks)
    new_text: str | None = current
    if state is FileState.APPLIED:
        todo = [h for h, o in zip(fp.hunks, hunks) if o.state is HunkState.APPLIED]
        new_text = _applies(current, todo)
        if new_text is None:  # each applies alone, not all together: overlapping hunks
            state = FileState.CONFLICT
            hunks = [_conflict(o.number, h, current, "the hunks that apply alone do not apply together")
                     if o.state is HunkState.APPLIED else o for h, o in zip(fp.hunks, hunks)]
    out = FileOut(path=rel, change=change, state=state, base_matches=base_matches, hunks=hunks,
                  sha256=_sha256_hex((new_text or "").encode("utf-8")) if new_text is not None else None,
                  message="" if base_matches else "the installed file is not the one the patch was made on: "
                                                  "each hunk checked against its current content")
    return _FilePlan(out, new_text, original=(str(row), data) if pristine and row is not None else None)


# --------------------------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class Source:
    """Where the patches come from: a manifest's entries, or a directory's."""

    entries: tuple[Entry, ...]
    manifest: str | None = None
    directory: str | None = None


def _installed(site_packages: Sequence[str]) -> list[Distribution]:
    """Who is installed (names and versions; RECORD is read only for a distribution a patch matches)."""
    return [md.distribution for md in find_distributions(tuple(site_packages), records=False)
            if md.distribution is not None]


def _with_record(dist: Distribution, site_packages: Sequence[str]) -> Distribution:
    """``dist`` with its RECORD rows; Refused when it has none to check a patch against."""
    if dist.entries:
        return dist
    if dist.kind is not MetadataKind.DIST_INFO:
        raise Refused(f"{dist.name} {dist.version} has no RECORD ({dist.kind.value}): nothing to check the patch against")
    full, problems = read_distribution(dist.metadata_dir, dist.site_packages,
                                       containment_for_site_packages(site_packages))
    if full is None or not full.entries:
        why = problems[0].message if problems else "no RECORD rows"
        raise Refused(f"{dist.name} {dist.version}: its RECORD cannot be read ({why})")
    return full


def _patch_bytes(entry: Entry) -> bytes:
    try:
        return read_regular(entry.path, PATCH_MAX, what="patch file")
    except OSError as exc:
        raise Refused(f"{entry.shown}: {exc.strerror or exc}") from None


def _plan_patch(entry: Entry, dist: Distribution, site_packages: Sequence[str]) -> tuple[PatchOut, list[_FilePlan]]:
    out = PatchOut(patch=entry.shown, path=entry.path, state=PatchState.REFUSED, distribution=entry.distribution,
                   installed=dist.version, specifier=entry.specifier)
    try:
        dist = _with_record(dist, site_packages)
        data = _patch_bytes(entry)
        out.sha256 = _sha256_hex(data)
        why = digest_mismatch(entry, data)
        if why:
            raise Refused(why)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise Refused(f"{entry.shown}: not UTF-8") from None
        try:
            patch: PatchFile = parse(text)
        except PatchFormatError as exc:
            raise Refused(f"{entry.shown}: {exc}") from None
        header = patch.header
        out.version = header.version
        if canonicalize_name(header.distribution) != entry.distribution:
            raise Refused(f"{entry.shown}: made for {header.distribution}, listed for {entry.distribution}")
        try:
            files = file_patches(patch)
        except PatchError as exc:
            raise Refused(f"{entry.shown}: the diff: {exc}") from None
        originals = {f.path: f.original for f in header.files}
        if sorted(originals) != sorted(f.path for f in files) or len(files) != len({f.path for f in files}):
            raise Refused(f"{entry.shown}: the header's Files: and the diff name different files")
        version_differs = not _same(header.version, dist.version)
        record = _record_hash(dist)
        tops = _top_dirs(dist)
        site = dist.site_packages
        plans = [_plan_file(site, dist, fp, originals[fp.path], version_differs, record, tops) for fp in files]
    except Refused as exc:
        out.message = str(exc)
        return out, []
    out.files = [p.out for p in plans]
    states = {p.out.state for p in plans}
    out.state = (PatchState.CONFLICT if FileState.CONFLICT in states else PatchState.APPLIED
                 if FileState.APPLIED in states else PatchState.ALREADY if FileState.ALREADY in states
                 else PatchState.OBSOLETE)
    return out, plans


def _same(a: str, b: str) -> bool:
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


def _write(site: str, plan: _FilePlan) -> str | None:
    rel = plan.out.path
    if plan.out.change is Change.DELETE:
        return unlink_below(site, rel)
    data = (plan.new_text or "").encode("utf-8")

    def fill(out: BinaryIO) -> bool:
        out.write(data)
        return True

    mode = 0o644
    try:
        mode = stat.S_IMODE(lstat_below(site, rel).st_mode) & 0o755  # no setuid, sticky or group/other write
    except (OSError, ValueError):
        pass
    return replace_below(site, rel, fill, mode, create_dirs=plan.out.change is Change.CREATE,
                         temp_prefix=".driftscan-patch-")


def _record(report: PatchApplyReport, written: list[tuple[PatchOut, list[FileOut]]]) -> str | None:
    path = ledger_path(report.site_packages)
    doc = read_ledger(path) or {"version": LEDGER_VERSION, "site_packages": report.site_packages, "patches": {}}
    for patch, files in written:
        entry = doc["patches"].get(patch.path)
        if not isinstance(entry, dict) or entry.get("sha256") != patch.sha256:
            entry = {"sha256": patch.sha256, "distribution": patch.distribution, "version": patch.installed,
                     "files": {}}
        entry["applied_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        entry["version"] = patch.installed
        for f in files:
            entry["files"][f.path] = f.sha256  # null: deleted
        doc["patches"][patch.path] = entry
    why = write_cache_file(path, (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode(), prefix=".patches-")
    if why:
        report.errors.append(f"the record of what was written: {why}")
        return None
    return path


def _unused_because(entry: Entry, installed: Sequence[tuple[str, Entry | None]]) -> str:
    for version, chosen in installed:
        if chosen is not None and entry.admits(version):
            return f"{entry.distribution} {version} takes {chosen.shown} (a more precise entry)"
    for version, chosen in installed:
        if chosen is not None:
            return (f"{entry.distribution} {version} is installed and takes {chosen.shown}; this patch is for "
                    f"{entry.specifier or 'another version'}: drop its manifest line once no environment has that "
                    "version (--allow-unused until then)")
    if installed:
        versions = ", ".join(version for version, _ in installed)
        why = f"{entry.distribution} {versions} is installed, not {entry.specifier}"
        newer = _newer(entry.exact_version, [version for version, _ in installed])
        # The user upgraded with a plain install: say what makes the patch for the new release.
        return why + (f": `driftscan patch rebase {entry.distribution} --to {newer}` makes the patch for it"
                      if newer else "")
    return f"no {entry.distribution} installed"


def _newer(made_on: str | None, versions: Sequence[str]) -> str | None:
    """The one installed version later than the exact version a patch is for, else None."""
    if made_on is None or len(versions) != 1:
        return None
    try:
        return versions[0] if Version(versions[0]) > Version(made_on) else None
    except InvalidVersion:
        return None


def apply_patches(site_packages: Sequence[str], source: Source, yes: bool = False,
                  distributions: Callable[[Sequence[str]], list[Distribution]] = _installed, *,
                  leave: Mapping[str, str] | None = None) -> PatchApplyReport:
    """Check (and with ``yes`` apply) every patch of ``source`` to the distributions installed in
    ``site_packages``. ManifestError when two patches tie for one distribution.
    ``leave``: absolute path -> why; such a file that would be written is ``left`` instead (guard
    leaves a file its checkpoint holds an edit of to reapply, which writes patch and edit at once)."""
    report = PatchApplyReport(site_packages=list(site_packages), dry_run=not yes, manifest=source.manifest,
                              patches_dir=source.directory)
    used: list[Entry] = []
    planned: list[tuple[PatchOut, list[_FilePlan], str]] = []
    installed: dict[str, list[tuple[str, Entry | None]]] = {}  # canonical name: (version, its patch)
    for dist in sorted(distributions(site_packages), key=lambda d: (d.name.lower(), d.version)):
        entry = match(source.entries, dist.name, dist.version)
        installed.setdefault(canonicalize_name(dist.name), []).append((dist.version, entry))
        if entry is None or entry in used:
            continue
        used.append(entry)
        out, plans = _plan_patch(entry, dist, site_packages)
        planned.append((out, plans, dist.site_packages))
    written: list[tuple[PatchOut, list[FileOut]]] = []
    for out, plans, site in planned:
        report.patches.append(out)
        if not yes:
            continue
        done = []
        for plan in plans:
            if plan.out.state is not FileState.APPLIED:
                continue
            why_left = (leave or {}).get(os.path.join(site, plan.out.path))
            if why_left is not None:
                plan.out.state, plan.out.message = FileState.LEFT, why_left
                continue
            if plan.original is not None:
                try:
                    keep(*plan.original, found_in=f"{os.path.join(site, plan.out.path)} (before driftscan patch apply)")
                except OSError:
                    pass  # best effort: a full or unwritable cache costs export and rebase a wheel lookup only
            why = _write(site, plan)
            if why:
                plan.out.state = FileState.FAILED
                plan.out.message = f"not written: {why}"
                continue
            plan.out.written = True
            report.written.append(os.path.join(site, plan.out.path))
            done.append(plan.out)
            if plan.out.change is not Change.DELETE:
                removed, failed = remove_stale_after_write(site, plan.out.path, (plan.new_text or "").encode("utf-8"))
                plan.out.bytecode_removed = removed
                report.errors += [f"stale bytecode not removed: {why}" for why in failed]
        if done:
            written.append((out, done))
        elif out.state is PatchState.APPLIED and any(p.out.state is FileState.LEFT for p in plans) \
                and not any(p.out.state is FileState.FAILED for p in plans):
            out.state = PatchState.LEFT  # not "applied": nothing of it was written here
    for entry in unused(source.entries, used):
        report.patches.append(PatchOut(patch=entry.shown, path=entry.path, state=PatchState.UNUSED,
                                       distribution=entry.distribution, specifier=entry.specifier,
                                       message=_unused_because(entry, installed.get(entry.distribution, []))))
    if written:
        report.record = _record(report, written)
    return report


__all__ = ["Allow", "Change", "FileOut", "FileState", "HunkOut", "HunkState", "ManifestError", "PatchApplyReport",
           "PatchOut", "PatchState", "Refused", "Source", "apply_patches", "exit_status", "ledger_path",
           "patch_apply_schema"]
