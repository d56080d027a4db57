"""Frozen values that flow through the pipeline: discover → verify → inspect → classify.

Only plain data lives here; behaviour belongs to the layer that produces it. The pydantic
models at the edge (``report.py``) are built from these.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from array import array
from collections.abc import Iterable, Iterator, Sequence, Set as AbstractSet
from typing import Any, NamedTuple, TypedDict, overload


class DriftKind(str, enum.Enum):
    MODIFIED = "modified"
    MISSING = "missing"
    ADDED = "added"
    TYPE_CHANGED = "type-changed"
    ORPHANED_METADATA = "orphaned-metadata"
    CLOBBERED = "clobbered"
    ORPHANED_BYTECODE = "orphaned-bytecode"
    DEBUG_ARTIFACTS = "debug-artifacts"
    STALE_METADATA = "stale-metadata"  # a model file newer than its download metadata, content unchecked
    CORRUPT = "corrupt"  # present but unreadable as what it claims to be (a safetensors header, an index)
    HEAD_MOVED = "head-moved"  # an editable install's repository is no longer at the recorded commit
    CACHE_MODIFIED = "cache-modified"  # an archive of uv's cache whose files differ from its own RECORD
    # Files matching a dump pattern that are older than the code writing them, newer than what the
    # tree cannot backdate (lint/drifts.py): listed for review, never offered for deletion.
    POSSIBLE_DEBUG_ARTIFACTS = "possible-debug-artifacts"
    RESTORED = "restored"  # diff: differs from the snapshot, and matches RECORD again (back to pristine)
    # A directory that is gone with the many files a RECORD lists under it (a deleted ``torch/``):
    # one drift, its count and the first of its files in ``expected`` (environment/records.py).
    MISSING_DIRECTORY = "missing-directory"
    MISSING_FILES = "missing-files"  # as many missing from one directory that is still there
    # A file whose bytes are exactly what its wheel ships while the wheel's own RECORD row (copied
    # into the installed RECORD) is wrong: upstream's mistake, not the user's; informational
    # (pristine/wheel.py decides it, only with the wheel at hand).
    UPSTREAM_RECORD_MISMATCH = "upstream-record-mismatch"
    # A file no RECORD lists that Python runs at every start of the environment's interpreter: a
    # ``.pth`` in site-packages with a line site.py executes, a sitecustomize or usercustomize
    # module (environment/startup.py).
    STARTUP_CODE = "startup-code"
    # A ``__pycache__`` file Python runs instead of a modified ``.py`` because its header still
    # matches the source (an edit within the same second that kept the size), compiled from other
    # content than the source has (environment/bytecode.py).
    STALE_BYTECODE = "stale-bytecode"
    # A file whose installed RECORD row differs from the row of the wheel it was installed from
    # (proven by a digest from outside the tree: a lockfile or direct_url.json), or a row added or
    # removed against that wheel: the file and its record were both changed (provenance/).
    RECORD_REWRITTEN = "record-rewritten"
    # A distribution whose installed version or source is not what a lockfile pins for this
    # environment, one the lock does not have, or one it requires that is not installed.
    LOCK_MISMATCH = "lock-mismatch"
    # A package file whose content is what ``driftscan patch apply`` wrote from the team's patch (the
    # patch and the sha256 it wrote are in its record, reinstall/patchledger.py): the drift chosen,
    # informational; an edit since is drift again.
    PATCHED = "patched"


class Scope(str, enum.Enum):
    PACKAGE = "package"
    ENVIRONMENT = "environment"
    DATA = "data"
    SOURCE = "source"
    EXTERNAL = "external"


class Severity(str, enum.Enum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"

    @property
    def rank(self) -> int:
        return {"low": 1, "medium": 2, "high": 3}[self.value]


class Origin(str, enum.Enum):
    """Whether a debug finding in a drifted file is what drifted, decided against its verified original."""

    INJECTED = "injected"  # not in the original
    UPSTREAM = "upstream"  # the original has the same finding (rule code and normalised source line)


class SourceKind(str, enum.Enum):
    """Where the verified original of a package file was read from (``driftscan.pristine``)."""

    DIRECT_URL = "direct_url"
    WHEELS = "wheels"
    UV_CACHE = "uv-cache"
    PIP_CACHE = "pip-cache"
    FETCH = "fetch"
    KEPT = "kept"  # driftscan's own store of originals verified before (a checkpoint, a reapply)
    BACKUP = "backup"  # a backup beside the edited file (x.bak, x.orig, x~) that matches RECORD
    # Other names of the same members (enum aliases: never listed, never a new value).
    WHEELHOUSE = "wheels"
    UV_ARCHIVE = "uv-cache"

    @property
    def label(self) -> str:
        """How a reason names the source."""
        return {"direct_url": "direct_url.json's wheel", "wheels": "--wheels", "uv-cache": "uv's cache",
                "pip-cache": "pip's cache", "fetch": "--fetch",
                "kept": "driftscan's kept originals", "backup": "backups beside the files"}[self.value]


class Area(str, enum.Enum):
    """Where a drifted file lives; decides which layers look at it and its scope."""

    PYTHON = "python"  # an environment (site-packages, bin/, include/)
    MODEL = "model"  # a model directory
    SOURCE = "source"  # an editable install's source tree
    EXTERNAL = "external"  # files debug code wrote elsewhere (dumps)


class TargetKind(str, enum.Enum):
    """How the environment to audit was named."""

    VENV = "venv"  # a directory with pyvenv.cfg
    PREFIX = "prefix"  # an installation prefix without pyvenv.cfg
    SITE_PACKAGES = "site-packages"  # bare directories, no prefix around them
    INTERPRETER = "interpreter"  # the interpreter driftscan runs in
    NONE = "none"  # no environment at all (model directories only)


class MetadataKind(str, enum.Enum):
    DIST_INFO = "dist-info"  # a wheel install: RECORD lists every file
    EGG_INFO = "egg-info"  # setup.py install / distutils: installed-files.txt at best
    EGG_LINK = "egg-link"  # a legacy develop install: a link file standing in for metadata
    CONDA = "conda"  # a conda-meta/*.json package record (conda, mamba, micromamba, pixi)
    DPKG = "dpkg"  # a Debian package: dpkg's info/<pkg>.list and .md5sums


class LayoutKind(str, enum.Enum):
    """What a model directory's provenance is read from."""

    HF_LOCAL_DIR = "hf-local-dir"  # hf download --local-dir: .cache/huggingface/download/*.metadata
    HF_CACHE_REPO = "hf-cache-repo"  # a Hugging Face hub cache repository (snapshots/ and blobs/)
    GIT = "git"  # a git clone (git-lfs pointers resolved through the index)
    MANIFEST = "manifest"  # a driftscan manifest (snapshot) saved beside it or named by --manifest
    UNKNOWN = "unknown"  # none of these: nothing to check against


