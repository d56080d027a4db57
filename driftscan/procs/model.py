"""The result of ``driftscan procs``: the processes that run an environment and the evidence that
they run code other than what is now on disk. Plain dataclasses with pydantic's model API
(``core/datamodel.py``), like the audit report; its JSON Schema is docs/procs-schema.json.

Field names are a contract: add fields, rename none.
"""

from __future__ import annotations

import enum
from dataclasses import field
from typing import Any, Final, Literal

from ..core.datamodel import DataModel, datamodel, describe

SCHEMA_VERSION: Final = "1"


class Strength(str, enum.Enum):
    """How sure a piece of evidence is that the process runs old code."""

    EXACT = "exact"  # the process holds a file that is no longer the one on disk
    LIKELY = "likely"  # files of the environment changed after the process started


class Source(str, enum.Enum):
    """Where a piece of evidence comes from."""

    RECORDER = "recorder"  # what a runtime recorder saw the process import (not built yet: never produced)
    MAPS = "maps"  # /proc/PID/maps: a mapped file deleted or replaced
    CTIME = "ctime"  # files whose ctime is after the process's start


class Tie(str, enum.Enum):
    """How a process is known to run the environment."""

    EXECUTABLE = "executable"  # argv[0] is a program of the environment (its bin/python, a console script)
    SCRIPT = "script"  # a python runs a script of the environment (argv[1])
    MODULE = "module"  # the environment's python runs ``-m MODULE``
    MAPS = "maps"  # it maps a file of the environment (an extension module, a shared library)
    NONE = "none"  # not tied (``--all``: a Python process of something else)


class Placement(str, enum.Enum):
    """What the process runs under, which says what to restart."""

    SYSTEMD = "systemd"
    SYSTEMD_USER = "systemd-user"
    DOCKER = "docker"
    PODMAN = "podman"
    CONTAINERD = "containerd"
    RAY = "ray"
    PROCESS = "process"


@datamodel
class EvidenceOut(DataModel):
    strength: Strength
    source: Source
    reason: str = field(metadata=describe("deleted | replaced | changed-after-start | recorded"))
    files: list[str] = field(default_factory=list, metadata=describe(
        "the files, absolute as this host sees them (at most 20: ``count`` says how many)"))
    count: int = field(default=0, metadata=describe("how many files the evidence has"))


@datamodel
class WhereOut(DataModel):
    placement: Placement
    unit: str | None = field(default=None, metadata=describe("the systemd unit (NAME.service)"))
    container: str | None = field(default=None, metadata=describe("the container id"))
    other_mount_namespace: bool = field(default=False, metadata=describe(
        "the process sees another mount namespace (a container): its files were read through "
        "/proc/PID/root, and only inside the environment's path"))


@datamodel
class ProcessOut(DataModel):
    pid: int
    user: str = field(metadata=describe("its real user's name, or the uid when it has none"))
    uid: int | None = None
    started: str = field(metadata=describe("the start time, UTC, ISO 8601"))
    started_at: float = field(metadata=describe("the start time, seconds since the epoch"))
    command: str = field(metadata=describe("the command line as /proc shows it (argv joined by spaces; at "
                                           "most 64 KiB read), data: never run"))
    argv: list[str] = field(default_factory=list, metadata=describe(
        "the command line's arguments, as /proc/PID/cmdline gives them (data: never run)"))
    tie: Tie
    module: str | None = field(default=None, metadata=describe("the module it runs with -m (tie: module)"))
    where: WhereOut
    stale: bool = field(metadata=describe("evidence says it may run code other than what is on disk"))
    evidence: list[EvidenceOut] = field(default_factory=list, metadata=describe("strongest first"))
    remedy: str | None = field(default=None, metadata=describe("what to restart, when stale"))
    not_checked: list[str] = field(default_factory=list, metadata=describe(
        "what could not be checked of it, and why"))


@datamodel
class HiddenOut(DataModel):
    """A Python process whose files this user may not read: whether it runs the environment is unknown."""

    pid: int
    user: str
    command: str
    reason: str


