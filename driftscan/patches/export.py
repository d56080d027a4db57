"""``driftscan patch export``: an environment's package drift as one patch file per distribution.

Each modified (or record-rewritten) file is diffed against its verified original, each added file
inside a distribution's own package directories becomes a new file, each missing one a deletion.
Injected debug code is left out as ``reapply`` leaves it out (``reinstall/excise.py``), unless
``include_debug``; every file's fate is in the result. A file that cannot be exported as text (no
verified original, binary, too large) is said with why, and the distribution's other files still are.
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Final, Literal

from .._version import __version__
from ..core.datamodel import DataModel, InlineEnum, datamodel, describe
from ..core.errors import ConfigError
from ..core.values import Distribution, Drift, DriftKind, FileCheck, Origin, RecordEntry, Scope, Target
from ..formats.patch import PatchError, PatchTooLarge, added_line_numbers
from ..formats.jsondiff import as_text
from ..formats.record import hash_text
from ..fs.atomic import write_atomic
from ..fs.paths import printable
from ..fs.reader import inside, os_error, read_regular
from ..pipeline.changes import file_by_file, record_rows, wheel_row
from ..pristine import PristineSet
from ..pristine.howto import ways_to_original, why_no_original
from ..pristine.names import normalize_name
from ..reinstall.checkpoint import CheckpointIndex, environment_root
from ..reinstall.excise import excise
from ..reinstall.reapply import NameIndex, decide_origins, findings_of, names_defined
from ..report.contract import ErrorOut, TargetInfo, Tool, _now
from .pin import PinResult, pin_patch
from .patchfile import PatchedFile, PatchFile, PatchFormatError, PatchHeader, file_diff, is_record_hash, render

SCHEMA_VERSION: Final = "1"
#: A file larger than this is not exported (a patch is for review; 16 MiB, as a checkpoint's patches).
FILE_MAX = 16 << 20
PATCH_SUFFIX = ".patch"


class Change(str, enum.Enum):
    MODIFIED = "modified"
    ADDED = "added"
    DELETED = "deleted"


class Fate(str, enum.Enum):
    """What became of one drifted file."""

    EXPORTED = "exported"
    DEBUG_REMOVED = "debug-removed"  # exported, its injected debug code removed
    DEBUG_ONLY = "debug-only"  # left out: its whole change is debug code
    NO_ORIGINAL = "no-original"  # not exported: no verified original to diff against
    BINARY = "binary"  # not exported: not UTF-8 text
    TOO_LARGE = "too-large"  # not exported: past FILE_MAX, or its diff past the diff budget
    NOT_EXPORTED = "not-exported"  # not exported for another reason, said
    OUT_OF_SCOPE = "out-of-scope"  # never in a patch: outside the install root, or its metadata

    @property
    def exported(self) -> bool:
        return self in (Fate.EXPORTED, Fate.DEBUG_REMOVED)

    @property
    def failed(self) -> bool:
        """A file the user changed that the patch lacks without their choosing: exit 2."""
        return self in (Fate.NO_ORIGINAL, Fate.BINARY, Fate.TOO_LARGE, Fate.NOT_EXPORTED)


class Written(str, enum.Enum):
    WRITTEN = "written"
    UNCHANGED = "unchanged"  # the same file was there already
    EXISTS = "exists"  # a different file is there: not overwritten without --force
    NOTHING = "nothing"  # no file of the distribution was exported


@datamodel
class FileOut(DataModel):
    path: str = field(metadata=describe("relative to the install root (site-packages), as in the patch"))
    change: Annotated[Change, InlineEnum(Change)] = field(metadata=describe("modified | added | deleted"))
    fate: Annotated[Fate, InlineEnum(Fate)] = field(metadata=describe(
        "exported | debug-removed | debug-only | no-original | binary | too-large | not-exported | out-of-scope"))
    reason: str = ""
    findings_removed: int = field(default=0, metadata=describe("injected debug findings left out of the file"))
    how_to: str | None = field(default=None, metadata=describe("no-original: how to get the original"))


@datamodel
class PatchOut(DataModel):
    distribution: str = field(metadata=describe("the canonical (PEP 503) name"))
    version: str
    path: str | None = field(default=None, metadata=describe("the patch file; null when nothing was exported"))
    status: Annotated[Written, InlineEnum(Written)] = field(default=Written.NOTHING, metadata=describe(
        "written | unchanged | exists | nothing"))
    sha256: str | None = field(default=None, metadata=describe("hex digest of the patch file"))
    manifest_line: str | None = field(default=None, metadata=describe(
        "the [tool.driftscan.patches] line that pins this patch"))
    exported: int = 0
    left_out: int = field(default=0, metadata=describe("files left out on purpose: debug code only, out of scope"))
    not_exported: int = field(default=0, metadata=describe("files that could not be exported (exit 2)"))
    files: list[FileOut] = field(default_factory=list)
    pinned: PinResult | None = field(default=None, metadata=describe(
        "--pin: the manifest the line was written to, and how; null when not pinned"))


@datamodel
class PatchExport(DataModel):
    schema_version: Literal["1"] = SCHEMA_VERSION
    tool: Tool = field(default_factory=Tool)
    target: TargetInfo = field(default_factory=TargetInfo)
    output: str = ""
    include_debug: bool = False
    patches: list[PatchOut] = field(default_factory=list)
    errors: list[ErrorOut] = field(default_factory=list)
    generated_at: str = field(default_factory=_now)


def patch_export_schema() -> dict[str, object]:
    return PatchExport.model_json_schema()


EXIT_WRITTEN, EXIT_NOTHING, EXIT_NOT_EXPORTED = 0, 1, 2


def exit_status(result: PatchExport) -> int:
    """2 when a file could not be exported or a patch file not written (an error, a different file
    in the way); else 1 when no patch was written; else 0."""
    if result.errors or any(p.not_exported or p.status is Written.EXISTS for p in result.patches):
        return EXIT_NOT_EXPORTED
    if not any(p.status in (Written.WRITTEN, Written.UNCHANGED) for p in result.patches):
        return EXIT_NOTHING
    return EXIT_WRITTEN


# ---------------------------------------------------------------------------------- the files


@dataclass
class _File:
    out: FileOut
    listed: PatchedFile | None = None
    section: str = ""


@dataclass
class _Dist:
    dist: Distribution
    files: list[_File] = field(default_factory=list)


def _rel(dist: Distribution, path: str) -> str:
    return os.path.relpath(path, dist.site_packages).replace(os.sep, "/")


def _out_of_scope(rel: str) -> str | None:
    parts = rel.split("/")
    if parts[0] == ".." or os.path.isabs(rel):
        return "outside the install root (site-packages): a patch never holds it"
    if parts[0].endswith((".dist-info", ".egg-info")):
        return "the distribution's metadata: a patch never edits it"
    if "__pycache__" in parts or rel.endswith((".pyc", ".pyo")):
        return "bytecode: Python derives it from the source"
    return None


def _text(data: bytes, out: FileOut) -> str | None:
    """``data`` as text; None with ``out`` said when it is binary (a patch holds text)."""
    text = as_text(data)
    if text is None:
        out.fate, out.reason = Fate.BINARY, "a binary file: not exported"
    return text


def _read_current(path: str, out: FileOut) -> str | None:
    """The file's text; None with ``out`` said when it is too large, binary or cannot be read."""
    try:
        st = os.lstat(path)
        if st.st_size > FILE_MAX:
            out.fate, out.reason = Fate.TOO_LARGE, f"{st.st_size:,} bytes, more than the {FILE_MAX:,} a patch holds"
            return None
        return _text(read_regular(path, FILE_MAX, follow=False), out)
    except OSError as exc:
        out.fate, out.reason = Fate.NOT_EXPORTED, f"cannot read it: {os_error(exc)}"
        return None