# Hash and RecordEntry are NamedTuples, not dataclasses: a venv has tens of thousands of RECORD
# rows, and a tuple is built several times faster and takes less memory than a frozen dataclass.
class Hash(NamedTuple):
    """A RECORD hash: the algorithm named in the row and the digest it promises."""

    algorithm: str
    digest: bytes
    encoding: str = "base64"  # "hex" for Debian-style rows

    def __str__(self) -> str:
        return f"{self.algorithm}={self.digest.hex()}"


class RecordEntry(NamedTuple):
    path: str  # as written in RECORD, "/"-separated, relative to site-packages
    hash: Hash | None
    size: int | None
    line: int


_new_tuple = tuple.__new__
_NO_HASH, _SHA256, _OTHER_HASH = 0, 1, 2  # RecordRows.kinds
_DIGEST = 32  # bytes of a sha256 digest: the width of RecordRows.digests
_NO_SIZE = (1 << 64) - 1  # RecordRows.sizes: the row gives no size
_ODD_SIZE = (1 << 64) - 2  # RecordRows.sizes: a size no unsigned 64-bit column holds, in ``odd_sizes``


class RecordRows(Sequence["RecordEntry"]):
    """The rows of one RECORD, column by column: what a tuple of ``RecordEntry`` holds, in less
    memory (a venv's 40,000 rows: ~15 MB as namedtuples, a Hash and a digest bytes each; ~6 MB
    here, two thirds of it the path strings). ``rows[i]`` and iteration give ``RecordEntry``
    values made on demand; the columns are for the loops that run once per row of every audit.

    ``paths`` (the RECORD's own strings), ``sizes`` (2**64 - 1: none; 2**64 - 2: in ``odd_sizes``),
    ``lines``, ``kinds`` (per row: 0 no hash, 1 a sha256 digest at ``32 * i`` in ``digests``,
    2 another hash, in ``other``).
    Built by appending, then ``freeze()``-d (the digests as one bytes value, sliced without a
    copy); not changed once handed over."""

    __slots__ = ("paths", "digests", "sizes", "lines", "kinds", "other", "odd_sizes")

    def __init__(self, entries: Iterable[RecordEntry] = ()) -> None:
        self.paths: list[str] = []
        self.digests: bytes | bytearray = bytearray()
        self.sizes = array("Q")
        self.lines = array("q")
        self.kinds: bytes | bytearray = bytearray()
        self.other: dict[int, Hash] = {}
        self.odd_sizes: dict[int, int] = {}  # row → a size out of the column's range (a hostile record's)
        for entry in entries:
            self.append(entry)
        self.freeze()

    def freeze(self) -> RecordRows:
        """Done appending: the byte columns become bytes (no spare capacity; slices are bytes)."""
        if type(self.digests) is not bytes:
            self.digests = bytes(self.digests)
            self.kinds = bytes(self.kinds)
        return self

    @classmethod
    def of(cls, entries: Iterable[RecordEntry]) -> RecordRows:
        """``entries`` itself when it is one already, else its rows copied into one."""
        return entries if isinstance(entries, RecordRows) else cls(entries)

    # -- building --------------------------------------------------------------------------
    def append_sha256(self, path: str, digest: bytes, size: int | None, line: int) -> None:
        """The common row (``digest``: 32 bytes; ``size``: None or 0 <= size < 2**64 - 2), without a
        RecordEntry or a Hash."""
        digests, kinds = self._thaw()
        self.paths.append(path)
        digests += digest
        self.sizes.append(_NO_SIZE if size is None else size)
        self.lines.append(line)
        kinds.append(_SHA256)

    def append_bare(self, path: str, line: int) -> None:
        """A row with neither hash nor size (a directory, bytecode, RECORD itself)."""
        digests, kinds = self._thaw()
        self.paths.append(path)
        digests += bytes(_DIGEST)
        self.sizes.append(_NO_SIZE)
        self.lines.append(line)
        kinds.append(_NO_HASH)

    def _thaw(self) -> tuple[bytearray, bytearray]:
        """The byte columns, appendable."""
        digests, kinds = self.digests, self.kinds
        if isinstance(digests, bytearray) and isinstance(kinds, bytearray):
            return digests, kinds
        # Appending after freeze(): rare (tests, a few rows).
        self.digests, self.kinds = digests, kinds = bytearray(digests), bytearray(kinds)
        return digests, kinds

    def append(self, entry: RecordEntry) -> None:
        path, digest, size, line = entry
        plain_size = size is None or type(size) is int and 0 <= size < _ODD_SIZE
        if plain_size and digest is not None and digest.algorithm == "sha256" and digest.encoding == "base64" \
                and type(digest.digest) is bytes and len(digest.digest) == _DIGEST:
            self.append_sha256(path, digest.digest, size, line)
            return
        self.append_bare(path, line)
        if size is not None:
            if plain_size:
                self.sizes[-1] = size
            else:
                self.sizes[-1] = _ODD_SIZE
                self.odd_sizes[len(self.paths) - 1] = size
        if digest is not None:
            _, kinds = self._thaw()  # thawed by append_bare: the same column
            kinds[-1] = _OTHER_HASH
            self.other[len(self.paths) - 1] = digest

    # -- columns ---------------------------------------------------------------------------
    def hash(self, i: int) -> Hash | None:
        kind = self.kinds[i]
        if kind == _SHA256:
            return _new_tuple(Hash, ("sha256", self.digest(i), "base64"))
        return self.other[i] if kind else None

    def digest(self, i: int) -> bytes:
        """Row ``i``'s sha256 digest (kind 1 rows only)."""
        digest = self.digests[_DIGEST * i:_DIGEST * (i + 1)]
        return digest if type(digest) is bytes else bytes(digest)

    def size(self, i: int) -> int | None:
        size = self.sizes[i]
        return size if size < _ODD_SIZE else None if size == _NO_SIZE else self.odd_sizes[i]

    # -- the tuple of RecordEntry it stands for ----------------------------------------------
    def __len__(self) -> int:
        return len(self.paths)

    def entry(self, i: int) -> RecordEntry:
        """Row ``i`` (0 <= i < len) as a RecordEntry: ``rows[i]`` without its checks, for the hot loops."""
        kind = self.kinds[i]
        if kind == _SHA256:
            digest = self.digests[_DIGEST * i:_DIGEST * (i + 1)]
            hash_: Hash | None = _new_tuple(Hash, ("sha256", digest if type(digest) is bytes else bytes(digest),
                                                    "base64"))
        else:
            hash_ = self.other[i] if kind else None
        size = self.sizes[i]
        return _new_tuple(RecordEntry, (self.paths[i], hash_, size if size < _ODD_SIZE else
                                        None if size == _NO_SIZE else self.odd_sizes[i], self.lines[i]))

    @overload
    def __getitem__(self, i: int) -> RecordEntry: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[RecordEntry, ...]: ...

    def __getitem__(self, i: int | slice) -> RecordEntry | tuple[RecordEntry, ...]:
        if isinstance(i, slice):
            return tuple(self.entry(k) for k in range(*i.indices(len(self.paths))))
        if i < 0:
            i += len(self.paths)
        if not 0 <= i < len(self.paths):
            raise IndexError(i)
        return self.entry(i)

    def __iter__(self) -> Iterator[RecordEntry]:
        other, digest_of, odd_sizes = self.other, self.digest, self.odd_sizes
        for i, (path, size, line, kind) in enumerate(zip(self.paths, self.sizes, self.lines, self.kinds)):
            if kind == _SHA256:
                digest: Hash | None = _new_tuple(Hash, ("sha256", digest_of(i), "base64"))
            else:
                digest = other[i] if kind else None
            yield _new_tuple(RecordEntry, (path, digest, size if size < _ODD_SIZE else
                                           None if size == _NO_SIZE else odd_sizes[i], line))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RecordRows):
            return (self.paths == other.paths and self.kinds == other.kinds and self.digests == other.digests
                    and self.sizes == other.sizes and self.lines == other.lines and self.other == other.other
                    and self.odd_sizes == other.odd_sizes)
        if isinstance(other, tuple):  # what Distribution.entries used to be
            return tuple(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))

    def __reduce__(self) -> tuple[type[RecordRows], tuple[tuple[RecordEntry, ...]]]:  # pickled (a fleet's report) as the rows it holds
        return RecordRows, (tuple(self),)


