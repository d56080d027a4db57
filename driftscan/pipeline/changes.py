"""What a drifted package file's change is, when its verified original is at hand.

For each modified file of a distribution with a pristine copy (``driftscan.pristine``):
a unified diff for text (capped per file, the cap stated in the diff), the changed byte ranges
for binary content, and each debug finding's ``origin``: ``upstream`` when the original has the
same finding — same rule code, same source line once whitespace is normalised, counted as a
multiset, never by line number (an inserted block moves every line after it) — else
``injected``. A file no RECORD lists is all new, so its findings are ``injected``. Without an
original, ``origin`` stays None: driftscan cannot tell and says so.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
import tempfile
from typing import TYPE_CHECKING, Union

from ..fs.reader import inside, open_regular, read_regular
from ..formats.record import parse_hash
from ..formats.jsondiff import as_text, describe
from ..core.units import plural
from ..core.values import Area, Distribution, Drift, DriftKind, FileCheck, Finding, Origin, PristineRef, RecordEntry, RecordRows
from ..environment.content import record_digest
from ..environment.files import expected_of
from ..environment.ownership import is_bytecode, is_virtualenv_style_row
from ..lint.files import ParseLimits
from ..lint.vocabulary import NOT_INSPECTED

if TYPE_CHECKING:  # the pristine package (zipfile, subprocess) is imported only when originals are wanted
    from ..lint import Rule
    from ..lint.scancache import ContentMemo
    from ..pristine import PristineSet
    from ..pristine.base import Lookup, WrongRow

# The rules: loaded, or how to load them — the rule engine (libcst) is imported only when an
# original's findings are not remembered already (``ContentMemo``, keyed by the original's content).
Rules = Union[Sequence["type[Rule]"], Callable[[], Sequence["type[Rule]"]]]

# Originals and current files compared up to this size (a modified 500 MB .so is named, not diffed).
COMPARE_MAX = 64 << 20
MAX_RANGES = 64  # changed byte ranges listed per binary file
ORIGINAL_PARSE_BUDGET = 30.0  # seconds for parsing one large original in a worker
# Bytes of equal content that still join two changed ranges into one (a patched struct, not 40 ranges).
RANGE_GAP = 16
_COMPARED = {DriftKind.MODIFIED, DriftKind.RECORD_REWRITTEN}
_WANTED = {DriftKind.MODIFIED, DriftKind.MISSING, DriftKind.TYPE_CHANGED, DriftKind.MISSING_DIRECTORY,
           DriftKind.MISSING_FILES, DriftKind.RECORD_REWRITTEN}


def record_rows(dist: Distribution) -> dict[str, RecordEntry]:
    """A distribution's RECORD rows by the absolute, normalised path they name."""
    return {os.path.normpath(os.path.join(dist.site_packages, e.path)): e for e in dist.entries}


class RowFinder:
    """The RECORD row naming a file, for a few drifted files of large distributions: by the
    RECORD's own spelling first (an index of its strings, cheap), else by the normalised absolute
    path of every row (``record_rows``: a RECORD that spells a path ``./x`` or ``a/../b``)."""

    def __init__(self) -> None:
        self._spelled: dict[str, dict[str, int]] = {}
        self._normalised: dict[str, dict[str, RecordEntry]] = {}

    def row(self, dist: Distribution, path: str) -> RecordEntry | None:
        spelled = self._spelled.get(dist.metadata_dir)
        if spelled is None:
            table = RecordRows.of(dist.entries)
            spelled = self._spelled[dist.metadata_dir] = {p: j for j, p in enumerate(table.paths)}
        j = spelled.get(os.path.relpath(path, dist.site_packages).replace(os.sep, "/"))
        if j is not None:
            return RecordRows.of(dist.entries).entry(j)
        normalised = self._normalised.get(dist.metadata_dir)
        if normalised is None:
            normalised = self._normalised[dist.metadata_dir] = record_rows(dist)
        return normalised.get(os.path.normpath(path))

    def rows(self, dist: Distribution) -> dict[str, RecordEntry]:
        normalised = self._normalised.get(dist.metadata_dir)
        if normalised is None:
            normalised = self._normalised[dist.metadata_dir] = record_rows(dist)
        return normalised