class _Exporter:
    def __init__(self, target: Target, originals: PristineSet | None, include_debug: bool,
                 dists: Sequence[Distribution]) -> None:
        self.target = target
        self.originals = originals
        self.include_debug = include_debug
        self.rows: dict[str, dict[str, RecordEntry]] = {}
        root = environment_root(target) or (target.site_packages[0] if target.site_packages else "/")
        # What other modules read, for excise's keep_names: every .py of the file's distribution.
        self.names = NameIndex("", CheckpointIndex(), root, tuple(target.site_packages) or (root,))
        self._dirs: dict[str, list[Distribution]] | None = None
        self._dists = dists

    def row(self, dist: Distribution, check: FileCheck) -> RecordEntry | None:
        if check.kind is DriftKind.RECORD_REWRITTEN:
            return wheel_row(check)
        by_path = self.rows.get(dist.metadata_dir)
        if by_path is None:
            by_path = self.rows[dist.metadata_dir] = record_rows(dist)
        return by_path.get(os.path.normpath(check.path))

    def owner(self, path: str) -> Distribution | None:
        """The distribution whose RECORD lists files in the nearest directory holding ``path`` (an
        added file inside its package directories), when exactly one does; never site-packages itself."""
        if self._dirs is None:
            self._dirs = {}
            for dist in self._dists:
                tops = set()
                for entry in dist.entries:
                    parts = entry.path.split("/")
                    if len(parts) < 2 or parts[0] in ("..", "") or parts[0].endswith((".dist-info", ".data")):
                        continue
                    for n in range(1, len(parts)):
                        tops.add(os.path.join(dist.site_packages, *parts[:n]))
                for d in tops:
                    self._dirs.setdefault(d, []).append(dist)
        parent = os.path.dirname(path)
        while parent and parent not in self.target.site_packages and parent != os.path.dirname(parent):
            owners = self._dirs.get(parent)
            if owners:
                return owners[0] if len(owners) == 1 else None
            parent = os.path.dirname(parent)
        return None

    def original(self, dist: Distribution, entry: RecordEntry | None, rel: str, out: FileOut) -> str | None:
        """The verified original's text; None with ``out`` said when there is none (or it is not text)."""
        if entry is None:
            out.fate, out.reason = Fate.NO_ORIGINAL, "RECORD does not list it: no original to diff against"
            return None
        if entry.hash is None or not is_record_hash(hash_text(entry.hash)):
            out.fate, out.reason = Fate.NO_ORIGINAL, "its record gives no RECORD hash to verify an original against"
            return None
        if entry.size is not None and entry.size > FILE_MAX:
            out.fate, out.reason = Fate.TOO_LARGE, f"its original has {entry.size:,} bytes, more than {FILE_MAX:,}"
            return None
        lookup = self.originals.get(dist) if self.originals is not None else None
        copy = lookup.original(entry) if lookup is not None else None
        data = copy.read(entry, FILE_MAX) if copy is not None else None
        if data is None:
            out.fate, out.reason = Fate.NO_ORIGINAL, printable(why_no_original(lookup, entry))
            out.how_to = ways_to_original(dist, self.target.python_version, self.target.venv).text()
            return None
        return _text(data, out)

    def modified(self, dist: Distribution, check: FileCheck, rel: str) -> _File:
        out = FileOut(path=rel, change=Change.MODIFIED, fate=Fate.EXPORTED)
        entry = self.row(dist, check)
        base = self.original(dist, entry, rel, out)
        if base is None:
            return _File(out)
        ours = _read_current(check.path, out)
        if ours is None:
            return _File(out)
        wanted = ours
        if rel.endswith(".py") and not self.include_debug:
            cut = self._without_debug(dist, check.path, base, ours, out)
            if cut is None:
                return _File(out)
            wanted = cut
        if wanted == base:
            if out.findings_removed:
                out.fate, out.reason = Fate.DEBUG_ONLY, "its whole change is debug code: left out (--include-debug keeps it)"
            else:
                out.fate, out.reason = Fate.OUT_OF_SCOPE, "the same as its original"
            return _File(out)
        assert entry is not None and entry.hash is not None  # original() said so
        return self._diffed(out, PatchedFile(rel, hash_text(entry.hash)), base, wanted)

    def _without_debug(self, dist: Distribution, path: str, base: str, ours: str, out: FileOut) -> str | None:
        """``ours`` without its injected debug code, as reapply removes it; None with ``out`` said
        when that cannot be done."""
        found_ours, found_base = findings_of(ours, path), findings_of(base, path)
        if found_ours is None or found_base is None:
            out.fate = Fate.NOT_EXPORTED
            out.reason = ("the debug rules cannot inspect the " + ("file" if found_ours is None else "original")
                          + " (it does not parse, or is too large): --include-debug exports it as it is")
            return None
        added = added_line_numbers(base, ours)
        injected = [x for x in decide_origins(found_ours, found_base, added) if x.origin is Origin.INJECTED]
        if not injected:
            return ours
        cut = excise(base, ours, [(x.line, x.column) for x in injected],
                     keep_names=self.names.read_elsewhere(path, dist, names_defined(ours, added)))
        if cut.left or cut.text is None:
            out.fate = Fate.NOT_EXPORTED
            out.reason = ("debug code that cannot be removed statement by statement: "
                          + ("; ".join(f"line {line}: {why}" for line, why in cut.left) or cut.refused or "refused")
                          + " (--include-debug exports it as it is)")
            return None
        out.fate, out.findings_removed = Fate.DEBUG_REMOVED, len(injected)
        out.reason = f"debug code removed ({len(injected)} finding{'s' if len(injected) != 1 else ''})"
        return cut.text

    def _diffed(self, out: FileOut, listed: PatchedFile, old: str | None, new: str | None) -> _File:
        try:
            section = file_diff(out.path, old, new)
        except PatchTooLarge as exc:
            out.fate, out.reason = Fate.TOO_LARGE, f"{exc}: not exported"
            return _File(out)
        except PatchError as exc:
            out.fate, out.reason = Fate.NOT_EXPORTED, str(exc)
            return _File(out)
        return _File(out, listed, section)

    def added(self, dist: Distribution, check: FileCheck, rel: str) -> _File:
        out = FileOut(path=rel, change=Change.ADDED, fate=Fate.EXPORTED)
        if not check.regular_file:
            out.fate, out.reason = Fate.NOT_EXPORTED, "not a regular file (a patch holds text files)"
            return _File(out)
        text = _read_current(check.path, out)
        if text is None:
            return _File(out)
        if rel.endswith(".py") and not self.include_debug:
            found = findings_of(text, check.path)
            if found is None:
                out.fate = Fate.NOT_EXPORTED
                out.reason = "the debug rules cannot inspect it (it does not parse, or is too large): " \
                             "--include-debug exports it as it is"
                return _File(out)
            if found:  # as reapply: an added module with debug code is a debug helper
                out.fate, out.findings_removed = Fate.DEBUG_ONLY, len(found)
                out.reason = "an added file with debug code: left out (--include-debug keeps it)"
                return _File(out)
        return self._diffed(out, PatchedFile(rel, None), None, text)

    def deleted(self, dist: Distribution, check: FileCheck, rel: str) -> _File:
        out = FileOut(path=rel, change=Change.DELETED, fate=Fate.EXPORTED)
        entry = self.row(dist, check)
        base = self.original(dist, entry, rel, out)
        if base is None:
            return _File(out)
        assert entry is not None and entry.hash is not None
        return self._diffed(out, PatchedFile(rel, hash_text(entry.hash)), base, None)