@dataclass(frozen=True)
class Target:
    """What to audit, resolved without running the target's interpreter."""

    kind: TargetKind
    venv: str | None
    site_packages: tuple[str, ...]
    bin_dir: str | None = None
    python_version: str | None = None
    # Other directories of the environment whose files must all be owned (include/, share/).
    extra_roots: tuple[str, ...] = ()
    # A site-packages the user named through a symlink: (the path named, the directory audited).
    named_links: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", TargetKind(self.kind))  # API callers may pass the plain string


@dataclass(frozen=True)
class Distribution:
    name: str
    version: str
    metadata_dir: str  # absolute path of the *.dist-info / *.egg-info directory
    site_packages: str
    kind: MetadataKind = MetadataKind.DIST_INFO
    installer: str | None = None
    # The RECORD rows: a RecordRows (any other sequence of RecordEntry given here becomes one).
    entries: Sequence[RecordEntry] = ()
    direct_url: dict[str, Any] | None = None
    requested: bool = False
    # Top-level import names (top_level.txt), used to claim files of unlisted egg-info dists.
    top_level: tuple[str, ...] = ()
    # A system package manager's own build or revision (conda's build string "py311h1234_0",
    # a Debian architecture "amd64"): part of what a reinstall command must name.
    build: str | None = None
    # The digest of the RECORD rows its wheel ships (formats/record.py ``shipped_rows_digest``), when
    # the rows are not at hand: a warm audit's distributions carry the one the clean index kept.
    record_digest: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", MetadataKind(self.kind))  # API callers may pass the plain string
        if type(self.entries) is not RecordRows:
            object.__setattr__(self, "entries", RecordRows.of(self.entries))

    @property
    def editable(self) -> bool:
        info = (self.direct_url or {}).get("dir_info")  # direct_url.json is the tree's: any JSON at all
        return isinstance(info, dict) and info.get("editable") is True

    @property
    def key(self) -> str:
        return f"{self.name} {self.version}"


