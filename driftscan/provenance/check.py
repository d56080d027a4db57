"""One provenance verdict per distribution that has an expected wheel digest."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

from ..core.units import count
from ..core.values import Distribution, MetadataKind
from ..environment.uv.cache import default_uv_cache
from ..environment.uv.pointers import archive_record_or_reason, archive_record_path, scan_pointers
from ..pristine.base import PristineOptions, SourceKind, error_text
from ..pristine.howto import ways_to_original
from ..pristine.search import NOT_A_WHEEL
from .expected import Expected, from_direct_url
from .find import Sources, find_wheel, short
from .model import Provenance, ProvenanceSource
from .rows import compare
from .verdicts import Verdicts


def check_provenance(dists: Sequence[Distribution], expected: Mapping[str, Expected],
                     options: PristineOptions, load: Callable[[Distribution], Distribution] | None = None,
                     remember: bool = True) -> list[Provenance]:
    """A ``Provenance`` for each distribution ``expected`` names (by metadata_dir), and for each
    other one whose direct_url.json records the archive's sha256. Every wheel opened is closed
    before this returns; nothing the tree holds makes it raise (a reason says what went wrong).
    ``load``: a distribution with its RECORD rows, for one given without them (a warm audit's),
    called only when its clean verdict is not remembered (``remember``: the user cache's memo)."""
    out = []
    sources = Sources(options)  # one memo, listing and pip cache index for every distribution
    verdicts = Verdicts(remember)
    try:
        for dist in dists:
            notes: list[str] = []
            wanted = expected.get(dist.metadata_dir) or from_direct_url(dist, notes)
            if wanted is None:
                continue
            known = verdicts.get(dist, wanted)
            if known is not None:
                out.append(known)
                continue
            if not dist.entries and load is not None:
                dist = load(dist)
            witnesses: list[str] = []
            try:
                verdict = _check(dist, wanted, options, notes, sources, witnesses)
            except Exception as exc:  # noqa: BLE001 - a hostile tree or wheel gives a reason, never a crash
                out.append(_unverified(dist, wanted, f"not checked: {error_text(exc)}", None))
                continue
            out.append(verdict)
            verdicts.remember(dist, verdict, witnesses)
    finally:
        sources.save()
        verdicts.save()
    return out


def _check(dist: Distribution, wanted: Expected, options: PristineOptions, notes: list[str],
           sources: Sources, witnesses: list[str]) -> Provenance:
    """The verdict, and in ``witnesses`` the files it was read from besides the installed RECORD."""
    if dist.kind is not MetadataKind.DIST_INFO:
        return _unverified(dist, wanted, NOT_A_WHEEL, None)
    if not dist.entries:
        return _unverified(dist, wanted, "the installed RECORD has no rows (missing or unreadable)", None)
    from_uv = _from_uv_cache(dist, wanted, options, notes, witnesses)
    if from_uv is not None:
        return from_uv
    copy = find_wheel(dist, wanted, options, notes, sources)
    if copy is None:
        how = ways_to_original(dist, options.python_version, options.venv).text()
        reason = f"no wheel with sha256 {short(wanted.sha256)} found; tried " + "; ".join(notes)
        return _unverified(dist, wanted, " ".join(reason.split()), how)
    try:
        source = ProvenanceSource(copy.source.value)
        name = wanted.filename if copy.source is SourceKind.FETCH and wanted.filename else os.path.basename(copy.path)
        own = copy.own_record()
        if not own:  # a wheel that lists nothing vouches for nothing
            return _unverified(dist, wanted, f"the wheel {name} has no readable RECORD", None, name, source)
        compared = compare(dist, own)
        if copy.source is not SourceKind.FETCH:  # a download is gone after this run
            witnesses.append(copy.path)
        return Provenance(dist.name, dist.version, dist.metadata_dir, wanted.lock, wanted.sha256, name, source,
                          True, None, None, compared.rows, compared.compared)
    finally:
        copy.close()


def _from_uv_cache(dist: Distribution, wanted: Expected, options: PristineOptions, notes: list[str],
                   witnesses: list[str]) -> Provenance | None:
    """The wheel as uv unpacked it: the pointer uv keeps beside its wheel index entry records the
    sha256 of the wheel it downloaded (when it checked hashes: under a lock, or --require-hashes)
    and the archive it unpacked it to, whose dist-info holds the wheel's own RECORD. Tried first:
    nothing is hashed, one pointer and one RECORD are read."""
    cache = options.uv_cache or default_uv_cache()
    if not cache or not os.path.isdir(cache):
        notes.append("uv's cache (none found)")
        return None
    scan = scan_pointers(cache, dist.name, dist.version)
    unhashed = 0
    for pointer in scan.pointers:
        digest = pointer.digests.get("sha256")
        if digest is None:
            unhashed += 1
            continue
        if not wanted.accepts(digest):
            notes.append(f"uv's cache {pointer.pointer} (rejected: its wheel's sha256 {short(digest)} differs from "
                         f"the expected {short(wanted.sha256)})")
            continue
        record, why = archive_record_or_reason(pointer.archive, dist.name, dist.version)
        if not record:
            notes.append(f"uv's cache {pointer.archive} (rejected: {why or 'its RECORD lists nothing'})")
            continue
        compared = compare(dist, record)
        record_path = archive_record_path(pointer.archive, dist.name, dist.version)[0]
        if record_path:  # what the verdict rests on: the digest uv recorded, and the wheel's RECORD
            witnesses += [pointer.pointer, record_path]
        name = pointer.wheel_filename or f"{dist.name}-{pointer.filename_stem}.whl"
        return Provenance(dist.name, dist.version, dist.metadata_dir, wanted.lock, digest, name,
                          ProvenanceSource.UV_CACHE, True, None, None, compared.rows, compared.compared)
    if unhashed:
        notes.append(f"uv's cache ({count(unhashed, 'unpacked wheel')} of {dist.name} "
                     f"{dist.version} with no digest recorded: uv checks and records one only under a lock or "
                     "--require-hashes)")
    elif not scan.pointers:
        notes.append(f"uv's cache {cache} (no wheel of {dist.name} {dist.version})")
    return None


def _unverified(dist: Distribution, wanted: Expected, reason: str, how_to: str | None, wheel: str | None = None,
                source: ProvenanceSource = ProvenanceSource.NONE) -> Provenance:
    return Provenance(dist.name, dist.version, dist.metadata_dir, wanted.lock, wanted.sha256, wheel, source,
                      False, reason, how_to, (), 0)