@datamodel
class ProcsSummary(DataModel):
    scanned: int = field(metadata=describe("/proc entries read"))
    running: int = field(metadata=describe("processes that run the environment"))
    stale: int
    exited: int = field(metadata=describe("processes that exited while they were read (skipped)"))
    hidden: int = field(metadata=describe("Python processes not visible to this user"))
    files_walked: int = field(metadata=describe("files of the environment whose ctime was read"))
    walk_truncated: bool = field(default=False, metadata=describe("the walk stopped at its bound"))


class CompileCache(str, enum.Enum):
    """Whose compile cache an entry belongs to."""

    VLLM = "vllm"  # vLLM's torch_compile_cache: one rank's (and model part's) compiled graph
    TRITON = "triton"  # one compiled Triton kernel (Triton's own cache, Inductor's, or vLLM's copy)


class CacheSignal(str, enum.Enum):
    """How a compile-cache entry is known to be built from other content than its file holds now."""

    DELETED = "deleted"  # a recorded source file of the environment no longer exists
    CHANGED = "changed-since-built"  # its ctime is after the entry was written: it may hold other content


@datamodel
class CompileCacheEntryOut(DataModel):
    cache: CompileCache
    path: str = field(metadata=describe("the entry's directory"))
    bytes: int = field(metadata=describe("the size of its files (symlinks counted as themselves)"))
    size_complete: bool = field(default=True, metadata=describe("false when the walk's bound cut the size short"))
    built_at: float = field(default=0.0, metadata=describe(
        "when the entry was written (its computation_graph.py or kernel metadata's mtime), seconds since the epoch"))
    signal: CacheSignal = CacheSignal.CHANGED
    files: list[str] = field(default_factory=list, metadata=describe(
        "the source files of the environment it records that are gone or changed since (at most 20)"))
    count: int = field(default=0, metadata=describe("how many such files"))
    sources: int = field(default=0, metadata=describe("how many source files of the environment it records"))
    kernel: str | None = field(default=None, metadata=describe("the Triton kernel's name"))
    remedy: str = field(default="", metadata=describe("the command that removes it (never run by driftscan)"))


@datamodel
class CompileCachesOut(DataModel):
    dirs: list[str] = field(default_factory=list, metadata=describe("the cache directories looked through"))
    entries: list[CompileCacheEntryOut] = field(default_factory=list, metadata=describe(
        "entries built from a file of the environment that is gone or changed since"))
    entries_read: int = field(default=0, metadata=describe("cache entries looked at"))
    not_checked: list[str] = field(default_factory=list, metadata=describe(
        "what the bounds or permissions left out"))


@datamodel
class ProcsReport(DataModel):
    schema_version: Literal["1"] = SCHEMA_VERSION
    environment: list[str] = field(metadata=describe("the environment's directories (prefix, site-packages)"))
    processes: list[ProcessOut] = field(default_factory=list)
    hidden: list[HiddenOut] = field(default_factory=list)
    restart: list[str] = field(default_factory=list, metadata=describe(
        "each remedy once, in the order of the processes"))
    summary: ProcsSummary
    errors: list[str] = field(default_factory=list, metadata=describe("what could not be checked"))
    compile_caches: CompileCachesOut | None = field(default=None, metadata=describe(
        "compile-cache entries (vLLM, Triton) built from files of the environment changed since; "
        "null when not looked at"))

    @property
    def stale(self) -> list[ProcessOut]:
        return [p for p in self.processes if p.stale]

    def incomplete(self) -> bool:
        return bool(self.errors or self.hidden or any(p.not_checked for p in self.processes if p.tie is not Tie.NONE))


@datamodel
class RestartOut(DataModel):
    """A process another command's result names: it runs the environment, and what to restart."""

    pid: int
    command: str = field(metadata=describe("the command line, on one line, inert, at most 200 characters"))
    where: WhereOut
    stale: bool = field(metadata=describe("evidence says it runs code other than what is on disk now"))
    evidence: str = field(metadata=describe("the evidence in a few words (procs' ``evidence`` in full), or why it "
                                            "is listed"))
    files: list[str] = field(default_factory=list, metadata=describe(
        "the files the strongest evidence names (at most 20)"))
    remedy: str = field(metadata=describe("what to restart so that it runs what is on disk"))


def procs_schema() -> dict[str, Any]:
    return ProcsReport.model_json_schema()