@dataclass(frozen=True)
class Problem:
    """Something that could not be checked. The audit goes on; the report lists it."""

    path: str
    message: str


@dataclass(frozen=True)
class Unverifiable:
    distribution: str
    reason: str


@dataclass(frozen=True)
class Finding:
    """One debug-code finding in one file (produced by the inspect layer)."""

    code: str
    name: str
    severity: Severity
    line: int
    column: int
    message: str
    snippet: str = ""
    # For a dump call whose target path is known: a glob of the files it writes
    # (e.g. "/tmp/nomla_*.pt"), so the audit can look for dumps left on disk.
    artifact_pattern: str | None = None
    # None when no original was at hand to tell (driftscan.pipeline.changes decides).
    origin: Origin | None = None

    def __post_init__(self) -> None:
        if self.origin is not None and type(self.origin) is not Origin:  # API callers may pass the plain string
            object.__setattr__(self, "origin", Origin(self.origin))


@dataclass(frozen=True)
class UvCacheLink:
    """A drifted file that shares its inode with uv's cache, or is a symlink into it."""

    cache_dir: str | None  # the cache driftscan was told about or found; None: not located
    copy: str | None  # the cache's copy of this file, when found
    links: int  # st_nlink of the installed file
    symlink: bool

    def as_json(self) -> dict[str, Any]:
        return {"dir": self.cache_dir, "copy": self.copy, "links": self.links, "symlink": self.symlink}