# Drifts that stand for many missing files of one directory (environment/records.py).
GROUPED = {DriftKind.MISSING_DIRECTORY, DriftKind.MISSING_FILES}
SAMPLE = 100  # of a grouped drift's rows, this many are enough to find the distribution's original


def rows_under(dist: Distribution, directory: str, by_path: dict[str, RecordEntry] | None = None) -> list[RecordEntry]:
    """The RECORD rows of ``dist`` naming a file below ``directory`` (absolute), in RECORD order."""
    prefix = os.path.normpath(directory) + os.sep
    rows = by_path if by_path is not None else record_rows(dist)
    return [entry for path, entry in rows.items() if path.startswith(prefix)]


def wheel_row(check: FileCheck) -> RecordEntry | None:
    """A ``record-rewritten`` file's row as its wheel's own RECORD has it: what its original must
    match (the installed row is the rewritten one)."""
    row, dist = check.expected.get("row"), check.distribution
    if not isinstance(row, str) or dist is None:
        return None
    try:
        digest = parse_hash(row, allow_hex=False)
    except ValueError:
        return None
    return RecordEntry(os.path.relpath(check.path, dist.site_packages).replace(os.sep, "/"), digest, None, 0)


def _row_of(check: FileCheck, dist: Distribution, finder: RowFinder) -> RecordEntry | None:
    return wheel_row(check) if check.kind is DriftKind.RECORD_REWRITTEN else finder.row(dist, check.path)


def wanted_originals(checks: Sequence[FileCheck]) -> list[tuple[Distribution, list[RecordEntry]]]:
    """For each distribution with package drift, the RECORD rows whose originals are wanted:
    modified, missing and retyped files (what a diff, or a restore, needs)."""
    finder = RowFinder()
    # Keyed by metadata_dir: a Distribution holding direct_url.json's dict is not hashable.
    out: dict[str, tuple[Distribution, list[RecordEntry]]] = {}
    for check in checks:
        dist = check.distribution
        if dist is None or check.kind not in _WANTED or check.area is not Area.PYTHON or not dist.entries:
            continue
        if check.kind in GROUPED:  # a sample finds the source; restore verifies each row as it goes
            sample = [e for e in rows_under(dist, check.path, finder.rows(dist)) if e.hash is not None][:SAMPLE]
            out.setdefault(dist.metadata_dir, (dist, []))[1].extend(sample)
            continue
        entry = _row_of(check, dist, finder)
        if entry is not None and entry.hash is not None:
            out.setdefault(dist.metadata_dir, (dist, []))[1].append(entry)
    return list(out.values())


def installed_contents(checks: Sequence[FileCheck]) -> dict[tuple[str, str], tuple[str, int]]:
    """The current digest and size of each modified package file, by (metadata_dir, RECORD path):
    what tells a wheel's own wrong RECORD row from an edit (``pristine.Lookup.wrong_rows``)."""
    finder = RowFinder()
    out: dict[tuple[str, str], tuple[str, int]] = {}
    for check in checks:
        dist = check.distribution
        digest, size = check.actual.get("hash"), check.actual.get("size")
        if dist is None or check.kind is not DriftKind.MODIFIED or check.area is not Area.PYTHON \
                or not isinstance(digest, str) or not isinstance(size, int) or not check.regular_file:
            continue
        entry = finder.row(dist, check.path)
        if entry is not None:
            out[(dist.metadata_dir, entry.path)] = (digest, size)
    return out


def shipped_as_is(check: FileCheck, wrong: WrongRow, where: PristineRef) -> FileCheck:
    """``check`` (modified) as the ``upstream-record-mismatch`` it is: the wheel ships these bytes."""
    evidence = (f"the wheel {wrong.wheel} ships this file with these bytes (its member {wrong.member}); its own "
                f"RECORD row says {wrong.row_hash}: the row is wrong upstream, and the installer copied it. "
                "A reinstall from that wheel reinstates the same bytes")
    return replace(check, kind=DriftKind.UPSTREAM_RECORD_MISMATCH, pristine=where, evidence=evidence)


