"""Read a conda prefix's package records (``conda-meta/*.json``) into driftscan's model.

What conda, mamba, micromamba, pixi and rattler leave in a prefix (docs/environments.md,
"conda prefixes"; checked on prefixes installed with py-rattler 0.28 and against conda's and
rattler's sources):

- ``conda-meta/<name>-<version>-<build>.json`` per package: the repodata fields (``name``,
  ``version``, ``build``, ``channel``, ``subdir``, ...), ``files`` (every installed path,
  relative to the prefix, "/"-separated) and ``paths_data`` = ``{"paths_version": 1, "paths":
  [...]}`` with per path ``_path``, ``path_type``, ``sha256`` (of the file *in the package*),
  ``size_in_bytes`` and, for a file rewritten at link time, ``prefix_placeholder`` and
  ``file_mode`` (``text`` | ``binary``). ``link`` is ``{"source": <package cache dir>,
  "type": 1 (hardlink) | 2 (softlink) | 3 (copy)}``.
- ``sha256_in_prefix`` is the hash of the file as installed. conda (4.4 on) writes it for every
  hard-linked file (equal to ``sha256``) and every file it rewrote; rattler only where it differs
  from ``sha256``: a rewritten file, and a softlink, where it is the sha256 of the link's *target
  text* (``os.readlink``), not of a file.
- ``size_in_bytes`` of a rewritten text file is the package's size in conda's records and the
  installed size in rattler's: it says nothing reliable about the file on disk, so the entry
  carries no size (the hash decides). Binary mode keeps the length, so both agree there.
- Records written before ``paths_data`` existed (conda < 4.3) have only ``files``: presence is
  all that can be checked (``CondaRecord.presence_only``). conda's own ``conda doctor`` reads
  ``files`` for missing files and ``paths_data`` (``paths_version`` 1) for altered ones.
- ``path_type``: ``hardlink`` (also for copied files), ``softlink``, ``directory`` (an empty
  directory), ``pyc_file`` (bytecode conda compiled for a noarch package),
  ``unix_python_entry_point`` (a script the installer generated, hashed as written) and the
  Windows entry points. rattler 0.28 cannot link a ``directory`` entry (it fails the install).
- noarch: python packages ship ``site-packages/...``; the record lists the installed paths
  (``lib/pythonX.Y/site-packages/...``, or the python record's ``python_site_packages_path``).
- ``conda-meta/history``: entries of ``==> date <==``, ``# cmd: <argv>``, ``+channel::dist``
  lines. conda writes its own argv (``/opt/conda/bin/conda install x``, mamba 1.x ``.../mamba``),
  libmamba (mamba 2, micromamba) ``# cmd: <argv>`` too; rattler writes an empty file; pixi writes
  ``// not relevant for pixi but for `conda run -p``` and leaves ``conda-meta/pixi`` (JSON:
  ``manifest_path``, ``environment_name``, ``pixi_version``), ``conda-meta/pixi_env_prefix``
  and ``conda-meta/.pixi-environment-fingerprint``.

The prefix is untrusted data (docs/security.md): records are read with ``fileio.read_regular``
(size-capped, never a FIFO or device, never through a symlink), a path that is absolute, holds a
``..`` part or a NUL, or leaves the prefix is a Problem and never becomes an entry, and every
record, entry and marker fails alone. No command runs; nothing outside the prefix is read.
Symlinked directories on the way to an entry are left to verify's ``Containment`` (which refuses
to read through one that leaves the prefix).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import stat
from dataclasses import dataclass, field, replace
from typing import Any

from ...fs.reader import file_type, inside, open_regular, read_regular
from ...core.values import Distribution, DriftKind, FileCheck, FileState, Hash, MetadataKind, Problem, RecordEntry, Target
from ...fs.containment import Containment
from ..dists import MetadataDir
from ..target import is_conda_prefix
from ..files import MISSING, MODIFIED, OK, TYPE_CHANGED
from .interface import Owned, Settled
from .placeholders import Placeholder, check_placeholder

INSTALLER = "conda"
TOOLS = ("conda", "mamba", "micromamba", "pixi")

# Caps. A record names each path twice (``files``, ``paths_data``), some 300 bytes a path: 32 MiB
# holds over 100,000 paths. A record is parsed whole, so a larger one is refused unread.
RECORD_LIMIT = 32 << 20
HISTORY_TAIL = 1 << 20  # only the end of the history is read: the last "# cmd:" is what counts
MARKER_LIMIT = 64 << 10  # conda-meta/pixi, conda-meta/pixi_env_prefix
MAX_ISSUES = 100  # per record, then one line with the count
MAX_FIELD = 256  # name, version and build strings

# Matched whole (fullmatch): a "$" would let a trailing newline through into a remedy.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
_VERSION = re.compile(r"[A-Za-z0-9_.+!-]+")
_BUILD = re.compile(r"[A-Za-z0-9_.+-]+")
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
# A Python distribution's metadata directory inside a conda package's paths.
_PY_META = re.compile(r"^((?:[^/]+/)*?(?:site|dist)-packages/[^/]+\.(?:dist|egg)-info)(?:/|$)")
_CMD = re.compile(r"#\s*cmd:\s*(.+)")  # conda's own parser (conda/history.py) reads it so
_LINK_TYPES = {1: "hardlink", 2: "softlink", 3: "copy"}
FILE_MODES = ("text", "binary")
PIXI_MARKERS = ("pixi", "pixi_env_prefix", ".pixi-environment-fingerprint")


@dataclass(frozen=True)
class SpecialPath:
    """An entry that is not a regular file. ``path_type`` is ``softlink`` or ``directory``.
    ``link_sha256``: for a softlink, the sha256 of its target text (``os.readlink``) when the
    record holds it (rattler's ``sha256_in_prefix``); conda records hold no such hash (their
    ``sha256`` is of the file the link points to in the package)."""

    path_type: str
    link_sha256: bytes | None = None


@dataclass(frozen=True)
class CondaRecord:
    """What a conda record says beyond the Distribution (for evidence and remedies; the paths in
    it are the tree's own words and are never read)."""

    path: str  # the record file, also the Distribution's metadata_dir
    name: str
    version: str
    build: str
    channel: str | None = None
    subdir: str | None = None
    link_type: str | None = None  # "hardlink" | "softlink" | "copy": how files came from the cache
    package_dir: str | None = None  # link.source / extracted_package_dir: the package cache copy
    python_metadata_dirs: tuple[str, ...] = ()  # absolute *.dist-info / *.egg-info it installed
    presence_only: bool = False  # no paths_data: only the ``files`` list


@dataclass(frozen=True)
class PixiEnvironment:
    """``conda-meta/pixi``: the workspace that made this environment (for ``pixi`` remedies)."""

    environment_name: str | None
    manifest_path: str | None
    pixi_version: str | None


@dataclass(frozen=True)
class CondaPrefix:
    prefix: str
    tool: str  # "conda" | "mamba" | "micromamba" | "pixi"
    distributions: tuple[Distribution, ...]
    records: dict[str, CondaRecord] = field(default_factory=dict)  # by record path (metadata_dir)
    # absolute path -> how to verify a file rewritten at link time. Every such file is here; its
    # entry's hash is sha256_in_prefix when the record has it, else None (then only this can say).
    placeholders: dict[str, Placeholder] = field(default_factory=dict)
    special: dict[str, SpecialPath] = field(default_factory=dict)  # absolute path -> softlink/directory
    problems: tuple[Problem, ...] = ()
    # Every *.dist-info / *.egg-info a conda record installed: owned by that record, whose
    # hashes are checked instead of the dist-info's RECORD.
    python_metadata_dirs: frozenset[str] = frozenset()
    pixi: PixiEnvironment | None = None
    recorded_prefix: str | None = None  # conda-meta/pixi_env_prefix: where pixi installed it


def tool_from_history(text: str) -> str | None:
    """The tool named by the last ``# cmd:`` line of a ``conda-meta/history`` text, or "pixi"
    for the history pixi writes; None when it names none of conda, mamba, micromamba, pixi."""
    if "not relevant for pixi" in text:
        return "pixi"
    last = None
    for line in text.splitlines():
        match = _CMD.match(line)
        if match:
            last = match.group(1).strip()
    if not last:
        return None
    return _tool_of_command(last.split())


def _tool_of_command(argv: list[str]) -> str | None:
    if not argv:
        return None
    exe = re.split(r"[\\/]", argv[0])[-1].lower()
    for suffix in (".exe", "-script.py", ".py"):
        exe = exe.removesuffix(suffix)
    if exe in TOOLS:
        return exe
    if exe.startswith("python") and len(argv) > 2 and argv[1] == "-m":  # python -m conda
        return _tool_of_command(argv[2:])
    if exe == "__main__":  # .../site-packages/conda/__main__.py
        parent = re.split(r"[\\/]", argv[0])[-2:-1]
        return parent[0].lower() if parent and parent[0].lower() in TOOLS else None
    return None


def read_conda_prefix(prefix: str, containment: Containment) -> CondaPrefix:
    """Every package record of the conda prefix ``prefix``, as Distributions whose entries are
    relative to the prefix. Never raises for the tree's sake: what cannot be read is a Problem."""
    prefix = os.path.abspath(prefix)
    meta = os.path.join(prefix, "conda-meta")
    reader = _PrefixReader(prefix, containment)
    why = containment.row_problem(os.path.join(meta, "history"))
    if why is None and not inside(prefix, meta):
        why = f"resolves outside the prefix (to {os.path.realpath(meta)}); not read"
    if why is not None:
        return CondaPrefix(prefix, "conda", (), problems=(Problem(meta, why),))
    try:
        with os.scandir(meta) as listing:
            names = sorted(e.name for e in listing if e.name.endswith(".json"))
    except OSError as exc:
        return CondaPrefix(prefix, "conda", (), problems=(Problem(meta, f"cannot list: {exc.strerror or exc}"),))
    for name in names:
        reader.read_record(os.path.join(meta, name))
    pixi, recorded = reader.pixi_markers(meta)
    tool = reader.history_tool(meta)
    if any(os.path.lexists(os.path.join(meta, marker)) for marker in PIXI_MARKERS):
        tool = "pixi"  # even when a marker cannot be read: only pixi writes them
    return CondaPrefix(
        prefix=prefix,
        tool=tool or "conda",
        distributions=tuple(reader.distributions),
        records=reader.records,
        placeholders=reader.placeholders,
        special=reader.special,
        problems=tuple(reader.problems),
        python_metadata_dirs=frozenset(d for r in reader.records.values() for d in r.python_metadata_dirs),
        pixi=pixi,
        recorded_prefix=recorded,
    )


def _text(value: Any) -> str | None:
    """A string field of the tree's kept as evidence: a string without NUL, of sane length."""
    return value if isinstance(value, str) and "\0" not in value and len(value) < 4096 else None


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _sha256(value: Any) -> bytes | None:
    """A record's hex sha256 as bytes; None when absent. ValueError when present but not one."""
    if value is None:
        return None
    if not isinstance(value, str) or not _SHA256.fullmatch(value):
        shown = repr(value[:80]) if isinstance(value, str) else _type_name(value)
        raise ValueError(f"not a hex sha256 but {shown}")
    return bytes.fromhex(value)


def _size(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"size_in_bytes is not a size but {value!r}"[:200])
    return value


def _safe_relpath(rel: Any) -> str | None:
    """Why a record's path may not become an entry, or None when it may."""
    if not isinstance(rel, str):
        return f"a path that is not a string but {_type_name(rel)}"
    if not rel:
        return "an empty path"
    if "\0" in rel:
        return "a path with a NUL byte"
    if rel.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", rel):
        return "an absolute path"
    parts = re.split(r"[\\/]", rel)
    if ".." in parts:
        return "a path with a '..' part"
    if all(p in ("", ".") for p in parts):
        return "a path naming the prefix itself"
    return None


class _PrefixReader:
    """Collects a prefix's records, entries and problems as they are read."""

    def __init__(self, prefix: str, containment: Containment) -> None:
        self.prefix = prefix
        self.containment = containment
        self.distributions: list[Distribution] = []
        self.records: dict[str, CondaRecord] = {}
        self.placeholders: dict[str, Placeholder] = {}
        self.special: dict[str, SpecialPath] = {}
        self.problems: list[Problem] = []

    # -- files of conda-meta --------------------------------------------------------------

    def _read(self, path: str, limit: int, what: str) -> bytes | None:
        try:
            return read_regular(path, limit, what=what, follow=False, root=self.prefix)
        except FileNotFoundError:
            return None
        except OSError as exc:
            self.problems.append(Problem(path, f"cannot read: {exc.strerror or exc}"))
            return None

    def history_tool(self, meta: str) -> str | None:
        """The tool of ``conda-meta/history``'s last ``# cmd:`` line; only its last MiB is read."""
        path = os.path.join(meta, "history")
        try:
            fd, st = open_regular(path, follow=False, root=self.prefix)
        except FileNotFoundError:
            return None
        except OSError as exc:
            self.problems.append(Problem(path, f"cannot read: {exc.strerror or exc}"))
            return None
        try:
            start = max(0, st.st_size - HISTORY_TAIL)
            data = os.pread(fd, HISTORY_TAIL, start)
        except OSError as exc:
            self.problems.append(Problem(path, f"cannot read: {exc.strerror or exc}"))
            return None
        finally:
            os.close(fd)
        if start:
            data = data.partition(b"\n")[2]  # the first line may be cut
        return tool_from_history(data.decode("utf-8", "replace"))

    def pixi_markers(self, meta: str) -> tuple[PixiEnvironment | None, str | None]:
        pixi = None
        data = self._read(os.path.join(meta, "pixi"), MARKER_LIMIT, "pixi environment file")
        if data is not None:
            try:
                loaded = json.loads(data)
            except (ValueError, RecursionError):
                loaded = None
            if not isinstance(loaded, dict):
                self.problems.append(Problem(os.path.join(meta, "pixi"), "not a JSON object: ignored"))
                loaded = {}
            pixi = PixiEnvironment(_text(loaded.get("environment_name")), _text(loaded.get("manifest_path")),
                                   _text(loaded.get("pixi_version")))
        recorded = None
        data = self._read(os.path.join(meta, "pixi_env_prefix"), MARKER_LIMIT, "pixi prefix file")
        if data is not None:
            value = data.decode("utf-8", "replace").strip()
            recorded = value if value.startswith("/") and "\n" not in value and _text(value) else None
        return pixi, recorded

    # -- one record -----------------------------------------------------------------------

    def read_record(self, path: str) -> None:
        problems: list[Problem] = []
        try:
            self._read_record(path, problems)
        except Exception as exc:  # noqa: BLE001 - one record fails alone, the audit goes on
            problems.append(Problem(path, f"cannot read: {type(exc).__name__}: {exc}"[:500]))
        if len(problems) > MAX_ISSUES:
            more = Problem(path, f"{len(problems) - MAX_ISSUES} more problems in this record")
            problems = [*problems[:MAX_ISSUES], more]
        self.problems += problems

    def _read_record(self, path: str, problems: list[Problem]) -> None:
        data = self._read(path, RECORD_LIMIT, "conda record")
        if data is None:
            return
        try:
            loaded = json.loads(data)
        except RecursionError:
            problems.append(Problem(path, "not valid JSON (nested too deep)"))
            return
        except ValueError as exc:
            problems.append(Problem(path, f"not valid JSON: {exc}"[:300]))
            return
        if not isinstance(loaded, dict):
            problems.append(Problem(path, f"not a JSON object but {_type_name(loaded)}: not read"))
            return
        ident = {}
        for key, pattern in (("name", _NAME), ("version", _VERSION), ("build", _BUILD)):
            value = loaded.get(key)
            if not isinstance(value, str) or len(value) > MAX_FIELD or not pattern.fullmatch(value):
                shown = _type_name(value) if not isinstance(value, str) else repr(value[:80])
                problems.append(Problem(path, f"its {key} is not a conda {key} ({shown}): record not read"))
                return
            ident[key] = value
        entries, presence_only = self._entries(path, loaded, problems)
        meta_dirs = sorted({os.path.join(self.prefix, *m.group(1).split("/"))
                            for e in entries if (m := _PY_META.match(e.path))})
        link = loaded.get("link")
        link_kind = link.get("type") if isinstance(link, dict) else None
        link_type = _LINK_TYPES.get(link_kind) if isinstance(link_kind, int) else None
        source = link.get("source") if isinstance(link, dict) else None
        source = source if isinstance(source, str) else loaded.get("extracted_package_dir")

        self.records[path] = CondaRecord(
            path=path, name=ident["name"], version=ident["version"], build=ident["build"],
            channel=_text(loaded.get("channel")), subdir=_text(loaded.get("subdir")), link_type=link_type,
            package_dir=_text(source), python_metadata_dirs=tuple(meta_dirs), presence_only=presence_only)
        self.distributions.append(Distribution(
            name=ident["name"], version=ident["version"], build=ident["build"], metadata_dir=path,
            site_packages=self.prefix, kind=MetadataKind.CONDA, installer=INSTALLER, entries=tuple(entries),
            requested=bool(loaded.get("requested_spec") not in (None, "", "None") or loaded.get("requested_specs"))))

    def _entries(self, path: str, loaded: dict[str, Any], problems: list[Problem]) -> tuple[list[RecordEntry], bool]:
        """The record's entries: ``paths_data.paths`` with hashes, then what only ``files``
        lists (presence). Whether the record had no usable ``paths_data`` at all."""
        entries: dict[str, RecordEntry] = {}
        paths_data = loaded.get("paths_data")
        paths: list[Any] = []
        if paths_data is not None:
            if not isinstance(paths_data, dict):
                problems.append(Problem(path, f"paths_data is not an object but {_type_name(paths_data)}: ignored"))
            elif paths_data.get("paths_version", 1) != 1:
                problems.append(Problem(path, f"paths_data has paths_version {paths_data.get('paths_version')!r}, "
                                              "not 1: ignored"))
            elif not isinstance(paths_data.get("paths", []), list):
                problems.append(Problem(path, "paths_data.paths is not a list: ignored"))
            else:
                paths = paths_data.get("paths", [])
        for i, item in enumerate(paths):
            where = f"paths_data.paths[{i}]"
            if not isinstance(item, dict):
                problems.append(Problem(path, f"{where} is not an object but {_type_name(item)}: ignored"))
                continue
            entry = self._entry(path, where, item, i + 1, problems)
            if entry is None:
                continue
            kept = entries.get(entry.path)
            if kept is not None and kept[1:3] != entry[1:3]:
                problems.append(Problem(path, f"{where}: {entry.path} is listed twice with different hashes or sizes; "
                                              "its content is not checked"))
                entries[entry.path] = RecordEntry(entry.path, None, None, kept.line)
            elif kept is None:
                entries[entry.path] = entry
        files = loaded.get("files")
        if files is not None and not isinstance(files, list):
            problems.append(Problem(path, f"files is not a list but {_type_name(files)}: ignored"))
            files = None
        offset = len(paths)
        for i, rel in enumerate(files or ()):
            why = _safe_relpath(rel)
            if why is not None:
                problems.append(Problem(path, f"files[{i}]: {why} ({str(rel)[:200]!r}); not checked"))
                continue
            if not self._inside(rel):
                problems.append(Problem(path, f"files[{i}]: a path outside the prefix ({rel[:200]!r}); not checked"))
            elif rel not in entries:
                entries[rel] = RecordEntry(rel, None, None, offset + i + 1)
        return list(entries.values()), not paths and bool(files)

    def _inside(self, rel: str) -> bool:
        full = os.path.normpath(os.path.join(self.prefix, rel))
        return full.startswith(self.prefix.rstrip(os.sep) + os.sep)

    def _entry(self, path: str, where: str, item: dict[str, Any], line: int, problems: list[Problem]) -> RecordEntry | None:
        value = item.get("_path")
        why = _safe_relpath(value)
        if why is not None or not isinstance(value, str) or not self._inside(value):
            problems.append(Problem(path, f"{where}: {why or 'a path outside the prefix'} ({str(value)[:200]!r}); "
                                          "never read"))
            return None
        rel = value
        full = os.path.normpath(os.path.join(self.prefix, rel))
        path_type = item.get("path_type", "hardlink")
        if not isinstance(path_type, str):
            problems.append(Problem(path, f"{where}: path_type is not a string but {_type_name(path_type)}; "
                                          "only its presence is checked"))
            return RecordEntry(rel, None, None, line)
        try:
            sha256 = _sha256(item.get("sha256"))
            in_prefix = _sha256(item.get("sha256_in_prefix"))
            size = _size(item.get("size_in_bytes"))
        except ValueError as exc:
            problems.append(Problem(path, f"{where} ({rel}): {exc}; only its presence is checked"))
            return RecordEntry(rel, None, None, line)
        if path_type in ("softlink", "directory"):
            self.special[full] = SpecialPath(path_type, in_prefix if path_type == "softlink" else None)
            return RecordEntry(rel, None, None, line)
        placeholder = item.get("prefix_placeholder")
        if placeholder is not None:
            mode = item.get("file_mode", "text")
            if not isinstance(placeholder, str) or not placeholder or "\0" in placeholder or mode not in FILE_MODES:
                problems.append(Problem(path, f"{where} ({rel}): prefix_placeholder {str(placeholder)[:80]!r} with "
                                              f"file_mode {str(mode)[:20]!r} cannot be substituted back; "
                                              "only its presence is checked"))
                return RecordEntry(rel, None, None, line)
            self.placeholders[full] = Placeholder(placeholder, mode, sha256, size if mode == "binary" else None)
            return RecordEntry(rel, Hash("sha256", in_prefix, "hex") if in_prefix else None, None, line)
        digest = in_prefix or sha256
        return RecordEntry(rel, Hash("sha256", digest, "hex") if digest else None, size, line)


# --- the manager interface (registry.py, interface.py) -----------------------------------------

def read(root: str, target: Target, containment: Containment) -> Owned:
    """The conda records of the prefix ``root``, as distributions whose hashes the RECORD pass checks."""
    owned = Owned()
    if not is_conda_prefix(root):
        return owned
    conda = read_conda_prefix(root, containment)
    owned.records = conda
    owned.problems += conda.problems
    owned.replaced |= set(conda.python_metadata_dirs)
    for dist in conda.distributions:
        dist = replace(dist, installer=conda.tool)
        owned.metadirs.append(MetadataDir(dist.metadata_dir, root, dist))
        owned.evidence[dist.metadata_dir] = f"sha256 in the conda record {dist.metadata_dir}"
    return owned


def installer(dists: list[Distribution]) -> str:
    return next((d.installer for d in dists if d.installer), INSTALLER)


_CONDA_TOOLS = ("conda", "mamba", "micromamba")


def reinstall_command(dists: list[Distribution], prefix: str | None) -> str:
    """The tool that made the prefix reinstalls exactly these builds (names, versions and builds
    were validated when read, and are quoted again here)."""
    tool = next((d.installer for d in dists if d.installer in (*_CONDA_TOOLS, "pixi")), INSTALLER)
    if tool == "pixi":  # pixi reinstalls from its lock file, by name (run in the workspace)
        return "pixi reinstall " + " ".join(shlex.quote(d.name) for d in dists)
    specs = " ".join(shlex.quote(f"{d.name}={d.version}={d.build}" if d.build else f"{d.name}={d.version}")
                     for d in dists)
    where = f" -p {shlex.quote(prefix)}" if prefix else ""
    return f"{tool} install{where} --force-reinstall --no-deps {specs}"


_KINDS = {MODIFIED: DriftKind.MODIFIED, MISSING: DriftKind.MISSING, TYPE_CHANGED: DriftKind.TYPE_CHANGED}


def settle(checks: list[FileCheck], owned: Owned) -> Settled:
    """Files rewritten at link time judged by substituting the placeholder back (the RECORD
    pass's hash is of the package's bytes or of the prefix they were linked at), softlinks and
    directories as such."""
    conda = owned.records
    if not isinstance(conda, CondaPrefix):
        return Settled([], set())
    rows = {os.path.normpath(os.path.join(conda.prefix, e.path)): (d, e)
            for d in (md.distribution for md in owned.metadirs if md.distribution) for e in d.entries}
    judged: set[str] = set()
    problems: list[Problem] = []
    out = _placeholder_files(conda, rows, judged, problems)
    out += _special_paths(conda, rows, checks, judged, problems)
    return Settled(out, judged, problems)


def _placeholder_files(conda: CondaPrefix, rows: dict[str, tuple[Distribution, RecordEntry]], judged: set[str],
                       problems: list[Problem]) -> list[FileCheck]:
    also = (conda.recorded_prefix,) if conda.recorded_prefix else ()
    out = []
    for path, ph in sorted(conda.placeholders.items()):
        if path not in rows:
            continue
        dist, entry = rows[path]
        result = check_placeholder(path, entry, ph, conda.prefix, also)
        judged.add(path)
        if result.status == OK:
            continue
        kind = _KINDS.get(result.status)
        if kind is None:  # could not be read
            problems.append(Problem(path, result.detail))
            continue
        out.append(FileCheck(kind, path, conda.prefix, dist,
                             {"type": "file", "placeholder": ph.placeholder, "file_mode": ph.file_mode},
                             {"type": "file"}, f"{result.detail} (a file conda rewrote at link time, checked by "
                                               "substituting the placeholder back)"))
    return out


def _special_paths(conda: CondaPrefix, rows: dict[str, tuple[Distribution, RecordEntry]], checks: list[FileCheck],
                   judged: set[str], problems: list[Problem]) -> list[FileCheck]:
    """Softlinks and directories a conda record lists: checked as such (the RECORD pass, which
    knows files only, saw a link where its row has no type), the link's text against its sha256
    when the record has one."""
    flagged = {c.path: c for c in checks}
    out = []
    for path, special in sorted(conda.special.items()):
        prior = flagged.get(path)
        if prior is not None and prior.kind is DriftKind.MISSING:
            continue  # reported as it is
        judged.add(path)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue  # the RECORD pass reported it missing (a presence-only row)
        except OSError as exc:
            problems.append(Problem(path, f"cannot stat: {exc.strerror or exc}"))
            continue
        want = stat.S_ISLNK if special.path_type == "softlink" else stat.S_ISDIR
        kind, why = None, ""
        actual: FileState = {"type": file_type(st.st_mode)}
        if not want(st.st_mode):
            kind, why = DriftKind.TYPE_CHANGED, f"the package installs a {special.path_type} here"
        elif special.path_type == "softlink" and special.link_sha256 is not None:
            target = os.readlink(path)
            actual["symlink_target"] = target
            if hashlib.sha256(os.fsencode(target)).digest() != special.link_sha256:
                kind, why = DriftKind.MODIFIED, "the symlink points elsewhere than the package's"
        if kind is not None:
            out.append(FileCheck(kind, path, conda.prefix, rows[path][0] if path in rows else None,
                                 {"type": special.path_type}, actual, f"{why} (conda record)"))
    return out