@dataclass(frozen=True)
class DumpWriter:
    """A line of drifted code that writes dumps (a finding with an artifact pattern)."""

    path: str
    line: int
    code: str


@dataclass(frozen=True)
class DumpFiles:
    """Dump files left on disk: what a debug-artifacts drift found for one pattern."""

    pattern: str
    paths: tuple[str, ...]
    total_bytes: int
    writers: tuple[DumpWriter, ...]
    # The exact list, NUL-terminated, in driftscan's cache directory (for ``xargs -0 rm``), when
    # there are too many files to name in the remedy itself.
    list_file: str | None = None

    def as_json(self) -> dict[str, Any]:
        listed = {"list_file": self.list_file} if self.list_file else {}
        return {"pattern": self.pattern, "artifacts": list(self.paths), "count": len(self.paths),
                "bytes": self.total_bytes,
                "written_by": [{"path": w.path, "line": w.line, "code": w.code} for w in self.writers], **listed}


@dataclass(frozen=True)
class PristineRef:
    """Where the original of a drifted package file was read from (a verified copy)."""

    source: SourceKind
    path: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "source", SourceKind(self.source))  # API callers may pass the plain string

    def as_json(self) -> dict[str, str]:
        return {"source": self.source.value, "path": self.path}


class DumpWriterJson(TypedDict):
    """A line of code that writes dumps, as ``FileState.written_by`` lists it."""

    path: str
    line: int
    code: str