_MODIFIED = (DriftKind.MODIFIED, DriftKind.RECORD_REWRITTEN)


def _collect(exporter: _Exporter, drifts: Iterable[Drift], chosen: set[str] | None) -> dict[str, _Dist]:
    by_dist: dict[str, _Dist] = {}
    seen: set[str] = set()
    for drift in file_by_file(list(drifts)):
        check = drift.check
        kind = check.kind
        if kind is DriftKind.ADDED:
            dist = exporter.owner(check.path)
        elif kind in _MODIFIED or kind is DriftKind.MISSING:
            dist = check.distribution if drift.scope is Scope.PACKAGE else None
        else:
            continue
        if dist is None or (chosen is not None and normalize_name(dist.name) not in chosen):
            continue
        if check.path in seen:  # a file both modified and record-rewritten: once
            continue
        seen.add(check.path)
        rel = _rel(dist, check.path)
        group = by_dist.setdefault(dist.metadata_dir, _Dist(dist))
        change = Change.ADDED if kind is DriftKind.ADDED else Change.DELETED if kind is DriftKind.MISSING \
            else Change.MODIFIED
        why = _out_of_scope(rel)
        if why is None and printable(rel) != rel:
            group.files.append(_File(FileOut(path=printable(rel), change=change, fate=Fate.NOT_EXPORTED,
                                             reason="its name is not UTF-8 text: a patch file cannot name it")))
        elif why is not None:
            group.files.append(_File(FileOut(path=printable(rel), change=change, fate=Fate.OUT_OF_SCOPE, reason=why)))
        elif change is Change.ADDED:
            group.files.append(exporter.added(dist, check, rel))
        elif change is Change.DELETED:
            group.files.append(exporter.deleted(dist, check, rel))
        else:
            group.files.append(exporter.modified(dist, check, rel))
    return by_dist


