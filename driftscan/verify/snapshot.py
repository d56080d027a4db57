"""Snapshots (``driftscan snapshot``) and diffs against them (``driftscan diff``).

A snapshot covers what RECORD does not: the whole venv (bin/ scripts, files pip rewrote, files
no RECORD lists) and model directories. One root is written as a plain manifest (usable as
``--manifest`` too); several roots as a bundle of manifests::

    {"bundle_version": "1", "tool": "driftscan", "created": "...",
     "roots": [{"kind": "venv" | "site-packages" | "model-dir", "manifest": {<manifest v1>}}]}
"""

from __future__ import annotations

import enum
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timezone

from ..atomic import write_atomic
from ..discover.hfcache import containment_root
from ..errors import TargetError
from ..fileio import read_regular
from ..manifest import ManifestError, build_manifest, read_manifest, write_manifest
from ..model import Area, FileCheck, Problem
from ..paths import printable
from .tree import ModelDirResult, verify_model_dir
from .env.ownership import Ownership, bytecode_source

BUNDLE_VERSION = "1"
MAX_BUNDLE = 1 << 31
class RootKind(str, enum.Enum):
    """What a snapshot root is: how ``diff`` compares it (environment roots get audit's kinds)."""

    VENV = "venv"
    SITE_PACKAGES = "site-packages"
    MODEL_DIR = "model-dir"


KINDS = tuple(k.value for k in RootKind)


@dataclass(frozen=True)
class Root:
    kind: RootKind
    path: str


def take_snapshot(roots: list[Root], output: str, *, jobs: int = 2,
                  progress: Callable[[int, int], None] | None = None) -> list[Problem]:
    """Hash every file under each root (xxh3-128) and write the snapshot atomically."""
    problems: list[Problem] = []

    def entries(root: Root):
        # Symlinks out of the root (a hub snapshot's: out of its repository) are recorded by
        # target only: a snapshot must not carry a copy of a file the tree merely points at.
        return build_manifest(root.path, jobs=jobs, progress=progress, embed_code=root.kind is RootKind.MODEL_DIR,
                              on_error=problems.append, contain=containment_root(root.path))

    if len(roots) == 1:
        write_manifest(roots[0].path, entries(roots[0]), output)
        return problems
    parts = []
    with tempfile.TemporaryDirectory(prefix="driftscan-snapshot-") as tmp:
        for n, root in enumerate(roots):
            part = os.path.join(tmp, f"{n}.json")
            write_manifest(root.path, entries(root), part)
            with open(part, encoding="utf-8") as f:  # valid JSON already: spliced in as written
                parts.append(f'{{"kind": {json.dumps(root.kind.value)}, "manifest": {f.read().strip()}}}')
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    text = (f'{{"bundle_version": {json.dumps(BUNDLE_VERSION)}, "created": {json.dumps(created)},\n'
            f'"roots": [\n' + ",\n".join(parts) + '\n], "tool": "driftscan"}\n')
    write_atomic(output, text, mode=0o644)
    return problems


def load_snapshot(path: str, workdir: str) -> list[tuple[Root, str]]:
    """The roots of a snapshot, each with the path of its single manifest (bundles are split
    into ``workdir``). Raises ManifestError with every problem found."""
    try:
        doc = json.loads(read_regular(path, MAX_BUNDLE, what="snapshot"))
    except OSError as exc:
        raise ManifestError(path, [f"cannot read: {exc.strerror or exc}"]) from None
    except RecursionError:
        raise ManifestError(path, ["not valid JSON: nested too deeply"]) from None
    except ValueError as exc:  # UnicodeDecodeError included
        raise ManifestError(path, [f"not valid JSON: {exc}"]) from None
    if isinstance(doc, dict) and "manifest_version" in doc:
        manifest = read_manifest(path, doc)  # kept: the diff asks for it again
        kind = RootKind.VENV if os.path.isfile(os.path.join(manifest.root, "pyvenv.cfg")) else RootKind.MODEL_DIR
        return [(Root(kind, manifest.root), path)]
    if not (isinstance(doc, dict) and doc.get("bundle_version") == BUNDLE_VERSION and isinstance(doc.get("roots"), list)):
        raise ManifestError(path, ["neither a driftscan manifest nor a snapshot bundle"])
    out = []
    for n, item in enumerate(doc["roots"]):
        where = f"{path} roots[{n}]"
        if not isinstance(item, dict) or item.get("kind") not in KINDS:
            raise ManifestError(where, [f"not an object with a kind of {', '.join(KINDS)}"])
        part = os.path.join(workdir, f"{n}.json")
        try:
            with open(part, "w", encoding="utf-8") as f:
                json.dump(item.get("manifest"), f)
            manifest = read_manifest(part)
        except RecursionError:
            raise ManifestError(where, ["nested too deeply"]) from None
        except ManifestError as exc:  # named by where it is in the snapshot, not by the split-off file
            raise ManifestError(where, exc.issues) from None
        out.append((Root(RootKind(item["kind"]), manifest.root), part))
    return out


def attach_ownership(checks: tuple[FileCheck, ...], own: Ownership, site_packages: tuple[str, ...]) -> list[FileCheck]:
    """Venv roots: files RECORD lists become package drifts of their distribution, the rest
    environment drifts; bytecode derived from a source file is not drift (Python rewrites it)."""
    out = []
    for check in checks:
        source = bytecode_source(check.path)
        if source is not None and (source in own.owners or os.path.lexists(source)):
            continue
        owners = own.owners.get(check.path) or []
        dist = owners[0][0] if owners else None
        root = next((s for s in site_packages if check.path.startswith(s + os.sep)), check.root)
        out.append(replace(check, area=Area.PYTHON, distribution=dist, root=root, remedy_hint=None))
    return out


def diff_root(root: Root, manifest_path: str, *, jobs: int, deep: bool = False, progress=None) -> ModelDirResult:
    """Compare one root with its manifest. Large files are compared by size and mtime unless deep."""
    if not os.path.isdir(root.path):
        raise TargetError(f"{printable(root.path)}: recorded in the snapshot but not a directory now")
    return verify_model_dir(root.path, manifest=manifest_path, jobs=jobs, progress=progress, hf_cache="",
                            deep=deep)