class ArchiveMember(TypedDict, total=False):
    """A file of one of uv's cache archives that differs from the archive's RECORD
    (``FileState.edited``)."""

    path: str  # as the archive's RECORD lists it
    kind: str  # modified | missing | type-changed
    expected: FileState
    actual: FileState
    why: str


class FileState(TypedDict, total=False):
    """What ``FileCheck.expected`` and ``FileCheck.actual`` hold: one side of a drift as the report
    shows it. A plain dict at run time (the report writes it as it is); every key a layer writes
    is named here, with its type, so a reader gets typed values (``check.actual.get("size")`` is
    ``int | None``)."""

    # any file
    type: str  # file | symlink | directory | ... (core of a type-changed drift)
    hash: str  # "<algorithm>=<hex digest>"
    hash_prefix_free: str  # the same with the environment's own path taken out (formats/prefixfree.py)
    size: int | None  # None: a git clone's entry whose size git did not give
    symlink_target: str | None  # a symlink's target (None: a snapshot's symlink entry that names none)
    target: str  # a symlink found where a file was expected, or added: where it points
    content_matches: bool  # such a symlink: whether what it resolves to has the recorded content
    nlink: int  # st_nlink, when more than one name shares the inode
    mtime_ns: int
    mtime: str  # ISO 8601 (model directories)
    mode: str  # octal permission bits (a manifest's entries)
    # content digests of model files, by provenance
    xxh3_128: str
    sha256: str
    git_blob_sha1: str
    lfs_oid: str
    blob: str  # a hub cache's blob (its etag)
    index_blob: str  # a git clone: the blob the index has
    etag: str
    commit: str | None  # the commit a file was downloaded at, or an editable install's recorded/current HEAD
    metadata_timestamp: str
    resolves_to: str  # a hub cache symlink whose blob resolves outside the repository: where
    also_linked_by: list[str]  # hub cache snapshots sharing the blob
    dangling: bool  # a hub cache symlink whose blob is gone
    git: str  # an editable install's source file as git has it
    git_status: str  # git's status letters for it
    placeholder: str  # a file conda rewrote at link time: the prefix placeholder it had
    file_mode: str  # conda's "text" | "binary" for that rewrite
    format: str  # what a corrupt file claims to be (safetensors)
    named_by: str  # the weight-map index that names a missing shard
    tensors: int  # how many tensors the index maps to it
    # directories and metadata
    files: int | list[str]  # a missing directory: how many files RECORD lists; orphaned metadata: its files
    listed: list[str]  # the first files RECORD lists under a missing directory
    record: str  # a uv cache archive's RECORD
    edited: list[ArchiveMember]  # the archive's files that differ from its RECORD
    index_entries: list[str]  # uv's index entries that point at the archive
    # stale bytecode (environment/bytecode.py)
    source: str  # the .py a pyc was compiled for
    bytecode: str  # timestamp | unchecked-hash | checked-hash (the pyc's flags, PEP 552)
    basis: str  # how it is known to be compiled from other content: record-hash | install-time | ...
    header_mtime: int  # a timestamp pyc's header: the source mtime (seconds, 32 bits) it was compiled at
    header_size: int  # and the source size
    links: int  # the most links of an edited archive file
    # dumps
    possible_artifacts: list[str]
    count: int
    bytes: int
    why: str
    written_by: list[DumpWriterJson]
    list_file: str
    recorded_by: str  # the checkpoint that recorded the dumps
    recorded_at: str
    # snapshots (diff)
    matches_record: bool  # differs from the snapshot, matches RECORD again
    rewritten_by_installer: bool
    # provenance: a RECORD row against the wheel's own (record-rewritten)
    row: str  # expected: the wheel's row "<algorithm>=<digest>"; actual: the installed RECORD's row
    row_change: str  # changed | added | removed
    wheel: str  # the wheel's file name
    wheel_sha256: str  # its digest, as the lock or direct_url.json names it
    # lockfiles (lock-mismatch)
    version: str | None  # expected: the version the lock pins (None: not in the lock); actual: installed (None: not)
    lock: str  # the lockfile
    lock_source: str  # the lock entry's source: registry, url, path, git, ...
    location: str  # that source's index URL, URL or path, as the lock writes it
    # patches (patched): the patch file that wrote it, that file's sha256, when
    patch: str
    patch_sha256: str
    applied_at: str


