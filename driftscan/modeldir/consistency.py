"""Checks that need no provenance: weight maps naming absent shards, unreadable safetensors headers.

Both catch what users hit in practice — a partial download or a deleted shard (vLLM fails at
load time, minutes in), a truncated copy — and both read almost nothing: an index is a small
JSON file, and a safetensors header is 8 bytes of length plus the header JSON; tensor data is
never read.
"""

from __future__ import annotations

import errno
import json
import os
import posixpath
import struct

from ..fs.reader import read_regular
from ..formats.manifest import walk_tree
from ..core.values import Area, DriftKind, FileCheck, Problem
from ..fs.reader import os_error
from .check import Context
from .hashing import Meter, open_readonly
from ..formats.lfs import LFS_SPEC

MAX_HEADER = 100_000_000  # safetensors refuses larger headers
# Real headers are a few MB at most; a directory of sparse files each claiming a 100 MB header
# must not make the default audit read gigabytes: past this total, headers are not read.
HEADER_BUDGET = 1 << 30
INDEX_SUFFIX = ".index.json"


def _read_exact(fd: int, size: int, offset: int) -> bytes:
    chunks = []
    while size > 0:
        chunk = os.pread(fd, min(size, 1 << 24), offset)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def safetensors_problem(path: str, meter: Meter, budget: list[int] | None = None) -> str | None:
    """Why ``path`` is not a readable safetensors file, or None. Reads the header only; with
    ``budget`` ([bytes left]) an OSError when the header is larger than what is left."""
    fd = open_readonly(path)
    try:
        size = os.fstat(fd).st_size
        head = _read_exact(fd, min(size, 8), 0)
        meter.note_read(len(head))
        if head.startswith(LFS_SPEC[:8]) and LFS_SPEC in _read_exact(fd, len(LFS_SPEC), 0):
            return "a git LFS pointer, not tensor data: the content was never fetched (git lfs pull)"
        if size < 8:
            return f"{size} bytes: too short for the 8-byte safetensors header length"
        (length,) = struct.unpack("<Q", head)
        if length > size - 8:
            return f"header length {length} exceeds the file size {size} (truncated or not safetensors)"
        if length > MAX_HEADER:
            return f"header length {length} exceeds safetensors' {MAX_HEADER}-byte limit"
        if budget is not None:
            if length > budget[0]:
                raise OSError(errno.EFBIG, f"a {length}-byte header, not read: the safetensors headers of this"
                              f" directory already took {HEADER_BUDGET - budget[0]} bytes")
            budget[0] -= length
        raw = _read_exact(fd, length, 8)
        meter.note_read(len(raw))
    finally:
        os.close(fd)
    try:
        header = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        return f"header is not valid JSON: {exc}"
    if not isinstance(header, dict):
        return "header is not a JSON object"
    end = 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        offsets = info.get("data_offsets") if isinstance(info, dict) else None
        if (not isinstance(offsets, list) or len(offsets) != 2 or not all(isinstance(o, int) for o in offsets)
                or not 0 <= offsets[0] <= offsets[1]):
            return f"tensor {name!r} has no valid data_offsets"
        end = max(end, offsets[1])
    held = size - 8 - length
    if end != held:
        verdict = "truncated" if end > held else "trailing bytes"
        return f"header describes {end} bytes of tensor data, the file holds {held} ({verdict})"
    return None


def _index_shards(path: str, meter: Meter, limit: int, root: str) -> tuple[dict[str, int] | None, str | None]:
    """shard → number of tensors for a weight map; (None, None) for an index that is not a weight map."""
    try:
        if os.path.getsize(path) >= limit:
            return None, None
        data = read_regular(path, limit, what="weight-map index", root=root)
        meter.note_read(len(data))
        doc = json.loads(data)
    except OSError as exc:
        return None, f"cannot read: {os_error(exc)}"
    except (ValueError, RecursionError) as exc:
        return None, f"not valid JSON: {exc}"
    weight_map = doc.get("weight_map") if isinstance(doc, dict) else None
    if weight_map is None:
        return None, None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        return None, "weight_map is not an object of tensor name → shard file"
    shards: dict[str, int] = {}
    for shard in weight_map.values():
        shards[shard] = shards.get(shard, 0) + 1
    return shards, None


def consistency_checks(ctx: Context, flagged: dict[str, FileCheck]) -> tuple[list[FileCheck], list[Problem]]:
    """New checks (a CORRUPT one may replace a STALE one for the same path) and problems."""
    checks: list[FileCheck] = []
    problems: list[Problem] = []
    relpaths, _ = walk_tree(ctx.root)  # listing problems were already reported by the kind's own walk
    budget = [HEADER_BUDGET]
    present = set(relpaths)
    for rel in relpaths:
        path = os.path.join(ctx.root, rel)
        prior = flagged.get(path)
        settled = prior is not None and prior.kind is not DriftKind.STALE_METADATA
        if rel.endswith((INDEX_SUFFIX, ".safetensors")) and ctx.outside(path) is not None:
            continue  # a symlink out of the tree: the kind's audit reports it; never opened here
        if rel.endswith(INDEX_SUFFIX):
            shards, error = _index_shards(path, ctx.meter, ctx.limit, ctx.contain)
            if error and not settled:
                checks.append(FileCheck(DriftKind.CORRUPT, path, ctx.root, None, {}, {}, f"weight-map index {error}",
                                        area=Area.MODEL))
            for shard, count in sorted((shards or {}).items()):
                target = posixpath.normpath(posixpath.join(posixpath.dirname(rel), shard))
                if target.startswith("../") or posixpath.isabs(target):
                    problems.append(Problem(path, f"weight_map names {shard!r}, outside the model directory"))
                    continue
                shard_path = os.path.join(ctx.root, target)
                if shard_path in flagged or (target in present and os.path.exists(shard_path)):
                    continue
                flagged[shard_path] = FileCheck(
                    DriftKind.MISSING, shard_path, ctx.root, None, {"named_by": rel, "tensors": count}, {},
                    f"named by {rel}'s weight_map ({count} tensors) but not on disk", area=Area.MODEL)
                checks.append(flagged[shard_path])
        if rel.endswith(".safetensors") and not settled and os.path.isfile(path):
            try:
                why = safetensors_problem(path, ctx.meter, budget)
            except OSError as exc:
                problems.append(Problem(path, f"cannot read the safetensors header: {os_error(exc)}"))
                continue
            if why:
                checks.append(FileCheck(DriftKind.CORRUPT, path, ctx.root, None, {"format": "safetensors"},
                                        prior.actual if prior else {}, why, area=Area.MODEL))
    return checks, problems