# ---------------------------------------------------------------------------------- writing


def _description(target: Target) -> str:
    where = target.venv or (target.site_packages[0] if target.site_packages else "an environment")
    shown = "".join(ch for ch in printable(where) if ch.isprintable())
    return f"Fixes kept from {shown} (driftscan patch export)"


def _manifest_path(path: str) -> str:
    rel = os.path.relpath(path)
    return (path if rel.startswith("..") else rel).replace(os.sep, "/")


def manifest_line(path: str, name: str, version: str, sha256: str) -> str:
    """The ``[tool.driftscan.patches]`` line that pins the patch at ``path`` (TOML basic strings)."""
    def quoted(text: str) -> str:
        return json.dumps(text, ensure_ascii=False)

    return (f"{quoted(_manifest_path(path))} = {{ distribution = {quoted(name)}, "
            f"version = {quoted('==' + version)}, sha256 = {quoted(sha256)} }}")


def _write(group: _Dist, output: str, description: str, force: bool, out: PatchOut) -> None:
    exported = sorted((f for f in group.files if f.out.fate.exported and f.listed is not None),
                      key=lambda f: f.out.path)
    if not exported:
        return
    header = PatchHeader(description, out.distribution, out.version, __version__,
                         tuple(f.listed for f in exported if f.listed is not None))
    text = render(PatchFile(header, "".join(f.section for f in exported)))
    data = text.encode("utf-8")
    path = os.path.join(output, f"{out.distribution}@{out.version}{PATCH_SUFFIX}")
    out.path, out.sha256 = path, hashlib.sha256(data).hexdigest()
    out.manifest_line = manifest_line(path, out.distribution, out.version, out.sha256)
    try:
        with open(path, "rb") as f:
            there: bytes | None = f.read(len(data) + 1)
    except FileNotFoundError:
        there = None
    if there == data:
        out.status = Written.UNCHANGED
        return
    if there is not None and not force:
        out.status = Written.EXISTS
        return
    write_atomic(path, data)
    out.status = Written.WRITTEN