def _archive_digest(archive: str, path: str, size: int) -> str | None:
    try:
        fd, st = open_regular(os.path.join(archive, *path.split("/")), follow=False, root=archive)
    except (OSError, ValueError):
        return None
    try:
        return record_digest(fd, st.st_size) if st.st_size == size else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _shipped_in_archive(check: FileCheck, lookups: Sequence[Lookup]) -> FileCheck | None:
    """An edited uv cache archive (``cache-modified``) without its files that its wheel ships under a
    wrong RECORD row of its own: uv unpacked the wheel as it is and kept its RECORD, so they are no
    edit. Each is checked here afresh — the archive's row is the wheel's row, the archive's bytes
    are the wheel's member — against a wheel the search found to be the installed one's original.
    None when nothing else is edited; the check unchanged when no such wheel is at hand."""
    archive, dist = check.path, check.distribution
    wheels = [lk.copy for lk in lookups if lk.wrong_rows and lk.copy is not None and dist is not None
              and lk.copy.is_release_of(dist)]
    if not wheels:
        return check
    edited = check.actual.get("edited") or []
    shipped: list[str] = []
    left: list[str] = []
    for member in edited:
        expected, actual = member.get("expected") or {}, member.get("actual") or {}
        size, recorded = actual.get("size"), expected.get("hash")
        found = None
        if member.get("kind") == "modified" and isinstance(size, int) and isinstance(recorded, str):
            digest = _archive_digest(archive, member.get("path", ""), size)
            try:
                row = RecordEntry(member.get("path", ""), parse_hash(recorded, allow_hex=False), expected.get("size"), 0)
            except ValueError:
                row = None
            if digest is not None and row is not None:
                found = next((w for copy in wheels if (w := copy.wrong_row(row, digest, size)) is not None), None)
        (shipped if found is not None else left).append(member.get("path", ""))
    if not shipped:
        return check
    if not left:
        return None
    kept = [m for m in edited if m.get("path") not in shipped]
    note = (f"; {', '.join(shipped)}: as the wheel ships it (its own RECORD row is wrong upstream), no edit")
    return replace(check, actual={**check.actual, "edited": kept}, evidence=check.evidence + note)


def _norm(snippet: str) -> str:
    return " ".join(snippet.split())


def mark_origins(current: Sequence[Finding], original: Sequence[Finding]) -> tuple[Finding, ...]:
    """Each current finding ``upstream`` while the original still has an unmatched finding of the
    same code and normalised line, else ``injected``."""
    left = Counter((f.code, _norm(f.snippet)) for f in original)
    out = []
    for f in current:
        key = (f.code, _norm(f.snippet))
        if left[key] > 0:
            left[key] -= 1
            out.append(replace(f, origin=Origin.UPSTREAM))
        else:
            out.append(replace(f, origin=Origin.INJECTED))
    return tuple(out)


def changed_ranges(old: bytes, new: bytes, limit: int = MAX_RANGES) -> tuple[list[tuple[int, int]], bool]:
    """The [start, end) ranges of ``new`` that differ from ``old`` at the same offsets (a length
    change is one range at the end), joined across gaps of RANGE_GAP bytes; True if cut at ``limit``."""
    ranges: list[tuple[int, int]] = []
    common = min(len(old), len(new))
    step = 4096
    i = 0
    while i < common:
        j = min(common, i + step)
        if old[i:j] == new[i:j]:
            i = j
            continue
        for k in range(i, j):
            if old[k] != new[k]:
                if ranges and k - ranges[-1][1] <= RANGE_GAP:
                    ranges[-1] = (ranges[-1][0], k + 1)
                else:
                    if len(ranges) >= limit:
                        return ranges, True
                    ranges.append((k, k + 1))
        i = j
    if len(old) != len(new):
        start = common
        if ranges and start - ranges[-1][1] <= RANGE_GAP:
            ranges[-1] = (ranges[-1][0], max(len(old), len(new)))
        elif len(ranges) < limit:
            ranges.append((start, max(len(old), len(new))))
        else:
            return ranges, True
    return ranges, False