@dataclass(frozen=True)
class FileCheck:
    """One drifted path as verify saw it: what was expected, what is on disk."""

    kind: DriftKind
    path: str  # absolute
    root: str  # the directory ``relpath`` is relative to
    distribution: Distribution | None = None
    # What the reference promises and what is on disk, as shown in the report (size, hash, type,
    # symlink_target, ...). Later layers decide nothing on these: what they act on is typed below.
    expected: FileState = field(default_factory=lambda: FileState())
    actual: FileState = field(default_factory=lambda: FileState())
    evidence: str = ""
    findings: tuple[Finding, ...] = ()
    area: Area = Area.PYTHON
    # What changed, when the original is at hand: JSON pointer changes, or a unified diff.
    json_changes: tuple[dict[str, Any], ...] = ()
    diff: str | None = None
    # The exact way back, when the layer that found the drift knows it better than classify
    # (a git checkout, a re-download of one file at the recorded commit).
    remedy_hint: str | None = None
    uv_cache: UvCacheLink | None = None  # set by verify when the file is linked with uv's cache
    dumps: DumpFiles | None = None  # set on debug-artifacts drifts
    pristine: PristineRef | None = None  # the verified original this drift was compared with
    # A binary file compared with its original: the changed byte ranges, [start, end).
    byte_ranges: tuple[tuple[int, int], ...] = ()
    # The first lines of a file Python runs at start-up (or of a small added text file), inert
    # and bounded (environment/startup.py).
    content_preview: str | None = None

    @property
    def regular_file(self) -> bool:
        """On disk as a regular file (a drift of a symlink, directory or other type is not)."""
        return self.actual.get("type", "file") == "file"

    def observed(self) -> dict[str, Any]:
        """``actual`` with the typed observations, as the report shows them."""
        extra: dict[str, Any] = {}
        if self.dumps is not None:
            extra.update(self.dumps.as_json())
        if self.uv_cache is not None:
            extra["uv_cache"] = self.uv_cache.as_json()
        out: dict[str, Any] = dict(self.actual)
        out.update(extra)
        return out


@dataclass(frozen=True)
class Verification:
    """Everything verify learned about a target."""

    target: Target
    distributions: tuple[Distribution, ...]
    checks: tuple[FileCheck, ...]
    files_checked: int
    unverifiable: tuple[Unverifiable, ...]
    errors: tuple[Problem, ...]
    # Every path the audit compared with a reference (RECORD rows, model metadata, git).
    referenced: AbstractSet[str] = frozenset()  # a frozenset, or ownership.OwnedView (the same, compact)
    notes: tuple[Problem, ...] = ()  # what was checked against what (a virtualenv app-data image's wheel)


class Prediction(str, enum.Enum):
    """What reinstalling the owning distribution (with the environment's installer) does to a drift."""

    WIPED = "wiped"
    SURVIVES = "survives"
    MAY_SURVIVE = "may-survive"  # the worst case is survival, but driftscan could not confirm it


class Verdict(str, enum.Enum):
    """What a reinstall does to a drifted file, in the words of a plan's item and a guard's
    prediction (their JSON): a ``Prediction``, or what plan and guard make of it."""

    WIPED = "WIPED"
    SURVIVES = "SURVIVES"
    MAY_SURVIVE = "MAY SURVIVE"


@dataclass(frozen=True)
class Drift:
    """A classified drift: a FileCheck plus what a reinstall does to it."""

    check: FileCheck
    scope: Scope
    survives_reinstall: bool
    remedy: str
    evidence: str
    prediction: Prediction = Prediction.WIPED