def check_output(output: str, target: Target) -> str:
    """The output directory, made if missing; ConfigError when it lies inside the audited environment."""
    real = os.path.realpath(output)
    for root in filter(None, (environment_root(target), *target.site_packages)):
        if inside(os.path.realpath(root), real):
            raise ConfigError(f"{output}: inside the environment being exported ({root}); choose a directory outside it")
    try:
        os.makedirs(output, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{output}: cannot create the directory: {os_error(exc)}") from None
    if not os.path.isdir(output):
        raise ConfigError(f"{output}: not a directory")
    return output


def export_patches(output: str, target: Target, target_info: TargetInfo, distributions: Sequence[Distribution],
                   drifts: Sequence[Drift], originals: PristineSet | None, names: Sequence[str] = (), *,
                   include_debug: bool = False, force: bool = False, pin: str | None = None) -> PatchExport:
    """Write ``output/<dist>@<version>.patch`` for each distribution (those ``names``, all when none)
    whose package drift can be exported, and say every file's fate; ``pin``: a manifest file each
    patch's line is written into (patches/pin.py). ConfigError for a name not installed."""
    installed = {normalize_name(d.name) for d in distributions}
    chosen = {normalize_name(n) for n in names} or None
    if chosen:
        unknown = sorted(chosen - installed)
        if unknown:
            raise ConfigError(f"not installed in this environment: {', '.join(unknown)}")
    check_output(output, target)
    exporter = _Exporter(target, originals, include_debug, distributions)
    result = PatchExport(target=target_info, output=output, include_debug=include_debug)
    description = _description(target)
    for group in sorted(_collect(exporter, drifts, chosen).values(), key=lambda g: normalize_name(g.dist.name)):
        out = PatchOut(distribution=normalize_name(group.dist.name), version=group.dist.version,
                       files=sorted((f.out for f in group.files), key=lambda f: f.path))
        out.exported = sum(f.fate.exported for f in out.files)
        out.not_exported = sum(f.fate.failed for f in out.files)
        out.left_out = len(out.files) - out.exported - out.not_exported
        try:
            _write(group, output, description, force, out)
            if pin is not None and out.path and out.sha256 and out.status in (Written.WRITTEN, Written.UNCHANGED):
                out.pinned = pin_patch(pin, out.path, out.distribution, out.version, out.sha256)
        except ConfigError as exc:  # the patch is written; its line is not
            result.errors.append(ErrorOut(path=pin or "", message=f"{out.distribution}: not pinned: {exc}"))
        except PatchFormatError as exc:  # a version or name no patch file can carry
            result.errors.append(ErrorOut(path=out.distribution, message=f"not written: {exc}"))
        except OSError as exc:
            result.errors.append(ErrorOut(path=output, message=f"not written: {os_error(exc)}"))
        result.patches.append(out)
    return result