def _original_findings(original: bytes, path: str, rules: Sequence[type[Rule]]) -> list[Finding] | None:
    """The findings of the original file. A small one is parsed here (the byte pre-check keeps
    libcst from what could crash it); a large one in a worker with a time budget, as audit parses
    the drifted file itself (the original's bytes are the tree's too: its RECORD vouches for them)."""
    from ..lint import MAX_FILE_BYTES, RuleError, default_rules, inspect_source, scan_paths  # libcst: only here
    from ..lint.scan import IN_PROCESS_BYTES

    # The rules that say a file was not inspected (too large, too complex, unreadable, unparsable)
    # run whatever the selection: an original that could not be inspected must not make every
    # current finding look injected.
    rules = [*rules, *(r for r in default_rules() if r.FILE_PROBLEM in NOT_INSPECTED and r not in rules)]
    file_level = {r.CODE for r in rules if r.FILE_PROBLEM in NOT_INSPECTED}
    try:
        if len(original) <= IN_PROCESS_BYTES:
            found = inspect_source(original, path, rules, prefilter=True, max_bytes=MAX_FILE_BYTES)
            return None if any(f.code in file_level for f in found) else found
    except RuleError:
        return None

    with tempfile.TemporaryDirectory(prefix="driftscan-original-") as work:
        copy = os.path.join(work, os.path.basename(path))
        with open(copy, "wb") as f:
            f.write(original)
        result = scan_paths([copy], rules=rules, jobs=1, limits=ParseLimits(budget=ORIGINAL_PARSE_BUDGET))
    if result.errors or any(f.code in file_level for _, f in result.findings):
        return None
    return [f for _, f in result.findings]


def _read_current(path: str, root: str | None = None) -> bytes | None:
    try:  # not through a symlink, and not outside the tree: the diff shows what it reads
        return read_regular(path, COMPARE_MAX, what="drifted file", follow=False, root=root or None)
    except OSError:
        return None


class _OriginalFindings:
    """``_original_findings`` through the memo: the rules are loaded on the first miss only."""

    def __init__(self, rules: Rules, memo: ContentMemo | None, plugins: bool) -> None:
        self._rules = rules
        self._loaded: list[type[Rule]] | None = None
        self.memo = memo
        self.plugins = plugins

    def rules(self) -> Sequence[type[Rule]]:
        if self._loaded is None:
            self._loaded = list(self._rules() if callable(self._rules) else self._rules)
        return self._loaded

    def __call__(self, original: bytes, path: str) -> list[Finding] | None:
        if self.memo is not None:
            known = self.memo.get(path, original)
            if known is not None:
                return known
        found = _original_findings(original, path, self.rules())
        if found is not None and self.memo is not None:
            from ..lint import default_rules
            from ..lint.scan import _code_signature

            used = [*self.rules(), *(r for r in default_rules() if r.FILE_PROBLEM and r not in self.rules())]
            signed = _code_signature(used, True, None)
            if signed is not None:
                extra = [getattr(sys.modules.get(r.__module__), "__file__", None) for r in used]
                self.memo.put(path, original, found, [*signed[1], *(f for f in extra if f)], self.plugins)
        return found


def _compare(check: FileCheck, original: bytes, originals_found: _OriginalFindings, name: str) -> FileCheck:
    current = _read_current(check.path, check.root)
    if current is None:
        return check
    if as_text(original) is not None and as_text(current) is not None:
        change = describe(original, current, name)
        check = replace(check, diff=change.diff if not change.json_changes else check.diff,
                        json_changes=change.json_changes or check.json_changes)
    elif original != current:
        ranges, cut = changed_ranges(original, current)
        check = replace(check, byte_ranges=tuple(ranges),
                        evidence=check.evidence + ("; " if check.evidence else "")
                        + f"binary: {len(ranges)}{'+' if cut else ''} changed byte "
                          f"{plural(len(ranges) + cut, 'range')}")
    if check.findings and check.path.endswith((".py", ".pyw")):
        before = originals_found(original, check.path)
        if before is not None:  # None: a rule's bug or a parse out of budget; the origin stays unknown
            check = replace(check, findings=mark_origins(check.findings, before))
    return check


def compare_with_originals(checks: Sequence[FileCheck], originals: PristineSet | None, rules: Rules,
                           memo: ContentMemo | None = None, plugins: bool = True) -> list[FileCheck]:
    """Diffs, byte ranges and finding origins for the drifts whose original is at hand; added
    files' findings are ``injected``. Other checks are returned as they are. ``memo``: findings of
    originals by their content, from earlier audits (a miss loads ``rules``, when given as a loader)."""
    finder = RowFinder()
    found = _OriginalFindings(rules, memo, plugins)
    lookups = originals.lookups() if originals is not None else []
    out = []
    for check in checks:
        dist = check.distribution
        if check.kind is DriftKind.CACHE_MODIFIED and any(lk.wrong_rows for lk in lookups):
            unpacked = _shipped_in_archive(check, lookups)
            if unpacked is not None:
                out.append(unpacked)
            continue
        if check.kind in (DriftKind.ADDED, DriftKind.STARTUP_CODE) and check.findings \
                and check.area in (Area.PYTHON, Area.SOURCE):
            out.append(replace(check, findings=tuple(replace(f, origin=Origin.INJECTED) for f in check.findings)))
            continue
        lookup = originals.get(dist) if originals is not None and dist is not None else None
        if dist is None or lookup is None or lookup.copy is None or check.kind not in _WANTED \
                or check.area is not Area.PYTHON:
            out.append(check)
            continue
        entry = _row_of(check, dist, finder)
        wrong = lookup.wrong_row(entry.path) if entry is not None and check.kind is DriftKind.MODIFIED else None
        if wrong is not None and lookup.copy is not None:
            out.append(shipped_as_is(check, wrong, PristineRef(lookup.copy.source, lookup.copy.where)))
            continue
        # Per file, never per distribution: the closest copy of a distribution may lack this very
        # file or hold it edited (uv's cache, hard-linked with the venv), and then no original
        # of it is at hand, whatever source the others came from.
        copy = lookup.original(entry) if entry is not None else None
        if entry is None or copy is None:
            out.append(check)
            continue
        ref = PristineRef(copy.source, copy.where)
        original = copy.read(entry, COMPARE_MAX) if check.kind in _COMPARED else None
        check = replace(check, pristine=ref)
        if original is not None and check.regular_file:
            check = _compare(check, original, found, entry.path)
        out.append(check)
    if memo is not None:
        memo.save()
    return out


def file_by_file(drifts: Sequence[Drift]) -> list[Drift]:
    """``drifts`` with each grouped missing-files drift replaced by one ``missing`` drift per file
    it stands for (rows below its directory that are not on disk now; bytecode and hashless
    virtualenv rows are no drift): what ``restore`` recreates and ``checkpoint`` records, file by file."""
    out: list[Drift] = []
    rows: dict[str, dict[str, RecordEntry]] = {}
    for drift in drifts:
        check = drift.check
        dist = check.distribution
        if check.kind not in GROUPED or dist is None:
            out.append(drift)
            continue
        by_path = rows.get(dist.metadata_dir)
        if by_path is None:
            by_path = rows[dist.metadata_dir] = record_rows(dist)
        prefix = os.path.normpath(check.path) + os.sep
        inside_root: dict[str, bool] = {}  # a directory reached through a link out of the root: not ours to name
        for path, entry in by_path.items():
            if not path.startswith(prefix) or is_bytecode(path) or \
                    (entry.hash is None and is_virtualenv_style_row(entry.path)):
                continue
            directory = os.path.dirname(path)
            if directory not in inside_root:
                inside_root[directory] = inside(check.root, directory)
            if not inside_root[directory] or os.path.lexists(path):
                continue
            one = replace(check, kind=DriftKind.MISSING, path=path, expected=expected_of(entry), actual={}, evidence="")
            out.append(replace(drift, check=one))
    return out
